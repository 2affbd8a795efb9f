#!/usr/bin/env python3
"""parasurf.intersect_rays against what a numpy user writes for the same image, on the same rays.

A pinhole camera in front of the Utah teapot (its 32 bicubic patches), one ray per pixel (--image N: N x N rays).
parasurf intersects the patches themselves (the subdivision solver, each ray's first hit). The numpy peer is the
usual approach: the model tessellated into triangles (parasurf.tessellate at --resolution segments per patch
side, not timed), then Moller-Trumbore between every ray and every triangle at once, in chunks of rays, keeping
the nearest hit. Reported: the time of each, the rays where one hits and the other misses (the tessellation's
silhouette lies inside or outside the surface's), and how far the peer's hit points lie from the surface
(|t| differences on rays both hit). Best of --repeats calls (the peer: one call).

    PYTHONPATH=build/python python3 bench/python/bench_rays.py --json rays.json
"""
import argparse
import json
import os
import time

import numpy as np

import parasurf
from bench_marching_cubes import best, commit, gpu_name


def camera(n):
    """The origins and directions of an n x n image of the teapot (as bench_functions.py makes it)."""
    s = np.linspace(-1.0, 1.0, n)
    px, py = np.meshgrid(s * 4.0, s * 3.0 + 1.5)
    origins = np.tile([0.0, 1.5, -12.0], (n * n, 1))
    directions = np.stack([px.ravel(), py.ravel() - 1.5, np.full(n * n, 12.0)], axis=1)
    return origins, directions


def numpy_first_hits(origins, directions, verts, faces, chunk=128):
    """Each ray's nearest t > 0 on the triangles (infinity for a miss), Moller-Trumbore for all pairs at once."""
    v0 = verts[faces[:, 0]].astype(np.float64)
    e1 = verts[faces[:, 1]] - v0
    e2 = verts[faces[:, 2]] - v0
    out = np.full(len(origins), np.inf)
    for c in range(0, len(origins), chunk):
        o = origins[c:c + chunk, None, :]
        d = directions[c:c + chunk, None, :]
        p = np.cross(d, e2[None])
        det = (e1[None] * p).sum(-1)
        ok = np.abs(det) > 1e-12
        inv = 1.0 / np.where(ok, det, 1.0)
        s = o - v0[None]
        u = (s * p).sum(-1) * inv
        q = np.cross(s, e1[None])
        v = (d * q).sum(-1) * inv
        t = (e2[None] * q).sum(-1) * inv
        hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 1e-9)
        out[c:c + chunk] = np.where(hit, t, np.inf).min(axis=1)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--image", type=int, default=128, help="rays per side of the image")
    ap.add_argument("--resolution", type=int, default=8, help="the peer's segments per patch side")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="write the rows as JSON here")
    a = ap.parse_args()
    origins, directions = camera(a.image)
    verts, faces, _ = parasurf.tessellate(resolution=a.resolution, device="cpu")
    verts = np.asarray(verts, dtype=np.float64)
    faces = np.asarray(faces)
    t0 = time.perf_counter()
    t_peer = numpy_first_hits(origins, directions, verts, faces)
    peer_seconds = time.perf_counter() - t0
    ref = parasurf.intersect_rays(origins, directions, device="cpu")
    ours = np.where(ref["hit"], ref["t"], np.inf)
    both = np.isfinite(ours) & np.isfinite(t_peer)
    length = np.linalg.norm(directions, axis=1)
    error = np.abs(t_peer[both] - ours[both]) * length[both]  # distance along the ray between the two hit points
    peer = {"seconds": peer_seconds, "triangles": len(faces), "resolution": a.resolution,
            "hits": int(np.isfinite(t_peer).sum()), "missed": int((np.isfinite(ours) & ~np.isfinite(t_peer)).sum()),
            "extra": int((~np.isfinite(ours) & np.isfinite(t_peer)).sum()),
            "median_error": float(np.median(error)) if len(error) else 0.0,
            "max_error": float(error.max()) if len(error) else 0.0}
    print("numpy peer (%d triangles) %8.1f ms  %d hits; against parasurf: %d rays missed, %d extra, hit points "
          "off by %.1e median, %.1e at most" % (peer["triangles"], peer_seconds * 1e3, peer["hits"], peer["missed"],
                                                peer["extra"], peer["median_error"], peer["max_error"]), flush=True)
    rows = []
    devices = ["cpu"] + (["cuda", "auto"] if parasurf.cuda_available() else [])
    for dev in devices:
        s = best(lambda: parasurf.intersect_rays(origins, directions, device=dev), a.repeats)
        r = parasurf.intersect_rays(origins, directions, device=dev)
        same = bool(np.array_equal(r["hit"], ref["hit"])) and \
            float(np.abs(r["t"][r["hit"]] - ref["t"][r["hit"]]).max(initial=0)) <= 1e-9
        rows.append({"function": "intersect_rays teapot", "rays": len(origins), "device": dev, "seconds": s,
                     "hits": int(r["hit"].sum()), "systems": int(r["systems"]), "status": r["status"],
                     "same_as_cpu": same, "speedup_over_numpy": peer_seconds / s})
        print("intersect_rays %d rays  %-5s %8.1f ms  %d hits (%d systems, %s)  %.1fx the numpy peer%s" %
              (len(origins), dev, s * 1e3, rows[-1]["hits"], rows[-1]["systems"], r["status"], peer_seconds / s,
               "" if same else "  (differs from the cpu answer)"), flush=True)
    if a.json:
        meta = {"commit": commit(), "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(),
                "cuda": parasurf.cuda_available(), "numpy": np.__version__, "gpu": gpu_name()}
        with open(a.json, "w") as f:
            json.dump({"benchmark": "python-rays", **meta, "image": a.image, "peer": peer, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
