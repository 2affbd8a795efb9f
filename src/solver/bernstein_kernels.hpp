// Host+device kernels of the subdivision solver on raw coefficient arrays (row-major, last variable fastest): the
// de Casteljau split of a tensor-product Bernstein polynomial at the middle of one variable, and the coefficient
// ranges that the exclusion and single-root tests read. Written once for the CPU engine and the CUDA engines.
#pragma once
#include "core/hd.hpp"

namespace parasurf::solverk {

struct Range {
  double lo, hi;
};

PS_HD Range coefficient_range(const double* c, int count) {
  Range r{c[0], c[0]};
  for (int i = 1; i < count; ++i) r.lo = c[i] < r.lo ? c[i] : r.lo, r.hi = c[i] > r.hi ? c[i] : r.hi;
  return r;
}

// Range of the coefficients of d p / d x_var (on the unit box) without forming them: n (c[i + stride] - c[i]).
// `inner` is the product of (degree + 1) over the variables after var.
PS_HD Range derivative_range(const double* c, int count, int degree_var, int inner) {
  if (degree_var == 0) return {0.0, 0.0};
  Range r{1e308, -1e308};
  const int line = (degree_var + 1) * inner;
  for (int base = 0; base < count; base += line)
    for (int i = 0; i < degree_var * inner; ++i) {
      const double d = degree_var * (c[base + i + inner] - c[base + i]);
      r.lo = d < r.lo ? d : r.lo, r.hi = d > r.hi ? d : r.hi;
    }
  return r;
}

// The halves of p over [0, 1/2] and [1/2, 1] along var (de Casteljau at 1/2, exact up to rounding). Lines along
// var have degree_var + 1 coefficients spaced `inner` apart; at most 64 per line.
PS_HD void split_half(const double* c, double* left, double* right, int count, int degree_var, int inner) {
  const int n = degree_var + 1, line = n * inner;
  double w[64];
  for (int base = 0; base < count; base += line)
    for (int j = 0; j < inner; ++j) {
      const int at = base + j;
      for (int i = 0; i < n; ++i) w[i] = c[at + i * inner];
      left[at] = w[0];
      right[at + (n - 1) * inner] = w[n - 1];
      for (int r = 1; r < n; ++r) {
        for (int i = 0; i + r < n; ++i) w[i] = 0.5 * (w[i] + w[i + 1]);
        left[at + r * inner] = w[0];
        right[at + (n - 1 - r) * inner] = w[n - 1 - r];
      }
    }
}

}  // namespace parasurf::solverk
