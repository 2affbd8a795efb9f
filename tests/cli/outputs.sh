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
# A failure (a directory where the output goes) leaves no temporary.
mkdir adir.ply
"$exe" tessellate -r 4 -o adir.ply >/dev/null 2>&1 && no "writing over a directory succeeded"
ls -a | grep -q parasurf- && no "a temporary was left behind: $(ls -a | grep parasurf-)"

[ $fail -eq 0 ] && echo "all output cases passed"
exit $fail
