#!/usr/bin/env bash
# Build and run all tests (CPU; CUDA code is compiled when a toolkit exists, for one architecture).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" >/dev/null
ninja -C build
# tests run side by side: idle OpenMP threads sleep instead of spinning on cores another test needs
cd build && OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} ctest --output-on-failure -j"$(nproc)"
