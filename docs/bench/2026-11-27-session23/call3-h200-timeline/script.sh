#!/usr/bin/env bash
# Session 23 call 3: the device's timeline of count() (AB-only events after every launch), MR_Gd, spm152, tangle 256^3
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins16
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
for v in MR_Gd spm152; do AB_TIMELINE=1 timeout 60 $B/parasurf_tl bench isosurface --sizes 8 --types float32 --volumes .data/volumes/$v.nii.gz:60 --devices cuda --no-peers --repeats 20 > $OUT/tl-$v.log 2>&1; echo "== $v rc=$? $SECONDS s"; done
AB_TIMELINE=1 timeout 60 $B/parasurf_tl bench isosurface --sizes 256 --types float32 --devices cuda --no-peers --repeats 20 > $OUT/tl-256.log 2>&1; echo "== 256 rc=$? $SECONDS s"
for f in $OUT/tl-*.log; do echo "$f"; grep "resident" $f | cut -c1-100; grep "AB tl" $f | tail -20 | python3 -c "
import sys,re
rows=[list(map(float,re.findall(r'[\d.]+',l))) for l in sys.stdin]
names='memset classify flags scan totals tri_start tri_end vlist vcomp join copy'.split()
print(' '.join(f'{n} {sorted(r[i] for r in rows)[len(rows)//2]:.1f}' for i,n in enumerate(names)))
"; done
cd $OUT && tar czf ab.tgz *.log && ls
