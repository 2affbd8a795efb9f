// Patch models made by the tests: a closed bicubic pillow, and exact degree elevation and splitting of a patch.
#pragma once
#include <cstdint>
#include <vector>

#include "parasurf/patches.hpp"

namespace parasurf::test {

// A closed pillow: the six faces of a cube as bicubic patches whose inner control points bulge outward; the
// faces share their boundary control points.
inline PatchModel pillow() {
  PatchModel m;
  m.name = "pillow";
  for (int axis = 0; axis < 3; ++axis)
    for (int sign : {-1, 1}) {
      Patch p;
      p.degree_u = p.degree_v = 3;
      p.offset = std::int64_t(m.points.size() / 4);
      const int a = (axis + 1) % 3, b = (axis + 2) % 3;
      for (int i = 0; i <= 3; ++i)
        for (int j = 0; j <= 3; ++j) {
          double q[3];
          q[axis] = sign;
          q[a] = -1 + 2.0 * i / 3;
          q[b] = -1 + 2.0 * j / 3;
          if (i > 0 && i < 3 && j > 0 && j < 3) q[axis] += 0.4 * sign;
          m.points.insert(m.points.end(), {q[0], q[1], q[2], 1.0});
        }
      m.patches.push_back(p);
    }
  return m;
}

// Patch p raised to degrees (du, dv) by exact degree elevation, in place of the original.
inline void elevate(PatchModel& m, std::size_t p, int du, int dv) {
  Patch& patch = m.patches[p];
  std::vector<double> grid(m.points.begin() + patch.offset * 4,
                           m.points.begin() + (patch.offset + patch.control_point_count()) * 4);
  int m_deg = patch.degree_u, n_deg = patch.degree_v;
  auto at = [&](std::vector<double>& g, int cols, int i, int j) { return &g[std::size_t((i * cols + j) * 4)]; };
  while (n_deg < dv) {  // along v, row by row
    std::vector<double> next(std::size_t((m_deg + 1) * (n_deg + 2) * 4));
    for (int i = 0; i <= m_deg; ++i)
      for (int k = 0; k <= n_deg + 1; ++k) {
        const double a = double(k) / (n_deg + 1);
        for (int c = 0; c < 4; ++c)
          at(next, n_deg + 2, i, k)[c] = (k > 0 ? a * at(grid, n_deg + 1, i, k - 1)[c] : 0) +
                                         (k <= n_deg ? (1 - a) * at(grid, n_deg + 1, i, k)[c] : 0);
      }
    grid.swap(next);
    ++n_deg;
  }
  while (m_deg < du) {  // along u
    std::vector<double> next(std::size_t((m_deg + 2) * (n_deg + 1) * 4));
    for (int k = 0; k <= m_deg + 1; ++k)
      for (int j = 0; j <= n_deg; ++j) {
        const double a = double(k) / (m_deg + 1);
        for (int c = 0; c < 4; ++c)
          at(next, n_deg + 1, k, j)[c] = (k > 0 ? a * at(grid, n_deg + 1, k - 1, j)[c] : 0) +
                                         (k <= m_deg ? (1 - a) * at(grid, n_deg + 1, k, j)[c] : 0);
      }
    grid.swap(next);
    ++m_deg;
  }
  patch.offset = std::int64_t(m.points.size() / 4);
  patch.degree_u = m_deg;
  patch.degree_v = n_deg;
  m.points.insert(m.points.end(), grid.begin(), grid.end());
}

// Patch p cut at parameter t along u (`along_u`) or v by de Casteljau's algorithm (exact up to rounding): p keeps
// the part over [0, t], the new last patch holds the part over [t, 1].
inline void split(PatchModel& m, std::size_t p, bool along_u, double t) {
  const Patch patch = m.patches[p];
  const int du = patch.degree_u, dv = patch.degree_v;
  std::vector<double> grid(m.points.begin() + patch.offset * 4, m.points.begin() + (patch.offset + patch.control_point_count()) * 4);
  std::vector<double> left(grid.size()), right(grid.size());
  auto at = [&](std::vector<double>& g, int i, int j) { return &g[std::size_t((i * (dv + 1) + j) * 4)]; };
  const int d = along_u ? du : dv, lines = along_u ? dv : du;
  for (int line = 0; line <= lines; ++line) {
    std::vector<double> tri(std::size_t(4 * (d + 1)));
    for (int k = 0; k <= d; ++k)
      for (int c = 0; c < 4; ++c) tri[std::size_t(4 * k + c)] = (along_u ? at(grid, k, line) : at(grid, line, k))[c];
    auto put = [&](std::vector<double>& g, int k, const double* x) {
      double* q = along_u ? at(g, k, line) : at(g, line, k);
      for (int c = 0; c < 4; ++c) q[c] = x[c];
    };
    put(left, 0, &tri[0]);
    put(right, d, &tri[std::size_t(4 * d)]);
    for (int r = 1; r <= d; ++r) {
      for (int k = 0; k + r <= d; ++k)
        for (int c = 0; c < 4; ++c)
          tri[std::size_t(4 * k + c)] = (1 - t) * tri[std::size_t(4 * k + c)] + t * tri[std::size_t(4 * (k + 1) + c)];
      put(left, r, &tri[0]);
      put(right, d - r, &tri[std::size_t(4 * (d - r))]);
    }
  }
  m.patches[p].offset = std::int64_t(m.points.size() / 4);
  m.points.insert(m.points.end(), left.begin(), left.end());
  Patch second = patch;
  second.offset = std::int64_t(m.points.size() / 4);
  m.points.insert(m.points.end(), right.begin(), right.end());
  m.patches.push_back(second);
}

}  // namespace parasurf::test
