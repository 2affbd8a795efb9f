#!/usr/bin/env bash
# Session 22 call 8: b299376 (parasurf) against b67b75d (parasurf_base) and a variant (parasurf_rt: pass 2b routes
# cells whose rows hold no sample on the level, where it matters, to the common corner code): tests of the variant,
# cuda_vs_cpu both, A/B 3 rounds, ncu MR_Gd both, CPU against GPU (b299376), memcheck of the variant
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins11
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:-Isosurface.EveryTiePattern*'
timeout 100 $B/parasurf_tests_rt --gtest_filter="$F" > $OUT/tests-rt.txt 2>&1; echo "== tests rt rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $OUT/tests-rt.txt | head -12
for b in parasurf parasurf_rt; do timeout 60 bash $B/cuda_vs_cpu.sh $B/$b no-mpi > $OUT/cvc-$b.txt 2>&1; echo "== cuda_vs_cpu $b rc=$? $SECONDS s"; tail -1 $OUT/cvc-$b.txt; done
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$name-$r.json > $OUT/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3; do run base parasurf_base; run final parasurf; run rt parasurf_rt; done
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
for b in parasurf parasurf_rt; do
timeout 60 ncu --clock-control none --metrics $M --launch-count 14 --csv $B/$b isosurface .data/volumes/MR_Gd.nii.gz --level 60 --device cuda -q -o /tmp/mr.ply > $OUT/ncu-mr-$b.csv 2>/dev/null; echo "== ncu MR_Gd $b $SECONDS s"; python3 .ab/ncu_table.py $OUT/ncu-mr-$b.csv | cut -c1-120 > $OUT/ncu-mr-$b-table.txt; tail -8 $OUT/ncu-mr-$b-table.txt
done
timeout 150 $B/parasurf bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cpu,cuda --no-peers --repeats 5 --json $OUT/cpu-cuda.json > $OUT/cpu-cuda.log 2>&1; echo "== cpu,cuda rc=$? $SECONDS s"; grep -E "resident" $OUT/cpu-cuda.log | cut -c1-20,60-70,150-240
timeout 100 compute-sanitizer --tool memcheck $B/parasurf_tests_rt --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:IsosurfaceLabels.*:Isosurface.Mc33*' > $OUT/memcheck-rt.txt 2>&1; echo "== memcheck rt rc=$? $SECONDS s"; tail -1 $OUT/memcheck-rt.txt
cd $OUT && tar czf ab.tgz *.txt *.json *.log *.csv && rm -f *.json *.log *.csv && ls
