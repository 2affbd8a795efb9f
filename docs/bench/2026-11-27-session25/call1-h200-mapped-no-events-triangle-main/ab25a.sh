#!/usr/bin/env bash
# Session 25 call 1: AB knobs in one binary (7c71bb5 + knobs): AB_MAPPED (totals written to mapped host memory, host
# waits on an event instead of a copy), AB_NOEVENTS (no stage-timing events), AB_TRIMAIN (triangle pass on stream 0
# with PDL, vertex passes on the side stream).
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins25a
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:LabelBoundaries*:-Isosurface.EveryTiePattern*'
timeout 60 $B/parasurf_tests --gtest_filter="$F" > $W/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $W/tests.txt | head -12; snap
AB_MAPPED=1 AB_NOEVENTS=1 AB_TRIMAIN=1 timeout 60 $B/parasurf_tests --gtest_filter="$F" > $W/tests-on.txt 2>&1; echo "== tests all-on rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $W/tests-on.txt | head -12; snap
AB_MAPPED=1 AB_NOEVENTS=1 AB_TRIMAIN=1 timeout 30 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $W/cvc.txt 2>&1; echo "== cuda_vs_cpu all-on rc=$? $SECONDS s"; tail -1 $W/cvc.txt; snap
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1; shift 1; env "$@" timeout 40 $B/parasurf bench isosurface --sizes 256,512 --types float32 --volumes $V --devices cuda --no-peers --repeats 15 --min-time 0.3 --json $W/ab-$name-$r.json > $W/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3 4; do run base; run m AB_MAPPED=1; run me AB_MAPPED=1 AB_NOEVENTS=1; run met AB_MAPPED=1 AB_NOEVENTS=1 AB_TRIMAIN=1; run mt AB_MAPPED=1 AB_TRIMAIN=1; snap; done
AB_MAPPED=1 AB_NOEVENTS=1 AB_TRIMAIN=1 timeout 60 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.Reused*:IsosurfaceLabels.*' > $W/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $W/memcheck.txt; snap
