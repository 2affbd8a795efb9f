// Surface-surface intersection with the subdivision solver (Park, Elber, Kim, Kim, Seong, CAD 43 (2011), section
// 6.3): B-spline inputs are split into Bézier pieces by knot insertion, and each piece pair whose boxes meet gives
// x1(u1, v1) = x2(u2, v2), three equations in four unknowns, sampled and linked into curves. Areas where the surfaces
// coincide are told from curves and reported as regions.
#include <algorithm>
#include <cmath>
#include <omp.h>

#include "core/eigen.hpp"
#include "core/region_errors.hpp"
#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"
#include "point_grid.hpp"
#include "surface_pieces.hpp"

namespace parasurf {

namespace solver {

namespace {

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

SurfaceIntersectionResult intersect_piece_pairs(const std::vector<SurfacePiece>& pa, const std::vector<SurfacePiece>& pb,
                                                const std::vector<std::pair<int, int>>& pairs, double resolution,
                                                const SolverOptions& o) {
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
  return out;
}

namespace {

// Coordinates in a plane: a point of it, two unit axes in it, and its normal.
struct PlaneFrame {
  Vec3 origin{}, e1{}, e2{}, n{};
  Vec3 to_world(double x, double y) const {
    return {origin[0] + x * e1[0] + y * e2[0], origin[1] + x * e1[1] + y * e2[1], origin[2] + x * e1[2] + y * e2[2]};
  }
};
PlaneFrame plane_frame(const PiecePlane& plane, const SurfacePiece& p) {
  PlaneFrame f;
  f.n = plane.n;
  const std::size_t count = p.c[0].size();
  for (int k = 0; k < 3; ++k) {
    double sum = 0;
    for (double c : p.c[std::size_t(k)]) sum += c;
    f.origin[std::size_t(k)] = sum / double(count);
  }
  const Vec3& n = plane.n;  // e1: the world axis least aligned with n, made normal to it
  const int a = std::abs(n[0]) <= std::abs(n[1]) && std::abs(n[0]) <= std::abs(n[2]) ? 0 : std::abs(n[1]) <= std::abs(n[2]) ? 1 : 2;
  Vec3 e{};
  e[std::size_t(a)] = 1;
  const double along = e[0] * n[0] + e[1] * n[1] + e[2] * n[2];
  double len = 0;
  for (int k = 0; k < 3; ++k) e[std::size_t(k)] -= along * n[std::size_t(k)], len += e[std::size_t(k)] * e[std::size_t(k)];
  len = std::sqrt(len);
  for (int k = 0; k < 3; ++k) f.e1[std::size_t(k)] = e[std::size_t(k)] / len;
  f.e2 = {n[1] * f.e1[2] - n[2] * f.e1[1], n[2] * f.e1[0] - n[0] * f.e1[2], n[0] * f.e1[1] - n[1] * f.e1[0]};
  return f;
}
// The piece in the frame's coordinates (x, y, 0); its parameters and span indices unchanged.
SurfacePiece in_plane(const SurfacePiece& p, const PlaneFrame& f) {
  SurfacePiece q = p;
  for (std::size_t i = 0; i < p.c[0].size(); ++i) {
    const Vec3 d{p.c[0][i] - f.origin[0], p.c[1][i] - f.origin[1], p.c[2][i] - f.origin[2]};
    q.c[0][i] = d[0] * f.e1[0] + d[1] * f.e1[1] + d[2] * f.e1[2];
    q.c[1][i] = d[0] * f.e2[0] + d[1] * f.e2[1] + d[2] * f.e2[2];
    q.c[2][i] = 0;
  }
  for (int k = 0; k < 3; ++k) {
    q.lo[std::size_t(k)] = *std::min_element(q.c[std::size_t(k)].begin(), q.c[std::size_t(k)].end());
    q.hi[std::size_t(k)] = *std::max_element(q.c[std::size_t(k)].begin(), q.c[std::size_t(k)].end());
  }
  return q;
}

}  // namespace

SurfaceIntersectionResult intersect_coplanar_pairs(const std::vector<SurfacePiece>& pa, const std::vector<SurfacePiece>& pb,
                                                   const std::vector<PiecePlane>& planes,
                                                   const std::vector<std::pair<int, int>>& pairs, double resolution,
                                                   const SolverOptions& o) {
  // One pair per entry: a piece may meet pieces in different frames (each pair takes its first piece's).
  std::vector<SurfacePiece> fa, fb;
  std::vector<std::pair<int, int>> own;
  std::vector<PlaneFrame> frames;
  for (const auto& [i, j] : pairs) {
    frames.push_back(plane_frame(planes[std::size_t(i)], pa[std::size_t(i)]));
    fa.push_back(in_plane(pa[std::size_t(i)], frames.back()));
    fb.push_back(in_plane(pb[std::size_t(j)], frames.back()));
    own.emplace_back(int(own.size()), int(own.size()));
  }
  SurfaceIntersectionResult r = intersect_piece_pairs(fa, fb, own, resolution, o);
  // Curves (pieces that touch along an edge) back in world coordinates, on the first piece.
  std::vector<PieceCoords> world;
  for (const auto& [i, j] : pairs) world.push_back(piece_coords(pa[std::size_t(i)]));
  for (auto& c : r.curves)
    for (std::size_t k = 0; k < c.points.size(); ++k) {
      const auto& x = c.params[k];
      for (std::size_t e = 0; e < pairs.size(); ++e) {
        const SurfacePiece& p = pa[std::size_t(pairs[e].first)];
        if (x[0] < p.u0 || x[0] > p.u1 || x[1] < p.v0 || x[1] > p.v1) continue;
        c.points[k] = piece_point(world[e], (x[0] - p.u0) / (p.u1 - p.u0), (x[1] - p.v0) / (p.v1 - p.v0));
        break;
      }
    }
  return r;
}

}  // namespace solver

SurfaceIntersectionResult intersect_surfaces(const BSplineSurface& a, const BSplineSurface& b, double resolution,
                                             const SolverOptions& o) {
  using namespace solver;
  if (!(resolution >= 1e-6) || resolution > 0.25)
    throw Error(ErrorKind::InvalidArgument, "surface intersection: resolution must be in [1e-6, 0.25]");
  const auto pa = surface_pieces(a, "surface 1"), pb = surface_pieces(b, "surface 2");
  std::vector<PiecePlane> planes_a(pa.size()), planes_b(pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) planes_a[i] = piece_plane(pa[i]);
  for (std::size_t j = 0; j < pb.size(); ++j) planes_b[j] = piece_plane(pb[j]);
  // Pieces in one plane meet in an area or not at all: sampled apart, at a spacing that bounds their cost. Pieces
  // in parallel planes apart never meet (the solver would refine the thin gap between them at great cost).
  std::vector<std::pair<int, int>> pairs, flat;
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (std::size_t j = 0; j < pb.size(); ++j) {
      if (!boxes_meet(pa[i].lo, pa[i].hi, pb[j].lo, pb[j].hi)) continue;
      if (coplanar(planes_a[i], pb[j], planes_b[j]))
        flat.emplace_back(int(i), int(j));
      else if (!parallel_planes(planes_a[i], planes_b[j]))
        pairs.emplace_back(int(i), int(j));
    }
  SurfaceIntersectionResult out = intersect_piece_pairs(pa, pb, pairs, resolution, o);
  if (!flat.empty()) {
    SurfaceIntersectionResult f = intersect_coplanar_pairs(pa, pb, planes_a, flat, std::max(resolution, kCoplanarResolution), o);
    if (f.status != "complete") out.status = f.status;
    for (auto& c : f.curves) out.curves.push_back(std::move(c));  // pieces that only touch along an edge
    for (auto& v : f.overlaps) out.overlaps.push_back(v);
  }
  std::sort(out.curves.begin(), out.curves.end(), [](const auto& l, const auto& r) { return l.points.size() > r.points.size(); });
  return out;
}

}  // namespace parasurf
