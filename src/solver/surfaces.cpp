// Surface applications of the subdivision solver (Park, Elber, Kim, Kim, Seong, CAD 43 (2011), sections 6.2, 6.3
// and 6.5; Elber & Kim, "Geometric constraint solver using multivariate rational spline functions", 2001, for the
// bisector formulation): surface-surface intersection curves, contact points of a surface moving by scale and
// translation against another, and point samples of surface-surface bisectors; plus the planar curve-curve
// bisector. B-spline inputs are split into Bézier pieces by knot insertion and the systems are built exactly in
// Bernstein form per piece combination, after a bounding-box test that skips combinations that cannot meet.
#include <algorithm>
#include <cmath>
#include <omp.h>
#include <unordered_map>

#include "core/eigen.hpp"
#include "core/region_errors.hpp"
#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"
#include "point_grid.hpp"

namespace parasurf {

namespace {

using Vec3 = std::array<double, 3>;

struct SurfacePiece {
  int du = 0, dv = 0;
  std::array<std::vector<double>, 3> c;  // coordinates, (du + 1)(dv + 1) row-major (i along u)
  double u0 = 0, u1 = 1, v0 = 0, v1 = 1;
  int iu = 0, iv = 0;  // span indices
  Vec3 lo{}, hi{};
};

std::vector<std::pair<double, double>> spans(const std::vector<double>& knots, int p, int count) {
  std::vector<std::pair<double, double>> out;
  for (int k = p; k < count; ++k)
    if (knots[std::size_t(k + 1)] > knots[std::size_t(k)]) out.emplace_back(knots[std::size_t(k)], knots[std::size_t(k + 1)]);
  return out;
}

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

struct SurfacePolys {
  std::array<BernsteinPoly, 3> x, xu, xv;
};
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

// A piece's coordinates as polynomials in its (u, v), made once for the points evaluated on it.
using PieceCoords = std::array<BernsteinPoly, 3>;
PieceCoords piece_coords(const SurfacePiece& p) {
  PieceCoords c;
  for (int k = 0; k < 3; ++k) c[std::size_t(k)] = surface_coord(p, k, 0, 1, 2);
  return c;
}
Vec3 piece_point(const PieceCoords& c, double u, double v) {
  const double x[2] = {u, v};
  return {c[0].evaluate(x), c[1].evaluate(x), c[2].evaluate(x)};
}

// A cone that holds every normal direction of a piece (Sederberg & Meyers' normal cones): the normal Su x Sv is a
// polynomial whose coefficient vectors span it. Half angle pi when they do not lie in one open half-space.
struct NormalCone {
  Vec3 axis{};
  double half_angle = 3.14159265358979323846;
};
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

// Removes near-duplicate points (within `merge` in every coordinate), keeping the first; returns kept indices.
// The points are samples of per-piece systems in piece-normalised coordinates (piece index + local parameter),
// each system's samples already merged: two systems' samples can coincide only where their pieces meet, so only
// points within `merge` of a piece boundary (an integer coordinate) are compared.
std::vector<std::size_t> unique_points(const std::vector<std::vector<double>>& pts, double merge) {
  std::vector<std::size_t> kept;
  if (pts.empty()) return kept;
  const std::size_t n = pts[0].size();
  solver::PointGrid grid(n, merge);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    bool edge = false;
    for (std::size_t k = 0; k < n; ++k) edge = edge || std::abs(pts[i][k] - std::round(pts[i][k])) <= merge;
    if (!edge) {
      kept.push_back(i);
      continue;
    }
    bool dup = false;
    grid.near(pts[i].data(), [&](std::size_t j) {
      double d = 0;
      for (std::size_t k = 0; k < n; ++k) d = std::max(d, std::abs(pts[i][k] - pts[j][k]));
      dup = dup || d <= merge;
    });
    if (dup) continue;
    grid.insert(pts[i].data(), i);
    kept.push_back(i);
  }
  return kept;
}

// Samples of a 2-D part of the intersection (surfaces that coincide over an area), among `pts` (piece-normalised
// (u1, v1, u2, v2)). There the system's 3 x 4 Jacobian has rank 2 (the normals are parallel), which alone also holds
// along a curve of tangential contact; an area is told from a curve by its samples' neighbours: within two sample
// spacings a curve has about 4, an area about 12. Returns, per sample, its region (or -1), and the region count.
std::pair<std::vector<int>, int> coincident_regions(const std::vector<std::vector<double>>& pts,
                                                    const std::vector<std::vector<BernsteinPoly>>& systems,
                                                    const std::vector<std::pair<std::size_t, std::size_t>>& origin,
                                                    const std::vector<SolutionSetResult>& found, double resolution,
                                                    int threads) {
  const std::size_t n = pts.size();
  std::vector<int> region(n, -1);
  std::vector<char> flat(n, 0);
#pragma omp parallel for schedule(dynamic, 256) num_threads(threads) if (threads > 1)
  for (std::int64_t i = 0; i < std::int64_t(n); ++i) {
    const auto [k, smp] = origin[std::size_t(i)];
    const double* x = found[k].samples[smp].x.data();
    Eigen::Matrix<double, 3, 4> jac;
    for (int r = 0; r < 3; ++r) {
      double g[4];
      systems[k][std::size_t(r)].evaluate_with_gradient(x, g);
      for (int c = 0; c < 4; ++c) jac(r, c) = g[c];
    }
    const Eigen::JacobiSVD<Eigen::Matrix<double, 3, 4>> svd(jac);
    const auto sv = svd.singularValues();
    flat[std::size_t(i)] = !(sv(2) > 1e-7 * sv(0));
  }
  const double reach = 2 * resolution;
  solver::PointGrid grid(4, reach);
  for (std::size_t i = 0; i < n; ++i)
    if (flat[i]) grid.insert(pts[i].data(), i);
  auto flat_near = [&](std::size_t i, auto&& visit) {
    grid.near(pts[i].data(), [&](std::size_t j) {
      double d = 0;
      for (int c = 0; c < 4; ++c) d = std::max(d, std::abs(pts[i][std::size_t(c)] - pts[j][std::size_t(c)]));
      if (j != i && d <= reach) visit(j);
    });
  };
  std::vector<char> area(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (flat[i]) {
      int count = 0;
      flat_near(i, [&](std::size_t) { ++count; });
      area[i] = count >= 8;
    }
  // Regions: an area sample's flat neighbours join it (its border samples have fewer neighbours of their own).
  int regions = 0;
  std::vector<std::size_t> stack;
  for (std::size_t i = 0; i < n; ++i) {
    if (!area[i] || region[i] >= 0) continue;
    region[i] = regions;
    stack.push_back(i);
    while (!stack.empty()) {
      const std::size_t a = stack.back();
      stack.pop_back();
      flat_near(a, [&](std::size_t j) {
        if (region[j] >= 0) return;
        region[j] = regions;
        if (area[j]) stack.push_back(j);
      });
    }
    ++regions;
  }
  // A region must be an area on the first surface, at least two samples wide both ways: the band of samples along a
  // tangential contact is a curve, however crowded.
  std::vector<double> lo(std::size_t(regions) * 2, HUGE_VAL), hi(std::size_t(regions) * 2, -HUGE_VAL);
  for (std::size_t i = 0; i < n; ++i)
    if (region[i] >= 0)
      for (int c = 0; c < 2; ++c) {
        const std::size_t at = std::size_t(region[i]) * 2 + std::size_t(c);
        lo[at] = std::min(lo[at], pts[i][std::size_t(c)]), hi[at] = std::max(hi[at], pts[i][std::size_t(c)]);
      }
  std::vector<int> renumber(std::size_t(regions), -1);
  int kept = 0;
  for (int r = 0; r < regions; ++r)
    if (hi[std::size_t(2 * r)] - lo[std::size_t(2 * r)] >= 2 * resolution && hi[std::size_t(2 * r + 1)] - lo[std::size_t(2 * r + 1)] >= 2 * resolution)
      renumber[std::size_t(r)] = kept++;
  for (int& r : region)
    if (r >= 0) r = renumber[std::size_t(r)];
  return {std::move(region), kept};
}

}  // namespace

// ------------------------------------------------------------------------------------------------ intersection

SurfaceIntersectionResult intersect_surfaces(const BSplineSurface& a, const BSplineSurface& b, double resolution,
                                             const SolverOptions& o) {
  if (!(resolution >= 1e-6) || resolution > 0.25)
    throw Error(ErrorKind::InvalidArgument, "surface intersection: resolution must be in [1e-6, 0.25]");
  const auto pa = surface_pieces(a, "surface 1"), pb = surface_pieces(b, "surface 2");
  std::vector<std::pair<int, int>> pairs;
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (std::size_t j = 0; j < pb.size(); ++j)
      if (boxes_meet(pa[i].lo, pa[i].hi, pb[j].lo, pb[j].hi)) pairs.emplace_back(int(i), int(j));
  std::vector<std::vector<BernsteinPoly>> systems(pairs.size());
  core::RegionErrors errors_0;
#pragma omp parallel for schedule(dynamic, 16) num_threads(thread_count(o)) if (thread_count(o) > 1)
  for (std::int64_t k = 0; k < std::int64_t(pairs.size()); ++k) {
    errors_0.capture([&] {
      const SurfacePiece &p = pa[std::size_t(pairs[std::size_t(k)].first)], &q = pb[std::size_t(pairs[std::size_t(k)].second)];
      for (int c = 0; c < 3; ++c) systems[std::size_t(k)].push_back(surface_coord(p, c, 0, 1, 4) - surface_coord(q, c, 2, 3, 4));
    });
  }
  errors_0.rethrow();
  const std::vector<SolutionSetResult> found = sample_solution_sets(systems, 4, resolution, quiet(o));
  SurfaceIntersectionResult out;
  // Samples in piece-normalised coordinates (span index + local parameter), where neighbouring pieces abut.
  std::vector<std::vector<double>> pts, tangents;
  std::vector<std::pair<std::size_t, std::size_t>> origin;  // (pair, sample)
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    if (found[k].status != "complete") out.status = found[k].status;
    const SurfacePiece &p = pa[std::size_t(pairs[k].first)], &q = pb[std::size_t(pairs[k].second)];
    for (std::size_t s = 0; s < found[k].samples.size(); ++s) {
      const auto& x = found[k].samples[s].x;
      pts.push_back({p.iu + x[0], p.iv + x[1], q.iu + x[2], q.iv + x[3]});
      tangents.push_back(found[k].samples[s].tangent);
      origin.emplace_back(k, s);
    }
  }
  const std::vector<std::size_t> unique = unique_points(pts, 0.25 * resolution);
  // Areas where the surfaces coincide are regions, and their samples stay out of the curves.
  std::vector<std::vector<double>> up;
  std::vector<std::pair<std::size_t, std::size_t>> uo;
  for (std::size_t i : unique) up.push_back(pts[i]), uo.push_back(origin[i]);
  const auto [region, regions] = coincident_regions(up, systems, uo, found, resolution, thread_count(o));
  out.overlaps.assign(std::size_t(regions), SurfaceOverlap{});
  for (auto& v : out.overlaps) v.lo.fill(HUGE_VAL), v.hi.fill(-HUGE_VAL);
  std::vector<std::size_t> kept;
  for (std::size_t u = 0; u < unique.size(); ++u) {
    if (region[u] < 0) {
      kept.push_back(unique[u]);
      continue;
    }
    const auto [k, smp] = origin[unique[u]];
    const SurfacePiece &p = pa[std::size_t(pairs[k].first)], &q = pb[std::size_t(pairs[k].second)];
    const auto& x = found[k].samples[smp].x;
    const double par[4] = {p.u0 + x[0] * (p.u1 - p.u0), p.v0 + x[1] * (p.v1 - p.v0), q.u0 + x[2] * (q.u1 - q.u0),
                           q.v0 + x[3] * (q.v1 - q.v0)};
    SurfaceOverlap& v = out.overlaps[std::size_t(region[u])];
    for (int c = 0; c < 4; ++c) v.lo[std::size_t(c)] = std::min(v.lo[std::size_t(c)], par[c]), v.hi[std::size_t(c)] = std::max(v.hi[std::size_t(c)], par[c]);
    ++v.samples;
  }
  std::vector<std::vector<double>> kp, kt;
  for (std::size_t i : kept) kp.push_back(pts[i]), kt.push_back(tangents[i]);
  std::vector<PieceCoords> coords(pa.size());
  for (std::size_t i = 0; i < pa.size(); ++i) coords[i] = piece_coords(pa[i]);
  for (const auto& line : link_polylines(kp, kt, resolution, o.threads)) {
    IntersectionCurve c;
    c.closed = line.size() > 3 && line.front() == line.back();
    for (std::size_t idx : line) {
      const auto [k, s] = origin[kept[idx]];
      const SurfacePiece &p = pa[std::size_t(pairs[k].first)], &q = pb[std::size_t(pairs[k].second)];
      const auto& x = found[k].samples[s].x;
      c.params.push_back({p.u0 + x[0] * (p.u1 - p.u0), p.v0 + x[1] * (p.v1 - p.v0), q.u0 + x[2] * (q.u1 - q.u0), q.v0 + x[3] * (q.v1 - q.v0)});
      c.points.push_back(piece_point(coords[std::size_t(pairs[k].first)], x[0], x[1]));
      c.residual = std::max(c.residual, found[k].samples[s].residual);
    }
    out.curves.push_back(std::move(c));
  }
  std::sort(out.curves.begin(), out.curves.end(), [](const auto& l, const auto& r) { return l.points.size() > r.points.size(); });
  return out;
}

// ------------------------------------------------------------------------------------------------ contacts

ContactResult contact_points(const BSplineSurface& moving, const BSplineSurface& fixed, const Motion& motion, const SolverOptions& o) {
  const auto pa = surface_pieces(moving, "moving surface"), pb = surface_pieces(fixed, "fixed surface");
  // The motion's four coordinates (scale, tx, ty, tz), split into Bézier pieces by the curve routine, two at a time.
  if (motion.points.empty()) throw Error(ErrorKind::InvalidArgument, "motion: no control points");
  BSplineCurve2 st{motion.degree, motion.knots, {}}, tt{motion.degree, motion.knots, {}};
  for (const auto& m : motion.points) {
    for (double v : m)
      if (!std::isfinite(v)) throw Error(ErrorKind::InvalidArgument, "motion: a control point is not finite");
    if (!(m[0] > 0)) throw Error(ErrorKind::InvalidArgument, "motion: the scale must be positive at every control point");
    st.points.push_back({m[0], m[1]});
    tt.points.push_back({m[2], m[3]});
  }
  const auto ms = bspline_to_bezier(st), mt = bspline_to_bezier(tt);
  struct MotionPiece {
    std::array<std::vector<double>, 4> c;  // scale, tx, ty, tz
    double t0, t1;
    Vec3 lo, hi;
    double s_lo, s_hi;
  };
  std::vector<MotionPiece> mp;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    MotionPiece m;
    m.t0 = ms[i].u0, m.t1 = ms[i].u1;
    for (std::size_t j = 0; j < ms[i].curve.points.size(); ++j) {
      m.c[0].push_back(ms[i].curve.points[j][0]);
      m.c[1].push_back(ms[i].curve.points[j][1]);
      m.c[2].push_back(mt[i].curve.points[j][0]);
      m.c[3].push_back(mt[i].curve.points[j][1]);
    }
    m.s_lo = *std::min_element(m.c[0].begin(), m.c[0].end());
    m.s_hi = *std::max_element(m.c[0].begin(), m.c[0].end());
    for (int k = 0; k < 3; ++k) {
      m.lo[k] = *std::min_element(m.c[k + 1].begin(), m.c[k + 1].end());
      m.hi[k] = *std::max_element(m.c[k + 1].begin(), m.c[k + 1].end());
    }
    mp.push_back(std::move(m));
  }
  // Combinations whose moved box meets the fixed piece's box: s * [lo, hi] + T spans the products' corners.
  struct Combo {
    int a, b, m;
  };
  // Contact needs parallel normals (the motion scales uniformly and translates): piece pairs whose normal cones
  // forbid it are skipped for every motion piece.
  std::vector<NormalCone> ca(pa.size()), cb(pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) ca[i] = normal_cone(pa[i]);
  for (std::size_t j = 0; j < pb.size(); ++j) cb[j] = normal_cone(pb[j]);
  std::vector<char> parallel(pa.size() * pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (std::size_t j = 0; j < pb.size(); ++j) parallel[i * pb.size() + j] = cones_allow_parallel(ca[i], cb[j]);
  std::vector<Combo> combos;
  for (std::size_t m = 0; m < mp.size(); ++m)
    for (std::size_t i = 0; i < pa.size(); ++i) {
      Vec3 lo{}, hi{};
      for (int k = 0; k < 3; ++k) {
        const double c[4] = {mp[m].s_lo * pa[i].lo[k], mp[m].s_lo * pa[i].hi[k], mp[m].s_hi * pa[i].lo[k], mp[m].s_hi * pa[i].hi[k]};
        lo[k] = *std::min_element(c, c + 4) + mp[m].lo[k];
        hi[k] = *std::max_element(c, c + 4) + mp[m].hi[k];
      }
      for (std::size_t j = 0; j < pb.size(); ++j)
        if (parallel[i * pb.size() + j] && boxes_meet(lo, hi, pb[j].lo, pb[j].hi)) combos.push_back({int(i), int(j), int(m)});
    }
  // Variables (u1, v1, u2, v2, t). Per-piece parts are formed once and combined per system.
  std::vector<SurfacePolys> s1(pa.size()), s2(pb.size());
  std::vector<std::array<BernsteinPoly, 3>> n2(pb.size());
  std::vector<std::array<BernsteinPoly, 4>> motion_polys(mp.size());
  core::RegionErrors errors_1;
#pragma omp parallel for schedule(dynamic, 1) num_threads(thread_count(o)) if (thread_count(o) > 1)
  for (std::int64_t i = 0; i < std::int64_t(std::max(pa.size(), pb.size())); ++i) {
    errors_1.capture([&] {
      if (std::size_t(i) < pa.size()) s1[std::size_t(i)] = surface_polys(pa[std::size_t(i)], 0, 1, 5);
      if (std::size_t(i) < pb.size()) {
        s2[std::size_t(i)] = surface_polys(pb[std::size_t(i)], 2, 3, 5);
        n2[std::size_t(i)] = cross(s2[std::size_t(i)].xu, s2[std::size_t(i)].xv);
      }
    });
  }
  errors_1.rethrow();
  for (std::size_t i = 0; i < mp.size(); ++i)
    for (int c = 0; c < 4; ++c) motion_polys[i][std::size_t(c)] = BernsteinPoly::univariate(mp[i].c[std::size_t(c)], 4, 5);
  std::vector<std::vector<BernsteinPoly>> systems(combos.size());
  core::RegionErrors errors_2;
#pragma omp parallel for schedule(dynamic, 4) num_threads(thread_count(o)) if (thread_count(o) > 1)
  for (std::int64_t k = 0; k < std::int64_t(combos.size()); ++k) {
    errors_2.capture([&] {
      const Combo& cb = combos[std::size_t(k)];
      const SurfacePolys &p = s1[std::size_t(cb.a)], &q = s2[std::size_t(cb.b)];
      const auto& m = motion_polys[std::size_t(cb.m)];
      std::vector<BernsteinPoly>& eq = systems[std::size_t(k)];
      for (int c = 0; c < 3; ++c) eq.push_back(m[0] * p.x[c] + m[std::size_t(c + 1)] - q.x[c]);
      // Tangent planes agree: both tangents of the moved surface (its scale is positive) are normal to S2's normal.
      eq.push_back(dot(p.xu, n2[std::size_t(cb.b)]));
      eq.push_back(dot(p.xv, n2[std::size_t(cb.b)]));
    });
  }
  errors_2.rethrow();
  const std::vector<SolveResult> found = solve_systems(systems, quiet(o));
  ContactResult out;
  for (std::size_t k = 0; k < combos.size(); ++k) {
    if (found[k].status != "complete") out.status = found[k].status;
    if (!found[k].regions.empty() && out.status == "complete")
      out.status = "continuum: the surfaces stay in contact along a region (" + std::to_string(found[k].regions.size()) + " region(s))";
    const Combo& cb = combos[k];
    const SurfacePiece &p = pa[std::size_t(cb.a)], &q = pb[std::size_t(cb.b)];
    const MotionPiece& m = mp[std::size_t(cb.m)];
    for (const auto& r : found[k].roots) {
      ContactPoint c;
      c.u1 = p.u0 + r.x[0] * (p.u1 - p.u0);
      c.v1 = p.v0 + r.x[1] * (p.v1 - p.v0);
      c.u2 = q.u0 + r.x[2] * (q.u1 - q.u0);
      c.v2 = q.v0 + r.x[3] * (q.v1 - q.v0);
      c.t = m.t0 + r.x[4] * (m.t1 - m.t0);
      c.point = piece_point(piece_coords(q), r.x[2], r.x[3]);
      c.residual = r.residual;
      c.proved_single = r.proved_single;
      bool dup = false;  // a root on a piece boundary is found by both pieces
      for (const auto& d : out.contacts)
        dup = dup || (std::abs(d.u1 - c.u1) + std::abs(d.v1 - c.v1) + std::abs(d.u2 - c.u2) + std::abs(d.v2 - c.v2) + std::abs(d.t - c.t) <= 1e-9);
      if (!dup) out.contacts.push_back(c);
    }
  }
  std::sort(out.contacts.begin(), out.contacts.end(), [](const auto& l, const auto& r) { return l.t < r.t; });
  out.combinations = std::int64_t(combos.size());
  return out;
}

// ------------------------------------------------------------------------------------------------ bisectors

SurfaceBisectorResult surface_bisector(const BSplineSurface& a, const BSplineSurface& b, double resolution, const SolverOptions& o) {
  if (!(resolution >= 1e-6) || resolution > 0.5)
    throw Error(ErrorKind::InvalidArgument, "surface bisector: resolution must be in [1e-6, 0.5]");
  const auto pa = surface_pieces(a, "surface 1"), pb = surface_pieces(b, "surface 2");
  // Samples on a grid of S1's parameters (spacing `resolution` of a span): at each S1 point the two equations are
  // a square system in S2's (s, t), solved on every piece of S2. Grid points on shared piece edges are taken once.
  const int steps = std::max(1, int(std::lround(1.0 / resolution)));
  struct Task {
    int piece;
    double u, v;  // local on the piece
  };
  std::vector<Task> tasks;
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (int gu = 0; gu <= steps; ++gu)
      for (int gv = 0; gv <= steps; ++gv) {
        if ((gu == 0 && pa[i].iu > 0) || (gv == 0 && pa[i].iv > 0)) continue;  // the neighbour's last row has it
        tasks.push_back({int(i), double(gu) / steps, double(gv) / steps});
      }
  // Variables (s, t). D = S1 - S2, delta = -2 D <n1, D> + n1 |D|^2; P - S2 normal to S2: <delta, S2_s> = <delta, S2_t> = 0.
  struct Foot {
    Vec3 x1, n1;
  };
  std::vector<Foot> feet(tasks.size());
  std::vector<std::vector<BernsteinPoly>> systems(tasks.size() * pb.size());
  std::vector<SurfacePolys> s2(pb.size());
  for (std::size_t j = 0; j < pb.size(); ++j) s2[j] = surface_polys(pb[j], 0, 1, 2);
  core::RegionErrors errors_3;
#pragma omp parallel for schedule(dynamic, 4) num_threads(thread_count(o)) if (thread_count(o) > 1)
  for (std::int64_t k = 0; k < std::int64_t(tasks.size()); ++k) {
    errors_3.capture([&] {
      const Task& task = tasks[std::size_t(k)];
      const double uv[2] = {task.u, task.v};
      const SurfacePolys s1 = surface_polys(pa[std::size_t(task.piece)], 0, 1, 2);
      Vec3 x1{}, xu{}, xv{};
      for (int c = 0; c < 3; ++c) x1[c] = s1.x[c].evaluate(uv), xu[c] = s1.xu[c].evaluate(uv), xv[c] = s1.xv[c].evaluate(uv);
      const Vec3 n1{xu[1] * xv[2] - xu[2] * xv[1], xu[2] * xv[0] - xu[0] * xv[2], xu[0] * xv[1] - xu[1] * xv[0]};
      feet[std::size_t(k)] = {x1, n1};
      for (std::size_t j = 0; j < pb.size(); ++j) {
        std::array<BernsteinPoly, 3> d, nc;
        for (int c = 0; c < 3; ++c) {
          d[c] = BernsteinPoly::constant(2, x1[c]) - s2[j].x[c];
          nc[c] = BernsteinPoly::constant(2, n1[c]);
        }
        const BernsteinPoly g = dot(nc, d), dd = dot(d, d);
        std::array<BernsteinPoly, 3> delta;
        for (int c = 0; c < 3; ++c) delta[c] = -2.0 * (d[c] * g) + n1[c] * dd;
        systems[std::size_t(k) * pb.size() + j] = {dot(delta, s2[j].xu), dot(delta, s2[j].xv)};
      }
    });
  }
  errors_3.rethrow();
  const std::vector<SolveResult> solved = solve_systems(systems, quiet(o));
  std::vector<std::vector<BisectorSample>> found(tasks.size());
  std::vector<std::string> status(tasks.size(), "complete");
  for (std::size_t k = 0; k < tasks.size(); ++k) {
    const Task& task = tasks[k];
    const SurfacePiece& p = pa[std::size_t(task.piece)];
    const auto& [x1, n1] = feet[k];
    for (std::size_t j = 0; j < pb.size(); ++j) {
      const SurfacePiece& q = pb[j];
      const SolveResult& r = solved[k * pb.size() + j];
      if (r.status != "complete") status[k] = r.status;
      for (const auto& root : r.roots) {
        const double* x = root.x.data();
        double dv[3], gd = 0, d2 = 0;
        const double n2 = n1[0] * n1[0] + n1[1] * n1[1] + n1[2] * n1[2];
        for (int c = 0; c < 3; ++c) {
          dv[c] = x1[c] - s2[j].x[c].evaluate(x);
          gd += n1[c] * dv[c];
          d2 += dv[c] * dv[c];
        }
        // Points of the intersection (D = 0) and feet whose chord lies in S1's tangent plane (P at infinity) are
        // no bisector points.
        if (!(d2 > 1e-20) || !(std::abs(gd) > 1e-9 * std::sqrt(d2 * n2))) continue;
        const double lambda = -d2 / (2 * gd);
        BisectorSample bs;
        bs.u = p.u0 + task.u * (p.u1 - p.u0);
        bs.v = p.v0 + task.v * (p.v1 - p.v0);
        bs.s = q.u0 + x[0] * (q.u1 - q.u0);
        bs.t = q.v0 + x[1] * (q.v1 - q.v0);
        for (int c = 0; c < 3; ++c) bs.point[c] = x1[c] + lambda * n1[c];
        bool dup = false;  // a foot on a piece edge of S2 is found twice
        for (const auto& e : found[k]) dup = dup || (std::abs(e.s - bs.s) + std::abs(e.t - bs.t) <= 1e-10);
        if (!dup) found[k].push_back(bs);
      }
    }
  }
  SurfaceBisectorResult out;
  for (std::size_t k = 0; k < tasks.size(); ++k) {
    if (status[k] != "complete") out.status = status[k];
    out.samples.insert(out.samples.end(), found[k].begin(), found[k].end());
  }
  return out;
}

CurveBisectorResult curve_bisector(const BSplineCurve2& a, const BSplineCurve2& b, double resolution, const SolverOptions& o) {
  if (!(resolution >= 1e-6) || resolution > 0.25)
    throw Error(ErrorKind::InvalidArgument, "curve bisector: resolution must be in [1e-6, 0.25]");
  const auto pa = bspline_to_bezier(a), pb = bspline_to_bezier(b);
  std::vector<std::pair<int, int>> pairs;
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (std::size_t j = 0; j < pb.size(); ++j) pairs.emplace_back(int(i), int(j));
  struct Found {
    std::vector<std::array<double, 2>> st, point;
    std::vector<std::vector<double>> tangent;
    std::string status;
  };
  // Variables (s, t). The bisector point P solves <P, C1'> = <C1, C1'> and <P, C2'> = <C2, C2'> (on both normals);
  // by Cramer's rule det P = N, and |P - C1| = |P - C2| times det reads 2 <N, C2 - C1> = det (|C2|^2 - |C1|^2).
  struct Terms {
    BernsteinPoly det, nx, ny;
  };
  std::vector<Terms> terms(pairs.size());
  std::vector<std::vector<BernsteinPoly>> systems(pairs.size());
  std::vector<std::array<std::array<BernsteinPoly, 2>, 2>> tangents_of(pairs.size());
  core::RegionErrors errors_4;
#pragma omp parallel for schedule(dynamic, 4) num_threads(thread_count(o)) if (thread_count(o) > 1)
  for (std::int64_t k = 0; k < std::int64_t(pairs.size()); ++k) {
    errors_4.capture([&] {
      const BezierCurve2 &c1 = pa[std::size_t(pairs[std::size_t(k)].first)].curve, &c2 = pb[std::size_t(pairs[std::size_t(k)].second)].curve;
      std::array<BernsteinPoly, 2> x1, x2, d1, d2;
      for (int c = 0; c < 2; ++c) {
        std::vector<double> v1, v2;
        for (const auto& p : c1.points) v1.push_back(p[c]);
        for (const auto& p : c2.points) v2.push_back(p[c]);
        x1[c] = BernsteinPoly::univariate(v1, 0, 2);
        x2[c] = BernsteinPoly::univariate(v2, 1, 2);
        d1[c] = derivative(x1[c], 0);
        d2[c] = derivative(x2[c], 1);
      }
      Terms& t = terms[std::size_t(k)];
      t.det = d1[0] * d2[1] - d1[1] * d2[0];
      const BernsteinPoly k1 = x1[0] * d1[0] + x1[1] * d1[1], k2 = x2[0] * d2[0] + x2[1] * d2[1];
      t.nx = k1 * d2[1] - d1[1] * k2;
      t.ny = d1[0] * k2 - k1 * d2[0];
      systems[std::size_t(k)] = {2.0 * (t.nx * (x2[0] - x1[0]) + t.ny * (x2[1] - x1[1])) -
                                 t.det * (x2[0] * x2[0] + x2[1] * x2[1] - x1[0] * x1[0] - x1[1] * x1[1])};
      tangents_of[std::size_t(k)] = {d1, d2};
    });
  }
  errors_4.rethrow();
  const std::vector<SolutionSetResult> sets = sample_solution_sets(systems, 2, resolution, quiet(o));
  std::vector<Found> found(pairs.size());
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const Terms& t = terms[k];
    const auto& [d1, d2] = tangents_of[k];
    Found& out = found[k];
    out.status = sets[k].status;
    for (const auto& smp : sets[k].samples) {
      const double* x = smp.x.data();
      const double dt = t.det.evaluate(x);
      const double scale = std::hypot(d1[0].evaluate(x), d1[1].evaluate(x)) * std::hypot(d2[0].evaluate(x), d2[1].evaluate(x));
      if (!(std::abs(dt) > 1e-9 * scale)) continue;  // parallel normals: no single bisector point
      out.st.push_back({x[0], x[1]});
      out.point.push_back({t.nx.evaluate(x) / dt, t.ny.evaluate(x) / dt});
      out.tangent.push_back(smp.tangent);
    }
  }
  CurveBisectorResult out;
  std::vector<std::vector<double>> pts, tangents;
  std::vector<std::pair<std::size_t, std::size_t>> origin;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    if (found[k].status != "complete") out.status = found[k].status;
    for (std::size_t s = 0; s < found[k].st.size(); ++s) {
      pts.push_back({pairs[k].first + found[k].st[s][0], pairs[k].second + found[k].st[s][1]});
      tangents.push_back(found[k].tangent[s]);
      origin.emplace_back(k, s);
    }
  }
  const std::vector<std::size_t> kept = unique_points(pts, 0.25 * resolution);
  std::vector<std::vector<double>> kp, kt;
  for (std::size_t i : kept) kp.push_back(pts[i]), kt.push_back(tangents[i]);
  for (const auto& line : link_polylines(kp, kt, resolution, o.threads)) {
    BisectorCurve c;
    c.closed = line.size() > 3 && line.front() == line.back();
    for (std::size_t idx : line) {
      const auto [k, s] = origin[kept[idx]];
      const BezierPiece &p = pa[std::size_t(pairs[k].first)], &q = pb[std::size_t(pairs[k].second)];
      c.params.push_back({p.u0 + found[k].st[s][0] * (p.u1 - p.u0), q.u0 + found[k].st[s][1] * (q.u1 - q.u0)});
      c.points.push_back(found[k].point[s]);
    }
    out.curves.push_back(std::move(c));
  }
  std::sort(out.curves.begin(), out.curves.end(), [](const auto& l, const auto& r) { return l.points.size() > r.points.size(); });
  return out;
}

}  // namespace parasurf
