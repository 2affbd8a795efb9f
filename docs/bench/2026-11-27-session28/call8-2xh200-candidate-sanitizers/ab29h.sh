#!/usr/bin/env bash
# AB-ONLY call 8: candidate (touch prefault, room capped at the exact size, sizer on the calling thread): tests,
# sanitizers of the several-GPU tests, 3 bench rounds untraced, 1 traced
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x; N=/tmp/x/bins38; export LD_LIBRARY_PATH=$N:$LD_LIBRARY_PATH
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
(while sleep 10; do snap; done) &
F='Isosurface.LargeMeshesComeHome*:Isosurface.SeveralGpus*:Isosurface.SlabWorkers*:Isosurface.HostArray*:Isosurface.CpuAndCuda*:Isosurface.Reused*:Isosurface.LargeCuda*:Isosurface.Streamed*:Isosurface.SlabSplits*:Isosurface.ExpectedSize*:Prefault*'
timeout 150 $N/parasurf_tests --gtest_filter="$F" > $W/tests.txt 2>&1; echo "== tests rc=$?"; grep -E "test seed|PASSED|FAILED|SKIPPED|Failure" $W/tests.txt | head -12
OMP_WAIT_POLICY=PASSIVE timeout 200 compute-sanitizer --tool memcheck --error-exitcode 99 $N/parasurf_tests --gtest_filter='Isosurface.LargeMeshesComeHome*:Isosurface.SeveralGpus*' > $W/memcheck.txt 2>&1 &
P1=$!
OMP_WAIT_POLICY=PASSIVE timeout 200 compute-sanitizer --tool racecheck --error-exitcode 99 $N/parasurf_tests --gtest_filter='Isosurface.SeveralGpusJoin*' > $W/racecheck.txt 2>&1
echo "== racecheck rc=$?"; tail -1 $W/racecheck.txt; wait $P1; echo "== memcheck rc=$?"; tail -1 $W/memcheck.txt
timeout 60 bash $N/cuda_vs_cpu.sh $N/parasurf no-mpi > $W/cuda_vs_cpu.txt 2>&1; echo "== cuda_vs_cpu rc=$?"
timeout 60 $N/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 2 --min-time 0 --multi-gpu 512 --out-of-core 1024 > $W/warmup.log 2>&1; echo "== warm-up rc=$?"
for r in 1 2 3 t; do
  if [ $r = t ]; then export AB_TRACE=1; fi
  timeout 100 $N/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 5 --min-time 0 --multi-gpu 1024 --out-of-core 2048 --json $W/r$r.json > $W/r$r.log 2> $W/r$r.trace
  echo "== round $r rc=$?"; grep -A4 -E "several GPUs:|out of core:" $W/r$r.log | grep -E "GPU\(s\)" | cut -c1-80; grep -o "speedup [0-9.]*x over one GPU" $W/r$r.log
done
unset AB_TRACE
kill %1; snap
