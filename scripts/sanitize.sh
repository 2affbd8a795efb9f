#!/usr/bin/env bash
# The whole CPU test suite under AddressSanitizer and UndefinedBehaviorSanitizer: a build of its own in
# build-sanitize (no CUDA, no Python module: the sanitizers do not follow into the GPU or the interpreter), then
# ctest without the fuzz targets (they carry the sanitizers already) and the timing-bound tests.
#   usage: scripts/sanitize.sh [ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
# Paths hashed relative to the checkout, so that a clone elsewhere (CI) reuses the objects compiled here.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# -O1 with line tables: half the compile time of -O2 -g (the build dominates this script on two cores), and still
# file:line in every report.
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DPARASURF_ENABLE_CUDA=OFF -DPARASURF_BUILD_PYTHON=OFF \
  "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
  "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" "${launcher[@]}" >/dev/null
ninja -C build-sanitize
# OpenMP's runtime keeps its thread pool to the end: not a leak of ours.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-sanitize && OMP_WAIT_POLICY=PASSIVE ctest --output-on-failure -j"$(nproc)" -E "^fuzz_|cmake_consumers" "$@"
