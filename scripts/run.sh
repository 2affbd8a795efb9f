#!/usr/bin/env bash
# Build and run the main jobs on their built-in defaults: tessellate the Utah teapot into teapot.ply, extract
# the isosurface of the built-in tangle field into tangle.ply, and deform the teapot with a twisted lattice
# (accurate FFD) into teapot-ffd.ply. With arguments: `parasurf <arguments>`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/configure.sh
ninja -C build parasurf_cli
if [ $# -gt 0 ]; then
  exec ./build/parasurf "$@"
fi
./build/parasurf tessellate
./build/parasurf isosurface
./build/parasurf ffd
