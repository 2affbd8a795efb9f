#!/usr/bin/env bash
# Session 20 call 7: parasurf (final, d: deal_every_listed_vertex) — tests, cuda_vs_cpu, one bench, memcheck, racecheck
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*'
$B/parasurf_tests --gtest_filter="$F" > $OUT/tests.txt 2>&1; echo "== tests rc=$?"; grep -E "PASSED|FAILED|tests ran|seed|SKIPPED \]" $OUT/tests.txt | head -12
bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$?"; tail -2 $OUT/cvc.txt
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
$B/parasurf bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/bench.json > $OUT/bench.log 2>&1; echo "== bench rc=$?"; grep -E "copy bandwidth|resident" $OUT/bench.log | cut -c1-20,60-70,96-240
timeout 200 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.WithoutNormals*:Isosurface.*Reuse*:Isosurface.LargeCuda*:IsosurfaceLabels.*' > $OUT/memcheck.txt 2>&1; echo "== memcheck rc=$?"; tail -2 $OUT/memcheck.txt
timeout 100 compute-sanitizer --tool racecheck $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*' > $OUT/racecheck.txt 2>&1; echo "== racecheck rc=$?"; tail -2 $OUT/racecheck.txt
cd $OUT && tar czf ab.tgz *.txt *.json *.log && rm -f *.json *.log && ls
