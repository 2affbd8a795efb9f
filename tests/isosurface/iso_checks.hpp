// Checks of isosurface meshes: edge census, Euler characteristic, area, enclosed volume, canonical comparison.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "parasurf/io.hpp"

namespace parasurf::test {

struct IsoEdges {
  std::int64_t boundary = 0, interior = 0, non_manifold = 0;
  std::int64_t unbalanced = 0;  // undirected edges not run equally often both ways (a hole or a flipped face)
  std::int64_t edges() const { return boundary + interior + non_manifold; }
};

inline IsoEdges iso_edges(const TriangleMesh& m) {
  std::unordered_map<std::uint64_t, std::pair<int, int>> uses;  // (count, a→b minus b→a)
  uses.reserve(std::size_t(m.triangle_count()) * 2);
  for (std::int64_t t = 0; t < m.triangle_count(); ++t)
    for (int k = 0; k < 3; ++k) {
      const std::uint32_t a = m.triangles[3 * t + k], b = m.triangles[3 * t + (k + 1) % 3];
      auto& u = uses[std::uint64_t(std::min(a, b)) << 32 | std::max(a, b)];
      ++u.first;
      u.second += a < b ? 1 : -1;
    }
  IsoEdges c;
  for (const auto& [e, u] : uses) {
    if (u.first == 1) ++c.boundary;
    else if (u.first == 2) ++c.interior;
    else ++c.non_manifold;
    c.unbalanced += u.second != 0;
  }
  return c;
}

// Vertices whose triangles do not form one fan (a disk or, at a boundary, a half-disk) through edges that two of
// them share.
inline std::int64_t iso_non_manifold_vertices(const TriangleMesh& m) {
  const std::size_t nv = std::size_t(m.vertex_count());
  std::vector<std::vector<std::uint32_t>> around(nv);
  for (std::size_t t = 0; t < std::size_t(m.triangle_count()); ++t)
    for (int k = 0; k < 3; ++k) around[m.triangles[3 * t + k]].push_back(std::uint32_t(t));
  std::int64_t bad = 0;
  for (std::size_t v = 0; v < nv; ++v) {
    const auto& ts = around[v];
    if (ts.size() < 2) continue;
    std::vector<std::size_t> parent(ts.size());
    for (std::size_t i = 0; i < ts.size(); ++i) parent[i] = i;
    auto find = [&](std::size_t x) {
      while (parent[x] != x) x = parent[x];
      return x;
    };
    for (std::size_t i = 0; i < ts.size(); ++i)
      for (std::size_t j = i + 1; j < ts.size(); ++j) {
        int common = 0;
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b) common += m.triangles[3 * ts[i] + a] == m.triangles[3 * ts[j] + b];
        if (common >= 2) parent[find(i)] = find(j);
      }
    std::size_t roots = 0;
    for (std::size_t i = 0; i < ts.size(); ++i) roots += find(i) == i;
    bad += roots > 1;
  }
  return bad;
}

inline std::int64_t iso_used_vertices(const TriangleMesh& m) {
  std::vector<char> used(std::size_t(m.vertex_count()), 0);
  for (auto v : m.triangles) used[v] = 1;
  return std::count(used.begin(), used.end(), 1);
}

inline std::int64_t iso_euler(const TriangleMesh& m) {
  return iso_used_vertices(m) - iso_edges(m).edges() + m.triangle_count();
}

// Topological invariants of a mesh: connected pieces, Euler characteristic and boundary loops.
struct IsoTopology {
  std::int64_t components = 0, euler = 0, boundary_loops = 0;
  bool operator==(const IsoTopology&) const = default;
};

inline IsoTopology iso_topology(const TriangleMesh& m) {
  const std::size_t n = std::size_t(m.vertex_count());
  std::vector<std::uint32_t> parent(n), boundary_parent(n);
  for (std::size_t v = 0; v < n; ++v) parent[v] = boundary_parent[v] = std::uint32_t(v);
  auto find = [](std::vector<std::uint32_t>& p, std::uint32_t v) {
    while (p[v] != v) v = p[v] = p[p[v]];
    return v;
  };
  std::unordered_map<std::uint64_t, int> uses;
  for (std::int64_t t = 0; t < m.triangle_count(); ++t)
    for (int k = 0; k < 3; ++k) {
      const std::uint32_t a = m.triangles[3 * t + k], b = m.triangles[3 * t + (k + 1) % 3];
      parent[find(parent, a)] = find(parent, b);
      ++uses[std::uint64_t(std::min(a, b)) << 32 | std::max(a, b)];
    }
  std::vector<char> on_boundary(n, 0);
  for (const auto& [e, count] : uses) {
    if (count != 1) continue;
    const std::uint32_t a = std::uint32_t(e >> 32), b = std::uint32_t(e);
    on_boundary[a] = on_boundary[b] = 1;
    boundary_parent[find(boundary_parent, a)] = find(boundary_parent, b);
  }
  IsoTopology topo;
  std::vector<char> used(n, 0);
  for (auto v : m.triangles) used[v] = 1;
  for (std::size_t v = 0; v < n; ++v) {
    if (used[v] && find(parent, std::uint32_t(v)) == v) ++topo.components;
    if (on_boundary[v] && find(boundary_parent, std::uint32_t(v)) == v) ++topo.boundary_loops;
  }
  topo.euler = iso_euler(m);
  return topo;
}

inline double iso_area(const TriangleMesh& m) {
  double area = 0;
  for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
    const float* a = &m.positions[3 * std::size_t(m.triangles[3 * t])];
    const float* b = &m.positions[3 * std::size_t(m.triangles[3 * t + 1])];
    const float* c = &m.positions[3 * std::size_t(m.triangles[3 * t + 2])];
    const double e1[3] = {double(b[0]) - a[0], double(b[1]) - a[1], double(b[2]) - a[2]};
    const double e2[3] = {double(c[0]) - a[0], double(c[1]) - a[1], double(c[2]) - a[2]};
    const double x = e1[1] * e2[2] - e1[2] * e2[1], y = e1[2] * e2[0] - e1[0] * e2[2], z = e1[0] * e2[1] - e1[1] * e2[0];
    area += 0.5 * std::sqrt(x * x + y * y + z * z);
  }
  return area;
}

// Signed volume by the divergence theorem: positive when triangles face outward.
inline double iso_volume(const TriangleMesh& m) {
  double vol = 0;
  for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
    const float* a = &m.positions[3 * std::size_t(m.triangles[3 * t])];
    const float* b = &m.positions[3 * std::size_t(m.triangles[3 * t + 1])];
    const float* c = &m.positions[3 * std::size_t(m.triangles[3 * t + 2])];
    vol += (double(a[0]) * (double(b[1]) * c[2] - double(b[2]) * c[1]) -
            double(a[1]) * (double(b[0]) * c[2] - double(b[2]) * c[0]) +
            double(a[2]) * (double(b[0]) * c[1] - double(b[1]) * c[0])) / 6.0;
  }
  return vol;
}

// Triangles with a repeated vertex, and triangles whose vertex set appears more than once.
inline std::pair<std::int64_t, std::int64_t> iso_degenerate_and_duplicates(const TriangleMesh& m) {
  std::int64_t degenerate = 0;
  std::vector<std::array<std::uint32_t, 3>> keys;
  for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
    std::array<std::uint32_t, 3> k = {m.triangles[3 * t], m.triangles[3 * t + 1], m.triangles[3 * t + 2]};
    std::sort(k.begin(), k.end());
    degenerate += k[0] == k[1] || k[1] == k[2];
    keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  const auto dup = std::int64_t(keys.size()) - (std::unique(keys.begin(), keys.end()) - keys.begin());
  return {degenerate, dup};
}

// Vertices that no triangle refers to (a welded mesh has none).
inline std::int64_t iso_unused_vertices(const TriangleMesh& m) {
  std::vector<char> used(std::size_t(m.vertex_count()), 0);
  for (auto v : m.triangles) used[v] = 1;
  return std::int64_t(std::count(used.begin(), used.end(), 0));
}

}  // namespace parasurf::test
