#!/usr/bin/env bash
# Session 22 call 5: pass 2b as one kernel of two bodies (by the level flag) against two kernels (AB_TWO_TRI), call 4 (parasurf_c4) and b67b75d
# tests (both ways), cuda_vs_cpu, A/B 3 rounds, ncu tables, memcheck

export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x && tar xzf .ab/bins.tgz -C /tmp/x && B=/tmp/x/bins8
export LD_LIBRARY_PATH=$B:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0
F='Isosurface*:FastDivisor*:IsosurfaceLabels.*:Mc*:IsoTables*:-Isosurface.EveryTiePattern*'
timeout 100 $B/parasurf_tests --gtest_filter="$F" > $OUT/tests.txt 2>&1; echo "== tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $OUT/tests.txt | head -12
AB_TWO_TRI=1 timeout 100 $B/parasurf_tests --gtest_filter="$F" > $OUT/tests-two.txt 2>&1; echo "== tests two rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $OUT/tests-two.txt | head -12
timeout 60 bash $B/cuda_vs_cpu.sh $B/parasurf no-mpi > $OUT/cvc.txt 2>&1; echo "== cuda_vs_cpu rc=$? $SECONDS s"; tail -1 $OUT/cvc.txt
cuobjdump -sass $B/parasurf > /tmp/all.sass 2>/dev/null; python3 - <<'PY' > $OUT/sass-spills.txt
import re
cur=None; out={}
for line in open('/tmp/all.sass'):
    m=re.search(r'Function : (\S+)',line)
    if m: cur=m.group(1); out.setdefault(cur,[]); continue
    if cur and ('triangle_kernelIf' in cur and 'only' not in cur or 'level_cell' in cur) and re.search(r'\b(STL|LDL|CALL|RET|EXIT|BRA)\b',line): out[cur].append(line.strip()[:110])
for k,v in out.items():
    if v: print(k[:90], len(v)); print('\n'.join(v[:400]))
PY
V=".data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
run() { local name=$1 b=$2; shift 2; env "$@" timeout 60 $B/$b bench isosurface --sizes 256,512 --types uint8,float32 --volumes $V --devices cuda --no-peers --repeats 15 --json $OUT/ab-$name-$r.json > $OUT/ab-$name-$r.log 2>&1; echo "== $name $r rc=$? $SECONDS s"; }
for r in 1 2 3; do run base parasurf_base; run c4 parasurf_c4; run new parasurf; run two parasurf AB_TWO_TRI=1; done
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
for b in parasurf; do
timeout 90 ncu --clock-control none --metrics $M --launch-count 12 --csv $B/$b bench isosurface --sizes 512 --types float32 --devices cuda --no-peers --repeats 1 > $OUT/ncu-$b.csv 2>/dev/null; echo "== ncu $b $SECONDS s"; python3 .ab/ncu_table.py $OUT/ncu-$b.csv | cut -c1-120 > $OUT/ncu-$b-table.txt; tail -8 $OUT/ncu-$b-table.txt
timeout 60 ncu --clock-control none --metrics $M --launch-count 14 --csv $B/$b isosurface .data/volumes/MR_Gd.nii.gz --level 60 --device cuda -q -o /tmp/mr.ply > $OUT/ncu-mr-$b.csv 2>/dev/null; echo "== ncu MR_Gd $b $SECONDS s"; python3 .ab/ncu_table.py $OUT/ncu-mr-$b.csv | cut -c1-120 > $OUT/ncu-mr-$b-table.txt; tail -8 $OUT/ncu-mr-$b-table.txt
done
timeout 100 compute-sanitizer --tool memcheck $B/parasurf_tests --gtest_filter='Isosurface.EveryVoxel*:Isosurface.CpuAndCuda*:Isosurface.Ties*:Isosurface.SlabSplits*:IsosurfaceLabels.*:Isosurface.Mc33*' > $OUT/memcheck.txt 2>&1; echo "== memcheck rc=$? $SECONDS s"; tail -1 $OUT/memcheck.txt
cd $OUT && tar czf ab.tgz *.txt *.json *.log *.csv && rm -f *.json *.log *.csv && ls
