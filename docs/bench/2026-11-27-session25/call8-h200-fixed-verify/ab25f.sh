#!/usr/bin/env bash
# Session 25 call 8: 73b612c (built here; the vertex passes wait again) on one GPU: CUDA isosurface tests,
# cuda_vs_cpu, memcheck and racecheck as gpu-check.sh's ISO_ONLY filter, A/B against 7c71bb5, and the benchmark as
# gpu-check.sh runs it.
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins25f
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:LabelBoundaries*:-Isosurface.EveryTiePattern*'
timeout 60 $B/parasurf_tests --gtest_filter="$F" > $W/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $W/tests.txt | head -12; snap
timeout 30 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $W/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -1 $W/cvc.txt; snap
S='Isosurface.CpuAndCudaGiveTheSameMesh:Isosurface.ReusedCudaEngineGivesWhatAFreshOneGives:Isosurface.EveryVoxelTypeGivesTheSameTopology:Isosurface.TiesMakeNoHolesNoDuplicatesNoDegenerates:Isosurface.ALoneSampleOnTheLevelLeavesNoVertex:Isosurface.Mc33MatchesTheTrilinearTopology:Isosurface.SlabSplitsGiveTheIdenticalMesh:Isosurface.NonFiniteSamplesAreNeverInside:IsosurfaceLabels.*:LabelBoundaries.CpuAndCudaGiveTheSameMesh'
OMP_WAIT_POLICY=PASSIVE timeout 200 compute-sanitizer --tool memcheck --error-exitcode 99 $B/parasurf_tests --gtest_filter="$S" > $W/memcheck.txt 2>&1 &
OMP_WAIT_POLICY=PASSIVE timeout 200 compute-sanitizer --tool racecheck --error-exitcode 99 $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*:Isosurface.Reused*:Isosurface.Ties*:IsosurfaceLabels.*' > $W/racecheck.txt 2>&1 &
wait; echo "== sanitizers $SECONDS s"; tail -1 $W/memcheck.txt; tail -1 $W/racecheck.txt; grep -E "PASSED|FAILED" $W/memcheck.txt $W/racecheck.txt; snap
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 40 $B/$b bench isosurface --sizes 256,512 --types float32 --volumes $V --devices cuda --no-peers --repeats 15 --min-time 0.2 --json $W/ab-$name-$r.json > $W/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3; do run base parasurf_base; run new parasurf; snap; done
timeout 200 $B/parasurf bench isosurface --sizes 256,512 --volumes $V --json $W/bench-isosurface.json > $W/bench-isosurface.log 2>&1; echo "== bench rc=$? $SECONDS s"; snap
grep -E "resident|skimage" $W/bench-isosurface.log | cut -c1-20,60-200
