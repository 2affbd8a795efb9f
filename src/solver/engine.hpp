// The subdivision engines behind solve_systems and sample_solution_sets: the CPU engine (solver.cpp) and the CUDA
// engines (solver_cuda.cu), which return the same cells so that one host finish (Newton, clustering) serves all.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "parasurf/solver.hpp"

namespace parasurf::solver {

struct Subdivision {
  std::vector<Root> proved;
  std::vector<std::pair<std::vector<double>, std::vector<double>>> candidates;  // cells at the tolerance
  std::vector<std::pair<std::vector<double>, std::vector<double>>> unique;      // cells proved to hold one root (GPU engines)
  std::string status = "complete";
  std::int64_t nodes = 0;
  double tolerance = 0;  // the final one (raised when a continuum fills the levels)
};

// The GPU engines on a batch of systems of one shape (the same number of polynomials with the same degrees: the
// equations first, then the inequalities). Hybrid: the CPU reads every level's test results and builds the next
// level's node list, as in Park et al. 2011; otherwise the levels stay on the GPU (compaction by a device scan).
std::vector<Subdivision> subdivide_cuda(const std::vector<std::vector<BernsteinPoly>>& polys, int equations, int variables, bool square,
                                        const SolverOptions& options, bool hybrid);

// The CUDA engines' counters behind solver_gpu_traffic (solver_cuda.cu).
using GpuTraffic = SolverGpuTraffic;
GpuTraffic gpu_traffic_cuda();

}  // namespace parasurf::solver
