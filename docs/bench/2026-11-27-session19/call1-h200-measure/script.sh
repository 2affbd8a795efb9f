#!/usr/bin/env bash
# Session 19 call 1: the final session-18 CUDA code (ded950f) measured as it is: bench rounds and per-kernel ncu.
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
for r in 1 2 3; do
$B/parasurf bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/b-$r.json > $OUT/b-$r.log 2>&1; echo "== round $r rc=$?"; grep -E "bandwidth|resident" $OUT/b-$r.log | cut -c1-20,60-70,140-240
done
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active
timeout 120 ncu --clock-control none --metrics $M --launch-count 12 --csv $B/parasurf bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu-512f.csv 2>/dev/null; echo "== ncu 512 f32"; python3 .ab/ncu_table.py $OUT/ncu-512f.csv | cut -c1-160
timeout 120 ncu --clock-control none --metrics $M --launch-count 12 --csv $B/parasurf bench isosurface --sizes 512 --types uint8 --devices cuda --no-peers --repeats 1 > $OUT/ncu-512u.csv 2>/dev/null; echo "== ncu 512 u8"; python3 .ab/ncu_table.py $OUT/ncu-512u.csv | cut -c1-160
timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum --launch-count 14 --csv $B/parasurf bench isosurface --sizes "" --volumes .data/volumes/MR_Gd.nii.gz:60 --devices cuda --no-peers --repeats 1 > $OUT/ncu-mrgd.csv 2>/dev/null; echo "== ncu MR_Gd"; python3 .ab/ncu_table.py $OUT/ncu-mrgd.csv | cut -c1-80
cd $OUT && tar czf m.tgz *.json *.log *.csv && rm -f *.json *.log *.csv && ls
