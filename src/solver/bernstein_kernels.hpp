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
  // Four running extremes, so that the comparisons do not form one chain (and vectorise).
  double lo[4] = {1e308, 1e308, 1e308, 1e308}, hi[4] = {-1e308, -1e308, -1e308, -1e308};
  const int line = (degree_var + 1) * inner, span = degree_var * inner;
  for (int base = 0; base < count; base += line) {
    const double* a = c + base;
    int i = 0;
    for (; i + 4 <= span; i += 4)
      for (int l = 0; l < 4; ++l) {
        const double d = degree_var * (a[i + l + inner] - a[i + l]);
        lo[l] = d < lo[l] ? d : lo[l], hi[l] = d > hi[l] ? d : hi[l];
      }
    for (; i < span; ++i) {
      const double d = degree_var * (a[i + inner] - a[i]);
      lo[0] = d < lo[0] ? d : lo[0], hi[0] = d > hi[0] ? d : hi[0];
    }
  }
  Range r{lo[0], hi[0]};
  for (int l = 1; l < 4; ++l) r.lo = lo[l] < r.lo ? lo[l] : r.lo, r.hi = hi[l] > r.hi ? hi[l] : r.hi;
  return r;
}

// The Bernstein basis of degree n at t into b[0..n], by the triangular recurrence of convex combinations (as
// stable as de Casteljau's).
PS_HD void bernstein_basis(int n, double t, double* b) {
  const double s = 1 - t;
  b[0] = 1;
  for (int r = 1; r <= n; ++r) {
    b[r] = t * b[r - 1];
    for (int i = r - 1; i > 0; --i) b[i] = s * b[i] + t * b[i - 1];
    b[0] *= s;
  }
}

// The basis of degree n at t into b[0..n] and its derivative into db[0..n]: n (B_{i-1,n-1} - B_{i,n-1}).
PS_HD void bernstein_basis_and_derivative(int n, double t, double* b, double* db) {
  if (n == 0) {
    b[0] = 1, db[0] = 0;
    return;
  }
  bernstein_basis(n - 1, t, b);
  for (int i = n; i >= 0; --i) db[i] = double(n) * ((i > 0 ? b[i - 1] : 0.0) - (i < n ? b[i] : 0.0));
  bernstein_basis(n, t, b);
}

// The solver splits cells a little off their middle: roots at simple fractions (1/2, 1/4, 3/4, ...), common in
// real inputs, would otherwise fall exactly on cell faces, where no test can prove them inside one cell.
constexpr double kSplitAt = 0.5 - 1.0 / 3072;

// The parts of p over [0, tau] and [tau, 1] along var (de Casteljau at tau). Lines along var have degree_var + 1
// coefficients spaced `inner` apart. The `inner` lines of a block run side by side (contiguous, so the
// combinations vectorise): the block is copied to `right` first and reduced there in place, each round's first
// row going to `left`; left may be c itself, whose block is wholly read before any write.
PS_HD void split_at(const double* c, double* left, double* right, int count, int degree_var, int inner, double tau) {
  const int n = degree_var + 1, line = n * inner;
  const double keep = 1 - tau;
  for (int base = 0; base < count; base += line) {
    const double* src = c + base;
    double* lo = left + base;
    double* hi = right + base;
    for (int k = 0; k < line; ++k) hi[k] = src[k];
    for (int j = 0; j < inner; ++j) lo[j] = hi[j];
    for (int r = 1; r < n; ++r) {
      for (int i = 0; i + r < n; ++i) {
        double* a = hi + i * inner;
        const double* b = a + inner;
        for (int j = 0; j < inner; ++j) a[j] = keep * a[j] + tau * b[j];
      }
      for (int j = 0; j < inner; ++j) lo[r * inner + j] = hi[j];
    }
  }
}

enum class CellTest { Empty, Unique, Unknown };

// Rounding bound of a Bernstein polynomial's value from its largest coefficient and total degree (de Casteljau's
// convex combinations lose about one unit in the last place per step).
PS_HD double evaluation_error(double largest_coefficient, int total_degree) { return 4e-16 * (total_degree + 2) * largest_coefficient; }

// Krawczyk's test on a cell in its local coordinates [0, 1]^n (Krawczyk 1969; Moore, "Interval analysis"): with J
// the interval Jacobian over the cell (n x n, row = equation), f(m) the values at the centre m and Y the inverse
// of J's midpoint, K = m - Y f(m) + (I - Y J)([0, 1]^n - m). A root in the cell lies in K, so K outside the cell
// proves none; K inside the cell's interior proves exactly one, to which Newton from m converges.
// f_err bounds the rounding error of f_mid; it widens K, so that values lost in rounding (near tangent roots, where
// f is tiny over a whole region) never prove a root.
// N > 0: the unknowns are N, a constant, so that every loop has a fixed count and on the GPU the matrix stays in
// registers (rows are exchanged by comparing indices, never through a computed one, which would put it in memory).
// N = 0: n unknowns (1 to 6) given at run time, for kernels that serve every shape (the unrolled matrix of six
// unknowns would take all of their registers).
template <int N>
PS_HD CellTest krawczyk_test(int n_given, const Range* jac, const double* f_mid, const double* f_err) {
  constexpr int C = N > 0 ? N : 6;
  const int n = N > 0 ? N : n_given;
  double a[C][2 * C];  // [mid J | I], reduced to [I | Y] by Gauss-Jordan with partial pivoting
  PS_UNROLL
  for (int i = 0; i < n; ++i)
    PS_UNROLL
    for (int k = 0; k < 2 * n; ++k) a[i][k] = k < n ? 0.5 * (jac[i * n + k].lo + jac[i * n + k].hi) : (k - n == i ? 1.0 : 0.0);
  double biggest = 0;
  PS_UNROLL
  for (int i = 0; i < n; ++i)
    PS_UNROLL
    for (int k = 0; k < n; ++k) biggest = biggest > (a[i][k] < 0 ? -a[i][k] : a[i][k]) ? biggest : (a[i][k] < 0 ? -a[i][k] : a[i][k]);
  PS_UNROLL
  for (int c = 0; c < n; ++c) {
    int pivot = c;
    double p = a[c][c];
    PS_UNROLL
    for (int r = c + 1; r < n; ++r)
      if ((a[r][c] < 0 ? -a[r][c] : a[r][c]) > (p < 0 ? -p : p)) pivot = r, p = a[r][c];
    if (!(p > 1e-12 * biggest || p < -1e-12 * biggest)) return CellTest::Unknown;  // singular midpoint Jacobian
    PS_UNROLL
    for (int r = c + 1; r < n; ++r)
      if (r == pivot)
        PS_UNROLL
        for (int k = 0; k < 2 * n; ++k) {
          const double t = a[c][k];
          a[c][k] = a[r][k];
          a[r][k] = t;
        }
    PS_UNROLL
    for (int k = 0; k < 2 * n; ++k) a[c][k] /= p;
    PS_UNROLL
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c];
      PS_UNROLL
      for (int k = 0; k < 2 * n; ++k) a[r][k] -= f * a[c][k];
    }
  }
  bool inside = true;
  PS_UNROLL
  for (int i = 0; i < n; ++i) {
    double centre = 0.5, radius = 0;
    PS_UNROLL
    for (int j = 0; j < n; ++j) {
      centre -= a[i][n + j] * f_mid[j];
      radius += (a[i][n + j] < 0 ? -a[i][n + j] : a[i][n + j]) * f_err[j];
    }
    PS_UNROLL
    for (int k = 0; k < n; ++k) {
      double lo = i == k ? 1.0 : 0.0, hi = lo;  // (I - Y J)_ik as an interval
      PS_UNROLL
      for (int j = 0; j < n; ++j) {
        const double y = a[i][n + j], p = -y * jac[j * n + k].lo, q = -y * jac[j * n + k].hi;
        lo += p < q ? p : q;
        hi += p < q ? q : p;
      }
      const double mag = (lo < 0 ? -lo : lo) > (hi < 0 ? -hi : hi) ? (lo < 0 ? -lo : lo) : (hi < 0 ? -hi : hi);
      radius += 0.5 * mag;
    }
    if (!(radius == radius) || !(centre == centre)) return CellTest::Unknown;
    // Margins of 1e-9 of the cell keep rounding in f(m) from excluding a root on the cell's face.
    if (centre + radius < -1e-9 || centre - radius > 1 + 1e-9) return CellTest::Empty;
    if (!(centre - radius > 1e-12 && centre + radius < 1 - 1e-12)) inside = false;
  }
  return inside ? CellTest::Unique : CellTest::Unknown;
}

// The test for n unknowns (1 to 6) given at run time, the loops made for n.
PS_HD CellTest krawczyk_test(int n, const Range* jac, const double* f_mid, const double* f_err) {
  switch (n) {
    case 1: return krawczyk_test<1>(n, jac, f_mid, f_err);
    case 2: return krawczyk_test<2>(n, jac, f_mid, f_err);
    case 3: return krawczyk_test<3>(n, jac, f_mid, f_err);
    case 4: return krawczyk_test<4>(n, jac, f_mid, f_err);
    case 5: return krawczyk_test<5>(n, jac, f_mid, f_err);
    case 6: return krawczyk_test<6>(n, jac, f_mid, f_err);
    default: return CellTest::Unknown;
  }
}

}  // namespace parasurf::solverk
