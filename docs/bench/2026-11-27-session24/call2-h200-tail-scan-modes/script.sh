#!/usr/bin/env bash
# Session 24 call 2: the tail scan's ticket three ways (AB_MODE, AB-only): 1 every thread fences (call 1's code),
# 2 thread 0's acq_rel ticket, 3 no ticket: a one-block kernel of 1024 threads after pass 1b; against c66db89
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins24
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:LabelBoundaries*:-Isosurface.EveryTiePattern*'
for m in 2 3; do AB_MODE=$m timeout 100 $B/parasurf_tests --gtest_filter="$F" > $OUT/tests-m$m.txt 2>&1; echo "== tests AB_MODE=$m rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $OUT/tests-m$m.txt | head -12; done
AB_TAIL=100000000 timeout 100 $B/parasurf_tests --gtest_filter='Isosurface.LargeCuda*:Isosurface.CpuAndCuda*:Isosurface.Reused*' > $OUT/tests-alltail.txt 2>&1; echo "== tests AB_TAIL=all rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $OUT/tests-alltail.txt | head -12
timeout 60 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -1 $OUT/cvc.txt
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
for m in 1 2 3; do AB_MODE=$m timeout 60 ncu --clock-control none --cache-control none --metrics $M --csv $B/parasurf isosurface .data/volumes/MR_Gd.nii.gz --level 60 --device cuda -q -o /tmp/mr.ply > $OUT/ncu-mr-m$m.csv 2>&1; echo "== ncu m$m rc=$? $SECONDS s"; python3 .ab/ncu_table.py $OUT/ncu-mr-m$m.csv | cut -c1-100 | grep -E "flags|small|totals|Scan"; done
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$name-$r.json > $OUT/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3; do run base parasurf_base; run m1 parasurf AB_MODE=1; run m2 parasurf AB_MODE=2; run m3 parasurf AB_MODE=3; run notail parasurf AB_TAIL=0; done
for m in 2 3; do AB_MODE=$m timeout 80 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.Reused*:IsosurfaceLabels.*:Isosurface.Mc33*' > $OUT/memcheck-m$m.txt 2>&1; echo "== memcheck m$m rc=$? $SECONDS s"; tail -1 $OUT/memcheck-m$m.txt; done
AB_MODE=2 timeout 80 compute-sanitizer --tool racecheck $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*:Isosurface.Reused*' > $OUT/racecheck.txt 2>&1; echo "== racecheck rc=$? $SECONDS s"; tail -1 $OUT/racecheck.txt
cd $OUT && tar czf ab.tgz *.txt *.json *.log *.csv && rm -f *.json *.log *.csv && ls
