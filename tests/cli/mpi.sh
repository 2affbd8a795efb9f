#!/usr/bin/env bash
# MPI runs of `parasurf isosurface` (oversubscribed on small machines): 2 and 4 ranks give the single-process mesh
# byte for byte (binary PLY written collectively, OBJ gathered), with cost-balanced and equal ranges; a rank that
# fails stops every rank with its message and leaves no output.
#   usage: mpi.sh <parasurf executable>
set -uo pipefail
exe="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
run() { timeout 300 mpirun --oversubscribe -np "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
for field in tangle:56 gyroid:40x48x61; do
  name=${field%%:*}; size=${field#*:}
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
done
# One rank fails: all stop, the message names the rank, no file.
PARASURF_TEST_FAIL_RANK=1 run 2 "$exe" isosurface --field sphere --size 32 --device cpu -q -o "$dir/broken.ply" >"$dir/log" 2>&1 \
  && fail "a failing rank did not fail the run"
grep -q "rank 1 could not read its slices" "$dir/log" || { cat "$dir/log"; fail "the failing rank's message is missing"; }
ls "$dir"/broken.ply* >/dev/null 2>&1 && fail "a failed run left an output file"
# Several levels are refused with a message, on every rank.
run 2 "$exe" isosurface --field sphere --size 32 --level 0.2,0.4 --device cpu -q -o "$dir/two.ply" >"$dir/log2" 2>&1 \
  && fail "two levels were accepted"
grep -q "exactly one --level" "$dir/log2" || { cat "$dir/log2"; fail "no message for two levels"; }
# Other commands refuse to run under mpirun (they would write the same files once per rank).
run 2 "$exe" tessellate -o "$dir/teapot.ply" >"$dir/log3" 2>&1 && fail "tessellate ran under mpirun"
grep -q "only 'parasurf isosurface' runs" "$dir/log3" || { cat "$dir/log3"; fail "no message for another command"; }
ls "$dir"/teapot.ply* >/dev/null 2>&1 && fail "a refused command left a file"
echo "mpi passed"
