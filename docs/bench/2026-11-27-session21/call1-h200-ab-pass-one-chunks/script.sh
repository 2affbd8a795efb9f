#!/usr/bin/env bash
# Session 21 call 1: pass 1 in chunked launches (classify chunk m beside the flags of chunk m-1) — variants by chunk
# size against 5b5f075 (parasurf_base): tests, cuda_vs_cpu, A/B (2 rounds), ncu at 512^3 f32 and MR_Gd, sanitizers
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*'
timeout 120 $B/parasurf_tests --gtest_filter="$F" > $OUT/tests.txt 2>&1; echo "== tests rc=$?"; grep -E "PASSED|FAILED|tests ran|SKIPPED \]" $OUT/tests.txt | head -12
timeout 60 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$?"; tail -2 $OUT/cvc.txt
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$name-$r.json > $OUT/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; grep -E "resident" $OUT/ab-$name-$r.log | cut -c1-20,60-70,96-240; }
for r in 1 2; do
run base parasurf_base; run v64 parasurf; run c32 parasurf AB_CHUNK_SLICES=32 AB_MAX_CHUNKS=16; run c128 parasurf AB_CHUNK_SLICES=128 AB_MAX_CHUNKS=4; run one parasurf AB_CHUNK_SLICES=100000 AB_MAX_CHUNKS=1
done
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
for b in parasurf_base parasurf; do
timeout 90 ncu --clock-control none --metrics $M --launch-count 20 --csv $B/$b bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu-$b.csv 2>/dev/null; echo "== ncu $b $SECONDS s"; python3 .ab/ncu_table.py $OUT/ncu-$b.csv | cut -c1-120 > $OUT/ncu-$b-table.txt; cat $OUT/ncu-$b-table.txt
timeout 60 ncu --clock-control none --metrics $M --launch-count 20 --csv $B/$b isosurface .data/volumes/MR_Gd.nii.gz --level 60 --device cuda -q -o /tmp/mr.ply > $OUT/ncu-mr-$b.csv 2>/dev/null; echo "== ncu MR_Gd $b"; python3 .ab/ncu_table.py $OUT/ncu-mr-$b.csv | cut -c1-120 > $OUT/ncu-mr-$b-table.txt; cat $OUT/ncu-mr-$b-table.txt
done
cd $OUT && tar czf ab.tgz *.txt *.json *.log *.csv && rm -f *.json *.log *.csv && ls
