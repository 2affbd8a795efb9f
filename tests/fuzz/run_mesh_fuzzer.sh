#!/usr/bin/env bash
# Builds the mesh-reader fuzz target with clang (libFuzzer + AddressSanitizer + UBSan) from the reader and lattice
# sources alone and runs it for the given time (a fixed seed, so that every run starts from the same inputs;
# FUZZ_SEED=0 for a random one, FUZZ_RUNS=N to stop after N inputs) on a seed corpus of every format; any crash,
# leak or hang fails.
#   usage: run_mesh_fuzzer.sh <source dir> <work dir> [seconds]
set -euo pipefail
src="$1"; work="$2"; secs="${3:-30}"
mkdir -p "$work/mcorpus"
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DEIGEN_MAX_ALIGN_BYTES=32 \
  -I"$src/include" -I"$src/src" -I/usr/include/eigen3 \
  "$src/tests/fuzz/fuzz_mesh_readers.cpp" "$src/src/io/mesh_readers.cpp" "$src/src/ffd/lattice.cpp" -o "$work/fuzz_mesh_readers"
printf '\000v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2/1 4//2\nf -1 -2 -3 2\n' > "$work/mcorpus/obj"
printf '\001ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n' > "$work/mcorpus/ply"
python3 - "$work/mcorpus/plyb" "$work/mcorpus/stl" <<'PY'
import struct, sys
h = b'ply\nformat binary_big_endian 1.0\nelement vertex 3\nproperty double x\nproperty double y\nproperty double z\nelement face 1\nproperty list uchar uint vertex_indices\nend_header\n'
body = struct.pack('>9d', 0, 0, 0, 1, 0, 0, 0, 1, 0) + struct.pack('>B3I', 3, 0, 1, 2)
open(sys.argv[1], 'wb').write(b'\x01' + h + body)
stl = b' ' * 80 + struct.pack('<I', 1) + struct.pack('<12f', 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0) + b'\0\0'
open(sys.argv[2], 'wb').write(b'\x03' + stl)
PY
printf '\002OFF\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n4 0 1 3 2\n' > "$work/mcorpus/off"
printf '\003solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid\n' > "$work/mcorpus/stla"
printf '\004{"moves": [{"index": [1, 2, 3], "displacement": [0.1, 0, 0]}], "targets": [{"point": [0, 0, 0], "target": [1, 1, 1]}]}' > "$work/mcorpus/edits"
printf '\005{"count": [5, 4, 6], "degree": [3, 2, 1], "padding": 0.1, "knots": [[0,0,0,0,0.5,1,1,1,1], [], []]}' > "$work/mcorpus/lattice"
"$work/fuzz_mesh_readers" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:--1}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" "$work/mcorpus" 2>&1 | tee "$work/fuzz_mesh_readers.log" | tail -25
# the coverage reached (edges, features), for docs/reliability.md
grep -m1 "DONE" "$work/fuzz_mesh_readers.log" || true
