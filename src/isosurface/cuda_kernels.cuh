// CUDA kernels of the isosurface engine, by segments of 32 points of a row. Pass 1a gives every sample two bits,
// inside and on the level, by warp ballots marching along z; pass 1b makes each segment's flag bytes (which vertex
// slots its points own), counts its vertices and its cells' triangles from those bits, and lists the segments that
// own vertices. One scan, by groups of 32 segments, gives every segment its first vertex and first triangle, so the
// generation passes (2a vertices, over the listed segments; 2b triangles, over all) deal a warp's work out to its
// lanes: no pass walks a whole row. The per-point and per-cell math is mc_kernels.hpp, shared with the CPU engine.
// Pipeline as in Rogeiro 2011 (classify, scan, compact, generate), with Flying-Edges-style edge ownership so that no
// vertex merge pass is needed.
#pragma once
#include "core/fast_divide.hpp"
#include "isosurface/mc_kernels.hpp"
#include "isosurface/mc_tables.hpp"

namespace parasurf::iso::cuda {

constexpr int kSegmentThreads = 256;
constexpr int kSegmentPoints = 32;  // a segment's inside bits fill one 32-bit word

struct RowGrid {
  std::int64_t nx, ny, z0;
  std::int64_t flag_rows;  // rows (j, k) with k in [z0, flag_z1)
  std::int64_t cell_rows;  // rows whose cells this slab makes (j may be ny − 1: such rows have no cells)
  std::int64_t mask_rows;  // rows with inside and on-level bits: the flag rows and the slice after them
  std::int64_t segments;   // segments per row: ceil(nx / 32)
  core::FastDivisor by_segments, by_rows;  // divisions by segments and by ny
};
// Rows of flags are padded to whole segments, so that a segment's 32 flag bytes are two aligned 16-byte vectors and
// a warp's 32 segments one kilobyte: the byte of point i of row r.
__host__ __device__ __forceinline__ std::int64_t flag_at(const RowGrid& g, std::int64_t r, std::int64_t i) {
  return r * g.segments * kSegmentPoints + i;
}

// Counts are scanned by groups of 32 segments, a warp's: pass 1b gives each group its vertex and triangle counts as
// one 64-bit word (vertices in the low half, triangles in the high half, so that one scan gives both; a slab's
// vertex ids are 32-bit already, as the mesh's indices are), and each segment its first vertex and triangle within
// its group, 16 bits each in one 32-bit word. The scan reads a thirty-second of what a scan by segment read: 8 us
// against 25-28 us at 512^3 float32 on an H100.
constexpr int kTriangleShift = 32;
constexpr int kGroupSegments = 32;
__device__ __forceinline__ std::uint32_t vertices_of(std::uint64_t c) { return std::uint32_t(c); }
__device__ __forceinline__ std::uint32_t triangles_of(std::uint64_t c) { return std::uint32_t(c >> kTriangleShift); }
constexpr int kLocalShift = 16;
static_assert(kGroupSegments * kSegmentPoints * 5 < (1 << kLocalShift), "a group's vertices (five slots a point)");
static_assert(kGroupSegments * kSegmentPoints * mc::kMaxTriangles < (1 << kLocalShift), "a group's triangles");
__device__ __forceinline__ std::uint32_t pack_local(std::uint32_t vertices, std::uint32_t triangles) {
  return triangles << kLocalShift | vertices;
}
__device__ __forceinline__ std::uint32_t local_vertices(std::uint32_t p) { return p & ((1u << kLocalShift) - 1u); }
__device__ __forceinline__ std::uint32_t local_triangles(std::uint32_t p) { return p >> kLocalShift; }
__device__ __forceinline__ std::uint64_t widen_local(std::uint32_t p) {
  return std::uint64_t(local_triangles(p)) << kTriangleShift | local_vertices(p);
}

// The scanned counts of a slab's segments.
struct SegmentScan {
  const std::uint32_t* __restrict__ local;         // per segment: first vertex and triangle within its group
  const std::uint64_t* __restrict__ group_counts;  // per group
  const std::uint64_t* __restrict__ group_bases;   // per group: exclusive scan of group_counts
  std::int64_t segments;
};
// First vertex (low half) and triangle (high half) of segment `at` in the slab.
__device__ __forceinline__ std::uint64_t segment_first(const SegmentScan& scan, std::int64_t at) {
  return scan.group_bases[at / kGroupSegments] + widen_local(scan.local[at]);
}
// Vertices (low half) and triangles (high half) of segment `at`, for a warp whose lanes take consecutive segments
// from a group's first: where the next lane's segment starts (the group's total for the last), less where this one
// starts (nothing past the slab's segments). Every lane of the warp calls it.
__device__ __forceinline__ std::uint32_t warp_segment_count(const SegmentScan& scan, std::int64_t at, int lane) {
  const std::uint32_t begin = at < scan.segments ? scan.local[at] : 0u;
  std::uint32_t end = __shfl_down_sync(0xffffffffu, begin, 1);
  if (at < scan.segments && (lane == kGroupSegments - 1 || at + 1 == scan.segments)) {
    const std::uint64_t group = scan.group_counts[at / kGroupSegments];
    end = pack_local(vertices_of(group), triangles_of(group));
  }
  return pack_local(local_vertices(end) - local_vertices(begin), local_triangles(end) - local_triangles(begin));
}

// The segment a thread takes, as (row, segment in the row); false past the last one.
__device__ __forceinline__ bool segment_of_thread(const RowGrid& g, std::int64_t count, std::int64_t& at,
                                                  std::int64_t& r, std::int64_t& segment) {
  at = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (at >= count) return false;
  r = g.by_segments.quotient(at, segment);
  return true;
}

// Pass 1a: which samples are inside and which lie on the level, one bit each, per segment of 32 points. A warp takes
// 128 points of a row, lane l the points l + 32 p, so that each ballot is one segment's word, and marches them
// through kFlagSlices slices. Per point this is a load, two compares and a share of two ballots; the flag bytes of
// session 10's kernel, computed here point by point, cost 59 instructions a point (0.44 ms at 512^3 float32 under
// the profiler) and are now made per segment from the bits (pass 1b).
constexpr int kClassifyPoints = 4 * kSegmentPoints, kFlagTileY = 8, kFlagSlices = 16;
template <class T>
__global__ void __launch_bounds__(32 * kFlagTileY) classify_kernel(mc::SlabValues<T> s, RowGrid g,
                                                                   typename mc::RealOf<T>::type level,
                                                                   std::uint32_t* __restrict__ inside,
                                                                   std::uint32_t* __restrict__ on_level) {
  using R = typename mc::RealOf<T>::type;
  const int lane = int(threadIdx.x);
  const std::int64_t j = std::int64_t(blockIdx.y) * kFlagTileY + threadIdx.y;
  if (j >= g.ny) return;  // whole warp
  const std::int64_t i0 = std::int64_t(blockIdx.x) * kClassifyPoints + lane;
  const std::int64_t segment0 = std::int64_t(blockIdx.x) * (kClassifyPoints / kSegmentPoints);
  const std::int64_t k_end = g.z0 + g.mask_rows / g.ny;
  const std::int64_t k_begin = g.z0 + std::int64_t(blockIdx.z) * kFlagSlices;
  const std::int64_t k_stop = min(k_begin + kFlagSlices, k_end);
  const std::int64_t plane = s.nx * s.ny, row_segments = g.ny * g.segments;
  bool valid[4];
#pragma unroll
  for (int p = 0; p < 4; ++p) valid[p] = i0 + kSegmentPoints * p < g.nx;
  // Lane p < 4 writes segment segment0 + p.
  const bool writes = lane < 4 && segment0 + lane < g.segments;
  const T* at = s.data + ((k_begin - s.z_begin) * s.ny + j) * s.nx + min(i0, g.nx - 1);
  std::int64_t out = ((k_begin - g.z0) * g.ny + j) * g.segments + segment0 + lane;
  // Slices in groups of kGroup, every load of a group issued before its ballots: the stores of the bits might alias
  // the samples for all the compiler knows, so it would not move the next slice's loads above them. Blocks whose 128
  // points and kFlagSlices slices all lie inside (nearly all) take the loop without a bound check: the checks' 64-bit
  // compares and the predicates they kept in registers were half the loop's instructions (23 a sample at 512^3).
  constexpr int kGroup = 4;
  auto march = [&](auto whole_block) {
    constexpr bool kWhole = decltype(whole_block)::value;
    const int slices = kWhole ? kFlagSlices : int(k_stop - k_begin);
    for (int k = 0; k < slices; k += kGroup) {
      R v[kGroup][4];
#pragma unroll
      for (int z = 0; z < kGroup; ++z)
#pragma unroll
        for (int p = 0; p < 4; ++p)
          v[z][p] = kWhole || (valid[p] && k + z < slices) ? R(at[z * plane + kSegmentPoints * p]) : R(0);
#pragma unroll
      for (int z = 0; z < kGroup; ++z) {
        std::uint32_t in_word = 0, on_word = 0;
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const bool has = kWhole || valid[p];
          const std::uint32_t in_bits = __ballot_sync(0xffffffffu, has && mc::is_inside(v[z][p], level));
          const std::uint32_t on_bits = __ballot_sync(0xffffffffu, has && v[z][p] == level);
          in_word = lane == p ? in_bits : in_word;
          on_word = lane == p ? on_bits : on_word;
        }
        if (writes && (kWhole || k + z < slices)) {
          inside[out + z * row_segments] = in_word;
          on_level[out + z * row_segments] = on_word;
        }
      }
      at += kGroup * plane;
      out += kGroup * row_segments;
    }
  };
  static_assert(kFlagSlices % kGroup == 0, "whole blocks march whole groups");
  // The same for every lane of the block (the ballots need the whole warp on one path).
  const bool whole = std::int64_t(blockIdx.x + 1) * kClassifyPoints <= g.nx && k_stop - k_begin == kFlagSlices;
  if (whole) march(std::true_type{});
  else march(std::false_type{});
}

// Pass 1a where rows hold whole 16-byte runs (nx a multiple of 16 / sizeof(T), samples aligned): a lane loads 16
// bytes, P samples, and the G = 32 / P lanes of a segment gather their bits by shuffles. For 1-byte
// samples, a lane's four ballot loads above fetched 4 bytes a slice: too few bytes in flight (DRAM 10 % busy, 0.47 ms
// at 512^3 uint8 under the profiler). Only 1- and 2-byte samples take this pass, and those are integers: they are
// compared four or two to a word (SIMD video instructions) against the level's integer threshold. Converting and
// comparing each sample as a float, with a reduction over a partial warp mask per word, took 0.32 ms at 512^3 uint8
// on an H200 (358 instructions a warp and slice, DRAM 11 % busy); the word compares 0.15 ms; with shuffles too,
// 0.041 ms (79 instructions, DRAM 81 % busy).
// The sample types that take classify_runs_kernel: 1- and 2-byte integers.
template <class T>
inline constexpr bool kWordCompareType = std::is_integral_v<T> && sizeof(T) <= 2;
struct IntegerLevel {
  std::uint32_t threshold = 0;  // ceil(level), replicated into each lane of a word
  bool none_inside = false;     // ceil(level) above every value of T (or a NaN level)
  bool may_equal = false;       // the level is an integer that T holds
};
template <class T>
__device__ __forceinline__ IntegerLevel integer_level(float level) {
  static_assert(kWordCompareType<T>, "1- and 2-byte integers");
  constexpr float lo = float(std::numeric_limits<T>::min()), hi = float(std::numeric_limits<T>::max());
  IntegerLevel l;
  const float c = ceilf(level);
  if (!(c <= hi)) {  // above every value, or NaN: nothing is inside (is_inside fails on a NaN level too)
    l.none_inside = true;
    return l;
  }
  const float t = fmaxf(c, lo);  // at or below the smallest value: everything is inside
  l.may_equal = c == level && c >= lo;
  const auto lane = std::uint32_t(static_cast<std::make_unsigned_t<T>>(T(t)));
  l.threshold = sizeof(T) == 1 ? lane * 0x01010101u : lane * 0x00010001u;
  return l;
}
// Per-lane masks (all ones where true) of a word's samples: >= and == against the threshold's lanes.
template <class T>
__device__ __forceinline__ std::uint32_t lanes_at_least(std::uint32_t w, std::uint32_t t) {
  if constexpr (std::is_same_v<T, std::uint8_t>) return __vcmpgeu4(w, t);
  else if constexpr (std::is_same_v<T, std::int8_t>) return __vcmpges4(w, t);
  else if constexpr (std::is_same_v<T, std::uint16_t>) return __vcmpgeu2(w, t);
  else return __vcmpges2(w, t);
}
template <class T>
__device__ __forceinline__ std::uint32_t lanes_equal(std::uint32_t w, std::uint32_t t) {
  if constexpr (sizeof(T) == 1) return __vcmpeq4(w, t);
  else return __vcmpeq2(w, t);
}
// One bit per lane of a lane mask, lane p to bit p: bytes' low bits gathered by a multiply (distinct partial
// products, so nothing carries into bits 24-27), halfwords' by a shift.
template <class T>
__device__ __forceinline__ std::uint32_t lane_bits(std::uint32_t mask) {
  if constexpr (sizeof(T) == 1) return ((mask & 0x01010101u) * 0x01020408u) >> 24;
  else return (mask & 1u) | (mask >> 15 & 2u);
}

template <class T>
__global__ void __launch_bounds__(32 * kFlagTileY) classify_runs_kernel(mc::SlabValues<T> s, RowGrid g,
                                                                        typename mc::RealOf<T>::type level,
                                                                        std::uint32_t* __restrict__ inside,
                                                                        std::uint32_t* __restrict__ on_level) {
  constexpr int P = 16 / int(sizeof(T)), G = 32 / P;
  static_assert(kWordCompareType<T>, "1- and 2-byte integer samples");
  constexpr int kPerWord = 4 / int(sizeof(T));
  const IntegerLevel l = integer_level<T>(float(level));
  const int lane = int(threadIdx.x);
  const std::int64_t j = std::int64_t(blockIdx.y) * kFlagTileY + threadIdx.y;
  if (j >= g.ny) return;  // whole warp
  const std::int64_t i0 = std::int64_t(blockIdx.x) * (32 * P) + P * lane;
  const bool has = i0 < g.nx;
  const std::int64_t k_end = g.z0 + g.mask_rows / g.ny;
  const std::int64_t k_begin = g.z0 + std::int64_t(blockIdx.z) * kFlagSlices;
  const std::int64_t k_stop = min(k_begin + kFlagSlices, k_end);
  const std::int64_t plane = s.nx * s.ny, row_segments = g.ny * g.segments;
  const bool writes = has && lane % G == 0;
  const int shift = P * (lane % G);
  const T* at = s.data + ((k_begin - s.z_begin) * s.ny + j) * s.nx + (has ? i0 : 0);
  std::int64_t out = ((k_begin - g.z0) * g.ny + j) * g.segments + i0 / kSegmentPoints;
  constexpr int kGroup = 4;  // slices whose loads are issued together (see classify_kernel)
  for (std::int64_t k = k_begin; k < k_stop; k += kGroup) {
    uint4 v[kGroup];
#pragma unroll
    for (int z = 0; z < kGroup; ++z)
      v[z] = has && k + z < k_stop ? *reinterpret_cast<const uint4*>(at + z * plane) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int z = 0; z < kGroup; ++z) {
      const std::uint32_t words[4] = {v[z].x, v[z].y, v[z].z, v[z].w};
      std::uint32_t in = 0, on = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) in |= lane_bits<T>(lanes_at_least<T>(words[q], l.threshold)) << (kPerWord * q);
      if (l.none_inside) in = 0;
      if (l.may_equal) {
#pragma unroll
        for (int q = 0; q < 4; ++q) on |= lane_bits<T>(lanes_equal<T>(words[q], l.threshold)) << (kPerWord * q);
      }
      // The G lanes of a segment (adjacent, G a power of two) gather its words by butterfly shuffles.
      std::uint32_t in_word = has ? in << shift : 0u, on_word = has ? on << shift : 0u;
#pragma unroll
      for (int step = 1; step < G; step <<= 1) {
        in_word |= __shfl_xor_sync(0xffffffffu, in_word, step);
        on_word |= __shfl_xor_sync(0xffffffffu, on_word, step);
      }
      if (writes && k + z < k_stop) {
        inside[out + z * row_segments] = in_word;
        on_level[out + z * row_segments] = on_word;
      }
    }
    at += kGroup * plane;
    out += kGroup * row_segments;
  }
}

// Bit p of m (p < 4) to bit 0 of byte p: the four shifted copies of m do not overlap, so nothing carries.
__device__ __forceinline__ std::uint32_t spread_bits(std::uint32_t m) { return (m * 0x00204081u) & 0x01010101u; }
// Bytes of a flag word, four points' flags, masked to their vertex slots.
constexpr std::uint32_t kSlotBytes = 0x01010101u * mc::kSlotMask;

// The slab's totals after the scans, gathered on the device so that one copy brings them home (five copies of a few
// bytes cost the host five round trips: about 40 us, a tenth of a 256^3 extraction). The generation's kernels read
// them too, so that they can be launched before the host has seen them: `fits` says whether the mesh arrays hold
// the slab (else they write nothing, and the host grows the arrays and launches them again).
struct SlabTotals {
  unsigned long long vertices, triangles, ties, vertex_segments, fits;
};
// What the mesh arrays hold: vertices (positions and every other per-vertex array asked for), vertex-list entries,
// triangles (with their labels) and tie candidates.
struct MeshCapacity {
  unsigned long long vertices, list_entries, triangles, ties;
};
__global__ void totals_kernel(SegmentScan scan, std::int64_t owned_segments,
                              const unsigned long long* __restrict__ counters, MeshCapacity capacity,
                              SlabTotals* __restrict__ out) {
  // Vertices of the owned rows only (the slab's extra slice belongs to the next slab); all triangles.
  const std::int64_t last = (scan.segments - 1) / kGroupSegments;
  const std::uint64_t all = scan.group_bases[last] + scan.group_counts[last];
  const unsigned long long vertices = vertices_of(owned_segments < scan.segments ? segment_first(scan, owned_segments) : all);
  const unsigned long long triangles = triangles_of(all), ties = counters[0];
  out->vertices = vertices;
  out->triangles = triangles;
  out->ties = ties;
  out->vertex_segments = counters[3];
  out->fits = vertices <= capacity.vertices && vertices <= capacity.list_entries && triangles <= capacity.triangles &&
              ties <= capacity.ties;
}

// The four point rows a cell row's corners lie in, in cell_case's corner order (q = corner >> 1).
__device__ __forceinline__ void corner_rows(const RowGrid& g, std::int64_t r, std::int64_t (&rows)[4]) {
  rows[0] = r;
  rows[1] = r + 1;
  rows[2] = r + g.ny;
  rows[3] = r + g.ny + 1;
}

// Bit b: whether cell 32 · segment + b of cell row r is mixed (some corners inside, some not), from the inside bits
// alone. Only mixed cells make triangles or centre vertices.
__device__ __forceinline__ std::uint32_t mixed_cells(const RowGrid& g, const std::uint32_t* __restrict__ inside,
                                                     std::int64_t r, std::int64_t segment) {
  std::int64_t rows[4];
  corner_rows(g, r, rows);
  const bool has_next = segment + 1 < g.segments;
  std::uint32_t any = 0, all = ~0u;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const std::uint32_t low = inside[rows[q] * g.segments + segment];
    const std::uint32_t next = has_next ? inside[rows[q] * g.segments + segment + 1] : 0u;
    const std::uint32_t high = low >> 1 | next << 31;  // corner i + 1 of cell i
    any |= low | high;
    all &= low & high;
  }
  const std::int64_t cells = g.nx - 1 - segment * kSegmentPoints;  // cells of the row from this segment on
  const std::uint32_t valid = cells >= kSegmentPoints ? ~0u : cells > 0 ? (1u << cells) - 1u : 0u;
  return any & ~all & valid;
}

__device__ __forceinline__ void load_corners(const std::uint8_t* flags, const RowGrid& g, const std::int64_t (&rows)[4],
                                             std::int64_t i, std::uint8_t* cf) {
#pragma unroll
  for (int c = 0; c < 8; ++c) cf[c] = flags[flag_at(g, rows[c >> 1], i + (c & 1))];
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

// The position of the n-th (from 0) set bit of m, which has more than n.
__device__ __forceinline__ int nth_set_bit(std::uint32_t m, std::uint32_t n) {
  int at = 0;
#pragma unroll
  for (int half = 16; half > 0; half >>= 1) {
    const std::uint32_t low = m & ((1u << half) - 1u), in_low = std::uint32_t(__popc(low));
    if (n >= in_low) {
      n -= in_low;
      m >>= half;
      at += half;
    } else {
      m = low;
    }
  }
  return at;
}

// The warp's items dealt out to its lanes, 32 a round, in lane order: lane l holds `mine` items, and a few lanes may
// hold most of the warp's, so a thread per lane's items would leave the others idle. `round(has, owner, n, item)`
// runs on every lane each round, so it may use warp collectives: `has` says whether the lane holds an item this
// round, the n-th (from 0) of lane `owner`'s, which is the warp's item-th.
template <class Round>
__device__ __forceinline__ void deal_items(int lane, std::uint32_t mine, Round&& round) {
  std::uint32_t items;
  const std::uint32_t first = warp_exclusive(mine, lane, items);
  for (std::uint32_t dealt = 0; dealt < items; dealt += 32) {
    const std::uint32_t c = dealt + std::uint32_t(lane);
    // The lane that holds item c: the last with first <= c (first does not decrease).
    int owner = 0;
#pragma unroll
    for (int step = 16; step > 0; step >>= 1) {
      const std::uint32_t probe = __shfl_sync(0xffffffffu, first, owner + step);
      if (probe <= c) owner += step;
    }
    const std::uint32_t owner_first = __shfl_sync(0xffffffffu, first, owner);
    round(c < items, owner, c - owner_first, c);
  }
}

// The warp's mixed cells (bit b of lane l's `mixed`: cell 32 s + b of the row of its segment s) dealt out to its
// lanes: `round(has, owner, r, i)` gets cell i of row r, from the segment of lane `owner`. The warp's segments are
// consecutive from warp_first.
template <class Round>
__device__ __forceinline__ void deal_mixed_cells(const RowGrid& g, std::int64_t warp_first, int lane,
                                                 std::uint32_t mixed, Round&& round) {
  deal_items(lane, std::uint32_t(__popc(mixed)), [&](bool has, int owner, std::uint32_t n, std::uint32_t) {
    const std::uint32_t owner_mixed = __shfl_sync(0xffffffffu, mixed, owner);
    std::int64_t r = 0, i = 0;
    if (has) {
      std::int64_t segment;
      r = g.by_segments.quotient(warp_first + owner, segment);
      i = segment * kSegmentPoints + nth_set_bit(owner_mixed, n);
    }
    round(has, owner, r, i);
  });
}

// Slots of the points before point n (0..31) of a segment, from its eight flag words.
__device__ __forceinline__ std::uint32_t slots_before(const std::uint32_t (&w)[kSegmentPoints / 4], int n) {
  std::uint32_t total = 0;
#pragma unroll
  for (int q = 0; q < kSegmentPoints / 4; ++q) {
    const int bytes = min(max(n - 4 * q, 0), 4);  // of this word's four points, those before n
    const std::uint32_t mask = bytes == 4 ? ~0u : (1u << (8 * bytes)) - 1u;
    total += std::uint32_t(__popc(w[q] & kSlotBytes & mask));
  }
  return total;
}

// The inside and on-level bits of cell i's corners in cell_case's order, from the segment bits: what the counting
// needs of their flag bytes, which other warps of pass 1b are still writing.
__device__ __forceinline__ void corner_bits(const RowGrid& g, const std::uint32_t* __restrict__ inside,
                                            const std::uint32_t* __restrict__ on_level, const std::int64_t (&rows)[4],
                                            std::int64_t i, std::uint8_t* cf) {
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    const std::int64_t point = i + (c & 1), at = rows[c >> 1] * g.segments + point / kSegmentPoints;
    const int bit = int(point % kSegmentPoints);
    cf[c] = std::uint8_t((inside[at] >> bit & 1u) * mc::kInside | (on_level[at] >> bit & 1u) * mc::kOnLevel);
  }
}

// Pass 1b: the flag byte of every point (what point_flags gives) and the vertex slots of each segment, from the bits
// of the segment, its +x neighbour and the rows at +y and +z; one thread per segment. A crossing to a neighbour on
// the level is left to that neighbour's vertex; points on the level take point_flags' exact path (they are rare).
// The same pass counts the segment's cells' surviving triangles (and how many touch on-level samples, for the
// duplicate check) and MC33 centre vertices: the inside bits of its four corner rows find its mixed cells at once,
// the warp deals them out to its lanes, and each reads its corners' bits. (A pass of its own for the counts took
// 0.08 ms at 512^3 float32 under the profiler, mostly reloading what this one holds.) A centre vertex belongs to the
// cell's lowest corner, in the segment.
// A warp's 32 segments are 1 KB of consecutive flags (flag_at): the warp stages them in shared memory and stores them
// as whole 128-byte lines, where a thread's own eight words at a 32-byte stride cost the kernel 0.32 ms at 512^3
// under the profiler, latency-bound.
template <class T>
__global__ void __launch_bounds__(kSegmentThreads) flags_kernel(mc::SlabValues<T> s, RowGrid g,
                                                               typename mc::RealOf<T>::type level,
                                                               const std::uint32_t* __restrict__ inside,
                                                               const std::uint32_t* __restrict__ on_level,
                                                               mc::CaseLookup cases, bool keep_degenerate,
                                                               std::uint8_t* __restrict__ flags,
                                                               std::uint32_t* __restrict__ segment_local,
                                                               std::uint64_t* __restrict__ group_counts,
                                                               const std::uint32_t* __restrict__ next_centres,
                                                               std::int64_t next_centres_k,
                                                               unsigned long long* __restrict__ tie_count,
                                                               std::uint32_t* __restrict__ vertex_segments,
                                                               unsigned long long* __restrict__ vertex_segment_count) {
  using R = typename mc::RealOf<T>::type;
  constexpr int kWords = kSegmentPoints / 4;
  __shared__ std::uint32_t warp_triangles[kSegmentThreads], warp_centres[kSegmentThreads];
  constexpr int kPitch = kWords + 1;  // a thread's words at an odd pitch: its eight stores hit distinct banks
  __shared__ std::uint32_t staged[kSegmentThreads * kPitch];
  const std::int64_t count = g.flag_rows * g.segments;
  const std::int64_t at = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int lane = int(threadIdx.x % 32);
  if (at - lane >= count) return;  // whole warp
  const bool live = at < count;
  std::int64_t segment = 0, j = 0, r = 0, k = 0;
  std::int64_t points = 0;
  // The segment's bit planes: inside, on the level, vertex slots x, y, z and point.
  std::uint32_t in = 0, on = 0, x = 0, y = 0, z = 0, point = 0;
  std::uint32_t vertices = 0, mixed = 0;
  if (live) {
    r = g.by_segments.quotient(at, segment);
    k = g.z0 + g.by_rows.quotient(r, j);
    const std::int64_t i0 = segment * kSegmentPoints;
    points = min(std::int64_t(kSegmentPoints), g.nx - i0);
    const std::uint32_t valid = points == kSegmentPoints ? ~0u : (1u << points) - 1u;
    const std::uint32_t has_east = valid >> 1 | (i0 + kSegmentPoints < g.nx ? 1u << 31 : 0u);
    in = inside[at], on = on_level[at];
    const bool has_next = segment + 1 < g.segments;
    const std::uint32_t east_in = in >> 1 | (has_next ? inside[at + 1] << 31 : 0u);
    const std::uint32_t east_on = on >> 1 | (has_next ? on_level[at + 1] << 31 : 0u);
    const std::uint32_t off = ~on;
    x = off & (in ^ east_in) & ~east_on & has_east;
    if (j + 1 < g.ny) y = off & (in ^ inside[at + g.segments]) & ~on_level[at + g.segments] & valid;
    if (k + 1 < s.nz) {
      const std::int64_t above = at + g.ny * g.segments;
      z = off & (in ^ inside[above]) & ~on_level[above] & valid;
    }
    for (std::uint32_t m = on & valid; m; m &= m - 1) {
      const int b = __ffs(int(m)) - 1;
      if (mc::point_flags<T, R>(s, i0 + b, j, k, level) & mc::kSlotPoint) point |= 1u << b;
    }
    vertices = std::uint32_t(__popc(x) + __popc(y) + __popc(z) + __popc(point));
    if (r < g.cell_rows && j + 1 < g.ny) mixed = mixed_cells(g, inside, r, segment);
  }
  // Counts by segment, in shared memory: the lanes of a round add to the segments of their cells.
  std::uint32_t* segment_triangles = warp_triangles + (threadIdx.x - lane);
  std::uint32_t* segment_centres = warp_centres + (threadIdx.x - lane);
  segment_triangles[lane] = 0;
  segment_centres[lane] = 0;
  __syncwarp();
  std::uint32_t ties = 0;
  deal_mixed_cells(g, at - lane, lane, mixed, [&](bool has, int owner, std::int64_t cell_r, std::int64_t i) {
    if (!has) return;
    std::int64_t cell_j;
    const std::int64_t cell_k = g.z0 + g.by_rows.quotient(cell_r, cell_j);
    std::int64_t rows[4];
    corner_rows(g, cell_r, rows);
    std::uint8_t cf[8];
    corner_bits(g, inside, on_level, rows, i, cf);
    const auto& e = mc::case_entry(cases, s, mc::cell_case(cf), level, i, cell_j, cell_k);
    std::uint32_t n = 0;
    if (!mc::touches_level(cf)) {
      n = e.count;
    } else {
      mc::cell_triangles(e, cf, keep_degenerate, [&](int, int, int, bool on_level) {
        ++n;
        ties += on_level ? 1u : 0u;
      });
    }
    atomicAdd(segment_triangles + owner, n);
    if (e.center && mc::uses_center(e, cf, keep_degenerate)) atomicOr(segment_centres + owner, 1u << (i % kSegmentPoints));
  });
  __syncwarp();
  if (ties) atomicAdd(tie_count, (unsigned long long)ties);
  std::uint32_t counts = 0, centres = 0;
  if (live) {
    centres = segment_centres[lane];
    if (k == next_centres_k && j + 1 < g.ny) centres |= next_centres[j * g.segments + segment];
    vertices += std::uint32_t(__popc(centres));
    counts = pack_local(vertices, segment_triangles[lane]);
  }
  // The segments that own vertices, listed in any order for the vertex passes.
  const std::uint32_t listed = __ballot_sync(0xffffffffu, vertices != 0);
  if (listed) {
    unsigned long long first = 0;
    if (lane == 0) first = atomicAdd(vertex_segment_count, (unsigned long long)__popc(listed));
    first = __shfl_sync(0xffffffffu, first, 0);
    if (vertices) vertex_segments[first + __popc(listed & ((1u << lane) - 1u))] = std::uint32_t(at);
  }
  // The warp's segments are one group (blocks hold whole warps, so groups start at multiples of 32).
  std::uint32_t group_total;
  const std::uint32_t before = warp_exclusive(counts, lane, group_total);
  if (live) segment_local[at] = before;
  if (lane == 0)
    group_counts[at / kGroupSegments] =
        std::uint64_t(local_triangles(group_total)) << kTriangleShift | local_vertices(group_total);
  // The flag words, made last so that they do not hold registers through the counting.
  std::uint32_t words[kWords];
#pragma unroll
  for (int q = 0; q < kWords; ++q) words[q] = spread_bits(in >> (4 * q) & 15u) * mc::kInside;
  // Most segments have no crossing, and few a sample on the level: empty bit planes are skipped.
  if (x | y | z) {
#pragma unroll
    for (int q = 0; q < kWords; ++q) {
      const int shift = 4 * q;
      words[q] |= spread_bits(x >> shift & 15u) * mc::kSlotX | spread_bits(y >> shift & 15u) * mc::kSlotY |
                  spread_bits(z >> shift & 15u) * mc::kSlotZ;
    }
  }
  if (on) {
#pragma unroll
    for (int q = 0; q < kWords; ++q) {
      const int shift = 4 * q;
      words[q] |= spread_bits(on >> shift & 15u) * mc::kOnLevel | spread_bits(point >> shift & 15u) * mc::kSlotPoint;
    }
  }
  if (centres) {
#pragma unroll
    for (int q = 0; q < kWords; ++q) words[q] |= spread_bits(centres >> (4 * q) & 15u) * mc::kSlotCenter;
  }
  // The warp's flags are consecutive from its first segment's.
  std::uint32_t* mine = staged + (threadIdx.x - lane) * kPitch;
#pragma unroll
  for (int q = 0; q < kWords; ++q) mine[lane * kPitch + q] = words[q];
  __syncwarp();
  // Word q · 32 + lane of the warp's flags: segment 4q + lane / 8, its word lane % 8.
  std::uint32_t* out = reinterpret_cast<std::uint32_t*>(flags) + (at - lane) * kWords + lane;
  const std::uint32_t* from = mine + (lane / kWords) * kPitch + lane % kWords;
  constexpr int kSegmentsPerStore = 32 / kWords;
  if (count - (at - lane) >= 32) {  // all the warp's segments: no check per store
#pragma unroll
    for (int q = 0; q < kWords; ++q) out[q * 32] = from[q * kSegmentsPerStore * kPitch];
  } else {
    const int segments_left = int(count - (at - lane));
#pragma unroll
    for (int q = 0; q < kWords; ++q)
      if (q * kSegmentsPerStore + lane / kWords < segments_left) out[q * 32] = from[q * kSegmentsPerStore * kPitch];
  }
}

// Pass 1c (MC33 only), before pass 1b: the centre vertices of the next slab's first cells (slice k), which own
// vertices of the slice this slab numbers last, as a bit per point for pass 1b. One thread per segment of that slice.
template <class T>
__global__ void __launch_bounds__(kSegmentThreads) next_slab_centers_kernel(
    mc::SlabValues<T> s, RowGrid g, typename mc::RealOf<T>::type level, mc::CaseLookup cases, bool keep_degenerate,
    std::int64_t k, std::uint32_t* __restrict__ next_centres) {
  std::int64_t at, j, segment;
  if (!segment_of_thread(g, (g.ny - 1) * g.segments, at, j, segment)) return;
  const std::int64_t begin = segment * kSegmentPoints, end = min(begin + kSegmentPoints, g.nx - 1);
  std::uint32_t centres = 0;
  for (std::int64_t i = begin; i < end; ++i)
    if (mc::cell_needs_center(cases, s, i, j, k, level, keep_degenerate)) centres |= 1u << (i - begin);
  next_centres[at] = centres;
}

// Pass 2a: the vertices of the segments pass 1b listed, up to 32 segments a warp (list entry a, its lane's; none where
// a is `listed`). A segment holds from one to 160 vertices, so a thread per segment would leave most lanes idle while
// a few walk their slots: the warp deals its vertices out to its lanes, 32 at a time, and `emit(v, at, point, slot)`
// runs on each lane that holds one (vertex v: slot bit `slot` of point `point` of segment `at`). `words`: the warp's
// 32 · kSlotPitch words of shared memory. Every lane of the warp calls it.
constexpr int kSlotPitch = kSegmentPoints / 4 + 1;  // a segment's eight flag words at an odd pitch: distinct banks
template <class Emit>
__device__ __forceinline__ void deal_listed_vertices(const std::uint32_t* __restrict__ vertex_segments,
                                                     std::uint64_t a, std::uint64_t listed,
                                                     std::int64_t owned_segments,
                                                     const std::uint8_t* __restrict__ flags, const SegmentScan& scan,
                                                     std::uint32_t* words, Emit&& emit) {
  constexpr int kWords = kSegmentPoints / 4;
  const int lane = int(threadIdx.x % 32);
  // Vertices of the owned rows only (the slab's last slice belongs to the next slab).
  const std::int64_t at = a < listed ? std::int64_t(vertex_segments[a]) : owned_segments;
  std::uint32_t starts[2] = {0, 0};  // byte q % 4 of starts[q / 4]: the segment's slots before its word q
  std::uint32_t vertices = 0, first = 0;
  if (at < owned_segments) {
    first = vertices_of(segment_first(scan, at));
    const auto* run = reinterpret_cast<const uint4*>(flags + at * kSegmentPoints);  // = flag_at(g, r, 32 · segment)
    const uint4 x = run[0], y = run[1];
    const std::uint32_t w[kWords] = {x.x, x.y, x.z, x.w, y.x, y.y, y.z, y.w};
#pragma unroll
    for (int q = 0; q < kWords; ++q) {
      const std::uint32_t slots = w[q] & kSlotBytes;
      words[lane * kSlotPitch + q] = slots;
      starts[q / 4] |= vertices << (8 * (q % 4));
      vertices += std::uint32_t(__popc(slots));
    }
  }
  __syncwarp();
  deal_items(lane, vertices, [&](bool has, int owner, std::uint32_t n, std::uint32_t) {
    const std::uint32_t owner_starts[2] = {__shfl_sync(0xffffffffu, starts[0], owner),
                                           __shfl_sync(0xffffffffu, starts[1], owner)};
    const std::uint32_t owner_first = __shfl_sync(0xffffffffu, first, owner);
    const std::int64_t owner_at = __shfl_sync(0xffffffffu, at, owner);
    if (!has) return;
    // The word that holds slot n: the last whose start is at most n (a word with no slot starts where the next does).
    int q = 0;
    std::uint32_t start = 0;
#pragma unroll
    for (int w = 1; w < kWords; ++w) {
      const std::uint32_t from = owner_starts[w / 4] >> (8 * (w % 4)) & 255u;
      if (from <= n) q = w, start = from;
    }
    const int bit = nth_set_bit(words[owner * kSlotPitch + q], n - start);
    emit(std::uint64_t(owner_first) + n, owner_at, 4 * q + (bit >> 3), bit & 7);
  });
}

// Every listed segment's vertices, when the mesh arrays hold them (SlabTotals::fits): each warp of the grid deals
// rounds of up to 32 listed segments, a grid's worth apart, so that a grid of one wave covers any list. A list of
// fewer than 32 segments a warp is spread over all the warps, fewer segments each: a warp's rounds run one after
// another, so warps of 32 segments would set the pass's time while others idle (H200, MR_Gd's 132,036 vertices under
// the profiler: the vertex pass as one kernel took 22.9 us, 15.4 with the spread; the two kernels now 6.3 + 8.8).
// `block_words`: the block's kSegmentThreads · kSlotPitch words of shared memory.
template <class Emit>
__device__ __forceinline__ void deal_every_listed_vertex(const std::uint32_t* __restrict__ vertex_segments,
                                                         const SlabTotals* __restrict__ totals,
                                                         std::int64_t owned_segments,
                                                         const std::uint8_t* __restrict__ flags,
                                                         const SegmentScan& scan, std::uint32_t* block_words,
                                                         Emit&& emit) {
  if (!totals->fits) return;
  const std::uint64_t listed = totals->vertex_segments;
  const std::uint64_t warps = std::uint64_t(gridDim.x) * (blockDim.x / 32);
  const std::uint64_t per_warp = min(std::uint64_t(32), (listed + warps - 1) / warps);
  const std::uint64_t step = warps * per_warp;
  const int lane = int(threadIdx.x % 32);
  std::uint32_t* words = block_words + (threadIdx.x - lane) * kSlotPitch;
  const std::uint64_t warp = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  for (std::uint64_t first = warp * per_warp; first < listed; first += step) {
    const std::uint64_t a = std::uint64_t(lane) < per_warp ? first + lane : listed;  // lanes past per_warp: none
    deal_listed_vertices(vertex_segments, a, listed, owned_segments, flags, scan, words, emit);  // whole warps
    __syncwarp();  // the next round's words overwrite these
  }
}

// Where a vertex goes and what it needs besides its place: `point_marks`, where given, gets 1 for a vertex on a
// sample equal to the level and 0 for the others.
struct VertexOut {
  float* positions;
  float* normals;
  const float* scalars;
  float* values;
  unsigned long long* points;
  std::uint8_t* point_marks;
};
template <class T>
__device__ __forceinline__ void write_vertex(const mc::SlabValues<T>& s, const RowGrid& g,
                                             typename mc::RealOf<T>::type level, const mc::WorldMap& map,
                                             const VertexOut& out, std::uint64_t v, std::int64_t at, int point,
                                             int slot) {
  using R = typename mc::RealOf<T>::type;
  if (slot == 0) *out.points = 1;  // a sample on the level (every writer stores the same value)
  if (out.point_marks) out.point_marks[v] = slot == 0;
  std::int64_t segment, j;
  const std::int64_t r = g.by_segments.quotient(at, segment);
  const std::int64_t i = segment * kSegmentPoints + point;
  const std::int64_t k = g.z0 + g.by_rows.quotient(r, j);
  const mc::SlabValues<float> sv{out.scalars, s.nx, s.ny, s.nz, s.z_begin};
  mc::slot_vertex<T, R>(s, i, j, k, slot, level, map, out.positions + 3 * v,
                        out.normals ? out.normals + 3 * v : nullptr, out.scalars ? &sv : nullptr,
                        out.scalars ? out.values + v : nullptr);
}

// The vertices in two kernels: the first lists every vertex as (segment, point, slot) at its id, the second computes
// one a thread, with its outputs as parameters of its own (taken as one VertexOut it needed 74 registers against 64).
// One kernel that computed each vertex as it was dealt ran at 28 % occupancy (80 registers) and lost to the two once
// short lists were spread over the grid (H200: 256^3 float32 0.124-0.130 -> 0.114-0.120 ms, spm152 0.168-0.174 ->
// 0.158-0.165 ms, 512^3 unchanged).
__device__ __forceinline__ std::uint64_t vertex_entry(std::int64_t at, int point, int slot_bit) {
  return std::uint64_t(at) << 8 | std::uint64_t(point) << 3 | std::uint64_t(slot_bit);
}
__global__ void __launch_bounds__(kSegmentThreads) vertex_list_kernel(const std::uint32_t* __restrict__ vertex_segments,
                                                                      const SlabTotals* __restrict__ totals,
                                                                      std::int64_t owned_segments,
                                                                      const std::uint8_t* __restrict__ flags,
                                                                      SegmentScan scan,
                                                                      std::uint64_t* __restrict__ entries) {
  __shared__ std::uint32_t slot_words[kSegmentThreads * kSlotPitch];
  deal_every_listed_vertex(vertex_segments, totals, owned_segments, flags, scan, slot_words,
                           [&](std::uint64_t v, std::int64_t at, int point, int slot) {
                             entries[v] = vertex_entry(at, point, slot);
                           });
}
template <class T>
__global__ void __launch_bounds__(256) vertex_compute_kernel(mc::SlabValues<T> s, RowGrid g,
                                                             typename mc::RealOf<T>::type level, mc::WorldMap map,
                                                             const std::uint64_t* __restrict__ entries,
                                                             const SlabTotals* __restrict__ totals,
                                                             float* __restrict__ positions,
                                                             float* __restrict__ normals,
                                                             const float* __restrict__ scalars,
                                                             float* __restrict__ values,
                                                             unsigned long long* __restrict__ points,
                                                             std::uint8_t* __restrict__ point_marks) {
  if (!totals->fits) return;
  const std::uint64_t count = totals->vertices;
  const VertexOut out{positions, normals, scalars, values, points, point_marks};
  for (std::uint64_t v = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; v < count;
       v += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t e = entries[v];
    write_vertex(s, g, level, map, out, v, std::int64_t(e >> 8), int(e >> 3 & 31), int(e & 7));
  }
}

// Whether every vertex on a sample equal to the level is used by the slab's own triangles: the vertex pass marks
// the point vertices, these two passes clear the marks of every corner's vertex and flag a mark left. Such a vertex
// is usually used, and the host's pass over the whole mesh for unused vertices can then be skipped.
// Corners hold vertex_base + the slab's vertex; those past the slab's vertices (the next slab's) are left out.
__global__ void __launch_bounds__(256) clear_used_marks_kernel(const std::uint32_t* __restrict__ corners, std::uint64_t count,
                                                              std::uint32_t vertex_base, std::uint64_t vertices,
                                                              std::uint8_t* __restrict__ marks) {
  const std::uint64_t c = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= count) return;
  const std::uint32_t v = corners[c] - vertex_base;
  if (v < vertices && marks[v]) marks[v] = 0;
}
__global__ void __launch_bounds__(256) any_mark_kernel(const std::uint8_t* __restrict__ marks, std::uint64_t count,
                                                       unsigned long long* __restrict__ any) {
  const std::uint64_t v = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (__any_sync(0xffffffffu, v < count && marks[v]) && (threadIdx.x & 31) == 0) *any = 1;
}

// a[c] with c known only at run time, by selects: indexing the array would put it in local memory.
__device__ __forceinline__ std::uint32_t pick(const std::uint32_t (&a)[8], int c) {
  std::uint32_t v = a[0];
#pragma unroll
  for (int n = 1; n < 8; ++n) v = c == n ? a[n] : v;
  return v;
}

// key_vertex for a cell none of whose corners lies on the level (keys are its edges and centre), with the corner
// flags packed in a word (byte c: corner c) so that nothing is indexed at run time.
__device__ __forceinline__ std::uint32_t edge_vertex(int key, std::uint64_t corner_flags, const std::uint32_t (&first)[8]) {
  if (key == mc::kCenterKey) return first[0] + std::uint32_t(__popc(std::uint32_t(corner_flags) & 15u));
  const int c0 = mc::edge_lower_corner(key);
  const std::uint32_t below = (2u << mc::edge_axis(key)) - 1u;  // the point slot and lower axes come first
  return pick(first, c0) + std::uint32_t(__popc(std::uint32_t(corner_flags >> (8 * c0)) & below));
}

// Pass 2b: the triangles of each segment of 32 cells, from its scanned first triangle. A segment holds from none to
// 32 mixed cells, so a thread per segment would leave most lanes idle while a few walk their cells (0.49 ms at 512^3
// under the profiler): the warp deals its 32 segments' mixed cells out to its lanes, 32 at a time, in segment order.
// A cell's first triangle is the warp's first plus the triangles of the cells dealt before it; the first vertex of a
// corner's point is its row segment's first vertex plus the slots of the points before it in the segment.
template <class T>
__global__ void __launch_bounds__(kSegmentThreads, 4) triangle_kernel(
    mc::SlabValues<T> s, RowGrid g, typename mc::RealOf<T>::type level, const std::uint8_t* __restrict__ flags,
    const std::uint32_t* __restrict__ inside, mc::CaseLookup cases, bool keep_degenerate, bool flip,
    SegmentScan scan, std::uint64_t slab_vertex_base,
    const std::int32_t* __restrict__ labels, std::uint32_t* __restrict__ triangles,
    std::int32_t* __restrict__ face_labels, unsigned long long* __restrict__ tie_count,
    std::uint64_t* __restrict__ ties, const SlabTotals* __restrict__ totals) {
  const int lane = int(threadIdx.x % 32);
  const std::int64_t count = g.cell_rows * g.segments;
  const std::int64_t at = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x, warp_first = at - lane;
  if (warp_first >= count || !totals->fits) return;  // whole warp
  std::uint32_t mixed = 0;
  const std::uint32_t segment_triangles = local_triangles(warp_segment_count(scan, at, lane));
  if (at < count && segment_triangles != 0) {
    std::int64_t segment;
    const std::int64_t r = g.by_segments.quotient(at, segment);
    mixed = mixed_cells(g, inside, r, segment);
  }
  if (!__any_sync(0xffffffffu, mixed != 0)) return;  // whole warp
  // The warp's segments are consecutive, so its triangles are too, from its first segment's.
  std::uint64_t t_next = triangles_of(scan.group_bases[warp_first / kGroupSegments]);  // a group's first segment
  deal_mixed_cells(g, warp_first, lane, mixed, [&](bool has, int, std::int64_t r, std::int64_t i) {
    std::uint32_t tris = 0;
    const mc::CaseEntry* e = nullptr;
    std::uint8_t cf[8];
    // The first vertex of each corner's point: the corner row's segment's first plus the slots before the point.
    // The mesh's indices are 32-bit: 32-bit arithmetic keeps the same low bits with half the work.
    std::uint32_t first[8];
    std::int64_t j = 0, k = 0;
    const std::int64_t segment_start = i & ~std::int64_t(kSegmentPoints - 1);
    const std::int64_t segment = segment_start / kSegmentPoints;
    if (has) {
      k = g.z0 + g.by_rows.quotient(r, j);
      std::int64_t rows[4];
      corner_rows(g, r, rows);
      load_corners(flags, g, rows, i, cf);
      // A segment's 32 flag bytes are two aligned 16-byte vectors (flag_at): each corner row's eight words load
      // at once, beside the corners' bytes and before the case lookup (which waits on those bytes), and give the
      // slots before the cell without a walk.
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const auto* v = reinterpret_cast<const uint4*>(flags + flag_at(g, rows[q], segment_start));
        const uint4 a = v[0], b = v[1];
        const std::uint32_t words[kSegmentPoints / 4] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        first[2 * q] = std::uint32_t(slab_vertex_base) +
                       vertices_of(segment_first(scan, rows[q] * g.segments + segment)) +
                       slots_before(words, int(i - segment_start));
        first[2 * q + 1] = first[2 * q] + std::uint32_t(mc::slot_count(cf[2 * q]));  // point i + 1 follows i
      }
      e = &mc::case_entry(cases, s, mc::cell_case(cf), level, i, j, k);
      if (!mc::touches_level(cf)) {
        tris = e->count;
      } else {
        std::uint8_t cf_copy[8];  // indexed at run time: a copy keeps cf itself in registers
#pragma unroll
        for (int n = 0; n < 8; ++n) cf_copy[n] = cf[n];
        tris = std::uint32_t(mc::surviving_triangles(*e, cf_copy, keep_degenerate));
      }
    }
    std::uint32_t dealt_tris;
    const std::uint32_t before = warp_exclusive(tris, lane, dealt_tris);
    if (tris > 0) {
      const std::int32_t label = labels ? mc::cell_label_at(labels, g.nx, g.ny, s.z_begin, i, j, k, cf) : 0;
      std::uint64_t t = t_next + before;
      if (!mc::touches_level(cf)) {
        std::uint64_t packed = 0;
#pragma unroll
        for (int n = 0; n < 8; ++n) packed |= std::uint64_t(cf[n]) << (8 * n);
        for (int n = 0; n < e->count; ++n, ++t) {
          const int a = e->edges[3 * n], b = e->edges[3 * n + 1], c2 = e->edges[3 * n + 2];
          std::uint32_t* out = triangles + 3 * t;
          out[0] = edge_vertex(a, packed, first);
          out[1] = edge_vertex(flip ? c2 : b, packed, first);
          out[2] = edge_vertex(flip ? b : c2, packed, first);
          if (labels) face_labels[t] = label;
        }
      } else {  // on the level: the general path, on copies indexed at run time
        std::uint8_t cf_copy[8];
        std::uint64_t first_copy[8];
#pragma unroll
        for (int n = 0; n < 8; ++n) {
          cf_copy[n] = cf[n];
          first_copy[n] = first[n];
        }
        mc::cell_triangles(*e, cf_copy, keep_degenerate, [&](int a, int b, int c2, bool on_level) {
          std::uint32_t* out = triangles + 3 * t;
          out[0] = std::uint32_t(mc::key_vertex(a, cf_copy, first_copy));
          out[1] = std::uint32_t(mc::key_vertex(flip ? c2 : b, cf_copy, first_copy));
          out[2] = std::uint32_t(mc::key_vertex(flip ? b : c2, cf_copy, first_copy));
          if (labels) face_labels[t] = label;
          if (on_level) ties[atomicAdd(tie_count, 1ull)] = t;
          ++t;
        });
      }
    }
    t_next += dealt_tris;
  });
}

}  // namespace parasurf::iso::cuda
