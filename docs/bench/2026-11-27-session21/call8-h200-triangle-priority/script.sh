#!/usr/bin/env bash
# Session 21 call 8: the triangle stream's priority (AB_TRI_PRIORITY: 0 default, 1 greatest, 2 least), three rounds
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins3
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1; shift; env "$@" timeout 60 $B/parasurf bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$name-$r.json > $OUT/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; grep -E "resident" $OUT/ab-$name-$r.log | cut -c1-20,60-70,96-240; }
for r in 1 2 3; do run p0 AB_TRI_PRIORITY=0; run p1 AB_TRI_PRIORITY=1; run p2 AB_TRI_PRIORITY=2; done
