// Patch adjacency: corners and side curves matched within a tolerance relative to the model, after raising every
// side to a common degree (exact), orientation by propagation.
#include "patches/topology.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <string>
#include <unordered_map>

#include "patches/side_curves.hpp"

namespace parasurf::patches {

std::vector<std::int64_t> side_point_indices(const Patch& p, int s) {
  std::vector<std::int64_t> idx;
  if (p.kind == PatchKind::Tensor) {
    const int m = p.degree_u, n = p.degree_v;
    auto at = [&](int i, int j) { return std::int64_t(i) * (n + 1) + j; };
    if (s == 0) for (int i = 0; i <= m; ++i) idx.push_back(at(i, 0));
    if (s == 1) for (int j = 0; j <= n; ++j) idx.push_back(at(m, j));
    if (s == 2) for (int i = m; i >= 0; --i) idx.push_back(at(i, n));
    if (s == 3) for (int j = n; j >= 0; --j) idx.push_back(at(0, j));
  } else {
    const int d = p.degree_u;
    auto row = [&](int r) { return std::int64_t(r) * (d + 1) - std::int64_t(r) * (r - 1) / 2; };
    if (s == 0) for (int k = 0; k <= d; ++k) idx.push_back(k);
    if (s == 1) for (int r = 0; r <= d; ++r) idx.push_back(row(r) + d - r);
    if (s == 2) for (int r = d; r >= 0; --r) idx.push_back(row(r));
  }
  return idx;
}

namespace {

// Points within `tol` (max norm) of one another get one id, in order of first appearance. Points go into cells
// much larger than the tolerance, so that a lookup visits one cell in almost every case and at most eight.
class PointClusters {
 public:
  explicit PointClusters(double tol) : tol_(tol), cell_(tol > 0 ? 64 * tol : 0) {}
  std::int32_t id(const double q[3]) {
    std::int64_t lo[3], hi[3];
    for (int c = 0; c < 3; ++c) {
      lo[c] = cell_of(q[c] - tol_);
      hi[c] = cell_of(q[c] + tol_);
    }
    for (std::int64_t x = lo[0]; x <= hi[0]; ++x)
      for (std::int64_t y = lo[1]; y <= hi[1]; ++y)
        for (std::int64_t z = lo[2]; z <= hi[2]; ++z) {
          const auto it = cells_.find(key(x, y, z));
          if (it == cells_.end()) continue;
          for (std::int32_t k : it->second)
            if (distance_max(points_[std::size_t(k)].data(), q) <= tol_) return k;
        }
    const auto k = std::int32_t(points_.size());
    points_.push_back({q[0], q[1], q[2]});
    cells_[key(cell_of(q[0]), cell_of(q[1]), cell_of(q[2]))].push_back(k);
    return k;
  }
  std::int32_t count() const { return std::int32_t(points_.size()); }

 private:
  std::int64_t cell_of(double x) const {
    if (cell_ == 0) {  // exact: the coordinate's bits (+0 and -0 alike) stand for the cell
      if (x == 0.0) x = 0.0;
      std::int64_t b;
      std::memcpy(&b, &x, 8);
      return b;
    }
    const double c = std::floor(x / cell_);
    return c >= 9e18 ? std::int64_t(9e18) : c <= -9e18 ? std::int64_t(-9e18) : std::int64_t(c);
  }
  static std::uint64_t key(std::int64_t x, std::int64_t y, std::int64_t z) {
    std::uint64_t h = 0x9e3779b97f4a7c15ull;
    for (std::int64_t w : {x, y, z}) {
      h ^= std::uint64_t(w) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      h *= 0xbf58476d1ce4e5b9ull;
      h ^= h >> 31;
    }
    return h;
  }
  double tol_, cell_;
  std::vector<std::array<double, 3>> points_;
  std::unordered_map<std::uint64_t, std::vector<std::int32_t>> cells_;  // cells sharing a hash share a list
};

}  // namespace

Topology build_topology(const PatchModel& m, bool orient, double relative_tolerance) {
  Topology t;
  const auto np = std::int64_t(m.patches.size());
  t.sides.resize(std::size_t(np));
  t.corners.resize(std::size_t(np));
  t.flipped.assign(std::size_t(np), 0);
  // The tolerance: a fraction of the model's size (its control points' box).
  double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
  double lowest_weight = 1, largest = 0;  // (for the printed step's effect on projected points)
  bool rational = false;
  int degree = 1;
  for (const Patch& patch : m.patches) {
    degree = std::max({degree, patch.degree_u, patch.degree_v});
    for (std::int64_t k = 0; k < patch.control_point_count(); ++k) {
      double q[3];
      projected(m, patch.offset + k, q);
      const double w = m.points[std::size_t(patch.offset + k) * 4 + 3];
      lowest_weight = std::min(lowest_weight, w);
      rational = rational || w != 1;
      for (int c = 0; c < 3; ++c)
        lo[c] = std::min(lo[c], q[c]), hi[c] = std::max(hi[c], q[c]), largest = std::max(largest, std::abs(q[c]));
    }
  }
  const double diagonal = np > 0 ? std::sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                                             (hi[2] - lo[2]) * (hi[2] - lo[2]))
                                 : 0.0;
  double tol = std::isfinite(diagonal) ? std::max(0.0, relative_tolerance) * diagonal : 0.0;
  // A file written to a fixed number of decimals rounded each copy of a shared point by up to half its step: the
  // copies differ by up to the step (twg2.bv, six decimals, a box diagonal of 3.1: 350 of its 576 seams up to 1e-6
  // apart). Homogeneous coordinates carry it to the projected points, divided by the weight. Bitwise matching (a
  // zero tolerance) stays bitwise; at most a thousandth of the model's size.
  if (relative_tolerance > 0 && m.printed_step > 0 && lowest_weight > 0 && std::isfinite(diagonal)) {
    const double carried = 1.25 * m.printed_step * (rational ? (1 + largest) / lowest_weight : 1.0);
    tol = std::max(tol, std::min(carried, 1e-3 * diagonal));
  }
  t.seam_tolerance = tol;
  // Every side raised to the model's highest degree, in parallel.
  const std::size_t stride = std::size_t(4 * (degree + 1));
  std::vector<double> curves(std::size_t(np) * 4 * stride);
#pragma omp parallel for schedule(dynamic, 256)
  for (std::int64_t p = 0; p < np; ++p)
    for (int s = 0; s < side_count(m.patches[std::size_t(p)]); ++s)
      elevated_side(m, m.patches[std::size_t(p)], s, degree, &curves[(std::size_t(p) * 4 + std::size_t(s)) * stride]);
  auto curve = [&](std::int64_t p, int s) { return &curves[(std::size_t(p) * 4 + std::size_t(s)) * stride]; };

  PointClusters corners(tol);
  auto corner_id = [&](std::int64_t point) {
    double q[3];
    projected(m, point, q);
    return corners.id(q);
  };
  // Edges by their corners (the smaller id first); a side joins the edge whose curve it traces, either way.
  std::unordered_map<std::uint64_t, std::vector<std::int32_t>> edges_at;
  std::vector<std::pair<std::int64_t, int>> edge_side;  // the side that made each edge: its canonical direction
  for (std::int64_t p = 0; p < np; ++p) {
    const Patch& patch = m.patches[std::size_t(p)];
    for (int s = 0; s < side_count(patch); ++s) {
      const auto idx = side_point_indices(patch, s);
      const std::int32_t a = corner_id(patch.offset + idx.front()), b = corner_id(patch.offset + idx.back());
      t.corners[std::size_t(p)][std::size_t(s)] = a;
      const std::uint64_t key = std::uint64_t(std::uint32_t(std::min(a, b))) << 32 | std::uint32_t(std::max(a, b));
      auto& candidates = edges_at[key];
      std::int32_t edge = -1;
      bool reversed = false;
      for (std::int32_t e : candidates) {
        const auto [q, r] = edge_side[std::size_t(e)];
        const EdgeInfo& info = t.edges[std::size_t(e)];
        // (A side whose ends are one corner, a closed curve, may match either way: both are tried.)
        if (info.corner_a == a && info.corner_b == b && same_curve(curve(q, r), curve(p, s), degree, false, tol)) {
          edge = e;
        } else if (info.corner_a == b && info.corner_b == a && same_curve(curve(q, r), curve(p, s), degree, true, tol)) {
          edge = e;
          reversed = true;
        }
        if (edge >= 0) break;
      }
      if (edge < 0) {
        edge = std::int32_t(t.edges.size());
        EdgeInfo e;
        e.corner_a = a;
        e.corner_b = b;
        const double* c = curve(p, s);
        const double c0[3] = {c[0] / c[3], c[1] / c[3], c[2] / c[3]};
        e.collapsed = true;
        for (int k = 1; k <= degree && e.collapsed; ++k) {
          const double ck[3] = {c[4 * k] / c[4 * k + 3], c[4 * k + 1] / c[4 * k + 3], c[4 * k + 2] / c[4 * k + 3]};
          e.collapsed = distance_max(c0, ck) <= tol;
        }
        t.edges.push_back(std::move(e));
        edge_side.push_back({p, s});
        candidates.push_back(edge);
      }
      t.edges[std::size_t(edge)].sides.push_back({std::int32_t(p), std::int8_t(s)});
      t.sides[std::size_t(p)][std::size_t(s)] = {edge, reversed};
    }
  }
  t.corner_count = corners.count();
  {
    std::vector<const double*> edge_curve(t.edges.size());
    for (std::size_t e = 0; e < t.edges.size(); ++e) edge_curve[e] = curve(edge_side[e].first, edge_side[e].second);
    find_t_junctions(m, t, edge_curve, degree, std::max(tol, 1e-12 * (std::isfinite(diagonal) ? diagonal : 0.0)));
  }

  // Components through shared (non-collapsed) edges; orientation propagated so that neighbours run a shared edge
  // in opposite directions, then the majority of each component keeps its input orientation.
  t.component.assign(std::size_t(np), -1);
  std::vector<std::vector<std::pair<std::int32_t, bool>>> adj(static_cast<std::size_t>(np));  // (neighbour, same direction)
  for (const auto& e : t.edges) {
    if (e.collapsed || e.sides.size() != 2) continue;
    const auto [p, s] = e.sides[0];
    const auto [q, r] = e.sides[1];
    if (p == q) continue;
    const bool same = t.sides[p][s].reversed == t.sides[q][r].reversed;
    adj[p].push_back({q, same});
    adj[q].push_back({p, same});
  }
  // a split edge's side and each piece's side meet as a shared edge does (the piece's direction taken into account)
  for (std::size_t e = 0; e < t.edges.size(); ++e) {
    if (!t.split(std::int64_t(e))) continue;
    const auto [p, s] = t.edges[e].sides[0];
    for (const SplitPiece& piece : t.splits[std::size_t(t.split_of[e])]) {
      const auto [q, r] = t.edges[std::size_t(piece.edge)].sides[0];
      if (p == q) continue;
      const bool same = t.sides[p][s].reversed == (t.sides[q][r].reversed != piece.reversed);
      adj[p].push_back({q, same});
      adj[q].push_back({p, same});
    }
  }
  std::int32_t components = 0;
  for (std::int64_t root = 0; root < np; ++root) {
    if (t.component[root] >= 0) continue;
    std::vector<std::int64_t> members{root};
    std::deque<std::int64_t> queue{root};
    t.component[root] = components;
    while (!queue.empty()) {
      const auto p = queue.front();
      queue.pop_front();
      for (auto [q, same] : adj[p]) {
        if (t.component[q] >= 0) continue;
        t.component[q] = components;
        t.flipped[q] = std::uint8_t(orient ? (t.flipped[p] ^ std::uint8_t(same)) : 0);
        members.push_back(q);
        queue.push_back(q);
      }
    }
    std::int64_t flips = 0;
    for (auto q : members) flips += t.flipped[q];
    if (2 * flips > std::int64_t(members.size()))
      for (auto q : members) t.flipped[q] ^= 1;
    ++components;
  }
  t.component_closed.assign(std::size_t(components), 1);
  for (std::size_t e = 0; e < t.edges.size(); ++e)
    if (t.open(std::int64_t(e))) t.component_closed[t.component[t.edges[e].sides[0].first]] = 0;
  return t;
}

}  // namespace parasurf::patches
