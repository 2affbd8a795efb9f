#!/usr/bin/env bash
# Session 23 call 8: pass 2b with the common body alone (AB_COMMON_ONLY: no on-level body in the kernel, no spills)
# against both bodies by the level flag (2421197, parasurf_base and parasurf): A/B (3 rounds), ncu MR_Gd
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins20
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$name-$r.json > $OUT/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3; do run base parasurf_base; run same parasurf; run common parasurf AB_COMMON_ONLY=1; done
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__cycles_active.avg,sm__cycles_elapsed.max
for k in X=1 AB_COMMON_ONLY=1; do env $k timeout 60 ncu --clock-control none --cache-control none --metrics $M -k regex:triangle --csv $B/parasurf isosurface .data/volumes/MR_Gd.nii.gz --level 60 --device cuda -q -o /tmp/mr.ply > $OUT/ncu.csv 2>/dev/null; echo "== ncu MR_Gd $k $SECONDS s"; python3 .ab/ncu_table.py $OUT/ncu.csv | cut -c1-150 > $OUT/ncu-$k.txt; tail -2 $OUT/ncu-$k.txt; grep -o '"sm__cycles_[a-z_.]*","[^"]*","[^"]*"' $OUT/ncu.csv; done
rm -f $OUT/*.csv; cd $OUT && tar czf ab.tgz *.txt *.json *.log && rm -f *.json *.log && ls
