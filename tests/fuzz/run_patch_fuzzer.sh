#!/usr/bin/env bash
# Builds the patch-reader fuzz target with clang (libFuzzer + AddressSanitizer + UBSan) from the reader sources
# alone and runs it for a bounded time on a seed corpus of every format; any crash, leak or hang fails.
#   usage: run_patch_fuzzer.sh <source dir> <work dir> [seconds]
# CI fuzzes for the given time from a fixed seed, so that every run starts from the same inputs (FUZZ_SEED=0 for a
# random one, FUZZ_RUNS=N to stop after N inputs).
set -euo pipefail
src="$1"; work="$2"; secs="${3:-30}"
mkdir -p "$work/corpus"
json_inc=$(dirname "$(find /usr/include -name json.hpp -path '*nlohmann*' | head -1)")/..
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DEIGEN_MAX_ALIGN_BYTES=32 \
  -I"$src/include" -I"$src/src" -I"$json_inc" -I/usr/include/eigen3 \
  "$src/tests/fuzz/fuzz_patch_readers.cpp" "$src/src/io/patch_readers.cpp" "$src/src/patches/model.cpp" \
  "$src/src/patches/bspline.cpp" "$src/src/patches/trimmed.cpp" "$src/src/io/atomic_file.cpp" -o "$work/fuzz_patch_readers"
printf '\000group 1 g\n5\n1 2\n0 0 0\n0 1 0\n0 2 0\n1 0 0\n1 1 1\n1 2 0\n3\n1\n0 0 0\n1 0 0\n0 1 0\n1\n3 1\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n8\n1 1\n0 0 0 1\n0 1 0 1\n1 0 0 1\n1 1 1 2\n' > "$work/corpus/bv"
printf '\0011\n1 1\n0 0 0\n0 1 0\n1 0 0\n1 1 0\n' > "$work/corpus/bpt"
printf '\002{"parasurf_trimmed_bezier": 1, "surfaces": [{"degree": [1, 2], "total_degree": 3, "points": [[0,0,0],[0,1,0],[0,2,1],[1,0,0],[1,1,1],[1,2,0]], "trims": [[[0,0],[1,0],[1,1],[0,1]]]}]}' > "$work/corpus/trimmed"
printf '\002{"degree": [1, 2], "knots": [[0, 0, 1, 1], [0, 0, 0, 1, 1, 1]], "points": [[[0,0,0],[0,1,1],[0,2,0]], [[1,0,0],[1,1,1],[1,2,0]]], "weights": [[1,2,1],[1,1,1]]}' > "$work/corpus/json"
"$work/fuzz_patch_readers" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:--1}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" 2>&1 | tee "$work/fuzz_patch_readers.log" | tail -25
# the coverage reached (edges, features), for docs/reliability.md
grep -m1 "DONE" "$work/fuzz_patch_readers.log" || true
