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
expect "exceeds the 2^32 vertex indices" surface --resolution 65536 --precision double
expect "must name a .obj file" surface --degree 2 -r 4 --obj "$dir/out.ply.stl"
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
# isosurface: bad volumes, levels and sizes
printf 'NRRD0004\ntype: float\ndimension: 3\nsizes: 4 4 4\nencoding: raw\nendian: little\n\nshort' > "$dir/trunc.nrrd"
printf 'NRRD0004\ntype: complex\ndimension: 3\nsizes: 4 4 4\nencoding: raw\n\n' > "$dir/type.nrrd"
printf 'NDims = 2\nDimSize = 4 4\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n' > "$dir/flat.mha"
printf 'NRRD0004\ntype: uchar\ndimension: 3\nsizes: 1 4 4\nencoding: ascii\n\n%s\n' "$(seq -s ' ' 1 16)" > "$dir/thin.nrrd"
expect "trunc.nrrd: data is truncated" isosurface "$dir/trunc.nrrd"
expect "unsupported NRRD type" isosurface "$dir/type.nrrd"
expect "unsupported dimension count" isosurface "$dir/flat.mha"
expect "at least 2 samples" isosurface "$dir/thin.nrrd"
expect "outside the data range" isosurface --field sphere --size 16 --level 7
expect "not a finite number" isosurface --field sphere --level nan
expect "unknown field" isosurface --field cube
expect "apply to raw files, not to --field" isosurface --field sphere --size 16 --spacing 0,1,1
expect "apply to raw files, not to --field" isosurface --origin nan,0,0
expect "--tolerance must be a positive number" tessellate --tolerance 0
expect "raw file needs" isosurface "$dir/trunc.nrrd" --raw-dims 4x4x4
expect "truncated" isosurface "$dir/trunc.nrrd" --raw-dims 40x40x40 --raw-type float32
echo x > "$dir/thin.txt"
expect "cannot tell the volume format" isosurface "$dir/thin.txt"
printf 'NDims = 3\nDimSize = 4 4 3\nElementType = MET_FLOAT\nElementDataFile = lab.raw\n' > "$dir/lab.mhd"
python3 -c "import struct,sys; open(sys.argv[1],'wb').write(struct.pack('48f', *([1.0]*47 + [2.5])))" "$dir/lab.raw"
printf 'NDims = 3\nDimSize = 4 4 4\nElementType = MET_FLOAT\nElementDataFile = lab4.raw\n' > "$dir/lab4.mhd"
python3 -c "import struct,sys; open(sys.argv[1],'wb').write(struct.pack('64f', *([1.0]*63 + [2.5])))" "$dir/lab4.raw"
expect "must share the grid" isosurface --field sphere --size 4 --labels "$dir/lab.mhd"
expect "not an integer label" isosurface --field sphere --size 4 --level 0 --labels "$dir/lab4.mhd"
expect "not an integer label" isosurface "$dir/lab4.mhd" --per-label
expect "needs a label volume" isosurface --field sphere --exclude-label 3
expect "no --level" isosurface "$dir/lab4.mhd" --per-label --level 1

# ffd: bad meshes, lattices and edits; no output left behind
printf 'v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n' > "$dir/tet.obj"
printf 'v 0 0 0\nv 1 0 0\nv nan 1 0\nf 1 2 3\n' > "$dir/nan.obj"
printf 'v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n' > "$dir/index.obj"
printf '{"moves": [{"index": [9, 0, 0], "displacement": [1, 0, 0]}]}' > "$dir/far.json"
printf '{"moves": [{"index": [1, 0, 0]}]}' > "$dir/half.json"
printf '{"count": [5, 5, 5], "degree": [3, 3, 3], "knots": [[0, 0, 0, 0, 0.7, 0.2, 1, 1, 1], [], []]}' > "$dir/knots.json"
expect "not finite" ffd "$dir/nan.obj"
expect "index.obj:4" ffd "$dir/index.obj"
expect "degree 4 along x is outside 1..3" ffd "$dir/tet.obj" --degree 4
expect "3 control points along x" ffd "$dir/tet.obj" --lattice 3
expect "outside 0..8" ffd "$dir/tet.obj" --edits "$dir/far.json"
expect "position" ffd "$dir/tet.obj" --edits "$dir/half.json"
expect "decreases at index 5" ffd "$dir/tet.obj" --lattice-file "$dir/knots.json"
expect "level 0 is outside" ffd "$dir/tet.obj" -m 0
printf 'v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nv 1 1 1\nf 1 2 3\nf 1 2 4\nf 1 2 5\n' > "$dir/fin.obj"
expect "non-manifold edges" ffd "$dir/fin.obj"
# solve: bad input files
printf '{"curve1": {"points": [[0, 0], [1, "x"]]}, "curve2": {"points": [[0, 1], [1, 0]]}}' > "$dir/c1.json"
printf '{"curve1": {"points": [[0, 0]]}, "curve2": {"points": [[0, 1], [1, 0]]}}' > "$dir/c2.json"
printf '{"curve1": {"points": [[0, 0], [1, 1]]}}' > "$dir/c3.json"
expect "expected a finite number" solve curves "$dir/c1.json"
expect "needs 2..64 control points" solve curves "$dir/c2.json"
expect "expected a member \"curve2\"" solve curves "$dir/c3.json"
printf '{"curve1": {"degree": 2, "knots": [0, 0, 0, 0.7, 0.2, 1, 1, 1], "points": [[0, 0], [1, 1], [2, 0], [3, 1], [4, 0]]}, "curve2": {"points": [[0, 1], [1, 0]]}}' > "$dir/c4.json"
expect "decreases at index 4" solve curves "$dir/c4.json"
echo '{"curve1": {"points": [[0,0],[1,2],[2,0]], "weights": [1,2,1]}, "curve2": {"points": [[0,1],[2,1]]}}' > "$dir/c5.json"
expect "rational curves (\"weights\") are not supported" solve curves "$dir/c5.json"
echo '{"curve1": {"points": [[0,0],[1,2],[2,0]], "degre": 1}, "curve2": {"points": [[0,1],[2,1]]}}' > "$dir/c6.json"
expect "unknown key \"degre\"" solve curves "$dir/c6.json"
printf '{"points": [[0, 0, 1], [0, "x", 1]]}' > "$dir/q1.json"
expect "points[1] must be [x, y, z]" solve closest "$dir/q1.json"
printf '{"points": [[0, 0, 1]], "model": "missing.bpt"}' > "$dir/q2.json"
expect "missing.bpt" solve closest "$dir/q2.json"
printf '{"points": [[0, 0, 1e999]]}' > "$dir/q3.json"
expect "q3.json" solve closest "$dir/q3.json"
printf '{"origins": [[0, 0, 1]], "directions": [[0, 0, 0]]}' > "$dir/r1.json"
expect "ray 0 has no direction" solve rays "$dir/r1.json"
printf '{"origins": [[0, 0, 1]], "directions": [[0, 0, 1], [1, 0, 0]]}' > "$dir/r2.json"
expect "1 origins but 2 directions" solve rays "$dir/r2.json"
printf '{"origins": [[0, 0, 1]], "directions": [[0, 0, 1]], "t_min": "x"}' > "$dir/r3.json"
expect "\"t_min\" must be a number" solve rays "$dir/r3.json"
printf '{"surface1": {"degree": [2, 2], "knots": [[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1]], "points": [[[0, 0, 0], [0, 1, 0], [0, 2, 0]], [[1, 0, 0], [1, 1, NaN], [1, 2, 0]]]}, "surface2": {}}' > "$dir/s1.json"
expect "not valid JSON" solve ssi "$dir/s1.json"
printf '{"surface1": {"degree": [2, 2], "knots": [[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1]], "points": [[[0, 0, 0], [0, 1, 0], [0, 2, 0]], [[1, 0, 0], [1, 1, 0], [1, 2, 0]]]}, "surface2": {"degree": 1, "knots": [[0, 0, 1, 1], [0, 0, 1, 1]], "points": [[[0, 0, 0], [0, 1, 0]], [[1, 0, 0], [1, 1, 0]]]}}' > "$dir/s2.json"
expect "surface1" solve ssi "$dir/s2.json"
printf '{"moving": {"degree": 1, "knots": [[0, 0, 1, 1], [0, 0, 1, 1]], "points": [[[0, 0, 0], [0, 1, 0]], [[1, 0, 0], [1, 1, 0]]]}, "fixed": {"degree": 1, "knots": [[0, 0, 1, 1], [0, 0, 1, 1]], "points": [[[0, 0, 0], [0, 1, 0]], [[1, 0, 0], [1, 1, 0]]]}, "motion": {"degree": 1, "knots": [0, 0, 1, 1], "points": [[-1, 0, 0, 0], [1, 0, 0, 1]]}}' > "$dir/m1.json"
expect "scale must be positive" solve contacts "$dir/m1.json"
# render: bad sizes and outputs
expect "must be in 16..8192" render "$dir/tet.obj" --size 8x8000000
expect "not three numbers" render "$dir/tet.obj" --view 1,2
# hostile inputs that crashed: nesting beyond any format's, non-finite solver input, absurd thread counts
python3 -c "print('[' * 1000000 + ']' * 1000000)" > "$dir/deep.json"
python3 -c "print('{\"a\":' * 500000 + '1' + '}' * 500000)" > "$dir/deepobj.json"
python3 -c "print('{\"points\": ' + '[' * 200000 + ']' * 200000 + '}')" > "$dir/deeppts.json"
expect "nested more than 64 levels" tessellate "$dir/deep.json"
expect "nested more than 64 levels" solve curves "$dir/deepobj.json"
expect "nested more than 64 levels" tessellate "$dir/deeppts.json"
printf '{"curve1":{"points":[[-1e+308,-1e+308],[1e+308,1e+308],[1e+308,-1e+308]]},"curve2":{"points":[[-1e+308,1e+308],[1e+308,-1e+308]]}}' > "$dir/huge.json"
expect "not finite" solve hausdorff "$dir/huge.json"
printf 'ObjectType = Image\nNDims = 3\nDimSize = 1e12 1e12 1e12\nElementType = MET_UCHAR\nHeaderSize = -1\nElementDataFile = LOCAL\n' > "$dir/huge.mhd"
expect "absurd size" isosurface "$dir/huge.mhd" --level 1
printf 'NRRD0004\ntype: uint8\ndimension: 3\nsizes: 1000000000000 1000000000000 1000000000000\nencoding: raw\nbyte skip: -1\n\n' > "$dir/huge.nrrd"
expect "absurd size" isosurface "$dir/huge.nrrd" --level 1
printf '4\n1\n0 0 0\n1 0 0\n0 1 0\n1e300 1e300 1e300\n' > "$dir/huge.bv"
expect "are not finite" tessellate "$dir/huge.bv" -r 4
python3 -c "
n = 200
print('\n'.join('v %d %d %g' % (i, j, (i * j) % 7) for i in range(n) for j in range(n)))
print('\n'.join('f %d %d %d %d' % (i * n + j + 1, i * n + j + 2, (i + 1) * n + j + 2, (i + 1) * n + j + 1) for i in range(n - 1) for j in range(n - 1)))
" > "$dir/grid.obj"
expect "at least" ffd "$dir/grid.obj" --subdivisions 256
expect "is now --subdivisions" ffd "$dir/grid.obj" --level 256   # the old name still works, with a warning
expect "--threads" isosurface --field sphere --size 16 --threads -3
out=$("$exe" isosurface --field sphere --size 16 --threads 100000 -o "$dir/many.ply" -q 2>&1); rc=$?
if [ $rc -ne 0 ] || ! grep -qF "using" <<<"$out" || [ ! -s "$dir/many.ply" ]; then
  echo "FAIL (--threads 100000 must run with the limit and say so): rc=$rc $out"; fail=1
fi

# Contacts of a paraboloid and the same paraboloid reversed along one parameter and cut at another knot, that
# coincide at all times (planes, copies at other degrees, reversed or with more knots are recognised; this pairing
# of the two is not): every cell is unresolved. The limit
# covers the clustering of the cells after the subdivision too (it once ran 0.8 s past a 3 s limit on 2 cores, 9.6 s
# past 5 s on 16). The whole run takes about 7 CPU seconds: a limit of 0.2 s stops it on any machine.
python3 -c "
import json
x, sq = [-1, 0, 1], [1, -1, 1]
quad = [[[x[i], x[j], sq[i] + sq[j]] for j in range(3)] for i in range(3)]
# the same surface with its first parameter reversed and a knot inserted at 1/2 (Boehm: q1 = (p0 + p1) / 2, ...)
rev = quad[::-1]
cut = [rev[0]] + [[[(a + b) / 2 for a, b in zip(rev[i][j], rev[i + 1][j])] for j in range(3)] for i in range(2)] + [rev[2]]
def surf(pts, knots_u):
    return {'degree': [2, 2], 'knots': [knots_u, [0, 0, 0, 1, 1, 1]], 'points': pts}
print(json.dumps({'moving': surf(quad, [0, 0, 0, 1, 1, 1]), 'fixed': surf(cut, [0, 0, 0, 0.5, 1, 1, 1]),
                  'motion': {'degree': 1, 'knots': [0, 0, 1, 1], 'points': [[1, 0, 0, 0], [1, 0, 0, 0]]}}))
" > "$dir/same.json"
t0=$(date +%s.%N)
out=$("$exe" solve contacts "$dir/same.json" --max-seconds 0.2 -o "$dir/same-out.json" 2>&1); rc=$?
took=$(python3 -c "import sys; print('%.2f' % ($(date +%s.%N) - $t0))")
if [ $rc -ne 4 ] || ! grep -qF "limit reached: 0.2 s" <<<"$out" || ! grep -qF "partial" "$dir/same-out.json"; then
  echo "FAIL (coinciding surfaces must stop at --max-seconds with a partial result): rc=$rc $out"; fail=1
elif ! python3 -c "import sys; sys.exit(0 if $took < 0.8 else 1)"; then
  echo "FAIL (--max-seconds 0.2 ran $took s)"; fail=1
fi

[ $fail -eq 0 ] && echo "all bad-input cases passed"
exit $fail
