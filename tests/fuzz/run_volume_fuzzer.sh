#!/usr/bin/env bash
# Builds the volume-reader fuzz target with clang (libFuzzer + AddressSanitizer + UBSan) from the reader sources
# alone and runs it for a bounded time on a seed corpus of every format; any crash, leak or hang fails.
#   usage: run_volume_fuzzer.sh <source dir> <work dir> [seconds]
# CI fuzzes for the given time from a fixed seed, so that every run starts from the same inputs (FUZZ_SEED=0 for a
# random one, FUZZ_RUNS=N to stop after N inputs).
set -euo pipefail
src="$1"; work="$2"; secs="${3:-30}"
mkdir -p "$work/vcorpus"
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$src/include" -I"$src/src" \
  "$src/tests/fuzz/fuzz_volume_readers.cpp" "$src/src/io/volume_readers.cpp" "$src/src/io/vti_reader.cpp" "$src/src/io/dicom_reader.cpp" \
  "$src/src/core/parallel.cpp" -fopenmp -lz -o "$work/fuzz_volume_readers"
printf '\002NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nspacings: 1 1 1\nencoding: ascii\n\n1 2 3 4 5 6 7 8\n' > "$work/vcorpus/nrrd"
printf '\003NDims = 3\nDimSize = 2 2 2\nElementType = MET_UCHAR\nElementSpacing = 1 1 1\nElementDataFile = LOCAL\nabcdefgh' > "$work/vcorpus/mhd"
printf '\005# vtk DataFile Version 3.0\nt\nASCII\nDATASET STRUCTURED_POINTS\nDIMENSIONS 2 2 2\nSPACING 1 1 1\nORIGIN 0 0 0\nPOINT_DATA 8\nSCALARS s float 1\nLOOKUP_TABLE default\n1 2 3 4 5 6 7 8\n' > "$work/vcorpus/vtk"
printf '\006<VTKFile type="ImageData" byte_order="LittleEndian" header_type="UInt32"><ImageData WholeExtent="0 1 0 1 0 1" Origin="0 0 0" Spacing="1 1 1"><Piece Extent="0 1 0 1 0 1"><PointData Scalars="s"><DataArray type="UInt8" Name="s" format="ascii">1 2 3 4 5 6 7 8</DataArray></PointData></Piece></ImageData></VTKFile>\n' > "$work/vcorpus/vti-ascii"
printf '\006<VTKFile type="ImageData" byte_order="LittleEndian" header_type="UInt32"><ImageData WholeExtent="0 1 0 1 0 1"><Piece><PointData><DataArray type="UInt8" Name="s" format="binary">CAAAAAECAwQFBgcI</DataArray></PointData></Piece></ImageData></VTKFile>\n' > "$work/vcorpus/vti-binary"
printf '\006<VTKFile type="ImageData" header_type="UInt32"><ImageData WholeExtent="0 1 0 1 0 1"><Piece><PointData><DataArray type="UInt8" Name="s" format="appended" offset="0"/></PointData></Piece></ImageData><AppendedData encoding="raw">_\010\000\000\000abcdefgh</AppendedData></VTKFile>\n' > "$work/vcorpus/vti-appended"
python3 - "$work/vcorpus/nii" <<'PY'
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
"$work/fuzz_volume_readers" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:--1}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" "$work/vcorpus" 2>&1 | tee "$work/fuzz_volume_readers.log" | tail -25
# the coverage reached (edges, features), for docs/reliability.md
grep -m1 "DONE" "$work/fuzz_volume_readers.log" || true
