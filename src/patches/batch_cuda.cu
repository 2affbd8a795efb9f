// CUDA backend of patch batches: every patch of a model in one launch per strategy.
//  * Direct (seed, method 1): one thread per (u,v) sample, direct Bernstein evaluation.
//  * Casteljau (seed, method 2): the threads of a block cooperate through shared memory, one team of m*n threads
//    per sample, each level of de Casteljau's algorithm a round of bilinear interpolations between barriers.
//  * Tables (ours): Bernstein tables per (degree, segments) shared by all patches; per block a patch's rows:
//    control points staged in shared memory, Q = Bu P per row once, then each sample sums n+1 terms.
// Triangular and PN patches, and patches a strategy cannot hold, go through the direct kernel in the same run.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/device_buffer.hpp"
#include "core/staging.hpp"
#include "parasurf/device.hpp"
#include "patches/batch.hpp"

namespace parasurf::patches::cuda {

using core::DeviceBuffer;

namespace {

constexpr int kBlock = 256;
constexpr int kTablesBlock = 256;
constexpr std::size_t kTablesSharedBudget = 40 * 1024;

template <class T> struct DeviceViews {
  const patchk::PatchRecord* rec;
  const T* points;
  const T* normal_points;
  T* pos[3];
  T* nrm[3];
};

// ---------------------------------------------------------------- direct: one thread per sample
template <class T>
__global__ void direct_kernel(DeviceViews<T> d, const std::int32_t* __restrict__ selected,
                              const std::int64_t* __restrict__ sel_first, std::int32_t sel_count) {
  const std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= sel_first[sel_count]) return;
  int lo = 0, hi = sel_count - 1;  // last k with sel_first[k] <= g
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (sel_first[mid] <= g) lo = mid;
    else hi = mid - 1;
  }
  const patchk::PatchRecord r = d.rec[selected[lo]];
  const std::int64_t k = g - sel_first[lo];
  T u, v;
  patchk::sample_param<T>(r, k, u, v);
  patchk::eval_sample<T>(r, d.points, d.normal_points, u, v, d.pos, d.nrm, r.first + k);
}

template <class T>
__global__ void point_kernel(DeviceViews<T> d, const std::int64_t* __restrict__ patch, const double* __restrict__ uv,
                             std::int64_t count, std::int64_t out0) {
  const std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= count) return;
  const patchk::PatchRecord r = d.rec[patch[k]];
  patchk::eval_sample<T>(r, d.points, d.normal_points, T(uv[2 * k]), T(uv[2 * k + 1]), d.pos, d.nrm, out0 + k);
}

// ---------------------------------------------------------------- de Casteljau, cooperating threads
struct CasteljauTile {
  std::int32_t patch;
  std::int32_t first_sample;   // local index of the tile's first sample
  std::int32_t count;          // samples in the tile
  std::int32_t team;           // threads per sample (m*n)
};

template <class T>
__global__ void casteljau_kernel(DeviceViews<T> d, const CasteljauTile* __restrict__ tiles) {
  extern __shared__ unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const CasteljauTile tile = tiles[blockIdx.x];
  const patchk::PatchRecord r = d.rec[tile.patch];
  const int m = r.du, n = r.dv;
  const int net = (m + 1) * (n + 1) * 4;
  const int slot = threadIdx.x / tile.team;   // which sample of the tile
  const int lane = threadIdx.x % tile.team;
  const bool active = slot < tile.count;
  T* buf0 = smem + slot * 2 * net;
  T* buf1 = buf0 + net;
  const T* P = d.points + r.cp * 4;
  T u = 0, v = 0;
  if (active) {
    patchk::sample_param<T>(r, tile.first_sample + slot, u, v);
    for (int k = lane; k < net; k += tile.team) buf0[k] = P[k];
  }
  __syncthreads();
  int a = m, b = n;  // current degrees
  T* src = buf0;
  T* dst = buf1;
  while (a > 1 || b > 1) {
    const int na = a > 1 ? a - 1 : a, nb = b > 1 ? b - 1 : b;
    if (active) {
      for (int cell = lane; cell < (na + 1) * (nb + 1); cell += tile.team) {
        const int i = cell / (nb + 1), j = cell % (nb + 1);
        const int i1 = a > 1 ? i + 1 : i, j1 = b > 1 ? j + 1 : j;
        const T tu = a > 1 ? u : T(0), tv = b > 1 ? v : T(0);
        for (int c = 0; c < 4; ++c) {
          const T p00 = src[(i * (b + 1) + j) * 4 + c], p10 = src[(i1 * (b + 1) + j) * 4 + c];
          const T p01 = src[(i * (b + 1) + j1) * 4 + c], p11 = src[(i1 * (b + 1) + j1) * 4 + c];
          const T low = p00 + tu * (p10 - p00), high = p01 + tu * (p11 - p01);
          dst[(i * (nb + 1) + j) * 4 + c] = low + tv * (high - low);
        }
      }
    }
    __syncthreads();
    T* t = src;
    src = dst;
    dst = t;
    a = na;
    b = nb;
  }
  if (active && lane == 0) {
    // 2x2 net left: bilinear value and the derivatives scaled by the original degrees
    T h[4], hu[4], hv[4];
    for (int c = 0; c < 4; ++c) {
      const T q00 = src[0 * 4 + c], q01 = src[1 * 4 + c], q10 = src[2 * 4 + c], q11 = src[3 * 4 + c];
      h[c] = (T(1) - u) * ((T(1) - v) * q00 + v * q01) + u * ((T(1) - v) * q10 + v * q11);
      hu[c] = T(m) * ((T(1) - v) * (q10 - q00) + v * (q11 - q01));
      hv[c] = T(n) * ((T(1) - u) * (q01 - q00) + u * (q11 - q10));
    }
    patchk::store_homogeneous<T>(
        r, P, h, hu, hv, [&](T& su, T& sv) { su = u, sv = v; }, d.pos, d.nrm, r.first + tile.first_sample + slot);
  }
}

// ---------------------------------------------------------------- tables + sum factorisation
// Basis table rows hold degree + 1 values padded to a multiple of four, so that a thread reads four terms' values
// (and four derivatives) as one vector load each: the kernel is bound by its load instructions, not their bytes.
__host__ __device__ constexpr int basis_stride(int degree) { return (degree + 4) & ~3; }

struct TablesTile {
  std::int32_t patch;
  std::int32_t row0, rows;   // rows of u samples
  std::int32_t patches;      // packed tiles: the whole small patches, consecutive and alike, in the block
  std::int64_t tab_u, tab_v; // offsets of (segments+1) x (degree+1) values, then as many derivatives
};

// Small patches of large batches are packed several to a block (consecutive, same degrees and segments, so the
// same tables; the Packed instance): alone, a patch of 8 x 8 or 16 x 16 samples left the block's fixed work (its
// net, stage 1, two barriers) most of its time. Packing measured slower from 32 x 32 samples up, and on batches
// too small to fill the GPU.
constexpr int kTablesMaxPatches = 16;
constexpr std::int64_t kTablesPackSamples = 512;   // most samples of a patch that is packed
constexpr std::size_t kTablesPackBatch = 4096;     // fewest patches of a batch whose small patches are packed
// Samples per thread of a packed tile: 16 rather than 8 halves the blocks' fixed work per sample.
constexpr int kTablesPackSamplesPerThread = 16;

// The four homogeneous components of a net point or stage-1 entry, 16-byte aligned in shared memory, in one or two
// vector loads: the kernel is bound by its shared-memory instructions (Nsight: L1 79 % busy), not by their bytes.
__device__ __forceinline__ void load4(const float* p, float* v) {
  const float4 t = *reinterpret_cast<const float4*>(p);
  v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void load4(const double* p, double* v) {
  const double2 a = reinterpret_cast<const double2*>(p)[0], b = reinterpret_cast<const double2*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
}

// A block-strided loop's index k = (patch * rows + row) * cols + col, advanced by the stride without the two integer
// divisions per step that recomputing it takes (tens of instructions each, against ~150 for a whole sample).
struct StridedIndex {
  int patch, row, col;
  int step_patch, step_row, step_col;
  __device__ StridedIndex(int k, int stride, int rows, int cols) {
    const int per_patch = rows * cols;
    patch = k / per_patch, row = k % per_patch / cols, col = k % cols;
    step_patch = stride / per_patch, step_row = stride % per_patch / cols, step_col = stride % cols;
  }
  __device__ void advance(int rows, int cols) {
    col += step_col;
    const bool carry = col >= cols;
    col -= carry ? cols : 0;
    row += step_row + (carry ? 1 : 0);
    const bool carry_row = row >= rows;
    row -= carry_row ? rows : 0;
    patch += step_patch + (carry_row ? 1 : 0);
  }
};

// Samples whose Su x Sv vanished, listed by the tables kernel as (patch << 32 | local sample) and given their limit
// normal by a second kernel: a call to the limit-normal code inside the hot kernel made the compiler keep registers
// across it (float instances spilled, double ones needed 120-128 registers against 76-92 without it).
struct DegenerateList {
  std::uint64_t* samples;
  unsigned int* count;
  unsigned int capacity;
  __device__ void add(int patch, std::int64_t local) const {
    const unsigned int slot = atomicAdd(count, 1u);
    if (slot < capacity) samples[slot] = std::uint64_t(std::uint32_t(patch)) << 32 | std::uint32_t(local);
  }
};

// PARASURF_DEGENERATE_LIST_CAPACITY lowers the list's room, so that tests reach the scan.
std::int64_t degenerate_list_capacity() {
  if (const char* env = std::getenv("PARASURF_DEGENERATE_LIST_CAPACITY")) {
    const long long v = std::atoll(env);
    if (v >= 0) return v;
  }
  return std::int64_t(1) << 20;
}

template <class T> __device__ void write_limit_normal(const DeviceViews<T>& d, int patch, std::int64_t local) {
  const patchk::PatchRecord r = d.rec[patch];
  const int i = int(local / (r.nv + 1)), j = int(local % (r.nv + 1));
  T n[3];
  kern::degenerate_normal<T, 4>(kern::NetView<T>{r.du, r.dv, d.points + r.cp * 4}, kern::grid_param<T>(i, r.nu + 1),
                                kern::grid_param<T>(j, r.nv + 1), n);
  const T sign = (r.flags & patchk::kFlipped) ? T(-1) : T(1);
  for (int c = 0; c < 3; ++c) d.nrm[c][r.first + local] = sign * n[c];
}

template <class T> __global__ void listed_normals_kernel(DeviceViews<T> d, DegenerateList degenerate) {
  const unsigned int n = min(*degenerate.count, degenerate.capacity);
  for (unsigned int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const std::uint64_t e = degenerate.samples[k];
    write_limit_normal(d, int(e >> 32), std::int64_t(e & 0xffffffffu));
  }
}

// When the list overflowed: every sample of the tiles whose normal is still zero (a limit normal that vanishes too
// is zero again, so repeating one is harmless).
template <class T> __global__ void scanned_normals_kernel(DeviceViews<T> d, const TablesTile* __restrict__ tiles) {
  const TablesTile tile = tiles[blockIdx.x];
  for (int pi = 0; pi < tile.patches; ++pi) {
    const patchk::PatchRecord r = d.rec[tile.patch + pi];
    const std::int64_t begin = std::int64_t(tile.row0) * (r.nv + 1), end = begin + std::int64_t(tile.rows) * (r.nv + 1);
    for (std::int64_t local = begin + threadIdx.x; local < end; local += blockDim.x) {
      const std::int64_t o = r.first + local;
      if (d.nrm[0][o] == T(0) && d.nrm[1][o] == T(0) && d.nrm[2][o] == T(0)) write_limit_normal(d, tile.patch + pi, local);
    }
  }
}

// Rational = false: every patch of the launch is polynomial (w = 1), so three components are summed and the quotient
// rule is skipped, as the CPU backend does (a quarter fewer multiply-adds and no reciprocal on a kernel bound by
// instructions). A separate instance, not a branch: both paths in one kernel spilled registers.
template <class T, bool Packed, bool Rational>
__global__ void __launch_bounds__(kTablesBlock, sizeof(T) == 4 ? 4 : 2) tables_kernel(DeviceViews<T> d, const TablesTile* __restrict__ tiles,
                                                              const T* __restrict__ tables, DegenerateList degenerate) {
  constexpr int NC = Rational ? 4 : 3;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ patchk::PatchRecord recs[Packed ? kTablesMaxPatches : 1];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const TablesTile tile = tiles[blockIdx.x];
  const int count = Packed ? tile.patches : 1;
  if constexpr (Packed) {
    if (int(threadIdx.x) < count) recs[threadIdx.x] = d.rec[tile.patch + int(threadIdx.x)];
    __syncthreads();
  }
  const patchk::PatchRecord r0 = Packed ? recs[0] : d.rec[tile.patch];  // a tile's patches share degrees, segments
  const int m = r0.du, n = r0.dv, nv = r0.nv;
  const int net = (m + 1) * (n + 1) * 4;
  const int q_per_patch = tile.rows * (n + 1);      // stage-1 entries of one patch
  T* sp = smem;                               // control points, patch after patch
  T* q = sp + count * net;                    // per patch: rows x (n+1) x 4 values
  T* qu = q + count * q_per_patch * 4;        // and u-derivatives
  for (int k = threadIdx.x; k < count * net; k += blockDim.x)
    sp[k] = Packed ? d.points[recs[k / net].cp * 4 + k % net] : d.points[r0.cp * 4 + k];
  __syncthreads();
  const int su = basis_stride(m), sv = basis_stride(n);
  const T* bu = tables + tile.tab_u;
  const T* dbu = bu + std::int64_t(r0.nu + 1) * su;
  // Stage 1, entry k of patch pi: row `row` of u samples against column `col` of the net.
  auto stage1 = [&](int k, int pi, int row, int col) {
    const int i = tile.row0 + row;
    const T* pp = sp + pi * net;
    T acc[4] = {}, accu[4] = {};
    for (int a0 = 0; a0 <= m; a0 += 4) {
      T w[4], dw[4];
      load4(bu + i * su + a0, w);
      load4(dbu + i * su + a0, dw);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (a0 + e > m) break;
        T p[4];
        load4(pp + ((a0 + e) * (n + 1) + col) * 4, p);
        for (int c = 0; c < NC; ++c) {
          acc[c] += w[e] * p[c];
          accu[c] += dw[e] * p[c];
        }
      }
    }
    for (int c = 0; c < 4; ++c) {
      q[k * 4 + c] = acc[c];
      qu[k * 4 + c] = accu[c];
    }
  };
  // Packed float: the index steps without dividing, which the small packed patches feel. One patch, and double:
  // divided, in a loop the compiler unrolls.
  constexpr bool stepped = Packed && sizeof(T) == 4;
  if constexpr (stepped) {
    StridedIndex e(threadIdx.x, blockDim.x, tile.rows, n + 1);
    for (int k = threadIdx.x; k < count * q_per_patch; k += blockDim.x, e.advance(tile.rows, n + 1)) stage1(k, e.patch, e.row, e.col);
  } else {
    for (int k = threadIdx.x; k < count * q_per_patch; k += blockDim.x) {
      const int within = Packed ? k % q_per_patch : k;
      stage1(k, Packed ? k / q_per_patch : 0, within / (n + 1), within % (n + 1));
    }
  }
  __syncthreads();
  const T* bv = tables + tile.tab_v;
  const T* dbv = bv + std::int64_t(nv + 1) * sv;
  // Stage 2, sample (row, j) of patch pi.
  auto stage2 = [&](int pi, int row, int j) {
    const patchk::PatchRecord& r = Packed ? recs[pi] : r0;
    T h[4] = {}, hu[4] = {}, hv[4] = {};
    const T* qr = q + (pi * q_per_patch + row * (n + 1)) * 4;
    const T* qur = qu + (pi * q_per_patch + row * (n + 1)) * 4;
    for (int b0 = 0; b0 <= n; b0 += 4) {
      T w[4], dw[4];
      load4(bv + j * sv + b0, w);
      load4(dbv + j * sv + b0, dw);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (b0 + e > n) break;
        T qb[4], qub[4];
        load4(qr + (b0 + e) * 4, qb);
        load4(qur + (b0 + e) * 4, qub);
        for (int c = 0; c < NC; ++c) {
          h[c] += w[e] * qb[c];
          hv[c] += dw[e] * qb[c];
          hu[c] += w[e] * qub[c];
        }
      }
    }
    const int i = tile.row0 + row;
    T p[3], su[3], sv[3], nrm[3];
    if constexpr (Rational) {
      patchk::homogeneous_to_cartesian(h, hu, hv, p, su, sv);
    } else {
      for (int c = 0; c < 3; ++c) p[c] = h[c], su[c] = hu[c], sv[c] = hv[c];
    }
    const std::int64_t local = std::int64_t(i) * (nv + 1) + j;
    if (!kern::unit_normal(su, sv, nrm)) {
      nrm[0] = nrm[1] = nrm[2] = T(0);
      degenerate.add(tile.patch + (Packed ? pi : 0), local);
    }
    const T sign = (r.flags & patchk::kFlipped) ? T(-1) : T(1);
    const std::int64_t out = r.first + local;
    for (int c = 0; c < 3; ++c) {
      // streaming stores: the samples are not read again by this kernel, the tables and nets stay in L2
      __stcs(d.pos[c] + out, p[c]);
      __stcs(d.nrm[c] + out, sign * nrm[c]);
    }
  };
  const int samples_per_patch = tile.rows * (nv + 1);
  if constexpr (stepped) {
    // Every sample of the tile's patches, until the patch index passes them.
    for (StridedIndex s(threadIdx.x, blockDim.x, tile.rows, nv + 1); s.patch < count; s.advance(tile.rows, nv + 1)) stage2(s.patch, s.row, s.col);
  } else {
    for (int k = threadIdx.x; k < count * samples_per_patch; k += blockDim.x) {
      const int within = Packed ? k % samples_per_patch : k;
      stage2(Packed ? k / samples_per_patch : 0, within / (nv + 1), within % (nv + 1));
    }
  }
}

template <class T> void upload(DeviceBuffer& buf, const void* src, std::size_t bytes, const char* what, cudaStream_t s) {
  buf.ensure(std::max<std::size_t>(bytes, 16), what);
  if (bytes) PS_CUDA(cudaMemcpyAsync(buf.ptr, src, bytes, cudaMemcpyHostToDevice, s), what);
}

}  // namespace

// One function, as the assembly: upload, launch and download of one batch share one stream and the arrays carved
// for it before the first copy.
template <class T>
BatchTiming evaluate(const HostBatch<T>& batch, PatchStrategy strategy, const SampleViews<T>& host_out, bool copy_back,
                     const OnDevice<T>& on_device) {
  if (!cuda_available()) throw Error(ErrorKind::Device, "no CUDA device is available");
  if (strategy == PatchStrategy::Auto) strategy = PatchStrategy::Tables;
  BatchTiming timing;
  timing.device = Device::Cuda;
  timing.strategy = strategy;
  const std::int64_t total = batch.total();
  const auto np = std::int32_t(batch.records.size());

  // which patches each kernel takes
  std::vector<std::int32_t> others;
  std::vector<CasteljauTile> ctiles;
  // tables tiles by [packed][rational]: single patches (or parts) and packed small patches, polynomial and rational
  std::vector<TablesTile> tile_lists[2][2];
  std::size_t packed_smem = 0;
  std::vector<T> tables;
  std::size_t smem_bytes = 0;
  std::map<std::pair<int, int>, std::int64_t> table_of;  // (degree, segments) -> offset
  auto table = [&](int deg, int seg) {
    const std::size_t start = (tables.size() + 3) & ~std::size_t(3);  // rows start on 16 (float) or 32 bytes
    auto [it, fresh] = table_of.try_emplace({deg, seg}, std::int64_t(start));
    if (fresh) {
      const int stride = basis_stride(deg);
      tables.resize(start + std::size_t(seg + 1) * stride * 2, T(0));  // the padding terms are zeros
      T* b = tables.data() + it->second;
      T* db = b + std::size_t(seg + 1) * stride;
      for (int i = 0; i <= seg; ++i)
        kern::bernstein_jet<T, 1>(deg, kern::grid_param<T>(i, seg + 1), b + i * stride, db + i * stride, nullptr);
    }
    return it->second;
  };
  for (std::int32_t p = 0; p < np; ++p) {
    const auto& r = batch.records[p];
    const bool tensor = !(r.flags & (patchk::kTriangle | patchk::kNormalPatch));
    const int m = r.du, n = r.dv;
    if (strategy == PatchStrategy::Casteljau && tensor && m * n <= kBlock) {
      const int team = std::max(1, m * n);
      const int per_block = kBlock / team;
      const std::int64_t count = patchk::sample_count(r);
      for (std::int64_t s = 0; s < count; s += per_block)
        ctiles.push_back({p, std::int32_t(s), std::int32_t(std::min<std::int64_t>(per_block, count - s)), team});
      smem_bytes = std::max(smem_bytes, std::size_t(per_block) * 2 * (m + 1) * (n + 1) * 4 * sizeof(T));
      continue;
    }
    const std::size_t net_bytes = std::size_t(m + 1) * (n + 1) * 4 * sizeof(T);
    const std::size_t row_bytes = std::size_t(n + 1) * 8 * sizeof(T);
    if (strategy == PatchStrategy::Tables && tensor && net_bytes + row_bytes <= kTablesSharedBudget) {
      // rows per block: enough samples for the block, within the shared budget
      int rows = std::max(1, (8 * kTablesBlock) / (r.nv + 1));
      rows = std::min<int>({rows, r.nu + 1, int((kTablesSharedBudget - net_bytes) / row_bytes)});
      const auto tu = table(m, r.nu), tv = table(n, r.nv);
      const int rational = (r.flags & patchk::kRational) ? 1 : 0;
      const std::size_t patch_bytes = net_bytes + std::size_t(rows) * row_bytes;
      const std::int64_t samples = std::int64_t(rows) * (r.nv + 1);
      if (rows == r.nu + 1 && samples <= kTablesPackSamples && batch.records.size() >= kTablesPackBatch) {
        // a small whole patch: joins the last packed tile if that holds its likes, else starts one
        auto& ptiles = tile_lists[1][rational];
        if (!ptiles.empty()) {
          TablesTile& last = ptiles.back();
          const auto& lr = batch.records[last.patch];
          if (last.patch + last.patches == p && last.patches < kTablesMaxPatches && lr.du == r.du && lr.dv == r.dv &&
              lr.nu == r.nu && lr.nv == r.nv && (last.patches + 1) * samples <= kTablesPackSamplesPerThread * kTablesBlock &&
              std::size_t(last.patches + 1) * patch_bytes <= kTablesSharedBudget) {
            ++last.patches;
            packed_smem = std::max(packed_smem, std::size_t(last.patches) * patch_bytes);
            continue;
          }
        }
        ptiles.push_back({p, 0, rows, 1, tu, tv});
        packed_smem = std::max(packed_smem, patch_bytes);
        continue;
      }
      for (int i = 0; i <= r.nu; i += rows)
        tile_lists[0][rational].push_back({p, i, std::min(rows, r.nu + 1 - i), 1, tu, tv});
      smem_bytes = std::max(smem_bytes, patch_bytes);
      continue;
    }
    others.push_back(p);
  }
  // one upload: the four lists one after the other
  std::vector<TablesTile> ttiles;
  std::size_t tile_offset[2][2];
  for (int packed = 0; packed < 2; ++packed)
    for (int rational = 0; rational < 2; ++rational) {
      tile_offset[packed][rational] = ttiles.size();
      ttiles.insert(ttiles.end(), tile_lists[packed][rational].begin(), tile_lists[packed][rational].end());
    }
  // Room for the tables kernel's degenerate samples: all of them up to a million (8 MiB; a sampled collapsed edge
  // has a row of them per patch); past that, a scan of the tiles' normals finds them.
  std::int64_t tables_samples = 0;
  for (const TablesTile& t : ttiles)
    tables_samples += std::int64_t(t.patches) * t.rows * (batch.records[std::size_t(t.patch)].nv + 1);
  const auto degenerate_capacity = unsigned(std::min<std::int64_t>(tables_samples, degenerate_list_capacity()));
  std::vector<std::int64_t> sel_first(others.size() + 1, 0);
  for (std::size_t k = 0; k < others.size(); ++k) sel_first[k + 1] = sel_first[k] + patchk::sample_count(batch.records[others[k]]);

  std::size_t free_bytes = 0, total_bytes = 0;
  PS_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "querying device memory");
  const std::size_t out_bytes = std::size_t(total) * 6 * sizeof(T);
  const std::size_t in_bytes = batch.points.size() * sizeof(T) + batch.records.size() * sizeof(patchk::PatchRecord) +
                               tables.size() * sizeof(T) + ctiles.size() * sizeof(CasteljauTile) +
                               ttiles.size() * sizeof(TablesTile) + std::size_t(degenerate_capacity) * 8 + 16;
  if (out_bytes + in_bytes + (64 << 20) > free_bytes)
    throw Error(ErrorKind::OutOfMemory, "patch batch needs " + std::to_string((out_bytes + in_bytes) >> 20) +
                                            " MiB of device memory, " + std::to_string(free_bytes >> 20) +
                                            " MiB are free; lower the resolution or the patch count");
  cudaStream_t stream = nullptr;
  PS_CUDA(cudaStreamCreate(&stream), "creating a stream");
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  struct Cleanup {
    cudaStream_t& s;
    cudaEvent_t& a;
    cudaEvent_t& b;
    ~Cleanup() {
      if (a) cudaEventDestroy(a);
      if (b) cudaEventDestroy(b);
      if (s) cudaStreamDestroy(s);
    }
  } cleanup{stream, e0, e1};
  PS_CUDA(cudaEventCreate(&e0), "creating an event");
  PS_CUDA(cudaEventCreate(&e1), "creating an event");
  const auto wall0 = std::chrono::steady_clock::now();
  DeviceBuffer d_rec, d_pts, d_npts, d_out, d_sel, d_self, d_ctiles, d_ttiles, d_tables, d_ppatch, d_puv, d_degenerate;
  upload<T>(d_rec, batch.records.data(), batch.records.size() * sizeof(patchk::PatchRecord), "uploading patch records", stream);
  upload<T>(d_pts, batch.points.data(), batch.points.size() * sizeof(T), "uploading control points", stream);
  upload<T>(d_npts, batch.normal_points.data(), batch.normal_points.size() * sizeof(T), "uploading normal control points", stream);
  upload<T>(d_sel, others.data(), others.size() * sizeof(std::int32_t), "uploading the patch list", stream);
  upload<T>(d_self, sel_first.data(), sel_first.size() * sizeof(std::int64_t), "uploading the patch list", stream);
  upload<T>(d_ctiles, ctiles.data(), ctiles.size() * sizeof(CasteljauTile), "uploading tiles", stream);
  upload<T>(d_ttiles, ttiles.data(), ttiles.size() * sizeof(TablesTile), "uploading tiles", stream);
  upload<T>(d_tables, tables.data(), tables.size() * sizeof(T), "uploading Bernstein tables", stream);
  upload<T>(d_ppatch, batch.point_patch.data(), batch.point_patch.size() * sizeof(std::int64_t), "uploading side samples", stream);
  upload<T>(d_puv, batch.point_uv.data(), batch.point_uv.size() * sizeof(double), "uploading side samples", stream);
  d_out.ensure(std::max<std::size_t>(out_bytes, 16), "allocating patch samples");
  DeviceViews<T> dv{d_rec.as<patchk::PatchRecord>(), d_pts.as<T>(), d_npts.as<T>(), {}, {}};
  for (int c = 0; c < 3; ++c) {
    dv.pos[c] = d_out.as<T>() + std::size_t(total) * c;
    dv.nrm[c] = d_out.as<T>() + std::size_t(total) * (3 + c);
  }
  d_degenerate.ensure(16 + std::size_t(degenerate_capacity) * 8, "allocating the degenerate-sample list");
  const DegenerateList degenerate{reinterpret_cast<std::uint64_t*>(d_degenerate.as<unsigned char>() + 16),
                                  d_degenerate.as<unsigned int>(), degenerate_capacity};
  PS_CUDA(cudaMemsetAsync(degenerate.count, 0, sizeof(unsigned int), stream), "clearing the degenerate-sample count");
  PS_CUDA(cudaEventRecord(e0, stream), "recording an event");
  if (!ctiles.empty()) {
    core::allow_dynamic_shared_memory(reinterpret_cast<const void*>(casteljau_kernel<T>), smem_bytes,
                                      "configuring the de Casteljau kernel");
    casteljau_kernel<T><<<unsigned(ctiles.size()), kBlock, smem_bytes, stream>>>(dv, d_ctiles.as<CasteljauTile>());
    PS_CUDA_LAUNCH("launching the de Casteljau patch kernel");
  }
  auto launch_tables = [&](auto kernel, int packed, int rational, std::size_t smem, const char* what) {
    const std::size_t count = tile_lists[packed][rational].size();
    if (count == 0) return;
    core::allow_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), smem, "configuring the tables kernel");
    kernel<<<unsigned(count), kTablesBlock, smem, stream>>>(dv, d_ttiles.as<TablesTile>() + tile_offset[packed][rational],
                                                           d_tables.as<T>(), degenerate);
    PS_CUDA_LAUNCH(what);
  };
  launch_tables(tables_kernel<T, false, false>, 0, 0, smem_bytes, "launching the tables patch kernel");
  launch_tables(tables_kernel<T, false, true>, 0, 1, smem_bytes, "launching the rational tables patch kernel");
  launch_tables(tables_kernel<T, true, false>, 1, 0, packed_smem, "launching the packed tables patch kernel");
  launch_tables(tables_kernel<T, true, true>, 1, 1, packed_smem, "launching the packed rational tables patch kernel");
  if (!ttiles.empty()) {
    listed_normals_kernel<T><<<64, kBlock, 0, stream>>>(dv, degenerate);
    PS_CUDA_LAUNCH("launching the limit-normal kernel");
  }
  if (!others.empty()) {
    const std::int64_t n = sel_first.back();
    direct_kernel<T><<<unsigned((n + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
        dv, d_sel.as<std::int32_t>(), d_self.as<std::int64_t>(), std::int32_t(others.size()));
    PS_CUDA_LAUNCH("launching the direct patch kernel");
  }
  const auto extra = std::int64_t(batch.point_patch.size());
  if (extra) {
    point_kernel<T><<<unsigned((extra + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
        dv, d_ppatch.as<std::int64_t>(), d_puv.as<double>(), extra, batch.samples);
    PS_CUDA_LAUNCH("launching the side-sample kernel");
  }
  PS_CUDA(cudaEventRecord(e1, stream), "recording an event");
  PS_CUDA(cudaEventSynchronize(e1), "evaluating the patch batch");
  float ms = 0;
  PS_CUDA(cudaEventElapsedTime(&ms, e0, e1), "timing the patch batch");
  timing.kernel_seconds = ms * 1e-3;
  if (!ttiles.empty()) {
    unsigned int listed = 0;
    PS_CUDA(cudaMemcpy(&listed, degenerate.count, sizeof listed, cudaMemcpyDeviceToHost), "reading the degenerate-sample count");
    if (listed > degenerate_capacity) {
      const auto t0 = std::chrono::steady_clock::now();
      scanned_normals_kernel<T><<<unsigned(ttiles.size()), kBlock, 0, stream>>>(dv, d_ttiles.as<TablesTile>());
      PS_CUDA_LAUNCH("launching the limit-normal scan");
      PS_CUDA(cudaStreamSynchronize(stream), "finding degenerate normals");
      timing.kernel_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  if (on_device) {
    SampleViews<T> views;
    for (int c = 0; c < 3; ++c) views.pos[c] = dv.pos[c], views.nrm[c] = dv.nrm[c];
    if (on_device(views)) copy_back = false;
  }
  if (copy_back) {
    std::vector<core::HostCopy> copies;
    for (int c = 0; c < 3; ++c) {
      copies.push_back({host_out.pos[c], dv.pos[c], std::size_t(total) * sizeof(T)});
      copies.push_back({host_out.nrm[c], dv.nrm[c], std::size_t(total) * sizeof(T)});
    }
    int device = 0;
    PS_CUDA(cudaGetDevice(&device), "copying patch samples to the host");
    core::copy_home(device, copies, stream, cpu_thread_count(0), "copying patch samples to the host");
  }
  timing.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return timing;
}

template BatchTiming evaluate<float>(const HostBatch<float>&, PatchStrategy, const SampleViews<float>&, bool,
                                     const OnDevice<float>&);
template BatchTiming evaluate<double>(const HostBatch<double>&, PatchStrategy, const SampleViews<double>&, bool,
                                      const OnDevice<double>&);

}  // namespace parasurf::patches::cuda
