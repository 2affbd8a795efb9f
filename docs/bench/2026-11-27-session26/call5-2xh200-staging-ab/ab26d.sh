#!/usr/bin/env bash
# Session 26 call 5: two GPUs; pinned-chunk staging of pageable samples + extrapolated host mesh (AB_NOSTAGE/AB_NOEXTRAP
# turn them off): tests, memcheck, then alternated several-GPU benchmark rounds.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins26
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
(while sleep 15; do snap; done) &
timeout 120 $B/parasurf_tests --gtest_filter='Isosurface.HostArray*:Isosurface.SeveralGpus*:Isosurface.CpuAndCuda*:Isosurface.SlabSplits*:Isosurface.Reused*:Isosurface.LargeCuda*:Isosurface.Streamed*' > $W/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|SKIPPED|tests ran" $W/tests.txt | head -12
timeout 120 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.HostArray*:Isosurface.SeveralGpus*' > $W/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $W/memcheck.txt
for r in 1 2 3; do
  for v in new old; do
    if [ $v = old ]; then export AB_NOSTAGE=1 AB_NOEXTRAP=1; else unset AB_NOSTAGE AB_NOEXTRAP; fi
    timeout 100 $B/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 5 --min-time 0 --multi-gpu 1024 --json $W/multi-$v-$r.json > $W/multi-$v-$r.log 2>&1
    echo "== $v $r"; grep -A4 "several GPUs" $W/multi-$v-$r.log | cut -c1-200 | tail -4
  done
done
unset AB_NOSTAGE AB_NOEXTRAP
kill %1; snap
