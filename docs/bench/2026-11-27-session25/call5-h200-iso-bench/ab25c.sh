#!/usr/bin/env bash
# Session 25 call 5: gpu-check's isosurface benchmark (cut off in call 4 by the call's time limit), on c565b5a built here.
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins25c
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
python3 -c "import skimage; print('skimage', skimage.__version__)"
(while sleep 20; do snap; done) &
timeout 400 $B/parasurf bench isosurface --sizes 256,512 --volumes .data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60 --json $W/bench-isosurface.json > $W/bench-isosurface.log 2>&1; echo "== bench rc=$? $SECONDS s"; kill %1; snap
grep -E "^[a-zA-Z]|resident|skimage|scikit" $W/bench-isosurface.log | cut -c1-200
