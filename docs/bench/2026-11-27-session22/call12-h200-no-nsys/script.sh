#!/usr/bin/env bash
# Session 22 call 12: where MR_Gd's 0.08-0.09 ms go: an Nsight Systems trace of the resident bench (b299376), API calls
# against kernels
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins12
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
which nsys || ls /usr/local/cuda/bin | grep -i nsys; NSYS=$(which nsys || ls -d /opt/nvidia/nsight-systems*/bin/nsys /usr/local/cuda/bin/nsys 2>/dev/null | head -1); echo "nsys: $NSYS"
timeout 200 $NSYS profile -t cuda --force-overwrite true -o /tmp/mr $B/parasurf_final bench isosurface --sizes 8 --types float32 --volumes .data/volumes/MR_Gd.nii.gz:60 --devices cuda --no-peers --repeats 40 > $OUT/nsys-run.txt 2>&1; echo "== nsys rc=$? $SECONDS s"
timeout 120 $NSYS stats --report cuda_gpu_trace,cuda_api_trace --format csv --output /tmp/mrstats /tmp/mr.nsys-rep > $OUT/nsys-stats.txt 2>&1; echo "== stats rc=$? $SECONDS s"; ls /tmp/mrstats* 
cp /tmp/mrstats_cuda_gpu_trace.csv $OUT/gpu-trace.csv 2>/dev/null; cp /tmp/mrstats_cuda_api_trace.csv $OUT/api-trace.csv 2>/dev/null
cd $OUT && tar czf ab.tgz *.txt *.csv && rm -f *.csv && ls -la
