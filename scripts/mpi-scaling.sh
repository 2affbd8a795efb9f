#!/usr/bin/env bash
# Strong and weak scaling of MPI isosurface runs (tangle field generated per rank, nothing read from disk).
# Strong: one N^3 field on 1, 2, ..., P ranks. Weak: N x N x (N/P0 * ranks) so every rank keeps the same share.
# Prints a table (time, speed-up, efficiency) and writes every run's JSON report to $OUT (default ./mpi-scaling).
# SCALING=strong or weak runs only that half. PLY_DIR=dir writes the (deleted) meshes there instead of $OUT: a local
# disk, where $OUT is slow (a weak 4-rank run at 2048^3 writes 3.5 GB).
# REPEATS=k (default 1) runs each case k times and keeps the fastest (its JSON report too): the first touch of fresh
# host memory and of a GPU after idling cost more than they do in steady use.
#   usage: scripts/mpi-scaling.sh <parasurf> <N> <ranks, comma-separated> [device: cpu|cuda] [extra isosurface args]
set -uo pipefail
exe="$1"; n="$2"; ranks="$3"; device="${4:-cpu}"; shift 4 2>/dev/null || shift $#
extra=("$@")
OUT=${OUT:-$PWD/mpi-scaling}
PLY_DIR=${PLY_DIR:-$OUT}
mkdir -p "$OUT" "$PLY_DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
IFS=, read -ra list <<<"$ranks"
first=${list[0]}
seconds() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['seconds']['total'])" "$1"; }
# After start-up: from the moment every rank's engine has started (GPU context, buffers) to the mesh in host memory;
# one process: its total less its setup.
after_start() {
  python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['seconds']; print(s['after_start'] if 'after_start' in s else s['total'] - s['setup'])" "$1"
}
# The slowest rank's phases (multi-rank runs), to stderr: where the time of a run goes.
phases() {
  python3 - "$1" >&2 <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
if "ranks" not in j:
    s = j["seconds"]
    print("    1 process: " + ", ".join(f"{k} {v:.3f}" for k, v in s.items()))
else:
    r = max(j["ranks"], key=lambda r: r["seconds"])
    print(f"    slowest rank {j['ranks'].index(r)} ({r['seconds']:.3f} s): " + ", ".join(f"{k} {v:.3f}" for k, v in r["phases"].items()))
PY
}
REPEATS=${REPEATS:-1}
one() {  # ranks, size, tag
  local np=$1 size=$2 tag=$3
  local json="$OUT/$tag-np$np.json" best="" k
  for ((k = 0; k < REPEATS; ++k)); do
    timeout 590 mpirun --oversubscribe --bind-to none -np "$np" "$exe" isosurface --field tangle --size "$size" --device "$device" \
      --balance cost -q -o "$PLY_DIR/$tag-np$np.ply" --json "$json.try" "${extra[@]}" >"$OUT/$tag-np$np.log" 2>&1 || { echo "run failed: $tag np=$np"; tail -5 "$OUT/$tag-np$np.log"; return 1; }
    rm -f "$PLY_DIR/$tag-np$np.ply"
    local t; t=$(seconds "$json.try")
    echo "    try $((k + 1)): $t s (after start-up $(after_start "$json.try") s)" >&2
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $t < $best else 1)"; then best=$t; mv "$json.try" "$json"; fi
  done
  rm -f "$json.try"
  phases "$json"
  echo "$best $(after_start "$json")"
}
printf '%-8s %-6s %-16s %10s %9s %10s  %s\n' scaling ranks size seconds speed-up efficiency "| after start-up: seconds, efficiency"
SCALING=${SCALING:-both}
base=""
[ "$SCALING" = weak ] && list_strong=() || list_strong=("${list[@]}")
[ "$SCALING" = strong ] && list_weak=() || list_weak=("${list[@]}")
for np in "${list_strong[@]}"; do
  r=$(one "$np" "$n" strong) || { echo "$r"; exit 1; }
  read -r t a <<<"$r"
  [ -z "$base" ] && base=$t && base_a=$a
  python3 -c "t=$t; b=$base; a=$a; ba=$base_a; r=$np/$first; print(f'strong   {$np:<6d} {\"$n^3\":<16s} {t:10.3f} {b/t:9.2f} {b/t/r*100:9.1f}%  | {a:.3f} {ba/a/r*100:.1f}%')"
done
base=""
for np in "${list_weak[@]}"; do
  nz=$(( n * np / first ))
  r=$(one "$np" "${n}x${n}x${nz}" weak) || { echo "$r"; exit 1; }
  read -r t a <<<"$r"
  [ -z "$base" ] && base=$t && base_a=$a
  python3 -c "t=$t; b=$base; a=$a; ba=$base_a; print(f'weak     {$np:<6d} {\"${n}x${n}x${nz}\":<16s} {t:10.3f} {\"-\":>9s} {b/t*100:9.1f}%  | {a:.3f} {ba/a*100:.1f}%')"
done
