#!/usr/bin/env bash
# Session 22 call 3: classification as before (no level flag), the flags pass raising it; pass 2b's on-level corners
# as a call: tests, cuda_vs_cpu, A/B (3 rounds: b67b75d, call 2's build, this), SASS spill check, ncu stall sections
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins6
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:-Isosurface.EveryTiePattern*'
timeout 100 $B/parasurf_tests --gtest_filter="$F" > $OUT/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $OUT/tests.txt | head -12
timeout 60 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -1 $OUT/cvc.txt
cuobjdump -sass $B/parasurf > /tmp/all.sass 2>/dev/null; python3 - <<'PY' > $OUT/sass-spills.txt
import re
cur=None; out={}
for line in open('/tmp/all.sass'):
    m=re.search(r'Function : (\S+)',line)
    if m: cur=m.group(1); out.setdefault(cur,[]); continue
    if cur and ('triangle_kernelIf' in cur or 'level_cell' in cur) and re.search(r'\b(STL|LDL|CALL|RET)\b',line): out[cur].append(line.strip()[:110])
for k,v in out.items():
    if v: print(k[:90], len(v)); print('\n'.join(v[:80]))
PY
echo "== sass"; head -3 $OUT/sass-spills.txt
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$name-$r.json > $OUT/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3; do run base parasurf_base; run c2 parasurf_c2; run new parasurf; done
timeout 150 ncu --clock-control none --section WarpStateStats --section Occupancy --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis -k regex:"flags|triangle|classify" --launch-count 3 $B/parasurf bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu-sections.txt 2>&1; echo "== ncu sections $SECONDS s"
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
timeout 90 ncu --clock-control none --metrics $M --launch-count 12 --csv $B/parasurf bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu.csv 2>/dev/null; echo "== ncu $SECONDS s"; python3 .ab/ncu_table.py $OUT/ncu.csv | cut -c1-120 > $OUT/ncu-table.txt; tail -8 $OUT/ncu-table.txt
timeout 100 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:IsosurfaceLabels.*:Isosurface.Mc33*' > $OUT/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $OUT/memcheck.txt
cd $OUT && tar czf ab.tgz *.txt *.json *.log *.csv && rm -f *.json *.log *.csv && ls
