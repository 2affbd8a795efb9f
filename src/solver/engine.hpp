// The subdivision engines behind solve_systems and sample_solution_sets: the CPU engine (subdivide_cpu.cpp) and the
// CUDA engines (solver_cuda.cu), which return the same cells so that one host finish (Newton, clustering) serves all.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "parasurf/solver.hpp"

namespace parasurf::solver {

struct Subdivision {
  std::vector<Root> proved;
  std::vector<std::pair<std::vector<double>, std::vector<double>>> candidates;  // cells at the tolerance
  // Cells proved to hold one root (GPU engines), n lower then n upper bounds each: one run per system in arrays of
  // the engine's, which stay valid while the engine lives (a million rays leave hundreds of thousands of cells; as
  // vectors of each system's, made on one thread and freed on another, a batch of 10^4 systems spent longer
  // allocating and freeing them than the GPU spent finding them).
  std::span<const double> unique;
  // Where the engine settled them (the CUDA engines, on small square systems): each unique cell's root (n values)
  // and its residual, infinite where Newton did not settle and NaN where the host must settle the cell itself.
  std::span<const double> unique_x, unique_residual;
  // Cells at the tolerance from the GPU engines, laid out as `unique` (candidates holds the CPU engines').
  std::span<const double> candidate_boxes;
  std::string status = "complete";
  std::int64_t nodes = 0;
  double tolerance = 0;  // the final one (raised when a continuum fills the levels)
};

struct System;

// The cells a batch of `systems` may take in all: max_nodes per system, wherever its cells fall (engines that
// traverse a batch as one count the batch; a system's result then does not depend on how many others it came with).
inline std::int64_t batch_cell_limit(std::int64_t max_nodes, std::size_t systems) {
  const auto n = std::int64_t(std::max<std::size_t>(systems, 1));
  return max_nodes > std::numeric_limits<std::int64_t>::max() / n ? std::numeric_limits<std::int64_t>::max() : max_nodes * n;
}

// A solution curve (a continuum) fills the levels with candidate cells of the tolerance's size: past this many in a
// batch, every engine takes them at 1e-4. 200 per system, so a system's result does not depend on its batch.
inline std::int64_t continuum_candidate_limit(std::size_t systems) {
  return std::max<std::int64_t>(20000, 200 * std::int64_t(std::max<std::size_t>(systems, 1)));
}
inline constexpr double continuum_tolerance = 1e-4;
// A solution curve or surface also doubles the cells waiting to be split at every split: past this many waiting in
// a batch (2,000 per system), cells are taken at their size. Scaled with the batch, as the candidate limit is: a
// large batch of well-behaved systems starts with as many waiting roots, which must not make them regions.
inline std::int64_t continuum_waiting_limit(std::size_t systems) {
  return std::max<std::int64_t>(100000, 2000 * std::int64_t(std::max<std::size_t>(systems, 1)));
}

// Equations whose coefficients' rounding hides their sign over wide areas (coordinates of 1e18 beside ones of 1)
// multiply cells without a continuum's wide frontier: past this many cells of one system, the CPU engines take its
// cells at their size too.
inline constexpr std::int64_t continuum_system_cells = 400000;

// A batch of systems for the engines: each system with its equations and inequalities (positive may be empty:
// none anywhere); square: as many equations as variables (roots), else solution sets sampled.
struct Batch {
  const std::vector<System>& systems;
  const std::vector<std::vector<BernsteinPoly>>& equations;
  const std::vector<std::vector<BernsteinPoly>>& positive;
  const std::vector<int>& variables;  // of each system
  bool square;
  const std::vector<BernsteinPoly>& inequalities(std::size_t i) const {
    static const std::vector<BernsteinPoly> none;
    return positive.empty() ? none : positive[i];
  }
};

// The subdivision engines behind one entry: every backend (the CPU's two schemes, CUDA, hybrid) takes a batch and
// returns one subdivision per system, in order.
// The subdivisions may refer to arrays of the engine (Subdivision::unique): the caller keeps the engine while it
// reads them.
class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::vector<Subdivision> subdivide(const Batch& batch, const SolverOptions& options) = 0;
};
// The one place the solver chooses its engine: `device` resolved (cpu, cuda or hybrid).
std::unique_ptr<Engine> make_engine(Device device, SolverCpuScheme scheme);
// The device that runs a batch of `systems` under `options` (auto resolved by the batch's width).
Device engine_for(const SolverOptions& options, std::size_t systems);
// Throws InvalidArgument for a tolerance outside (0, 0.1] or a zero_slack that is negative or not finite: every
// entry checks them, also those (coincident curves, boxes that do not meet) that may solve no system at all.
void check_tolerances(const SolverOptions& options);
std::unique_ptr<Engine> make_cpu_engine(SolverCpuScheme scheme);  // subdivide_cpu.cpp
std::unique_ptr<Engine> make_cuda_engine(bool hybrid);            // solver_cuda.cu (CUDA builds)

// System i's polynomials: its equations, then its inequalities (shape_groups.cpp).
const BernsteinPoly& batch_poly(const Batch& b, std::size_t i, int p);
int batch_polys(const Batch& b, std::size_t i);
// The batch's systems grouped by shape (variables, equations, inequalities and every polynomial's degrees), each
// group in batch order, the groups in the order of their first members.
std::vector<std::vector<std::size_t>> shape_groups(const Batch& b, int threads);

// The GPU engines traverse a batch of systems of one shape (the same number of polynomials with the same degrees:
// the equations first, then the inequalities), each system's coefficients packed in one block, polynomial after
// polynomial (engine_cuda.cpp groups and packs a batch; solver_cuda.cu traverses it).
constexpr int kGpuMaxPolys = 16, kGpuMaxVars = 6;
struct GpuShape {
  int n = 0, m = 0, polys = 0;  // variables, equations, equations + inequalities
  int block = 0;                // coefficients per node
  int square = 1;
  double slack = 0;  // SolverOptions::zero_slack
  int size[kGpuMaxPolys] = {};
  int offset[kGpuMaxPolys] = {};
  int degree[kGpuMaxPolys][kGpuMaxVars] = {};
  int inner[kGpuMaxPolys][kGpuMaxVars] = {};  // product of (degree + 1) over the later variables
};

// The cells a traversal finished: cell i's box (n lower bounds, then n upper), its system (index in the batch) and
// whether it was proved to hold one root (else a candidate at the tolerance). The arrays are the lane's and stay
// valid until its next traversal.
struct GpuCells {
  std::int64_t count = 0;
  const double* box = nullptr;
  const int* system = nullptr;
  const int* unique = nullptr;
  // The roots of the unique cells (n each) and their residuals (settle_kernel), or null where the host settles them.
  const double* x = nullptr;
  const double* residual = nullptr;
  std::string status = "complete";
  std::int64_t nodes = 0;  // cells tested, all systems together
  double tolerance = 0;    // the final one
};

// Whether the CUDA engines settle proved cells on the device (settle_kernel; on unless a test compares with the
// host's settling of the same cells).
bool gpu_settling();
void set_gpu_settling(bool on);
// Whether the CUDA engines test and split the nodes of small square systems with kernels made for their shape (on
// unless a test compares them with the general kernels on the same batch).
bool gpu_small_shape_kernels();
void set_gpu_small_shape_kernels(bool on);
// Traversals that ran on those kernels since the process started (for such a test to see that they did).
std::int64_t gpu_small_shape_traversals();
void count_small_shape_traversal();

// The shape groups of a batch are traversed up to this many at once, each from a thread of its own on that
// thread's stream: a group's levels are mostly small kernels one after another, which leave the GPU idle.
constexpr int kGpuLanes = 4;
// A lane: pinned host memory for one group's coefficients (read by the GPU at the link's speed) and for the cells
// its traversal finishes (solver_cuda.cu). Each thread has kGpuLanes of them.
struct GpuLane;
GpuLane& gpu_lane(int i);  // the calling thread's lane i
int gpu_current_device();  // the calling thread's CUDA device, for the lanes' threads to use
void gpu_set_device(int device);
// Host memory for `doubles` coefficients in the lane, valid until its next use.
double* gpu_staging(GpuLane& lane, std::size_t doubles);

// One traversal of `systems` packed systems (coef: systems x shape.block), its cells returned in the lane's arrays;
// `lanes_running` traversals share the device's memory. Hybrid: the CPU reads every level's test results and builds
// the next level's node list, as in Park et al. 2011; otherwise the levels stay on the GPU (compaction by a device
// scan).
GpuCells subdivide_cuda(const GpuShape& shape, const double* coef, int systems, bool square, const SolverOptions& options,
                        bool hybrid, GpuLane& lane, int lanes_running);

// The CUDA engines' counters behind solver_gpu_traffic (solver_cuda.cu).
using GpuTraffic = SolverGpuTraffic;
GpuTraffic gpu_traffic_cuda();

}  // namespace parasurf::solver
