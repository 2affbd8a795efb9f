"""File formats users bring and take away: VTK XML ImageData volumes in every encoding VTK writes, and meshes
written as VTK XML, STL and PLY, read back by meshio where it is installed."""
import base64
import os
import struct
import subprocess
import zlib

import numpy as np
import pytest

import parasurf

TYPES = {np.dtype("uint8"): "UInt8", np.dtype("int16"): "Int16", np.dtype("float32"): "Float32",
         np.dtype("float64"): "Float64", np.dtype("uint16"): "UInt16", np.dtype("int32"): "Int32"}


def encode(data, header, compressed, big, block=1000):
    """The bytes VTK stores for one array: a size word, or its compression header and zlib blocks."""
    e = ">" if big else "<"
    h = e + ("Q" if header == "UInt64" else "I")
    if not compressed:
        return struct.pack(h, len(data)), data
    blocks = [data[i:i + block] for i in range(0, len(data), block)]
    packed = [zlib.compress(b) for b in blocks]
    last = len(blocks[-1]) if len(blocks[-1]) != block else 0
    head = struct.pack(e + ("Q" if header == "UInt64" else "I") * (3 + len(blocks)), len(blocks), block, last,
                       *[len(p) for p in packed])
    return head, b"".join(packed)


def write_vti(path, volume, fmt, *, header="UInt32", compressed=False, big=False, extent0=(0, 0, 0),
              spacing=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0), extra_array=True):
    """volume is (z, y, x), VTK's x fastest; an extra array first, the active one named by Scalars."""
    nz, ny, nx = volume.shape
    ext = " ".join(f"{extent0[a]} {extent0[a] + n - 1}" for a, n in enumerate((nx, ny, nz)))
    raw = volume.astype(volume.dtype.newbyteorder(">" if big else "<")).tobytes()
    head, body = encode(raw, header, compressed, big)
    attrs = f'type="{TYPES[volume.dtype]}" Name="density" NumberOfComponents="1"'
    appended = b""
    decoy = ""
    if extra_array:  # a three-component array before the active one: the reader must pick "density"
        decoy = '<DataArray type="Float32" Name="gradient" NumberOfComponents="3" format="ascii">0 0 0</DataArray>'
    if fmt == "ascii":
        values = " ".join(repr(v) for v in volume.ravel().tolist())
        array = f'<DataArray {attrs} format="ascii">\n{values}\n</DataArray>'
    elif fmt == "binary":
        text = (base64.b64encode(head) + base64.b64encode(body)).decode() if compressed else \
            base64.b64encode(head + body).decode()
        array = f'<DataArray {attrs} format="binary">\n{text}\n</DataArray>'
    elif fmt in ("appended-raw", "appended-base64"):
        pad = b"\x00" * 5  # something stored before the array, so that its offset is not 0
        stored = head + body
        if fmt == "appended-base64":
            pad = base64.b64encode(b"\x01\x02\x03")
            stored = base64.b64encode(head) + base64.b64encode(body) if compressed else base64.b64encode(head + body)
        array = f'<DataArray {attrs} format="appended" offset="{len(pad)}"/>'
        appended = pad + stored
    xml = ('<?xml version="1.0"?>\n'
           f'<VTKFile type="ImageData" version="1.0" byte_order="{"BigEndian" if big else "LittleEndian"}" '
           f'header_type="{header}"' + (' compressor="vtkZLibDataCompressor"' if compressed else "") + '>\n'
           f'  <ImageData WholeExtent="{ext}" Origin="{" ".join(map(str, origin))}" '
           f'Spacing="{" ".join(map(str, spacing))}">\n'
           f'    <Piece Extent="{ext}">\n      <PointData Scalars="density">\n        {decoy}\n        {array}\n'
           '      </PointData>\n      <CellData/>\n    </Piece>\n  </ImageData>\n')
    with open(path, "wb") as f:
        f.write(xml.encode())
        if fmt.startswith("appended"):
            enc = "raw" if fmt == "appended-raw" else "base64"
            f.write(f'  <AppendedData encoding="{enc}">\n   _'.encode() + appended + b"\n  </AppendedData>\n")
        f.write(b"</VTKFile>\n")


CASES = [(fmt, header, compressed, big)
         for fmt in ("binary", "appended-raw", "appended-base64")
         for header in ("UInt32", "UInt64") for compressed in (False, True) for big in (False, True)]


@pytest.mark.parametrize("fmt,header,compressed,big", CASES + [("ascii", "UInt32", False, False)])
def test_vti_every_encoding(tmp_path, rng, fmt, header, compressed, big):
    dtype = [np.uint8, np.int16, np.float32, np.float64][rng.integers(4)]
    shape = tuple(int(n) for n in rng.integers(2, 13, size=3))
    volume = (rng.random(shape) * 100).astype(dtype)
    path = tmp_path / "v.vti"
    write_vti(path, volume, fmt, header=header, compressed=compressed, big=big, extent0=(2, -1, 3),
              spacing=(0.5, 2.0, 1.25), origin=(10.0, -4.0, 7.0))
    samples, info = parasurf.read_volume(path)
    np.testing.assert_array_equal(samples, volume.astype(np.float32))
    assert info["spacing"] == pytest.approx((1.25, 2.0, 0.5))  # (z, y, x)
    # index 0 is the extent's first index: origin + extent0 * spacing
    assert info["origin"] == pytest.approx((7.0 + 3 * 1.25, -4.0 - 1 * 2.0, 10.0 + 2 * 0.5))


def test_vti_refusals(tmp_path):
    volume = np.arange(27, dtype=np.float32).reshape(3, 3, 3)
    path = tmp_path / "v.vti"
    write_vti(path, volume, "appended-raw")
    data = path.read_bytes()
    for bad, message in [
        (data.replace(b'"0 2 0 2 0 2"', b'"0 3 0 2 0 2"'), "needs"),
        (data.replace(b'WholeExtent="0 2 0 2 0 2"', b'WholeExtent="0 3 0 2 0 2"'), "piece's extent"),
        (data.replace(b'type="ImageData"', b'type="PolyData"'), "ImageData"),
        (data.replace(b'type="Float32" Name="density"', b'type="Int64" Name="density"'), "Int64"),
        (data.replace(b'header_type="UInt32"', b'header_type="UInt64" compressor="vtkLZ4DataCompressor"'), "LZ4"),
        (data.replace(b'offset="5"', b'offset="99999999"'), "past the end"),
        (data[:len(data) - 60], "truncated"),
        (data.replace(b'WholeExtent="0 2 0 2 0 2"', b'WholeExtent="0 1e12 0 1e12 0 1e12"'), "absurd"),
    ]:
        path.write_bytes(bad)
        with pytest.raises((ValueError, OSError)) as e:
            parasurf.read_volume(path)
        assert message in str(e.value) and "v.vti" in str(e.value), str(e.value)
    write_vti(path, volume, "binary", compressed=True)
    text = path.read_text()
    start = text.index('format="binary">') + len('format="binary">') + 1
    path.write_text(text[:start + 20] + "AAAA" + text[start + 24:])  # a corrupt compressed block
    with pytest.raises((ValueError, OSError)):
        parasurf.read_volume(path)


def cli():
    path = os.environ.get("PARASURF_CLI")
    if not path:
        pytest.skip("PARASURF_CLI not set (ctest sets it)")
    return path


def test_cli_isosurface_of_a_vti_equals_the_raw_volume(tmp_path, rng):
    z, y, x = np.mgrid[-1:1:20j, -1:1:18j, -1:1:16j]
    volume = (x * x + y * y + z * z).astype(np.float32)
    write_vti(tmp_path / "ball.vti", volume, "appended-raw", compressed=True)
    volume.tofile(tmp_path / "ball.raw")
    a = subprocess.run([cli(), "isosurface", str(tmp_path / "ball.vti"), "--level", "0.5", "--device", "cpu",
                        "-o", str(tmp_path / "a.ply")], capture_output=True, text=True)
    assert a.returncode == 0, a.stderr
    b = subprocess.run([cli(), "isosurface", str(tmp_path / "ball.raw"), "--raw-dims", "16x18x20", "--raw-type",
                        "float32", "--level", "0.5", "--device", "cpu", "-o", str(tmp_path / "b.ply")],
                       capture_output=True, text=True)
    assert b.returncode == 0, b.stderr
    assert (tmp_path / "a.ply").read_bytes() == (tmp_path / "b.ply").read_bytes()


def test_cli_mesh_outputs_read_by_meshio(tmp_path):
    meshio = pytest.importorskip("meshio", reason="meshio is not installed (python3-meshio)")
    exe = cli()
    for ext in ("vtp", "vtu", "stl", "ply", "obj"):
        out = tmp_path / f"teapot.{ext}"
        r = subprocess.run([exe, "tessellate", "-r", "6", "-o", str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    verts, faces, _ = parasurf.tessellate(resolution=6)
    known = getattr(getattr(meshio, "_helpers", None), "extension_to_filetypes", {})
    for ext in ("vtp", "vtu"):
        if known and "." + ext not in known:
            continue  # an older meshio (Debian's 5.0 reads .vtu, not .vtp)
        m = meshio.read(tmp_path / f"teapot.{ext}")
        np.testing.assert_allclose(m.points, verts, atol=1e-6)
        np.testing.assert_array_equal(m.cells_dict["triangle"], faces)
        groups = m.cell_data_dict["group"]["triangle"]
        assert sorted(set(groups.tolist())) == [0, 1, 2, 3, 4, 5]  # the teapot's six parts
        assert m.point_data["Normals"].shape == verts.shape
    stl = meshio.read(tmp_path / "teapot.stl")
    assert len(stl.cells_dict["triangle"]) == len(faces)
    # A mesh of one group: a PLY with no face properties, which meshio reads.
    r = subprocess.run([exe, "isosurface", "--field", "sphere", "--size", "16", "-o", str(tmp_path / "s.ply")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    s = meshio.read(tmp_path / "s.ply")
    assert len(s.cells_dict["triangle"]) > 100 and "nx" in s.point_data


def oblique_files(tmp_path, rng):
    """One oblique volume written as NIfTI (RAS), NRRD (LPS) and MetaImage (LPS); its RAS index-to-world matrix."""
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    rotation = q * np.sign(np.linalg.det(q))
    spacing = rng.uniform(0.5, 2.0, size=3)
    origin = rng.uniform(-100, 100, size=3)
    nx, ny, nz = 5, 4, 3
    data = rng.random((nz, ny, nx)).astype(np.float32)
    jac = rotation * spacing  # column c: world step of index c (RAS)
    lps = np.diag([-1.0, -1.0, 1.0])
    h = bytearray(352)
    struct.pack_into("<i", h, 0, 348)
    struct.pack_into("<8h", h, 40, 3, nx, ny, nz, 1, 1, 1, 1)
    struct.pack_into("<hh", h, 70, 16, 32)
    struct.pack_into("<8f", h, 76, 1, *spacing, 1, 1, 1, 1)
    struct.pack_into("<f", h, 108, 352.0)
    struct.pack_into("<hh", h, 252, 0, 1)  # qform 0, sform 1
    for r in range(3):
        struct.pack_into("<4f", h, 280 + 16 * r, *jac[r], origin[r])
    h[344:348] = b"n+1\0"
    (tmp_path / "v.nii").write_bytes(bytes(h) + data.tobytes())
    jl, ol = lps @ jac, lps @ origin
    vec = lambda v: "(" + ",".join(repr(float(x)) for x in v) + ")"
    header = ("NRRD0004\ntype: float\ndimension: 3\nspace: left-posterior-superior\n"
              f"sizes: {nx} {ny} {nz}\nspace directions: {vec(jl[:, 0])} {vec(jl[:, 1])} {vec(jl[:, 2])}\n"
              f"space origin: {vec(ol)}\nencoding: raw\nendian: little\n\n")
    (tmp_path / "v.nrrd").write_bytes(header.encode() + data.tobytes())
    cosines = lps @ rotation
    mha = ("ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
           f"TransformMatrix = {' '.join(repr(float(cosines[r, c])) for c in range(3) for r in range(3))}\n"
           f"Offset = {' '.join(map(repr, map(float, ol)))}\n"
           f"ElementSpacing = {' '.join(map(repr, map(float, spacing)))}\n"
           f"DimSize = {nx} {ny} {nz}\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n")
    (tmp_path / "v.mha").write_bytes(mha.encode() + data.tobytes())
    affine = np.eye(4)
    affine[:3, :3] = jac[:, ::-1]  # array index order (z, y, x)
    affine[:3, 3] = origin
    return data, affine


def test_read_volume_affine_is_ras_for_every_format(tmp_path, rng):
    data, expected = oblique_files(tmp_path, rng)
    for name in ("v.nii", "v.nrrd", "v.mha"):
        samples, info = parasurf.read_volume(tmp_path / name)
        np.testing.assert_array_equal(samples, data)
        assert info["frame"] == "RAS", name
        # NIfTI stores its transform in float32
        np.testing.assert_allclose(info["affine"], expected, atol=1e-4, rtol=1e-5, err_msg=name)
    write_vti(tmp_path / "u.vti", data, "binary")
    assert parasurf.read_volume(tmp_path / "u.vti")[1]["frame"] == "unspecified"


@pytest.mark.parametrize("binary", [False, True])
def test_legacy_vtk_header_numbers(tmp_path, rng, binary):
    """Legacy VTK headers hold their numbers as text: read in any locale, also where a module holds its own
    libstdc++ beside numpy's (its stream number facets once crashed there)."""
    volume = (rng.random((4, 5, 6)) * 50).astype(np.float32)
    nz, ny, nx = volume.shape
    head = (f"# vtk DataFile Version 3.0\nball\n{'BINARY' if binary else 'ASCII'}\nDATASET STRUCTURED_POINTS\n"
            f"DIMENSIONS {nx} {ny} +{nz}\nSPACING 0.5 1e0 2.25\nORIGIN -1.5 +2 3e-1\n"
            f"POINT_DATA {volume.size}\nSCALARS density float 1\nLOOKUP_TABLE default\n")
    body = volume.astype(">f4").tobytes() if binary else " ".join(repr(float(v)) for v in volume.ravel()).encode()
    path = tmp_path / "v.vtk"
    path.write_bytes(head.encode() + body + b"\n")
    samples, info = parasurf.read_volume(path)
    np.testing.assert_array_equal(samples, volume)
    assert info["spacing"] == pytest.approx((2.25, 1.0, 0.5))
    assert info["origin"] == pytest.approx((0.3, 2.0, -1.5))
    path.write_bytes(head.replace("SPACING 0.5", "SPACING 0,5").encode() + body)
    with pytest.raises(ValueError, match="SPACING"):
        parasurf.read_volume(path)


def test_write_mesh_round_trip_and_refusals(tmp_path, rng):
    verts, faces, normals = parasurf.tessellate(resolution=4)
    groups = np.arange(len(faces), dtype=np.int32) % 3
    path = tmp_path / "t.ply"
    parasurf.write_mesh(path, verts, faces, normals, groups=groups, group_names=["a", "b", "c"])
    data = path.read_bytes()
    head, body = data.split(b"end_header\n", 1)
    assert b"comment group 2 c" in head and b"property int group" in head
    nv, nf = len(verts), len(faces)
    vrec = np.frombuffer(body[:nv * 24], dtype="<f4").reshape(nv, 6)
    np.testing.assert_array_equal(vrec[:, :3], verts.astype(np.float32))
    np.testing.assert_array_equal(vrec[:, 3:], normals.astype(np.float32))
    frec = np.frombuffer(body[nv * 24:], dtype=[("n", "u1"), ("v", "<u4", 3), ("g", "<i4")])
    assert len(frec) == nf and (frec["n"] == 3).all()
    np.testing.assert_array_equal(frec["v"], faces)
    np.testing.assert_array_equal(frec["g"], groups)
    meshio = pytest.importorskip("meshio", reason="meshio is not installed (python3-meshio)")
    parasurf.write_mesh(tmp_path / "t.vtu", verts, faces, values=verts[:, 2])
    m = meshio.read(tmp_path / "t.vtu")
    np.testing.assert_array_equal(m.cells_dict["triangle"], faces)
    np.testing.assert_allclose(m.point_data["value"], verts[:, 2], rtol=1e-6)
    bad = faces.copy()
    bad[3, 1] = nv
    for args, message in [((verts, bad), "refers to vertex"), ((np.full_like(verts, np.nan), faces), "not finite"),
                          ((verts[:, :2], faces), "shape (V, 3)")]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parasurf.write_mesh(tmp_path / "x.ply", *args)
    with pytest.raises(ValueError, match="mesh format"):
        parasurf.write_mesh(tmp_path / "x.xyz", verts, faces)
    assert not (tmp_path / "x.ply").exists() and not (tmp_path / "x.xyz").exists()


def test_text_ply_keeps_every_bit_and_its_groups_reach_meshio(tmp_path, rng):
    """meshio's binary PLY reader cannot take a face property (it reads them column-wise); the text PLY carries the
    groups to it. Numbers are written shortest-exact: they read back bit for bit."""
    verts, faces, normals = parasurf.tessellate(resolution=5)
    verts = (verts * rng.uniform(1e-3, 1e4) + rng.uniform(-1e5, 1e5, 3)).astype(np.float32)
    groups = rng.integers(-1, 4, len(faces)).astype(np.int32)
    values = rng.standard_normal(len(verts)).astype(np.float32)
    path = tmp_path / "t.ply"
    parasurf.write_mesh(path, verts, faces, normals, values=values, groups=groups, group_names=list("abcd"),
                        format="ply-ascii")
    head, body = path.read_text().split("end_header\n", 1)
    assert "format ascii 1.0" in head and "comment group 3 d" in head
    lines = body.splitlines()
    nv = len(verts)
    vrec = np.array([[np.float32(x) for x in line.split()] for line in lines[:nv]], dtype=np.float32)
    np.testing.assert_array_equal(vrec[:, :3], verts)
    np.testing.assert_array_equal(vrec[:, 3:6], normals.astype(np.float32))
    np.testing.assert_array_equal(vrec[:, 6], values)
    frec = np.array([[int(x) for x in line.split()] for line in lines[nv:]])
    assert len(frec) == len(faces) and (frec[:, 0] == 3).all()
    np.testing.assert_array_equal(frec[:, 1:4], faces)
    np.testing.assert_array_equal(frec[:, 4], groups)
    with pytest.raises(ValueError, match="names the ply format, not obj"):
        parasurf.write_mesh(tmp_path / "x.ply", verts, faces, format="obj")
    with pytest.raises(ValueError, match="unknown mesh format"):
        parasurf.write_mesh(tmp_path / "x.ply", verts, faces, format="off")
    parasurf.write_mesh(tmp_path / "no-extension", verts, faces, format="stl")
    assert (tmp_path / "no-extension").read_bytes()[80:84] == np.uint32(len(faces)).tobytes()
    meshio = pytest.importorskip("meshio", reason="meshio is not installed (python3-meshio)")
    m = meshio.read(path)
    np.testing.assert_array_equal(m.points, verts)
    np.testing.assert_array_equal(m.cells_dict["triangle"], faces)
    np.testing.assert_array_equal(np.concatenate(m.cell_data["group"]), groups)


def test_binary_ply_with_groups_reaches_open3d(tmp_path):
    o3d = pytest.importorskip("open3d", reason="open3d is not installed")
    verts, faces, normals = parasurf.tessellate(resolution=4)
    path = tmp_path / "t.ply"
    parasurf.write_mesh(path, verts, faces, normals, groups=np.arange(len(faces), dtype=np.int32) % 3,
                        group_names=["a", "b", "c"])
    m = o3d.io.read_triangle_mesh(str(path))
    np.testing.assert_array_equal(np.asarray(m.vertices), verts.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(m.triangles), faces)
    np.testing.assert_array_equal(np.asarray(m.vertex_normals), normals.astype(np.float32))


def test_type_stubs_match_the_module():
    import ast
    import inspect
    import pathlib
    package = pathlib.Path(parasurf.__file__).parent
    assert (package / "py.typed").exists()
    stub = ast.parse((package / "__init__.pyi").read_text())
    stubbed = {n.name: n for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for name in parasurf.__all__:
        if name == "__version__":
            continue
        assert name in stubbed, f"{name} has no stub"
        obj = getattr(parasurf, name)
        if inspect.isfunction(obj):
            args = stubbed[name].args
            names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
            assert names == list(inspect.signature(obj).parameters), name
    assert isinstance(parasurf.__version__, str) and parasurf.__version__.count(".") == 2
