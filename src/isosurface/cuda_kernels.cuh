// CUDA kernels of the isosurface engine: point flags by 2-D tiles of four-point runs marching along z, cell counts
// and the vertex and cell lists by one warp per grid row (four points a lane where rows align, warp scans), and the
// vertices and triangles one per thread (rows hold few of them). The per-point and per-cell math is mc_kernels.hpp,
// shared with the CPU engine.
// Pipeline as in Rogeiro 2011 (classify, scan, generate), with Flying-Edges-style edge ownership so that no
// compaction or vertex merge pass is needed.
#pragma once
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "isosurface/mc_kernels.hpp"
#include "isosurface/mc_tables.hpp"

namespace parasurf::iso::cuda {

constexpr int kRowThreads = 128;

// A row's vertex slots and the span of points that hold them.
struct RowStats {
  std::uint32_t slots;
  int first, last;
};
struct RowStatsMerge {
  __device__ __forceinline__ RowStats operator()(const RowStats& a, const RowStats& b) const {
    return {a.slots + b.slots, a.first < b.first ? a.first : b.first, a.last > b.last ? a.last : b.last};
  }
};

struct RowGrid {
  std::int64_t nx, ny, z0;
  std::int64_t flag_rows;  // rows (j, k) with k in [z0, flag_z1)
  std::int64_t cell_rows;  // rows whose cells this slab makes (j may be ny − 1: such rows have no cells)
};

// Warp-level sums and merges (all 32 lanes take part).
constexpr int kRowsPerBlock = kRowThreads / 32;  // the counting passes give each row one warp
__device__ __forceinline__ std::uint32_t warp_sum(std::uint32_t v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ RowStats warp_merge(RowStats a) {
  for (int o = 16; o > 0; o >>= 1) {
    const RowStats b{__shfl_xor_sync(0xffffffffu, a.slots, o), __shfl_xor_sync(0xffffffffu, a.first, o),
                     __shfl_xor_sync(0xffffffffu, a.last, o)};
    a = RowStatsMerge()(a, b);
  }
  return a;
}

// Pass 1a: flags of every point and the vertex slots per row. A thread takes kFlagPoints consecutive points of a
// row (one vector load where the rows are aligned), a block 32 x 8 such runs in (i, j), and marches them through
// kFlagSlices slices along z, keeping each run's next slice for the next step: every sample is read from memory about
// once (the +x neighbour of the run's last point comes by shuffle, the +y row from L1, where the thread above it
// loaded it two slices earlier). One warp per row segment, which adds its row's slots and span by atomics (rows start
// cleared by flags_clear). One point per thread spent most of its instructions on the loop, its pointers, its
// barrier and the row's ballot: 0.85 ms at 512^3 under the profiler, issue-bound with DRAM 16 % busy.
constexpr int kFlagPoints = 4, kFlagWarpPoints = 32 * kFlagPoints, kFlagTileY = 8, kFlagSlices = 16;

__global__ void flags_clear_kernel(std::int64_t rows, int nx, std::uint32_t* __restrict__ row_vertices,
                                   int* __restrict__ row_first, int* __restrict__ row_last) {
  const std::int64_t r = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  row_vertices[r] = 0;
  row_first[r] = nx;
  row_last[r] = -1;
}

// kFlagPoints samples as one vector (the address aligned to its size) or one by one (count of them valid).
template <class T> struct alignas(kFlagPoints * sizeof(T)) FlagRun {
  T v[kFlagPoints];
};
template <class T, class R, bool Aligned>
__device__ __forceinline__ void load_run(const T* __restrict__ at, int count, R (&out)[kFlagPoints]) {
  if constexpr (Aligned) {
    const FlagRun<T> run = *reinterpret_cast<const FlagRun<T>*>(at);
#pragma unroll
    for (int p = 0; p < kFlagPoints; ++p) out[p] = R(run.v[p]);
  } else {
#pragma unroll
    for (int p = 0; p < kFlagPoints; ++p) out[p] = p < count ? R(at[p]) : R(0);
  }
}

// Which samples of a run are inside (bit p for point p) and which lie on the level (bit 4 + p).
constexpr int kOnShift = kFlagPoints;
template <class R> __device__ __forceinline__ std::uint32_t classify_sample(R v, R level) {
  return (mc::is_inside(v, level) ? 1u : 0u) | (v == level ? 1u << kOnShift : 0u);
}
template <class R>
__device__ __forceinline__ std::uint32_t classify_run(const R (&v)[kFlagPoints], R level) {
  std::uint32_t bits = 0;
#pragma unroll
  for (int p = 0; p < kFlagPoints; ++p) bits |= classify_sample(v[p], level) << p;
  return bits;
}
// Bytes of a flag word, four points' flags, masked to their vertex slots.
constexpr std::uint32_t kSlotBytes = 0x01010101u * mc::kSlotMask;
// Bit p of m (p < 4) to bit 0 of byte p: the four shifted copies of m do not overlap, so nothing carries.
static_assert(kFlagPoints == 4, "spread_bits and the packed flag word take four points");
__device__ __forceinline__ std::uint32_t spread_bits(std::uint32_t m) { return (m * 0x00204081u) & 0x01010101u; }

// Aligned: nx is a multiple of kFlagPoints and the samples and flags start on a run's alignment, so a run is
// always whole and loads and stores as one vector.
template <class T, bool Aligned>
__global__ void __launch_bounds__(32 * kFlagTileY) flags_kernel(mc::SlabValues<T> s, RowGrid g,
                                                                 typename mc::RealOf<T>::type level,
                                                                 std::uint8_t* __restrict__ flags,
                                                                 std::uint32_t* __restrict__ row_vertices,
                                                                 int* __restrict__ row_first,
                                                                 int* __restrict__ row_last) {
  using R = typename mc::RealOf<T>::type;
  const int lane = int(threadIdx.x);
  const std::int64_t i0 = std::int64_t(blockIdx.x) * kFlagWarpPoints + kFlagPoints * lane;
  const std::int64_t j = std::int64_t(blockIdx.y) * kFlagTileY + threadIdx.y;
  const std::int64_t k_end = g.z0 + g.flag_rows / g.ny;
  const std::int64_t k_begin = g.z0 + std::int64_t(blockIdx.z) * kFlagSlices;
  const std::int64_t k_stop = min(k_begin + kFlagSlices, k_end);
  // Points of this run inside the grid (0 for runs past the row's end or rows past the grid).
  const int count = j < g.ny ? int(max(std::int64_t(0), min(std::int64_t(kFlagPoints), g.nx - i0))) : 0;
  const bool has_north = j + 1 < g.ny, has_after_east = i0 + kFlagPoints < g.nx;
  // Pointers advance by a plane per slice: index arithmetic in 64 bits per sample cost more than the tests.
  const std::int64_t plane = s.nx * s.ny;
  const T* at = s.data + ((k_begin - s.z_begin) * s.ny + min(j, g.ny - 1)) * s.nx + (count > 0 ? i0 : 0);
  std::uint8_t* out = flags + ((k_begin - g.z0) * g.ny + j) * g.nx + i0;
  std::int64_t r = (k_begin - g.z0) * g.ny + j;
  // The classes of this slice and the next are carried from step to step; each sample is classified once as
  // `after` and once as `north`.
  std::uint32_t cur = 0, next = 0;
  {
    R v[kFlagPoints] = {};
    if (count > 0) load_run<T, R, Aligned>(at, count, v);
    cur = classify_run(v, level);
    if (count > 0 && k_begin + 1 < s.nz) {
      load_run<T, R, Aligned>(at + plane, count, v);
      next = classify_run(v, level);
    }
  }
  constexpr std::uint32_t kLow = (1u << kFlagPoints) - 1u, kLast = kFlagPoints - 1;
  const std::uint32_t valid = (1u << count) - 1u;
  const std::uint32_t has_east = valid >> 1 | (has_after_east ? 1u << kLast : 0u);
  for (std::int64_t k = k_begin; k < k_stop; ++k, at += plane, out += plane, r += g.ny) {
    R after[kFlagPoints] = {}, north[kFlagPoints] = {};
    if (count > 0 && k + 2 < s.nz && k + 1 < k_stop) load_run<T, R, Aligned>(at + 2 * plane, count, after);
    if (count > 0 && has_north) load_run<T, R, Aligned>(at + s.nx, count, north);
    // The point after the run: the next lane's first, or (last lane) a load.
    std::uint32_t east = __shfl_down_sync(0xffffffffu, cur, 1);
    if (lane == 31 && count == kFlagPoints && has_after_east) {
      east = classify_sample(R(at[kFlagPoints]), level);
    }
    const std::uint32_t north_bits = classify_run(north, level);
    // point_flags' first branch for four points at once, as bit masks: a crossing to a neighbour on the level is
    // left to that neighbour's vertex.
    const std::uint32_t in = cur & kLow, on = cur >> kOnShift & kLow;
    const std::uint32_t right = (cur >> 1 & ~(1u << kLast | 1u << (kOnShift + kLast))) | (east & (1u | 1u << kOnShift)) << kLast;
    const std::uint32_t x = (in ^ (right & kLow)) & ~(right >> kOnShift) & has_east;
    const std::uint32_t y = has_north ? (in ^ (north_bits & kLow)) & ~(north_bits >> kOnShift) : 0u;
    const std::uint32_t z = k + 1 < s.nz ? (in ^ (next & kLow)) & ~(next >> kOnShift) : 0u;
    std::uint32_t word = (spread_bits(in) * mc::kInside | spread_bits(x) * mc::kSlotX | spread_bits(y) * mc::kSlotY |
                          spread_bits(z) * mc::kSlotZ) &
                         spread_bits(valid) * 0xffu;
    if (on & valid) {  // on the level: the rare exact path
#pragma unroll
      for (int p = 0; p < kFlagPoints; ++p)
        if ((on & valid) >> p & 1u) {
          const std::uint32_t f = mc::point_flags<T, R>(s, i0 + p, j, k, level);
          word = (word & ~(0xffu << (8 * p))) | f << (8 * p);
        }
    }
    if constexpr (Aligned) {
      if (count > 0) *reinterpret_cast<std::uint32_t*>(out) = word;
    } else {
#pragma unroll
      for (int p = 0; p < kFlagPoints; ++p)
        if (p < count) out[p] = std::uint8_t(word >> (8 * p));
    }
    // The row segment's slots and span: most segments have none, and a ballot says so at once.
    const std::uint32_t slotted = word & kSlotBytes;
    const std::uint32_t with = __ballot_sync(0xffffffffu, slotted != 0);
    if (with) {
      const std::uint32_t slots = __reduce_add_sync(0xffffffffu, std::uint32_t(__popc(slotted)));
      const int low = __ffs(int(with)) - 1, high = 31 - __clz(int(with));
      // The first and last slotted point of the run: the lowest and highest nonzero byte.
      const int first = __shfl_sync(0xffffffffu, slotted ? (__ffs(int(slotted)) - 1) >> 3 : 0, low);
      const int last = __shfl_sync(0xffffffffu, slotted ? (31 - __clz(int(slotted))) >> 3 : 0, high);
      if (lane == 0) {
        const int base = int(blockIdx.x) * kFlagWarpPoints;
        atomicAdd(row_vertices + r, slots);
        atomicMin(row_first + r, base + kFlagPoints * low + first);
        atomicMax(row_last + r, base + kFlagPoints * high + last);
      }
    }
    cur = next;
    next = classify_run(after, level);
  }
}

// The slab's totals after the row scans, gathered on the device so that one copy brings them home (five copies of a
// few bytes cost the host five round trips: about 40 us, a tenth of a 256^3 extraction).
struct SlabTotals {
  unsigned long long vertices, triangles, ties;
};
__global__ void totals_kernel(const std::uint64_t* __restrict__ row_vertex_base,
                              const std::uint32_t* __restrict__ row_vertices,
                              const std::uint64_t* __restrict__ row_triangle_base,
                              const std::uint32_t* __restrict__ row_triangles, std::int64_t rows, std::int64_t owned,
                              const unsigned long long* __restrict__ tie_count, SlabTotals* __restrict__ out) {
  // Vertices of the owned rows only (the slab's extra slice belongs to the next slab); all triangles.
  out->vertices = owned < rows ? row_vertex_base[owned] : row_vertex_base[rows - 1] + row_vertices[rows - 1];
  out->triangles = row_triangle_base[rows - 1] + row_triangles[rows - 1];
  out->ties = *tie_count;
}

__device__ __forceinline__ void load_corners(const std::uint8_t* const* row, std::int64_t i, std::uint8_t* cf) {
  for (int c = 0; c < 8; ++c) cf[c] = row[c >> 1][i + (c & 1)];
}

// Surviving triangles of a cell, and how many of them touch an on-level sample.
__device__ __forceinline__ int surviving(const mc::CaseEntry& e, const std::uint8_t* cf, bool keep_degenerate,
                                         int& ties) {
  ties = 0;
  if (!mc::touches_level(cf)) return e.count;
  int n = 0;
  mc::cell_triangles(e, cf, keep_degenerate, [&](int, int, int, bool on_level) {
    ++n;
    ties += on_level ? 1 : 0;
  });
  return n;
}

// Cells of row r that can be mixed: a crossing of cell i leaves a slot at point i or i + 1 of its four rows.
__device__ __forceinline__ void cell_span(const RowGrid& g, std::int64_t r, const int* __restrict__ row_first,
                                          const int* __restrict__ row_last, std::int64_t& begin, std::int64_t& end) {
  int lo = int(g.nx), hi = -1;
  const std::int64_t rr[4] = {r, r + 1, r + g.ny, r + g.ny + 1};
  for (int q = 0; q < 4; ++q) {
    lo = min(lo, row_first[rr[q]]);
    hi = max(hi, row_last[rr[q]]);
  }
  begin = lo > 0 ? lo - 1 : 0;
  end = min(std::int64_t(hi) + 1, g.nx - 1);
}

// Runs of kFlagPoints cells (count and list passes, rows aligned): the flag words of points i0 .. i0 + 3 in the four
// rows of a cell row, and the byte of point i0 + 4 (the next lane's first, or a load by the last lane). Lanes whose
// run starts past `stop` (which is at most nx - 1) read nothing and hold zeros.
__device__ __forceinline__ void load_run_words(const std::uint8_t* const* row, int i0, int stop, int lane,
                                               std::uint32_t (&w)[4], std::uint32_t (&after)[4]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) w[q] = i0 <= stop ? *reinterpret_cast<const std::uint32_t*>(row[q] + i0) : 0u;
#pragma unroll
  for (int q = 0; q < 4; ++q) after[q] = __shfl_down_sync(0xffffffffu, w[q], 1) & 0xffu;
  if (lane == 31 && i0 + kFlagPoints <= stop)
#pragma unroll
    for (int q = 0; q < 4; ++q) after[q] = row[q][i0 + kFlagPoints];
}
__device__ __forceinline__ bool run_has_slots(const std::uint32_t (&w)[4], const std::uint32_t (&after)[4]) {
  return (((w[0] | w[1] | w[2] | w[3]) & kSlotBytes) | ((after[0] | after[1] | after[2] | after[3]) & mc::kSlotMask)) != 0;
}
// The corner flags of cell i0 + c, in cell_case's order.
__device__ __forceinline__ void run_corners(const std::uint32_t (&w)[4], const std::uint32_t (&after)[4], int c,
                                            std::uint8_t* cf) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    cf[2 * q] = std::uint8_t(w[q] >> (8 * c));
    cf[2 * q + 1] = std::uint8_t(c + 1 < kFlagPoints ? w[q] >> (8 * c + 8) : after[q]);
  }
}

// One mixed cell of pass 1b: its surviving triangles and on-level ones, and (MC33) its centre vertex. An MC33 centre
// vertex belongs to the cell's lowest corner. Other warps may read that flag byte meanwhile: they use only its
// inside and on-level bits, and their spans only pick cells, which a centre never adds.
template <class T>
__device__ __forceinline__ void count_cell(const mc::SlabValues<T>& s, const RowGrid& g,
                                           typename mc::RealOf<T>::type level, std::uint8_t* flags,
                                           const mc::CaseLookup& cases, bool keep_degenerate, std::int64_t r,
                                           std::int64_t i, std::int64_t j, std::int64_t k, const std::uint8_t* cf,
                                           int* row_first, int* row_last, std::uint32_t* row_vertices,
                                           std::uint32_t& n, std::uint32_t& ties) {
  const int cas = mc::cell_case(cf);
  if (cas == 0 || cas == 255) return;
  const auto& e = mc::case_entry(cases, s, cas, level, i, j, k);
  int t = 0;
  n += std::uint32_t(surviving(e, cf, keep_degenerate, t));
  ties += std::uint32_t(t);
  if (e.center && mc::uses_center(e, cf, keep_degenerate)) {
    flags[r * g.nx + i] |= mc::kSlotCenter;
    atomicAdd(row_vertices + r, 1u);
    atomicMin(row_first + r, int(i));
    atomicMax(row_last + r, int(i));
  }
}

// Pass 1b: triangles per cell row (and the number that touch on-level samples, for the duplicate check), and the
// MC33 centre vertices; one warp per row. Runs: nx is a multiple of kFlagPoints and the flags start aligned, so a
// lane reads its four cells' corners as one word per row (the corner after them from the next lane) and skips the
// four at once where none of those corners holds a slot (a centre bit set meanwhile by another warp only adds a
// candidate); otherwise a lane takes one cell and reads its 8 corner bytes. Runs halve the instructions per cell
// (H200, 512^3 tangle: extraction 1.19-1.21 -> 1.12-1.13 ms with the cell list's runs).
template <class T, bool Runs>
__global__ void __launch_bounds__(kRowThreads) count_cells_kernel(mc::SlabValues<T> s, RowGrid g,
                                                                  typename mc::RealOf<T>::type level,
                                                                  std::uint8_t* flags,
                                                                  mc::CaseLookup cases, bool keep_degenerate,
                                                                  int* row_first, int* row_last,
                                                                  std::uint32_t* row_vertices,
                                                                  std::uint32_t* __restrict__ row_triangles,
                                                                  unsigned long long* __restrict__ tie_count) {
  const std::int64_t r = std::int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (r >= g.cell_rows) return;
  const int lane = int(threadIdx.x % 32);
  const std::int64_t k = g.z0 + r / g.ny, j = r % g.ny;
  if (j + 1 >= g.ny) {
    if (lane == 0) row_triangles[r] = 0;
    return;
  }
  const std::uint8_t* row[4] = {flags + r * g.nx, flags + (r + 1) * g.nx, flags + (r + g.ny) * g.nx,
                                flags + (r + g.ny + 1) * g.nx};
  std::int64_t begin, end;
  cell_span(g, r, row_first, row_last, begin, end);
  if (begin >= end) {
    if (lane == 0) row_triangles[r] = 0;
    return;
  }
  std::uint32_t n = 0, ties = 0;
  if constexpr (Runs) {
    const int first = int(begin), stop = int(end);
    for (int run0 = first & ~(kFlagPoints - 1); run0 < stop; run0 += kFlagWarpPoints) {
      const int i0 = run0 + kFlagPoints * lane;
      std::uint32_t w[4], after[4];
      load_run_words(row, i0, stop, lane, w, after);
      // Every mixed cell has a slotted corner (an edge from an inside to an outside corner leaves a crossing slot,
      // or a point slot on its end that lies on the level), so runs whose corners hold none are skipped.
      if (!run_has_slots(w, after)) continue;
#pragma unroll
      for (int c = 0; c < kFlagPoints; ++c) {
        if (i0 + c < first || i0 + c >= stop) continue;
        std::uint8_t cf[8];
        run_corners(w, after, c, cf);
        count_cell(s, g, level, flags, cases, keep_degenerate, r, i0 + c, j, k, cf, row_first, row_last, row_vertices,
                   n, ties);
      }
    }
  } else {
    for (std::int64_t i = begin + lane; i < end; i += 32) {
      std::uint8_t cf[8];
      load_corners(row, i, cf);
      count_cell(s, g, level, flags, cases, keep_degenerate, r, i, j, k, cf, row_first, row_last, row_vertices, n, ties);
    }
  }
  const std::uint32_t total = warp_sum(n);
  if (lane == 0) row_triangles[r] = total;
  if (ties) atomicAdd(tie_count, (unsigned long long)ties);
}

// Pass 1c (MC33 only): the centre vertices of the next slab's first cells (slice k), which own vertices of the
// slice this slab numbers last. One block per row j of that slice.
template <class T>
__global__ void __launch_bounds__(kRowThreads) next_slab_centers_kernel(mc::SlabValues<T> s, RowGrid g,
                                                                        typename mc::RealOf<T>::type level,
                                                                        std::uint8_t* flags, mc::CaseLookup cases,
                                                                        bool keep_degenerate, std::int64_t k,
                                                                        int* row_first, int* row_last,
                                                                        std::uint32_t* row_vertices) {
  const std::int64_t j = blockIdx.x, r = (k - g.z0) * g.ny + j;
  for (std::int64_t i = threadIdx.x; i + 1 < g.nx; i += kRowThreads)
    if (mc::cell_needs_center(cases, s, i, j, k, level, keep_degenerate)) {
      flags[r * g.nx + i] |= mc::kSlotCenter;
      atomicAdd(row_vertices + r, 1u);
      atomicMin(row_first + r, int(i));
      atomicMax(row_last + r, int(i));
    }
}

// Pass 2a: the vertices of each owned row, at the row's scanned offset plus the in-row prefix.
template <class T>
__global__ void __launch_bounds__(kRowThreads) vertex_kernel(mc::SlabValues<T> s, RowGrid g,
                                                             typename mc::RealOf<T>::type level, mc::WorldMap map,
                                                             const std::uint8_t* __restrict__ flags,
                                                             const std::uint32_t* __restrict__ row_vertices,
                                                             const std::uint64_t* __restrict__ row_vertex_base,
                                                             const int* __restrict__ row_first,
                                                             const int* __restrict__ row_last,
                                                             float* __restrict__ positions, float* __restrict__ normals,
                                                             const float* __restrict__ scalars,
                                                             float* __restrict__ values,
                                                             unsigned long long* __restrict__ points) {
  using R = typename mc::RealOf<T>::type;
  using Scan = cub::BlockScan<std::uint32_t, kRowThreads>;
  __shared__ typename Scan::TempStorage temp;
  const std::int64_t r = blockIdx.x;
  if (row_vertices[r] == 0) return;
  const std::int64_t k = g.z0 + r / g.ny, j = r % g.ny;
  const std::uint8_t* f = flags + r * g.nx;
  std::uint64_t base = row_vertex_base[r];
  const std::int64_t last = row_last[r];
  for (std::int64_t i0 = row_first[r]; i0 <= last; i0 += kRowThreads) {
    const std::int64_t i = i0 + threadIdx.x;
    const std::uint8_t fl = i <= last ? f[i] : 0;
    std::uint32_t offset, chunk;
    Scan(temp).ExclusiveSum(std::uint32_t(mc::slot_count(fl)), offset, chunk);
    if (fl & mc::kSlotPoint) *points = 1;  // every writer stores the same value
    if (fl & mc::kSlotMask) {
      const std::uint64_t v = base + offset;
      float scratch[12];
      const mc::SlabValues<float> sv{scalars, s.nx, s.ny, s.nz, s.z_begin};
      mc::point_vertices<T, R>(s, i, j, k, fl, level, map, positions + 3 * v, normals ? normals + 3 * v : scratch,
                               scalars ? &sv : nullptr, scalars ? values + v : nullptr);
    }
    base += chunk;
    __syncthreads();  // the scan's shared storage is reused by the next chunk
  }
}

struct FiveCounts {
  std::uint32_t v[5];
};
struct FiveSum {
  __device__ __forceinline__ FiveCounts operator()(const FiveCounts& a, const FiveCounts& b) const {
    FiveCounts c;
    for (int q = 0; q < 5; ++q) c.v[q] = a.v[q] + b.v[q];
    return c;
  }
};

// Pass 2a, in two kernels: most rows hold a few vertices, so a block per row would idle while a few threads
// compute them. The first kernel lists every vertex as (row, point, slot) at its id; the second computes one
// vertex per thread. Points up to 2^21 per row.
constexpr int kListPointBits = 21;
__device__ __forceinline__ std::uint64_t vertex_entry(std::int64_t r, std::int64_t i, int slot_bit) {
  return std::uint64_t(r) << (kListPointBits + 3) | std::uint64_t(i) << 3 | std::uint64_t(slot_bit);
}

// Exclusive prefix of a count over the warp's lanes, and the warp's total.
__device__ __forceinline__ std::uint32_t warp_exclusive(std::uint32_t mine, int lane, std::uint32_t& total) {
  std::uint32_t inc = mine;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const std::uint32_t x = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += x;
  }
  total = __shfl_sync(0xffffffffu, inc, 31);
  return inc - mine;
}

// One warp per row (a block per row idled on the rows' few vertices and on its barriers).
// Runs (rows aligned, as in count_cells_kernel): a lane takes four points as one flag word, and chunks of 128 points
// without a slot are skipped whole.
template <bool Runs>
__global__ void __launch_bounds__(kRowThreads) vertex_list_kernel(RowGrid g, std::int64_t rows,
                                                                  const std::uint8_t* __restrict__ flags,
                                                                  const std::uint32_t* __restrict__ row_vertices,
                                                                  const std::uint64_t* __restrict__ row_vertex_base,
                                                                  const int* __restrict__ row_first,
                                                                  const int* __restrict__ row_last,
                                                                  std::uint64_t* __restrict__ entries) {
  const std::int64_t r = std::int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (r >= rows || row_vertices[r] == 0) return;  // whole warp
  const int lane = int(threadIdx.x % 32);
  const std::uint8_t* f = flags + r * g.nx;
  std::uint64_t base = row_vertex_base[r];
  if constexpr (Runs) {
    // No point before row_first or after row_last holds a slot, so whole words need no masking.
    const int last = row_last[r];
    for (int run0 = row_first[r] & ~(kFlagPoints - 1); run0 <= last; run0 += kFlagWarpPoints) {
      const int i0 = run0 + kFlagPoints * lane;
      const std::uint32_t slots = i0 <= last ? *reinterpret_cast<const std::uint32_t*>(f + i0) & kSlotBytes : 0u;
      if (!__any_sync(0xffffffffu, slots != 0)) continue;
      std::uint32_t chunk;
      const std::uint32_t offset = warp_exclusive(std::uint32_t(__popc(slots)), lane, chunk);
      std::uint64_t v = base + offset;
      for (std::uint32_t bits = slots; bits; bits &= bits - 1) {
        const int bit = __ffs(int(bits)) - 1;
        entries[v++] = vertex_entry(r, i0 + (bit >> 3), bit & 7);
      }
      base += chunk;
    }
  } else {
    const std::int64_t last = row_last[r];
    for (std::int64_t i0 = row_first[r]; i0 <= last; i0 += 32) {
      const std::int64_t i = i0 + lane;
      const std::uint8_t fl = i <= last ? f[i] : 0;
      std::uint32_t chunk;
      const std::uint32_t offset = warp_exclusive(std::uint32_t(mc::slot_count(fl)), lane, chunk);
      std::uint64_t v = base + offset;
      for (unsigned bits = fl & mc::kSlotMask; bits; bits &= bits - 1) entries[v++] = vertex_entry(r, i, __ffs(bits) - 1);
      base += chunk;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(256) vertex_compute_kernel(mc::SlabValues<T> s, RowGrid g,
                                                             typename mc::RealOf<T>::type level, mc::WorldMap map,
                                                             const std::uint64_t* __restrict__ entries,
                                                             std::uint64_t count, float* __restrict__ positions,
                                                             float* __restrict__ normals,
                                                             const float* __restrict__ scalars,
                                                             float* __restrict__ values,
                                                             unsigned long long* __restrict__ points) {
  using R = typename mc::RealOf<T>::type;
  const std::uint64_t v = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= count) return;
  const std::uint64_t e = entries[v];
  if ((e & 7) == 0) *points = 1;  // slot bit 0: a sample on the level (every writer stores the same value)
  const std::int64_t r = std::int64_t(e >> (kListPointBits + 3));
  const std::int64_t i = std::int64_t(e >> 3 & ((1u << kListPointBits) - 1));
  const std::int64_t k = g.z0 + r / g.ny, j = r % g.ny;
  float scratch[3];
  const mc::SlabValues<float> sv{scalars, s.nx, s.ny, s.nz, s.z_begin};
  // One slot bit only: point_vertices writes exactly that vertex.
  mc::point_vertices<T, R>(s, i, j, k, std::uint8_t(1u << (e & 7)), level, map, positions + 3 * v,
                           normals ? normals + 3 * v : scratch, scalars ? &sv : nullptr, scalars ? values + v : nullptr);
}

// Pass 2b: triangles of each cell row. One scan gives, per cell, the slot prefix in the four rows its corners
// lie in and its first triangle.
template <class T>
__global__ void __launch_bounds__(kRowThreads) triangle_kernel(
    mc::SlabValues<T> s, RowGrid g, typename mc::RealOf<T>::type level, const std::uint8_t* __restrict__ flags,
    mc::CaseLookup cases, bool keep_degenerate, bool flip, const std::uint32_t* __restrict__ row_triangles,
    const std::uint64_t* __restrict__ row_vertex_base, const std::uint64_t* __restrict__ row_triangle_base,
    const int* __restrict__ row_first, const int* __restrict__ row_last, std::uint64_t vertex_base,
    const std::int32_t* __restrict__ labels, std::uint32_t* __restrict__ triangles,
    std::int32_t* __restrict__ face_labels, unsigned long long* __restrict__ tie_count,
    std::uint64_t* __restrict__ ties) {
  using Scan = cub::BlockScan<FiveCounts, kRowThreads>;
  __shared__ typename Scan::TempStorage temp;
  const std::int64_t r = blockIdx.x;
  if (row_triangles[r] == 0) return;
  const std::int64_t k = g.z0 + r / g.ny, j = r % g.ny;
  const std::int64_t rr[4] = {r, r + 1, r + g.ny, r + g.ny + 1};
  const std::uint8_t* row[4];
  std::uint64_t base[4];
  for (int q = 0; q < 4; ++q) {
    row[q] = flags + rr[q] * g.nx;
    base[q] = vertex_base + row_vertex_base[rr[q]];
  }
  std::uint64_t tri = row_triangle_base[r];
  FiveCounts zero;
  for (int q = 0; q < 5; ++q) zero.v[q] = 0;
  // No row has a slot before `begin`, so the in-row prefixes start at zero there.
  std::int64_t begin, end;
  cell_span(g, r, row_first, row_last, begin, end);
  for (std::int64_t i0 = begin; i0 < end; i0 += kRowThreads) {
    const std::int64_t i = i0 + threadIdx.x;
    FiveCounts mine = zero;
    std::uint8_t cf[8];
    int cas = 0;
    const mc::CaseEntry* e = nullptr;
    if (i < end) {
      for (int q = 0; q < 4; ++q) mine.v[q] = std::uint32_t(mc::slot_count(row[q][i]));
      load_corners(row, i, cf);
      cas = mc::cell_case(cf);
      if (cas != 0 && cas != 255) {
        e = &mc::case_entry(cases, s, cas, level, i, j, k);
        int unused = 0;
        mine.v[4] = std::uint32_t(surviving(*e, cf, keep_degenerate, unused));
      }
    }
    FiveCounts prefix, chunk;
    Scan(temp).ExclusiveScan(mine, prefix, zero, FiveSum(), chunk);
    if (e && mine.v[4] > 0) {
      std::uint64_t first[8];
      for (int c = 0; c < 8; ++c) {
        const int q = c >> 1;
        // The corner at i + 1 follows point i in its row: add point i's own slots.
        first[c] = base[q] + prefix.v[q] + ((c & 1) ? mine.v[q] : 0u);
      }
      const std::int32_t label = labels ? mc::cell_label_at(labels, g.nx, g.ny, s.z_begin, i, j, k, cf) : 0;
      std::uint64_t t = tri + prefix.v[4];
      mc::cell_triangles(*e, cf, keep_degenerate, [&](int a, int b, int c, bool on_level) {
        std::uint32_t* out = triangles + 3 * t;
        out[0] = std::uint32_t(mc::key_vertex(a, cf, first));
        out[1] = std::uint32_t(mc::key_vertex(flip ? c : b, cf, first));
        out[2] = std::uint32_t(mc::key_vertex(flip ? b : c, cf, first));
        if (labels) face_labels[t] = label;
        if (on_level) ties[atomicAdd(tie_count, 1ull)] = t;
        ++t;
      });
    }
    for (int q = 0; q < 4; ++q) base[q] += chunk.v[q];
    tri += chunk.v[4];
    __syncthreads();
  }
}

// Pass 2b split like 2a: most cell rows hold a few mixed cells. The first kernel runs the row scan and records each
// mixed cell at its first triangle (its table entry and the vertex id of corners 0, 2, 4, 6's points; the other
// triangles of the cell are marked as continuations); the second writes each cell's triangles, one thread per
// triangle slot.
struct CellRecord {
  std::uint64_t cell;         // r << 24 | i, or kContinuation
  std::uint32_t entry;        // index into the case entries, or kTunnelEntry | index into the tunnel entries
  std::uint32_t first_even[4];  // first vertex id of the points of corners 0, 2, 4, 6
  std::uint32_t unused;
};
constexpr std::uint64_t kContinuation = ~0ull;
constexpr std::uint32_t kTunnelEntry = 1u << 31;

// One warp per cell row. The four rows' slot counts (at most 5 per point, so at most 160 per 32 lanes) share one
// 32-bit word, a byte each, so the warp scans two words instead of five.
// Runs (as in count_cells_kernel): a lane takes four cells and their points, whose slots it counts with one popcount
// per row (at most 20 per lane, 640 per warp: two rows to a word, 16 bits each), so the warp scans three words for
// 128 cells, and skips the 128 at once where none of their corners holds a slot.
template <class T, bool Runs>
__global__ void __launch_bounds__(kRowThreads) cell_list_kernel(
    mc::SlabValues<T> s, RowGrid g, typename mc::RealOf<T>::type level, const std::uint8_t* __restrict__ flags,
    mc::CaseLookup cases, bool keep_degenerate, const std::uint32_t* __restrict__ row_triangles,
    const std::uint64_t* __restrict__ row_vertex_base, const std::uint64_t* __restrict__ row_triangle_base,
    const int* __restrict__ row_first, const int* __restrict__ row_last, std::uint64_t vertex_base,
    CellRecord* __restrict__ records) {
  const std::int64_t r = std::int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (r >= g.cell_rows || row_triangles[r] == 0) return;  // whole warp
  const int lane = int(threadIdx.x % 32);
  const std::int64_t k = g.z0 + r / g.ny, j = r % g.ny;
  const std::int64_t rr[4] = {r, r + 1, r + g.ny, r + g.ny + 1};
  const std::uint8_t* row[4];
  std::uint64_t base[4];
  for (int q = 0; q < 4; ++q) {
    row[q] = flags + rr[q] * g.nx;
    base[q] = vertex_base + row_vertex_base[rr[q]];
  }
  std::uint64_t tri = row_triangle_base[r];
  std::int64_t begin, end;
  cell_span(g, r, row_first, row_last, begin, end);
  auto record = [&](const mc::CaseEntry* e, std::int64_t i, std::uint64_t t, std::uint32_t tris, const std::uint64_t* first) {
    CellRecord rec;
    rec.cell = std::uint64_t(r) << (kListPointBits + 3) | std::uint64_t(i);
    const bool tunnel = !(e >= cases.entries && e < cases.entries + 256 * mc::kFaceMasks);
    rec.entry = tunnel ? kTunnelEntry | std::uint32_t(e - cases.tunnel_entries) : std::uint32_t(e - cases.entries);
    for (int q = 0; q < 4; ++q) rec.first_even[q] = std::uint32_t(first[q]);
    rec.unused = 0;
    records[t] = rec;
    for (std::uint32_t n = 1; n < tris; ++n) records[t + n].cell = kContinuation;
  };
  if constexpr (Runs) {
    const int first_cell = int(begin), stop = int(end);
    for (int run0 = first_cell & ~(kFlagPoints - 1); run0 < stop; run0 += kFlagWarpPoints) {
      const int i0 = run0 + kFlagPoints * lane;
      std::uint32_t w[4], after[4];
      load_run_words(row, i0, stop, lane, w, after);
      const bool candidate = run_has_slots(w, after);
      // A chunk whose points and cells hold nothing moves neither the vertex nor the triangle offsets.
      if (!__any_sync(0xffffffffu, candidate)) continue;
      // Each mixed cell of the span: its table entry and surviving triangles (slotted runs only: see count_cells).
      const mc::CaseEntry* e[kFlagPoints];
      std::uint32_t tris[kFlagPoints], lane_tris = 0;
#pragma unroll
      for (int c = 0; c < kFlagPoints; ++c) {
        e[c] = nullptr;
        tris[c] = 0;
        if (!candidate || i0 + c < first_cell || i0 + c >= stop) continue;
        std::uint8_t cf[8];
        run_corners(w, after, c, cf);
        const int cas = mc::cell_case(cf);
        if (cas == 0 || cas == 255) continue;
        e[c] = &mc::case_entry(cases, s, cas, level, i0 + c, j, k);
        int unused = 0;
        tris[c] = std::uint32_t(surviving(*e[c], cf, keep_degenerate, unused));
        lane_tris += tris[c];
      }
      // Slots of the run's points (at most 20 a row, 640 a warp: two rows to a word, 16 bits each).
      std::uint32_t count[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) count[q] = std::uint32_t(__popc(w[q] & kSlotBytes));
      std::uint32_t chunk01, chunk23, tris_chunk;
      const std::uint32_t prefix01 = warp_exclusive(count[0] | count[1] << 16, lane, chunk01);
      const std::uint32_t prefix23 = warp_exclusive(count[2] | count[3] << 16, lane, chunk23);
      const std::uint32_t tris_prefix = warp_exclusive(lane_tris, lane, tris_chunk);
      const std::uint32_t prefix[4] = {prefix01 & 0xffffu, prefix01 >> 16, prefix23 & 0xffffu, prefix23 >> 16};
      std::uint64_t t = tri + tris_prefix;
#pragma unroll
      for (int c = 0; c < kFlagPoints; ++c) {
        if (tris[c] == 0) continue;
        std::uint64_t first[4];
        const std::uint32_t before = (1u << (8 * c)) - 1u;  // the run's points ahead of this cell's
#pragma unroll
        for (int q = 0; q < 4; ++q) first[q] = base[q] + prefix[q] + std::uint32_t(__popc(w[q] & kSlotBytes & before));
        record(e[c], i0 + c, t, tris[c], first);
        t += tris[c];
      }
      const std::uint32_t chunk[4] = {chunk01 & 0xffffu, chunk01 >> 16, chunk23 & 0xffffu, chunk23 >> 16};
#pragma unroll
      for (int q = 0; q < 4; ++q) base[q] += chunk[q];
      tri += tris_chunk;
    }
  } else {
    for (std::int64_t i0 = begin; i0 < end; i0 += 32) {
      const std::int64_t i = i0 + lane;
      std::uint32_t slots = 0, tris = 0;
      const mc::CaseEntry* e = nullptr;
      if (i < end) {
        std::uint8_t cf[8];
        for (int q = 0; q < 4; ++q) slots |= std::uint32_t(mc::slot_count(row[q][i])) << (8 * q);
        load_corners(row, i, cf);
        const int cas = mc::cell_case(cf);
        if (cas != 0 && cas != 255) {
          e = &mc::case_entry(cases, s, cas, level, i, j, k);
          int unused = 0;
          tris = std::uint32_t(surviving(*e, cf, keep_degenerate, unused));
        }
      }
      std::uint32_t slots_chunk, tris_chunk;
      const std::uint32_t slots_prefix = warp_exclusive(slots, lane, slots_chunk);
      const std::uint32_t tris_prefix = warp_exclusive(tris, lane, tris_chunk);
      if (e && tris > 0) {
        std::uint64_t first[4];
        for (int q = 0; q < 4; ++q) first[q] = base[q] + (slots_prefix >> (8 * q) & 0xffu);
        record(e, i, tri + tris_prefix, tris, first);
      }
      for (int q = 0; q < 4; ++q) base[q] += slots_chunk >> (8 * q) & 0xffu;
      tri += tris_chunk;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(256) cell_triangles_kernel(
    mc::SlabValues<T> s, RowGrid g, const std::uint8_t* __restrict__ flags, mc::CaseLookup cases, bool keep_degenerate,
    bool flip, const CellRecord* __restrict__ records, std::uint64_t count, const std::int32_t* __restrict__ labels,
    std::uint32_t* __restrict__ triangles, std::int32_t* __restrict__ face_labels,
    unsigned long long* __restrict__ tie_count, std::uint64_t* __restrict__ ties) {
  const std::uint64_t t0 = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t0 >= count) return;
  const std::uint64_t cell = records[t0].cell;
  if (cell == kContinuation) return;
  const CellRecord rec = records[t0];
  const std::int64_t r = std::int64_t(cell >> (kListPointBits + 3)), i = std::int64_t(cell & ((1u << kListPointBits) - 1));
  const std::int64_t k = g.z0 + r / g.ny, j = r % g.ny;
  const std::uint8_t* row[4] = {flags + r * g.nx, flags + (r + 1) * g.nx, flags + (r + g.ny) * g.nx,
                                flags + (r + g.ny + 1) * g.nx};
  std::uint8_t cf[8];
  load_corners(row, i, cf);
  const mc::CaseEntry& e = (rec.entry & kTunnelEntry) ? cases.tunnel_entries[rec.entry & ~kTunnelEntry]
                                                       : cases.entries[rec.entry];
  std::uint64_t first[8];
  for (int c = 0; c < 8; ++c)  // the corner at i + 1 follows point i in its row: add point i's own slots
    first[c] = rec.first_even[c >> 1] + ((c & 1) ? std::uint32_t(mc::slot_count(cf[c & 6])) : 0u);
  const std::int32_t label = labels ? mc::cell_label_at(labels, g.nx, g.ny, s.z_begin, i, j, k, cf) : 0;
  std::uint64_t t = t0;
  mc::cell_triangles(e, cf, keep_degenerate, [&](int a, int b, int c, bool on_level) {
    std::uint32_t* out = triangles + 3 * t;
    out[0] = std::uint32_t(mc::key_vertex(a, cf, first));
    out[1] = std::uint32_t(mc::key_vertex(flip ? c : b, cf, first));
    out[2] = std::uint32_t(mc::key_vertex(flip ? b : c, cf, first));
    if (labels) face_labels[t] = label;
    if (on_level) ties[atomicAdd(tie_count, 1ull)] = t;
    ++t;
  });
}

}  // namespace parasurf::iso::cuda
