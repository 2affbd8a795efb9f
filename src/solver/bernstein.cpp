// Exact algebra of tensor-product Bernstein polynomials: sums, products, derivatives, degree elevation and
// restriction to sub-boxes, all in Bernstein form (Farin, "Curves and Surfaces for CAGD", ch. 5 and 16).
#include <algorithm>
#include <cmath>

#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"
#include "solver/bernstein_kernels.hpp"

namespace parasurf {

namespace {

double binomial(int n, int k) {
  if (k < 0 || k > n) return 0;
  double r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

// The binomials C(n, 0 .. n): rows of a table made once for n below kBinomialTable (products and elevations ask
// for them constantly), computed into `spill` beyond it.
constexpr int kBinomialTable = 128;
const double* binomial_row(int n, std::vector<double>& spill) {
  static const std::vector<double> table = [] {
    std::vector<double> t(std::size_t(kBinomialTable) * kBinomialTable, 0.0);
    for (int m = 0; m < kBinomialTable; ++m)
      for (int k = 0; k <= m; ++k) t[std::size_t(m) * kBinomialTable + std::size_t(k)] = binomial(m, k);
    return t;
  }();
  if (n < kBinomialTable) return table.data() + std::size_t(n) * kBinomialTable;
  spill.resize(std::size_t(n + 1));
  for (int k = 0; k <= n; ++k) spill[std::size_t(k)] = binomial(n, k);
  return spill.data();
}

std::vector<std::size_t> strides(const std::vector<int>& degree) {
  std::vector<std::size_t> s(degree.size(), 1);
  for (int v = int(degree.size()) - 2; v >= 0; --v) s[v] = s[v + 1] * std::size_t(degree[v + 1] + 1);
  return s;
}

void check_same_variables(const BernsteinPoly& a, const BernsteinPoly& b) {
  if (a.variables() != b.variables())
    throw Error(ErrorKind::InvalidArgument, "Bernstein polynomials in " + std::to_string(a.variables()) + " and " +
                                                std::to_string(b.variables()) + " variables cannot be combined");
}

// Applies f(base, line, j, stride) to every line of coefficients along `var`, without divisions: base is the
// line's first coefficient, line the index over the variables before var, j the index over those after it
// (0 <= j < stride, the spacing of the line's coefficients).
template <class F>
void for_each_line(const std::vector<int>& degree, int var, F&& f) {
  const auto st = strides(degree);
  std::size_t outer = 1;
  for (int v = 0; v < var; ++v) outer *= std::size_t(degree[std::size_t(v)] + 1);
  const std::size_t n = std::size_t(degree[std::size_t(var)] + 1), stride = st[std::size_t(var)];
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t j = 0; j < stride; ++j) f(o * n * stride + j, o, j, stride);
}

}  // namespace

std::size_t BernsteinPoly::size() const {
  std::size_t n = 1;
  for (int d : degree) n *= std::size_t(d + 1);
  return n;
}

BernsteinPoly BernsteinPoly::constant(int variables, double value) {
  BernsteinPoly p;
  p.degree.assign(std::size_t(variables), 0);
  p.coef = {value};
  return p;
}

BernsteinPoly BernsteinPoly::univariate(const std::vector<double>& c, int var, int variables) {
  if (c.empty() || var < 0 || var >= variables) throw Error(ErrorKind::InvalidArgument, "univariate: bad variable or no coefficients");
  BernsteinPoly p;
  p.degree.assign(std::size_t(variables), 0);
  p.degree[var] = int(c.size()) - 1;
  p.coef = c;
  return p;
}

using solverk::bernstein_basis;

double BernsteinPoly::evaluate(const double* x) const {
  // The variables contracted last first with their basis values: O(size) work, and the first contraction reads the
  // coefficients in place.
  const int d = variables();
  if (d == 0) return coef.empty() ? 0.0 : coef[0];
  thread_local std::vector<double> a, b, basis;
  std::size_t total = coef.size();
  const double* in = coef.data();
  for (int v = d - 1; v >= 0; --v) {
    const int n = degree[std::size_t(v)];
    if (basis.size() < std::size_t(n + 1)) basis.resize(std::size_t(n + 1));
    bernstein_basis(n, x[v], basis.data());
    const std::size_t width = std::size_t(n + 1), lines = total / width;
    std::vector<double>& out = (v % 2 == 0) ? a : b;
    if (out.size() < lines) out.resize(lines);
    for (std::size_t l = 0; l < lines; ++l) {
      double acc = 0;
      for (std::size_t i = 0; i < width; ++i) acc += basis[i] * in[l * width + i];
      out[l] = acc;
    }
    in = out.data();
    total = lines;
  }
  return in[0];
}

namespace {

// One contraction of evaluate_with_gradient: each line of `width` jets of W values (a value and the partials carried
// so far) into one jet of W + 1 (the value, its derivative along this variable, the carried partials). W fixed at
// compile time, so that the accumulators stay in registers.
template <int W>
void contract_jets(const double* in, std::size_t lines, std::size_t width, const double* b, const double* db, double* out) {
  for (std::size_t l = 0; l < lines; ++l) {
    double acc[W + 1] = {};
    const double* src = in + l * width * W;
    for (std::size_t i = 0; i < width; ++i, src += W) {
      acc[0] += b[i] * src[0];
      acc[1] += db[i] * src[0];
      for (int q = 1; q < W; ++q) acc[1 + q] += b[i] * src[q];
    }
    for (int q = 0; q <= W; ++q) out[l * (W + 1) + std::size_t(q)] = acc[q];
  }
}

}  // namespace

double BernsteinPoly::evaluate_with_gradient(const double* x, double* gradient) const {
  // Per variable, the Bernstein basis of degree n and its derivative n (B_{i-1,n-1} - B_{i,n-1}). The variables
  // are contracted last first, carrying the value and the partials of the variables contracted so far:
  // jets[l * width + 0] is the value of prefix l, [.. + 1 + q] its derivative along variable v + q.
  const int d = variables();
  if (d == 0) return coef.empty() ? 0.0 : coef[0];
  if (d > 7) throw Error(ErrorKind::InvalidArgument, "evaluate_with_gradient: " + std::to_string(d) + " variables; 1..7 supported");
  // The solver's systems are small and evaluated millions of times (Newton, curve sampling): work arrays on the
  // stack where they fit, thread-local ones beyond.
  std::size_t need = 0, basis = 0;
  {
    std::size_t total = coef.size(), w = 1;
    for (int v = d - 1; v >= 0; --v) {
      const std::size_t width = std::size_t(degree[std::size_t(v)] + 1);
      total /= width, ++w;
      need = std::max(need, total * w);
      basis = std::max(basis, width);
    }
  }
  constexpr std::size_t kStackJets = 2048, kStackBasis = 32;
  double stack_jets[2 * kStackJets], stack_basis[2 * kStackBasis];
  double *jets_a = stack_jets, *jets_b = stack_jets + kStackJets, *b = stack_basis, *db = stack_basis + kStackBasis;
  if (need > kStackJets || basis > kStackBasis) {
    thread_local std::vector<double> heap;
    const std::size_t jn = std::max(need, kStackJets), bn = std::max(basis, kStackBasis);
    if (heap.size() < 2 * (jn + bn)) heap.resize(2 * (jn + bn));
    jets_a = heap.data(), jets_b = jets_a + jn, b = jets_b + jn, db = b + bn;
  }
  std::size_t total = coef.size();
  const double* in = coef.data();
  std::size_t in_width = 1;
  for (int v = d - 1; v >= 0; --v) {
    const int n = degree[std::size_t(v)];
    const std::size_t width = std::size_t(n + 1), lines = total / width;
    solverk::bernstein_basis_and_derivative(n, x[v], b, db);
    double* out = (v % 2 == 0) ? jets_a : jets_b;
    switch (in_width) {
      case 1: contract_jets<1>(in, lines, width, b, db, out); break;
      case 2: contract_jets<2>(in, lines, width, b, db, out); break;
      case 3: contract_jets<3>(in, lines, width, b, db, out); break;
      case 4: contract_jets<4>(in, lines, width, b, db, out); break;
      case 5: contract_jets<5>(in, lines, width, b, db, out); break;
      case 6: contract_jets<6>(in, lines, width, b, db, out); break;
      default: contract_jets<7>(in, lines, width, b, db, out); break;
    }
    in = out;
    in_width += 1;
    total = lines;
  }
  // in: [value, d/dx_0, d/dx_1, ..., d/dx_{d-1}]
  for (int v = 0; v < d; ++v) gradient[v] = in[1 + v];
  return in[0];
}

BernsteinPoly elevate(const BernsteinPoly& p, int var, int degree) {
  const int n = p.degree[var];
  if (degree < n) throw Error(ErrorKind::InvalidArgument, "elevate: the new degree is lower");
  if (degree == n) return p;
  BernsteinPoly q;
  q.degree = p.degree;
  q.degree[var] = degree;
  q.coef.assign(q.size(), 0.0);
  const int r = degree - n;
  std::vector<double> spill_n, spill_r, spill_d;
  const double *cn = binomial_row(n, spill_n), *cr = binomial_row(r, spill_r), *cd = binomial_row(degree, spill_d);
  for_each_line(p.degree, var, [&](std::size_t base, std::size_t line, std::size_t j0, std::size_t stride) {
    const std::size_t qbase = line * std::size_t(degree + 1) * stride + j0;  // the variables after var keep their strides
    for (int i = 0; i <= degree; ++i) {
      double acc = 0;
      for (int j = std::max(0, i - r); j <= std::min(n, i); ++j)
        acc += cn[std::size_t(j)] * cr[std::size_t(i - j)] * p.coef[base + std::size_t(j) * stride];
      q.coef[qbase + std::size_t(i) * stride] = acc / cd[std::size_t(i)];
    }
  });
  return q;
}

namespace {
BernsteinPoly raise_to(BernsteinPoly p, const std::vector<int>& degree) {
  for (int v = 0; v < p.variables(); ++v)
    if (p.degree[v] < degree[v]) p = elevate(p, v, degree[v]);
  return p;
}
}  // namespace

BernsteinPoly operator+(const BernsteinPoly& a, const BernsteinPoly& b) {
  check_same_variables(a, b);
  std::vector<int> d(a.degree.size());
  for (std::size_t v = 0; v < d.size(); ++v) d[v] = std::max(a.degree[v], b.degree[v]);
  BernsteinPoly x = raise_to(a, d), y = raise_to(b, d);
  for (std::size_t i = 0; i < x.coef.size(); ++i) x.coef[i] += y.coef[i];
  return x;
}

BernsteinPoly operator*(double s, const BernsteinPoly& a) {
  BernsteinPoly r = a;
  for (double& c : r.coef) c *= s;
  return r;
}

BernsteinPoly operator-(const BernsteinPoly& a, const BernsteinPoly& b) { return a + (-1.0) * b; }

namespace {
// Per variable, the binomials C(degree, i) for i = 0 .. degree (rows of the table; `spill` holds larger ones).
struct BinomialRows {
  std::vector<const double*> row;
  std::vector<std::vector<double>> spill;
  explicit BinomialRows(const std::vector<int>& degree) : row(degree.size()), spill(degree.size()) {
    for (std::size_t v = 0; v < degree.size(); ++v) row[v] = binomial_row(degree[v], spill[v]);
  }
};

// For every coefficient of a tensor of the given degrees: the product over variables of row[v][index_v] (scale)
// and the offset of the same multi-index in a tensor with strides `target` (offset).
void scaled_offsets(const std::vector<int>& degree, const BinomialRows& rows,
                    const std::vector<std::size_t>& target, std::vector<double>& scale, std::vector<std::size_t>& offset) {
  const std::size_t nv = degree.size();
  std::size_t size = 1;
  for (int d : degree) size *= std::size_t(d + 1);
  scale.resize(size);
  offset.resize(size);
  std::vector<int> index(nv, 0);  // the multi-index of p, counted like an odometer (last variable fastest)
  for (std::size_t p = 0; p < size; ++p) {
    double w = 1;
    std::size_t at = 0;
    for (std::size_t v = 0; v < nv; ++v) {
      w *= rows.row[v][index[v]];
      at += std::size_t(index[v]) * target[v];
    }
    scale[p] = w;
    offset[p] = at;
    for (std::size_t v = nv; v-- > 0;) {
      if (++index[v] <= degree[v]) break;
      index[v] = 0;
    }
  }
}
}  // namespace

BernsteinPoly operator*(const BernsteinPoly& a, const BernsteinPoly& b) {
  // In the scaled basis C(n, i) B_i the product is a plain convolution: a_i C(n,i) b_j C(m,j) / C(n+m, i+j).
  check_same_variables(a, b);
  const int nv = a.variables();
  BernsteinPoly r;
  r.degree.resize(std::size_t(nv));
  for (int v = 0; v < nv; ++v) r.degree[v] = a.degree[v] + b.degree[v];
  r.coef.assign(r.size(), 0.0);
  const auto sr = strides(r.degree);
  std::vector<double> scale_a, scale_b, scale_r;
  std::vector<std::size_t> off_a, off_b, off_r;
  scaled_offsets(a.degree, BinomialRows(a.degree), sr, scale_a, off_a);
  scaled_offsets(b.degree, BinomialRows(b.degree), sr, scale_b, off_b);
  std::vector<double> bs(b.coef.size());
  for (std::size_t pb = 0; pb < bs.size(); ++pb) bs[pb] = b.coef[pb] * scale_b[pb];
  for (std::size_t pa = 0; pa < a.coef.size(); ++pa) {
    const double w = a.coef[pa] * scale_a[pa];
    double* out = r.coef.data() + off_a[pa];
    for (std::size_t pb = 0; pb < bs.size(); ++pb) out[off_b[pb]] += w * bs[pb];
  }
  scaled_offsets(r.degree, BinomialRows(r.degree), sr, scale_r, off_r);
  for (std::size_t p = 0; p < r.coef.size(); ++p) r.coef[p] /= scale_r[p];
  return r;
}

BernsteinPoly derivative(const BernsteinPoly& p, int var) {
  const int n = p.degree[var];
  if (n == 0) return BernsteinPoly::constant(p.variables(), 0.0);
  BernsteinPoly q;
  q.degree = p.degree;
  q.degree[var] = n - 1;
  q.coef.assign(q.size(), 0.0);
  for_each_line(p.degree, var, [&](std::size_t base, std::size_t line, std::size_t j0, std::size_t stride) {
    const std::size_t qbase = line * std::size_t(n) * stride + j0;  // the variables after var keep their strides
    for (int i = 0; i < n; ++i)
      q.coef[qbase + std::size_t(i) * stride] = n * (p.coef[base + std::size_t(i + 1) * stride] - p.coef[base + std::size_t(i) * stride]);
  });
  return q;
}

namespace {
// de Casteljau at tau: the control points of the part on [0, tau] (left) or [tau, 1] (right).
void split_line(std::vector<double>& c, double tau, bool keep_left) {
  const std::size_t n = c.size();
  std::vector<double> w = c;
  if (keep_left) c[0] = w[0];
  else c[n - 1] = w[n - 1];
  for (std::size_t r = 1; r < n; ++r) {
    for (std::size_t i = 0; i + r < n; ++i) w[i] = (1 - tau) * w[i] + tau * w[i + 1];
    if (keep_left) c[r] = w[0];
    else c[n - 1 - r] = w[n - 1 - r];
  }
}
}  // namespace

BernsteinPoly restrict_to(const BernsteinPoly& p, int var, double a, double b) {
  BernsteinPoly q = p;
  const std::size_t n = std::size_t(p.degree[var] + 1);
  std::vector<double> line(n);
  for_each_line(p.degree, var, [&](std::size_t base, std::size_t, std::size_t, std::size_t stride) {
    for (std::size_t i = 0; i < n; ++i) line[i] = q.coef[base + i * stride];
    if (a > 0) split_line(line, a, false);                         // now on [a, 1]
    if (b < 1) split_line(line, a < 1 ? (b - a) / (1 - a) : 1.0, true);  // then [a, b]
    for (std::size_t i = 0; i < n; ++i) q.coef[base + i * stride] = line[i];
  });
  return q;
}

BernsteinPoly divided_difference(const std::vector<double>& f, int var_r, int var_s, int variables) {
  const int n = int(f.size()) - 1;
  if (n < 1) return BernsteinPoly::constant(variables, 0.0);
  if (var_r == var_s || var_r < 0 || var_s < 0 || var_r >= variables || var_s >= variables)
    throw Error(ErrorKind::InvalidArgument, "divided_difference: two distinct variables are needed");
  // (f(r) - f(s)) / (r - s) is the mean of f' over [s, r]; f'((1-l) s + l r) expands in the polar form of f' with
  // Bernstein weights in l that all integrate to 1/n, so h = (1/n) sum_k F'[r^k, s^(n-1-k)], and the term k has
  // Bernstein coefficient (a, b) equal to the control coefficient a + b of f'.
  std::vector<double> d(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) d[i] = n * (f[i + 1] - f[i]);
  BernsteinPoly h;
  for (int k = 0; k < n; ++k) {
    BernsteinPoly term;
    term.degree.assign(std::size_t(variables), 0);
    term.degree[var_r] = k;
    term.degree[var_s] = n - 1 - k;
    term.coef.assign(term.size(), 0.0);
    const auto st = strides(term.degree);
    for (int a = 0; a <= k; ++a)
      for (int b = 0; b <= n - 1 - k; ++b) term.coef[std::size_t(a) * st[var_r] + std::size_t(b) * st[var_s]] = d[a + b] / n;
    h = k == 0 ? term : h + term;
  }
  return h;
}

BernsteinPoly divided_difference_at_end(const std::vector<double>& f, int end, int var, int variables) {
  const int n = int(f.size()) - 1;
  if (n < 1) return BernsteinPoly::constant(variables, 0.0);
  // Synthetic division of f(r) - f(e) by (r - e) in the Bernstein basis of degree n - 1.
  std::vector<double> q(static_cast<std::size_t>(n));
  // End 1: (f(r) - f(1)) / (r - 1) = (f(1) - f(r)) / (1 - r).
  for (int j = 0; j < n; ++j) q[j] = end == 0 ? (f[j + 1] - f[0]) * n / (j + 1) : (f[n] - f[j]) * n / (n - j);
  return BernsteinPoly::univariate(q, var, variables);
}

}  // namespace parasurf
