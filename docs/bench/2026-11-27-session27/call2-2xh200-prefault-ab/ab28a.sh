#!/usr/bin/env bash
# Session 27 call 2: main (bins28m, a579a02 + AB prefault knob) against the branch (bins28b, c2d5923 + knob).
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for f in enabled defrag khugepaged/defrag; do echo "thp $f: $(cat /sys/kernel/mm/transparent_hugepage/$f)"; done
grep -E "MemTotal|MemAvailable|Hugepagesize|AnonHugePages" /proc/meminfo; nproc; lscpu | grep -E "Socket|NUMA node|Model name"
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x
export LD_LIBRARY_PATH=/tmp/x/bins28m:$LD_LIBRARY_PATH
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
(while sleep 10; do snap; done) &
for round in 1 2; do
for b in m b; do for k in 64 2; do
  B=/tmp/x/bins28$b
  AB_PREFAULT_MIN_MB=$k timeout 100 $B/parasurf bench isosurface --sizes 64 --types float32 --devices cuda --no-peers --repeats 5 --min-time 0 --multi-gpu 1024 --out-of-core 2048 --json $W/r$round-$b-$k.json > $W/r$round-$b-$k.log 2>&1
  echo "== round $round bins $b prefault-min $k MiB rc=$?"; grep -A4 -E "several GPUs:|out of core:" $W/r$round-$b-$k.log | grep -E "GPU\(s\)|setup" | cut -c1-210
done; done; done
grep AnonHugePages /proc/meminfo
kill %1; snap
