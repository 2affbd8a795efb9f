// Tessellation of patch models: per-patch resolution (uniform, per patch, or from a chordal tolerance), edge
// factors shared by neighbouring patches, one batch evaluation of every sample, and assembly of a welded mesh.
//
// Crack-free stitching follows the edge-conforming scheme of hardware tessellators and of Schwarz & Stamminger,
// "Fast GPU-based adaptive tessellation with CUDA" (CudaTess, 2009): each shared edge has one segment count;
// a patch whose sides differ from its interior grid keeps a regular inner grid and zips the border strip between
// the side samples and the inner grid's outer row. The chordal error of linear interpolation falls as h^2
// (Filip, Magedson and Markot, "Surface algorithms using bounds on derivatives", CAGD 3, 1986); segments per
// direction come from that model fitted to sampled deviations, and every patch is checked by sampling after
// planning, refined where it misses.
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "core/memory.hpp"
#include "parasurf/error.hpp"
#include "parasurf/tessellate.hpp"
#include "patches/assemble.hpp"
#include "patches/batch.hpp"
#include "patches/plan_walk.hpp"
#include "patches/topology.hpp"

namespace parasurf {

PatchStrategy parse_patch_strategy(const std::string& name) {
  if (name == "auto") return PatchStrategy::Auto;
  if (name == "direct") return PatchStrategy::Direct;
  if (name == "casteljau") return PatchStrategy::Casteljau;
  if (name == "tables") return PatchStrategy::Tables;
  throw Error(ErrorKind::InvalidArgument, "unknown patch strategy '" + name + "' (auto, direct, casteljau, tables)");
}

const char* patch_strategy_name(PatchStrategy s) {
  switch (s) {
    case PatchStrategy::Auto: return "auto";
    case PatchStrategy::Direct: return "direct";
    case PatchStrategy::Casteljau: return "casteljau";
    case PatchStrategy::Tables: return "tables";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr int kMaxSegments = 1 << 14;

double norm3(const double* a) { return std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

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
  if (patch.kind == PatchKind::Triangle) {
    const int n = std::max(1, int(std::ceil(n0 * std::sqrt(e1 / target) - 1e-9)));
    return {std::min(n, kMaxSegments), std::min(n, kMaxSegments)};
  }
  const double e2 = grid_deviation(rec, pts, 2 * n0, n0);
  const double e3 = grid_deviation(rec, pts, n0, 2 * n0);
  double A = std::max(0.0, (4.0 / 3.0) * (e1 - e2)) * n0 * n0;
  double B = std::max(0.0, (4.0 / 3.0) * (e1 - e3)) * n0 * n0;
  if (A + B < e1 * n0 * n0 * 0.5) A = B = 0.5 * e1 * n0 * n0;  // the model does not fit: isotropic
  auto seg = [&](double c) { return std::clamp(int(std::ceil(std::sqrt(2 * c / target) - 1e-9)), 1, kMaxSegments); };
  return {seg(A), seg(B)};
}

// ---------------------------------------------------------------- the plan
struct Plan {
  const PatchModel* model = nullptr;
  patches::Topology topo;
  std::vector<int> nu, nv;                  // per patch (triangle: nu = nv = n)
  std::vector<int> edge_factor;             // per edge
  std::vector<std::uint8_t> zipper;         // per patch: sides differ from the grid
  std::vector<std::int64_t> first;          // per patch: first grid sample
  std::vector<std::array<std::int64_t, 4>> extra_first;  // per patch side: first extra sample, -1 when on the grid
  std::vector<std::int64_t> edge_vertex_base;            // per edge
  std::vector<std::int64_t> interior_base;               // per patch
  std::int64_t grid_samples = 0, extra_samples = 0, vertices = 0;
  std::vector<std::int64_t> extra_patch;
  std::vector<double> extra_uv;
  std::vector<std::vector<int>> split_offsets;           // per split edge: its pieces' first sample (and the end)

  // what patches::side_vertex and the rest read (plan_walk.hpp)
  bool triangle(std::int64_t p) const { return model->patches[p].kind == PatchKind::Triangle; }
  bool flipped(std::int64_t p) const { return topo.flipped[p] != 0; }
  const patches::SideRef& side(std::int64_t p, int s) const { return topo.sides[p][s]; }
  std::int32_t edge_corner(std::int64_t e, int end) const { return end ? topo.edges[e].corner_b : topo.edges[e].corner_a; }
  bool edge_collapsed(std::int64_t e) const { return topo.edges[e].collapsed; }
  int side_segments(std::int64_t p, int s) const { return patches::side_segments(*this, p, s); }
  int factor(std::int64_t p, int s) const { return patches::side_factor(*this, p, s); }
  bool edge_split(std::int64_t e) const { return topo.split(e); }
  // Sample kc (0 < kc < f) of split edge e, in its canonical direction: the piece it lies on and its index there.
  std::pair<const patches::SplitPiece*, int> split_sample(std::int64_t e, int kc) const {
    const auto k = std::size_t(topo.split_of[std::size_t(e)]);
    const auto& off = split_offsets[k];
    const auto i = std::size_t(std::upper_bound(off.begin(), off.end(), kc) - off.begin() - 1);
    return {&topo.splits[k][i], kc - off[i]};
  }
  std::int64_t split_vertex(std::int64_t e, int kc) const {
    const auto [piece, local] = split_sample(e, kc);
    if (local == 0) return edge_corner(piece->edge, piece->reversed ? 1 : 0);  // where two pieces meet
    const int f = edge_factor[std::size_t(piece->edge)];
    return edge_vertex_base[std::size_t(piece->edge)] + (piece->reversed ? f - local : local) - 1;
  }
  double split_param(std::int64_t e, int kc) const {
    const auto [piece, local] = split_sample(e, kc);
    return piece->t0 + (piece->t1 - piece->t0) * (double(local) / edge_factor[std::size_t(piece->edge)]);
  }
};

using Ref = patches::PlanRef;
using patches::grid_ref;
using patches::lattice_ref;
using patches::side_ref;
using patches::side_sample;
using patches::side_vertex;
using patches::triangulate_patch;

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
  triangulate_patch(pl, p, [&](const Ref& a, const Ref& b, const Ref& c) { out.push_back(a), out.push_back(b), out.push_back(c); });
}

// One member's share of a team run: patches [patch[k], patch[k+1]), their grid samples [grid[k], grid[k+1]) and
// their side samples [extra[k], extra[k+1]) (counted from the first side sample). Contiguous ranges of about equal
// sample counts.
struct TeamRanges {
  std::vector<std::int64_t> patch, grid, extra;
};

TeamRanges team_ranges(const Plan& pl, int members) {
  const auto np = std::int64_t(pl.model->patches.size());
  std::vector<std::int64_t> cost(std::size_t(np) + 1, 0);  // samples before patch p, grid and side
  std::size_t x = 0;
  for (std::int64_t p = 0; p < np; ++p) {
    std::int64_t extras = 0;
    while (x < pl.extra_patch.size() && pl.extra_patch[x] == p) ++x, ++extras;
    cost[std::size_t(p) + 1] = cost[std::size_t(p)] + (pl.first[p + 1] - pl.first[p]) + extras;
  }
  TeamRanges r;
  for (int k = 0; k <= members; ++k) {
    const std::int64_t target = cost.back() * k / members;
    const std::int64_t p = k == members ? np : std::int64_t(std::lower_bound(cost.begin(), cost.end(), target) - cost.begin());
    r.patch.push_back(p);
    r.grid.push_back(pl.first[p]);
    r.extra.push_back(std::int64_t(std::lower_bound(pl.extra_patch.begin(), pl.extra_patch.end(), p) - pl.extra_patch.begin()));
  }
  return r;
}

// The batch of patches [pa, pb) (all by default): sample indices counted from the range's first sample.
template <class T> patches::HostBatch<T> make_batch(const Plan& pl, std::int64_t pa = 0, std::int64_t pb = -1) {
  const PatchModel& m = *pl.model;
  patches::HostBatch<T> b;
  if (pb < 0) pb = std::int64_t(m.patches.size());
  const std::int64_t base = pl.first[pa];
  b.records.resize(std::size_t(pb - pa));
  b.points.assign(m.points.begin(), m.points.end());
  b.normal_points.assign(m.normal_points.begin(), m.normal_points.end());
  for (std::int64_t p = pa; p < pb; ++p) {
    const Patch& patch = m.patches[p];
    patchk::PatchRecord& r = b.records[p - pa];
    r.flags = (patch.kind == PatchKind::Triangle ? patchk::kTriangle : 0u) | (patch.rational ? patchk::kRational : 0u) |
              (patch.normal_offset >= 0 ? patchk::kNormalPatch : 0u) | (pl.topo.flipped[p] ? patchk::kFlipped : 0u);
    r.du = std::int16_t(patch.degree_u);
    r.dv = std::int16_t(patch.degree_v);
    r.ndu = std::int16_t(std::max(patch.normal_degree_u, 0));
    r.ndv = std::int16_t(std::max(patch.normal_degree_v, 0));
    r.nu = pl.nu[p];
    r.nv = pl.nv[p];
    r.cp = patch.offset;
    r.ncp = std::max<std::int64_t>(patch.normal_offset, 0);
    r.first = pl.first[p] - base;
    b.max_degree = std::max({b.max_degree, patch.degree_u, patch.degree_v});
  }
  b.samples = pl.first[pb] - base;
  const auto xa = std::lower_bound(pl.extra_patch.begin(), pl.extra_patch.end(), pa) - pl.extra_patch.begin();
  const auto xb = std::lower_bound(pl.extra_patch.begin(), pl.extra_patch.end(), pb) - pl.extra_patch.begin();
  for (auto x = xa; x < xb; ++x) b.point_patch.push_back(pl.extra_patch[std::size_t(x)] - pa);
  b.point_uv.assign(pl.extra_uv.begin() + 2 * xa, pl.extra_uv.begin() + 2 * xb);
  return b;
}

template <class T> struct SampleStore {
  std::vector<T> pos[3], nrm[3];
  patches::SampleViews<T> views() {
    patches::SampleViews<T> v;
    for (int c = 0; c < 3; ++c) v.pos[c] = pos[c].data(), v.nrm[c] = nrm[c].data();
    return v;
  }
};

Device pick_device(Device requested) {
  if (requested == Device::Cuda && !patches::cuda::available())
    throw Error(ErrorKind::Device, "--device cuda: no CUDA device is available (or CUDA was not built)");
  if (requested == Device::Auto) return patches::cuda::available() ? Device::Cuda : Device::Cpu;
  if (requested == Device::Hybrid && !patches::cuda::available())
    throw Error(ErrorKind::Device, "--device hybrid: no CUDA device is available (or CUDA was not built)");
  return requested;
}

template <class T>
BatchTiming run_batch(const patches::HostBatch<T>& batch, SampleStore<T>& store, Device device, PatchStrategy strategy,
                      int threads, bool copy_back, HybridScheme scheme = HybridScheme::Dynamic, double cpu_share = -1) {
  const std::int64_t n = batch.total();
  core::check_host_allocation(std::uint64_t(n) * 6 * sizeof(T), std::to_string(n) + " patch samples");
  for (int c = 0; c < 3; ++c) core::resize_for_overwrite(store.pos[c], std::size_t(n)), core::resize_for_overwrite(store.nrm[c], std::size_t(n));
  if (device == Device::Cuda) return patches::cuda::evaluate<T>(batch, strategy, store.views(), copy_back);
  if (device == Device::Hybrid)
    return patches::hybrid::evaluate<T>(batch, strategy, store.views(), cpu_thread_count(threads), scheme, cpu_share);
  BatchTiming t;
  const auto t0 = Clock::now();
  patches::cpu::evaluate<T>(batch, store.views(), cpu_thread_count(threads));
  t.kernel_seconds = t.total_seconds = since(t0);
  t.device = Device::Cpu;
  t.strategy = PatchStrategy::Tables;
  return t;
}

// Team run: this member evaluates its patches into the whole model's sample arrays, then the exchange fills in
// the others' samples (on every member when `everyone`, else on member 0).
template <class T>
BatchTiming run_team_batch(const Plan& pl, const TessellationTeam& team, const TeamRanges& ranges, SampleStore<T>& store,
                           Device device, PatchStrategy strategy, int threads, bool everyone, double* seconds_exchange) {
  const std::size_t me = std::size_t(team.member);
  const auto batch = make_batch<T>(pl, ranges.patch[me], ranges.patch[me + 1]);
  SampleStore<T> mine;
  BatchTiming timing;  // a member with no patches (more members than patches) only takes part in the exchange
  if (batch.total() > 0) timing = run_batch<T>(batch, mine, device, strategy, threads, true);
  const std::int64_t total = pl.grid_samples + pl.extra_samples;
  core::check_host_allocation(std::uint64_t(total) * 6 * sizeof(T), std::to_string(total) + " patch samples");
  const auto t0 = Clock::now();
  const std::int64_t own_grid = batch.samples;
  for (auto* arrays : {store.pos, store.nrm})
    for (int c = 0; c < 3; ++c) core::resize_for_overwrite(arrays[c], std::size_t(total));
  for (int c = 0; c < 3; ++c)
    for (auto [from, to] : {std::pair{mine.pos, store.pos}, std::pair{mine.nrm, store.nrm}}) {
      std::copy(from[c].begin(), from[c].begin() + own_grid, to[c].begin() + ranges.grid[me]);
      std::copy(from[c].begin() + own_grid, from[c].end(), to[c].begin() + pl.grid_samples + ranges.extra[me]);
      team.exchange(to[c].data(), sizeof(T), ranges.grid, everyone);
      team.exchange(to[c].data() + pl.grid_samples, sizeof(T), ranges.extra, everyone);
    }
  if (seconds_exchange) *seconds_exchange += since(t0);
  return timing;
}

bool team_run(const TessellationOptions& o) { return o.team && o.team->members > 1; }

// Largest sampled parametric deviation of each patch from its triangles (k+1 points per triangle side); with
// `only`, just the patches it marks (the others get 0).
std::vector<double> plan_deviation(const Plan& pl, int k, int threads, const TessellationTeam* team = nullptr,
                                   const std::vector<std::uint8_t>* only = nullptr) {
  const PatchModel& model = *pl.model;
  const auto batch = make_batch<double>(pl);
  SampleStore<double> store;
  const auto np = std::int64_t(model.patches.size());
  std::int64_t pa = 0, pb = np;
  TeamRanges ranges;
  if (team && team->members > 1) {
    ranges = team_ranges(pl, team->members);
    pa = ranges.patch[std::size_t(team->member)], pb = ranges.patch[std::size_t(team->member) + 1];
    run_team_batch<double>(pl, *team, ranges, store, Device::Cpu, PatchStrategy::Tables, threads, true, nullptr);
  } else {
    run_batch<double>(batch, store, Device::Cpu, PatchStrategy::Tables, threads, true);
  }
  auto param = [&](std::int64_t p, std::int64_t s, double& u, double& v) {
    if (s >= pl.grid_samples) {
      u = pl.extra_uv[std::size_t(s - pl.grid_samples) * 2];
      v = pl.extra_uv[std::size_t(s - pl.grid_samples) * 2 + 1];
      return;
    }
    patchk::sample_param<double>(batch.records[p], s - pl.first[p], u, v);
  };
  std::vector<double> worst(static_cast<std::size_t>(np), 0.0);
  k = std::max(2, k);
#pragma omp parallel for schedule(dynamic, 4) num_threads(cpu_thread_count(threads))
  for (std::int64_t p = pa; p < pb; ++p) {
    if (only && !(*only)[std::size_t(p)]) continue;
    std::vector<Ref> tris;
    triangulate_patch(pl, p, tris);
    for (std::size_t t = 0; t < tris.size(); t += 3) {
      double uv[3][2], xyz[3][3];
      for (int v = 0; v < 3; ++v) {
        param(p, tris[t + v].sample, uv[v][0], uv[v][1]);
        for (int c = 0; c < 3; ++c) xyz[v][c] = store.pos[c][std::size_t(tris[t + v].sample)];
      }
      worst[p] = std::max(worst[p], triangle_deviation(batch.records[p], batch.points.data(), uv, xyz, k));
    }
  }
  if (team && team->members > 1) team->exchange(worst.data(), sizeof(double), ranges.patch, true);
  return worst;
}

// The plan for the options: with a tolerance, the a-priori segments are checked by sampling and patches that
// miss are refined (error ~ h^2) until every one meets 90% of the tolerance. The estimate and the refinement
// aim below the tolerance, so a last pass gives back what the margin cost: each patch tries one segment fewer,
// along u then along v, and keeps it where its sampled deviation (with the edges its neighbours end with) stays
// within 95% of the tolerance.
Plan plan_for(const PatchModel& m, const TessellationOptions& o) {
  Plan pl = make_plan(m, o);
  if (!(o.tolerance > 0)) return pl;
  const double target = 0.9 * o.tolerance, keep = 0.95 * o.tolerance;
  std::vector<double> dev;
  for (int round = 0; round < 8; ++round) {
    dev = plan_deviation(pl, 4, o.threads, o.team.get());
    bool changed = false;
    for (std::size_t p = 0; p < dev.size(); ++p) {
      if (dev[p] <= target) continue;
      const double grow = std::sqrt(dev[p] / (0.85 * o.tolerance));
      for (auto* n : {&pl.nu[p], &pl.nv[p]}) *n = std::min(kMaxSegments, std::max(*n + 1, int(std::ceil(*n * grow))));
      changed = true;
    }
    if (!changed) break;
    finish_plan(pl);
  }
  if (*std::max_element(dev.begin(), dev.end()) > keep) return pl;  // refinement ran out of rounds: no coarsening
  const auto np = std::int64_t(m.patches.size());
  for (int step = 0; step < 6; ++step) {
    const int direction = step % 2;
    Plan trial = pl;
    for (std::int64_t p = 0; p < np; ++p) {
      const bool triangle = m.patches[p].kind == PatchKind::Triangle;
      if (triangle && direction == 1) continue;  // one segment count for both directions, tried once
      int& n = direction == 0 ? trial.nu[p] : trial.nv[p];
      if (n <= 1) continue;
      --n;
      if (triangle) trial.nv[p] = n;
    }
    // Patches that miss take their segments back, which can only refine their neighbours' shared edges; repeat
    // until all are within `keep`, or give the whole step up. Only patches whose grid or sides differ from the
    // plan's are sampled again.
    bool accepted = false;
    // A patch's deviation depends on its segments and its sides' factors alone: it is sampled again only where
    // those differ from the last plan sampled (the accepted plan, then the previous attempt).
    auto shape = [&](const Plan& q, std::int64_t p) {
      std::array<int, 6> x{q.nu[p], q.nv[p], 0, 0, 0, 0};
      for (int sd = 0; sd < patches::side_count(m.patches[p]); ++sd) x[std::size_t(2 + sd)] = q.factor(p, sd);
      return x;
    };
    std::vector<std::array<int, 6>> sampled_shape(static_cast<std::size_t>(np));
    for (std::int64_t p = 0; p < np; ++p) sampled_shape[std::size_t(p)] = shape(pl, p);
    std::vector<double> d = dev;
    for (int attempt = 0; attempt < 4 && !accepted; ++attempt) {
      finish_plan(trial);
      std::vector<std::uint8_t> differs(std::size_t(np), 0);
      for (std::int64_t p = 0; p < np; ++p) {
        const auto x = shape(trial, p);
        differs[std::size_t(p)] = x != sampled_shape[std::size_t(p)];
        sampled_shape[std::size_t(p)] = x;
      }
      const auto fresh = plan_deviation(trial, 4, o.threads, o.team.get(), &differs);
      for (std::int64_t p = 0; p < np; ++p)
        if (differs[std::size_t(p)]) d[std::size_t(p)] = fresh[std::size_t(p)];
      accepted = true;
      for (std::int64_t p = 0; p < np; ++p) {
        if (d[std::size_t(p)] <= keep) continue;
        accepted = false;
        trial.nu[p] = pl.nu[p];
        trial.nv[p] = pl.nv[p];
      }
    }
    if (!accepted) break;
    dev = std::move(d);
    const bool same = trial.nu == pl.nu && trial.nv == pl.nv;
    pl = std::move(trial);
    if (same && direction == 1) break;
  }
  return pl;
}

// ---------------------------------------------------------------- assembly
// A plain patch (tensor, not zipped, at least 2 x 2 cells, four distinct uncollapsed edges and corners) has no two
// equal vertices in a triangle, so it makes all 2 nu nv of its grid triangles.
bool plain_patch(const Plan& pl, std::int64_t p) {
  if (pl.model->patches[p].kind != PatchKind::Tensor || pl.zipper[p] || pl.nu[p] < 2 || pl.nv[p] < 2) return false;
  const auto& sides = pl.topo.sides[p];
  const auto& corners = pl.topo.corners[p];
  for (int a = 0; a < 4; ++a) {
    if (pl.topo.edges[sides[a].edge].collapsed) return false;
    for (int b = a + 1; b < 4; ++b)
      if (sides[a].edge == sides[b].edge || corners[a] == corners[b]) return false;
  }
  return true;
}

void check_mesh_size(const Plan& pl) {
  if (pl.vertices >= (std::int64_t(1) << 32))
    throw Error(ErrorKind::InvalidArgument, "the mesh would have " + std::to_string(pl.vertices) +
                                                " vertices, above the 2^32 that 32-bit indices hold; lower the resolution");
  core::check_host_allocation(std::uint64_t(pl.vertices) * 48, "a mesh of " + std::to_string(pl.vertices) + " vertices");
}

// Patches a closed component turned outward (counted against the orientation the topology chose).
void count_flips(const Plan& pl, const std::vector<double>& volume, TessellationReport* rep) {
  if (!rep) return;
  for (std::size_t p = 0; p < pl.topo.component.size(); ++p) {
    const auto c = std::size_t(pl.topo.component[p]);
    const bool outward_flip = pl.topo.component_closed[c] && !volume.empty() && volume[c] < 0;
    rep->flipped_patches += (pl.topo.flipped[p] != 0) != outward_flip;
  }
}

// polyhedra: their own vertices, one flat normal per face (fans of convex faces); then the group names
void append_polyhedra(PatchMesh& mesh, const PatchModel& m, TessellationReport* rep) {
  for (const auto& poly : m.polyhedra) {
    const auto base = std::uint32_t(mesh.positions.size() / 3);
    mesh.positions.insert(mesh.positions.end(), poly.vertices.begin(), poly.vertices.end());
    for (std::size_t f = 0; f + 1 < poly.face_starts.size(); ++f) {
      const auto s0 = poly.face_starts[f], s1 = poly.face_starts[f + 1];
      // Newell's normal of the polygon
      double n[3] = {0, 0, 0};
      for (auto k = s0; k < s1; ++k) {
        const double* a = &poly.vertices[std::size_t(poly.face_indices[k]) * 3];
        const double* b = &poly.vertices[std::size_t(poly.face_indices[k + 1 < s1 ? k + 1 : s0]) * 3];
        n[0] += (a[1] - b[1]) * (a[2] + b[2]);
        n[1] += (a[2] - b[2]) * (a[0] + b[0]);
        n[2] += (a[0] - b[0]) * (a[1] + b[1]);
      }
      const double len = norm3(n);
      const auto slot = std::uint32_t(mesh.normals.size() / 3);
      for (int c = 0; c < 3; ++c) mesh.normals.push_back(len > 0 ? n[c] / len : 0.0);
      for (auto k = s0 + 1; k + 1 < s1; ++k) {
        const std::uint32_t tri[3] = {base + std::uint32_t(poly.face_indices[s0]), base + std::uint32_t(poly.face_indices[k]),
                                      base + std::uint32_t(poly.face_indices[k + 1])};
        if (tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2]) continue;
        mesh.triangles.insert(mesh.triangles.end(), tri, tri + 3);
        mesh.triangle_normals.insert(mesh.triangle_normals.end(), {slot, slot, slot});
        mesh.face_group.push_back(poly.group);
        mesh.face_patch.push_back(-1);
        if (rep) ++rep->polyhedron_faces;
      }
    }
  }
  for (const auto& g : m.groups) mesh.group_names.push_back(g.name);
}

// The plan as the device assembly reads it: host arrays kept alive with the view that points into them.
struct DeviceAssemblyInput {
  patches::AssemblyPlan plan;
  std::vector<std::uint8_t> is_triangle, plain, edge_collapse;
  std::vector<std::array<std::int32_t, 2>> edge_corners;
  std::vector<std::int32_t> group;
};

void fill_device_assembly_input(const Plan& pl, const TessellationOptions& o, DeviceAssemblyInput& in) {
  const PatchModel& m = *pl.model;
  const auto np = std::int64_t(m.patches.size());
  in.is_triangle.resize(std::size_t(np));
  in.plain.resize(std::size_t(np));
  in.group.resize(std::size_t(np));
#pragma omp parallel for schedule(static) num_threads(cpu_thread_count(o.threads))
  for (std::int64_t p = 0; p < np; ++p) {
    in.is_triangle[std::size_t(p)] = m.patches[p].kind == PatchKind::Triangle;
    in.plain[std::size_t(p)] = plain_patch(pl, p);
    in.group[std::size_t(p)] = m.patches[p].group;
  }
  in.edge_collapse.resize(pl.topo.edges.size());
  in.edge_corners.resize(pl.topo.edges.size());
#pragma omp parallel for schedule(static) num_threads(cpu_thread_count(o.threads))
  for (std::size_t e = 0; e < pl.topo.edges.size(); ++e) {
    in.edge_collapse[e] = pl.topo.edges[e].collapsed;
    in.edge_corners[e] = {pl.topo.edges[e].corner_a, pl.topo.edges[e].corner_b};
  }
  patches::AssemblyPlan& a = in.plan;
  a.view.is_triangle = in.is_triangle.data();
  a.view.is_flipped = pl.topo.flipped.data();
  a.view.zipper = pl.zipper.data();
  a.view.nu = pl.nu.data();
  a.view.nv = pl.nv.data();
  a.view.first = pl.first.data();
  a.view.extra_first = pl.extra_first.data();
  a.view.interior_base = pl.interior_base.data();
  a.view.sides = pl.topo.sides.data();
  a.view.edge_factor = pl.edge_factor.data();
  a.view.edge_vertex_base = pl.edge_vertex_base.data();
  a.view.edge_corners = in.edge_corners.data();
  a.view.edge_collapse = in.edge_collapse.data();
  a.plain = in.plain.data();
  a.group = in.group.data();
  a.component = pl.topo.component.data();
  a.component_closed = pl.topo.component_closed;
  a.patches = np;
  a.edges = std::int64_t(pl.topo.edges.size());
  a.seam_vertices = np > 0 ? pl.interior_base[0] : pl.topo.corner_count;
  a.vertices = pl.vertices;
  a.samples = pl.grid_samples + pl.extra_samples;
  a.cos_crease = std::cos(o.crease_angle_degrees * 3.14159265358979323846 / 180.0);
  a.keep_degenerate = o.keep_degenerate;
  a.orient = o.orient;
}

template <class T>
PatchMesh assemble(const Plan& pl, const SampleStore<T>& st, const TessellationOptions& o, TessellationReport* rep) {
  const PatchModel& m = *pl.model;
  const auto np = std::int64_t(m.patches.size());
  // A team's member 0 assembles alone once the others are done: it may take the node's cores.
  const int threads = team_run(o) && o.team->assembly_threads > 0 ? o.team->assembly_threads : cpu_thread_count(o.threads);
  PatchMesh mesh;
  check_mesh_size(pl);
  core::resize_for_overwrite(mesh.positions, std::size_t(pl.vertices) * 3);
  // seam vertices: every ring sample of every patch contributes; the first gives the position, normals are
  // clustered by the crease angle
  struct Contribution {
    std::int64_t vertex, sample;
  };
  // Seam vertices are the corners and edge vertices, numbered below the first patch interior: a counting sort by
  // vertex, then by sample within each vertex (the first sample gives the position).
  const std::int64_t seam_vertices = np > 0 ? pl.interior_base[0] : pl.topo.corner_count;
  // Both passes run over patches in parallel; where a contribution lands within its vertex's run depends on the
  // threads, and the sort by sample below makes the order deterministic again.
  std::vector<std::int64_t> seam_first(std::size_t(seam_vertices) + 1, 0);
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads)
  for (std::int64_t p = 0; p < np; ++p)
    for (int s = 0; s < patches::side_count(m.patches[p]); ++s)
      for (int k = 0; k < pl.factor(p, s); ++k) {
        std::int64_t& count = seam_first[std::size_t(side_vertex(pl, p, s, k)) + 1];
#pragma omp atomic
        ++count;
      }
  for (std::int64_t v = 0; v < seam_vertices; ++v) seam_first[std::size_t(v) + 1] += seam_first[std::size_t(v)];
  std::vector<Contribution> seam(std::size_t(seam_first.back()));
  {
    std::vector<std::int64_t> fill(seam_first.begin(), seam_first.end() - 1);
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads)
    for (std::int64_t p = 0; p < np; ++p)
      for (int s = 0; s < patches::side_count(m.patches[p]); ++s)
        for (int k = 0; k < pl.factor(p, s); ++k) {
          const std::int64_t v = side_vertex(pl, p, s, k);
          std::int64_t at;
#pragma omp atomic capture
          at = fill[std::size_t(v)]++;
          seam[std::size_t(at)] = {v, side_sample(pl, p, s, k)};
        }
  }
#pragma omp parallel for schedule(dynamic, 1024) num_threads(threads)
  for (std::int64_t v = 0; v < seam_vertices; ++v)
    std::sort(seam.begin() + seam_first[std::size_t(v)], seam.begin() + seam_first[std::size_t(v) + 1],
              [](const Contribution& a, const Contribution& b) { return a.sample < b.sample; });
  const double cos_crease = std::cos(o.crease_angle_degrees * 3.14159265358979323846 / 180.0);
  // seam sample -> normal slot (none: the sample's vertex)
  std::vector<std::uint32_t> slot_of_sample(std::size_t(pl.grid_samples + pl.extra_samples), UINT32_MAX);
  // Normals clustered per seam vertex in parallel: the first cluster is the vertex's own slot; further clusters
  // (creases) are gathered per thread in vertex order and numbered after, as a serial sweep would number them.
  // The normals are allocated once their count is known, so the seam's first clusters wait in seam_normals.
  struct Crease {
    std::int64_t vertex;
    double normal[3];               // unit
    std::size_t first, count;       // its samples in the thread's crease_samples
  };
  const int teams = std::max(1, threads);
  std::vector<std::vector<Crease>> creases(static_cast<std::size_t>(teams));
  std::vector<std::vector<std::int64_t>> crease_samples(static_cast<std::size_t>(teams));
  std::vector<double> seam_normals;
  core::resize_for_overwrite(seam_normals, std::size_t(seam_vertices) * 3);
  std::int64_t crease_vertices = 0;
#pragma omp parallel num_threads(teams) reduction(+ : crease_vertices)
  {
    std::vector<std::array<double, 3>> sums;  // greedy clusters: sum of their normals
    std::vector<int> cluster;                 // cluster of each contribution of the vertex
    auto& mine = creases[std::size_t(omp_get_thread_num())];
    auto& my_samples = crease_samples[std::size_t(omp_get_thread_num())];
    auto unit = [](const std::array<double, 3>& x, double* out) {
      const double len = norm3(x.data());
      for (int c = 0; c < 3; ++c) out[c] = len > 0 ? x[c] / len : 0.0;
    };
    // static: each thread's vertices are one ascending block, so the threads' lists in order are in vertex order
#pragma omp for schedule(static)
    for (std::int64_t v = 0; v < seam_vertices; ++v) {
      const auto a = std::size_t(seam_first[std::size_t(v)]), b = std::size_t(seam_first[std::size_t(v) + 1]);
      double* nv = &seam_normals[std::size_t(v) * 3];
      if (a == b) {
        nv[0] = nv[1] = nv[2] = 0.0;
        for (int c = 0; c < 3; ++c) mesh.positions[std::size_t(v) * 3 + c] = 0.0;
        continue;
      }
      for (int c = 0; c < 3; ++c) mesh.positions[std::size_t(v) * 3 + c] = double(st.pos[c][std::size_t(seam[a].sample)]);
      sums.clear();
      cluster.clear();
      for (std::size_t k = a; k < b; ++k) {
        const std::size_t s = std::size_t(seam[k].sample);
        const double n[3] = {double(st.nrm[0][s]), double(st.nrm[1][s]), double(st.nrm[2][s])};
        const bool zero = n[0] == 0 && n[1] == 0 && n[2] == 0;
        int hit = -1;
        for (std::size_t c = 0; c < sums.size() && hit < 0; ++c) {
          const double len = norm3(sums[c].data());
          if (zero || len == 0 || (sums[c][0] * n[0] + sums[c][1] * n[1] + sums[c][2] * n[2]) >= cos_crease * len)
            hit = int(c);
        }
        if (hit < 0) {
          hit = int(sums.size());
          sums.push_back({0, 0, 0});
        }
        for (int c = 0; c < 3; ++c) sums[hit][c] += n[c];
        cluster.push_back(hit);
        if (hit == 0) slot_of_sample[s] = std::uint32_t(v);
      }
      unit(sums[0], nv);
      if (sums.size() > 1) {
        ++crease_vertices;
        for (std::size_t c = 1; c < sums.size(); ++c) {
          Crease cr{v, {0, 0, 0}, my_samples.size(), 0};
          unit(sums[c], cr.normal);
          for (std::size_t k = a; k < b; ++k)
            if (cluster[k - a] == int(c)) my_samples.push_back(seam[k].sample), ++cr.count;
          mine.push_back(cr);
        }
      }
    }
  }
  std::size_t extra = 0;
  for (const auto& list : creases) extra += list.size();
  core::resize_for_overwrite(mesh.normals, (std::size_t(pl.vertices) + extra) * 3);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t k = 0; k < seam_vertices * 3; ++k) mesh.normals[std::size_t(k)] = seam_normals[std::size_t(k)];
  {
    std::size_t slot = std::size_t(pl.vertices);
    for (std::size_t t = 0; t < creases.size(); ++t)
      for (const Crease& cr : creases[t]) {
        std::copy_n(cr.normal, 3, &mesh.normals[slot * 3]);
        for (std::size_t k = cr.first; k < cr.first + cr.count; ++k)
          slot_of_sample[std::size_t(crease_samples[t][k])] = std::uint32_t(slot);
        ++slot;
      }
  }
  auto put = [&](std::int64_t v, std::int64_t s) {
    for (int c = 0; c < 3; ++c) {
      mesh.positions[std::size_t(v) * 3 + c] = double(st.pos[c][std::size_t(s)]);
      mesh.normals[std::size_t(v) * 3 + c] = double(st.nrm[c][std::size_t(s)]);
    }
  };
  // interior vertices come from their patch alone
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (std::int64_t p = 0; p < np; ++p) {
    if (m.patches[p].kind == PatchKind::Triangle) {
      const int n = pl.nu[p];
      for (int b = 1; b < n; ++b)
        for (int a = 1; a + b < n; ++a) {
          const Ref r = lattice_ref(pl, p, a, b);
          put(r.vertex, r.sample);
        }
    } else {
      for (int i = 1; i < pl.nu[p]; ++i)
        for (int j = 1; j < pl.nv[p]; ++j) {
          const Ref r = grid_ref(pl, p, i, j);
          put(r.vertex, r.sample);
        }
    }
  }
  auto normal_slot = [&](const Ref& r) -> std::uint32_t {
    const std::uint32_t slot = slot_of_sample[std::size_t(r.sample)];
    return slot != UINT32_MAX ? slot : std::uint32_t(r.vertex);
  };
  // triangles, per patch in parallel, concatenated in patch order: counted, then written in place
  // A plain patch (tensor, not zipped, at least 2 x 2 cells, four distinct uncollapsed edges and corners) has no
  // two equal vertices in a triangle, so it makes all 2 nu nv of them; the others are counted by triangulating.
  // The device sizes its buffers by patches::triangles_offered before it counts: every host assembly checks it.
  std::vector<std::int64_t> tri_first(std::size_t(np) + 1, 0);
  int over_bound = 0;
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) reduction(max : over_bound)
  for (std::int64_t p = 0; p < np; ++p) {
    std::int64_t count = 0;
    if (plain_patch(pl, p)) count = 2 * std::int64_t(pl.nu[p]) * pl.nv[p];
    else triangulate_patch(pl, p, [&](const Ref&, const Ref&, const Ref&) { ++count; });
    tri_first[std::size_t(p) + 1] = count;
    if (count > patches::triangles_offered(pl, p)) over_bound = 1;
  }
  if (over_bound)
    throw Error(ErrorKind::InvalidArgument, "internal error in tessellation: a patch made more triangles than its bound");
  for (std::int64_t p = 0; p < np; ++p) tri_first[p + 1] += tri_first[p];
  const std::int64_t nt = tri_first[np];
  core::resize_for_overwrite(mesh.triangles, std::size_t(nt) * 3);
  core::resize_for_overwrite(mesh.triangle_normals, std::size_t(nt) * 3);
  core::resize_for_overwrite(mesh.face_group, std::size_t(nt));
  core::resize_for_overwrite(mesh.face_patch, std::size_t(nt));
  std::vector<std::uint8_t> keep;
  if (!o.keep_degenerate) core::resize_for_overwrite(keep, std::size_t(nt));
  std::int64_t dropped = 0;
  int miscounted = 0;
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) reduction(+ : dropped) reduction(max : miscounted)
  for (std::int64_t p = 0; p < np; ++p) {
    std::size_t t3 = std::size_t(tri_first[p]) * 3;
    const std::size_t end3 = std::size_t(tri_first[p + 1]) * 3;
    triangulate_patch(pl, p, [&](const Ref& a, const Ref& b, const Ref& c) {
      if (t3 == end3) {  // more than counted: never overwrite the next patch's triangles
        miscounted = 1;
        return;
      }
      for (const Ref* r : {&a, &b, &c}) {
        mesh.triangles[t3] = std::uint32_t(r->vertex);
        mesh.triangle_normals[t3++] = normal_slot(*r);
      }
    });
    if (t3 != end3) miscounted = 1;
    for (std::int64_t t = tri_first[p]; t < tri_first[p + 1]; ++t) {
      mesh.face_group[t] = m.patches[p].group;
      mesh.face_patch[t] = std::int32_t(p);
      if (!o.keep_degenerate) {
        const double* a = &mesh.positions[std::size_t(mesh.triangles[3 * t]) * 3];
        const double* b = &mesh.positions[std::size_t(mesh.triangles[3 * t + 1]) * 3];
        const double* c = &mesh.positions[std::size_t(mesh.triangles[3 * t + 2]) * 3];
        const double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        const double x[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        const bool zero = x[0] == 0 && x[1] == 0 && x[2] == 0;
        keep[t] = !zero;
        dropped += zero;
      }
    }
  }
  if (miscounted)
    throw Error(ErrorKind::InvalidArgument,
                "internal error in tessellation: a patch made another number of triangles than it was counted for");
  if (dropped > 0) {  // compaction only where a zero-area triangle was found
    std::int64_t w = 0;
    for (std::int64_t t = 0; t < nt; ++t) {
      if (!keep[t]) continue;
      for (int c = 0; c < 3; ++c) {
        mesh.triangles[3 * w + c] = mesh.triangles[3 * t + c];
        mesh.triangle_normals[3 * w + c] = mesh.triangle_normals[3 * t + c];
      }
      mesh.face_group[w] = mesh.face_group[t];
      mesh.face_patch[w] = mesh.face_patch[t];
      ++w;
    }
    mesh.triangles.resize(std::size_t(w) * 3);
    mesh.triangle_normals.resize(std::size_t(w) * 3);
    mesh.face_group.resize(std::size_t(w));
    mesh.face_patch.resize(std::size_t(w));
  }
  // closed components face outward: flip those whose signed volume is negative (nothing to do without one)
  if (o.orient) {
    const auto nc = pl.topo.component_closed.size();
    std::vector<double> volume(nc, 0.0);
    std::vector<std::array<double, 3>> centre(nc, {0, 0, 0});
    std::vector<std::int64_t> count(nc, 0);
    const bool any_closed = std::find(pl.topo.component_closed.begin(), pl.topo.component_closed.end(), 1) != pl.topo.component_closed.end();
    const std::int64_t nf = any_closed ? mesh.triangle_count() : 0;
    for (std::int64_t t = 0; t < nf; ++t) {
      const auto c = std::size_t(pl.topo.component[std::size_t(mesh.face_patch[t])]);
      const double* a = &mesh.positions[std::size_t(mesh.triangles[3 * t]) * 3];
      for (int k = 0; k < 3; ++k) centre[c][k] += a[k];
      ++count[c];
    }
    for (std::size_t c = 0; c < nc; ++c)
      for (int k = 0; k < 3; ++k) centre[c][k] /= double(std::max<std::int64_t>(count[c], 1));
    for (std::int64_t t = 0; t < nf; ++t) {
      const auto c = std::size_t(pl.topo.component[std::size_t(mesh.face_patch[t])]);
      double q[3][3];
      for (int v = 0; v < 3; ++v)
        for (int k = 0; k < 3; ++k) q[v][k] = mesh.positions[std::size_t(mesh.triangles[3 * t + v]) * 3 + k] - centre[c][k];
      volume[c] += q[0][0] * (q[1][1] * q[2][2] - q[1][2] * q[2][1]) - q[0][1] * (q[1][0] * q[2][2] - q[1][2] * q[2][0]) +
                   q[0][2] * (q[1][0] * q[2][1] - q[1][1] * q[2][0]);
    }
    std::vector<std::uint8_t> flip_slot(mesh.normals.size() / 3, 0);
    bool any = false;
    for (std::int64_t t = 0; t < nf; ++t) {
      const auto c = std::size_t(pl.topo.component[std::size_t(mesh.face_patch[t])]);
      if (!pl.topo.component_closed[c] || volume[c] >= 0) continue;
      std::swap(mesh.triangles[3 * t + 1], mesh.triangles[3 * t + 2]);
      std::swap(mesh.triangle_normals[3 * t + 1], mesh.triangle_normals[3 * t + 2]);
      for (int k = 0; k < 3; ++k) flip_slot[mesh.triangle_normals[3 * t + k]] = 1;
      any = true;
    }
    if (any)
      for (std::size_t s = 0; s < flip_slot.size(); ++s)
        if (flip_slot[s])
          for (int k = 0; k < 3; ++k) mesh.normals[s * 3 + k] = -mesh.normals[s * 3 + k];
    count_flips(pl, volume, rep);
  }
  append_polyhedra(mesh, m, rep);
  if (rep) rep->crease_vertices = crease_vertices;
  return mesh;
}

template <class T>
PatchMesh tessellate_as(const PatchModel& model, const TessellationOptions& o, TessellationReport* rep) {
  auto t0 = Clock::now();
  const Plan pl = plan_for(model, o);
  if (rep) {
    rep->seconds_plan = since(t0);
    rep->patches = std::int64_t(model.patches.size());
    rep->tensor_patches = model.tensor_patch_count();
    rep->triangular_patches = rep->patches - rep->tensor_patches;
    rep->evaluated_points = pl.grid_samples + pl.extra_samples;
    for (std::size_t k = 0; k < pl.topo.edges.size(); ++k) {
      const auto& e = pl.topo.edges[k];
      if (e.collapsed) ++rep->collapsed_edges;
      else if (e.sides.size() >= 2) ++rep->shared_edges;
      else if (pl.topo.split(std::int64_t(k))) ++rep->t_junction_edges;
      else if (pl.topo.piece_of_split[k]) ++rep->t_junction_pieces;
      else ++rep->open_edges, rep->open_side_segments += pl.edge_factor[k];
    }
    if (!pl.nu.empty()) {
      rep->min_segments = std::min(*std::min_element(pl.nu.begin(), pl.nu.end()), *std::min_element(pl.nv.begin(), pl.nv.end()));
      rep->max_segments = std::max(*std::max_element(pl.nu.begin(), pl.nu.end()), *std::max_element(pl.nv.begin(), pl.nv.end()));
    }
  }
  // The phases' shares of a typical run: planning is short, evaluation and assembly split the rest.
  if (o.progress) o.progress(0.1);
  SampleStore<T> store;
  const Device device = pick_device(o.device);
  {
    // The whole run's host memory, known from the plan before any work: the mesh, and beside it the samples
    // wherever they come to the host.
    const bool samples_on_host = !(device == Device::Cuda && o.assemble_on_device);
    const std::uint64_t samples = std::uint64_t(pl.grid_samples + pl.extra_samples);
    core::check_host_allocation(std::uint64_t(pl.vertices) * 48 + (samples_on_host ? samples * 6 * sizeof(T) : 0),
                                "the tessellation (" + std::to_string(samples) + " samples, a mesh of " +
                                    std::to_string(pl.vertices) + " vertices; lower the resolution)");
  }
  t0 = Clock::now();
  BatchTiming timing;
  double seconds_exchange = 0, seconds_given_up = 0;
  if (team_run(o)) {
    const TeamRanges ranges = team_ranges(pl, o.team->members);
    timing = run_team_batch<T>(pl, *o.team, ranges, store, device, o.strategy, o.threads, false, &seconds_exchange);
    if (rep) rep->own_patches = ranges.patch[std::size_t(o.team->member) + 1] - ranges.patch[std::size_t(o.team->member)];
  } else if (device == Device::Cuda && o.assemble_on_device && pl.topo.splits.empty()) {
    // The samples stay on the device, where the mesh is welded and assembled; where the device cannot (memory),
    // they come back and the host assembles as below.
    check_mesh_size(pl);
    const auto f0 = Clock::now();
    DeviceAssemblyInput input;
    fill_device_assembly_input(pl, o, input);
    const double fill_seconds = since(f0);  // assembly's share, though it runs before the evaluation
    patches::AssemblyOutcome outcome;
    double consumer_seconds = 0, attempt_seconds = 0;
    PatchMesh device_mesh;
    const std::int64_t samples = pl.grid_samples + pl.extra_samples;
    const patches::cuda::OnDevice<T> consume = [&](const patches::SampleViews<T>& on_device) {
      const auto c0 = Clock::now();
      outcome = patches::cuda::assemble<T>(input.plan, on_device, device_mesh);
      attempt_seconds = since(c0);
      if (!outcome.done) {
        core::check_host_allocation(std::uint64_t(samples) * 6 * sizeof(T), std::to_string(samples) + " patch samples");
        for (int c = 0; c < 3; ++c)
          core::resize_for_overwrite(store.pos[c], std::size_t(samples)), core::resize_for_overwrite(store.nrm[c], std::size_t(samples));
        patches::cuda::download<T>(on_device, store.views(), samples);
      }
      consumer_seconds = since(c0);
      return true;
    };
    timing = patches::cuda::evaluate<T>(make_batch<T>(pl), o.strategy, patches::SampleViews<T>{}, false, consume);
    if (rep) {
      rep->own_patches = rep->patches;
      rep->seconds_evaluate = since(t0) - consumer_seconds - fill_seconds;
      rep->device = timing.device;
      rep->strategy = patch_strategy_name(timing.strategy);
      rep->assembly_note = outcome.why_not;
    }
    if (outcome.done) {
      if (o.progress) o.progress(0.4);
      if (rep) {
        rep->assembled_on_device = true;
        rep->seconds_assemble = outcome.seconds_device + fill_seconds;
        rep->seconds_download = outcome.seconds_download;
        rep->crease_vertices = outcome.crease_vertices;
        rep->seconds_assembly_phases[0] = fill_seconds;
        for (int k = 0; k < 4; ++k) rep->seconds_assembly_phases[k + 1] = outcome.phase_seconds[k];
      }
      if (o.orient) count_flips(pl, outcome.component_volume, rep);
      append_polyhedra(device_mesh, model, rep);
      if (o.progress) o.progress(1.0);
      return device_mesh;
    }
    seconds_given_up = attempt_seconds + fill_seconds;  // not evaluation: the device's try
  } else {
    timing = run_batch<T>(make_batch<T>(pl), store, device, o.strategy, o.threads, true, o.hybrid_scheme, o.cpu_share);
    if (rep) rep->own_patches = rep->patches;
    if (rep && device == Device::Cuda && o.assemble_on_device)
      rep->assembly_note = "the model has T-junctions, which the host assembly stitches";
  }
  if (rep) {
    rep->seconds_evaluate = since(t0) - seconds_exchange - seconds_given_up;
    rep->seconds_exchange = seconds_exchange;
    rep->device = timing.device;
    rep->strategy = patch_strategy_name(timing.strategy);
    rep->cpu_share = timing.cpu_share;
  }
  if (o.progress) o.progress(0.4);
  if (team_run(o) && o.team->member != 0) return PatchMesh{};  // member 0 assembles
  t0 = Clock::now();
  PatchMesh mesh = assemble<T>(pl, store, o, rep);
  if (rep) rep->seconds_assemble = since(t0);
  if (o.progress) o.progress(1.0);
  return mesh;
}

}  // namespace

PatchMesh tessellate(const PatchModel& model, const TessellationOptions& o, TessellationReport* rep) {
  validate(model);
  if (o.crease_angle_degrees < 0 || o.crease_angle_degrees > 180 || !std::isfinite(o.crease_angle_degrees))
    throw Error(ErrorKind::InvalidArgument, "crease angle must be within 0..180 degrees");
  if (o.tolerance < 0 || std::isnan(o.tolerance)) throw Error(ErrorKind::InvalidArgument, "tolerance must be > 0");
  if (rep) *rep = TessellationReport{};
  return o.precision == Precision::Float ? tessellate_as<float>(model, o, rep) : tessellate_as<double>(model, o, rep);
}

std::vector<double> sampled_patch_deviation(const PatchModel& model, const TessellationOptions& options,
                                            int samples_per_edge) {
  validate(model);
  return plan_deviation(plan_for(model, options), samples_per_edge, options.threads);
}

int uniform_resolution_for(const PatchModel& model, double tolerance, int max_resolution) {
  auto meets = [&](int n) {
    TessellationOptions o;
    o.resolution = n;
    const auto dev = sampled_patch_deviation(model, o, 4);
    return *std::max_element(dev.begin(), dev.end()) <= tolerance;
  };
  int lo = 0, hi = 1;
  while (hi <= max_resolution && !meets(hi)) lo = hi, hi *= 2;
  if (hi > max_resolution) {
    if (!meets(max_resolution)) return max_resolution + 1;
    hi = max_resolution;
  }
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (meets(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

template <class T>
BatchTiming evaluate_patch_grids(const PatchModel& model, const std::vector<std::pair<int, int>>& segments,
                                 const BatchOptions& options, PatchSamples<T>* out) {
  validate(model);
  const auto np = std::int64_t(model.patches.size());
  if (segments.size() != 1 && std::int64_t(segments.size()) != np)
    throw Error(ErrorKind::InvalidArgument, "segments: give one (nu, nv) pair or one per patch");
  Plan pl;
  pl.model = &model;
  pl.topo.flipped.assign(std::size_t(np), 0);
  pl.nu.resize(std::size_t(np));
  pl.nv.resize(std::size_t(np));
  pl.first.resize(std::size_t(np) + 1);
  std::int64_t s = 0;
  for (std::int64_t p = 0; p < np; ++p) {
    const auto [a, b] = segments.size() == 1 ? segments[0] : segments[std::size_t(p)];
    if (a < 1 || b < 1 || a > kMaxSegments || b > kMaxSegments)
      throw Error(ErrorKind::InvalidArgument, "segments " + std::to_string(a) + "x" + std::to_string(b) + " outside 1.." +
                                                  std::to_string(kMaxSegments));
    const bool tri = model.patches[p].kind == PatchKind::Triangle;
    pl.nu[p] = tri ? std::max(a, b) : a;
    pl.nv[p] = tri ? pl.nu[p] : b;
    pl.first[p] = s;
    s += tri ? std::int64_t(pl.nu[p] + 1) * (pl.nu[p] + 2) / 2 : std::int64_t(a + 1) * (b + 1);
  }
  pl.first[np] = s;
  pl.grid_samples = s;
  const auto batch = make_batch<T>(pl);
  const Device device = pick_device(options.device);
  SampleStore<T> store;
  if (device == Device::Cuda && !options.copy_back) {
    // samples stay on the device: no host arrays
    return patches::cuda::evaluate<T>(batch, options.strategy, patches::SampleViews<T>{}, false);
  }
  if (out)  // reuse the caller's arrays: no fresh pages to fault in when the sizes match
    for (int c = 0; c < 3; ++c) store.pos[c] = std::move(out->position[c]), store.nrm[c] = std::move(out->normal[c]);
  BatchTiming t = run_batch<T>(batch, store, device, options.strategy, options.threads, true, options.hybrid_scheme,
                               options.cpu_share);
  if (out) {
    for (int c = 0; c < 3; ++c) out->position[c] = std::move(store.pos[c]), out->normal[c] = std::move(store.nrm[c]);
    out->first = pl.first;
  }
  return t;
}

template BatchTiming evaluate_patch_grids<float>(const PatchModel&, const std::vector<std::pair<int, int>>&,
                                                 const BatchOptions&, PatchSamples<float>*);
template BatchTiming evaluate_patch_grids<double>(const PatchModel&, const std::vector<std::pair<int, int>>&,
                                                  const BatchOptions&, PatchSamples<double>*);

TriangleMesh to_triangle_mesh(const PatchMesh& pm) {
  // One output vertex per (position, normal) pair, numbered in the order of the corner that first uses it (the
  // order a single sweep over the corners would give), computed in parallel: the first corner of each position,
  // the few corners whose normal differs from that corner's (crease splits), then a scan over the corners that
  // create a vertex.
  TriangleMesh tm;
  const std::int64_t nf = pm.triangle_count(), corners = 3 * nf, nv = pm.vertex_count();
  const std::uint32_t* tri = pm.triangles.data();
  const std::uint32_t* nrm = pm.triangle_normals.data();
  constexpr std::uint64_t kNone = UINT64_MAX;
  std::vector<std::uint64_t> first(std::size_t(nv), kNone);  // first corner of each position
#pragma omp parallel for schedule(static)
  for (std::int64_t k = 0; k < corners; ++k) {
    std::atomic_ref<std::uint64_t> slot(first[tri[k]]);
    for (std::uint64_t seen = slot.load(std::memory_order_relaxed); std::uint64_t(k) < seen;)
      if (slot.compare_exchange_weak(seen, std::uint64_t(k), std::memory_order_relaxed)) break;
  }
  // Corners whose normal differs from their position's first one, in corner order; each (position, normal) pair
  // creates its vertex at its first such corner.
  std::vector<std::uint8_t> creates(static_cast<std::size_t>(corners), 0);
  std::vector<std::vector<std::int64_t>> split_parts(static_cast<std::size_t>(omp_get_max_threads()));
#pragma omp parallel
  {
    auto& mine = split_parts[std::size_t(omp_get_thread_num())];
#pragma omp for schedule(static)
    for (std::int64_t k = 0; k < corners; ++k) {
      const std::uint64_t f = first[tri[k]];
      if (f == std::uint64_t(k)) creates[std::size_t(k)] = 1;
      else if (nrm[k] != nrm[f]) mine.push_back(k);
    }
  }
  std::vector<std::int64_t> splits;
  for (auto& part : split_parts) splits.insert(splits.end(), part.begin(), part.end());
  std::sort(splits.begin(), splits.end());
  std::unordered_map<std::uint64_t, std::int64_t> split_first;  // (position << 32 | normal) -> first corner
  for (std::int64_t k : splits)
    if (split_first.try_emplace((std::uint64_t(tri[k]) << 32) | nrm[k], k).second) creates[std::size_t(k)] = 1;
  // Output vertex of each creating corner: an exclusive scan, in chunks.
  std::vector<std::uint32_t> index(static_cast<std::size_t>(corners));
  const int chunks = std::max(1, omp_get_max_threads());
  std::vector<std::uint64_t> chunk_base(std::size_t(chunks) + 1, 0);
  auto chunk_range = [&](int c) { return std::pair{corners * c / chunks, corners * (c + 1) / chunks}; };
#pragma omp parallel for schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    const auto [k0, k1] = chunk_range(c);
    std::uint64_t n = 0;
    for (std::int64_t k = k0; k < k1; ++k) n += creates[std::size_t(k)];
    chunk_base[std::size_t(c) + 1] = n;
  }
  for (int c = 0; c < chunks; ++c) chunk_base[std::size_t(c) + 1] += chunk_base[std::size_t(c)];
  const std::uint64_t outputs = chunk_base[std::size_t(chunks)];
  tm.positions.resize(std::size_t(outputs) * 3);
  tm.normals.resize(std::size_t(outputs) * 3);
#pragma omp parallel for schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    const auto [k0, k1] = chunk_range(c);
    std::uint64_t o = chunk_base[std::size_t(c)];
    for (std::int64_t k = k0; k < k1; ++k) {
      if (!creates[std::size_t(k)]) continue;
      index[std::size_t(k)] = std::uint32_t(o);
      for (int d = 0; d < 3; ++d) {
        tm.positions[std::size_t(o) * 3 + d] = float(pm.positions[std::size_t(tri[k]) * 3 + d]);
        tm.normals[std::size_t(o) * 3 + d] = float(pm.normals[std::size_t(nrm[k]) * 3 + d]);
      }
      ++o;
    }
  }
  tm.triangles.resize(std::size_t(corners));
#pragma omp parallel for schedule(static)
  for (std::int64_t k = 0; k < corners; ++k) {
    const std::uint64_t f = first[tri[k]];
    std::uint64_t from = f;  // the corner that created this corner's vertex
    if (nrm[k] != nrm[f]) from = std::uint64_t(split_first.at((std::uint64_t(tri[k]) << 32) | nrm[k]));
    tm.triangles[std::size_t(k)] = index[std::size_t(from)];
  }
  tm.face_groups.assign(pm.face_group.begin(), pm.face_group.end());
  tm.group_names = pm.group_names;
  return tm;
}

}  // namespace parasurf
