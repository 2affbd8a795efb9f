#!/usr/bin/env bash
# Session 22 call 13: host timestamps in the CUDA engine's count() (b299376 plus two AB-only prints): how long the
# host takes to enqueue a slab's launches against when the totals come home, MR_Gd and tangle 256^3/512^3 float32
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins13
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
AB_HOST_TIMING=1 timeout 100 $B/parasurf_timing bench isosurface --sizes 256,512 --types float32 --volumes .data/volumes/MR_Gd.nii.gz:60 --devices cuda --no-peers --repeats 15 > $OUT/timing.log 2>&1; echo "== rc=$? $SECONDS s"
grep -E "resident" $OUT/timing.log | cut -c1-20,60-72
python3 - $OUT/timing.log <<'PY' | tee $OUT/timing-summary.txt
import re,sys
lines=open(sys.argv[1]).read().split('\n')
block=[];name=None;out=[]
for l in lines:
    m=re.match(r'^(tangle \S+ \S+|\S+\.nii\.gz)',l.strip())
    if m and 'AB' not in l and ':' in l: name=m.group(1)
    m=re.search(r'AB count enqueued ([\d.]+) us, totals home ([\d.]+) us',l)
    if m: block.append((name,float(m.group(1)),float(m.group(2))))
    m=re.search(r'AB generate ([\d.]+) us',l)
    if m and block: block[-1]=block[-1]+(float(m.group(1)),)
import collections
d=collections.defaultdict(list)
for b in block: d[b[0]].append(b[1:])
for k,v in d.items():
    v=v[2:]
    print(k, 'n',len(v),'enqueued min/med', round(min(x[0] for x in v),1), sorted(x[0] for x in v)[len(v)//2], 'home min/med', round(min(x[1] for x in v),1), sorted(x[1] for x in v)[len(v)//2], 'generate min/med', round(min(x[2] for x in v if len(x)>2),1) if any(len(x)>2 for x in v) else None)
PY
cd $OUT && tar czf ab.tgz *.txt *.log && ls
