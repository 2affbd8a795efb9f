// The built-in scalar fields, written once for the host generator and the CUDA engine (which computes the samples
// of a slab where it runs, so that nothing crosses the bus). Sphere of radius 0.75, torus R = 0.6, r = 0.25 about
// z, gyroid of two periods per unit (positive inside), and the tangle field on [-3, 3]^3. Products and sums are
// rounded one by one on both sides (no fused multiply-add), so host and device give the same samples; the gyroid's
// sines differ in the last bits between the two libraries, so it is generated on the host only.
#pragma once
#include <cmath>

#include "core/hd.hpp"

namespace parasurf::iso {

#if defined(__CUDA_ARCH__)
PS_HD double fmul(double a, double b) { return __dmul_rn(a, b); }
PS_HD double fadd(double a, double b) { return __dadd_rn(a, b); }
#else
PS_HD double fmul(double a, double b) { return a * b; }  // fields.cpp is compiled without contraction
PS_HD double fadd(double a, double b) { return a + b; }
#endif

constexpr int kGyroid = 2;

PS_HD double field_value(int which, double x, double y, double z) {
  switch (which) {
    case 0: return fadd(0.75, -sqrt(fadd(fadd(fmul(x, x), fmul(y, y)), fmul(z, z))));
    case 1: {
      const double q = fadd(sqrt(fadd(fmul(x, x), fmul(y, y))), -0.6);
      return fadd(0.25, -sqrt(fadd(fmul(q, q), fmul(z, z))));
    }
    case 2: {
      const double k = 6.283185307179586;
      return sin(k * x) * cos(k * y) + sin(k * y) * cos(k * z) + sin(k * z) * cos(k * x);
    }
    default: {
      const double x2 = fmul(x, x), y2 = fmul(y, y), z2 = fmul(z, z);
      double s = fadd(fmul(x2, x2), -fmul(5.0, x2));
      s = fadd(s, fmul(y2, y2));
      s = fadd(s, -fmul(5.0, y2));
      s = fadd(s, fmul(z2, z2));
      s = fadd(s, -fmul(5.0, z2));
      s = fadd(s, 11.8);
      return fadd(fmul(s, 0.2), 0.5);
    }
  }
}

// Sample coordinate i along an axis: origin + i * spacing, rounded the same way everywhere.
PS_HD double field_coordinate(double origin, double spacing, long long i) { return fadd(origin, fmul(double(i), spacing)); }

}  // namespace parasurf::iso
