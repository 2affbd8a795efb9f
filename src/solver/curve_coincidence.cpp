// Coincident arcs of two planar Bézier curves (see curve_coincidence.hpp).
#include "solver/curve_coincidence.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "parasurf/error.hpp"
#include "solver/curve_point.hpp"

namespace parasurf {

BezierCurve2 curve_piece(const BezierCurve2& c, double t0, double t1) {
  if (c.points.empty()) throw Error(ErrorKind::InvalidArgument, "curve_piece: the curve has no control points");
  if (!(t0 >= 0 && t0 <= 1 && t1 >= 0 && t1 <= 1))
    throw Error(ErrorKind::InvalidArgument, "curve_piece: the parameters " + std::to_string(t0) + " and " +
                                                std::to_string(t1) + " must lie in [0, 1]");
  const bool reversed = t0 > t1;
  if (reversed) std::swap(t0, t1);
  if (c.points.size() > 64) throw Error(ErrorKind::InvalidArgument, "curve_piece: more than 64 control points");
  // Split at t0 and keep the right part, then split that at the image of t1 and keep the left part.
  auto split = [](const std::vector<std::array<double, 2>>& p, double t, bool keep_right) {
    std::vector<std::array<double, 2>> part(p.size());
    solver::split_curve(p.data(), p.size(), t, keep_right ? nullptr : part.data(), keep_right ? part.data() : nullptr);
    return part;
  };
  std::vector<std::array<double, 2>> p = t0 > 0 ? split(c.points, t0, true) : c.points;
  if (t1 < 1) p = split(p, (t1 - t0) / (1 - t0), false);
  if (reversed) std::reverse(p.begin(), p.end());
  return {p};
}

}  // namespace parasurf

namespace parasurf::solver {
namespace {

using Point = std::array<double, 2>;

// Point and derivative at t without allocating (curves have at most 64 control points: check_curve).
Point point_and_tangent(const BezierCurve2& c, double t, Point& d) {
  std::array<Point, 64> w;
  const std::size_t n = c.points.size();
  std::copy(c.points.begin(), c.points.end(), w.begin());
  d = {0, 0};
  for (std::size_t r = 1; r < n; ++r) {
    if (r == n - 1)
      for (int k = 0; k < 2; ++k) d[k] = double(n - 1) * (w[1][k] - w[0][k]);
    for (std::size_t i = 0; i + r < n; ++i)
      for (int k = 0; k < 2; ++k) w[i][k] = (1 - t) * w[i][k] + t * w[i + 1][k];
  }
  return w[0];
}

// |q - p|: hypot's care for rounding is not needed here, only where the sum of squares overflows.
double distance(const Point& q, const Point& p) {
  const double dx = q[0] - p[0], dy = q[1] - p[1], s = dx * dx + dy * dy;
  return std::isfinite(s) ? std::sqrt(s) : std::hypot(dx, dy);
}

// The curve raised to `degree` (its degree or more).
std::vector<Point> raised(std::vector<Point> p, std::size_t degree) {
  while (p.size() < degree + 1) {
    const std::size_t n = p.size();  // degree n - 1 to n
    std::vector<Point> q(n + 1);
    q[0] = p[0], q[n] = p[n - 1];
    for (std::size_t i = 1; i < n; ++i)
      for (int k = 0; k < 2; ++k) q[i][k] = double(i) / double(n) * p[i - 1][k] + (1 - double(i) / double(n)) * p[i][k];
    p = std::move(q);
  }
  return p;
}

}  // namespace

// Only sub-arcs whose control points' box (grown by eps) holds p can pass there (a Bézier arc lies in its control
// points' hull): halving them keeps the one or two arcs around each pass of the curve near p and drops the rest
// within a few levels, which for the usual pair (p nowhere on c) ends the search before any Newton step. Each arc
// left small is a start for Newton on the distance's derivative (quadratic where the distance is zero); a curve with
// a loop comes near p twice, and the nearest pass wins. Every pair of curves asks this for each of the four ends.
double parameter_on(const BezierCurve2& c, const Point& p, double eps) {
  const std::size_t n = c.points.size();
  auto holds = [&](const Point* q) {
    for (int k = 0; k < 2; ++k) {
      double lo = q[0][k], hi = q[0][k];
      for (std::size_t i = 1; i < n; ++i) lo = std::min(lo, q[i][k]), hi = std::max(hi, q[i][k]);
      if (p[k] < lo - eps || p[k] > hi + eps) return false;
    }
    return true;
  };
  auto extent = [&](const Point* q) {
    double e = 0;
    for (int k = 0; k < 2; ++k) {
      double lo = q[0][k], hi = q[0][k];
      for (std::size_t i = 1; i < n; ++i) lo = std::min(lo, q[i][k]), hi = std::max(hi, q[i][k]);
      e = std::max(e, hi - lo);
    }
    return e;
  };
  if (!holds(c.points.data())) return NAN;
  // Arcs are kept small enough for Newton's basin (a thousandth of the curve's extent, or 2^-14 of its parameter);
  // the depth-first stack holds at most one sibling per level.
  constexpr int kDepth = 14, kMaxStarts = 32;
  const double small = 1e-3 * extent(c.points.data());
  struct Arc {
    std::array<Point, 64> q;
    double u0, u1;
    int depth;
  };
  std::array<Arc, kDepth + 2> stack;
  int top = 0;
  std::copy(c.points.begin(), c.points.end(), stack[0].q.begin());
  stack[0].u0 = 0, stack[0].u1 = 1, stack[0].depth = 0;
  ++top;
  std::array<double, kMaxStarts> starts;
  int found = 0;
  while (top > 0 && found < kMaxStarts) {
    Arc& arc = stack[std::size_t(--top)];
    if (arc.depth >= kDepth || extent(arc.q.data()) <= small) {
      starts[std::size_t(found++)] = 0.5 * (arc.u0 + arc.u1);
      continue;
    }
    // Halve in place: the left half stays in this slot, the right half goes above it.
    Arc& right = stack[std::size_t(top + 1)];
    std::array<Point, 64> w;
    std::copy_n(arc.q.begin(), n, w.begin());
    const double mid = 0.5 * (arc.u0 + arc.u1);
    right.q[n - 1] = w[n - 1];
    for (std::size_t r = 1; r < n; ++r) {
      for (std::size_t i = 0; i + r < n; ++i)
        for (int k = 0; k < 2; ++k) w[i][k] = 0.5 * (w[i][k] + w[i + 1][k]);
      arc.q[r] = w[0];
      right.q[n - 1 - r] = w[n - 1 - r];
    }
    right.u0 = mid, right.u1 = arc.u1, right.depth = arc.depth + 1;
    arc.u1 = mid, arc.depth += 1;
    const bool keep_left = holds(arc.q.data()), keep_right = holds(right.q.data());
    if (keep_left) ++top;
    if (keep_right) {
      if (!keep_left)
        std::copy_n(right.q.begin(), n, arc.q.begin()), arc.u0 = right.u0, arc.u1 = right.u1, arc.depth = right.depth;
      ++top;
    }
  }
  Point d;
  double best = NAN, best_d = eps;
  for (int i = 0; i < found; ++i) {
    double u = starts[std::size_t(i)];
    for (int it = 0; it < 30; ++it) {
      const Point q = point_and_tangent(c, u, d);
      const double dd = d[0] * d[0] + d[1] * d[1];
      if (!(dd > 0)) break;
      const double step = (d[0] * (q[0] - p[0]) + d[1] * (q[1] - p[1])) / dd;
      const double miss = distance(q, p);
      if (miss > eps && miss > 100 * std::sqrt(dd) * std::abs(step)) break;  // near a closest point that is not p
      const double next = std::clamp(u - step, 0.0, 1.0);
      if (next == u || std::abs(step) < 1e-15) break;  // converged, or held at an end of the curve
      u = next;
    }
    const Point q = point_and_tangent(c, u, d);
    if (const double e = distance(q, p); e <= best_d) best = u, best_d = e;
  }
  return best;
}

std::optional<CurveOverlap> coincident_arcs(const BezierCurve2& a, const BezierCurve2& b) {
  double lo[2] = {1e300, 1e300}, hi[2] = {-1e300, -1e300};
  for (const BezierCurve2* c : {&a, &b})
    for (const auto& p : c->points)
      for (int k = 0; k < 2; ++k) lo[k] = std::min(lo[k], p[k]), hi[k] = std::max(hi[k], p[k]);
  const double size = std::hypot(hi[0] - lo[0], hi[1] - lo[1]);
  if (!(size > 0)) return std::nullopt;
  const double eps = 1e-9 * size;
  // (s, t) pairs at which the curves meet at an end of one of them.
  std::array<std::array<double, 2>, 4> meet;
  int found = 0;
  for (double t_end : {0.0, 1.0})
    if (const double s = parameter_on(a, b.points[t_end == 0 ? 0 : b.points.size() - 1], eps); !std::isnan(s))
      meet[std::size_t(found++)] = {s, t_end};
  for (double s_end : {0.0, 1.0}) {
    if (s_end == 1 && found == 0) return std::nullopt;  // an arc has two ends, each an end of a curve
    if (const double t = parameter_on(b, a.points[s_end == 0 ? 0 : a.points.size() - 1], eps); !std::isnan(t))
      meet[std::size_t(found++)] = {s_end, t};
  }
  constexpr double kShortest = 1e-6;  // in both parameters: shorter shared arcs are points
  const std::size_t degree = std::max(a.points.size(), b.points.size()) - 1;
  for (int i = 0; i < found; ++i)
    for (int j = i + 1; j < found; ++j) {
      const double ds = meet[j][0] - meet[i][0], dt = meet[j][1] - meet[i][1];
      if (std::abs(ds) < kShortest || std::abs(dt) < kShortest) continue;
      // t = alpha s + beta, over the s where both parameters lie in [0, 1].
      const double alpha = dt / ds, beta = meet[i][1] - alpha * meet[i][0];
      // (An end that is a curve's end stays exactly 0 or 1, not a rounding away from it.)
      auto snap = [](double x) { return x < 1e-14 ? 0.0 : x > 1 - 1e-14 ? 1.0 : x; };
      double s0 = snap(std::max(0.0, std::min(-beta / alpha, (1 - beta) / alpha)));
      double s1 = snap(std::min(1.0, std::max(-beta / alpha, (1 - beta) / alpha)));
      if (!(s1 - s0 >= kShortest)) continue;
      const double t_at_s0 = snap(std::clamp(alpha * s0 + beta, 0.0, 1.0)),
                   t_at_s1 = snap(std::clamp(alpha * s1 + beta, 0.0, 1.0));
      const std::vector<Point> pa = raised(curve_piece(a, s0, s1).points, degree);
      const std::vector<Point> pb = raised(curve_piece(b, t_at_s0, t_at_s1).points, degree);
      bool same = true;
      for (std::size_t k = 0; k < pa.size() && same; ++k)
        same = std::hypot(pa[k][0] - pb[k][0], pa[k][1] - pb[k][1]) <= eps;
      if (same) return CurveOverlap{s0, s1, std::min(t_at_s0, t_at_s1), std::max(t_at_s0, t_at_s1)};
    }
  return std::nullopt;
}

}  // namespace parasurf::solver
