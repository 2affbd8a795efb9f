// Isosurface CUDA engine, passes 2a and 2b: the vertices (listed, then computed), the marks of unused vertices on
// the level, and the triangles (see cuda_segments.cuh).
#pragma once
#include "isosurface/cuda_segments.cuh"

namespace parasurf::iso::cuda {
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
