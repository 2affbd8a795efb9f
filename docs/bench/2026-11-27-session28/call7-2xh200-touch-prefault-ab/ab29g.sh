#!/usr/bin/env bash
# AB-ONLY call 7: sizer on the calling thread; prefault by touch (AB_PREFAULT_TOUCH=1) or populate (new)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; uname -r
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x; N=/tmp/x/bins37; export LD_LIBRARY_PATH=$N:$LD_LIBRARY_PATH
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
(while sleep 10; do snap; done) &
timeout 150 $N/parasurf_tests --gtest_filter='Isosurface.LargeMeshesComeHome*:Isosurface.SeveralGpus*:Isosurface.SlabWorkers*:Isosurface.LargeCuda*:Isosurface.ExpectedSize*' > $W/tests.txt 2>&1; echo "== tests rc=$?"; grep -E "test seed|PASSED|FAILED|SKIPPED|Failure" $W/tests.txt | head -12
timeout 60 $N/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 2 --min-time 0 --multi-gpu 512 --out-of-core 1024 > $W/warmup.log 2>&1; echo "== warm-up rc=$?"
for r in 1 2 3; do for v in new touch; do
  if [ $v = touch ]; then export AB_PREFAULT_TOUCH=1; else unset AB_PREFAULT_TOUCH; fi; AB_TRACE=1 timeout 100 $N/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 5 --min-time 0 --multi-gpu 1024 --out-of-core 2048 --json $W/r$r-$v.json > $W/r$r-$v.log 2> $W/r$r-$v.trace
  echo "== round $r $v rc=$?"; grep -A4 -E "out of core:" $W/r$r-$v.log | grep -E "GPU\(s\)" | cut -c1-80; grep -o "speedup [0-9.]*x over one GPU" $W/r$r-$v.log
done; done
kill %1; snap
