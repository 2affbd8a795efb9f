#!/usr/bin/env bash
# GPU check, run on the GPU machine from a clean state: configure with CUDA, build, run every test, run the
# CUDA tests under compute-sanitizer (memcheck, racecheck; the conformance sizes are small), run the
# benchmarks, and print a summary table last. Full logs go to $OUT (default ./gpu-check-out).
#   usage: scripts/gpu-check.sh [--quick]   (SURFACE_ONLY=1, SOLVER_ONLY=1, FFD_ONLY=1 or ISO_ONLY=1: stop after that part;
#   PATCHES_ONLY=1: the patch-model sanitizers and benchmark alone; SURFACE_RESOLUTIONS=2000,4096 widens the surface bench;
#   ASAN=0/1: without or with the host suite under AddressSanitizer and UBSan, scripts/sanitize.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT"
quick=0; [ "${1:-}" = "--quick" ] && quick=1
[ -d .data ] && export PARASURF_DATA=$PWD/.data
declare -a summary
# Each row also goes to $OUT/summary.txt at once, so a run cut off by a time limit still says what it finished.
: >"$OUT/summary.txt"
note() { summary+=("$1|$2"); printf '%-28s %s\n' "$1" "$2" >>"$OUT/summary.txt"; }

rm -rf build-gpu
t0=$(date +%s)
# The Python module's tests run on the GPU too when some python3 here has numpy, pytest and pybind11.
pyflags=()
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c "import numpy, pytest, pybind11" 2>/dev/null; then
    pyexe=$(command -v "$p")
    pyflags=(-DPython_EXECUTABLE="$pyexe" -Dpybind11_DIR="$("$pyexe" -m pybind11 --cmakedir)")
    break
  fi
done
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 "${pyflags[@]}" >"$OUT/configure.log" 2>&1 \
  && ninja -C build-gpu -j"$(nproc)" >"$OUT/build.log" 2>&1
build_rc=$?
note "build (sm_90, clean)" "$([ $build_rc -eq 0 ] && echo ok || echo FAILED) in $(( $(date +%s) - t0 )) s"
if [ $build_rc -ne 0 ]; then tail -40 "$OUT/build.log"; fi
exe=build-gpu/parasurf
tests=build-gpu/tests/parasurf_tests

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
$exe info --bandwidth | tee "$OUT/info.txt"

# Several test processes share the cores: idle OpenMP threads must sleep, not spin (spinning made one test 100x slower)
(cd build-gpu && OMP_WAIT_POLICY=PASSIVE ctest --output-on-failure -j"$(( $(nproc) > 1 ? $(nproc) / 2 : 1 ))") >"$OUT/ctest.log" 2>&1
note "ctest (all tests)" "$(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1)"
skipped=$(grep -c "Skipped" "$OUT/ctest.log")
note "ctest skipped" "$skipped"
grep -E "Failed|\*\*\*" "$OUT/ctest.log" | head -20

solver_filter='Solver.*:Hausdorff.*:SurfaceIntersection.*:Contacts.*:Bisectors.*:Engines.*:ClosestPoints.*:Rays.*'
san_filter='*cuda_factored*:*cuda_mle*:*cuda_casteljau_float*:*cuda_matrix_float*:*cuda_brute_float*:*hybrid_factored*:*hybrid_mle_float*:Properties.*:Tessellate.Batch*:Tessellate.Packed*:Tessellate.DeviceAssembly*:Tessellate.Teapot*:Tessellate.Sphere*:Isosurface.*:IsosurfaceLabels.*:Ffd.*:'"$solver_filter"
[ "${SOLVER_ONLY:-0}" = 1 ] && san_filter=$solver_filter
[ "${SURFACE_ONLY:-0}" = 1 ] && san_filter='*cuda_*:*hybrid_*:Properties.*'
[ "${PATCHES_ONLY:-0}" = 1 ] && san_filter='Tessellate.*:Teapot.*:BSpline.*:BezierView.*'
# ISO_ONLY=1: the CUDA isosurface tests that compare with the CPU, the tie, MC33, slab, several-GPU, staged-download, label
# every-type cases and the array entry (engine-made vertex values)
# (the whole Isosurface suite under racecheck is longer than one 10-minute call)
[ "${ISO_ONLY:-0}" = 1 ] && san_filter='Isosurface.CpuAndCudaGiveTheSameMesh:Isosurface.ReusedCudaEngineGivesWhatAFreshOneGives:Isosurface.EveryVoxelTypeGivesTheSameTopology:Isosurface.TiesMakeNoHolesNoDuplicatesNoDegenerates:Isosurface.CrossingsRoundedOntoASampleAreWelded:Isosurface.ALoneSampleOnTheLevelLeavesNoVertex:Isosurface.Mc33MatchesTheTrilinearTopology:Isosurface.SlabSplitsGiveTheIdenticalMesh:Isosurface.NonFiniteSamplesAreNeverInside:Isosurface.SeveralGpus*:Isosurface.LargeMeshesComeHome*:IsosurfaceLabels.*:LabelBoundaries.CpuAndCudaGiveTheSameMesh:ArrayIsosurface.*'
# memcheck and racecheck run side by side (each is host-bound and the host has cores to spare)
declare -A san_pid
for tool in memcheck racecheck; do
  OMP_WAIT_POLICY=PASSIVE compute-sanitizer --tool $tool --error-exitcode 99 $tests --gtest_filter="$san_filter" \
    >"$OUT/sanitizer-$tool.log" 2>&1 &
  san_pid[$tool]=$!
done
for tool in memcheck racecheck; do
  wait "${san_pid[$tool]}"; rc=$?
  note "compute-sanitizer $tool" "$([ $rc -eq 0 ] && echo 'clean' || echo "rc=$rc") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.log" | tail -1)"
done

# The host test suite under AddressSanitizer and UBSan, as CI runs it (ASAN=0 skips it; the *_ONLY parts skip it
# unless ASAN=1).
only=0; for v in SURFACE_ONLY SOLVER_ONLY FFD_ONLY ISO_ONLY PATCHES_ONLY; do [ "${!v:-0}" = 1 ] && only=1; done
if [ "${ASAN:-$(( only ? 0 : 1 ))}" = 1 ]; then
  ./scripts/sanitize.sh -j"$(nproc)" >"$OUT/asan.log" 2>&1
  note "ASan+UBSan suite" "$([ $? -eq 0 ] && echo clean || echo FAILED) $(grep -E 'tests passed|tests failed' "$OUT/asan.log" | tail -1)"
fi

# SURFACE_ONLY=1: the surface kernels against the paper's mle (float rows also time the tensor-core path beside
# the FP32 kernel), then stop; the matrix of every method is longer than one 10-minute call on the GPU machine
if [ "${SURFACE_ONLY:-0}" = 1 ]; then
  $exe bench surface --devices cuda --methods mle,factored --nets 4,8,12,13,16,17,20,32,33 --resolutions "${SURFACE_RESOLUTIONS:-2000}" --budget 0.3 \
    --no-peer --json "$OUT/bench-gpu.json" >"$OUT/bench-gpu.log" 2>&1
  note "bench gpu" "rc=$?"
  echo; echo "== GPU rows at 2000^2 (positions + normals)"
  grep -E "res  2000" "$OUT/bench-gpu.log" | head -60
  echo; echo "================ summary ================"
  for row in "${summary[@]}"; do printf '%-28s %s\n' "${row%%|*}" "${row#*|}"; done
  exit 0
fi

if [ "${PATCHES_ONLY:-0}" = 1 ]; then
  $exe bench patches --no-peer --devices cuda --resolutions 8,16,32,128,256 --patches 100000 --budget 0.2 \
    --json "$OUT/bench-patches.json" \
    >"$OUT/bench-patches.log" 2>&1
  note "bench patches" "rc=$?"
  echo; echo "== patch batches (GPU rows)"
  grep -E "cuda:|skipped" "$OUT/bench-patches.log" | head -60
  grep -A18 "tessellation" "$OUT/bench-patches.log"
  echo; echo "================ summary ================"
  for row in "${summary[@]}"; do printf '%-28s %s\n' "${row%%|*}" "${row#*|}"; done
  exit 0
fi

if [ "${ISO_ONLY:-0}" != 1 ]; then
# subdivision solver: the paper's experiments on the CPU engine (all threads) and both GPU engines
$exe bench solver ${SOLVER_BENCH_EXTRA:-} --json "$OUT/bench-solver.json" >"$OUT/bench-solver.log" 2>&1
note "bench solver" "rc=$?"
echo; echo "== solver"
cat "$OUT/bench-solver.log"
if [ "${SOLVER_ONLY:-0}" = 1 ]; then
  echo; echo "================ summary ================"
  for row in "${summary[@]}"; do printf '%-28s %s\n' "${row%%|*}" "${row#*|}"; done
  exit 0
fi

# free-form deformation: the paper's interactive loop on spheres and the bunny, CPU (all threads and one) and CUDA
fmesh=""; [ -f .data/meshes/stanford-bunny.obj ] && fmesh="--meshes .data/meshes/stanford-bunny.obj"
fsph="1536,14500,69000,1000000"; [ $quick -eq 1 ] && fsph="1536,14500"
$exe bench ffd --spheres $fsph $fmesh ${FFD_BENCH_EXTRA:-} --json "$OUT/bench-ffd.json" >"$OUT/bench-ffd.log" 2>&1
note "bench ffd" "rc=$?"
echo; echo "== ffd"
cat "$OUT/bench-ffd.log"
if [ "${FFD_ONLY:-0}" = 1 ]; then
  echo; echo "================ summary ================"
  for row in "${summary[@]}"; do printf '%-28s %s\n' "${row%%|*}" "${row#*|}"; done
  exit 0
fi
fi  # ISO_ONLY skips the solver and FFD benchmarks

# isosurfaces: CPU, CUDA (end to end and resident), GPU floor, scikit-image (VTK is not on this machine)
isizes="256,512"; [ $quick -eq 1 ] && isizes="128,512"
vols=""
[ -d .data/volumes ] && vols="--volumes .data/volumes/MR_Gd.nii.gz:60,.data/volumes/spm152.nii.gz:60"
$exe bench isosurface --sizes $isizes $vols ${ISO_BENCH_EXTRA:-} --json "$OUT/bench-isosurface.json" >"$OUT/bench-isosurface.log" 2>&1
note "bench isosurface" "rc=$?"
echo; echo "== isosurface"
cat "$OUT/bench-isosurface.log"
[ "${ISO_ONLY:-0}" = 1 ] && quick=2

# patch models: every strategy on the GPU, CPU threads, tessellation phases (OpenSubdiv is not on this machine)
if [ $quick -lt 2 ]; then
pq=""; [ $quick -eq 1 ] && pq="--resolutions 8,32,128,256 --patches 100000 --budget 0.1"
$exe bench patches --no-peer $pq --json "$OUT/bench-patches.json" >"$OUT/bench-patches.log" 2>&1
note "bench patches" "rc=$?"
echo; echo "== patch batches (GPU rows)"
grep -E "cuda:|skipped" "$OUT/bench-patches.log" | head -60
grep -A18 "tessellation" "$OUT/bench-patches.log"
fi

if [ $quick -eq 0 ]; then
  # GPU matrix of the paper (all methods), then the CPU side at 1 and all threads, the peer and the hybrid.
  $exe bench surface --devices cuda --budget 0.3 --no-peer --json "$OUT/bench-gpu.json" >"$OUT/bench-gpu.log" 2>&1
  note "bench gpu" "rc=$?"
  $exe bench surface --devices cpu --nets 4,8,12,16,32 --resolutions 256,1000,2000 --methods mle,factored \
    --threads 1,$(nproc) --budget 0.3 --json "$OUT/bench-cpu.json" >"$OUT/bench-cpu.log" 2>&1
  note "bench cpu+hybrid" "rc=$?"
  echo; echo "== GPU rows at 2000^2 (positions + normals)"
  grep -E "res  2000" "$OUT/bench-gpu.log" | head -40
  echo; echo "== peer and hybrid"
  grep -E "threads|speed-up|hybrid|gpu\+copy" "$OUT/bench-cpu.log"
fi

echo; echo "================ summary ================"
for row in "${summary[@]}"; do printf '%-28s %s\n' "${row%%|*}" "${row#*|}"; done
