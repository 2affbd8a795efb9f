#!/usr/bin/env bash
# AB-ONLY call 15: pages faulted a piece ahead of the zeroing lanes; several-GPU tests, then four bench rounds
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x; N=/tmp/x/bins43; export LD_LIBRARY_PATH=$N:$LD_LIBRARY_PATH
timeout 120 $N/parasurf_tests --gtest_filter='Isosurface.LargeMeshesComeHome*:Isosurface.SeveralGpus*:Isosurface.SlabWorkers*:Isosurface.LargeCuda*:Isosurface.ExpectedSize*:Prefault*:KeptThreads*' > $OUT/tests.txt 2>&1; echo "== tests rc=$?"; grep -E "test seed|PASSED|FAILED|Failure" $OUT/tests.txt | head
timeout 60 $N/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 2 --min-time 0 --multi-gpu 512 --out-of-core 1024 > /tmp/warmup.log 2>&1; echo "== warm-up rc=$?"
for r in 1 2 3 4; do
  timeout 100 $N/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 5 --min-time 0 --multi-gpu 1024 --out-of-core 2048 --json $OUT/r$r.json > $OUT/r$r.log 2>&1
  echo "== round $r rc=$?"; grep -o "speedup [0-9.]*x over one GPU" $OUT/r$r.log | tr '\n' ' '; echo
done
