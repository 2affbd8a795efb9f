#!/usr/bin/env bash
# Session 20 call 6 (H100): parasurf_base (30521e0) against parasurf (final 405c1c5)
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*'
$B/parasurf_tests --gtest_filter="$F" > $OUT/tests.txt 2>&1; echo "== tests rc=$?"; grep -E "PASSED|FAILED|tests ran|seed|SKIPPED \]" $OUT/tests.txt | head -12
bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$?"; tail -2 $OUT/cvc.txt
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
for r in 1 2; do for b in parasurf_base parasurf; do
$B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$b-$r.json > $OUT/ab-$b-$r.log 2>&1; echo "== $b $r rc=$?"; grep -E "copy bandwidth|resident" $OUT/ab-$b-$r.log | cut -c1-20,60-70,96-240
done; done
$B/parasurf bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cpu,cuda --no-peers --repeats 10 --json $OUT/cpu-cuda.json > $OUT/cpu-cuda.log 2>&1; echo "== cpu,cuda rc=$?"; grep -E "copy bandwidth|cpu  |cuda  |resident" $OUT/cpu-cuda.log | cut -c1-20,60-70,96-250
timeout 200 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.WithoutNormals*:Isosurface.*Reuse*:IsosurfaceLabels.*' > $OUT/memcheck.txt 2>&1; echo "== memcheck rc=$?"; tail -2 $OUT/memcheck.txt
timeout 100 compute-sanitizer --tool racecheck $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*' > $OUT/racecheck.txt 2>&1; echo "== racecheck rc=$?"; tail -2 $OUT/racecheck.txt
cd $OUT && tar czf ab.tgz *.txt *.json *.log && rm -f *.json *.log && ls
