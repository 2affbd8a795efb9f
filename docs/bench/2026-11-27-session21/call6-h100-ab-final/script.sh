#!/usr/bin/env bash
# Session 21 call 6 (H100): final code b67b75d (parasurf) against 5b5f075 (parasurf_base): tests, cuda_vs_cpu, A/B (2 rounds), one --devices cpu,cuda run
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:-Isosurface.EveryTiePattern*'
timeout 100 $B/parasurf_tests --gtest_filter="$F" > $OUT/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran|SKIPPED \]" $OUT/tests.txt | head -12
timeout 60 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -2 $OUT/cvc.txt
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
for r in 1 2; do for b in parasurf_base parasurf; do
timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$b-$r.json > $OUT/ab-$b-$r.log 2>&1; echo "== $b $r rc=$? $SECONDS s"; grep -E "resident" $OUT/ab-$b-$r.log | cut -c1-20,60-70,96-240
done; done
timeout 150 $B/parasurf bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cpu,cuda --no-peers --repeats 5 --json $OUT/cpu-cuda.json > $OUT/cpu-cuda.log 2>&1; echo "== cpu,cuda rc=$? $SECONDS s"; grep -E "cpu |resident" $OUT/cpu-cuda.log | cut -c1-20,60-70,96-240
cd $OUT && tar czf ab.tgz *.txt *.json *.log && rm -f *.json *.log && ls
