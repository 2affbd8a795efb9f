// Samples of many systems' solution sets in flat arrays, for the applications that merge and link them (surface
// intersections): one allocation per array instead of two per sample, and the rank test they need made where the
// Jacobian is at hand.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "parasurf/solver.hpp"

namespace parasurf::solver {

struct SampledSet {
  int n = 0;                     // variables
  std::vector<double> x;         // n per sample, in the unit box
  std::vector<double> tangent;   // n per sample when the set is a curve (equations = variables - 1), else empty
  std::vector<double> residual;  // one per sample
  // Per sample of a curve: the Jacobian's smallest singular value is at most 1e-7 times its largest (the
  // equations' gradients are dependent there: a tangential contact, or an area where surfaces coincide).
  std::vector<char> singular;
  std::string status = "complete";
  std::int64_t nodes = 0;
  std::size_t size() const { return residual.size(); }
};

// sample_solution_sets with the results flat; the same samples in the same order.
std::vector<SampledSet> sample_sets(const std::vector<std::vector<BernsteinPoly>>& equations, int variables,
                                    double resolution, const SolverOptions& o);

// link_polylines over flat arrays (n coordinates per point).
std::vector<std::vector<std::size_t>> link_polylines(const double* points, const double* tangents, std::size_t count,
                                                     std::size_t n, double spacing, int threads);

}  // namespace parasurf::solver
