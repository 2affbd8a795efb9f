"""parasurf: fast parametric and volumetric geometry on CPUs and NVIDIA GPUs.

numpy in, numpy out; ``marching_cubes``, ``evaluate_surface`` and ``ffd`` also take PyTorch, CuPy and JAX arrays in
place (DLPack or the CUDA array interface), and every other function takes them through host copies of their few
numbers; all answer in the caller's framework, on the caller's device. Every function
takes ``device="auto" | "cpu" | "cuda"`` (auto: CUDA when a GPU is present; marching cubes on a host array
runs where its estimated time is shorter, see ``docs/python.md``).
Errors from the library are raised as ValueError (bad arguments or input), OSError (files), MemoryError or
RuntimeError (devices).
"""
import os as _os
import warnings as _warnings

import numpy as _np

from . import _parasurf


def _numpy_problem(pybind11_version, numpy_version):
    """Why an extension built with this pybind11 cannot use this NumPy, or None. pybind11 before 2.12 reads NumPy
    1's array structures: under NumPy 2 it misreads them (strides of 0, other dtypes) and raises nothing, so every
    result would be wrong."""
    try:
        major = int(numpy_version.split(".")[0])
    except ValueError:
        return None
    if major < 2 or tuple(pybind11_version[:2]) >= (2, 12):
        return None
    return ("parasurf: this build of the extension used pybind11 %d.%d, which cannot read NumPy %s arrays (NumPy 2 "
            "needs pybind11 2.12 or newer) and would return wrong results. Rebuild it with a newer pybind11 "
            "(`pip install .` fetches one; for scripts/run.sh, `pip install 'pybind11>=2.12'` and configure with "
            "-Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)), or run it with NumPy 1.x."
            % (pybind11_version[0], pybind11_version[1], numpy_version))


_problem = _numpy_problem(_parasurf._pybind11_version, _np.__version__)
if _problem:
    raise ImportError(_problem)

from ._parasurf import DeviceArray, Lattice, __version__, cuda_available  # noqa: E402


def _path(path, what="path"):
    """A file argument as the module takes it: a str, bytes or os.PathLike, else TypeError (an array or a number
    would otherwise be read as a file name)."""
    try:
        return _os.fsdecode(_os.fspath(path))
    except TypeError:
        raise TypeError("%s must be a str or os.PathLike, not %s" % (what, type(path).__name__)) from None


def _points_of(d, what, keys=("degree", "knots")):
    """The ``points`` entry of a dict argument, else ValueError naming the argument; a key other than ``points`` and
    ``keys`` is a ValueError too (a misspelt ``weights`` would otherwise make a rational shape polynomial)."""
    if "points" not in d:
        raise ValueError("%s: a dict needs 'points' (its control points)" % what)
    unknown = sorted(str(k) for k in d if k != "points" and k not in keys)
    if unknown:
        raise ValueError("%s: unknown key%s %s (this function takes %s)" % (
            what, "s" if len(unknown) > 1 else "", ", ".join(repr(k) for k in unknown),
            ", ".join(repr(k) for k in ("points",) + tuple(keys))))
    return d["points"]


__all__ = ["read_volume", "write_mesh", "marching_cubes", "evaluate_surface", "evaluate_bspline_surface", "tessellate", "lattice", "ffd", "intersect_curves", "intersect_curves_batch", "ray_traps",
           "hausdorff_distance", "curve_bisector", "intersect_surfaces", "contact_points", "surface_bisector", "closest_points", "patch_nets",
           "intersect_rays", "Lattice",
           "DeviceArray", "cuda_available", "__version__"]

_fallback_checked = False


def _auto(device):
    """The device argument as given; the first "auto" call on a GPU this build cannot run warns once."""
    global _fallback_checked
    if device == "auto" and not _fallback_checked:
        _fallback_checked = True
        reason = _parasurf.cuda_fallback_warning()
        if reason:
            _warnings.warn("parasurf: " + reason, RuntimeWarning, stacklevel=3)
    return device


_NATIVE = {_np.dtype(t) for t in ("float32", "float64", "uint8", "int8", "uint16", "int16", "uint32", "int32")}
_NATIVE_CHARS = frozenset(d.char for d in _NATIVE)
_UNIT_SPACING = (1.0, 1.0, 1.0)


def marching_cubes(volume, level=None, *, spacing=_UNIT_SPACING, gradient_direction="descent", step_size=1,
                   allow_degenerate=True, method="lewiner", mask=None, device="auto", threads=0, progress=None):
    """Isosurface of a 3-D array, a drop-in for ``skimage.measure.marching_cubes``.

    Parameters follow scikit-image: ``volume`` (M, N, P) array; ``level`` (default: the middle of the data
    range); ``spacing`` per array axis; ``gradient_direction`` "descent" (the object holds the larger values) or
    "ascent"; ``step_size`` >= 1 (a coarser grid); ``allow_degenerate``; ``method`` "lewiner" (MC33, as
    scikit-image's: the topology of the trilinear interpolant, face and interior ambiguities resolved) or
    "lorensen" (the classic table); ``mask`` (M, N, P) bool: only cells whose last corner is True.
    Plus ``device`` ("auto", "cpu", "cuda"), ``threads`` (CPU threads, 0 = all) and ``progress`` (called with the
    fraction done between slabs; Ctrl-C stops a call there too).

    ``volume`` may be a numpy array or any array that exposes DLPack or ``__cuda_array_interface__`` (PyTorch,
    CuPy, JAX, Warp...), read in place. A GPU array is processed on its GPU and the results stay there, returned
    in the caller's framework (torch in, torch out; CuPy in, CuPy out; otherwise ``parasurf.DeviceArray``, which
    speaks DLPack); see docs/python.md for streams and lifetimes.

    Returns ``verts`` (V, 3) float32 in array index order times spacing, ``faces`` (F, 3) int32, ``normals``
    (V, 3) float32 (unit, down the gradient, in index order, as scikit-image's) and ``values`` (V,) float32: the
    largest value range of a cell next to the vertex (scikit-image's "maximum value of the data in the local
    region"). Raises ValueError for a level outside the data range or bad arguments, RuntimeError when no surface
    is found.
    """
    if method not in ("lewiner", "lorensen"):
        raise ValueError("method should be one of 'lewiner', 'lorensen' or '_lorensen'.")
    if gradient_direction not in ("descent", "ascent"):
        raise ValueError("Incorrect input %s in `gradient_direction`, see docstring." % (gradient_direction,))
    if len(spacing) != 3:
        raise ValueError("`spacing` must consist of three floats.")
    step_size = int(step_size)
    if step_size < 1:
        raise ValueError("step_size must be at least one.")
    # The common call costs a few attribute reads here: a numpy array of a sample type in the machine's byte order
    # that views no other array (nothing to convert, no view's reach to check) goes as it is, and the default
    # spacing as it is.
    if not (type(volume) is _np.ndarray and volume.base is None and volume.ndim == 3 and
            volume.dtype.char in _NATIVE_CHARS and volume.dtype.isnative):
        volume = _as_array(volume, "volume")
    if mask is not None:
        mask = _as_array(mask, "mask", mask=True)
    if spacing is not _UNIT_SPACING:
        spacing = tuple(float(s) for s in spacing)
    try:
        verts, faces, normals, values, _ = _parasurf.marching_cubes(
            volume, None if level is None else float(level), spacing, gradient_direction,
            step_size, bool(allow_degenerate), method, mask, _auto(device), int(threads), progress)
    except ValueError as e:
        if "outside the data range" in str(e):
            raise ValueError("Surface level must be within volume data range (%s)." % e) from None
        raise
    if faces.shape[0] == 0:
        raise RuntimeError("No surface found at the given iso value.")
    if isinstance(verts, _parasurf.DeviceArray):
        wrap = _framework_of(volume)
        return tuple(wrap(a) for a in (verts, faces, normals, values))
    return verts, faces, normals, values


def _as_array(x, what, mask=False):
    """``x`` as an array the native module reads in place: numpy arrays of the sample types, and anything with
    DLPack or the CUDA array interface, pass as they are; other dtypes are converted (as scikit-image does)."""
    if isinstance(x, _np.ndarray):
        if x.ndim != 3:
            raise ValueError("Input volume should be a 3D numpy array.")
        if x.dtype == object:
            raise ValueError("%s: dtype object is not supported (a numeric array is needed)" % what)
        _check_within_base(x, what)
        if mask:
            return x if x.dtype == _np.bool_ else x.astype(bool)
        return x if x.dtype in _NATIVE else x.astype(_np.float32)
    # The cheap tests first: PyTorch builds __cuda_array_interface__ anew on every read of the instance's.
    if hasattr(x, "__dlpack__") or hasattr(type(x), "__cuda_array_interface__") or hasattr(x, "__cuda_array_interface__"):
        dt = str(getattr(x, "dtype", "float32")).replace("torch.", "")
        if dt in ("float32", "float64", "uint8", "int8", "uint16", "int16", "uint32", "int32", "bool"):
            return x if not mask or dt == "bool" else _convert(x, "bool")
        return _convert(x, "bool" if mask else "float32")
    return _as_array(_np.asarray(x), what, mask)


def _check_within_base(x, what):
    """A view (as_strided) must lie inside the memory of the array it views: reading past it would crash."""
    root = x
    while True:
        b = getattr(root, "base", None)
        if not isinstance(b, _np.ndarray):
            b = getattr(b, "base", None)  # as_strided's interface holder keeps the array it views
        if not isinstance(b, _np.ndarray):
            break
        root = b
    if root is x or x.size == 0:
        return
    lo = hi = x.__array_interface__["data"][0]
    for n, s in zip(x.shape, x.strides):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    hi += x.itemsize
    start = root.__array_interface__["data"][0]
    if lo < start or hi > start + root.nbytes:
        raise ValueError("%s: the view's shape and strides reach outside the %d bytes of the array it views "
                         "(bytes %d to %d)" % (what, root.nbytes, lo - start, hi - start))


def _convert(x, dtype):
    """The same array in another dtype, by its own framework (it stays on its device)."""
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        import torch
        return x.to(getattr(torch, dtype))
    return x.astype(dtype)


def _framework_of(x):
    """How to hand a DeviceArray back in the framework of ``x`` (no copy)."""
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        import torch.utils.dlpack
        # The capsule itself: the library's work is finished, so no stream handshake is needed (torch.from_dlpack
        # asks the array and torch for streams, a cost comparable to a small call's GPU work).
        return lambda a: torch.utils.dlpack.from_dlpack(a.__dlpack__())
    if mod == "cupy":
        import cupy
        return cupy.from_dlpack
    if mod in ("jax", "jaxlib"):
        import jax.dlpack
        return jax.dlpack.from_dlpack
    return lambda a: a


def evaluate_surface(control_points, resolution=(64, 64), *, uv=None, weights=None, derivatives=False,
                     second_derivatives=False, precision="double", device="auto", threads=0):
    """Evaluate a tensor-product Bézier surface on a uniform grid or at (u, v) pairs.

    ``control_points`` (m+1, n+1, 3); ``weights`` (m+1, n+1) for a rational surface; ``resolution`` (rows, cols)
    >= 2 samples along u and v, or ``uv`` (N, 2) parameter pairs in [0, 1] instead. Returns ``points`` and unit
    ``normals`` ((rows, cols, 3) on a grid, (N, 3) at pairs) and a dict with them, ``degenerate`` (True where
    Su x Sv vanishes: the normal is then the limit normal), and with ``derivatives=True`` ``du`` and ``dv``, with
    ``second_derivatives=True`` ``duu``, ``duv`` and ``dvv``; float64 or float32 (``precision``). The library writes
    the arrays returned (each is a view of one (3, count) block: no copy). Control points on a GPU (PyTorch, CuPy,
    JAX) give results on that GPU, in the same framework.
    """
    rows, cols = (resolution, resolution) if _np.isscalar(resolution) else resolution
    gpu = _gpu_of(control_points)
    pts = _np.asarray(_host(control_points), dtype=_np.float64)
    w = None if weights is None else _np.asarray(_host(weights), dtype=_np.float64)
    pairs = None if uv is None else _np.asarray(_host(uv), dtype=_np.float64)
    out = _parasurf.evaluate_surface(pts, w, pairs, int(rows), int(cols), bool(derivatives), bool(second_derivatives),
                                     precision, _auto(device), int(threads), gpu)
    if gpu >= 0:
        wrap = _framework_of(control_points)
        out = {k: wrap(v) for k, v in out.items()}
    else:
        out = _results_like(_on_gpu(uv, weights), out)
    return out["points"], out["normals"], out


def _gpu_of(x):
    """The CUDA device an array lies on, or -1 (host memory, or not an array)."""
    if hasattr(x, "__dlpack_device__") and not isinstance(x, _np.ndarray):
        kind, index = x.__dlpack_device__()
        return int(index) if int(kind) in (2, 13) else -1
    if hasattr(x, "__cuda_array_interface__"):
        view = _parasurf._view(x)  # (address, shape, strides, space, device, type)
        return view[4] if view[3] == "cuda" else -1
    return -1


def _host(x):
    """Small inputs (control nets, curves, point lists) as host arrays: a GPU tensor's few numbers are copied."""
    if isinstance(x, _np.ndarray) or not (hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__")):
        return x
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        return x.detach().cpu().numpy()
    if mod == "cupy":
        return x.get()
    if hasattr(x, "__dlpack__"):
        try:
            return _np.from_dlpack(x)
        except (RuntimeError, TypeError, BufferError):
            pass
    if hasattr(x, "__cuda_array_interface__"):  # Numba, Warp: through a framework that reads the interface
        for name in ("cupy", "torch"):
            try:
                lib = __import__(name)
            except ImportError:
                continue
            return lib.asnumpy(lib.asarray(x)) if name == "cupy" else lib.as_tensor(x, device="cuda").cpu().numpy()
    return _np.asarray(x)


def _on_gpu(*xs):
    """The first of the arguments ``xs`` that lies on a GPU (a dict by its ``points``, a list by its items), or None."""
    for x in xs:
        if isinstance(x, dict):
            x = x.get("points")
        if isinstance(x, (list, tuple)):  # (its arrays and dicts: a list of numbers holds no GPU array)
            x = _on_gpu(*(e for e in x if isinstance(e, dict) or hasattr(e, "__dlpack__")
                          or hasattr(e, "__cuda_array_interface__")))
        if x is not None and _gpu_of(x) >= 0:
            return x
    return None


def _results_like(x, out):
    """The arrays of a result (in dicts, lists and tuples, nested) in the framework of the input ``x`` and on its GPU
    when ``x`` lies on one (PyTorch, CuPy, JAX): the work runs on host copies of the few input numbers (a solve's
    preparation is host work), and its results go back to the caller's device. Other inputs: as they are."""
    if x is None or _gpu_of(x) < 0:
        return out
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        import torch
        move = lambda a: torch.from_numpy(a).to(x.device)  # noqa: E731
    elif mod == "cupy":
        import cupy

        def move(a):
            with cupy.cuda.Device(x.device.id):
                return cupy.asarray(a)
    elif mod in ("jax", "jaxlib"):
        import jax
        move = lambda a: jax.device_put(a, next(iter(x.devices())))  # noqa: E731
    else:
        return out

    def convert(v):
        if isinstance(v, _np.ndarray):
            return move(v)
        if isinstance(v, dict):
            return {k: convert(e) for k, e in v.items()}
        if isinstance(v, list):
            return [convert(e) for e in v]
        if isinstance(v, tuple):
            return tuple(convert(e) for e in v)
        return v
    return convert(out)


def tessellate(path=None, *, surfaces=None, resolution=16, tolerance=0.0, device="auto", progress=None):
    """Tessellate a patch model (.bv, .bpt, B-spline .json; None: the built-in Utah teapot) into a welded mesh.

    ``surfaces`` instead of a path: one B-spline/NURBS surface or a list of them, each a dict with ``points``
    (nu, nv, 3), ``degree`` (p, q) (default: nu - 1, nv - 1, a Bézier patch), ``knots`` (knots_u, knots_v)
    (default: clamped uniform) and ``weights`` (nu, nv) for a NURBS surface; each surface is a face group and
    surfaces that share a boundary are welded there. Returns ``verts`` (V, 3) float32, ``faces`` (F, 3) int32 and
    ``normals`` (V, 3) float32. ``tolerance`` > 0 chooses the resolution per patch from a chordal tolerance
    instead. ``progress`` is called with the fraction done between the phases (planning, evaluation, assembly);
    Ctrl-C is heard there too.
    """
    given = None
    if surfaces is not None:
        surfaces = [surfaces] if isinstance(surfaces, dict) else surfaces
        given = [_bspline(x) for x in surfaces]
    return _results_like(_on_gpu(surfaces), _parasurf.tessellate(None if path is None else _path(path), int(resolution),
                                                                 float(tolerance), _auto(device), progress, given))


def evaluate_bspline_surface(surface, uv, *, derivatives=False, second_derivatives=False, precision="double",
                             device="auto", threads=0):
    """Evaluate a B-spline or NURBS surface (a dict as in ``tessellate``'s ``surfaces``) at (u, v) pairs.

    ``uv`` (N, 2) lies in the knot domain [knots_u[p], knots_u[nu]] x [knots_v[q], knots_v[nv]]. Returns
    ``points`` (N, 3), unit ``normals`` (N, 3) and a dict with them, ``degenerate`` (True where Su x Sv vanishes),
    and with ``derivatives=True`` ``du`` and ``dv``, with ``second_derivatives=True`` ``duu``, ``duv`` and ``dvv``
    (with respect to u and v of the knot domain); float64 or float32 (``precision``): host arrays, or for points or
    ``uv`` on a GPU arrays on that GPU in the same framework. Each pair is evaluated on its Bézier piece (exact knot
    insertion), on the device asked for.
    """
    out = _results_like(_on_gpu(surface, uv), _parasurf.evaluate_bspline_surface(
        _bspline(surface), _np.asarray(_host(uv), dtype=_np.float64), bool(derivatives), bool(second_derivatives),
        precision, _auto(device), int(threads)))
    return out["points"], out["normals"], out


def _bspline(s):
    """A surface dict as the module takes it: (points, weights, degree, knots)."""
    if not isinstance(s, dict):
        raise TypeError("a B-spline surface is a dict with 'points' and optionally 'degree', 'knots', 'weights'")
    pts = _np.asarray(_host(_points_of(s, "surface", ("degree", "knots", "weights", "index"))), dtype=_np.float64)
    w = s.get("weights")
    w = None if w is None else _np.asarray(_host(w), dtype=_np.float64)
    degree = [int(d) for d in _host(s["degree"])] if s.get("degree") is not None else []
    knots = [_numbers(kn) for kn in s["knots"]] if s.get("knots") is not None else []
    return pts, w, degree, knots


def _numbers(x):
    """A knot vector (a list, or an array on any device) as a list of floats."""
    a = _np.asarray(_host(x), dtype=_np.float64)
    if a.ndim != 1:
        raise ValueError("knots: a list of numbers, not an array of shape %s" % (a.shape,))
    return a.tolist()


def lattice(vertices, count=(9, 9, 9), degree=(3, 3, 3), *, padding=0.05, knots=None, world_to_parameter=None):
    """A B-spline lattice over the box of ``vertices`` (V, 3), control points at rest (the identity).

    ``count`` and ``degree`` per axis (an int for all three); ``knots`` three knot vectors (empty for clamped
    uniform); ``world_to_parameter`` 12 numbers (3x4 affine) instead of the box. ``lat.control_points`` is a
    writable (n0, n1, n2, 3) view; ``lat.move_points(points, targets)`` does direct manipulation.
    """
    as3 = lambda x: (int(x),) * 3 if _np.isscalar(x) else tuple(int(v) for v in x)
    kn = None if knots is None else tuple([float(v) for v in k] for k in knots)
    w2p = None if world_to_parameter is None else tuple(float(v) for v in _np.ravel(world_to_parameter))
    return _parasurf.make_lattice(_np.asarray(_host(vertices), dtype=_np.float64), as3(count), as3(degree), float(padding),
                                  kn, w2p)


def ffd(vertices, faces, lattice, *, method="accurate", level=4, device="auto", precision="double",
        allow_non_manifold=False):
    """Deform a polygon mesh by a lattice (see ``parasurf.lattice``).

    ``vertices`` (V, 3); ``faces`` (F, k) array or a list of index lists (convex or not); ``method`` "point",
    "accurate" (exact trimmed Bézier pieces, each triangle into level^2 sub-triangles) or "uus". Returns
    ``verts`` (V', 3) float32, ``faces`` (F', 3) int32 and ``normals`` (V', 3) float32.
    Vertices on a GPU (PyTorch, CuPy, JAX, or the CUDA array interface) give the mesh on that GPU, in the same
    framework: the deformation runs there and its results are not brought home (the vertices and faces themselves,
    which the mesh's preparation reads, are copied to the host).
    """
    gpu = _gpu_of(vertices)
    faces = _host(faces)
    out = _parasurf.ffd(_np.asarray(_host(vertices), dtype=_np.float64), faces, lattice, method, int(level),
                        _auto(device), precision, bool(allow_non_manifold), gpu)
    if gpu >= 0:
        wrap = _framework_of(vertices)
        return tuple(wrap(a) for a in out)
    return out



def _limits(max_seconds, max_cells):
    """A solve's limits for the binding: None keeps the library's default (60 s, 20,000,000 cells per system)."""
    return (None if max_seconds is None else float(max_seconds), None if max_cells is None else int(max_cells))


def intersect_curves(a, b, *, tolerance=1e-7, threads=0, max_seconds=None, max_cells=None):
    """Intersections of two planar Bézier curves given by control points ``a`` (n, 2) and ``b`` (m, 2).

    Returns a dict: ``params`` (k, 2) the (s, t) parameter pairs, ``points`` (k, 2), ``tangent`` (k,) bool,
    ``overlaps`` (r, 4) rows (s0, s1, t0, t1) where the curves coincide, and ``status`` ("complete" or
    "limit reached: ..."). Each intersection is reported once, to about 1e-15, tangencies too (``tangent``: the
    curves' tangents are parallel there); where the curves also have the same curvature, to about 1e-8.
    ``max_seconds`` (60) and ``max_cells`` (per system, 2e7) bound the solve: past either, what was found returns
    with ``status`` "limit reached: ...".
    """
    return _results_like(_on_gpu(a, b), _parasurf.intersect_curves(
        _np.asarray(_host(a), dtype=_np.float64), _np.asarray(_host(b), dtype=_np.float64), float(tolerance),
        int(threads), _limits(max_seconds, max_cells)))


def intersect_curves_batch(pairs, *, tolerance=1e-7, device="auto", threads=0, flat=False, max_seconds=None,
                           max_cells=None):
    """``intersect_curves`` for many pairs ``[(a, b), ...]`` (or an array of shape (n, 2, k, 2)) at once (collision
    queries, every pair of curves of a drawing): one batch that the CPU threads share, or that a GPU solves in one traversal (``device="cuda"``;
    ``"auto"`` takes the GPU for batches of 2048 systems and more, and 128 per CPU thread, when one is present).
    Returns a list of dicts as ``intersect_curves`` returns them, in the pairs' order. With ``flat=True``, one
    dict of arrays for the whole batch instead (no Python object per pair, for large batches): ``pair`` (k,) int64
    the pair of each intersection, ``params`` (k, 2), ``points`` (k, 2), ``tangent`` (k,) in the pairs' order;
    ``overlap_pair`` (r,) and ``overlaps`` (r, 4); ``complete`` (n,) bool per pair and ``status`` (the first
    pair's status that is not "complete", else "complete").
    ``max_seconds`` (60) and ``max_cells`` (per system, 2e7) bound the solve: past either, what was found returns
    with ``status`` "limit reached: ...".
    """
    lead = pairs
    if isinstance(pairs, (list, tuple)) and pairs:
        # Curves that numpy cannot read as they are (GPU arrays, DLPack objects) are copied home, all of them when
        # the first pair holds such curves (a batch's curves are of one kind).
        lead = _on_gpu(*pairs[0]) if isinstance(pairs[0], (list, tuple)) else None
        foreign = lambda c: not isinstance(c, (_np.ndarray, list, tuple)) and (  # noqa: E731
            hasattr(c, "__dlpack__") or hasattr(c, "__cuda_array_interface__"))
        if isinstance(pairs[0], (list, tuple)) and any(foreign(c) for c in pairs[0]):
            pairs = [tuple(_host(c) for c in pair) for pair in pairs]
    points, counts = _pack_curve_pairs(_host(pairs))
    return _results_like(_on_gpu(lead), _parasurf.intersect_curves_packed(points, counts, float(tolerance), device,
                                                                          int(threads), _limits(max_seconds, max_cells),
                                                                          bool(flat)))


def _pack_curve_pairs(pairs):
    """(points (M, 2), counts (2n,)): the pairs' curves one after the other, converted once. An array of shape
    (n, 2, k, 2) (n pairs of curves of k control points each) is taken as it is."""
    if isinstance(pairs, _np.ndarray) and pairs.ndim == 4 and pairs.shape[1] == 2 and pairs.shape[3] == 2:
        points = _np.ascontiguousarray(pairs, dtype=_np.float64).reshape(-1, 2)
        return points, _np.full(2 * pairs.shape[0], pairs.shape[2], dtype=_np.int64)
    if not isinstance(pairs, (list, tuple)):
        pairs = list(pairs)  # any iterable of pairs, as a loop over it would take
    return _parasurf._pack_curve_pairs(pairs)


def patch_nets(path=None):
    """The tensor-product patches of a patch model (.bv, .bpt, B-spline .json; None: the built-in Utah teapot) as
    Bézier control nets: a list of dicts with ``points`` (m+1, n+1, 3), ``weights`` (m+1, n+1) or None, and the
    patch's ``index`` in the file. Triangular patches are left out."""
    return _parasurf.patch_nets(None if path is None else _path(path))


def closest_points(queries, patches=None, *, device="auto", threads=0, max_seconds=None, max_cells=None):
    """The point of a patch model nearest to each query point (point projection onto surfaces, many at once).

    ``queries`` (n, 3). ``patches``: None (the built-in Utah teapot), a path to a patch model (.bv, .bpt, B-spline
    .json; its tensor-product patches), or a list of Bézier control nets, each an (m+1, n+1, 3) array. Every
    critical point of the distance inside the patches and on their edges, and the corners, of the patches that can
    hold the nearest point, are found by the subdivision solver in one batch. Returns a dict: ``points`` (n, 3),
    ``distance`` (n,), ``patch`` (n,) int64 (the lowest index on a tie), ``uv`` (n, 2) on that patch, ``systems``
    solved and ``status``. Where a query has a whole curve of nearest points (on an axis of symmetry), one of them.
    ``device``: "cpu", "cuda", "hybrid" or "auto" (the GPU for batches of 2048 systems and more, and 128 per CPU
    thread, when one is present).
    ``max_seconds`` (60) and ``max_cells`` (per system, 2e7) bound the solve: past either, what was found returns
    with ``status`` "limit reached: ...".
    """
    q = _np.ascontiguousarray(_host(queries), dtype=_np.float64)
    path, nets = _patch_set(patches, "closest points")
    return _results_like(queries, _parasurf.closest_points(q, path, nets, device, int(threads),
                                                           _limits(max_seconds, max_cells)))


def _patch_set(patches, what):
    """(path, nets) for the binding: a model file's path, or control nets, or neither (the teapot)."""
    if patches is not None and not isinstance(patches, (str, bytes)) and not hasattr(patches, "__fspath__"):
        nets = [_np.ascontiguousarray(_host(p), dtype=_np.float64) for p in patches]
        if not nets:
            raise ValueError(what + ": no patches")
        return None, nets
    return (None if patches is None else _path(patches, what + ": patches")), []


def intersect_rays(origins, directions, patches=None, *, t_min=0.0, device="auto", threads=0, max_seconds=None,
                   max_cells=None):
    """Where rays ``origins + t * directions`` first meet a patch model (ray casting without tessellating it).

    ``origins`` and ``directions`` (n, 3); ``patches`` as for ``closest_points`` (None: the Utah teapot, a
    patch-model path, or a list of (m+1, n+1, 3) Bézier nets, polynomial). Each ray is two planes; on every patch
    whose control box and one of whose 4 x 4 sub-patch boxes it passes through, the patch's distances to both planes
    vanish at a hit: those systems of all rays are solved in one batch, and the nearest root with t > ``t_min``
    wins. Returns a dict: ``hit`` (n,) bool, ``t`` (n,) (inf for a miss), ``points`` (n, 3) and ``uv`` (n, 2) (NaN
    for a miss), ``patch`` (n,) int64 (-1 for a miss; the lowest index on a tie), ``systems`` solved and
    ``status``. A ray through a seam or a shared corner hits. ``device``: "cpu", "cuda", "hybrid" or "auto" (the GPU
    for batches of 2048 systems and more, and 128 per CPU thread, when one is present).
    ``max_seconds`` (60) and ``max_cells`` (per system, 2e7) bound the solve: past either, what was found returns
    with ``status`` "limit reached: ...".
    """
    o = _np.ascontiguousarray(_host(origins), dtype=_np.float64)
    d = _np.ascontiguousarray(_host(directions), dtype=_np.float64)
    path, nets = _patch_set(patches, "rays")
    return _results_like(_on_gpu(origins, directions), _parasurf.intersect_rays(
        o, d, path, nets, float(t_min), device, int(threads), _limits(max_seconds, max_cells)))


def ray_traps(curves, *, tolerance=1e-7, threads=0, max_seconds=None, max_cells=None):
    """Ray traps of k = 3..6 planar Bézier curves (each (n_i, 2) control points): closed light paths that reflect
    once on every curve in turn. Returns a dict: ``params`` (m, k), ``points`` (m, k, 2) and ``status``.
    ``max_seconds`` (60) and ``max_cells`` (per system, 2e7) bound the solve: past either, what was found returns
    with ``status`` "limit reached: ...".
    """
    curves = list(curves)
    return _results_like(_on_gpu(curves), _parasurf.ray_traps(
        [_np.asarray(_host(c), dtype=_np.float64) for c in curves], float(tolerance), int(threads),
        _limits(max_seconds, max_cells)))


def read_volume(path):
    """Read a volume file (NIfTI .nii/.nii.gz, NRRD, MetaImage .mhd/.mha, VTK legacy .vtk, VTK XML .vti) or a
    DICOM series (a folder, or one .dcm file of the series; in builds with GDCM) into a float32 array.

    Returns ``volume`` (nz, ny, nx) in C order, so that ``volume[k, j, i]`` is sample (i, j, k), and a dict with
    ``spacing`` and ``origin`` in the same (z, y, x) order, the file's sample ``type``, ``affine`` and ``frame``.
    ``affine`` (4, 4) maps an index (z, y, x, 1) of the returned array to world (x, y, z, 1), direction cosines
    included, in RAS (x to the right, y anterior, z superior, as nibabel's) for every format that names its frame:
    NIfTI with a transform, NRRD with a ``space``, MetaImage and DICOM (LPS, converted). Then ``frame`` is "RAS"; for VTK,
    raw-like NRRD and NIfTI without a transform it is "unspecified" and the affine is the file's own.

    ``marching_cubes(volume, level, spacing=info["spacing"])`` gives vertices in (z, y, x) times the spacing; their
    world positions are ``(affine @ np.c_[verts / spacing, ones].T).T[:, :3]``.
    """
    return _parasurf.read_volume(_path(path))


def write_mesh(path, vertices, faces, normals=None, *, values=None, groups=None, group_names=(), format=None):
    """Write a triangle mesh as the command line does, by the extension of ``path``: .ply (binary), .obj, .glb,
    .stl, .vtp or .vtu, through a temporary file renamed on success (links, pipes and devices are written in place).
    ``format`` ("ply", "ply-ascii", "obj", "glb", "stl", "vtp", "vtu") names the format of a path without one of
    those extensions (a pipe, ``/dev/stdout``) or asks for a text PLY ("ply-ascii", which meshio reads with its
    face groups); it must agree with the extension when there is one.

    ``vertices`` (V, 3) and optional ``normals`` (V, 3) are written as float32, ``faces`` (F, 3) index the vertices;
    ``values`` (V,) become the vertex property "value", ``groups`` (F,) the face groups, named by ``group_names``.
    Host arrays only (GPU arrays are copied home first). Raises ValueError for bad shapes, indices or non-finite
    vertices, OSError when the file cannot be written.
    """
    host = lambda a, t: None if a is None else _np.asarray(_host(a), dtype=t)
    return _parasurf.write_mesh(_path(path), host(vertices, _np.float32), host(faces, _np.int64), host(normals, _np.float32),
                                host(values, _np.float32), host(groups, _np.int32), [str(g) for g in group_names],
                                "" if format is None else str(format))


def _curve(c):
    """A curve argument: an (n, 2) array of Bézier control points, or a dict with ``points`` (n, 2), ``degree`` and
    ``knots`` (n + degree + 1 values) for a B-spline."""
    if isinstance(c, dict):
        pts = _np.asarray(_host(_points_of(c, "curve")), dtype=_np.float64)
        return pts, int(c.get("degree", len(pts) - 1)), _numbers(c.get("knots", []))
    return _np.asarray(_host(c), dtype=_np.float64), -1, []


def _surface(s):
    """A surface argument: an (m+1, n+1, 3) array of Bézier control points, or a dict with ``points`` (nu, nv, 3),
    ``degree`` (p, q) and ``knots`` (knots_u, knots_v) for a B-spline surface."""
    if isinstance(s, dict):
        pts = _np.asarray(_host(_points_of(s, "surface", ("degree", "knots", "weights", "index"))), dtype=_np.float64)
        if s.get("weights") is not None:
            raise ValueError("surface: weights are not taken here (the solver's surfaces are polynomial B-splines)")
        degree = list(_host(s.get("degree", (pts.shape[0] - 1, pts.shape[1] - 1))))
        knots = [_numbers(kn) for kn in s.get("knots", [])]
        return pts, [int(d) for d in degree], knots
    return _np.asarray(_host(s), dtype=_np.float64), [], []


def hausdorff_distance(a, b, *, device="cpu", threads=0, max_seconds=None, max_cells=None):
    """Hausdorff distance between two planar curves (Bézier (n, 2) arrays or B-spline dicts, see ``_curve``).

    Returns a dict: ``distance``; ``a_to_b`` and ``b_to_a``, each a dict with the one-sided ``distance``, the
    parameter ``t`` on the first curve where it is attained, ``r`` of its closest point on the other, and the two
    points ``from`` and ``to``; ``candidates`` measured and ``status``. ``device``: "cpu" (fastest for one pair),
    "cuda", "hybrid" or "auto".
    ``max_seconds`` (60) and ``max_cells`` (per system, 2e7) bound the solve: past either, what was found returns
    with ``status`` "limit reached: ...".
    """
    pa, da, ka = _curve(a)
    pb, db, kb = _curve(b)
    return _results_like(_on_gpu(a, b), _parasurf.hausdorff_distance(pa, da, ka, pb, db, kb, device, int(threads),
                                                                      _limits(max_seconds, max_cells)))


def curve_bisector(a, b, *, resolution=1.0 / 128, device="cpu", threads=0, max_seconds=None, max_cells=None):
    """Bisector of two planar curves: points equidistant from both on both normals, as polylines.

    Returns a dict: ``curves``, a list of dicts with ``points`` (k, 2), ``params`` (k, 2) (s on ``a``, t on ``b``)
    and ``closed``; and ``status``. ``resolution``: sampling cell width as a fraction of a knot span.
    ``max_seconds`` (60) and ``max_cells`` (per system, 2e7) bound the solve: past either, what was found returns
    with ``status`` "limit reached: ...".
    """
    pa, da, ka = _curve(a)
    pb, db, kb = _curve(b)
    return _results_like(_on_gpu(a, b), _parasurf.curve_bisector(pa, da, ka, pb, db, kb, float(resolution), device,
                                                                  int(threads), _limits(max_seconds, max_cells)))


def intersect_surfaces(a, b, *, resolution=1.0 / 64, device="cpu", threads=0, max_seconds=None, max_cells=None):
    """Intersection curves of two surfaces (Bézier (m+1, n+1, 3) arrays or B-spline dicts, see ``_surface``).

    Returns a dict: ``curves``, a list of dicts with ``points`` (k, 3), ``params`` (k, 4) as (u1, v1, u2, v2) and
    ``closed``; ``overlaps`` (r, 8), the boxes (u1 lo, u1 hi, v1 lo, v1 hi, u2 lo, u2 hi, v2 lo, v2 hi) where the
    surfaces coincide over an area (coplanar or overlapping faces, whose intersection is not a curve there); and
    ``status``. Every point lies on both surfaces to about 1e-15.
    ``max_seconds`` (60) and ``max_cells`` (per system, 2e7) bound the solve: past either, what was found returns
    with ``status`` "limit reached: ...".
    """
    sa, da, ka = _surface(a)
    sb, db, kb = _surface(b)
    return _results_like(_on_gpu(a, b), _parasurf.intersect_surfaces(sa, da, ka, sb, db, kb, float(resolution), device,
                                                                      int(threads), _limits(max_seconds, max_cells)))


def contact_points(moving, fixed, motion, *, device="cpu", threads=0, max_seconds=None, max_cells=None):
    """Contact points of ``moving`` under a scale-and-translation motion against ``fixed`` (surfaces as in
    ``intersect_surfaces``). ``motion`` is a dict with ``points`` (n, 4) rows (scale, tx, ty, tz), ``degree`` and
    ``knots``: T(t)[P] = scale(t) P + (tx, ty, tz)(t).

    Returns a dict: ``params`` (c, 5) rows (u1, v1, u2, v2, t), ``points`` (c, 3) on ``fixed``; ``regions`` (r, 10)
    rows (t0, t1, u1 lo, u1 hi, v1 lo, v1 hi, u2 lo, u2 hi, v2 lo, v2 hi) where the surfaces stay in contact over a
    set (parallel planar faces brought into one plane, coinciding surfaces); and ``status``.
    ``max_seconds`` (60) and ``max_cells`` (per system, 2e7) bound the solve: past either, what was found returns
    with ``status`` "limit reached: ...".
    """
    sa, da, ka = _surface(moving)
    sb, db, kb = _surface(fixed)
    if not isinstance(motion, dict) or "knots" not in motion:
        raise ValueError("motion: a dict with 'points' (n, 4), 'degree' and 'knots'")
    mp = _np.asarray(_host(_points_of(motion, "motion")), dtype=_np.float64)
    return _results_like(_on_gpu(moving, fixed, motion), _parasurf.contact_points(
        sa, da, ka, sb, db, kb, mp, int(motion.get("degree", 3)), _numbers(motion["knots"]), device, int(threads),
        _limits(max_seconds, max_cells)))


def surface_bisector(a, b, *, resolution=1.0 / 16, device="cpu", threads=0, max_seconds=None, max_cells=None):
    """Point samples of the bisector of two surfaces, on a grid of the first surface's parameters.

    Returns a dict: ``params`` (k, 4) rows (u, v, s, t) of the two feet, ``points`` (k, 3) equidistant from both;
    ``overlaps`` (r, 8), boxes (u lo, u hi, v lo, v hi, s lo, s hi, t lo, t hi) where the surfaces coincide
    (coplanar faces: every point on their normal there is equidistant, so the bisector is no surface); and
    ``status``.
    ``max_seconds`` (60) and ``max_cells`` (per system, 2e7) bound the solve: past either, what was found returns
    with ``status`` "limit reached: ...".
    """
    sa, da, ka = _surface(a)
    sb, db, kb = _surface(b)
    return _results_like(_on_gpu(a, b), _parasurf.surface_bisector(sa, da, ka, sb, db, kb, float(resolution), device,
                                                                    int(threads), _limits(max_seconds, max_cells)))
