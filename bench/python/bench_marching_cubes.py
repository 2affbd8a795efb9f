#!/usr/bin/env python3
"""What a Python user of parasurf.marching_cubes meets, against the engine under it and against scikit-image.

For each size: the Python function on a host array (device cpu and, with a GPU, cuda) beside the engine alone on
the same array and device (the mesh without values) and beside the C++ call that makes all the Python function
returns (marching_cubes_array: mesh, normals and values; the Python function's cost over it is the binding's);
scikit-image on the same array; and, with a GPU, the Python function on PyTorch and CuPy CUDA arrays beside the
engine on the same device array. The paths of a row are timed in turn, round after round (at least --repeats
rounds and --min-seconds), and each keeps its best time.

    PYTHONPATH=build/python python3 bench/python/bench_marching_cubes.py --sizes 64,128,256,512 --json mc.json
"""
import argparse
import json
import os
import platform
import subprocess
import time

import numpy as np

import parasurf
from parasurf import _parasurf


def tangle(n):
    """The tangle cube x^4 - 5x^2 + y^4 - 5y^2 + z^4 - 5z^2 + 11.8 on [-3, 3]^3, float32 (a genus-5 surface at 0)."""
    t = np.linspace(-3.0, 3.0, n, dtype=np.float32)
    q = t ** 4 - 5 * t ** 2
    return (q[:, None, None] + q[None, :, None] + q[None, None, :] + np.float32(11.8)).astype(np.float32)


def best(f, repeats, sync=lambda: None):
    f()  # warm: thread pools, the GPU context, the framework's allocator
    sync()
    out = 1e300
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        sync()
        out = min(out, time.perf_counter() - t0)
    return out


def best_interleaved(calls, repeats, min_seconds, sync=lambda: None):
    """The best time of each call, the calls taken in turn round after round (at least `repeats` rounds and
    `min_seconds`, at most 50 times `repeats`), so that every path meets the same state of the host (its clocks,
    caches and other load) rather than each its own stretch of it. Each round starts one call further on, so that
    no call always follows the same other one (and meets the caches and the GPU as that one's different work
    left them). Each call returns the seconds it measured."""
    for c in calls:
        c()  # warm: thread pools, the GPU context, the framework's allocator
    sync()
    bests = [1e300] * len(calls)
    end = time.perf_counter() + min_seconds
    rounds = 0
    while rounds < repeats or (time.perf_counter() < end and rounds < 50 * repeats):
        for k in range(len(calls)):
            i = (rounds + k) % len(calls)
            bests[i] = min(bests[i], calls[i]())
        rounds += 1
    return bests


def timed(f, sync=lambda: None):
    """A call of f timed from Python, its device work included."""
    def run():
        t0 = time.perf_counter()
        f()
        sync()
        return time.perf_counter() - t0
    return run


def commit():
    if os.environ.get("PARASURF_COMMIT"):  # a copy of the tree without its history (a GPU machine)
        return os.environ["PARASURF_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def gpu_name():
    """The first GPU's name (for the results' caption), or None without one."""
    if not parasurf.cuda_available():
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout.strip().splitlines()
        return out[0].strip() if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,128,256,512")
    ap.add_argument("--repeats", type=int, default=5, help="rounds at least (each round runs every path once)")
    ap.add_argument("--min-seconds", type=float, default=0.5,
                    help="and rounds until this long has passed for a size and device (small sizes: many rounds)")
    ap.add_argument("--skimage-max", type=int, default=256, help="largest size scikit-image runs at (it is slow)")
    ap.add_argument("--json", help="write the rows as JSON here")
    a = ap.parse_args()
    try:
        from skimage.measure import marching_cubes as sk
    except ImportError:
        sk = None
    devices = ["cpu"] + (["cuda"] if parasurf.cuda_available() else [])
    rows = []

    def report(row):
        rows.append(row)
        extra = ""
        if "engine_seconds" in row:
            extra += "  engine %8.2f ms  python/engine %.2fx" % (row["engine_seconds"] * 1e3, row["ratio_to_engine"])
            extra += "  C++ API %8.2f ms  python/API %.2fx" % (row["api_seconds"] * 1e3, row["ratio_to_api"])
        if "peer_seconds" in row:
            extra += "  %s %9.1f ms  (%.1fx)" % (row["peer"], row["peer_seconds"] * 1e3, row["speedup_over_peer"])
        print("%4d^3 %-26s %9.2f ms%s" % (row["size"], row["path"], row["seconds"] * 1e3, extra), flush=True)

    for n in (int(s) for s in a.sizes.split(",")):
        vol = tangle(n)
        level = 0.0
        peer = None
        if sk is not None and n <= a.skimage_max:
            peer = best(lambda: sk(vol, level), max(1, min(a.repeats, 3)))
        for dev in devices:
            py, eng, api = best_interleaved(
                [timed(lambda: parasurf.marching_cubes(vol, level, device=dev)),
                 lambda: _parasurf._engine_seconds(vol, level, dev, 1),
                 lambda: _parasurf._engine_seconds(vol, level, dev, 1, api=True)], a.repeats, a.min_seconds)
            row = {"size": n, "path": "python, host array, " + dev, "device": dev, "seconds": py, "engine_seconds": eng,
                   "ratio_to_engine": py / eng, "api_seconds": api, "ratio_to_api": py / api}
            if peer is not None:
                row.update(peer="scikit-image", peer_seconds=peer, speedup_over_peer=peer / py)
            report(row)
        if "cuda" not in devices:
            continue
        for name in ("torch", "cupy"):
            try:
                if name == "torch":
                    import torch
                    d = torch.from_numpy(vol).cuda()
                    sync = torch.cuda.synchronize
                else:
                    import cupy
                    d = cupy.asarray(vol)
                    sync = cupy.cuda.Device().synchronize
            except Exception:
                continue
            py, eng, api = best_interleaved(
                [timed(lambda: parasurf.marching_cubes(d, level), sync),
                 lambda: _parasurf._engine_seconds(d, level, "cuda", 1),
                 lambda: _parasurf._engine_seconds(d, level, "cuda", 1, api=True)], a.repeats, a.min_seconds, sync)
            report({"size": n, "path": "python, %s CUDA array" % name, "device": "cuda", "seconds": py,
                    "engine_seconds": eng, "ratio_to_engine": py / eng, "api_seconds": api, "ratio_to_api": py / api})
    meta = {"commit": commit(), "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "machine": platform.node(),
            "cuda": parasurf.cuda_available(), "numpy": np.__version__}
    if gpu_name():
        meta["gpu"] = gpu_name()
    try:
        import skimage
        meta["scikit_image"] = skimage.__version__
    except ImportError:
        pass
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"benchmark": "python marching_cubes", "meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
