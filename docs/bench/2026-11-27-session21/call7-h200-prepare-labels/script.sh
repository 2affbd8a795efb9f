#!/usr/bin/env bash
# Session 21 call 7: the first slab's label and scalar arrays sized in prepare() (extract.cpp): CUDA isosurface and
# label tests, cuda_vs_cpu, a run with --scalars on both devices, memcheck over the label and reuse tests
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins2
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:LabelBoundaries.*:Mc*:IsoTables*:-Isosurface.EveryTiePattern*'
timeout 100 $B/parasurf_tests --gtest_filter="$F" > $OUT/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran|SKIPPED \]" $OUT/tests.txt | head -12
timeout 60 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -2 $OUT/cvc.txt
for d in cpu cuda; do timeout 60 $B/parasurf isosurface .data/volumes/MR_Gd.nii.gz --level 60 --scalars .data/volumes/MR_Gd.nii.gz --device $d -o /tmp/mr-$d.ply > $OUT/scalars-$d.txt 2>&1; echo "== scalars $d rc=$?"; tail -3 $OUT/scalars-$d.txt; done
timeout 150 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='IsosurfaceLabels.*:LabelBoundaries.*:Isosurface.CpuAndCuda*:Isosurface.*Reuse*' > $OUT/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -2 $OUT/memcheck.txt
