#!/usr/bin/env bash
# AB-ONLY call 16: b1bcb22 (bins42) against pages faulted a piece ahead of the zeroing lanes (bins43), alternated
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x; export LD_LIBRARY_PATH=/tmp/x/bins42:$LD_LIBRARY_PATH
timeout 60 /tmp/x/bins42/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 2 --min-time 0 --multi-gpu 512 --out-of-core 1024 > /tmp/warmup.log 2>&1; echo "== warm-up rc=$?"
for r in 1 2 3; do for b in 42 43; do
  timeout 100 /tmp/x/bins$b/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 5 --min-time 0 --multi-gpu 1024 --out-of-core 2048 --json $OUT/r$r-$b.json > $OUT/r$r-$b.log 2>&1
  echo "== round $r bins$b rc=$?"; grep -o "speedup [0-9.]*x over one GPU" $OUT/r$r-$b.log | tr '\n' ' '; echo
done; done
