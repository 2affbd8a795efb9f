// Newton's method on small square systems (one to three unknowns) of tensor-product Bernstein polynomials, written
// once for the host finish and for the CUDA engines, which settle the cells they proved to hold one root on the
// device (a batch of 10^4 systems spent longer in Newton on the host than in its whole traversal on the GPU).
// Coefficients row-major, last variable fastest, as in bernstein_kernels.hpp.
#pragma once
#include <cmath>

#include "core/hd.hpp"
#include "solver/bernstein_kernels.hpp"

namespace parasurf::solverk {

constexpr int kNewtonMaxVars = 3;

// v - v is 0 for finite v and NaN for NaN and the infinities (one spelling for host and device code).
PS_HD bool is_finite(double v) { return v - v == 0; }

constexpr int kNewtonMaxDegree = 63;  // the solver's limit per variable

// The Bernstein bases (and their derivatives) of each variable at one point, made once per degree: the equations of
// a system mostly share their degrees. Degrees up to MaxDegree (the device takes a smaller bound than the host: a
// thread's arrays are reserved for every thread the GPU can hold).
template <int MaxDegree = kNewtonMaxDegree>
struct PointBases {
  int degree[kNewtonMaxVars] = {-1, -1, -1};
  double b[kNewtonMaxVars][MaxDegree + 1];
  double db[kNewtonMaxVars][MaxDegree + 1];
  PS_HD void ensure(int v, int d, double t) {
    if (degree[v] == d) return;
    bernstein_basis_and_derivative(d, t, b[v], db[v]);
    degree[v] = d;
  }
};

// The value of a polynomial in n <= 3 variables at x and its gradient (into g[0..n)), the variables contracted last
// first: the sums, and their order, of BernsteinPoly::evaluate_with_gradient. `bases` belongs to this x.
template <class Bases>
PS_HD double value_and_gradient(const double* c, int n, const int* degree, const double* x, Bases& bases, double* g) {
  for (int v = 0; v < n; ++v) bases.ensure(v, degree[v], x[v]);
  const double *b0 = bases.b[0], *d0 = bases.db[0];
  if (n == 1) {
    double value = 0, g0 = 0;
    for (int i = 0; i <= degree[0]; ++i) value += b0[i] * c[i], g0 += d0[i] * c[i];
    g[0] = g0;
    return value;
  }
  const double *b1 = bases.b[1], *d1 = bases.db[1];
  if (n == 2) {
    const int w = degree[1] + 1;
    double value = 0, g0 = 0, g1 = 0;
    for (int i = 0; i <= degree[0]; ++i) {
      double r = 0, dr = 0;
      for (int j = 0; j < w; ++j) r += b1[j] * c[i * w + j], dr += d1[j] * c[i * w + j];
      value += b0[i] * r, g0 += d0[i] * r, g1 += b0[i] * dr;
    }
    g[0] = g0, g[1] = g1;
    return value;
  }
  const double *b2 = bases.b[2], *d2 = bases.db[2];
  const int w2 = degree[2] + 1, w1 = degree[1] + 1;
  double value = 0, g0 = 0, g1 = 0, g2 = 0;
  for (int i = 0; i <= degree[0]; ++i) {
    double v1 = 0, e1 = 0, e2 = 0;
    for (int j = 0; j < w1; ++j) {
      const double* row = c + (i * w1 + j) * w2;
      double s = 0, ds = 0;
      for (int k = 0; k < w2; ++k) s += b2[k] * row[k], ds += d2[k] * row[k];
      v1 += b1[j] * s, e1 += d1[j] * s, e2 += b1[j] * ds;
    }
    value += b0[i] * v1, g0 += d0[i] * v1, g1 += b0[i] * e1, g2 += b0[i] * e2;
  }
  g[0] = g0, g[1] = g1, g[2] = g2;
  return value;
}

// dx = -J^-1 f for an n x n Jacobian (row-major), n <= 3, by the closed-form inverse, when J's reciprocal condition
// number in the 1-norm (exact: the inverse is at hand) exceeds 1e-10 and the step is finite; false otherwise (the
// caller then takes a least-squares step or gives up).
PS_HD bool newton_solve(int n, const double* J, const double* f, double* dx) {
  double inv[9];
  if (n == 1) {
    inv[0] = 1 / J[0];
  } else if (n == 2) {
    const double r = 1 / (J[0] * J[3] - J[1] * J[2]);
    inv[0] = J[3] * r, inv[1] = -J[1] * r, inv[2] = -J[2] * r, inv[3] = J[0] * r;
  } else {
    // The adjugate: cofactor (i, j) goes to (j, i).
    const double c00 = J[4] * J[8] - J[5] * J[7], c01 = J[5] * J[6] - J[3] * J[8], c02 = J[3] * J[7] - J[4] * J[6];
    const double r = 1 / (J[0] * c00 + J[1] * c01 + J[2] * c02);
    inv[0] = c00 * r, inv[3] = c01 * r, inv[6] = c02 * r;
    inv[1] = (J[2] * J[7] - J[1] * J[8]) * r, inv[4] = (J[0] * J[8] - J[2] * J[6]) * r, inv[7] = (J[1] * J[6] - J[0] * J[7]) * r;
    inv[2] = (J[1] * J[5] - J[2] * J[4]) * r, inv[5] = (J[2] * J[3] - J[0] * J[5]) * r, inv[8] = (J[0] * J[4] - J[1] * J[3]) * r;
  }
  double norm = 0, norm_inv = 0;
  for (int j = 0; j < n; ++j) {
    double s = 0, t = 0;
    for (int i = 0; i < n; ++i) s += fabs(J[i * n + j]), t += fabs(inv[i * n + j]);
    norm = s > norm ? s : norm;
    norm_inv = t > norm_inv ? t : norm_inv;
  }
  if (!(1 / (norm * norm_inv) > 1e-10)) return false;
  bool finite = true;
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int k = 0; k < n; ++k) s += inv[i * n + k] * f[k];
    dx[i] = -s;
    finite = finite && is_finite(dx[i]);
  }
  return finite;
}

enum : int { kNewtonFailed = 0, kNewtonConverged = 1, kNewtonNeedsLeastSquares = 2 };

// Newton in the box [lo, hi] from x (updated in place), each step clamped to the box. eval(x, J, f) writes the
// Jacobian (row-major) and the values; least_squares(J, f, dx) is asked for a step where J is too ill-conditioned
// for the inverse, and may refuse (then kNewtonNeedsLeastSquares: the CUDA engines leave such cells to the host).
// Converged only on a small unclamped step: a step stopped by the box is no root.
template <class Eval, class LeastSquares>
PS_HD int newton_in_box(int n, Eval& eval, LeastSquares& least_squares, double* x, const double* lo, const double* hi,
                        double tolerance, int iterations) {
  int clamps = 0;
  for (int it = 0; it < iterations; ++it) {
    double J[kNewtonMaxVars * kNewtonMaxVars], f[kNewtonMaxVars], dx[kNewtonMaxVars];
    eval(x, J, f);
    if (!newton_solve(n, J, f, dx) && !least_squares(J, f, dx)) return kNewtonNeedsLeastSquares;
    double step = 0;
    for (int k = 0; k < n; ++k) {
      if (!is_finite(dx[k])) return kNewtonFailed;
      step = fabs(dx[k]) > step ? fabs(dx[k]) : step;
    }
    bool clamped = false;
    for (int k = 0; k < n; ++k) {
      const double next = x[k] + dx[k];
      clamped = clamped || next < lo[k] || next > hi[k];
      x[k] = next < lo[k] ? lo[k] : next > hi[k] ? hi[k] : next;
    }
    // Iterates pushed against the box twice in a row are heading for a root elsewhere (or none): give up early.
    if (clamped && ++clamps >= 2) return kNewtonFailed;
    if (!clamped) clamps = 0;
    if (step <= tolerance * (1 + fabs(x[0]))) return kNewtonConverged;
  }
  return kNewtonFailed;
}

}  // namespace parasurf::solverk
