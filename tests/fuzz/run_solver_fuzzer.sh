#!/usr/bin/env bash
# Builds the solver-input fuzz target with clang (libFuzzer + AddressSanitizer + UBSan) from the solver sources and
# runs it for the given time (a fixed seed, so that every run starts from the same inputs; FUZZ_SEED=0 for a
# random one, FUZZ_RUNS=N to stop after N inputs) on a seed corpus of every application; any crash, leak or hang
# fails.
#   usage: run_solver_fuzzer.sh <source dir> <work dir> [seconds]
set -euo pipefail
src="$1"; work="$2"; secs="${3:-30}"
mkdir -p "$work/scorpus"
clang++ -std=c++20 -O1 -g -fopenmp -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DEIGEN_MAX_ALIGN_BYTES=32 \
  -I"$src/include" -I"$src/src" -I/usr/include/eigen3 \
  "$src/tests/fuzz/fuzz_solver_inputs.cpp" "$src/src/io/solver_json.cpp" "$src/src/solver/bernstein.cpp" \
  "$src/src/solver/solver.cpp" "$src/src/solver/subdivide_cpu.cpp" "$src/src/solver/curves.cpp" "$src/src/solver/hausdorff.cpp" "$src/src/solver/surfaces.cpp" "$src/src/solver/surface_pieces.cpp" "$src/src/solver/surface_contacts.cpp" "$src/src/solver/bisectors.cpp" \
  "$src/src/solver/solver_cuda_stub.cpp" "$src/src/patches/bspline.cpp" "$src/src/core/device.cpp" "$src/src/core/parallel.cpp" "$src/src/core/cuda_stub.cpp" \
  -o "$work/fuzz_solver_inputs"
printf '\000{"curve1": {"points": [[0, 0], [0.5, 1], [1, 0]]}, "curve2": {"control_points": [[0, 1], ["3/8", "0x1.8p-2"]]}}' > "$work/scorpus/curves"
printf '\001{"curve1": {"degree": 2, "knots": [0, 0, 0, 0.5, 1, 1, 1], "points": [[0, 0], [1, 2], [2, -2], [3, 0]]}, "curve2": {"points": [[-1, 0.1], [4, 0.1]]}}' > "$work/scorpus/hausdorff"
# A Hausdorff input whose distance system has a solution region of tens of thousands of cells: their clustering
# once took 40 s under the sanitizers, past the per-input limit.
printf '\001{"curve1": {"degree": 2, "knots": [0, 0, 0, 0.5, 1, 1, 1], "points": [[2, 0] , [2,1], [2, -2], [3, 0]]}, "curve2": {"points": [[-1, 0.1], [4, 0.1]]}}' > "$work/scorpus/hausdorff-region"
printf '\002{"curve1": {"points": [[0, 0], [1, 0.5], [2, 0]]}, "curve2": {"points": [[0, 1], [1, 2], [2, 1]]}}' > "$work/scorpus/bisector"
printf '\003{"curves": [{"points": [[0, 1], [0.6, 1.2], [1, 0.5]]}, {"points": [[0.9, -0.4], [0.1, -1.1], [-0.6, -0.8]]}, {"points": [[-0.9, -0.5], [-1.2, 0.2], [-0.5, 0.9]]}]}' > "$work/scorpus/traps"
printf '\004{"motion": {"degree": 3, "knots": [0, 0, 0, 0, 1, 1, 1, 1], "points": [[1, 0, 0, 0], [1, 0, 0, 1], [1, 1, 0, 1], [1, 1, 1, 1]]}}' > "$work/scorpus/motion"
"$work/fuzz_solver_inputs" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:--1}" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" "$work/scorpus" 2>&1 | tee "$work/fuzz_solver_inputs.log" | tail -25
# the coverage reached (edges, features), for docs/reliability.md
grep -m1 "DONE" "$work/fuzz_solver_inputs.log" || true
