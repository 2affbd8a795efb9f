"""Surface evaluation, patch tessellation and FFD from Python: shapes, dtypes, values against references."""
import math
import time

import numpy as np
import pytest

import parasurf
from conftest import devices


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("precision", ["float", "double"])
def test_evaluate_surface_against_de_casteljau(device, precision, rng):
    m, n = 4, 3
    cps = rng.normal(size=(m + 1, n + 1, 3))
    points, normals, extra = parasurf.evaluate_surface(cps, (9, 7), derivatives=True, precision=precision, device=device)
    assert points.shape == (9, 7, 3) and normals.shape == (9, 7, 3) and extra["du"].shape == (9, 7, 3)
    assert points.dtype == (np.float32 if precision == "float" else np.float64)

    def casteljau(c, t):
        c = c.copy()
        while len(c) > 1:
            c = (1 - t) * c[:-1] + t * c[1:]
        return c[0]

    tol = 1e-4 if precision == "float" else 1e-12
    for i, u in enumerate(np.linspace(0, 1, 9)):
        for j, v in enumerate(np.linspace(0, 1, 7)):
            row = np.array([casteljau(cps[a], v) for a in range(m + 1)])
            np.testing.assert_allclose(points[i, j], casteljau(row, u), atol=tol * 10)
    cross = np.cross(extra["du"], extra["dv"])
    cross /= np.linalg.norm(cross, axis=2, keepdims=True)
    np.testing.assert_allclose(normals, cross, atol=1e-3 if precision == "float" else 1e-9)


def test_evaluate_surface_errors():
    with pytest.raises(ValueError):
        parasurf.evaluate_surface(np.zeros((3, 3, 2)))
    with pytest.raises(ValueError):
        parasurf.evaluate_surface(np.zeros((3, 3, 3)), (1, 5))
    with pytest.raises(ValueError):
        parasurf.evaluate_surface(np.zeros((3, 3, 3)), weights=-np.ones((3, 3)))


@pytest.mark.parametrize("device", devices())
def test_tessellate_teapot(device):
    verts, faces, normals = parasurf.tessellate(resolution=16, device=device)
    assert faces.shape == (16256, 3) and faces.dtype == np.int32
    assert verts.shape == normals.shape and verts.shape[1] == 3
    assert faces.max() < len(verts)
    assert np.all(np.abs(np.linalg.norm(normals, axis=1) - 1) < 1e-3)
    with pytest.raises(OSError):
        parasurf.tessellate("/nonexistent/model.bv")


def closed_box(n=4):
    """A closed cube surface of quads, n x n per side."""
    verts, faces, index = [], [], {}

    def vid(p):
        key = tuple(np.round(p, 9))
        if key not in index:
            index[key] = len(verts)
            verts.append(p)
        return index[key]

    g = np.linspace(-1, 1, n + 1)
    for axis in range(3):
        for side in (-1.0, 1.0):
            u, v = [a for a in range(3) if a != axis]
            for i in range(n):
                for j in range(n):
                    quad = []
                    for di, dj in ((0, 0), (1, 0), (1, 1), (0, 1)):
                        p = np.zeros(3)
                        p[axis], p[u], p[v] = side, g[i + di], g[j + dj]
                        quad.append(vid(p))
                    # outward winding
                    nrm = np.zeros(3)
                    nrm[axis] = side
                    a, b, c = (np.array(verts[q]) for q in quad[:3])
                    if np.dot(np.cross(b - a, c - a), nrm) < 0:
                        quad.reverse()
                    faces.append(quad)
    return np.array(verts), np.array(faces)


def edge_use(faces):
    e = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    _, counts = np.unique(e, axis=0, return_counts=True)
    return counts


@pytest.mark.parametrize("device", devices())
def test_ffd(device, rng):
    verts, quads = closed_box(3)
    lat = parasurf.lattice(verts, count=(5, 6, 4), degree=(3, 2, 3))
    assert lat.control_points.shape == (5, 6, 4, 3)
    # Identity first: the rest lattice leaves the mesh where it is.
    v0, f0, _ = parasurf.ffd(verts, quads, lat, method="point", device=device)
    np.testing.assert_allclose(v0, verts, atol=1e-6)
    # Edit through the writable view, then deform three ways.
    lat.control_points[2, 3, 1] += [0.3, -0.2, 0.1]
    cp = lat.control_points.copy()
    lat.control_points[...] = cp + rng.normal(0, 0.02, cp.shape)
    vp, fp, np_ = parasurf.ffd(verts, quads, lat, method="point", device=device)
    np.testing.assert_allclose(vp, lat.deform_points(verts), atol=1e-5)
    va, fa, na = parasurf.ffd(verts, quads, lat, method="accurate", level=3, device=device, precision="float")
    assert np.all(edge_use(fa) == 2)  # closed in, closed out
    assert len(va) - len(np.unique(np.sort(np.concatenate([fa[:, [0, 1]], fa[:, [1, 2]], fa[:, [2, 0]]]), axis=1), axis=0)) + len(fa) == 2
    # Every accurate vertex lies on the deformed surface: it is the image of a point of the box's surface.
    assert np.all(np.abs(np.linalg.norm(na, axis=1) - 1) < 1e-3)
    vu, fu, _ = parasurf.ffd(verts, quads, lat, method="uus", level=3, device=device)
    assert len(fu) == 2 * len(quads) * 9


def test_lattice_direct_manipulation_and_errors(rng):
    verts, quads = closed_box(2)
    lat = parasurf.lattice(verts, 6, 3)
    pts = rng.uniform(-0.8, 0.8, (3, 3))
    targets = lat.deform_points(pts) + rng.uniform(-0.1, 0.1, (3, 3))
    lat.move_points(pts, targets)
    np.testing.assert_allclose(lat.deform_points(pts), targets, atol=1e-9)
    with pytest.raises(ValueError):
        parasurf.lattice(verts, 9, 4)  # degree above 3
    with pytest.raises(ValueError):
        parasurf.lattice(verts, 3, 3)  # too few control points
    with pytest.raises(ValueError):
        parasurf.ffd(verts, [[0, 1, 99]], lat)
    with pytest.raises(ValueError):
        parasurf.ffd(verts, quads, lat, level=0)


def test_intersect_curves():
    # A parabola arc and a horizontal line meet at s = t = 1/4 and 3/4 (the bezier package's case 3).
    r = parasurf.intersect_curves([[0, 0], [0.5, 1], [1, 0]], [[0, 0.375], [1, 0.375]])
    assert r["status"] == "complete"
    np.testing.assert_allclose(np.sort(r["params"][:, 0]), [0.25, 0.75], atol=1e-14)
    np.testing.assert_allclose(r["points"][:, 1], [0.375, 0.375], atol=1e-14)
    assert not r["tangent"].any() and r["overlaps"].shape == (0, 4)
    # Tangent at the apex: one root, flagged.
    t = parasurf.intersect_curves([[0, 0], [0.5, 1], [1, 0]], [[0, 0.5], [1, 0.5]])
    assert len(t["params"]) == 1 and t["tangent"][0]
    np.testing.assert_allclose(t["params"][0], [0.5, 0.5], atol=1e-14)
    with pytest.raises(ValueError):
        parasurf.intersect_curves([[0, 0]], [[0, 1], [1, 0]])
    # A batch gives each pair what a single call gives it.
    rng = np.random.default_rng(11)
    pairs = [(rng.random((4, 2)), rng.random((3, 2))) for _ in range(200)] + [([[0, 0], [0.5, 1], [1, 0]], [[0, 0.5], [1, 0.5]])]
    batch = parasurf.intersect_curves_batch(pairs)
    assert len(batch) == len(pairs)
    for (a, b), got in zip(pairs, batch):
        one = parasurf.intersect_curves(a, b)
        np.testing.assert_allclose(got["params"], one["params"], atol=1e-14)
        assert (got["tangent"] == one["tangent"]).all() and got["status"] == "complete"
    assert batch[-1]["tangent"][0]
    with pytest.raises(ValueError):
        parasurf.intersect_curves_batch([([[0, 0]], [[0, 1], [1, 0]])])
    # flat=True: the same intersections as arrays for the whole batch, each row tagged with its pair.
    flat = parasurf.intersect_curves_batch(pairs, flat=True)
    assert flat["status"] == "complete" and flat["complete"].all() and len(flat["complete"]) == len(pairs)
    assert len(flat["pair"]) == sum(len(b["params"]) for b in batch) > 0
    assert (np.diff(flat["pair"]) >= 0).all()
    for i, b in enumerate(batch):
        rows = flat["pair"] == i
        np.testing.assert_array_equal(flat["params"][rows], b["params"])
        np.testing.assert_array_equal(flat["points"][rows], b["points"])
        np.testing.assert_array_equal(flat["tangent"][rows], b["tangent"])
        np.testing.assert_array_equal(flat["overlaps"][flat["overlap_pair"] == i], b["overlaps"])
    # Overlapping pairs report their shared arcs in the flat form too.
    line = np.array([[0.0, 0.0], [1.0, 1.0]])
    both = parasurf.intersect_curves_batch([(line, line * 0.5), (line, line + [0, 1])], flat=True)
    assert list(both["overlap_pair"]) == [0] and both["overlaps"].shape == (1, 4)
    # An (n, 2, k, 2) array is n pairs of curves of k points each.
    cubic = np.array([(a, b) for a, b in pairs if len(a) == len(b) == 4] +
                     [(rng.random((4, 2)), rng.random((4, 2))) for _ in range(50)])
    as_array = parasurf.intersect_curves_batch(cubic, flat=True)
    as_list = parasurf.intersect_curves_batch(list(cubic), flat=True)
    for key in ("pair", "params", "tangent", "overlaps"):
        np.testing.assert_array_equal(as_array[key], as_list[key])
    # Curves of other dtypes, byte orders and layouts (float32, big-endian, reversed views, nested lists, a
    # generator of pairs) give what their float64 copies give.
    mixed = [(a.astype(np.float32), b[::-1]) for a, b in pairs[:20]]
    mixed += [(a.tolist(), np.asfortranarray(b)) for a, b in pairs[20:40]]
    mixed += [(a.astype(">f8"), b.astype(np.float64).view(np.float64)) for a, b in pairs[40:60]]
    copies = [(np.array(a, dtype=np.float64), np.array(b, dtype=np.float64)) for a, b in mixed]
    got = parasurf.intersect_curves_batch(iter(mixed), flat=True)
    want = parasurf.intersect_curves_batch(copies, flat=True)
    for key in ("pair", "params", "points", "tangent", "overlaps"):
        np.testing.assert_array_equal(got[key], want[key])
    assert len(want["pair"]) > 0
    assert parasurf.intersect_curves_batch([], flat=True)["pair"].shape == (0,)
    assert parasurf.intersect_curves_batch([]) == []
    for bad in ([([[0, 0], [1, 1]], [[0, 0, 0], [1, 1, 1]])], [([0, 1], [[0, 1], [1, 0]])], [([[0, 0], [1, "x"]], line)]):
        with pytest.raises(ValueError):
            parasurf.intersect_curves_batch(bad)


@pytest.mark.parametrize("device", devices())
def test_random_curve_pairs_agree_with_the_bezier_package(device, rng):
    # The bezier package's geometric intersection as an independent reference on fresh random cubic and quintic
    # pairs: every crossing it finds is one of parasurf's and the other way round (pairs it cannot decide, and
    # tangencies, which it may miss, are left out).
    bezier = pytest.importorskip("bezier")
    pairs = [(rng.random((k, 2)), rng.random((k, 2))) for k in (4, 6) for _ in range(150)]
    flat = parasurf.intersect_curves_batch(pairs, device=device, flat=True)
    assert flat["status"] == "complete" and len(flat["overlap_pair"]) == 0
    compared = 0
    for i, (a, b) in enumerate(pairs):
        rows = flat["pair"] == i
        if flat["tangent"][rows].any():
            continue
        ca = bezier.Curve.from_nodes(np.asfortranarray(a.T))
        try:
            st = ca.intersect(bezier.Curve.from_nodes(np.asfortranarray(b.T)))
        except NotImplementedError:
            continue
        theirs = np.array(sorted(map(tuple, st.T))).reshape(-1, 2)
        ours = np.array(sorted(map(tuple, flat["params"][rows]))).reshape(-1, 2)
        assert theirs.shape == ours.shape, (i, theirs, ours)
        np.testing.assert_allclose(ours, theirs, atol=1e-9)
        compared += len(ours)
    assert compared > 100


def test_closest_points_on_the_teapot_and_on_given_nets():
    # Points on the teapot are their own nearest points; one above the lid's knob is 0.05 above its top.
    rng = np.random.default_rng(5)
    nets = [rng.random((4, 4, 3)), rng.random((3, 5, 3)) + [0.5, 0, 0]]
    r = parasurf.closest_points([[0, 0, 3.2], [3, 0, 1]], device="cpu")
    assert r["points"].shape == (2, 3) and r["uv"].shape == (2, 2) and r["patch"].dtype == np.int64
    assert abs(r["distance"][0] - 0.05) < 1e-12 and r["status"] == "complete"
    on = parasurf.closest_points(r["points"])
    assert (on["distance"] < 1e-12).all()
    np.testing.assert_allclose(np.linalg.norm(r["points"] - [[0, 0, 3.2], [3, 0, 1]], axis=1), r["distance"], atol=1e-14)
    q = rng.random((20, 3)) * 2 - 0.5
    g = parasurf.closest_points(q, nets)
    # No sample of the nets is nearer than the answer.
    for i in range(len(q)):
        for net in nets:
            m, n = net.shape[0] - 1, net.shape[1] - 1
            t = np.linspace(0, 1, 41)
            bu = np.array([[math.comb(m, a) * x ** a * (1 - x) ** (m - a) for a in range(m + 1)] for x in t])
            bv = np.array([[math.comb(n, b) * y ** b * (1 - y) ** (n - b) for b in range(n + 1)] for y in t])
            pts = np.einsum("ua,vb,abk->uvk", bu, bv, net).reshape(-1, 3)
            assert np.linalg.norm(pts - q[i], axis=1).min() >= g["distance"][i] - 1e-12
    with pytest.raises(ValueError):
        parasurf.closest_points([[0, 0, float("nan")]])
    with pytest.raises(ValueError):
        parasurf.closest_points([[0, 0, 0]], [])
    with pytest.raises(ValueError):
        parasurf.closest_points([0, 0, 0])
    # A patch collapsed to a point (all its control points equal): that point, at once.
    point = parasurf.closest_points([[0.5, 0.1, 0.9]], [np.ones((2, 3, 3))], device="cpu")
    assert point["status"] == "complete"
    np.testing.assert_allclose(point["points"][0], [1, 1, 1])
    assert abs(point["distance"][0] - np.sqrt(0.25 + 0.81 + 0.01)) < 1e-14


def test_intersect_rays_on_the_teapot_and_on_given_nets():
    # Down the axis onto the knob's top (z = 3.15); a ray aimed at a point of a net hits it or nearer; a miss is -1.
    r = parasurf.intersect_rays([[0, 0, 10], [0, 0, 10]], [[0, 0, -1], [0, 0, 1]], device="cpu")
    assert r["hit"].tolist() == [True, False] and r["patch"][1] == -1 and np.isinf(r["t"][1])
    assert abs(r["points"][0][2] - 3.15) < 1e-12 and abs(r["t"][0] - 6.85) < 1e-12 and r["status"] == "complete"
    assert np.isnan(r["points"][1]).all() and r["uv"].shape == (2, 2) and r["patch"].dtype == np.int64
    rng = np.random.default_rng(7)
    net = rng.random((4, 4, 3))
    m = 3
    t = rng.random((30, 2))
    b = lambda x: np.array([math.comb(m, a) * x ** a * (1 - x) ** (m - a) for a in range(m + 1)])
    targets = np.array([np.einsum("a,b,abk->k", b(u), b(v), net) for u, v in t])
    origins = targets + rng.normal(size=(30, 3)) * 3
    g = parasurf.intersect_rays(origins, targets - origins, [net])
    assert g["hit"].all() and (g["t"] <= 1 + 1e-9).all()
    np.testing.assert_allclose(g["points"], origins + g["t"][:, None] * (targets - origins), atol=1e-9)
    with pytest.raises(ValueError):
        parasurf.intersect_rays([[0, 0, float("nan")]], [[0, 0, 1]])
    with pytest.raises(ValueError):
        parasurf.intersect_rays([[0, 0, 0]], [[0, 0, 0]])
    with pytest.raises(ValueError):
        parasurf.intersect_rays([[0, 0, 0]], [[0, 0, 1], [0, 1, 0]])


def test_ray_traps_reflect():
    k = 3
    curves = []
    for i in range(k):
        c, w = np.pi / 2 + i * 2 * np.pi / k, np.pi / 6
        r, rm = 1.0 + 0.02 * i, (1.0 + 0.02 * i) / np.cos(w) + 0.01
        curves.append([[r * np.cos(c - w), r * np.sin(c - w)], [rm * np.cos(c), rm * np.sin(c)], [r * np.cos(c + w), r * np.sin(c + w)]])
    out = parasurf.ray_traps(curves)
    assert out["status"] == "complete" and len(out["params"]) >= 1
    for trap, ts in zip(out["points"], out["params"]):
        for i in range(k):
            j = (i + 1) % k
            a, b = trap[i] - trap[j], trap[(i + 2) % k] - trap[j]
            p0, p1, p2 = (np.asarray(q) for q in curves[j])
            d = 2 * ((1 - ts[j]) * (p1 - p0) + ts[j] * (p2 - p1))  # the mirror's tangent
            n = np.array([-d[1], d[0]]) / np.linalg.norm(d)
            # reflection law: equal angles with the normal, both rays on the same side
            assert np.dot(a, n) * np.dot(b, n) > 0
            assert abs(np.dot(a, n) / np.linalg.norm(a) - np.dot(b, n) / np.linalg.norm(b)) < 1e-9


def test_hausdorff_distance():
    # A segment above a straight segment: the distance is the larger end gap, attained at the right end.
    r = parasurf.hausdorff_distance([[0, 1], [1, 1.5]], [[0, 0], [1, 0]])
    assert r["status"] == "complete"
    assert abs(r["distance"] - 1.5) < 1e-12
    assert abs(r["a_to_b"]["t"] - 1.0) < 1e-12 and abs(r["a_to_b"]["r"] - 1.0) < 1e-12
    # The same curves as B-spline dicts (clamped, one span) give the same answer.
    bs = parasurf.hausdorff_distance({"points": [[0, 1], [1, 1.5]], "degree": 1, "knots": [0, 0, 1, 1]},
                                     {"points": [[0, 0], [0.5, 0], [1, 0]], "degree": 2, "knots": [0, 0, 0, 1, 1, 1]})
    assert abs(bs["distance"] - 1.5) < 1e-12
    with pytest.raises(ValueError):
        parasurf.hausdorff_distance({"points": [[0, 0], [1, 1]], "degree": 1, "knots": [0, 1, 0, 1]}, [[0, 0], [1, 0]])


def test_solver_limits():
    # max_cells and max_seconds bound a solve: the answer comes back marked partial, not after the default minute.
    a, b = [[0, 0], [0.5, 1], [1, 0]], [[0, 0.8], [0.3, -0.2], [0.7, 1.0], [1, 0.2]]
    assert parasurf.hausdorff_distance(a, b)["status"] == "complete"
    # (cells are counted by 64 per thread, and a batch of n systems may take n * max_cells: a small solve on many
    # threads finishes under any limit, so the far control point's 400,000 cells per system stand in for a hard one)
    far = [[0, 1e18], [0.5, 1], [1, 0]]
    assert parasurf.hausdorff_distance(far, b, max_cells=1000)["status"].startswith("limit reached")
    assert parasurf.hausdorff_distance(far, b)["status"] == "complete"
    t0 = time.perf_counter()
    r = parasurf.closest_points(np.random.default_rng(1).standard_normal((2000, 3)) * 3, max_seconds=1e-6, device="cpu")
    assert r["status"].startswith("limit reached") and time.perf_counter() - t0 < 30
    for bad in (dict(max_seconds=0), dict(max_seconds=-1.0), dict(max_seconds=float("nan")), dict(max_cells=0)):
        with pytest.raises(ValueError, match="max_"):
            parasurf.hausdorff_distance(a, b, **bad)


def paraboloid():
    x = np.array([-1.0, 0.0, 1.0])
    sq = np.array([1.0, -1.0, 1.0])
    p = np.zeros((3, 3, 3))
    for i in range(3):
        for j in range(3):
            p[i, j] = [x[i], x[j], sq[i] + sq[j]]
    return p


def test_intersect_surfaces_and_bisector():
    plane = np.array([[[-1.5, -1.5, 0.5], [-1.5, 1.5, 0.5]], [[1.5, -1.5, 0.5], [1.5, 1.5, 0.5]]])
    r = parasurf.intersect_surfaces(paraboloid(), plane)
    assert r["status"] == "complete" and len(r["curves"]) == 1 and r["curves"][0]["closed"]
    pts = r["curves"][0]["points"]
    np.testing.assert_allclose(pts[:, 0] ** 2 + pts[:, 1] ** 2, 0.5, atol=1e-12)
    assert r["curves"][0]["params"].shape == (len(pts), 4)
    assert r["overlaps"].shape == (0, 8)
    # Overlapping coplanar squares: one region where they coincide, [0.5, 1]^2 of the first, [0, 0.5]^2 of the second.
    square = np.array([[[0, 0, 0.2], [0, 1, 0.2]], [[1, 0, 0.2], [1, 1, 0.2]]], float)
    r = parasurf.intersect_surfaces(square, square + [0.5, 0.5, 0])
    assert r["curves"] == [] and r["overlaps"].shape == (1, 8)
    np.testing.assert_allclose(r["overlaps"][0], [0.5, 1, 0.5, 1, 0, 0.5, 0, 0.5], atol=2 / 64)
    b = parasurf.surface_bisector(plane - [0, 0, 0.5], paraboloid() + [0, 0, 1])
    assert b["status"] == "complete" and len(b["points"]) > 100
    feet = b["params"]
    assert feet.shape == (len(b["points"]), 4)
    assert b["overlaps"].shape == (0, 8)
    # Coplanar faces: every point on their normal is equidistant, so the bisector is their overlap, no samples.
    b = parasurf.surface_bisector(square, square + [0.5, 0.5, 0])
    assert b["status"] == "complete" and len(b["points"]) == 0 and b["overlaps"].shape == (1, 8)
    np.testing.assert_allclose(b["overlaps"][0], [0.5, 1, 0.5, 1, 0, 0.5, 0, 0.5], atol=2 / 16)


def test_contact_points():
    # The paraboloid z = x^2 + y^2 + 1 scaled by 1 + 0.2 t and moved by (0.1 t, 0, -2 t) touches z = 0 at t = 1 / 1.8.
    plane = np.array([[[-2.0, -2.0, 0.0], [-2.0, 2.0, 0.0]], [[2.0, -2.0, 0.0], [2.0, 2.0, 0.0]]])
    motion = {"degree": 3, "knots": [0, 0, 0, 0, 1, 1, 1, 1],
              "points": [[1 + 0.2 * i / 3, 0.1 * i / 3, 0, -2 * i / 3] for i in range(4)]}
    r = parasurf.contact_points(paraboloid() + [0, 0, 1], plane, motion)
    assert r["status"] == "complete" and r["params"].shape == (1, 5)
    assert abs(r["params"][0, 4] - 1 / 1.8) < 1e-12
    np.testing.assert_allclose(r["points"][0], [0.1 / 1.8, 0, 0], atol=1e-12)
    assert r["regions"].shape == (0, 10)
    # A square lowered onto the plane from z = 1 to z = -1 lies in it at t = 1/2: a region, not points.
    square = np.array([[[0, 0, 1], [0, 1, 1]], [[1, 0, 1], [1, 1, 1]]], float)
    r = parasurf.contact_points(square, plane, {"degree": 1, "knots": [0, 0, 1, 1], "points": [[1, 0, 0, 0], [1, 0, 0, -2]]})
    assert r["status"] == "complete" and r["params"].shape == (0, 5) and r["regions"].shape == (1, 10)
    np.testing.assert_allclose(r["regions"][0, :2], [0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(r["regions"][0, 2:6], [0, 1, 0, 1], atol=2 / 64)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("precision", ["float", "double"])
def test_evaluate_surface_at_pairs_with_second_derivatives(device, precision, rng):
    cps = rng.normal(size=(4, 6, 3))
    w = rng.uniform(0.5, 2.0, size=(4, 6))
    grid = parasurf.evaluate_surface(cps, (11, 9), weights=w, derivatives=True, second_derivatives=True,
                                     precision=precision, device=device)[2]
    u, v = np.meshgrid(np.linspace(0, 1, 11), np.linspace(0, 1, 9), indexing="ij")
    pairs = parasurf.evaluate_surface(cps, uv=np.stack([u.ravel(), v.ravel()], axis=1), weights=w, derivatives=True,
                                      second_derivatives=True, precision=precision, device=device)[2]
    tol = 2e-4 if precision == "float" else 1e-10
    for key in ("points", "normals", "du", "dv", "duu", "duv", "dvv"):
        assert grid[key].shape == (11, 9, 3) and pairs[key].shape == (99, 3)
        scale = max(1.0, float(np.abs(grid[key]).max()))
        np.testing.assert_allclose(pairs[key].reshape(11, 9, 3), grid[key], atol=tol * scale, err_msg=key)
    # Second derivatives against central differences of the first (double only: float differences are too coarse).
    if precision == "double":
        h = 1e-5
        at = np.array([[0.3, 0.6]])
        d = lambda uv: parasurf.evaluate_surface(cps, uv=uv, weights=w, derivatives=True, device=device)[2]
        duu = (d(at + [h, 0])["du"] - d(at - [h, 0])["du"]) / (2 * h)
        duv = (d(at + [0, h])["du"] - d(at - [0, h])["du"]) / (2 * h)
        dvv = (d(at + [0, h])["dv"] - d(at - [0, h])["dv"]) / (2 * h)
        here = parasurf.evaluate_surface(cps, uv=at, weights=w, second_derivatives=True, device=device)[2]
        for got, want in ((here["duu"], duu), (here["duv"], duv), (here["dvv"], dvv)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # The library wrote the arrays returned (held by the library's buffer, no copy): each field is a view of its own
    # (3, count) block.
    for key in ("points", "normals"):
        e = grid[key].itemsize
        assert grid[key].base is not None and not grid[key].flags.owndata
        assert grid[key].strides == (9 * e, e, 99 * e) and pairs[key].strides == (e, 99 * e)
    assert not np.shares_memory(grid["points"], grid["normals"])
    assert grid["degenerate"].dtype == bool and grid["degenerate"].shape == (11, 9)


def test_meshes_are_handed_over_without_copies():
    verts, faces, normals = parasurf.tessellate(resolution=4, device="cpu")
    for a in (verts, faces, normals):
        assert not a.flags.owndata and a.flags.c_contiguous  # the library's own buffer, not a copy of it
    assert verts.dtype == np.float32 and faces.dtype == np.int32 and faces.max() < len(verts)
    with pytest.raises(ValueError):
        parasurf.evaluate_surface(np.zeros((3, 3, 3)), uv=np.array([[0.5, 1.5]]))


def test_progress_and_interrupt_of_long_calls():
    import os
    import signal
    import threading
    import time

    seen = []
    parasurf.tessellate(resolution=8, device="cpu", progress=seen.append)
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)

    def stop(fraction):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        parasurf.tessellate(resolution=8, device="cpu", progress=stop)
    # Ctrl-C during a solve of many systems (nearly coincident surfaces: about 5 s on two cores when not stopped).
    a = np.array([[[x, y, 0.3 * np.sin(3 * x + y)] for y in np.linspace(0, 1, 4)] for x in np.linspace(0, 1, 4)])
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            parasurf.intersect_surfaces(a, a + [0, 0, 1e-9], resolution=1 / 256)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 2.5
    assert parasurf.intersect_curves([[0, 0], [1, 1]], [[0, 1], [1, 0]])["status"] == "complete"  # usable after


def test_hostile_arguments_raise_instead_of_ending_the_interpreter():
    # Each in a fresh interpreter: a regression would abort the process, not raise.
    import subprocess
    import sys
    cases = [
        "parasurf.hausdorff_distance([[-1e308, -1e308], [1e308, 1e308], [1e308, -1e308]], [[-1e308, 1e308], [1e308, -1e308]])",
        "parasurf.curve_bisector([[-1e308, -1e308], [1e308, 1e308], [1e308, -1e308]], [[-1e308, 1e308], [1e308, -1e308]])",
    ]
    for case in cases:
        code = "import parasurf\ntry:\n    %s\nexcept (ValueError, RuntimeError) as e:\n    print('raised', e)\n" % case
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "raised" in r.stdout, (case, r.returncode, r.stderr[-500:])
    sphere = np.zeros((12, 12, 12), np.float32)
    sphere[4:8, 4:8, 4:8] = 1
    assert len(parasurf.marching_cubes(sphere, 0.5, device="cpu", threads=100000)[1]) > 0  # clamped to the limit
    with pytest.raises(ValueError):
        parasurf.marching_cubes(sphere, 0.5, device="cpu", threads=-1)


def _nurbs_reference(s, u, v):
    """Rational B-spline surface at complex (u, v) by the Cox-de Boor recursion (the span chosen by the real
    parts): complex steps give first derivatives to rounding."""
    def basis(knots, p, n, t):
        tr = t.real
        k = n - 1 if tr >= knots[n] else max(i for i in range(p, n) if knots[i] <= tr)
        N = [1.0 + 0j if i == k else 0j for i in range(len(knots) - 1)]
        for d in range(1, p + 1):
            for i in range(len(knots) - 1 - d):
                a = 0j if knots[i + d] == knots[i] else (t - knots[i]) / (knots[i + d] - knots[i]) * N[i]
                b = 0j if knots[i + d + 1] == knots[i + 1] else (knots[i + d + 1] - t) / (knots[i + d + 1] - knots[i + 1]) * N[i + 1]
                N[i] = a + b
        return N[:n]
    P, W = s["points"], s["weights"]
    nu, nv = W.shape
    Nu, Nv = basis(s["knots"][0], s["degree"][0], nu, u), basis(s["knots"][1], s["degree"][1], nv, v)
    num, den = np.zeros(3, complex), 0j
    for i in range(nu):
        for j in range(nv):
            c = Nu[i] * Nv[j] * W[i, j]
            num += c * P[i, j]
            den += c
    return num / den


def _random_nurbs(rng):
    p, q = int(rng.integers(2, 5)), int(rng.integers(1, 4))
    nu, nv = p + int(rng.integers(1, 5)), q + int(rng.integers(1, 5))
    def knots(p, n):
        inner = np.sort(rng.uniform(0.5, 3.0, n - p - 1))
        if len(inner) > 1:
            inner[1] = inner[0]  # a double knot: continuity drops there
        return [0.5] * (p + 1) + list(inner) + [3.0] * (p + 1)
    return {"points": rng.uniform(-10, 10, (nu, nv, 3)) + 1e3, "degree": (p, q),
            "knots": (knots(p, nu), knots(q, nv)), "weights": rng.uniform(0.3, 3.0, (nu, nv))}


@pytest.mark.parametrize("device", devices())
def test_bspline_surfaces_evaluate_against_de_boor(rng, device):
    """NURBS surfaces with double knots, at random pairs and on every knot: positions and first derivatives against
    the Cox-de Boor recursion with complex steps, second derivatives against differences of those."""
    for _ in range(5):
        s = _random_nurbs(rng)
        ku, kv = s["knots"]
        uv = np.column_stack([rng.uniform(0.5, 3.0, 40), rng.uniform(0.5, 3.0, 40)])
        uv = np.vstack([uv, [[k, kv[len(kv) // 2]] for k in sorted(set(ku))], [[0.5, 0.5], [3.0, 3.0]]])
        pts, normals, out = parasurf.evaluate_bspline_surface(s, uv, derivatives=True, second_derivatives=True,
                                                             device=device)
        assert pts.shape == (len(uv), 3) and pts.dtype == np.float64
        h, e = 1e-30, 1e-5
        for k, (u, v) in enumerate(uv):
            ref = _nurbs_reference(s, u, v).real
            np.testing.assert_allclose(pts[k], ref, rtol=1e-12, atol=1e-9)
            if u in ku or v in kv:
                continue  # derivatives at a double knot are one-sided: the checks below use both sides
            du = _nurbs_reference(s, u + 1j * h, v).imag / h
            dv = _nurbs_reference(s, u, v + 1j * h).imag / h
            np.testing.assert_allclose(out["du"][k], du, rtol=1e-9, atol=1e-7 * np.abs(du).max())
            np.testing.assert_allclose(out["dv"][k], dv, rtol=1e-9, atol=1e-7 * np.abs(dv).max())
            if min(abs(u - np.array(ku)).min(), abs(v - np.array(kv)).min()) < 2 * e:
                continue
            # Central differences of the complex-step derivatives, Richardson-extrapolated from steps e and e / 2:
            # the plain difference's e^2 error reached 2e-5 of the value next to a boundary knot of a stiff NURBS.
            def second(f, step):
                d = lambda t: (f(t, 1) - f(t, -1)) / (2 * t * h)
                return (4 * d(step / 2) - d(step)) / 3
            duu = second(lambda t, sg: _nurbs_reference(s, u + sg * t + 1j * h, v).imag, e)
            duv = second(lambda t, sg: _nurbs_reference(s, u + 1j * h, v + sg * t).imag, e)
            dvv = second(lambda t, sg: _nurbs_reference(s, u, v + sg * t + 1j * h).imag, e)
            for name, ref2 in (("duu", duu), ("duv", duv), ("dvv", dvv)):
                np.testing.assert_allclose(out[name][k], ref2, rtol=1e-5, atol=1e-5 * (np.abs(ref2).max() + 1))
            n = np.cross(out["du"][k], out["dv"][k])
            np.testing.assert_allclose(normals[k], n / np.linalg.norm(n), atol=1e-9)
    with pytest.raises(ValueError, match="outside the surface's domain"):
        parasurf.evaluate_bspline_surface(s, [[0.4, 1.0]])
    with pytest.raises(ValueError, match="knot vector u"):
        parasurf.evaluate_bspline_surface(dict(s, knots=(s["knots"][0][:-1], s["knots"][1])), [[1.0, 1.0]])


def test_tessellate_takes_surfaces_as_arrays(tmp_path, rng):
    """Surfaces from arrays give the mesh their .json file gives; a plain (nu, nv, 3) net with a degree gets clamped
    uniform knots."""
    import json
    s = _random_nurbs(rng)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"degree": list(s["degree"]), "knots": [list(k) for k in s["knots"]],
                                "points": s["points"].tolist(), "weights": s["weights"].tolist()}))
    by_file = parasurf.tessellate(path, resolution=6, device="cpu")
    by_arrays = parasurf.tessellate(surfaces=s, resolution=6, device="cpu")
    for a, b in zip(by_file, by_arrays):
        np.testing.assert_array_equal(a, b)
    net = {"points": s["points"], "degree": (2, 1)}
    nu, nv = s["points"].shape[:2]
    verts, faces, _ = parasurf.tessellate(surfaces=[net, dict(net, points=net["points"] + 100)], resolution=4)
    assert len(faces) == 2 * 2 * 4 * 4 * (nu - 2) * (nv - 1)
    with pytest.raises(ValueError, match="either a path or surfaces"):
        parasurf.tessellate(path, surfaces=s)
