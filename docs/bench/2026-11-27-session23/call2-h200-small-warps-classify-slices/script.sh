#!/usr/bin/env bash
# Session 23 call 2: small-slab knobs (AB-only env): pass 2b's warp of 8/16 segments (AB_TRI_W) and pass 1a's blocks
# of 4 slices (AB_CLS_SLICES) against 2421197 (parasurf_base): tests under each knob, memcheck, A/B (3 rounds),
# ncu of MR_Gd with warm caches and free clocks
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins15
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:LabelBoundaries*:-Isosurface.EveryTiePattern*'
for k in "X=1" "AB_TRI_W=8" "AB_TRI_W=16 AB_CLS_SLICES=4"; do env $k timeout 100 $B/parasurf_tests --gtest_filter="$F" > "$OUT/tests-${k// /_}.txt" 2>&1; echo "== tests $k rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" "$OUT/tests-${k// /_}.txt" | head -8; done
AB_TRI_W=8 AB_CLS_SLICES=4 timeout 60 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -1 $OUT/cvc.txt
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$name-$r.json > $OUT/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3; do run base parasurf_base; run new parasurf; run w8 parasurf AB_TRI_W=8; run w16 parasurf AB_TRI_W=16; run s4 parasurf AB_CLS_SLICES=4; run w8s4 parasurf AB_TRI_W=8 AB_CLS_SLICES=4; done
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
for k in "X=1" "AB_TRI_W=8 AB_CLS_SLICES=4"; do env $k timeout 60 ncu --clock-control none --cache-control none --metrics $M --launch-count 14 --csv $B/parasurf isosurface .data/volumes/MR_Gd.nii.gz --level 60 --device cuda -q -o /tmp/mr.ply > $OUT/ncu.csv 2>/dev/null; echo "== ncu MR_Gd $k $SECONDS s"; python3 .ab/ncu_table.py $OUT/ncu.csv | cut -c1-120 > "$OUT/ncu-mr-${k// /_}.txt"; tail -8 "$OUT/ncu-mr-${k// /_}.txt"; done
timeout 110 env AB_TRI_W=8 AB_CLS_SLICES=4 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.Reused*:Isosurface.LargeCuda*:IsosurfaceLabels.*:Isosurface.Mc33*:LabelBoundaries.CpuAndCuda*' > $OUT/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $OUT/memcheck.txt
rm -f $OUT/*.csv; cd $OUT && tar czf ab.tgz *.txt *.json *.log && rm -f *.json *.log && ls
