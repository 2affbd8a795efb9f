// CUDA kernels of the isosurface engine, by segments of 32 points of a row. Pass 1a gives every sample two bits,
// inside and on the level, by warp ballots marching along z; pass 1b finds which vertex slots each segment's points
// own, counts its vertices and its cells' triangles from those bits, and lists the segments that own vertices (the
// later passes rebuild a point's flag byte from the bits instead of reading one stored a point). One scan, by groups
// of 32 segments, gives every segment its first vertex and first triangle, so the generation passes (2a vertices,
// over the listed segments; 2b triangles, over all) deal a warp's work out to its lanes: no pass walks a whole row.
// The per-point and per-cell math is mc_kernels.hpp, shared with the CPU engine.
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
// Counts are scanned by groups of 32 segments, a warp's: pass 1b gives each group its vertex and triangle counts as
// one 64-bit word (vertices in the low half, triangles in the high half, so that one scan gives both; a slab's
// vertex ids are 32-bit already, as the mesh's indices are), and each segment its first vertex and triangle within
// its group, 16 bits each in one 32-bit word. The scan then reads a thirty-second of what a scan by segment would.
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

// The segment a thread takes, as (row, segment in the row); false past the last one.
__device__ __forceinline__ bool segment_of_thread(const RowGrid& g, std::int64_t count, std::int64_t& at,
                                                  std::int64_t& r, std::int64_t& segment) {
  at = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (at >= count) return false;
  r = g.by_segments.quotient(at, segment);
  return true;
}

// Programmatic dependent launch (sm_90): a kernel launched with the attribute may start while the kernel before it
// in the stream drains, and waits here, before reading what that kernel wrote, for it to finish and its writes to
// show. (Launched without the attribute, it returns at once.)
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Pass 1a: which samples are inside and which lie on the level, one bit each, per segment of 32 points. A warp takes
// 128 points of a row, lane l the points l + 32 p, so that each ballot is one segment's word, and marches them
// through kFlagSlices slices. Per point this is a load, two compares and a share of two ballots; per-point flag
// bytes would cost tens of instructions a point here, so they are made per segment from the bits (pass 1b).
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
// samples, a lane's four ballot loads above fetch 4 bytes a slice: too few bytes in flight to keep DRAM busy. Only
// 1- and 2-byte samples take this pass, and those are integers: they are compared four or two to a word (SIMD video
// instructions) against the level's integer threshold, which takes a fraction of the instructions of converting
// each sample to float and reducing over a partial warp mask.
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

// A segment's bit planes (bit b: point 32 · segment + b): inside, on the level, and the vertex slots its points own
// (the crossings to their +x, +y and +z neighbours, the samples on the level that carry a vertex themselves, MC33
// centres). Pass 2b rebuilds a corner's flag byte (mc::point_flags) from the bits: flag bytes stored for every point
// were 128 MiB at 512^3, written by pass 1b and read back from DRAM by pass 2b, where the inside and on-level words
// (32 MiB) mostly stay in L2.
struct SegmentPlanes {
  std::uint32_t in = 0, on = 0, x = 0, y = 0, z = 0, point = 0, centre = 0;
};
// The planes that the bits give for segment `at` (segment `segment` of the row at (j, k)): inside, on the level and
// the crossings. A crossing whose either end lies on the level is left to that sample's vertex.
__device__ __forceinline__ SegmentPlanes crossing_planes(const RowGrid& g, std::int64_t nz,
                                                         const std::uint32_t* __restrict__ inside,
                                                         const std::uint32_t* __restrict__ on_level, std::int64_t at,
                                                         std::int64_t segment, std::int64_t j, std::int64_t k) {
  SegmentPlanes p;
  const std::int64_t i0 = segment * kSegmentPoints;
  const std::int64_t points = min(std::int64_t(kSegmentPoints), g.nx - i0);
  const std::uint32_t valid = points == kSegmentPoints ? ~0u : (1u << points) - 1u;
  const bool has_next = segment + 1 < g.segments;
  const std::uint32_t has_east = valid >> 1 | (has_next ? 1u << 31 : 0u);
  p.in = inside[at];
  p.on = on_level[at];
  const std::uint32_t east_in = p.in >> 1 | (has_next ? inside[at + 1] << 31 : 0u);
  const std::uint32_t east_on = p.on >> 1 | (has_next ? on_level[at + 1] << 31 : 0u);
  const std::uint32_t off = ~p.on;
  p.x = off & (p.in ^ east_in) & ~east_on & has_east;
  if (j + 1 < g.ny) p.y = off & (p.in ^ inside[at + g.segments]) & ~on_level[at + g.segments] & valid;
  if (k + 1 < nz) {
    const std::int64_t above = at + g.ny * g.segments;
    p.z = off & (p.in ^ inside[above]) & ~on_level[above] & valid;
  }
  return p;
}
// The slot bits of points 4q to 4q + 3, a byte each, as in their flag bytes.
__device__ __forceinline__ std::uint32_t slot_word(const SegmentPlanes& p, int q) {
  const int shift = 4 * q;
  return spread_bits(p.point >> shift & 15u) * mc::kSlotPoint | spread_bits(p.x >> shift & 15u) * mc::kSlotX |
         spread_bits(p.y >> shift & 15u) * mc::kSlotY | spread_bits(p.z >> shift & 15u) * mc::kSlotZ |
         spread_bits(p.centre >> shift & 15u) * mc::kSlotCenter;
}

// The slab's totals after the scans, gathered on the device and written home too, into mapped host memory, so that
// the host reads them once the stream is done (a copy per total would cost a round trip each, a noticeable share of
// a small extraction). The generation's kernels read the device copy, so
// that they can be launched before the host has seen them: `fits` says whether the mesh arrays hold the slab (else
// they write nothing, and the host grows the arrays and launches them again).
struct SlabTotals {
  unsigned long long vertices, triangles, ties, vertex_segments, fits, level_samples;
};
// What the mesh arrays hold: vertices (positions and every other per-vertex array asked for), vertex-list entries,
// triangles (with their labels) and tie candidates.
struct MeshCapacity {
  unsigned long long vertices, list_entries, triangles, ties;
};
__global__ void totals_kernel(SegmentScan scan, std::int64_t owned_segments,
                              const unsigned long long* __restrict__ counters, MeshCapacity capacity,
                              SlabTotals* __restrict__ out, SlabTotals* __restrict__ home) {
  wait_for_previous_kernel();
  // Vertices of the owned rows only (the slab's extra slice belongs to the next slab); all triangles.
  const std::int64_t last = (scan.segments - 1) / kGroupSegments;
  const std::uint64_t all = scan.group_bases[last] + scan.group_counts[last];
  const unsigned long long vertices = vertices_of(owned_segments < scan.segments ? segment_first(scan, owned_segments) : all);
  const unsigned long long triangles = triangles_of(all), ties = counters[0];
  out->vertices = vertices;
  out->triangles = triangles;
  out->ties = ties;
  out->vertex_segments = counters[3];
  out->level_samples = counters[4];
  const unsigned long long fits = vertices <= capacity.vertices && vertices <= capacity.list_entries &&
                                 triangles <= capacity.triangles && ties <= capacity.ties;
  out->fits = fits;
  *home = {vertices, triangles, ties, counters[3], fits, counters[4]};
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

// The warp's mixed cells dealt out to its lanes, in segment order: lane l holds `lane_segments` consecutive segments
// from warp_first + l · lane_segments, bit b of mixed[p] being cell 32 s + b of its segment s = that first + p (words
// past lane_segments are zero). `round(has, owner, at, r, i)` gets cell i of row r, in segment `at`, held by lane
// `owner`.
// The words come by value: a reference to the caller's array, captured by the lambdas, kept the array in local memory.
template <int kMaxLaneSegments>
struct LaneWords {
  std::uint32_t w[kMaxLaneSegments];
};
template <int kMaxLaneSegments, class Round>
__device__ __forceinline__ void deal_mixed_cells(const RowGrid& g, std::int64_t warp_first, int lane, int lane_segments,
                                                 const LaneWords<kMaxLaneSegments> mixed, Round&& round) {
  std::uint32_t cells = 0;
#pragma unroll
  for (int p = 0; p < kMaxLaneSegments; ++p) cells += std::uint32_t(__popc(mixed.w[p]));
  deal_items(lane, cells, [&, mixed](bool has, int owner, std::uint32_t n, std::uint32_t) {
    std::uint32_t words[kMaxLaneSegments];
#pragma unroll
    for (int p = 0; p < kMaxLaneSegments; ++p) words[p] = __shfl_sync(0xffffffffu, mixed.w[p], owner);
    // The owner's word that holds its n-th cell.
    int p = 0;
    std::uint32_t word = words[0];
#pragma unroll
    for (int q = 1; q < kMaxLaneSegments; ++q) {
      const std::uint32_t in_word = std::uint32_t(__popc(word));
      if (p == q - 1 && n >= in_word) n -= in_word, p = q, word = words[q];
    }
    std::int64_t at = 0, r = 0, i = 0;
    if (has) {
      std::int64_t segment;
      at = warp_first + std::int64_t(owner) * lane_segments + p;
      r = g.by_segments.quotient(at, segment);
      i = segment * kSegmentPoints + nth_set_bit(word, n);
    }
    round(has, owner, at, r, i);
  });
}

// The inside and on-level bits of cell i's corners in cell_case's order, from the segment bits: what the counting
// needs of their flag bytes.
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

// Pass 1b: the vertex slots of each segment (its SegmentPlanes), from the bits of the segment, its +x neighbour and
// the rows at +y and +z; one thread per segment. Points on the level take point_flags' exact path (they are rare).
// The same pass counts the segment's cells' surviving triangles (and how many touch on-level samples, for the
// duplicate check) and MC33 centre vertices: the inside bits of its four corner rows find its mixed cells at once,
// the warp deals them out to its lanes, and each reads its corners' bits. (A pass of its own for the counts would
// mostly reload what this one holds.) A centre vertex belongs to the
// cell's lowest corner, in the segment.
// What it keeps: the point plane of segments with samples on the level, the centre plane of every segment (MC33
// only), and each segment that owns vertices, listed for the vertex passes with its slot planes.
template <class T>
__global__ void __launch_bounds__(kSegmentThreads) flags_kernel(mc::SlabValues<T> s, RowGrid g,
                                                               typename mc::RealOf<T>::type level,
                                                               const std::uint32_t* __restrict__ inside,
                                                               const std::uint32_t* __restrict__ on_level,
                                                               unsigned long long* __restrict__ level_samples,
                                                               mc::CaseLookup cases, bool keep_degenerate,
                                                               std::uint32_t* __restrict__ point_planes,
                                                               std::uint32_t* __restrict__ centre_planes,
                                                               std::uint32_t* __restrict__ segment_local,
                                                               std::uint64_t* __restrict__ group_counts,
                                                               const std::uint32_t* __restrict__ next_centres,
                                                               std::int64_t next_centres_k,
                                                               unsigned long long* __restrict__ tie_count,
                                                               std::uint32_t* __restrict__ vertex_segments,
                                                               uint4* __restrict__ listed_planes,
                                                               std::uint32_t* __restrict__ listed_centres,
                                                               unsigned long long* __restrict__ vertex_segment_count,
                                                               const std::uint8_t* __restrict__ classic_triangles) {
  using R = typename mc::RealOf<T>::type;
  wait_for_previous_kernel();
  __shared__ std::uint32_t warp_triangles[kSegmentThreads], warp_centres[kSegmentThreads];
  __shared__ std::uint8_t case_triangles[256];
  static_assert(kSegmentThreads == 256, "a thread loads a case's count");
  const bool classic = cases.case_flags == nullptr;
  if (classic) {
    case_triangles[threadIdx.x] = classic_triangles[threadIdx.x];
    __syncthreads();  // (before any warp leaves)
  }
  const std::int64_t count = g.flag_rows * g.segments;
  const std::int64_t at = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int lane = int(threadIdx.x % 32);
  if (at - lane >= count) return;  // whole warp
  const bool live = at < count;
  std::int64_t segment = 0, j = 0, r = 0, k = 0;
  SegmentPlanes p;
  std::uint32_t vertices = 0, mixed = 0, fast_triangles = 0;
  if (live) {
    r = g.by_segments.quotient(at, segment);
    k = g.z0 + g.by_rows.quotient(r, j);
    p = crossing_planes(g, s.nz, inside, on_level, at, segment, j, k);
    const std::int64_t i0 = segment * kSegmentPoints;
    const std::int64_t points = min(std::int64_t(kSegmentPoints), g.nx - i0);
    const std::uint32_t valid = points == kSegmentPoints ? ~0u : (1u << points) - 1u;
    for (std::uint32_t m = p.on & valid; m; m &= m - 1) {
      const int b = __ffs(int(m)) - 1;
      if (mc::point_flags<T, R>(s, i0 + b, j, k, level) & mc::kSlotPoint) p.point |= 1u << b;
    }
    if (p.on) {
      point_planes[at] = p.point;  // read only where the segment has samples on the level
      *level_samples = 1;          // (every writer stores the same value)
    }
    vertices = std::uint32_t(__popc(p.x) + __popc(p.y) + __popc(p.z) + __popc(p.point));
    if (r < g.cell_rows && j + 1 < g.ny) mixed = mixed_cells(g, inside, r, segment);
    // With the classic table, a cell none of whose corners lies on the level makes its case's classic count of
    // triangles: the lane counts those of its segment from the corner rows' inside bits and a table in shared
    // memory, and leaves only the others to the warp's dealing (whose rounds of loads and shuffles cost more than
    // this loop).
    if (classic && mixed) {
      std::int64_t rows[4];
      corner_rows(g, r, rows);
      const bool has_next = segment + 1 < g.segments;
      std::uint64_t window[4];  // corner row q's inside bits from this segment's first point, 33 of them
      std::uint32_t touch = 0;  // cells with a corner on the level
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const std::int64_t a = rows[q] * g.segments + segment;
        window[q] = inside[a] | (has_next ? std::uint64_t(inside[a + 1]) << 32 : 0u);
        const std::uint32_t on = on_level[a], on_next = has_next ? on_level[a + 1] : 0u;
        touch |= on | on >> 1 | on_next << 31;
      }
      for (std::uint32_t m = mixed & ~touch; m; m &= m - 1) {
        const int b = __ffs(int(m)) - 1;
        int cas = 0;  // cell_case: corner c = x + 2 (y + 2 z) in bit c, corner row q = y + 2 z
#pragma unroll
        for (int q = 0; q < 4; ++q) cas |= int(window[q] >> b & 3u) << (2 * q);
        fast_triangles += case_triangles[cas];
      }
      mixed &= touch;
    }
  }
  // Counts by segment, in shared memory: the lanes of a round add to the segments of their cells.
  std::uint32_t* segment_triangles = warp_triangles + (threadIdx.x - lane);
  std::uint32_t* segment_centres = warp_centres + (threadIdx.x - lane);
  segment_triangles[lane] = 0;
  segment_centres[lane] = 0;
  __syncwarp();
  std::uint32_t ties = 0;
  const auto deal = [&](bool has, int owner, std::int64_t, std::int64_t cell_r, std::int64_t i) {
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
    if (e.center && mc::uses_center(e, cf, keep_degenerate))
      atomicOr(segment_centres + owner, 1u << (i % kSegmentPoints));
  };
  deal_mixed_cells(g, at - lane, lane, 1, LaneWords<1>{{mixed}}, deal);
  __syncwarp();
  if (ties) atomicAdd(tie_count, (unsigned long long)ties);
  std::uint32_t counts = 0;
  if (live) {
    p.centre = segment_centres[lane];
    if (k == next_centres_k && j + 1 < g.ny) p.centre |= next_centres[j * g.segments + segment];
    if (centre_planes) centre_planes[at] = p.centre;
    vertices += std::uint32_t(__popc(p.centre));
    counts = pack_local(vertices, segment_triangles[lane] + fast_triangles);
  }
  // The segments that own vertices, listed in any order for the vertex passes, with their slot planes.
  const std::uint32_t listed = __ballot_sync(0xffffffffu, vertices != 0);
  if (listed) {
    unsigned long long first = 0;
    if (lane == 0) first = atomicAdd(vertex_segment_count, (unsigned long long)__popc(listed));
    first = __shfl_sync(0xffffffffu, first, 0);
    if (vertices) {
      const unsigned long long a = first + __popc(listed & ((1u << lane) - 1u));
      vertex_segments[a] = std::uint32_t(at);
      listed_planes[a] = make_uint4(p.x, p.y, p.z, p.point);
      if (listed_centres) listed_centres[a] = p.centre;
    }
  }
  // The warp's segments are one group (blocks hold whole warps, so groups start at multiples of 32).
  std::uint32_t group_total;
  const std::uint32_t before = warp_exclusive(counts, lane, group_total);
  if (live) segment_local[at] = before;
  if (lane == 0)
    group_counts[at / kGroupSegments] =
        std::uint64_t(local_triangles(group_total)) << kTriangleShift | local_vertices(group_total);
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

// Pass 2a: the vertices in two kernels. The first lists every vertex as (segment, point, slot) at its id, the second
// computes one a thread. One kernel that computed each vertex as it was dealt needs so many registers that its
// occupancy is low, and it is slower than the two once short lists are spread over the grid.
__device__ __forceinline__ std::uint64_t vertex_entry(std::int64_t at, int point, int slot_bit) {
  return std::uint64_t(at) << 8 | std::uint64_t(point) << 3 | std::uint64_t(slot_bit);
}
// The listing, when the mesh arrays hold the slab (SlabTotals::fits). A segment holds from one to 160 vertices, so a
// thread per segment would leave most lanes idle while a few walk their slots: a warp takes up to 32 listed segments
// a round and deals their vertices out to its lanes, 32 at a time. Rounds are a grid's worth of segments apart, so
// that a grid of one wave covers any list; a list of fewer than 32 segments a warp is spread over all the warps,
// fewer segments each, since a warp's rounds run one after another and a short list would otherwise leave most
// warps idle.
constexpr int kSlotPitch = kSegmentPoints / 4 + 1;  // a segment's eight slot words at an odd pitch: distinct banks
__global__ void __launch_bounds__(kSegmentThreads) vertex_list_kernel(const std::uint32_t* __restrict__ vertex_segments,
                                                                      const uint4* __restrict__ listed_planes,
                                                                      const std::uint32_t* __restrict__ listed_centres,
                                                                      const SlabTotals* __restrict__ totals,
                                                                      std::int64_t owned_segments, SegmentScan scan,
                                                                      std::uint64_t* __restrict__ entries) {
  constexpr int kWords = kSegmentPoints / 4;
  __shared__ std::uint32_t slot_words[kSegmentThreads * kSlotPitch];
  wait_for_previous_kernel();
  if (!totals->fits) return;
  const std::uint64_t listed = totals->vertex_segments;
  const std::uint64_t warps = std::uint64_t(gridDim.x) * (blockDim.x / 32);
  const std::uint64_t per_warp = min(std::uint64_t(32), (listed + warps - 1) / warps);
  const std::uint64_t step = warps * per_warp;
  const int lane = int(threadIdx.x % 32);
  std::uint32_t* words = slot_words + (threadIdx.x - lane) * kSlotPitch;
  const std::uint64_t warp = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  for (std::uint64_t round = warp * per_warp; round < listed; round += step) {
    const std::uint64_t a = std::uint64_t(lane) < per_warp ? round + lane : listed;  // lanes past per_warp: none
    // Vertices of the owned rows only (the slab's last slice belongs to the next slab).
    const std::int64_t at = a < listed ? std::int64_t(vertex_segments[a]) : owned_segments;
    std::uint32_t starts[2] = {0, 0};  // byte q % 4 of starts[q / 4]: the segment's slots before its word q
    std::uint32_t vertices = 0, first = 0;
    if (at < owned_segments) {
      first = vertices_of(segment_first(scan, at));
      const uint4 planes = listed_planes[a];
      SegmentPlanes p;
      p.x = planes.x, p.y = planes.y, p.z = planes.z, p.point = planes.w;
      if (listed_centres) p.centre = listed_centres[a];
#pragma unroll
      for (int q = 0; q < kWords; ++q) {
        const std::uint32_t slots = slot_word(p, q);
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
      // The word that holds slot n: the last whose start is at most n (a word with no slot starts where the next
      // does).
      int q = 0;
      std::uint32_t start = 0;
#pragma unroll
      for (int w = 1; w < kWords; ++w) {
        const std::uint32_t from = owner_starts[w / 4] >> (8 * (w % 4)) & 255u;
        if (from <= n) q = w, start = from;
      }
      const int bit = nth_set_bit(words[owner * kSlotPitch + q], n - start);
      entries[std::uint64_t(owner_first) + n] = vertex_entry(owner_at, 4 * q + (bit >> 3), bit & 7);
    });
    __syncwarp();  // the next round's words overwrite these
  }
}
// One vertex a thread. `point_marks`, where given, gets 1 for a vertex on a sample equal to the level and 0 for the
// others. (The outputs are parameters of their own: taken as one struct they needed 74 registers against 64.)
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
  using R = typename mc::RealOf<T>::type;
  wait_for_previous_kernel();
  if (!totals->fits) return;
  const std::uint64_t count = totals->vertices;
  const mc::SlabValues<float> sv{scalars, s.nx, s.ny, s.nz, s.z_begin};
  for (std::uint64_t v = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; v < count;
       v += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t e = entries[v];
    const int point = int(e >> 3 & 31), slot = int(e & 7);
    if (slot == 0) *points = 1;  // a sample on the level (every writer stores the same value)
    if (point_marks) point_marks[v] = slot == 0;
    std::int64_t segment, j;
    const std::int64_t r = g.by_segments.quotient(std::int64_t(e >> 8), segment);
    const std::int64_t i = segment * kSegmentPoints + point;
    const std::int64_t k = g.z0 + g.by_rows.quotient(r, j);
    mc::slot_vertex<T, R>(s, i, j, k, slot, level, map, positions + 3 * v, normals ? normals + 3 * v : nullptr,
                          scalars ? &sv : nullptr, scalars ? values + v : nullptr);
  }
}

// scikit-image's value of each vertex (mc::slot_range), one vertex a thread: a pass of its own, so that the vertex
// pass keeps its registers.
template <class T>
__global__ void __launch_bounds__(256) vertex_range_kernel(mc::SlabValues<T> s, RowGrid g, float level,
                                                           const std::uint64_t* __restrict__ entries,
                                                           const SlabTotals* __restrict__ totals,
                                                           float* __restrict__ values) {
  wait_for_previous_kernel();
  if (!totals->fits) return;
  const std::uint64_t count = totals->vertices;
  for (std::uint64_t v = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; v < count;
       v += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t e = entries[v];
    const int point = int(e >> 3 & 31), slot = int(e & 7);
    std::int64_t segment, j;
    const std::int64_t r = g.by_segments.quotient(std::int64_t(e >> 8), segment);
    const std::int64_t i = segment * kSegmentPoints + point;
    const std::int64_t k = g.z0 + g.by_rows.quotient(r, j);
    values[v] = mc::slot_range(s, i, j, k, slot, level);
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
// A held slab's vertex ids moved to its place in the joined mesh.
__global__ void __launch_bounds__(256) shift_ids_kernel(std::uint32_t* __restrict__ ids, std::uint64_t count,
                                                        std::uint32_t shift) {
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) ids[i] += shift;
}
__global__ void __launch_bounds__(256) any_mark_kernel(const std::uint8_t* __restrict__ marks, std::uint64_t count,
                                                       unsigned long long* __restrict__ any) {
  const std::uint64_t v = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (__any_sync(0xffffffffu, v < count && marks[v]) && (threadIdx.x & 31) == 0) *any = 1;
}

// a[q] with q known only at run time, by selects: indexing the array would put it in local memory.
__device__ __forceinline__ std::uint32_t pick(const std::uint32_t (&a)[4], int q) {
  std::uint32_t v = a[0];
#pragma unroll
  for (int n = 1; n < 4; ++n) v = q == n ? a[n] : v;
  return v;
}

// key_vertex for a cell none of whose corners lies on the level (keys are its edges and centre), with the corner
// flags packed in a word (byte c: corner c) so that nothing is indexed at run time. `row_first[q]`: the first vertex of
// corner 2q's point; corner 2q + 1's point follows its slots (keeping four firsts instead of eight spares registers).
__device__ __forceinline__ std::uint32_t edge_vertex(int key, std::uint64_t corner_flags,
                                                     const std::uint32_t (&row_first)[4]) {
  if (key == mc::kCenterKey) return row_first[0] + std::uint32_t(__popc(std::uint32_t(corner_flags) & 15u));
  const int c0 = mc::edge_lower_corner(key);
  const std::uint32_t below = (2u << mc::edge_axis(key)) - 1u;  // the point slot and lower axes come first
  const std::uint32_t pair = std::uint32_t(corner_flags >> (8 * (c0 & 6)));  // corners 2q and 2q + 1, q = c0 / 2
  const std::uint32_t skip = c0 & 1 ? std::uint32_t(__popc(pair & mc::kSlotMask)) : 0u;
  return pick(row_first, c0 >> 1) + skip + std::uint32_t(__popc((pair >> (8 * (c0 & 1))) & below));
}

// The inside and on-level words of one row at a segment and the next (on-level words only where some sample of the
// slab lies on the level, next-segment words only where asked).
struct RowWords {
  std::uint32_t in0 = 0, in1 = 0, on0 = 0, on1 = 0;
};
template <bool kLevelSamples>
__device__ __forceinline__ RowWords row_words(const std::uint32_t* __restrict__ inside,
                                              const std::uint32_t* __restrict__ on_level, std::uint32_t at,
                                              bool exists, bool next) {
  RowWords w;
  if (exists) {
    w.in0 = inside[at];
    if (next) w.in1 = inside[at + 1];
    if constexpr (kLevelSamples) {
      w.on0 = on_level[at];
      if (next) w.on1 = on_level[at + 1];
    }
  }
  return w;
}
// The flag bytes (mc::point_flags, with the centre slot) of corners i and i + 1 of a cell in one corner row, and the
// vertex slots of that row segment's points before i, where i is point b of row segment `at` (i + 1 is the next
// segment's first where b is 31): from the row's words, those of its +y and +z neighbour rows (`y`, `z`, where they
// exist), and the point and centre planes pass 1b kept. The words are read as a window shifted to b (funnel shifts),
// so that both corners come out of the same few instructions. `x_last`: whether point i + 1 is the row's last.
template <bool kLevelSamples>
__device__ __forceinline__ void corner_pair(const RowWords& w, const RowWords& y, bool has_y, const RowWords& z,
                                            bool has_z, const std::uint32_t* __restrict__ point_planes,
                                            const std::uint32_t* __restrict__ centre_planes, std::uint32_t at, int b,
                                            bool x_last, std::uint8_t& lo, std::uint8_t& hi, std::uint32_t& before) {
  const bool wrap = b == kSegmentPoints - 1;  // (then the next segment exists: the cell has corner i + 1)
  const std::uint32_t in = __funnelshift_r(w.in0, w.in1, b), on = __funnelshift_r(w.on0, w.on1, b);
  // Slots of the points below b (whose +x neighbours all exist) as they lie, and of points b and b + 1 in bits 0, 1.
  const std::uint32_t x_below =
      ~w.on0 & (w.in0 ^ __funnelshift_r(w.in0, w.in1, 1)) & ~__funnelshift_r(w.on0, w.on1, 1);
  std::uint32_t x = ~on & (in ^ in >> 1) & ~(on >> 1);
  if (x_last) x &= 1u;
  std::uint32_t y_below = 0, y_pair = 0, z_below = 0, z_pair = 0;
  if (has_y) {
    y_below = ~w.on0 & (w.in0 ^ y.in0) & ~y.on0;
    y_pair = ~on & (in ^ __funnelshift_r(y.in0, y.in1, b)) & ~__funnelshift_r(y.on0, y.on1, b);
  }
  if (has_z) {
    z_below = ~w.on0 & (w.in0 ^ z.in0) & ~z.on0;
    z_pair = ~on & (in ^ __funnelshift_r(z.in0, z.in1, b)) & ~__funnelshift_r(z.on0, z.on1, b);
  }
  std::uint32_t point0 = 0, point1 = 0, centre0 = 0, centre1 = 0;
  if constexpr (kLevelSamples) {
    if (w.on0) point0 = point_planes[at];
    if (wrap && w.on1) point1 = point_planes[at + 1];
  }
  if (centre_planes) {
    centre0 = centre_planes[at];
    if (wrap) centre1 = centre_planes[at + 1];
  }
  const std::uint32_t point = __funnelshift_r(point0, point1, b), centre = __funnelshift_r(centre0, centre1, b);
  const std::uint32_t mask = (1u << b) - 1u;
  before = std::uint32_t(__popc(x_below & mask) + __popc(y_below & mask) + __popc(z_below & mask) +
                         __popc(point0 & mask) + __popc(centre0 & mask));
  // Bits 0 and 1 of a plane to bit 0 of bytes 0 and 1.
  const auto pair = [](std::uint32_t v) { return (v & 1u) | (v & 2u) << 7; };
  const std::uint32_t bytes = pair(in) * mc::kInside | pair(on) * mc::kOnLevel | pair(point) * mc::kSlotPoint |
                              pair(x) * mc::kSlotX | pair(y_pair) * mc::kSlotY | pair(z_pair) * mc::kSlotZ |
                              pair(centre) * mc::kSlotCenter;
  lo = std::uint8_t(bytes);
  hi = std::uint8_t(bytes >> 8);
}
// The flag bytes of a cell's eight corners (cell_case's order) and, per corner row, the slots before corner i there.
// The cell is point b of row segment `at`; its corner rows are at +y (`row_segments`) and +z (`plane_segments`);
// `y2`, `z2`: whether the rows at +2 along y and z exist. The eight rows' words are loaded once (a corner row is
// another's +y or +z neighbour). Segment indices are 32-bit (a slab's are checked to fit), which keeps registers free.
template <bool kLevelSamples>
__device__ __forceinline__ void cell_corners(const std::uint32_t* __restrict__ inside,
                                             const std::uint32_t* __restrict__ on_level,
                                             const std::uint32_t* __restrict__ point_planes,
                                             const std::uint32_t* __restrict__ centre_planes, std::uint32_t at,
                                             std::uint32_t row_segments, std::uint32_t plane_segments, int b,
                                             bool has_next, bool x_last, bool y2, bool z2, std::uint8_t (&cf)[8],
                                             std::uint32_t (&before)[4]) {
  const bool wrap = b == kSegmentPoints - 1;
  const auto words = [&](int dy, int dz, bool exists, bool next) {
    const std::uint32_t a = at + std::uint32_t(dy) * row_segments + std::uint32_t(dz) * plane_segments;
    return row_words<kLevelSamples>(inside, on_level, a, exists, next);
  };
  const RowWords w00 = words(0, 0, true, has_next), w10 = words(1, 0, true, has_next);
  const RowWords w01 = words(0, 1, true, has_next), w11 = words(1, 1, true, has_next);
  const RowWords w20 = words(2, 0, y2, wrap), w21 = words(2, 1, y2, wrap);
  const RowWords w02 = words(0, 2, z2, wrap), w12 = words(1, 2, z2, wrap);
  const auto pair = [&](int q, const RowWords& w, const RowWords& y, bool has_y, const RowWords& z, bool has_z) {
    corner_pair<kLevelSamples>(w, y, has_y, z, has_z, point_planes, centre_planes,
                               at + std::uint32_t(q & 1) * row_segments + std::uint32_t(q >> 1) * plane_segments, b,
                               x_last, cf[2 * q], cf[2 * q + 1], before[q]);
  };
  pair(0, w00, w10, true, w01, true);
  pair(1, w10, w20, y2, w11, true);
  pair(2, w01, w11, true, w02, z2);
  pair(3, w11, w21, y2, w12, z2);
}

// Pass 2b: the triangles of each segment of 32 cells, from its scanned first triangle. A segment holds from none to
// 32 mixed cells, so a thread per segment would leave most lanes idle while a few walk their cells: the warp deals
// its segments' mixed cells out to its lanes, 32 at a time, in segment order.
// A cell's first triangle is the warp's first plus the triangles of the cells dealt before it; the first vertex of a
// corner's point is its row segment's first vertex plus the slots of the points before it in the segment.
// A warp takes `lane_segments` (up to kMaxLaneSegments) consecutive segments a lane, whole groups: a round costs the
// same however few of its lanes hold a cell, so large slabs give a lane several segments to fill its rounds; small
// slabs keep one, for enough warps.
// triangle_kernel takes one of two bodies, by whether some sample of the slab lies on the level (kLevelSamples):
// inlined into the cell loop, the on-level words' registers make the common path spill, and as a call it is slower.
// Even as a second body the on-level one left the kernel spilling, so triangle_common_kernel holds the common body
// alone, for slabs that the host expects to hold no sample on the level.
constexpr int kMaxLaneSegments = 4;
template <class T, bool kLevelSamples>
__device__ __forceinline__ void write_triangles(
    const mc::SlabValues<T>& s, const RowGrid& g, typename mc::RealOf<T>::type level,
    const std::uint32_t* __restrict__ inside, const std::uint32_t* __restrict__ on_level,
    const std::uint32_t* __restrict__ point_planes, const std::uint32_t* __restrict__ centre_planes,
    const mc::CaseLookup& cases, bool keep_degenerate, bool flip, const SegmentScan& scan,
    std::uint64_t slab_vertex_base, const std::int32_t* __restrict__ labels, std::uint32_t* __restrict__ triangles,
    std::int32_t* __restrict__ face_labels, unsigned long long* __restrict__ tie_count,
    std::uint64_t* __restrict__ ties, int lane_segments) {
  const int lane = int(threadIdx.x % 32);
  const std::int64_t count = g.cell_rows * g.segments;
  const std::int64_t warp_first = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x - lane) * lane_segments;
  if (warp_first >= count) return;  // whole warp
  LaneWords<kMaxLaneSegments> mixed{};
  bool any_mixed = false;
  const std::int64_t lane_first = warp_first + std::int64_t(lane) * lane_segments;
  // Only segments with triangles (the scan says which: most have none) look for their mixed cells.
#pragma unroll
  for (int p = 0; p < kMaxLaneSegments; ++p) {
    const std::int64_t at = lane_first + p;
    if (p < lane_segments && at < count) {
      const bool group_end = (at + 1) % kGroupSegments == 0 || at + 1 == scan.segments;
      const std::uint32_t next = group_end ? std::uint32_t(triangles_of(scan.group_counts[at / kGroupSegments]))
                                           : local_triangles(scan.local[at + 1]);
      if (next != local_triangles(scan.local[at])) {  // (then the row has cells: y < ny - 1)
        std::int64_t segment;
        const std::int64_t r = g.by_segments.quotient(at, segment);
        mixed.w[p] = mixed_cells(g, inside, r, segment);
        any_mixed |= mixed.w[p] != 0;
      }
    }
  }
  if (!__any_sync(0xffffffffu, any_mixed)) return;  // whole warp
  // The warp's segments are consecutive, so its triangles are too, from its first segment's.
  std::uint64_t t_next = triangles_of(scan.group_bases[warp_first / kGroupSegments]);  // a group's first segment
  deal_mixed_cells(g, warp_first, lane, lane_segments, mixed, [&](bool has, int, std::int64_t cell_segment,
                                                                  std::int64_t r, std::int64_t i) {
    std::uint32_t tris = 0;
    const mc::CaseEntry* e = nullptr;
    std::uint8_t cf[8];
    // The first vertex of corner 2q's point, per corner row q: the row segment's first plus the slots before the
    // point (corner 2q + 1's point follows). The mesh's indices are 32-bit: 32-bit arithmetic keeps the same low bits
    // with half the work.
    std::uint32_t first[4];
    std::int64_t j = 0, k = 0;
    const std::int64_t segment_start = i & ~std::int64_t(kSegmentPoints - 1);
    const std::int64_t segment = segment_start / kSegmentPoints;
    if (has) {
      k = g.z0 + g.by_rows.quotient(r, j);
      const int b = int(i - segment_start);
      const bool has_next = segment + 1 < g.segments, x_last = i + 2 >= g.nx;
      const bool y2 = j + 2 < g.ny, z2 = k + 2 < s.nz;
      const std::uint32_t row_segments = std::uint32_t(g.segments), plane_segments = std::uint32_t(g.ny * g.segments);
      const auto cell_at = std::uint32_t(cell_segment);
      std::uint32_t before[4];
      cell_corners<kLevelSamples>(inside, on_level, point_planes, centre_planes, cell_at, row_segments,
                                  plane_segments, b, has_next, x_last, y2, z2, cf, before);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const std::uint32_t row_at =
            cell_at + std::uint32_t(q & 1) * row_segments + std::uint32_t(q >> 1) * plane_segments;
        first[q] = std::uint32_t(slab_vertex_base) + vertices_of(segment_first(scan, row_at)) + before[q];
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
          first_copy[n] = n & 1 ? first[n / 2] + std::uint32_t(mc::slot_count(cf[n - 1])) : first[n / 2];
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

template <class T>
__global__ void __launch_bounds__(kSegmentThreads, 4) triangle_kernel(
    mc::SlabValues<T> s, RowGrid g, typename mc::RealOf<T>::type level, const std::uint32_t* __restrict__ inside,
    const std::uint32_t* __restrict__ on_level, const unsigned long long* __restrict__ level_samples,
    const std::uint32_t* __restrict__ point_planes, const std::uint32_t* __restrict__ centre_planes,
    mc::CaseLookup cases, bool keep_degenerate, bool flip, SegmentScan scan, std::uint64_t slab_vertex_base,
    const std::int32_t* __restrict__ labels, std::uint32_t* __restrict__ triangles,
    std::int32_t* __restrict__ face_labels, unsigned long long* __restrict__ tie_count,
    std::uint64_t* __restrict__ ties, const SlabTotals* __restrict__ totals, int lane_segments) {
  if (!totals->fits) return;
  if (*level_samples)
    write_triangles<T, true>(s, g, level, inside, on_level, point_planes, centre_planes, cases, keep_degenerate, flip,
                             scan, slab_vertex_base, labels, triangles, face_labels, tie_count, ties, lane_segments);
  else
    write_triangles<T, false>(s, g, level, inside, on_level, point_planes, centre_planes, cases, keep_degenerate, flip,
                              scan, slab_vertex_base, labels, triangles, face_labels, tie_count, ties, lane_segments);
}

// Pass 2b with the common body alone, for slabs expected to hold no sample on the level (the host's guess, from the
// slab before): compiled beside the on-level body, the common one spills registers, and alone it does not. A slab
// that does hold such a
// sample writes nothing here; the host sees it in the totals and runs triangle_kernel.
template <class T>
__global__ void __launch_bounds__(kSegmentThreads, 4) triangle_common_kernel(
    mc::SlabValues<T> s, RowGrid g, typename mc::RealOf<T>::type level, const std::uint32_t* __restrict__ inside,
    const std::uint32_t* __restrict__ on_level, const unsigned long long* __restrict__ level_samples,
    const std::uint32_t* __restrict__ point_planes, const std::uint32_t* __restrict__ centre_planes,
    mc::CaseLookup cases, bool keep_degenerate, bool flip, SegmentScan scan, std::uint64_t slab_vertex_base,
    const std::int32_t* __restrict__ labels, std::uint32_t* __restrict__ triangles,
    std::int32_t* __restrict__ face_labels, unsigned long long* __restrict__ tie_count,
    std::uint64_t* __restrict__ ties, const SlabTotals* __restrict__ totals, int lane_segments) {
  if (!totals->fits || *level_samples) return;
  write_triangles<T, false>(s, g, level, inside, on_level, point_planes, centre_planes, cases, keep_degenerate, flip,
                            scan, slab_vertex_base, labels, triangles, face_labels, tie_count, ties, lane_segments);
}

}  // namespace parasurf::iso::cuda
