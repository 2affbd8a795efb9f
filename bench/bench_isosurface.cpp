// parasurf bench isosurface: marching cubes on built-in fields and real volumes, CPU and CUDA, per-stage times,
// the GPU floor (volume read once + mesh written once at the copy bandwidth measured in this run), and the peers
// VTK vtkFlyingEdges3D and scikit-image run on the same samples in the same run (through bench/peers/iso_peers.py).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "bench_util.hpp"
#include "parasurf_commit.h"
#include "parasurf/commands.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"

#ifndef PARASURF_SOURCE_DIR
#define PARASURF_SOURCE_DIR "."
#endif

namespace parasurf::cli {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Runs `run` at least `repeats` times and for at least `min_seconds` (at most kMaxRuns times): the best of a few runs
// of a sub-millisecond extraction moves by a quarter from one call to the next, and its ratios with it.
constexpr int kMaxRuns = 100000;
template <class Run>
void repeat_runs(int repeats, double min_seconds, Run&& run) {
  const auto start = Clock::now();
  for (int r = 0; r < repeats || (r < kMaxRuns && since(start) < min_seconds); ++r) run();
}

struct IsoBenchArgs {
  std::string sizes = "256,512", types = "float32,uint8,int16", devices = "cpu,cuda,auto", volumes, json, python;
  std::string topology = "classic";
  int threads = 0, repeats = 3, rounds = 1;
  double min_time = 0.2;  // seconds of runs per measurement, at the least (beside --repeats)
  std::int64_t multi_gpu = 0, out_of_core = 0, label_map = 0, slab_slices = 0;
  bool quick = false, no_peers = false;
};

// Restarts the peak-resident-set count (Linux: 5 to clear_refs), so that each run reports its own peak.
void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
}

// Peak resident set of this process (VmHWM), bytes; 0 where /proc is missing.
std::uint64_t peak_rss() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::uint64_t(std::stoull(line.substr(6))) * 1024;
  return 0;
}

// The tangle field as an in-memory array of the given type (uint8: mapped to 0..255 over [0, 25]; int16: to
// -1000..24000, the way CT volumes store Hounsfield units).
struct HostVolume {
  std::string name;
  VolumeGeometry geometry;
  VoxelType type;
  std::vector<char> bytes;
  double level;
};

HostVolume tangle_volume(std::int64_t n, VoxelType type) {
  auto src = synthetic_field("tangle", {n, n, n});
  HostVolume h{"tangle " + std::to_string(n) + "^3 " + voxel_type_name(type), src->geometry(), type, {}, 0.5};
  std::vector<float> f(std::size_t(n * n * n));
  src->read_slices(0, n, f.data());
  if (type == VoxelType::Float32) {
    h.bytes.resize(f.size() * 4);
    std::memcpy(h.bytes.data(), f.data(), h.bytes.size());
  } else if (type == VoxelType::Int16) {
    h.bytes.resize(f.size() * 2);
    for (std::size_t i = 0; i < f.size(); ++i) {
      const auto v = std::int16_t(std::clamp(std::lround(f[i] * 1000.0 - 1000.0), -32768L, 32767L));
      std::memcpy(h.bytes.data() + 2 * i, &v, 2);
    }
    h.level = 0.5 * 1000.0 - 1000.0 + 0.5;  // between the codes of 0.5 and its neighbour: no ties
  } else {  // uint8 (the command checks the types)
    h.bytes.resize(f.size());
    for (std::size_t i = 0; i < f.size(); ++i)
      h.bytes[i] = char(std::uint8_t(std::clamp(std::lround(f[i] * 10.2), 0L, 255L)));
    h.level = 0.5 * 10.2 + 0.5;
  }
  return h;
}

HostVolume file_volume(const std::string& path, double level) {
  auto src = open_volume(path);
  HostVolume h{std::filesystem::path(path).filename().string(), src->geometry(), src->type(), {}, level};
  h.bytes.resize(std::size_t(src->geometry().voxel_count()) * voxel_bytes(src->type()));
  src->read_slices(0, src->geometry().dims[2], h.bytes.data());
  return h;
}

// Runs bench/peers/iso_peers.py with `args` under each candidate Python (--python, else Debian's /usr/bin/python3,
// then python3 on PATH: VTK and scikit-image may live in different ones) and keeps, per peer, the first result
// without an error. nullptr when no interpreter ran the script.
nlohmann::json python_peers(const IsoBenchArgs& a, const std::string& args) {
  const std::string script = std::string(PARASURF_SOURCE_DIR) + "/bench/peers/iso_peers.py";
  if (!std::filesystem::exists(script)) return nullptr;
  const std::vector<std::string> candidates =
      a.python.empty() ? std::vector<std::string>{"/usr/bin/python3", "python3"} : std::vector<std::string>{a.python};
  nlohmann::json merged;
  for (const auto& python : candidates) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(command_output(python + " " + script + " " + args + " 2>/dev/null"));
    } catch (const std::exception&) {
      continue;  // no numpy there, or no such interpreter
    }
    if (merged.is_null()) merged = nlohmann::json::object();
    for (auto& [name, p] : j.items()) {
      const bool ok = !(p.is_object() && p.contains("error"));
      if (p.is_object() && ok) p["python"] = python;
      if (!merged.contains(name) || (ok && merged[name].is_object() && merged[name].contains("error"))) merged[name] = p;
    }
  }
  return merged;
}

nlohmann::json run_peers(const IsoBenchArgs& a, const HostVolume& h) {
  if (a.no_peers) return nullptr;
  const std::string raw = (std::filesystem::temp_directory_path() / "parasurf_bench_volume.raw").string();
  {
    std::ofstream f(raw, std::ios::binary);
    f.write(h.bytes.data(), std::streamsize(h.bytes.size()));
  }
  const char* dtype = h.type == VoxelType::UInt8 ? "uint8" : h.type == VoxelType::Float32 ? "float32"
                      : h.type == VoxelType::Int16 ? "int16" : h.type == VoxelType::UInt16 ? "uint16" : "float64";
  char args[1024];
  std::snprintf(args, sizeof args, "%s %lld %lld %lld %s %.17g %d:%g", raw.c_str(), (long long)h.geometry.dims[0],
                (long long)h.geometry.dims[1], (long long)h.geometry.dims[2], dtype, h.level, a.repeats, a.min_time);
  nlohmann::json out = python_peers(a, args);
  std::filesystem::remove(raw);
  return out;
}

// The GPU with the samples already on the device and the mesh left there: classify + scan + generate only.
nlohmann::json gpu_resident(const HostVolume& h, int repeats, double min_time, double copy_bw, double host_best,
                            CaseTopology topology) {
  ArrayView3 view;
  view.data = h.bytes.data();
  view.type = h.type;
  view.shape = {h.geometry.dims[2], h.geometry.dims[1], h.geometry.dims[0]};
  view.strides = ArrayView3::c_strides(view.shape, h.type);
  ResidentIsosurface resident(view, topology, true);
  resident.extract(h.level);  // uploads once; later runs find the samples resident
  // The whole call is timed with the stage events off (they cost the GPU microseconds a slab); the split into stages
  // comes from as many runs again with them on, the best of those.
  double best = 1e30, classify = 0, scan = 0, generate = 0, staged_best = 1e30;
  ResidentIsosurface::Counts c;
  std::vector<double> runs;
  repeat_runs(repeats, min_time, [&] {
    const auto t = Clock::now();
    c = resident.extract(h.level);
    const double sec = since(t);
    runs.push_back(sec);
    best = std::min(best, sec);
  });
  resident.time_stages(true);
  repeat_runs(repeats, min_time, [&] {
    const IsosurfaceProfile before = resident.profile();
    const auto t = Clock::now();
    resident.extract(h.level);
    const double sec = since(t);
    const IsosurfaceProfile after = resident.profile();
    if (sec < staged_best) {
      staged_best = sec;
      classify = after.seconds_classify - before.seconds_classify;
      scan = after.seconds_scan - before.seconds_scan;
      generate = after.seconds_generate - before.seconds_generate;
    }
  });
  std::nth_element(runs.begin(), runs.begin() + runs.size() / 2, runs.end());
  const double median = runs[runs.size() / 2];
  const double bytes = double(h.bytes.size()) + double(c.vertices) * 24 + double(c.triangles) * 12;
  const double floor = bytes / copy_bw;  // copy_bw in bytes per second
  const double voxels = double(h.geometry.voxel_count());
  std::printf("  %-26s %-28s %9.3f ms  %8.0f Mvox/s  %7.1f Mtri/s  floor %.2f ms -> %.2fx floor; %.1fx CPU "
              "(median of %zu runs %.3f ms; stages timed apart: classify %.3f  scan %.3f  generate %.3f, of %.3f ms)\n",
              "cuda resident", "(samples and mesh on GPU)", best * 1e3, voxels / best / 1e6,
              double(c.triangles) / best / 1e6, floor * 1e3, best / floor, host_best > 0 ? host_best / best : 0.0,
              runs.size(), median * 1e3, classify * 1e3, scan * 1e3, generate * 1e3, staged_best * 1e3);
  return {{"seconds", best},       {"median_seconds", median}, {"runs", runs.size()},
          {"classify", classify},   {"scan", scan},          {"generate", generate}, {"staged_seconds", staged_best},
          {"triangles", c.triangles}, {"vertices", c.vertices}, {"floor_seconds", floor}, {"floor_ratio", best / floor},
          {"bytes", bytes},        {"speedup_vs_cpu", host_best > 0 ? host_best / best : 0.0}};
}

void bench_volume(const IsoBenchArgs& a, const HostVolume& h, double copy_bw, const LinkBandwidth& link,
                  nlohmann::json& results) {
  std::printf("\n%s: %lldx%lldx%lld %s, level %g\n", h.name.c_str(), (long long)h.geometry.dims[0],
              (long long)h.geometry.dims[1], (long long)h.geometry.dims[2], voxel_type_name(h.type), h.level);
  MemoryVolume vol(h.geometry, h.type, h.bytes.data(), h.name);
  nlohmann::json entry = {{"volume", h.name}, {"dims", h.geometry.dims}, {"type", voxel_type_name(h.type)},
                          {"level", h.level}, {"topology", a.topology}, {"rounds", a.rounds},
                          {"repeats", a.repeats}, {"min_time", a.min_time}};
  const double voxels = double(h.geometry.voxel_count());
  double cpu_best = 0;
  struct DeviceBest {
    double seconds = 1e30;
    IsosurfaceReport rep;
    std::int64_t triangles = 0, vertices = 0;
  };
  std::map<std::string, DeviceBest> device_best;
  nlohmann::json peers;  // the best of each peer over the rounds
  // Rounds alternate parasurf's runs with the peers' (each the best of --repeats runs and --min-time seconds), so
  // that a burst of load on a shared machine falls on both sides rather than on one; each side keeps its best over
  // all rounds.
  for (int round = 0; round < a.rounds; ++round) {
    for (const auto& dname : split(a.devices)) {
      const Device d = parse_device(dname);
      if (d == Device::Cuda && !cuda_available()) continue;
      IsosurfaceOptions o;
      o.levels = {h.level};
      o.device = d;
      o.threads = a.threads;
      o.topology = parse_case_topology(a.topology);
      o.slab_slices = a.slab_slices;
      DeviceBest& b = device_best[dname];
      IsosurfaceReport rep;
      TriangleMesh m;  // the last mesh lives until the next is made, as the peers' outputs do
      repeat_runs(a.repeats, a.min_time, [&] {
        m = extract_isosurface(vol, o, &rep);
        if (rep.seconds_total < b.seconds) b.seconds = rep.seconds_total, b.rep = rep, b.triangles = m.triangle_count(),
                                           b.vertices = m.vertex_count();
      });
    }
    const nlohmann::json round_peers = run_peers(a, h);
    if (round_peers.is_null()) continue;
    if (peers.is_null()) peers = nlohmann::json::object();
    for (const auto& [name, p] : round_peers.items()) {
      const bool ok = !p.contains("error");
      if (!peers.contains(name) || (ok && (peers[name].contains("error") ||
                                           p["seconds"].get<double>() < peers[name]["seconds"].get<double>())))
        peers[name] = p;
    }
  }
  for (const auto& dname : split(a.devices)) {
    const Device d = parse_device(dname);
    if (d == Device::Cuda && !cuda_available()) {
      std::printf("  cuda: skipped (%s)\n", cuda_unavailable_reason().c_str());
      continue;
    }
    if (d == Device::Auto && !cuda_available()) continue;  // the CPU row is auto's choice
    const DeviceBest& b = device_best[dname];
    const double best = b.seconds;
    const IsosurfaceReport& best_rep = b.rep;
    if (d == Device::Cpu) cpu_best = best;
    std::printf("  %-26s %-28s %9.2f ms  classify %7.2f  scan %6.2f  generate %7.2f  %8.1f Mvox/s  %7.2f Mtri/s  "
                "(%lld triangles)\n",
                dname.c_str(), best_rep.device.c_str(), best * 1e3, best_rep.profile.seconds_classify * 1e3,
                best_rep.profile.seconds_scan * 1e3, best_rep.profile.seconds_generate * 1e3, voxels / best / 1e6,
                double(b.triangles) / best / 1e6, (long long)b.triangles);
    entry[dname] = {{"seconds", best},
                    {"device", best_rep.device},
                    {"classify", best_rep.profile.seconds_classify},
                    {"scan", best_rep.profile.seconds_scan},
                    {"generate", best_rep.profile.seconds_generate},
                    {"copy", best_rep.profile.seconds_copy},
                    {"upload", best_rep.profile.seconds_upload},
                    {"download", best_rep.profile.seconds_download},
                    {"slabs", best_rep.slabs},
                    {"triangles", b.triangles},
                    {"vertices", b.vertices}};
    if (best_rep.device.rfind("cuda", 0) == 0)
      std::printf("  %-26s %lld slab(s); upload %.3f ms, download %.3f ms (each slab's wait for its copies)\n", "",
                  (long long)best_rep.slabs, best_rep.profile.seconds_upload * 1e3,
                  best_rep.profile.seconds_download * 1e3);
    // From host memory the GPU's floor is the link: the samples up and the mesh (positions, normals, corners) home.
    if (link.host_to_device > 0 && best_rep.device.rfind("cuda", 0) == 0) {
      const double up = double(h.bytes.size()), down = double(b.vertices) * 24.0 + double(b.triangles) * 12.0;
      const double serial = link.seconds(up, down), overlapped = link.overlapped_seconds(up, down);
      entry[dname]["link_floor_seconds"] = serial;
      entry[dname]["link_floor_overlapped_seconds"] = overlapped;
      entry[dname]["ratio_to_link_floor"] = best / serial;
      entry[dname]["fraction_of_link_floor"] = overlapped / best;
      std::printf("  %-26s link floor %.2f ms (%.0f MB up, %.0f MB home; overlapped %.2f ms): %.2fx, %.0f%% of the "
                  "overlapped floor\n",
                  "", serial * 1e3, up * 1e-6, down * 1e-6, overlapped * 1e3, best / serial, 100 * overlapped / best);
    }
    if (d == Device::Auto) {
      double faster = 0;
      for (const char* side : {"cpu", "cuda"})
        if (device_best.count(side) && device_best[side].seconds < 1e30)
          faster = faster > 0 ? std::min(faster, device_best[side].seconds) : device_best[side].seconds;
      entry[dname]["choice"] = best_rep.device_choice;
      if (faster > 0) {
        entry[dname]["ratio_to_faster"] = best / faster;
        std::printf("  %-26s %.2fx the faster of cpu and cuda (%s)\n", "", best / faster, best_rep.device_choice.c_str());
      }
    }
    if (d == Device::Cuda && copy_bw > 0)
      entry["cuda_resident"] =
          gpu_resident(h, a.repeats, a.min_time, copy_bw, cpu_best, parse_case_topology(a.topology));
  }

  if (!peers.is_null()) {
    for (const auto& [name, p] : peers.items()) {
      if (p.contains("error")) {
        std::printf("  %-26s not installed (%s)\n", name.c_str(), p["error"].get<std::string>().c_str());
        continue;
      }
      const double sec = p["seconds"].get<double>();
      std::printf("  %-26s %-28s %9.2f ms  %8.1f Mvox/s  (%lld triangles)  parasurf cpu is %.2fx", name.c_str(),
                  p.contains("threads") ? ("threads " + std::to_string(p["threads"].get<int>())).c_str() : "1 thread",
                  sec * 1e3, voxels / sec / 1e6, (long long)p["triangles"].get<std::int64_t>(),
                  cpu_best > 0 ? sec / cpu_best : 0.0);
      if (entry.contains("cuda_resident"))
        std::printf(", cuda resident %.0fx", sec / entry["cuda_resident"]["seconds"].get<double>());
      std::printf("\n");
    }
    entry["peers"] = peers;
  } else if (!a.no_peers) {
    std::printf("  peers: not run (needs a Python with numpy and vtk or scikit-image; --python)\n");
  }
  results.push_back(entry);
}

// Where a run's time went (copies and kernels summed over the GPUs, which overlap one another).
void print_stage_breakdown(const IsosurfaceReport& r) {
  std::printf("      setup %.1f ms (engine %.1f)  workers %.1f ms: upload %.1f  kernels %.1f  download %.1f  host mesh %.1f"
              "  (summed over GPUs)  join %.1f ms\n",
              r.profile.seconds_setup * 1e3, r.profile.seconds_engine_start * 1e3, r.profile.seconds_workers * 1e3, r.profile.seconds_upload * 1e3,
              (r.profile.seconds_classify + r.profile.seconds_scan + r.profile.seconds_generate) * 1e3, r.profile.seconds_download * 1e3,
              r.profile.seconds_host_mesh * 1e3, r.profile.seconds_join * 1e3);
}

nlohmann::json stage_breakdown_json(const IsosurfaceReport& r) {
  return {{"seconds_setup", r.profile.seconds_setup},
          {"seconds_engine_start", r.profile.seconds_engine_start},
          {"seconds_workers", r.profile.seconds_workers},
          {"seconds_upload", r.profile.seconds_upload},
          {"seconds_kernels", r.profile.seconds_classify + r.profile.seconds_scan + r.profile.seconds_generate},
          {"seconds_download", r.profile.seconds_download},
          {"seconds_host_mesh", r.profile.seconds_host_mesh},
          {"seconds_join", r.profile.seconds_join}};
}

// Several GPUs against one on a host-resident float32 tangle (end to end: upload, extract, mesh to host).
nlohmann::json bench_multi_gpu(const IsoBenchArgs& a, std::int64_t n) {
  const int count = int(cuda_devices().size());
  std::printf("\nseveral GPUs: tangle %lld^3 float32 in host memory, mesh to host\n", (long long)n);
  const HostVolume h = tangle_volume(n, VoxelType::Float32);
  MemoryVolume vol(h.geometry, h.type, h.bytes.data(), h.name);
  nlohmann::json out = {{"volume", h.name}, {"gpus_visible", count}};
  double one = 0;
  if (count < 2) std::printf("  several GPUs: only one visible; one GPU measured\n");
  for (int gpus : count < 2 ? std::vector<int>{1} : std::vector<int>{1, count}) {
    IsosurfaceOptions o;
    o.levels = {h.level};
    o.device = Device::Cuda;
    for (int d = 0; d < gpus; ++d) o.cuda_devices.push_back(d);
    if (gpus == 1) o.slab_slices = std::max<std::int64_t>(1, n / 6);  // the same slabs as the several-GPU run
    double best = 1e30;
    IsosurfaceReport rep, best_rep;
    std::int64_t tris = 0;
    std::vector<double> runs;
    for (int r = 0; r < a.repeats; ++r) {
      const TriangleMesh m = extract_isosurface(vol, o, &rep);
      tris = m.triangle_count();
      runs.push_back(rep.seconds_total);
      if (rep.seconds_total < best) best = rep.seconds_total, best_rep = rep;
    }
    if (gpus == 1) one = best;
    std::printf("  %d GPU(s) %-30s %9.2f ms  %lld slabs  %8.0f Mvox/s  (%lld triangles)%s\n", gpus,
                best_rep.device.c_str(), best * 1e3, (long long)best_rep.slabs,
                double(h.geometry.voxel_count()) / best / 1e6, (long long)tris,
                gpus > 1 ? ("  speedup " + std::to_string(one / best).substr(0, 4) + "x over one GPU").c_str() : "");
    print_stage_breakdown(best_rep);
    out[std::to_string(gpus) + "_gpus"] = stage_breakdown_json(best_rep);
    out[std::to_string(gpus) + "_gpus"].update({{"seconds", best}, {"slabs", best_rep.slabs}, {"triangles", tris},
                                                {"device", best_rep.device}, {"seconds_runs", runs}});
    if (gpus > 1) out["speedup"] = one / best;
  }
  return out;
}

// A streamed tangle field (never whole in host memory) on one GPU and on all: slabs, time, peak host memory. The
// first run pays for fresh host pages as a one-off command does; the best of the repeats is the steady state.
nlohmann::json bench_out_of_core(const IsoBenchArgs& a, std::int64_t n) {
  std::printf("\nout of core: tangle %lld^3 float32 streamed from the generator (%.1f GiB)\n", (long long)n,
              double(n) * double(n) * double(n) * 4 / 1073741824.0);
  nlohmann::json out = nlohmann::json::array();
  const int count = int(cuda_devices().size());
  double one = 0;
  for (int gpus : count < 2 ? std::vector<int>{1} : std::vector<int>{1, count}) {
    auto field = synthetic_field("tangle", {n, n, n});
    reset_peak_rss();
    IsosurfaceOptions o;
    o.levels = {0.5};
    o.device = Device::Cuda;
    for (int d = 0; d < gpus; ++d) o.cuda_devices.push_back(d);
    IsosurfaceReport rep, best_rep;
    std::vector<double> runs;
    double best = 1e30, mesh_bytes = 0;
    std::int64_t tris = 0;
    for (int r = 0; r < std::max(1, a.repeats); ++r) {
      const TriangleMesh m = extract_isosurface(*field, o, &rep);
      mesh_bytes = double(m.positions.size() + m.normals.size()) * 4 + double(m.triangles.size()) * 4;
      tris = m.triangle_count();
      runs.push_back(rep.seconds_total);
      if (rep.seconds_total < best) best = rep.seconds_total, best_rep = rep;
    }
    if (gpus == 1) one = best;
    std::printf("  %d GPU(s) %-30s %9.2f s  first run %.2f s  %lld slabs of %lld slices  read/generate %.2f s  %lld "
                "triangles  slab buffers %.2f GiB  mesh %.2f GiB  peak RSS %.2f GiB%s\n",
                gpus, best_rep.device.c_str(), best, runs[0], (long long)best_rep.slabs,
                (long long)best_rep.slab_slices, best_rep.seconds_read, (long long)tris,
                double(best_rep.profile.peak_slab_bytes) / 1073741824.0, mesh_bytes / 1073741824.0,
                double(peak_rss()) / 1073741824.0,
                gpus > 1 ? ("  speedup " + std::to_string(one / best).substr(0, 4) + "x over one GPU").c_str() : "");
    print_stage_breakdown(best_rep);
    nlohmann::json entry = stage_breakdown_json(best_rep);
    entry.update({{"gpus", gpus}, {"device", best_rep.device}, {"seconds", best}, {"seconds_runs", runs},
                  {"slabs", best_rep.slabs}, {"slab_slices", best_rep.slab_slices},
                  {"seconds_read", best_rep.seconds_read}, {"triangles", tris},
                  {"peak_slab_bytes", best_rep.profile.peak_slab_bytes}, {"mesh_bytes", mesh_bytes},
                  {"peak_rss_bytes", peak_rss()}});
    if (gpus > 1) entry["speedup"] = one / best;
    out.push_back(entry);
  }
  return out;
}

// Label-map boundaries (CPU) on an N^3 uint16 map of 24 Voronoi regions with labels 0-11, against VTK's label-map
// filters on the same map.
nlohmann::json bench_label_map(const IsoBenchArgs& a, std::int64_t n) {
  std::printf("\nlabel map: %lld^3 uint16, 24 Voronoi regions, labels 0-11\n", (long long)n);
  std::mt19937_64 rng(20261121);
  std::uniform_real_distribution<double> u(0, double(n));
  std::vector<std::array<double, 4>> sites(24);
  for (std::size_t i = 0; i < sites.size(); ++i) sites[i] = {u(rng), u(rng), u(rng), double(i % 12)};
  VolumeGeometry g;
  g.dims = {n, n, n};
  std::vector<std::uint16_t> ids(std::size_t(n * n * n));
#pragma omp parallel for collapse(2)
  for (std::int64_t k = 0; k < n; ++k)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        double best = 1e300;
        std::uint16_t label = 0;
        for (const auto& s : sites) {
          const double d = (i - s[0]) * (i - s[0]) + (j - s[1]) * (j - s[1]) + (k - s[2]) * (k - s[2]);
          if (d < best) best = d, label = std::uint16_t(s[3]);
        }
        ids[std::size_t((k * n + j) * n + i)] = label;
      }
  MemoryVolume vol(g, VoxelType::UInt16, ids.data(), "voronoi labels");
  nlohmann::json out = {{"dims", g.dims}};
  double best = 1e30;
  for (const char* dev : {"cpu", "cuda"}) {
    if (std::string(dev) == "cuda" && !cuda_available()) continue;
    LabelBoundaryOptions o;
    o.threads = a.threads;
    o.device = parse_device(dev);
    double mine = 1e30;
    LabelBoundaryReport rep, best_rep;
    std::int64_t tris = 0;
    for (int r = 0; r < a.repeats; ++r) {
      tris = extract_label_boundaries(vol, o, &rep).triangle_count();
      if (rep.seconds_total < mine) mine = rep.seconds_total, best_rep = rep;
    }
    best = std::min(best, mine);
    std::printf("  %-26s %-28s %9.2f ms  faces %7.2f  smoothing %7.2f  %8.1f Mvox/s  (%lld triangles, %lld pairs)\n",
                "parasurf --per-label",
                (std::string(dev) == "cpu" ? "cpu (" + std::to_string(cpu_thread_count(a.threads)) + " threads)"
                                           : std::string("cuda 0")).c_str(),
                mine * 1e3, best_rep.seconds_faces * 1e3, best_rep.seconds_smooth * 1e3,
                double(n * n * n) / mine / 1e6, (long long)tris, (long long)best_rep.label_pairs);
    out[dev] = {{"seconds", mine}, {"seconds_faces", best_rep.seconds_faces},
                {"seconds_smooth", best_rep.seconds_smooth}, {"seconds_read", best_rep.seconds_read},
                {"triangles", tris}, {"label_pairs", best_rep.label_pairs},
                {"smoothing_iterations", o.smoothing_iterations}};
  }
  if (a.no_peers) return out;
  const std::string script = std::string(PARASURF_SOURCE_DIR) + "/bench/peers/iso_peers.py";
  const std::string raw = (std::filesystem::temp_directory_path() / "parasurf_bench_labels.raw").string();
  {
    std::ofstream f(raw, std::ios::binary);
    f.write(reinterpret_cast<const char*>(ids.data()), std::streamsize(ids.size() * 2));
  }
  char args[1024];
  std::snprintf(args, sizeof args, "--labels %s %lld %lld %lld uint16 %d", raw.c_str(), (long long)n, (long long)n,
                (long long)n, a.repeats);
  const nlohmann::json peers = python_peers(a, args);
  std::filesystem::remove(raw);
  if (peers.is_null()) {
    std::printf("  label-map peers: not run (needs a Python with numpy and vtk; --python)\n");
    return out;
  }
  {
    for (const auto& [name, p] : peers.items()) {
      if (!p.is_object()) continue;
      if (p.contains("error")) {
        std::printf("  %-26s not run (%s)\n", name.c_str(), p["error"].get<std::string>().c_str());
        continue;
      }
      const double sec = p["seconds"].get<double>();
      std::printf("  %-26s %-28s %9.2f ms  %8.1f Mvox/s  (%lld triangles)  parasurf is %.2fx\n", name.c_str(),
                  ("threads " + std::to_string(peers.value("threads", 0))).c_str(), sec * 1e3,
                  double(n * n * n) / sec / 1e6, (long long)p["triangles"].get<std::int64_t>(), sec / best);
    }
    out["peers"] = peers;
  }
  return out;
}

}  // namespace

void add_bench_isosurface(CLI::App& bench) {
  auto a = std::make_shared<IsoBenchArgs>();
  auto* cmd = bench.add_subcommand("isosurface", "Marching cubes: CPU, CUDA, GPU floor, VTK Flying Edges, scikit-image");
  cmd->add_option("--sizes", a->sizes, "Tangle field sizes N (N^3 samples), comma-separated");
  cmd->add_option("--types", a->types, "Sample types of the field: float32, uint8, int16");
  cmd->add_option("--devices", a->devices, "cpu,cuda,auto (auto: what the default device chose, and its time against the faster of the two)");
  cmd->add_option("--volumes", a->volumes, "Volume files with levels: FILE:LEVEL,...");
  cmd->add_option("--threads", a->threads, "CPU threads (0 = all)");
  cmd->add_option("--topology", a->topology, "classic | decider | mc33 (parasurf's runs; the peers are unchanged)");
  cmd->add_option("--repeats", a->repeats, "Best of at least this many runs");
  cmd->add_option("--min-time", a->min_time,
                  "Volumes, parasurf's and the peers' runs alike: repeat each for at least this many seconds")
      ->check(CLI::Range(0.0, 60.0));
  cmd->add_option("--rounds", a->rounds, "Volumes: alternate parasurf's and the peers' runs this many times, best of all")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--python", a->python, "Python for the peers (default: /usr/bin/python3, then python3 on PATH)");
  cmd->add_flag("--no-peers", a->no_peers, "Skip VTK and scikit-image");
  cmd->add_option("--slab-slices", a->slab_slices, "Slices per slab of parasurf's runs (0: chosen per volume and device)");
  cmd->add_option("--multi-gpu", a->multi_gpu, "Also: tangle N^3 float32 in host memory on one GPU and on all");
  cmd->add_option("--out-of-core", a->out_of_core, "Also: tangle N^3 float32 streamed from the generator on the GPU(s)");
  cmd->add_option("--label-map", a->label_map, "Also: label-map boundaries on an N^3 Voronoi map, with VTK's label filters");
  cmd->add_flag("--quick", a->quick, "Small sizes (CI smoke)");
  cmd->add_option("--json", a->json, "Write the figures as JSON");
  cmd->callback([a] {
    parse_case_topology(a->topology);  // a bad name stops the run before anything is measured
    for (const auto& t : split(a->types)) {
      const VoxelType type = parse_voxel_type(t);
      if (type != VoxelType::Float32 && type != VoxelType::UInt8 && type != VoxelType::Int16)
        throw Error(ErrorKind::InvalidArgument, "bench isosurface: --types takes float32, uint8 and int16, not " + t);
    }
    if (a->quick) {
      a->sizes = "64";
      a->repeats = 1;
      a->min_time = 0;
    }
    double copy_bw = 0;
    LinkBandwidth link;
    if (cuda_available() && a->devices.find("cuda") != std::string::npos) {
      copy_bw = measure_cuda_copy_bandwidth(0);
      link = measure_cuda_link_bandwidth(0);
    }
    std::printf("isosurface benchmark: %d CPU threads%s\n", cpu_thread_count(a->threads),
                copy_bw > 0 ? (", device copy bandwidth " + std::to_string(int(copy_bw * 1e-9)) +
                               " GB/s, pinned link " + std::to_string(int(link.host_to_device * 1e-9)) + " GB/s up, " +
                               std::to_string(int(link.device_to_host * 1e-9)) + " GB/s home")
                                  .c_str()
                            : "");
    nlohmann::json results = nlohmann::json::array();
    for (const auto n : split_ints(a->sizes, "--sizes"))
      for (const auto& t : split(a->types)) bench_volume(*a, tangle_volume(n, parse_voxel_type(t)), copy_bw, link, results);
    for (const auto& item : split(a->volumes)) {
      const auto colon = item.rfind(':');
      if (colon == std::string::npos) throw Error(ErrorKind::InvalidArgument, "--volumes: expected FILE:LEVEL");
      bench_volume(*a, file_volume(item.substr(0, colon), std::stod(item.substr(colon + 1))), copy_bw, link,
                   results);
    }
    nlohmann::json multi, ooc, labels;
    if (a->label_map > 0) labels = bench_label_map(*a, a->label_map);
    if ((a->multi_gpu > 0 || a->out_of_core > 0) && !cuda_available())
      std::printf("\nseveral GPUs / out of core: skipped (%s)\n", cuda_unavailable_reason().c_str());
    else {
      if (a->multi_gpu > 0) multi = bench_multi_gpu(*a, a->multi_gpu);
      if (a->out_of_core > 0) ooc = bench_out_of_core(*a, a->out_of_core);
    }
    if (!a->json.empty()) {
      nlohmann::json j = {{"benchmark", "isosurface"},
                          {"date", today()},
                          {"commit", PARASURF_GIT_COMMIT},
                          {"cpu_threads", cpu_thread_count(a->threads)},
                          {"gpu", cuda_available() ? cuda_devices().front().name : std::string("none")},
                          {"copy_bandwidth_bytes_per_second", copy_bw},
                          {"link_host_to_device_bytes_per_second", link.host_to_device},
                          {"link_device_to_host_bytes_per_second", link.device_to_host},
                          {"results", results},
                          {"multi_gpu", multi},
                          {"out_of_core", ooc},
                          {"label_map", labels}};
      write_report(a->json, j.dump(2) + "\n");
    }
  });
}

}  // namespace parasurf::cli
