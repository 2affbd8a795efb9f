// Vertices that may lie on a sample: the coarse test of the weld of rounded crossings (rounded_ties.cpp), in float so
// that it vectorises on the host and runs where a GPU made the mesh. A crossing whose interpolation rounded onto a
// sample has all three index coordinates whole; the map from world to index coordinates and the rounding of a float
// position bound how far from whole such a vertex can read, so this test passes every vertex the exact test (in
// double, on the few that pass here) can accept.
#pragma once

#include <cmath>

#include "core/hd.hpp"
#include "parasurf/distributed.hpp"

namespace parasurf::iso {

struct NearSampleProbe {
  float origin[3] = {0, 0, 0};
  float inverse[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};  // world to index, row-major
  float slack[3] = {0, 0, 0};  // per axis: index units of rounding per world unit of a position's size, with margin
  bool active = false;         // the engines list the vertices that pass (the mesh is welded after)
};

// The probe of a world-to-index map; `row` receives the exact test's rounding per world unit (index units).
inline NearSampleProbe near_sample_probe(const distributed::WorldToIndex& to_index, double row[3] = nullptr) {
  NearSampleProbe p;
  for (int a = 0; a < 3; ++a) {
    const double* r = to_index.inverse + 3 * a;
    const double per_unit = (std::abs(r[0]) + std::abs(r[1]) + std::abs(r[2])) * 0x1p-23;
    if (row) row[a] = per_unit;
    p.origin[a] = float(to_index.origin[a]);
    p.slack[a] = float(per_unit * 8);  // the float test's own rounding of the map and the subtraction fits within
  }
  for (int k = 0; k < 9; ++k) p.inverse[k] = float(to_index.inverse[k]);
  return p;
}

// Whether position q may lie on a sample, within `base` index units and the rounding of its size. The weld's coarse
// test takes 0.01; a list made where the mesh is (each listed vertex then tested exactly) takes kNearListBase: the
// exact test's 1e-3 and the float evaluation's own error (within 4 units of the rounding: slack holds 8).
constexpr float kNearCoarseBase = 0.01f, kNearListBase = 2e-3f;
PS_HD_HOST_INLINE bool near_sample(const NearSampleProbe& p, const float* q, float base) {
  const float d0 = q[0] - p.origin[0], d1 = q[1] - p.origin[1], d2 = q[2] - p.origin[2];
  const float size = std::abs(q[0]) + std::abs(q[1]) + std::abs(q[2]) + std::abs(p.origin[0]) + std::abs(p.origin[1]) +
                     std::abs(p.origin[2]);
  bool whole = true;
  for (int a = 0; a < 3; ++a) {
    const float x = p.inverse[3 * a] * d0 + p.inverse[3 * a + 1] * d1 + p.inverse[3 * a + 2] * d2;
#ifdef __CUDA_ARCH__
    const float r = rintf(x);
#else
    const float r = std::nearbyint(x);
#endif
    whole = whole & (std::abs(x - r) <= base + size * p.slack[a]);
  }
  return whole;
}

}  // namespace parasurf::iso
