#!/usr/bin/env bash
# Session 24 call 9: the generation's kernels size the slab themselves from the scan (slab_totals) and the totals
# kernel runs beside the triangle pass, after the vertex passes (parasurf), against 9966c89 (parasurf_base).
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins24i
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:LabelBoundaries*:-Isosurface.EveryTiePattern*'
timeout 60 $B/parasurf_tests --gtest_filter="$F" > $W/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $W/tests.txt | head -12; snap
timeout 30 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $W/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -1 $W/cvc.txt; snap
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 30 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --min-time 0 --json $W/ab-$name-$r.json > $W/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3; do run base parasurf_base; run sized parasurf; done; snap
timeout 40 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.Reused*:IsosurfaceLabels.*' > $W/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $W/memcheck.txt; snap
timeout 30 $B/parasurf bench isosurface --sizes 256 --types float32 --volumes .data/volumes/MR_Gd.nii.gz:60 --no-peers --json $W/cpu-cuda.json > $W/cpu-cuda.log 2>&1; echo "== cpu,cuda rc=$? $SECONDS s"; grep -E "resident" $W/cpu-cuda.log | cut -c1-20,150-290; snap
