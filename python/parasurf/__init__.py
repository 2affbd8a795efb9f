"""parasurf: fast parametric and volumetric geometry on CPUs and NVIDIA GPUs.

numpy in, numpy out. Every function takes ``device="auto" | "cpu" | "cuda"`` (auto: CUDA when a GPU is present).
Errors from the library are raised as ValueError (bad arguments or input), OSError (files), MemoryError or
RuntimeError (devices).
"""
import numpy as _np

from . import _parasurf
from ._parasurf import Lattice, cuda_available

__all__ = ["read_volume", "marching_cubes", "evaluate_surface", "tessellate", "lattice", "ffd", "intersect_curves", "ray_traps",
           "hausdorff_distance", "curve_bisector", "intersect_surfaces", "contact_points", "surface_bisector", "Lattice",
           "cuda_available"]

_NATIVE = {_np.dtype(t) for t in ("float32", "float64", "uint8", "int8", "uint16", "int16", "uint32", "int32")}


def marching_cubes(volume, level=None, *, spacing=(1.0, 1.0, 1.0), gradient_direction="descent", step_size=1,
                   allow_degenerate=True, method="lewiner", mask=None, device="auto", threads=0):
    """Isosurface of a 3-D array, a drop-in for ``skimage.measure.marching_cubes``.

    Parameters follow scikit-image: ``volume`` (M, N, P) array; ``level`` (default: the middle of the data
    range); ``spacing`` per array axis; ``gradient_direction`` "descent" (the object holds the larger values) or
    "ascent"; ``step_size`` >= 1 (a coarser grid); ``allow_degenerate``; ``method`` "lewiner" (MC33, as
    scikit-image's: the topology of the trilinear interpolant, face and interior ambiguities resolved) or
    "lorensen" (the classic table); ``mask`` (M, N, P) bool: only cells whose last corner is True.
    Plus ``device`` and ``threads`` (CPU threads, 0 = all).

    Returns ``verts`` (V, 3) float32 in array index order times spacing, ``faces`` (F, 3) int32, ``normals``
    (V, 3) float32 (unit, down the gradient, in index order, as scikit-image's) and ``values`` (V,) float32: the largest value range of a cell next to the
    vertex (scikit-image's "maximum value of the data in the local region"). Raises ValueError for a level
    outside the data range or bad arguments, RuntimeError when no surface is found.
    """
    if not isinstance(volume, _np.ndarray) or volume.ndim != 3:
        raise ValueError("Input volume should be a 3D numpy array.")
    if min(volume.shape) < 2:
        raise ValueError("Input array must be at least 2x2x2.")
    if method not in ("lewiner", "lorensen"):
        raise ValueError("method should be one of 'lewiner', 'lorensen' or '_lorensen'.")
    if gradient_direction not in ("descent", "ascent"):
        raise ValueError("Incorrect input %s in `gradient_direction`, see docstring." % (gradient_direction,))
    if len(spacing) != 3:
        raise ValueError("`spacing` must consist of three floats.")
    step_size = int(step_size)
    if step_size < 1:
        raise ValueError("step_size must be at least one.")
    if mask is not None:
        mask = _np.asarray(mask)
        if mask.shape != volume.shape:
            raise ValueError("volume and mask must have the same shape.")
    vmin, vmax = volume.min(), volume.max()
    if level is None:
        level = 0.5 * (float(vmin) + float(vmax))
    else:
        level = float(level)
        if level < vmin or level > vmax:
            raise ValueError("Surface level must be within volume data range.")
    full = volume
    if step_size > 1:
        volume = volume[::step_size, ::step_size, ::step_size]
        if min(volume.shape) < 2:
            raise ValueError("step_size leaves fewer than 2 samples along an axis.")
    data = volume if volume.dtype in _NATIVE else volume.astype(_np.float32)
    data = _np.ascontiguousarray(data)
    step_spacing = tuple(float(s) * step_size for s in spacing)
    try:
        verts, faces, normals = _parasurf.marching_cubes_core(data, level, step_spacing, gradient_direction,
                                                              bool(allow_degenerate), device, int(threads),
                                                              "mc33" if method == "lewiner" else "classic")
    except ValueError as e:
        if "no surface" in str(e).lower():
            raise RuntimeError("No surface found at the given iso value.") from None
        raise
    if len(faces) == 0:
        raise RuntimeError("No surface found at the given iso value.")
    # The cell of each face: the floor of its centroid in grid units.
    grid = verts / _np.asarray(step_spacing, dtype=_np.float32)
    cells = _np.floor(grid[faces].mean(axis=1)).astype(_np.int64)
    for a in range(3):
        _np.clip(cells[:, a], 0, volume.shape[a] - 2, out=cells[:, a])
    if mask is not None:
        # scikit-image keeps a cell when the mask is True at its last corner (largest indices).
        m = mask[::step_size, ::step_size, ::step_size].astype(bool)
        keep = m[cells[:, 0] + 1, cells[:, 1] + 1, cells[:, 2] + 1]
        faces, cells = faces[keep], cells[keep]
        if len(faces) == 0:
            raise RuntimeError("No surface found at the given iso value.")
        used = _np.zeros(len(verts), dtype=bool)
        used[faces.ravel()] = True
        remap = _np.cumsum(used) - 1
        verts, normals = verts[used], normals[used]
        faces = remap[faces].astype(_np.int32)
    values = _cell_ranges(data, level, cells, faces, len(verts))
    del full
    return verts, faces, normals, values


def _cell_ranges(volume, level, cells, faces, nverts):
    """Per vertex: the largest (max - min) of level-shifted corner values, 0 included, over its faces' cells."""
    v = volume.astype(_np.float32) - _np.float32(level)
    i, j, k = cells[:, 0], cells[:, 1], cells[:, 2]
    corners = _np.stack([v[i + a, j + b, k + c] for a in (0, 1) for b in (0, 1) for c in (0, 1)])
    rng = _np.maximum(corners.max(axis=0), 0) - _np.minimum(corners.min(axis=0), 0)
    values = _np.zeros(nverts, dtype=_np.float32)
    for c in range(3):
        _np.maximum.at(values, faces[:, c], rng)
    return values


def evaluate_surface(control_points, resolution=(64, 64), *, weights=None, derivatives=False, precision="double",
                     device="auto"):
    """Evaluate a tensor-product Bézier surface on a uniform grid.

    ``control_points`` (m+1, n+1, 3); ``weights`` (m+1, n+1) for a rational surface; ``resolution`` (rows, cols)
    >= 2 samples along u and v. Returns ``points`` (rows, cols, 3), ``normals`` (rows, cols, 3) and a dict with
    them and, with ``derivatives=True``, ``du`` and ``dv`` (rows, cols, 3); float64 or float32 (``precision``).
    """
    rows, cols = (resolution, resolution) if _np.isscalar(resolution) else resolution
    pts = _np.asarray(control_points, dtype=_np.float64)
    w = None if weights is None else _np.asarray(weights, dtype=_np.float64)
    return _parasurf.evaluate_surface(pts, w, int(rows), int(cols), bool(derivatives), precision, device)


def tessellate(path=None, *, resolution=16, tolerance=0.0, device="auto"):
    """Tessellate a patch model (.bv, .bpt, B-spline .json; None: the built-in Utah teapot) into a welded mesh.

    Returns ``verts`` (V, 3) float32, ``faces`` (F, 3) int32 and ``normals`` (V, 3) float32. ``tolerance`` > 0
    chooses the resolution per patch from a chordal tolerance instead.
    """
    return _parasurf.tessellate(path, int(resolution), float(tolerance), device)


def lattice(vertices, count=(9, 9, 9), degree=(3, 3, 3), *, padding=0.05, knots=None, world_to_parameter=None):
    """A B-spline lattice over the box of ``vertices`` (V, 3), control points at rest (the identity).

    ``count`` and ``degree`` per axis (an int for all three); ``knots`` three knot vectors (empty for clamped
    uniform); ``world_to_parameter`` 12 numbers (3x4 affine) instead of the box. ``lat.control_points`` is a
    writable (n0, n1, n2, 3) view; ``lat.move_points(points, targets)`` does direct manipulation.
    """
    as3 = lambda x: (int(x),) * 3 if _np.isscalar(x) else tuple(int(v) for v in x)
    kn = None if knots is None else tuple([float(v) for v in k] for k in knots)
    w2p = None if world_to_parameter is None else tuple(float(v) for v in _np.ravel(world_to_parameter))
    return _parasurf.make_lattice(_np.asarray(vertices, dtype=_np.float64), as3(count), as3(degree), float(padding), kn, w2p)


def ffd(vertices, faces, lattice, *, method="accurate", level=4, device="auto", precision="double",
        allow_non_manifold=False):
    """Deform a polygon mesh by a lattice (see ``parasurf.lattice``).

    ``vertices`` (V, 3); ``faces`` (F, k) array or a list of index lists (convex or not); ``method`` "point",
    "accurate" (exact trimmed Bézier pieces, each triangle into level^2 sub-triangles) or "uus". Returns
    ``verts`` (V', 3) float32, ``faces`` (F', 3) int32 and ``normals`` (V', 3) float32.
    """
    return _parasurf.ffd(_np.asarray(vertices, dtype=_np.float64), faces, lattice, method, int(level), device, precision,
                         bool(allow_non_manifold))


def intersect_curves(a, b, *, tolerance=1e-7, threads=0):
    """Intersections of two planar Bézier curves given by control points ``a`` (n, 2) and ``b`` (m, 2).

    Returns a dict: ``params`` (k, 2) the (s, t) parameter pairs, ``points`` (k, 2), ``tangent`` (k,) bool,
    ``overlaps`` (r, 4) rows (s0, s1, t0, t1) where the curves coincide, and ``status`` ("complete" or
    "limit reached: ..."). Each intersection is reported once; transversal ones to about 1e-15, tangent ones to
    about 1e-6 (2e-5 for equal curvature).
    """
    return _parasurf.intersect_curves(_np.asarray(a, dtype=_np.float64), _np.asarray(b, dtype=_np.float64),
                                      float(tolerance), int(threads))


def ray_traps(curves, *, tolerance=1e-7, threads=0):
    """Ray traps of k = 3..6 planar Bézier curves (each (n_i, 2) control points): closed light paths that reflect
    once on every curve in turn. Returns a dict: ``params`` (m, k), ``points`` (m, k, 2) and ``status``.
    """
    return _parasurf.ray_traps([_np.asarray(c, dtype=_np.float64) for c in curves], float(tolerance), int(threads))


def read_volume(path):
    """Read a volume file (NIfTI .nii/.nii.gz, NRRD, MetaImage .mhd/.mha, VTK legacy) into a float32 array.

    Returns ``volume`` (nz, ny, nx) in C order, so that ``volume[k, j, i]`` is sample (i, j, k), and a dict with
    ``spacing`` and ``origin`` in the same (z, y, x) order and the file's sample ``type``; pass the spacing to
    ``marching_cubes``.
    """
    return _parasurf.read_volume(str(path))


def _curve(c):
    """A curve argument: an (n, 2) array of Bézier control points, or a dict with ``points`` (n, 2), ``degree`` and
    ``knots`` (n + degree + 1 values) for a B-spline."""
    if isinstance(c, dict):
        return (_np.asarray(c["points"], dtype=_np.float64), int(c.get("degree", len(c["points"]) - 1)),
                [float(k) for k in c.get("knots", [])])
    return _np.asarray(c, dtype=_np.float64), -1, []


def _surface(s):
    """A surface argument: an (m+1, n+1, 3) array of Bézier control points, or a dict with ``points`` (nu, nv, 3),
    ``degree`` (p, q) and ``knots`` (knots_u, knots_v) for a B-spline surface."""
    if isinstance(s, dict):
        pts = _np.asarray(s["points"], dtype=_np.float64)
        degree = list(s.get("degree", (pts.shape[0] - 1, pts.shape[1] - 1)))
        knots = [[float(k) for k in kn] for kn in s.get("knots", [])]
        return pts, [int(d) for d in degree], knots
    return _np.asarray(s, dtype=_np.float64), [], []


def hausdorff_distance(a, b, *, device="cpu", threads=0):
    """Hausdorff distance between two planar curves (Bézier (n, 2) arrays or B-spline dicts, see ``_curve``).

    Returns a dict: ``distance``; ``a_to_b`` and ``b_to_a``, each a dict with the one-sided ``distance``, the
    parameter ``t`` on the first curve where it is attained, ``r`` of its closest point on the other, and the two
    points ``from`` and ``to``; ``candidates`` measured and ``status``. ``device``: "cpu" (fastest for one pair),
    "cuda", "hybrid" or "auto".
    """
    pa, da, ka = _curve(a)
    pb, db, kb = _curve(b)
    return _parasurf.hausdorff_distance(pa, da, ka, pb, db, kb, device, int(threads))


def curve_bisector(a, b, *, resolution=1.0 / 128, device="cpu", threads=0):
    """Bisector of two planar curves: points equidistant from both on both normals, as polylines.

    Returns a dict: ``curves``, a list of dicts with ``points`` (k, 2), ``params`` (k, 2) (s on ``a``, t on ``b``)
    and ``closed``; and ``status``. ``resolution``: sampling cell width as a fraction of a knot span.
    """
    pa, da, ka = _curve(a)
    pb, db, kb = _curve(b)
    return _parasurf.curve_bisector(pa, da, ka, pb, db, kb, float(resolution), device, int(threads))


def intersect_surfaces(a, b, *, resolution=1.0 / 64, device="cpu", threads=0):
    """Intersection curves of two surfaces (Bézier (m+1, n+1, 3) arrays or B-spline dicts, see ``_surface``).

    Returns a dict: ``curves``, a list of dicts with ``points`` (k, 3), ``params`` (k, 4) as (u1, v1, u2, v2) and
    ``closed``; and ``status``. Every point lies on both surfaces to about 1e-15.
    """
    sa, da, ka = _surface(a)
    sb, db, kb = _surface(b)
    return _parasurf.intersect_surfaces(sa, da, ka, sb, db, kb, float(resolution), device, int(threads))


def contact_points(moving, fixed, motion, *, device="cpu", threads=0):
    """Contact points of ``moving`` under a scale-and-translation motion against ``fixed`` (surfaces as in
    ``intersect_surfaces``). ``motion`` is a dict with ``points`` (n, 4) rows (scale, tx, ty, tz), ``degree`` and
    ``knots``: T(t)[P] = scale(t) P + (tx, ty, tz)(t).

    Returns a dict: ``params`` (c, 5) rows (u1, v1, u2, v2, t), ``points`` (c, 3) on ``fixed`` and ``status``.
    """
    sa, da, ka = _surface(moving)
    sb, db, kb = _surface(fixed)
    mp = _np.asarray(motion["points"], dtype=_np.float64)
    return _parasurf.contact_points(sa, da, ka, sb, db, kb, mp, int(motion.get("degree", 3)),
                                    [float(k) for k in motion["knots"]], device, int(threads))


def surface_bisector(a, b, *, resolution=1.0 / 16, device="cpu", threads=0):
    """Point samples of the bisector of two surfaces, on a grid of the first surface's parameters.

    Returns a dict: ``params`` (k, 4) rows (u, v, s, t) of the two feet, ``points`` (k, 3) equidistant from both,
    and ``status``.
    """
    sa, da, ka = _surface(a)
    sb, db, kb = _surface(b)
    return _parasurf.surface_bisector(sa, da, ka, sb, db, kb, float(resolution), device, int(threads))
