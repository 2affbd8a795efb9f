// Bisectors with the subdivision solver: point samples of the bisector of two surfaces (Elber & Kim, "Geometric
// constraint solver using multivariate rational spline functions", 2001; Park, Elber, Kim, Kim, Seong, CAD 43 (2011),
// section 6.5) and the planar curve-curve bisector as polylines.
#include <algorithm>
#include <cmath>
#include <omp.h>

#include "core/region_errors.hpp"
#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"
#include "solver/sampled_sets.hpp"
#include "surface_pieces.hpp"

namespace parasurf {

using namespace solver;

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
  // Coplanar pieces: D lies in the plane, so <n1, D> = 0 and delta = n1 |D|^2 is normal to S2, and both equations
  // vanish for every (s, t). Those systems are not solved; the pieces' overlap is the result there.
  std::vector<PiecePlane> planes_a(pa.size()), planes_b(pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) planes_a[i] = piece_plane(pa[i]);
  for (std::size_t j = 0; j < pb.size(); ++j) planes_b[j] = piece_plane(pb[j]);
  std::vector<char> flat(pa.size() * pb.size(), 0);
  std::vector<std::pair<int, int>> flat_pairs;
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (std::size_t j = 0; j < pb.size(); ++j)
      if (coplanar(planes_a[i], pb[j], planes_b[j])) {
        flat[i * pb.size() + j] = 1;
        if (boxes_meet(pa[i].lo, pa[i].hi, pb[j].lo, pb[j].hi)) flat_pairs.emplace_back(int(i), int(j));
      }
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
        if (flat[std::size_t(task.piece) * pb.size() + j]) continue;  // left empty: no equation, no root
        std::array<BernsteinPoly, 3> d, nc;
        for (int c = 0; c < 3; ++c) {
          d[c] = BernsteinPoly::constant(2, x1[c]) - s2[j].x[c];
          nc[c] = BernsteinPoly::constant(2, n1[c]);
        }
        const BernsteinPoly g = dot(nc, d), dd = dot(d, d);
        std::array<BernsteinPoly, 3> delta;
        for (int c = 0; c < 3; ++c) delta[c] = -2.0 * (d[c] * g) + n1[c] * dd;
        std::vector<BernsteinPoly>& system = systems[std::size_t(k) * pb.size() + j];  // moved in, not copied
        system.reserve(2);
        system.push_back(dot(delta, s2[j].xu));
        system.push_back(dot(delta, s2[j].xv));
      }
    });
  }
  errors_3.rethrow();
  std::vector<std::size_t> posed;  // the systems with equations
  std::vector<std::vector<BernsteinPoly>> to_solve;
  for (std::size_t k = 0; k < systems.size(); ++k)
    if (!systems[k].empty()) posed.push_back(k), to_solve.push_back(std::move(systems[k]));
  std::vector<SolveResult> solved(systems.size());
  {
    std::vector<SolveResult> r = solve_systems(to_solve, quiet(o));
    for (std::size_t k = 0; k < posed.size(); ++k) solved[posed[k]] = std::move(r[k]);
  }
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
  if (!flat_pairs.empty()) {
    SurfaceIntersectionResult f = intersect_coplanar_pairs(pa, pb, planes_a, flat_pairs, std::max(resolution, kCoplanarResolution), quiet(o));
    if (f.status != "complete") out.status = f.status;
    out.overlaps = std::move(f.overlaps);
  }
  // Curved pieces that are one surface (a copy, another degree or knots, reversed or swapped parameters) coincide
  // everywhere: on the common normal the bisector degenerates there as between coplanar faces. Their systems are
  // still solved (the feet away from the diagonal are bisector points); the pair is reported as an overlap.
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (std::size_t j = 0; j < pb.size(); ++j)
      if (!flat[i * pb.size() + j] && boxes_meet(pa[i].lo, pa[i].hi, pb[j].lo, pb[j].hi))
        if (const Coincidence same = coincidence(pa[i], pb[j], {{1, 0, 0, 0}}); same.found) {
          SurfaceOverlap v;
          v.lo = same.lo, v.hi = same.hi;
          out.overlaps.push_back(v);
        }
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
  std::vector<double> pts, tangents;  // (s, t) per sample, piece-normalised
  std::vector<std::pair<std::size_t, std::size_t>> origin;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    if (found[k].status != "complete") out.status = found[k].status;
    for (std::size_t s = 0; s < found[k].st.size(); ++s) {
      pts.insert(pts.end(), {pairs[k].first + found[k].st[s][0], pairs[k].second + found[k].st[s][1]});
      tangents.insert(tangents.end(), found[k].tangent[s].begin(), found[k].tangent[s].end());
      origin.emplace_back(k, s);
    }
  }
  const std::vector<std::size_t> kept = unique_points(pts.data(), origin.size(), 2, 0.25 * resolution);
  std::vector<double> kp, kt;
  for (std::size_t i : kept) {
    kp.insert(kp.end(), pts.begin() + std::ptrdiff_t(2 * i), pts.begin() + std::ptrdiff_t(2 * i + 2));
    kt.insert(kt.end(), tangents.begin() + std::ptrdiff_t(2 * i), tangents.begin() + std::ptrdiff_t(2 * i + 2));
  }
  for (const auto& line : link_polylines(kp.data(), kt.data(), kept.size(), 2, resolution, o.threads)) {
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
