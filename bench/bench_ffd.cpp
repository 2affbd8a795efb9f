// parasurf bench ffd: the paper's interactive loop (edit -> control points -> tessellate -> normals) per update, on
// the CPU (all threads and one) and CUDA; point FFD points/s against the copy-bandwidth floor of the same run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>

#include "bench_util.hpp"
#include "parasurf/commands.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"

#include "parasurf_commit.h"

namespace parasurf::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct FfdBenchArgs {
  std::string meshes, spheres = "1536,14500,69000,1000000", levels = "4,8,16", devices = "cpu,cuda", precision = "float", json;
  int repeats = 7, threads = 0;
  std::int64_t max_vertices = 40'000'000, one_thread_max = 2'000'000;
  bool quick = false;
};

struct NamedMesh {
  std::string name;
  PolygonMesh mesh;
};

// The 9x9x9 tricubic lattice of the paper over the mesh, with every control point moved a little (fixed seed).
Lattice edited_lattice(const PolygonMesh& mesh) {
  std::array<double, 3> lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
  for (std::int64_t v = 0; v < mesh.vertex_count(); ++v)
    for (int d = 0; d < 3; ++d) lo[d] = std::min(lo[d], mesh.positions[3 * v + d]), hi[d] = std::max(hi[d], mesh.positions[3 * v + d]);
  LatticeSpec spec;
  Lattice l = make_lattice(spec, lo, hi);
  double side = 0;
  for (int d = 0; d < 3; ++d) side = std::max(side, hi[d] - lo[d]);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g(0.0, 0.03 * side);
  for (double& v : l.control_points) v += g(rng);
  return l;
}

struct Timing {
  double update_median = 0, update_best = 0, preprocess = 0;
  double download_best = 0;  // the last update's positions and normals into host vectors (GPU sessions)
  FfdReport report;
};

template <class T>
Timing time_session(const PolygonMesh& mesh, const Lattice& lattice, FfdOptions o, int repeats) {
  FfdSession<T> session(mesh, lattice, o);
  std::vector<double> cps = lattice.control_points;
  session.update(cps);  // warm-up
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    cps[3 * (r % lattice.control_point_count())] += 1e-6;  // a new edit each time
    const auto t0 = Clock::now();
    session.update(cps);
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  Timing t;
  if (o.device == Device::Cuda) {
    std::vector<T> positions, normals;
    t.download_best = 1e30;
    for (int r = 0; r < std::max(3, repeats); ++r) {
      const auto t0 = Clock::now();
      session.download(positions, normals);
      t.download_best = std::min(t.download_best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
  }
  t.update_median = times[times.size() / 2];
  t.update_best = times.front();
  t.report = session.report();
  t.preprocess = t.report.preprocess_seconds;
  return t;
}

template <class T>
nlohmann::json bench_mesh(const FfdBenchArgs& a, const NamedMesh& nm, double copy_bw, const LinkBandwidth& link) {
  const Lattice lattice = edited_lattice(nm.mesh);
  nlohmann::json rows = nlohmann::json::array();
  const bool want_cuda = a.devices.find("cuda") != std::string::npos && cuda_available();
  const bool want_cpu = a.devices.find("cpu") != std::string::npos;
  std::printf("\n%s: %lld faces\n", nm.name.c_str(), (long long)nm.mesh.face_count());
  std::printf("  %-9s %3s %-6s %9s %11s %11s %10s %12s %10s %12s\n", "method", "m", "device", "threads", "vertices",
              "update ms", "updates/s", "Mvertices/s", "x floor", "home ms/link");
  auto row = [&](FfdMethod method, int level, Device device, int threads) -> nlohmann::json {
    FfdOptions o;
    o.method = method;
    o.level = level;
    o.device = device;
    o.threads = threads;
    o.allow_non_manifold = true;
    const Timing t = time_session<T>(nm.mesh, lattice, o, a.repeats);
    const double v = double(t.report.output_vertices);
    // Bytes that must move per update: positions and normals written (and read, for point FFD and uus).
    const double bytes = v * 6 * sizeof(T) * (method == FfdMethod::Accurate ? 1 : 2);
    const double floor_s = copy_bw > 0 ? bytes / copy_bw : 0;
    const int shown_threads = device == Device::Cuda ? 0 : cpu_thread_count(threads);
    // The results brought home: positions and normals over the pinned device-to-host rate.
    const double download_floor = link.device_to_host > 0 ? link.seconds(0, v * 6 * sizeof(T)) : 0;
    char home[48] = "-";  // the download and its share of the link floor
    if (device == Device::Cuda && t.download_best > 0)
      std::snprintf(home, sizeof home, "%.3f %3.0f%%", t.download_best * 1e3, 100 * download_floor / t.download_best);
    std::printf("  %-9s %3d %-6s %9s %11lld %11.3f %10.0f %12.1f %10s %12s\n", ffd_method_name(method),
                method == FfdMethod::Point ? 0 : level, device_name(device),
                device == Device::Cuda ? "-" : std::to_string(shown_threads).c_str(), (long long)v, t.update_median * 1e3,
                1.0 / t.update_median, v / t.update_median * 1e-6,
                device == Device::Cuda && floor_s > 0 ? std::to_string(t.update_median / floor_s).substr(0, 6).c_str() : "-",
                home);
    return {{"mesh", nm.name},
            {"faces", nm.mesh.face_count()},
            {"method", ffd_method_name(method)},
            {"level", method == FfdMethod::Point ? 0 : level},
            {"device", device_name(device)},
            {"threads", shown_threads},
            {"precision", sizeof(T) == 8 ? "double" : "float"},
            {"output_vertices", t.report.output_vertices},
            {"output_triangles", t.report.output_triangles},
            {"pieces", t.report.pieces},
            {"surfaces", t.report.surfaces},
            {"preprocess_seconds", t.preprocess},
            {"update_seconds_median", t.update_median},
            {"update_seconds_best", t.update_best},
            {"vertices_per_second", v / t.update_median},
            {"floor_seconds", floor_s},
            {"ratio_to_floor", device == Device::Cuda && floor_s > 0 ? t.update_median / floor_s : 0.0},
            {"download_seconds", t.download_best},
            {"download_link_floor_seconds", device == Device::Cuda ? download_floor : 0.0},
            {"download_fraction_of_link_floor",
             device == Device::Cuda && t.download_best > 0 ? download_floor / t.download_best : 0.0}};
  };
  std::vector<std::pair<FfdMethod, int>> runs{{FfdMethod::Point, 1}};
  for (auto m : split_ints(a.levels, "--levels")) {
    runs.push_back({FfdMethod::Accurate, int(m)});
    runs.push_back({FfdMethod::Upsampled, int(m)});
  }
  for (const auto& [method, level] : runs) {
    // Estimate the output size before building it: about m^2/2 vertices per triangle.
    std::int64_t tris = 0;
    for (std::int64_t f = 0; f < nm.mesh.face_count(); ++f) tris += nm.mesh.face_offsets[f + 1] - nm.mesh.face_offsets[f] - 2;
    const std::int64_t estimate = method == FfdMethod::Point ? nm.mesh.vertex_count() : tris * level * level / 2;
    if (estimate > a.max_vertices) {
      std::printf("  %-9s %3d (skipped: about %lld output vertices > --max-vertices)\n", ffd_method_name(method), level, (long long)estimate);
      continue;
    }
    double cuda_time = 0, one_thread_time = 0;
    if (want_cuda) {
      rows.push_back(row(method, level, Device::Cuda, 0));
      cuda_time = rows.back()["update_seconds_median"].get<double>();
    }
    if (want_cpu) {
      rows.push_back(row(method, level, Device::Cpu, a.threads));
      if (estimate <= a.one_thread_max) {
        rows.push_back(row(method, level, Device::Cpu, 1));
        one_thread_time = rows.back()["update_seconds_median"].get<double>();
      }
    }
    if (cuda_time > 0 && one_thread_time > 0)
      std::printf("  -> CUDA is %.0fx one CPU thread of the same code\n", one_thread_time / cuda_time);
  }
  return rows;
}

}  // namespace

void add_bench_ffd(CLI::App& bench) {
  auto a = std::make_shared<FfdBenchArgs>();
  auto* cmd = bench.add_subcommand("ffd", "Free-form deformation: point, accurate and uus updates on CPU and CUDA");
  cmd->add_option("--meshes", a->meshes, "Mesh files (comma-separated), e.g. the Stanford bunny");
  cmd->add_option("--spheres", a->spheres, "Built-in UV spheres of about these triangle counts");
  cmd->add_option("--levels", a->levels, "Tessellation levels m (accurate and uus)");
  cmd->add_option("--devices", a->devices, "cpu,cuda");
  cmd->add_option("--precision", a->precision, "float | double")->check(CLI::IsMember({"float", "double"}));
  cmd->add_option("--threads", a->threads, "CPU threads (0 = all)");
  cmd->add_option("--repeats", a->repeats, "Updates timed per configuration (median reported)");
  cmd->add_option("--max-vertices", a->max_vertices, "Skip configurations with more output vertices");
  cmd->add_option("--one-thread-max", a->one_thread_max, "Time one CPU thread only up to this many output vertices");
  cmd->add_flag("--quick", a->quick, "Small sizes (CI smoke)");
  cmd->add_option("--json", a->json, "Write the figures as JSON");
  cmd->callback([a] {
    if (a->quick) {
      a->spheres = "1536";
      a->levels = "4";
      a->repeats = 2;
    }
    double copy_bw = 0;
    LinkBandwidth link;
    if (cuda_available() && a->devices.find("cuda") != std::string::npos) {
      copy_bw = measure_cuda_copy_bandwidth(0);
      link = measure_cuda_link_bandwidth(0);
    }
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    std::printf("ffd benchmark (%s): lattice 9x9x9 tricubic, %d CPU threads%s; date %s; commit %s\n", a->precision.c_str(),
                cpu_thread_count(a->threads),
                copy_bw > 0 ? (", device copy bandwidth " + std::to_string(int(copy_bw * 1e-9)) + " GB/s").c_str() : "", date,
                PARASURF_GIT_COMMIT);
    if (a->devices.find("cuda") != std::string::npos && !cuda_available())
      std::printf("cuda: skipped (%s)\n", cuda_unavailable_reason().c_str());
    std::vector<NamedMesh> meshes;
    for (auto n : split_ints(a->spheres, "--spheres")) meshes.push_back({"sphere-" + std::to_string(n), uv_sphere(n)});
    for (const auto& f : split(a->meshes)) meshes.push_back({f.substr(f.find_last_of('/') + 1), read_polygon_mesh(f)});
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& m : meshes) {
      const nlohmann::json r = a->precision == "float" ? bench_mesh<float>(*a, m, copy_bw, link)
                                                         : bench_mesh<double>(*a, m, copy_bw, link);
      rows.insert(rows.end(), r.begin(), r.end());
    }
    if (!a->json.empty()) {
      std::string device = "none";
      if (cuda_available()) device = cuda_devices().front().name;
      nlohmann::json j = {{"benchmark", "ffd"},          {"date", date},
                          {"commit", PARASURF_GIT_COMMIT}, {"device", device},
                          {"cpu_threads", cpu_thread_count(a->threads)},
                          {"copy_bandwidth_bytes_per_second", copy_bw},
                          {"link_host_to_device_bytes_per_second", link.host_to_device},
                          {"link_device_to_host_bytes_per_second", link.device_to_host},
                          {"precision", a->precision},     {"results", rows}};
      write_report(a->json, j.dump(2) + "\n");
    }
  });
}

}  // namespace parasurf::cli
