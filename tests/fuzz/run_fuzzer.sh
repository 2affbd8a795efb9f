#!/usr/bin/env bash
# Builds one fuzz target with clang (libFuzzer + AddressSanitizer + UBSan) from the sources it needs alone, and runs
# it for the given time on a seed corpus of every format or input it reads: any crash, leak, undefined behaviour or
# input slower than the per-input limit fails. CI fuzzes from a fixed seed, so that every run starts from the same
# inputs (FUZZ_SEED=0 for a random one, FUZZ_RUNS=N to stop after N inputs).
#   usage: run_fuzzer.sh <patch|volume|mesh|ffd|solver> <source dir> <work dir> [seconds]
set -euo pipefail
what="$1"; src="$2"; work="$3"; secs="${4:-30}"
cxx=(clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DEIGEN_MAX_ALIGN_BYTES=32
     -I"$src/include" -I"$src/src" -I/usr/include/eigen3)
corpus="$work/corpus-$what"
mkdir -p "$corpus"
limit=10
case "$what" in
patch)
  target=fuzz_patch_readers
  json_inc=$(dirname "$(find /usr/include -name json.hpp -path '*nlohmann*' | head -1)")/..
  "${cxx[@]}" -I"$json_inc" "$src/tests/fuzz/fuzz_patch_readers.cpp" \
    "$src/src/io/patch_readers.cpp" "$src/src/patches/model.cpp" "$src/src/patches/bspline.cpp" \
    "$src/src/patches/trimmed.cpp" "$src/src/io/atomic_file.cpp" -o "$work/$target"
  printf '\000group 1 g\n5\n1 2\n0 0 0\n0 1 0\n0 2 0\n1 0 0\n1 1 1\n1 2 0\n3\n1\n0 0 0\n1 0 0\n0 1 0\n1\n3 1\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n8\n1 1\n0 0 0 1\n0 1 0 1\n1 0 0 1\n1 1 1 2\n' > "$corpus/bv"
  printf '\0011\n1 1\n0 0 0\n0 1 0\n1 0 0\n1 1 0\n' > "$corpus/bpt"
  printf '\002{"parasurf_trimmed_bezier": 1, "surfaces": [{"degree": [1, 2], "total_degree": 3, "points": [[0,0,0],[0,1,0],[0,2,1],[1,0,0],[1,1,1],[1,2,0]], "trims": [[[0,0],[1,0],[1,1],[0,1]]]}]}' > "$corpus/trimmed"
  printf '\002{"degree": [1, 2], "knots": [[0, 0, 1, 1], [0, 0, 0, 1, 1, 1]], "points": [[[0,0,0],[0,1,1],[0,2,0]], [[1,0,0],[1,1,1],[1,2,0]]], "weights": [[1,2,1],[1,1,1]]}' > "$corpus/json"
  ;;
volume)
  target=fuzz_volume_readers
  "${cxx[@]}" "$src/tests/fuzz/fuzz_volume_readers.cpp" "$src/src/io/volume_readers.cpp" "$src/src/io/nifti_reader.cpp" \
    "$src/src/io/vti_reader.cpp" \
    "$src/src/io/dicom_reader.cpp" "$src/src/core/parallel.cpp" -fopenmp -lz -o "$work/$target"
  printf '\002NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nspacings: 1 1 1\nencoding: ascii\n\n1 2 3 4 5 6 7 8\n' > "$corpus/nrrd"
  printf '\003NDims = 3\nDimSize = 2 2 2\nElementType = MET_UCHAR\nElementSpacing = 1 1 1\nElementDataFile = LOCAL\nabcdefgh' > "$corpus/mhd"
  printf '\005# vtk DataFile Version 3.0\nt\nASCII\nDATASET STRUCTURED_POINTS\nDIMENSIONS 2 2 2\nSPACING 1 1 1\nORIGIN 0 0 0\nPOINT_DATA 8\nSCALARS s float 1\nLOOKUP_TABLE default\n1 2 3 4 5 6 7 8\n' > "$corpus/vtk"
  printf '\006<VTKFile type="ImageData" byte_order="LittleEndian" header_type="UInt32"><ImageData WholeExtent="0 1 0 1 0 1" Origin="0 0 0" Spacing="1 1 1"><Piece Extent="0 1 0 1 0 1"><PointData Scalars="s"><DataArray type="UInt8" Name="s" format="ascii">1 2 3 4 5 6 7 8</DataArray></PointData></Piece></ImageData></VTKFile>\n' > "$corpus/vti-ascii"
  printf '\006<VTKFile type="ImageData" byte_order="LittleEndian" header_type="UInt32"><ImageData WholeExtent="0 1 0 1 0 1"><Piece><PointData><DataArray type="UInt8" Name="s" format="binary">CAAAAAECAwQFBgcI</DataArray></PointData></Piece></ImageData></VTKFile>\n' > "$corpus/vti-binary"
  printf '\006<VTKFile type="ImageData" header_type="UInt32"><ImageData WholeExtent="0 1 0 1 0 1"><Piece><PointData><DataArray type="UInt8" Name="s" format="appended" offset="0"/></PointData></Piece></ImageData><AppendedData encoding="raw">_\010\000\000\000abcdefgh</AppendedData></VTKFile>\n' > "$corpus/vti-appended"
  python3 - "$corpus/nii" <<'PY'
import struct, sys
h = bytearray(352)
struct.pack_into('<i', h, 0, 348)
struct.pack_into('<8h', h, 40, 3, 2, 2, 2, 1, 1, 1, 1)
struct.pack_into('<hh', h, 70, 2, 8)
struct.pack_into('<8f', h, 76, 1, 1, 1, 1, 1, 1, 1, 1)
struct.pack_into('<f', h, 108, 352.0)
h[344:348] = b'n+1\0'
open(sys.argv[1], 'wb').write(b'\x00' + bytes(h) + bytes(range(8)))
PY
  ;;
mesh)
  target=fuzz_mesh_readers
  "${cxx[@]}" "$src/tests/fuzz/fuzz_mesh_readers.cpp" "$src/src/io/mesh_readers.cpp" "$src/src/ffd/lattice.cpp" \
    -o "$work/$target"
  printf '\000v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2/1 4//2\nf -1 -2 -3 2\n' > "$corpus/obj"
  printf '\001ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n' > "$corpus/ply"
  python3 - "$corpus/plyb" "$corpus/stl" <<'PY'
import struct, sys
h = b'ply\nformat binary_big_endian 1.0\nelement vertex 3\nproperty double x\nproperty double y\nproperty double z\nelement face 1\nproperty list uchar uint vertex_indices\nend_header\n'
body = struct.pack('>9d', 0, 0, 0, 1, 0, 0, 0, 1, 0) + struct.pack('>B3I', 3, 0, 1, 2)
open(sys.argv[1], 'wb').write(b'\x01' + h + body)
stl = b' ' * 80 + struct.pack('<I', 1) + struct.pack('<12f', 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0) + b'\0\0'
open(sys.argv[2], 'wb').write(b'\x03' + stl)
PY
  printf '\002OFF\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n4 0 1 3 2\n' > "$corpus/off"
  printf '\003solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid\n' > "$corpus/stla"
  printf '\004{"moves": [{"index": [1, 2, 3], "displacement": [0.1, 0, 0]}], "targets": [{"point": [0, 0, 0], "target": [1, 1, 1]}]}' > "$corpus/edits"
  printf '\005{"count": [5, 4, 6], "degree": [3, 2, 1], "padding": 0.1, "knots": [[0,0,0,0,0.5,1,1,1,1], [], []]}' > "$corpus/lattice"
  ;;
ffd)
  target=fuzz_ffd_inputs
  limit=20
  "${cxx[@]}" "$src/tests/fuzz/fuzz_ffd_inputs.cpp" "$src/src/ffd/lattice.cpp" -o "$work/$target"
  printf '\000{"count": [5, 4, 4], "degree": [3, 2, 1], "padding": 0.1, "knots": [[0, 0, 0, 0, 0.4, 1, 1, 1, 1], [], []]}' > "$corpus/lattice"
  printf '\000{"count": [4, 4, 4], "degree": [3, 3, 3], "world_to_parameter": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0]}' > "$corpus/embedding"
  printf '\001{"moves": [{"index": [1, 2, 3], "displacement": [0.1, 0, 0]}, {"index": [0, 0, 0], "position": [0, 0, 0]}]}' > "$corpus/moves"
  printf '\001{"targets": [{"point": [0.5, 0.5, 0.5], "target": [0.6, 0.5, 0.5]}, {"point": [0.2, 0.3, 0.4], "target": [0.2, 0.3, 0.45]}]}' > "$corpus/targets"
  ;;
solver)
  target=fuzz_solver_inputs
  limit=20
  "${cxx[@]}" -fopenmp "$src/tests/fuzz/fuzz_solver_inputs.cpp" \
    "$src/src/io/solver_json.cpp" "$src/src/solver/"{bernstein,solver,subdivide_cpu,curves,curve_coincidence,hausdorff,surfaces}.cpp \
    "$src/src/solver/"{surface_pieces,surface_contacts,bisectors}.cpp "$src/src/patches/bspline.cpp" \
    "$src/src/core/"{device,parallel,cpu_only_runtime,kept_threads}.cpp -o "$work/$target"
  printf '\000{"curve1": {"points": [[0, 0], [0.5, 1], [1, 0]]}, "curve2": {"control_points": [[0, 1], ["3/8", "0x1.8p-2"]]}}' > "$corpus/curves"
  printf '\001{"curve1": {"degree": 2, "knots": [0, 0, 0, 0.5, 1, 1, 1], "points": [[0, 0], [1, 2], [2, -2], [3, 0]]}, "curve2": {"points": [[-1, 0.1], [4, 0.1]]}}' > "$corpus/hausdorff"
  # A Hausdorff input whose distance system has a solution region of tens of thousands of cells: their clustering
  # once took 40 s under the sanitizers, past the per-input limit.
  printf '\001{"curve1": {"degree": 2, "knots": [0, 0, 0, 0.5, 1, 1, 1], "points": [[2, 0] , [2,1], [2, -2], [3, 0]]}, "curve2": {"points": [[-1, 0.1], [4, 0.1]]}}' > "$corpus/hausdorff-region"
  printf '\002{"curve1": {"points": [[0, 0], [1, 0.5], [2, 0]]}, "curve2": {"points": [[0, 1], [1, 2], [2, 1]]}}' > "$corpus/bisector"
  printf '\003{"curves": [{"points": [[0, 1], [0.6, 1.2], [1, 0.5]]}, {"points": [[0.9, -0.4], [0.1, -1.1], [-0.6, -0.8]]}, {"points": [[-0.9, -0.5], [-1.2, 0.2], [-0.5, 0.9]]}]}' > "$corpus/traps"
  printf '\004{"motion": {"degree": 3, "knots": [0, 0, 0, 0, 1, 1, 1, 1], "points": [[1, 0, 0, 0], [1, 0, 0, 1], [1, 1, 0, 1], [1, 1, 1, 1]]}}' > "$corpus/motion"
  ;;
*)
  echo "run_fuzzer.sh: unknown target '$what'" >&2
  exit 2
  ;;
esac
"$work/$target" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:--1}" -max_total_time="$secs" -timeout="$limit" -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/" "$corpus" 2>&1 | tee "$work/$target.log" | tail -25
# the coverage reached (edges, features), for docs/reliability.md
grep -m1 "DONE" "$work/$target.log" || true
