// parasurf bench solver: the experiments of Park et al. 2011 (section 6) with the paper's GTX 580 times printed
// beside ours: Hausdorff distance of two cubic B-spline curves of 5..40 control points, contact points of two 14x7
// biquadratic B-spline surfaces under a cubic scale-and-translation motion of 29 control points, surface-surface
// intersection of 14x7 and 26x10 surfaces, ray traps of 3, 4, 5 quadratic curves and the bisector of a 3x3 and a
// 2x2 surface. The paper's shapes are not published: ours are generated deterministically (below) and can be
// written out (--write-inputs) for `parasurf solve`. Beside them, a batch of our own: 10^4 pairs of planar cubic and
// quintic curves, as collision queries meet them (crossing, tangent and overlapping pairs mixed).
#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "parasurf_commit.h"
#include "parasurf/commands.hpp"
#include "parasurf/device.hpp"
#include "parasurf/solver.hpp"

namespace parasurf::cli {

namespace {

const double kPi = 3.14159265358979323846;

// k quadratic mirrors on a slightly irregular circle, facing inwards: arc i spans 60% of its sector.
std::vector<BezierCurve2> mirrors(int k) {
  std::vector<BezierCurve2> out;
  for (int i = 0; i < k; ++i) {
    const double c = kPi / 2 + i * 2 * kPi / k, w = 0.6 * kPi / k;
    const double r = 1.0 + 0.03 * std::sin(3.0 * i + 1.0), bulge = 0.02 * std::cos(5.0 * i + 2.0);
    const double rm = r / std::cos(w) + bulge;
    out.push_back({{{r * std::cos(c - w), r * std::sin(c - w)}, {rm * std::cos(c), rm * std::sin(c)}, {r * std::cos(c + w), r * std::sin(c + w)}}});
  }
  return out;
}

std::vector<double> clamped_uniform(int count, int degree) {
  std::vector<double> k(std::size_t(degree + 1), 0.0);
  for (int i = 1; i < count - degree; ++i) k.push_back(double(i) / (count - degree));
  k.insert(k.end(), std::size_t(degree + 1), 1.0);
  return k;
}

// A cubic B-spline wave across [-1, 1] with n control points.
BSplineCurve2 wave_curve(int n, double phase, double amplitude, double shift) {
  BSplineCurve2 c;
  c.degree = 3;
  for (int i = 0; i < n; ++i) {
    const double x = 2.0 * i / (n - 1) - 1;
    c.points.push_back({x, shift + amplitude * std::sin(7.0 * x + phase) + 0.15 * std::cos(23.0 * x * x + phase)});
  }
  c.knots = clamped_uniform(n, 3);
  return c;
}

// A height field of nu x nv control points over [x0, x1] x [y0, y1], z = f(x, y), clamped uniform knots.
template <class F>
BSplineSurface height_field(int nu, int nv, int degree, double x0, double x1, double y0, double y1, F&& f) {
  BSplineSurface s;
  s.degree_u = s.degree_v = degree;
  s.count_u = nu;
  s.count_v = nv;
  s.knots_u = clamped_uniform(nu, degree);
  s.knots_v = clamped_uniform(nv, degree);
  for (int i = 0; i < nu; ++i)
    for (int j = 0; j < nv; ++j) {
      const double x = x0 + (x1 - x0) * i / (nu - 1), y = y0 + (y1 - y0) * j / (nv - 1);
      s.points.insert(s.points.end(), {x, y, f(x, y)});
    }
  return s;
}

// Two crossing wavy sheets (the second runs along y where the first runs along x).
std::pair<BSplineSurface, BSplineSurface> ssi_pair(int nu, int nv) {
  auto a = height_field(nu, nv, 2, -1, 1, -1, 1, [](double x, double y) { return 0.25 * std::sin(4 * x) * std::cos(2 * y); });
  auto b = height_field(nv, nu, 2, -1, 1, -1, 1, [](double x, double y) { return 0.05 + 0.25 * std::cos(3 * x + 0.5) * std::sin(4 * y); });
  return {a, b};
}

struct ContactInput {
  BSplineSurface moving, fixed;
  Motion motion;
};
// A 14x7 biquadratic downward dome bobbing over a 14x7 biquadratic terrain along a 29-point cubic path, with a
// scale that breathes by 10%.
ContactInput contact_input() {
  ContactInput in;
  in.moving = height_field(14, 7, 2, -0.3, 0.3, -0.2, 0.2, [](double x, double y) { return 0.8 * (x * x + y * y); });
  in.fixed = height_field(14, 7, 2, -1, 1, -1, 1, [](double x, double y) { return 0.12 * std::sin(5 * x) * std::cos(3 * y); });
  in.motion.degree = 3;
  in.motion.knots = clamped_uniform(29, 3);
  for (int i = 0; i < 29; ++i) {
    const double f = double(i) / 28;
    in.motion.points.push_back({1.0 + 0.1 * std::sin(2 * kPi * f), -0.6 + 1.2 * f, 0.3 * std::sin(3 * kPi * f), 0.1 + 0.15 * std::cos(6 * kPi * f)});
  }
  return in;
}

// A biquadratic cap (3x3) above a bilinear plane (2x2).
std::pair<BSplineSurface, BSplineSurface> bisector_pair() {
  auto cap = height_field(3, 3, 2, -1, 1, -1, 1, [](double x, double y) { return 1.0 - 0.4 * (x * x + 0.5 * y * y) + 0.1 * x; });
  auto plane = height_field(2, 2, 1, -1.5, 1.5, -1.5, 1.5, [](double x, double y) { return 0.1 * x - 0.05 * y; });
  return {cap, plane};
}

// Collision-style queries: `count` pairs of planar Bézier curves, cubic and quintic, mostly random in the unit square
// (0 to several crossings each), one in ten touching tangentially (a parabola on its tangent line, moved and turned)
// and one in ten overlapping (a piece of the first curve, reversed).
std::vector<std::pair<BezierCurve2, BezierCurve2>> curve_pairs(int count) {
  std::mt19937_64 rng(2011);
  std::uniform_real_distribution<double> u(0, 1);
  auto random_curve = [&](int degree) {
    BezierCurve2 c;
    for (int i = 0; i <= degree; ++i) c.points.push_back({u(rng), u(rng)});
    return c;
  };
  auto place = [&](BezierCurve2 c, double angle, double scale, double dx, double dy) {
    for (auto& p : c.points) {
      const double x = p[0], y = p[1];
      p = {dx + scale * (std::cos(angle) * x - std::sin(angle) * y), dy + scale * (std::sin(angle) * x + std::cos(angle) * y)};
    }
    return c;
  };
  std::vector<std::pair<BezierCurve2, BezierCurve2>> pairs;
  for (int i = 0; i < count; ++i) {
    const int degree = i % 2 ? 5 : 3;
    if (i % 10 == 3) {  // y = x^2 over [-1, 1] (its cubic form) on the line y = 0
      const double angle = 2 * kPi * u(rng), scale = 0.2 + 0.3 * u(rng), dx = u(rng), dy = u(rng);
      const BezierCurve2 parabola{{{-1, 1}, {-1.0 / 3, -1.0 / 3}, {1.0 / 3, -1.0 / 3}, {1, 1}}};
      const BezierCurve2 line{{{-1, 0}, {-1.0 / 3, 0}, {1.0 / 3, 0}, {1, 0}}};
      pairs.push_back({place(parabola, angle, scale, dx, dy), place(line, angle, scale, dx, dy)});
    } else if (i % 10 == 7) {
      const BezierCurve2 a = random_curve(degree);
      BezierCurve2 b = curve_piece(a, 0.2 + 0.2 * u(rng), 0.6 + 0.3 * u(rng));
      std::reverse(b.points.begin(), b.points.end());
      pairs.push_back({a, b});
    } else {
      pairs.push_back({random_curve(degree), random_curve(degree)});
    }
  }
  return pairs;
}

nlohmann::json curve_json(const BSplineCurve2& c) { return {{"degree", c.degree}, {"knots", c.knots}, {"points", c.points}}; }
nlohmann::json surface_json(const BSplineSurface& s) {
  nlohmann::json rows = nlohmann::json::array();
  for (int i = 0; i < s.count_u; ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (int j = 0; j < s.count_v; ++j) {
      const double* p = &s.points[3 * (std::size_t(i) * s.count_v + j)];
      row.push_back({p[0], p[1], p[2]});
    }
    rows.push_back(row);
  }
  return {{"degree", {s.degree_u, s.degree_v}}, {"knots", {s.knots_u, s.knots_v}}, {"points", rows}};
}

}  // namespace

void add_bench_solver(CLI::App& bench) {
  struct Args {
    std::string json, experiments = "hausdorff,contacts,ssi,raytraps,bisectors,curvepairs,closestpoints,rays", curves = "3,4,5", inputs, engines = "all";
    int threads = 0, repeat = 3, ray_image = 1000;
    double max_seconds = 120, min_seconds = 1.0;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = bench.add_subcommand("solver", "Subdivision solver: the experiments of Park et al. 2011 (section 6) beside the paper's GPU times");
  cmd->add_option("--experiments", a->experiments, "Comma-separated: hausdorff, contacts, ssi, raytraps, bisectors, curvepairs, closestpoints, rays");
  cmd->add_option("--ray-image", a->ray_image, "Side of the camera image of the rays experiment (one ray per pixel)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--curves", a->curves, "Ray traps: numbers of curves k, comma-separated (3..6)");
  cmd->add_option("--engines", a->engines,
                  "Comma-separated: cpu (level by level), cpu-tasks (the paper's lock-free task buffer), cuda (GPU-resident), "
                  "hybrid, auto (the library's choice per batch); all = every available one");
  cmd->add_option("--threads", a->threads, "CPU threads (0 = all)");
  cmd->add_option("--repeat", a->repeat, "Rounds per experiment at least (each engine's fastest run is reported)");
  cmd->add_option("--min-seconds", a->min_seconds,
                  "Rounds (every engine once, in turn) go on until an experiment has taken this long per engine (at most "
                  "500 rounds): the best of a few runs of a millisecond job is noisy");
  cmd->add_option("--max-seconds", a->max_seconds, "Time limit per run");
  cmd->add_option("--write-inputs", a->inputs, "Write each generated input as JSON for `parasurf solve` into this folder");
  cmd->add_option("--json", a->json, "Write the figures as JSON");
  cmd->callback([a] {
    const int threads = cpu_thread_count(a->threads);
    // Engines: cpu (level by level), cpu-tasks (the paper's shared lock-free task buffer), cuda, hybrid, and auto
    // (what the library's defaults choose for each batch; without a GPU, the CPU's Auto scheme).
    struct Engine {
      Device device;
      SolverCpuScheme scheme;
      std::string name;
    };
    std::vector<Engine> engines;
    for (const auto& e : a->engines == "all" ? std::vector<std::string>{"cpu", "cpu-tasks", "cuda", "hybrid", "auto"} : split(a->engines)) {
      if (e == "cpu-tasks") engines.push_back({Device::Cpu, SolverCpuScheme::TaskBuffer, e});
      else if (e == "auto") engines.push_back({Device::Auto, SolverCpuScheme::TaskBuffer, e});
      else if (a->engines != "all" || e == "cpu" || cuda_available()) engines.push_back({parse_device(e), SolverCpuScheme::Levels, e});
    }
    std::string gpu = "none";
    if (cuda_available()) gpu = cuda_devices()[0].name;
    std::printf("solver benchmark: CPU %d threads, GPU %s; paper = Park et al. 2011 on a GTX 580 (hybrid CPU+GPU solver)\n", threads,
                gpu.c_str());
    if (!cuda_available()) std::printf("  (no CUDA device: %s; GPU engines skipped)\n", cuda_unavailable_reason().c_str());
    // The GPU floor: the node coefficients the engine must read and write, at the copy bandwidth measured now.
    const double bandwidth = cuda_available() ? measure_cuda_copy_bandwidth(0, 256ull << 20) : 0;
    if (bandwidth > 0) std::printf("  device copy bandwidth %.0f GB/s (GPU floor = bytes of node coefficients moved / bandwidth)\n", bandwidth / 1e9);
    std::printf("  %-34s %-9s %10s %10s %10s %9s %12s %12s %8s %9s  %s\n", "experiment", "engine", "ms", "median ms", "engine ms", "results", "paper GPU ms", "paper / ours",
                "levels", "x floor", "status");
    nlohmann::json rows = nlohmann::json::array();
    SolverOptions o;
    o.threads = a->threads;
    o.max_seconds = a->max_seconds;
    if (!a->inputs.empty()) std::filesystem::create_directories(a->inputs);
    auto save = [&](const std::string& name, const nlohmann::json& doc) {
      if (!a->inputs.empty()) write_report((std::filesystem::path(a->inputs) / (name + ".json")).string(), doc.dump(1) + "\n");
    };
    // Runs f on every engine (after one warm-up run each) round after round, each round in another order, at least
    // `repeat` rounds and until min_seconds per engine have passed (500 rounds at most), and reports each engine's
    // fastest run as (ms, result count, status). Taken in turn, the engines meet the same state of the host
    // (its clocks, caches and other load) rather than each its own stretch of it: auto and the engine it chooses run
    // the same code, and only interleaved runs show them equal. In a round each engine runs twice in a row and the
    // second run is timed: a run after a GPU engine's found the CPU's threads asleep, and a Hausdorff distance (a
    // dozen short parallel phases) then took six times its time after another CPU run, so that the medians of the
    // rounds depended on which engine came before.
    auto run = [&](const std::string& label, const std::string& id, double paper, auto&& f) {
      struct Tally {
        double best = 1e300, engine_ms = 0;  // engine_ms: of the fastest run
        std::vector<double> runs;            // every timed run's ms, for the median
        std::size_t count = 0;
        std::string status;
        double bytes = 0;  // GPU traffic of a run
        long long levels = 0;
      };
      std::vector<std::size_t> runnable;
      for (std::size_t e = 0; e < engines.size(); ++e)
        if (engines[e].device == Device::Cpu || engines[e].device == Device::Auto || cuda_available())
          runnable.push_back(e);  // (auto is the CPU without a GPU)
      std::vector<Tally> tally(engines.size());
      auto select = [&](std::size_t e) {
        o.device = engines[e].device;
        o.cpu_scheme = engines[e].scheme;
      };
      auto once = [&](std::size_t e) {
        select(e);
        Tally& t = tally[e];
        const SolverGpuTraffic before = solver_gpu_traffic();
        const double engine_before = solver_engine_seconds();
        const auto t0 = std::chrono::steady_clock::now();
        const auto [n, st] = f();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (ms < t.best) t.best = ms, t.engine_ms = 1e3 * (solver_engine_seconds() - engine_before);
        t.runs.push_back(ms);
        const SolverGpuTraffic after = solver_gpu_traffic();
        t.bytes = double(after.bytes - before.bytes), t.levels = after.levels - before.levels;
        t.count = n;
        t.status = st;
      };
      for (const std::size_t e : runnable) select(e), f();
      const auto started = std::chrono::steady_clock::now();
      const double budget = a->min_seconds * double(runnable.size());
      auto more = [&](int r) {
        if (r < std::max(1, a->repeat)) return true;
        return r < 500 && std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() < budget;
      };
      // Each round in its own order (a fixed seed, the same every run): rotated, each engine would always follow the
      // same one, and on a GPU host the engine after a GPU engine always found the CPU's threads asleep.
      std::mt19937 order_rng(20111);
      std::vector<std::size_t> order = runnable;
      for (int r = 0; more(r); ++r) {
        std::shuffle(order.begin(), order.end(), order_rng);
        for (const std::size_t e : order) select(e), f(), once(e);
      }
      for (const std::size_t e : runnable) {
        Tally& t = tally[e];
        // The median of the rounds beside the fastest: on a many-core host the fastest runs of a sub-millisecond job
        // differ by up to 15 % between two engines that run the same code, and the median shows the typical run.
        const auto mid = t.runs.begin() + std::ptrdiff_t(t.runs.size() / 2);
        std::nth_element(t.runs.begin(), mid, t.runs.end());
        const double median = t.runs.empty() ? 0 : *mid;
        const double floor_ms = bandwidth > 0 ? 1e3 * t.bytes / bandwidth : 0;
        char over_floor[32] = "-";
        if (engines[e].device != Device::Cpu && floor_ms > 0) std::snprintf(over_floor, sizeof over_floor, "%.0f", t.best / floor_ms);
        char paper_ms[24] = "-", paper_over[24] = "-";  // (experiments of our own have no paper figure)
        if (paper > 0) std::snprintf(paper_ms, sizeof paper_ms, "%.0f", paper), std::snprintf(paper_over, sizeof paper_over, "%.2f", paper / t.best);
        std::printf("  %-34s %-9s %10.2f %10.2f %10.2f %9zu %12s %12s %8lld %9s  %s\n", label.c_str(), engines[e].name.c_str(), t.best, median,
                    t.engine_ms, t.count, paper_ms, paper_over, t.levels, over_floor, t.status.c_str());
        rows.push_back({{"experiment", id}, {"label", label}, {"engine", engines[e].name}, {"ms", t.best}, {"median_ms", median}, {"rounds", t.runs.size()}, {"engine_ms", t.engine_ms},
                        {"results", t.count}, {"status", t.status}, {"paper_gpu_ms", paper}, {"paper_over_ours", paper > 0 ? paper / t.best : 0.0},
                        {"threads", threads}, {"gpu", gpu}, {"gpu_bytes", t.bytes}, {"gpu_levels", t.levels}, {"floor_ms", floor_ms}});
      }
      std::fflush(stdout);
    };
    const auto wanted = split(a->experiments);
    auto want = [&](const char* e) { return std::find(wanted.begin(), wanted.end(), e) != wanted.end(); };
    if (want("hausdorff")) {
      const int sizes[5] = {5, 10, 20, 30, 40};
      const double paper[5] = {19, 22, 26, 38, 45};
      for (int i = 0; i < 5; ++i) {
        const auto c1 = wave_curve(sizes[i], 0.0, 0.4, 0.0), c2 = wave_curve(sizes[i], 1.3, 0.35, 0.25);
        save("hausdorff_" + std::to_string(sizes[i]), {{"curve1", curve_json(c1)}, {"curve2", curve_json(c2)}});
        run("Hausdorff " + std::to_string(sizes[i]) + "x" + std::to_string(sizes[i]) + " control points", "hausdorff", paper[i], [&] {
          const HausdorffResult r = hausdorff_distance(c1, c2, o);
          return std::pair<std::size_t, std::string>{std::size_t(r.candidates), r.status};
        });
      }
    }
    if (want("contacts")) {
      const ContactInput in = contact_input();
      nlohmann::json motion = {{"degree", in.motion.degree}, {"knots", in.motion.knots}, {"points", in.motion.points}};
      save("contacts", {{"moving", surface_json(in.moving)}, {"fixed", surface_json(in.fixed)}, {"motion", motion}});
      run("contacts 14x7 x 14x7, motion 29", "contacts", 127, [&] {
        const ContactResult r = contact_points(in.moving, in.fixed, in.motion, o);
        return std::pair<std::size_t, std::string>{r.contacts.size(), r.status};
      });
    }
    if (want("ssi")) {
      for (const auto& [nu, nv, paper] : {std::tuple<int, int, double>{14, 7, 46}, {26, 10, 66}}) {
        const auto [s1, s2] = ssi_pair(nu, nv);
        const std::string size = std::to_string(nu) + "x" + std::to_string(nv);
        save("ssi_" + size, {{"surface1", surface_json(s1)}, {"surface2", surface_json(s2)}});
        run("SSI " + size + " x " + size, "ssi", paper, [&] {
          const SurfaceIntersectionResult r = intersect_surfaces(s1, s2, 1.0 / 16, o);
          std::size_t points = 0;
          for (const auto& c : r.curves) points += c.points.size();
          return std::pair<std::size_t, std::string>{points, r.status};
        });
      }
    }
    if (want("raytraps")) {
      const double paper_ms[7] = {0, 0, 0, 12, 117, 1775, 0};
      for (auto k : split_ints(a->curves, "--curves")) {
        const auto curves = mirrors(int(k));
        nlohmann::json list = nlohmann::json::array();
        for (const auto& c : curves) list.push_back({{"points", c.points}});
        save("raytraps_" + std::to_string(k), {{"curves", list}});
        run("ray traps, " + std::to_string(k) + " curves", "raytraps", k >= 3 && k <= 5 ? paper_ms[k] : 0, [&] {
          const RayTrapResult r = ray_traps(curves, o);
          return std::pair<std::size_t, std::string>{r.traps.size(), r.status};
        });
      }
    }
    if (want("curvepairs")) {
      const auto pairs = curve_pairs(10000);
      run("10^4 curve pairs (cubic, quintic)", "curvepairs", 0, [&] {
        const std::vector<CurveIntersectionResult> r = intersect_curve_pairs(pairs, o);
        std::size_t found = 0;
        std::string status = "complete";
        for (const auto& x : r) {
          found += x.points.size() + x.overlaps.size();
          if (x.status != "complete") status = x.status;
        }
        return std::pair<std::size_t, std::string>{found, status};
      });
    }
    if (want("closestpoints")) {
      // 10^4 points around the teapot (its box grown by a quarter each way), each projected onto its 32 patches.
      const PatchModel model = utah_teapot();
      std::vector<BezierSurface> patches;
      for (std::int64_t p = 0; p < std::int64_t(model.patches.size()); ++p) patches.push_back(patch_surface(model, p));
      std::mt19937_64 rng(2011);
      std::uniform_real_distribution<double> x(-4.3, 4.3), y(-2.5, 2.5), z(-0.8, 4.0);
      std::vector<std::array<double, 3>> queries(10000);
      for (auto& q : queries) q = {x(rng), y(rng), z(rng)};
      run("10^4 closest points, teapot", "closestpoints", 0, [&] {
        const ClosestPointsResult r = closest_points(patches, queries, o);
        return std::pair<std::size_t, std::string>{std::size_t(r.systems), r.status};
      });
    }
    if (want("rays")) {
      // A camera image of the teapot: one ray per pixel from an eye above and in front of it, the teapot filling the
      // frame; each ray against the 32 patches.
      const PatchModel model = utah_teapot();
      std::vector<BezierSurface> patches;
      for (std::int64_t p = 0; p < std::int64_t(model.patches.size()); ++p) patches.push_back(patch_surface(model, p));
      const std::array<double, 3> eye = {6, -8, 6}, at = {0, 0, 1.4};
      std::array<double, 3> f = {at[0] - eye[0], at[1] - eye[1], at[2] - eye[2]};
      const double fl = std::sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
      for (double& c : f) c /= fl;
      std::array<double, 3> r = {f[1], -f[0], 0};  // right: horizontal, across the view
      const double rl = std::sqrt(r[0] * r[0] + r[1] * r[1]);
      for (double& c : r) c /= rl;
      const std::array<double, 3> up = {r[1] * f[2] - r[2] * f[1], r[2] * f[0] - r[0] * f[2], r[0] * f[1] - r[1] * f[0]};
      const int side = a->ray_image;
      const double half = 0.3;  // half the image plane's width at distance 1: the teapot fills much of it
      std::vector<std::array<double, 3>> origins(std::size_t(side) * std::size_t(side), eye), directions(origins.size());
      for (int i = 0; i < side; ++i)
        for (int j = 0; j < side; ++j) {
          const double x = half * (2 * (j + 0.5) / side - 1), y = half * (1 - 2 * (i + 0.5) / side);
          for (int k = 0; k < 3; ++k) directions[std::size_t(i) * std::size_t(side) + std::size_t(j)][std::size_t(k)] = f[std::size_t(k)] + x * r[std::size_t(k)] + y * up[std::size_t(k)];
        }
      const std::string label = std::to_string(side) + "x" + std::to_string(side) + " rays, teapot";
      run(label, "rays", 0, [&] {
        const RayHitsResult h = intersect_rays(patches, origins, directions, o);
        std::size_t hit = 0;
        for (const RayHit& x : h.hits) hit += x.patch >= 0;
        return std::pair<std::size_t, std::string>{hit, h.status};
      });
    }
    if (want("bisectors")) {
      const auto [cap, plane] = bisector_pair();
      save("surface_bisector", {{"surface1", surface_json(cap)}, {"surface2", surface_json(plane)}});
      run("bisector 3x3 x 2x2 surfaces", "bisectors", 50, [&] {
        const SurfaceBisectorResult r = surface_bisector(cap, plane, 1.0 / 32, o);
        return std::pair<std::size_t, std::string>{r.samples.size(), r.status};
      });
    }
    std::printf("  results: Hausdorff = candidates measured, contacts = points, SSI = polyline points, ray traps = traps, "
                "bisector = samples, curve pairs = intersection points and overlaps, closest points = systems solved, rays = rays that hit\n");
    if (!a->json.empty())
      write_report(a->json, nlohmann::json{{"benchmark", "solver"}, {"date", today()}, {"commit", PARASURF_GIT_COMMIT}, {"gpu", gpu}, {"threads", threads}, {"engines_in_turn", true}, {"engine_order", "shuffled"}, {"results", rows}}.dump(2) + "\n");
  });
}

}  // namespace parasurf::cli
