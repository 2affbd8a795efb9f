#!/usr/bin/env bash
# The README's main job and the info command run and produce a mesh.
set -eu
exe="$1"
source "$(dirname "$0")/common.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$exe" info
"$exe" --help | grep -q "Exit status: 0 done"                       # exit codes documented in the help
set +e; "$exe" surface -r 1 -o "$dir/x.ply" 2>/dev/null; rc=$?; set -e
[ "$rc" -eq 2 ]                                                     # bad arguments: status 2, as documented
"$exe" surface -o "$dir/s.ply" --obj "$dir/s.obj"
head -c 200 "$dir/s.ply" | grep -q "element vertex 65536"
grep -q "^vn " "$dir/s.obj"
"$exe" surface --generator random --seed 5 --degree 9x4 --rational -r 33x17 --method mle --precision double -o "$dir/r.ply"
"$exe" bench surface --devices cpu --nets 4 --resolutions 64 --methods factored --threads 1 --budget 0.01 --no-peer --json "$dir/b.json"
grep -q points_per_second "$dir/b.json"
(cd "$dir" && "$exe" tessellate | grep -q "patches: 32")
head -c 300 "$dir/teapot.ply" | grep -q "property int group"
"$exe" tessellate --tolerance 0.01 --compare-uniform -o "$dir/t.glb" --json "$dir/t.json" | grep -q "uniform resolution meeting"
head -c 4 "$dir/t.glb" | grep -q glTF
grep -q uniform_triangles "$dir/t.json"
(cd "$dir" && "$exe" isosurface | grep -q "wrote tangle.ply")
head -c 400 "$dir/tangle.ply" | grep -aq "element face"
"$exe" isosurface --field torus --size 40 --level -0.05,0 --topology decider -o "$dir/t2.glb" --json "$dir/i.json" -q
grep -q '"triangles"' "$dir/i.json"
"$exe" isosurface --field gyroid --size 48 --topology mc33 --slab-slices 5 -o "$dir/g33.ply" -q
"$exe" isosurface --field gyroid --size 48 --topology mc33 -o "$dir/g33b.ply" -q
cmp -s "$dir/g33.ply" "$dir/g33b.ply"
set +e; "$exe" isosurface --field gyroid --size 8 --topology mc34 -o "$dir/bad.ply" -q 2>"$dir/err.txt"; rc=$?; set -e
[ $rc -eq 2 ] && grep -q "mc33" "$dir/err.txt" && [ ! -e "$dir/bad.ply" ]
"$exe" isosurface --field sphere --size 24 -o "$dir/s.stl" -q
[ "$(stat -c %s "$dir/s.stl")" -gt 1000 ]
"$exe" isosurface --field sphere --size 24 --slab-slices 3 -o "$dir/s3.stl" -q
cmp -s "$dir/s.stl" "$dir/s3.stl"
set +e; "$exe" isosurface --field sphere --size 8 --level 0.7499 -o "$dir/e.ply" -q 2>/dev/null; rc=$?; set -e
[ $rc -eq 3 ] && [ -f "$dir/e.ply" ]
# Label maps: a 10x9x8 uint8 volume (box of label 2 beside a box of label 5) as MetaImage, and a ball field.
python3 - "$dir" <<'PY'
import sys, math
d = sys.argv[1]
nx, ny, nz = 10, 9, 8
lab = bytearray(nx * ny * nz)
ball = bytearray(nx * ny * nz)
for k in range(nz):
    for j in range(ny):
        for i in range(nx):
            at = (k * ny + j) * nx + i
            if 2 <= j < 7 and 2 <= k < 6 and 1 <= i < 9:
                lab[at] = 2 if i < 5 else 5
            ball[at] = max(0, min(255, int(200 - 40 * math.dist((i, j, k), (4.5, 4, 3.5)))))
for name, data in (("labels", lab), ("ball", ball)):
    open(f"{d}/{name}.raw", "wb").write(data)
    open(f"{d}/{name}.mhd", "w").write(f"NDims = 3\nDimSize = {nx} {ny} {nz}\nElementType = MET_UCHAR\nElementDataFile = {name}.raw\n")
PY
"$exe" isosurface "$dir/labels.mhd" --per-label -o "$dir/nets.ply" --json "$dir/nets.json" -q
grep -q '"labels 5|2"' "$dir/nets.json"
head -c 600 "$dir/nets.ply" | grep -aq "property int outer_label"
"$exe" isosurface "$dir/ball.mhd" --level 100 --labels "$dir/labels.mhd" --scalars "$dir/labels.mhd" -o "$dir/lab.ply" --json "$dir/lab.json" -q
grep -q '"label 2"' "$dir/lab.json"
head -c 600 "$dir/lab.ply" | grep -aq "property float value"
"$exe" isosurface "$dir/ball.mhd" --level 100 --labels "$dir/labels.mhd" --exclude-label 0,5 -o "$dir/lab2.glb" --json "$dir/lab2.json" -q
grep -q '"label 2"' "$dir/lab2.json" && ! grep -q '"label 5"' "$dir/lab2.json"
"$exe" bench isosurface --quick --devices cpu --no-peers --json "$dir/bi.json" >/dev/null
grep -q '"results"' "$dir/bi.json"
"$exe" bench patches --devices cpu --models teapot --resolutions 8 --precisions float --threads 1 --budget 0.01 --no-peer --json "$dir/p.json" >/dev/null
grep -q points_per_second "$dir/p.json"
printf 'v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n' > "$dir/tet.obj"
printf '{"moves": [{"index": [2, 2, 2], "displacement": [0.1, 0, 0]}], "targets": [{"point": [0.2, 0.2, 0.2], "target": [0.25, 0.2, 0.2]}]}' > "$dir/edits.json"
for method in point accurate uus; do
  "$exe" ffd "$dir/tet.obj" --lattice 5 --edits "$dir/edits.json" --method $method -m 3 -o "$dir/tet-$method.ply" --json "$dir/ffd-$method.json" >/dev/null
  grep -q '"triangles"' "$dir/ffd-$method.json"
done
grep -q '"pieces"' "$dir/ffd-accurate.json"
"$exe" ffd "$dir/tet.obj" --lattice 4 --edits "$dir/edits.json" -m 2 --patches "$dir/tet.bv" -o "$dir/tet.glb" >/dev/null
"$exe" tessellate "$dir/tet.bv" -r 4 -o "$dir/tet-exact.ply" >/dev/null
"$exe" ffd "$dir/tet.obj" --lattice 4 --edits "$dir/edits.json" -m 2 --patches "$dir/tet-trimmed.json" -o "$dir/tet2.ply" >/dev/null
grep -q parasurf_trimmed_bezier "$dir/tet-trimmed.json"
"$exe" tessellate "$dir/tet-trimmed.json" -r 4 -o "$dir/tet-trimmed.ply" >/dev/null
(cd "$dir" && "$exe" ffd -m 2 --json teapot.json >/dev/null && grep -q '"triangles"' teapot.json && [ -s teapot-ffd.ply ])
"$exe" render "$dir/tet-accurate.ply" -o "$dir/tet.png" --size 64x48 >/dev/null
head -c 8 "$dir/tet.png" | od -An -c | grep -q "P   N   G"
printf '{"curve1": {"points": [[0, 0], [0.5, 1], [1, 0]]}, "curve2": {"control_points": [[0, 1], ["3/8", "3/8"]]}}' > "$dir/curves.json"
"$exe" solve curves "$dir/curves.json" --json "$dir/curves-out.json" >/dev/null
grep -q '"intersections"' "$dir/curves-out.json"
[ "$(grep -c '"tangent"' "$dir/curves-out.json")" -eq 2 ]
printf '{"curve1": {"degree": 2, "knots": [0, 0, 0, 0.5, 1, 1, 1], "points": [[0, 0], [1, 2], [2, -2], [3, 0]]}, "curve2": {"points": [[-1, 0.1], [4, 0.1]]}}' > "$dir/bs.json"
"$exe" solve curves "$dir/bs.json" --json "$dir/bs-out.json" >/dev/null
[ "$(grep -c '"tangent"' "$dir/bs-out.json")" -eq 2 ]
printf '{"curves": [{"points": [[0, 1], [0.6, 1.2], [1, 0.5]]}, {"points": [[0.9, -0.4], [0.1, -1.1], [-0.6, -0.8]]}, {"points": [[-0.9, -0.5], [-1.2, 0.2], [-0.5, 0.9]]}]}' > "$dir/traps.json"
"$exe" solve raytraps "$dir/traps.json" --json "$dir/traps-out.json" >/dev/null
grep -q '"traps"' "$dir/traps-out.json"
# closest points on the teapot: above the knob's top (3.15 high), and on the surface at a corner
printf '{"points": [[0, 0, 3.2], [0, 0, 3.15], [4, 1, 2]]}' > "$dir/closest.json"
"$exe" solve closest "$dir/closest.json" --json "$dir/closest-out.json" >/dev/null
python3 -c "import json, sys; r = json.load(open(sys.argv[1]))['closest']; assert abs(r[0]['distance'] - 0.05) < 1e-12 and r[1]['distance'] < 1e-12 and len(r) == 3, r" "$dir/closest-out.json"
# rays on the teapot: down the axis onto the knob's top (3.15 high), and one pointing away
printf '{"origins": [[0, 0, 10], [0, 0, 10]], "directions": [[0, 0, -1], [0, 0, 1]]}' > "$dir/rays.json"
"$exe" solve rays "$dir/rays.json" --json "$dir/rays-out.json" >/dev/null
python3 -c "import json, sys; r = json.load(open(sys.argv[1]))['rays']; assert r[0]['hit'] and abs(r[0]['t'] - 6.85) < 1e-12 and not r[1]['hit'], r" "$dir/rays-out.json"
"$exe" bench solver --curves 3 --repeat 1 --min-seconds 0 --engines cpu --write-inputs "$dir/solver" --json "$dir/bs.json" >/dev/null
grep -q '"paper_gpu_ms"' "$dir/bs.json"
"$exe" solve hausdorff "$dir/solver/hausdorff_10.json" -o "$dir/h.json" --picture "$dir/h.png" >/dev/null
grep -q '"curve1_to_curve2"' "$dir/h.json" && [ -s "$dir/h.png" ]
# Both CPU schemes give the same answer, byte for byte.
"$exe" solve hausdorff "$dir/solver/hausdorff_10.json" -o "$dir/h-levels.json" --cpu-scheme levels >/dev/null
same_result "$dir/h.json" "$dir/h-levels.json"
"$exe" solve bisector "$dir/solver/hausdorff_5.json" -o "$dir/bis.json" >/dev/null
grep -q '"closed"' "$dir/bis.json"
"$exe" solve ssi "$dir/solver/ssi_14x7.json" -o "$dir/ssi.json" --picture "$dir/ssi.png" >/dev/null
grep -q '"residual"' "$dir/ssi.json" && [ -s "$dir/ssi.png" ]
"$exe" solve contacts "$dir/solver/contacts.json" -o "$dir/contacts.json" >/dev/null
grep -q '"proved_single"' "$dir/contacts.json"
"$exe" solve surface-bisector "$dir/solver/surface_bisector.json" -o "$dir/sbis.json" >/dev/null
grep -q '"samples"' "$dir/sbis.json"
"$exe" bench ffd --quick --devices cpu --json "$dir/bf.json" >/dev/null
grep -q '"vertices_per_second"' "$dir/bf.json"
# A T-junction in a file: a 2 x 1 bilinear patch beside two 1 x 0.5 ones that split its right side. The long side
# is stitched to the pieces, so the mesh's boundary is the outline alone (14 segments at resolution 2).
printf '5\n1 1\n0 0 0\n0 1 0\n2 0 0\n2 1 0\n5\n1 1\n2 0 0\n2 0.5 0\n3 0 0\n3 0.5 0\n5\n1 1\n2 0.5 0\n2 1 0\n3 0.5 0\n3 1 0\n' > "$dir/tj.bv"
"$exe" tessellate "$dir/tj.bv" -r 2 -o "$dir/tj.obj" --json "$dir/tj.json" >/dev/null
python3 - "$dir/tj.json" "$dir/tj.obj" <<'PY'
import collections, json, sys
j = json.load(open(sys.argv[1]))
assert j["t_junction_edges"] == 1 and j["t_junction_pieces"] == 2, j
faces = [[int(w.split("/")[0]) for w in l.split()[1:]] for l in open(sys.argv[2]) if l.startswith("f ")]
uses = collections.Counter(tuple(sorted((f[k], f[(k + 1) % 3]))) for f in faces for k in range(3))
boundary = sum(1 for n in uses.values() if n == 1)
assert boundary == 2 * 2 + 2 * 2 + 2 + 2 + 2, (boundary, "the stitched side must not be open")
PY
# Shell completion written from the command line's definitions: subcommands, options, choices, files.
bash -c '
  source <("$1" completion bash) || exit 1
  complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _parasurf; echo "${COMPREPLY[*]}"; }
  [[ " $(complete_words parasurf iso) " == " isosurface " ]] || { echo "subcommand: $(complete_words parasurf iso)"; exit 1; }
  [[ " $(complete_words parasurf bench "") " == *" patches "* ]] || { echo "bench subcommands"; exit 1; }
  [[ " $(complete_words parasurf isosurface --topo) " == " --topology " ]] || { echo "option"; exit 1; }
  [[ " $(complete_words parasurf isosurface --topology "") " == " classic decider mc33 " ]] || { echo "choices: $(complete_words parasurf isosurface --topology "")"; exit 1; }
  [[ " $(complete_words parasurf solve "") " == *" ssi "* ]] || { echo "solve apps"; exit 1; }
  [[ " $(complete_words parasurf tessellate --format p) " == " ply ply-ascii " ]] || { echo "formats"; exit 1; }
  cd "$2" && [[ " $(complete_words parasurf isosurface ball.m) " == *" ball.mhd "* ]] || { echo "files"; exit 1; }
  [[ -z "$(complete_words parasurf isosurface --threads "")" ]] || { echo "a number completed"; exit 1; }
' _ "$exe" "$dir" || { echo "FAIL: bash completion"; exit 1; }
"$exe" completion fish | grep -q "complete -c parasurf -n '__fish_seen_subcommand_from isosurface' -l topology -x -a 'classic decider mc33'"
"$exe" completion zsh | head -1 | grep -q bashcompinit
echo "smoke passed"
