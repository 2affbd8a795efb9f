// CUDA kernels of the isosurface engine, by segments of 32 points of a row. Pass 1a gives every sample two bits,
// inside and on the level, by warp ballots marching along z; pass 1b finds which vertex slots each segment's points
// own, counts its vertices and its cells' triangles from those bits, and lists the segments that own vertices (the
// later passes rebuild a point's flag byte from the bits instead of reading one stored a point). One scan, by groups
// of 32 segments, gives every segment its first vertex and first triangle, so the generation passes (2a vertices,
// over the listed segments; 2b triangles, over all) deal a warp's work out to its lanes: no pass walks a whole row.
// The per-point and per-cell math is mc_kernels.hpp, shared with the CPU engine.
// Pipeline as in Rogeiro 2011 (classify, scan, compact, generate), with Flying-Edges-style edge ownership so that no
// vertex merge pass is needed.
//
// This file: the segment grid, the packed counts and the warp helpers the passes share (cuda_classify.cuh,
// cuda_count.cuh, cuda_generate.cuh hold the passes).
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

}  // namespace parasurf::iso::cuda
