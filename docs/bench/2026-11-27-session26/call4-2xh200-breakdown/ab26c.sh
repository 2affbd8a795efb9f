#!/usr/bin/env bash
# Session 26 call 4: two GPUs, 3c53957 + seconds_workers/join breakdown (built here): where the several-GPU time goes.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins26
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH
W=$OUT/m; mkdir -p $W
for r in 1 2 3; do timeout 120 $B/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 5 --min-time 0 --multi-gpu 1024 --json $W/multi$r.json > $W/multi$r.log 2>&1; grep -A5 "several GPUs" $W/multi$r.log | cut -c1-220; done
timeout 60 $B/parasurf_tests --gtest_filter='Isosurface.SeveralGpus*' 2>&1 | tail -2
