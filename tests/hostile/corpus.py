#!/usr/bin/env python3
"""Hostile inputs to every reader and subcommand of the parasurf CLI.

Each case makes its input files in a fresh folder, puts a sentinel file where the output goes, runs the CLI under
a time limit and checks what a user is promised: no signal, an end within the limit, and either success or a
non-zero exit whose message names the input and what was wrong; a failed run leaves the existing output as it
was (exit statuses 3 and 4 write their marked results by design) and no temporary beside it.

    usage: corpus.py PARASURF [--limit SECONDS] [--only SUBSTRING] [--json FILE] [--list]

Standard library only. Prints one line per case and a summary; exits 1 when any case fails.
"""
import argparse
import gzip
import json
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SENTINEL = b"existing output: a failed run must leave this file as it is\n"

CASES = []


def case(name, args, files=None, *, expect="fail", needles=(), output="out.ply", env=None):
    """expect: 'fail' (non-zero exit naming the problem), 'ok' (exit 0 and an output), 'either'."""
    CASES.append(dict(name=name, args=args, files=files or {}, expect=expect, needles=needles, output=output,
                      env=env or {}))


def bv_patch(degree, points):
    lines = ["5", f"{degree} {degree}"] + [" ".join(f"{c:.17g}" for c in p) for p in points]
    return "\n".join(lines) + "\n"


def bspline_surface(degree, points):
    n = len(points)
    m = len(points[0])
    knots_u = [0.0] * (degree + 1) + [i / (n - degree) for i in range(1, n - degree)] + [1.0] * (degree + 1)
    knots_v = [0.0] * (degree + 1) + [i / (m - degree) for i in range(1, m - degree)] + [1.0] * (degree + 1)
    return {"degree": [degree, degree], "knots": [knots_u, knots_v], "points": points}


def plane(z, n=3, size=1.0, shift=0.0):
    return bspline_surface(2, [[[shift + size * i / (n - 1), shift + size * j / (n - 1), z] for j in range(n)]
                               for i in range(n)])


def random_surface(rng, degree):
    n = degree + 1
    return bspline_surface(degree, [[[i / degree, j / degree, rng.uniform(-0.3, 0.3)] for j in range(n)]
                                    for i in range(n)])


def grid_obj(n):
    v = "\n".join(f"v {i} {j} {(i * j) % 7}" for i in range(n) for j in range(n))
    f = "\n".join(f"f {i * n + j + 1} {i * n + j + 2} {(i + 1) * n + j + 2} {(i + 1) * n + j + 1}"
                  for i in range(n - 1) for j in range(n - 1))
    return v + "\n" + f + "\n"


TET = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


def nrrd(sizes, type_="uint8", encoding="raw", extra="", data=b""):
    head = (f"NRRD0004\ntype: {type_}\ndimension: 3\nsizes: {sizes}\nencoding: {encoding}\nendian: little\n"
            f"{extra}\n")
    return head.encode() + data


def deflated_zeros(size, head=b"", wbits=31):
    """`head` and `size` zero bytes as one gzip member (wbits 31) or zlib stream (15), made in pieces: a bomb of a
    few MB that inflates to `size`."""
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    chunk = bytes(1 << 24)
    out = [c.compress(head)]
    left = size
    while left:
        n = min(left, len(chunk))
        out.append(c.compress(chunk[:n]))
        left -= n
    out.append(c.flush())
    return b"".join(out)


def nifti(dims, datatype=2, bitpix=8, pixdim=(1, 1, 1), data=b""):
    h = bytearray(352)
    struct.pack_into("<i", h, 0, 348)
    struct.pack_into("<8h", h, 40, 3, dims[0], dims[1], dims[2], 1, 1, 1, 1)
    struct.pack_into("<hh", h, 70, datatype, bitpix)
    struct.pack_into("<8f", h, 76, 1, *pixdim, 1, 1, 1, 1)
    struct.pack_into("<f", h, 108, 352.0)
    struct.pack_into("<f", h, 112, 1.0)  # scl_slope
    h[344:348] = b"n+1\0"
    return bytes(h) + data


def build(rng):
    side = 800  # the bombs inflate to 800^3 uint8 = 512 MB: far beyond --memory 64, quick to make
    big = side ** 3
    bomb_gz = deflated_zeros(big)
    bomb_z = deflated_zeros(big, wbits=15)

    # --- threads, nesting, non-finite numbers
    case("threads far above the limit", ["isosurface", "--field", "sphere", "--size", "32", "--threads", "100000"],
         expect="ok")
    case("JSON arrays nested 10^6 deep", ["tessellate", "deep.json"],
         {"deep.json": "[" * 1000000 + "]" * 1000000}, needles=("deep.json", "nested"), output="out.ply")
    case("JSON objects nested 5*10^5 deep", ["solve", "curves", "deep.json"],
         {"deep.json": '{"a":' * 500000 + "1" + "}" * 500000}, needles=("deep.json", "nested"), output="out.json")
    case("JSON nested 2*10^5 deep inside points", ["tessellate", "deep.json"],
         {"deep.json": '{"points": ' + "[" * 200000 + "]" * 200000 + "}"}, needles=("deep.json", "nested"))
    case("hausdorff of curves at +-1e308", ["solve", "hausdorff", "c.json"],
         {"c.json": json.dumps({"curve1": {"points": [[-1e308, -1e308], [1e308, 1e308], [1e308, -1e308]]},
                                "curve2": {"points": [[-1e308, 1e308], [1e308, -1e308]]}})},
         needles=("c.json", "finite"), output="out.json")
    case("curves with subnormal coordinates", ["solve", "curves", "c.json"],
         {"c.json": json.dumps({"curve1": {"points": [[1e-310 * i, 3e-310 * ((i * 7) % 5)] for i in range(6)]},
                                "curve2": {"points": [[2e-310 * ((i * 3) % 4), 1e-310 * i] for i in range(6)]}})},
         expect="either", needles=("c.json",), output="out.json")
    case(".bv control points of 1e300", ["tessellate", "huge.bv", "-r", "4"],
         {"huge.bv": "4\n1\n0 0 0\n1 0 0\n0 1 0\n1e300 1e300 1e300\n"}, needles=("huge.bv", "finite"))
    case("NRRD spacings of 1e308", ["isosurface", "s.nrrd", "--level", "0.5"],
         {"s.nrrd": nrrd("4 4 4", extra="spacings: 1e308 1e308 1e308\n", data=bytes(range(64)))},
         needles=("s.nrrd",))
    case("volume near the float maximum", ["isosurface", "v.nrrd"],
         {"v.nrrd": nrrd("4 4 4", "float", data=struct.pack("<64f", *[3e38 if (i * 5) % 3 else -3e38
                                                                        for i in range(64)]))},
         expect="either", needles=("v.nrrd",))
    case("edit displacements of 1e308", ["ffd", "tet.obj", "--edits", "e.json"],
         {"tet.obj": TET, "e.json": json.dumps({"moves": [{"index": [1, 1, 1], "displacement": [1e308, 0, 0]}]})},
         needles=("e.json",))
    case("NaN level", ["isosurface", "--field", "sphere", "--level", "nan"], needles=("level",))

    # --- sizes: refused before the work, with the limit
    case("ffd of a 40k-face mesh at 256 subdivisions", ["ffd", "grid.obj", "--subdivisions", "256"],
         {"grid.obj": grid_obj(200)}, needles=("subdivisions",))
    case("ffd lattice of 4096 points per axis", ["ffd", "tet.obj", "--lattice", "4096"], {"tet.obj": TET},
         needles=("lattice",))
    case("ffd lattice of 1000 points per axis", ["ffd", "tet.obj", "--lattice", "1000"], {"tet.obj": TET},
         needles=("lattice",))
    case("3,000 direct-manipulation targets", ["ffd", "tet.obj", "--edits", "t.json"],
         {"tet.obj": TET, "t.json": json.dumps({"targets": [
             {"point": [0.1 + 0.2 * rng.random(), 0.1 + 0.2 * rng.random(), 0.1 + 0.2 * rng.random()],
              "target": [0.2, 0.2, 0.2]} for _ in range(3000)]})}, expect="either", needles=("t.json",))
    case("30,000 direct-manipulation targets", ["ffd", "tet.obj", "--edits", "t.json"],
         {"tet.obj": TET, "t.json": json.dumps({"targets": [
             {"point": [0.1 + 0.2 * rng.random(), 0.1 + 0.2 * rng.random(), 0.1 + 0.2 * rng.random()],
              "target": [0.2, 0.2, 0.2]} for _ in range(30000)]})}, needles=("t.json", "targets"))
    case("an OBJ face of 100,000 corners", ["ffd", "poly.obj"],
         {"poly.obj": "".join(f"v {i % 97} {i % 89} {i % 83}\n" for i in range(100000)) +
          "f " + " ".join(str(i + 1) for i in range(100000)) + "\n"}, needles=("poly.obj",))
    case("5,000 levels in one run", ["isosurface", "--field", "sphere", "--size", "32", "--level",
                                     ",".join(f"{0.01 + i * 1e-4:.5f}" for i in range(5000))],
         expect="either", needles=("level",))
    # Twenty patches: 5.4e9 vertices need 480 GiB, refused at once on any machine (one patch's 13 GiB fits a
    # large host, where the run is legitimate and long).
    case("twenty degree-32 patches at resolution 16384", ["tessellate", "d32.bv", "-r", "16384"],
         {"d32.bv": "".join(bv_patch(32, [[i / 32 + k, j / 32, rng.uniform(-0.1, 0.1)] for i in range(33)
                                          for j in range(33)]) for k in range(20))},
         needles=("resolution",))
    case("surface grid of 65536^2 in double", ["surface", "--resolution", "65536", "--precision", "double"],
         needles=("resolution",))
    case("solver B-spline degree 2*10^8 without knots", ["solve", "curves", "c.json"],
         {"c.json": json.dumps({"curve1": {"degree": 200000000, "points": [[0, 0], [1, 1]]},
                                "curve2": {"points": [[0, 1], [1, 0]]}})}, needles=("c.json", "degree"),
         output="out.json")

    case("curve batch whose pairs are not a list", ["solve", "curves", "p.json"], {"p.json": json.dumps({"pairs": 5})},
         needles=("p.json", "pairs"), output="out.json")
    case("curve batch with a B-spline pair", ["solve", "curves", "p.json"],
         {"p.json": json.dumps({"pairs": [{"curve1": {"degree": 1, "knots": [0, 0, 1, 1], "points": [[0, 0], [1, 1]]},
                                           "curve2": {"points": [[0, 1], [1, 0]]}}]})},
         needles=("p.json", "pairs[0]"), output="out.json")

    # --- unbounded solver runs: refused or stopped early with the reason
    case("ssi of two coplanar surfaces at resolution 1e-6", ["solve", "ssi", "s.json", "--resolution", "1e-6"],
         {"s.json": json.dumps({"surface1": plane(0.0), "surface2": plane(0.0, shift=0.25)})},
         expect="either", needles=("s.json",), output="out.json")
    case("ssi of two degree-32 surfaces", ["solve", "ssi", "s.json"],
         {"s.json": json.dumps({"surface1": random_surface(rng, 32), "surface2": random_surface(rng, 32)})},
         expect="either", needles=("s.json",), output="out.json")
    case("bisector at resolution 1e-12", ["solve", "bisector", "c.json", "--resolution", "1e-12"],
         {"c.json": json.dumps({"curve1": {"points": [[0, 0], [0.5, 1], [1, 0]]},
                                "curve2": {"points": [[0, 2], [0.5, 1.2], [1, 2]]}})},
         expect="either", needles=("resolution",), output="out.json")
    case("surface bisector of identical planes", ["solve", "surface-bisector", "s.json"],
         {"s.json": json.dumps({"surface1": plane(0.0), "surface2": plane(0.0)})},
         expect="either", needles=("s.json",), output="out.json")
    case("contacts of surfaces that coincide at all times", ["solve", "contacts", "m.json"],
         {"m.json": json.dumps({"moving": plane(0.0), "fixed": plane(0.0),
                                "motion": {"degree": 1, "knots": [0, 0, 1, 1],
                                           "points": [[1, 0, 0, 0], [1, 0, 0, 0]]}})},
         expect="either", needles=("m.json",), output="out.json")

    curved = random_surface(rng, 3)
    rows = curved["points"]  # a knot inserted at 1/2 along u: the same surface in two pieces
    cut = dict(curved, knots=[[0.0] * 4 + [0.5] + [1.0] * 4, curved["knots"][1]],
               points=[rows[0]] + [[[(a + b) / 2 for a, b in zip(rows[i][j], rows[i + 1][j])]
                                    for j in range(len(rows[0]))] for i in range(3)] + [rows[3]])
    case("contacts of a curved surface and its copy with a knot more, at rest", ["solve", "contacts", "m.json"],
         {"m.json": json.dumps({"moving": cut, "fixed": curved,
                                "motion": {"degree": 1, "knots": [0, 0, 1, 1],
                                           "points": [[1, 0, 0, 0], [1, 0, 0, 0]]}})},
         expect="ok", output="out.json")

    # --- lying headers and overflowing products
    case("MetaImage DimSize 1e12 with HeaderSize -1", ["isosurface", "h.mhd", "--level", "1"],
         {"h.mhd": "ObjectType = Image\nNDims = 3\nDimSize = 1e12 1e12 1e12\nElementType = MET_UCHAR\n"
                   "HeaderSize = -1\nElementDataFile = LOCAL\n"}, needles=("h.mhd",))
    case("NRRD sizes 10^12 with byte skip -1", ["isosurface", "h.nrrd", "--level", "1"],
         {"h.nrrd": nrrd("1000000000000 1000000000000 1000000000000", extra="byte skip: -1\n")},
         needles=("h.nrrd",))
    case("NRRD sizes 2^21 each (2^63 bytes)", ["isosurface", "h.nrrd", "--level", "1"],
         {"h.nrrd": nrrd("2097152 2097152 2097152")}, needles=("h.nrrd",))
    case("NIfTI dims 32767^3 with 4 bytes of data", ["isosurface", "h.nii", "--level", "1"],
         {"h.nii": nifti((32767, 32767, 32767), data=b"\0\0\0\0")}, needles=("h.nii",))
    case("NIfTI with a negative dimension", ["isosurface", "n.nii", "--level", "1"],
         {"n.nii": nifti((-4, 4, 4), data=bytes(64))}, needles=("n.nii",))
    case("truncated NIfTI header", ["isosurface", "t.nii"], {"t.nii": nifti((4, 4, 4))[:200]},
         needles=("t.nii",))
    case("VTK legacy with a lying point count", ["isosurface", "l.vtk", "--level", "1"],
         {"l.vtk": "# vtk DataFile Version 3.0\nx\nASCII\nDATASET STRUCTURED_POINTS\nDIMENSIONS 100000 100000 100000\n"
                   "SPACING 1 1 1\nORIGIN 0 0 0\nPOINT_DATA 1000000000000000\nSCALARS s float 1\n"
                   "LOOKUP_TABLE default\n1 2 3\n"}, needles=("l.vtk",))
    case("VTI extent of 10^12 points", ["isosurface", "h.vti", "--level", "1"],
         {"h.vti": '<?xml version="1.0"?><VTKFile type="ImageData" version="1.0" byte_order="LittleEndian">'
                   '<ImageData WholeExtent="0 999999 0 999999 0 999999" Origin="0 0 0" Spacing="1 1 1">'
                   '<Piece Extent="0 999999 0 999999 0 999999"><PointData Scalars="s">'
                   '<DataArray type="Float32" Name="s" format="ascii">1 2 3</DataArray></PointData>'
                   '</Piece></ImageData></VTKFile>'}, needles=("h.vti",))
    case("raw file smaller than its dims", ["isosurface", "r.raw", "--raw-dims", "64x64x64", "--raw-type", "float32"],
         {"r.raw": bytes(1000)}, needles=("r.raw",))
    case("raw dims whose product overflows", ["isosurface", "r.raw", "--raw-dims",
                                              "4294967296x4294967296x4294967296", "--raw-type", "float64"],
         {"r.raw": bytes(1000)}, needles=("raw",))
    case(".bv with a patch count of 2^62", ["tessellate", "n.bv"], {"n.bv": "1\n4611686018427387904\n0 0 0\n"},
         needles=("n.bv",))
    case(".bv degree 10^9", ["tessellate", "d.bv"], {"d.bv": "5\n1000000000 1000000000\n0 0 0\n"},
         needles=("d.bv",))
    case("PLY with 10^15 vertices declared", ["ffd", "h.ply"],
         {"h.ply": b"ply\nformat binary_little_endian 1.0\nelement vertex 1000000000000000\nproperty float x\n"
                   b"property float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\n"
                   b"end_header\n" + bytes(64)}, needles=("h.ply",))
    case("STL with 2^31 triangles declared", ["ffd", "h.stl"],
         {"h.stl": bytes(80) + struct.pack("<I", 2 ** 31) + bytes(100)}, needles=("h.stl",))
    case("OBJ with an index past 2^63", ["ffd", "i.obj"],
         {"i.obj": "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 99999999999999999999999\n"}, needles=("i.obj",))
    case("lattice padding of 1e20 (every face degenerate in its parameters)", ["ffd", "m.obj", "--lattice-file", "l.json"],
         {"m.obj": TET, "l.json": '{"count": [5, 4, 4], "degree": [3, 2, 1], "padding": 1e20}'},
         needles=("l.json", "degenerate"))

    # --- decompression bombs: valid data, but bounded by --memory or refused with the limit
    case("NIfTI .nii.gz inflating to 512 MB under --memory 64", ["isosurface", "b.nii.gz", "--memory", "64"],
         {"b.nii.gz": deflated_zeros(big, head=nifti((side, side, side)))}, expect="either", needles=("b.nii.gz",))
    case("NRRD gzip inflating to 512 MB under --memory 64", ["isosurface", "b.nrrd", "--memory", "64"],
         {"b.nrrd": nrrd(f"{side} {side} {side}", encoding="gzip") + bomb_gz}, expect="either",
         needles=("b.nrrd",))
    case("MetaImage zlib inflating to 512 MB under --memory 64", ["isosurface", "b.mha", "--memory", "64"],
         {"b.mha": (f"ObjectType = Image\nNDims = 3\nDimSize = {side} {side} {side}\nElementType = MET_UCHAR\n"
                    f"CompressedData = True\nCompressedDataSize = {len(bomb_z)}\nElementDataFile = LOCAL\n").encode()
          + bomb_z}, expect="either", needles=("b.mha",))
    case("NIfTI .nii.gz in two gzip members", ["isosurface", "m.nii.gz", "--level", "100"],
         {"m.nii.gz": gzip.compress(nifti((8, 8, 8))) + gzip.compress(bytes((i * 37) % 256 for i in range(512)))},
         expect="ok")
    case("NRRD gzip whose data is not gzip", ["isosurface", "g.nrrd"],
         {"g.nrrd": nrrd("4 4 4", encoding="gzip", data=b"this is not gzip at all" * 10)}, needles=("g.nrrd",))
    case("NRRD gzip truncated", ["isosurface", "g.nrrd"],
         {"g.nrrd": nrrd("64 64 64", encoding="gzip", data=gzip.compress(bytes(range(256)) * 1024)[:300])},
         needles=("g.nrrd",))

    # --- endless headers (a link to /dev/zero) and special files
    for name, cmd in (("z.nrrd", "isosurface"), ("z.mhd", "isosurface"), ("z.vtk", "isosurface"),
                      ("z.vti", "isosurface"), ("z.nii", "isosurface"), ("z.bv", "tessellate"),
                      ("z.json", "tessellate"), ("z.obj", "ffd"), ("z.ply", "ffd"), ("z.stl", "ffd")):
        case(f"{name} linked to /dev/zero", [cmd, name], {name: ("link", "/dev/zero")}, needles=(name,))
    case("input is a directory", ["isosurface", "adir.nrrd"], {"adir.nrrd": ("dir",)}, needles=("adir.nrrd",))
    case("empty file", ["tessellate", "e.bv"], {"e.bv": ""}, needles=("e.bv",))

    # --- outputs
    case("output is a directory", ["isosurface", "--field", "sphere", "--size", "8"], {"out.ply": ("dir",)},
         needles=("out.ply",))
    case("output in a folder that does not exist", ["isosurface", "--field", "sphere", "--size", "8", "-o",
                                                    "no/such/folder/out.ply"], needles=("no/such/folder",),
         output=None)
    case("a link planted at the old temporary name", ["isosurface", "--field", "sphere", "--size", "8"],
         {"victim.txt": "victim\n", "out.ply.partial": ("link", "victim.txt")}, expect="ok")
    case("output linked to a full disk (/dev/full)", ["isosurface", "--field", "sphere", "--size", "16"],
         {"out.ply": ("link", "/dev/full")}, needles=("out.ply",))
    case("JSON report linked to a full disk (/dev/full)", ["solve", "curves", "c.json"],
         {"c.json": json.dumps({"curve1": {"points": [[0, 0], [1, 1]]}, "curve2": {"points": [[0, 1], [1, 0]]}}),
          "out.json": ("link", "/dev/full")}, needles=("out.json",), output="out.json")
    case("unknown output format", ["isosurface", "--field", "sphere", "--size", "8", "-o", "out.xyz"],
         needles=("out.xyz",), output=None)
    mutate_cases(rng)
    return CASES


def seeds(rng):
    """One small valid file of every format each subcommand reads: (name, subcommand and options, bytes)."""
    vol = bytes((i * 37 + 11) % 251 for i in range(6 * 5 * 4))
    fvol = struct.pack("<120f", *[((i % 6) - 2.5) ** 2 + ((i // 6 % 5) - 2) ** 2 + ((i // 30) - 1.5) ** 2 - 4
                                   for i in range(120)])
    vtk_head = ("# vtk DataFile Version 3.0\nseed\n{mode}\nDATASET STRUCTURED_POINTS\nDIMENSIONS 6 5 4\n"
                "SPACING 1 1 1\nORIGIN 0 0 0\nPOINT_DATA 120\nSCALARS s float 1\nLOOKUP_TABLE default\n")

    def vti(fmt):
        body = struct.pack("<I", len(fvol)) + fvol
        if fmt == "binary":
            import base64
            array = f'<DataArray type="Float32" Name="s" format="binary">{base64.b64encode(body).decode()}</DataArray>'
            tail = ""
        elif fmt == "ascii":
            vals = " ".join(repr(v) for v in struct.unpack("<120f", fvol))
            array = f'<DataArray type="Float32" Name="s" format="ascii">{vals}</DataArray>'
            tail = ""
        else:
            array = '<DataArray type="Float32" Name="s" format="appended" offset="0"/>'
            tail = None
        head = ('<?xml version="1.0"?>\n<VTKFile type="ImageData" version="1.0" byte_order="LittleEndian" '
                'header_type="UInt32">\n<ImageData WholeExtent="0 5 0 4 0 3" Origin="0 0 0" Spacing="1 1 1">\n'
                f'<Piece Extent="0 5 0 4 0 3"><PointData Scalars="s">{array}</PointData></Piece>\n</ImageData>\n')
        if tail is None:
            return head.encode() + b'<AppendedData encoding="raw">_' + body + b"</AppendedData>\n</VTKFile>\n"
        return (head + "</VTKFile>\n").encode()

    quad = "5\n3 3\n" + "".join(f"{i / 3} {j / 3} {0.2 * ((i * j) % 3)}\n" for i in range(4) for j in range(4))
    bpt = "1\n3 3\n" + "".join(f"{i / 3} {j / 3} {0.1 * (i + j)}\n" for i in range(4) for j in range(4))
    spline = json.dumps(bspline_surface(3, [[[i / 4, j / 4, 0.1 * ((i + j) % 3)] for j in range(5)] for i in range(5)]))
    tri = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
    faces = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    ply_ascii = ("ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\nproperty float z\n"
                 "element face 4\nproperty list uchar int vertex_indices\nend_header\n" +
                 "".join("%g %g %g\n" % v for v in tri) + "".join("3 %d %d %d\n" % f for f in faces))
    ply_bin = (b"ply\nformat binary_little_endian 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
               b"property float z\nelement face 4\nproperty list uchar int vertex_indices\nend_header\n" +
               b"".join(struct.pack("<3f", *v) for v in tri) + b"".join(struct.pack("<B3i", 3, *f) for f in faces))
    off = "OFF\n4 4 0\n" + "".join("%g %g %g\n" % v for v in tri) + "".join("3 %d %d %d\n" % f for f in faces)
    stl_ascii = "solid s\n" + "".join(
        "facet normal 0 0 0\nouter loop\n" + "".join("vertex %g %g %g\n" % tri[k] for k in f) + "endloop\nendfacet\n"
        for f in faces) + "endsolid s\n"
    stl_bin = bytes(80) + struct.pack("<I", 4) + b"".join(
        struct.pack("<12fH", 0, 0, 0, *[c for k in f for c in tri[k]], 0) for f in faces)
    curves = json.dumps({"curve1": {"points": [[0, 0], [0.5, 1], [1, 0]]},
                         "curve2": {"degree": 2, "knots": [0, 0, 0, 0.5, 1, 1, 1],
                                    "points": [[0, 0.8], [0.3, -0.2], [0.7, 1.0], [1, 0.2]]}})
    surfaces = json.dumps({"surface1": plane(0.0), "surface2": random_surface(rng, 2)})
    edits = json.dumps({"moves": [{"index": [1, 1, 1], "displacement": [0.1, 0, 0]}],
                        "targets": [{"point": [0.3, 0.3, 0.3], "target": [0.32, 0.3, 0.3]}]})
    lattice = json.dumps({"count": [5, 4, 4], "degree": [3, 2, 1], "padding": 0.1})
    iso = ["isosurface"]
    return [
        ("s.nrrd", iso, nrrd("6 5 4", data=vol)),
        ("a.nrrd", iso, nrrd("6 5 4", encoding="ascii", data=" ".join(map(str, vol)).encode())),
        ("g.nrrd", iso, nrrd("6 5 4", "float", encoding="gzip", data=gzip.compress(fvol))),
        ("s.mha", iso, b"ObjectType = Image\nNDims = 3\nDimSize = 6 5 4\nElementSpacing = 1 1 2\n"
                       b"ElementType = MET_FLOAT\nElementDataFile = LOCAL\n" + fvol),
        ("z.mha", iso, (f"ObjectType = Image\nNDims = 3\nDimSize = 6 5 4\nElementType = MET_FLOAT\n"
                        f"CompressedData = True\nCompressedDataSize = {len(zlib.compress(fvol))}\n"
                        f"ElementDataFile = LOCAL\n").encode() + zlib.compress(fvol)),
        ("b.vtk", iso, vtk_head.format(mode="BINARY").encode() + struct.pack(">120f", *struct.unpack("<120f", fvol))),
        ("a.vtk", iso, (vtk_head.format(mode="ASCII") + " ".join(repr(v) for v in struct.unpack("<120f", fvol))).encode()),
        ("b.vti", iso, vti("binary")),
        ("a.vti", iso, vti("ascii")),
        ("p.vti", iso, vti("appended")),
        ("s.nii", iso, nifti((6, 5, 4), datatype=16, bitpix=32, data=fvol)),
        ("s.nii.gz", iso, gzip.compress(nifti((6, 5, 4), datatype=16, bitpix=32, data=fvol))),
        ("q.bv", ["tessellate", "-r", "4"], quad.encode()),
        ("t.bpt", ["tessellate", "-r", "4"], bpt.encode()),
        ("b.json", ["tessellate", "-r", "4"], spline.encode()),
        ("m.obj", ["ffd", "-m", "2"], TET.encode()),
        ("a.ply", ["ffd", "-m", "2"], ply_ascii.encode()),
        ("b.ply", ["ffd", "-m", "2"], ply_bin),
        ("m.off", ["ffd", "-m", "2"], off.encode()),
        ("a.stl", ["ffd", "-m", "2"], stl_ascii.encode()),
        ("b.stl", ["ffd", "-m", "2"], stl_bin),
        ("c.json", ["solve", "curves"], curves.encode()),
        ("h.json", ["solve", "hausdorff"], curves.encode()),
        ("s.json", ["solve", "ssi"], surfaces.encode()),
        ("e.json", ["ffd", "m.obj", "--edits"], edits.encode()),
        ("l.json", ["ffd", "m.obj", "--lattice-file"], lattice.encode()),
    ]


def mutate_cases(rng):
    """Every seed as it is (it must succeed), truncated, with a number made hostile and with bytes flipped."""
    import re
    number = re.compile(rb"(?<![A-Za-z_])-?\d+(\.\d+)?([eE][-+]?\d+)?")
    hostile = [b"nan", b"inf", b"-1e308", b"1e400", b"99999999999999999999", b"-7", b"0"]
    for name, command, data in seeds(rng):
        extra = {"m.obj": TET} if "m.obj" in command else {}
        run = command + [name]
        output = "out.json" if command[0] == "solve" else "out.ply"
        case(f"{name}: the seed itself", run, {name: data, **extra}, expect="ok", output=output)
        for frac in (0.25, 0.5, 0.9):
            cut = data[:max(1, int(len(data) * frac))]
            case(f"{name}: truncated to {int(frac * 100)} %", run, {name: cut, **extra}, expect="either",
                 needles=(name,), output=output)
        spans = [m.span() for m in number.finditer(data[:4096])]
        for k in range(3):
            if not spans:
                break
            a, b = spans[rng.randrange(len(spans))]
            bad = hostile[rng.randrange(len(hostile))]
            case(f"{name}: number {data[a:b][:20]!r} at byte {a} made {bad.decode()}", run,
                 {name: data[:a] + bad + data[b:], **extra}, expect="either", needles=(name,), output=output)
        for k in range(3):
            flipped = bytearray(data)
            for _ in range(1 + k * 3):
                at = rng.randrange(len(flipped))
                flipped[at] = rng.randrange(256)
            case(f"{name}: bytes flipped (variant {k})", run, {name: bytes(flipped), **extra}, expect="either",
                 needles=(name,), output=output)


def make_files(folder, files):
    for name, content in files.items():
        path = os.path.join(folder, name)
        if isinstance(content, tuple):
            if content[0] == "link":
                os.symlink(content[1], path)
            elif content[0] == "dir":
                os.mkdir(path)
            continue
        with open(path, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)


def run_case(exe, c, limit, root):
    folder = tempfile.mkdtemp(prefix="case-", dir=root)
    make_files(folder, c["files"])
    args = list(c["args"])
    out = c["output"]
    if out:
        if not os.path.lexists(os.path.join(folder, out)):
            with open(os.path.join(folder, out), "wb") as f:
                f.write(SENTINEL)
        flag = "--json" if c["args"][0] == "solve" else "-o"
        args += [flag, out]
    before = set(os.listdir(folder))
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", **c["env"])
    t0 = time.monotonic()
    try:
        p = subprocess.run([exe] + args, cwd=folder, capture_output=True, timeout=limit, env=env)
        rc, text = p.returncode, (p.stdout + p.stderr).decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        rc, text = None, ((e.stdout or b"") + (e.stderr or b"")).decode(errors="replace")
    seconds = time.monotonic() - t0
    problems = []
    if rc is None:
        problems.append(f"did not end within {limit:g} s")
    elif rc < 0:
        problems.append(f"killed by signal {signal.Signals(-rc).name}")
    elif rc >= 128:
        problems.append(f"exit status {rc} (a signal?)")
    elif rc == 0 and c["expect"] == "fail":
        problems.append("exit 0 where a refusal was expected")
    elif rc != 0 and c["expect"] == "ok":
        problems.append(f"exit {rc} where success was expected")
    if rc not in (None, 0):
        low = text.lower()
        missing = [n for n in c["needles"] if n.lower() not in low]
        if missing:
            problems.append(f"message does not name {missing}")
        # 3 (no surface: an empty mesh) and 4 (a solve stopped at a limit: the partial result, marked) write
        # their output by design.
        if rc not in (3, 4) and out and os.path.isfile(os.path.join(folder, out)) and \
                not os.path.islink(os.path.join(folder, out)):
            with open(os.path.join(folder, out), "rb") as f:
                if f.read() != SENTINEL:
                    problems.append("the existing output was changed by a failed run")
    for name, content in c["files"].items():
        if isinstance(content, tuple) and content[0] == "link" and not os.path.islink(os.path.join(folder, name)):
            problems.append(f"the link {name} was replaced")
    if "victim.txt" in c["files"]:
        with open(os.path.join(folder, "victim.txt")) as f:
            if f.read() != "victim\n":
                problems.append("a planted link's target was written")
    left = [n for n in set(os.listdir(folder)) - before if "parasurf-" in n or n.endswith(".partial")]
    if left:
        problems.append(f"temporaries left behind: {left}")
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return dict(name=c["name"], rc=rc, seconds=round(seconds, 3), problems=problems, message=first[:300])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parasurf")
    ap.add_argument("--limit", type=float, default=10.0, help="seconds each case may take (default 10)")
    ap.add_argument("--only", help="run the cases whose name holds this text")
    ap.add_argument("--json", help="write every case's outcome here")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    seed = int(os.environ.get("PARASURF_TEST_SEED", random.SystemRandom().randrange(2 ** 32)))
    print(f"hostile corpus: seed {seed} (set PARASURF_TEST_SEED to reproduce)", flush=True)
    cases = build(random.Random(seed))
    if a.only:
        cases = [c for c in cases if a.only.lower() in c["name"].lower()]
    if a.list:
        for c in cases:
            print(c["name"])
        return 0
    exe = os.path.abspath(a.parasurf)
    results = []
    with tempfile.TemporaryDirectory(prefix="parasurf-corpus-") as root:
        for c in cases:
            r = run_case(exe, c, a.limit, root)
            results.append(r)
            status = "ok  " if not r["problems"] else "FAIL"
            print(f"{status} {r['seconds']:6.2f} s  rc={r['rc']}  {r['name']}" +
                  ("" if not r["problems"] else "  -- " + "; ".join(r["problems"]) + f"  [{r['message']}]"),
                  flush=True)
    failed = [r for r in results if r["problems"]]
    slowest = max(results, key=lambda r: r["seconds"]) if results else None
    print(f"{len(results)} cases, {len(failed)} failed; no signal: "
          f"{all(r['rc'] is not None and r['rc'] >= 0 for r in results)}; slowest "
          f"{slowest['seconds'] if slowest else 0:.2f} s ({slowest['name'] if slowest else '-'})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seed": seed, "limit_seconds": a.limit, "cases": results}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
