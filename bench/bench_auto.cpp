// parasurf bench auto: the default device against the faster of the CPU and the GPU, each job through the call a
// user makes with results in host memory: surface grids with normals (evaluate_grid), the teapot tessellated into
// a welded mesh (tessellate), and an FFD session (prepared once, then updates brought home). Each device runs in the
// same process, best of repeated calls; auto runs last in each round, so that its estimates have learned from its
// own first calls as they do in a user's process. Rounds take turns over the three devices (each keeps its best over
// all rounds), so that a change in the machine's state during a row (another tenant's load, the page cache, the
// clocks) falls on every device rather than on the one that ran last. (Isosurfaces have their own rows: bench
// isosurface --devices cpu,cuda,auto.)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "bench_util.hpp"
#include "parasurf/bezier.hpp"
#include "parasurf/ffd.hpp"
#include "parasurf/patches.hpp"
#include "parasurf/tessellate.hpp"
#include "parasurf_commit.h"

namespace parasurf::cli {

namespace {

struct AutoBenchArgs {
  std::string grids = "64,256,1024,2048", teapot = "4,16,64,256", spheres = "1536,69000", json;
  int ffd_updates = 10, rounds = 3;
  double budget = 0.3;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best of at least `least` calls, up to `most` while the budget lasts; `call` returns the device it ran on.
std::pair<double, std::string> best_of(double budget, int least, int most, const std::function<std::string()>& call) {
  double best = 1e30, spent = 0;
  std::string device;
  for (int r = 0; r < least || (r < most && spent < budget); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string d = call();
    const double s = seconds_since(t0);
    spent += s;
    if (s < best) best = s, device = d;
  }
  return {best, device};
}

void run(const AutoBenchArgs& a) {
  nlohmann::json doc;
  doc["benchmark"] = "auto";
  doc["date"] = today();
  doc["commit"] = PARASURF_GIT_COMMIT;
  doc["cpu_threads"] = cpu_thread_count(0);
  doc["gpu"] = cuda_available() ? cuda_devices().front().name : std::string("none");
  doc["rows"] = nlohmann::json::array();
  std::printf("auto against the faster device, results in host memory: %d CPU threads", cpu_thread_count(0));
  if (!cuda_available()) {
    std::printf("\nskipped: no usable CUDA device (%s); auto is the CPU\n", cuda_unavailable_reason().c_str());
    if (!a.json.empty()) write_report(a.json, doc.dump(1) + "\n");
    return;
  }
  std::printf(", GPU %s\n", cuda_devices()[0].name.c_str());
  std::printf("  %-34s %12s %12s %12s %-5s %s\n", "job", "cpu", "cuda", "auto", "chose", "auto / faster");
  auto row = [&](const std::string& job, const std::function<std::string(Device)>& call) {
    double t[3] = {1e30, 1e30, 1e30};
    std::string chose;
    const Device devices[3] = {Device::Cpu, Device::Cuda, Device::Auto};
    const int rounds = std::max(1, a.rounds);
    for (int round = 0; round < rounds; ++round)
      for (int d = 0; d < 3; ++d) {
        // At least 3 and at most 30 calls per device over all rounds.
        const auto [s, ran] = best_of(a.budget / rounds, (3 + rounds - 1) / rounds, std::max(1, 30 / rounds),
                                      [&] { return call(devices[d]); });
        if (s < t[d]) {
          t[d] = s;
          if (d == 2) chose = ran;
        }
      }
    const double faster = std::min(t[0], t[1]);
    std::printf("  %-34s %9.3f ms %9.3f ms %9.3f ms %-5s %.2fx\n", job.c_str(), t[0] * 1e3, t[1] * 1e3, t[2] * 1e3,
                chose.c_str(), t[2] / faster);
    std::fflush(stdout);
    doc["rows"].push_back({{"job", job},
                           {"cpu_seconds", t[0]},
                           {"cuda_seconds", t[1]},
                           {"auto_seconds", t[2]},
                           {"auto_device", chose},
                           {"ratio_to_faster", t[2] / faster}});
  };

  const BezierSurface net = make_random_surface(3, 3, 1234);
  EvalRequest req;
  req.normals = true;
  for (const auto n : split_ints(a.grids, "--grids"))
    row("surface " + std::to_string(n) + "^2 float, normals", [&](Device d) {
      EvalOptions o;
      o.device = d;
      EvalReport r;
      const auto s = evaluate_grid<float>(net, {n, n}, req, o, &r);
      return std::string(device_name(r.device_used));
    });

  const PatchModel teapot = utah_teapot();
  for (const auto n : split_ints(a.teapot, "--teapot"))
    row("teapot mesh, " + std::to_string(n) + " segments", [&](Device d) {
      TessellationOptions o;
      o.resolution = int(n);
      o.device = d;
      TessellationReport r;
      const PatchMesh m = tessellate(teapot, o, &r);
      return std::string(device_name(r.device));
    });

  for (const auto n : split_ints(a.spheres, "--spheres")) {
    const PolygonMesh mesh = uv_sphere(n);
    LatticeSpec spec;
    Lattice lattice = make_lattice(spec, {-1, -1, -1}, {1, 1, 1});
    std::mt19937_64 rng(7);
    std::normal_distribution<double> g(0.0, 0.06);
    for (double& v : lattice.control_points) v += g(rng);
    row("ffd sphere-" + std::to_string(n) + ", accurate 4, " + std::to_string(a.ffd_updates) + " updates",
        [&](Device d) {
          FfdOptions o;
          o.level = 4;
          o.device = d;
          FfdSession<float> session(mesh, lattice, o);
          std::vector<float> p, nrm;
          for (int u = 0; u < a.ffd_updates; ++u) {
            session.update(lattice.control_points);
            session.download(p, nrm);
          }
          return std::string(device_name(session.report().device));
        });
  }
  if (!a.json.empty()) {
    write_report(a.json, doc.dump(1) + "\n");
    std::printf("wrote %s\n", a.json.c_str());
  }
}

}  // namespace

void add_bench_auto(CLI::App& bench) {
  auto args = std::make_shared<AutoBenchArgs>();
  auto* cmd = bench.add_subcommand("auto", "The default device (auto) against the faster of cpu and cuda, per job");
  cmd->add_option("--grids", args->grids, "Surface grid sides, comma-separated");
  cmd->add_option("--teapot", args->teapot, "Teapot segments per patch side, comma-separated");
  cmd->add_option("--spheres", args->spheres, "FFD spheres of about these triangle counts");
  cmd->add_option("--ffd-updates", args->ffd_updates, "Updates per FFD session");
  cmd->add_option("--budget", args->budget, "Seconds of repeats per device and job, shared by the rounds");
  cmd->add_option("--rounds", args->rounds, "Turns over cpu, cuda and auto per job (each keeps its best)");
  cmd->add_option("--json", args->json, "Write all figures to this JSON file");
  cmd->callback([args] { run(*args); });
}

}  // namespace parasurf::cli
