#!/usr/bin/env bash
# Build and run all tests (CPU; CUDA code is compiled when a toolkit exists, for one architecture:
# see configure.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# Paths hashed relative to the checkout, so that a clone elsewhere reuses the objects compiled here.
export CCACHE_BASEDIR="$PWD"
./scripts/configure.sh
ninja -C build
# tests run side by side: idle OpenMP threads sleep instead of spinning on cores another test needs
cd build && OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} ctest --output-on-failure -j"$(nproc)"
