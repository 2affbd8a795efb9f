#!/bin/bash
# AB-ONLY call 1: host sizing/download microbench
W=/tmp/w; mkdir -p $W
( while true; do sleep 5; (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); done ) &
{ nvidia-smi; uname -a; lscpu | head -20; numactl -H 2>/dev/null | head; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; free -g; } > $W/sys.txt 2>&1
OMP_NUM_THREADS=16 timeout 120 .ab/ab_host 0 > $W/one.txt 2>&1
OMP_NUM_THREADS=16 timeout 120 .ab/ab_host 0 > $W/two0.txt 2>&1 &
P0=$!
OMP_NUM_THREADS=16 timeout 120 .ab/ab_host 1 > $W/two1.txt 2>&1
wait $P0; sleep 1
(cd $W && tar czf $OUT/r.tgz .)
