#!/usr/bin/env bash
# Session 26 call 8: two GPUs; staging chunks kept in a process pool, 16 MiB, first staged from 256 MiB (built here).
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins26
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
(while sleep 10; do snap; done) &
timeout 60 $B/parasurf_tests --gtest_filter='Isosurface.HostArray*:Isosurface.SeveralGpus*:Isosurface.CpuAndCuda*:Isosurface.Reused*:Isosurface.LargeCuda*:Isosurface.Streamed*' > $W/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|SKIPPED|tests ran" $W/tests.txt | head -12
timeout 60 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.HostArray*:Isosurface.SeveralGpus*' > $W/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $W/memcheck.txt
timeout 60 $B/parasurf bench isosurface --sizes 256,512 --devices cuda --no-peers --repeats 3 --min-time 0.05 --json $W/bench.json > $W/bench.log 2>&1; echo "== bench rc=$? $SECONDS s"; grep -E "^  cuda  " $W/bench.log | cut -c1-120
timeout 40 $B/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 3 --min-time 0 --multi-gpu 1024 --json $W/multi.json > $W/multi.log 2>&1; echo "== multi rc=$? $SECONDS s"; grep -A4 "several GPUs" $W/multi.log | cut -c1-200 | tail -4
kill %1; snap
