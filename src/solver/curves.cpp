// Intersection of two planar Bézier curves as the system C1(s) - C2(t) = 0 in (s, t) ∈ [0,1]², built exactly in
// Bernstein form (each coordinate promoted to the two variables) and solved by subdivision.
#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include "core/region_errors.hpp"
#include "core/release.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"
#include "solver/curve_coincidence.hpp"
#include "solver/curve_point.hpp"
#include "solver/engine.hpp"

namespace parasurf {

namespace {
std::vector<double> coordinate(const BezierCurve2& c, int k) {
  std::vector<double> v;
  for (const auto& p : c.points) v.push_back(p[k]);
  return v;
}
std::array<double, 2> point_at(const BezierCurve2& c, double t, std::array<double, 2>* tangent) {
  return solver::curve_point(c, t, tangent);
}
// A curve's control points, as a BezierCurve2 holds them or as packed arrays do.
using Points2 = std::span<const std::array<double, 2>>;
bool count_ok(std::int64_t count) { return count >= 2 && count <= 64; }
bool points_finite(Points2 p) {
  for (const auto& q : p)
    if (!std::isfinite(q[0]) || !std::isfinite(q[1])) return false;
  return true;
}
bool curve_ok(const BezierCurve2& c) { return count_ok(std::int64_t(c.points.size())) && points_finite(c.points); }

// Throws the error of a curve that is not curve_ok, named `what` ("curve 1", "pair 3, curve 2"); `count` is the
// number of points claimed (a packed count may lie outside the range before any points are taken for it).
void check_curve(std::int64_t count, Points2 p, const std::string& what) {
  if (!count_ok(count))
    throw Error(ErrorKind::InvalidArgument, what + ": needs 2..64 control points (got " + std::to_string(count) + ")");
  if (!points_finite(p)) throw Error(ErrorKind::InvalidArgument, what + ": a control point is not finite");
}
void check_curve(const BezierCurve2& c, const char* which) {
  check_curve(std::int64_t(c.points.size()), c.points, std::string("curve ") + which);
}
}  // namespace

namespace {
// x(s) - y(t) = 0 in (s, t): two equations of bidegree (deg a, deg b). A coordinate of a(s) is constant along t, so
// its tensor coefficients repeat along t (and b's along s): each coefficient is a difference of control points,
// exact, with no degree elevation (which cost more than the rest of a pair's preparation).
// Each curve's domain grows by kGrow at both ends for the solve: a curve that ends on the other one (a T-junction
// of a drawing, curves joined end to end) meets it at the edge of the parameter box, where the rounding of the
// control points puts the exact root of the stored equations inside or just outside the box, so that it was found
// or missed by chance (one random T-junction in nine was missed). Roots found beyond an end are clamped onto it and
// kept when the curves meet there within kEndGap of their size. (A binary fraction: x (1 + 2 g) - g rounds once.)
constexpr double kGrow = 1.0 / (1 << 30);
constexpr double kEndGap = 1e-10;
constexpr double kSnap = 1e-12;  // a root this near an end is put on it when the curves meet there
// The solve keeps cells where both coordinates' differences may stay within this, in the equations' unit, which
// crossing_equations makes the rounding of the pair's coordinates: curves tangent to within that rounding (which
// parts a tangency far from the origin: 1e-13 at a thousand units) are then a tangent cluster, not a miss, and
// are met where they come within kEndGap. (A wider slack, such as the gap itself, keeps every tangency's cells
// down to the tolerance over 1e-5 of its parameters: seven times the work of a batch with tangencies in it.)
constexpr double kSlack = 1.0 / (1ll << 40);

// The caller's options with the curves' zero slack.
SolverOptions with_slack(const SolverOptions& options) {
  SolverOptions o = options;
  o.zero_slack = kSlack;
  return o;
}

// The curve less `centre`, over [-kGrow, 1 + kGrow] as a curve over [0, 1] (de Casteljau, extrapolating by kGrow at
// each end: [-g, 1] first, then its parameter (1 + 2g) / (1 + g) is the old 1 + g). Curves have 64 points at most.
// (Into `w`, its first c.points.size() points: a batch makes two for each of its pairs.)
using GrownPoints = std::array<std::array<double, 2>, 64>;
void grown(const BezierCurve2& c, const double* centre, GrownPoints& w) {
  const std::size_t n = c.points.size();
  GrownPoints from;
  for (std::size_t i = 0; i < n; ++i) w[i] = {c.points[i][0] - centre[0], c.points[i][1] - centre[1]};
  solver::split_curve(w.data(), n, -kGrow, nullptr, from.data());
  solver::split_curve(from.data(), n, (1 + 2 * kGrow) / (1 + kGrow), w.data(), nullptr);
}

// A parameter of the grown domain on the curve's own, and whether it lay beyond an end (it is then clamped).
double ungrown(double x, bool* beyond = nullptr) {
  const double u = x * (1 + 2 * kGrow) - kGrow;
  if (beyond) *beyond = *beyond || u < 0 || u > 1;
  return std::clamp(u, 0.0, 1.0);
}

// The size of two curves together: their control points' box diagonal (what kEndGap is relative to).
double pair_size(const BezierCurve2& a, const BezierCurve2& b) {
  double lo[2] = {HUGE_VAL, HUGE_VAL}, hi[2] = {-HUGE_VAL, -HUGE_VAL};
  for (const BezierCurve2* c : {&a, &b})
    for (const auto& p : c->points)
      for (int k = 0; k < 2; ++k) lo[k] = std::min(lo[k], p[k]), hi[k] = std::max(hi[k], p[k]);
  return std::hypot(hi[0] - lo[0], hi[1] - lo[1]);
}

std::vector<BernsteinPoly> crossing_equations(const BezierCurve2& a_given, const BezierCurve2& b_given) {
  // Grown from the centre of both curves' box: the extrapolation's rounding is then relative to the curves' size,
  // not to their distance from the origin, and the coefficients (differences of control points) keep their digits
  // (a nearly parallel crossing magnifies their rounding: 1e-12 in its parameters from the absolute coordinates).
  double lo[2] = {HUGE_VAL, HUGE_VAL}, hi[2] = {-HUGE_VAL, -HUGE_VAL};
  for (const BezierCurve2* c : {&a_given, &b_given})
    for (const auto& p : c->points)
      for (int k = 0; k < 2; ++k) lo[k] = std::min(lo[k], p[k]), hi[k] = std::max(hi[k], p[k]);
  const double centre[2] = {0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1])};
  GrownPoints a, b;
  grown(a_given, centre, a);
  grown(b_given, centre, b);
  // In units in which the solve's zero slack (kSlack) is 16 roundings of the largest coordinate (or of the pair's
  // size, if larger): a power of two, so that the scaling is exact.
  double largest = std::hypot(hi[0] - lo[0], hi[1] - lo[1]);
  for (int k = 0; k < 2; ++k) largest = std::max({largest, std::abs(lo[k]), std::abs(hi[k])});
  const double rounding = 16 * std::numeric_limits<double>::epsilon() / 2 * largest;
  const double unit = rounding > 0 && std::isfinite(rounding) ? std::ldexp(1.0, std::ilogb(kSlack / rounding)) : 1.0;
  const std::size_t m = a_given.points.size(), n = b_given.points.size();
  std::vector<BernsteinPoly> eq(2);
  for (int k = 0; k < 2; ++k) {
    eq[std::size_t(k)].degree = {int(m) - 1, int(n) - 1};
    std::vector<double>& c = eq[std::size_t(k)].coef;
    c.resize(m * n);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] = unit * (a[i][std::size_t(k)] - b[j][std::size_t(k)]);
  }
  return eq;
}

// The parameter u near `u` where curve c passes through p (Gauss-Newton on |c(u) - p|², whose residual is zero
// there: quadratic convergence), or NaN when it does not converge.
double parameter_of(const BezierCurve2& c, std::array<double, 2> p, double u) {
  double last = HUGE_VAL;
  for (int it = 0; it < 60; ++it) {
    std::array<double, 2> d{};
    const auto q = point_at(c, u, &d);
    const double dd = d[0] * d[0] + d[1] * d[1];
    if (!(dd > 0)) return NAN;
    const double step = (d[0] * (q[0] - p[0]) + d[1] * (q[1] - p[1])) / dd;
    // Converged once the steps are rounding (they stop shrinking, or fall to a few units in the last place).
    if (!(std::abs(step) < 0.5 * last) || std::abs(step) <= 4e-16 * (1 + std::abs(u)))
      return std::abs(step) < 1e-9 ? u - step : NAN;
    last = std::abs(step);
    u -= step;
  }
  return NAN;
}

// An overlap's exact ends from the solver's region around it. Where two Bézier curves coincide they are arcs of one
// curve, so each end of the overlap is an end of one of them: at the low end of s, either s = 0 (the first curve
// starts inside the second) or the second curve's end that the overlap runs from (t = 0 when the curves run the
// same way, t = 1 otherwise) lies at some s in [0, 1]. The other parameter comes from the exact curves, not from
// the region's cells, so it is the same on every engine up to rounding. A candidate counts only near where the
// region puts that end, in both parameters (a curve with a loop passes its points twice): within `reach`, the
// length below which the solver may leave a piece of the overlap as a cluster of its own.
constexpr double kOverlapReach = 2e-2;
CurveOverlap overlap_ends(const BezierCurve2& a, const BezierCurve2& b, const SolutionRegion& reg) {
  CurveOverlap o{reg.lo[0], reg.hi[0], reg.lo[1], reg.hi[1]};
  const double reach = kOverlapReach;
  std::array<double, 2> da{}, db{};
  point_at(a, 0.5 * (reg.lo[0] + reg.hi[0]), &da);
  point_at(b, 0.5 * (reg.lo[1] + reg.hi[1]), &db);
  const bool same_way = da[0] * db[0] + da[1] * db[1] >= 0;
  // One end: the first curve's end `s_end` (0 or 1), or the second curve's end `t_end`, whichever lies inside the
  // other curve; s_near and t_near are where the region puts that end.
  auto end = [&](double s_end, double t_end, double s_near, double t_near, double& s, double& t) {
    s = s_near, t = t_near;
    const double sb = parameter_of(a, point_at(b, t_end, nullptr), s_near);
    const double ta = parameter_of(b, point_at(a, s_end, nullptr), t_near);
    const bool b_end = std::abs(sb - s_near) <= reach && std::abs(t_end - t_near) <= reach && sb >= 0 && sb <= 1;
    const bool a_end = std::abs(ta - t_near) <= reach && std::abs(s_end - s_near) <= reach && ta >= 0 && ta <= 1;
    // Both: the curves end together (within the reach); the end is the one inside the other curve.
    if (b_end && (!a_end || (s_end == 0 ? sb > 0 : sb < 1)))
      s = sb, t = t_end;
    else if (a_end)
      s = s_end, t = ta;
  };
  double s0, t_at_s0, s1, t_at_s1;
  end(0, same_way ? 0 : 1, reg.lo[0], same_way ? reg.lo[1] : reg.hi[1], s0, t_at_s0);
  end(1, same_way ? 1 : 0, reg.hi[0], same_way ? reg.hi[1] : reg.lo[1], s1, t_at_s1);
  o.s0 = s0;
  o.s1 = s1;
  o.t0 = std::min(t_at_s0, t_at_s1);
  o.t1 = std::max(t_at_s0, t_at_s1);
  return o;
}

// A curve's derivative curve (hodograph) as control points, degree one lower.
BezierCurve2 hodograph(const BezierCurve2& c) {
  BezierCurve2 h;
  const double n = double(c.points.size() - 1);
  for (std::size_t i = 0; i + 1 < c.points.size(); ++i)
    h.points.push_back({n * (c.points[i + 1][0] - c.points[i][0]), n * (c.points[i + 1][1] - c.points[i][1])});
  if (h.points.empty()) h.points.push_back({0, 0});
  return h;
}

// A tangent root (s, t) refined on the curves themselves: a tangency is a regular solution of C1(s) = C2(t) with
// C1'(s) x C2'(t) = 0 (three equations, two unknowns, consistent), where Gauss-Newton converges quadratically, unlike
// Newton on the crossing system, which is singular there. Contact of higher order (equal curvature) leaves that
// system singular too: the refinement is kept only when it converged nearby and fits better.
void refine_tangency(const BezierCurve2& a, const BezierCurve2& b, double& s, double& t) {
  if (a.points.size() < 3 && b.points.size() < 3) return;  // two lines touch only where they overlap
  const BezierCurve2 da = hodograph(a), db = hodograph(b), dda = hodograph(da), ddb = hodograph(db);
  auto residual = [&](double u, double v, double* r, double J[3][2]) {
    const auto p = point_at(a, u, nullptr), q = point_at(b, v, nullptr);
    const auto pa = point_at(da, u, nullptr), pb = point_at(db, v, nullptr);
    const auto ppa = point_at(dda, u, nullptr), ppb = point_at(ddb, v, nullptr);
    const double w = 1.0 / (std::hypot(pa[0], pa[1]) * std::hypot(pb[0], pb[1]));
    r[0] = p[0] - q[0], r[1] = p[1] - q[1];
    r[2] = w * (pa[0] * pb[1] - pa[1] * pb[0]);
    if (J) {
      J[0][0] = pa[0], J[0][1] = -pb[0];
      J[1][0] = pa[1], J[1][1] = -pb[1];
      J[2][0] = w * (ppa[0] * pb[1] - ppa[1] * pb[0]);
      J[2][1] = w * (pa[0] * ppb[1] - pa[1] * ppb[0]);
    }
    // What Gauss-Newton minimises: near a tangency the distance alone is second order in the error (1e-8 off
    // leaves 1e-16), too flat to tell a better point; the tangents' angle is first order.
    return std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
  };
  double u = s, v = t, r[3], J[3][2];
  const double start = residual(u, v, r, nullptr);
  for (int it = 0; it < 40; ++it) {
    residual(u, v, r, J);
    double m00 = 0, m01 = 0, m11 = 0, g0 = 0, g1 = 0;
    for (int k = 0; k < 3; ++k) {
      m00 += J[k][0] * J[k][0], m01 += J[k][0] * J[k][1], m11 += J[k][1] * J[k][1];
      g0 += J[k][0] * r[k], g1 += J[k][1] * r[k];
    }
    const double det = m00 * m11 - m01 * m01;
    if (!(std::abs(det) > 1e-300)) return;
    const double du = -(m11 * g0 - m01 * g1) / det, dv = -(m00 * g1 - m01 * g0) / det;
    u += du, v += dv;
    if (!(std::abs(du) + std::abs(dv) > 1e-16 * (1 + std::abs(u) + std::abs(v)))) break;
  }
  if (!(u >= 0 && u <= 1 && v >= 0 && v <= 1) || std::abs(u - s) > 1e-4 || std::abs(v - t) > 1e-4) return;
  if (residual(u, v, r, nullptr) <= start) s = u, t = v;
}

// A parameter held to [0, 1], and put on the end when within kSnap of it.
double held(double x) { return x <= kSnap ? 0.0 : x >= 1 - kSnap ? 1.0 : x; }

// Whether the curves' tangents at s and t are parallel: the sine of their angle at most `allowed`.
bool tangents_parallel(const BezierCurve2& a, const BezierCurve2& b, double s, double t, double allowed) {
  std::array<double, 2> da{}, db{};
  point_at(a, s, &da);
  point_at(b, t, &db);
  return !(std::abs(da[0] * db[1] - da[1] * db[0]) > allowed * std::hypot(da[0], da[1]) * std::hypot(db[0], db[1]));
}

// Where an end of either curve lies on the other (within `gap`): a point of both curves, at the end exactly and
// where it lies on the other curve. The solver's cells cannot be relied on for these: one curve running on as the
// other from a shared end is a line of solutions through that point in the grown domain, which the coefficients'
// rounding can leave wholly on one side of zero, and a root at an end is a cluster located only to the tolerance.
// Each such point replaces the roots within reach of it (a cluster's reach is the tolerance's, a proved root's its
// rounding) and is added where there were none.
void meet_at_ends(const BezierCurve2& a, const BezierCurve2& b, double gap, double tolerance,
                  std::vector<CurveIntersection>& points, std::vector<int>& hints) {
  // Ends that are one point first (exactly there: an end's projection onto the other curve is found only to the
  // rounding of the coordinates, 1e-12 of the parameter a thousand units from the origin), then the ends that lie
  // on the other curve elsewhere.
  std::array<std::array<double, 2>, 8> meetings;
  int found = 0;
  bool a_end_met[2] = {false, false}, b_end_met[2] = {false, false};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      const auto pa = point_at(a, i, nullptr), pb = point_at(b, j, nullptr);
      if (std::hypot(pa[0] - pb[0], pa[1] - pb[1]) <= gap)
        meetings[std::size_t(found++)] = {double(i), double(j)}, a_end_met[i] = b_end_met[j] = true;
    }
  for (int i = 0; i < 2; ++i)
    if (!a_end_met[i])
      if (const double t = solver::parameter_on(b, point_at(a, i, nullptr), gap); std::isfinite(t))
        meetings[std::size_t(found++)] = {double(i), held(t)};
  for (int j = 0; j < 2; ++j)
    if (!b_end_met[j])
      if (const double s = solver::parameter_on(a, point_at(b, j, nullptr), gap); std::isfinite(s))
        meetings[std::size_t(found++)] = {held(s), double(j)};
  for (int m = 0; m < found; ++m) {
    const auto [s, t] = meetings[std::size_t(m)];
    std::size_t kept = 0;
    for (std::size_t k = 0; k < points.size(); ++k) {
      const double reach = hints[k] > 1 ? 16 * tolerance : 1e-9;
      if (std::abs(points[k].s - s) <= reach && std::abs(points[k].t - t) <= reach) continue;
      points[kept] = points[k], hints[kept] = hints[k], ++kept;
    }
    points.resize(kept), hints.resize(kept);
    CurveIntersection ci;
    ci.s = s, ci.t = t;
    ci.point = point_at(a, s, nullptr);
    ci.tangent = tangents_parallel(a, b, s, t, 1e-9);
    points.push_back(ci);
    hints.push_back(2);  // (a piece of an overlap where it lies in one, like a cluster)
  }
}

CurveIntersectionResult crossings(const BezierCurve2& a, const BezierCurve2& b, const SolveResult& r, double tolerance,
                                  bool with_ends = true) {
  CurveIntersectionResult out;
  out.status = r.status;
  std::vector<int> hints;  // each point's root's multiplicity hint
  const double gap = kEndGap * pair_size(a, b);
  for (const auto& root : r.roots) {
    CurveIntersection ci;
    bool beyond_s = false, beyond_t = false;
    ci.s = ungrown(root.x[0], &beyond_s);
    ci.t = ungrown(root.x[1], &beyond_t);
    // A root the solver could not prove single (a cluster of candidate cells: tangencies, and also transversal
    // crossings at a curve's end, where the proof's box leaves the domain) is located to about the tolerance, and a
    // tangency's tangents differ there by that order: its angle is allowed the tolerance's square root, far below the
    // sines of real crossings.
    const double allowed = root.multiplicity_hint > 1 ? std::sqrt(tolerance) : 1e-9;
    if (root.multiplicity_hint > 1 && tangents_parallel(a, b, ci.s, ci.t, allowed)) {
      refine_tangency(a, b, ci.s, ci.t);
      // A touch is where the curves come within the gap: the distance from the first curve's point to the second
      // curve (where the refinement is not taken, at a contact of order 3, the two parameters are each 1e-7 off,
      // and the curves' points at them 1e-8 apart, while the curves themselves are 1e-20 apart there); a near miss
      // that the slack kept and that stays farther apart is none.
      const auto pa = point_at(a, ci.s, nullptr);
      const double foot = parameter_of(b, pa, ci.t);
      const auto pb = point_at(b, std::isfinite(foot) ? foot : ci.t, nullptr);
      if (!(std::hypot(pa[0] - pb[0], pa[1] - pb[1]) <= gap) && !beyond_s && !beyond_t) continue;
    }
    // A root beyond an end, or within rounding of one (curves joined end to end), is put on that end: the other
    // parameter is then where the end lies on the other curve. One beyond an end is kept only if the curves meet
    // there, and once (two roots beyond one end clamp to the same point).
    const auto near_end = [](double x) { return x <= kSnap || x >= 1 - kSnap; };
    const bool snap_s = beyond_s || near_end(ci.s), snap_t = beyond_t || near_end(ci.t);
    if (snap_s || snap_t) {
      CurveIntersection on = ci;
      if (snap_s) on.s = std::round(on.s);
      if (snap_t) on.t = std::round(on.t);
      // (the end's parameter on the other curve, held to its domain and put on its end when within rounding of it:
      // an end on the other's end projects 1e-17 either way of it, depending on the build; whether they meet there
      // is tested next)
      if (snap_s && !snap_t) {
        const double t = parameter_of(b, point_at(a, on.s, nullptr), on.t);
        if (std::isfinite(t)) on.t = held(t);
      } else if (snap_t && !snap_s) {
        const double s = parameter_of(a, point_at(b, on.t, nullptr), on.s);
        if (std::isfinite(s)) on.s = held(s);
      }
      const auto pa = point_at(a, on.s, nullptr), pb = point_at(b, on.t, nullptr);
      const bool meet = std::hypot(pa[0] - pb[0], pa[1] - pb[1]) <= gap;
      if (meet)
        ci = on;
      else if (beyond_s || beyond_t)
        continue;
      bool again = false;
      for (const auto& q : out.points) again = again || (std::abs(q.s - ci.s) <= 1e-9 && std::abs(q.t - ci.t) <= 1e-9);
      if (again) continue;
    }
    // Tangent means parallel tangents, wherever the root lies.
    ci.point = point_at(a, ci.s, nullptr);
    ci.tangent = tangents_parallel(a, b, ci.s, ci.t, allowed);
    out.points.push_back(ci);
    hints.push_back(root.multiplicity_hint);
  }
  if (with_ends) meet_at_ends(a, b, gap, tolerance, out.points, hints);
  for (SolutionRegion reg : r.regions) {
    for (double* x : {&reg.lo[0], &reg.lo[1], &reg.hi[0], &reg.hi[1]}) *x = ungrown(*x);
    out.overlaps.push_back(overlap_ends(a, b, reg));
  }
  // A root the solver could not prove single at an overlap is a piece of it that clustered apart (near its ends).
  std::size_t kept = 0;
  for (std::size_t k = 0; k < out.points.size(); ++k) {
    const CurveIntersection& p = out.points[k];
    bool in_overlap = false;
    for (const auto& v : out.overlaps)
      in_overlap = in_overlap || (p.s >= v.s0 - kOverlapReach && p.s <= v.s1 + kOverlapReach &&
                                  p.t >= v.t0 - kOverlapReach && p.t <= v.t1 + kOverlapReach);
    if (hints[k] <= 1 || !in_overlap) out.points[kept++] = p;
  }
  out.points.resize(kept);
  return out;
}

// The control polygons' boxes meet (a curve lies in its control polygon's convex hull).
bool boxes_meet(const BezierCurve2& a, const BezierCurve2& b) {
  for (int k = 0; k < 2; ++k) {
    auto range = [k](const BezierCurve2& c) {
      auto [lo, hi] = std::minmax_element(c.points.begin(), c.points.end(),
                                          [k](const auto& p, const auto& q) { return p[k] < q[k]; });
      return std::pair{(*lo)[k], (*hi)[k]};
    };
    const auto [alo, ahi] = range(a);
    const auto [blo, bhi] = range(b);
    // (with the room that curves meeting at an end are given: kEndGap of their size)
    const double room = kEndGap * (std::max(ahi, bhi) - std::min(alo, blo));
    if (ahi < blo - room || bhi < alo - room) return false;
  }
  return true;
}

// Curves that share an arc (solver::coincident_arcs): the arc, and the crossings of the pieces beside it, each
// piece against the other curve solved as a pair of its own (a loop of the common curve can cross the other curve
// elsewhere). Every piece touches the arc at one of its ends, where the curves run on as one: the solver finds a
// tangent cluster there, which belongs to the arc. Two steps, so that a batch solves every pair's pieces together.
struct SharedArc {
  struct Piece {
    double s0, s1, t0, t1;
    BezierCurve2 a, b;
  };
  CurveOverlap arc;
  double ends[2][2];  // (s, t) of the arc's two ends
  std::vector<Piece> pieces;
};

SharedArc shared_arc(const BezierCurve2& a, const BezierCurve2& b, const CurveOverlap& arc) {
  SharedArc out;
  out.arc = arc;
  std::array<double, 2> da{}, db{};
  point_at(a, 0.5 * (arc.s0 + arc.s1), &da);
  point_at(b, 0.5 * (arc.t0 + arc.t1), &db);
  const bool same_way = da[0] * db[0] + da[1] * db[1] >= 0;
  out.ends[0][0] = arc.s0, out.ends[0][1] = same_way ? arc.t0 : arc.t1;
  out.ends[1][0] = arc.s1, out.ends[1][1] = same_way ? arc.t1 : arc.t0;
  constexpr double kEdge = 1e-9;
  auto add = [&](double s0, double s1, double t0, double t1) {
    out.pieces.push_back({s0, s1, t0, t1, curve_piece(a, s0, s1), curve_piece(b, t0, t1)});
  };
  if (arc.s0 > kEdge) add(0, arc.s0, 0, 1);
  if (arc.s1 < 1 - kEdge) add(arc.s1, 1, 0, 1);
  if (arc.t0 > kEdge) add(arc.s0, arc.s1, 0, arc.t0);
  if (arc.t1 < 1 - kEdge) add(arc.s0, arc.s1, arc.t1, 1);
  return out;
}

// The arc and the crossings from its pieces' solutions (one per piece, in order).
CurveIntersectionResult shared_arc_result(const SharedArc& shared, std::vector<SolveResult> solved, double tolerance) {
  CurveIntersectionResult out;
  out.overlaps.push_back(shared.arc);
  for (std::size_t k = 0; k < shared.pieces.size(); ++k) {
    const SharedArc::Piece& p = shared.pieces[k];
    SolveResult& r = solved[k];
    if (r.status != "complete" && out.status == "complete") out.status = r.status;
    std::erase_if(r.roots, [&](const Root& root) {
      const double s = p.s0 + ungrown(root.x[0]) * (p.s1 - p.s0), t = p.t0 + ungrown(root.x[1]) * (p.t1 - p.t0);
      const double reach = root.multiplicity_hint > 1 ? kOverlapReach : 1e-7;
      for (const auto& e : shared.ends)
        if (std::abs(s - e[0]) <= reach && std::abs(t - e[1]) <= reach) return true;
      return false;
    });
    for (CurveIntersection ci : crossings(p.a, p.b, r, tolerance, false).points) {
      ci.s = p.s0 + ci.s * (p.s1 - p.s0);
      ci.t = p.t0 + ci.t * (p.t1 - p.t0);
      out.points.push_back(ci);
    }
  }
  // A crossing on the line between two pieces is found by both.
  std::sort(out.points.begin(), out.points.end(), [](const auto& x, const auto& y) { return x.s < y.s; });
  std::vector<CurveIntersection> once;
  for (const auto& ci : out.points)
    if (once.empty() || std::abs(ci.s - once.back().s) > 1e-9 || std::abs(ci.t - once.back().t) > 1e-9)
      once.push_back(ci);
  out.points = std::move(once);
  return out;
}

// One pair: its shared arc where the curves coincide over one, else the crossings the solver finds.
CurveIntersectionResult intersect_pair(const BezierCurve2& a, const BezierCurve2& b, const SolverOptions& options) {
  solver::check_tolerances(options);  // (a shared arc over the whole curves solves nothing)
  if (const auto arc = solver::coincident_arcs(a, b)) {
    const SharedArc shared = shared_arc(a, b, *arc);
    std::vector<std::vector<BernsteinPoly>> systems;
    for (const auto& p : shared.pieces) systems.push_back(crossing_equations(p.a, p.b));
    return shared_arc_result(shared, solve_systems(systems, with_slack(options)), options.tolerance);
  }
  return crossings(a, b, solve_system(crossing_equations(a, b), with_slack(options)), options.tolerance);
}
}  // namespace

CurveIntersectionResult intersect_curves(const BezierCurve2& a, const BezierCurve2& b, const SolverOptions& options) {
  check_curve(a, "1");
  check_curve(b, "2");
  return intersect_pair(a, b, options);
}

namespace {
// Pairs from which their preparation and results are shared among the threads.
constexpr std::size_t kPairsPerTeam = 64;

// The batch of pairs 0..n-1, whose curves `pair_of(k)` gives (as pointers: into the caller's curves, or to the
// calling thread's curves filled from packed points). The curves must have been checked.
// (One function for both forms, not a template: with two copies of this body the compiler stopped inlining what it
// calls.)
using CurvesOf = std::pair<const BezierCurve2*, const BezierCurve2*>;
std::vector<CurveIntersectionResult> solve_pairs(std::size_t n, const std::function<CurvesOf(std::size_t)>& pair_of,
                                                 const SolverOptions& options) {
  solver::check_tolerances(options);  // (pairs whose boxes do not meet solve nothing)
  std::vector<CurveIntersectionResult> out(n);
  // Every system goes into one batch: the pairs whose control boxes meet (the others have no intersection), and
  // for pairs that share an arc (found directly: tracing it by subdivision takes thousands of times a crossing's
  // work) the pieces beside the arc. The search for shared arcs and the making of each pair's equations are the
  // pair's own work, as long as a crossing's solve: they run on all threads, as the solve does, before it.
  struct Prepared {
    bool meet = false;
    std::optional<SharedArc> arc;
    std::vector<std::vector<BernsteinPoly>> systems;  // the pair's, or its pieces'
  };
  std::vector<Prepared> prepared(n);
  const int threads = cpu_thread_count(options.threads);
  // A pair's own work is microseconds: a few pairs are not worth waking the other threads (on a loaded machine
  // that waits for each of them to be scheduled, milliseconds per call).
  const bool team = threads > 1 && n >= kPairsPerTeam;
  core::RegionErrors errors;
#pragma omp parallel for schedule(static, 16) num_threads(threads) if (team)
  for (std::size_t k = 0; k < n; ++k)
    errors.capture([&] {
      const auto [a, b] = pair_of(k);
      Prepared& p = prepared[k];
      if (!boxes_meet(*a, *b)) return;
      p.meet = true;
      if (const auto arc = solver::coincident_arcs(*a, *b)) {
        p.arc = shared_arc(*a, *b, *arc);
        for (const auto& piece : p.arc->pieces) p.systems.push_back(crossing_equations(piece.a, piece.b));
      } else {
        p.systems.push_back(crossing_equations(*a, *b));
      }
    });
  errors.rethrow();
  std::vector<std::size_t> first(n + 1, 0);  // the pair's systems: [first[k], first[k + 1])
  for (std::size_t k = 0; k < n; ++k) first[k + 1] = first[k] + prepared[k].systems.size();
  std::vector<std::vector<BernsteinPoly>> systems;
  systems.reserve(first.back());
  for (auto& p : prepared)
    for (auto& e : p.systems) systems.push_back(std::move(e));
  std::vector<SolveResult> results = solve_systems(systems, with_slack(options));
  // Each thread frees the systems it made (the same static schedule), into its own malloc arena: freed on other
  // threads, they waited on the arenas' locks.
#pragma omp parallel for schedule(static, 16) num_threads(threads) if (team)
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t e = first[k]; e < first[k + 1]; ++e) systems[e] = {};
  systems = {};
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) if (team)
  for (std::size_t k = 0; k < n; ++k)
    errors.capture([&] {
      const Prepared& p = prepared[k];
      if (!p.meet) return;
      if (p.arc) {
        std::vector<SolveResult> pieces(std::make_move_iterator(results.begin() + std::ptrdiff_t(first[k])),
                                        std::make_move_iterator(results.begin() + std::ptrdiff_t(first[k + 1])));
        out[k] = shared_arc_result(*p.arc, std::move(pieces), options.tolerance);
      } else {
        const auto [a, b] = pair_of(k);
        out[k] = crossings(*a, *b, results[first[k]], options.tolerance);
      }
    });
  errors.rethrow();
  core::release_in_parallel(results, threads);
  core::release_in_parallel(prepared, threads);
  return out;
}
}  // namespace

std::vector<CurveIntersectionResult> intersect_curve_pairs(
    const std::vector<std::pair<BezierCurve2, BezierCurve2>>& pairs, const SolverOptions& options) {
  // The message names the pair, so it is made only for a bad one (a string per pair cost more than the checks).
  for (std::size_t k = 0; k < pairs.size(); ++k)
    if (!curve_ok(pairs[k].first) || !curve_ok(pairs[k].second)) {
      const std::string which = "pair " + std::to_string(k) + ", curve ";
      check_curve(pairs[k].first, (which + "1").c_str());
      check_curve(pairs[k].second, (which + "2").c_str());
    }
  return solve_pairs(
      pairs.size(),
      [&](std::size_t k) {
        return CurvesOf{&pairs[k].first, &pairs[k].second};
      },
      options);
}

std::vector<CurveIntersectionResult> intersect_curve_pairs(std::span<const std::array<double, 2>> points,
                                                           std::span<const std::int64_t> counts,
                                                           const SolverOptions& options) {
  if (counts.size() % 2 != 0)
    throw Error(ErrorKind::InvalidArgument, "curve pairs: " + std::to_string(counts.size()) + " counts; two per pair");
  // Where each curve's points start, the curves checked as the vector form checks them (the message made only for
  // a bad one).
  std::vector<std::size_t> start(counts.size() + 1, 0);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const auto which = [i] { return "pair " + std::to_string(i / 2) + ", curve " + std::to_string(i % 2 + 1); };
    const std::int64_t c = counts[i];
    if (!count_ok(c)) check_curve(c, {}, which());
    if (std::uint64_t(c) > points.size() - start[i])
      throw Error(ErrorKind::InvalidArgument,
                  "curve pairs: the counts ask for more than the " + std::to_string(points.size()) + " points given");
    const Points2 p = points.subspan(start[i], std::size_t(c));
    if (!points_finite(p)) check_curve(c, p, which());
    start[i + 1] = start[i] + std::size_t(c);
  }
  if (start.back() != points.size())
    throw Error(ErrorKind::InvalidArgument, "curve pairs: the counts add up to " + std::to_string(start.back()) +
                                                " points, not the " + std::to_string(points.size()) + " given");
  const auto at = [&](std::size_t i) { return points.begin() + std::ptrdiff_t(start[i]); };
  return solve_pairs(
      counts.size() / 2,
      [&](std::size_t k) {
        thread_local BezierCurve2 a, b;  // (their capacity kept from pair to pair)
        a.points.assign(at(2 * k), at(2 * k + 1));
        b.points.assign(at(2 * k + 1), at(2 * k + 2));
        return CurvesOf{&a, &b};
      },
      options);
}

}  // namespace parasurf

namespace parasurf {

RayTrapResult ray_traps(const std::vector<BezierCurve2>& curves, const SolverOptions& options) {
  const int k = int(curves.size());
  if (k < 3 || k > 6)
    throw Error(ErrorKind::InvalidArgument, "ray traps: " + std::to_string(k) + " curves; 3..6 supported");
  for (const auto& c : curves) check_curve(c, "of the trap");
  // Coordinates of curve i as polynomials in the k parameters, and its (unnormalised) normal.
  std::vector<BernsteinPoly> x, y, nx, ny;
  for (int i = 0; i < k; ++i) {
    x.push_back(BernsteinPoly::univariate(coordinate(curves[i], 0), i, k));
    y.push_back(BernsteinPoly::univariate(coordinate(curves[i], 1), i, k));
    nx.push_back(-1.0 * derivative(y.back(), i));
    ny.push_back(derivative(x.back(), i));
  }
  std::vector<BernsteinPoly> eq, side;
  for (int i = 0; i < k; ++i) {
    const int j = (i + 1) % k, l = (i + 2) % k;
    const BernsteinPoly ax = x[i] - x[j], ay = y[i] - y[j], bx = x[l] - x[j], by = y[l] - y[j];
    const BernsteinPoly an = ax * nx[j] + ay * ny[j], bn = bx * nx[j] + by * ny[j];
    eq.push_back(an * an * (bx * bx + by * by) - bn * bn * (ax * ax + ay * ay));
    side.push_back(an * bn);
  }
  const SolveResult r = solve_system(eq, options, side);
  RayTrapResult out;
  out.status = r.status;
  if (!r.regions.empty() && out.status == "complete")
    out.status = "infinitely many traps: " + std::to_string(r.regions.size()) + " region(s) of parameters";
  for (const auto& root : r.roots) {
    RayTrap t;
    t.t = root.x;
    for (int i = 0; i < k; ++i) t.points.push_back(point_at(curves[i], root.x[i], nullptr));
    out.traps.push_back(t);
  }
  return out;
}

}  // namespace parasurf

namespace parasurf {

std::vector<double> bezier_knots(int degree) {
  std::vector<double> k(static_cast<std::size_t>(std::max(degree, 0) + 1), 0.0);
  k.insert(k.end(), k.size(), 1.0);
  return k;
}

std::vector<BezierPiece> bspline_to_bezier(const BSplineCurve2& c) {
  const int p = c.degree, n = int(c.points.size());
  if (p < 1 || p > 32)
    throw Error(ErrorKind::InvalidArgument, "B-spline curve: degree " + std::to_string(p) + " is outside 1..32");
  if (n < p + 1)
    throw Error(ErrorKind::InvalidArgument, "B-spline curve: " + std::to_string(n) + " control points; degree " +
                                                std::to_string(p) + " needs at least " + std::to_string(p + 1));
  if (int(c.knots.size()) != n + p + 1)
    throw Error(ErrorKind::InvalidArgument, "B-spline curve: " + std::to_string(c.knots.size()) + " knots; " +
                                                std::to_string(n) + " control points of degree " + std::to_string(p) +
                                                " need " + std::to_string(n + p + 1));
  for (std::size_t i = 0; i < c.knots.size(); ++i) {
    if (!std::isfinite(c.knots[i]))
      throw Error(ErrorKind::InvalidArgument, "B-spline curve: knot " + std::to_string(i) + " is not finite");
    if (i > 0 && c.knots[i] < c.knots[i - 1])
      throw Error(ErrorKind::InvalidArgument,
                  "B-spline curve: the knot vector decreases at index " + std::to_string(i));
  }
  for (const auto& q : c.points)
    if (!std::isfinite(q[0]) || !std::isfinite(q[1]))
      throw Error(ErrorKind::InvalidArgument, "B-spline curve: a control point is not finite");
  if (!(c.knots[n] > c.knots[p])) throw Error(ErrorKind::InvalidArgument, "B-spline curve: the domain is empty");
  std::vector<double> u = c.knots;
  std::vector<std::array<double, 2>> P = c.points;
  // Boehm insertion of x once (x in [u[p], u[m - p - 1]]).
  auto insert = [&](double x) {
    const int m = int(P.size());
    int k = p;
    while (k + 1 < m && u[k + 1] <= x) ++k;  // u[k] <= x < u[k+1]
    std::vector<std::array<double, 2>> Q(std::size_t(m + 1));
    for (int i = 0; i <= k - p; ++i) Q[i] = P[i];
    for (int i = k - p + 1; i <= k; ++i) {
      const double den = u[i + p] - u[i];
      const double a = den > 0 ? (x - u[i]) / den : 0;
      for (int d = 0; d < 2; ++d) Q[i][d] = (1 - a) * P[i - 1][d] + a * P[i][d];
    }
    for (int i = k + 1; i <= m; ++i) Q[i] = P[i - 1];
    u.insert(u.begin() + k + 1, x);
    P.swap(Q);
  };
  auto multiplicity = [&](double x) { return int(std::count(u.begin(), u.end(), x)); };
  // Every distinct knot of the domain, its ends included (unclamped ends), to multiplicity p.
  std::vector<double> distinct;
  for (int i = p; i <= n; ++i)
    if (distinct.empty() || c.knots[i] != distinct.back()) distinct.push_back(c.knots[i]);
  for (double x : distinct)
    for (int guard = 0; multiplicity(x) < p && guard < p; ++guard) insert(x);
  std::vector<BezierPiece> out;
  const int m = int(P.size());
  for (int k = p; k < m; ++k) {
    if (!(u[k + 1] > u[k])) continue;
    if (u[k] < c.knots[p] || u[k + 1] > c.knots[n]) continue;
    BezierPiece piece;
    piece.u0 = u[k];
    piece.u1 = u[k + 1];
    for (int i = k - p; i <= k; ++i) piece.curve.points.push_back(P[i]);
    out.push_back(std::move(piece));
  }
  return out;
}

CurveIntersectionResult intersect_curves(const BSplineCurve2& a, const BSplineCurve2& b, const SolverOptions& options) {
  const auto pa = bspline_to_bezier(a), pb = bspline_to_bezier(b);
  // Every pair of pieces is one pair of one batch (threads, the GPU or a team share it out; shared arcs found
  // directly, pieces whose boxes do not meet skipped).
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  std::vector<std::pair<BezierCurve2, BezierCurve2>> curves;
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (std::size_t j = 0; j < pb.size(); ++j) {
      check_curve(pa[i].curve, "1");
      check_curve(pb[j].curve, "2");
      if (!boxes_meet(pa[i].curve, pb[j].curve)) continue;
      pairs.emplace_back(i, j);
      curves.emplace_back(pa[i].curve, pb[j].curve);
    }
  const std::vector<CurveIntersectionResult> solved = intersect_curve_pairs(curves, options);
  CurveIntersectionResult out;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const BezierPiece &x = pa[pairs[k].first], &y = pb[pairs[k].second];
    const CurveIntersectionResult& r = solved[k];
    if (r.status != "complete") out.status = r.status;
    for (auto p : r.points) {
      p.s = x.u0 + p.s * (x.u1 - x.u0);
      p.t = y.u0 + p.t * (y.u1 - y.u0);
      bool dup = false;  // a root on a piece boundary shows up in both pieces
      for (const auto& q : out.points)
        dup = dup || (std::abs(q.s - p.s) <= 1e-10 * (1 + std::abs(p.s)) &&
                      std::abs(q.t - p.t) <= 1e-10 * (1 + std::abs(p.t)));
      if (!dup) out.points.push_back(p);
    }
    for (auto v : r.overlaps)
      out.overlaps.push_back({x.u0 + v.s0 * (x.u1 - x.u0), x.u0 + v.s1 * (x.u1 - x.u0), y.u0 + v.t0 * (y.u1 - y.u0),
                              y.u0 + v.t1 * (y.u1 - y.u0)});
  }
  std::sort(out.points.begin(), out.points.end(),
            [](const auto& l, const auto& r) { return l.s < r.s || (l.s == r.s && l.t < r.t); });
  return out;
}

}  // namespace parasurf
