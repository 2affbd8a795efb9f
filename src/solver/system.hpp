// What the solver's CPU engine and its host finish share: a system, a cell of the subdivision, Newton's step.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "parasurf/solver.hpp"
#include "solver/engine.hpp"

namespace parasurf::solver {

// The status of a solve that the time limit ended.
inline std::string time_limit_status(double seconds) {
  char text[64];
  std::snprintf(text, sizeof text, "limit reached: %g s (partial result)", seconds);
  return text;
}

// The moment a run of at most `seconds` must end: never for NaN, infinite or absurd limits (their nanoseconds do
// not fit the clock's count).
inline std::chrono::steady_clock::time_point deadline_after(double seconds) {
  if (!(seconds < 1e9)) return std::chrono::steady_clock::time_point::max();
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

constexpr int kMaxVariables = 6;  // the entry points refuse larger systems

struct Cell {
  std::vector<double> lo, hi;
  std::vector<BernsteinPoly> f;  // the equations restricted to the cell, on its own unit box
};

struct Interval {
  double lo, hi;
};

inline Interval coef_range(const BernsteinPoly& p) {
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

inline int inner_size(const BernsteinPoly& p, int var) {
  int inner = 1;
  for (int v = var + 1; v < p.variables(); ++v) inner *= p.degree[v] + 1;
  return inner;
}

struct System {
  const std::vector<BernsteinPoly>& eq;
  int n;  // variables (the equations number eq.size(), n or fewer)
  double residual(const double* x) const {
    double r = 0;
    for (const auto& e : eq) r = std::max(r, std::abs(e.evaluate(x)));
    return r;
  }
  double residual(const std::vector<double>& x) const { return residual(x.data()); }
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
            double tolerance, int iterations);

// The CPU engine (subdivide_cpu.cpp): one system on the calling thread, or a batch on the threads' shared ring.
Subdivision subdivide_cpu(const System& sys, const std::vector<BernsteinPoly>& equations,
                          const std::vector<BernsteinPoly>& positive, const SolverOptions& o, bool square);
std::vector<Subdivision> subdivide_cpu_tasks(const std::vector<System>& systems,
                                             const std::vector<std::vector<BernsteinPoly>>& equations,
                                             const std::vector<std::vector<BernsteinPoly>>& positive,
                                             const SolverOptions& o, bool square);

}  // namespace parasurf::solver
