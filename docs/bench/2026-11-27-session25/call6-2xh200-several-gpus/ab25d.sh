#!/usr/bin/env bash
# Session 25 call 6: two GPUs at c565b5a (built here): the several-GPU isosurface test under memcheck, cuda_vs_cpu,
# and one GPU against two on tangle 1024^3 float32 in host memory, 2048^3 streamed out of core on one GPU.
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins25d
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
timeout 90 $B/parasurf_tests --gtest_filter='Isosurface.SeveralGpus*:Isosurface.CpuAndCuda*:Isosurface.SlabSplits*:Isosurface.Reused*:Isosurface.LargeCuda*' > $W/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|SKIPPED|tests ran" $W/tests.txt | head -12; snap
timeout 90 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.SeveralGpus*' > $W/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $W/memcheck.txt; snap
timeout 180 $B/parasurf bench isosurface --sizes 256 --types float32 --devices cuda --no-peers --repeats 3 --min-time 0 --multi-gpu 1024 --out-of-core 2048 --json $W/multi.json > $W/multi.log 2>&1; echo "== multi rc=$? $SECONDS s"; grep -vE "^\s*$" $W/multi.log | cut -c1-220 | tail -14; snap
