#!/usr/bin/env bash
# Build and run the main job on its built-in default: tessellate the Utah teapot into teapot.ply.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" >/dev/null
ninja -C build parasurf_cli
./build/parasurf tessellate "$@"
