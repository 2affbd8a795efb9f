#!/usr/bin/env bash
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*'
$B/parasurf_tests --gtest_filter="$F" > $OUT/tests.txt 2>&1; echo "== tests rc=$?"; grep -E "PASSED|FAILED|tests ran|seed" $OUT/tests.txt | head
bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$?"; tail -2 $OUT/cvc.txt
for r in 1 2 3; do for b in parasurf_base parasurf parasurf_v2; do
$B/$b bench isosurface --sizes 256,512 --types uint8,float32 --devices cuda --no-peers --repeats 15 --json $OUT/ab-$b-$r.json > $OUT/ab-$b-$r.log 2>&1; echo "== $b $r rc=$?"; grep -E "resident" $OUT/ab-$b-$r.log | cut -c1-20,60-70,140-240
done; done
for b in parasurf_base parasurf parasurf_v2; do
timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active --launch-count 12 --csv $B/$b bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu-$b.csv 2>/dev/null; echo "== ncu $b"; python3 .ab/ncu_table.py $OUT/ncu-$b.csv | grep -E "flags|triangle|classify|vertex" | cut -c1-150
done
timeout 200 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.Mc33*' > $OUT/memcheck.txt 2>&1; echo "== memcheck rc=$?"; tail -2 $OUT/memcheck.txt
timeout 200 compute-sanitizer --tool racecheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*' > $OUT/racecheck.txt 2>&1; echo "== racecheck rc=$?"; tail -2 $OUT/racecheck.txt
cd $OUT && tar czf ab.tgz *.txt *.json *.log *.csv && rm -f *.json *.log *.csv && ls
