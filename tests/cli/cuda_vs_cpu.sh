#!/usr/bin/env bash
# The command line on the GPU against the CPU, end to end: volumes read from files (uint8 and float32 MetaImage, the
# same integer values) and a built-in field, one level and two. Faces must be equal, positions within 1e-5 and
# normals within 1e-4 of the CPU's; under mpirun (when present), 2 ranks on the GPU write the one-process file byte for
# byte; `--stream-mesh` on the GPU writes the in-memory GPU run's file. Skips (77) where parasurf has no usable CUDA
# device.
#   usage: cuda_vs_cpu.sh <parasurf executable> [mpi|no-mpi]   (mpi: the build has MPI and mpirun runs it)
set -uo pipefail
exe="$1"
mpi="${2:-no-mpi}"
info=$("$exe" info 2>/dev/null)
if ! grep -q "^cuda:0" <<<"$info"; then
  echo "SKIPPED: no usable CUDA device ($(grep '^cuda' <<<"$info" | head -1))"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 - "$dir" <<'PY'
import random, struct, sys
d = sys.argv[1]
rng = random.Random(7)
values = [rng.randint(0, 3) for _ in range(21 * 17 * 26)]
open(d + "/u8.raw", "wb").write(bytes(values))
open(d + "/f32.raw", "wb").write(struct.pack("<%df" % len(values), *values))
for name, kind in (("u8", "MET_UCHAR"), ("f32", "MET_FLOAT")):
    open(d + "/" + name + ".mhd", "w").write("ObjectType = Image\nNDims = 3\nDimSize = 21 17 26\nElementType = %s\n"
                                             "ElementDataFile = %s.raw\n" % (kind, name))
PY
# Compares two binary PLYs as parasurf writes them (x y z nx ny nz per vertex).
compare() {
  python3 - "$1" "$2" <<'PY'
import struct, sys
def load(name):
    b = open(name, "rb").read()
    end = b.index(b"end_header\n") + 11
    head = b[:end].decode()
    nv = int([l for l in head.splitlines() if l.startswith("element vertex")][0].split()[2])
    props = [l for l in head.split("element face")[0].splitlines() if l.startswith("property")]
    return head, nv, len(props), b[end:]
ha, nv, per, a = load(sys.argv[1])
hb, _, _, b = load(sys.argv[2])
if ha != hb: sys.exit("headers differ")
if a[4 * per * nv:] != b[4 * per * nv:]: sys.exit("faces differ")
va = struct.unpack_from("<%df" % (per * nv), a)
vb = struct.unpack_from("<%df" % (per * nv), b)
pos = max((abs(va[k] - vb[k]) for k in range(len(va)) if k % per < 3), default=0)
nrm = max((abs(va[k] - vb[k]) for k in range(len(va)) if 3 <= k % per < 6), default=0)
print(f"  {nv} vertices: positions within {pos:.2g}, normals within {nrm:.2g}")
if pos > 1e-5 or nrm > 1e-4: sys.exit("positions or normals differ from the CPU's")
PY
}
for input in "u8.mhd:1" "u8.mhd:1,2" "f32.mhd:1,2" "field:0.5" "field:0.4,0.6"; do
  src=${input%%:*}; levels=${input#*:}
  args=("$dir/$src"); [ "$src" = field ] && args=(--field tangle --size 48)
  tag="${src%%.*}-${levels/,/_}"
  "$exe" isosurface "${args[@]}" --level "$levels" --device cpu -q -o "$dir/$tag-cpu.ply" || fail "CPU run on $src at $levels"
  "$exe" isosurface "${args[@]}" --level "$levels" --device cuda -q -o "$dir/$tag-cuda.ply" || fail "CUDA run on $src at $levels"
  echo "$src at $levels:"
  compare "$dir/$tag-cpu.ply" "$dir/$tag-cuda.ply" || fail "CUDA against the CPU on $src at $levels"
  if [ "$mpi" = mpi ] && command -v mpirun >/dev/null; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun --oversubscribe -np 2 "$exe" isosurface \
      "${args[@]}" --level "$levels" --device cuda -q -o "$dir/$tag-cuda2.ply" >"$dir/mpi.log" 2>&1 \
      || { cat "$dir/mpi.log"; fail "2 ranks on the GPU on $src at $levels"; }
    cmp -s "$dir/$tag-cuda.ply" "$dir/$tag-cuda2.ply" || fail "2 ranks on the GPU differ from one process on $src at $levels"
  fi
done
# --stream-mesh on the GPU: the file of the in-memory GPU run, part by part (or in memory, where a part needs the
# whole mesh's clean-up: the JSON says which); and auto, which settles one device for the whole file.
for dev in cuda auto; do
  "$exe" isosurface --field tangle --size 72 --level 0.3,0.6 --device $dev -q -o "$dir/whole-$dev.ply" \
    || fail "in-memory run on $dev"
  "$exe" isosurface --field tangle --size 72 --level 0.3,0.6 --device $dev -q -o "$dir/parts-$dev.ply" --stream-mesh \
    --memory 0.05 --json "$dir/parts-$dev.json" || fail "--stream-mesh on $dev"
  cmp -s "$dir/whole-$dev.ply" "$dir/parts-$dev.ply" || fail "--stream-mesh on $dev wrote another file than in memory"
  echo "--stream-mesh on $dev: the in-memory file ($(grep -oE '"streamed": (true|false)' "$dir/parts-$dev.json"))"
done
echo "cuda_vs_cpu passed"
