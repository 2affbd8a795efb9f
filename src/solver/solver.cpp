// Subdivision solver for square systems of tensor-product Bernstein polynomials, after Park, Elber, Kim, Kim, Seong,
// "A hybrid parallel solver for systems of multivariate polynomials using CPUs and GPUs", CAD 43 (2011): a cell is
// discarded when some equation's coefficients share one sign; otherwise it is split by de Casteljau along the axis
// where the coefficients vary most. A cell whose interval Jacobian is regular (preconditioned diagonal dominance)
// holds at most one root, which Newton refines in double; cells that reach the tolerance unresolved (tangent roots,
// solution curves) are clustered, so that each tangent root is reported once and a continuum as a region.
#include "core/eigen.hpp"
#include <algorithm>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <numeric>
#include <omp.h>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/region_errors.hpp"
#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"
#include "point_grid.hpp"
#include "solver/bernstein_kernels.hpp"
#include "solver/engine.hpp"

namespace parasurf {

using solver::Subdivision;

namespace {

// The status of a solve that the time limit ended.
std::string time_limit_status(double seconds) {
  char text[64];
  std::snprintf(text, sizeof text, "limit reached: %g s (partial result)", seconds);
  return text;
}

}  // namespace

namespace {

constexpr int kMaxVariables = 6;  // the entry points refuse larger systems

struct Cell {
  std::vector<double> lo, hi;
  std::vector<BernsteinPoly> f;  // the equations restricted to the cell, on its own unit box
};

struct Interval {
  double lo, hi;
};

Interval coef_range(const BernsteinPoly& p) {
  // Four running extremes, so that the comparisons do not form one chain (and vectorise).
  const double* c = p.coef.data();
  const std::size_t size = p.coef.size();
  double lo[4] = {c[0], c[0], c[0], c[0]}, hi[4] = {c[0], c[0], c[0], c[0]};
  std::size_t i = 0;
  for (; i + 4 <= size; i += 4)
    for (int l = 0; l < 4; ++l) lo[l] = c[i + l] < lo[l] ? c[i + l] : lo[l], hi[l] = c[i + l] > hi[l] ? c[i + l] : hi[l];
  for (; i < size; ++i) lo[0] = c[i] < lo[0] ? c[i] : lo[0], hi[0] = c[i] > hi[0] ? c[i] : hi[0];
  return {std::min({lo[0], lo[1], lo[2], lo[3]}), std::max({hi[0], hi[1], hi[2], hi[3]})};
}

int inner_size(const BernsteinPoly& p, int var) {
  int inner = 1;
  for (int v = var + 1; v < p.variables(); ++v) inner *= p.degree[v] + 1;
  return inner;
}



struct System {
  const std::vector<BernsteinPoly>& eq;
  int n;  // variables (the equations number eq.size(), n or fewer)
  double residual(const std::vector<double>& x) const {
    double r = 0;
    for (const auto& e : eq) r = std::max(r, std::abs(e.evaluate(x.data())));
    return r;
  }
  // The equations' values (into f, when given) and their Jacobian at x, each row in one Bernstein pass.
  template <class Matrix, class Vector>
  void evaluate_jacobian(const double* x, Matrix& jac, Vector* f) const {
    for (int i = 0; i < int(eq.size()); ++i) {
      double gradient[kMaxVariables];
      const double value = eq[std::size_t(i)].evaluate_with_gradient(x, gradient);
      if (f) (*f)(i) = value;
      for (int k = 0; k < n; ++k) jac(i, k) = gradient[k];
    }
  }
};

// Newton (least squares when singular), each step clamped to the box; true when the step converged.
bool newton(const System& s, std::vector<double>& x, const std::vector<double>& lo, const std::vector<double>& hi,
            double tolerance, int iterations) {
  const int n = s.n, m = int(s.eq.size());
  // Systems have at most kMaxVariables unknowns: fixed-capacity matrices, no heap per step.
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, kMaxVariables, kMaxVariables>;
  using Vector = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, kMaxVariables, 1>;
  Matrix jac(m, n);
  Vector f(m);
  int clamps = 0;
  for (int it = 0; it < iterations; ++it) {
    s.evaluate_jacobian(x.data(), jac, &f);
    // Square and well conditioned: LU (a few times cheaper); else the minimum-norm least-squares step.
    Vector dx;
    bool solved = false;
    if (m == n) {
      const Eigen::PartialPivLU<Matrix> lu(jac);
      if (lu.rcond() > 1e-10) dx = lu.solve(-f), solved = dx.allFinite();
    }
    if (!solved) dx = jac.completeOrthogonalDecomposition().solve(-f);
    // Converged only on a small unclamped step: a step stopped by the box is no root.
    const double step = dx.cwiseAbs().maxCoeff();
    if (!std::isfinite(step)) return false;
    bool clamped = false;
    for (int k = 0; k < n; ++k) {
      const double next = x[k] + dx(k);
      clamped = clamped || next < lo[k] || next > hi[k];
      x[k] = std::clamp(next, lo[k], hi[k]);
    }
    // Iterates pushed against the box twice in a row are heading for a root elsewhere (or none): give up early.
    if (clamped && ++clamps >= 2) return false;
    if (!clamped) clamps = 0;
    if (step <= tolerance * (1 + std::abs(x[0]))) return true;
  }
  return false;
}

}  // namespace

namespace {


bool satisfies_all(const std::vector<BernsteinPoly>& positive, const std::vector<double>& x) {
  for (const auto& q : positive)
    if (!(q.evaluate(x.data()) > 0)) return false;
  return true;
}

// The polynomial with variable `var` fixed at t (on the unit box): its coefficients contracted along var with the
// Bernstein basis at t; the other variables keep their order.
void fix_variable(const BernsteinPoly& p, int var, double t, BernsteinPoly& out) {
  const int d = p.degree[std::size_t(var)];
  double basis[64];  // degrees are at most 63 (check_system)
  solverk::bernstein_basis(d, t, basis);
  const int inner = inner_size(p, var);
  const std::size_t outer = p.coef.size() / (std::size_t(d + 1) * std::size_t(inner));
  out.degree.clear();  // the output's storage is reused from call to call
  for (int v = 0; v < p.variables(); ++v)
    if (v != var) out.degree.push_back(p.degree[std::size_t(v)]);
  out.coef.assign(outer * std::size_t(inner), 0.0);
  for (std::size_t a = 0; a < outer; ++a)
    for (int i = 0; i <= d; ++i) {
      const double* src = p.coef.data() + (a * std::size_t(d + 1) + std::size_t(i)) * std::size_t(inner);
      double* dst = out.coef.data() + a * std::size_t(inner);
      for (int b = 0; b < inner; ++b) dst[b] += basis[i] * src[b];
    }
}

template <class EmitChild>
void process_cell(const System& sys, Cell& cell, int m, bool square, double tolerance, double scale, const SolverOptions& o,
                  const std::vector<BernsteinPoly>& positive, std::vector<Root>& found,
                  std::vector<std::pair<std::vector<double>, std::vector<double>>>& unresolved, EmitChild&& emit_child);

// Bézier clipping along one variable (Sederberg & Nishita 1990): with the other variables free, p(t, y) is a convex
// combination of values in [lo_i, hi_i] (the coefficients' range at index i of `var`), so its graph lies in the hull
// of the points (i/d, lo_i), (i/d, hi_i), and p vanishes only where that hull meets zero. Narrows [t0, t1]
// (the unit range of `var`) to that part; false when the hull misses zero.
bool clip_zero_range(const BernsteinPoly& p, int var, double& t0, double& t1) {
  const int d = p.degree[std::size_t(var)];
  const int inner = inner_size(p, var);
  const std::size_t outer = p.coef.size() / (std::size_t(d + 1) * std::size_t(inner));
  double lo[64], hi[64];
  for (int i = 0; i <= d; ++i) lo[i] = INFINITY, hi[i] = -INFINITY;
  for (std::size_t a = 0; a < outer; ++a)
    for (int i = 0; i <= d; ++i) {
      const double* src = p.coef.data() + (a * std::size_t(d + 1) + std::size_t(i)) * std::size_t(inner);
      for (int b = 0; b < inner; ++b) lo[i] = std::min(lo[i], src[b]), hi[i] = std::max(hi[i], src[b]);
    }
  if (d == 0) return lo[0] <= 0 && hi[0] >= 0;  // p does not depend on var
  // The hull meets the axis between the extreme crossings of the segments that join a point at or below zero with
  // one at or above it.
  double a = INFINITY, b = -INFINITY;
  const double step = 1.0 / d;
  for (int i = 0; i < 2 * (d + 1); ++i) {
    const double vi = i & 1 ? hi[i >> 1] : lo[i >> 1];
    if (!(vi <= 0)) continue;
    for (int j = 0; j < 2 * (d + 1); ++j) {
      const double vj = j & 1 ? hi[j >> 1] : lo[j >> 1];
      if (!(vj >= 0)) continue;
      const double span = vj - vi, ti = (i >> 1) * step, tj = (j >> 1) * step;
      const double t = span > 0 ? ti + (tj - ti) * (-vi / span) : ti;
      a = std::min(a, t), b = std::max(b, t);
    }
  }
  if (!(a <= b)) return false;
  t0 = std::max(t0, a), t1 = std::min(t1, b);
  return t0 <= t1;
}

// Domain reduction of a cell (the projected-polyhedron step of Sherbrooke & Patrikalakis 1993): along
// each variable, the part where every equation can vanish (clip_zero_range); the cell shrinks to that box, its
// polynomials restricted by de Casteljau, again while a round at least halves some side. Near a simple root the
// box shrinks quadratically, so far fewer cells are split.
enum class Clip { Empty, Unchanged, Shrunk };
Clip clip_cell(Cell& cell, int m, int n) {
  Clip result = Clip::Unchanged;
  thread_local std::vector<double> scratch;
  for (int round = 0; round < 4; ++round) {
    double t0[kMaxVariables], t1[kMaxVariables], narrowest = 1;
    for (int k = 0; k < n; ++k) {
      t0[k] = 0, t1[k] = 1;
      for (int i = 0; i < m; ++i)
        if (!clip_zero_range(cell.f[std::size_t(i)], k, t0[k], t1[k])) return Clip::Empty;
      // A margin keeps roots (which a clip often puts on its edge) off the new box's faces, where the single-root
      // test could never prove them, and covers the clip's rounding; sides stay above 1e-7 (of the system's box),
      // where the coefficients' rounding would start to hide the roots from that test.
      const double margin = 1e-9 + std::max(0.02 * (t1[k] - t0[k]), 1e-7 / (cell.hi[k] - cell.lo[k]));
      t0[k] = std::max(0.0, t0[k] - margin), t1[k] = std::min(1.0, t1[k] + margin);
      narrowest = std::min(narrowest, t1[k] - t0[k]);
    }
    if (narrowest > 0.8) return result;  // little gained: the cell is split as usual
    for (int k = 0; k < n; ++k) {
      const double w = cell.hi[k] - cell.lo[k], lo = cell.lo[k] + t0[k] * w, hi = cell.lo[k] + t1[k] * w;
      if (t1[k] - t0[k] > 0.95 || !(hi > lo)) continue;
      for (auto& f : cell.f) {
        const int count = int(f.coef.size()), d = f.degree[std::size_t(k)], inner = inner_size(f, k);
        if (d == 0) continue;
        if (scratch.size() < f.coef.size()) scratch.resize(f.coef.size());
        double* c = f.coef.data();
        if (t1[k] < 1) solverk::split_at(c, c, scratch.data(), count, d, inner, t1[k]);  // keep [0, t1]
        if (t0[k] > 0) solverk::split_at(c, scratch.data(), c, count, d, inner, t0[k] / t1[k]);  // keep [t0, t1] of it
      }
      cell.lo[k] = lo, cell.hi[k] = hi;
      result = Clip::Shrunk;
    }
    if (narrowest > 0.5) return result;
  }
  return result;
}

// A bound on |dy/dx_k| (max norm) over a cell where F(x_k, y) = 0, from the interval Jacobian: J_y in
// [mid - rad, mid + rad], J_k in [column_mid - column_rad, column_mid + column_rad]. With Y = mid^-1 and
// rho = ||I - Y J_y|| < 1, every J_y is regular (so F is one-to-one in y for each x_k, by the mean value theorem)
// and dy/dx_k = -(I - (I - Y J_y))^-1 Y J_k is at most ||Y J_k|| / (1 - rho). Infinite otherwise.
template <class Matrix, class Vector>
double graph_slope_bound(const Matrix& mid, const Matrix& rad, const Vector& column_mid, const Vector& column_rad) {
  const Matrix y = mid.inverse();
  if (!y.allFinite()) return INFINITY;  // a singular midpoint Jacobian
  const Matrix spread = (Matrix::Identity(mid.rows(), mid.cols()) - y * mid).cwiseAbs() + y.cwiseAbs() * rad;
  const double rho = spread.rowwise().sum().maxCoeff();
  if (!(rho < 1) || !spread.allFinite()) return INFINITY;
  return ((y * column_mid).cwiseAbs() + y.cwiseAbs() * column_rad).maxCoeff() / (1 - rho);
}

// The variable over which the curve in a cell is a graph with |dy/dx_k| <= 2 (the least steep one), or -1. `M` is
// the number of equations when known at compile time (fixed-size matrices: closed-form inverses, no heap).
template <int M>
int flattest_graph_axis(const Cell& cell, int n, int m, const solverk::Range* jac) {
  using Matrix = Eigen::Matrix<double, M, M, 0, M == Eigen::Dynamic ? kMaxVariables : M, M == Eigen::Dynamic ? kMaxVariables : M>;
  using Vector = Eigen::Matrix<double, M, 1, 0, M == Eigen::Dynamic ? kMaxVariables : M, 1>;
  Matrix mid(m, m), rad(m, m);
  Vector column_mid(m), column_rad(m);
  int axis = -1;
  double flattest = 2.0;
  for (int skip = 0; skip < n; ++skip) {
    for (int i = 0; i < m; ++i)
      for (int k = 0, c = 0; k < n; ++k) {
        const solverk::Range r = jac[i * n + k];
        const double w = cell.hi[k] - cell.lo[k];  // local derivatives to the system's box units
        if (k == skip) {
          column_mid(i) = 0.5 * (r.lo + r.hi) / w;
          column_rad(i) = 0.5 * (r.hi - r.lo) / w;
          continue;
        }
        mid(i, c) = 0.5 * (r.lo + r.hi) / w;
        rad(i, c) = 0.5 * (r.hi - r.lo) / w;
        ++c;
      }
    const double slope = graph_slope_bound(mid, rad, column_mid, column_rad);
    if (slope <= flattest) flattest = slope, axis = skip;
  }
  return axis;
}

// A curve cell (variables - 1 equations) where F(x_k, y) = 0 is one-to-one in y over the whole cell holds at most
// one point of the curve per value of x_k: the curve there is a graph over x_k and needs no more subdivision. The
// axis taken is the one whose graph is least steep, and only if |dy/dx_k| <= 2 over the cell, so that samples at the
// global grid x_k = j * step in the cell ([lo, hi), closed at the box's end) lie at most two steps apart in every
// variable, also across cell faces. Each sample is Newton on the square slice system in y, warm-started from the
// previous slice; a slice where Newton fails is settled by the square solver (it proves it empty or finds its root;
// if it cannot within its node budget, the cell is not sampled here but split like any other).
bool sample_curve_cell(const System& sys, const Cell& cell, int m, const solverk::Range* jac, double step, double scale,
                       const SolverOptions& o, std::vector<Root>& found) {
  const int n = sys.n;
  const int axis = m == 1   ? flattest_graph_axis<1>(cell, n, m, jac)
                   : m == 2 ? flattest_graph_axis<2>(cell, n, m, jac)
                   : m == 3 ? flattest_graph_axis<3>(cell, n, m, jac)
                            : flattest_graph_axis<Eigen::Dynamic>(cell, n, m, jac);
  if (axis < 0) return false;
  // Only the part of the axis where every equation can vanish holds the curve; slices outside it are empty
  // (a margin covers the clip's rounding).
  double clip0 = 0, clip1 = 1;
  for (int i = 0; i < m; ++i)
    if (!clip_zero_range(cell.f[std::size_t(i)], axis, clip0, clip1)) return true;
  clip0 -= 1e-9, clip1 += 1e-9;
  std::vector<BernsteinPoly> slice(static_cast<std::size_t>(m));
  const System slice_system{slice, m};
  const std::vector<double> unit_lo(static_cast<std::size_t>(m), 0.0), unit_hi(static_cast<std::size_t>(m), 1.0);
  const double lo = cell.lo[axis], hi = cell.hi[axis], width = hi - lo;
  bool gave_up = false;  // a slice the square solver could not settle within its node budget
  double residual = 0;  // the last accepted sample's
  // The curve's point at x_k = g, into `local` (the slice's coordinates in the cell) and `x` (the system's box):
  // Newton from `warm` when given, else (or when it fails) a depth-first square subdivision of the slice.
  auto solve_slice = [&](double g, const std::vector<double>* warm, std::vector<double>& local, std::vector<double>& x) {
    for (int i = 0; i < m; ++i) fix_variable(cell.f[std::size_t(i)], axis, (g - lo) / width, slice[std::size_t(i)]);
    auto accept = [&](const std::vector<double>& y) {
      for (int k = 0, c = 0; k < n; ++k) x[k] = k == axis ? g : cell.lo[k] + y[std::size_t(c++)] * (cell.hi[k] - cell.lo[k]);
      residual = sys.residual(x);
      if (!(residual <= 1e-12 * std::max(1.0, scale))) return false;
      local = y;
      return true;
    };
    std::vector<double> guess = warm ? *warm : local;
    if (warm && newton(slice_system, guess, unit_lo, unit_hi, o.newton_tolerance, 30) && accept(guess)) return true;
    for (int i = 0; i < m; ++i) {  // some equation keeps one sign over the slice: empty
      const Interval r = coef_range(slice[std::size_t(i)]);
      if (r.lo > 0 || r.hi < 0) return false;
    }
    std::vector<Cell> stack{{unit_lo, unit_hi, slice}};
    std::vector<Root> roots;
    std::vector<std::pair<std::vector<double>, std::vector<double>>> tiny;
    int nodes = 0;
    for (; !stack.empty() && roots.empty() && tiny.empty() && nodes < 4096; ++nodes) {
      Cell c = std::move(stack.back());
      stack.pop_back();
      process_cell(slice_system, c, m, true, 1e-9, scale, o, {}, roots, tiny, [&](Cell&& child) { stack.push_back(std::move(child)); });
    }
    gave_up = gave_up || (nodes == 4096 && roots.empty() && tiny.empty() && !stack.empty());
    if (!roots.empty() && accept(roots[0].x)) return true;
    for (const auto& [clo, chi] : tiny) {  // a root on the slice's edge, not proved: Newton from the tiny cell
      for (int c = 0; c < m; ++c) guess[std::size_t(c)] = 0.5 * (clo[std::size_t(c)] + chi[std::size_t(c)]);
      if (newton(slice_system, guess, unit_lo, unit_hi, o.newton_tolerance, 30) && accept(guess)) return true;
    }
    return false;
  };
  std::vector<Root> samples;  // kept only if every slice was settled; else the cell is split as any other
  std::vector<double> y(static_cast<std::size_t>(m), 0.5), x(static_cast<std::size_t>(n)), y_prev, y_guess;
  int run = 0;  // consecutive slices with a point
  for (double j = std::ceil(lo / step);; ++j) {
    const double g = j * step;
    if (g < lo) continue;
    if (!(g < hi || (hi >= 1.0 && g <= 1.0))) break;
    if ((g - lo) / width < clip0 || (g - lo) / width > clip1) {
      run = 0;
      continue;
    }
    y_guess = y;  // the last point, extrapolated along the curve when the one before is known
    if (run >= 2)
      for (int c = 0; c < m; ++c) y_guess[std::size_t(c)] = std::clamp(2 * y[std::size_t(c)] - y_prev[std::size_t(c)], 0.0, 1.0);
    y_prev = y;
    if (!solve_slice(g, run > 0 ? &y_guess : nullptr, y, x)) {
      if (gave_up) return false;
      run = 0;
      continue;
    }
    ++run;
    samples.push_back({x, residual, true, 1});
  }
  for (auto& sample : samples) found.push_back(std::move(sample));
  return true;
}

// One cell: excluded, proved (its root refined and kept), kept at the tolerance, or split into two children. The
// cell is consumed (its storage passes to a child or a candidate).
template <class EmitChild>
void process_cell(const System& sys, Cell& cell, int m, bool square, double tolerance, double scale, const SolverOptions& o,
                  const std::vector<BernsteinPoly>& positive, std::vector<Root>& found,
                  std::vector<std::pair<std::vector<double>, std::vector<double>>>& unresolved, EmitChild&& emit_child) {
  // A cell that ends here leaves its storage to a later right child on this thread (a split needs one new cell,
  // and most cells end without splitting): copies into it reuse the vectors' capacity instead of allocating.
  thread_local std::vector<Cell> spares;
  bool split = false;
  struct Recycle {
    Cell& cell;
    const bool& split;
    ~Recycle() {
      if (!split && spares.size() < 64) spares.push_back(std::move(cell));
    }
  } recycle{cell, split};
  const int n = sys.n;
  bool excluded = false;
  Interval eq_range[kMaxVariables];  // the equations' coefficient ranges, kept for Krawczyk's rounding bound
  for (std::size_t i = 0; i < cell.f.size() && !excluded; ++i) {
    const Interval r = coef_range(cell.f[i]);
    if (int(i) < m) eq_range[i] = r;
    excluded = int(i) < m ? (r.lo > 0 || r.hi < 0) : !(r.hi > 0);  // an equation keeps one sign; an inequality fails everywhere
  }
  if (excluded) return;
  // Domain reduction, for curves too: the set where every equation vanishes lies in each one's clipped box.
  const Clip clip = clip_cell(cell, m, n);
  if (clip == Clip::Empty) return;
  if (clip == Clip::Shrunk)
    for (int i = 0; i < m; ++i) eq_range[i] = coef_range(cell.f[std::size_t(i)]);
  const BernsteinPoly* eqs = cell.f.data();
  double width = 0;
  for (int k = 0; k < n; ++k) width = std::max(width, cell.hi[k] - cell.lo[k]);
  solverk::Range jac[36];  // local derivative ranges, row = equation
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < n; ++k) jac[i * n + k] = solverk::derivative_range(eqs[i].coef.data(), int(eqs[i].coef.size()), eqs[i].degree[k], inner_size(eqs[i], k));
  if (square) {
    double f_mid[6], f_err[6];
    const double half[6] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    for (int i = 0; i < m; ++i) {
      f_mid[i] = eqs[i].evaluate(half);
      const Interval r = eq_range[i];
      int total = 0;
      for (int d : eqs[i].degree) total += d;
      f_err[i] = solverk::evaluation_error(std::max(std::abs(r.lo), std::abs(r.hi)), total);
    }
    const solverk::CellTest test = solverk::krawczyk_test(n, jac, f_mid, f_err);
    if (test == solverk::CellTest::Empty) return;
    if (test == solverk::CellTest::Unique) {
      std::vector<double> x(static_cast<std::size_t>(n));
      for (int k = 0; k < n; ++k) x[k] = 0.5 * (cell.lo[k] + cell.hi[k]);
      if (newton(sys, x, cell.lo, cell.hi, o.newton_tolerance, 30)) {
        const double res = sys.residual(x);
        if (res <= 1e-12 * std::max(1.0, scale)) {
          if (satisfies_all(positive, x)) found.push_back({x, res, true, 1});
          return;  // the only root of the cell
        }
      }
    }
  }
  if (!square && m == n - 1 && sample_curve_cell(sys, cell, m, jac, 0.5 * tolerance, scale, o, found)) return;
  if (width < tolerance) {
    unresolved.emplace_back(std::move(cell.lo), std::move(cell.hi));
    return;
  }
  // Split along the axis where the coefficients vary most, at its midpoint (a variable no equation depends on
  // is split by width alone).
  int axis = 0;
  double best = -1;
  for (int k = 0; k < n; ++k) {
    if (cell.hi[k] - cell.lo[k] < 0.5 * tolerance) continue;
    double var = 0;
    for (int i = 0; i < m; ++i) var = std::max(var, std::max(std::abs(jac[i * n + k].lo), std::abs(jac[i * n + k].hi)));
    if (!square) var = var * (cell.hi[k] - cell.lo[k]) + 1e-300 * (cell.hi[k] - cell.lo[k]);
    if (var > best) best = var, axis = k;
  }
  const double mid = cell.lo[axis] + solverk::kSplitAt * (cell.hi[axis] - cell.lo[axis]);
  // The cell becomes its left child in place (de Casteljau reads each line before writing it); only the right
  // child is new storage.
  Cell right;
  if (spares.empty()) {
    right = cell;
  } else {
    right = std::move(spares.back());
    spares.pop_back();
    right.lo = cell.lo, right.hi = cell.hi, right.f = cell.f;
  }
  split = true;
  right.lo[axis] = mid;
  cell.hi[axis] = mid;
  for (std::size_t i = 0; i < cell.f.size(); ++i) {
    BernsteinPoly& f = cell.f[i];
    solverk::split_at(f.coef.data(), f.coef.data(), right.f[i].coef.data(), int(f.coef.size()), f.degree[axis], inner_size(f, axis),
                      solverk::kSplitAt);
  }
  emit_child(std::move(cell));
  emit_child(std::move(right));
}

// Level by level: every cell of a level is processed in parallel into per-thread children, roots and candidates.
// A square system (as many equations as variables) gets the single-root test and Newton; an under-determined one
// is refined to the tolerance (its cells cover the solution set).
Subdivision subdivide(const System& sys, const std::vector<BernsteinPoly>& equations, const std::vector<BernsteinPoly>& positive,
                      const SolverOptions& o, bool square) {
  const int n = sys.n, m = int(equations.size());
  Subdivision out;
  std::vector<Cell> frontier;
  {
    std::vector<BernsteinPoly> all = equations;  // equations first, then the inequalities, restricted together
    all.insert(all.end(), positive.begin(), positive.end());
    frontier.push_back({std::vector<double>(std::size_t(n), 0.0), std::vector<double>(std::size_t(n), 1.0), all});
  }
  double tolerance = o.tolerance;
  double scale = 0;
  for (const auto& e : equations) scale = std::max(scale, std::abs(coef_range(e).lo) + std::abs(coef_range(e).hi));
  const auto t0 = std::chrono::steady_clock::now();
  const int threads = cpu_thread_count(o.threads);
  // Per-thread lists, kept from level to level (their storage is reused).
  std::vector<std::vector<Cell>> children(static_cast<std::size_t>(threads));
  std::vector<std::vector<Root>> found(static_cast<std::size_t>(threads));
  std::vector<std::vector<std::pair<std::vector<double>, std::vector<double>>>> unresolved(static_cast<std::size_t>(threads));
  int level = 0;
  while (!frontier.empty()) {
    if (out.nodes + std::int64_t(frontier.size()) > o.max_nodes) {
      out.status = "limit reached: " + std::to_string(o.max_nodes) + " cells (partial result)";
      break;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > o.max_seconds) {
      out.status = time_limit_status(o.max_seconds);
      break;
    }
    if (o.stop && o.stop()) {
      out.status = "interrupted (partial result)";
      break;
    }
    if (o.progress) o.progress(level, std::int64_t(frontier.size()));
    ++level;
    out.nodes += std::int64_t(frontier.size());
    // A solution curve or surface doubles the level's cells at every split: past this many, the level's cells are
    // taken as they are (a region at this resolution) instead of refining them to the tolerance.
    if (square && frontier.size() > 100000) {
      double width = 0;
      for (const auto& c : frontier)
        for (int k = 0; k < n; ++k) width = std::max(width, c.hi[k] - c.lo[k]);
      tolerance = std::max(tolerance, 1.01 * width);
    }
    for (auto& list : children) list.clear();
    const double level_tolerance = tolerance;
    // A thread team costs about as much as a few dozen cells: small levels (the first ones, short traversals) run
    // on the calling thread.
    core::RegionErrors errors_0;
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads) if (threads > 1 && frontier.size() >= 32)
    for (std::int64_t c = 0; c < std::int64_t(frontier.size()); ++c) {
      errors_0.capture([&] {
        const int tid = omp_get_thread_num();
        process_cell(sys, frontier[std::size_t(c)], m, square, level_tolerance, scale, o, positive, found[tid], unresolved[tid],
                     [&](Cell&& child) { children[tid].push_back(std::move(child)); });
      });
    }
    errors_0.rethrow();
    frontier.clear();
    bool one_list = true;  // a level run on one thread: its children list becomes the frontier as it is
    for (int t = 1; t < threads; ++t) one_list = one_list && children[t].empty();
    if (one_list) frontier.swap(children[0]);
    for (int t = 0; t < threads; ++t) {
      if (!one_list)
        for (auto& c : children[t]) frontier.push_back(std::move(c));
      for (auto& r : found[t]) out.proved.push_back(std::move(r));
      for (auto& u : unresolved[t]) out.candidates.push_back(std::move(u));
      found[t].clear();
      unresolved[t].clear();
    }
    // A solution curve would fill the levels with cells of the tolerance's size: stop refining early then.
    if (square && out.candidates.size() > 20000 && tolerance < 1e-4) tolerance = 1e-4;
  }
  out.tolerance = tolerance;
  return out;
}

// Park et al.'s CPU scheme: worker threads share one bounded ring of nodes and claim and add nodes through atomic
// indices, with no lock (the ring is Vyukov's bounded multi-producer multi-consumer queue). Nodes of every system
// of a batch share the ring; a worker tests its node and adds the children, keeping them itself when the ring is
// full. Depth and breadth mix freely, so there is no level barrier.
class NodeRing {
 public:
  explicit NodeRing(std::size_t capacity) : slots_(capacity), mask_(capacity - 1) {
    for (std::size_t i = 0; i < capacity; ++i) slots_[i].seq.store(i, std::memory_order_relaxed);
  }
  bool push(void* item) {
    std::size_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Slot& s = slots_[pos & mask_];
      const std::size_t seq = s.seq.load(std::memory_order_acquire);
      const std::intptr_t diff = std::intptr_t(seq) - std::intptr_t(pos);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          s.item = item;
          s.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // full
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }
  bool pop(void*& item) {
    std::size_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      Slot& s = slots_[pos & mask_];
      const std::size_t seq = s.seq.load(std::memory_order_acquire);
      const std::intptr_t diff = std::intptr_t(seq) - std::intptr_t(pos + 1);
      if (diff == 0) {
        if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          item = s.item;
          s.seq.store(pos + mask_ + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // empty
      } else {
        pos = head_.load(std::memory_order_relaxed);
      }
    }
  }

  // Items in the ring now, about (other threads move the ends while it is read).
  std::size_t approximate_size() const {
    const std::size_t tail = tail_.load(std::memory_order_relaxed), head = head_.load(std::memory_order_relaxed);
    return tail > head ? tail - head : 0;
  }

 private:
  struct Slot {
    std::atomic<std::size_t> seq{0};
    void* item = nullptr;
  };
  std::vector<Slot> slots_;
  std::size_t mask_;
  alignas(64) std::atomic<std::size_t> head_{0};
  alignas(64) std::atomic<std::size_t> tail_{0};
};

std::vector<Subdivision> subdivide_tasks(const std::vector<System>& systems, const std::vector<std::vector<BernsteinPoly>>& equations,
                                         const std::vector<std::vector<BernsteinPoly>>& positive, const SolverOptions& o, bool square) {
  static const std::vector<BernsteinPoly> none;
  auto ineq = [&](std::size_t i) -> const std::vector<BernsteinPoly>& { return positive.empty() ? none : positive[i]; };
  const std::size_t count = systems.size();
  std::vector<Subdivision> out(count);
  struct Node {
    Cell cell;
    std::size_t system;
  };
  // Roots enter the ring as their system's index (an odd word; nodes are even pointers). The thread that takes one
  // copies the system into its first cell and measures its scale, so that set-up is spread over the threads.
  std::vector<double> scale(count, 0.0);
  auto make_root = [&](std::size_t i) {
    for (const auto& e : equations[i]) scale[i] = std::max(scale[i], std::abs(coef_range(e).lo) + std::abs(coef_range(e).hi));
    const int n = systems[i].n;
    std::vector<BernsteinPoly> all = equations[i];
    all.insert(all.end(), ineq(i).begin(), ineq(i).end());
    return Node{{std::vector<double>(std::size_t(n), 0.0), std::vector<double>(std::size_t(n), 1.0), std::move(all)}, i};
  };
  auto root_item = [](std::size_t i) { return reinterpret_cast<void*>((std::uintptr_t(i) << 1) | 1); };
  // Room for every root and a few hundred nodes per thread (a full ring only makes workers keep children
  // themselves); tiny batches must not pay for initialising a large ring.
  std::size_t capacity = 1024;
  while (capacity < (std::size_t(1) << 16) && capacity < count + 256 * std::size_t(cpu_thread_count(o.threads)))
    capacity <<= 1;
  NodeRing ring(capacity);
  // pending: nodes handed out through the ring (or as the batch's roots) whose subtrees are not finished. A thread
  // works through a taken node's subtree on its own stack, sharing children through the ring only while the ring
  // runs low, and settles its taken nodes when its stack empties: no shared counter per node.
  std::atomic<std::int64_t> pending{std::int64_t(count)}, nodes{0}, candidates{0};
  std::atomic<int> stop{0};  // 1: node limit, 2: time limit, 3: stopped by the caller, 4: a failure
  std::atomic<double> tolerance{o.tolerance};
  std::vector<std::size_t> overflow;  // roots that did not fit in the ring at the start
  for (std::size_t i = 0; i < count; ++i)
    if (!ring.push(root_item(i))) overflow.push_back(i);
  const auto t0 = std::chrono::steady_clock::now();
  const int threads = cpu_thread_count(o.threads);
  std::mutex merge;
  core::RegionErrors errors;
#pragma omp parallel num_threads(threads) if (count > 0)
  {
    std::vector<std::vector<Root>> found(count);
    std::vector<std::vector<std::pair<std::vector<double>, std::vector<double>>>> unresolved(count);
    std::vector<Node> local;
    std::vector<std::int64_t> visited(count, 0);  // cells per system
    std::int64_t taken = 0, seen_here = 0, emitted = 0;  // nodes taken from the ring (or the roots' overflow); nodes processed
#pragma omp critical(parasurf_solver_overflow)
    {
      // The roots that did not fit are shared out at the start.
      while (!overflow.empty() && local.size() < 64) {
        local.push_back(make_root(overflow.back()));
        overflow.pop_back();
        ++taken;
      }
    }
    for (;;) {
      Node node;
      if (!local.empty()) {
        node = std::move(local.back());
        local.pop_back();
      } else {
        if (taken > 0) pending -= taken, taken = 0;  // this thread's share of the work is done
        void* item = nullptr;
        if (!ring.pop(item)) {
          if (pending.load() == 0) break;
          std::this_thread::yield();
          continue;
        }
        if (reinterpret_cast<std::uintptr_t>(item) & 1) {
          node = make_root(reinterpret_cast<std::uintptr_t>(item) >> 1);
        } else {
          node = std::move(*static_cast<Node*>(item));
          delete static_cast<Node*>(item);
        }
        ++taken;
      }
      // The node limit is counted every 64 nodes (approximate by that much per thread); the clock is read at every
      // node, as one node of a high-degree system can take milliseconds.
      if ((++seen_here & 63) == 0) {
        if (nodes.fetch_add(64) + 64 > o.max_nodes) stop = 1;
        if (o.stop && o.stop()) stop = 3;
      }
      if (stop.load(std::memory_order_relaxed) == 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > o.max_seconds)
        stop = 2;
      if (stop.load(std::memory_order_relaxed)) continue;  // drain without work
      const std::size_t sys = node.system;
      ++visited[sys];
      const int m = int(equations[sys].size());
      double tol = tolerance.load(std::memory_order_relaxed);
      // A continuum keeps the ring full: past 100,000 waiting nodes, cells are taken at their size.
      if (square && pending.load(std::memory_order_relaxed) + std::int64_t(local.size()) > 100000) {
        double width = 0;
        for (int k = 0; k < systems[sys].n; ++k) width = std::max(width, node.cell.hi[std::size_t(k)] - node.cell.lo[std::size_t(k)]);
        tol = std::max(tol, 1.01 * width);
      }
      const std::size_t before = unresolved[sys].size();
      // Children stay with this thread (depth first, their coefficients still in its cache) while the ring holds
      // enough work for idle threads; otherwise they are shared through it.
      // A failure (out of memory) ends the traversal: the other threads drain the ring without work, then it is
      // rethrown.
      errors.capture([&] {
        process_cell(systems[sys], node.cell, m, square, tol, scale[sys], o, ineq(sys), found[sys], unresolved[sys], [&](Cell&& child) {
          // The ring's ends are written by every thread's pops and pushes: read them for every 8th child only, or
          // while this thread has little work of its own anyway.
          if (((++emitted & 7) == 0 || local.size() < 4) && ring.approximate_size() < std::size_t(2 * threads)) {
            Node* shared = new Node{std::move(child), sys};
            ++pending;
            if (ring.push(shared)) return;
            --pending;
            child = std::move(shared->cell);
            delete shared;
          }
          local.push_back({std::move(child), sys});
        });
      });
      if (errors.failed()) stop = 4;
      if (square && unresolved[sys].size() > before && ++candidates > 20000 && tol < 1e-4) tolerance = 1e-4;
    }
    nodes += seen_here & 63;
    std::lock_guard<std::mutex> lock(merge);
    for (std::size_t i = 0; i < count; ++i) {
      for (auto& r : found[i]) out[i].proved.push_back(std::move(r));
      for (auto& u : unresolved[i]) out[i].candidates.push_back(std::move(u));
      out[i].nodes += visited[i];
    }
  }
  errors.rethrow();
  const std::string status = stop.load() == 1   ? "limit reached: " + std::to_string(o.max_nodes) + " cells (partial result)"
                             : stop.load() == 2 ? time_limit_status(o.max_seconds)
                             : stop.load() == 3 ? "interrupted (partial result)"
                                                : "complete";
  for (auto& s : out) {
    s.status = status;
    s.tolerance = tolerance.load();
    // Threads deliver in any order: sorted, results do not depend on the schedule.
    std::sort(s.proved.begin(), s.proved.end(), [](const Root& a, const Root& b) { return a.x < b.x; });
  }
  return out;
}

void check_system(const std::vector<BernsteinPoly>& equations, int n, const std::vector<BernsteinPoly>& positive) {
  for (const auto& e : equations) {
    for (int d : e.degree)
      if (d < 0 || d > 63) throw Error(ErrorKind::InvalidArgument, "solver: degree " + std::to_string(d) + " in one variable; 0..63 supported");
    if (e.variables() != n) throw Error(ErrorKind::InvalidArgument, "solver: every equation must be in " + std::to_string(n) + " variables");
    if (e.coef.size() != e.size()) throw Error(ErrorKind::InvalidArgument, "solver: coefficient count does not match the degrees");
    for (double c : e.coef)
      if (!std::isfinite(c)) throw Error(ErrorKind::InvalidArgument, "solver: a coefficient is not finite");
  }
  for (const auto& e : positive) {
    if (e.variables() != n || e.coef.size() != e.size())
      throw Error(ErrorKind::InvalidArgument, "solver: an inequality must be a polynomial in " + std::to_string(n) + " variables");
    for (int d : e.degree)
      if (d < 0 || d > 63) throw Error(ErrorKind::InvalidArgument, "solver: degree " + std::to_string(d) + " in one variable; 0..63 supported");
  }
}

System make_system(const std::vector<BernsteinPoly>& equations, int n) { return System{equations, n}; }

// Every system of the batch through the engine the options ask for; the CUDA engines take systems of one shape at
// a time (grouped here).
std::vector<Subdivision> subdivide_any(const std::vector<System>& systems, const std::vector<std::vector<BernsteinPoly>>& equations,
                                       const std::vector<std::vector<BernsteinPoly>>& positive, const SolverOptions& o, bool square) {
  const std::size_t count = systems.size();
  static const std::vector<BernsteinPoly> none;
  auto ineq = [&](std::size_t i) -> const std::vector<BernsteinPoly>& { return positive.empty() ? none : positive[i]; };
  std::vector<Subdivision> out(count);
  const Device device = resolve_device(o.device);
  if (device == Device::Cpu && o.cpu_scheme == SolverCpuScheme::TaskBuffer) return subdivide_tasks(systems, equations, positive, o, square);
  if (device == Device::Cpu) {
    if (count == 1) {
      out[0] = subdivide(systems[0], equations[0], ineq(0), o, square);
      return out;
    }
    SolverOptions one = o;
    one.threads = 1;
    one.progress = nullptr;
    const int threads = cpu_thread_count(o.threads);
    core::RegionErrors errors_s0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (std::int64_t i = 0; i < std::int64_t(count); ++i) {
      errors_s0.capture([&] {
        out[std::size_t(i)] = subdivide(systems[std::size_t(i)], equations[std::size_t(i)], ineq(std::size_t(i)), one, square);
      });
    }
    errors_s0.rethrow();
    return out;
  }
  std::map<std::vector<int>, std::vector<std::size_t>> shapes;
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<int> key{int(equations[i].size())};
    for (const auto* list : {&equations[i], &ineq(i)})
      for (const auto& p : *list) key.insert(key.end(), p.degree.begin(), p.degree.end()), key.push_back(-1);
    shapes[key].push_back(i);
  }
  for (const auto& [key, members] : shapes) {
    std::vector<std::vector<BernsteinPoly>> polys;
    for (std::size_t i : members) {
      polys.push_back(equations[i]);
      polys.back().insert(polys.back().end(), ineq(i).begin(), ineq(i).end());
    }
    std::vector<Subdivision> r = solver::subdivide_cuda(polys, key[0], systems[members[0]].n, square, o, device == Device::Hybrid);
    for (std::size_t j = 0; j < members.size(); ++j) out[members[j]] = std::move(r[j]);
  }
  return out;
}

}  // namespace

namespace {

void check_square(const std::vector<BernsteinPoly>& equations, const SolverOptions& o, const std::vector<BernsteinPoly>& positive) {
  const int n = int(equations.size());
  if (n < 1 || n > 6) throw Error(ErrorKind::InvalidArgument, "solver: " + std::to_string(n) + " equations; 1..6 supported");
  check_system(equations, n, positive);
  if (!(o.tolerance > 0) || o.tolerance > 0.1) throw Error(ErrorKind::InvalidArgument, "solver: tolerance must be in (0, 0.1]");
}

// Roots from a subdivision: cells proved to hold one root are refined by Newton; cells left at the tolerance are
// clustered into tangent roots and solution regions.
SolveResult finish_square(const System& sys, const std::vector<BernsteinPoly>& positive, Subdivision sub, const SolverOptions& o) {
  const int n = sys.n;
  auto satisfies = [&](const std::vector<double>& x) {
    for (const auto& q : positive)
      if (!(q.evaluate(x.data()) > 0)) return false;
    return true;
  };
  SolveResult result;
  auto add_root = [&](Root r) {
    for (const auto& q : result.roots) {
      double d = 0;
      for (int k = 0; k < n; ++k) d = std::max(d, std::abs(q.x[k] - r.x[k]));
      if (d <= 1e-9) return;
    }
    result.roots.push_back(std::move(r));
  };
  result.status = sub.status;
  result.nodes = sub.nodes;
  for (auto& r : sub.proved) add_root(std::move(r));
  auto& candidates = sub.candidates;
  double scale = 0;
  for (const auto& e : sys.eq) scale = std::max(scale, std::abs(coef_range(e).lo) + std::abs(coef_range(e).hi));
  for (const auto& [lo, hi] : sub.unique) {  // cells of the GPU engines proved to hold one root
    std::vector<double> x(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) x[k] = 0.5 * (lo[k] + hi[k]);
    // The root's existence and uniqueness are proved: Newton (kept in the cell) only refines it. Its step test may
    // never pass where the Jacobian is nearly singular (two roots 3.6e-4 apart: the rounding of f, divided by a
    // small derivative, keeps the steps near 1e-14), so a few more steps may settle below 1e-10 instead; the last
    // step then bounds the distance to the root, and the residual must be small too.
    const bool settled = newton(sys, x, lo, hi, o.newton_tolerance, 30) || newton(sys, x, lo, hi, 1e-10, 5);
    if (settled && sys.residual(x) <= 1e-12 * std::max(1.0, scale)) {
      if (satisfies(x)) add_root({x, sys.residual(x), true, 1});
    } else {
      candidates.emplace_back(lo, hi);
    }
  }
  const double tolerance = sub.tolerance;
  // Threads deliver cells in any order: sort them so that the clusters and their centroids are reproducible.
  std::sort(candidates.begin(), candidates.end());
  // Cluster touching candidate cells (union-find); each cluster is one tangent root or one solution region.
  const std::size_t m = candidates.size();
  std::vector<std::size_t> parent(m);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](std::size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  // Cells of one high-order tangency can be separated by excluded cells: bridge gaps up to the spread of a contact
  // of order 3 (about tolerance^(1/3)), far below the distance at which two roots would be told apart anyway.
  const double slack = std::max(4 * tolerance, 0.1 * std::cbrt(tolerance));
  auto touch = [&](std::size_t a, std::size_t b) {
    const auto& ca = candidates[a];
    const auto& cb = candidates[b];
    for (int k = 0; k < n; ++k)
      if (!(cb.first[k] <= ca.second[k] + slack && ca.first[k] <= cb.second[k] + slack)) return false;
    return true;
  };
  // Touching cells through a grid of spacing `slack` on the cells' lower corners. Cells whose corners share a grid
  // cell always touch, so each grid cell is one set at once; a cell then looks for one touching member in each grid
  // cell within its reach. (Comparing pairs along a sweep took seconds for a solution region of tens of
  // thousands of cells.)
  const double spacing = slack;
  if (!(spacing > 1e-150)) {  // no slack to grid by (a zero tolerance): every pair
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = i + 1; j < m; ++j)
        if (find(i) != find(j) && touch(i, j)) parent[find(i)] = find(j);
  }
  auto grid_of = [&](double x) { return std::int64_t(std::floor(x / spacing)); };
  struct GridHash {
    std::size_t operator()(const std::vector<std::int64_t>& g) const {
      std::uint64_t h = 0x9e3779b97f4a7c15ull;
      for (std::int64_t v : g) h = (h ^ std::uint64_t(v)) * 0xbf58476d1ce4e5b9ull, h ^= h >> 29;
      return std::size_t(h);
    }
  };
  std::unordered_map<std::vector<std::int64_t>, std::vector<std::size_t>, GridHash> grid;  // exact grid cells
  std::vector<std::int64_t> g(static_cast<std::size_t>(n));
  const std::size_t gridded = spacing > 1e-150 ? m : 0;
  for (std::size_t i = 0; i < gridded; ++i) {
    for (int k = 0; k < n; ++k) g[std::size_t(k)] = grid_of(candidates[i].first[k]);
    auto& members = grid[g];
    if (!members.empty()) parent[find(i)] = find(members.front());
    members.push_back(i);
  }
  std::vector<std::int64_t> lo_g(static_cast<std::size_t>(n)), hi_g(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < gridded; ++i) {
    double reach = 1;
    for (int k = 0; k < n; ++k) {
      lo_g[std::size_t(k)] = grid_of(candidates[i].first[k] - slack);
      hi_g[std::size_t(k)] = grid_of(candidates[i].second[k] + slack);
      reach *= double(hi_g[std::size_t(k)] - lo_g[std::size_t(k)] + 1);
    }
    if (reach > 4096) {  // a wide cell: against every cell
      for (std::size_t j = 0; j < m; ++j)
        if (find(i) != find(j) && touch(i, j)) parent[find(i)] = find(j);
      continue;
    }
    g = lo_g;
    while (true) {
      const auto it = grid.find(g);
      if (it != grid.end() && find(i) != find(it->second.front()))
        for (std::size_t j : it->second)
          if (touch(i, j)) {
            parent[find(i)] = find(j);
            break;
          }
      int k = 0;
      while (k < n && ++g[std::size_t(k)] > hi_g[std::size_t(k)]) g[std::size_t(k)] = lo_g[std::size_t(k)], ++k;
      if (k == n) break;
    }
  }
  std::vector<std::vector<std::size_t>> clusters;
  {
    std::vector<long> index(m, -1);
    for (std::size_t i = 0; i < m; ++i) {
      const std::size_t r = find(i);
      if (index[r] < 0) index[r] = long(clusters.size()), clusters.emplace_back();
      clusters[std::size_t(index[r])].push_back(i);
    }
  }
  for (const auto& cl : clusters) {
    std::vector<double> lo(std::size_t(n), 1e300), hi(std::size_t(n), -1e300);
    for (auto i : cl)
      for (int k = 0; k < n; ++k) lo[k] = std::min(lo[k], candidates[i].first[k]), hi[k] = std::max(hi[k], candidates[i].second[k]);
    double extent = 0;
    for (int k = 0; k < n; ++k) extent = std::max(extent, hi[k] - lo[k]);
    // A solution curve spans the box; a tangent root's cluster shrinks with the tolerance (as tol^(1/k) for contact
    // of order k), so a cluster longer than 1% of the box is reported as a region (whatever proved roots its box
    // holds: a curve that overlaps another and also crosses it elsewhere has both).
    if (extent > 1e-2) {
      result.regions.push_back({lo, hi, std::int64_t(cl.size())});
      continue;
    }
    // A proved root inside a small cluster's box already accounts for it.
    bool known = false;
    for (const auto& r : result.roots) {
      bool inside = true;
      for (int k = 0; k < n; ++k) inside = inside && r.x[k] >= lo[k] - 1e-9 && r.x[k] <= hi[k] + 1e-9;
      known = known || inside;
    }
    if (known) continue;
    // The centroid of the cluster's cells: the unresolved set lies about symmetrically around a tangent root (its
    // best-residual cell does not, for contact of order 3 and more), then least-squares Newton inside the box.
    std::vector<double> x(static_cast<std::size_t>(n), 0.0);
    for (auto i : cl)
      for (int k = 0; k < n; ++k) x[k] += 0.5 * (candidates[i].first[k] + candidates[i].second[k]) / double(cl.size());
    const std::vector<double> centroid = x;
    const double centroid_res = sys.residual(x);
    newton(sys, x, lo, hi, o.newton_tolerance, 100);
    double res = sys.residual(x);
    if (!(res < 1e-3 * centroid_res)) x = centroid, res = centroid_res;  // Newton only counts when it clearly helped
    if (satisfies(x)) add_root({x, res, false, 2});
  }
  std::sort(result.roots.begin(), result.roots.end(), [](const Root& a, const Root& b) { return a.x < b.x; });
  return result;
}

}  // namespace

// ---------------------------------------------------------------- teams of processes
namespace {

// Results travel between processes as plain bytes: sizes, then contents, in the order of the struct.
struct ByteWriter {
  std::string bytes;
  template <class T> void pod(const T& v) { bytes.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void doubles(const std::vector<double>& v) {
    pod(std::uint64_t(v.size()));
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  }
  void text(const std::string& t) {
    pod(std::uint64_t(t.size()));
    bytes += t;
  }
  void result(const SolveResult& r) {
    text(r.status);
    pod(r.nodes);
    pod(std::uint64_t(r.roots.size()));
    for (const auto& x : r.roots) doubles(x.x), pod(x.residual), pod(x.proved_single), pod(x.multiplicity_hint);
    pod(std::uint64_t(r.regions.size()));
    for (const auto& g : r.regions) doubles(g.lo), doubles(g.hi), pod(g.cells);
  }
  void result(const SolutionSetResult& r) {
    text(r.status);
    pod(r.nodes);
    pod(std::uint64_t(r.samples.size()));
    for (const auto& x : r.samples) doubles(x.x), pod(x.residual), doubles(x.tangent);
  }
};

struct ByteReader {
  const std::string& bytes;
  std::size_t at = 0;
  void take(void* to, std::size_t n) {
    if (n > bytes.size() - at) throw Error(ErrorKind::Io, "solver team: a member's results are truncated");
    std::memcpy(to, bytes.data() + at, n);
    at += n;
  }
  template <class T> T pod() {
    T v{};
    take(&v, sizeof v);
    return v;
  }
  std::size_t count() {
    const auto n = pod<std::uint64_t>();
    if (n > bytes.size() - at) throw Error(ErrorKind::Io, "solver team: a member's results are malformed");
    return std::size_t(n);
  }
  std::vector<double> doubles() {
    std::vector<double> v(count());
    take(v.data(), v.size() * sizeof(double));
    return v;
  }
  std::string text() {
    std::string t(count(), '\0');
    take(t.data(), t.size());
    return t;
  }
  void result(SolveResult& r) {
    r.status = text();
    r.nodes = pod<std::int64_t>();
    r.roots.resize(count());
    for (auto& x : r.roots) {
      x.x = doubles();
      x.residual = pod<double>();
      x.proved_single = pod<bool>();
      x.multiplicity_hint = pod<int>();
    }
    r.regions.resize(count());
    for (auto& g : r.regions) {
      g.lo = doubles();
      g.hi = doubles();
      g.cells = pod<std::int64_t>();
    }
  }
  void result(SolutionSetResult& r) {
    r.status = text();
    r.nodes = pod<std::int64_t>();
    r.samples.resize(count());
    for (auto& x : r.samples) {
      x.x = doubles();
      x.residual = pod<double>();
      x.tangent = doubles();
    }
  }
};

bool team_batch(const SolverOptions& o, std::size_t count) { return o.team && o.team->members > 1 && count > 1; }

// Member k solves systems k, k + members, ... (alone); every member then holds every result in batch order.
template <class Result>
std::vector<Result> solve_as_team(std::size_t count, const SolverOptions& o,
                                  const std::function<std::vector<Result>(const std::vector<std::size_t>&, const SolverOptions&)>& solve) {
  const SolverTeam& team = *o.team;
  const auto members = std::size_t(team.members);
  std::vector<std::size_t> mine;
  for (std::size_t i = std::size_t(team.member); i < count; i += members) mine.push_back(i);
  SolverOptions alone = o;
  alone.team = nullptr;
  ByteWriter w;
  if (!mine.empty())
    for (const Result& r : solve(mine, alone)) w.result(r);
  const std::vector<std::string> all = team.all_gather(w.bytes);
  if (all.size() != members) throw Error(ErrorKind::Io, "solver team: results from " + std::to_string(all.size()) + " members, expected " + std::to_string(members));
  std::vector<Result> out(count);
  for (std::size_t k = 0; k < members; ++k) {
    ByteReader r{all[k]};
    for (std::size_t i = k; i < count; i += members) r.result(out[i]);
  }
  return out;
}

template <class T> std::vector<T> pick(const std::vector<T>& from, const std::vector<std::size_t>& which) {
  std::vector<T> out;
  if (from.empty()) return out;
  for (std::size_t i : which) out.push_back(from[i]);
  return out;
}

}  // namespace

SolveResult solve_system(const std::vector<BernsteinPoly>& equations, const SolverOptions& o,
                         const std::vector<BernsteinPoly>& positive) {
  return solve_systems({equations}, o, {positive})[0];
}

std::vector<SolveResult> solve_systems(const std::vector<std::vector<BernsteinPoly>>& equations, const SolverOptions& o,
                                       const std::vector<std::vector<BernsteinPoly>>& positive) {
  const std::size_t count = equations.size();
  if (!positive.empty() && positive.size() != count)
    throw Error(ErrorKind::InvalidArgument, "solver: one list of inequalities per system (or none at all)");
  static const std::vector<BernsteinPoly> none;
  auto ineq = [&](std::size_t i) -> const std::vector<BernsteinPoly>& { return positive.empty() ? none : positive[i]; };
  for (std::size_t i = 0; i < count; ++i) check_square(equations[i], o, ineq(i));
  if (count == 0) return {};
  if (team_batch(o, count))
    return solve_as_team<SolveResult>(count, o, [&](const std::vector<std::size_t>& mine, const SolverOptions& alone) {
      return solve_systems(pick(equations, mine), alone, pick(positive, mine));
    });
  std::vector<System> systems;
  for (std::size_t i = 0; i < count; ++i) systems.push_back(make_system(equations[i], int(equations[i].size())));
  std::vector<Subdivision> subs = subdivide_any(systems, equations, positive, o, true);
  std::vector<SolveResult> out(count);
  const int threads = cpu_thread_count(o.threads);
  core::RegionErrors errors_s1;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && count > 1)
  for (std::int64_t i = 0; i < std::int64_t(count); ++i) {
    errors_s1.capture([&] {
      out[std::size_t(i)] = finish_square(systems[std::size_t(i)], ineq(std::size_t(i)), std::move(subs[std::size_t(i)]), o);
    });
  }
  errors_s1.rethrow();
  return out;
}

}  // namespace parasurf

namespace parasurf {

namespace {

void check_set(const std::vector<BernsteinPoly>& equations, int n, double resolution, const std::vector<BernsteinPoly>& positive) {
  const int m = int(equations.size());
  if (n < 2 || n > 6 || m < 1 || m >= n)
    throw Error(ErrorKind::InvalidArgument, "solution sets: " + std::to_string(m) + " equations in " + std::to_string(n) +
                                                " variables; 1 <= equations < variables <= 6 supported");
  check_system(equations, n, positive);
  // Below 1e-6 a solution set of any length has more samples than a run can hold (and a region, without end).
  if (!(resolution >= 1e-6) || resolution > 0.5)
    throw Error(ErrorKind::InvalidArgument, "solution sets: resolution must be in [1e-6, 0.5]");
}

// The unit direction of a curve F = 0 (n - 1 equations in n variables) at x: the Jacobian's null vector, which is
// its generalised cross product (t_k = (-1)^k times the minor without column k); the SVD's null vector where those
// minors all vanish (a singular point).
std::vector<double> curve_tangent(const System& sys, const std::vector<double>& x) {
  const int n = sys.n, m = n - 1;
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, kMaxVariables, kMaxVariables>;
  Matrix jac(m, n);
  sys.evaluate_jacobian(x.data(), jac, static_cast<Eigen::VectorXd*>(nullptr));
  std::vector<double> t(static_cast<std::size_t>(n));
  double norm = 0;
  for (int k = 0; k < n; ++k) {
    Matrix minor(m, m);
    for (int c = 0, j = 0; c < n; ++c)
      if (c != k) minor.col(j++) = jac.col(c);
    t[std::size_t(k)] = (k % 2 ? -1.0 : 1.0) * (m == 0 ? 1.0 : minor.determinant());
    norm += t[std::size_t(k)] * t[std::size_t(k)];
  }
  norm = std::sqrt(norm);
  if (norm > 1e-300 && std::isfinite(norm)) {
    for (double& v : t) v /= norm;
    return t;
  }
  const Eigen::JacobiSVD<Matrix> svd(jac, Eigen::ComputeFullV);
  for (int k = 0; k < n; ++k) t[std::size_t(k)] = svd.matrixV()(k, n - 1);
  return t;
}

SolutionSetResult finish_set(const System& sys, const std::vector<BernsteinPoly>& positive, const Subdivision& sub, const SolverOptions& o,
                             double resolution, int threads, std::chrono::steady_clock::time_point deadline) {
  const std::vector<BernsteinPoly>& equations = sys.eq;
  const int n = sys.n, m = int(equations.size());
  SolutionSetResult out;
  out.status = sub.status;
  out.nodes = sub.nodes;
  double scale = 0;
  for (const auto& e : equations) scale = std::max(scale, std::abs(coef_range(e).lo) + std::abs(coef_range(e).hi));
  const std::size_t cells = sub.candidates.size();
  std::vector<SolutionSample> samples(cells + sub.proved.size());
  std::vector<char> kept(samples.size(), 0);
  // Minimum-norm Newton from each cell's centre lands on the nearest part of the set; the cell keeps the point when
  // it lies within half a cell of it (neighbouring cells then cover the set without gaps).
  // Curve samples already on the set (cells where the curve is a graph over one variable) only get their tangent.
  // The time limit covers this phase too: cells not reached by then are left out of the (partial) result.
  core::RegionErrors errors_1;
  std::atomic<bool> late{false};
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) if (threads > 1 && samples.size() >= 32)
  for (std::int64_t c = 0; c < std::int64_t(samples.size()); ++c) {
    errors_1.capture([&] {
      if (late.load(std::memory_order_relaxed)) return;
      if ((c & 255) == 0 && std::chrono::steady_clock::now() > deadline) {
        late = true;
        return;
      }
      std::vector<double> x(static_cast<std::size_t>(n));
      double res;
      if (std::size_t(c) < cells) {
        const auto& [lo, hi] = sub.candidates[std::size_t(c)];
        std::vector<double> blo(lo), bhi(hi);
        for (int k = 0; k < n; ++k) {
          const double w = hi[k] - lo[k];
          x[k] = 0.5 * (lo[k] + hi[k]);
          blo[k] = std::max(0.0, lo[k] - 0.5 * w);
          bhi[k] = std::min(1.0, hi[k] + 0.5 * w);
        }
        newton(sys, x, blo, bhi, o.newton_tolerance, 12);
        res = sys.residual(x);
      } else {
        const Root& r = sub.proved[std::size_t(c) - cells];
        x = r.x;
        res = r.residual;
      }
      if (!(res <= 1e-11 * std::max(1.0, scale))) return;
      bool ok = true;
      for (const auto& q : positive) ok = ok && q.evaluate(x.data()) > 0;
      if (!ok) return;
      SolutionSample sample{x, res, {}};
      if (m == n - 1) sample.tangent = curve_tangent(sys, x);
      samples[std::size_t(c)] = std::move(sample);
      kept[std::size_t(c)] = 1;
    });
  }
  errors_1.rethrow();
  if (late) out.status = time_limit_status(o.max_seconds);
  // Neighbouring cells often reach the same point: keep one per quarter cell.
  std::vector<std::vector<long long>> keys;
  std::vector<std::size_t> order;
  for (std::size_t c = 0; c < samples.size(); ++c)
    if (kept[c]) order.push_back(c);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return samples[a].x < samples[b].x; });
  // Kept samples are found through a grid: a set of dimension two or more (coincident surfaces) has many samples
  // with the same first coordinate.
  const double merge = 0.25 * resolution;
  solver::PointGrid grid(std::size_t(n), merge);
  for (std::size_t c : order) {
    bool dup = false;
    grid.near(samples[c].x.data(), [&](std::size_t id) {
      if (dup) return;
      double d = 0;
      for (int k = 0; k < n; ++k) d = std::max(d, std::abs(out.samples[id].x[k] - samples[c].x[k]));
      dup = d <= merge;
    });
    if (dup) continue;
    grid.insert(samples[c].x.data(), out.samples.size());
    out.samples.push_back(samples[c]);
  }
  return out;
}

}  // namespace

SolutionSetResult sample_solution_set(const std::vector<BernsteinPoly>& equations, int variables, double resolution,
                                      const SolverOptions& o, const std::vector<BernsteinPoly>& positive) {
  return sample_solution_sets({equations}, variables, resolution, o, {positive})[0];
}

std::vector<SolutionSetResult> sample_solution_sets(const std::vector<std::vector<BernsteinPoly>>& equations, int variables,
                                                    double resolution, const SolverOptions& o,
                                                    const std::vector<std::vector<BernsteinPoly>>& positive) {
  const std::size_t count = equations.size();
  if (!positive.empty() && positive.size() != count)
    throw Error(ErrorKind::InvalidArgument, "solution sets: one list of inequalities per system (or none at all)");
  static const std::vector<BernsteinPoly> none;
  auto ineq = [&](std::size_t i) -> const std::vector<BernsteinPoly>& { return positive.empty() ? none : positive[i]; };
  for (std::size_t i = 0; i < count; ++i) check_set(equations[i], variables, resolution, ineq(i));
  if (count == 0) return {};
  if (team_batch(o, count))
    return solve_as_team<SolutionSetResult>(count, o, [&](const std::vector<std::size_t>& mine, const SolverOptions& alone) {
      return sample_solution_sets(pick(equations, mine), variables, resolution, alone, pick(positive, mine));
    });
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o.max_seconds));
  std::vector<System> systems;
  for (std::size_t i = 0; i < count; ++i) systems.push_back(make_system(equations[i], variables));
  SolverOptions so = o;
  so.tolerance = resolution;
  const std::vector<Subdivision> subs = subdivide_any(systems, equations, positive, so, false);
  std::vector<SolutionSetResult> out(count);
  const int threads = cpu_thread_count(o.threads);
  if (count == 1) {
    out[0] = finish_set(systems[0], ineq(0), subs[0], o, resolution, threads, deadline);
    return out;
  }
  core::RegionErrors errors_s2;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
  for (std::int64_t i = 0; i < std::int64_t(count); ++i) {
    errors_s2.capture([&] {
      out[std::size_t(i)] = finish_set(systems[std::size_t(i)], ineq(std::size_t(i)), subs[std::size_t(i)], o, resolution, 1, deadline);
    });
  }
  errors_s2.rethrow();
  return out;
}


std::vector<std::vector<std::size_t>> link_polylines(const std::vector<std::vector<double>>& points,
                                                     const std::vector<std::vector<double>>& tangents, double spacing, int threads) {
  const std::size_t count = points.size();
  std::vector<std::vector<std::size_t>> lines;
  if (count == 0) return lines;
  const std::size_t n = points[0].size();
  const double reach = 3.0 * spacing;
  solver::PointGrid grid(n, reach);
  std::vector<double> flat(count * n), flat_tangents(count * n);  // contiguous copies: the searches read them often
  for (std::size_t i = 0; i < count; ++i) {
    std::copy(points[i].begin(), points[i].end(), flat.begin() + std::ptrdiff_t(i * n));
    std::copy(tangents[i].begin(), tangents[i].end(), flat_tangents.begin() + std::ptrdiff_t(i * n));
    grid.insert(points[i].data(), i);
  }
  auto point = [&](std::size_t i) { return flat.data() + i * n; };
  auto neighbours = [&](std::size_t i, auto&& visit) { grid.near(point(i), visit); };
  auto distance2 = [&](std::size_t a, std::size_t b) {  // squared: the searches compare without roots
    const double *pa = point(a), *pb = point(b);
    double d = 0;
    for (std::size_t k = 0; k < n; ++k) d += (pa[k] - pb[k]) * (pa[k] - pb[k]);
    return d;
  };
  auto distance = [&](std::size_t a, std::size_t b) { return std::sqrt(distance2(a, b)); };
  const double reach2 = reach * reach;
  // Every point's neighbours within reach, found once in parallel: the walk below only scans these lists.
  std::vector<std::vector<std::size_t>> near(count);
  const int team = threads > 0 ? threads : omp_get_max_threads();
  core::RegionErrors errors_s3;
#pragma omp parallel for schedule(static) num_threads(team) if (team > 1 && count >= 1024)
  for (std::int64_t i = 0; i < std::int64_t(count); ++i) {
    errors_s3.capture([&] {
      neighbours(std::size_t(i), [&](std::size_t j) {
        if (j != std::size_t(i) && distance2(std::size_t(i), j) <= reach2) near[std::size_t(i)].push_back(j);
      });
    });
  }
  errors_s3.rethrow();
  std::vector<char> used(count, 0);
  // The next point along direction `dir` from point i: the nearest unused one ahead within reach.
  auto step = [&](std::size_t i, std::vector<double>& dir) -> long {
    long best = -1;
    double best_d2 = reach2;
    for (std::size_t j : near[i]) {
      if (used[j]) continue;
      const double d2 = distance2(i, j);
      if (d2 > best_d2 || d2 == 0) continue;
      double ahead = 0;
      for (std::size_t k = 0; k < n; ++k) ahead += (point(j)[k] - point(i)[k]) * dir[k];
      if (ahead < 0 || ahead * ahead < 0.09 * d2) continue;  // ahead >= 0.3 d
      best = long(j), best_d2 = d2;
    }
    if (best >= 0) {  // carry the direction on, oriented along the step taken
      const double* t = flat_tangents.data() + std::size_t(best) * n;
      double along = 0;
      for (std::size_t k = 0; k < n; ++k) along += t[k] * (point(std::size_t(best))[k] - point(i)[k]);
      for (std::size_t k = 0; k < n; ++k) dir[k] = along >= 0 ? t[k] : -t[k];
    }
    return best;
  };
  // Start at points with the fewest neighbours first: the ends of open curves.
  std::vector<std::pair<std::size_t, std::size_t>> starts(count);
  for (std::size_t i = 0; i < count; ++i) starts[i] = {near[i].size(), i};
  std::sort(starts.begin(), starts.end());
  for (const auto& [neighbour_count, s] : starts) {
    if (used[s]) continue;
    used[s] = 1;
    std::vector<std::size_t> forward{s}, backward;
    for (int sense : {1, -1}) {
      std::vector<double> dir = tangents[s];
      for (double& v : dir) v *= sense;
      auto& chain = sense > 0 ? forward : backward;
      std::size_t at = s;
      for (long next; (next = step(at, dir)) >= 0;) {
        used[std::size_t(next)] = 1;
        chain.push_back(std::size_t(next));
        at = std::size_t(next);
      }
    }
    std::vector<std::size_t> line(backward.rbegin(), backward.rend());
    line.insert(line.end(), forward.begin(), forward.end());
    if (line.size() > 3 && distance(line.front(), line.back()) <= reach) line.push_back(line.front());  // a closed loop
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace parasurf
