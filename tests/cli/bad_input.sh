#!/usr/bin/env bash
# Bad input to the CLI: non-zero exit, a message naming the problem, and no output file left behind.
set -u
exe="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
expect() {  # expect "<needle>" args...
  local needle="$1"; shift
  local out rc
  out=$("$exe" "$@" -o "$dir/out.ply" 2>&1); rc=$?
  if [ $rc -eq 0 ]; then echo "FAIL (exit 0): $*"; fail=1; fi
  if ! grep -qF -- "$needle" <<<"$out"; then echo "FAIL (message '$needle' missing): $* -> $out"; fail=1; fi
  if ls "$dir"/out.ply* >/dev/null 2>&1; then echo "FAIL (output left behind): $*"; fail=1; rm -f "$dir"/out.ply*; fi
}
printf 'bezier 2 2\n0 0 0\n' > "$dir/trunc.txt"
printf 'bezier 1 1\n0 0 0\n0 1 0\n1 0 nan\n1 1 1\n' > "$dir/nan.txt"
printf 'bezier 40 1\n' > "$dir/deg.txt"
printf 'bezier 1 1\n0 0 0\n0 one 0\n1 0 0\n1 1 1\n' > "$dir/word.txt"
expect "truncated" surface "$dir/trunc.txt"
expect "nan.txt:4" surface "$dir/nan.txt"
expect "outside 1..32" surface "$dir/deg.txt"
expect "word.txt:3" surface "$dir/word.txt"
expect "cannot open" surface "$dir/absent.txt"
expect "--resolution" surface --resolution 1x100
expect "--resolution" surface --resolution 10xten
expect "unknown method" surface --method fastest
expect "unknown device" surface --device tpu
expect "outside 1..32" surface --degree 33
expect "needs" surface --resolution 65536 --precision double
expect "use .ply or .obj" surface --degree 2 -r 4 --obj "$dir/out.ply.stl"
printf '4\n3\n0 0 0\n' > "$dir/trunc.bv"
printf '6\n1\n0 0 0\n' > "$dir/kind6.bv"
printf '8\n1 1\n0 0 0 1\n0 1 0 -1\n1 0 0 1\n1 1 1 1\n' > "$dir/weight.bv"
printf '2\n3 3\n0 0 0\n' > "$dir/count.bpt"
printf '{"degree": 3, "knots": [[0,1],[0,1]], "points": [[[0,0,0]]]}' > "$dir/bad.json"
printf '1\n3 1\n0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n' > "$dir/index.bv"
expect "unexpected end of file" tessellate "$dir/trunc.bv"
expect "kind6.bv:1: patch kind 6 is not supported" tessellate "$dir/kind6.bv"
expect "must be > 0" tessellate "$dir/weight.bv"
expect "count.bpt" tessellate "$dir/count.bpt"
expect "bad.json" tessellate "$dir/bad.json"
expect "index.bv:6" tessellate "$dir/index.bv"
expect "resolution 0 is outside" tessellate --resolution 0
[ $fail -eq 0 ] && echo "19 passed, 0 failed"
exit $fail
