// Matrix form of Palomar et al. (eq. 4, G = R(m) P R(n)^T) with the power basis re-centred on sub-intervals:
// the global power basis loses about log10(C(m, m/2)) digits (9 at degree 32), a local one on an interval of
// width 1/m keeps the coefficient sum within e of the control-point size.
#include <omp.h>

#include <cmath>

#include <vector>

#include "bezier/backend.hpp"

namespace parasurf::bezier {

namespace {

// M[i][k]: B_{i,d}(c + h t) = sum_k M[i][k] t^k, expanded in long double.
std::vector<double> local_power_matrix(int d, long double c, long double h) {
  std::vector<double> M(std::size_t(d + 1) * (d + 1), 0.0);
  const long double e = 1.0L - c;
  std::vector<long double> a(d + 1), b(d + 1);
  for (int i = 0; i <= d; ++i) {
    std::fill(a.begin(), a.end(), 0.0L);
    std::fill(b.begin(), b.end(), 0.0L);
    for (int p = 0; p <= i; ++p)  // (c + h t)^i
      a[p] = (long double)kern::binomial(i, p) * std::pow(c, i - p) * std::pow(h, p);
    for (int q = 0; q <= d - i; ++q)  // (e - h t)^(d-i)
      b[q] = (long double)kern::binomial(d - i, q) * std::pow(e, d - i - q) * std::pow(-h, q);
    const long double bin = (long double)kern::binomial(d, i);
    for (int p = 0; p <= i; ++p)
      for (int q = 0; q <= d - i; ++q) M[std::size_t(i) * (d + 1) + p + q] += double(bin * a[p] * b[q]);
  }
  return M;
}

}  // namespace

PowerTiles build_power_tiles(int m, int n, int nc, const double* P) {
  PowerTiles tiles;
  tiles.ku = m;
  tiles.kv = n;
  const int mu = m + 1, nv = n + 1;
  std::vector<std::vector<double>> Mu(tiles.ku), Mv(tiles.kv);
  for (int a = 0; a < tiles.ku; ++a)
    Mu[a] = local_power_matrix(m, (a + 0.5L) / tiles.ku, 0.5L / tiles.ku);
  for (int b = 0; b < tiles.kv; ++b)
    Mv[b] = local_power_matrix(n, (b + 0.5L) / tiles.kv, 0.5L / tiles.kv);
  // X_a[k][j][c] = sum_i Mu_a[i][k] P[i][j][c]
  std::vector<double> X(std::size_t(tiles.ku) * mu * nv * nc, 0.0);
  for (int a = 0; a < tiles.ku; ++a)
    for (int k = 0; k < mu; ++k)
      for (int i = 0; i < mu; ++i) {
        const double w = Mu[a][std::size_t(i) * mu + k];
        for (int jc = 0; jc < nv * nc; ++jc)
          X[(std::size_t(a) * mu + k) * nv * nc + jc] += w * P[std::size_t(i) * nv * nc + jc];
      }
  const std::size_t tile = std::size_t(mu) * nv * nc;
  tiles.g.assign(tile * tiles.ku * tiles.kv, 0.0);
#pragma omp parallel for collapse(2) schedule(static)
  for (int a = 0; a < tiles.ku; ++a)
    for (int b = 0; b < tiles.kv; ++b) {
      double* G = tiles.g.data() + (std::size_t(a) * tiles.kv + b) * tile;
      const double* Xa = X.data() + std::size_t(a) * mu * nv * nc;
      for (int k = 0; k < mu; ++k)
        for (int j = 0; j < nv; ++j)
          for (int l = 0; l < nv; ++l) {
            const double w = Mv[b][std::size_t(j) * nv + l];
            for (int c = 0; c < nc; ++c) G[(std::size_t(k) * nv + l) * nc + c] += Xa[(std::size_t(k) * nv + j) * nc + c] * w;
          }
    }
  return tiles;
}

}  // namespace parasurf::bezier
