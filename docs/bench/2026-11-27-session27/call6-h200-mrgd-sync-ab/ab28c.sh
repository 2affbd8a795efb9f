#!/usr/bin/env bash
# Session 27: MR_Gd CPU vs resident GPU spread, and the redundant device sync after a generation made ahead (AB_SKIP_SYNC).
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x; B=/tmp/x/bins30; export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH
W=/tmp/w; mkdir -p $W
for r in 1 2 3; do for k in 0 1; do
  if [ $k = 1 ]; then export AB_SKIP_SYNC=1; else unset AB_SKIP_SYNC; fi
  timeout 60 $B/parasurf bench isosurface --sizes 256 --volumes .data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60 --no-peers --json $W/mr$r-$k.json > $W/mr$r-$k.log 2>&1
  echo "== round $r skip-sync $k rc=$?"; grep -E "^  cpu |cuda resident" $W/mr$r-$k.log | sed -E 's/ +/ /g' | cut -c1-150
done; done
(cd $W && tar czf $OUT/r.tgz .)
