// parasurf solve: geometric applications of the subdivision solver (curve intersection, Hausdorff distance, ray
// traps, curve and surface bisectors, surface-surface intersection, contact points of moving surfaces).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "parasurf/commands.hpp"
#include "parasurf/error.hpp"
#include "parasurf/render.hpp"
#include "parasurf/solver.hpp"
#include "parasurf/solver_input.hpp"

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

void draw_bspline(Plot2D& plot, const BSplineCurve2& c, std::array<float, 3> color, double width = 3.0) {
  for (const auto& piece : bspline_to_bezier(c)) plot.lines.push_back({sample_curve(piece.curve), color, width});
}

// A solve that a limit or an interrupt ended: its partial result has been written; say so, naming the input.
void stopped(const std::string& input, const std::string& status) {
  if (status == "complete") return;
  std::fprintf(stderr, "parasurf: %s: %s; the limits are --max-seconds and --max-cells\n", input.c_str(), status.c_str());
  throw ExitStatus{4};
}


const std::array<float, 3> kRed{0.85f, 0.2f, 0.15f};

struct SolveArgs {
  std::string app, input, json, picture, device = "cpu", cpu_scheme = "tasks";
  double tolerance = 1e-7;
  double resolution = 0;
  double max_seconds = 5;
  std::int64_t max_cells = 20'000'000;
  int threads = 0;
};

// One `parasurf solve` run: its arguments, input and options, and the application it names.
struct Solve {
  std::shared_ptr<SolveArgs> a;
  SolverInput doc;
  SolverOptions o;
  std::chrono::steady_clock::time_point started;

  double resolution(double fallback) const { return a->resolution > 0 ? a->resolution : fallback; }
  void report(nlohmann::json out) const {
    if (a->json.empty()) return;
    out["app"] = a->app;
    out["device"] = a->device;
    out["seconds"] = {{"total", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}};
    write_json_report(a->json, "solve", a->input, a->picture, std::move(out));
  }
  void finish(const nlohmann::json& out, const std::string& status) const {
    report(out);
    stopped(a->input, status);
  }
  void hausdorff() const;
  void bisector() const;
  void surfaces() const;
  void contacts() const;
  void raytraps() const;
  void curve_batch() const;
  void curves() const;
  void closest() const;
  void rays() const;
};

// The patch model of a closest or rays input: "model", a patch-model file (.bv, .bpt, B-spline .json; relative to
// the input's folder), else the Utah teapot; its tensor-product patches and their indices in the model.
struct InputPatches {
  std::string name;
  std::vector<BezierSurface> patches;
  std::vector<std::int64_t> index;  // each surface's patch in the model (triangular patches are left out)
};
InputPatches input_patches(const SolverInput& doc, const std::string& input) {
  PatchModel model = utah_teapot();
  if (doc.has("model")) {
    std::filesystem::path path = doc.text("model");
    if (path.is_relative()) path = std::filesystem::path(input).parent_path() / path;
    model = read_patch_model(path.string());
  }
  InputPatches out{model.name, {}, {}};
  for (std::int64_t p = 0; p < std::int64_t(model.patches.size()); ++p)
    if (model.patches[std::size_t(p)].kind == PatchKind::Tensor) out.patches.push_back(patch_surface(model, p)), out.index.push_back(p);
  if (out.patches.empty()) throw Error(ErrorKind::InvalidArgument, model.name + ": no tensor-product patches");
  return out;
}

// The nearest point of a patch model to each query point: {"points": [[x, y, z], ...]} and optionally "model".
void Solve::closest() const {
  const InputPatches in = input_patches(doc, a->input);
  const std::vector<std::array<double, 3>> queries = doc.points3("points");
  const ClosestPointsResult r = closest_points(in.patches, queries, o);
  double largest = 0, sum = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (const ClosestPoint& c : r.points) {
    largest = std::max(largest, c.distance), sum += c.distance;
    rows.push_back({{"patch", in.index[std::size_t(c.patch)]}, {"u", c.u}, {"v", c.v}, {"point", c.point}, {"distance", c.distance}});
  }
  std::printf("%zu closest points on %zu patches of %s: distance mean %.9g, largest %.9g; %lld systems; %s\n", queries.size(),
              in.patches.size(), in.name.c_str(), queries.empty() ? 0.0 : sum / double(queries.size()), largest,
              (long long)r.systems, r.status.c_str());
  for (std::size_t i = 0; i < std::min<std::size_t>(queries.size(), 5); ++i)
    std::printf("  (%.9g, %.9g, %.9g) -> patch %lld (u %.9g, v %.9g): (%.9g, %.9g, %.9g) at %.17g\n", queries[i][0], queries[i][1],
                queries[i][2], (long long)in.index[std::size_t(r.points[i].patch)], r.points[i].u, r.points[i].v, r.points[i].point[0],
                r.points[i].point[1], r.points[i].point[2], r.points[i].distance);
  return finish({{"status", r.status}, {"systems", r.systems}, {"closest", rows}}, r.status);
}

// Where each ray first meets a patch model: {"origins": [[x, y, z], ...], "directions": [[x, y, z], ...]},
// optionally "t_min" (hits at t > t_min only, default 0) and "model".
void Solve::rays() const {
  const InputPatches in = input_patches(doc, a->input);
  const std::vector<std::array<double, 3>> origins = doc.points3("origins"), directions = doc.points3("directions");
  const double t_min = doc.has("t_min") ? doc.number("t_min") : 0.0;
  const RayHitsResult r = intersect_rays(in.patches, origins, directions, o, t_min);
  std::size_t hits = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (const RayHit& h : r.hits) {
    if (h.patch < 0) {
      rows.push_back({{"hit", false}});
      continue;
    }
    ++hits;
    rows.push_back({{"hit", true}, {"patch", in.index[std::size_t(h.patch)]}, {"u", h.u}, {"v", h.v}, {"t", h.t}, {"point", h.point}});
  }
  std::printf("%zu rays on %zu patches of %s: %zu hit; %lld systems; %s\n", origins.size(), in.patches.size(), in.name.c_str(), hits,
              (long long)r.systems, r.status.c_str());
  for (std::size_t i = 0; i < std::min<std::size_t>(origins.size(), 5); ++i) {
    const RayHit& h = r.hits[i];
    if (h.patch < 0)
      std::printf("  ray %zu: no hit\n", i);
    else
      std::printf("  ray %zu -> patch %lld (u %.9g, v %.9g): (%.9g, %.9g, %.9g) at t = %.17g\n", i, (long long)in.index[std::size_t(h.patch)],
                  h.u, h.v, h.point[0], h.point[1], h.point[2], h.t);
  }
  return finish({{"status", r.status}, {"systems", r.systems}, {"rays", rows}}, r.status);
}

// The Hausdorff distance of two planar curves, with the two one-sided pairs.
void Solve::hausdorff() const {
  const BSplineCurve2 c1 = doc.curve("curve1"), c2 = doc.curve("curve2");
  const HausdorffResult r = hausdorff_distance(c1, c2, o);
  std::printf("Hausdorff distance %.17g; %lld candidates; %s\n", r.distance, (long long)r.candidates, r.status.c_str());
  nlohmann::json out = {{"status", r.status}, {"distance", r.distance}, {"candidates", r.candidates}};
  for (const auto& [name, p] : {std::pair<const char*, const HausdorffPair*>{"curve1_to_curve2", &r.a_to_b}, {"curve2_to_curve1", &r.b_to_a}}) {
    std::printf("  %s: %.17g from t = %.17g (%.9g, %.9g) to its closest point r = %.17g (%.9g, %.9g)\n", name, p->distance, p->t, p->from[0],
                p->from[1], p->r, p->to[0], p->to[1]);
    out[name] = {{"distance", p->distance}, {"t", p->t}, {"r", p->r}, {"from", p->from}, {"to", p->to}};
  }
  if (!a->picture.empty()) {
    Plot2D plot;
    draw_bspline(plot, c1, kCurveColors[0]);
    draw_bspline(plot, c2, kCurveColors[1]);
    for (const HausdorffPair* p : {&r.a_to_b, &r.b_to_a}) {
      plot.lines.push_back({{p->from, p->to}, p == &r.a_to_b ? kRed : std::array<float, 3>{0.95f, 0.6f, 0.1f}, 2.0});
      plot.dots.push_back({p->from, kRed, 5});
      plot.dots.push_back({p->to, kRed, 5});
    }
    draw(a->picture, plot);
  }
  return finish(out, r.status);
}

// The bisector of two planar curves, as polylines.
void Solve::bisector() const {
  const BSplineCurve2 c1 = doc.curve("curve1"), c2 = doc.curve("curve2");
  const CurveBisectorResult r = curve_bisector(c1, c2, resolution(1.0 / 128), o);
  std::size_t points = 0;
  nlohmann::json out = {{"status", r.status}, {"curves", nlohmann::json::array()}};
  for (const auto& c : r.curves) {
    points += c.points.size();
    out["curves"].push_back({{"points", c.points}, {"params", c.params}, {"closed", c.closed}});
  }
  std::printf("bisector: %zu polyline(s), %zu points; %s\n", r.curves.size(), points, r.status.c_str());
  if (!a->picture.empty()) {
    Plot2D plot;
    draw_bspline(plot, c1, kCurveColors[0]);
    draw_bspline(plot, c2, kCurveColors[1]);
    // The bisector runs off far where the normals turn parallel: draw it near the curves only.
    std::array<double, 2> lo{1e300, 1e300}, hi{-1e300, -1e300};
    for (const auto* c : {&c1, &c2})
      for (const auto& q : c->points)
        for (int k = 0; k < 2; ++k) lo[k] = std::min(lo[k], q[k]), hi[k] = std::max(hi[k], q[k]);
    const double pad = 0.5 * std::max(hi[0] - lo[0], hi[1] - lo[1]);
    for (const auto& c : r.curves) {
      Plot2D::Line piece{{}, kRed, 2.0};
      for (const auto& q : c.points) {
        if (q[0] > lo[0] - pad && q[0] < hi[0] + pad && q[1] > lo[1] - pad && q[1] < hi[1] + pad) {
          piece.points.push_back(q);
          continue;
        }
        if (piece.points.size() > 1) plot.lines.push_back(piece);
        piece.points.clear();
      }
      if (piece.points.size() > 1) plot.lines.push_back(piece);
    }
    draw(a->picture, plot);
  }
  return finish(out, r.status);
}

// The intersection curves of two surfaces (ssi) or their bisector sampled (surface-bisector).
void Solve::surfaces() const {
  const BSplineSurface s1 = doc.surface("surface1"), s2 = doc.surface("surface2");
  Plot2D plot;
  auto outline = [&](const BSplineSurface& s, std::array<float, 3> color) {  // the iso-parameter net, seen from above
    const double u0 = s.knots_u[std::size_t(s.degree_u)], u1 = s.knots_u[std::size_t(s.count_u)];
    const double v0 = s.knots_v[std::size_t(s.degree_v)], v1 = s.knots_v[std::size_t(s.count_v)];
    for (int k = 0; k <= 8; ++k)
      for (int dir = 0; dir < 2; ++dir) {
        Plot2D::Line l{{}, color, 1.0};
        for (int i = 0; i <= 64; ++i) {
          const double f = double(k) / 8, g = double(i) / 64;
          const auto p = dir ? evaluate_bspline(s, u0 + f * (u1 - u0), v0 + g * (v1 - v0)) : evaluate_bspline(s, u0 + g * (u1 - u0), v0 + f * (v1 - v0));
          l.points.push_back({p[0], p[1]});
        }
        plot.lines.push_back(l);
      }
  };
  outline(s1, kCurveColors[0]);
  outline(s2, kCurveColors[1]);
  if (a->app == "ssi") {
    const SurfaceIntersectionResult r = intersect_surfaces(s1, s2, resolution(1.0 / 64), o);
    std::size_t points = 0;
    double residual = 0;
    nlohmann::json out = {{"status", r.status}, {"curves", nlohmann::json::array()}};
    for (const auto& c : r.curves) {
      points += c.points.size();
      residual = std::max(residual, c.residual);
      out["curves"].push_back({{"points", c.points}, {"params", c.params}, {"closed", c.closed}, {"residual", c.residual}});
      Plot2D::Line l{{}, kRed, 3.0};
      for (const auto& p : c.points) l.points.push_back({p[0], p[1]});
      plot.lines.push_back(l);
    }
    out["overlaps"] = nlohmann::json::array();
    for (const auto& v : r.overlaps) out["overlaps"].push_back({{"lo", v.lo}, {"hi", v.hi}, {"samples", v.samples}});
    std::printf("surface intersection: %zu curve(s), %zu points, on both surfaces within %.3g; %s\n", r.curves.size(), points, residual,
                r.status.c_str());
    if (!r.overlaps.empty())
      std::printf("the surfaces coincide over %zu region(s) (boxes in u1, v1, u2, v2 under \"overlaps\")\n", r.overlaps.size());
    if (!a->picture.empty()) draw(a->picture, plot);
    return finish(out, r.status);
  }
  const SurfaceBisectorResult r = surface_bisector(s1, s2, resolution(1.0 / 16), o);
  nlohmann::json out = {{"status", r.status}, {"samples", nlohmann::json::array()}};
  for (const auto& b : r.samples) {
    out["samples"].push_back({{"u", b.u}, {"v", b.v}, {"s", b.s}, {"t", b.t}, {"point", b.point}});
    plot.dots.push_back({{b.point[0], b.point[1]}, kRed, 1.5});
  }
  out["overlaps"] = nlohmann::json::array();
  for (const auto& v : r.overlaps) out["overlaps"].push_back({{"lo", v.lo}, {"hi", v.hi}, {"samples", v.samples}});
  std::printf("surface bisector: %zu samples; %s\n", r.samples.size(), r.status.c_str());
  if (!r.overlaps.empty())
    std::printf("the surfaces coincide over %zu region(s), where every point on their normal is equidistant: no bisector "
                "surface there (boxes in u, v, s, t under \"overlaps\")\n", r.overlaps.size());
  if (!a->picture.empty()) draw(a->picture, plot);
  return finish(out, r.status);
}

// Contact points and regions of a surface moving against another.
void Solve::contacts() const {
  if (!a->picture.empty()) throw Error(ErrorKind::InvalidArgument, "--picture is not available for contacts (use -o and plot the JSON)");
  const BSplineSurface s1 = doc.surface("moving"), s2 = doc.surface("fixed");
  const Motion m = doc.motion("motion");
  const ContactResult r = contact_points(s1, s2, m, o);
  std::printf("%zu contact point(s) and %zu contact region(s) from %lld piece systems; %s\n", r.contacts.size(), r.regions.size(),
              (long long)r.combinations, r.status.c_str());
  nlohmann::json out = {{"status", r.status}, {"contacts", nlohmann::json::array()}};
  for (const auto& c : r.contacts) {
    std::printf("  t = %.15g at (%.9g, %.9g, %.9g): moving (%.9g, %.9g), fixed (%.9g, %.9g)%s\n", c.t, c.point[0], c.point[1], c.point[2], c.u1,
                c.v1, c.u2, c.v2, c.proved_single ? "" : " (tolerance cell)");
    out["contacts"].push_back({{"t", c.t}, {"point", c.point}, {"moving", {c.u1, c.v1}}, {"fixed", {c.u2, c.v2}}, {"residual", c.residual},
                               {"proved_single", c.proved_single}});
  }
  out["regions"] = nlohmann::json::array();
  for (const auto& g : r.regions) {
    std::printf("  t in [%.15g, %.15g]: in contact over a region, moving [%.9g, %.9g] x [%.9g, %.9g], fixed [%.9g, %.9g] x [%.9g, %.9g]\n",
                g.t0, g.t1, g.lo[0], g.hi[0], g.lo[1], g.hi[1], g.lo[2], g.hi[2], g.lo[3], g.hi[3]);
    out["regions"].push_back({{"t", {g.t0, g.t1}}, {"lo", g.lo}, {"hi", g.hi}});
  }
  return finish(out, r.status);
}

// Closed paths of a ray reflected between k curves.
void Solve::raytraps() const {
  const std::vector<BezierCurve2> curves = doc.bezier_curves("curves");
  const RayTrapResult r = ray_traps(curves, o);
  std::printf("%zu curves: %zu ray trap(s); %s\n", curves.size(), r.traps.size(), r.status.c_str());
  nlohmann::json out = {{"status", r.status}, {"traps", nlohmann::json::array()}};
  for (const auto& t : r.traps) {
    std::printf("  t =");
    for (double v : t.t) std::printf(" %.15g", v);
    std::printf("\n");
    out["traps"].push_back({{"t", t.t}, {"points", t.points}});
  }
  if (!a->picture.empty()) {
    Plot2D plot;
    for (std::size_t i = 0; i < curves.size(); ++i) plot.lines.push_back({sample_curve(curves[i]), kCurveColors[i % 4], 4.0});
    for (const auto& t : r.traps) {
      Plot2D::Line path{t.points, kRed, 1.8};
      path.points.push_back(t.points.front());
      plot.lines.push_back(path);
      for (const auto& p : t.points) plot.dots.push_back({p, kRed, 4});
    }
    draw(a->picture, plot);
  }
  return finish(out, r.status);
}

// A batch: {"pairs": [{"curve1": ..., "curve2": ...}, ...]} of Bezier curves, solved together.
void Solve::curve_batch() const {
  // A batch: {"pairs": [{"curve1": ..., "curve2": ...}, ...]} of Bézier curves, solved together.
  const std::vector<std::pair<BezierCurve2, BezierCurve2>> pairs = doc.bezier_pairs("pairs");
  if (!a->picture.empty()) throw Error(ErrorKind::InvalidArgument, "--picture is not available for a batch");
  const std::vector<CurveIntersectionResult> rs = intersect_curve_pairs(pairs, o);
  std::string status = "complete";
  std::size_t points = 0, overlaps = 0;
  nlohmann::json out = {{"results", nlohmann::json::array()}};
  for (const auto& r : rs) {
    if (r.status != "complete") status = r.status;
    points += r.points.size(), overlaps += r.overlaps.size();
    nlohmann::json one = {{"status", r.status}, {"intersections", nlohmann::json::array()}, {"overlaps", nlohmann::json::array()}};
    for (const auto& p : r.points) one["intersections"].push_back({{"s", p.s}, {"t", p.t}, {"point", p.point}, {"tangent", p.tangent}});
    for (const auto& v : r.overlaps) one["overlaps"].push_back({{"s", {v.s0, v.s1}}, {"t", {v.t0, v.t1}}});
    out["results"].push_back(std::move(one));
  }
  out["status"] = status;
  std::printf("%zu curve pairs: %zu intersection(s), %zu overlap(s); %s\n", pairs.size(), points, overlaps, status.c_str());
  report(out);
  stopped(a->input, status);
  return;
}

// The intersections of two planar curves (Bezier, or B-spline when either has knots).
void Solve::curves() const {
  const bool bspline = doc.is_bspline("curve1") || doc.is_bspline("curve2");
  const BSplineCurve2 b1 = doc.curve("curve1"), b2 = doc.curve("curve2");
  const CurveIntersectionResult r = bspline ? intersect_curves(b1, b2, o) : intersect_curves(BezierCurve2{b1.points}, BezierCurve2{b2.points}, o);
  std::printf("%s curves with %zu and %zu control points: %zu intersection(s), %zu overlap(s); %s\n", bspline ? "B-spline" : "Bezier",
              b1.points.size(), b2.points.size(), r.points.size(), r.overlaps.size(), r.status.c_str());
  nlohmann::json out = {{"status", r.status}, {"intersections", nlohmann::json::array()}, {"overlaps", nlohmann::json::array()}};
  for (const auto& p : r.points) {
    std::printf("  s = %.17g, t = %.17g at (%.17g, %.17g)%s\n", p.s, p.t, p.point[0], p.point[1], p.tangent ? " tangent" : "");
    out["intersections"].push_back({{"s", p.s}, {"t", p.t}, {"point", p.point}, {"tangent", p.tangent}});
  }
  for (const auto& v : r.overlaps) {
    std::printf("  overlap: s in [%.9g, %.9g], t in [%.9g, %.9g]\n", v.s0, v.s1, v.t0, v.t1);
    out["overlaps"].push_back({{"s", {v.s0, v.s1}}, {"t", {v.t0, v.t1}}});
  }
  report(out);
  if (!a->picture.empty()) {
    Plot2D plot;
    draw_bspline(plot, b1, kCurveColors[0]);
    draw_bspline(plot, b2, kCurveColors[1]);
    for (const auto& p : r.points) plot.dots.push_back({p.point, p.tangent ? std::array<float, 3>{0.95f, 0.6f, 0.1f} : kRed, 6});
    draw(a->picture, plot);
  }
  stopped(a->input, r.status);
}

}  // namespace

void add_solve(CLI::App& app) {
  auto a = std::make_shared<SolveArgs>();
  auto* cmd = app.add_subcommand("solve", "Polynomial systems by subdivision: geometric applications (curve intersection, "
                                          "Hausdorff distance, ray traps, bisectors, surface intersection, contact points, closest points, rays)");
  cmd->add_option("app", a->app,
                  "curves (intersection of two planar curves) | hausdorff (distance of two planar curves) | raytraps (k >= 3 "
                  "curves) | bisector (of two planar curves) | ssi (intersection of two surfaces) | contacts (a surface moving "
                  "by scale and translation against another) | surface-bisector (point samples) | closest (points projected onto a "
                  "patch model) | rays (where rays first meet a patch model)")
      ->required()
      ->check(CLI::IsMember({"curves", "hausdorff", "raytraps", "bisector", "ssi", "contacts", "surface-bisector", "closest", "rays"}));
  cmd->add_option("input", a->input,
                  "JSON. Curves: {\"points\": [[x, y], ...]} (+ \"degree\", \"knots\" for a B-spline). curves, hausdorff, "
                  "bisector: {\"curve1\": ..., \"curve2\": ...}; curves also {\"pairs\": [{\"curve1\": ..., \"curve2\": ...}, "
                  "...]}, Bezier pairs solved as one batch; raytraps: {\"curves\": [...]}. Surfaces as in the patch "
                  "reader's B-spline JSON; ssi, surface-bisector: {\"surface1\": ..., \"surface2\": ...}; contacts: "
                  "{\"moving\": ..., \"fixed\": ..., \"motion\": {\"degree\": 3, \"knots\": [...], \"points\": [[scale, tx, ty, tz], ...]}}; "
                  "closest: {\"points\": [[x, y, z], ...], \"model\": \"file.bpt\"} (no model: the Utah teapot); rays: "
                  "{\"origins\": [[x, y, z], ...], \"directions\": [...], \"t_min\": 0, \"model\": ...}")
      ->required();
  cmd->add_option("--picture", a->picture, "Also draw the curves and the result into this PNG (surfaces: seen from above)");
  cmd->add_option("--tolerance", a->tolerance, "Parameter width at which unresolved cells stop (tangent roots)");
  cmd->add_option("--resolution", a->resolution,
                  "Sampling cell width for solution curves and surfaces, as a fraction of a knot span (ssi 1/64, "
                  "bisector 1/128, surface-bisector 1/16 by default)");
  cmd->add_option("--max-seconds", a->max_seconds,
                  "Stop a solve after this many seconds with what it has found, marked partial (exit status 4)")
      ->check(CLI::Range(1e-3, 1e6));
  cmd->add_option("--max-cells", a->max_cells,
                  "Stop a solve after this many subdivision cells, marked partial (exit status 4)")
      ->check(CLI::Range(std::int64_t(1), std::int64_t(1) << 40));
  add_threads_option(cmd, a->threads);
  cmd->add_option("--device", a->device,
                  "Engine: cpu (default; fastest for one small problem), cuda (GPU-resident breadth first), hybrid (the "
                  "paper's CPU traversal with GPU subdivision), auto (cuda for batches of 2048 systems and more, and 128 per CPU "
                  "thread, when a device is present)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "hybrid"}));
  cmd->add_option("--cpu-scheme", a->cpu_scheme,
                  "CPU engine's scheme: tasks (default; the paper's lock-free task buffer, depth first per thread) or "
                  "levels (every cell of a level in parallel; for a batch, one system per thread)")
      ->check(CLI::IsMember({"tasks", "levels"}));
  cmd->add_option("--json,--output,-o", a->json, "Write the result as JSON to this file");
  cmd->callback([a] { naming_file(a->input, [&] {
    const auto started = std::chrono::steady_clock::now();
    if (a->resolution != 0 && !(a->resolution >= 1e-6 && a->resolution <= 1))
      throw Error(ErrorKind::InvalidArgument, "--resolution " + std::to_string(a->resolution) +
                                                  " is outside 1e-6..1 (a fraction of a knot span)");
    note_if_fifo(a->input);
    Solve run{a, SolverInput::read(a->input), {}, started};
    SolverOptions& o = run.o;
    o.tolerance = a->tolerance;
    o.threads = a->threads;
    o.max_seconds = a->max_seconds;
    o.max_nodes = a->max_cells;
    o.device = parse_device(a->device);
    o.cpu_scheme = a->cpu_scheme == "levels" ? SolverCpuScheme::Levels : SolverCpuScheme::TaskBuffer;
    // Long solves show their subdivision level on a terminal (the fraction is unknown: the bar fills by level).
    if (output_rank()) o.progress = [](int level, std::int64_t) { progress_bar("subdivision", std::min(0.99, level / 60.0)); };
    // Under mpirun the batches of piece systems are shared out; every rank ends with the whole result, rank 0 writes.
    o.team = mpi_solver_team();
    if (!output_rank()) a->json.clear(), a->picture.clear();
    struct ClearBar {
      ~ClearBar() { progress_bar("", 1.0); }
    } clear_bar;
    if (a->app == "hausdorff") return run.hausdorff();
    if (a->app == "bisector") return run.bisector();
    if (a->app == "ssi" || a->app == "surface-bisector") return run.surfaces();
    if (a->app == "contacts") return run.contacts();
    if (a->app == "raytraps") return run.raytraps();
    if (a->app == "closest") return run.closest();
    if (a->app == "rays") return run.rays();
    if (run.doc.has("pairs")) return run.curve_batch();
    run.curves();
  }); });
}

}  // namespace parasurf::cli
