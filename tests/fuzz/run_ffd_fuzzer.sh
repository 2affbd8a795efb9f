#!/usr/bin/env bash
# Builds the FFD-input fuzz target (lattice layouts and edits, the JSON that `ffd --lattice-file` and `--edits`
# read) with clang (libFuzzer + AddressSanitizer + UBSan) and runs it for the given time (a fixed seed, so that
# every run starts from the same inputs; FUZZ_SEED=0 for a random one, FUZZ_RUNS=N to stop after N inputs) on a
# seed corpus of both inputs; any crash, leak or hang fails.
#   usage: run_ffd_fuzzer.sh <source dir> <work dir> [seconds]
set -euo pipefail
src="$1"; work="$2"; secs="${3:-30}"
mkdir -p "$work/fcorpus"
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DEIGEN_MAX_ALIGN_BYTES=32 \
  -I"$src/include" -I"$src/src" -I/usr/include/eigen3 \
  "$src/tests/fuzz/fuzz_ffd_inputs.cpp" "$src/src/ffd/lattice.cpp" -o "$work/fuzz_ffd_inputs"
printf '\000{"count": [5, 4, 4], "degree": [3, 2, 1], "padding": 0.1, "knots": [[0, 0, 0, 0, 0.4, 1, 1, 1, 1], [], []]}' > "$work/fcorpus/lattice"
printf '\000{"count": [4, 4, 4], "degree": [3, 3, 3], "world_to_parameter": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0]}' > "$work/fcorpus/embedding"
printf '\001{"moves": [{"index": [1, 2, 3], "displacement": [0.1, 0, 0]}, {"index": [0, 0, 0], "position": [0, 0, 0]}]}' > "$work/fcorpus/moves"
printf '\001{"targets": [{"point": [0.5, 0.5, 0.5], "target": [0.6, 0.5, 0.5]}, {"point": [0.2, 0.3, 0.4], "target": [0.2, 0.3, 0.45]}]}' > "$work/fcorpus/targets"
"$work/fuzz_ffd_inputs" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:--1}" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" "$work/fcorpus" 2>&1 | tee "$work/fuzz_ffd_inputs.log" | tail -25
# the coverage reached (edges, features), for docs/reliability.md
grep -m1 "DONE" "$work/fuzz_ffd_inputs.log" || true
