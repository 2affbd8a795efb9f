// GPU engines of the subdivision solver (Park, Elber, Kim, Kim, Seong, CAD 43 (2011): the GPU subdivides every
// candidate node of a level by de Casteljau and tests it; here also the single-root test, and Newton on the cells it
// proves for systems of up to three unknowns, so the host only clusters the tolerance cells, as for the CPU engine).
// Breadth first: every node of a level, of every system of the batch, is one warp. A level is classify (exclusion
// by sign, Krawczyk's test, tolerance, split axis) -> compaction of the nodes to split and of the finished cells ->
// split into two children. The GPU-resident engine compacts with a CUB scan and keeps the frontier's counts on the
// device: a one-thread kernel closes each level (totals, limits, the continuum's tolerance, the next count), so the
// host queues levels without waiting for them and looks at the state every few levels, or when a level's children
// do not fit and the buffers must grow (that level then runs again). The hybrid engine reads every node's verdict
// back and builds the compaction lists on the CPU (the paper's split of work: traversal on the CPU, subdivision and
// tests on the GPU, coefficients kept on the GPU). Batches are grouped and packed, and their cells handed back, in
// engine_cuda.cpp.
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/device_buffer.hpp"
#include "parasurf/error.hpp"
#include "solver/bernstein_kernels.hpp"
#include "solver/engine.hpp"
#include "solver/newton_kernels.hpp"

namespace parasurf::solver {

namespace {

constexpr int kMaxVars = kGpuMaxVars;
constexpr int kWarpsPerBlock = 4;
using Shape = GpuShape;

// Every traversal on its thread's own stream: shape groups of a batch are traversed at once from several threads
// (engine_cuda.cpp), which the legacy default stream would serialise.
const cudaStream_t kStream = cudaStreamPerThread;

// Device bytes into host memory, waited for.
void read_back(void* host, const void* device, std::size_t bytes, const char* what) {
  PS_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, kStream), what);
  PS_CUDA(cudaStreamSynchronize(kStream), what);
}

enum : int { kExcluded = 0, kUnique = 1, kCandidate = 2, kSplit = 3 };

// Bernstein weights at 1/2: C(d, i) / 2^d, for d < 64.
__constant__ double c_half_weight[64 * 64];

__device__ double warp_min(double v) {
  for (int o = 16; o > 0; o >>= 1) v = fmin(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ double warp_max(double v) {
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Atomic max of non-negative doubles through their bit patterns (ordered like the values).
__device__ void atomic_max_positive(unsigned long long* at, double v) { atomicMax(at, static_cast<unsigned long long>(__double_as_longlong(v))); }

struct LevelCounters {
  unsigned long long max_width;  // bit pattern of a non-negative double
  unsigned long long candidates;
};

// The frontier between levels, on the device (the resident engine): level L reads its node count from count[L & 1]
// and its level kernel writes the next level's into the other. The host writes the capacities and reads the rest.
struct LevelState {
  unsigned long long count[2];
  unsigned long long cap[2];        // nodes each parity's buffers hold
  unsigned long long cap_finished;  // finished cells the output holds
  unsigned long long finished;      // finished cells written
  unsigned long long out_base;      // where the running level's finished cells start
  unsigned long long nodes;         // cells tested
  unsigned long long candidates;    // tolerance cells
  unsigned long long bytes;         // coefficients read and written
  unsigned long long need;          // cells wanted, when a level halted or met the memory budget
  double tolerance;
  int levels;      // levels completed
  int halt;        // kHalt*: the level `levels` found its buffers too small, ran no split and waits for the host
  int done_level;  // the last level to run (-1 while the traversal goes on)
  int stop;        // kStop*: why the traversal ended early
};
enum : int { kHaltNone = 0, kHaltNodes = 1, kHaltFinished = 2 };
enum : int { kStopNone = 0, kStopCells = 1, kStopMemory = 2 };

// A batch's limits, as the host loop applied them between levels.
struct LevelLimits {
  long long max_nodes, waiting_limit, candidate_limit, budget_nodes;
  double continuum_tolerance;
  int square, block;
};

__device__ bool level_active(const LevelState* st, int level) {
  return st->halt == kHaltNone && (st->done_level < 0 || level <= st->done_level);
}

// The verdict on a node that no sign excluded (lane 0 of its warp), from the interval Jacobian `jac` (n x n, by
// equation), the centre values and the evaluation errors: Krawczyk's test where the system is square, a candidate
// below the tolerance, else a split along the variable of widest derivative range (scaled by the cell's width where
// the system is not square). N > 0: a square system of N unknowns, its loops unrolled; N = 0: any shape, n at run
// time.
template <int N>
__device__ int node_verdict(const Shape& sh, int n, double tolerance, const double* lo, const double* hi,
                            const solverk::Range* jac, const double* mid, const double* err, LevelCounters* counters,
                            int& axis) {
  const bool square = N > 0 || sh.square;
  double width = 0;
#pragma unroll
  for (int v = 0; v < (N > 0 ? N : n); ++v) width = fmax(width, hi[v] - lo[v]);
  int result = kSplit;
  if (square) {
    const solverk::CellTest t = solverk::krawczyk_test<N>(n, jac, mid, err);
    if (t == solverk::CellTest::Empty) result = kExcluded;
    else if (t == solverk::CellTest::Unique) result = kUnique;
  }
  if (result == kSplit && width < tolerance) result = kCandidate;
  if (result == kSplit) {
    double best = -1;
#pragma unroll
    for (int v = 0; v < (N > 0 ? N : n); ++v) {
      if (hi[v] - lo[v] < 0.5 * tolerance) continue;
      double var = 0;
#pragma unroll
      for (int e = 0; e < (N > 0 ? N : sh.m); ++e) var = fmax(var, fmax(fabs(jac[e * n + v].lo), fabs(jac[e * n + v].hi)));
      if (!square) var = var * (hi[v] - lo[v]) + 1e-300 * (hi[v] - lo[v]);
      if (var > best) best = var, axis = v;
    }
    atomic_max_positive(&counters->max_width, width);
  }
  if (result == kCandidate) atomicAdd(&counters->candidates, 1ull);
  return result;
}

// A node's verdict and axis, and its flags: both compactions in one scan, the split flag in the low half and the
// finished-cell flag in the high half.
__device__ void write_verdict(int node, int result, int axis, int* __restrict__ verdict, int* __restrict__ axis_out,
                              unsigned long long* __restrict__ flags) {
  verdict[node] = result;
  axis_out[node] = axis;
  flags[node] = (result == kSplit ? 1ull : 0ull) | ((result == kUnique || result == kCandidate) ? 1ull << 32 : 0ull);
}

// One node's verdict and, for a split, its axis (one warp; `sj`, `smid`, `serr` are the warp's shared scratch).
__device__ void classify_node(const Shape& sh, int node, double tolerance, const double* __restrict__ coef,
                              const double* __restrict__ box, int* __restrict__ verdict, int* __restrict__ axis_out,
                              unsigned long long* __restrict__ flags, LevelCounters* counters, solverk::Range* sj,
                              double* smid, double* serr) {
  const int lane = threadIdx.x % 32;
  const double* c = coef + static_cast<long long>(node) * sh.block;
  const double* lo = box + static_cast<long long>(node) * 2 * sh.n;
  const double* hi = lo + sh.n;
  // Exclusion: an equation of one sign (beyond the slack), or an inequality <= 0 everywhere.
  bool excluded = false;
  for (int p = 0; p < sh.polys && !excluded; ++p) {
    double mn = 1e308, mx = -1e308;
    for (int i = lane; i < sh.size[p]; i += 32) mn = fmin(mn, c[sh.offset[p] + i]), mx = fmax(mx, c[sh.offset[p] + i]);
    mn = warp_min(mn);
    mx = warp_max(mx);
    excluded = p < sh.m ? (mn > sh.slack || mx < -sh.slack) : !(mx > 0);
    if (p < sh.m && lane == 0) {
      int total = 0;
      for (int v = 0; v < sh.n; ++v) total += sh.degree[p][v];
      serr[p] = solverk::evaluation_error(fmax(fabs(mn), fabs(mx)), total) + sh.slack;  // (the slack as zero)
    }
  }
  int result = kExcluded, axis = 0;
  if (!excluded) {
    // Local derivative ranges n (c[i + inner] - c[i]) of every equation along every variable.
    for (int e = 0; e < sh.m; ++e)
      for (int v = 0; v < sh.n; ++v) {
        const int d = sh.degree[e][v], inner = sh.inner[e][v], line = (d + 1) * inner;
        double mn = 1e308, mx = -1e308;
        if (d > 0)
          for (int i = lane; i < sh.size[e]; i += 32) {
            if ((i % line) >= d * inner) continue;  // the last coefficient of its line along v
            const double x = d * (c[sh.offset[e] + i + inner] - c[sh.offset[e] + i]);
            mn = fmin(mn, x), mx = fmax(mx, x);
          }
        else
          mn = mx = 0;
        mn = warp_min(mn);
        mx = warp_max(mx);
        if (lane == 0) sj[e * sh.n + v] = {mn, mx};
      }
    // Values at the cell's centre: sum of coefficients times the Bernstein weights at 1/2.
    if (sh.square)
      for (int e = 0; e < sh.m; ++e) {
        double acc = 0;
        for (int i = lane; i < sh.size[e]; i += 32) {
          double w = 1;
          for (int v = 0; v < sh.n; ++v) {
            const int d = sh.degree[e][v], idx = (i / sh.inner[e][v]) % (d + 1);
            w *= c_half_weight[d * 64 + idx];
          }
          acc += w * c[sh.offset[e] + i];
        }
        acc = warp_sum(acc);
        if (lane == 0) smid[e] = acc;
      }
    __syncwarp();
    if (lane == 0) result = node_verdict<0>(sh, sh.n, tolerance, lo, hi, sj, smid, serr, counters, axis);
  }
  if (lane == 0) write_verdict(node, result, axis, verdict, axis_out, flags);
}

// Small square systems: the unknowns (N, 1 to 3) and polynomials (P: the N equations, then inequalities) are
// constants, and every polynomial's degree along any variable is below kSmallLine. classify_node's test, step for
// step (the same cells, bit for bit), with the loops over polynomials, equations and variables unrolled: the warp's
// reductions are independent of one another, so their shuffles overlap instead of forming one long chain, and the
// interval Jacobian, the centre values and Krawczyk's matrix stay in registers. At a narrow frontier a level's time
// is one node's test from start to end.
constexpr int kSmallLine = 8;

template <int N, int P>
__device__ void classify_small(const Shape& sh, int node, double tolerance, const double* __restrict__ coef,
                               const double* __restrict__ box, int* __restrict__ verdict, int* __restrict__ axis_out,
                               unsigned long long* __restrict__ flags, LevelCounters* counters) {
  const int lane = threadIdx.x % 32;
  const double* c = coef + static_cast<long long>(node) * sh.block;
  const double* lo = box + static_cast<long long>(node) * 2 * N;
  const double* hi = lo + N;
  double mn[P], mx[P];
#pragma unroll
  for (int p = 0; p < P; ++p) {
    mn[p] = 1e308, mx[p] = -1e308;
    for (int i = lane; i < sh.size[p]; i += 32) mn[p] = fmin(mn[p], c[sh.offset[p] + i]), mx[p] = fmax(mx[p], c[sh.offset[p] + i]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
#pragma unroll
    for (int p = 0; p < P; ++p)
      mn[p] = fmin(mn[p], __shfl_xor_sync(0xffffffffu, mn[p], o)), mx[p] = fmax(mx[p], __shfl_xor_sync(0xffffffffu, mx[p], o));
  bool excluded = false;
  double err[N];
#pragma unroll
  for (int p = 0; p < P; ++p) {
    excluded = excluded || (p < N ? (mn[p] > sh.slack || mx[p] < -sh.slack) : !(mx[p] > 0));
    if (p < N) {
      int total = 0;
#pragma unroll
      for (int v = 0; v < N; ++v) total += sh.degree[p][v];
      err[p < N ? p : 0] = solverk::evaluation_error(fmax(fabs(mn[p]), fabs(mx[p])), total) + sh.slack;
    }
  }
  int result = kExcluded, axis = 0;
  if (!excluded) {
    solverk::Range jac[N * N];
    double mid[N];
#pragma unroll
    for (int e = 0; e < N; ++e) {
#pragma unroll
      for (int v = 0; v < N; ++v) {
        const int d = sh.degree[e][v], inner = sh.inner[e][v], line = (d + 1) * inner;
        double a = 1e308, b = -1e308;
        if (d > 0)
          for (int i = lane; i < sh.size[e]; i += 32) {
            if ((i % line) >= d * inner) continue;  // the last coefficient of its line along v
            const double x = d * (c[sh.offset[e] + i + inner] - c[sh.offset[e] + i]);
            a = fmin(a, x), b = fmax(b, x);
          }
        else
          a = b = 0;
        jac[e * N + v] = {a, b};
      }
      double acc = 0;
      for (int i = lane; i < sh.size[e]; i += 32) {
        double w = 1;
#pragma unroll
        for (int v = 0; v < N; ++v) {
          const int d = sh.degree[e][v], idx = (i / sh.inner[e][v]) % (d + 1);
          w *= c_half_weight[d * 64 + idx];
        }
        acc += w * c[sh.offset[e] + i];
      }
      mid[e] = acc;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int e = 0; e < N; ++e) {
#pragma unroll
        for (int v = 0; v < N; ++v)
          jac[e * N + v].lo = fmin(jac[e * N + v].lo, __shfl_xor_sync(0xffffffffu, jac[e * N + v].lo, o)),
          jac[e * N + v].hi = fmax(jac[e * N + v].hi, __shfl_xor_sync(0xffffffffu, jac[e * N + v].hi, o));
        mid[e] += __shfl_xor_sync(0xffffffffu, mid[e], o);
      }
    if (lane == 0) result = node_verdict<N>(sh, N, tolerance, lo, hi, jac, mid, err, counters, axis);
  }
  if (lane == 0) write_verdict(node, result, axis, verdict, axis_out, flags);
}

// A block's counters, gathered in shared memory and added to the level's once: every node of a narrow level
// updating the same two words would queue them at one address.
struct BlockCounters {
  LevelCounters shared;
  __device__ void start() {
    if (threadIdx.x == 0) shared = {0ull, 0ull};
    __syncthreads();
  }
  __device__ void finish(LevelCounters* level) {
    __syncthreads();
    if (threadIdx.x == 0) {
      if (shared.max_width) atomicMax(&level->max_width, shared.max_width);
      if (shared.candidates) atomicAdd(&level->candidates, shared.candidates);
    }
  }
};

// One warp per node (N = 0: any shape; else classify_small's). The resident engine passes its state (the level's
// count and tolerance come from it, and the flags past the count, up to `scanned`, are cleared for the scan); the
// hybrid engine passes both as arguments.
// (The general kernel keeps within 64 registers, as it did without bounds; the small ones may take what their
// unrolled test needs rather than spill.)
template <int N, int P>
__global__ void __launch_bounds__(32 * kWarpsPerBlock, N == 0 ? 8 : 1)
    classify_kernel(Shape sh, int count, double tolerance, const LevelState* st, int level, long long scanned,
                    const double* __restrict__ coef, const double* __restrict__ box, int* __restrict__ verdict,
                    int* __restrict__ axis_out, unsigned long long* __restrict__ flags, LevelCounters* counters) {
  if (st) {
    if (!level_active(st, level)) return;
    count = int(st->count[level & 1]);
    tolerance = st->tolerance;
  }
  const int warp = threadIdx.x / 32;
  __shared__ BlockCounters block;
  block.start();
  for (int node = blockIdx.x * kWarpsPerBlock + warp; node < count; node += gridDim.x * kWarpsPerBlock) {
    if constexpr (N == 0) {
      __shared__ solverk::Range s_jac[kWarpsPerBlock][kMaxVars * kMaxVars];
      __shared__ double s_mid[kWarpsPerBlock][kMaxVars];
      __shared__ double s_err[kWarpsPerBlock][kMaxVars];
      classify_node(sh, node, tolerance, coef, box, verdict, axis_out, flags, &block.shared, s_jac[warp], s_mid[warp], s_err[warp]);
    } else {
      classify_small<N, P>(sh, node, tolerance, coef, box, verdict, axis_out, flags, &block.shared);
    }
    __syncwarp();
  }
  block.finish(counters);
  for (long long i = count + static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < scanned;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    flags[i] = 0;
}

struct LevelTotals {
  unsigned long long splits, outs, candidates, max_width;
};

// The level's totals in one record (one read-back per level), and the counters cleared for the next level.
__global__ void totals_kernel(const unsigned long long* flags, const unsigned long long* index, int count, LevelCounters* counters,
                              LevelTotals* totals) {
  const unsigned long long last = index[count - 1] + flags[count - 1];
  *totals = {last & 0xffffffffull, last >> 32, counters->candidates, counters->max_width};
  *counters = {0ull, 0ull};
}

// The resident engine's level, closed by one thread: its totals, the limits the host loop applied between levels,
// the continuum's tolerance and the next level's count. A level whose children or finished cells do not fit halts
// before its split (the host grows the buffers and runs it again); the counters are cleared either way.
__global__ void level_kernel(LevelState* st, int level, LevelLimits lim, const unsigned long long* flags,
                             const unsigned long long* index, LevelCounters* counters) {
  if (!level_active(st, level)) return;
  const int p = level & 1;
  const unsigned long long n = st->count[p];
  const unsigned long long last = index[n - 1] + flags[n - 1];
  const unsigned long long splits = last & 0xffffffffull, outs = last >> 32, children = 2 * splits;
  const LevelCounters c = *counters;
  *counters = {0ull, 0ull};
  const bool memory = static_cast<long long>(children) > lim.budget_nodes;
  if (!memory && children > st->cap[1 - p]) {
    st->halt = kHaltNodes;
    st->need = children;
    return;
  }
  if (st->finished + outs > st->cap_finished) {
    st->halt = kHaltFinished;
    st->need = st->finished + outs;
    return;
  }
  st->out_base = st->finished;
  st->finished += outs;
  st->nodes += n;
  st->candidates += c.candidates;
  st->bytes += (n + 3 * splits) * static_cast<unsigned long long>(lim.block) * sizeof(double);
  st->levels = level + 1;
  if (memory) {  // the level's finished cells are kept, its children dropped: the traversal ends here
    st->stop = kStopMemory;
    st->need = children;
    st->count[1 - p] = 0;
    st->done_level = level;
    return;
  }
  st->count[1 - p] = children;
  // As on the CPU: a continuum fills the levels; past these sizes its cells are taken at the current width.
  if (lim.square && static_cast<long long>(children) > lim.waiting_limit)
    st->tolerance = fmax(st->tolerance, 1.01 * __longlong_as_double(static_cast<long long>(c.max_width)));
  if (lim.square && static_cast<long long>(st->candidates) > lim.candidate_limit && st->tolerance < lim.continuum_tolerance)
    st->tolerance = lim.continuum_tolerance;
  if (children == 0) {
    st->done_level = level;
  } else if (static_cast<long long>(st->nodes + children) > lim.max_nodes) {
    st->stop = kStopCells;
    st->done_level = level;
  }
}

// The lines of split_node for small shapes (see classify_small): at most kSmallLine coefficients a line, held in
// registers (every index a constant; the right child's coefficient of each round is the round's last one, kept as
// it is made). The same combinations in the same order as split_node's.
template <int N, int P>
__device__ void split_small_lines(const Shape& sh, int axis, const double* __restrict__ c, double* __restrict__ cl,
                                  double* __restrict__ cr) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int d = sh.degree[p][axis], inner = sh.inner[p][axis], n = d + 1, lines = sh.size[p] / n;
    for (int line = lane; line < lines; line += 32) {
      const int at = sh.offset[p] + (line / inner) * n * inner + line % inner;
      double w[kSmallLine], last = 0;
#pragma unroll
      for (int i = 0; i < kSmallLine; ++i)
        if (i < n) {
          w[i] = c[at + i * inner];
          if (i == n - 1) last = w[i];
        }
      cl[at] = w[0];
      cr[at + (n - 1) * inner] = last;
#pragma unroll
      for (int r = 1; r < kSmallLine; ++r) {
        if (r >= n) break;
#pragma unroll
        for (int i = 0; i + r < kSmallLine; ++i)
          if (i + r < n) {
            w[i] = (1 - solverk::kSplitAt) * w[i] + solverk::kSplitAt * w[i + 1];
            if (i + r == n - 1) last = w[i];
          }
        cl[at + r * inner] = w[0];
        cr[at + (n - 1 - r) * inner] = last;
      }
    }
  }
}

// One warp per node: a split node writes its two children (de Casteljau at 1/2 along its axis, a line per lane);
// a finished cell writes its record. The resident engine's state gives the count and where finished cells go.
template <int N, int P>
__device__ void split_node(const Shape& sh, int node, const double* __restrict__ coef, const double* __restrict__ box,
                           const int* __restrict__ system, const int* __restrict__ verdict, const int* __restrict__ axis_of,
                           const unsigned long long* __restrict__ index, double* __restrict__ next_coef,
                           double* __restrict__ next_box, int* __restrict__ next_system, double* __restrict__ out_box,
                           int* __restrict__ out_system, int* __restrict__ out_verdict, long long out_base) {
  const int lane = threadIdx.x % 32;
  const int v = verdict[node];
  const double* b = box + static_cast<long long>(node) * 2 * sh.n;
  if (v == kUnique || v == kCandidate) {
    const long long at = out_base + static_cast<long long>(index[node] >> 32);
    if (lane < 2 * sh.n) out_box[at * 2 * sh.n + lane] = b[lane];
    if (lane == 0) out_system[at] = system[node], out_verdict[at] = v;
    return;
  }
  if (v != kSplit || next_coef == nullptr) return;  // no next level when a limit stopped the traversal
  const int axis = axis_of[node];
  const long long left = 2ll * static_cast<long long>(index[node] & 0xffffffffull), right = left + 1;
  if (lane < 2 * sh.n) {
    const double mid = b[axis] + solverk::kSplitAt * (b[sh.n + axis] - b[axis]);
    double l = b[lane], r = b[lane];
    if (lane == sh.n + axis) l = mid;  // the left child's upper bound
    if (lane == axis) r = mid;         // the right child's lower bound
    next_box[left * 2 * sh.n + lane] = l;
    next_box[right * 2 * sh.n + lane] = r;
  }
  if (lane == 0) next_system[left] = next_system[right] = system[node];
  const double* c = coef + static_cast<long long>(node) * sh.block;
  double* cl = next_coef + left * sh.block;
  double* cr = next_coef + right * sh.block;
  if constexpr (N > 0) {
    split_small_lines<N, P>(sh, axis, c, cl, cr);
  } else {
    for (int p = 0; p < sh.polys; ++p) {
      const int d = sh.degree[p][axis], inner = sh.inner[p][axis], n = d + 1, lines = sh.size[p] / n;
      for (int line = lane; line < lines; line += 32) {
        const int at = sh.offset[p] + (line / inner) * n * inner + line % inner;
        double w[64];
        for (int i = 0; i < n; ++i) w[i] = c[at + i * inner];
        cl[at] = w[0];
        cr[at + (n - 1) * inner] = w[n - 1];
        for (int r = 1; r < n; ++r) {
          for (int i = 0; i + r < n; ++i) w[i] = (1 - solverk::kSplitAt) * w[i] + solverk::kSplitAt * w[i + 1];
          cl[at + r * inner] = w[0];
          cr[at + (n - 1 - r) * inner] = w[n - 1 - r];
        }
      }
    }
  }
}

template <int N, int P>
__global__ void split_kernel(Shape sh, int count, const LevelState* st, int level, const double* __restrict__ coef,
                             const double* __restrict__ box, const int* __restrict__ system, const int* __restrict__ verdict,
                             const int* __restrict__ axis_of, const unsigned long long* __restrict__ index,
                             double* next_coef, double* next_box, int* next_system, double* __restrict__ out_box,
                             int* __restrict__ out_system, int* __restrict__ out_verdict, long long out_base) {
  if (st) {
    if (!level_active(st, level)) return;
    count = int(st->count[level & 1]);
    out_base = static_cast<long long>(st->out_base);
    if (st->stop == kStopMemory) next_coef = nullptr, next_box = nullptr, next_system = nullptr;
  }
  const int warp = threadIdx.x / 32;
  for (int node = blockIdx.x * kWarpsPerBlock + warp; node < count; node += gridDim.x * kWarpsPerBlock) {
    split_node<N, P>(sh, node, coef, box, system, verdict, axis_of, index, next_coef, next_box, next_system, out_box, out_system,
                     out_verdict, out_base);
    __syncwarp();
  }
}

// The kernels for a shape: classify_small's and split_small_lines' for small square systems, else the general ones.
struct LevelKernels {
  decltype(&classify_kernel<0, 0>) classify;
  decltype(&split_kernel<0, 0>) split;
};
template <int N, int P>
LevelKernels level_kernels_of() {
  return {&classify_kernel<N, P>, &split_kernel<N, P>};
}
LevelKernels level_kernels(const Shape& sh, bool square) {
  bool small = gpu_small_shape_kernels() && square && sh.square && sh.m == sh.n && sh.n >= 1 && sh.n <= 3 &&
               sh.polys >= sh.n && sh.polys <= sh.n + 1;
  for (int p = 0; small && p < sh.polys; ++p)
    for (int v = 0; v < sh.n; ++v) small = small && sh.degree[p][v] < kSmallLine;
  if (!small) return level_kernels_of<0, 0>();
  count_small_shape_traversal();
  switch (sh.n * 2 + (sh.polys - sh.n)) {
    case 2: return level_kernels_of<1, 1>();
    case 3: return level_kernels_of<1, 2>();
    case 4: return level_kernels_of<2, 2>();
    case 5: return level_kernels_of<2, 3>();
    case 6: return level_kernels_of<3, 3>();
    default: return level_kernels_of<3, 4>();
  }
}

// A device array that keeps its contents when it grows.
struct GrowingBuffer {
  core::DeviceBuffer buf;
  void ensure_keep(std::size_t bytes, std::size_t used, const char* what) {
    if (bytes <= buf.bytes) return;
    core::DeviceBuffer bigger;
    bigger.ensure(std::max(bytes, 2 * buf.bytes), what);
    if (used) PS_CUDA(cudaMemcpyAsync(bigger.ptr, buf.ptr, used, cudaMemcpyDeviceToDevice, kStream), what);
    std::swap(bigger.ptr, buf.ptr);
    std::swap(bigger.bytes, buf.bytes);
  }
};

std::atomic<std::int64_t> g_bytes{0}, g_levels{0}, g_cells{0}, g_settled{0};

// `__constant__` memory is per device: each device a process solves on gets the weights once, on its first
// traversal, whichever thread makes it current.
void upload_weights() {
  static std::mutex mutex;
  static std::vector<char> uploaded;  // indexed by device ordinal
  int device = 0;
  PS_CUDA(cudaGetDevice(&device), "querying the current CUDA device");
  std::lock_guard<std::mutex> lock(mutex);
  if (device < static_cast<int>(uploaded.size()) && uploaded[device]) return;
  std::vector<double> w(64 * 64, 0.0);
  for (int d = 0; d < 64; ++d) {
    double binom = 1;
    for (int i = 0; i <= d; ++i) {
      w[d * 64 + i] = binom * std::ldexp(1.0, -d);
      binom = binom * (d - i) / (i + 1);
    }
  }
  PS_CUDA(cudaMemcpyToSymbol(c_half_weight, w.data(), w.size() * sizeof(double)), "uploading the Bernstein weights");
  if (device >= static_cast<int>(uploaded.size())) uploaded.resize(device + 1, 0);
  uploaded[device] = 1;
}

// Grows a work array by half again beyond the request: a batch's levels widen step by step, and each new
// allocation (with the free before it) waits for the device.
void grow(core::DeviceBuffer& b, std::size_t n, const char* what) {
  if (n > b.bytes) b.ensure(n + n / 2, what);
}

// Level 0: one node per system, on its unit box.
__global__ void roots_kernel(int systems, int n, double* __restrict__ box, int* __restrict__ system) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= systems) return;
  for (int v = 0; v < n; ++v) box[std::size_t(s) * 2 * n + v] = 0, box[std::size_t(s) * 2 * n + n + v] = 1;
  system[s] = s;
}

// The device settles the cells proved to hold one root of small square systems (newton_kernels.hpp) up to this
// degree per variable; the host settles the others.
constexpr int kSettleMaxDegree = 15;

bool settled_on_device(const Shape& sh, bool square) {
  if (!gpu_settling() || !square || sh.m != sh.n || sh.n > solverk::kNewtonMaxVars) return false;
  for (int p = 0; p < sh.m; ++p)
    for (int v = 0; v < sh.n; ++v)
      if (sh.degree[p][v] > kSettleMaxDegree) return false;
  return true;
}

// Newton from the middle of every finished cell proved to hold one root, in the cell, on the system's own
// coefficients, as the host finish does it: steps to `tolerance` (30 at most), then up to 5 more to 1e-10 where
// the first did not settle. Out: the point and its residual (the largest |equation|), or an infinite residual
// where Newton did not settle, or NaN where the host must settle the cell (a step needed least squares).
__global__ void settle_kernel(Shape sh, long long count, const double* __restrict__ coef, const double* __restrict__ box,
                              const int* __restrict__ system, const int* __restrict__ verdict, double tolerance,
                              double* __restrict__ x_out, double* __restrict__ residual_out) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= count || verdict[i] != kUnique) return;
  const int n = sh.n;
  const double* c = coef + std::size_t(system[i]) * std::size_t(sh.block);
  const double* lo = box + i * 2 * n;
  const double* hi = lo + n;
  double x[solverk::kNewtonMaxVars];
  for (int k = 0; k < n; ++k) x[k] = 0.5 * (lo[k] + hi[k]);
  auto eval = [&](const double* at, double* jac, double* f) {
    solverk::PointBases<kSettleMaxDegree> bases;
    for (int p = 0; p < n; ++p) f[p] = solverk::value_and_gradient(c + sh.offset[p], n, sh.degree[p], at, bases, jac + p * n);
  };
  auto refuse = [](const double*, const double*, double*) { return false; };
  int r = solverk::newton_in_box(n, eval, refuse, x, lo, hi, tolerance, 30);
  if (r == solverk::kNewtonFailed) r = solverk::newton_in_box(n, eval, refuse, x, lo, hi, 1e-10, 5);
  double residual = r == solverk::kNewtonConverged ? 0.0 : r == solverk::kNewtonFailed ? HUGE_VAL : NAN;
  if (r == solverk::kNewtonConverged) {
    double jac[solverk::kNewtonMaxVars * solverk::kNewtonMaxVars], f[solverk::kNewtonMaxVars];
    eval(x, jac, f);
    for (int p = 0; p < n; ++p) residual = fabs(f[p]) > residual ? fabs(f[p]) : residual;
  }
  for (int k = 0; k < n; ++k) x_out[i * n + k] = x[k];
  residual_out[i] = residual;
}

// Pinned host memory, grown to the largest request.
struct PinnedBuffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  ~PinnedBuffer() {
    if (ptr) cudaFreeHost(ptr);
  }
  void* ensure(std::size_t n, const char* what) {
    if (n <= bytes) return ptr;
    if (ptr) cudaFreeHost(ptr), ptr = nullptr, bytes = 0;
    PS_CUDA(cudaMallocHost(&ptr, std::max<std::size_t>(n, 1)), what);
    bytes = n;
    return ptr;
  }
};

// The resident engine's buffers (the thread's workspace) and its state on the device.
struct ResidentLevels {
  core::DeviceBuffer *coef, *box, *sys;
  core::DeviceBuffer &verdict, &axis, &flags, &index, &scan_temp, &counters;
  GrowingBuffer &out_box, &out_system, &out_verdict;
  core::DeviceBuffer state;
  LevelState* pinned = nullptr;  // the state's copy on the host
  ~ResidentLevels() {
    if (pinned) cudaFreeHost(pinned);
  }
};

// The host looks at the device's state after this many levels: often enough that a level past the end or a halt
// costs little (its kernels return at once), rarely enough that the levels run back to back.
constexpr int kLevelsPerLook = 8;

int block_limit() {
  static const int limit = [] {
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
      sms = 132;
    return 8 * std::max(sms, 1);
  }();
  return limit;
}

// Between levels (both engines): the time limit and the caller's stop, then its progress hook. True when the
// traversal must end here, with `status` saying why.
bool stopped_between_levels(const SolverOptions& o, std::chrono::steady_clock::time_point t0, int level,
                            std::int64_t frontier, std::string& status) {
  if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > o.max_seconds) {
    status = "limit reached: " + std::to_string(o.max_seconds) + " s (partial result)";
    return true;
  }
  if (o.stop && o.stop()) {
    status = "interrupted (partial result)";
    return true;
  }
  if (o.progress) o.progress(level, frontier);
  return false;
}

// The levels of a batch with the frontier kept on the device (level 0, one node per system, is in coef[0], box[0],
// sys[0]); finished cells in out_*. The limits are those of the hybrid loop below, applied by level_kernel, except
// time and interruption, which the host checks every kLevelsPerLook levels.
void resident_levels(ResidentLevels& r, const Shape& sh, int systems, bool square, const SolverOptions& o, double memory_budget,
                     std::int64_t max_nodes, std::chrono::steady_clock::time_point t0, std::string& status, std::int64_t& nodes,
                     std::int64_t& finished, std::int64_t& candidates, double& tolerance) {
  const std::size_t node_bytes = std::size_t(sh.block) * sizeof(double), box_bytes = 2 * std::size_t(sh.n) * sizeof(double);
  auto node_cap = [&](int p) {
    return std::min({r.coef[p].bytes / node_bytes, r.box[p].bytes / box_bytes, r.sys[p].bytes / sizeof(int)});
  };
  auto finished_cap = [&] {
    return std::min({r.out_box.buf.bytes / box_bytes, r.out_system.buf.bytes / sizeof(int), r.out_verdict.buf.bytes / sizeof(int)});
  };
  auto grow_nodes = [&](int p, std::size_t cells) {
    grow(r.coef[p], cells * node_bytes, "allocating solver nodes");
    grow(r.box[p], cells * box_bytes, "allocating solver nodes");
    grow(r.sys[p], cells * sizeof(int), "allocating solver nodes");
  };
  // Per-level arrays for the larger parity, and the scan's scratch for as many flags.
  std::size_t scan_bytes = 0;
  auto size_level_arrays = [&] {
    const std::size_t most = std::max(node_cap(0), node_cap(1));
    grow(r.verdict, most * sizeof(int), "allocating node verdicts");
    grow(r.axis, most * sizeof(int), "allocating node verdicts");
    grow(r.flags, most * sizeof(unsigned long long), "allocating node verdicts");
    grow(r.index, most * sizeof(unsigned long long), "allocating node verdicts");
    PS_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, r.flags.as<unsigned long long>(), r.index.as<unsigned long long>(),
                                          int(most), kStream),
            "sizing the node scan");
    grow(r.scan_temp, scan_bytes, "allocating the node scan");
    scan_bytes = r.scan_temp.bytes;
  };
  grow_nodes(1, 2 * std::size_t(systems));  // room for every system's two children
  r.out_box.ensure_keep(std::size_t(systems) * box_bytes, 0, "allocating finished cells");
  r.out_system.ensure_keep(std::size_t(systems) * sizeof(int), 0, "allocating finished cells");
  r.out_verdict.ensure_keep(std::size_t(systems) * sizeof(int), 0, "allocating finished cells");
  size_level_arrays();
  r.state.ensure(sizeof(LevelState), "allocating the level state");
  if (!r.pinned) PS_CUDA(cudaMallocHost(&r.pinned, sizeof(LevelState)), "allocating the level state");
  LevelState& s = *r.pinned;
  s = {};
  s.count[0] = std::uint64_t(systems);
  s.cap[0] = node_cap(0), s.cap[1] = node_cap(1), s.cap_finished = finished_cap();
  s.tolerance = tolerance;
  s.done_level = -1;
  const LevelLimits lim{max_nodes,
                        continuum_waiting_limit(std::size_t(systems)),
                        continuum_candidate_limit(std::size_t(systems)),
                        static_cast<long long>(std::min(memory_budget / double(node_bytes + box_bytes), 9e18)),
                        continuum_tolerance,
                        square ? 1 : 0,
                        sh.block};
  auto* st = r.state.as<LevelState>();
  if (std::int64_t(systems) > max_nodes) {
    status = "limit reached: " + std::to_string(max_nodes) + " cells (partial result)";
    return;
  }
  PS_CUDA(cudaMemcpyAsync(st, &s, sizeof s, cudaMemcpyHostToDevice, kStream), "writing the level state");
  const LevelKernels kernels = level_kernels(sh, square);
  int level = 0;
  long long reach = systems;  // at most this many nodes in the next level queued (its grid covers them)
  for (;;) {
    if (stopped_between_levels(o, t0, level, reach, status)) break;
    for (int k = 0; k < kLevelsPerLook; ++k, ++level) {
      const int p = level & 1;
      const int blocks = int(std::min<long long>((reach + kWarpsPerBlock - 1) / kWarpsPerBlock, block_limit()));
      kernels.classify<<<blocks, 32 * kWarpsPerBlock, 0, kStream>>>(sh, 0, 0, st, level, reach, r.coef[p].as<double>(), r.box[p].as<double>(),
                                                       r.verdict.as<int>(), r.axis.as<int>(), r.flags.as<unsigned long long>(),
                                                       r.counters.as<LevelCounters>());
      PS_CUDA_LAUNCH("testing solver nodes");
      PS_CUDA(cub::DeviceScan::ExclusiveSum(r.scan_temp.ptr, scan_bytes, r.flags.as<unsigned long long>(),
                                            r.index.as<unsigned long long>(), int(reach), kStream),
              "scanning the nodes");
      level_kernel<<<1, 1, 0, kStream>>>(st, level, lim, r.flags.as<unsigned long long>(), r.index.as<unsigned long long>(),
                             r.counters.as<LevelCounters>());
      PS_CUDA_LAUNCH("closing a level");
      kernels.split<<<blocks, 32 * kWarpsPerBlock, 0, kStream>>>(sh, 0, st, level, r.coef[p].as<double>(), r.box[p].as<double>(), r.sys[p].as<int>(),
                                                    r.verdict.as<int>(), r.axis.as<int>(), r.index.as<unsigned long long>(),
                                                    r.coef[1 - p].as<double>(), r.box[1 - p].as<double>(), r.sys[1 - p].as<int>(),
                                                    r.out_box.buf.as<double>(), r.out_system.buf.as<int>(), r.out_verdict.buf.as<int>(), 0);
      PS_CUDA_LAUNCH("splitting solver nodes");
      reach = std::min<long long>(2 * reach, static_cast<long long>(s.cap[1 - p]));
    }
    read_back(&s, st, sizeof s, "reading the level state");
    level = s.levels;
    const int p = level & 1;
    if (s.halt != kHaltNone) {  // level `level` runs again with room for what it needs
      if (s.halt == kHaltNodes) {
        grow_nodes(1 - p, std::size_t(s.need));
        s.cap[1 - p] = node_cap(1 - p);
        size_level_arrays();
      } else {
        r.out_box.ensure_keep(std::size_t(s.need) * box_bytes, std::size_t(s.finished) * box_bytes, "allocating finished cells");
        r.out_system.ensure_keep(std::size_t(s.need) * sizeof(int), std::size_t(s.finished) * sizeof(int), "allocating finished cells");
        r.out_verdict.ensure_keep(std::size_t(s.need) * sizeof(int), std::size_t(s.finished) * sizeof(int), "allocating finished cells");
        s.cap_finished = finished_cap();
      }
      s.halt = kHaltNone;
      PS_CUDA(cudaMemcpyAsync(st, &s, sizeof s, cudaMemcpyHostToDevice, kStream), "writing the level state");
      reach = static_cast<long long>(s.count[p]);
      continue;
    }
    if (s.done_level >= 0) break;
    reach = static_cast<long long>(s.count[p]);
  }
  if (s.stop == kStopCells) status = "limit reached: " + std::to_string(max_nodes) + " cells (partial result)";
  if (s.stop == kStopMemory)
    status = "limit reached: device memory (" + std::to_string(s.need) + " cells in one level) (partial result)";
  nodes = std::int64_t(s.nodes);
  finished = std::int64_t(s.finished);
  candidates = std::int64_t(s.candidates);
  tolerance = s.tolerance;
  g_bytes += std::int64_t(s.bytes);
  g_levels += s.levels;
  g_cells += std::int64_t(s.nodes);
}

}  // namespace

struct GpuLane {
  PinnedBuffer staging, r_box, r_system, r_verdict, r_x, r_residual;
};

GpuLane& gpu_lane(int i) {
  thread_local GpuLane lanes[kGpuLanes];
  return lanes[i];
}

int gpu_current_device() {
  int device = 0;
  PS_CUDA(cudaGetDevice(&device), "reading the current CUDA device");
  return device;
}

void gpu_set_device(int device) { PS_CUDA(cudaSetDevice(device), "selecting the CUDA device"); }

double* gpu_staging(GpuLane& lane, std::size_t doubles) {
  return static_cast<double*>(lane.staging.ensure(doubles * sizeof(double), "pinning host memory for the solver's systems"));
}

// One function: the level loop keeps the frontier, its double buffer and the per-level counters on the device
// between iterations; its set-up and hand-back sit around that loop.
GpuCells subdivide_cuda(const Shape& sh, const double* h_coef, int systems, bool square, const SolverOptions& o, bool hybrid,
                        GpuLane& lane, int lanes_running) {
  GpuCells result;
  if (systems <= 0) return result;
  upload_weights();
  // Work arrays live as long as the thread and grow to the largest batch (a solve is often many small batches).
  struct Workspace {
    core::DeviceBuffer coef[2], box[2], sys[2], verdict, axis, flags, index, scan_temp, counters, totals;
    core::DeviceBuffer root_coef, settled_x, settled_residual;  // the systems as given; the proved cells' roots
    GrowingBuffer out_box, out_system, out_verdict;
    ResidentLevels level{coef, box, sys, verdict, axis, flags, index, scan_temp, counters, out_box, out_system, out_verdict};
    LevelTotals* pinned = nullptr;
    ~Workspace() {
      if (pinned) cudaFreeHost(pinned);
    }
  };
  thread_local Workspace ws;
  auto &coef = ws.coef, &box = ws.box, &sys = ws.sys;
  auto &verdict = ws.verdict, &axis = ws.axis, &flags = ws.flags, &index = ws.index, &scan_temp = ws.scan_temp;
  auto &counters = ws.counters, &totals = ws.totals;
  auto &out_box = ws.out_box, &out_system = ws.out_system, &out_verdict = ws.out_verdict;
  int cur = 0;
  const std::size_t coef_bytes = std::size_t(systems) * std::size_t(sh.block) * sizeof(double);
  grow(coef[0], coef_bytes, "allocating solver nodes");
  grow(box[0], std::size_t(systems) * 2 * sh.n * sizeof(double), "allocating solver nodes");
  grow(sys[0], std::size_t(systems) * sizeof(int), "allocating solver nodes");
  PS_CUDA(cudaMemcpyAsync(coef[0].ptr, h_coef, coef_bytes, cudaMemcpyHostToDevice, kStream), "uploading the systems");
  const bool settle = settled_on_device(sh, square);
  if (settle) {  // (the levels overwrite coef[0])
    grow(ws.root_coef, coef_bytes, "allocating solver nodes");
    PS_CUDA(cudaMemcpyAsync(ws.root_coef.ptr, coef[0].ptr, coef_bytes, cudaMemcpyDeviceToDevice, kStream), "keeping the systems");
  }
  roots_kernel<<<(systems + 255) / 256, 256, 0, kStream>>>(systems, sh.n, box[0].as<double>(), sys[0].as<int>());
  PS_CUDA_LAUNCH("placing the systems");
  counters.ensure(sizeof(LevelCounters), "allocating counters");
  totals.ensure(sizeof(LevelTotals), "allocating counters");
  PS_CUDA(cudaMemsetAsync(counters.ptr, 0, sizeof(LevelCounters), kStream), "clearing counters");
  if (!ws.pinned) PS_CUDA(cudaMallocHost(&ws.pinned, sizeof(LevelTotals)), "allocating pinned counters");
  LevelTotals* h_totals = ws.pinned;  // pinned: the one read-back of each level
  std::int64_t count = systems, nodes = 0, finished = 0, candidates = 0;
  double tolerance = o.tolerance;
  std::string status = "complete";
  // The device's free memory, read once per thread (each read costs a driver call): what this thread's own work
  // arrays hold is free to it as well.
  thread_local double free_at_start = -1;
  if (free_at_start < 0) {
    std::size_t free_bytes = 0, total_bytes = 0;
    PS_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "reading free device memory");
    free_at_start = double(free_bytes);
  }
  const double memory_budget = 0.7 * free_at_start / std::max(lanes_running, 1);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int> h_verdict;
  std::vector<unsigned long long> h_index;
  int level = 0;
  const std::int64_t max_nodes = batch_cell_limit(o.max_nodes, std::size_t(systems));
  const LevelKernels kernels = level_kernels(sh, square);
  if (!hybrid) {
    resident_levels(ws.level, sh, systems, square, o, memory_budget, max_nodes, t0, status, nodes, finished, candidates,
                    tolerance);
    count = 0;
  }
  while (count > 0) {
    if (nodes + count > max_nodes) {
      status = "limit reached: " + std::to_string(max_nodes) + " cells (partial result)";
      break;
    }
    if (stopped_between_levels(o, t0, level, count, status)) break;
    ++level;
    nodes += count;
    const int n = int(count);
    const std::size_t ints = std::size_t(n) * sizeof(int);
    grow(verdict, ints, "allocating node verdicts");
    grow(axis, ints, "allocating node verdicts");
    grow(flags, std::size_t(n) * sizeof(unsigned long long), "allocating node verdicts");
    grow(index, std::size_t(n) * sizeof(unsigned long long), "allocating node verdicts");
    const int blocks = (n + kWarpsPerBlock - 1) / kWarpsPerBlock;
    kernels.classify<<<blocks, 32 * kWarpsPerBlock, 0, kStream>>>(sh, n, tolerance, nullptr, 0, 0, coef[cur].as<double>(), box[cur].as<double>(),
                                                     verdict.as<int>(), axis.as<int>(), flags.as<unsigned long long>(),
                                                     counters.as<LevelCounters>());
    PS_CUDA_LAUNCH("testing solver nodes");
    if (hybrid) {
      // The CPU reads every verdict and lays out the next level (and the finished cells) itself.
      h_verdict.resize(std::size_t(n));
      h_index.resize(std::size_t(n));
      read_back(h_verdict.data(), verdict.ptr, ints, "reading node verdicts");
      unsigned long long running = 0;
      for (int i = 0; i < n; ++i) {
        h_index[std::size_t(i)] = running;
        const int v = h_verdict[std::size_t(i)];
        running += (v == kSplit ? 1ull : 0ull) + ((v == kUnique || v == kCandidate) ? 1ull << 32 : 0ull);
      }
      PS_CUDA(cudaMemcpyAsync(index.ptr, h_index.data(), std::size_t(n) * sizeof(unsigned long long), cudaMemcpyHostToDevice, kStream),
              "sending the node lists");
    } else {
      std::size_t temp = 0;
      PS_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp, flags.as<unsigned long long>(), index.as<unsigned long long>(), n, kStream),
              "sizing the node scan");
      grow(scan_temp, temp, "allocating the node scan");
      PS_CUDA(cub::DeviceScan::ExclusiveSum(scan_temp.ptr, temp, flags.as<unsigned long long>(), index.as<unsigned long long>(), n, kStream),
              "scanning the nodes");
    }
    totals_kernel<<<1, 1, 0, kStream>>>(flags.as<unsigned long long>(), index.as<unsigned long long>(), n, counters.as<LevelCounters>(),
                            totals.as<LevelTotals>());
    PS_CUDA_LAUNCH("totalling a level");
    read_back(h_totals, totals.ptr, sizeof(LevelTotals), "reading level totals");
    const long long splits = static_cast<long long>(h_totals->splits), outs = static_cast<long long>(h_totals->outs);
    LevelCounters lc{h_totals->max_width, h_totals->candidates};
    // Room for the children and the finished cells, within the memory budget.
    const double next_bytes = double(2 * splits) * (double(sh.block) + 2.0 * sh.n) * sizeof(double);
    if (next_bytes > memory_budget) {
      status = "limit reached: device memory (" + std::to_string(2 * splits) + " cells in one level) (partial result)";
    }
    const int nxt = 1 - cur;
    if (splits > 0 && status == "complete") {
      grow(coef[nxt], std::size_t(2 * splits) * sh.block * sizeof(double), "allocating solver nodes");
      grow(box[nxt], std::size_t(2 * splits) * 2 * sh.n * sizeof(double), "allocating solver nodes");
      grow(sys[nxt], std::size_t(2 * splits) * sizeof(int), "allocating solver nodes");
    }
    out_box.ensure_keep(std::size_t(finished + outs) * 2 * sh.n * sizeof(double), std::size_t(finished) * 2 * sh.n * sizeof(double),
                        "allocating finished cells");
    out_system.ensure_keep(std::size_t(finished + outs) * sizeof(int), std::size_t(finished) * sizeof(int), "allocating finished cells");
    out_verdict.ensure_keep(std::size_t(finished + outs) * sizeof(int), std::size_t(finished) * sizeof(int), "allocating finished cells");
    kernels.split<<<blocks, 32 * kWarpsPerBlock, 0, kStream>>>(sh, n, nullptr, 0, coef[cur].as<double>(), box[cur].as<double>(), sys[cur].as<int>(), verdict.as<int>(),
                                                  axis.as<int>(), index.as<unsigned long long>(),
                                                  status == "complete" ? coef[nxt].as<double>() : nullptr,
                                                  status == "complete" ? box[nxt].as<double>() : nullptr,
                                                  status == "complete" ? sys[nxt].as<int>() : nullptr, out_box.buf.as<double>(),
                                                  out_system.buf.as<int>(), out_verdict.buf.as<int>(), int(finished));
    PS_CUDA_LAUNCH("splitting solver nodes");
    finished += outs;
    candidates += std::int64_t(lc.candidates);
    // Every node's coefficients read by the test, the split nodes' read again and their children's written.
    g_bytes += (std::int64_t(n) + 3 * splits) * sh.block * std::int64_t(sizeof(double));
    g_levels += 1;
    g_cells += n;
    if (status != "complete") break;
    cur = nxt;
    count = 2 * splits;
    // As on the CPU: a continuum fills the levels; past these sizes its cells are taken at the current width.
    if (square && count > continuum_waiting_limit(std::size_t(systems))) {
      double width = 0;
      std::memcpy(&width, &lc.max_width, sizeof(width));
      tolerance = std::max(tolerance, 1.01 * width);  // every child is at most as wide as the widest parent
    }
    if (square && candidates > continuum_candidate_limit(std::size_t(systems)) && tolerance < continuum_tolerance)
      tolerance = continuum_tolerance;
  }
  auto* r_box = static_cast<double*>(lane.r_box.ensure(std::size_t(finished) * 2 * sh.n * sizeof(double), "pinning finished cells"));
  auto* r_system = static_cast<int*>(lane.r_system.ensure(std::size_t(finished) * sizeof(int), "pinning finished cells"));
  auto* r_verdict = static_cast<int*>(lane.r_verdict.ensure(std::size_t(finished) * sizeof(int), "pinning finished cells"));
  double* r_x = nullptr;
  double* r_residual = nullptr;
  if (settle && finished > 0) {
    const std::size_t x_bytes = std::size_t(finished) * sh.n * sizeof(double), residual_bytes = std::size_t(finished) * sizeof(double);
    grow(ws.settled_x, x_bytes, "allocating settled roots");
    grow(ws.settled_residual, residual_bytes, "allocating settled roots");
    settle_kernel<<<unsigned((finished + 127) / 128), 128, 0, kStream>>>(sh, finished, ws.root_coef.as<double>(), out_box.buf.as<double>(),
                                                            out_system.buf.as<int>(), out_verdict.buf.as<int>(), o.newton_tolerance,
                                                            ws.settled_x.as<double>(), ws.settled_residual.as<double>());
    PS_CUDA_LAUNCH("settling proved cells");
    r_x = static_cast<double*>(lane.r_x.ensure(x_bytes, "pinning settled roots"));
    r_residual = static_cast<double*>(lane.r_residual.ensure(residual_bytes, "pinning settled roots"));
    PS_CUDA(cudaMemcpyAsync(r_x, ws.settled_x.ptr, x_bytes, cudaMemcpyDeviceToHost, kStream), "reading settled roots");
    PS_CUDA(cudaMemcpyAsync(r_residual, ws.settled_residual.ptr, residual_bytes, cudaMemcpyDeviceToHost, kStream), "reading settled roots");
  }
  if (finished > 0) {
    PS_CUDA(cudaMemcpyAsync(r_box, out_box.buf.ptr, std::size_t(finished) * 2 * sh.n * sizeof(double), cudaMemcpyDeviceToHost, kStream),
            "reading finished cells");
    PS_CUDA(cudaMemcpyAsync(r_system, out_system.buf.ptr, std::size_t(finished) * sizeof(int), cudaMemcpyDeviceToHost, kStream), "reading finished cells");
    PS_CUDA(cudaMemcpyAsync(r_verdict, out_verdict.buf.ptr, std::size_t(finished) * sizeof(int), cudaMemcpyDeviceToHost, kStream),
            "reading finished cells");
  }
  PS_CUDA(cudaStreamSynchronize(kStream), "running the GPU solver");
  std::int64_t settled = 0;
  for (std::int64_t i = 0; i < finished; ++i) {
    r_verdict[i] = r_verdict[i] == kUnique ? 1 : 0;
    if (r_residual && r_verdict[i] && r_residual[i] < HUGE_VAL) ++settled;  // NaN: handed back; HUGE_VAL: no root
  }
  g_settled += settled;
  result.count = finished;
  result.box = r_box;
  result.system = r_system;
  result.unique = r_verdict;
  result.x = r_x;
  result.residual = r_residual;
  result.status = status;
  result.nodes = nodes;
  result.tolerance = tolerance;
  return result;
}

GpuTraffic gpu_traffic_cuda() { return {g_bytes.load(), g_levels.load(), g_cells.load(), g_settled.load()}; }

}  // namespace parasurf::solver
