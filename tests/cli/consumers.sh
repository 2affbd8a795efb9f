#!/usr/bin/env bash
# C++ projects consuming parasurf: `cmake --install` then find_package(parasurf) and pkg-config, each built and
# run; and add_subdirectory, configured only (building the library again would take minutes), checking that it
# adds only the library, leaves the parent's build type alone and passes no OpenMP or Eigen flag to the parent.
# Usage: consumers.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in include/parasurf/isosurface.hpp lib/libparasurf.a lib/cmake/parasurf/parasurfConfig.cmake lib/pkgconfig/parasurf.pc; do
  [ -e "$work/prefix/$f" ] || fail "cmake --install did not install $f"
done

cmake -S "$src/tests/consumer" -B "$work/find" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
ninja -C "$work/find" >/dev/null || fail "find_package consumer does not build"
"$work/find/consumer" || fail "find_package consumer failed"
if grep -E -- '-fopenmp|EIGEN_' "$work/find/compile_commands.json" >/dev/null; then
  fail "find_package passes OpenMP or Eigen flags to its user"
fi

PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --exists parasurf || fail "pkg-config does not find parasurf"
# shellcheck disable=SC2046
g++ -std=c++20 "$src/tests/consumer/main.cpp" -o "$work/pc" \
  $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs parasurf) || fail "pkg-config consumer does not build"
"$work/pc" || fail "pkg-config consumer failed"

cmake -S "$src/tests/consumer" -B "$work/sub" -G Ninja -DPARASURF_SOURCE="$src" -DPARASURF_ENABLE_CUDA=OFF >/dev/null
grep -q '^CMAKE_BUILD_TYPE:STRING=$' "$work/sub/CMakeCache.txt" || fail "add_subdirectory set the parent's build type"
targets=$(ninja -C "$work/sub" -t targets all)
for t in parasurf_tests parasurf_cli _parasurf; do
  if grep -q "^$t:" <<<"$targets"; then fail "add_subdirectory builds $t by default"; fi
done
grep -q "libparasurf.a" <<<"$targets" || fail "add_subdirectory has no library target"
python3 - "$work/sub/compile_commands.json" <<'PY' || fail "add_subdirectory passes OpenMP or Eigen flags to its parent"
import json, sys
for entry in json.load(open(sys.argv[1])):
    if entry["file"].endswith("consumer/main.cpp") and ("-fopenmp" in entry["command"] or "EIGEN_" in entry["command"]):
        sys.exit(1)
PY
echo "consumers: find_package, pkg-config and add_subdirectory all fine"
