// Isosurface CUDA engine, passes 1b and 1c: each segment's vertex slots and its cells' triangle counts, the
// centre vertices the next slab owns, and the slab's totals after the scan (see cuda_segments.cuh).
#pragma once
#include "isosurface/cuda_segments.cuh"

namespace parasurf::iso::cuda {
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
    bool ties, std::int64_t k, std::uint32_t* __restrict__ next_centres) {
  std::int64_t at, j, segment;
  if (!segment_of_thread(g, (g.ny - 1) * g.segments, at, j, segment)) return;
  const std::int64_t begin = segment * kSegmentPoints, end = min(begin + kSegmentPoints, g.nx - 1);
  std::uint32_t centres = 0;
  for (std::int64_t i = begin; i < end; ++i)
    if (mc::cell_needs_center(cases, s, i, j, k, level, keep_degenerate, ties)) centres |= 1u << (i - begin);
  next_centres[at] = centres;
}

}  // namespace parasurf::iso::cuda
