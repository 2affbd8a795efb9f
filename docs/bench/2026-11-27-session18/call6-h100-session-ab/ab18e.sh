#!/usr/bin/env bash
# Session 18's net change: parasurf_base = 1b8a550 (session 17's final code), parasurf = 5f545c5; three alternated rounds.
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
for r in 1 2 3; do for b in parasurf_base parasurf; do
$B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$b-$r.json > $OUT/ab-$b-$r.log 2>&1; echo "== $b $r rc=$?"; grep -E "bandwidth|resident" $OUT/ab-$b-$r.log | cut -c1-20,60-70,140-240
done; done
for b in parasurf_base parasurf; do
timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active --launch-count 12 --csv $B/$b bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu-$b.csv 2>/dev/null; echo "== ncu $b"; python3 .ab/ncu_table.py $OUT/ncu-$b.csv | grep -E "flags|triangle|classify|vertex" | cut -c1-150
done
cd $OUT && tar czf ab.tgz *.json *.log *.csv && rm -f *.json *.log *.csv && ls
