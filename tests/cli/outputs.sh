#!/usr/bin/env bash
# Outputs: regular files through a temporary (none left behind, the old mode kept), symbolic links kept (their
# target written), FIFOs and standard output written in place, an interrupted write leaves nothing.
set -u
exe=$(realpath "$1")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
fail=0
no() { echo "FAIL: $*"; fail=1; }

"$exe" tessellate -r 4 -o plain.ply >/dev/null || no "plain output"
[ -s plain.ply ] || no "plain.ply is empty"
touch kept.ply && chmod 640 kept.ply
"$exe" tessellate -r 4 -o kept.ply >/dev/null || no "replacing an existing file"
[ "$(stat -c %a kept.ply)" = 640 ] || no "the replaced file's mode changed to $(stat -c %a kept.ply)"
ln -s target.ply link.ply
"$exe" tessellate -r 4 -o link.ply >/dev/null || no "output through a link"
[ -L link.ply ] || no "the link was replaced"
cmp -s plain.ply target.ply || no "the link's target does not hold the mesh"
mkfifo pipe.ply
timeout 60 cat pipe.ply > from_pipe.ply &
reader=$!
timeout 60 "$exe" tessellate -r 4 -o pipe.ply >/dev/null || no "output into a FIFO"
wait $reader
[ -p pipe.ply ] || no "the FIFO was replaced"
cmp -s plain.ply from_pipe.ply || no "the FIFO's reader did not get the mesh"
# An input FIFO is read once a writer comes, with a note on stderr while it waits.
mkfifo in.json
(sleep 1; printf '{"curve1": {"points": [[0, 0], [1, 1]]}, "curve2": {"points": [[0, 1], [1, 0]]}}' > in.json) &
writer=$!
msg=$(timeout 60 "$exe" solve curves in.json --json fifo.json 2>&1 >/dev/null) || no "a solver input through a FIFO: $msg"
wait $writer
grep -q "waiting for a writer" <<<"$msg" || no "no note while waiting on the input FIFO"
grep -q '"intersections"' fifo.json || no "the FIFO's input gave no result"
"$exe" isosurface --field sphere --size 12 -o s.ply -q --json - > report.json || no "--json -"
grep -q '"triangles"' report.json || no "--json - wrote no report to standard output"
[ -e ./- ] && no "--json - made a file named '-'"
"$exe" isosurface --field sphere --size 12 -o s.ply -q --json /dev/null || no "a report to /dev/null"
# -q: nothing on standard error for a run that went well, nor for --help (the device choice has nothing to say).
err=$("$exe" isosurface --field sphere --size 12 -o s.ply -q 2>&1 >/dev/null) || no "isosurface -q"
[ -z "$err" ] || no "isosurface -q printed on stderr: $err"
err=$("$exe" isosurface --help 2>&1 >/dev/null)
[ -z "$err" ] || no "isosurface --help printed on stderr: $err"
# With --json -, standard output is the JSON alone (the human-readable report goes to standard error), for every
# subcommand that writes one.
for cmd in "surface -r 8" "tessellate -r 2" "isosurface --field sphere --size 12" "ffd -m 1"; do
  # shellcheck disable=SC2086
  "$exe" $cmd -o j.ply --json - 2>/dev/null | python3 -c "import json, sys; json.load(sys.stdin)" \
    || no "$cmd --json - mixed other text into the JSON"
done
[ -c /dev/null ] || no "/dev/null was replaced"
# Every report follows one layout (docs/formats.md): version, command, input, output, seconds.total.
cp plain.ply m.ply
python3 -c "import sys; sys.stdout.buffer.write(bytes(1 if 1 <= x <= 3 and 1 <= y <= 3 and 1 <= z <= 3 else 0 for z in range(6) for y in range(6) for x in range(6)))" > labels.raw
printf '{"curve1": {"points": [[0, 0], [1, 1]]}, "curve2": {"points": [[0, 1], [1, 0]]}}' > c.json
for cmd in "info" "surface -r 8 -o j.ply" "tessellate -r 2 -o j.ply" "isosurface --field sphere --size 12 -o j.ply" \
           "isosurface --per-label labels.raw --raw-dims 6x6x6 --raw-type uint8 -o j.ply" "ffd -m 1 -o j.ply" "solve curves c.json" \
           "render m.ply --size 32x32 -o j.png"; do
  # shellcheck disable=SC2086
  "$exe" $cmd --json layout.json >/dev/null 2>&1 || no "$cmd --json"
  python3 - "$cmd" layout.json <<'PY' || no "$cmd: the report does not follow the layout"
import json, sys
j = json.load(open(sys.argv[2]))
command = sys.argv[1].split()[0]
assert j["command"] == command, j["command"]
assert j["parasurf"].count(".") == 2
assert "input" in j and "output" in j
assert command == "info" or isinstance(j["seconds"]["total"], float), j.get("seconds")
assert command in ("info", "solve", "render") or (j["vertices"] > 0 and j["triangles"] > 0)
PY
done
# A mesh on standard output: "-" or /dev/stdout (PLY unless --format names another), the human report on stderr; a
# mesh and a JSON report cannot share it; a descriptor (/dev/fd/N) is written in place, appending as opened.
"$exe" tessellate -r 4 -o - > stdout.ply 2> stdout.err || no "-o -"
cmp -s plain.ply stdout.ply || no "-o - is not the mesh the file got"
grep -q "wrote -" stdout.err || no "-o -: the report did not go to standard error"
"$exe" tessellate -r 4 -o /dev/stdout > devstdout.ply 2>/dev/null || no "-o /dev/stdout"
cmp -s plain.ply devstdout.ply || no "-o /dev/stdout is not the mesh the file got"
"$exe" tessellate -r 4 -o - --format obj 2>/dev/null | head -1 | grep -q "^# written by parasurf" || no "--format obj"
"$exe" tessellate -r 4 -o - --json - >/dev/null 2>&1; [ $? -eq 2 ] || no "a mesh and a report both on standard output"
"$exe" tessellate -r 4 -o x.obj --format ply >/dev/null 2>&1; [ $? -eq 2 ] || no "a format that disagrees with the name"
[ -e x.obj ] && no "a refused format left a file"
echo head > appended.ply
"$exe" tessellate -r 4 -o /dev/fd/3 3>>appended.ply >/dev/null || no "-o /dev/fd/3"
[ "$(head -1 appended.ply)" = head ] || no "/dev/fd/3 opened for appending was replaced"
[ "$(stat -c %s appended.ply)" = $(( $(stat -c %s plain.ply) + 5 )) ] || no "/dev/fd/3 did not get the mesh"
"$exe" tessellate -r 4 -o ascii.ply --format ply-ascii >/dev/null || no "--format ply-ascii"
head -2 ascii.ply | grep -q "format ascii 1.0" || no "ply-ascii is not a text PLY"
"$exe" render m.ply --size 32x32 -o - 2>/dev/null | head -c 4 | grep -q PNG || no "render -o -"
# A failure (a directory where the output goes) leaves no temporary.
mkdir adir.ply
"$exe" tessellate -r 4 -o adir.ply >/dev/null 2>&1 && no "writing over a directory succeeded"
ls -a | grep -q parasurf- && no "a temporary was left behind: $(ls -a | grep parasurf-)"
# --stream-mesh: the mesh part by part through temporaries beside the output, the same file as in memory; into a
# FIFO too (the temporaries then go to TMPDIR); other formats refused before anything is written.
"$exe" isosurface --size 72 -q -o whole.ply --level 0.3,0.6 || no "in-memory isosurface"
"$exe" isosurface --size 72 -q -o parts.ply --level 0.3,0.6 --stream-mesh --memory 0.05 --json parts.json \
  || no "--stream-mesh"
cmp -s whole.ply parts.ply || no "--stream-mesh wrote another file than the in-memory run"
grep -q '"streamed": true' parts.json || no "--stream-mesh did not stream: $(grep not_streamed parts.json)"
mkfifo streamed.ply
timeout 60 cat streamed.ply > streamed_copy.ply &
reader=$!
TMPDIR=$dir timeout 60 "$exe" isosurface --size 72 -q -o streamed.ply --level 0.3,0.6 --stream-mesh --memory 0.05 \
  || no "--stream-mesh into a FIFO"
wait $reader
cmp -s whole.ply streamed_copy.ply || no "--stream-mesh into a FIFO: the reader did not get the mesh"
"$exe" isosurface --size 24 -q -o streamed.obj --stream-mesh >/dev/null 2>&1; [ $? -eq 2 ] || no "--stream-mesh to .obj"
[ -e streamed.obj ] && no "a refused --stream-mesh left a file"
# An integer volume at an integer level (samples on the level, as CT thresholds meet them): still part by part, the
# same file.
python3 -c "
import math
n = 40
open('q.raw', 'wb').write(bytes(max(0, min(255, int(200 - 8 * math.sqrt((i - 19.5) ** 2 + (j - 17) ** 2 + (k - 21) ** 2))))
                                for k in range(n) for j in range(n) for i in range(n)))"
q=(q.raw --raw-dims 40x40x40 --raw-type uint8 --level 120 -q)
"$exe" isosurface "${q[@]}" -o qwhole.ply || no "in-memory isosurface of an integer volume"
"$exe" isosurface "${q[@]}" -o qparts.ply --stream-mesh --memory 0.05 --json qparts.json || no "--stream-mesh, ties"
cmp -s qwhole.ply qparts.ply || no "--stream-mesh with ties wrote another file than the in-memory run"
grep -q '"streamed": true' qparts.json || no "--stream-mesh with ties did not stream: $(grep not_streamed qparts.json)"
ls -a | grep -q parasurf-spill && no "a spill file was left behind"
[ $fail -eq 0 ] && echo "all output cases passed"
exit $fail
