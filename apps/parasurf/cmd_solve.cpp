// parasurf solve: geometric applications of the subdivision solver (so far: planar curve intersection).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "io/text_cursor.hpp"
#include "parasurf/commands.hpp"
#include "parasurf/error.hpp"
#include "parasurf/render.hpp"
#include "parasurf/solver.hpp"

namespace parasurf::cli {

namespace {

std::vector<std::array<double, 2>> sample_curve(const BezierCurve2& c, int n = 200) {
  std::vector<std::array<double, 2>> out;
  for (int k = 0; k <= n; ++k) {
    const double t = double(k) / n;
    auto w = c.points;
    for (std::size_t r = 1; r < w.size(); ++r)
      for (std::size_t i = 0; i + r < w.size(); ++i)
        for (int d = 0; d < 2; ++d) w[i][d] = (1 - t) * w[i][d] + t * w[i + 1][d];
    out.push_back(w[0]);
  }
  return out;
}

const std::array<float, 3> kCurveColors[4] = {{0.15f, 0.35f, 0.75f}, {0.15f, 0.6f, 0.3f}, {0.55f, 0.3f, 0.7f}, {0.8f, 0.55f, 0.1f}};

void draw(const std::string& path, Plot2D& plot) {
  const auto pixels = render_plot(plot, 800, 600);
  write_png(path, pixels, 800, 600);
}

double number(const nlohmann::json& v, const std::string& where) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {  // "p/q" fractions and C99 hex floats, as in the bezier package's test data
    const std::string s = v.get<std::string>();
    const auto slash = s.find('/');
    char* end = nullptr;
    if (slash != std::string::npos) {
      const double p = std::strtod(s.substr(0, slash).c_str(), &end), q = std::strtod(s.substr(slash + 1).c_str(), nullptr);
      if (q != 0 && std::isfinite(p / q)) return p / q;
    } else {
      const double x = std::strtod(s.c_str(), &end);
      if (end && *end == '\0' && std::isfinite(x)) return x;
    }
  }
  throw Error(ErrorKind::Parse, where + ": expected a finite number, a fraction \"p/q\" or a hex float");
}

// {"control_points": [[x0, x1, ...], [y0, y1, ...]]} or {"points": [[x, y], ...]}
BezierCurve2 curve(const nlohmann::json& c, const std::string& where) {
  BezierCurve2 out;
  if (c.contains("points")) {
    const auto& p = c["points"];
    if (!p.is_array()) throw Error(ErrorKind::Parse, where + ".points: expected [[x, y], ...]");
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (!p[i].is_array() || p[i].size() != 2) throw Error(ErrorKind::Parse, where + ".points: expected [[x, y], ...]");
      out.points.push_back({number(p[i][0], where), number(p[i][1], where)});
    }
  } else if (c.contains("control_points")) {
    const auto& p = c["control_points"];
    if (!p.is_array() || p.size() != 2 || !p[0].is_array() || !p[1].is_array() || p[0].size() != p[1].size())
      throw Error(ErrorKind::Parse, where + ".control_points: expected [[x0, x1, ...], [y0, y1, ...]]");
    for (std::size_t i = 0; i < p[0].size(); ++i) out.points.push_back({number(p[0][i], where), number(p[1][i], where)});
  } else {
    throw Error(ErrorKind::Parse, where + ": expected \"points\" or \"control_points\"");
  }
  return out;
}

}  // namespace

void add_solve(CLI::App& app) {
  struct Args {
    std::string app, input, json, picture;
    double tolerance = 1e-7;
    int threads = 0;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("solve", "Polynomial systems by subdivision: geometric applications (curves: intersection "
                                          "of two planar Bezier curves)");
  cmd->add_option("app", a->app, "Application: curves (intersection of two curves) | raytraps (k >= 3 curves)")
      ->required()
      ->check(CLI::IsMember({"curves", "raytraps"}));
  cmd->add_option("input", a->input,
                  "JSON: curves: {\"curve1\": {\"points\": [[x, y], ...]} (+ \"degree\", \"knots\" for a B-spline), \"curve2\": {...}}; "
                  "raytraps: {\"curves\": [{...}, ...]}")
      ->required();
  cmd->add_option("--picture", a->picture, "Also draw the curves and the result into this PNG");
  cmd->add_option("--tolerance", a->tolerance, "Parameter width at which unresolved cells stop (tangent roots)");
  cmd->add_option("--threads", a->threads, "CPU threads (0 = all)");
  cmd->add_option("--json,--output,-o", a->json, "Write the result as JSON to this file");
  cmd->callback([a] {
    const std::string text = io::read_text_file(a->input, "solver input", 64ull << 20);
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorKind::Parse, a->input + ": not valid JSON: " + e.what());
    }
    SolverOptions o;
    o.tolerance = a->tolerance;
    o.threads = a->threads;
    // Long solves show their subdivision level on a terminal (the fraction is unknown: the bar fills by level).
    o.progress = [](int level, std::int64_t) { progress_bar("subdivision", std::min(0.99, level / 60.0)); };
    struct ClearBar {
      ~ClearBar() { progress_bar("", 1.0); }
    } clear_bar;
    if (a->app == "raytraps") {
      if (!doc.is_object() || !doc.contains("curves") || !doc["curves"].is_array())
        throw Error(ErrorKind::Parse, a->input + ": expected {\"curves\": [{\"points\": [[x, y], ...]}, ...]}");
      std::vector<BezierCurve2> curves;
      for (std::size_t i = 0; i < doc["curves"].size(); ++i)
        curves.push_back(curve(doc["curves"][i], a->input + ": curves[" + std::to_string(i) + "]"));
      const RayTrapResult r = ray_traps(curves, o);
      std::printf("%zu curves: %zu ray trap(s); %s\n", curves.size(), r.traps.size(), r.status.c_str());
      nlohmann::json out = {{"status", r.status}, {"traps", nlohmann::json::array()}};
      for (const auto& t : r.traps) {
        std::printf("  t =");
        for (double v : t.t) std::printf(" %.15g", v);
        std::printf("\n");
        out["traps"].push_back({{"t", t.t}, {"points", t.points}});
      }
      if (!a->json.empty()) write_report(a->json, out.dump(2) + "\n");
      if (!a->picture.empty()) {
        Plot2D plot;
        for (std::size_t i = 0; i < curves.size(); ++i) plot.lines.push_back({sample_curve(curves[i]), kCurveColors[i % 4], 4.0});
        for (const auto& t : r.traps) {
          Plot2D::Line path{t.points, {0.85f, 0.2f, 0.15f}, 1.8};
          path.points.push_back(t.points.front());
          plot.lines.push_back(path);
          for (const auto& p : t.points) plot.dots.push_back({p, {0.85f, 0.2f, 0.15f}, 4});
        }
        draw(a->picture, plot);
      }
      if (r.status.rfind("limit reached", 0) == 0) throw ExitStatus{4};
      return;
    }
    if (!doc.is_object() || !doc.contains("curve1") || !doc.contains("curve2"))
      throw Error(ErrorKind::Parse, a->input + ": expected {\"curve1\": ..., \"curve2\": ...}");
    const BezierCurve2 c1 = curve(doc["curve1"], a->input + ": curve1"), c2 = curve(doc["curve2"], a->input + ": curve2");
    // B-spline curves: "degree" and "knots" beside the points; a Bezier curve is the clamped B-spline of one span.
    auto as_bspline = [&](const nlohmann::json& j, const BezierCurve2& c, const std::string& where) {
      BSplineCurve2 b;
      b.points = c.points;
      b.degree = int(c.points.size()) - 1;
      if (j.contains("degree")) {
        if (!j["degree"].is_number_integer()) throw Error(ErrorKind::Parse, where + ".degree: expected an integer");
        b.degree = j["degree"].get<int>();
      }
      if (j.contains("knots")) {
        if (!j["knots"].is_array()) throw Error(ErrorKind::Parse, where + ".knots: expected an array");
        for (const auto& k : j["knots"]) b.knots.push_back(number(k, where + ".knots"));
      } else {
        b.knots.assign(std::size_t(b.degree + 1), 0.0);
        b.knots.insert(b.knots.end(), std::size_t(b.degree + 1), 1.0);
      }
      return b;
    };
    const bool bspline = doc["curve1"].contains("knots") || doc["curve2"].contains("knots");
    const CurveIntersectionResult r =
        bspline ? intersect_curves(as_bspline(doc["curve1"], c1, a->input + ": curve1"), as_bspline(doc["curve2"], c2, a->input + ": curve2"), o)
                : intersect_curves(c1, c2, o);
    std::printf("%s curves with %zu and %zu control points: %zu intersection(s), %zu overlap(s); %s\n",
                bspline ? "B-spline" : "Bezier", c1.points.size(), c2.points.size(), r.points.size(), r.overlaps.size(),
                r.status.c_str());
    nlohmann::json out = {{"status", r.status}, {"intersections", nlohmann::json::array()}, {"overlaps", nlohmann::json::array()}};
    for (const auto& p : r.points) {
      std::printf("  s = %.17g, t = %.17g at (%.17g, %.17g)%s\n", p.s, p.t, p.point[0], p.point[1], p.tangent ? " tangent" : "");
      out["intersections"].push_back({{"s", p.s}, {"t", p.t}, {"point", p.point}, {"tangent", p.tangent}});
    }
    for (const auto& v : r.overlaps) {
      std::printf("  overlap: s in [%.9g, %.9g], t in [%.9g, %.9g]\n", v.s0, v.s1, v.t0, v.t1);
      out["overlaps"].push_back({{"s", {v.s0, v.s1}}, {"t", {v.t0, v.t1}}});
    }
    if (!a->json.empty()) write_report(a->json, out.dump(2) + "\n");
    if (!a->picture.empty()) {
      Plot2D plot;
      if (bspline) {
        for (int which = 0; which < 2; ++which) {
          const auto b = as_bspline(doc[which ? "curve2" : "curve1"], which ? c2 : c1, a->input);
          for (const auto& piece : bspline_to_bezier(b)) plot.lines.push_back({sample_curve(piece.curve), kCurveColors[which], 3.0});
        }
      } else {
        plot.lines.push_back({sample_curve(c1), kCurveColors[0], 3.0});
        plot.lines.push_back({sample_curve(c2), kCurveColors[1], 3.0});
      }
      for (const auto& p : r.points) plot.dots.push_back({p.point, p.tangent ? std::array<float, 3>{0.95f, 0.6f, 0.1f} : std::array<float, 3>{0.85f, 0.2f, 0.15f}, 6});
      draw(a->picture, plot);
    }
    if (r.status != "complete") throw ExitStatus{4};
  });
}

}  // namespace parasurf::cli
