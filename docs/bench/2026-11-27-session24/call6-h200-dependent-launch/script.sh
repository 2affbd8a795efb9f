#!/usr/bin/env bash
# Session 24 call 6: programmatic dependent launch of pass 1b, the totals and the vertex passes (parasurf; AB_PDL=0, AB-only,
# turns it off) against c66db89 (parasurf_base), alternated, 5 rounds; tests, cuda_vs_cpu, memcheck, racecheck.
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins24
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:LabelBoundaries*:-Isosurface.EveryTiePattern*'
timeout 100 $B/parasurf_tests --gtest_filter="$F" > $OUT/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $OUT/tests.txt | head -12
timeout 60 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -1 $OUT/cvc.txt
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$name-$r.json > $OUT/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3 4 5; do run base parasurf_base; run pdl parasurf; run nopdl parasurf AB_PDL=0; done
timeout 150 $B/parasurf bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cpu,cuda --no-peers --repeats 5 --json $OUT/cpu-cuda.json > $OUT/cpu-cuda.log 2>&1; echo "== cpu,cuda rc=$? $SECONDS s"; grep -E "resident" $OUT/cpu-cuda.log | cut -c1-20,150-240
timeout 100 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.Reused*:IsosurfaceLabels.*:Isosurface.Mc33*:LabelBoundaries.CpuAndCuda*' > $OUT/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $OUT/memcheck.txt
timeout 80 compute-sanitizer --tool racecheck $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*:Isosurface.Reused*' > $OUT/racecheck.txt 2>&1; echo "== racecheck rc=$? $SECONDS s"; tail -1 $OUT/racecheck.txt
cd $OUT && tar czf ab.tgz *.txt *.json *.log && rm -f *.json *.log && ls
