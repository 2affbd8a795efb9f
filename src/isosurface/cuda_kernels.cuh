// CUDA kernels of the isosurface engine: counts by one warp per grid row, in-row offsets by one block per row
// (chunks of kRowThreads points, block scans), which lists the vertices and mixed cells; those are then computed
// one per thread (rows hold few of them). The per-point and per-cell math is mc_kernels.hpp, shared with the CPU engine.
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

// Pass 1a: flags of every point and the vertex slots per row. A block takes a tile of 32 x 8 points in (i, j) and
// marches it through kFlagSlices slices along z, keeping each point's next value for the next slice: every sample
// is read from memory about once (the +x neighbour comes by shuffle, the +y one from the tile in shared memory).
// One warp per row segment, which adds its row's slots and span by atomics (rows start cleared by flags_clear).
// A warp per whole row read each sample three times (the row and its +y, +z neighbours) and took half the extraction
// time; a brick loaded whole into shared memory first was slower (1.03 against 0.85 ms at 512^3 under the profiler).
constexpr int kFlagTileX = 32, kFlagTileY = 8, kFlagSlices = 16;

__global__ void flags_clear_kernel(std::int64_t rows, int nx, std::uint32_t* __restrict__ row_vertices,
                                   int* __restrict__ row_first, int* __restrict__ row_last) {
  const std::int64_t r = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  row_vertices[r] = 0;
  row_first[r] = nx;
  row_last[r] = -1;
}

template <class T>
__global__ void __launch_bounds__(kFlagTileX * kFlagTileY) flags_kernel(mc::SlabValues<T> s, RowGrid g,
                                                                        typename mc::RealOf<T>::type level,
                                                                        std::uint8_t* __restrict__ flags,
                                                                        std::uint32_t* __restrict__ row_vertices,
                                                                        int* __restrict__ row_first,
                                                                        int* __restrict__ row_last) {
  using R = typename mc::RealOf<T>::type;
  __shared__ R tile[2][kFlagTileY + 1][kFlagTileX];  // two slices, so that one barrier per slice suffices
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const std::int64_t i = std::int64_t(blockIdx.x) * kFlagTileX + tx;
  const std::int64_t j = std::int64_t(blockIdx.y) * kFlagTileY + ty;
  const std::int64_t halo_j = std::int64_t(blockIdx.y) * kFlagTileY + kFlagTileY;
  const std::int64_t k_end = g.z0 + g.flag_rows / g.ny;
  const std::int64_t k_begin = g.z0 + std::int64_t(blockIdx.z) * kFlagSlices;
  const std::int64_t k_stop = min(k_begin + kFlagSlices, k_end);
  const bool here = i < g.nx && j < g.ny;
  const bool east_inside = i + 1 < g.nx, north_inside = j + 1 < g.ny;
  // Pointers advance by a plane per slice: index arithmetic in 64 bits per sample cost more than the tests.
  const std::int64_t plane = s.nx * s.ny;
  const T* at = s.data + ((k_begin - s.z_begin) * s.ny + min(j, g.ny - 1)) * s.nx + min(i, g.nx - 1);
  const T* halo = s.data + ((k_begin - s.z_begin) * s.ny + min(halo_j, g.ny - 1)) * s.nx + min(i, g.nx - 1);
  std::uint8_t* out = flags + ((k_begin - g.z0) * g.ny + j) * g.nx + i;
  std::int64_t r = (k_begin - g.z0) * g.ny + j;
  // Two slices ahead in flight (measured the same as one: 0.85-0.88 ms at 512^3 under the profiler, where the SM
  // issue is 66 % busy and DRAM 16 %).
  R cur = here ? R(*at) : R(0);
  R next = here && k_begin + 1 < s.nz ? R(at[plane]) : R(0);
  for (std::int64_t k = k_begin; k < k_stop; ++k, at += plane, halo += plane, out += plane, r += g.ny) {
    const int b = int(k & 1);
    const R after = here && k + 2 < s.nz && k + 1 < k_stop ? R(at[2 * plane]) : R(0);
    tile[b][ty][tx] = cur;
    if (ty == 0) tile[b][kFlagTileY][tx] = i < g.nx && halo_j < g.ny ? R(*halo) : R(0);
    const bool has_z = k + 1 < s.nz;
    __syncthreads();
    R east = __shfl_down_sync(0xffffffffu, cur, 1);
    if (tx == kFlagTileX - 1 && here && east_inside) east = R(at[1]);
    const R north = tile[b][ty + 1][tx];
    std::uint8_t v = 0;
    if (here) {
      if (cur == level) {
        v = mc::point_flags<T, R>(s, i, j, k, level);  // on the level: the rare exact path
      } else {  // point_flags' other branch, the same tests
        const bool in = mc::is_inside(cur, level);
        v = in ? std::uint8_t(mc::kInside) : std::uint8_t(0);
        if (east_inside && in != mc::is_inside(east, level) && east != level) v |= mc::kSlotX;
        if (north_inside && in != mc::is_inside(north, level) && north != level) v |= mc::kSlotY;
        if (has_z && in != mc::is_inside(next, level) && next != level) v |= mc::kSlotZ;
      }
      *out = v;
    }
    // The row segment's slots and span: most segments have none, and a ballot says so at once.
    const int c = mc::slot_count(v);
    const std::uint32_t with = __ballot_sync(0xffffffffu, c != 0);
    if (with) {
      const std::uint32_t slots = __reduce_add_sync(0xffffffffu, std::uint32_t(c));
      if (tx == 0) {
        const int base = int(blockIdx.x) * kFlagTileX;
        atomicAdd(row_vertices + r, slots);
        atomicMin(row_first + r, base + __ffs(int(with)) - 1);
        atomicMax(row_last + r, base + 31 - __clz(int(with)));
      }
    }
    cur = next;
    next = after;
  }
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

// Pass 1b: triangles per cell row (and the number that touch on-level samples, for the duplicate check), and the
// MC33 centre vertices; one warp per row.
template <class T>
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
  for (std::int64_t i = begin + lane; i < end; i += 32) {
    std::uint8_t cf[8];
    load_corners(row, i, cf);
    const int cas = mc::cell_case(cf);
    if (cas == 0 || cas == 255) continue;
    const auto& e = mc::case_entry(cases, s, cas, level, i, j, k);
    int t = 0;
    n += std::uint32_t(surviving(e, cf, keep_degenerate, t));
    ties += std::uint32_t(t);
    // An MC33 centre vertex belongs to the cell's lowest corner. Other warps may read that flag byte meanwhile:
    // they use only its inside and on-level bits, and their spans only pick cells, which a centre never adds.
    if (e.center && mc::uses_center(e, cf, keep_degenerate)) {
      flags[r * g.nx + i] |= mc::kSlotCenter;
      atomicAdd(row_vertices + r, 1u);
      atomicMin(row_first + r, int(i));
      atomicMax(row_last + r, int(i));
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
                                                             float* __restrict__ values) {
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

template <class T>
__global__ void __launch_bounds__(256) vertex_compute_kernel(mc::SlabValues<T> s, RowGrid g,
                                                             typename mc::RealOf<T>::type level, mc::WorldMap map,
                                                             const std::uint64_t* __restrict__ entries,
                                                             std::uint64_t count, float* __restrict__ positions,
                                                             float* __restrict__ normals,
                                                             const float* __restrict__ scalars,
                                                             float* __restrict__ values) {
  using R = typename mc::RealOf<T>::type;
  const std::uint64_t v = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= count) return;
  const std::uint64_t e = entries[v];
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
template <class T>
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
      const std::uint64_t t = tri + tris_prefix;
      CellRecord rec;
      rec.cell = std::uint64_t(r) << (kListPointBits + 3) | std::uint64_t(i);
      const bool tunnel = !(e >= cases.entries && e < cases.entries + 256 * mc::kFaceMasks);
      rec.entry = tunnel ? kTunnelEntry | std::uint32_t(e - cases.tunnel_entries) : std::uint32_t(e - cases.entries);
      for (int q = 0; q < 4; ++q) rec.first_even[q] = std::uint32_t(base[q] + (slots_prefix >> (8 * q) & 0xffu));
      rec.unused = 0;
      records[t] = rec;
      for (std::uint32_t n = 1; n < tris; ++n) records[t + n].cell = kContinuation;
    }
    for (int q = 0; q < 4; ++q) base[q] += slots_chunk >> (8 * q) & 0xffu;
    tri += tris_chunk;
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
