#!/usr/bin/env bash
# Session 23 call 4: where MR_Gd's passes stall: ncu full sections (warm caches, free clocks) of the triangle, flags
# and classify kernels, and the triangle kernel's SASS lines by stall samples (2421197 + AB knobs, AB off)
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins16
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
for k in triangle_kernel flags_kernel classify_kernel; do
timeout 120 ncu --clock-control none --cache-control none --set full --import-source yes -k regex:$k -c 1 -o /tmp/$k $B/parasurf_tl isosurface .data/volumes/MR_Gd.nii.gz --level 60 --device cuda -q -o /tmp/mr.ply > $OUT/ncu-$k-run.txt 2>&1; echo "== $k $SECONDS s"
ncu -i /tmp/$k.ncu-rep --page details > $OUT/ncu-$k-details.txt 2>&1
ncu -i /tmp/$k.ncu-rep --page source --csv --print-source sass > $OUT/ncu-$k-sass.csv 2>&1
ncu -i /tmp/$k.ncu-rep --page source --csv --print-source cuda > $OUT/ncu-$k-cuda.csv 2>&1
done
ls -la $OUT; grep -E "Duration|Throughput|Stall|Warp Cycles|Issued|Eligible|Active Warps|Registers|Achieved|L1/TEX Hit|L2 Hit|Local" $OUT/ncu-triangle_kernel-details.txt | head -50
cd $OUT && tar czf ab.tgz *.txt *.csv && rm -f *.csv && ls
