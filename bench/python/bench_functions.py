#!/usr/bin/env python3
"""The other Python functions against the engines under them, on the same data and device.

evaluate_surface (a bicubic and a degree-7 patch on a 2000 x 2000 grid, positions and normals), tessellate (the
built-in Utah teapot), lattice + ffd (the teapot deformed by a twisted 9x9x9 lattice, accurate FFD), and the
solver's batches: intersect_curves_batch on 10^4 random cubic and quintic pairs (a list of dicts, flat arrays, and
flat from an (n, 2, k, 2) array), intersect_rays for a camera image of the teapot (--rays N: N x N rays). Each row:
the Python call, the same work through the C++ API (fresh output arrays each call, as both return them), and
their ratio. The two are timed in turn, round after round (at least --repeats rounds and --min-seconds), and each
keeps its best time, so that both meet the same state of the host.

    PYTHONPATH=build/python python3 bench/python/bench_functions.py --json functions.json
"""
import argparse
import json
import os
import time

import numpy as np

import parasurf
from parasurf import _parasurf
from bench_marching_cubes import best_interleaved, commit, gpu_name, timed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5, help="rounds at least (each round runs every path once)")
    ap.add_argument("--min-seconds", type=float, default=1.0, help="and rounds until this long has passed for a row")
    ap.add_argument("--grid", type=int, default=2000, help="evaluate_surface: samples per side")
    ap.add_argument("--pairs", type=int, default=10000, help="intersect_curves_batch: curve pairs")
    ap.add_argument("--rays", type=int, default=300, help="intersect_rays: rays per side of the image")
    ap.add_argument("--json", help="write the rows as JSON here")
    a = ap.parse_args()
    devices = ["cpu"] + (["cuda"] if parasurf.cuda_available() else [])
    rng = np.random.default_rng(1)
    rows = []

    def report(name, dev, py, eng):
        row = {"function": name, "device": dev, "seconds": py, "engine_seconds": eng, "ratio_to_engine": py / eng}
        rows.append(row)
        print("%-44s %-5s %9.2f ms  engine %9.2f ms  python/engine %.2fx" % (name, dev, py * 1e3, eng * 1e3, py / eng),
              flush=True)

    def again(f):
        """f called twice, the second call timed: as in a caller's loop, it finds the pages that the first call's
        results gave back (the paths taken in turn would otherwise trade the library's pool of large blocks)."""
        run = timed(f)

        def twice():
            f()
            return run()
        return twice

    def measure(python_calls, engine):
        """Each Python call and the engine (engine(repeats) -> its best seconds, after a warm call), in turn."""
        return best_interleaved([again(f) for f in python_calls] + [lambda: engine(2)], a.repeats, a.min_seconds)

    n = a.grid
    for degree in (3, 7):
        cps = rng.normal(size=(degree + 1, degree + 1, 3))
        for dev in devices:
            for precision in ("float", "double"):
                py, eng = measure([lambda: parasurf.evaluate_surface(cps, (n, n), precision=precision, device=dev)],
                                  lambda r: _parasurf._engine_seconds_surface(cps, n, n, False, precision, dev, r))
                report("evaluate_surface %dx%d degree %d %s" % (n, n, degree, precision), dev, py, eng)
    for dev in devices:
        py, eng = measure([lambda: parasurf.tessellate(resolution=64, device=dev)],
                          lambda r: _parasurf._engine_seconds_tessellate(64, dev, r))
        report("tessellate teapot r=64", dev, py, eng)
    verts, faces, _ = parasurf.tessellate(resolution=8, device="cpu")
    lat = parasurf.lattice(verts, count=9, degree=3)
    cp = lat.control_points
    cp[..., 0] += 0.2 * np.sin(np.linspace(0, np.pi, cp.shape[2]))[None, None, :]
    verts64 = verts.astype(np.float64)
    for dev in devices:
        py, eng = measure([lambda: parasurf.ffd(verts, faces, lat, method="accurate", level=4, device=dev)],
                          lambda r: _parasurf._engine_seconds_ffd(verts64, faces, lat, "accurate", 4, dev, r))
        report("ffd teapot (%d faces) accurate level 4" % len(faces), dev, py, eng)
    # The solver's batches ("auto" as well: what a caller who names no device gets).
    solver_devices = devices + ["auto"]
    pairs = [(rng.random((k + 1, 2)), rng.random((k + 1, 2))) for k in (3, 5) for _ in range(a.pairs // 2)]
    cubic = np.array([(rng.random((4, 2)), rng.random((4, 2))) for _ in range(a.pairs)])
    cubic_list = list(cubic)
    for dev in solver_devices:
        listed, flat, eng = measure([lambda: parasurf.intersect_curves_batch(pairs, device=dev),
                                     lambda: parasurf.intersect_curves_batch(pairs, device=dev, flat=True)],
                                    lambda r: _parasurf._engine_seconds_curve_pairs(pairs, dev, r))
        report("intersect_curves_batch %d pairs, list of dicts" % len(pairs), dev, listed, eng)
        report("intersect_curves_batch %d pairs, flat" % len(pairs), dev, flat, eng)
        py, eng = measure([lambda: parasurf.intersect_curves_batch(cubic, device=dev, flat=True)],
                          lambda r: _parasurf._engine_seconds_curve_pairs(cubic_list, dev, r))
        report("intersect_curves_batch %d cubic pairs, array, flat" % len(cubic), dev, py, eng)
    n = a.rays
    # A pinhole camera in front of the teapot, one ray per pixel.
    s = np.linspace(-1.0, 1.0, n)
    px, py_ = np.meshgrid(s * 4.0, s * 3.0 + 1.5)
    origins = np.tile([0.0, 1.5, -12.0], (n * n, 1))
    directions = np.stack([px.ravel(), py_.ravel() - 1.5, np.full(n * n, 12.0)], axis=1)
    for dev in solver_devices:
        py, eng = measure([lambda: parasurf.intersect_rays(origins, directions, device=dev)],
                          lambda r: _parasurf._engine_seconds_rays(origins, directions, dev, r))
        report("intersect_rays teapot, %dx%d rays" % (n, n), dev, py, eng)
    if a.json:
        meta = {"commit": commit(), "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "cuda": parasurf.cuda_available(),
                "gpu": gpu_name()}
        with open(a.json, "w") as f:
            json.dump({"benchmark": "python functions", "meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
