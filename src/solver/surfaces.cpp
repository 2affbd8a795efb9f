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
#include "solver/sampled_sets.hpp"
#include "surface_pieces.hpp"

namespace parasurf {

namespace solver {

namespace {

// Samples of a 2-D part of the intersection (surfaces that coincide over an area), among `pts` (piece-normalised
// (u1, v1, u2, v2), 4 per sample). There the system's 3 x 4 Jacobian has rank 2 (the normals are parallel:
// `singular`), which alone also holds along a curve of tangential contact; an area is told from a curve by its
// samples' neighbours: within two sample spacings a curve has about 4, an area about 12. Returns, per sample, its
// region (or -1), and the region count.
std::pair<std::vector<int>, int> coincident_regions(const std::vector<double>& pts, const std::vector<char>& singular,
                                                    double resolution) {
  const std::size_t n = singular.size();
  std::vector<int> region(n, -1);
  const double* const p = pts.data();
  const double reach = 2 * resolution;
  solver::PointGrid grid(4, reach);
  bool any = false;
  for (std::size_t i = 0; i < n; ++i)
    if (singular[i]) grid.insert(p + 4 * i, i), any = true;
  if (!any) return {std::move(region), 0};
  auto flat_near = [&](std::size_t i, auto&& visit) {
    grid.near(p + 4 * i, [&](std::size_t j) {
      double d = 0;
      for (std::size_t c = 0; c < 4; ++c) d = std::max(d, std::abs(p[4 * i + c] - p[4 * j + c]));
      if (j != i && d <= reach) visit(j);
    });
  };
  std::vector<char> area(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (singular[i]) {
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
      for (std::size_t c = 0; c < 2; ++c) {
        const std::size_t at = std::size_t(region[i]) * 2 + c;
        lo[at] = std::min(lo[at], p[4 * i + c]), hi[at] = std::max(hi[at], p[4 * i + c]);
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

// x_p(u1, v1) - x_q(u2, v2), coordinate c, in the variables (u1, v1, u2, v2): its Bernstein coefficients are the
// differences of the pieces' control coordinates (each side is constant along the other's variables).
BernsteinPoly coordinate_difference(const SurfacePiece& p, const SurfacePiece& q, int c) {
  BernsteinPoly d;
  d.degree = {p.du, p.dv, q.du, q.dv};
  const std::vector<double>&a = p.c[std::size_t(c)], &b = q.c[std::size_t(c)];
  d.coef.resize(a.size() * b.size());
  double* out = d.coef.data();
  for (double x : a)
    for (double y : b) *out++ = x - y;
  return d;
}

}  // namespace

SurfaceIntersectionResult intersect_piece_pairs(const std::vector<SurfacePiece>& pa, const std::vector<SurfacePiece>& pb,
                                                const std::vector<std::pair<int, int>>& pairs, double resolution,
                                                const SolverOptions& o) {
  std::vector<std::vector<BernsteinPoly>> systems(pairs.size());
  const int threads = thread_count(o);
  core::RegionErrors errors_0;
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) if (threads > 1)
  for (std::int64_t k = 0; k < std::int64_t(pairs.size()); ++k) {
    errors_0.capture([&] {
      const SurfacePiece &p = pa[std::size_t(pairs[std::size_t(k)].first)], &q = pb[std::size_t(pairs[std::size_t(k)].second)];
      for (int c = 0; c < 3; ++c) systems[std::size_t(k)].push_back(coordinate_difference(p, q, c));
    });
  }
  errors_0.rethrow();
  const std::vector<SampledSet> found = sample_sets(systems, 4, resolution, quiet(o));
  SurfaceIntersectionResult out;
  // Samples in piece-normalised coordinates (span index + local parameter), where neighbouring pieces abut.
  std::size_t total = 0;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    if (found[k].status != "complete") out.status = found[k].status;
    total += found[k].size();
  }
  std::vector<double> pts(4 * total);
  std::vector<std::pair<std::size_t, std::size_t>> origin(total);  // (pair, sample)
  for (std::size_t k = 0, i = 0; k < pairs.size(); ++k) {
    const SurfacePiece &p = pa[std::size_t(pairs[k].first)], &q = pb[std::size_t(pairs[k].second)];
    for (std::size_t s = 0; s < found[k].size(); ++s, ++i) {
      const double* x = found[k].x.data() + 4 * s;
      const double shift[4] = {double(p.iu), double(p.iv), double(q.iu), double(q.iv)};
      for (std::size_t c = 0; c < 4; ++c) pts[4 * i + c] = shift[c] + x[c];
      origin[i] = {k, s};
    }
  }
  const std::vector<std::size_t> unique = unique_points(pts.data(), total, 4, 0.25 * resolution);
  // Areas where the surfaces coincide are regions, and their samples stay out of the curves.
  std::vector<double> up(4 * unique.size());
  std::vector<char> singular(unique.size());
  for (std::size_t u = 0; u < unique.size(); ++u) {
    std::copy(pts.begin() + std::ptrdiff_t(4 * unique[u]), pts.begin() + std::ptrdiff_t(4 * unique[u] + 4), up.begin() + std::ptrdiff_t(4 * u));
    const auto [k, smp] = origin[unique[u]];
    singular[u] = found[k].singular[smp];
  }
  const auto [region, regions] = coincident_regions(up, singular, resolution);
  out.overlaps.assign(std::size_t(regions), SurfaceOverlap{});
  for (auto& v : out.overlaps) v.lo.fill(HUGE_VAL), v.hi.fill(-HUGE_VAL);
  auto params = [&](std::size_t k, std::size_t smp) {
    const SurfacePiece &p = pa[std::size_t(pairs[k].first)], &q = pb[std::size_t(pairs[k].second)];
    const double* x = found[k].x.data() + 4 * smp;
    return std::array<double, 4>{p.u0 + x[0] * (p.u1 - p.u0), p.v0 + x[1] * (p.v1 - p.v0), q.u0 + x[2] * (q.u1 - q.u0),
                                 q.v0 + x[3] * (q.v1 - q.v0)};
  };
  std::vector<std::size_t> kept;
  std::vector<double> kp, kt;
  kp.reserve(up.size()), kt.reserve(up.size());
  for (std::size_t u = 0; u < unique.size(); ++u) {
    const auto [k, smp] = origin[unique[u]];
    if (region[u] < 0) {
      kept.push_back(unique[u]);
      kp.insert(kp.end(), up.begin() + std::ptrdiff_t(4 * u), up.begin() + std::ptrdiff_t(4 * u + 4));
      kt.insert(kt.end(), found[k].tangent.begin() + std::ptrdiff_t(4 * smp), found[k].tangent.begin() + std::ptrdiff_t(4 * smp + 4));
      continue;
    }
    const std::array<double, 4> par = params(k, smp);
    SurfaceOverlap& v = out.overlaps[std::size_t(region[u])];
    for (std::size_t c = 0; c < 4; ++c) v.lo[c] = std::min(v.lo[c], par[c]), v.hi[c] = std::max(v.hi[c], par[c]);
    ++v.samples;
  }
  std::vector<PieceCoords> coords(pa.size());
  for (std::size_t i = 0; i < pa.size(); ++i) coords[i] = piece_coords(pa[i]);
  for (const auto& line : link_polylines(kp.data(), kt.data(), kept.size(), 4, resolution, o.threads)) {
    IntersectionCurve c;
    c.closed = line.size() > 3 && line.front() == line.back();
    c.params.reserve(line.size()), c.points.reserve(line.size());
    for (std::size_t idx : line) {
      const auto [k, s] = origin[kept[idx]];
      const double* x = found[k].x.data() + 4 * s;
      c.params.push_back(params(k, s));
      c.points.push_back(piece_point(coords[std::size_t(pairs[k].first)], x[0], x[1]));
      c.residual = std::max(c.residual, found[k].residual[s]);
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
