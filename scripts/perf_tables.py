#!/usr/bin/env python3
"""Writes the tables of docs/performance.md from the benchmarks' JSON kept in docs/results/.

    scripts/perf_tables.py                              rewrite the part of docs/performance.md between its markers
    scripts/perf_tables.py --check                      exit 1 when that part differs from what the JSON gives
    scripts/perf_tables.py --store gpu bench-isosurface f.json [--gpu-name NAME]
                                                        keep a benchmark's --json output as the current figures of
                                                        that machine (docs/results/<machine>.json), then rewrite

docs/results holds one file per machine (gpu: the 16-core host with one NVIDIA GPU; 2core: the development
machine), one entry per benchmark. Each table names its device (the GPU's name that the entry records; --gpu-name
supplies it for a file that does not), date, commit and the command that reproduces it; an entry that is absent
leaves its table out.
"""
import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
RESULTS = ROOT / "docs" / "results"
BEGIN = "<!-- tables: written by scripts/perf_tables.py from docs/results; do not edit by hand -->"
END = "<!-- end of tables -->"


def load(name):
    """The entry "bench-isosurface-gpu.json" names: benchmark bench-isosurface of results/gpu.json."""
    benchmark, machine = name[:-len(".json")].rsplit("-", 1)
    path = RESULTS / f"{machine}.json"
    entries = json.loads(path.read_text()) if path.exists() else {}
    return (entries[benchmark], f"results/{machine}.json") if benchmark in entries else (None, None)


def gpu_name(doc):
    """The GPU an entry was measured on, as the benchmark or --gpu-name recorded it."""
    return doc.get("gpu") or doc.get("device") or doc.get("meta", {}).get("gpu") or "GPU"


def gpu_host(doc):
    """'16-core host with an NVIDIA H200' for a Python benchmark's entry."""
    cores = doc.get("meta", {}).get("cores") or doc.get("cores")
    return (f"{cores}-core host" if cores else "host") + " with an " + gpu_name(doc)


def host(doc, threads_key="cpu_threads"):
    """'NVIDIA H100 80GB HBM3, 16 host threads' for a GPU entry."""
    threads = doc.get(threads_key) or doc.get("meta", {}).get("cores") or doc.get("cores")
    return gpu_name(doc) + (f", {threads} host threads" if threads else "")


def store(machine, benchmark, source, gpu=None):
    path = RESULTS / f"{machine}.json"
    entries = json.loads(path.read_text()) if path.exists() else {}
    entry = json.loads(pathlib.Path(source).read_text())
    if gpu and gpu_name(entry) == "GPU":
        entry["gpu"] = gpu
    entries[benchmark] = entry
    path.write_text(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")


def ms(seconds):
    v = seconds * 1e3
    return f"{v:.3f} ms" if v < 1 else f"{v:.2f} ms" if v < 10 else f"{v:.1f} ms" if v < 100 else f"{v:.0f} ms"


def ratio(x):
    return f"{x:.2f}×" if x < 10 else f"{x:.1f}×" if x < 100 else f"{x:.0f}×"


def caption(doc, link, machine, command):
    bw = doc.get("copy_bandwidth_bytes_per_second")
    bw = f", copy bandwidth {bw / 1e9:.0f} GB/s" if bw else ""
    return (f"{machine}{bw}; {doc.get('date', 'date not recorded')}, commit {doc.get('commit', '?')}; "
            f"`{command}` ([JSON]({link})).\n")


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def surface():
    doc, link = load("bench-surface-gpu.json")
    if not doc:
        return ""
    rows = doc["rows"]
    pick = lambda **k: next((r for r in rows if all(r.get(a) == b for a, b in k.items())), None)
    out = ["### Bézier surfaces\n",
           "Positions and unit normals on a 2000² grid, `factored` method. Kernel: samples left on the GPU, ratio "
           "to the time of writing them once at the copy bandwidth. With copy: the same samples in host memory "
           "(pageable arrays, brought home through pinned staging emptied by all cores). "
           "CPU: the same work on the host's threads.\n",
           caption(doc, link, host(doc),
                   "parasurf bench surface --devices cpu,cuda --methods factored --nets 4,12,16 --resolutions 2000 "
                   "--json f.json")]
    body = []
    for net in sorted({r["net"] for r in rows}):
        for precision in ("float", "double"):
            k = pick(net=net, precision=precision, scheme="kernel", resolution=2000)
            if not k:
                continue
            copy = pick(net=net, precision=precision, scheme="gpu+copy", resolution=2000)
            cpu = pick(net=net, precision=precision, device="cpu", resolution=2000, threads=doc.get("cpu_threads"))
            body.append([f"{net}×{net}", precision, ms(k["seconds"]), f"{k['points_per_second'] / 1e9:.0f}",
                         f"{100 * k['fraction_of_copy_bandwidth']:.0f} %", ms(copy["seconds"]) if copy else "",
                         ms(cpu["seconds"]) if cpu else "",
                         ratio(cpu["seconds"] / k["seconds"]) if cpu else "",
                         ratio(cpu["seconds"] / copy["seconds"]) if cpu and copy else ""])
    out.append(table(["net", "precision", "GPU kernel", "Gpoints/s", "of copy bandwidth", "GPU with copy home",
                      "CPU", "kernel ÷ CPU", "with copy ÷ CPU"], body))
    peer_doc, peer_link = load("bench-surface-2core.json")
    if peer_doc and peer_doc.get("peer"):
        out.append("\nAgainst OpenSubdiv's `CpuEvaluator` (bicubic, positions and first derivatives), " +
                   caption(peer_doc, peer_link, f"development machine, {peer_doc.get('cpu_threads', '?')} cores",
                           "parasurf bench surface --quick --json f.json"))
        out.append(table(["threads", "parasurf", "OpenSubdiv", "speed-up"],
                         [[p["threads"], f"{p['ours_points_per_second'] / 1e6:.0f} Mpoints/s",
                           f"{p['peer_points_per_second'] / 1e6:.1f} Mpoints/s", ratio(p["ratio"])]
                          for p in peer_doc["peer"]]))
    return "\n".join(out)


def patches():
    doc, link = load("bench-patches-gpu.json")
    if not doc:
        return ""
    rows = doc["rows"]
    out = ["### Patch models\n",
           "Every patch of a model evaluated in one batch (positions and normals). `tables` is the library's "
           "strategy, `direct` and `casteljau` the two of Concheiro et al. 2010 run by the same benchmark; ratio "
           "to the copy bandwidth as for surfaces.\n",
           caption(doc, link, f"{doc.get('gpu', 'GPU')}", "parasurf bench patches --json f.json")]
    body = []
    keys = sorted({(r["model"], r["patches"], r["points_per_side"], r["precision"]) for r in rows
                   if r["device"] == "cuda" and r["strategy"] == "tables"})
    for model, count, side, precision in keys:
        if precision != "float" or side not in (16, 32, 128, 256):
            continue
        get = lambda s: next((r for r in rows if r["model"] == model and r["device"] == "cuda" and
                              r["strategy"] == s and r["points_per_side"] == side and r["precision"] == precision), None)
        t, d, c = get("tables"), get("direct"), get("casteljau")
        body.append([model, f"{count:,}", f"{side}²", ms(t["seconds"]), f"{t['points_per_second'] / 1e9:.1f}",
                     f"{100 * t['fraction_of_copy_bandwidth']:.0f} %",
                     ratio(d["seconds"] / t["seconds"]) if d else "", ratio(c["seconds"] / t["seconds"]) if c else ""])
    out.append(table(["model", "patches", "points", "tables", "Gpoints/s", "of copy bandwidth", "direct ÷ tables",
                      "casteljau ÷ tables"], body))
    tess = doc.get("tessellation") or []
    if tess:
        out.append("\nWelded meshes (evaluation, then welding and assembly, median of the runs):\n")
        out.append(table(["model", "segments", "device", "triangles", "evaluate", "assemble", "where",
                          "mesh home", "of link floor"],
                         [[t["model"], t["resolution"], t["device"], f"{t['triangles']:,}", ms(t["evaluate_seconds"]),
                           ms(t["assemble_seconds"]), t["assembled_on"],
                           ms(t["download_seconds"]) if t.get("download_seconds") else "",
                           f"{100 * t['download_link_floor_seconds'] / t['download_seconds']:.0f} %"
                           if t.get("download_seconds") and t.get("download_link_floor_seconds") else ""]
                          for t in tess]))
    peer_doc, peer_link = load("bench-patches-2core.json")
    if peer_doc and peer_doc.get("peer"):
        out.append("\nAgainst OpenSubdiv's `CpuEvaluator` on bicubic patches, " +
                   caption(peer_doc, peer_link, "development machine", "parasurf bench patches --quick --json f.json"))
        out.append(table(["patches", "points", "threads", "parasurf", "OpenSubdiv", "speed-up"],
                         [[f"{p['patches']:,}", f"{int(p['points']):,}", p["threads"], ms(p["parasurf_seconds"]),
                           ms(p["peer_seconds"]), ratio(p["speedup"])] for p in peer_doc["peer"]]))
    return "\n".join(out)


def skimage_seconds(result):
    """scikit-image's time in an isosurface result, or None; also None for runs that gave it a transposed view of the
    samples (no "order" recorded), which takes about twice its time on the array as numpy holds it."""
    sk = (result.get("peers") or {}).get("skimage") or {}
    return sk.get("seconds") if sk.get("order") == "C" else None


def isosurface_rows(doc):
    body = []
    for r in doc["results"]:
        cpu, cuda, res = r.get("cpu") or {}, r.get("cuda") or {}, r.get("cuda_resident") or {}
        peers = r.get("peers") or {}
        sk = skimage_seconds(r)
        vtk = (peers.get("vtk_flying_edges") or {}).get("seconds")
        body.append([r["volume"], f"{r.get('triangles', cpu.get('triangles', res.get('triangles', 0))):,}",
                     ms(cpu["seconds"]) if cpu.get("seconds") else "",
                     ms(cuda["seconds"]) if cuda.get("seconds") else "",
                     f"{100 * cuda['fraction_of_link_floor']:.0f} %" if cuda.get("fraction_of_link_floor") else "",
                     ms(res["seconds"]) if res.get("seconds") else "",
                     ratio(res["floor_ratio"]) if res.get("floor_ratio") else "",
                     ms(sk) if sk else "", ratio(sk / cpu["seconds"]) if sk and cpu.get("seconds") else "",
                     ratio(sk / res["seconds"]) if sk and res.get("seconds") else "",
                     ratio(vtk / cpu["seconds"]) if vtk and cpu.get("seconds") else ""])
    return table(["volume", "triangles", "CPU", "GPU from host", "of link floor", "GPU resident", "resident ÷ floor", "scikit-image",
                  "skimage ÷ CPU", "skimage ÷ resident", "VTK ÷ CPU"], body)


def isosurface():
    doc, link = load("bench-isosurface-gpu.json")
    if not doc:
        return ""
    out = ["### Isosurfaces\n",
           "The tangle field, level 0.5 for float32, its byte image for uint8 and its Hounsfield-like int16 image "
           "(-1000 + 1000 times the field); welded mesh with normals. CPU: the "
           "host's threads; GPU from host: samples in host memory, mesh back in host memory; GPU resident: samples "
           "and mesh on the GPU, with its floor (read the volume once, write the mesh once at the copy bandwidth). "
           "Of link floor: the floor of a job that overlaps its two directions on the pinned link (the larger of "
           "the samples' time up and the mesh's time home, the link measured in the same run) over the GPU-from-host "
           "time; the samples and the mesh are pageable host arrays, which the host's cores copy through pinned "
           "staging on the way, and a fresh mesh's pages are faulted in and cleared. "
           "Peers run on the same array in the same run (scikit-image on one thread, as it runs, on the samples in "
           "C order as numpy holds them; VTK's Flying Edges where installed)." +
           (" The scikit-image columns are empty where that run gave it a transposed view of the samples, which "
            "about doubles its time; the Python table below has it on the GPU host." if any(
                ((r.get("peers") or {}).get("skimage") or {}).get("seconds") and not skimage_seconds(r)
                for r in doc["results"]) else "") + "\n",
           caption(doc, link, host(doc),
                   "parasurf bench isosurface --sizes 64,128,256,512 --volumes MR_Gd.nii.gz:60,spm152.nii.gz:60 "
                   "--json f.json"),
           isosurface_rows(doc)]
    auto, auto_link = load("bench-isosurface-auto-gpu.json")
    if auto:
        out.append("\n`auto`, the default device, against the faster of the two: it chooses per call from its "
                   "estimates of both, which the process's runs correct (best of repeated calls, so its estimates "
                   "have learned from the first). " +
                   caption(auto, auto_link, host(auto),
                           "parasurf bench isosurface --sizes 64,128,256 --volumes MR_Gd.nii.gz:60,spm152.nii.gz:60 "
                           "--devices cpu,cuda,auto --no-peers --json f.json"))
        rows = []
        for r in auto["results"]:
            a = r.get("auto") or {}
            if not a.get("seconds"):
                continue
            rows.append([r["volume"], ms(r["cpu"]["seconds"]), ms(r["cuda"]["seconds"]),
                         f"{ms(a['seconds'])} ({a.get('device', '').split(' ')[0]})", ratio(a["ratio_to_faster"])])
        out.append(table(["volume", "CPU", "GPU from host", "auto (chose)", "auto ÷ faster"], rows))
    small, small_link = load("bench-isosurface-2core.json")
    if small:
        out.append("\nOn the development machine, " + caption(small, small_link, f"{small.get('cpu_threads', '?')} "
                                                              "cores, no GPU",
                                                              "parasurf bench isosurface --sizes 64,256,512 --json f.json"))
        out.append(isosurface_rows(small))
    return "\n".join(out)


def ffd():
    doc, link = load("bench-ffd-gpu.json")
    if not doc:
        return ""
    res = doc["results"]
    out = ["### Free-form deformation\n",
           "One update after an edit of a 9×9×9 tricubic lattice (the mesh prepared once), results left on the GPU; "
           "best of the runs. Floor: writing the output vertices and normals once at the copy bandwidth. Home: the "
           "updated vertices and normals copied into pageable host arrays, and the pinned link's time for them over "
           "that (measured in the same run).\n",
           caption(doc, link, host(doc),
                   "parasurf bench ffd --spheres 14500,69000 --json f.json")]
    body = []
    for key in sorted({(r["mesh"], r["method"], r["level"]) for r in res}, key=lambda k: (k[0], k[1], k[2])):
        get = lambda dev, thr=None: next((r for r in res if (r["mesh"], r["method"], r["level"]) == key and
                                          r["device"] == dev and (thr is None or r["threads"] == thr)), None)
        gpu, cpu = get("cuda"), get("cpu", doc.get("cpu_threads"))
        if not gpu:
            continue
        body.append([key[0], key[1], key[2] or "", f"{gpu['output_vertices']:,}", ms(gpu["update_seconds_best"]),
                     ratio(gpu["ratio_to_floor"]) if gpu.get("ratio_to_floor") else "",
                     ms(gpu["download_seconds"]) if gpu.get("download_seconds") else "",
                     f"{100 * gpu['download_fraction_of_link_floor']:.0f} %"
                     if gpu.get("download_fraction_of_link_floor") else "",
                     ms(cpu["update_seconds_best"]) if cpu else "",
                     ratio(cpu["update_seconds_best"] / gpu["update_seconds_best"]) if cpu else ""])
    out.append(table(["mesh", "method", "m", "vertices out", "GPU update", "÷ floor", "home", "of link floor",
                      "CPU update", "CPU ÷ GPU"], body))
    return "\n".join(out)


def solver():
    doc, link = load("bench-solver-gpu.json")
    if not doc:
        return ""
    res = doc["results"]
    out = ["### Subdivision solver\n",
           "The experiments of Park et al. 2011 (section 6) with the inputs `bench solver --write-inputs` writes, and "
           "batches of our own; the paper's times are its GTX 580's. Engines: `cpu` (level by level), `cpu-tasks` "
           "(threads over a lock-free task buffer, the library's CPU default), `cuda` (breadth first on the GPU), "
           "`hybrid` (the paper's scheme), `auto` (the library's choice per batch: `cuda` from 2048 systems and 128 per "
           "CPU thread, else `cpu-tasks`). Each time is the whole call, its host work included. The benchmark runs the "
           "engines in turn, round after round, each round in a new order (at least a second per engine, up to 500 "
           "rounds; each engine runs twice in a row and the second run is timed, so that none meets the threads as "
           "a GPU engine left them), and keeps each one's fastest run. Auto ÷ best compares the fastest runs, and "
           "again the medians of the rounds. The sub-millisecond Hausdorff distances (a dozen short parallel phases "
           "on two teams of eight threads) vary from run to run by more than 10 % on this host: there two engines "
           "that run the same code (`auto` and `cpu-tasks`) differ by as much, in fastest runs and in medians alike. "
           "The CPU rows differ by up to 1.7× between instances of the GPU host.\n",
           caption(doc, link, f"{doc.get('gpu', 'GPU')} host, {doc.get('threads', '?')} threads",
                   "parasurf bench solver --json f.json")]
    labels = []
    for r in res:
        if r["label"] not in labels:
            labels.append(r["label"])
    body = []
    for label in labels:
        rows = {r["engine"]: r for r in res if r["label"] == label}
        paper = next(iter(rows.values())).get("paper_gpu_ms")
        best = min(r["ms"] for e, r in rows.items() if e != "auto")
        cell = lambda e: f"{rows[e]['ms']:.2f} ms" if e in rows else ""
        main = "auto" if "auto" in rows else "cpu"
        medians = [r["median_ms"] for e, r in rows.items() if e != "auto" and r.get("median_ms")]
        by_median = (ratio(rows["auto"]["median_ms"] / min(medians))
                     if "auto" in rows and rows["auto"].get("median_ms") and medians else "")
        body.append([label, f"{paper:g} ms" if paper else "", cell("cpu"), cell("cpu-tasks"), cell("cuda"),
                     cell("hybrid"), cell("auto"), ratio(rows["auto"]["ms"] / best) if "auto" in rows else "",
                     by_median, ratio(paper / rows[main]["ms"]) if paper and main in rows else ""])
    out.append(table(["experiment", "paper (GTX 580)", "cpu", "cpu-tasks", "cuda", "hybrid", "auto", "auto ÷ best",
                      "auto ÷ best, medians", "paper ÷ auto"], body))
    return "\n".join(out)


def python_marching_cubes():
    parts = []
    for name in ("python-marching-cubes-gpu.json", "python-marching-cubes-2core.json"):
        doc, link = load(name)
        if not doc:
            continue
        machine = gpu_host(doc) if name.endswith("-gpu.json") else "2-core development machine"
        meta = doc.get("meta", {})
        doc = {**doc, "commit": meta.get("commit", "?"), "date": meta.get("date", "date not recorded")}
        versions = ", ".join(f"{k.replace('_', '-')} {meta[k]}" for k in ("numpy", "scikit_image") if k in meta)
        parts.append(caption(doc, link, machine + (f" ({versions})" if versions else ""),
                             "bench/python/bench_marching_cubes.py --json f.json"))
        parts.append(table(["size", "path", "Python", "engine", "Python ÷ engine", "C++ API", "Python ÷ API",
                            "scikit-image", "speed-up"],
                           [[f"{r['size']}³", r["path"], ms(r["seconds"]), ms(r["engine_seconds"]),
                             ratio(r["ratio_to_engine"]), ms(r["api_seconds"]) if r.get("api_seconds") else "",
                             ratio(r["ratio_to_api"]) if r.get("ratio_to_api") else "",
                             ms(r["peer_seconds"]) if r.get("peer_seconds") else "",
                             ratio(r["speedup_over_peer"]) if r.get("speedup_over_peer") else ""]
                            for r in doc["rows"]]))
    if not parts:
        return ""
    return "\n".join(["### Python: `marching_cubes`\n",
                      "`parasurf.marching_cubes` on the tangle cube (float32, level 0) beside the engine alone on the "
                      "same array and device (the mesh and normals, no values), beside the C++ call that makes "
                      "everything the Python function returns (`marching_cubes_array`, values included: Python ÷ API "
                      "is the binding's own cost) and beside `skimage.measure.marching_cubes`, best of the calls "
                      "after a warm-up. The floor of a Python call is the engine's time on the same data.\n"] + parts)


def python_entries(benchmark):
    """(doc, link, label) of a Python benchmark's entry on each machine that has one, the GPU host first."""
    for machine in ("gpu", "2core"):
        doc, link = load(f"{benchmark}-{machine}.json")
        if doc:
            yield doc, link, gpu_host(doc) if machine == "gpu" else "2-core development machine"


def python_functions():
    parts = []
    for doc, link, label in python_entries("python-functions"):
        meta = doc.get("meta", {})
        doc = {**doc, "commit": meta.get("commit", "?"), **({"date": meta["date"]} if "date" in meta else {})}
        parts.append(caption(doc, link, label, "cd bench/python && python3 bench_functions.py --json f.json"))
        parts.append(table(["function", "device", "Python", "C++ API", "Python ÷ C++"],
                           [[r["function"], r["device"], ms(r["seconds"]), ms(r["engine_seconds"]),
                             ratio(r["ratio_to_engine"])] for r in doc["rows"]]))
    if not parts:
        return ""
    return "\n".join(["### Python: the other functions\n",
                      "Each function beside the same work through the one-shot C++ calls, which return fresh arrays "
                      "too.\n"] + parts)


def python_closest_points():
    parts = []
    for doc, link, label in python_entries("python-closest-points"):
        parts.append(caption(doc, link, f"{label} (numpy {doc.get('numpy', '?')})",
                             "cd bench/python && python3 bench_closest_points.py --json f.json"))
        parts.append(table(["queries", "device", "parasurf", "systems", "numpy peer", "speed-up",
                            "peer farther", "peer nearer"],
                           [[r["queries"], r["device"], ms(r["seconds"]), r["systems"], ms(r["numpy_seconds"]),
                             ratio(r["speedup_over_numpy"]), r["numpy_farther"], r["numpy_nearer"]]
                            for r in doc["rows"]]))
        loop = doc.get("per_call")
        if loop:
            parts.append(f"One query per call (over the first {loop['queries']} queries): parasurf "
                         f"{loop['parasurf'] * 1e6:.1f} µs, the numpy peer {loop['numpy'] * 1e6:.0f} µs per query.\n")
    if not parts:
        return ""
    return "\n".join(["### Python: `closest_points`\n",
                      "10⁴ points around the Utah teapot projected onto its 32 patches, beside the vectorised numpy "
                      "approach (each patch sampled on a 33² grid, the nearest sample found by brute force, Newton "
                      "from it). Peer farther / nearer: queries where the peer's answer is more than 1e-9 farther "
                      "(its sample lay in another basin) or nearer (a point parasurf would have missed) than "
                      "parasurf's.\n"] + parts)


def python_curve_pairs():
    parts = []
    for doc, link, label in python_entries("python-curve-pairs"):
        peers = doc["peers"]
        bz = peers.get("bezier", {})
        versions = f"numpy {doc.get('numpy', '?')}" + (f", bezier {bz['version']}" if "version" in bz else "")
        parts.append(caption(doc, link, f"{label} ({versions})",
                             "cd bench/python && python3 bench_curve_pairs.py --json f.json"))
        names = [name for name in ("bezier", "numpy") if "seconds" in peers.get(name, {})]
        header = ["device", "parasurf", "points (tangencies)", "shared arcs"]
        for name in names:
            header += [f"{name} peer", "speed-up"]
        parts.append(table(header, [[r["device"], ms(r["seconds"]), f"{r['points']} ({r['tangent_points']})",
                                     r["overlaps"]] +
                                    [c for name in names for c in (ms(peers[name]["seconds"]),
                                                                   ratio(r["speedup_over_" + name]))]
                                    for r in doc["rows"]]))
        loop = doc.get("per_call")
        if loop:
            parts.append(f"One pair per call (`intersect_curves` in a loop over the first {loop['pairs']} pairs): "
                         + ", ".join(f"{name} {loop[name] * 1e6:.1f} µs" for name in ("parasurf", "bezier")
                                     if name in loop) + " per pair.\n")
        arcs = doc.get("mix", {}).get("overlap", "?")
        parts.append(table(["peer", "points", "missed", "extra", "errors", f"both ends of the {arcs} shared arcs"],
                           [[name, peers[name]["points"], peers[name]["missed"], peers[name]["extra"],
                             peers[name]["errors"], peers[name]["arcs_with_both_ends"]] for name in names]))
    if not parts:
        return ""
    return "\n".join(["### Python: curve pairs\n",
                      "`intersect_curves_batch(pairs, flat=True)` on 10⁴ pairs of planar Bézier curves, cubic and "
                      "quintic in turn: eight in ten random, one in ten a parabola on its tangent line, one in ten a "
                      "curve with a reversed piece of itself (a shared arc). Beside it the `bezier` package "
                      "(`Curve.intersect`, one call per pair) and the vectorised numpy approach (both curves sampled "
                      "into 64-segment polylines, all segment pairs tested at once, Newton on the curves, repeats "
                      "merged). Missed: parasurf's intersections away from shared arcs with no peer point within 1e-6; "
                      "extra: peer points within 1e-6 of none of parasurf's; errors: pairs where the peer raised.\n"]
                     + parts)


def python_rays():
    parts = []
    for doc, link, label in python_entries("python-rays"):
        peer = doc["peer"]
        parts.append(caption(doc, link, f"{label} (numpy {doc.get('numpy', '?')})",
                             "cd bench/python && python3 bench_rays.py --json f.json"))
        parts.append(table(["rays", "device", "parasurf", "hits", "numpy peer", "speed-up"],
                           [[r["rays"], r["device"], ms(r["seconds"]), r["hits"], ms(peer["seconds"]),
                             ratio(r["speedup_over_numpy"])] for r in doc["rows"]]))
        parts.append(f"The peer's {peer['triangles']} triangles ({peer['resolution']} segments per patch side): "
                     f"{peer['missed']} rays that hit the surface miss them and {peer['extra']} that miss it hit "
                     f"them; where both hit, the peer's point lies {peer['median_error']:.1e} (median) and at most "
                     f"{peer['max_error']:.1e} from the surface's along the ray.\n")
    if not parts:
        return ""
    return "\n".join(["### Python: `intersect_rays`\n",
                      "A camera image of the Utah teapot, one ray per pixel, each ray's first hit on its 32 bicubic "
                      "patches, beside what a numpy user writes: the model tessellated (not timed) and "
                      "Möller–Trumbore between every ray and every triangle at once, in chunks of rays.\n"] + parts)


def auto_jobs():
    doc, link = load("bench-auto-gpu.json")
    if not doc or not doc.get("rows"):
        return ""
    out = ["### `auto` on surfaces, patch meshes and FFD\n",
           "The default device against the faster of the CPU and the GPU, each job through the call a user makes with "
           "its results in host memory (a surface grid with normals, the teapot's welded mesh, an FFD session of 10 "
           "updates each brought home, its preparation included), best of repeated calls in one process, the three devices "
           "taking turns over three rounds, auto last in each. "
           "An FFD session that starts on the CPU moves to the GPU once its updates have cost the GPU's start.\n",
           caption(doc, link, host(doc),
                   "parasurf bench auto --json f.json")]
    out.append(table(["job", "CPU", "GPU", "auto (chose)", "auto ÷ faster"],
                     [[r["job"], ms(r["cpu_seconds"]), ms(r["cuda_seconds"]),
                       f"{ms(r['auto_seconds'])} ({r['auto_device'].split(' ')[0]})", ratio(r["ratio_to_faster"])]
                      for r in doc["rows"]]))
    return "\n".join(out)


def render():
    sections = [s for s in (surface(), patches(), isosurface(), ffd(), auto_jobs(), solver(), python_marching_cubes(),
                            python_functions(), python_closest_points(), python_curve_pairs(), python_rays()) if s]
    return BEGIN + "\n\n" + "\n".join(sections) + "\n" + END


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when the document is not what the JSON gives")
    parser.add_argument("--store", nargs=3, metavar=("MACHINE", "BENCHMARK", "FILE"),
                        help="keep FILE as BENCHMARK's current figures on MACHINE first")
    parser.add_argument("--gpu-name", help="with --store: the GPU the figures come from, where FILE does not name it")
    args = parser.parse_args()
    if args.store:
        store(*args.store, gpu=args.gpu_name)
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"{DOC}: the table markers are missing")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + render() + tail
    if args.check:
        if new != text:
            sys.exit(f"{DOC} is not what docs/results gives: run scripts/perf_tables.py")
        return
    DOC.write_text(new)


if __name__ == "__main__":
    main()
