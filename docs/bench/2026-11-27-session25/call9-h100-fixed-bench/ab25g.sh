#!/usr/bin/env bash
# Session 25 call 9: 73b612c (built here) on an H100: the isosurface benchmark as gpu-check.sh runs it.
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins25f
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
(while sleep 15; do snap; done) &
timeout 150 $B/parasurf bench isosurface --sizes 256,512 --volumes .data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60 --json $W/bench-isosurface.json > $W/bench-isosurface.log 2>&1; echo "== bench rc=$? $SECONDS s"; kill %1; snap
grep -E "resident" $W/bench-isosurface.log | cut -c1-20,60-200
