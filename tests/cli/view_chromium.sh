#!/usr/bin/env bash
# The web viewer, headless: the page parasurf writes loads its mesh in Chromium (software WebGL), reports the
# mesh's triangle count, and its screenshot is not blank. Skips (77) without chromium or libjs-three.
set -u
exe="$1"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then echo "SKIPPED: chromium is not installed (apt install chromium)"; exit 77; fi
if [ ! -f /usr/share/javascript/three/three.min.js ]; then echo "SKIPPED: libjs-three is not installed"; exit 77; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$exe" tessellate -r 6 -o "$dir/teapot.ply" >/dev/null || exit 1
"$exe" view "$dir/teapot.ply" -o "$dir/teapot.html" >/dev/null || exit 1
want=$(head -c 2000 "$dir/teapot.ply" | grep -a "element face" | awk '{print $3}')
flags=(--headless=new --no-sandbox --disable-gpu --enable-unsafe-swiftshader --use-angle=swiftshader
       --window-size=640,480 --virtual-time-budget=10000 --user-data-dir="$dir/profile")
dom=$(timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$dir/teapot.html" 2>/dev/null)
got=$(grep -o 'data-triangles="[0-9]*"' <<<"$dom" | grep -o '[0-9]*')
status=$(grep -o 'data-status="[a-z]*"' <<<"$dom")
echo "page: $status, $got triangles (mesh file: $want)"
[ "$got" = "$want" ] || { echo "FAIL: the page reports '$got' triangles, the mesh has $want"; exit 1; }
timeout 120 "$browser" "${flags[@]}" --screenshot="$dir/shot.png" "file://$dir/teapot.html" >/dev/null 2>&1
[ -s "$dir/shot.png" ] || { echo "FAIL: no screenshot"; exit 1; }
py=/usr/bin/python3; [ -x "$py" ] || py=python3
"$py" - "$dir/shot.png" <<'PY' || exit 1
import sys
try:
    from PIL import Image
except ImportError:
    import os
    size = os.path.getsize(sys.argv[1])
    print(f"screenshot {size} bytes (PIL not installed: size check only)")
    sys.exit(0 if size > 8000 else 1)
im = Image.open(sys.argv[1]).convert("RGB")
px = list(im.getdata())
# The mesh is drawn below the caption: count pixels that are neither white nor the caption's grey text.
coloured = sum(1 for r, g, b in px[len(px) // 10:] if max(r, g, b) - min(r, g, b) > 20)
share = coloured / len(px)
print(f"screenshot: {share:.1%} of the pixels show the mesh")
sys.exit(0 if share > 0.02 else 1)
PY
echo "viewer passed"
