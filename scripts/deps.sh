#!/usr/bin/env bash
# Installs the Debian packages parasurf needs, only those that are missing. The CUDA toolkit is optional:
# with nvcc on PATH (or in /usr/local/cuda/bin) the CUDA backend is built too.
set -euo pipefail
pkgs=(cmake ninja-build g++ ccache libomp-dev libgtest-dev libcli11-dev nlohmann-json3-dev zlib1g-dev libeigen3-dev libosd-dev pybind11-dev python3-dev python3-numpy python3-pytest python3-meshio pkgconf python3-pil libjs-three chromium libopenmpi-dev openmpi-bin libgdcm-dev clang-format)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
