#!/usr/bin/env bash
# Source-level stall profile of the 512^3 float32 kernels, plus a baseline bench.
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
ncu --version | tail -1
$B/parasurf bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 15 --json $OUT/base.json > $OUT/base.log 2>&1; grep -E "copy bandwidth|resident" $OUT/base.log | cut -c1-70,140-240
timeout 240 ncu --clock-control none -k regex:'flags_kernel|triangle_kernel|classify_kernel|vertex_compute|vertex_list' --launch-skip 5 --launch-count 5 \
  --section SourceCounters --section WarpStateStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \
  --import-source yes -o /tmp/prof $B/parasurf bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu.log 2>&1; echo "ncu rc=$?"; tail -3 $OUT/ncu.log
ncu -i /tmp/prof.ncu-rep --page details --csv > $OUT/details.csv 2>&1; echo "details rc=$?"
for k in flags_kernel triangle_kernel classify_kernel vertex_compute vertex_list; do
  ncu -i /tmp/prof.ncu-rep -k regex:$k --page source --csv --print-source cuda > $OUT/src-cuda-$k.csv 2>&1; echo "$k cuda rc=$? $(wc -l < $OUT/src-cuda-$k.csv)"
  ncu -i /tmp/prof.ncu-rep -k regex:$k --page source --csv --print-source sass > $OUT/src-sass-$k.csv 2>&1; echo "$k sass rc=$? $(wc -l < $OUT/src-sass-$k.csv)"
done
cp /tmp/prof.ncu-rep $OUT/ 2>/dev/null
cd $OUT && tar czf prof.tgz *.csv *.log *.json && rm -f *.csv && ls -la
