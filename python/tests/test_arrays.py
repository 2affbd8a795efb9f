"""Arrays in place: numpy views, DLPack and CUDA-array-interface objects read without copies, results where the
samples lie (torch in, torch out), scikit-image's values and mask computed by the engine, bad arrays refused."""
import numpy as np
import pytest

import parasurf
from conftest import devices


def field(rng, shape=(30, 27, 33)):
    """A few random bumps: a smooth field whose level sets are closed surfaces of varied shape."""
    idx = np.indices(shape).astype(np.float64)
    out = np.zeros(shape)
    for _ in range(4):
        c = rng.uniform(0, 1, 3) * (np.array(shape) - 1)
        r = rng.uniform(2, 6)
        out += np.exp(-sum((idx[a] - c[a]) ** 2 for a in range(3)) / r ** 2)
    return out.astype(np.float32)


def numpy_values(volume, level, verts, faces, cell):
    """scikit-image's per-vertex values written out in numpy: the level-shifted range of each face's cell (from its
    centroid), the largest over each vertex's faces."""
    v = volume.astype(np.float32) - np.float32(level)
    c = np.floor(verts.astype(np.float64)[faces].sum(axis=1) / (3 * np.asarray(cell))).astype(np.int64)
    for a in range(3):
        np.clip(c[:, a], 0, volume.shape[a] - 2, out=c[:, a])
    i, j, k = c.T
    corners = np.stack([v[i + a, j + b, k + d] for a in (0, 1) for b in (0, 1) for d in (0, 1)])
    rng = np.maximum(corners.max(axis=0), 0) - np.minimum(corners.min(axis=0), 0)
    out = np.zeros(len(verts), np.float32)
    for col in range(3):
        np.maximum.at(out, faces[:, col], rng)
    return out


def cell_ranges(volume, level):
    """Each cell's level-shifted range max(largest, 0) - min(smallest, 0) in float32, NaN with a NaN corner."""
    v = volume.astype(np.float32) - np.float32(level)
    n = v.shape
    corners = np.stack([v[a:n[0] - 1 + a, b:n[1] - 1 + b, d:n[2] - 1 + d] for a in (0, 1) for b in (0, 1) for d in (0, 1)])
    return np.maximum(corners.max(axis=0), 0) - np.minimum(corners.min(axis=0), 0)


def generating_values(volume, level, verts, faces, cell, tol=1e-4):
    """scikit-image's values as its Cython loop makes them: each face raises its vertices to the range of the cell
    that made it. That cell is found as the one whose box holds the face's three vertices; faces that more than one
    cell's box holds (a vertex at a sample) leave their vertices unchecked. Returns (values, checked)."""
    g = verts.astype(np.float64)[faces] / np.asarray(cell)  # (F, 3 vertices, 3 axes) in grid units
    lo = np.ceil(g.max(axis=1) - 1 - tol).astype(np.int64)
    hi = np.floor(g.min(axis=1) + tol).astype(np.int64)
    top = np.array(volume.shape) - 2
    lo, hi = np.clip(lo, 0, top), np.clip(hi, 0, top)
    alone = (lo == hi).all(axis=1)
    r = cell_ranges(volume, level)[lo[:, 0], lo[:, 1], lo[:, 2]]
    out = np.zeros(len(verts), np.float32)
    checked = np.ones(len(verts), bool)
    for col in range(3):
        np.maximum.at(out, faces[:, col], r)
        checked[faces[~alone, col]] = False
    return out, checked


def check_masked_values(vol, level, full, part, mask, spacing):
    """The masked mesh is the whole one less the triangles whose centroid's cell has its last corner outside the
    mask; a vertex that lost triangles takes the ranges of those kept (their cells from their centroids), the others
    keep their values in the whole mesh."""
    c = np.clip(np.floor(full[0].astype(np.float64)[full[1]].sum(axis=1) / (3 * np.asarray(spacing))).astype(int), 0,
                np.array(vol.shape) - 2)
    kept = mask[c[:, 0] + 1, c[:, 1] + 1, c[:, 2] + 1]
    whole = np.flatnonzero(np.bincount(full[1][kept].ravel(), minlength=len(full[0])))
    at = np.full(len(full[0]), -1)
    at[whole] = np.arange(len(whole))
    np.testing.assert_array_equal(part[1], at[full[1][kept]])
    np.testing.assert_array_equal(part[0], full[0][whole])
    border = np.isin(whole, full[1][~kept])
    assert border.any() and not border.all()
    np.testing.assert_array_equal(part[3][border], numpy_values(vol, level, part[0], part[1], spacing)[border])
    np.testing.assert_array_equal(part[3][~border], full[3][whole][~border])


@pytest.mark.parametrize("device", devices())
def test_values_and_mask_as_numpy_computes_them(device, rng):
    vol = field(rng)
    spacing = (0.5, 1.0, 2.0)
    full = parasurf.marching_cubes(vol, 0.5, spacing=spacing, device=device)
    want, checked = generating_values(vol, 0.5, full[0], full[1], spacing)
    assert checked.mean() > 0.95  # (faces that two cells hold leave a few unchecked: 97.7 % or more over 300 seeds)
    np.testing.assert_array_equal(full[3][checked], want[checked])
    mask = rng.uniform(size=vol.shape) < 0.8
    part = parasurf.marching_cubes(vol, 0.5, spacing=spacing, mask=mask, device=device)
    assert 0 < len(part[1]) < len(full[1])
    # Every kept face's cell has its last corner in the mask; every vertex is used.
    c = np.clip(np.floor(part[0].astype(np.float64)[part[1]].sum(axis=1) / (3 * np.asarray(spacing))).astype(int), 0,
                np.array(vol.shape) - 2)
    assert mask[c[:, 0] + 1, c[:, 1] + 1, c[:, 2] + 1].all()
    assert len(np.unique(part[1])) == len(part[0])
    check_masked_values(vol, 0.5, full, part, mask, spacing)
    step = parasurf.marching_cubes(vol, 0.5, spacing=spacing, step_size=2, device=device)
    want, checked = generating_values(vol[::2, ::2, ::2], 0.5, step[0], step[1], [2 * s for s in spacing])
    assert checked.mean() > 0.95
    np.testing.assert_array_equal(step[3][checked], want[checked])


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("threads", [1, 3])
def test_values_on_ties_nan_and_borders(device, threads, rng):
    """Samples equal to the level put vertices at samples, NaN samples make NaN ranges, and the border cells have
    fewer neighbours: each vertex still takes the largest range of the cells that made its faces, on one thread and on
    three (which share vertices between their rows). With a mask, a vertex that lost triangles takes the cells of the
    triangles kept."""
    vol = rng.integers(0, 4, size=(21, 22, 23)).astype(np.float32)
    vol[rng.uniform(size=vol.shape) < 0.002] = np.nan
    spacing = (0.1, 0.3, 0.7)
    out = parasurf.marching_cubes(vol, 2.0, spacing=spacing, device=device, threads=threads)
    want, checked = generating_values(vol, 2.0, out[0], out[1], spacing)
    assert checked.mean() > 0.5 and np.isnan(out[3]).any()
    np.testing.assert_array_equal(out[3][checked], want[checked])
    mask = rng.uniform(size=vol.shape) < 0.9
    part = parasurf.marching_cubes(vol, 2.0, spacing=spacing, mask=mask, device=device, threads=threads)
    check_masked_values(vol, 2.0, out, part, mask, spacing)


@pytest.mark.parametrize("device", devices())
def test_views_are_read_in_place_and_equal_copies(device, rng):
    vol = field(rng)
    for view in (vol.T, vol[::-1, :, ::2], np.asfortranarray(vol), vol[2:-3, 1:, 4:]):
        address = parasurf._parasurf._view(view)[0]
        assert address == view.__array_interface__["data"][0]  # the view itself, not a copy
        a = parasurf.marching_cubes(view, 0.5, device=device)
        b = parasurf.marching_cubes(np.ascontiguousarray(view), 0.5, device=device)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_dlpack_objects_are_read_in_place(rng):
    vol = field(rng)
    if not hasattr(vol, "__dlpack__"):
        pytest.skip("numpy %s has no DLPack export" % np.__version__)

    class OnlyDLPack:  # what a framework without __array__ offers
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    class HostTensor(OnlyDLPack):  # a torch CPU tensor: the class has the CUDA interface, which raises on the host
        @property
        def __cuda_array_interface__(self):
            raise AttributeError("not a CUDA tensor")

    b = parasurf.marching_cubes(vol, 0.5, device="cpu")
    for wrapped in (OnlyDLPack(vol), HostTensor(vol)):
        assert parasurf._parasurf._view(wrapped)[0] == vol.__array_interface__["data"][0]
        a = parasurf.marching_cubes(wrapped, 0.5, device="cpu")
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    vol = field(rng)
    t = torch.from_numpy(vol)
    assert parasurf._parasurf._view(t)[0] == t.data_ptr()
    a = parasurf.marching_cubes(t, 0.5, device="cpu")
    b = parasurf.marching_cubes(vol, 0.5, device="cpu")
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), y)


def cuda_frameworks():
    out = []
    try:
        import torch
        if torch.cuda.is_available():
            out.append("torch")
    except ImportError:
        pass
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        out.append("cupy")
    except Exception:
        pass
    return out


@pytest.mark.parametrize("framework", cuda_frameworks() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no CUDA array framework (torch or cupy with a GPU)"))])
def test_cuda_arrays_stay_on_the_device(framework, rng):
    if not parasurf.cuda_available():
        pytest.skip("parasurf has no CUDA device")
    vol = field(rng, (48, 40, 44))
    mask = rng.uniform(size=vol.shape) < 0.9
    if framework == "torch":
        import torch
        d, dm = torch.from_numpy(vol).cuda(), torch.from_numpy(mask).cuda()
        ptr, home, kind = d.data_ptr(), lambda x: x.cpu().numpy(), torch.Tensor
    else:
        import cupy
        d, dm = cupy.asarray(vol), cupy.asarray(mask)
        ptr, home, kind = d.data.ptr, cupy.asnumpy, cupy.ndarray
    assert parasurf._parasurf._view(d)[0] == ptr  # read where it lies
    for kw in ({}, {"gradient_direction": "ascent", "spacing": (1.0, 0.5, 2.0)}, {"step_size": 2}, {"method": "lorensen"}):
        for level in (0.5, None):
            ours = parasurf.marching_cubes(d, level, mask=dm, **kw)
            assert all(isinstance(x, kind) for x in ours), type(ours[0])
            ref = parasurf.marching_cubes(vol, level, mask=mask, device="cuda", **kw)
            for x, y in zip(ours, ref):
                np.testing.assert_array_equal(home(x), y)


@pytest.mark.parametrize("framework", cuda_frameworks() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no CUDA array framework (torch or cupy with a GPU)"))])
def test_cuda_arrays_weld_crossings_rounded_onto_samples(framework):
    """Without degenerate triangles, a device array whose samples lie a rounding from the level gives the host
    array's welded mesh (scikit-image's anisotropic test ellipsoid)."""
    if not parasurf.cuda_available():
        pytest.skip("parasurf has no CUDA device")
    from test_marching_cubes import ellipsoid_levelset
    spacing = (1.0, 10 / 6.0, 16 / 6.0)
    vol = np.ascontiguousarray(ellipsoid_levelset(6, 10, 16, spacing=spacing), dtype=np.float32)
    if framework == "torch":
        import torch
        d, home = torch.from_numpy(vol).cuda(), lambda x: x.cpu().numpy()
    else:
        import cupy
        d, home = cupy.asarray(vol), cupy.asnumpy
    for allow in (True, False):
        ours = parasurf.marching_cubes(d, 0.0, spacing=spacing, allow_degenerate=allow)
        ref = parasurf.marching_cubes(vol, 0.0, spacing=spacing, allow_degenerate=allow, device="cuda")
        for x, y in zip(ours, ref):
            np.testing.assert_array_equal(home(x), y)


def test_bad_arrays_raise_scikit_image_errors():
    with pytest.raises(ValueError):
        parasurf.marching_cubes(np.zeros((4, 4)), 0)
    with pytest.raises(ValueError):
        parasurf.marching_cubes(np.zeros((0, 4, 4)), 0)
    with pytest.raises(ValueError):
        parasurf.marching_cubes(np.empty((4, 4, 4), dtype=object), 0)
    base = np.zeros(64, np.float32)
    huge = np.lib.stride_tricks.as_strided(base, shape=(1000, 1000, 1000), strides=(1 << 40, 1 << 30, 4))
    with pytest.raises(ValueError):
        parasurf.marching_cubes(huge, 0.5)
    outside = np.lib.stride_tricks.as_strided(base, shape=(8, 8, 8), strides=(256, 32, 4))
    with pytest.raises(ValueError):
        parasurf.marching_cubes(outside, 0.5)
    # Other dtypes are converted, as scikit-image does.
    vol = np.zeros((6, 6, 6), np.int64)
    vol[2:4, 2:4, 2:4] = 10
    assert len(parasurf.marching_cubes(vol, 5)[1]) > 0
    assert len(parasurf.marching_cubes(vol.astype(np.float16), 5)[1]) > 0


def test_progress_and_interrupt():
    seen = []
    vol = np.zeros((10, 10, 10), np.float32)
    vol[3:7, 3:7, 3:7] = 1
    parasurf.marching_cubes(vol, 0.5, device="cpu", progress=seen.append)
    assert seen and seen[-1] == 1.0
    # A one-slab call is heard before its end too, and never goes back.
    assert any(0 < f < 1 for f in seen) and seen == sorted(seen), seen

    def stop(fraction):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        parasurf.marching_cubes(vol, 0.5, device="cpu", progress=stop)
    # The engine is usable after an interrupted call.
    assert len(parasurf.marching_cubes(vol, 0.5, device="cpu")[1]) > 0


def test_ctrl_c_stops_marching_cubes_without_a_callback():
    # Without a progress callback the hook takes the GIL at most every 20 ms: Ctrl-C is still heard within the call,
    # at the end of its first sweep (where a callback hears 0.6), not after the call.
    import os
    import signal
    import threading
    import time

    y = np.linspace(-3, 3, 512, dtype=np.float32)
    q = y ** 4 - 5 * y ** 2
    vol = np.clip((q[:, None, None] + q[None, :, None] + q[None, None, :] + 11.8) * 4 + 128, 0, 255).astype(np.uint8)
    heard = []
    for _ in range(2):  # the second, warm call's times: the first pays for fresh pages
        heard.clear()
        start = time.monotonic()
        parasurf.marching_cubes(vol, 128.5, device="cpu", threads=1, progress=lambda f: heard.append(time.monotonic()))
    first, full = heard[0] - start, time.monotonic() - start
    if first < 0.022 or first > 0.5 * full:  # (the hook takes the GIL from 20 ms on)
        pytest.skip("the first sweep took %.3f s of %.3f s: too short to aim a signal at" % (first, full))
    took = []
    for _ in range(3):  # (a timer thread held up on a loaded machine may miss the sweep's end: up to three tries)
        timer = threading.Timer(0.5 * first, lambda: os.kill(os.getpid(), signal.SIGINT))
        start = time.monotonic()
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                parasurf.marching_cubes(vol, 128.5, device="cpu", threads=1)
        finally:
            timer.cancel()
        took.append(time.monotonic() - start)
        if took[-1] < 0.5 * (first + full):
            break
    assert took[-1] < 0.5 * (first + full), (took, first, full)


class OnlyCudaInterface:
    """What Numba or Warp arrays offer: the CUDA array interface alone."""

    def __init__(self, a):
        self.a = a
        self.__cuda_array_interface__ = a.__cuda_array_interface__


@pytest.mark.parametrize("framework", cuda_frameworks() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no CUDA array framework (torch or cupy with a GPU)"))])
def test_surfaces_of_gpu_control_points_stay_on_the_gpu(framework, rng):
    if not parasurf.cuda_available():
        pytest.skip("parasurf has no CUDA device")
    cps = rng.normal(size=(5, 4, 3))
    uv = rng.uniform(size=(300, 2))
    if framework == "torch":
        import torch
        d, kind, home = torch.from_numpy(cps).cuda(), torch.Tensor, lambda x: x.cpu().numpy()
    else:
        import cupy
        d, kind, home = cupy.asarray(cps), cupy.ndarray, cupy.asnumpy
    for precision in ("float", "double"):
        for kw in ({"resolution": (33, 17)}, {"uv": uv}):
            ours = parasurf.evaluate_surface(d, derivatives=True, second_derivatives=True, precision=precision, **kw)[2]
            ref = parasurf.evaluate_surface(cps, derivatives=True, second_derivatives=True, precision=precision,
                                            device="cuda", **kw)[2]
            assert set(ours) == set(ref)
            for key in ref:
                assert isinstance(ours[key], kind), key
                np.testing.assert_array_equal(home(ours[key]), ref[key], err_msg=key)
    # An object with the CUDA array interface alone gets DeviceArrays, which frameworks take without a copy.
    plain = parasurf.evaluate_surface(OnlyCudaInterface(d), (8, 8))[0]
    assert isinstance(plain, parasurf.DeviceArray) and plain.shape == (8, 8, 3)
    ref = parasurf.evaluate_surface(cps, (8, 8), device="cuda")[0]
    if framework == "torch":
        import torch
        np.testing.assert_array_equal(torch.from_dlpack(plain).cpu().numpy(), ref)
    else:
        import cupy
        np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(plain)), ref)
    vol = field(rng, (20, 22, 24))
    dv = torch.from_numpy(vol).cuda() if framework == "torch" else cupy.asarray(vol)
    mesh = parasurf.marching_cubes(OnlyCudaInterface(dv), 0.5)
    assert isinstance(mesh[0], parasurf.DeviceArray)
    np.testing.assert_array_equal(home(torch.from_dlpack(mesh[1]) if framework == "torch" else cupy.from_dlpack(mesh[1])),
                                  parasurf.marching_cubes(vol, 0.5, device="cuda")[1])


@pytest.mark.parametrize("framework", cuda_frameworks() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no CUDA array framework (torch or cupy with a GPU)"))])
def test_ffd_and_solver_results_follow_gpu_inputs(framework, rng):
    # ffd of GPU vertices runs on the GPU and leaves its mesh there (the same arrays, to the bit, as the host call on
    # the GPU); the solver functions, which solve from host copies, hand their arrays back on the input's GPU.
    if not parasurf.cuda_available():
        pytest.skip("parasurf has no CUDA device")
    if framework == "torch":
        import torch
        dev, kind, home = (lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()), torch.Tensor, \
            (lambda x: x.cpu().numpy())
    else:
        import cupy
        dev, kind, home = cupy.asarray, cupy.ndarray, cupy.asnumpy
    t = np.linspace(0, 1, 4)
    verts = np.array([[x, y, z] for x in t for y in t for z in t]) + rng.normal(0, 0.01, (64, 3))
    faces = np.array([[a, b, c] for a, b, c in rng.integers(0, 64, (40, 3)) if len({a, b, c}) == 3])
    lat = parasurf.lattice(verts, count=(5, 5, 4), degree=3)
    lat.control_points[...] += rng.normal(0, 0.02, lat.control_points.shape)
    for method, precision in (("point", "double"), ("accurate", "float"), ("uus", "double")):
        ours = parasurf.ffd(dev(verts), faces, lat, method=method, level=2, precision=precision,
                            allow_non_manifold=True)
        ref = parasurf.ffd(verts, faces, lat, method=method, level=2, precision=precision, device="cuda",
                           allow_non_manifold=True)
        for a, b in zip(ours, ref):
            assert isinstance(a, kind)
            np.testing.assert_array_equal(home(a), b)
    with pytest.raises(ValueError, match="device must be"):
        parasurf.ffd(dev(verts), faces, lat, device="cpu", allow_non_manifold=True)
    queries = rng.uniform(-3, 3, (50, 3)) + [0, 0, 1.5]
    got, want = parasurf.closest_points(dev(queries)), parasurf.closest_points(queries)
    for key in ("points", "distance", "patch", "uv"):
        assert isinstance(got[key], kind), key
        np.testing.assert_array_equal(home(got[key]), want[key], err_msg=key)
    assert got["status"] == want["status"]
    o = np.tile([0.0, 1.0, 8.0], (20, 1))
    d = np.column_stack([rng.uniform(-0.3, 0.3, 20), rng.uniform(-0.3, 0.1, 20), -np.ones(20)])
    got, want = parasurf.intersect_rays(dev(o), dev(d)), parasurf.intersect_rays(o, d)
    for key in ("hit", "t", "points", "patch"):
        assert isinstance(got[key], kind), key
        np.testing.assert_array_equal(home(got[key]), want[key], err_msg=key)
    pairs = rng.uniform(size=(30, 2, 4, 2))
    got, want = parasurf.intersect_curves_batch(dev(pairs), flat=True), parasurf.intersect_curves_batch(pairs, flat=True)
    for key in ("pair", "params", "points", "tangent"):
        assert isinstance(got[key], kind), key
        np.testing.assert_array_equal(home(got[key]), want[key], err_msg=key)
    got, want = parasurf.intersect_curves(dev(pairs[0, 0]), pairs[0, 1]), parasurf.intersect_curves(pairs[0, 0], pairs[0, 1])
    assert isinstance(got["params"], kind)
    np.testing.assert_array_equal(home(got["params"]), want["params"])


def small_function_calls(rng):
    """Every function whose inputs are a few numbers (curves, control nets, surface dicts, motions, parameter pairs),
    as calls on the inputs made by ``to`` (numpy arrays, DLPack objects, GPU tensors); random inputs of the seed."""
    # (near the two diagonals of the unit square: they cross)
    curve_a = np.linspace(0, 1, 4)[:, None] * [1, 1] + rng.uniform(-0.1, 0.1, (4, 2))
    curve_b = np.linspace(0, 1, 5)[:, None] * [1, -1] + [0, 1] + rng.uniform(-0.1, 0.1, (5, 2))
    net = rng.uniform(size=(4, 4, 3))
    other = net + [0, 0, 0.1]
    other[1, 1, 2] -= 0.5
    plane = np.array([[[-2.0, -2.0, 0.0], [-2.0, 2.0, 0.0]], [[2.0, -2.0, 0.0], [2.0, 2.0, 0.0]]])
    bowl = np.array([[[x, y, 1 + (1 - 2 * abs(x)) + (1 - 2 * abs(y))] for y in (-1.0, 0.0, 1.0)] for x in (-1.0, 0.0, 1.0)])
    motion = np.array([[1 + 0.2 * i / 3, 0.1 * i / 3, 0, -2 * i / 3] for i in range(4)])
    mirrors = [np.array([[np.cos(c - 0.5), np.sin(c - 0.5)], [1.2 * np.cos(c), 1.2 * np.sin(c)],
                         [np.cos(c + 0.5), np.sin(c + 0.5)]]) for c in (np.pi / 2, np.pi / 2 + 2.1, np.pi / 2 + 4.2)]
    uv = rng.uniform(size=(40, 2))
    return {
        "intersect_curves": lambda to: parasurf.intersect_curves(to(curve_a), to(curve_b), threads=1),
        "intersect_curves_batch (list)": lambda to: parasurf.intersect_curves_batch(
            [(to(curve_a), to(curve_b)), (to(curve_b), to(curve_a + [0.2, 0]))], device="cpu", threads=1),
        "intersect_curves_batch (array)": lambda to: parasurf.intersect_curves_batch(
            to(np.stack([np.stack([curve_a, curve_b[:4]]), np.stack([curve_b[1:], curve_a])])), device="cpu",
            threads=1, flat=True),
        "hausdorff_distance": lambda to: parasurf.hausdorff_distance(to(curve_a), to(curve_b), threads=1),
        "hausdorff_distance (B-spline)": lambda to: parasurf.hausdorff_distance(
            {"points": to(curve_b), "degree": 2, "knots": to(np.array([0, 0, 0, 0.4, 0.7, 1, 1, 1.0]))}, to(curve_a),
            threads=1),
        "curve_bisector": lambda to: parasurf.curve_bisector(to(curve_a), to(curve_b + [1.5, 0]), threads=1),
        "ray_traps": lambda to: parasurf.ray_traps([to(m) for m in mirrors], threads=1),
        "intersect_surfaces": lambda to: parasurf.intersect_surfaces(to(net), to(other), threads=1),
        "surface_bisector": lambda to: parasurf.surface_bisector(to(net), to(other + [0, 0, 1]), threads=1),
        "contact_points": lambda to: parasurf.contact_points(
            to(bowl), to(plane), {"points": to(motion), "degree": 3, "knots": to(np.array([0, 0, 0, 0, 1, 1, 1, 1.0]))},
            threads=1),
        "tessellate": lambda to: parasurf.tessellate(surfaces={"points": to(net)}, resolution=5, device="cpu"),
        "evaluate_bspline_surface": lambda to: parasurf.evaluate_bspline_surface(
            {"points": to(net)}, to(uv), derivatives=True, device="cpu", threads=1)[2],
        "evaluate_surface (pairs)": lambda to: parasurf.evaluate_surface(net, uv=to(uv), device="cpu", threads=1)[2],
    }


def leaves(v):
    """The arrays in a result (dicts, lists and tuples, nested), in order, and its other values."""
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in leaves(v[k])]
    if isinstance(v, (list, tuple)):
        return [x for e in v for x in leaves(e)]
    return [v]


def assert_same_results(name, got, want, kind, home):
    """A result equal to the numpy call's ``want``, its arrays of type ``kind`` (``home`` brings one to numpy)."""
    got, want = leaves(got), leaves(want)
    assert len(got) == len(want), name
    for x, y in zip(got, want):
        if isinstance(y, np.ndarray):
            assert isinstance(x, kind), name
            np.testing.assert_array_equal(home(x), y, err_msg=name)
        else:
            assert x == y or (x != x and y != y), name
    assert any(y.size if isinstance(y, np.ndarray) else isinstance(y, float) for y in want), \
        name + ": the inputs found nothing to compare"


class OnlyDLPackArray:
    """An array offered through DLPack alone, as a framework without __array__ offers it."""

    def __init__(self, a):
        self.a = np.ascontiguousarray(a)

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_every_function_takes_dlpack_inputs(rng):
    # Host objects that speak DLPack alone are read as the numpy arrays they hold: the same results, as numpy arrays.
    if not hasattr(np.ones(1), "__dlpack__"):
        pytest.skip("numpy %s has no DLPack export" % np.__version__)
    for name, call in small_function_calls(rng).items():
        assert_same_results(name, call(OnlyDLPackArray), call(lambda a: a), np.ndarray, lambda x: x)


@pytest.mark.parametrize("framework", cuda_frameworks() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no CUDA array framework (torch or cupy with a GPU)"))])
def test_every_function_answers_on_the_gpu_of_its_inputs(framework, rng):
    # GPU inputs of the functions that compute from a few host numbers: the same results, handed back on the
    # input's GPU in its framework (torch in, torch out).
    if framework == "torch":
        import torch
        dev, kind, home = (lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()), torch.Tensor, \
            (lambda x: x.cpu().numpy())
    else:
        import cupy
        dev, kind, home = cupy.asarray, cupy.ndarray, cupy.asnumpy
    for name, call in small_function_calls(rng).items():
        assert_same_results(name, call(dev), call(lambda a: a), kind, home)


def test_a_numpy_this_build_cannot_read_is_refused():
    # pybind11 before 2.12 misreads NumPy 2's arrays without an error: the package refuses to load then, with the
    # remedy, instead of computing from wrong strides.
    problem = parasurf._numpy_problem
    assert problem((2, 10, 3), "1.24.2") is None
    assert problem((2, 12, 0), "2.4.6") is None and problem((3, 0, 1), "2.0.0") is None
    message = problem((2, 10, 3), "2.4.6")
    assert "pybind11 2.10" in message and "NumPy 2.4.6" in message and "2.12" in message
    assert problem((2, 11, 1), "2.0.0rc1") is not None
    assert problem(parasurf._parasurf._pybind11_version, np.__version__) is None  # this build, this NumPy
