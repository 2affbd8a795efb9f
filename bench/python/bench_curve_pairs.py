#!/usr/bin/env python3
"""parasurf.intersect_curves_batch against the tools a Python user has for the same job, on the same curve pairs.

10^4 pairs of planar Bézier curves, cubic and quintic in turn, as `parasurf bench solver` makes them: most of them
random control points in the unit square, one in ten a parabola on its tangent line (a tangency) and one in ten a
curve with a reversed piece of itself (a shared arc). The peers:

- the `bezier` package (`Curve.intersect`, its compiled geometric algorithm), one call per pair as a user loops;
- the vectorised numpy approach: both curves of every pair sampled into polylines, every pair of segments tested
  at once (in chunks of pairs), each crossing refined by Newton on the curves, repeats merged.

Each peer's answer is compared with parasurf's (each root once, tangencies included, shared arcs as intervals): a
parasurf intersection with no peer point within 1e-6 is one the peer missed; a peer point within 1e-6 of none is an
extra one (a repeat or a spurious crossing). Shared arcs are counted apart: the pairs where the peer gave both ends
of the arc. Best of --repeats calls, parasurf's with flat=True (one dict of arrays for the whole batch). Also the
cost of one pair per call (`intersect_curves` in a loop, as `Curve.intersect` is used), over the first --loop pairs.

    PYTHONPATH=build/python python3 bench/python/bench_curve_pairs.py --json pairs.json
"""
import argparse
import json
import math
import os
import time

import numpy as np

import parasurf
from bench_marching_cubes import best, commit, gpu_name


def curve_pairs(count, seed=2011):
    """(list of (a, b) control point arrays, kinds): 'random', 'tangent' or 'overlap' per pair."""
    rng = np.random.default_rng(seed)
    parabola = np.array([[-1, 1], [-1 / 3, -1 / 3], [1 / 3, -1 / 3], [1, 1]], float)  # y = x^2 on [-1, 1]
    line = np.array([[-1, 0], [-1 / 3, 0], [1 / 3, 0], [1, 0]], float)  # its tangent at the vertex

    def place(c, angle, scale, d):
        rot = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
        return d + scale * c @ rot.T

    pairs, kinds = [], []
    for i in range(count):
        degree = 5 if i % 2 else 3
        if i % 10 == 3:
            angle, scale, d = 2 * math.pi * rng.random(), 0.2 + 0.3 * rng.random(), rng.random(2)
            pairs.append((place(parabola, angle, scale, d), place(line, angle, scale, d)))
            kinds.append("tangent")
        elif i % 10 == 7:
            a = rng.random((degree + 1, 2))
            s0, s1 = 0.2 + 0.2 * rng.random(), 0.6 + 0.3 * rng.random()
            pairs.append((a, piece(a, s0, s1)[::-1].copy()))
            kinds.append("overlap")
        else:
            pairs.append((rng.random((degree + 1, 2)), rng.random((degree + 1, 2))))
            kinds.append("random")
    return pairs, kinds


def piece(c, s0, s1):
    """The control points of curve c between parameters s0 < s1 (de Casteljau twice)."""
    def split(p, t):
        left, right, p = [p[0]], [p[-1]], p.copy()
        for _ in range(len(p) - 1):
            p = (1 - t) * p[:-1] + t * p[1:]
            left.append(p[0])
            right.append(p[-1])
        return np.array(left), np.array(right[::-1])
    _, tail = split(c, s0)
    head, _ = split(tail, (s1 - s0) / (1 - s0))
    return head


def bernstein(n, t):
    return np.stack([math.comb(n, i) * t ** i * (1 - t) ** (n - i) for i in range(n + 1)], axis=-1)


def bernstein_derivative(n, t):
    b = bernstein(n - 1, t)
    pad = [(0, 0)] * (t.ndim)
    return n * (np.pad(b, pad + [(1, 0)]) - np.pad(b, pad + [(0, 1)]))


def cross(a, b):
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def numpy_intersections(pairs, segments=64, iterations=8, chunk=256):
    """(pair (k,), params (k, 2), points (k, 2)) by polylines and Newton, vectorised over the pairs of a degree."""
    out_pair, out_params = [], []
    t = np.linspace(0, 1, segments + 1)
    for degree in sorted({len(a) - 1 for a, _ in pairs}):
        index = np.array([k for k, (a, _) in enumerate(pairs) if len(a) - 1 == degree])
        A = np.array([pairs[k][0] for k in index])
        B = np.array([pairs[k][1] for k in index])
        basis = bernstein(degree, t)
        PA, PB = np.einsum("ti,pik->ptk", basis, A), np.einsum("ti,pik->ptk", basis, B)
        for c in range(0, len(index), chunk):
            pa, pb = PA[c:c + chunk], PB[c:c + chunk]
            p, r = pa[:, :-1, None, :], (pa[:, 1:] - pa[:, :-1])[:, :, None, :]
            q, w = pb[:, None, :-1, :], (pb[:, 1:] - pb[:, :-1])[:, None, :, :]
            denom = cross(r, w)
            ok = denom != 0
            safe = np.where(ok, denom, 1)
            s = cross(q - p, w) / safe
            u = cross(q - p, r) / safe
            last = segments - 1  # half-open segments, the last one closed: a crossing at a shared vertex once
            hit = ok & (s >= 0) & (u >= 0) & ((s < 1) | (np.arange(segments)[None, :, None] == last)) & \
                ((u < 1) | (np.arange(segments)[None, None, :] == last)) & (s <= 1) & (u <= 1)
            k, i, j = np.nonzero(hit)
            out_pair.append(index[c + k])
            out_params.append(np.stack([(i + s[k, i, j]) / segments, (j + u[k, i, j]) / segments], axis=1))
    pair = np.concatenate(out_pair) if out_pair else np.zeros(0, np.int64)
    params = np.concatenate(out_params) if out_params else np.zeros((0, 2))
    # Newton on A(s) - B(t) = 0 for every crossing at once, each degree's crossings together.
    points = np.zeros((len(pair), 2))
    degrees = np.array([len(pairs[k][0]) - 1 for k in pair], dtype=np.int64)
    for degree in np.unique(degrees):
        m = degrees == degree
        A = np.array([pairs[k][0] for k in pair[m]])
        B = np.array([pairs[k][1] for k in pair[m]])
        s, u = params[m, 0].copy(), params[m, 1].copy()
        for _ in range(iterations):
            f = np.einsum("qi,qik->qk", bernstein(degree, s), A) - np.einsum("qi,qik->qk", bernstein(degree, u), B)
            da = np.einsum("qi,qik->qk", bernstein_derivative(degree, s), A)
            db = -np.einsum("qi,qik->qk", bernstein_derivative(degree, u), B)
            det = cross(da, db)
            good = np.abs(det) > 1e-300
            det = np.where(good, det, 1)
            s = np.clip(np.where(good, s - cross(f, db) / det, s), 0, 1)
            u = np.clip(np.where(good, u - cross(da, f) / det, u), 0, 1)
        params[m, 0], params[m, 1] = s, u
        points[m] = np.einsum("qi,qik->qk", bernstein(degree, s), A)
    # Repeats (a crossing found from two neighbouring segment pairs) merged.
    if len(pair):
        order = np.lexsort((params[:, 1], params[:, 0], pair))
        pair, params, points = pair[order], params[order], points[order]
        keep = np.ones(len(pair), bool)
        keep[1:] = (pair[1:] != pair[:-1]) | (np.abs(params[1:] - params[:-1]).max(axis=1) > 1e-9)
        pair, params, points = pair[keep], params[keep], points[keep]
    return pair, params, points


def bezier_intersections(pairs, bezier):
    """(pair (k,), points (k, 2), errors): the `bezier` package's answer, one call per pair."""
    out_pair, out_points, errors = [], [], 0
    for k, (a, b) in enumerate(pairs):
        ca, cb = bezier.Curve.from_nodes(np.asfortranarray(a.T)), bezier.Curve.from_nodes(np.asfortranarray(b.T))
        try:
            st = ca.intersect(cb)
        except Exception:  # (the package raises where it cannot decide)
            errors += 1
            continue
        for s in st[0]:
            out_pair.append(k)
            out_points.append(ca.evaluate(float(s))[:, 0])
    return np.array(out_pair, np.int64), np.array(out_points).reshape(-1, 2), errors


def compare(n, ours, peer_pair, peer_points, overlap_pairs, tolerance=1e-6):
    """Intersections the peer missed and extra points it gave, away from shared arcs; and the shared-arc pairs
    for which the peer gave both ends of the arc."""
    our_pair, our_points = ours["pair"], ours["points"]
    by_pair = [[] for _ in range(n)]
    for k, p in zip(peer_pair, peer_points):
        by_pair[k].append(p)
    ours_by_pair = [[] for _ in range(n)]
    for k, p in zip(our_pair, our_points):
        ours_by_pair[k].append(p)
    missed = extra = arcs = 0
    for k in range(n):
        theirs = np.array(by_pair[k]).reshape(-1, 2)
        mine = np.array(ours_by_pair[k]).reshape(-1, 2)
        if k in overlap_pairs:
            # The arc's ends (on the first curve): counted as given when both are among the peer's points.
            ends = ours["overlap_ends"][k]
            if all(len(theirs) and np.linalg.norm(theirs - e, axis=1).min() <= tolerance for e in ends):
                arcs += 1
            continue
        for p in mine:
            if not len(theirs) or np.linalg.norm(theirs - p, axis=1).min() > tolerance:
                missed += 1
        for p in theirs:
            if not len(mine) or np.linalg.norm(mine - p, axis=1).min() > tolerance:
                extra += 1
    return missed, extra, arcs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--loop", type=int, default=2000, help="pairs intersected one call each")
    ap.add_argument("--json", help="write the rows as JSON here")
    a = ap.parse_args()
    pairs, kinds = curve_pairs(a.pairs)
    n = len(pairs)
    devices = ["cpu"] + (["cuda", "auto"] if parasurf.cuda_available() else [])
    ref = parasurf.intersect_curves_batch(pairs, device="cpu", flat=True)
    # The ends of each shared arc, on the first curve.
    ref["overlap_ends"] = {}
    for k, o in zip(ref["overlap_pair"], ref["overlaps"]):
        curve = pairs[int(k)][0]
        ref["overlap_ends"][int(k)] = [bernstein(len(curve) - 1, np.array(s)) @ curve for s in (o[0], o[1])]
    overlap_pairs = set(int(k) for k in ref["overlap_pair"])
    found = len(ref["pair"])
    peers = {}
    try:
        import bezier
        seconds = best(lambda: bezier_intersections(pairs, bezier), a.repeats)
        pp, pts, errors = bezier_intersections(pairs, bezier)
        missed, extra, arcs = compare(n, ref, pp, pts, overlap_pairs)
        peers["bezier"] = {"seconds": seconds, "version": bezier.__version__, "points": len(pp), "errors": errors,
                           "missed": missed, "extra": extra, "arcs_with_both_ends": arcs}
    except ImportError as e:
        peers["bezier"] = {"error": str(e)}
    seconds = best(lambda: numpy_intersections(pairs), a.repeats)
    pp, _, pts = numpy_intersections(pairs)
    missed, extra, arcs = compare(n, ref, pp, pts, overlap_pairs)
    peers["numpy"] = {"seconds": seconds, "points": len(pp), "errors": 0, "missed": missed, "extra": extra,
                      "arcs_with_both_ends": arcs}
    for name, p in peers.items():
        if "error" in p:
            print("peer %s: %s" % (name, p["error"]))
        else:
            print("peer %-6s %8.1f ms  %6d points; against parasurf: missed %d, extra %d, errors %d, both ends of %d "
                  "of %d shared arcs" % (name, p["seconds"] * 1e3, p["points"], p["missed"], p["extra"], p["errors"],
                                         p["arcs_with_both_ends"], len(overlap_pairs)), flush=True)
    # One pair per call, as a loop over pairs makes them: the per-call cost of each tool.
    loop = pairs[:a.loop]
    per_call = {"pairs": len(loop), "parasurf": best(lambda: [parasurf.intersect_curves(x, y) for x, y in loop],
                                                     a.repeats) / len(loop)}
    if "seconds" in peers.get("bezier", {}):
        import bezier
        per_call["bezier"] = best(lambda: bezier_intersections(loop, bezier), a.repeats) / len(loop)
    print("one pair per call (%d pairs): %s" % (len(loop), ", ".join(
        "%s %.1f us" % (k, v * 1e6) for k, v in per_call.items() if k != "pairs")), flush=True)
    rows = []
    for dev in devices:
        s = best(lambda: parasurf.intersect_curves_batch(pairs, device=dev, flat=True), a.repeats)
        r = parasurf.intersect_curves_batch(pairs, device=dev, flat=True)
        same = bool(np.array_equal(r["pair"], ref["pair"])) and bool(np.array_equal(r["overlap_pair"], ref["overlap_pair"])) \
            and float(np.abs(r["params"] - ref["params"]).max(initial=0)) <= 1e-9
        row = {"function": "intersect_curves_batch", "device": dev, "seconds": s, "points": len(r["pair"]),
               "tangent_points": int(r["tangent"].sum()), "overlaps": len(r["overlap_pair"]), "status": r["status"],
               "same_as_cpu": same}
        for name, p in peers.items():
            if "seconds" in p:
                row["speedup_over_" + name] = p["seconds"] / s
        rows.append(row)
        print("intersect_curves_batch %d pairs  %-5s %8.1f ms  %d points (%d tangencies), %d shared arcs (%s)%s%s" %
              (n, dev, s * 1e3, row["points"], row["tangent_points"], row["overlaps"], r["status"],
               "".join("  %.1fx %s" % (p["seconds"] / s, name) for name, p in peers.items() if "seconds" in p),
               "" if same else "  (differs from the cpu answer)"), flush=True)
    if a.json:
        meta = {"commit": commit(), "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(),
                "cuda": parasurf.cuda_available(), "numpy": np.__version__, "gpu": gpu_name()}
        mix = {kind: kinds.count(kind) for kind in ("random", "tangent", "overlap")}
        with open(a.json, "w") as f:
            json.dump({"benchmark": "python-curve-pairs", **meta, "pairs": n, "mix": mix, "peers": peers,
                       "per_call": per_call, "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
