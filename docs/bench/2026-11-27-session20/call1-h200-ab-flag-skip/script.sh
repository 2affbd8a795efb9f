#!/usr/bin/env bash
# Session 20 call: parasurf_base (30521e0) against parasurf (flag words stored only for segments with vertices)
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*'
$B/parasurf_tests --gtest_filter="$F" > $OUT/tests.txt 2>&1; echo "== tests rc=$?"; grep -E "PASSED|FAILED|tests ran|seed|SKIPPED \]" $OUT/tests.txt | head -12
bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$?"; tail -2 $OUT/cvc.txt
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
for r in 1 2 3; do for b in parasurf_base parasurf; do
$B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$b-$r.json > $OUT/ab-$b-$r.log 2>&1; echo "== $b $r rc=$?"; grep -E "copy bandwidth|resident" $OUT/ab-$b-$r.log | cut -c1-20,60-70,140-240
done; done
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
for b in parasurf_base parasurf; do
timeout 100 ncu --clock-control none --metrics $M --launch-count 14 --csv $B/$b bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu-$b.csv 2>/dev/null; echo "== ncu $b"; python3 .ab/ncu_table.py $OUT/ncu-$b.csv | cut -c1-120 | tail -9
done
timeout 200 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.WithoutNormals*:IsosurfaceLabels.*' > $OUT/memcheck.txt 2>&1; echo "== memcheck rc=$?"; tail -2 $OUT/memcheck.txt
timeout 100 compute-sanitizer --tool racecheck $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*' > $OUT/racecheck.txt 2>&1; echo "== racecheck rc=$?"; tail -2 $OUT/racecheck.txt
timeout 100 compute-sanitizer --tool initcheck $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*:Isosurface.SlabSplits*' > $OUT/initcheck.txt 2>&1; echo "== initcheck rc=$?"; tail -2 $OUT/initcheck.txt
cd $OUT && tar czf ab.tgz *.txt *.json *.log *.csv && rm -f *.json *.log *.csv && ls
