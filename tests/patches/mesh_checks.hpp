// Topological and geometric checks of welded meshes used by the patch tests.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "parasurf/tessellate.hpp"

namespace parasurf::test {

struct EdgeCensus {
  std::int64_t boundary = 0;      // edges in one triangle
  std::int64_t interior = 0;      // edges in two triangles
  std::int64_t non_manifold = 0;  // edges in three or more
  std::int64_t misoriented = 0;   // interior edges run the same way by both triangles
  std::int64_t edges() const { return boundary + interior + non_manifold; }
};

inline EdgeCensus edge_census(const PatchMesh& m) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<int, int>> uses;  // (count, sum of directions)
  for (std::int64_t t = 0; t < m.triangle_count(); ++t)
    for (int k = 0; k < 3; ++k) {
      const std::uint32_t a = m.triangles[3 * t + k], b = m.triangles[3 * t + (k + 1) % 3];
      auto& u = uses[{std::min(a, b), std::max(a, b)}];
      ++u.first;
      u.second += a < b ? 1 : -1;
    }
  EdgeCensus c;
  for (const auto& [e, u] : uses) {
    if (u.first == 1) ++c.boundary;
    else if (u.first == 2) ++c.interior, c.misoriented += u.second != 0;
    else ++c.non_manifold;
  }
  return c;
}

inline std::int64_t used_vertices(const PatchMesh& m) {
  std::vector<char> used(std::size_t(m.vertex_count()), 0);
  for (auto v : m.triangles) used[v] = 1;
  return std::count(used.begin(), used.end(), 1);
}

inline std::int64_t euler_characteristic(const PatchMesh& m) {
  return used_vertices(m) - edge_census(m).edges() + m.triangle_count();
}

inline double triangle_area(const PatchMesh& m, std::int64_t t) {
  const double* a = &m.positions[3 * std::size_t(m.triangles[3 * t])];
  const double* b = &m.positions[3 * std::size_t(m.triangles[3 * t + 1])];
  const double* c = &m.positions[3 * std::size_t(m.triangles[3 * t + 2])];
  const double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
  const double x = e1[1] * e2[2] - e1[2] * e2[1], y = e1[2] * e2[0] - e1[0] * e2[2], z = e1[0] * e2[1] - e1[1] * e2[0];
  return 0.5 * std::sqrt(x * x + y * y + z * z);
}

}  // namespace parasurf::test
