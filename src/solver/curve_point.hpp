// Point (and first derivative) of a planar Bézier curve, and its parts either side of a parameter, by de Casteljau,
// shared by the solver's curve applications.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "parasurf/solver.hpp"

namespace parasurf::solver {

inline std::array<double, 2> curve_point(const BezierCurve2& c, double t, std::array<double, 2>* tangent = nullptr) {
  // De Casteljau's work array on the stack up to 64 points (the curve applications' limit): a batch of curve pairs
  // evaluates its curves several times per root, and a heap copy made each of those an allocation.
  const std::size_t n = c.points.size();
  std::array<std::array<double, 2>, 64> stack;
  std::vector<std::array<double, 2>> heap;
  std::array<double, 2>* w = stack.data();
  if (n > stack.size())
    w = (heap = c.points).data();
  else
    std::copy(c.points.begin(), c.points.end(), w);
  std::array<double, 2> d{0, 0};
  for (std::size_t r = 1; r < n; ++r) {
    if (r == n - 1 && tangent)
      for (int k = 0; k < 2; ++k) d[k] = double(n - 1) * (w[1][k] - w[0][k]);
    for (std::size_t i = 0; i + r < n; ++i)
      for (int k = 0; k < 2; ++k) w[i][k] = (1 - t) * w[i][k] + t * w[i + 1][k];
  }
  if (tangent) *tangent = d;
  return w[0];
}

// The control points of a curve (p, n <= 64 of them) over [0, t] into `left` and over [t, 1] into `right` (either may
// be null; neither may be p), by de Casteljau at t. A t outside [0, 1] extrapolates the curve.
inline void split_curve(const std::array<double, 2>* p, std::size_t n, double t, std::array<double, 2>* left,
                        std::array<double, 2>* right) {
  std::array<std::array<double, 2>, 64> w;
  std::copy(p, p + n, w.begin());
  for (std::size_t r = 0; r < n; ++r) {
    if (left) left[r] = w[0];
    if (right) right[n - 1 - r] = w[n - 1 - r];
    for (std::size_t i = 0; i + 1 < n - r; ++i)
      for (int k = 0; k < 2; ++k) w[i][k] = (1 - t) * w[i][k] + t * w[i + 1][k];
  }
}

}  // namespace parasurf::solver
