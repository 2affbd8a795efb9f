#!/usr/bin/env bash
# Session 25 call 2: stage events off in the bench's resident timing + totals written to mapped host memory
# (parasurf, new default) against 7c71bb5 (parasurf_base); AB_SERIAL=1|2 (AB-only): no side stream, the triangle
# pass launched with PDL on stream 0 before (1) or after (2) the vertex passes.
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins25b
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:LabelBoundaries*:-Isosurface.EveryTiePattern*'
timeout 60 $B/parasurf_tests --gtest_filter="$F" > $W/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $W/tests.txt | head -12; snap
AB_SERIAL=1 timeout 60 $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.Reused*:IsosurfaceLabels.*' > $W/tests-s1.txt 2>&1; echo "== tests s1 rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $W/tests-s1.txt | head -12; snap
timeout 30 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $W/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -1 $W/cvc.txt; snap
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 40 $B/$b bench isosurface --sizes 256,512 --types float32 --volumes $V --devices cuda --no-peers --repeats 15 --min-time 0.2 --json $W/ab-$name-$r.json > $W/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3 4; do run base parasurf_base; run new parasurf; run s1 parasurf AB_SERIAL=1; run s2 parasurf AB_SERIAL=2; snap; done
timeout 60 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.Reused*:IsosurfaceLabels.*' > $W/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $W/memcheck.txt; snap
timeout 60 $B/parasurf bench isosurface --sizes 256 --types float32 --volumes .data/volumes/MR_Gd.nii.gz:60 --no-peers --json $W/cpu-cuda.json > $W/cpu-cuda.log 2>&1; echo "== cpu,cuda rc=$? $SECONDS s"; grep -E "resident" $W/cpu-cuda.log | cut -c1-20,90-200; snap
