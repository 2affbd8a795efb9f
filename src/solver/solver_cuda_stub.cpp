// Without a CUDA toolkit the solver runs on the CPU engine only.
#include "parasurf/error.hpp"
#include "solver/engine.hpp"

namespace parasurf::solver {
std::vector<Subdivision> subdivide_cuda(const std::vector<std::vector<BernsteinPoly>>&, int, int, bool, const SolverOptions&, bool) {
  throw Error(ErrorKind::Device, "this build has no CUDA backend (configure with a CUDA toolkit)");
}
GpuTraffic gpu_traffic() { return {}; }
}  // namespace parasurf::solver
