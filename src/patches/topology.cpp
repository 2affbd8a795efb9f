// Patch adjacency: exact matching of corner points and side control polygons, orientation by propagation.
#include "patches/topology.hpp"

#include <cstring>
#include <deque>
#include <string>
#include <unordered_map>

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

// Bit pattern of a coordinate with -0 folded into +0, so equal numbers give equal keys.
std::uint64_t bits(double x) {
  if (x == 0.0) x = 0.0;
  std::uint64_t b;
  std::memcpy(&b, &x, 8);
  return b;
}

void projected(const PatchModel& m, std::int64_t point, double out[3]) {
  const double* h = &m.points[std::size_t(point) * 4];
  for (int c = 0; c < 3; ++c) out[c] = h[3] == 1.0 ? h[c] : h[c] / h[3];
}

std::string point_key(const double p[3]) {
  std::string k(24, '\0');
  for (int c = 0; c < 3; ++c) {
    const std::uint64_t b = bits(p[c]);
    std::memcpy(k.data() + 8 * c, &b, 8);
  }
  return k;
}

}  // namespace

Topology build_topology(const PatchModel& m, bool orient) {
  Topology t;
  const auto np = std::int64_t(m.patches.size());
  t.sides.resize(std::size_t(np));
  t.corners.resize(std::size_t(np));
  t.flipped.assign(std::size_t(np), 0);
  std::unordered_map<std::string, std::int32_t> corner_of, edge_of;
  corner_of.reserve(std::size_t(np) * 2);
  edge_of.reserve(std::size_t(np) * 3);
  auto corner_id = [&](std::int64_t point) {
    double p[3];
    projected(m, point, p);
    auto [it, fresh] = corner_of.try_emplace(point_key(p), t.corner_count);
    if (fresh) ++t.corner_count;
    return it->second;
  };
  for (std::int64_t p = 0; p < np; ++p) {
    const Patch& patch = m.patches[p];
    const int ns = side_count(patch);
    for (int s = 0; s < ns; ++s) {
      const auto idx = side_point_indices(patch, s);
      t.corners[p][s] = corner_id(patch.offset + idx.front());
      // canonical direction: the lexicographically smaller of the two readings (homogeneous, exact)
      std::string fwd, bwd;
      fwd.reserve(idx.size() * 32 + 4);
      bwd.reserve(idx.size() * 32 + 4);
      auto append = [&](std::string& key, std::int64_t k) {
        const double* h = &m.points[std::size_t(patch.offset + k) * 4];
        for (int c = 0; c < 4; ++c) {
          const std::uint64_t b = bits(h[c]);
          key.append(reinterpret_cast<const char*>(&b), 8);
        }
      };
      for (std::size_t k = 0; k < idx.size(); ++k) append(fwd, idx[k]);
      for (std::size_t k = idx.size(); k-- > 0;) append(bwd, idx[k]);
      const bool reversed = bwd < fwd;
      auto [it, fresh] = edge_of.try_emplace(reversed ? bwd : fwd, std::int32_t(t.edges.size()));
      if (fresh) {
        EdgeInfo e;
        const auto first = reversed ? idx.back() : idx.front();
        const auto last = reversed ? idx.front() : idx.back();
        e.corner_a = corner_id(patch.offset + first);
        e.corner_b = corner_id(patch.offset + last);
        e.collapsed = true;
        double p0[3], pk[3];
        projected(m, patch.offset + idx.front(), p0);
        for (auto k : idx) {
          projected(m, patch.offset + k, pk);
          if (pk[0] != p0[0] || pk[1] != p0[1] || pk[2] != p0[2]) e.collapsed = false;
        }
        t.edges.push_back(std::move(e));
      }
      t.edges[it->second].sides.push_back({std::int32_t(p), std::int8_t(s)});
      t.sides[p][s] = {it->second, reversed};
    }
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
  for (const auto& e : t.edges)
    if (!e.collapsed && e.sides.size() < 2) t.component_closed[t.component[e.sides[0].first]] = 0;
  return t;
}

}  // namespace parasurf::patches
