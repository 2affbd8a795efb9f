// Contact points of a surface moving by uniform scale and translation against a fixed one, with the subdivision
// solver (Park, Elber, Kim, Kim, Seong, CAD 43 (2011), section 6.2): T(t)[S1(u1, v1)] = S2(u2, v2) and both tangents
// of S1 normal to S2's normal, five equations in (u1, v1, u2, v2, t) per (piece, piece, motion piece) combination.
#include <algorithm>
#include <cmath>
#include <omp.h>

#include "core/region_errors.hpp"
#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"
#include "surface_pieces.hpp"
#include "system.hpp"

namespace parasurf {

using namespace solver;

namespace {

// A planar piece moved by scale and translation stays parallel to itself, so against a parallel planar piece both
// tangent conditions hold everywhere: the five equations reduce to the moved plane reaching the fixed one,
// n . (s(t) x1 + T(t)) = d2 with n . x1 = d1 on the moving piece, a polynomial in t of the motion's degree. At each
// time it holds (isolated, or over the whole motion piece) the contact set is where the moved piece overlaps the
// fixed one in their plane: a region, bounded from the pieces' overlap at that time (at five times over an interval).
void flat_contacts(const SurfacePiece& p, const PiecePlane& pp, const SurfacePiece& q, const PiecePlane& qp,
                   const std::array<std::vector<double>, 4>& motion, double t0, double t1, double s_hi, const SolverOptions& o,
                   ContactResult& out) {
  const Vec3& n = qp.n;
  double d1 = 0;
  const std::size_t count = p.c[0].size();
  for (std::size_t k = 0; k < count; ++k) d1 += n[0] * p.c[0][k] + n[1] * p.c[1][k] + n[2] * p.c[2][k];
  d1 /= double(count);
  std::vector<double> h(motion[0].size());
  double worst = 0;
  for (std::size_t k = 0; k < h.size(); ++k) {
    h[k] = motion[0][k] * d1 + n[0] * motion[1][k] + n[1] * motion[2][k] + n[2] * motion[3][k] - qp.d;
    worst = std::max(worst, std::abs(h[k]));
  }
  const double tol = qp.tol + s_hi * pp.tol;
  std::vector<double> times;  // in the motion piece's unit interval
  bool interval = false;
  if (worst <= tol) {  // in one plane throughout
    interval = true;
    times = {0, 0.25, 0.5, 0.75, 1};
  } else if (*std::min_element(h.begin(), h.end()) <= tol && *std::max_element(h.begin(), h.end()) >= -tol) {
    const SolveResult r = solve_system({BernsteinPoly::univariate(h, 0, 1)}, quiet(o));
    if (r.status != "complete") out.status = r.status;
    for (const auto& root : r.roots) times.push_back(root.x[0]);
  }
  ContactRegion region;
  region.t0 = HUGE_VAL, region.t1 = -HUGE_VAL;
  region.lo.fill(HUGE_VAL), region.hi.fill(-HUGE_VAL);
  auto take = [&](const std::array<double, 4>& lo, const std::array<double, 4>& hi) {
    for (int c = 0; c < 4; ++c)
      region.lo[std::size_t(c)] = std::min(region.lo[std::size_t(c)], lo[std::size_t(c)]),
      region.hi[std::size_t(c)] = std::max(region.hi[std::size_t(c)], hi[std::size_t(c)]);
  };
  for (const double tau : times) {
    const double x[1] = {tau};
    double m[4];
    for (int c = 0; c < 4; ++c) m[c] = BernsteinPoly::univariate(motion[std::size_t(c)], 0, 1).evaluate(x);
    SurfacePiece moved = p;
    for (int c = 0; c < 3; ++c) {
      for (double& v : moved.c[std::size_t(c)]) v = m[0] * v + m[c + 1];
      moved.lo[std::size_t(c)] = m[0] * p.lo[std::size_t(c)] + m[c + 1], moved.hi[std::size_t(c)] = m[0] * p.hi[std::size_t(c)] + m[c + 1];
    }
    if (!boxes_meet(moved.lo, moved.hi, q.lo, q.hi)) continue;
    const SurfaceIntersectionResult f = intersect_coplanar_pairs({q}, {moved}, {qp}, {{0, 0}}, 1.0 / 64, quiet(o));
    if (f.status != "complete") out.status = f.status;
    bool met = false;
    // (The fixed piece came first: its parameters lead.)
    auto swap = [](const std::array<double, 4>& x) { return std::array<double, 4>{x[2], x[3], x[0], x[1]}; };
    for (const auto& v : f.overlaps) take(swap(v.lo), swap(v.hi)), met = true;
    for (const auto& c : f.curves)  // pieces that touch along an edge only
      for (const auto& x4 : c.params) take(swap(x4), swap(x4)), met = true;
    if (!met) continue;
    const double t = t0 + tau * (t1 - t0);
    if (interval) {
      region.t0 = std::min(region.t0, t), region.t1 = std::max(region.t1, t);
    } else {
      region.t0 = region.t1 = t;
      out.regions.push_back(region);
      region.lo.fill(HUGE_VAL), region.hi.fill(-HUGE_VAL);
    }
  }
  if (interval && region.t0 <= region.t1) out.regions.push_back(region);
}

}  // namespace

// One function: the pruning of piece combinations (boxes, normal cones) and the systems built for the survivors
// share the per-piece forms made once at its start.
ContactResult contact_points(const BSplineSurface& moving, const BSplineSurface& fixed, const Motion& motion, const SolverOptions& o) {
  const auto deadline = solver::deadline_after(o.max_seconds);
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
    std::vector<std::array<double, 4>> maps;  // the Bernstein coefficients as affine maps {s, tx, ty, tz}
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
      m.maps.push_back({ms[i].curve.points[j][0], ms[i].curve.points[j][1], mt[i].curve.points[j][0], mt[i].curve.points[j][1]});
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
  std::vector<PiecePlane> planes_a(pa.size()), planes_b(pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) planes_a[i] = piece_plane(pa[i]);
  for (std::size_t j = 0; j < pb.size(); ++j) planes_b[j] = piece_plane(pb[j]);
  std::vector<Combo> combos, flat;  // flat: parallel planar pieces, solved apart (flat_contacts)
  std::vector<ContactRegion> same_regions;  // pieces that coincide throughout a motion piece
  for (std::size_t m = 0; m < mp.size(); ++m)
    for (std::size_t i = 0; i < pa.size(); ++i) {
      Vec3 lo{}, hi{};
      for (int k = 0; k < 3; ++k) {
        const double c[4] = {mp[m].s_lo * pa[i].lo[k], mp[m].s_lo * pa[i].hi[k], mp[m].s_hi * pa[i].lo[k], mp[m].s_hi * pa[i].hi[k]};
        lo[k] = *std::min_element(c, c + 4) + mp[m].lo[k];
        hi[k] = *std::max_element(c, c + 4) + mp[m].hi[k];
      }
      for (std::size_t j = 0; j < pb.size(); ++j) {
        if (!parallel[i * pb.size() + j] || !boxes_meet(lo, hi, pb[j].lo, pb[j].hi)) continue;
        if (const Coincidence same = coincidence(pa[i], pb[j], mp[m].maps); same.found) {  // in contact all the time
          ContactRegion r;
          r.t0 = mp[m].t0, r.t1 = mp[m].t1;
          r.lo = same.lo, r.hi = same.hi;
          same_regions.push_back(r);
          continue;
        }
        (parallel_planes(planes_a[i], planes_b[j]) ? flat : combos).push_back({int(i), int(j), int(m)});
      }
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
    const Combo& cb = combos[k];
    const SurfacePiece &p = pa[std::size_t(cb.a)], &q = pb[std::size_t(cb.b)];
    const MotionPiece& m = mp[std::size_t(cb.m)];
    for (const auto& g : found[k].regions) {  // a continuum of contacts the solver met (coinciding curved surfaces)
      ContactRegion r;
      r.t0 = m.t0 + g.lo[4] * (m.t1 - m.t0), r.t1 = m.t0 + g.hi[4] * (m.t1 - m.t0);
      const double span[4][2] = {{p.u0, p.u1}, {p.v0, p.v1}, {q.u0, q.u1}, {q.v0, q.v1}};
      for (int c = 0; c < 4; ++c)
        r.lo[std::size_t(c)] = span[c][0] + g.lo[std::size_t(c)] * (span[c][1] - span[c][0]),
        r.hi[std::size_t(c)] = span[c][0] + g.hi[std::size_t(c)] * (span[c][1] - span[c][0]);
      out.regions.push_back(r);
    }
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
  for (const Combo& cb : flat) {  // (each takes a few overlaps: many planar faces are held to the time limit)
    if (std::chrono::steady_clock::now() > deadline) {
      out.status = solver::time_limit_status(o.max_seconds);
      break;
    }
    if (o.stop && o.stop()) {
      out.status = "interrupted (partial result)";
      break;
    }
    const MotionPiece& m = mp[std::size_t(cb.m)];
    flat_contacts(pa[std::size_t(cb.a)], planes_a[std::size_t(cb.a)], pb[std::size_t(cb.b)], planes_b[std::size_t(cb.b)], m.c,
                  m.t0, m.t1, m.s_hi, o, out);
  }
  std::sort(out.contacts.begin(), out.contacts.end(), [](const auto& l, const auto& r) { return l.t < r.t; });
  out.regions.insert(out.regions.end(), same_regions.begin(), same_regions.end());
  std::sort(out.regions.begin(), out.regions.end(), [](const auto& l, const auto& r) { return l.t0 < r.t0; });
  out.combinations = std::int64_t(combos.size() + flat.size() + same_regions.size());
  return out;
}

}  // namespace parasurf
