#!/usr/bin/env bash
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
$B/parasurf_tests --gtest_filter='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*' > $OUT/tests.txt 2>&1; echo "== tests rc=$?"; grep -E "PASSED|FAILED|seed" $OUT/tests.txt | head -4
for r in 1 2 3; do for b in parasurf_base parasurf; do
$B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$b-$r.json > $OUT/ab-$b-$r.log 2>&1; echo "== $b $r rc=$?"; grep -E "resident" $OUT/ab-$b-$r.log | cut -c1-20,60-70,140-240
done; done
which nsys; nsys --version
nsys profile -o /tmp/n --trace cuda,osrt --force-overwrite true $B/parasurf bench isosurface --volumes .data/volumes/MR_Gd.nii.gz:60 --sizes 64 --devices cuda --no-peers --repeats 20 > $OUT/nsys.log 2>&1; echo "nsys rc=$?"
nsys stats -r cuda_gpu_trace,cuda_api_trace -f csv -o /tmp/ns /tmp/n.nsys-rep > $OUT/nsys-stats.log 2>&1; echo "stats rc=$?"; ls /tmp/ns*
cp /tmp/ns* $OUT/ 2>/dev/null
$B/parasurf bench isosurface --volumes $V --sizes 64 --devices cuda,cpu --no-peers --repeats 15 > $OUT/cpu-vs-gpu.log 2>&1; grep -E "cuda|cpu  |^[a-zA-Z]" $OUT/cpu-vs-gpu.log | cut -c1-200
cd $OUT && tar czf ab.tgz *.txt *.json *.log *.csv && rm -f *.json *.log *.csv && ls
