// Side curves of patches as the topology compares them: raised to a common degree (exact), homogeneous, compared
// point for point within a distance.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "parasurf/patches.hpp"
#include "patches/topology.hpp"

namespace parasurf::patches {

inline void projected(const PatchModel& m, std::int64_t point, double out[3]) {
  const double* h = &m.points[std::size_t(point) * 4];
  for (int c = 0; c < 3; ++c) out[c] = h[3] == 1.0 ? h[c] : h[c] / h[3];
}

inline double distance_max(const double a[3], const double b[3]) {
  return std::max({std::abs(a[0] - b[0]), std::abs(a[1] - b[1]), std::abs(a[2] - b[2])});
}

// A side's curve raised to `degree` (exact: the curve and its parametrisation do not change), homogeneous, in the
// side's counter-clockwise direction.
inline void elevated_side(const PatchModel& m, const Patch& patch, int s, int degree, double* out) {
  const auto idx = side_point_indices(patch, s);
  int d = int(idx.size()) - 1;
  for (int k = 0; k <= d; ++k)
    for (int c = 0; c < 4; ++c) out[4 * k + c] = m.points[std::size_t(patch.offset + idx[std::size_t(k)]) * 4 + std::size_t(c)];
  // One step: Q_k = k/(d+1) P_{k-1} + (1 - k/(d+1)) P_k, from the end backwards so that it works in place.
  for (; d < degree; ++d) {
    for (int c = 0; c < 4; ++c) out[4 * (d + 1) + c] = out[4 * d + c];
    for (int k = d; k >= 1; --k) {
      const double a = double(k) / double(d + 1);
      for (int c = 0; c < 4; ++c) out[4 * k + c] = a * out[4 * (k - 1) + c] + (1 - a) * out[4 * k + c];
    }
  }
}

// Whether two elevated sides are one curve: positions within `tol`, and weights in the same ratios.
inline bool same_curve(const double* a, const double* b, int degree, bool reversed, double tol) {
  const double* b0 = b + 4 * (reversed ? degree : 0);
  for (int k = 0; k <= degree; ++k) {
    const double* p = a + 4 * k;
    const double* q = b + 4 * (reversed ? degree - k : k);
    const double pp[3] = {p[0] / p[3], p[1] / p[3], p[2] / p[3]}, qq[3] = {q[0] / q[3], q[1] / q[3], q[2] / q[3]};
    if (!(distance_max(pp, qq) <= tol)) return false;
    if (!(std::abs(p[3] / a[3] - q[3] / b0[3]) <= 1e-9 * std::abs(p[3] / a[3]))) return false;
  }
  return true;
}

}  // namespace parasurf::patches
