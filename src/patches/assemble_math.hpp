// The arithmetic of a tessellation's assembly, once for the host (assemble_host.cpp) and the device
// (assemble_kernels.cuh): normal clusters at seam vertices, unit normals, zero-area triangles, the orientation of
// closed components. Every operation is rounded on its own (the device's __d*_rn intrinsics; on the host the files
// that include this are compiled with -ffp-contract=off), so that both sides make the same mesh bit for bit as long
// as they apply these in the same order, which the comments of each function state.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/hd.hpp"

namespace parasurf::patches::math {

PS_HD double mul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
PS_HD double add(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
PS_HD double sub(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

PS_HD double dot3(const double* a, const double* b) {
  return add(add(mul(a[0], b[0]), mul(a[1], b[1])), mul(a[2], b[2]));
}
PS_HD double length3(const double* a) { return sqrt(dot3(a, a)); }

// `s` scaled to unit length (zero stays zero).
PS_HD void unit3(const double* s, double* out) {
  const double len = length3(s);
  for (int c = 0; c < 3; ++c) out[c] = len > 0 ? s[c] / len : 0.0;
}

// The cosine of the crease angle (degrees), computed once on the host for both sides.
inline double crease_cosine(double degrees) { return std::cos(degrees * 3.14159265358979323846 / 180.0); }

// Whether a sample's normal joins a cluster of a seam vertex: clusters are made greedily in the order of the vertex's
// samples (by sample index), each sample joining the first cluster whose normal sum lies within the crease angle.
struct CreaseTest {
  double cos_crease, cos_squared;

  explicit PS_HD CreaseTest(double cosine) : cos_crease(cosine), cos_squared(mul(cosine, cosine)) {}

  // Zero normals and empty sums join anything; else dot(sum, n) >= cos_crease |sum|. Where cos_crease > 0, the
  // squares of the two sides decide without the square root unless they agree to 1e-12 (the rounding of either side
  // moves it by a few units of 2^-53): the poles' hundreds of contributions are tested one after another.
  PS_HD bool joins(const double* sum, const double* n) const {
    const double sq = dot3(sum, sum);
    if ((n[0] == 0 && n[1] == 0 && n[2] == 0) || sq == 0) return true;
    const double dot = dot3(sum, n);
    if (cos_crease > 0) {
      if (dot < 0) return false;
      const double lhs = mul(dot, dot), rhs = mul(cos_squared, sq);
      if (lhs > 1e-200 && rhs > 1e-200) {
        if (lhs > rhs * (1 + 1e-12)) return true;
        if (lhs < rhs * (1 - 1e-12)) return false;
      }
    }
    return dot >= mul(cos_crease, sqrt(sq));
  }
};

// Whether the triangle (a, b, c) has a zero cross product (it is dropped unless degenerate triangles are kept).
PS_HD bool zero_area(const double* a, const double* b, const double* c) {
  const double e1[3] = {sub(b[0], a[0]), sub(b[1], a[1]), sub(b[2], a[2])};
  const double e2[3] = {sub(c[0], a[0]), sub(c[1], a[1]), sub(c[2], a[2])};
  return sub(mul(e1[1], e2[2]), mul(e1[2], e2[1])) == 0 && sub(mul(e1[2], e2[0]), mul(e1[0], e2[2])) == 0 &&
         sub(mul(e1[0], e2[1]), mul(e1[1], e2[0])) == 0;
}

// Orientation of closed components. Per patch, over its kept triangles in order: the sum of their first corners
// and their count (add_centre_term), then six times the signed volume they span with the component's centre
// (add_volume_term). Per component, the patches' sums are added in patch order (component_centre) and so are the
// volumes; a closed component with a negative volume is turned over.
PS_HD void add_centre_term(double* sum4, const double* first_corner) {
  for (int c = 0; c < 3; ++c) sum4[c] = add(sum4[c], first_corner[c]);
  sum4[3] = add(sum4[3], 1.0);
}

PS_HD double add_volume_term(double volume, const double* a, const double* b, const double* c, const double* centre) {
  double q[3][3];
  const double* corner[3] = {a, b, c};
  for (int v = 0; v < 3; ++v)
    for (int k = 0; k < 3; ++k) q[v][k] = sub(corner[v][k], centre[k]);
  const double t0 = mul(q[0][0], sub(mul(q[1][1], q[2][2]), mul(q[1][2], q[2][1])));
  const double t1 = mul(q[0][1], sub(mul(q[1][0], q[2][2]), mul(q[1][2], q[2][0])));
  const double t2 = mul(q[0][2], sub(mul(q[1][0], q[2][1]), mul(q[1][1], q[2][0])));
  return add(volume, add(sub(t0, t1), t2));
}

// The centres of the components from the patches' sums (four doubles each), added in patch order.
inline std::vector<double> component_centres(std::int64_t patches, const std::int32_t* component, const double* sums,
                                             std::size_t nc) {
  std::vector<double> centre(nc * 3, 0.0), count(nc, 0.0);
  for (std::int64_t p = 0; p < patches; ++p) {
    const auto c = std::size_t(component[p]);
    for (int k = 0; k < 3; ++k) centre[c * 3 + k] = add(centre[c * 3 + k], sums[std::size_t(p) * 4 + k]);
    count[c] = add(count[c], sums[std::size_t(p) * 4 + 3]);
  }
  for (std::size_t c = 0; c < nc; ++c)
    for (int k = 0; k < 3; ++k) centre[c * 3 + k] /= count[c] > 1 ? count[c] : 1.0;
  return centre;
}

}  // namespace parasurf::patches::math
