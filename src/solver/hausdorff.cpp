// Hausdorff distance between two planar B-spline curves by the subdivision solver, after Elber & Grandine, "An
// efficient solution to systems of multivariate polynomial using expression trees" (IEEE TVCG 15(4), 2009) and
// Park et al. (CAD 43, 2011, section 6.1). The one-sided distance from A to B, max_t min_r |A(t) - B(r)|, is taken
// at an end of A, where the closest point is unique and the pair is antipodal (both tangents perpendicular to the
// chord), or where A(t) crosses the self-bisector of B (two closest points). Each case is a polynomial system in
// Bernstein form; the bisector equation has the trivial factor (r - s) divided out exactly. Every candidate t is
// then measured by an exact closest-point search, so the answer is a true closest-point pair.
#include <algorithm>
#include <cmath>
#include <exception>
#include <mutex>
#include <omp.h>

#include "core/kept_threads.hpp"
#include "core/region_errors.hpp"
#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"
#include "solver/curve_point.hpp"
#include "solver/engine.hpp"

namespace parasurf {

namespace {

using Vec2 = std::array<double, 2>;

struct Piece {
  BezierCurve2 curve;
  double u0 = 0, u1 = 1;
  Vec2 lo{}, hi{};  // bounding box of the control points (holds the piece)
  std::vector<double> x, y, sq, dot_dd;  // coordinates, |C|^2 and <C, C'> as Bernstein coefficients
};

std::vector<double> product_coef(const std::vector<double>& a, const std::vector<double>& b) {
  return (BernsteinPoly::univariate(a, 0, 1) * BernsteinPoly::univariate(b, 0, 1)).coef;
}
std::vector<double> sum_coef(const std::vector<double>& a, const std::vector<double>& b) {
  return (BernsteinPoly::univariate(a, 0, 1) + BernsteinPoly::univariate(b, 0, 1)).coef;
}
std::vector<double> derivative_coef(const std::vector<double>& a) {
  if (a.size() < 2) return {0.0};
  std::vector<double> d(a.size() - 1);
  for (std::size_t i = 0; i + 1 < a.size(); ++i) d[i] = double(a.size() - 1) * (a[i + 1] - a[i]);
  return d;
}

std::vector<Piece> make_pieces(const BSplineCurve2& c) {
  std::vector<Piece> out;
  for (const auto& bp : bspline_to_bezier(c)) {
    Piece p;
    p.curve = bp.curve;
    p.u0 = bp.u0;
    p.u1 = bp.u1;
    p.lo = p.hi = bp.curve.points[0];
    for (const auto& q : bp.curve.points) {
      p.x.push_back(q[0]);
      p.y.push_back(q[1]);
      for (int k = 0; k < 2; ++k) p.lo[k] = std::min(p.lo[k], q[k]), p.hi[k] = std::max(p.hi[k], q[k]);
    }
    p.sq = sum_coef(product_coef(p.x, p.x), product_coef(p.y, p.y));
    p.dot_dd = sum_coef(product_coef(p.x, derivative_coef(p.x)), product_coef(p.y, derivative_coef(p.y)));
    out.push_back(std::move(p));
  }
  return out;
}

Vec2 point_at(const BezierCurve2& c, double t, Vec2* tangent = nullptr) { return solver::curve_point(c, t, tangent); }

double box_distance(const Vec2& p, const Vec2& lo, const Vec2& hi) {
  const double dx = std::max({lo[0] - p[0], 0.0, p[0] - hi[0]}), dy = std::max({lo[1] - p[1], 0.0, p[1] - hi[1]});
  return std::hypot(dx, dy);
}
double box_box_distance(const Piece& a, const Piece& b) {
  const double dx = std::max({b.lo[0] - a.hi[0], 0.0, a.lo[0] - b.hi[0]}), dy = std::max({b.lo[1] - a.hi[1], 0.0, a.lo[1] - b.hi[1]});
  return std::hypot(dx, dy);
}
double box_box_farthest(const Piece& a, const Piece& b) {  // the largest distance between points of the two boxes
  const double dx = std::max(std::abs(a.hi[0] - b.lo[0]), std::abs(b.hi[0] - a.lo[0]));
  const double dy = std::max(std::abs(a.hi[1] - b.lo[1]), std::abs(b.hi[1] - a.lo[1]));
  return std::hypot(dx, dy);
}
double box_farthest(const Piece& a, const Vec2& p) {  // the farthest point of a's box from p is a corner
  const double dx = std::max(std::abs(a.lo[0] - p[0]), std::abs(a.hi[0] - p[0]));
  const double dy = std::max(std::abs(a.lo[1] - p[1]), std::abs(a.hi[1] - p[1]));
  return std::hypot(dx, dy);
}

// A point where a closest point of B may sit without the chord being perpendicular to B: B's ends and its corners
// (interior knots where the tangent turns).
struct Kink {
  Vec2 point;
  double u;
  int piece_before = -1, piece_after = -1;  // pieces that end / start there
};
std::vector<Kink> kinks_of(const std::vector<Piece>& pieces) {
  std::vector<Kink> out;
  out.push_back({pieces.front().curve.points.front(), pieces.front().u0, -1, 0});
  for (std::size_t i = 0; i + 1 < pieces.size(); ++i) {
    Vec2 t0{}, t1{};
    point_at(pieces[i].curve, 1.0, nullptr);
    const auto& a = pieces[i].curve.points;
    const auto& b = pieces[i + 1].curve.points;
    t0 = {a[a.size() - 1][0] - a[a.size() - 2][0], a[a.size() - 1][1] - a[a.size() - 2][1]};
    t1 = {b[1][0] - b[0][0], b[1][1] - b[0][1]};
    const double cross = t0[0] * t1[1] - t0[1] * t1[0], dot = t0[0] * t1[0] + t0[1] * t1[1];
    const double scale = std::hypot(t0[0], t0[1]) * std::hypot(t1[0], t1[1]);
    if (!(std::abs(cross) <= 1e-12 * scale && dot > 0)) out.push_back({b[0], pieces[i + 1].u0, int(i), int(i + 1)});
  }
  out.push_back({pieces.back().curve.points.back(), pieces.back().u1, int(pieces.size()) - 1, -1});
  return out;
}

struct Closest {
  double distance = 1e300;
  double u = 0;  // parameter on the curve
  Vec2 point{};
};

// The closest point of the curve to p: piece ends and the interior roots of <p - B(r), B'(r)> = 0.
Closest closest_point(const std::vector<Piece>& pieces, const Vec2& p, const SolverOptions& o) {
  Closest best;
  auto consider = [&](const Piece& pc, double r) {
    const Vec2 q = point_at(pc.curve, r);
    const double d = std::hypot(q[0] - p[0], q[1] - p[1]);
    if (d < best.distance) best = {d, pc.u0 + r * (pc.u1 - pc.u0), q};
  };
  std::vector<std::size_t> order(pieces.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<double> near(pieces.size());
  for (std::size_t i = 0; i < pieces.size(); ++i) near[i] = box_distance(p, pieces[i].lo, pieces[i].hi);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return near[a] < near[b]; });
  SolverOptions one = o;
  one.threads = 1;
  one.progress = nullptr;
  one.device = Device::Cpu;  // tiny univariate systems
  for (std::size_t i : order) {
    const Piece& pc = pieces[i];
    if (near[i] > best.distance) break;
    consider(pc, 0.0);
    consider(pc, 1.0);
    // <p - B(r), B'(r)> = p.B' - <B, B'>
    const BernsteinPoly e = p[0] * BernsteinPoly::univariate(derivative_coef(pc.x), 0, 1) +
                            p[1] * BernsteinPoly::univariate(derivative_coef(pc.y), 0, 1) - BernsteinPoly::univariate(pc.dot_dd, 0, 1);
    for (const auto& root : solve_system({e}, one).roots) consider(pc, root.x[0]);
  }
  return best;
}

// Variables of the systems: t (on A) first, then r and s (on B).
BernsteinPoly coord(const std::vector<double>& c, int var, int vars) { return BernsteinPoly::univariate(c, var, vars); }
BernsteinPoly dcoord(const std::vector<double>& c, int var, int vars) { return BernsteinPoly::univariate(derivative_coef(c), var, vars); }

// phi''(r) / 2 for phi(r) = |A(t) - B(r)|^2: |B'|^2 - <A - B, B''>, positive where B(r) is a local closest point
// (a foot where it is negative is a farthest point, and near the fold where the two meet the bisector equations
// nearly vanish without a root: this inequality is what lets the solver discard those cells).
BernsteinPoly convexity(const Piece& pa, const Piece& pb, int var_t, int var_r, int vars) {
  const std::vector<double> bx1 = derivative_coef(pb.x), by1 = derivative_coef(pb.y), bx2 = derivative_coef(bx1), by2 = derivative_coef(by1);
  const BernsteinPoly bx = coord(pb.x, var_r, vars), by = coord(pb.y, var_r, vars);
  const BernsteinPoly dx = coord(bx1, var_r, vars), dy = coord(by1, var_r, vars), ddx = coord(bx2, var_r, vars), ddy = coord(by2, var_r, vars);
  return dx * dx + dy * dy - (coord(pa.x, var_t, vars) - bx) * ddx - (coord(pa.y, var_t, vars) - by) * ddy;
}

struct Task {
  std::vector<BernsteinPoly> eq;
  int a = 0;  // piece of A whose parameter is variable 0
  std::vector<BernsteinPoly> positive;
};

// All candidate parameters t (global, on A) where the one-sided distance from A to B can be largest.
// One function: the bounds, the pairs of pieces, the systems and the exact measurement share the pieces' forms.
// gpu: held while a batch runs on the GPU, when the other direction runs beside this one.
HausdorffPair one_sided(const std::vector<Piece>& A, const std::vector<Piece>& B, const SolverOptions& o, std::int64_t& candidates,
                        std::string& status, std::mutex* gpu = nullptr) {
  const std::size_t na = A.size(), nb = B.size();
  const std::vector<Kink> kinks = kinks_of(B);
  // Upper bound of min_r |A(t) - B(r)| over a piece of A: the farthest corner of its box from the nearest point of B
  // known to be on the curve (a piece end).
  std::vector<double> upper(na, 1e300);
  for (std::size_t a = 0; a < na; ++a)
    for (const auto& pb : B)
      for (const Vec2& q : {pb.curve.points.front(), pb.curve.points.back()}) upper[a] = std::min(upper[a], box_farthest(A[a], q));
  // A lower bound of the answer, from A's piece ends.
  const int threads = cpu_thread_count(o.threads);
  std::vector<double> ends;
  for (const auto& pa : A) ends.push_back(pa.u0);
  ends.push_back(A.back().u1);
  std::vector<Closest> end_closest(ends.size());
  core::RegionErrors errors_0;
  // (Loops over a few items stay on the calling thread: waking the others costs more than a small solve, and on
  // a loaded machine milliseconds.)
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && ends.size() >= 8)
  for (std::int64_t i = 0; i < std::int64_t(ends.size()); ++i) {
    errors_0.capture([&] {
      const std::size_t piece = std::min(std::size_t(i), na - 1);
      const Vec2 p = point_at(A[piece].curve, std::size_t(i) < na ? 0.0 : 1.0);
      end_closest[std::size_t(i)] = closest_point(B, p, o);
    });
  }
  errors_0.rethrow();
  double known = 0;
  for (const auto& c : end_closest) known = std::max(known, c.distance);
  // Pairs (piece of A, piece of B) where B can hold a closest point of some A(t).
  std::vector<std::vector<int>> relevant(na);
  for (std::size_t a = 0; a < na; ++a) {
    if (upper[a] < known * (1 - 1e-12)) continue;  // this piece cannot hold a larger distance
    // b may hold a closest point of some A(t) (its box is near enough), and that point may lie at least `known`
    // away (its box is not wholly within `known` of a's: nearer pairs cannot raise the maximum).
    for (std::size_t b = 0; b < nb; ++b)
      if (box_box_distance(A[a], B[b]) <= upper[a] && box_box_farthest(A[a], B[b]) >= known * (1 - 1e-12)) relevant[a].push_back(int(b));
  }
  // What to build, listed first, then built in parallel: products of Bernstein forms are most of the set-up.
  enum class Kind { Antipodal, KinkAntipodal, TwoKinks, InteriorAndKink, TwoInterior };
  struct Recipe {
    Kind kind;
    int a, b = -1, c = -1;  // pieces of A and B (c: a second piece of B, or a kink)
    std::size_t k1 = 0, k2 = 0;
  };
  std::vector<Recipe> recipes;
  for (std::size_t a = 0; a < na; ++a) {
    if (relevant[a].empty()) continue;
    for (int b : relevant[a]) recipes.push_back({Kind::Antipodal, int(a), b});
    for (std::size_t k = 0; k < kinks.size(); ++k) recipes.push_back({Kind::KinkAntipodal, int(a), -1, -1, k});
    for (std::size_t i = 0; i < kinks.size(); ++i)
      for (std::size_t j = i + 1; j < kinks.size(); ++j) recipes.push_back({Kind::TwoKinks, int(a), -1, -1, i, j});
    for (int b : relevant[a]) {
      for (std::size_t k = 0; k < kinks.size(); ++k) recipes.push_back({Kind::InteriorAndKink, int(a), b, -1, k});
      for (int b2 : relevant[a])
        if (b2 >= b) recipes.push_back({Kind::TwoInterior, int(a), b, b2});
    }
  }
  auto build = [&](const Recipe& rc) -> Task {
    const Piece& pa = A[std::size_t(rc.a)];
    switch (rc.kind) {
      case Kind::Antipodal: {  // <A - B, A'> = <A - B, B'> = 0, in (t, r)
        const Piece& pb = B[std::size_t(rc.b)];
        const BernsteinPoly dx = coord(pa.x, 0, 2) - coord(pb.x, 1, 2), dy = coord(pa.y, 0, 2) - coord(pb.y, 1, 2);
        return {{dx * dcoord(pa.x, 0, 2) + dy * dcoord(pa.y, 0, 2), dx * dcoord(pb.x, 1, 2) + dy * dcoord(pb.y, 1, 2)}, rc.a,
                {convexity(pa, pb, 0, 1, 2)}};
      }
      case Kind::KinkAntipodal: {  // antipodal to a kink of B: <A - K, A'> = 0, in t
        const auto& k = kinks[rc.k1];
        const BernsteinPoly e = (coord(pa.x, 0, 1) - BernsteinPoly::constant(1, k.point[0])) * dcoord(pa.x, 0, 1) +
                                (coord(pa.y, 0, 1) - BernsteinPoly::constant(1, k.point[1])) * dcoord(pa.y, 0, 1);
        return {{e}, rc.a, {}};
      }
      case Kind::TwoKinks: {  // two kinks equally far: |A - K1|^2 - |A - K2|^2 = 0, in t
        const auto &k1 = kinks[rc.k1].point, &k2 = kinks[rc.k2].point;
        const BernsteinPoly e = -2.0 * ((k1[0] - k2[0]) * coord(pa.x, 0, 1) + (k1[1] - k2[1]) * coord(pa.y, 0, 1)) +
                                BernsteinPoly::constant(1, k1[0] * k1[0] + k1[1] * k1[1] - k2[0] * k2[0] - k2[1] * k2[1]);
        return {{e}, rc.a, {}};
      }
      case Kind::InteriorAndKink: {
        // One closest point interior to piece b, the other at a kink K: |A - B(r)|^2 - |A - K|^2 = 0 (divided by
        // (r - e) when K is the end e of piece b itself) and the foot condition, in (t, r).
        const Piece& pb = B[std::size_t(rc.b)];
        const auto& k = kinks[rc.k1];
        const BernsteinPoly foot = (coord(pa.x, 0, 2) - coord(pb.x, 1, 2)) * dcoord(pb.x, 1, 2) + (coord(pa.y, 0, 2) - coord(pb.y, 1, 2)) * dcoord(pb.y, 1, 2);
        BernsteinPoly e;
        const int end = k.piece_after == rc.b ? 0 : (k.piece_before == rc.b ? 1 : -1);
        if (end >= 0) {
          e = BernsteinPoly::univariate(divided_difference_at_end(pb.sq, end, 1, 2).coef, 1, 2) -
              2.0 * (coord(pa.x, 0, 2) * divided_difference_at_end(pb.x, end, 1, 2) + coord(pa.y, 0, 2) * divided_difference_at_end(pb.y, end, 1, 2));
        } else {
          const double ksq = k.point[0] * k.point[0] + k.point[1] * k.point[1];
          e = coord(pb.sq, 1, 2) - BernsteinPoly::constant(2, ksq) -
              2.0 * (coord(pa.x, 0, 2) * (coord(pb.x, 1, 2) - BernsteinPoly::constant(2, k.point[0])) +
                     coord(pa.y, 0, 2) * (coord(pb.y, 1, 2) - BernsteinPoly::constant(2, k.point[1])));
        }
        return {{e, foot}, rc.a, {convexity(pa, pb, 0, 1, 2)}};
      }
      case Kind::TwoInterior: {  // two interior closest points (the self-bisector of B), in (t, r, s)
        const Piece &pb = B[std::size_t(rc.b)], &pc = B[std::size_t(rc.c)];
        const BernsteinPoly ax = coord(pa.x, 0, 3), ay = coord(pa.y, 0, 3);
        BernsteinPoly e1, e3;
        if (rc.c == rc.b) {  // same piece: (|A - B(r)|^2 - |A - B(s)|^2) / (r - s), and the foot difference / (r - s)
          e1 = divided_difference(pb.sq, 1, 2, 3) - 2.0 * (ax * divided_difference(pb.x, 1, 2, 3) + ay * divided_difference(pb.y, 1, 2, 3));
          e3 = ax * divided_difference(derivative_coef(pb.x), 1, 2, 3) + ay * divided_difference(derivative_coef(pb.y), 1, 2, 3) -
               divided_difference(pb.dot_dd, 1, 2, 3);
        } else {
          e1 = coord(pb.sq, 1, 3) - coord(pc.sq, 2, 3) - 2.0 * (ax * (coord(pb.x, 1, 3) - coord(pc.x, 2, 3)) + ay * (coord(pb.y, 1, 3) - coord(pc.y, 2, 3)));
          e3 = (ax - coord(pc.x, 2, 3)) * dcoord(pc.x, 2, 3) + (ay - coord(pc.y, 2, 3)) * dcoord(pc.y, 2, 3);
        }
        const BernsteinPoly e2 = (ax - coord(pb.x, 1, 3)) * dcoord(pb.x, 1, 3) + (ay - coord(pb.y, 1, 3)) * dcoord(pb.y, 1, 3);
        // On one piece, r < s (the pair is unordered) and r = s is no pair: the divided system degenerates on the
        // diagonal (there it reduces to the foot condition and its derivative), so the diagonal's neighbourhood
        // of width 1e-6 is left out; two closest points that close give no kink in the distance.
        std::vector<BernsteinPoly> order{convexity(pa, pb, 0, 1, 3), convexity(pa, pc, 0, 2, 3)};
        if (rc.c == rc.b)
          order.push_back(BernsteinPoly::univariate({0.0, 1.0}, 2, 3) - BernsteinPoly::univariate({0.0, 1.0}, 1, 3) - BernsteinPoly::constant(3, 1e-6));
        return {{e1, e2, e3}, rc.a, order};
      }
    }
    return {};
  };
  std::vector<Task> tasks(recipes.size());
  core::RegionErrors errors_s0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && recipes.size() >= 8)
  for (std::int64_t i = 0; i < std::int64_t(recipes.size()); ++i)
    errors_s0.capture([&] { tasks[std::size_t(i)] = build(recipes[std::size_t(i)]); });
  errors_s0.rethrow();
  // Solve every system (the CPU engine runs them in parallel, the GPU engines in one traversal per shape), then
  // measure every candidate exactly.
  std::vector<std::vector<BernsteinPoly>> eqs, ineqs;
  for (const auto& task : tasks) eqs.push_back(task.eq), ineqs.push_back(task.positive);
  SolverOptions quiet = o;
  quiet.progress = nullptr;
  std::unique_lock<std::mutex> on_gpu;
  if (gpu && solver::engine_for(quiet, eqs.size()) != Device::Cpu) on_gpu = std::unique_lock<std::mutex>(*gpu);
  const std::vector<SolveResult> results = solve_systems(eqs, quiet, ineqs);
  if (on_gpu) on_gpu.unlock();  // the measurements below are CPU work
  std::vector<std::vector<double>> found(tasks.size());
  std::vector<std::string> task_status(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const SolveResult& r = results[i];
    task_status[i] = r.status;
    for (const auto& root : r.roots) found[i].push_back(root.x[0]);
    // A continuum (e.g. a piece of A lying on B's self-bisector): its ends and middle stand for it.
    for (const auto& reg : r.regions)
      for (double t : {reg.lo[0], 0.5 * (reg.lo[0] + reg.hi[0]), reg.hi[0]}) found[i].push_back(t);
  }
  std::vector<std::pair<int, double>> cand;  // (piece of A, local t)
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (task_status[i] != "complete") status = task_status[i];
    for (double t : found[i]) cand.emplace_back(tasks[i].a, t);
  }
  std::sort(cand.begin(), cand.end());
  cand.erase(std::unique(cand.begin(), cand.end(), [](const auto& l, const auto& r) { return l.first == r.first && std::abs(l.second - r.second) < 1e-13; }), cand.end());
  candidates += std::int64_t(cand.size());
  std::vector<Closest> measured(cand.size());
  core::RegionErrors errors_1;
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads) if (threads > 1 && cand.size() >= 16)
  for (std::int64_t i = 0; i < std::int64_t(cand.size()); ++i) {
    errors_1.capture([&] {
      const auto& [a, t] = cand[std::size_t(i)];
      measured[std::size_t(i)] = closest_point(B, point_at(A[std::size_t(a)].curve, t), o);
    });
  }
  errors_1.rethrow();
  HausdorffPair best;
  best.distance = -1;
  auto take = [&](const Piece& pa, double t, const Closest& c) {
    if (c.distance > best.distance) {
      best.distance = c.distance;
      best.t = pa.u0 + t * (pa.u1 - pa.u0);
      best.r = c.u;
      best.from = point_at(pa.curve, t);
      best.to = c.point;
    }
  };
  for (std::size_t i = 0; i < ends.size(); ++i) {
    const std::size_t piece = std::min(i, na - 1);
    take(A[piece], i < na ? 0.0 : 1.0, end_closest[i]);
  }
  for (std::size_t i = 0; i < cand.size(); ++i) take(A[std::size_t(cand[i].first)], cand[i].second, measured[i]);
  return best;
}

}  // namespace

HausdorffResult hausdorff_distance(const BSplineCurve2& a, const BSplineCurve2& b, const SolverOptions& options) {
  const std::vector<Piece> pa = make_pieces(a), pb = make_pieces(b);
  HausdorffResult out;
  const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  // The directions run side by side on the CPU engines; under `auto` a direction's batch may go to the GPU (from
  // 2048 systems on), one direction's at a time.
  const bool side_by_side = (options.device == Device::Cpu || options.device == Device::Auto) && !options.team && threads >= 4;
  if (!side_by_side) {
    out.a_to_b = one_sided(pa, pb, options, out.candidates, out.status);
    out.b_to_a = one_sided(pb, pa, options, out.candidates, out.status);
  } else {
    // The two directions are independent and each is a chain of short parallel phases: run side by side, each
    // on half the threads (a second thread leads its own OpenMP team), the longer chain sets the time.
    SolverOptions first = options, second = options;
    first.threads = threads / 2;
    second.threads = threads - threads / 2;
    std::int64_t candidates = 0;
    std::string status = "complete";
    std::exception_ptr failure;
    std::mutex gpu;
    // On a kept thread: a thread made for each call would make its OpenMP team anew every time.
    core::KeptJob other([&] {
      try {
        out.b_to_a = one_sided(pb, pa, second, candidates, status, &gpu);
      } catch (...) {
        failure = std::current_exception();
      }
    });
    try {
      out.a_to_b = one_sided(pa, pb, first, out.candidates, out.status, &gpu);
    } catch (...) {
      other.wait();
      throw;
    }
    other.wait();
    if (failure) std::rethrow_exception(failure);
    out.candidates += candidates;
    if (status != "complete") out.status = status;
  }
  out.distance = std::max(out.a_to_b.distance, out.b_to_a.distance);
  return out;
}

HausdorffResult hausdorff_distance(const BezierCurve2& a, const BezierCurve2& b, const SolverOptions& options) {
  auto as_bspline = [](const BezierCurve2& c) { return BSplineCurve2{int(c.points.size()) - 1, bezier_knots(int(c.points.size()) - 1), c.points}; };
  return hausdorff_distance(as_bspline(a), as_bspline(b), options);
}

}  // namespace parasurf
