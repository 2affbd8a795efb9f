#!/usr/bin/env bash
# MPI runs (oversubscribed on small machines). isosurface: 2 and 4 ranks give the single-process mesh byte for byte
# (binary PLY written collectively, OBJ gathered), with cost-balanced and equal ranges, and with MC33 on noise; a rank that fails stops
# every rank with its message and leaves no output; several levels, --scalars and --labels give the same bytes too. tessellate and solve: ranks share the work and rank 0 writes
# the single-process result byte for byte.
#   usage: mpi.sh <parasurf executable>
set -uo pipefail
exe="$1"
source "$(dirname "$0")/common.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI 4.1's launcher now and then reports a rank that finished normally as "rank N with PID 0 ... exiting improperly"
# (its exit race, open-mpi/ompi#7833): such a run, with no message of ours, is run again (at most twice) and says so.
run() {
  local log rc attempt
  log=$(mktemp -p "$dir")
  for attempt in 1 2 3; do
    timeout 300 mpirun --oversubscribe -np "$@" >"$log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$attempt" -lt 3 ] && grep -q "with PID 0 on" "$log" && grep -q "exiting improperly" "$log" \
      && ! grep -q "parasurf: " "$log"; then
      echo "note: Open MPI's exit race (ompi#7833) on attempt $attempt of: mpirun -np $*; running it again" >&2
      continue
    fi
    break
  done
  cat "$log"
  rm -f "$log"
  return "$rc"
}
fail() { echo "FAIL: $*"; exit 1; }
# (The third number: slices a slab that split 4 equal ranges into one slab on three ranks and two on the last.)
for field in tangle:56:14 gyroid:40x48x61:15; do
  name=${field%%:*}; rest=${field#*:}; size=${rest%%:*}; slab=${rest#*:}
  "$exe" isosurface --field "$name" --size "$size" --device cpu -q -o "$dir/$name-1.ply" || fail "single run $name"
  "$exe" isosurface --field "$name" --size "$size" --device cpu -q -o "$dir/$name-1.obj" || fail "single run $name obj"
  for np in 2 4; do
    for balance in cost equal; do
      run "$np" "$exe" isosurface --field "$name" --size "$size" --device cpu --balance "$balance" -q -o "$dir/$name-$np.ply" \
        || fail "$np ranks $name"
      cmp -s "$dir/$name-1.ply" "$dir/$name-$np.ply" || fail "$np ranks ($balance) differ from one process on $name"
    done
    run "$np" "$exe" isosurface --field "$name" --size "$size" --device cpu -q -o "$dir/$name-$np.obj" || fail "$np ranks $name obj"
    cmp -s "$dir/$name-1.obj" "$dir/$name-$np.obj" || fail "$np ranks (obj) differ from one process on $name"
  done
  # A part in one slab numbers its vertices while it runs (its triangles come with global ids), a part in several
  # afterwards: both kinds at once give the same mesh.
  run 4 "$exe" isosurface --field "$name" --size "$size" --device cpu --balance equal --slab-slices "$slab" -q \
    -o "$dir/$name-slabs.ply" || fail "4 ranks $name, $slab slices a slab"
  cmp -s "$dir/$name-1.ply" "$dir/$name-slabs.ply" || fail "4 ranks with $slab slices a slab differ from one process on $name"
done
# MC33 on noise: tunnels and cell-centre vertices at every rank's seam.
python3 - "$dir" <<'PY'
import random, struct, sys
d = sys.argv[1]
rng = random.Random(33)
with open(d + "/n.raw", "wb") as f:
    f.write(struct.pack("<%df" % (23 * 19 * 29), *[rng.uniform(-1, 1) for _ in range(23 * 19 * 29)]))
with open(d + "/n.mhd", "w") as f:
    f.write("ObjectType = Image\nNDims = 3\nDimSize = 23 19 29\nElementType = MET_FLOAT\nElementDataFile = n.raw\n")
PY
"$exe" isosurface "$dir/n.mhd" --level 0 --topology mc33 --device cpu -q -o "$dir/n-1.ply" || fail "single run, mc33"
for np in 2 3; do
  run "$np" "$exe" isosurface "$dir/n.mhd" --level 0 --topology mc33 --device cpu -q -o "$dir/n-$np.ply" || fail "$np ranks, mc33"
  cmp -s "$dir/n-1.ply" "$dir/n-$np.ply" || fail "$np ranks with mc33 differ from one process"
done
# Integer samples at integer levels: ties, coincident triangles that cancel across seams, and samples on the level
# whose triangles all collapse, whose vertices every run removes.
python3 - "$dir" <<'PY'
import random, struct, sys
d = sys.argv[1]
rng = random.Random(7)
with open(d + "/t.raw", "wb") as f:
    f.write(bytes(rng.randint(0, 3) for _ in range(21 * 17 * 26)))
with open(d + "/t.mhd", "w") as f:
    f.write("ObjectType = Image\nNDims = 3\nDimSize = 21 17 26\nElementType = MET_UCHAR\nElementDataFile = t.raw\n")
PY
# A sample on the level in the first slice of rank 1, whose only triangles lie in rank 0's last cell layer: rank 1
# lists its vertex as unused, and rank 0's use of it must keep it, while a lone one on the level in rank 0 goes (the
# decider leaves such vertices to the ranks, where the classic table on the CPU resolves them within the slab).
python3 - "$dir" <<'PY'
import sys
d = sys.argv[1]
values = []
for z in range(7):
    for y in range(5):
        for x in range(5):
            values.append((1 if (x, y) == (2, 2) else 3) if z == 3 else 3 if z > 3 else (2 if (x + y) % 2 else 0) if z == 2
                          else 1 if (x, y, z) == (2, 2, 0) else 0)  # (a lone sample on the level, whose vertex goes)
open(d + "/seam.raw", "wb").write(bytes(values))
open(d + "/seam.mhd", "w").write("ObjectType = Image\nNDims = 3\nDimSize = 5 5 7\nElementType = MET_UCHAR\nElementDataFile = seam.raw\n")
PY
"$exe" isosurface "$dir/seam.mhd" --level 1 --topology decider --device cpu -q -o "$dir/seam-1.ply" || fail "single run, seam vertex"
run 2 "$exe" isosurface "$dir/seam.mhd" --level 1 --topology decider --device cpu --balance equal -q -o "$dir/seam-2.ply" || fail "2 ranks, seam vertex"
cmp -s "$dir/seam-1.ply" "$dir/seam-2.ply" || fail "2 ranks drop a vertex on the level that only the rank before uses"
# (The decider and MC33 leave the ties and the vertices on the level to the whole mesh, as the CUDA engine does.)
# Where the level set pinches at a tie, on a plane two ranks share too, the ranks split the vertex as one process.
for topology in classic decider mc33; do
  "$exe" isosurface "$dir/t.mhd" --level 1,2 --topology $topology --device cpu -o "$dir/t-1.ply" >"$dir/t.log" \
    || fail "single run, ties"
  grep -q "split [0-9]* tie vertices" "$dir/t.log" || { cat "$dir/t.log"; fail "no pinch was split in the tie volume"; }
  "$exe" isosurface "$dir/t.mhd" --level 1,2 --topology $topology --device cpu -q --keep-pinches -o "$dir/t-kept-1.ply" \
    || fail "single run, ties kept"
  for np in 2 3 4; do
    run "$np" "$exe" isosurface "$dir/t.mhd" --level 1,2 --topology $topology --device cpu -q -o "$dir/t-$np.ply" || fail "$np ranks, ties"
    cmp -s "$dir/t-1.ply" "$dir/t-$np.ply" || fail "$np ranks with ties differ from one process ($topology)"
    run "$np" "$exe" isosurface "$dir/t.mhd" --level 1,2 --topology $topology --device cpu -q --keep-pinches \
      -o "$dir/t-kept-$np.ply" || fail "$np ranks, ties kept"
    cmp -s "$dir/t-kept-1.ply" "$dir/t-kept-$np.ply" || fail "$np ranks keeping pinches differ from one process ($topology)"
  done
done
# Samples 1e-30 from the level on every plane (on the ranks' shared planes too): the crossings that rounding puts on
# them are welded across ranks as in one process.
python3 - "$dir" <<'PY'
import math, random, struct, sys
d = sys.argv[1]
rng = random.Random(11)
n = 24
vals = []
for z in range(n):
    for y in range(n):
        for x in range(n):
            f = math.sqrt((x - 11.3) ** 2 + (y - 12.1) ** 2 + (z - 11.7) ** 2) - 8.2
            vals.append(1e-30 if 0 < f < 0.7 and rng.random() < 0.6 else f)
open(d + "/near.raw", "wb").write(struct.pack("<%df" % len(vals), *vals))
open(d + "/near.mhd", "w").write("ObjectType = Image\nNDims = 3\nDimSize = 24 24 24\nElementType = MET_FLOAT\n"
                                 "ElementDataFile = near.raw\n")
PY
"$exe" isosurface "$dir/near.mhd" --level 0 --device cpu -o "$dir/near-1.ply" >"$dir/near.log" || fail "single run, near-ties"
grep -q "welded" "$dir/near.log" || { cat "$dir/near.log"; fail "no crossing was welded in the near-tie volume"; }
for np in 2 3 4; do
  for balance in cost equal; do
    run "$np" "$exe" isosurface "$dir/near.mhd" --level 0 --device cpu --balance "$balance" -q -o "$dir/near-$np.ply" \
      || fail "$np ranks, near-ties"
    cmp -s "$dir/near-1.ply" "$dir/near-$np.ply" || fail "$np ranks ($balance) with near-ties differ from one process"
  done
done
# One rank fails: all stop, the message names the rank, no file.
PARASURF_TEST_FAIL_RANK=1 run 2 "$exe" isosurface --field sphere --size 32 --device cpu -q -o "$dir/broken.ply" >"$dir/log" 2>&1 \
  && fail "a failing rank did not fail the run"
grep -q "rank 1 could not read its slices" "$dir/log" || { cat "$dir/log"; fail "the failing rank's message is missing"; }
ls "$dir"/broken.ply* >/dev/null 2>&1 && fail "a failed run left an output file"
# Several levels and a second volume's values at the vertices: one face group per level, as one process writes.
python3 - "$dir" <<'PY'
import math, struct, sys
d = sys.argv[1]
with open(d + "/s.raw", "wb") as f:
    for z in range(61):
        for y in range(48):
            f.write(struct.pack("<40f", *[math.sin(0.3 * x) + 0.1 * y - 0.05 * z for x in range(40)]))
with open(d + "/s.mhd", "w") as f:
    f.write("ObjectType = Image\nNDims = 3\nDimSize = 40 48 61\nElementType = MET_FLOAT\nElementDataFile = s.raw\n")
PY
for ext in ply obj; do
  "$exe" isosurface --field gyroid --size 40x48x61 --level -0.3,0,0.4 --scalars "$dir/s.mhd" --device cpu -q -o "$dir/ml-1.$ext" \
    || fail "single run, several levels"
  for np in 2 4; do
    run "$np" "$exe" isosurface --field gyroid --size 40x48x61 --level -0.3,0,0.4 --scalars "$dir/s.mhd" --device cpu -q \
      -o "$dir/ml-$np.$ext" || fail "$np ranks, several levels"
    cmp -s "$dir/ml-1.$ext" "$dir/ml-$np.$ext" || fail "$np ranks with several levels and scalars differ from one process ($ext)"
  done
done
grep -a -q "comment group 2 level 0.4" "$dir/ml-2.ply" || fail "the level groups are missing"
grep -a -q "property float value" "$dir/ml-2.ply" || fail "the vertex values are missing"
# A label volume: every triangle carries its cell's label, groups are the (level, label) pairs of the whole mesh.
python3 - "$dir" <<'PY'
import struct, sys
d = sys.argv[1]
with open(d + "/l.raw", "wb") as f:
    for z in range(61):
        for y in range(48):
            f.write(struct.pack("<40h", *[(x // 9) + 5 * (y // 13) + 20 * (z // 17) for x in range(40)]))
with open(d + "/l.mhd", "w") as f:
    f.write("ObjectType = Image\nNDims = 3\nDimSize = 40 48 61\nElementType = MET_SHORT\nElementDataFile = l.raw\n")
PY
for ext in ply obj; do
  "$exe" isosurface --field gyroid --size 40x48x61 --level -0.2,0.3 --labels "$dir/l.mhd" --device cpu -q -o "$dir/lb-1.$ext" \
    || fail "single run with labels"
  for np in 2 4; do
    run "$np" "$exe" isosurface --field gyroid --size 40x48x61 --level -0.2,0.3 --labels "$dir/l.mhd" --device cpu -q \
      -o "$dir/lb-$np.$ext" || fail "$np ranks with labels"
    cmp -s "$dir/lb-1.$ext" "$dir/lb-$np.$ext" || fail "$np ranks with labels differ from one process ($ext)"
  done
done
grep -a -q "property int label" "$dir/lb-2.ply" || fail "the face labels are missing"
# Excluded labels are refused with a message, on every rank.
run 2 "$exe" isosurface --field gyroid --size 40x48x61 --level 0.2 --labels "$dir/l.mhd" --exclude-label 5 --device cpu -q \
  -o "$dir/ex.ply" >"$dir/log2" 2>&1 && fail "excluded labels were accepted"
grep -q "do not take --exclude-label" "$dir/log2" || { cat "$dir/log2"; fail "no message for excluded labels"; }
ls "$dir"/ex.ply* >/dev/null 2>&1 && fail "a refused run left a file"
# Patch models: ranks share the patches (and the tolerance planning's checks); rank 0 writes the single-process mesh.
"$exe" tessellate -r 12 --device cpu -o "$dir/teapot-1.ply" >/dev/null || fail "single tessellation"
"$exe" tessellate --tolerance 0.002 --device cpu -o "$dir/teapot-tol-1.obj" >/dev/null || fail "single adaptive tessellation"
for np in 2 4; do
  run "$np" "$exe" tessellate -r 12 --device cpu -o "$dir/teapot-$np.ply" >"$dir/tess.log" 2>&1 || { cat "$dir/tess.log"; fail "$np ranks tessellate"; }
  grep -q "MPI: $np ranks" "$dir/tess.log" || { cat "$dir/tess.log"; fail "the tessellation report does not name $np ranks"; }
  [ "$(grep -c '^wrote' "$dir/tess.log")" = 1 ] || fail "more than one rank reported the tessellation"
  cmp -s "$dir/teapot-1.ply" "$dir/teapot-$np.ply" || fail "$np ranks tessellate differently from one process"
  run "$np" "$exe" tessellate --tolerance 0.002 --device cpu -o "$dir/teapot-tol-$np.obj" >/dev/null || fail "$np ranks adaptive"
  cmp -s "$dir/teapot-tol-1.obj" "$dir/teapot-tol-$np.obj" || fail "$np ranks adaptive tessellation differs from one process"
done
# Rank 0's extra uniform comparison runs alone (it must not wait for the other ranks).
run 2 "$exe" tessellate --tolerance 0.004 --compare-uniform --device cpu -o "$dir/teapot-cmp.ply" >"$dir/cmp.log" 2>&1 \
  || { cat "$dir/cmp.log"; fail "--compare-uniform under mpirun"; }
grep -q "uniform resolution meeting the tolerance" "$dir/cmp.log" || fail "no uniform comparison under mpirun"
# Solver applications: the batches of piece systems are shared out; the result is the single process's.
"$exe" bench solver --curves 3 --repeat 1 --min-seconds 0 --engines cpu --write-inputs "$dir/solver" --json "$dir/bs.json" >/dev/null || fail "solver inputs"
for case in hausdorff:hausdorff_10 ssi:ssi_14x7 contacts:contacts surface-bisector:surface_bisector bisector:hausdorff_5; do
  app=${case%%:*}; input=${case#*:}
  "$exe" solve "$app" "$dir/solver/$input.json" --threads 1 -o "$dir/$app-1.json" >/dev/null || fail "single solve $app"
  run 3 "$exe" solve "$app" "$dir/solver/$input.json" --threads 1 -o "$dir/$app-3.json" >"$dir/solve.log" 2>&1 \
    || { cat "$dir/solve.log"; fail "3 ranks solve $app"; }
  same_result "$dir/$app-1.json" "$dir/$app-3.json" || fail "3 ranks solve $app differently from one process"
done
# Other commands refuse to run under mpirun (they would write the same files once per rank).
run 2 "$exe" surface -o "$dir/surface.ply" >"$dir/log3" 2>&1 && fail "surface ran under mpirun"
grep -q "only 'parasurf isosurface', 'tessellate' and 'solve' run" "$dir/log3" || { cat "$dir/log3"; fail "no message for another command"; }
ls "$dir"/surface.ply* >/dev/null 2>&1 && fail "a refused command left a file"
echo "mpi passed"
