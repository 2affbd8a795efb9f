#!/usr/bin/env bash
# Session 24 call 8: on top of HEAD's dependent launches (parasurf_base = 095dc10), AB-only: pass 1a and the vertex
# listing let their next kernel be scheduled at once (griddepcontrol.launch_dependents; AB_TRIGGER, on by default),
# and pass 1a clears the counters instead of a memset (AB_NOMEMSET=1). Alternated, 5 rounds; tests, memcheck.
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins24h
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:LabelBoundaries*:-Isosurface.EveryTiePattern*'
AB_NOMEMSET=1 timeout 100 $B/parasurf_tests --gtest_filter="$F" > $W/tests.txt 2>&1; echo "== tests (trigger, no memset) rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $W/tests.txt | head -12; snap
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --min-time 0 --json $W/ab-$name-$r.json > $W/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3 4 5; do run base parasurf_base; run trig parasurf; run trignm parasurf AB_NOMEMSET=1; run nm parasurf AB_TRIGGER=0 AB_NOMEMSET=1; done; snap
AB_NOMEMSET=1 timeout 100 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.Reused*:IsosurfaceLabels.*' > $W/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $W/memcheck.txt; snap
