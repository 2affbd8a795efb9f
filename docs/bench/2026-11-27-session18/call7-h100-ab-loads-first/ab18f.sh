#!/usr/bin/env bash
# base 5f545c5, parasurf_v2 = gradient loads first, parasurf = that and the triangle pass loading first vertices early
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
$B/parasurf_tests --gtest_filter="Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*" > $OUT/tests.txt 2>&1; echo "== tests rc=$?"; grep -E "PASSED|FAILED|seed" $OUT/tests.txt | head -4
timeout 200 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter="Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.WithoutNormals*" > $OUT/memcheck.txt 2>&1; echo "== memcheck rc=$?"; tail -1 $OUT/memcheck.txt
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
for r in 1 2 3; do for b in parasurf_base parasurf parasurf_v2; do
$B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$b-$r.json > $OUT/ab-$b-$r.log 2>&1; echo "== $b $r rc=$?"; grep -E "bandwidth|resident" $OUT/ab-$b-$r.log | cut -c1-20,60-70,140-240
done; done
for b in parasurf_base parasurf parasurf_v2; do
timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active --launch-count 12 --csv $B/$b bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu-$b.csv 2>/dev/null; echo "== ncu $b"; python3 .ab/ncu_table.py $OUT/ncu-$b.csv | grep -E "flags|triangle|classify|vertex" | cut -c1-150
done
cd $OUT && tar czf ab.tgz *.txt *.json *.log *.csv && rm -f *.json *.log *.csv && ls
