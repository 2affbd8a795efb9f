// Tessellation plans: per-patch segments (uniform, per patch, or from a chordal tolerance), edge factors shared by
// neighbouring patches, and the samples and vertex numbering that follow.
//
// Crack-free stitching follows the edge-conforming scheme of hardware tessellators and of Schwarz & Stamminger,
// "Fast GPU-based adaptive tessellation with CUDA" (CudaTess, 2009): each shared edge has one segment count;
// a patch whose sides differ from its interior grid keeps a regular inner grid and zips the border strip between
// the side samples and the inner grid's outer row. The chordal error of linear interpolation falls as h^2
// (Filip, Magedson and Markot, "Surface algorithms using bounds on derivatives", CAGD 3, 1986).
#include "patches/plan.hpp"

#include <omp.h>

#include <string>

#include "parasurf/error.hpp"

namespace parasurf::patches {

// ---------------------------------------------------------------- chordal error
// Largest distance between a patch and one of its triangles, sampled at the inner points of a k-division of the
// triangle: the surface at the interpolated (u,v) against the interpolated corner positions.
double triangle_deviation(const patchk::PatchRecord& rec, const double* pts, const double (&uv)[3][2],
                          const double (&xyz)[3][3], int k) {
  double buf[3];
  double worst = 0;
  for (int a = 0; a <= k; ++a)
    for (int b = 0; a + b <= k; ++b) {
      if (a == k || b == k || a + b == 0) continue;  // the corners are exact
      const double wa = double(a) / k, wb = double(b) / k, wc = 1 - wa - wb;
      const double u = wa * uv[0][0] + wb * uv[1][0] + wc * uv[2][0];
      const double v = wa * uv[0][1] + wb * uv[1][1] + wc * uv[2][1];
      patchk::eval_position<double>(rec, pts, u, v, buf);
      double d2 = 0;
      for (int c = 0; c < 3; ++c) {
        const double lin = wa * xyz[0][c] + wb * xyz[1][c] + wc * xyz[2][c];
        d2 += (buf[c] - lin) * (buf[c] - lin);
      }
      worst = std::max(worst, d2);
    }
  return std::sqrt(worst);
}

RefinedGrid::RefinedGrid(const patchk::PatchRecord& rec, const double* pts, int k)
    : rec_(rec), net_(pts + rec.cp * 4), k_(k), cols_(k * rec.nv + 1) {
  const int dv = rec.dv;
  bv_.resize(std::size_t(dv + 1) * cols_);
  double b[kern::kMaxDeg + 1];
  for (int c = 0; c < cols_; ++c) {
    kern::bernstein_jet<double, 0>(dv, kern::grid_param<double>(c, cols_), b, nullptr, nullptr);
    for (int j = 0; j <= dv; ++j) bv_[std::size_t(j) * cols_ + c] = b[j];
  }
  h_.resize(std::size_t(4) * cols_);
  pos_.resize(std::size_t(k + 1) * 3 * cols_);
}

void RefinedGrid::enter_band(int i) {
  band_ = i;
  const int du = rec_.du, dv = rec_.dv, rows = k_ * rec_.nu + 1;
  const std::size_t n = std::size_t(cols_);
  double bu[kern::kMaxDeg + 1], q[(kern::kMaxDeg + 1) * 4];
  for (int r = 0; r <= k_; ++r) {
    kern::bernstein_jet<double, 0>(du, kern::grid_param<double>(std::int64_t(k_) * i + r, rows), bu, nullptr, nullptr);
    std::fill(q, q + (dv + 1) * 4, 0.0);
    for (int a = 0; a <= du; ++a) {
      const double* row = net_ + std::size_t(a) * (dv + 1) * 4;
      for (int e = 0; e < (dv + 1) * 4; ++e) q[e] += bu[a] * row[e];
    }
    double* PS_RESTRICT h = h_.data();
    std::fill(h, h + 4 * n, 0.0);
    for (int j = 0; j <= dv; ++j) {
      const double* PS_RESTRICT b = &bv_[std::size_t(j) * n];
      for (int c = 0; c < 4; ++c) {
        const double w = q[j * 4 + c];
        double* PS_RESTRICT hc = h + c * n;
        for (std::size_t v = 0; v < n; ++v) hc[v] += b[v] * w;
      }
    }
    double* PS_RESTRICT out = &pos_[std::size_t(r) * 3 * n];
    for (int c = 0; c < 3; ++c)
      for (std::size_t v = 0; v < n; ++v) out[c * n + v] = h[c * n + v] / h[3 * n + v];
  }
}

bool RefinedGrid::triangle_deviation(const int (&ij)[3][2], const double (&xyz)[3][3], double& deviation) {
  const int i0 = std::min({ij[0][0], ij[1][0], ij[2][0]});
  for (int d = 0; d < 2; ++d)
    if (std::max({ij[0][d], ij[1][d], ij[2][d]}) - std::min({ij[0][d], ij[1][d], ij[2][d]}) > 1) return false;
  if (i0 < band_) return false;
  if (i0 > band_) enter_band(i0);
  const std::size_t n = std::size_t(cols_);
  double worst = 0;
  const int k = k_;
  for (int a = 0; a <= k; ++a)
    for (int b = 0; a + b <= k; ++b) {
      if (a == k || b == k || a + b == 0) continue;  // the corners are exact
      const int c = k - a - b;
      // (the lattice point at the weights a/k, b/k, c/k of the corners)
      const int row = a * ij[0][0] + b * ij[1][0] + c * ij[2][0] - k * i0;
      const int col = a * ij[0][1] + b * ij[1][1] + c * ij[2][1];
      const double* s = &pos_[std::size_t(row) * 3 * n + std::size_t(col)];
      const double wa = double(a) / k, wb = double(b) / k, wc = 1 - wa - wb;
      double d2 = 0;
      for (int e = 0; e < 3; ++e) {
        const double lin = wa * xyz[0][e] + wb * xyz[1][e] + wc * xyz[2][e];
        d2 += (s[e * n] - lin) * (s[e * n] - lin);
      }
      worst = std::max(worst, d2);
    }
  deviation = std::sqrt(worst);
  return true;
}

// Largest deviation of one patch from its regular (nu x nv) triangulation, sampled inside every triangle.
double grid_deviation(const patchk::PatchRecord& rec, const double* pts, int nu, int nv) {
  const bool tri = rec.flags & patchk::kTriangle;
  std::vector<double> grid(std::size_t(nu + 1) * (nv + 1) * 3);
  for (int i = 0; i <= nu; ++i)
    for (int j = 0; j <= nv; ++j)
      if (!tri || i + j <= nu) {
        patchk::eval_position<double>(rec, pts, double(i) / nu, double(j) / nv, &grid[(std::size_t(i) * (nv + 1) + j) * 3]);
      }
  double worst = 0;
  auto check = [&](int i0, int j0, int i1, int j1, int i2, int j2) {
    const int ij[3][2] = {{i0, j0}, {i1, j1}, {i2, j2}};
    double uv[3][2], xyz[3][3];
    for (int v = 0; v < 3; ++v) {
      uv[v][0] = double(ij[v][0]) / nu;
      uv[v][1] = double(ij[v][1]) / nv;
      std::copy_n(&grid[(std::size_t(ij[v][0]) * (nv + 1) + ij[v][1]) * 3], 3, xyz[v]);
    }
    worst = std::max(worst, triangle_deviation(rec, pts, uv, xyz, 3));
  };
  for (int i = 0; i < nu; ++i)
    for (int j = 0; j < nv; ++j) {
      if (tri && i + j >= nu) continue;
      check(i, j, i + 1, j, i, j + 1);
      if (!tri || i + j + 2 <= nu) check(i + 1, j, i + 1, j + 1, i, j + 1);
    }
  return worst;
}

// Segments for a target deviation: measured at (n0, n0), (2 n0, n0) and (n0, 2 n0), fitted to the h^2 model
// err = A / nu^2 + B / nv^2, then nu = sqrt(2A / target), nv = sqrt(2B / target) (the product's minimum).
std::pair<int, int> estimate_segments(const Patch& patch, const double* pts, double target) {
  patchk::PatchRecord rec;
  rec.flags = (patch.kind == PatchKind::Triangle ? patchk::kTriangle : 0u);
  rec.du = std::int16_t(patch.degree_u);
  rec.dv = std::int16_t(patch.degree_v);
  rec.cp = patch.offset;
  constexpr int n0 = 6;
  const double e1 = grid_deviation(rec, pts, n0, n0);
  // Segments for an estimate, clamped in floating point: a tolerance far below the patch's size asks for more than
  // an int holds (converting such a count wrapped it to one segment).
  auto clamped = [](double n) { return n >= kMaxSegments ? kMaxSegments : std::max(1, int(n)); };
  if (patch.kind == PatchKind::Triangle) {
    const int n = clamped(std::ceil(n0 * std::sqrt(e1 / target) - 1e-9));
    return {n, n};
  }
  const double e2 = grid_deviation(rec, pts, 2 * n0, n0);
  const double e3 = grid_deviation(rec, pts, n0, 2 * n0);
  double A = std::max(0.0, (4.0 / 3.0) * (e1 - e2)) * n0 * n0;
  double B = std::max(0.0, (4.0 / 3.0) * (e1 - e3)) * n0 * n0;
  if (A + B < e1 * n0 * n0 * 0.5) A = B = 0.5 * e1 * n0 * n0;  // the model does not fit: isotropic
  auto seg = [&](double c) { return clamped(std::ceil(std::sqrt(2 * c / target) - 1e-9)); };
  return {seg(A), seg(B)};
}

// Edge factors, samples and vertex numbering for the plan's per-patch segments.
void finish_plan(Plan& pl) {
  const PatchModel& m = *pl.model;
  const auto np = std::int64_t(m.patches.size());
  // edge factors: the finest of the sides that meet there; triangles take their finest side everywhere; a zipped
  // patch needs an inner grid (>= 2 segments each way). Repeat until nothing changes (values only grow).
  pl.edge_factor.assign(pl.topo.edges.size(), 1);
  pl.zipper.assign(std::size_t(np), 0);
  for (bool changed = true; changed;) {
    changed = false;
    std::fill(pl.edge_factor.begin(), pl.edge_factor.end(), 1);
    for (std::int64_t p = 0; p < np; ++p)
      for (int s = 0; s < patches::side_count(m.patches[p]); ++s) {
        int& f = pl.edge_factor[pl.topo.sides[p][s].edge];
        f = std::max(f, pl.side_segments(p, s));
      }
    // a split edge's pieces take at least their share of its side's segments; it has the sum of theirs
    for (std::size_t e = 0; e < pl.topo.edges.size(); ++e) {
      if (!pl.topo.split(std::int64_t(e))) continue;
      const auto [p, s] = pl.topo.edges[e].sides[0];
      const int n = pl.side_segments(p, s);
      for (const patches::SplitPiece& piece : pl.topo.splits[std::size_t(pl.topo.split_of[e])]) {
        int& f = pl.edge_factor[std::size_t(piece.edge)];
        f = std::max(f, int(std::min<double>(kMaxSegments, std::ceil(n * (piece.t1 - piece.t0) - 1e-9))));
      }
    }
    for (std::size_t e = 0; e < pl.topo.edges.size(); ++e) {
      if (!pl.topo.split(std::int64_t(e))) continue;
      int sum = 0;
      for (const patches::SplitPiece& piece : pl.topo.splits[std::size_t(pl.topo.split_of[e])])
        sum += pl.edge_factor[std::size_t(piece.edge)];
      pl.edge_factor[e] = sum;
    }
    for (std::int64_t p = 0; p < np; ++p) {
      const Patch& patch = m.patches[p];
      if (patch.kind == PatchKind::Triangle) {
        int n = pl.nu[p];
        for (int s = 0; s < 3; ++s) n = std::max(n, pl.factor(p, s));
        if (n != pl.nu[p]) pl.nu[p] = pl.nv[p] = n, changed = true;
        continue;
      }
      bool zip = false;
      for (int s = 0; s < 4; ++s) zip = zip || patches::side_off_grid(pl, p, s);
      pl.zipper[p] = zip;
      if (zip && (pl.nu[p] < 2 || pl.nv[p] < 2)) {
        pl.nu[p] = std::max(pl.nu[p], 2);
        pl.nv[p] = std::max(pl.nv[p], 2);
        changed = true;
      }
    }
  }
  // where each split edge's pieces start along it
  pl.split_offsets.assign(pl.topo.splits.size(), {});
  for (std::size_t k = 0; k < pl.topo.splits.size(); ++k) {
    auto& off = pl.split_offsets[k];
    off.push_back(0);
    for (const patches::SplitPiece& piece : pl.topo.splits[k]) off.push_back(off.back() + pl.edge_factor[std::size_t(piece.edge)]);
  }
  // samples: every patch's grid, then the side samples that are not on it
  pl.extra_patch.clear();
  pl.extra_uv.clear();
  pl.first.resize(std::size_t(np) + 1);
  pl.extra_first.assign(std::size_t(np), {-1, -1, -1, -1});
  std::int64_t s = 0;
  for (std::int64_t p = 0; p < np; ++p) {
    pl.first[p] = s;
    s += m.patches[p].kind == PatchKind::Triangle ? std::int64_t(pl.nu[p] + 1) * (pl.nu[p] + 2) / 2
                                                  : std::int64_t(pl.nu[p] + 1) * (pl.nv[p] + 1);
  }
  pl.first[np] = s;
  pl.grid_samples = s;
  for (std::int64_t p = 0; p < np; ++p) {
    if (!pl.zipper[p]) continue;
    for (int sd = 0; sd < 4; ++sd) {
      const int f = pl.factor(p, sd);
      if (!patches::side_off_grid(pl, p, sd)) continue;
      const bool split = pl.topo.split(pl.topo.sides[p][sd].edge);
      pl.extra_first[p][sd] = s;
      for (int k = 1; k < f; ++k) {
        const double t = split ? patches::side_param(pl, p, sd, k) : double(k) / f;
        const double r = split ? 1 - t : double(f - k) / f;
        const double uv[4][2] = {{t, 0}, {1, t}, {r, 1}, {0, r}};
        pl.extra_patch.push_back(p);
        pl.extra_uv.insert(pl.extra_uv.end(), {uv[sd][0], uv[sd][1]});
        ++s;
      }
    }
  }
  pl.extra_samples = s - pl.grid_samples;
  // vertices: corners, edge interiors, patch interiors
  std::int64_t v = pl.topo.corner_count;
  pl.edge_vertex_base.resize(pl.topo.edges.size());
  for (std::size_t e = 0; e < pl.topo.edges.size(); ++e) {
    pl.edge_vertex_base[e] = v;
    if (!pl.topo.edges[e].collapsed && !pl.topo.split(std::int64_t(e))) v += pl.edge_factor[e] - 1;  // a split edge's vertices are its pieces'
  }
  pl.interior_base.resize(std::size_t(np));
  for (std::int64_t p = 0; p < np; ++p) {
    pl.interior_base[p] = v;
    if (m.patches[p].kind == PatchKind::Triangle) {
      const std::int64_t n = pl.nu[p];
      v += n >= 3 ? (n - 2) * (n - 1) / 2 : 0;
    } else {
      v += std::int64_t(pl.nu[p] - 1) * (pl.nv[p] - 1);
    }
  }
  pl.vertices = v;
}

Plan make_plan(const PatchModel& m, const TessellationOptions& o) {
  Plan pl;
  pl.model = &m;
  if (!(o.seam_tolerance >= 0 && o.seam_tolerance <= 1e-3))
    throw Error(ErrorKind::InvalidArgument, "seam tolerance " + std::to_string(o.seam_tolerance) +
                                                " is outside [0, 1e-3] (a fraction of the model's size)");
  pl.topo = patches::build_topology(m, o.orient, o.seam_tolerance);
  const auto np = std::int64_t(m.patches.size());
  pl.nu.resize(std::size_t(np));
  pl.nv.resize(std::size_t(np));
  if (!o.patch_resolution.empty() && std::int64_t(o.patch_resolution.size()) != np)
    throw Error(ErrorKind::InvalidArgument, "per-patch resolution has " + std::to_string(o.patch_resolution.size()) +
                                                " values for " + std::to_string(np) + " patches");
  if (o.tolerance > 0) {
    if (!std::isfinite(o.tolerance)) throw Error(ErrorKind::InvalidArgument, "tolerance must be finite");
    const std::vector<double> pts(m.points.begin(), m.points.end());
#pragma omp parallel for schedule(dynamic, 4) num_threads(cpu_thread_count(o.threads))
    for (std::int64_t p = 0; p < np; ++p) {
      const auto [a, c] = estimate_segments(m.patches[p], pts.data(), 0.8 * o.tolerance);
      pl.nu[p] = a;
      pl.nv[p] = c;
    }
  } else {
    for (std::int64_t p = 0; p < np; ++p) {
      const int r = o.patch_resolution.empty() ? o.resolution : o.patch_resolution[p];
      if (r < 1 || r > kMaxSegments)
        throw Error(ErrorKind::InvalidArgument, "resolution " + std::to_string(r) + " is outside 1.." + std::to_string(kMaxSegments));
      pl.nu[p] = pl.nv[p] = r;
    }
  }
  finish_plan(pl);
  return pl;
}

// ---------------------------------------------------------------- triangulation (topology only)
void triangulate_patch(const Plan& pl, std::int64_t p, std::vector<Ref>& out) {
  patches::triangulate_patch(pl, p, [&](const Ref& a, const Ref& b, const Ref& c) { out.push_back(a), out.push_back(b), out.push_back(c); });
}

}  // namespace parasurf::patches
