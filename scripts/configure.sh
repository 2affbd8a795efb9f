#!/usr/bin/env bash
# Installs missing Debian packages and configures build/ (used by run.sh and test.sh). The CUDA backend is built
# for this machine's GPU when it has one (one architecture builds quickly), otherwise for sm_90 so that the CUDA
# code is still compiled; CUDA_ARCH overrides the choice (e.g. CUDA_ARCH="80;90"). A plain `cmake` without it
# builds for every GPU generation since Turing.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
arch="${CUDA_ARCH:-}"
if [ -z "$arch" ] && command -v nvidia-smi >/dev/null 2>&1; then
  arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ' || true)"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${arch:-90}" >/dev/null
