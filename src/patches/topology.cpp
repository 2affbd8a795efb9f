// Patch adjacency: exact matching of corner points and side control polygons, orientation by propagation.
#include "patches/topology.hpp"

#include <array>
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

// Hash of a run of 64-bit words (splitmix64 steps): keys of corners and sides, checked exactly on every match.
std::uint64_t mix(std::uint64_t h, std::uint64_t w) {
  h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  return h;
}

}  // namespace

Topology build_topology(const PatchModel& m, bool orient) {
  Topology t;
  const auto np = std::int64_t(m.patches.size());
  t.sides.resize(std::size_t(np));
  t.corners.resize(std::size_t(np));
  t.flipped.assign(std::size_t(np), 0);
  // Per side, in parallel: its points' bit patterns in the canonical direction (the bytewise smaller of the two
  // readings, homogeneous, exact) and their hash; per corner point, its projected coordinates' hash.
  struct SideKey {
    std::uint64_t hash = 0, corner_hash = 0;
    bool reversed = false;
  };
  std::vector<std::array<SideKey, 4>> keys(static_cast<std::size_t>(np));
  auto side_words = [&](std::int64_t p, int s, bool reversed, std::vector<std::uint64_t>& words) {
    const Patch& patch = m.patches[p];
    const auto idx = side_point_indices(patch, s);
    words.clear();
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const double* h = &m.points[std::size_t(patch.offset + idx[reversed ? idx.size() - 1 - k : k]) * 4];
      for (int c = 0; c < 4; ++c) words.push_back(bits(h[c]));
    }
  };
  auto corner_hash = [&](std::int64_t point) {
    double q[3];
    projected(m, point, q);
    std::uint64_t h = 0;
    for (int c = 0; c < 3; ++c) h = mix(h, bits(q[c]));
    return h;
  };
#pragma omp parallel for schedule(dynamic, 256)
  for (std::int64_t p = 0; p < np; ++p) {
    std::vector<std::uint64_t> fwd, bwd;
    for (int s = 0; s < side_count(m.patches[p]); ++s) {
      side_words(p, s, false, fwd);
      side_words(p, s, true, bwd);
      SideKey& k = keys[std::size_t(p)][std::size_t(s)];
      k.reversed = std::memcmp(bwd.data(), fwd.data(), 8 * bwd.size()) < 0;
      for (std::uint64_t w : k.reversed ? bwd : fwd) k.hash = mix(k.hash, w);
      k.corner_hash = corner_hash(m.patches[p].offset + side_point_indices(m.patches[p], s).front());
    }
  }
  // Ids in order of first appearance. A hash match is confirmed exactly; a different key under the same hash (in
  // practice never) takes the slow map of full keys.
  std::unordered_map<std::uint64_t, std::int32_t> corner_of, edge_of;
  std::unordered_map<std::string, std::int32_t> corner_slow, edge_slow;
  corner_of.reserve(std::size_t(np) * 2);
  edge_of.reserve(std::size_t(np) * 3);
  std::vector<std::array<double, 3>> corner_point;
  std::vector<std::pair<std::int64_t, int>> edge_side;  // the first side of each edge
  auto corner_id = [&](std::int64_t point, std::uint64_t hash) {
    double q[3];
    projected(m, point, q);
    auto [it, fresh] = corner_of.try_emplace(hash, t.corner_count);
    if (fresh || (corner_point[std::size_t(it->second)][0] == q[0] && corner_point[std::size_t(it->second)][1] == q[1] &&
                  corner_point[std::size_t(it->second)][2] == q[2])) {
      if (fresh) ++t.corner_count, corner_point.push_back({q[0], q[1], q[2]});
      return it->second;
    }
    auto [slow, fresh_slow] = corner_slow.try_emplace(point_key(q), t.corner_count);
    if (fresh_slow) ++t.corner_count, corner_point.push_back({q[0], q[1], q[2]});
    return slow->second;
  };
  std::vector<std::uint64_t> mine, theirs;
  for (std::int64_t p = 0; p < np; ++p) {
    const Patch& patch = m.patches[p];
    const int ns = side_count(patch);
    for (int s = 0; s < ns; ++s) {
      const SideKey& key = keys[std::size_t(p)][std::size_t(s)];
      const auto idx = side_point_indices(patch, s);
      t.corners[p][s] = corner_id(patch.offset + idx.front(), key.corner_hash);
      const bool reversed = key.reversed;
      auto [it, fresh] = edge_of.try_emplace(key.hash, std::int32_t(t.edges.size()));
      std::int32_t edge = it->second;
      if (!fresh) {
        const auto [q, r] = edge_side[std::size_t(edge)];
        side_words(p, s, reversed, mine);
        side_words(q, r, keys[std::size_t(q)][std::size_t(r)].reversed, theirs);
        if (mine != theirs) {
          std::string full(reinterpret_cast<const char*>(mine.data()), 8 * mine.size());
          auto [slow, fresh_slow] = edge_slow.try_emplace(std::move(full), std::int32_t(t.edges.size()));
          edge = slow->second;
          fresh = fresh_slow;
        }
      }
      if (fresh) {
        EdgeInfo e;
        const auto first = reversed ? idx.back() : idx.front();
        const auto last = reversed ? idx.front() : idx.back();
        e.corner_a = corner_id(patch.offset + first, corner_hash(patch.offset + first));
        e.corner_b = corner_id(patch.offset + last, corner_hash(patch.offset + last));
        e.collapsed = true;
        double p0[3], pk[3];
        projected(m, patch.offset + idx.front(), p0);
        for (auto k : idx) {
          projected(m, patch.offset + k, pk);
          if (pk[0] != p0[0] || pk[1] != p0[1] || pk[2] != p0[2]) e.collapsed = false;
        }
        t.edges.push_back(std::move(e));
        edge_side.push_back({p, s});
      }
      t.edges[std::size_t(edge)].sides.push_back({std::int32_t(p), std::int8_t(s)});
      t.sides[p][s] = {edge, reversed};
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
