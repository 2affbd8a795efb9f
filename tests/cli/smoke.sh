#!/usr/bin/env bash
# The README's main job and the info command run and produce a mesh.
set -eu
exe="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$exe" info
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
"$exe" bench patches --devices cpu --models teapot --resolutions 8 --precisions float --threads 1 --budget 0.01 --no-peer --json "$dir/p.json" >/dev/null
grep -q points_per_second "$dir/p.json"
echo "smoke passed"
