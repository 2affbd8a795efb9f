// Subdivision solver for square systems of tensor-product Bernstein polynomials, after Park, Elber, Kim, Kim, Seong,
// "A hybrid parallel solver for systems of multivariate polynomials using CPUs and GPUs", CAD 43 (2011): a cell is
// discarded when some equation's coefficients share one sign; otherwise it is split by de Casteljau along the axis
// where the coefficients vary most. A cell whose interval Jacobian is regular (preconditioned diagonal dominance)
// holds at most one root, which Newton refines in double; cells that reach the tolerance unresolved (tangent roots,
// solution curves) are clustered, so that each tangent root is reported once and a continuum as a region.
// This file: the CPU engine (cells, clipping, the single-root test, the threads' shared ring of nodes).
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
#include <thread>
#include <unordered_map>

#include "core/region_errors.hpp"
#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"
#include "point_grid.hpp"
#include "solver/bernstein_kernels.hpp"
#include "solver/engine.hpp"
#include "solver/system.hpp"

namespace parasurf::solver {
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
bool clip_hull(const double* lo, const double* hi, int d, double& t0, double& t1) {
  if (d == 0) return lo[0] <= 0 && hi[0] >= 0;  // p does not depend on var
  // The hull meets the axis between the extreme crossings of the segments that join a point at or below zero with
  // one at or above it.
  double a = INFINITY, b = -INFINITY;
  const double step = 1.0 / d;
  // The points at or below zero and those at or above it, listed first: the pairs are then all of one of each.
  double below_v[128], below_t[128], above_v[128], above_t[128];
  int below = 0, above = 0;
  for (int i = 0; i < 2 * (d + 1); ++i) {
    const double v = i & 1 ? hi[i >> 1] : lo[i >> 1], t = (i >> 1) * step;
    if (v <= 0) below_v[below] = v, below_t[below++] = t;
    if (v >= 0) above_v[above] = v, above_t[above++] = t;
  }
  for (int i = 0; i < below; ++i) {
    const double vi = below_v[i], ti = below_t[i];
    for (int j = 0; j < above; ++j) {
      const double span = above_v[j] - vi, tj = above_t[j];
      const double t = span > 0 ? ti + (tj - ti) * (-vi / span) : ti;
      a = std::min(a, t), b = std::max(b, t);
    }
  }
  if (!(a <= b)) return false;
  t0 = std::max(t0, a), t1 = std::min(t1, b);
  return t0 <= t1;
}

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
  return clip_hull(lo, hi, d, t0, t1);
}

// Every variable's coefficient ranges by index (lo[k][i]: the least coefficient whose index along variable k is i),
// as clip_zero_range finds them one variable at a time. From the last variable to the first, each pass reads the
// previous one's extremes over the variables after it, so all of them cost about two passes over the coefficients.
struct Marginals {
  double lo[kMaxVariables][64], hi[kMaxVariables][64];
};
void coef_marginals(const BernsteinPoly& p, Marginals& out) {
  thread_local std::vector<double> lo_buf, hi_buf;
  const int n = p.variables();
  std::size_t size = p.coef.size();
  const double *lo_in = p.coef.data(), *hi_in = p.coef.data();
  for (int k = n - 1; k >= 0; --k) {
    const std::size_t d1 = std::size_t(p.degree[std::size_t(k)] + 1), outer = size / d1;
    double *lo = out.lo[k], *hi = out.hi[k];
    for (std::size_t i = 0; i < d1; ++i) lo[i] = INFINITY, hi[i] = -INFINITY;
    for (std::size_t a = 0; a < outer; ++a)
      for (std::size_t i = 0; i < d1; ++i) lo[i] = std::min(lo[i], lo_in[a * d1 + i]), hi[i] = std::max(hi[i], hi_in[a * d1 + i]);
    if (k == 0) break;
    // The extremes over this variable and the ones after it, per index of the variables before: the next pass's input
    // (written over the buffers being read: entry a is written after entries up to a * d1 + d1 - 1 >= a are read).
    if (lo_in == p.coef.data()) lo_buf.resize(outer), hi_buf.resize(outer);
    double *lo_out = lo_buf.data(), *hi_out = hi_buf.data();
    for (std::size_t a = 0; a < outer; ++a) {
      double l = INFINITY, h = -INFINITY;
      for (std::size_t i = 0; i < d1; ++i) l = std::min(l, lo_in[a * d1 + i]), h = std::max(h, hi_in[a * d1 + i]);
      lo_out[a] = l, hi_out[a] = h;
    }
    lo_in = lo_out, hi_in = hi_out, size = outer;
  }
}

// Domain reduction of a cell (the projected-polyhedron step of Sherbrooke & Patrikalakis 1993): along
// each variable, the part where every equation can vanish (clip_zero_range); the cell shrinks to that box, its
// polynomials restricted by de Casteljau, again while a round at least halves some side. Near a simple root the
// box shrinks quadratically, so far fewer cells are split.
enum class Clip { Empty, Unchanged, Shrunk };
Clip clip_cell(Cell& cell, int m, int n, double slack) {
  Clip result = Clip::Unchanged;
  thread_local std::vector<double> scratch;
  thread_local std::vector<Marginals> ranges;
  if (ranges.size() < std::size_t(m)) ranges.resize(std::size_t(m));
  for (int round = 0; round < 4; ++round) {
    double t0[kMaxVariables], t1[kMaxVariables], narrowest = 1;
    for (int i = 0; i < m; ++i) coef_marginals(cell.f[std::size_t(i)], ranges[std::size_t(i)]);
    if (slack > 0)  // where |f| may stay within the slack, not only where f may vanish
      for (int i = 0; i < m; ++i)
        for (int k = 0; k < n; ++k)
          for (int j = 0; j <= cell.f[std::size_t(i)].degree[std::size_t(k)]; ++j)
            ranges[std::size_t(i)].lo[k][j] -= slack, ranges[std::size_t(i)].hi[k][j] += slack;
    for (int k = 0; k < n; ++k) {
      t0[k] = 0, t1[k] = 1;
      for (int i = 0; i < m; ++i)
        if (!clip_hull(ranges[std::size_t(i)].lo[k], ranges[std::size_t(i)].hi[k], cell.f[std::size_t(i)].degree[std::size_t(k)], t0[k], t1[k]))
          return Clip::Empty;
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
    // An equation keeps one sign (beyond the slack); an inequality fails everywhere.
    excluded = int(i) < m ? (r.lo > o.zero_slack || r.hi < -o.zero_slack) : !(r.hi > 0);
  }
  if (excluded) return;
  // Domain reduction, for curves too: the set where every equation vanishes lies in each one's clipped box.
  const Clip clip = clip_cell(cell, m, n, o.zero_slack);
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
      // (values within the slack count as zero: a cell is empty only if no point of it comes that near)
      f_err[i] = solverk::evaluation_error(std::max(std::abs(r.lo), std::abs(r.hi)), total) + o.zero_slack;
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
    if (square && (std::int64_t(frontier.size()) > continuum_waiting_limit(1) || out.nodes > continuum_system_cells)) {
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
    // The clock is read inside a level too: a level of a solution region holds as many cells as all levels before
    // it, so finishing it could double the time allowed. Cells not reached are left out of the result.
    std::atomic<bool> out_of_time{false};
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads) if (threads > 1 && frontier.size() >= 32)
    for (std::int64_t c = 0; c < std::int64_t(frontier.size()); ++c) {
      errors_0.capture([&] {
        if (out_of_time.load(std::memory_order_relaxed)) return;
        if ((c & 255) == 255 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > o.max_seconds) {
          out_of_time.store(true, std::memory_order_relaxed);
          return;
        }
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
    if (out_of_time.load()) {
      out.status = time_limit_status(o.max_seconds);
      break;
    }
    // A solution curve would fill the levels with cells of the tolerance's size: stop refining early then.
    if (square && std::int64_t(out.candidates.size()) > continuum_candidate_limit(1) && tolerance < continuum_tolerance)
      tolerance = continuum_tolerance;
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

// How long the calling thread works through a batch alone before the other threads join: about what waking them
// costs on an idle machine, so that a call that small (one curve pair: tens of microseconds) stays on one thread.
// On a loaded machine a team's threads can start milliseconds late; the calling thread then works alone for a few
// times the longest such delay of the last second (g_team_start, up to kSoloLongest), as the team would not help
// sooner; a delay older than a second (g_team_seen) is forgotten, so that a passing load does not keep later calls
// alone. The delay is the time by which half of the helpers had started (with one helper, its start): one thread of
// a large team woken late would otherwise keep every call of the next second alone while the rest could help. A
// batch whose roots left alone amount to more than twice that delay calls the team before its solo time is up.
// The roots' rate is judged from kSoloJudged on: a team that has just finished a call is still awake and joins
// within microseconds, so that batches of a few dozen small systems (a Hausdorff distance's) gain it at once.
constexpr double kSoloSeconds = 50e-6, kSoloLongest = 2e-3, kSoloJudged = 5e-6;
std::atomic<double> g_team_start{0};
std::atomic<std::int64_t> g_team_seen{0};  // steady_clock ticks

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
  // Threads claim the roots in runs of consecutive systems from a shared counter (one shared write per run, not one
  // per system: a batch of 10^6 rays on 16 threads spent a third of its time on the ring's and the pending count's
  // shared ends when every root went through them). The thread that takes a root copies the system into its first
  // cell and measures its scale, so that set-up is spread over the threads.
  std::vector<double> scale(count, 0.0);
  auto make_root = [&](std::size_t i) {
    for (const auto& e : equations[i]) scale[i] = std::max(scale[i], std::abs(coef_range(e).lo) + std::abs(coef_range(e).hi));
    const int n = systems[i].n;
    std::vector<BernsteinPoly> all = equations[i];
    all.insert(all.end(), ineq(i).begin(), ineq(i).end());
    return Node{{std::vector<double>(std::size_t(n), 0.0), std::vector<double>(std::size_t(n), 1.0), std::move(all)}, i};
  };
  const int threads = cpu_thread_count(o.threads);
  // Runs of up to 32 roots, short enough that every thread has a few dozen runs (the last runs of a batch balance
  // the threads' ends, as the ring's shared children do).
  const std::size_t root_run = std::clamp<std::size_t>(count / (16 * std::size_t(threads)), 1, 32);
  std::atomic<std::size_t> next_root{0};
  // Shared children: a few hundred nodes per thread (a full ring only makes workers keep children themselves).
  std::size_t capacity = 1024;
  while (capacity < 256 * std::size_t(threads)) capacity <<= 1;
  NodeRing ring(capacity);
  // pending: nodes handed out through the ring (or as the batch's roots) whose subtrees are not finished. A thread
  // works through a taken node's subtree on its own stack, sharing children through the ring only while the ring
  // runs low, and settles its taken nodes when its stack empties: no shared counter per node.
  std::atomic<std::int64_t> pending{std::int64_t(count)}, nodes{0}, candidates{0};
  std::atomic<int> stop{0};  // 1: node limit, 2: time limit, 3: stopped by the caller, 4: a failure
  const std::int64_t max_nodes = batch_cell_limit(o.max_nodes, count);
  const std::int64_t candidate_limit = continuum_candidate_limit(count), waiting_limit = continuum_waiting_limit(count);
  std::atomic<double> tolerance{o.tolerance};
  // Cells visited per system: depth first, few cells wait even where a system's cells multiply.
  std::vector<std::atomic<std::int64_t>> visited(square ? count : 0);
  const auto t0 = std::chrono::steady_clock::now();
  // Each thread's results tagged with their system, merged after the traversal: lists as long as the work, not
  // one per system per thread (a batch of 10^4 systems on 16 threads paid for 10^5 empty lists and their merge).
  struct Lists {
    std::vector<std::pair<std::size_t, Root>> found;
    std::vector<std::pair<std::size_t, std::pair<std::vector<double>, std::vector<double>>>> unresolved;
    std::vector<std::pair<std::size_t, std::int64_t>> visits;  // runs of cells of one system
  };
  std::vector<Lists> lists(static_cast<std::size_t>(threads));
  core::RegionErrors errors;
  // A thread's place in the traversal, kept between the calling thread's start alone and the team's run.
  struct Walker {
    std::vector<Root> found;  // the current cell's, before tagging
    std::vector<std::pair<std::vector<double>, std::vector<double>>> unresolved;
    std::vector<Node> local;
    std::int64_t taken = 0, seen_here = 0, emitted = 0;  // roots and ring nodes taken, not yet settled; nodes processed
    std::size_t root_at = 0, root_end = 0;               // the run of roots claimed and not yet started
    std::size_t ring_seen = 0;  // the ring's size when this thread last read it
    bool crowded_seen = false;  // whether the cells waiting passed the continuum's limit when last read
    double elapsed = 0;         // seconds since the start when this thread last read the clock
  };
  std::vector<Walker> walkers(static_cast<std::size_t>(threads));
  // Thread t's traversal; `alone` > 0: the calling thread before the team starts, which returns once the batch is
  // done or that many seconds have passed (its stack kept for the team's run).
  double team_worth = 0;  // seconds of work left alone above which the team is called (set below)
  auto walk = [&](int t, double alone) __attribute__((always_inline)) {
    Lists& mine = lists[std::size_t(t)];
    Walker& w = walkers[std::size_t(t)];
    auto& found = w.found;
    auto& unresolved = w.unresolved;
    auto& local = w.local;
    // The counters in locals for the loop (as members of w they went through memory at every node), put back on
    // the way out.
    std::int64_t taken = w.taken, seen_here = w.seen_here, emitted = w.emitted;
    std::size_t root_at = w.root_at, root_end = w.root_end;
    std::size_t ring_seen = w.ring_seen;
    bool crowded_seen = w.crowded_seen;
    double elapsed = w.elapsed;
    for (;;) {
      // Alone, the calling thread calls the team early once the roots not yet started look like more work than
      // the team's start costs (at the rate of the roots done so far): a batch of many systems gains the helpers
      // that much sooner, and a single system (no roots left to judge by) keeps the whole solo time.
      if (alone > 0 && elapsed > kSoloJudged &&
          (elapsed > alone || (root_at > 0 && double(count - root_at) * elapsed / double(root_at) > team_worth)))
        break;
      Node node;
      if (!local.empty()) {
        node = std::move(local.back());
        local.pop_back();
      } else {
        // Subtrees finished are settled in the shared count by 32 (and whenever the thread runs out of work).
        if (taken >= 32) pending -= taken, taken = 0;
        void* item = nullptr;
        if (root_at == root_end && next_root.load(std::memory_order_relaxed) < count) {
          root_at = std::min(count, next_root.fetch_add(root_run));
          root_end = std::min(count, root_at + root_run);
        }
        if (root_at < root_end) {
          const std::size_t i = root_at++;
          ++taken;
          if (stop.load(std::memory_order_relaxed)) continue;  // drain without work
          errors.capture([&] { node = make_root(i); });
          if (errors.failed()) {
            stop = 4;
            continue;
          }
        } else if (ring.pop(item)) {
          node = std::move(*static_cast<Node*>(item));
          delete static_cast<Node*>(item);
          ++taken;
        } else {
          if (taken > 0) pending -= taken, taken = 0;  // this thread's share of the work is done
          if (pending.load() == 0) break;
          std::this_thread::yield();
          continue;
        }
      }
      // The node limit is counted every 64 nodes (approximate by that much per thread); the clock is read at every
      // node, as one node of a high-degree system can take milliseconds.
      if ((++seen_here & 63) == 0) {
        if (nodes.fetch_add(64) + 64 > max_nodes) stop = 1;
        if (o.stop && o.stop()) stop = 3;
      }
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (stop.load(std::memory_order_relaxed) == 0 && elapsed > o.max_seconds) stop = 2;
      if (stop.load(std::memory_order_relaxed)) continue;  // drain without work
      const std::size_t sys = node.system;
      if (!mine.visits.empty() && mine.visits.back().first == sys)
        ++mine.visits.back().second;
      else
        mine.visits.emplace_back(sys, 1);
      const int m = int(equations[sys].size());
      double tol = tolerance.load(std::memory_order_relaxed);
      // A continuum keeps the ring full, or one system's cells multiply: past either limit, cells are taken at their
      // size.
      bool crowded = false;
      if (square) {
        // A system's cells are counted by 64 of a thread's run of them (one shared write per 64 cells), and read
        // only within such a run: a batch of many small systems never touches the counts.
        const std::int64_t run = mine.visits.back().second;
        if ((run & 63) == 0) visited[sys].fetch_add(64, std::memory_order_relaxed);
        // (`pending` changes with every thread's shared cells: read at every 16th cell)
        if ((seen_here & 15) == 1)
          crowded_seen = pending.load(std::memory_order_relaxed) + std::int64_t(local.size()) > waiting_limit;
        crowded = crowded_seen || (run >= 64 && visited[sys].load(std::memory_order_relaxed) > continuum_system_cells);
      }
      if (crowded) {
        double width = 0;
        for (int k = 0; k < systems[sys].n; ++k) width = std::max(width, node.cell.hi[std::size_t(k)] - node.cell.lo[std::size_t(k)]);
        tol = std::max(tol, 1.01 * width);
      }

      // Children stay with this thread (depth first, their coefficients still in its cache) while the ring holds
      // enough work for idle threads; otherwise they are shared through it.
      // A failure (out of memory) ends the traversal: the other threads drain the ring without work, then it is
      // rethrown.
      errors.capture([&] {
        process_cell(systems[sys], node.cell, m, square, tol, scale[sys], o, ineq(sys), found, unresolved, [&](Cell&& child) {
          // The ring's ends are written by every thread's pops and pushes: read them for every 8th child only, or
          // while this thread has little work of its own and the ring looked short when last read. Roots not yet
          // claimed count as the ring's (idle threads take those first): a batch of many small systems shares no
          // children until its last roots are claimed.
          if ((++emitted & 7) == 0 || (local.size() < 4 && ring_seen < std::size_t(4 * threads)))
            ring_seen = ring.approximate_size() + (count - std::min(count, next_root.load(std::memory_order_relaxed)));
          if (ring_seen < std::size_t(2 * threads)) {
            Node* shared = new Node{std::move(child), sys};
            ++pending;
            ++ring_seen;
            if (ring.push(shared)) return;
            --pending;
            child = std::move(shared->cell);
            delete shared;
          }
          local.push_back({std::move(child), sys});
        });
      });
      if (errors.failed()) stop = 4;
      if (square && !unresolved.empty() && ++candidates > candidate_limit && tol < continuum_tolerance)
        tolerance = continuum_tolerance;
      for (auto& r : found) mine.found.emplace_back(sys, std::move(r));
      for (auto& u : unresolved) mine.unresolved.emplace_back(sys, std::move(u));
      found.clear();
      unresolved.clear();
    }
    w.taken = taken, w.seen_here = seen_here, w.emitted = emitted;
    w.root_at = root_at, w.root_end = root_end;
    w.ring_seen = ring_seen, w.crowded_seen = crowded_seen, w.elapsed = elapsed;
  };
  // The calling thread starts alone: a batch it finishes within the solo time never wakes the others (which, on a
  // loaded machine, waits for each of them to be scheduled), and a longer one loses that much of their help.
  const auto seen = std::chrono::steady_clock::duration(g_team_seen.load(std::memory_order_relaxed));
  const bool recent = t0.time_since_epoch() - seen < std::chrono::seconds(1);
  const double delay = recent ? g_team_start.load(std::memory_order_relaxed) : 0;
  team_worth = 2 * std::max(delay, kSoloJudged);
  if (count > 0) walk(0, std::clamp(4 * delay, kSoloSeconds, kSoloLongest));
  if (pending.load() > 0) {
    const auto team_t0 = std::chrono::steady_clock::now();
    std::vector<double> started(static_cast<std::size_t>(threads), 0.0);  // seconds after team_t0, per thread
    std::atomic<int> team{1};
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
      started[std::size_t(omp_get_thread_num())] = std::chrono::duration<double>(std::chrono::steady_clock::now() - team_t0).count();
      if (omp_get_thread_num() == 0) team = omp_get_num_threads();
      walk(omp_get_thread_num(), 0);
    }
    if (team.load() > 1) {  // (not a nested team of one)
      const auto helpers = std::size_t(team.load() - 1);
      const auto half = started.begin() + 1 + std::ptrdiff_t((helpers - 1) / 2);
      std::nth_element(started.begin() + 1, half, started.begin() + 1 + std::ptrdiff_t(helpers));
      const double joined = *half;
      g_team_start.store(std::max(delay, joined), std::memory_order_relaxed);
      if (!recent || joined >= delay) g_team_seen.store(team_t0.time_since_epoch().count(), std::memory_order_relaxed);
    }
  }
  for (const Walker& w : walkers) nodes += w.seen_here & 63;
  errors.rethrow();
  // The threads' results go to their systems on all threads: one thread placing them (and allocating each system's
  // lists) took a fifth of a 10^5-system batch's time on 16 threads. A pass over the tags finds each system's
  // entries; each system then takes its own.
  std::vector<std::size_t> first_found(count + 1, 0), first_unresolved(count + 1, 0);
  for (const Lists& l : lists) {
    for (const auto& f : l.found) ++first_found[f.first + 1];
    for (const auto& u : l.unresolved) ++first_unresolved[u.first + 1];
    for (const auto& [i, cells] : l.visits) out[i].nodes += cells;
  }
  std::partial_sum(first_found.begin(), first_found.end(), first_found.begin());
  std::partial_sum(first_unresolved.begin(), first_unresolved.end(), first_unresolved.begin());
  std::vector<Root*> found_of(first_found[count]);
  std::vector<std::pair<std::vector<double>, std::vector<double>>*> unresolved_of(first_unresolved[count]);
  {
    std::vector<std::size_t> at_found(first_found.begin(), first_found.end() - 1);
    std::vector<std::size_t> at_unresolved(first_unresolved.begin(), first_unresolved.end() - 1);
    for (Lists& l : lists) {
      for (auto& [i, r] : l.found) found_of[at_found[i]++] = &r;
      for (auto& [i, u] : l.unresolved) unresolved_of[at_unresolved[i]++] = &u;
    }
  }
  const std::string status = stop.load() == 1   ? "limit reached: " + std::to_string(max_nodes) + " cells (partial result)"
                             : stop.load() == 2 ? time_limit_status(o.max_seconds)
                             : stop.load() == 3 ? "interrupted (partial result)"
                                                : "complete";
  const double final_tolerance = tolerance.load();
#pragma omp parallel for schedule(static, 256) num_threads(threads) if (threads > 1 && count >= 4096)
  for (std::int64_t k = 0; k < std::int64_t(count); ++k) {
    const auto i = std::size_t(k);
    Subdivision& s = out[i];
    s.proved.reserve(first_found[i + 1] - first_found[i]);
    for (std::size_t e = first_found[i]; e < first_found[i + 1]; ++e) s.proved.push_back(std::move(*found_of[e]));
    s.candidates.reserve(first_unresolved[i + 1] - first_unresolved[i]);
    for (std::size_t e = first_unresolved[i]; e < first_unresolved[i + 1]; ++e)
      s.candidates.push_back(std::move(*unresolved_of[e]));
    s.status = status;
    s.tolerance = final_tolerance;
    // Threads deliver in any order: sorted, results do not depend on the schedule.
    std::sort(s.proved.begin(), s.proved.end(), [](const Root& a, const Root& b) { return a.x < b.x; });
  }
  return out;
}

}  // namespace

Subdivision subdivide_cpu(const System& sys, const std::vector<BernsteinPoly>& equations,
                          const std::vector<BernsteinPoly>& positive, const SolverOptions& o, bool square) {
  return subdivide(sys, equations, positive, o, square);
}

std::vector<Subdivision> subdivide_cpu_tasks(const std::vector<System>& systems,
                                             const std::vector<std::vector<BernsteinPoly>>& equations,
                                             const std::vector<std::vector<BernsteinPoly>>& positive,
                                             const SolverOptions& o, bool square) {
  return subdivide_tasks(systems, equations, positive, o, square);
}

namespace {

// The CPU engine: the shared task ring (TaskBuffer), or level by level, one system per thread for a batch (Levels).
class CpuEngine final : public Engine {
 public:
  explicit CpuEngine(SolverCpuScheme scheme) : scheme_(scheme) {}
  std::vector<Subdivision> subdivide(const Batch& b, const SolverOptions& o) override {
    if (scheme_ == SolverCpuScheme::TaskBuffer) return subdivide_tasks(b.systems, b.equations, b.positive, o, b.square);
    const std::size_t count = b.systems.size();
    std::vector<Subdivision> out(count);
    if (count == 1) {
      out[0] = solver::subdivide(b.systems[0], b.equations[0], b.inequalities(0), o, b.square);
      return out;
    }
    SolverOptions one = o;
    one.threads = 1;
    one.progress = nullptr;
    const int threads = cpu_thread_count(o.threads);
    core::RegionErrors errors;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (std::int64_t i = 0; i < std::int64_t(count); ++i) {
      errors.capture([&] {
        const auto k = std::size_t(i);
        out[k] = solver::subdivide(b.systems[k], b.equations[k], b.inequalities(k), one, b.square);
      });
    }
    errors.rethrow();
    return out;
  }

 private:
  SolverCpuScheme scheme_;
};

}  // namespace

std::unique_ptr<Engine> make_cpu_engine(SolverCpuScheme scheme) { return std::make_unique<CpuEngine>(scheme); }

}  // namespace parasurf::solver
