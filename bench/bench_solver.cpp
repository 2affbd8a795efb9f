// parasurf bench solver: the paper's experiments that exist so far (ray traps of 3, 4, 5 quadratic curves), with the
// paper's GTX 580 times printed beside ours; inputs generated deterministically.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "parasurf/commands.hpp"
#include "parasurf/device.hpp"
#include "parasurf/solver.hpp"

namespace parasurf::cli {

namespace {
// k quadratic mirrors on a slightly irregular circle, facing inwards: arc i spans 60% of its sector.
std::vector<BezierCurve2> mirrors(int k) {
  const double pi = 3.14159265358979323846;
  std::vector<BezierCurve2> out;
  for (int i = 0; i < k; ++i) {
    const double c = pi / 2 + i * 2 * pi / k, w = 0.6 * pi / k;
    const double r = 1.0 + 0.03 * std::sin(3.0 * i + 1.0), bulge = 0.02 * std::cos(5.0 * i + 2.0);
    const double rm = r / std::cos(w) + bulge;
    out.push_back({{{r * std::cos(c - w), r * std::sin(c - w)}, {rm * std::cos(c), rm * std::sin(c)}, {r * std::cos(c + w), r * std::sin(c + w)}}});
  }
  return out;
}
}  // namespace

void add_bench_solver(CLI::App& bench) {
  struct Args {
    std::string json, curves = "3,4,5";
    int threads = 0;
    double max_seconds = 120;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = bench.add_subcommand("solver", "Subdivision solver: ray traps of k quadratic curves (the paper's section 6)");
  cmd->add_option("--curves", a->curves, "Numbers of curves k, comma-separated (3..6)");
  cmd->add_option("--threads", a->threads, "CPU threads (0 = all)");
  cmd->add_option("--max-seconds", a->max_seconds, "Time limit per run");
  cmd->add_option("--json", a->json, "Write the figures as JSON");
  cmd->callback([a] {
    const double paper_ms[7] = {0, 0, 0, 12, 117, 1775, 0};  // Park et al. 2011, GTX 580
    std::printf("solver benchmark: CPU, %d threads (GPU engines: not yet)\n", cpu_thread_count(a->threads));
    std::printf("  %-22s %10s %8s %12s %14s\n", "experiment", "ms", "traps", "paper GPU ms", "paper / ours");
    nlohmann::json rows = nlohmann::json::array();
    for (auto k : split_ints(a->curves, "--curves")) {
      SolverOptions o;
      o.threads = a->threads;
      o.max_seconds = a->max_seconds;
      const auto curves = mirrors(int(k));
      const auto t0 = std::chrono::steady_clock::now();
      const RayTrapResult r = ray_traps(curves, o);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const double paper = k >= 3 && k <= 5 ? paper_ms[k] : 0;
      std::printf("  ray traps, %lld curves    %10.1f %8zu %12.0f %14s  %s\n", (long long)k, ms, r.traps.size(), paper,
                  paper > 0 ? std::to_string(paper / ms).substr(0, 6).c_str() : "-", r.status.c_str());
      rows.push_back({{"experiment", "ray traps"}, {"curves", k}, {"ms", ms}, {"traps", r.traps.size()}, {"status", r.status},
                      {"paper_gpu_ms", paper}, {"threads", cpu_thread_count(a->threads)}});
    }
    if (!a->json.empty()) write_report(a->json, nlohmann::json{{"benchmark", "solver"}, {"results", rows}}.dump(2) + "\n");
  });
}

}  // namespace parasurf::cli
