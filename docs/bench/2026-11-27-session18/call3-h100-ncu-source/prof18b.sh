#!/usr/bin/env bash
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
timeout 240 ncu --clock-control none -k regex:'flags_kernel|triangle_kernel|vertex_compute|vertex_list' --launch-skip 4 --launch-count 4 \
  --section SourceCounters --section WarpStateStats -o /tmp/prof $B/parasurf bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu.log 2>&1; echo "ncu rc=$?"; tail -2 $OUT/ncu.log
for k in flags_kernel triangle_kernel vertex_compute vertex_list; do
  ncu -i /tmp/prof.ncu-rep -k regex:$k --page source --csv --print-source sass > $OUT/src-sass-$k.csv 2>&1; echo "$k sass rc=$? $(wc -l < $OUT/src-sass-$k.csv)"
done
cd $OUT && tar czf prof.tgz *.csv *.log && rm -f *.csv && ls -la
