"""Hostile arguments to every Python entry point, drawn at random from the session's seed: odd dtypes, shapes,
strides and sizes, non-finite and absurd numbers, wrong types. A call may succeed or raise one of Python's
ordinary exceptions; it must never crash the interpreter or hang (a crash fails the whole run, which names the
seed)."""
import numpy as np
import pytest

import parasurf

ALLOWED = (ValueError, TypeError, RuntimeError, MemoryError, OverflowError, IndexError, KeyError)
NUMBERS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 1e300, -1e308, float("nan"), float("inf"), -float("inf"), 2 ** 63, -7]
DTYPES = [np.float32, np.float64, np.float16, np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.bool_, np.complex64, object]


def any_number(rng):
    return NUMBERS[rng.integers(len(NUMBERS))]


def any_array(rng, ndim=None, max_side=9):
    ndim = int(rng.integers(0, 5)) if ndim is None else ndim
    shape = tuple(int(rng.integers(0, max_side)) for _ in range(ndim))
    dtype = DTYPES[rng.integers(len(DTYPES))]
    if dtype is object:
        a = np.empty(shape, dtype=object)
        a.fill(rng.choice(["x", None, 1.5]))
        return a
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    if a.size and dtype in (np.float32, np.float64, np.float16) and rng.random() < 0.3:
        a.flat[int(rng.integers(a.size))] = any_number(rng)
    if ndim and a.size and rng.random() < 0.3:  # a view: reversed, strided or transposed
        a = [a[::-1], a[..., ::2], a.T][int(rng.integers(3))]
    return a


def call(f, *args, **kwargs):
    try:
        f(*args, **kwargs)
    except ALLOWED:
        pass


def test_marching_cubes_survives_hostile_arguments(rng):
    # A valid call with one thing made hostile (or none), so that every check and the engine behind it are reached.
    outcomes = {"ok": 0, "refused": 0}
    for _ in range(300):
        shape = tuple(int(n) for n in rng.integers(2, 10, size=3))
        volume = rng.standard_normal(shape).astype([np.float32, np.float64, np.uint8, np.int16][int(rng.integers(4))])
        kwargs = {}
        level = float(volume.min() + (volume.max() - volume.min()) * rng.random()) if volume.max() > volume.min() else None
        which = int(rng.integers(9))
        if which == 0:
            volume = any_array(rng)
        elif which == 1:
            kwargs["spacing"] = tuple(any_number(rng) for _ in range(int(rng.integers(2, 5))))
        elif which == 2:
            kwargs["step_size"] = [0, 1, 2, 7, 10 ** 9, -3][int(rng.integers(6))]
        elif which == 3:
            kwargs["method"] = ["lewiner", "lorensen", "mc33", ""][int(rng.integers(4))]
        elif which == 4:
            kwargs["mask"] = any_array(rng, ndim=3) if rng.random() < 0.5 else rng.random(volume.shape) < 0.5
        elif which == 5:
            kwargs["threads"] = [0, 1, -1, 100000][int(rng.integers(4))]
        elif which == 6:
            level = any_number(rng)
        elif which == 7 and volume.dtype.kind == "f":
            volume.flat[int(rng.integers(volume.size))] = any_number(rng)
        try:
            parasurf.marching_cubes(volume, level, device="cpu", **kwargs)
            outcomes["ok"] += 1
        except ALLOWED:
            outcomes["refused"] += 1
    # Most calls reach the engine: the test exercises more than the argument checks.
    assert outcomes["ok"] > 100, outcomes


def test_evaluate_surface_survives_hostile_arguments(rng):
    outcomes = {"ok": 0, "refused": 0}
    for _ in range(200):
        m, n = (int(k) for k in rng.integers(1, 6, size=2))
        points = rng.standard_normal((m + 1, n + 1, 3))
        kwargs = {}
        resolution = (int(rng.integers(2, 20)), int(rng.integers(2, 20)))
        which = int(rng.integers(7))
        if which == 0:
            points = any_array(rng, max_side=6)
        elif which == 1:
            points.flat[int(rng.integers(points.size))] = any_number(rng)
        elif which == 2:
            kwargs["weights"] = any_array(rng, ndim=2, max_side=6) if rng.random() < 0.5 else \
                rng.uniform(-1, 2, points.shape[:2])
        elif which == 3:
            kwargs["uv"] = any_array(rng, ndim=2, max_side=6) if rng.random() < 0.5 else rng.uniform(-1, 2, (7, 2))
        elif which == 4:
            resolution = [1, (3, 0), (-4, 4), (1 << 20, 1 << 20), (2, 1 << 40)][int(rng.integers(5))]
        elif which == 5:
            kwargs["precision"] = ["half", "", "float"][int(rng.integers(3))]
        try:
            parasurf.evaluate_surface(points, resolution, device="cpu", derivatives=bool(rng.random() < 0.5),
                                      second_derivatives=bool(rng.random() < 0.3), **kwargs)
            outcomes["ok"] += 1
        except ALLOWED as e:
            outcomes["refused"] += 1
            # A call where nothing was made hostile is an ordinary call: it must succeed.
            assert which != 6, f"an ordinary call was refused: {e}"
    # Every ordinary call and most calls with one odd coordinate reach the engine.
    assert outcomes["ok"] >= 200 // 7 // 2, outcomes


def test_solver_functions_survive_hostile_arguments(rng):
    def curve():
        n = int(rng.integers(0, 7))
        c = rng.standard_normal((n, int(rng.integers(1, 4))))
        if c.size and rng.random() < 0.4:
            c.flat[int(rng.integers(c.size))] = any_number(rng)
        return c
    for _ in range(60):
        call(parasurf.intersect_curves, curve(), curve(), tolerance=[1e-7, 0.0, -1.0, float("nan")][int(rng.integers(4))])
        limits = {}
        if rng.random() < 0.5:  # absurd limits: refused, or a partial result
            limits = {["max_seconds", "max_cells"][int(rng.integers(2))]: any_number(rng)}
        call(parasurf.hausdorff_distance, curve(), curve(), **limits)
        call(parasurf.curve_bisector, curve(), curve(), resolution=[1.0 / 16, 0.0, 2.0, 1e-300][int(rng.integers(4))])
    # The batches: lists of hostile pairs, arrays of any shape for pairs, points and rays, NaN and absurd numbers.
    for _ in range(40):
        pairs = [(curve(), curve()) for _ in range(int(rng.integers(0, 4)))]
        which = int(rng.integers(4))
        if which == 1:
            pairs = any_array(rng, ndim=4, max_side=4)
        elif which == 2:
            pairs = pairs + [(curve(),)]  # not a pair
        elif which == 3:
            pairs = any_array(rng)
        call(parasurf.intersect_curves_batch, pairs, flat=bool(rng.integers(2)), device="cpu")
        rays = rng.standard_normal((int(rng.integers(0, 6)), 3))
        if rays.size and rng.random() < 0.5:
            rays.flat[int(rng.integers(rays.size))] = any_number(rng)
        call(parasurf.intersect_rays, rays, [any_array(rng), rays][int(rng.integers(2))], device="cpu",
             t_min=any_number(rng))
        call(parasurf.closest_points, [any_array(rng), rays][int(rng.integers(2))], device="cpu")
        call(parasurf.closest_points, rays, [any_array(rng, ndim=3)], device="cpu")


@pytest.mark.parametrize("values", [np.zeros((0, 3)), np.full((4, 3), np.nan), np.array([[0, 0, 0]] * 4, dtype=object)])
def test_lattice_and_ffd_refuse_bad_vertices(values):
    with pytest.raises(ALLOWED):
        lat = parasurf.lattice(values)
        parasurf.ffd(values, np.array([[0, 1, 2]]), lat)


def test_paths_and_dicts_are_refused_by_name(tmp_path):
    # A path that is not one: TypeError, not an attempt to open the array's or the number's text as a file.
    for bad in (np.zeros((2, 2)), 3, None, [1, 2]):
        for f in (parasurf.read_volume, lambda p: parasurf.write_mesh(p, np.zeros((3, 3)), [[0, 1, 2]])):
            with pytest.raises(TypeError, match="str or os.PathLike"):
                f(bad)
    with pytest.raises(TypeError, match="str or os.PathLike"):
        parasurf.tessellate(np.zeros(3))
    with pytest.raises(TypeError, match="str or os.PathLike"):
        parasurf.patch_nets(1.5)
    # bytes name the file they spell (not "b'...'").
    with pytest.raises(OSError, match="'/nonexistent/model.bv'"):
        parasurf.closest_points(np.zeros((1, 3)), b"/nonexistent/model.bv")
    # A path-like object works like its text.
    out = tmp_path / "t.ply"
    parasurf.write_mesh(out, np.eye(3), [[0, 1, 2]])
    assert out.stat().st_size > 0
    # A curve, surface or motion dict without its control points: ValueError naming what is missing.
    line = np.array([[0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="curve: a dict needs 'points'"):
        parasurf.hausdorff_distance(line, {"degree": 1})
    with pytest.raises(ValueError, match="surface: a dict needs 'points'"):
        parasurf.evaluate_bspline_surface({"degree": (1, 1)}, 4)
    patch = np.zeros((2, 2, 3))
    patch[1, :, 0] = 1
    patch[:, 1, 1] = 1
    with pytest.raises(ValueError, match="surface: a dict needs 'points'"):
        parasurf.intersect_surfaces(patch, {"knots": []})
    with pytest.raises(ValueError, match="motion"):
        parasurf.contact_points(patch, patch, {"points": [[1, 0, 0, 0]] * 4, "degree": 3})
    # A key the function does not take (a misspelt one, or weights where only polynomial shapes are solved) is
    # refused by name rather than left out of the answer.
    with pytest.raises(ValueError, match="unknown key 'weight'"):
        parasurf.tessellate(surfaces=[{"points": np.zeros((4, 4, 3)), "weight": np.ones((4, 4))}])
    with pytest.raises(ValueError, match="unknown key 'knot'"):
        parasurf.hausdorff_distance(line, {"points": line, "knot": [0, 0, 1, 1]})
    with pytest.raises(ValueError, match="weights are not taken here"):
        parasurf.intersect_surfaces(patch, {"points": patch, "weights": np.ones((2, 2))})
    # The dicts patch_nets makes are surfaces: their index and empty weights are taken.
    nets = parasurf.patch_nets()
    assert "index" in nets[0] and nets[0]["weights"] is None
    parasurf.evaluate_bspline_surface(nets[0], np.array([[0.5, 0.5]]))
    parasurf.intersect_surfaces(nets[0], nets[1], device="cpu")
