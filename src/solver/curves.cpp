// Intersection of two planar Bézier curves as the system C1(s) - C2(t) = 0 in (s, t) ∈ [0,1]², built exactly in
// Bernstein form (each coordinate promoted to the two variables) and solved by subdivision.
#include <cmath>

#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"

namespace parasurf {

namespace {
std::vector<double> coordinate(const BezierCurve2& c, int k) {
  std::vector<double> v;
  for (const auto& p : c.points) v.push_back(p[k]);
  return v;
}
std::array<double, 2> point_at(const BezierCurve2& c, double t, std::array<double, 2>* tangent) {
  std::vector<std::array<double, 2>> w = c.points;
  const std::size_t n = w.size();
  std::array<double, 2> d{0, 0};
  for (std::size_t r = 1; r < n; ++r) {
    if (r == n - 1 && tangent)
      for (int k = 0; k < 2; ++k) d[k] = double(n - 1) * (w[1][k] - w[0][k]);
    for (std::size_t i = 0; i + r < n; ++i)
      for (int k = 0; k < 2; ++k) w[i][k] = (1 - t) * w[i][k] + t * w[i + 1][k];
  }
  if (tangent) *tangent = d;
  return w[0];
}
void check_curve(const BezierCurve2& c, const char* which) {
  if (c.points.size() < 2 || c.points.size() > 64)
    throw Error(ErrorKind::InvalidArgument, std::string("curve ") + which + ": needs 2..64 control points");
  for (const auto& p : c.points)
    if (!std::isfinite(p[0]) || !std::isfinite(p[1])) throw Error(ErrorKind::InvalidArgument, std::string("curve ") + which + ": a control point is not finite");
}
}  // namespace

CurveIntersectionResult intersect_curves(const BezierCurve2& a, const BezierCurve2& b, const SolverOptions& options) {
  check_curve(a, "1");
  check_curve(b, "2");
  std::vector<BernsteinPoly> eq;
  for (int k = 0; k < 2; ++k)
    eq.push_back(BernsteinPoly::univariate(coordinate(a, k), 0, 2) - BernsteinPoly::univariate(coordinate(b, k), 1, 2));
  const SolveResult r = solve_system(eq, options);
  CurveIntersectionResult out;
  out.status = r.status;
  for (const auto& root : r.roots) {
    CurveIntersection ci;
    ci.s = root.x[0];
    ci.t = root.x[1];
    std::array<double, 2> da{}, db{};
    ci.point = point_at(a, ci.s, &da);
    point_at(b, ci.t, &db);
    const double cross = da[0] * db[1] - da[1] * db[0];
    const double scale = std::hypot(da[0], da[1]) * std::hypot(db[0], db[1]);
    ci.tangent = root.multiplicity_hint > 1 || !(std::abs(cross) > 1e-9 * scale);
    out.points.push_back(ci);
  }
  for (const auto& reg : r.regions) out.overlaps.push_back({reg.lo[0], reg.hi[0], reg.lo[1], reg.hi[1]});
  return out;
}

}  // namespace parasurf

namespace parasurf {

RayTrapResult ray_traps(const std::vector<BezierCurve2>& curves, const SolverOptions& options) {
  const int k = int(curves.size());
  if (k < 3 || k > 6) throw Error(ErrorKind::InvalidArgument, "ray traps: " + std::to_string(k) + " curves; 3..6 supported");
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
