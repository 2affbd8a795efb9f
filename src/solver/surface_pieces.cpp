// Bézier pieces of B-spline surfaces and the polynomials built from them (see surface_pieces.hpp); normal cones after
// Sederberg & Meyers, "Loop detection in surface patch intersections" (CAGD 5, 1988).
#include "surface_pieces.hpp"

#include <algorithm>
#include <cmath>

#include "parasurf/device.hpp"
#include "parasurf/error.hpp"
#include "point_grid.hpp"

namespace parasurf::solver {

namespace {

std::vector<std::pair<double, double>> spans(const std::vector<double>& knots, int p, int count) {
  std::vector<std::pair<double, double>> out;
  for (int k = p; k < count; ++k)
    if (knots[std::size_t(k + 1)] > knots[std::size_t(k)]) out.emplace_back(knots[std::size_t(k)], knots[std::size_t(k + 1)]);
  return out;
}
}  // namespace

std::vector<SurfacePiece> surface_pieces(const BSplineSurface& s, const std::string& which) {
  validate(s, which);
  for (double w : s.weights)
    if (w != 1.0) throw Error(ErrorKind::InvalidArgument, which + ": rational (NURBS) surfaces are not supported by the solver applications");
  PatchModel model;
  append_bezier_patches(s, model);
  const auto su = spans(s.knots_u, s.degree_u, s.count_u), sv = spans(s.knots_v, s.degree_v, s.count_v);
  if (model.patches.size() != su.size() * sv.size())
    throw Error(ErrorKind::InvalidArgument, which + ": knot spans and Bezier pieces disagree");
  std::vector<SurfacePiece> out;
  for (std::size_t a = 0; a < su.size(); ++a)
    for (std::size_t b = 0; b < sv.size(); ++b) {
      const Patch& patch = model.patches[a * sv.size() + b];
      SurfacePiece p;
      p.du = patch.degree_u;
      p.dv = patch.degree_v;
      p.u0 = su[a].first, p.u1 = su[a].second, p.v0 = sv[b].first, p.v1 = sv[b].second;
      p.iu = int(a), p.iv = int(b);
      p.lo = {1e300, 1e300, 1e300};
      p.hi = {-1e300, -1e300, -1e300};
      const std::int64_t count = patch.control_point_count();
      for (std::int64_t i = 0; i < count; ++i) {
        const double* q = &model.points[std::size_t(4 * (patch.offset + i))];
        for (int k = 0; k < 3; ++k) {
          p.c[k].push_back(q[k] / q[3]);
          p.lo[k] = std::min(p.lo[k], q[k] / q[3]);
          p.hi[k] = std::max(p.hi[k], q[k] / q[3]);
        }
      }
      out.push_back(std::move(p));
    }
  return out;
}

// A coordinate of a piece as a polynomial in variables (var_u, var_v) of `vars` (var_u < var_v).
BernsteinPoly surface_coord(const SurfacePiece& p, int k, int var_u, int var_v, int vars) {
  BernsteinPoly q;
  q.degree.assign(std::size_t(vars), 0);
  q.degree[var_u] = p.du;
  q.degree[var_v] = p.dv;
  q.coef = p.c[k];  // var_u before var_v, so the row-major layouts agree
  return q;
}

SurfacePolys surface_polys(const SurfacePiece& p, int var_u, int var_v, int vars) {
  SurfacePolys s;
  for (int k = 0; k < 3; ++k) {
    s.x[k] = surface_coord(p, k, var_u, var_v, vars);
    s.xu[k] = derivative(s.x[k], var_u);
    s.xv[k] = derivative(s.x[k], var_v);
  }
  return s;
}

std::array<BernsteinPoly, 3> cross(const std::array<BernsteinPoly, 3>& a, const std::array<BernsteinPoly, 3>& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
BernsteinPoly dot(const std::array<BernsteinPoly, 3>& a, const std::array<BernsteinPoly, 3>& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

bool boxes_meet(const Vec3& alo, const Vec3& ahi, const Vec3& blo, const Vec3& bhi) {
  for (int k = 0; k < 3; ++k) {
    const double pad = 1e-12 * (1 + std::abs(alo[k]) + std::abs(ahi[k]));
    if (alo[k] > bhi[k] + pad || blo[k] > ahi[k] + pad) return false;
  }
  return true;
}

PieceCoords piece_coords(const SurfacePiece& p) {
  PieceCoords c;
  for (int k = 0; k < 3; ++k) c[std::size_t(k)] = surface_coord(p, k, 0, 1, 2);
  return c;
}
Vec3 piece_point(const PieceCoords& c, double u, double v) {
  const double x[2] = {u, v};
  return {c[0].evaluate(x), c[1].evaluate(x), c[2].evaluate(x)};
}

NormalCone normal_cone(const SurfacePiece& p) {
  const SurfacePolys s = surface_polys(p, 0, 1, 2);
  const auto n = cross(s.xu, s.xv);
  NormalCone cone;
  Vec3 sum{};
  for (std::size_t i = 0; i < n[0].coef.size(); ++i) {
    const double len = std::sqrt(n[0].coef[i] * n[0].coef[i] + n[1].coef[i] * n[1].coef[i] + n[2].coef[i] * n[2].coef[i]);
    if (len > 0)
      for (int c = 0; c < 3; ++c) sum[std::size_t(c)] += n[std::size_t(c)].coef[i] / len;
  }
  const double len = std::sqrt(sum[0] * sum[0] + sum[1] * sum[1] + sum[2] * sum[2]);
  if (!(len > 0)) return cone;
  for (int c = 0; c < 3; ++c) cone.axis[std::size_t(c)] = sum[std::size_t(c)] / len;
  double worst = 0;
  for (std::size_t i = 0; i < n[0].coef.size(); ++i) {
    const double x = n[0].coef[i], y = n[1].coef[i], z = n[2].coef[i], l = std::sqrt(x * x + y * y + z * z);
    if (!(l > 0)) return NormalCone{};  // a vanishing coefficient vector: no bound
    const double c = (x * cone.axis[0] + y * cone.axis[1] + z * cone.axis[2]) / l;
    worst = std::max(worst, std::acos(std::clamp(c, -1.0, 1.0)));
  }
  cone.half_angle = worst;
  return cone;
}
// Normals of the two pieces can be parallel (same or opposite direction) only when their cones allow it.
bool cones_allow_parallel(const NormalCone& a, const NormalCone& b) {
  if (a.half_angle + b.half_angle >= 1.5707963267948966) return true;
  const double c = std::abs(a.axis[0] * b.axis[0] + a.axis[1] * b.axis[1] + a.axis[2] * b.axis[2]);
  const double angle = std::acos(std::clamp(c, 0.0, 1.0));  // between the axis lines
  return angle <= a.half_angle + b.half_angle + 1e-9;
}

SolverOptions quiet(const SolverOptions& o) {
  SolverOptions q = o;
  q.progress = nullptr;  // one progress bar would not describe many systems
  return q;
}
int thread_count(const SolverOptions& o) { return cpu_thread_count(o.threads); }

double piece_extent(const SurfacePiece& p) {
  double extent = 0;
  for (int k = 0; k < 3; ++k) extent = std::max(extent, p.hi[k] - p.lo[k]);
  return extent;
}

double piece_tolerance(const SurfacePiece& p) {
  double far = 0;
  for (int k = 0; k < 3; ++k) far = std::max({far, std::abs(p.lo[k]), std::abs(p.hi[k])});
  return 1e-12 * far + 1e-10 * piece_extent(p);
}

SurfacePiece elevated(const SurfacePiece& p, int du, int dv) {
  SurfacePiece out = p;
  auto raise = [&](bool along_u) {
    const int nu = out.du + 1, nv = out.dv + 1;
    const int mu = along_u ? nu + 1 : nu, mv = along_u ? nv : nv + 1;
    const int n = along_u ? out.du : out.dv;  // the degree being raised
    for (auto& coord : out.c) {
      std::vector<double> next(std::size_t(mu) * std::size_t(mv));
      auto at = [&](int i, int j) { return coord[std::size_t(i) * std::size_t(nv) + std::size_t(j)]; };
      for (int i = 0; i < mu; ++i)
        for (int j = 0; j < mv; ++j) {
          const int k = along_u ? i : j;  // index along the raised direction
          const double a = double(k) / double(n + 1);
          double v = 0;
          if (k > 0) v += a * (along_u ? at(i - 1, j) : at(i, j - 1));
          if (k <= n) v += (1 - a) * at(i, j);
          next[std::size_t(i) * std::size_t(mv) + std::size_t(j)] = v;
        }
      coord = std::move(next);
    }
    (along_u ? out.du : out.dv) += 1;
  };
  while (out.du < du) raise(true);
  while (out.dv < dv) raise(false);
  return out;
}

namespace {

// Control points of p and q (same degrees) agree under the symmetry `sym` (bit 0 flips u, bit 1 flips v, bit 2
// swaps them) for every map.
bool nets_agree(const SurfacePiece& p, const SurfacePiece& q, int sym, const std::vector<std::array<double, 4>>& maps,
                double tol) {
  const bool swap = sym & 4, flip_u = sym & 1, flip_v = sym & 2;
  for (int i = 0; i <= p.du; ++i)
    for (int j = 0; j <= p.dv; ++j) {
      const int a = flip_u ? p.du - i : i, b = flip_v ? p.dv - j : j;
      const std::size_t from = std::size_t(i) * std::size_t(p.dv + 1) + std::size_t(j);
      const std::size_t to = swap ? std::size_t(b) * std::size_t(p.du + 1) + std::size_t(a)
                                  : std::size_t(a) * std::size_t(p.dv + 1) + std::size_t(b);
      for (const auto& m : maps)
        for (std::size_t k = 0; k < 3; ++k)
          if (!(std::abs(m[0] * p.c[k][from] + m[k + 1] - q.c[k][to]) <= tol)) return false;
    }
  return true;
}

// The piece over the part [u0, u1] x [v0, v1] of its parameter box.
SurfacePiece restricted(const SurfacePiece& p, double u0, double u1, double v0, double v1) {
  SurfacePiece out = p;
  const double su = p.u1 - p.u0, sv = p.v1 - p.v0;
  for (int k = 0; k < 3; ++k) {
    BernsteinPoly b = surface_coord(p, k, 0, 1, 2);
    b = restrict_to(b, 0, (u0 - p.u0) / su, (u1 - p.u0) / su);
    b = restrict_to(b, 1, (v0 - p.v0) / sv, (v1 - p.v0) / sv);
    out.c[std::size_t(k)] = std::move(b.coef);
  }
  out.u0 = u0, out.u1 = u1, out.v0 = v0, out.v1 = v1;
  return out;
}

}  // namespace

Coincidence coincidence(const SurfacePiece& p, const SurfacePiece& q, const std::vector<std::array<double, 4>>& maps) {
  const double tol = piece_tolerance(q);
  Coincidence out;
  for (int sym = 0; sym < 8 && !out.found; ++sym) {
    // p's (u, v) run along q's (v, u) when swapped: raise both to the larger degree on each pair of sides.
    const bool swap = sym & 4;
    const int du = std::max(p.du, swap ? q.dv : q.du), dv = std::max(p.dv, swap ? q.du : q.dv);
    out.found = nets_agree(elevated(p, du, dv), elevated(q, swap ? dv : du, swap ? du : dv), sym, maps, tol);
  }
  if (out.found) {
    out.lo = {p.u0, p.v0, q.u0, q.v0};
    out.hi = {p.u1, p.v1, q.u1, q.v1};
    return out;
  }
  // Other knots: the part both parameter boxes share, when it has an area and is not both whole boxes.
  const double u0 = std::max(p.u0, q.u0), u1 = std::min(p.u1, q.u1), v0 = std::max(p.v0, q.v0), v1 = std::min(p.v1, q.v1);
  if (!(u0 < u1 && v0 < v1)) return out;
  if (u0 == p.u0 && u1 == p.u1 && v0 == p.v0 && v1 == p.v1 && u0 == q.u0 && u1 == q.u1 && v0 == q.v0 && v1 == q.v1) return out;
  const int du = std::max(p.du, q.du), dv = std::max(p.dv, q.dv);
  out.found = nets_agree(elevated(restricted(p, u0, u1, v0, v1), du, dv), elevated(restricted(q, u0, u1, v0, v1), du, dv), 0,
                         maps, tol);
  out.lo = {u0, v0, u0, v0};
  out.hi = {u1, v1, u1, v1};
  return out;
}

PiecePlane piece_plane(const SurfacePiece& p) {
  PiecePlane out;
  const int nu = p.du + 1, nv = p.dv + 1;
  if (nu < 2 || nv < 2) return out;
  auto at = [&](int i, int j) {
    const std::size_t q = std::size_t(i) * std::size_t(nv) + std::size_t(j);
    return Vec3{p.c[0][q], p.c[1][q], p.c[2][q]};
  };
  // Newell's normal of the control net's boundary: defined for nets with collapsed edges too.
  std::vector<Vec3> loop;
  for (int j = 0; j < nv - 1; ++j) loop.push_back(at(0, j));
  for (int i = 0; i < nu - 1; ++i) loop.push_back(at(i, nv - 1));
  for (int j = nv - 1; j > 0; --j) loop.push_back(at(nu - 1, j));
  for (int i = nu - 1; i > 0; --i) loop.push_back(at(i, 0));
  Vec3 n{};
  for (std::size_t k = 0; k < loop.size(); ++k) {
    const Vec3 &a = loop[k], &b = loop[(k + 1) % loop.size()];
    n[0] += (a[1] - b[1]) * (a[2] + b[2]);
    n[1] += (a[2] - b[2]) * (a[0] + b[0]);
    n[2] += (a[0] - b[0]) * (a[1] + b[1]);
  }
  const double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  const double extent = piece_extent(p);
  // A zero-area net has no plane; neither has a normal made of rounding (the net's area is its length / 2).
  if (!(len > 1e-12 * extent * extent)) return out;
  for (double& c : n) c /= len;
  out.tol = piece_tolerance(p);
  out.angle_tol = out.tol / extent;
  const std::size_t count = p.c[0].size();
  double sum = 0;
  for (std::size_t q = 0; q < count; ++q) sum += n[0] * p.c[0][q] + n[1] * p.c[1][q] + n[2] * p.c[2][q];
  out.d = sum / double(count);
  for (std::size_t q = 0; q < count; ++q)
    if (!(std::abs(n[0] * p.c[0][q] + n[1] * p.c[1][q] + n[2] * p.c[2][q] - out.d) <= out.tol)) return out;
  out.n = n;
  out.planar = true;
  return out;
}

bool parallel_planes(const PiecePlane& a, const PiecePlane& b) {
  if (!a.planar || !b.planar) return false;
  const Vec3 c{a.n[1] * b.n[2] - a.n[2] * b.n[1], a.n[2] * b.n[0] - a.n[0] * b.n[2], a.n[0] * b.n[1] - a.n[1] * b.n[0]};
  return std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]) <= std::max(a.angle_tol, b.angle_tol);
}

bool coplanar(const PiecePlane& a, const SurfacePiece& b, const PiecePlane& bp) {
  if (!parallel_planes(a, bp)) return false;
  const double tol = std::max(a.tol, bp.tol);
  for (std::size_t q = 0; q < b.c[0].size(); ++q)
    if (!(std::abs(a.n[0] * b.c[0][q] + a.n[1] * b.c[1][q] + a.n[2] * b.c[2][q] - a.d) <= tol)) return false;
  return true;
}

// Removes near-duplicate points (within `merge` in every coordinate), keeping the first; returns kept indices.
// The points are samples of per-piece systems in piece-normalised coordinates (piece index + local parameter),
// each system's samples already merged: two systems' samples can coincide only where their pieces meet, so only
// points within `merge` of a piece boundary (an integer coordinate) are compared.
std::vector<std::size_t> unique_points(const double* pts, std::size_t count, std::size_t n, double merge) {
  std::vector<std::size_t> kept;
  kept.reserve(count);
  solver::PointGrid grid(n, merge);
  for (std::size_t i = 0; i < count; ++i) {
    const double* p = pts + i * n;
    bool edge = false;
    for (std::size_t k = 0; k < n; ++k) edge = edge || std::abs(p[k] - std::round(p[k])) <= merge;
    if (!edge) {
      kept.push_back(i);
      continue;
    }
    bool dup = false;
    grid.near(p, [&](std::size_t j) {
      double d = 0;
      for (std::size_t k = 0; k < n; ++k) d = std::max(d, std::abs(p[k] - pts[j * n + k]));
      dup = dup || d <= merge;
    });
    if (dup) continue;
    grid.insert(p, i);
    kept.push_back(i);
  }
  return kept;
}

}  // namespace parasurf::solver
