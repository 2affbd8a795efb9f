// Subdivision solver for square systems of tensor-product Bernstein polynomials, after Park, Elber, Kim, Kim, Seong,
// "A hybrid parallel solver for systems of multivariate polynomials using CPUs and GPUs", CAD 43 (2011): a cell is
// discarded when some equation's coefficients share one sign; otherwise it is split by de Casteljau along the axis
// where the coefficients vary most. A cell whose interval Jacobian is regular (preconditioned diagonal dominance)
// holds at most one root, which Newton refines in double; cells that reach the tolerance unresolved (tangent roots,
// solution curves) are clustered, so that each tangent root is reported once and a continuum as a region.
#include "core/backends.hpp"
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
#include "solver/newton_kernels.hpp"
#include "solver/sampled_sets.hpp"
#include "solver/system.hpp"

namespace parasurf {

using namespace solver;

namespace solver {

namespace {
// Systems of more unknowns, or not square: a pivoted LU where it is well conditioned, else the minimum-norm
// least-squares step.
bool newton_steps(const System& s, std::vector<double>& x, const std::vector<double>& lo, const std::vector<double>& hi,
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
    Vector dx(n);
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

bool newton(const System& s, std::vector<double>& x, const std::vector<double>& lo, const std::vector<double>& hi,
            double tolerance, int iterations) {
  const int n = s.n, m = int(s.eq.size());
  if (m != n || n > solverk::kNewtonMaxVars) return newton_steps(s, x, lo, hi, tolerance, iterations);
  // Small square systems: the steps the CUDA engines take on the device (newton_kernels.hpp), with the minimum-norm
  // least-squares step where the Jacobian is too ill-conditioned for its inverse.
  auto eval = [&](const double* at, double* jac, double* f) {
    solverk::PointBases<> bases;
    for (int i = 0; i < n; ++i) f[i] = solverk::value_and_gradient(s.eq[std::size_t(i)].coef.data(), n, s.eq[std::size_t(i)].degree.data(), at, bases, jac + i * n);
  };
  auto least_squares = [&](const double* jac, const double* f, double* dx) {
    using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor, solverk::kNewtonMaxVars, solverk::kNewtonMaxVars>;
    using Vector = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, solverk::kNewtonMaxVars, 1>;
    const Matrix j = Eigen::Map<const Matrix>(jac, n, n);
    const Vector step = j.completeOrthogonalDecomposition().solve(-Eigen::Map<const Vector>(f, n));
    for (int k = 0; k < n; ++k) dx[k] = step(k);
    return true;
  };
  return solverk::newton_in_box(n, eval, least_squares, x.data(), lo.data(), hi.data(), tolerance, iterations) == solverk::kNewtonConverged;
}

}  // namespace solver

namespace {

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

std::atomic<std::int64_t> g_engine_ns{0};

}  // namespace

// The engine for a batch. auto: the GPU engine pays only for wide batches (each level costs it a round trip to the
// device, however few cells the level has, while the CPU threads take a few systems' cells at once), so a batch
// goes to the GPU from 128 systems per CPU thread (and 2048) on.
Device solver::engine_for(const SolverOptions& o, std::size_t systems) {
  if (o.device != Device::Auto) return resolve_device(o.device);
  const std::size_t wide = std::max<std::size_t>(2048, 128 * std::size_t(cpu_thread_count(o.threads)));
  return systems >= wide && cuda_available() ? Device::Cuda : Device::Cpu;
}

namespace {

// Every system of the batch through the engine the options ask for; `engine` keeps it for the caller, as the
// subdivisions may refer to its arrays.
std::vector<Subdivision> subdivide_any(const std::vector<System>& systems, const std::vector<std::vector<BernsteinPoly>>& equations,
                                       const std::vector<std::vector<BernsteinPoly>>& positive, const SolverOptions& o, bool square,
                                       std::unique_ptr<Engine>& engine) {
  std::vector<int> variables;
  for (const System& s : systems) variables.push_back(s.n);
  const auto t0 = std::chrono::steady_clock::now();
  engine = make_engine(engine_for(o, systems.size()), o.cpu_scheme);
  std::vector<Subdivision> out = engine->subdivide(Batch{systems, equations, positive, variables, square}, o);
  g_engine_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace

namespace {

// Checks every system of a batch on all threads (a batch of 10^5 small systems took milliseconds on one); the
// message is the first bad system's, as a check one by one would give.
template <class Check>
void check_all(std::size_t count, const SolverOptions& o, Check&& check) {
  std::atomic<std::size_t> first_bad{count};
  const int threads = cpu_thread_count(o.threads);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && count > 256)
  for (std::int64_t i = 0; i < std::int64_t(count); ++i) {
    try {
      check(std::size_t(i));
    } catch (...) {
      std::size_t seen = first_bad.load();
      while (std::size_t(i) < seen && !first_bad.compare_exchange_weak(seen, std::size_t(i))) {
      }
    }
  }
  if (first_bad.load() < count) check(first_bad.load());  // throws its message here, on the calling thread
}

}  // namespace

void solver::check_tolerances(const SolverOptions& o) {
  if (!(o.tolerance > 0) || o.tolerance > 0.1) throw Error(ErrorKind::InvalidArgument, "solver: tolerance must be in (0, 0.1]");
  if (!(o.zero_slack >= 0 && o.zero_slack < HUGE_VAL))
    throw Error(ErrorKind::InvalidArgument, "solver: zero_slack must be finite and at least 0");
}

namespace {

void check_square(const std::vector<BernsteinPoly>& equations, const SolverOptions& o, const std::vector<BernsteinPoly>& positive) {
  const int n = int(equations.size());
  if (n < 1 || n > 6) throw Error(ErrorKind::InvalidArgument, "solver: " + std::to_string(n) + " equations; 1..6 supported");
  check_system(equations, n, positive);
  solver::check_tolerances(o);
}

// Roots from a subdivision: cells proved to hold one root are refined by Newton; cells left at the tolerance are
// clustered into tangent roots and solution regions.
// The time limit covers this phase too (a solution region of millions of cells takes seconds to cluster): past the
// deadline the cells not yet clustered are reported as one region around them, and the result is marked partial.
// One function: Newton, the clustering and the regions read the same sorted cells and the deadline.
SolveResult finish_square(const System& sys, const std::vector<BernsteinPoly>& positive, Subdivision sub, const SolverOptions& o,
                          std::chrono::steady_clock::time_point deadline) {
  const int n = sys.n;
  bool late = false;
  auto past = [&](std::size_t i) {
    if (!late && (i & 63) == 0 && std::chrono::steady_clock::now() > deadline) late = true;
    return late;
  };
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
  // The cells at the tolerance in one array, n lower then n upper bounds each: the GPU engines' (in their arrays),
  // the CPU engines' (vectors) and proved cells the host could not settle. (A batch's systems end here by the ten
  // thousand on all threads, many of them with a few such cells: no allocation per cell.)
  std::vector<double> boxes(sub.candidate_boxes.begin(), sub.candidate_boxes.end());
  boxes.reserve(boxes.size() + sub.candidates.size() * std::size_t(2 * n));
  for (const auto& [lo, hi] : sub.candidates) boxes.insert(boxes.end(), lo.begin(), lo.end()), boxes.insert(boxes.end(), hi.begin(), hi.end());
  if (!sub.unique.empty()) {  // cells of the GPU engines proved to hold one root
    double scale = 0;
    for (const auto& e : sys.eq) scale = std::max(scale, std::abs(coef_range(e).lo) + std::abs(coef_range(e).hi));
    // (A proved cell costs its root's allocation alone; its bounds are copied only where the host settles it or
    // keeps it as a candidate.)
    const std::size_t cells = sub.unique.size() / std::size_t(2 * n);
    result.roots.reserve(result.roots.size() + cells);
    std::vector<double> lo, hi, x;
    auto keep_candidate = [&](const double* box) { boxes.insert(boxes.end(), box, box + 2 * n); };
    for (std::size_t u = 0; u < cells; ++u) {
      const double* box = sub.unique.data() + u * std::size_t(2 * n);
      if (past(u)) {
        keep_candidate(box);
        continue;
      }
      // The root's existence and uniqueness are proved: Newton (kept in the cell) only refines it. Its step test may
      // never pass where the Jacobian is nearly singular (two roots 3.6e-4 apart: the rounding of f, divided by a
      // small derivative, keeps the steps near 1e-14), so a few more steps may settle below 1e-10 instead; the last
      // step then bounds the distance to the root, and the residual must be small too. The CUDA engines take the
      // same steps on the device for small systems (solver_cuda.cu): their roots and residuals come with the cells.
      const double device_residual = sub.unique_residual.empty() ? NAN : sub.unique_residual[u];
      bool settled;
      double residual;
      Root root;
      if (device_residual == device_residual) {
        root.x.assign(sub.unique_x.begin() + std::ptrdiff_t(u * std::size_t(n)), sub.unique_x.begin() + std::ptrdiff_t((u + 1) * std::size_t(n)));
        settled = device_residual < HUGE_VAL;
        residual = settled ? device_residual : 0;
      } else {
        lo.assign(box, box + n);
        hi.assign(box + n, box + 2 * n);
        x.resize(std::size_t(n));
        for (int k = 0; k < n; ++k) x[k] = 0.5 * (lo[k] + hi[k]);
        settled = newton(sys, x, lo, hi, o.newton_tolerance, 30) || newton(sys, x, lo, hi, 1e-10, 5);
        residual = settled ? sys.residual(x) : 0;
        root.x = x;
      }
      if (settled && residual <= 1e-12 * std::max(1.0, scale)) {
        root.residual = residual, root.proved_single = true, root.multiplicity_hint = 1;
        if (satisfies(root.x)) add_root(std::move(root));
      } else {
        keep_candidate(box);
      }
    }
  }
  auto done = [&] {
    std::sort(result.roots.begin(), result.roots.end(), [](const Root& a, const Root& b) { return a.x < b.x; });
    if (late) result.status = time_limit_status(o.max_seconds);
    return std::move(result);
  };
  // Most systems of a large batch end here: nothing to cluster (the clustering's work arrays cost more than their
  // proved roots).
  if (boxes.empty()) return done();
  const double tolerance = sub.tolerance;
  const auto width = std::size_t(2 * n);
  const std::size_t m = boxes.size() / width;
  auto lower = [&](std::size_t i) { return boxes.data() + i * width; };  // then the n upper bounds
  // Threads deliver cells in any order: sort them (lower bounds, then upper) so that the clusters and their
  // centroids are reproducible. (Past the deadline already, millions of cells are not sorted: they become one
  // region as they are.)
  if (!past(0)) {
    std::vector<std::size_t> order(m);
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::lexicographical_compare(lower(a), lower(a) + width, lower(b), lower(b) + width);
    });
    std::vector<double> sorted(boxes.size());
    for (std::size_t i = 0; i < m; ++i) std::copy(lower(order[i]), lower(order[i]) + width, sorted.begin() + std::ptrdiff_t(i * width));
    boxes.swap(sorted);
  }
  // Cluster touching candidate cells (union-find); each cluster is one tangent root or one solution region.
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
    const double *ca = lower(a), *cb = lower(b);
    for (int k = 0; k < n; ++k)
      if (!(cb[k] <= ca[n + k] + slack && ca[k] <= cb[n + k] + slack)) return false;
    return true;
  };
  // Touching cells through a grid of spacing `slack` on the cells' lower corners. Cells whose corners share a grid
  // cell always touch, so each grid cell is one set at once; a cell then looks for one touching member in each grid
  // cell within its reach. (Comparing pairs along a sweep took seconds for a solution region of tens of
  // thousands of cells.)
  // The sets are the touching cells' connected sets however they are found: a few cells (a tangent root leaves a
  // handful) are compared pair by pair.
  const double spacing = slack;
  constexpr std::size_t kPairwise = 64;
  const bool pairwise = !(spacing > 1e-150) || m <= kPairwise;  // (no slack to grid by: a zero tolerance)
  if (pairwise) {
    for (std::size_t i = 0; i < m && !past(i); ++i)
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
  const std::size_t gridded = pairwise ? 0 : m;
  for (std::size_t i = 0; i < gridded && !past(i); ++i) {
    for (int k = 0; k < n; ++k) g[std::size_t(k)] = grid_of(lower(i)[k]);
    auto& members = grid[g];
    if (!members.empty()) parent[find(i)] = find(members.front());
    members.push_back(i);
  }
  std::vector<std::int64_t> lo_g(static_cast<std::size_t>(n)), hi_g(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < gridded && !past(i); ++i) {
    double reach = 1;
    for (int k = 0; k < n; ++k) {
      lo_g[std::size_t(k)] = grid_of(lower(i)[k] - slack);
      hi_g[std::size_t(k)] = grid_of(lower(i)[n + k] + slack);
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
  if (late) {  // the clustering did not finish: one region around every unresolved cell
    clusters.emplace_back(m);
    std::iota(clusters.back().begin(), clusters.back().end(), std::size_t(0));
    if (m == 0) clusters.clear();
  } else {
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
      for (int k = 0; k < n; ++k) lo[k] = std::min(lo[k], lower(i)[k]), hi[k] = std::max(hi[k], lower(i)[n + k]);
    double extent = 0;
    for (int k = 0; k < n; ++k) extent = std::max(extent, hi[k] - lo[k]);
    // A solution curve spans the box; a tangent root's cluster shrinks with the tolerance (as tol^(1/k) for contact
    // of order k), so a cluster longer than 1% of the box is reported as a region (whatever proved roots its box
    // holds: a curve that overlaps another and also crosses it elsewhere has both).
    if (extent > 1e-2 || past(std::size_t(&cl - clusters.data()))) {
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
      for (int k = 0; k < n; ++k) x[k] += 0.5 * (lower(i)[k] + lower(i)[n + k]) / double(cl.size());
    const std::vector<double> centroid = x;
    const double centroid_res = sys.residual(x);
    newton(sys, x, lo, hi, o.newton_tolerance, 100);
    double res = sys.residual(x);
    if (!(res < 1e-3 * centroid_res)) x = centroid, res = centroid_res;  // Newton only counts when it clearly helped
    if (satisfies(x)) add_root({x, res, false, 2});
  }
  return done();
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
  check_all(count, o, [&](std::size_t i) { check_square(equations[i], o, ineq(i)); });
  if (count == 0) return {};
  // A system whose equations are all zero polynomials (the conditions of a patch collapsed to a point, say) holds
  // everywhere: the unit box is its one region. Subdividing it would fill every level up to the cell limit.
  const int threads = cpu_thread_count(o.threads);
  {
    std::vector<char> vacuous(count);  // (read on all threads: a batch's coefficients are hundreds of MiB)
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && count > 1024)
    for (std::int64_t i = 0; i < std::int64_t(count); ++i) {
      bool v = ineq(std::size_t(i)).empty();
      for (const BernsteinPoly& e : equations[std::size_t(i)])
        v = v && std::all_of(e.coef.begin(), e.coef.end(), [](double c) { return c == 0; });
      vacuous[std::size_t(i)] = v;
    }
    if (std::find(vacuous.begin(), vacuous.end(), 1) != vacuous.end()) {
      std::vector<std::size_t> rest;
      for (std::size_t i = 0; i < count; ++i)
        if (!vacuous[i]) rest.push_back(i);
      std::vector<SolveResult> solved = solve_systems(pick(equations, rest), o, pick(positive, rest));
      std::vector<SolveResult> out(count);
      for (std::size_t i = 0; i < count; ++i) {
        const std::size_t n = std::size_t(equations[i][0].variables());
        out[i].regions.push_back({std::vector<double>(n, 0.0), std::vector<double>(n, 1.0), 1});
      }
      for (std::size_t k = 0; k < rest.size(); ++k) out[rest[k]] = std::move(solved[k]);
      return out;
    }
  }
  if (team_batch(o, count))
    return solve_as_team<SolveResult>(count, o, [&](const std::vector<std::size_t>& mine, const SolverOptions& alone) {
      return solve_systems(pick(equations, mine), alone, pick(positive, mine));
    });
  const auto deadline = solver::deadline_after(o.max_seconds);
  std::vector<System> systems;
  systems.reserve(count);
  for (std::size_t i = 0; i < count; ++i) systems.push_back(make_system(equations[i], int(equations[i].size())));
  std::unique_ptr<Engine> engine;
  std::vector<Subdivision> subs = subdivide_any(systems, equations, positive, o, true, engine);
  std::vector<SolveResult> out(count);
  core::RegionErrors errors_s1;
  // One system at a time balances a few hard systems; in a batch of many small ones, threads taking them one by one
  // from a shared counter wait on it. A few systems (microseconds each, as a rule) stay on the calling thread.
  const int chunk = count >= std::size_t(256) * std::size_t(threads) ? 16 : 1;
#pragma omp parallel for schedule(dynamic, chunk) num_threads(threads) if (threads > 1 && count >= 16)
  for (std::int64_t i = 0; i < std::int64_t(count); ++i) {
    errors_s1.capture([&] {
      out[std::size_t(i)] = finish_square(systems[std::size_t(i)], ineq(std::size_t(i)), std::move(subs[std::size_t(i)]), o, deadline);
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

// The unit direction of a curve F = 0 (n - 1 equations in n variables) at x, into t: the Jacobian's null vector,
// which is its generalised cross product (t_k = (-1)^k times the minor without column k); the SVD's null vector
// where those minors all vanish (a singular point). Returns whether the Jacobian is singular there: its smallest
// singular value at most 1e-7 times its largest. The minors' norm is the product of the singular values (Binet-Cauchy),
// so the SVD is needed only where that product is small against the Frobenius norm F: beyond 1e-7 F^m the smallest
// singular value is beyond 1e-7 F, hence beyond 1e-7 times the largest. `M` is m when known at compile time
// (fixed-size minors: closed-form determinants).
template <int M>
bool curve_tangent(const System& sys, const double* x, double* t) {
  constexpr int N = M == Eigen::Dynamic ? Eigen::Dynamic : M + 1;
  using Matrix = Eigen::Matrix<double, M, N, M == 1 ? Eigen::RowMajor : Eigen::ColMajor, M == Eigen::Dynamic ? kMaxVariables : M,
                               N == Eigen::Dynamic ? kMaxVariables : N>;
  using Minor = Eigen::Matrix<double, M, M, 0, M == Eigen::Dynamic ? kMaxVariables : M, M == Eigen::Dynamic ? kMaxVariables : M>;
  const int n = sys.n, m = n - 1;
  Matrix jac(m, n);
  sys.evaluate_jacobian(x, jac, static_cast<Eigen::VectorXd*>(nullptr));
  double norm = 0;
  for (int k = 0; k < n; ++k) {
    Minor minor(m, m);
    for (int c = 0, j = 0; c < n; ++c)
      if (c != k) minor.col(j++) = jac.col(c);
    t[k] = (k % 2 ? -1.0 : 1.0) * (m == 0 ? 1.0 : minor.determinant());
    norm += t[k] * t[k];
  }
  norm = std::sqrt(norm);
  const double frobenius = jac.norm();
  const bool regular = std::isfinite(norm) && norm > 1e-7 * std::pow(frobenius, m);
  if (norm > 1e-300 && std::isfinite(norm)) {
    for (int k = 0; k < n; ++k) t[k] /= norm;
    if (regular) return false;
    const Eigen::JacobiSVD<Matrix> svd(jac);
    return !(svd.singularValues()(m - 1) > 1e-7 * svd.singularValues()(0));
  }
  const Eigen::JacobiSVD<Matrix> svd(jac, Eigen::ComputeFullV);
  for (int k = 0; k < n; ++k) t[k] = svd.matrixV()(k, n - 1);
  return !(svd.singularValues()(m - 1) > 1e-7 * svd.singularValues()(0));
}

bool curve_tangent(const System& sys, const double* x, double* t) {
  switch (sys.n - 1) {
    case 1: return curve_tangent<1>(sys, x, t);
    case 2: return curve_tangent<2>(sys, x, t);
    case 3: return curve_tangent<3>(sys, x, t);
    default: return curve_tangent<Eigen::Dynamic>(sys, x, t);
  }
}

solver::SampledSet finish_set(const System& sys, const std::vector<BernsteinPoly>& positive, const Subdivision& sub,
                              const SolverOptions& o, double resolution, int threads,
                              std::chrono::steady_clock::time_point deadline) {
  const std::vector<BernsteinPoly>& equations = sys.eq;
  const int n = sys.n, m = int(equations.size());
  const bool curve = m == n - 1;
  const auto un = std::size_t(n);
  solver::SampledSet out;
  out.n = n;
  out.status = sub.status;
  out.nodes = sub.nodes;
  double scale = 0;
  for (const auto& e : equations) scale = std::max(scale, std::abs(coef_range(e).lo) + std::abs(coef_range(e).hi));
  const std::size_t listed = sub.candidates.size(), cells = listed + sub.candidate_boxes.size() / (2 * un),
                    total = cells + sub.proved.size();
  std::vector<double> xs(total * un), tangents(curve ? total * un : 0), residuals(total);
  std::vector<char> kept(total, 0), singular(total, 0);
  // Minimum-norm Newton from each cell's centre lands on the nearest part of the set; the cell keeps the point when
  // it lies within half a cell of it (neighbouring cells then cover the set without gaps).
  // Curve samples already on the set (cells where the curve is a graph over one variable) only get their tangent.
  // The time limit covers this phase too: cells not reached by then are left out of the (partial) result.
  core::RegionErrors errors_1;
  std::atomic<bool> late{false};
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) if (threads > 1 && total >= 32)
  for (std::int64_t c = 0; c < std::int64_t(total); ++c) {
    errors_1.capture([&] {
      if (late.load(std::memory_order_relaxed)) return;
      if ((c & 255) == 0 && std::chrono::steady_clock::now() > deadline) {
        late = true;
        return;
      }
      double* x = xs.data() + std::size_t(c) * un;
      double res;
      if (std::size_t(c) < cells) {
        const double* box = std::size_t(c) < listed ? nullptr : sub.candidate_boxes.data() + (std::size_t(c) - listed) * 2 * un;
        const std::vector<double> lo = box ? std::vector<double>(box, box + un) : sub.candidates[std::size_t(c)].first;
        const std::vector<double> hi = box ? std::vector<double>(box + un, box + 2 * un) : sub.candidates[std::size_t(c)].second;
        std::vector<double> start(un), blo(lo), bhi(hi);
        for (int k = 0; k < n; ++k) {
          const double w = hi[k] - lo[k];
          start[k] = 0.5 * (lo[k] + hi[k]);
          blo[k] = std::max(0.0, lo[k] - 0.5 * w);
          bhi[k] = std::min(1.0, hi[k] + 0.5 * w);
        }
        newton(sys, start, blo, bhi, o.newton_tolerance, 12);
        std::copy(start.begin(), start.end(), x);
        res = sys.residual(x);
      } else {
        const Root& r = sub.proved[std::size_t(c) - cells];
        std::copy(r.x.begin(), r.x.end(), x);
        res = r.residual;
      }
      if (!(res <= 1e-11 * std::max(1.0, scale))) return;
      for (const auto& q : positive)
        if (!(q.evaluate(x) > 0)) return;
      residuals[std::size_t(c)] = res;
      if (curve) singular[std::size_t(c)] = curve_tangent(sys, x, tangents.data() + std::size_t(c) * un);
      kept[std::size_t(c)] = 1;
    });
  }
  errors_1.rethrow();
  if (late) out.status = time_limit_status(o.max_seconds);
  // Neighbouring cells often reach the same point: keep one per quarter cell.
  std::vector<std::size_t> order;
  for (std::size_t c = 0; c < total; ++c)
    if (kept[c]) order.push_back(c);
  auto at = [&](std::size_t c) { return xs.data() + c * un; };
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return std::lexicographical_compare(at(a), at(a) + un, at(b), at(b) + un); });
  // Kept samples are found through a grid: a set of dimension two or more (coincident surfaces) has many samples
  // with the same first coordinate.
  const double merge = 0.25 * resolution;
  solver::PointGrid grid(un, merge);
  out.x.reserve(order.size() * un);
  for (std::size_t c : order) {
    bool dup = false;
    grid.near(at(c), [&](std::size_t id) {
      if (dup) return;
      double d = 0;
      for (std::size_t k = 0; k < un; ++k) d = std::max(d, std::abs(out.x[id * un + k] - at(c)[k]));
      dup = d <= merge;
    });
    if (dup) continue;
    grid.insert(at(c), out.size());
    out.x.insert(out.x.end(), at(c), at(c) + un);
    if (curve) out.tangent.insert(out.tangent.end(), tangents.data() + c * un, tangents.data() + (c + 1) * un);
    out.residual.push_back(residuals[c]);
    out.singular.push_back(singular[c]);
  }
  return out;
}

// The sets of a batch, checked, on this process's engines.
std::vector<solver::SampledSet> sample_unchecked(const std::vector<std::vector<BernsteinPoly>>& equations, int variables,
                                                 double resolution, const SolverOptions& o,
                                                 const std::vector<std::vector<BernsteinPoly>>& positive) {
  static const std::vector<BernsteinPoly> none;
  auto ineq = [&](std::size_t i) -> const std::vector<BernsteinPoly>& { return positive.empty() ? none : positive[i]; };
  const std::size_t count = equations.size();
  const auto deadline = solver::deadline_after(o.max_seconds);
  std::vector<System> systems;
  for (std::size_t i = 0; i < count; ++i) systems.push_back(make_system(equations[i], variables));
  SolverOptions so = o;
  so.tolerance = resolution;
  std::unique_ptr<Engine> engine;
  const std::vector<Subdivision> subs = subdivide_any(systems, equations, positive, so, false, engine);
  std::vector<solver::SampledSet> out(count);
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

void check_sets(const std::vector<std::vector<BernsteinPoly>>& equations, int variables, double resolution,
                const SolverOptions& o, const std::vector<std::vector<BernsteinPoly>>& positive) {
  if (!positive.empty() && positive.size() != equations.size())
    throw Error(ErrorKind::InvalidArgument, "solution sets: one list of inequalities per system (or none at all)");
  static const std::vector<BernsteinPoly> none;
  check_all(equations.size(), o, [&](std::size_t i) {
    check_set(equations[i], variables, resolution, positive.empty() ? none : positive[i]);
  });
}

}  // namespace

SolutionSetResult sample_solution_set(const std::vector<BernsteinPoly>& equations, int variables, double resolution,
                                      const SolverOptions& o, const std::vector<BernsteinPoly>& positive) {
  return sample_solution_sets({equations}, variables, resolution, o, {positive})[0];
}

std::vector<SolutionSetResult> sample_solution_sets(const std::vector<std::vector<BernsteinPoly>>& equations, int variables,
                                                    double resolution, const SolverOptions& o,
                                                    const std::vector<std::vector<BernsteinPoly>>& positive) {
  check_sets(equations, variables, resolution, o, positive);
  const std::size_t count = equations.size();
  if (count == 0) return {};
  if (team_batch(o, count))
    return solve_as_team<SolutionSetResult>(count, o, [&](const std::vector<std::size_t>& mine, const SolverOptions& alone) {
      return sample_solution_sets(pick(equations, mine), variables, resolution, alone, pick(positive, mine));
    });
  const std::vector<solver::SampledSet> sets = sample_unchecked(equations, variables, resolution, o, positive);
  std::vector<SolutionSetResult> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const solver::SampledSet& s = sets[i];
    const auto n = std::size_t(s.n);
    out[i].status = s.status;
    out[i].nodes = s.nodes;
    out[i].samples.resize(s.size());
    for (std::size_t j = 0; j < s.size(); ++j) {
      SolutionSample& sample = out[i].samples[j];
      sample.x.assign(s.x.begin() + std::ptrdiff_t(j * n), s.x.begin() + std::ptrdiff_t((j + 1) * n));
      sample.residual = s.residual[j];
      if (!s.tangent.empty()) sample.tangent.assign(s.tangent.begin() + std::ptrdiff_t(j * n), s.tangent.begin() + std::ptrdiff_t((j + 1) * n));
    }
  }
  return out;
}

namespace solver {
std::vector<SampledSet> sample_sets(const std::vector<std::vector<BernsteinPoly>>& equations, int variables, double resolution,
                                    const SolverOptions& o) {
  check_sets(equations, variables, resolution, o, {});
  const std::size_t count = equations.size();
  if (count == 0) return {};
  if (!team_batch(o, count)) return sample_unchecked(equations, variables, resolution, o, {});
  // A team's members exchange the public results; the rank test is made again on them.
  const std::vector<SolutionSetResult> found = sample_solution_sets(equations, variables, resolution, o);
  std::vector<SampledSet> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    SampledSet& s = out[i];
    s.n = variables;
    s.status = found[i].status;
    s.nodes = found[i].nodes;
    const System sys = make_system(equations[i], variables);
    for (const SolutionSample& sample : found[i].samples) {
      s.x.insert(s.x.end(), sample.x.begin(), sample.x.end());
      s.residual.push_back(sample.residual);
      if (int(equations[i].size()) == variables - 1) {
        s.tangent.resize(s.x.size());
        s.singular.push_back(curve_tangent(sys, sample.x.data(), s.tangent.data() + s.x.size() - std::size_t(variables)));
      } else {
        s.singular.push_back(0);
      }
    }
  }
  return out;
}
}  // namespace solver

std::vector<std::vector<std::size_t>> link_polylines(const std::vector<std::vector<double>>& points,
                                                     const std::vector<std::vector<double>>& tangents, double spacing, int threads) {
  const std::size_t count = points.size();
  if (count == 0) return {};
  const std::size_t n = points[0].size();
  std::vector<double> flat(count * n), flat_tangents(count * n);
  for (std::size_t i = 0; i < count; ++i) {
    std::copy(points[i].begin(), points[i].end(), flat.begin() + std::ptrdiff_t(i * n));
    std::copy(tangents[i].begin(), tangents[i].end(), flat_tangents.begin() + std::ptrdiff_t(i * n));
  }
  return solver::link_polylines(flat.data(), flat_tangents.data(), count, n, spacing, threads);
}

std::vector<std::vector<std::size_t>> solver::link_polylines(const double* flat, const double* flat_tangents, std::size_t count,
                                                             std::size_t n, double spacing, int threads) {
  std::vector<std::vector<std::size_t>> lines;
  if (count == 0) return lines;
  const double reach = 3.0 * spacing;
  solver::PointGrid grid(n, reach);
  for (std::size_t i = 0; i < count; ++i) grid.insert(flat + i * n, i);
  auto point = [&](std::size_t i) { return flat + i * n; };
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
      const double* t = flat_tangents + std::size_t(best) * n;
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
      std::vector<double> dir(flat_tangents + s * n, flat_tangents + (s + 1) * n);
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

namespace solver {
std::unique_ptr<Engine> make_engine(Device device, SolverCpuScheme scheme) {
  if (device == Device::Cpu) return make_cpu_engine(scheme);
  if constexpr (core::kCudaBuilt)
    return make_cuda_engine(device == Device::Hybrid);
  else
    core::no_cuda_backend(std::string("the solver on ") + device_name(device));
}
}  // namespace solver

namespace solver {
namespace {
std::atomic<bool> g_gpu_settling{true}, g_gpu_small_shape_kernels{true};
std::atomic<std::int64_t> g_small_shape_traversals{0};
}
bool gpu_settling() { return g_gpu_settling.load(std::memory_order_relaxed); }
void set_gpu_settling(bool on) { g_gpu_settling.store(on, std::memory_order_relaxed); }
bool gpu_small_shape_kernels() { return g_gpu_small_shape_kernels.load(std::memory_order_relaxed); }
void set_gpu_small_shape_kernels(bool on) { g_gpu_small_shape_kernels.store(on, std::memory_order_relaxed); }
std::int64_t gpu_small_shape_traversals() { return g_small_shape_traversals.load(); }
void count_small_shape_traversal() { ++g_small_shape_traversals; }
}  // namespace solver

double solver_engine_seconds() { return 1e-9 * double(g_engine_ns.load()); }

SolverGpuTraffic solver_gpu_traffic() {
  if constexpr (core::kCudaBuilt) return solver::gpu_traffic_cuda();
  else return {};
}

}  // namespace parasurf
