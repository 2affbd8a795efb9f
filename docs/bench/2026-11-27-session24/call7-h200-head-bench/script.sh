#!/usr/bin/env bash
# Session 24 call 7 (the last of the session's device time): HEAD (PDL + the bench's --min-time) built on the
# development machine: the CUDA isosurface tests, cuda_vs_cpu, the isosurface benchmark as gpu-check.sh runs it
# (CPU on 16 threads, CUDA, scikit-image; best of >= 3 runs and >= 0.2 s), the same with --min-time 0 and no peers
# (the old best of 3), and memcheck. Outputs are snapshotted into $OUT as they come (a cut-off run keeps them).
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xJf .ab/bins.txz -C /tmp/x && B=/tmp/x/bins24f
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
W=/tmp/w; mkdir -p $W
snap() { (cd $W && tar czf $OUT/.r.tgz . && mv $OUT/.r.tgz $OUT/r.tgz); }
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:LabelBoundaries*:-Isosurface.EveryTiePattern*'
timeout 100 $B/parasurf_tests --gtest_filter="$F" > $W/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $W/tests.txt | head -12; snap
timeout 60 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $W/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -1 $W/cvc.txt; snap
V="--volumes .data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
timeout 250 $B/parasurf bench isosurface --sizes 256,512 $V --json $W/bench-isosurface.json > $W/bench-isosurface.log 2>&1; echo "== bench rc=$? $SECONDS s"; grep -E "resident|skimage" $W/bench-isosurface.log | cut -c1-24,150-290; snap
timeout 100 $B/parasurf bench isosurface --sizes 256,512 $V --min-time 0 --no-peers --json $W/bench-mintime0.json > $W/bench-mintime0.log 2>&1; echo "== bench min-time 0 rc=$? $SECONDS s"; grep -E "resident" $W/bench-mintime0.log | cut -c1-24,150-290; snap
timeout 100 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:Isosurface.Reused*:IsosurfaceLabels.*:Isosurface.Mc33*:LabelBoundaries.CpuAndCuda*' > $W/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $W/memcheck.txt; snap
ls $OUT
