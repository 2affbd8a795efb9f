#!/usr/bin/env python3
"""parasurf.closest_points against what a numpy user writes for the same job, on the same queries.

10^4 points around the Utah teapot (its 32 bicubic patches), each projected onto the model. The numpy peer is the
usual vectorised approach: every patch sampled on a grid, the nearest sample of each query found by brute force
(in chunks), then Gauss-Newton on that patch from there, all queries at once. Reported: the time of each, and how
many of the peer's answers are farther than parasurf's (a sample in the wrong basin; parasurf solves for every
critical point of every patch that can hold the nearest one). Best of --repeats calls. Also the cost of one query
per call, over the first --loop queries.

    PYTHONPATH=build/python python3 bench/python/bench_closest_points.py --json closest.json
"""
import argparse
import json
import math
import os
import time

import numpy as np

import parasurf
from bench_marching_cubes import best, commit, gpu_name


def teapot_nets():
    """The teapot's 32 patches as (4, 4, 3) control nets."""
    return [p["points"] for p in parasurf.patch_nets()]


def bernstein(n, t):
    return np.stack([math.comb(n, i) * t ** i * (1 - t) ** (n - i) for i in range(n + 1)], axis=-1)


def bernstein_derivative(n, t):
    return n * (np.pad(bernstein(n - 1, t), [(0, 0)] * (t.ndim) + [(1, 0)]) -
                np.pad(bernstein(n - 1, t), [(0, 0)] * (t.ndim) + [(0, 1)]))


def second_derivative(t):  # of the cubic Bernstein basis
    b1 = bernstein(1, t)
    return 6 * np.stack([b1[:, 0], b1[:, 1] - 2 * b1[:, 0], b1[:, 0] - 2 * b1[:, 1], b1[:, 1]], axis=-1)


def numpy_closest(nets, q, grid=33, iterations=10, chunk=2048):
    nets = np.asarray(nets)  # (P, 4, 4, 3)
    P = len(nets)
    t = np.linspace(0, 1, grid)
    b = bernstein(3, t)
    samples = np.einsum("ua,vb,pabk->puvk", b, b, nets).reshape(P * grid * grid, 3)
    s2 = (samples ** 2).sum(1)
    nearest = np.empty(len(q), dtype=np.int64)
    for c in range(0, len(q), chunk):
        qc = q[c:c + chunk]
        d2 = s2[None, :] - 2 * qc @ samples.T + (qc ** 2).sum(1)[:, None]
        nearest[c:c + chunk] = d2.argmin(1)
    patch = nearest // (grid * grid)
    u = t[(nearest // grid) % grid]
    v = t[nearest % grid]
    net = nets[patch]
    for _ in range(iterations):
        bu, bv = bernstein(3, u), bernstein(3, v)
        du, dv = bernstein_derivative(3, u), bernstein_derivative(3, v)
        duu, dvv = second_derivative(u), second_derivative(v)
        s = np.einsum("qa,qb,qabk->qk", bu, bv, net)
        su = np.einsum("qa,qb,qabk->qk", du, bv, net)
        sv = np.einsum("qa,qb,qabk->qk", bu, dv, net)
        suu = np.einsum("qa,qb,qabk->qk", duu, bv, net)
        suv = np.einsum("qa,qb,qabk->qk", du, dv, net)
        svv = np.einsum("qa,qb,qabk->qk", bu, dvv, net)
        r = s - q
        g0, g1 = (su * r).sum(1), (sv * r).sum(1)
        # Newton on the squared distance (its Hessian), Gauss-Newton where that is not positive definite
        h00, h01, h11 = (su * su + r * suu).sum(1), (su * sv + r * suv).sum(1), (sv * sv + r * svv).sum(1)
        det = h00 * h11 - h01 * h01
        newton = (det > 0) & (h00 > 0)
        h00 = np.where(newton, h00, (su * su).sum(1))
        h01 = np.where(newton, h01, (su * sv).sum(1))
        h11 = np.where(newton, h11, (sv * sv).sum(1))
        det = h00 * h11 - h01 * h01
        ok = np.abs(det) > 1e-30
        det = np.where(ok, det, 1)
        u = np.clip(np.where(ok, u - (h11 * g0 - h01 * g1) / det, u), 0, 1)
        v = np.clip(np.where(ok, v - (h00 * g1 - h01 * g0) / det, v), 0, 1)
    s = np.einsum("qa,qb,qabk->qk", bernstein(3, u), bernstein(3, v), net)
    return np.linalg.norm(s - q, axis=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--loop", type=int, default=200, help="queries asked one call each")
    ap.add_argument("--json", help="write the rows as JSON here")
    a = ap.parse_args()
    rng = np.random.default_rng(2011)
    n = a.queries
    q = np.stack([rng.uniform(-4.3, 4.3, n), rng.uniform(-2.5, 2.5, n), rng.uniform(-0.8, 4.0, n)], axis=1)
    nets = teapot_nets()
    devices = ["cpu"] + (["cuda", "hybrid"] if parasurf.cuda_available() else [])
    rows = []
    ref = parasurf.closest_points(q, device="cpu")
    peer = best(lambda: numpy_closest(nets, q), a.repeats)
    d_peer = numpy_closest(nets, q)
    worse = int((d_peer > ref["distance"] + 1e-9).sum())
    nearer = int((d_peer < ref["distance"] - 1e-9).sum())  # would be a point parasurf missed
    # One query per call, as a caller snapping points one at a time makes them.
    loop = q[:a.loop]
    per_call = {"queries": len(loop),
                "parasurf": best(lambda: [parasurf.closest_points(x[None]) for x in loop], a.repeats) / len(loop),
                "numpy": best(lambda: [numpy_closest(nets, x[None]) for x in loop], a.repeats) / len(loop)}
    print("one query per call (%d queries): parasurf %.1f us, numpy peer %.1f us" %
          (len(loop), per_call["parasurf"] * 1e6, per_call["numpy"] * 1e6), flush=True)
    for dev in devices:
        s = best(lambda: parasurf.closest_points(q, device=dev), a.repeats)
        r = parasurf.closest_points(q, device=dev)
        same = float(np.abs(r["distance"] - ref["distance"]).max())
        rows.append({"function": "closest_points teapot", "queries": n, "device": dev, "seconds": s,
                     "systems": int(r["systems"]), "status": r["status"], "numpy_seconds": peer,
                     "speedup_over_numpy": peer / s, "numpy_farther": worse, "numpy_nearer": nearer, "max_difference_to_cpu": same})
        print("closest_points %d queries  %-6s %8.1f ms  (%d systems, %s)  numpy peer %8.1f ms: %.1fx; the peer's "
              "answer is farther on %d queries, nearer on %d" % (n, dev, s * 1e3, r["systems"], r["status"], peer * 1e3, peer / s,
                                                              worse, nearer),
              flush=True)
    if a.json:
        meta = {"commit": commit(), "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "cuda": parasurf.cuda_available(),
                "numpy": np.__version__, "gpu": gpu_name()}
        with open(a.json, "w") as f:
            json.dump({"benchmark": "python-closest-points", **meta, "per_call": per_call, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
