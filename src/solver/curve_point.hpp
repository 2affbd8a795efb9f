// Point (and first derivative) of a planar Bézier curve by de Casteljau, shared by the solver's curve applications.
#pragma once
#include <array>

#include "parasurf/solver.hpp"

namespace parasurf::solver {

inline std::array<double, 2> curve_point(const BezierCurve2& c, double t, std::array<double, 2>* tangent = nullptr) {
  auto w = c.points;
  const std::size_t n = w.size();
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

}  // namespace parasurf::solver
