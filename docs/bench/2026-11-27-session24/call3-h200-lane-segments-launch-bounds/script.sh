#!/usr/bin/env bash
# Session 24 call 3: pass 2b as one template (parasurf, the fold) against c66db89 (parasurf_base); one wave for
# MR_Gd's passes: AB_LANESEG=2/4 (AB-only) forces two or four segments a lane in pass 2b; parasurf_tri5 and
# parasurf_fl5 bound pass 2b or pass 1b to 48 registers (five blocks an SM) by an AB-only define.
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins24
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:LabelBoundaries*:-Isosurface.EveryTiePattern*'
timeout 100 $B/parasurf_tests --gtest_filter="$F" > $OUT/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $OUT/tests.txt | head -12
AB_LANESEG=2 timeout 100 $B/parasurf_tests --gtest_filter="Isosurface.CpuAndCuda*:Isosurface.Reused*:Isosurface.LargeCuda*:Isosurface.Ties*" > $OUT/tests-ls2.txt 2>&1; echo "== tests ls2 rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $OUT/tests-ls2.txt | head -12
timeout 60 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -1 $OUT/cvc.txt
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
nc() { local name=$1 b=$2; shift 2; env "$@" timeout 60 ncu --clock-control none --cache-control none --metrics $M --csv $B/$b isosurface .data/volumes/MR_Gd.nii.gz --level 60 --device cuda -q -o /tmp/mr.ply > $OUT/ncu-$name.csv 2>&1; echo "== ncu $name rc=$? $SECONDS s"; python3 .ab/ncu_table.py $OUT/ncu-$name.csv | cut -c1-100 | grep -E "flags|triangle"; }
nc new parasurf; nc ls2 parasurf AB_LANESEG=2; nc tri5 parasurf_tri5; nc fl5 parasurf_fl5
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$name-$r.json > $OUT/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3; do run base parasurf_base; run new parasurf; run ls2 parasurf AB_LANESEG=2; run ls4 parasurf AB_LANESEG=4; run tri5 parasurf_tri5; run fl5 parasurf_fl5; done
timeout 100 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.Reused*:IsosurfaceLabels.*:Isosurface.Mc33*:LabelBoundaries.CpuAndCuda*' > $OUT/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $OUT/memcheck.txt
cd $OUT && tar czf ab.tgz *.txt *.json *.log *.csv && rm -f *.json *.log *.csv && ls
