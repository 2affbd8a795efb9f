#!/usr/bin/env python3
"""Peers of `parasurf bench isosurface`: VTK vtkFlyingEdges3D (all threads) and scikit-image marching_cubes,
timed on the same samples (a raw float32 or uint8 file written by the benchmark). Prints one JSON object.

usage: iso_peers.py RAW NX NY NZ DTYPE LEVEL REPEATS[:SECONDS] [vtk,skimage,skimage_lorensen]
       iso_peers.py --labels RAW NX NY NZ DTYPE REPEATS
The second form times label-map peers on every nonzero label: vtkSurfaceNets3D where this VTK has it (9.3+), and
vtkDiscreteFlyingEdges3D (one surface per label, so a face between two labels is made twice).
"""
import json
import sys
import time

import numpy as np


def best_of(fn, repeats, min_seconds=0.0):
    """The best time of at least `repeats` runs and at least `min_seconds` of runs (as parasurf's own runs)."""
    best, result, runs, start = float("inf"), None, 0, time.perf_counter()
    while runs < repeats or (runs < 100000 and time.perf_counter() - start < min_seconds):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
        runs += 1
    return best, result


def parse_repeats(text):
    """REPEATS is N or N:SECONDS (at least N runs and at least SECONDS of runs)."""
    count, _, seconds = text.partition(":")
    return int(count), float(seconds or 0)


def main_labels():
    path, nx, ny, nz, dtype, repeats = sys.argv[2:8]
    nx, ny, nz, repeats = int(nx), int(ny), int(nz), int(repeats)
    data = np.fromfile(path, dtype=np.dtype(dtype)).reshape(nz, ny, nx)
    labels = [int(v) for v in np.unique(data) if v != 0]
    out = {"labels": len(labels)}
    try:
        import vtk
        from vtk.util import numpy_support

        image = vtk.vtkImageData()
        image.SetDimensions(nx, ny, nz)
        image.GetPointData().SetScalars(numpy_support.numpy_to_vtk(data.ravel(), deep=True))
        out["threads"] = vtk.vtkMultiThreader.GetGlobalDefaultNumberOfThreads()
        for name, cls in (("vtk_surface_nets", "vtkSurfaceNets3D"), ("vtk_discrete_flying_edges", "vtkDiscreteFlyingEdges3D")):
            if not hasattr(vtk, cls):
                out[name] = {"error": f"{cls} is not in VTK {vtk.vtkVersion.GetVTKVersion()}"}
                continue

            def run():
                f = getattr(vtk, cls)()
                f.SetInputData(image)
                for i, l in enumerate(labels):
                    f.SetValue(i, l)
                f.Update()
                return f.GetOutput()

            sec, poly = best_of(run, repeats)
            out[name] = {"seconds": sec, "triangles": poly.GetNumberOfCells(), "vertices": poly.GetNumberOfPoints()}
    except ImportError as e:
        out["vtk"] = {"error": str(e)}
    print(json.dumps(out))


def main():
    if sys.argv[1] == "--labels":
        return main_labels()
    path, nx, ny, nz, dtype, level, repeats = sys.argv[1:8]
    peers = sys.argv[8].split(",") if len(sys.argv) > 8 else ["vtk", "skimage"]
    nx, ny, nz, level = int(nx), int(ny), int(nz), float(level)
    repeats, min_seconds = parse_repeats(repeats)
    data = np.fromfile(path, dtype=np.dtype(dtype)).reshape(nz, ny, nx)
    out = {}
    if "vtk" in peers:
        try:
            import vtk
            from vtk.util import numpy_support

            image = vtk.vtkImageData()
            image.SetDimensions(nx, ny, nz)
            arr = numpy_support.numpy_to_vtk(data.ravel(), deep=True)
            image.GetPointData().SetScalars(arr)
            smp = vtk.vtkSMPTools()
            threads = vtk.vtkMultiThreader.GetGlobalDefaultNumberOfThreads()

            def run():
                fe = vtk.vtkFlyingEdges3D()
                fe.SetInputData(image)
                fe.SetValue(0, level)
                fe.ComputeNormalsOn()
                fe.ComputeScalarsOff()
                fe.Update()
                return fe.GetOutput()

            sec, poly = best_of(run, repeats, min_seconds)
            pts = numpy_support.vtk_to_numpy(poly.GetPoints().GetData()).astype(np.float64)
            con = numpy_support.vtk_to_numpy(poly.GetPolys().GetConnectivityArray()).reshape(-1, 3)
            tri = pts[con]
            area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1).sum()
            out["vtk_flying_edges"] = {"seconds": sec, "triangles": poly.GetNumberOfCells(), "area": float(area),
                                       "vertices": poly.GetNumberOfPoints(), "threads": threads,
                                       "smp_backend": smp.GetBackend() if hasattr(smp, "GetBackend") else "?"}
        except ImportError as e:
            out["vtk_flying_edges"] = {"error": str(e)}
    for name, method in (("skimage", "lewiner"), ("skimage_lorensen", "lorensen")):
        if name not in peers:
            continue
        try:
            from skimage import measure

            # The samples as they lie in memory (C order, z slowest), as a numpy user holds them: a transposed view
            # doubles scikit-image's time. Its vertices come in (z, y, x) order; the area does not depend on it.
            sec, (verts, faces, normals, values) = best_of(
                lambda: measure.marching_cubes(data, level=level, method=method), max(1, min(repeats, 2)), min_seconds)
            tri = verts[faces]
            area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1).sum()
            out[name] = {"seconds": sec, "triangles": int(len(faces)), "vertices": int(len(verts)),
                         "area": float(area), "method": method, "order": "C"}
        except ImportError as e:
            out[name] = {"error": str(e)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
