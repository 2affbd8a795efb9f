// Subdivision solver for square systems of tensor-product Bernstein polynomials, after Park, Elber, Kim, Kim, Seong,
// "A hybrid parallel solver for systems of multivariate polynomials using CPUs and GPUs", CAD 43 (2011): a cell is
// discarded when some equation's coefficients share one sign; otherwise it is split by de Casteljau along the axis
// where the coefficients vary most. A cell whose interval Jacobian is regular (preconditioned diagonal dominance)
// holds at most one root, which Newton refines in double; cells that reach the tolerance unresolved (tangent roots,
// solution curves) are clustered, so that each tangent root is reported once and a continuum as a region.
#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <omp.h>

#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"

namespace parasurf {

namespace {

struct Cell {
  std::vector<double> lo, hi;
  std::vector<BernsteinPoly> f;  // the equations restricted to the cell, on its own unit box
};

struct Interval {
  double lo, hi;
};

Interval coef_range(const BernsteinPoly& p) {
  const auto [mn, mx] = std::minmax_element(p.coef.begin(), p.coef.end());
  return {*mn, *mx};
}

// At most one root in the cell: the interval Jacobian (local derivatives, column-scaled) preconditioned by the
// inverse of its midpoint is strictly diagonally dominant, so every matrix in it is regular (mean value theorem).
bool jacobian_regular(const std::vector<BernsteinPoly>& f) {
  const int n = int(f.size());
  std::vector<Interval> j(std::size_t(n * n));
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) j[i * n + k] = coef_range(derivative(f[i], k));
  if (n == 1) return j[0].lo > 0 || j[0].hi < 0;
  Eigen::MatrixXd mid(n, n);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) mid(i, k) = 0.5 * (j[i * n + k].lo + j[i * n + k].hi);
  const Eigen::FullPivLU<Eigen::MatrixXd> lu(mid);
  if (!lu.isInvertible()) return false;
  const Eigen::MatrixXd c = lu.inverse();
  for (int i = 0; i < n; ++i) {
    double diag_lo = 0, off = 0;
    for (int k = 0; k < n; ++k) {
      double lo = 0, hi = 0;  // (C J)_ik as an interval
      for (int m = 0; m < n; ++m) {
        const double a = c(i, m) * j[m * n + k].lo, b = c(i, m) * j[m * n + k].hi;
        lo += std::min(a, b);
        hi += std::max(a, b);
      }
      if (k == i) diag_lo = lo > 0 ? lo : (hi < 0 ? -hi : 0);
      else off += std::max(std::abs(lo), std::abs(hi));
    }
    if (!(diag_lo > off)) return false;
  }
  return true;
}

struct System {
  const std::vector<BernsteinPoly>& eq;
  std::vector<std::vector<BernsteinPoly>> d;  // d[i][k] = d eq_i / d x_k
  int n;
  double residual(const std::vector<double>& x) const {
    double r = 0;
    for (const auto& e : eq) r = std::max(r, std::abs(e.evaluate(x.data())));
    return r;
  }
};

// Newton (least squares when singular), each step clamped to the box; true when the step converged.
bool newton(const System& s, std::vector<double>& x, const std::vector<double>& lo, const std::vector<double>& hi,
            double tolerance, int iterations) {
  const int n = s.n;
  Eigen::MatrixXd jac(n, n);
  Eigen::VectorXd f(n);
  for (int it = 0; it < iterations; ++it) {
    for (int i = 0; i < n; ++i) {
      f(i) = s.eq[i].evaluate(x.data());
      for (int k = 0; k < n; ++k) jac(i, k) = s.d[i][k].evaluate(x.data());
    }
    const Eigen::VectorXd dx = jac.completeOrthogonalDecomposition().solve(-f);
    // Converged only on a small unclamped step: a step stopped by the box is no root.
    const double step = dx.cwiseAbs().maxCoeff();
    if (!std::isfinite(step)) return false;
    for (int k = 0; k < n; ++k) x[k] = std::clamp(x[k] + dx(k), lo[k], hi[k]);
    if (step <= tolerance * (1 + std::abs(x[0]))) return true;
  }
  return false;
}

}  // namespace

SolveResult solve_system(const std::vector<BernsteinPoly>& equations, const SolverOptions& o,
                         const std::vector<BernsteinPoly>& positive) {
  const int n = int(equations.size());
  if (n < 1 || n > 6) throw Error(ErrorKind::InvalidArgument, "solver: " + std::to_string(n) + " equations; 1..6 supported");
  for (const auto& e : equations) {
    if (e.variables() != n)
      throw Error(ErrorKind::InvalidArgument, "solver: a square system needs every equation in " + std::to_string(n) + " variables");
    if (e.coef.size() != e.size()) throw Error(ErrorKind::InvalidArgument, "solver: coefficient count does not match the degrees");
    for (double c : e.coef)
      if (!std::isfinite(c)) throw Error(ErrorKind::InvalidArgument, "solver: a coefficient is not finite");
  }
  if (!(o.tolerance > 0) || o.tolerance > 0.1) throw Error(ErrorKind::InvalidArgument, "solver: tolerance must be in (0, 0.1]");
  for (const auto& e : positive)
    if (e.variables() != n || e.coef.size() != e.size())
      throw Error(ErrorKind::InvalidArgument, "solver: an inequality must be a polynomial in " + std::to_string(n) + " variables");
  System sys{equations, {}, n};
  sys.d.resize(std::size_t(n));
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) sys.d[i].push_back(derivative(equations[i], k));

  SolveResult result;
  std::vector<Cell> frontier;
  {
    std::vector<BernsteinPoly> all = equations;  // equations first, then the inequalities, restricted together
    all.insert(all.end(), positive.begin(), positive.end());
    frontier.push_back({std::vector<double>(std::size_t(n), 0.0), std::vector<double>(std::size_t(n), 1.0), all});
  }
  auto satisfies = [&](const std::vector<double>& x) {
    for (const auto& q : positive)
      if (!(q.evaluate(x.data()) > 0)) return false;
    return true;
  };
  std::vector<std::pair<std::vector<double>, std::vector<double>>> candidates;
  double tolerance = o.tolerance;
  double scale = 0;
  for (const auto& e : equations) scale = std::max(scale, std::abs(coef_range(e).lo) + std::abs(coef_range(e).hi));
  const auto t0 = std::chrono::steady_clock::now();
  auto add_root = [&](Root r) {
    for (const auto& q : result.roots) {
      double d = 0;
      for (int k = 0; k < n; ++k) d = std::max(d, std::abs(q.x[k] - r.x[k]));
      if (d <= 1e-9) return;
    }
    result.roots.push_back(std::move(r));
  };
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
  int level = 0;
  // Level by level: every cell of a level is processed in parallel into per-thread children, roots and candidates.
  while (!frontier.empty()) {
    if (result.nodes + std::int64_t(frontier.size()) > o.max_nodes) {
      result.status = "limit reached: " + std::to_string(o.max_nodes) + " cells (partial result)";
      break;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > o.max_seconds) {
      result.status = "limit reached: " + std::to_string(o.max_seconds) + " s (partial result)";
      break;
    }
    if (o.progress) o.progress(level, std::int64_t(frontier.size()));
    ++level;
    result.nodes += std::int64_t(frontier.size());
    // A solution curve or surface doubles the level's cells at every split: past this many, the level's cells are
    // taken as they are (a region at this resolution) instead of refining them to the tolerance.
    if (frontier.size() > 100000) {
      double width = 0;
      for (const auto& c : frontier)
        for (int k = 0; k < n; ++k) width = std::max(width, c.hi[k] - c.lo[k]);
      tolerance = std::max(tolerance, 1.01 * width);
    }
    const std::size_t slots = static_cast<std::size_t>(threads);
    std::vector<std::vector<Cell>> children(slots);
    std::vector<std::vector<Root>> found(slots);
    std::vector<std::vector<std::pair<std::vector<double>, std::vector<double>>>> unresolved(slots);
    const double level_tolerance = tolerance;
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
    for (std::int64_t c = 0; c < std::int64_t(frontier.size()); ++c) {
      const int tid = omp_get_thread_num();
      const Cell& cell = frontier[std::size_t(c)];
      bool excluded = false;
      for (std::size_t i = 0; i < cell.f.size() && !excluded; ++i) {
        const Interval r = coef_range(cell.f[i]);
        excluded = int(i) < n ? (r.lo > 0 || r.hi < 0) : !(r.hi > 0);  // an equation keeps one sign; an inequality fails everywhere
      }
      if (excluded) continue;
      const std::vector<BernsteinPoly> eqs(cell.f.begin(), cell.f.begin() + n);
      double width = 0;
      for (int k = 0; k < n; ++k) width = std::max(width, cell.hi[k] - cell.lo[k]);
      if (jacobian_regular(eqs)) {
        std::vector<double> x(static_cast<std::size_t>(n));
        for (int k = 0; k < n; ++k) x[k] = 0.5 * (cell.lo[k] + cell.hi[k]);
        if (newton(sys, x, cell.lo, cell.hi, o.newton_tolerance, 60)) {
          const double res = sys.residual(x);
          if (res <= 1e-12 * std::max(1.0, scale)) {
            if (satisfies(x)) found[tid].push_back({x, res, true, 1});
            continue;  // the only root of the cell
          }
        }
      }
      if (width < level_tolerance) {
        unresolved[tid].emplace_back(cell.lo, cell.hi);
        continue;
      }
      // Split along the axis where the coefficients vary most, at its midpoint.
      int axis = 0;
      double best = -1;
      for (int k = 0; k < n; ++k) {
        if (cell.hi[k] - cell.lo[k] < 0.5 * level_tolerance) continue;
        double var = 0;
        for (const auto& f : eqs) {
          const Interval r = coef_range(derivative(f, k));
          var = std::max(var, std::max(std::abs(r.lo), std::abs(r.hi)));
        }
        if (var > best) best = var, axis = k;
      }
      const double mid = 0.5 * (cell.lo[axis] + cell.hi[axis]);
      Cell left{cell.lo, cell.hi, {}}, right{cell.lo, cell.hi, {}};
      left.hi[axis] = mid;
      right.lo[axis] = mid;
      for (const auto& f : cell.f) {
        left.f.push_back(restrict_to(f, axis, 0.0, 0.5));
        right.f.push_back(restrict_to(f, axis, 0.5, 1.0));
      }
      children[tid].push_back(std::move(left));
      children[tid].push_back(std::move(right));
    }
    frontier.clear();
    for (int t = 0; t < threads; ++t) {
      for (auto& c : children[t]) frontier.push_back(std::move(c));
      for (auto& r : found[t]) add_root(std::move(r));
      for (auto& u : unresolved[t]) candidates.push_back(std::move(u));
    }
    // A solution curve would fill the levels with cells of the tolerance's size: stop refining early then.
    if (candidates.size() > 20000 && tolerance < 1e-4) tolerance = 1e-4;
  }

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
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return candidates[a].first[0] < candidates[b].first[0]; });
  // Cells of one high-order tangency can be separated by excluded cells of the same size: bridge small gaps.
  const double slack = 4 * tolerance;
  for (std::size_t a = 0; a < m; ++a)
    for (std::size_t b = a + 1; b < m; ++b) {
      const auto& ca = candidates[order[a]];
      const auto& cb = candidates[order[b]];
      if (cb.first[0] > ca.second[0] + slack) break;  // sorted by lower x0: no later cell touches
      bool touch = true;
      for (int k = 0; k < n && touch; ++k) touch = cb.first[k] <= ca.second[k] + slack && ca.first[k] <= cb.second[k] + slack;
      if (touch) parent[find(order[a])] = find(order[b]);
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
    // A proved root inside the cluster's box already accounts for it.
    bool known = false;
    for (const auto& r : result.roots) {
      bool inside = true;
      for (int k = 0; k < n; ++k) inside = inside && r.x[k] >= lo[k] - 1e-9 && r.x[k] <= hi[k] + 1e-9;
      known = known || inside;
    }
    if (known) continue;
    // A solution curve spans the box; a tangent root's cluster shrinks with the tolerance (as tol^(1/k) for contact
    // of order k), so a cluster longer than 1% of the box is reported as a region.
    if (extent > 1e-2) {
      result.regions.push_back({lo, hi, std::int64_t(cl.size())});
      continue;
    }
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

}  // namespace parasurf
