// GPU engines of the subdivision solver (Park, Elber, Kim, Kim, Seong, CAD 43 (2011): the GPU subdivides every
// candidate node of a level by de Casteljau and tests it; here also the single-root test, so the host only runs
// Newton on proved cells and clusters the tolerance cells, as for the CPU engine).
// Breadth first: every node of a level, of every system of the batch, is one warp. A level is classify (exclusion
// by sign, Krawczyk's test, tolerance, split axis) -> compaction of the nodes to split and of the finished cells ->
// split into two children. The GPU-resident engine compacts with a CUB scan and reads back four numbers per level;
// the hybrid engine reads every node's verdict back and builds the compaction lists on the CPU (the paper's split
// of work: traversal on the CPU, subdivision and tests on the GPU, coefficients kept on the GPU).
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <map>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/cuda_check.hpp"
#include "core/device_buffer.hpp"
#include "parasurf/error.hpp"
#include "solver/bernstein_kernels.hpp"
#include "solver/engine.hpp"

namespace parasurf::solver {

namespace {

constexpr int kMaxPolys = 16;
constexpr int kMaxVars = 6;
constexpr int kWarpsPerBlock = 4;

struct Shape {
  int n = 0, m = 0, polys = 0;  // variables, equations, equations + inequalities
  int block = 0;                // coefficients per node
  int square = 1;
  int size[kMaxPolys];
  int offset[kMaxPolys];
  int degree[kMaxPolys][kMaxVars];
  int inner[kMaxPolys][kMaxVars];  // product of (degree + 1) over the later variables
};

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

// One warp per node: the node's verdict and, for a split, its axis.
__global__ void classify_kernel(Shape sh, int count, double tolerance, const double* __restrict__ coef, const double* __restrict__ box,
                                int* __restrict__ verdict, int* __restrict__ axis_out, unsigned long long* __restrict__ flags,
                                LevelCounters* counters) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int node = blockIdx.x * kWarpsPerBlock + warp;
  __shared__ solverk::Range s_jac[kWarpsPerBlock][kMaxVars * kMaxVars];
  __shared__ double s_mid[kWarpsPerBlock][kMaxVars];
  __shared__ double s_err[kWarpsPerBlock][kMaxVars];
  if (node >= count) return;
  const double* c = coef + static_cast<long long>(node) * sh.block;
  const double* lo = box + static_cast<long long>(node) * 2 * sh.n;
  const double* hi = lo + sh.n;
  // Exclusion: an equation of one sign, or an inequality <= 0 everywhere.
  bool excluded = false;
  for (int p = 0; p < sh.polys && !excluded; ++p) {
    double mn = 1e308, mx = -1e308;
    for (int i = lane; i < sh.size[p]; i += 32) mn = fmin(mn, c[sh.offset[p] + i]), mx = fmax(mx, c[sh.offset[p] + i]);
    mn = warp_min(mn);
    mx = warp_max(mx);
    excluded = p < sh.m ? (mn > 0 || mx < 0) : !(mx > 0);
    if (p < sh.m && lane == 0) {
      int total = 0;
      for (int v = 0; v < sh.n; ++v) total += sh.degree[p][v];
      s_err[warp][p] = solverk::evaluation_error(fmax(fabs(mn), fabs(mx)), total);
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
        if (lane == 0) s_jac[warp][e * sh.n + v] = {mn, mx};
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
        if (lane == 0) s_mid[warp][e] = acc;
      }
    __syncwarp();
    if (lane == 0) {
      double width = 0;
      for (int v = 0; v < sh.n; ++v) width = fmax(width, hi[v] - lo[v]);
      result = kSplit;
      if (sh.square) {
        const solverk::CellTest t = solverk::krawczyk_test(sh.n, s_jac[warp], s_mid[warp], s_err[warp]);
        if (t == solverk::CellTest::Empty) result = kExcluded;
        else if (t == solverk::CellTest::Unique) result = kUnique;
      }
      if (result == kSplit && width < tolerance) result = kCandidate;
      if (result == kSplit) {
        double best = -1;
        for (int v = 0; v < sh.n; ++v) {
          if (hi[v] - lo[v] < 0.5 * tolerance) continue;
          double var = 0;
          for (int e = 0; e < sh.m; ++e) var = fmax(var, fmax(fabs(s_jac[warp][e * sh.n + v].lo), fabs(s_jac[warp][e * sh.n + v].hi)));
          if (!sh.square) var = var * (hi[v] - lo[v]) + 1e-300 * (hi[v] - lo[v]);
          if (var > best) best = var, axis = v;
        }
        atomic_max_positive(&counters->max_width, width);
      }
      if (result == kCandidate) atomicAdd(&counters->candidates, 1ull);
    }
  }
  if (lane == 0) {
    verdict[node] = result;
    axis_out[node] = axis;
    // Both compactions in one scan: the split flag in the low half, the finished-cell flag in the high half.
    flags[node] = (result == kSplit ? 1ull : 0ull) | ((result == kUnique || result == kCandidate) ? 1ull << 32 : 0ull);
  }
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

// One warp per node: a split node writes its two children (de Casteljau at 1/2 along its axis, a line per lane);
// a finished cell writes its record.
__global__ void split_kernel(Shape sh, int count, const double* __restrict__ coef, const double* __restrict__ box,
                             const int* __restrict__ system, const int* __restrict__ verdict, const int* __restrict__ axis_of,
                             const unsigned long long* __restrict__ index, double* __restrict__ next_coef,
                             double* __restrict__ next_box, int* __restrict__ next_system, double* __restrict__ out_box,
                             int* __restrict__ out_system, int* __restrict__ out_verdict, int out_base) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int node = blockIdx.x * kWarpsPerBlock + warp;
  if (node >= count) return;
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

// A device array that keeps its contents when it grows.
struct GrowingBuffer {
  core::DeviceBuffer buf;
  void ensure_keep(std::size_t bytes, std::size_t used, const char* what) {
    if (bytes <= buf.bytes) return;
    core::DeviceBuffer bigger;
    bigger.ensure(std::max(bytes, 2 * buf.bytes), what);
    if (used) PS_CUDA(cudaMemcpy(bigger.ptr, buf.ptr, used, cudaMemcpyDeviceToDevice), what);
    std::swap(bigger.ptr, buf.ptr);
    std::swap(bigger.bytes, buf.bytes);
  }
};

std::atomic<std::int64_t> g_bytes{0}, g_levels{0}, g_cells{0};

void upload_weights() {
  static bool done = false;  // per process; the constant is per device (device 0 here)
  if (done) return;
  std::vector<double> w(64 * 64, 0.0);
  for (int d = 0; d < 64; ++d) {
    double binom = 1;
    for (int i = 0; i <= d; ++i) {
      w[d * 64 + i] = binom * std::ldexp(1.0, -d);
      binom = binom * (d - i) / (i + 1);
    }
  }
  PS_CUDA(cudaMemcpyToSymbol(c_half_weight, w.data(), w.size() * sizeof(double)), "uploading the Bernstein weights");
  done = true;
}

}  // namespace

// One function: the level loop keeps the frontier, its double buffer and the per-level counters on the device
// between iterations; its set-up and hand-back sit around that loop.
std::vector<Subdivision> subdivide_cuda(const std::vector<std::vector<BernsteinPoly>>& polys, int equations, int variables, bool square,
                                        const SolverOptions& o, bool hybrid) {
  const int systems = int(polys.size());
  std::vector<Subdivision> out(std::size_t(std::max(systems, 0)));
  if (systems == 0) return out;
  const auto& first = polys[0];
  if (int(first.size()) > kMaxPolys)
    throw Error(ErrorKind::InvalidArgument, "GPU solver: " + std::to_string(first.size()) + " polynomials per system; at most " +
                                                std::to_string(kMaxPolys));
  Shape sh;
  sh.n = variables;
  sh.m = equations;
  sh.polys = int(first.size());
  sh.square = square ? 1 : 0;
  for (int p = 0; p < sh.polys; ++p) {
    sh.size[p] = int(first[std::size_t(p)].coef.size());
    sh.offset[p] = sh.block;
    sh.block += sh.size[p];
    for (int v = 0; v < sh.n; ++v) {
      sh.degree[p][v] = first[std::size_t(p)].degree[std::size_t(v)];
      int inner = 1;
      for (int u = v + 1; u < sh.n; ++u) inner *= first[std::size_t(p)].degree[std::size_t(u)] + 1;
      sh.inner[p][v] = inner;
    }
  }
  upload_weights();
  // Level 0: one node per system, on its unit box.
  std::vector<double> h_coef(std::size_t(systems) * sh.block), h_box(std::size_t(systems) * 2 * sh.n);
  std::vector<int> h_system(static_cast<std::size_t>(systems));
  for (int s = 0; s < systems; ++s) {
    for (int p = 0; p < sh.polys; ++p)
      std::copy(polys[std::size_t(s)][std::size_t(p)].coef.begin(), polys[std::size_t(s)][std::size_t(p)].coef.end(),
                h_coef.begin() + std::ptrdiff_t(std::size_t(s) * sh.block + sh.offset[p]));
    for (int v = 0; v < sh.n; ++v) h_box[std::size_t(s) * 2 * sh.n + v] = 0, h_box[std::size_t(s) * 2 * sh.n + sh.n + v] = 1;
    h_system[std::size_t(s)] = s;
  }
  // Work arrays live as long as the thread and grow to the largest batch (a solve is often many small batches).
  struct Workspace {
    core::DeviceBuffer coef[2], box[2], sys[2], verdict, axis, flags, index, scan_temp, counters, totals;
    GrowingBuffer out_box, out_system, out_verdict;
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
  coef[0].ensure(h_coef.size() * sizeof(double), "allocating solver nodes");
  box[0].ensure(h_box.size() * sizeof(double), "allocating solver nodes");
  sys[0].ensure(h_system.size() * sizeof(int), "allocating solver nodes");
  PS_CUDA(cudaMemcpy(coef[0].ptr, h_coef.data(), h_coef.size() * sizeof(double), cudaMemcpyHostToDevice), "uploading the systems");
  PS_CUDA(cudaMemcpy(box[0].ptr, h_box.data(), h_box.size() * sizeof(double), cudaMemcpyHostToDevice), "uploading the systems");
  PS_CUDA(cudaMemcpy(sys[0].ptr, h_system.data(), h_system.size() * sizeof(int), cudaMemcpyHostToDevice), "uploading the systems");
  counters.ensure(sizeof(LevelCounters), "allocating counters");
  totals.ensure(sizeof(LevelTotals), "allocating counters");
  PS_CUDA(cudaMemset(counters.ptr, 0, sizeof(LevelCounters)), "clearing counters");
  if (!ws.pinned) PS_CUDA(cudaMallocHost(&ws.pinned, sizeof(LevelTotals)), "allocating pinned counters");
  LevelTotals* h_totals = ws.pinned;  // pinned: the one read-back of each level
  std::int64_t count = systems, nodes = 0, finished = 0, candidates = 0;
  double tolerance = o.tolerance;
  std::string status = "complete";
  std::size_t free_bytes = 0, total_bytes = 0;
  PS_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "reading free device memory");
  const double memory_budget = 0.7 * double(free_bytes);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int> h_verdict;
  std::vector<unsigned long long> h_index;
  int level = 0;
  const std::int64_t max_nodes = batch_cell_limit(o.max_nodes, std::size_t(systems));
  while (count > 0) {
    if (nodes + count > max_nodes) {
      status = "limit reached: " + std::to_string(max_nodes) + " cells (partial result)";
      break;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > o.max_seconds) {
      status = "limit reached: " + std::to_string(o.max_seconds) + " s (partial result)";
      break;
    }
    if (o.stop && o.stop()) {
      status = "interrupted (partial result)";
      break;
    }
    if (o.progress) o.progress(level, count);
    ++level;
    nodes += count;
    const int n = int(count);
    const std::size_t ints = std::size_t(n) * sizeof(int);
    verdict.ensure(ints, "allocating node verdicts");
    axis.ensure(ints, "allocating node verdicts");
    flags.ensure(std::size_t(n) * sizeof(unsigned long long), "allocating node verdicts");
    index.ensure(std::size_t(n) * sizeof(unsigned long long), "allocating node verdicts");
    const int blocks = (n + kWarpsPerBlock - 1) / kWarpsPerBlock;
    classify_kernel<<<blocks, 32 * kWarpsPerBlock>>>(sh, n, tolerance, coef[cur].as<double>(), box[cur].as<double>(), verdict.as<int>(),
                                                     axis.as<int>(), flags.as<unsigned long long>(), counters.as<LevelCounters>());
    PS_CUDA_LAUNCH("testing solver nodes");
    if (hybrid) {
      // The CPU reads every verdict and lays out the next level (and the finished cells) itself.
      h_verdict.resize(std::size_t(n));
      h_index.resize(std::size_t(n));
      PS_CUDA(cudaMemcpy(h_verdict.data(), verdict.ptr, ints, cudaMemcpyDeviceToHost), "reading node verdicts");
      unsigned long long running = 0;
      for (int i = 0; i < n; ++i) {
        h_index[std::size_t(i)] = running;
        const int v = h_verdict[std::size_t(i)];
        running += (v == kSplit ? 1ull : 0ull) + ((v == kUnique || v == kCandidate) ? 1ull << 32 : 0ull);
      }
      PS_CUDA(cudaMemcpy(index.ptr, h_index.data(), std::size_t(n) * sizeof(unsigned long long), cudaMemcpyHostToDevice),
              "sending the node lists");
    } else {
      std::size_t temp = 0;
      PS_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp, flags.as<unsigned long long>(), index.as<unsigned long long>(), n),
              "sizing the node scan");
      scan_temp.ensure(temp, "allocating the node scan");
      PS_CUDA(cub::DeviceScan::ExclusiveSum(scan_temp.ptr, temp, flags.as<unsigned long long>(), index.as<unsigned long long>(), n),
              "scanning the nodes");
    }
    totals_kernel<<<1, 1>>>(flags.as<unsigned long long>(), index.as<unsigned long long>(), n, counters.as<LevelCounters>(),
                            totals.as<LevelTotals>());
    PS_CUDA_LAUNCH("totalling a level");
    PS_CUDA(cudaMemcpy(h_totals, totals.ptr, sizeof(LevelTotals), cudaMemcpyDeviceToHost), "reading level totals");
    const long long splits = static_cast<long long>(h_totals->splits), outs = static_cast<long long>(h_totals->outs);
    LevelCounters lc{h_totals->max_width, h_totals->candidates};
    // Room for the children and the finished cells, within the memory budget.
    const double next_bytes = double(2 * splits) * (double(sh.block) + 2.0 * sh.n) * sizeof(double);
    if (next_bytes > memory_budget) {
      status = "limit reached: device memory (" + std::to_string(2 * splits) + " cells in one level) (partial result)";
    }
    const int nxt = 1 - cur;
    if (splits > 0 && status == "complete") {
      coef[nxt].ensure(std::size_t(2 * splits) * sh.block * sizeof(double), "allocating solver nodes");
      box[nxt].ensure(std::size_t(2 * splits) * 2 * sh.n * sizeof(double), "allocating solver nodes");
      sys[nxt].ensure(std::size_t(2 * splits) * sizeof(int), "allocating solver nodes");
    }
    out_box.ensure_keep(std::size_t(finished + outs) * 2 * sh.n * sizeof(double), std::size_t(finished) * 2 * sh.n * sizeof(double),
                        "allocating finished cells");
    out_system.ensure_keep(std::size_t(finished + outs) * sizeof(int), std::size_t(finished) * sizeof(int), "allocating finished cells");
    out_verdict.ensure_keep(std::size_t(finished + outs) * sizeof(int), std::size_t(finished) * sizeof(int), "allocating finished cells");
    split_kernel<<<blocks, 32 * kWarpsPerBlock>>>(sh, n, coef[cur].as<double>(), box[cur].as<double>(), sys[cur].as<int>(), verdict.as<int>(),
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
    if (square && count > std::max<std::int64_t>(100000, 2000ll * systems)) {
      double width = 0;
      std::memcpy(&width, &lc.max_width, sizeof(width));
      tolerance = std::max(tolerance, 1.01 * width);  // every child is at most as wide as the widest parent
    }
    if (square && candidates > continuum_candidate_limit(std::size_t(systems)) && tolerance < continuum_tolerance)
      tolerance = continuum_tolerance;
  }
  PS_CUDA(cudaDeviceSynchronize(), "running the GPU solver");
  std::vector<double> r_box(std::size_t(finished) * 2 * sh.n);
  std::vector<int> r_system(static_cast<std::size_t>(finished)), r_verdict(static_cast<std::size_t>(finished));
  if (finished > 0) {
    PS_CUDA(cudaMemcpy(r_box.data(), out_box.buf.ptr, r_box.size() * sizeof(double), cudaMemcpyDeviceToHost), "reading finished cells");
    PS_CUDA(cudaMemcpy(r_system.data(), out_system.buf.ptr, r_system.size() * sizeof(int), cudaMemcpyDeviceToHost), "reading finished cells");
    PS_CUDA(cudaMemcpy(r_verdict.data(), out_verdict.buf.ptr, r_verdict.size() * sizeof(int), cudaMemcpyDeviceToHost), "reading finished cells");
  }
  for (std::int64_t i = 0; i < finished; ++i) {
    const double* b = &r_box[std::size_t(i) * 2 * sh.n];
    std::vector<double> lo(b, b + sh.n), hi(b + sh.n, b + 2 * sh.n);
    Subdivision& s = out[std::size_t(r_system[std::size_t(i)])];
    (r_verdict[std::size_t(i)] == kUnique ? s.unique : s.candidates).emplace_back(std::move(lo), std::move(hi));
  }
  for (auto& s : out) {
    s.status = status;
    s.nodes = nodes / systems;  // per-system share of the batch's cells
    s.tolerance = tolerance;
  }
  return out;
}

namespace {

// The CUDA engines (cuda: the levels stay on the device; hybrid: the host builds each level's node list) take the
// systems of one shape (the same number of polynomials of the same degrees) per traversal: grouped here.
class CudaEngine final : public Engine {
 public:
  explicit CudaEngine(bool hybrid) : hybrid_(hybrid) {}
  std::vector<Subdivision> subdivide(const Batch& b, const SolverOptions& o) override {
    const std::size_t count = b.variables.size();
    std::vector<Subdivision> out(count);
    std::map<std::vector<int>, std::vector<std::size_t>> shapes;
    for (std::size_t i = 0; i < count; ++i) {
      std::vector<int> key{int(b.equations[i].size())};
      for (const auto* list : {&b.equations[i], &b.inequalities(i)})
        for (const auto& p : *list) key.insert(key.end(), p.degree.begin(), p.degree.end()), key.push_back(-1);
      shapes[key].push_back(i);
    }
    for (const auto& [key, members] : shapes) {
      std::vector<std::vector<BernsteinPoly>> polys;
      for (std::size_t i : members) {
        polys.push_back(b.equations[i]);
        polys.back().insert(polys.back().end(), b.inequalities(i).begin(), b.inequalities(i).end());
      }
      std::vector<Subdivision> r = subdivide_cuda(polys, key[0], b.variables[members[0]], b.square, o, hybrid_);
      for (std::size_t j = 0; j < members.size(); ++j) out[members[j]] = std::move(r[j]);
    }
    return out;
  }

 private:
  bool hybrid_;
};

}  // namespace

std::unique_ptr<Engine> make_cuda_engine(bool hybrid) { return std::make_unique<CudaEngine>(hybrid); }

GpuTraffic gpu_traffic_cuda() { return {g_bytes.load(), g_levels.load(), g_cells.load()}; }

}  // namespace parasurf::solver
