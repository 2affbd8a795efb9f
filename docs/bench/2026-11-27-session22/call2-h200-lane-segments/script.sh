#!/usr/bin/env bash
# Session 22 call 2: pass 2b with several segments a lane (AB_TRI_G forces 1, 2 or 4; default by slab size) on the
# no-flag-bytes code, against b67b75d (parasurf_base) and call 1's build (parasurf_c1): tests (default, G=2, G=4),
# cuda_vs_cpu, A/B (3 rounds), ncu 512^3 f32 and MR_Gd, memcheck
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins5
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:-Isosurface.EveryTiePattern*'
for gg in 0 2 4; do
if [ $gg = 0 ]; then unset AB_TRI_G; else export AB_TRI_G=$gg; fi
timeout 100 $B/parasurf_tests --gtest_filter="$F" > $OUT/tests-g$gg.txt 2>&1; echo "== tests G=$gg rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $OUT/tests-g$gg.txt | head -12
timeout 60 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc-g$gg.txt 2>&1; echo "== cuda_vs_cpu G=$gg rc=$? $SECONDS s"; tail -1 $OUT/cvc-g$gg.txt
done
unset AB_TRI_G
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$name-$r.json > $OUT/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; grep -E "resident" $OUT/ab-$name-$r.log | cut -c1-20,60-70,96-240; }
for r in 1 2 3; do run base parasurf_base; run c1 parasurf_c1; run new parasurf; run g1 parasurf AB_TRI_G=1; run g4 parasurf AB_TRI_G=4; done
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
b=parasurf
timeout 90 ncu --clock-control none --metrics $M --launch-count 12 --csv $B/$b bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu-$b.csv 2>/dev/null; echo "== ncu $b $SECONDS s"; python3 .ab/ncu_table.py $OUT/ncu-$b.csv | cut -c1-120 > $OUT/ncu-$b-table.txt; tail -8 $OUT/ncu-$b-table.txt
timeout 60 ncu --clock-control none --metrics $M --launch-count 14 --csv $B/$b isosurface .data/volumes/MR_Gd.nii.gz --level 60 --device cuda -q -o /tmp/mr.ply > $OUT/ncu-mr-$b.csv 2>/dev/null; echo "== ncu MR_Gd $b $SECONDS s"; python3 .ab/ncu_table.py $OUT/ncu-mr-$b.csv | cut -c1-120 > $OUT/ncu-mr-$b-table.txt; tail -8 $OUT/ncu-mr-$b-table.txt
AB_TRI_G=4 timeout 120 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:IsosurfaceLabels.*:Isosurface.Mc33*' > $OUT/memcheck.txt 2>&1; echo "== memcheck G=4 rc=$? $SECONDS s"; tail -2 $OUT/memcheck.txt
cd $OUT && tar czf ab.tgz *.txt *.json *.log *.csv && rm -f *.json *.log *.csv && ls
