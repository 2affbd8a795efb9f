// Marching-cubes math shared by the CPU loops and the CUDA kernels: point classification with edge ownership,
// cell cases, vertex keys, interpolated vertices and gradient normals.
// Lorensen & Cline 1987; edge ownership and per-row counting in the manner of Flying Edges (Schroeder et al. 2015).
//
// Every grid point owns the edges to its +x, +y and +z neighbours. A crossing edge gets a vertex slot at its
// owner, except where an end sample equals the level exactly: such a sample counts as inside, and every crossing
// edge that touches it shares one vertex at the sample itself (so ties never duplicate vertices or open holes).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#if !defined(__CUDA_ARCH__) && defined(__SSE__)
#include <immintrin.h>
#endif

#include "core/hd.hpp"
#include "isosurface/level_range.hpp"
#include "isosurface/mc_tables.hpp"

namespace parasurf::mc {

// Integer helpers of the hot loops: always inlined on the host too (no floating point, so no rounding changes).
#if defined(__CUDACC__)
#define PS_HD_INT PS_HD
#else
#define PS_HD_INT [[gnu::always_inline]] inline
#endif

enum : std::uint8_t {
  kSlotPoint = 1,  // the sample lies on the level and carries the vertex of its crossing edges
  kSlotX = 2,
  kSlotY = 4,
  kSlotZ = 8,
  kInside = 16,
  kOnLevel = 32,
  kSlotCenter = 64,  // MC33: the cell whose lowest corner is this point has a centre vertex (after the z slot)
  kSlotMask = 15 | kSlotCenter,
};

template <class T>
struct RealOf {
  using type = float;
};
template <>
struct RealOf<double> {
  using type = double;
};

template <class R>
PS_HD R largest_finite();
template <>
PS_HD float largest_finite<float>() {
  return 3.402823466e+38f;
}
template <>
PS_HD double largest_finite<double>() {
  return 1.7976931348623157e+308;
}

// The tie rule: a sample equal to the level is inside; NaN and ±Inf are never inside.
template <class R>
PS_HD bool is_inside(R v, R level) {
  return v >= level && v <= largest_finite<R>();
}
template <class R>
PS_HD bool is_finite(R v) {
  return v >= -largest_finite<R>() && v <= largest_finite<R>();
}

PS_HD_INT int popcount8(unsigned v) {
#if defined(__CUDA_ARCH__)
  return __popc(v & 0xFFu);
#elif defined(__GNUC__)
  return __builtin_popcount(v & 0xFFu);
#else
  v = v - ((v >> 1) & 0x55u);
  v = (v & 0x33u) + ((v >> 2) & 0x33u);
  return int((v + (v >> 4)) & 0x0Fu);
#endif
}

// Samples of the slices [z_begin, ...) of a volume nx · ny · nz.
template <class T>
struct SlabValues {
  const T* data;
  std::int64_t nx, ny, nz;
  std::int64_t z_begin;
  PS_HD T at(std::int64_t i, std::int64_t j, std::int64_t k) const {
    return data[((k - z_begin) * ny + j) * nx + i];
  }
};

template <class T, class R>
PS_HD std::uint8_t point_flags(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k, R level) {
  const R v = R(s.at(i, j, k));
  const bool in = is_inside(v, level);
  if (v != level) {
    std::uint8_t f = in ? kInside : 0;
    // A crossing whose far end lies on the level uses that sample's vertex instead.
    if (i + 1 < s.nx) {
      const R w = R(s.at(i + 1, j, k));
      if (in != is_inside(w, level) && w != level) f |= kSlotX;
    }
    if (j + 1 < s.ny) {
      const R w = R(s.at(i, j + 1, k));
      if (in != is_inside(w, level) && w != level) f |= kSlotY;
    }
    if (k + 1 < s.nz) {
      const R w = R(s.at(i, j, k + 1));
      if (in != is_inside(w, level) && w != level) f |= kSlotZ;
    }
    return f;
  }
  bool outside_neighbour = false;
  if (i > 0) outside_neighbour |= !is_inside(R(s.at(i - 1, j, k)), level);
  if (i + 1 < s.nx) outside_neighbour |= !is_inside(R(s.at(i + 1, j, k)), level);
  if (j > 0) outside_neighbour |= !is_inside(R(s.at(i, j - 1, k)), level);
  if (j + 1 < s.ny) outside_neighbour |= !is_inside(R(s.at(i, j + 1, k)), level);
  if (k > 0) outside_neighbour |= !is_inside(R(s.at(i, j, k - 1)), level);
  if (k + 1 < s.nz) outside_neighbour |= !is_inside(R(s.at(i, j, k + 1)), level);
  return std::uint8_t(kInside | kOnLevel | (outside_neighbour ? kSlotPoint : 0));
}

PS_HD_INT int slot_count(std::uint8_t flags) { return popcount8(flags & kSlotMask); }

// Corner c of a cell is at (c & 1, c >> 1 & 1, c >> 2 & 1). Edge e runs along axis e >> 2 from corner
// edge_lower_corner(e); its position bits e & 3 are the other two coordinates in increasing axis order.
// The twelve lower corners as nibbles of one constant: a shift and a mask where the formula (axis 0: p << 1; axis 1:
// (p & 1) | (p >> 1) << 2; axis 2: p) took ten instructions of the CUDA triangle pass's edge lookups.
inline constexpr std::uint64_t kEdgeLowerCorners = 0x321054106420ull;
PS_HD_INT int edge_lower_corner(int e) { return int(kEdgeLowerCorners >> (4 * e) & 7u); }
PS_HD_INT int edge_axis(int e) { return e >> 2; }

// Face f = 2 · axis + side; its corners in the order (0,0), (1,0), (1,1), (0,1) of axes (axis+1)%3, (axis+2)%3.
PS_HD int face_corner_of(int face, int n) {
  const int axis = face >> 1, side = face & 1;
  const int u = (axis + 1) % 3, v = (axis + 2) % 3;
  const int cu = (n == 1 || n == 2) ? 1 : 0, cv = n >= 2 ? 1 : 0;
  return side << axis | cu << u | cv << v;
}

PS_HD_INT int cell_case(const std::uint8_t* corner_flags) {
  int c = 0;
  for (int n = 0; n < 8; ++n) c |= (corner_flags[n] & kInside) ? 1 << n : 0;
  return c;
}

// Asymptotic decider: joins the inside corners of an ambiguous face when the bilinear saddle is inside.
// Reads the face in a fixed order, so both cells sharing the face decide alike.
template <class R>
PS_HD int face_join_mask(int ambiguous, const R* relative) {
  int mask = 0;
  for (int face = 0; face < 6; ++face) {
    if (!(ambiguous >> face & 1)) continue;
    const R a = relative[face_corner_of(face, 0)], b = relative[face_corner_of(face, 1)];
    const R c = relative[face_corner_of(face, 2)], d = relative[face_corner_of(face, 3)];
    if (!(is_finite(a) && is_finite(b) && is_finite(c) && is_finite(d))) continue;
    const R saddle = (a * c - b * d) / (a + c - b - d);
    if (saddle >= R(0)) mask |= 1 << face;
  }
  return mask;
}

// MC33 interior test: which vertical edges of the cell the trilinear interpolant connects through the interior.
// Each horizontal cross-section at height t is bilinear with corner values linear in t; two diagonal vertical edges
// connect where both are inside, the other two outside, and the section's saddle is inside:
// g(t) = p(t)·q(t) − r(t)·s(t) ≥ 0 (the face rule of the decider, so t = 0 and t = 1 agree with the faces).
// Bits: inside (0,0)-(1,1), inside (1,0)-(0,1), outside (0,0)-(1,1), outside (1,0)-(0,1); vertical edge x | y << 1
// runs from corner x | y << 1 up to corner 4 + (x | y << 1). Only asked for cells whose surface can hold a tunnel.
template <class R>
PS_HD int interior_connections(const R* relative) {
  for (int c = 0; c < 8; ++c)
    if (!is_finite(relative[c])) return 0;
  int bits = 0;
  for (int diagonal = 0; diagonal < 2; ++diagonal) {
    const int p = diagonal == 0 ? 0 : 1, q = diagonal == 0 ? 3 : 2, r = diagonal == 0 ? 1 : 0, s = diagonal == 0 ? 2 : 3;
    for (int side = 0; side < 2; ++side) {
      // side 0: p, q inside and r, s outside (joined when g >= 0); side 1: the reverse (p, q joined when g > 0).
      R lo = R(0), hi = R(1);
      const int edges[4] = {p, q, r, s};
      for (int n = 0; n < 4; ++n) {
        const R v0 = relative[edges[n]], v1 = relative[edges[n] + 4];
        const bool want_inside = (n < 2) == (side == 0);
        const bool in0 = v0 >= R(0), in1 = v1 >= R(0);
        if (in0 == want_inside && in1 == want_inside) continue;
        if (in0 != want_inside && in1 != want_inside) {
          lo = R(1), hi = R(0);
          break;
        }
        const R cross = v0 / (v0 - v1);  // where the edge meets the level
        if (in0 == want_inside) hi = cross < hi ? cross : hi;
        else lo = cross > lo ? cross : lo;
      }
      if (lo > hi) continue;
      auto at = [&](int corner, R t) { return (R(1) - t) * relative[corner] + t * relative[corner + 4]; };
      auto g = [&](R t) { return at(p, t) * at(q, t) - at(r, t) * at(s, t); };
      // g is quadratic in t: its largest value on [lo, hi] lies at an end or at the vertex.
      const R dp = relative[p + 4] - relative[p], dq = relative[q + 4] - relative[q];
      const R dr = relative[r + 4] - relative[r], ds = relative[s + 4] - relative[s];
      const R curvature = dp * dq - dr * ds;
      R best = g(lo) > g(hi) ? g(lo) : g(hi);
      if (curvature < R(0)) {
        const R slope0 = relative[p] * dq + relative[q] * dp - relative[r] * ds - relative[s] * dr;
        const R vertex = -slope0 / (R(2) * curvature);
        if (vertex > lo && vertex < hi) {
          const R gv = g(vertex);
          best = gv > best ? gv : best;
        }
      }
      if (side == 0 ? best >= R(0) : best > R(0)) bits |= 1 << (side * 2 + diagonal);
    }
  }
  return bits;
}

// Where a cell's triangles come from: the tables, and which ambiguity rules apply.
struct CaseLookup {
  const CaseEntry* entries = nullptr;          // [entry_index(case, face mask)]
  const std::uint8_t* case_flags = nullptr;    // per case: ambiguous faces (bits 0–5), can tunnel (bit 6); null: classic
  const std::uint16_t* tunnel_block = nullptr;  // MC33 only: TunnelTables::block and ::entries
  const CaseEntry* tunnel_entries = nullptr;
};

// The entry of a cell whose case has ambiguous faces or can tunnel: reads its samples. Out of line in CPU loops,
// so that the common path stays small there.
template <class T>
PS_HD_HOST_NOINLINE const CaseEntry& decided_entry(const CaseLookup& t, const SlabValues<T>& s, int cas, int flags,
                                              typename RealOf<T>::type level, std::int64_t i, std::int64_t j,
                                              std::int64_t k) {
  using R = typename RealOf<T>::type;
  R rel[8];
  for (int c = 0; c < 8; ++c) rel[c] = R(s.at(i + (c & 1), j + (c >> 1 & 1), k + (c >> 2 & 1))) - level;
  const int mask = face_join_mask(flags & 63, rel);
  if (flags & 64) {
    const std::uint16_t block = t.tunnel_block[cas * kFaceMasks + mask];
    if (block != kNoTunnel) return t.tunnel_entries[int(block) * kInteriorSets + interior_connections(rel)];
  }
  return t.entries[entry_index(cas, mask)];
}

// The table entry of a cell: classic, decided faces, or (MC33) decided faces and interior tunnels.
template <class T>
PS_HD const CaseEntry& case_entry(const CaseLookup& t, const SlabValues<T>& s, int cas,
                                  typename RealOf<T>::type level, std::int64_t i, std::int64_t j, std::int64_t k) {
  if (!t.case_flags) return t.entries[entry_index(cas, 0)];
#if defined(__CUDA_ARCH__)
  const int flags = __ldg(t.case_flags + cas);
#else
  const int flags = t.case_flags[cas];
#endif
  if (!flags) return t.entries[entry_index(cas, 0)];
  return decided_entry(t, s, cas, flags, level, i, j, k);
}

// Which vertex a cell edge uses: 16 + corner when an end lies on the level, else the edge itself.
PS_HD_INT int edge_key(int e, const std::uint8_t* corner_flags) {
  if (e == kCenterKey) return e;
  const int c0 = edge_lower_corner(e), c1 = c0 | 1 << edge_axis(e);
  if (corner_flags[c0] & kOnLevel) return 16 + c0;
  if (corner_flags[c1] & kOnLevel) return 16 + c1;
  return e;
}

// The vertex id of a key, given the first slot id of each corner's point.
PS_HD_INT std::uint64_t key_vertex(int key, const std::uint8_t* corner_flags, const std::uint64_t* corner_first) {
  if (key >= 16) return corner_first[key - 16];
  if (key == kCenterKey) return corner_first[0] + std::uint64_t(popcount8(corner_flags[0] & 15u));
  const int c0 = edge_lower_corner(key);
  const unsigned below = (2u << edge_axis(key)) - 1u;  // the point slot and lower axes come first
  return corner_first[c0] + std::uint64_t(popcount8(corner_flags[c0] & below));
}

// key_vertex from a table instead of the arithmetic and branches, for the CPU's cell loops: per key, the corner in
// bits 0-2 and, in bits 3-7, the slots before its vertex there (the same values as key_vertex's; a test compares them
// for every key). Edges and the centre count the lower corner's earlier slots; an on-level corner (keys 16-23) is its
// point's first slot. Keys 13-15 are unused.
constexpr std::uint8_t kEdgeKeySlot[24] = {0 | 1 << 3, 2 | 1 << 3, 4 | 1 << 3, 6 | 1 << 3, 0 | 3 << 3, 1 | 3 << 3,
                                           4 | 3 << 3, 5 | 3 << 3, 0 | 7 << 3, 1 | 7 << 3, 2 | 7 << 3, 3 | 7 << 3,
                                           0 | 15 << 3, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7};
[[gnu::always_inline]] inline std::uint64_t edge_key_vertex(int key, const std::uint8_t* corner_flags,
                                                            const std::uint64_t* corner_first) {
  const int c = kEdgeKeySlot[key] & 7;
  return corner_first[c] + std::uint64_t(popcount8(corner_flags[c] & unsigned(kEdgeKeySlot[key] >> 3)));
}

// The cell faces a vertex key lies on, one bit per face 2 · axis + side: an edge lies on two faces, a corner
// sample on three, the centre on none. A triangle can also be made by a neighbouring cell (a coincident tie) only
// when it lies in a face, that is when its three keys share one.
PS_HD_INT int key_faces(int key) {
  if (key == kCenterKey) return 0;
  const bool corner = key >= 16;
  const int c = corner ? key - 16 : edge_lower_corner(key), along = corner ? -1 : edge_axis(key);
  int faces = 0;
  for (int a = 0; a < 3; ++a)
    if (a != along) faces |= 1 << (2 * a + (c >> a & 1));
  return faces;
}

// edge_key as a table for the CPU's cells with corners on the level: kLevelEdgeKey[m][key] for on-level corner mask
// m (bit c: corner c) and keys 0-12 (a test compares it with edge_key for every mask and key).
struct LevelEdgeKeys {
  std::uint8_t key[256][16];
};
constexpr LevelEdgeKeys make_level_edge_keys() {
  LevelEdgeKeys t{};
  for (int m = 0; m < 256; ++m)
    for (int e = 0; e < 16; ++e) {
      if (e >= kCenterKey) {
        t.key[m][e] = std::uint8_t(e);
        continue;
      }
      // edge_axis and edge_lower_corner, which are not constexpr, from the same constant
      const int axis = e >> 2, c0 = int(kEdgeLowerCorners >> (4 * e) & 7u), c1 = c0 | 1 << axis;
      t.key[m][e] = std::uint8_t(m >> c0 & 1 ? 16 + c0 : m >> c1 & 1 ? 16 + c1 : e);
    }
  return t;
}
inline constexpr LevelEdgeKeys kLevelEdgeKey = make_level_edge_keys();

PS_HD_INT bool touches_level(const std::uint8_t* cf) {
  return ((cf[0] | cf[1] | cf[2] | cf[3] | cf[4] | cf[5] | cf[6] | cf[7]) & kOnLevel) != 0;
}

// Visits the triangles of a cell that survive, as vertex keys (a, b, c) plus whether one is an on-level sample.
// A triangle collapses when two of its edges share an on-level sample; it is dropped unless kept.
template <class Visit>
PS_HD void cell_triangles(const CaseEntry& e, const std::uint8_t* cf, bool keep_degenerate, Visit&& visit) {
  if (!touches_level(cf)) {
    for (int n = 0; n < e.count; ++n) visit(int(e.edges[3 * n]), int(e.edges[3 * n + 1]), int(e.edges[3 * n + 2]), false);
    return;
  }
  for (int n = 0; n < e.count; ++n) {
    const int a = edge_key(e.edges[3 * n], cf), b = edge_key(e.edges[3 * n + 1], cf),
              c = edge_key(e.edges[3 * n + 2], cf);
    if (!keep_degenerate && (a == b || b == c || a == c)) continue;
    visit(a, b, c, a >= 16 || b >= 16 || c >= 16);
  }
}

PS_HD int surviving_triangles(const CaseEntry& e, const std::uint8_t* cf, bool keep_degenerate) {
  if (!touches_level(cf)) return e.count;
  int n = 0;
  cell_triangles(e, cf, keep_degenerate, [&](int, int, int, bool) { ++n; });
  return n;
}

// Whether a surviving triangle of the cell uses its centre vertex (MC33 tunnels).
PS_HD bool uses_center(const CaseEntry& e, const std::uint8_t* cf, bool keep_degenerate) {
  if (!e.center) return false;
  bool used = false;
  cell_triangles(e, cf, keep_degenerate, [&](int a, int b, int c, bool) {
    used = used || a == kCenterKey || b == kCenterKey || c == kCenterKey;
  });
  return used;
}

// The inside and on-level bits of cell (i, j, k)'s corners, from its samples alone (no slot bits); with `ties`
// false no sample lies on the level (SlabTask::ties).
template <class T>
PS_HD void sample_corner_flags(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k,
                               typename RealOf<T>::type level, std::uint8_t* cf, bool ties = true) {
  using R = typename RealOf<T>::type;
  for (int c = 0; c < 8; ++c) {
    const R v = R(s.at(i + (c & 1), j + (c >> 1 & 1), k + (c >> 2 & 1)));
    cf[c] = ties && v == level ? std::uint8_t(kInside | kOnLevel)
            : is_inside(v, level) ? std::uint8_t(kInside)
                                  : std::uint8_t(0);
  }
}

// Whether cell (i, j, k) gets an MC33 centre vertex, from its samples alone: for the cells just past a slab, whose
// centres the slab's numbering must count although the next slab makes them.
template <class T>
PS_HD bool cell_needs_center(const CaseLookup& t, const SlabValues<T>& s, std::int64_t i, std::int64_t j,
                             std::int64_t k, typename RealOf<T>::type level, bool keep_degenerate, bool ties = true) {
  std::uint8_t cf[8];
  sample_corner_flags(s, i, j, k, level, cf, ties);
  const int cas = cell_case(cf);
  if (cas == 0 || cas == 255) return false;
  const CaseEntry& e = case_entry(t, s, cas, level, i, j, k);
  return e.center && uses_center(e, cf, keep_degenerate);
}

// The label of a cell in a label volume: the most frequent label among its inside corners (the smaller label on a
// tie), or corner 0's when no corner is inside.
PS_HD std::int32_t cell_label(const std::uint8_t* cf, const std::int32_t* corner_labels) {
  std::int32_t best = corner_labels[0];
  int best_count = 0;
  for (int c = 0; c < 8; ++c) {
    if (!(cf[c] & kInside)) continue;
    int n = 0;
    for (int d = 0; d < 8; ++d) n += ((cf[d] & kInside) && corner_labels[d] == corner_labels[c]) ? 1 : 0;
    if (n > best_count || (n == best_count && corner_labels[c] < best)) {
      best = corner_labels[c];
      best_count = n;
    }
  }
  return best;
}

// The label of cell (i, j, k) read from a label slab laid out like the samples (slices from z_begin).
PS_HD std::int32_t cell_label_at(const std::int32_t* labels, std::int64_t nx, std::int64_t ny, std::int64_t z_begin,
                                 std::int64_t i, std::int64_t j, std::int64_t k, const std::uint8_t* cf) {
  std::int32_t corner_labels[8];
  for (int c = 0; c < 8; ++c)
    corner_labels[c] = labels[((k + (c >> 2) - z_begin) * ny + j + (c >> 1 & 1)) * nx + i + (c & 1)];
  return cell_label(cf, corner_labels);
}

// Index-space to world map and the matching normal map (inverse transpose, signed for the orientation).
struct WorldMap {
  float jacobian[9];
  float origin[3];
  float normal_matrix[9];
};

template <class T, class R>
PS_HD void gradient(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k, R* g) {
  const std::int64_t p[3] = {i, j, k}, n[3] = {s.nx, s.ny, s.nz};
  const R v = R(s.at(i, j, k));
  if (!is_finite(v)) {  // no gradient at a missing sample: the other end of the edge supplies the normal
    g[0] = g[1] = g[2] = R(0);
    return;
  }
  for (int a = 0; a < 3; ++a) {
    std::int64_t lo[3] = {i, j, k}, hi[3] = {i, j, k};
    if (p[a] > 0) --lo[a];
    if (p[a] + 1 < n[a]) ++hi[a];
    R va = R(s.at(lo[0], lo[1], lo[2])), vb = R(s.at(hi[0], hi[1], hi[2]));
    if (!is_finite(va)) va = v;
    if (!is_finite(vb)) vb = v;
    const std::int64_t span = hi[a] - lo[a];
    g[a] = span > 0 ? (vb - va) / R(span) : R(0);
  }
}

// The same gradient at a point whose six neighbours all exist (p: its sample; sy, sz: the row and slice strides),
// without the index arithmetic and border tests of the general case. Identical results.
template <class T, class R>
PS_HD void gradient_inner(const T* p, std::int64_t sy, std::int64_t sz, R* g) {
  const std::int64_t stride[3] = {1, sy, sz};
  if constexpr (std::is_integral_v<T>) {  // integer samples are always finite
    for (int a = 0; a < 3; ++a) g[a] = (R(p[stride[a]]) - R(p[-stride[a]])) / R(2);
    return;
  }
  // All seven loads before any test: a branch on the first value kept the GPU from issuing the other six until it
  // arrived (the CUDA vertex pass waited on that value for 45 % of its stalls).
  const R v = R(p[0]);
  R lo[3], hi[3];
  for (int a = 0; a < 3; ++a) lo[a] = R(p[-stride[a]]), hi[a] = R(p[stride[a]]);
  const bool finite = is_finite(v);
  for (int a = 0; a < 3; ++a) {
    const R va = is_finite(lo[a]) ? lo[a] : v, vb = is_finite(hi[a]) ? hi[a] : v;
    g[a] = finite ? (vb - va) / R(2) : R(0);
  }
}

// a · b + c rounded once. The vertex sums are written as fused operations in a fixed order, so that every path that
// makes a vertex (the CUDA kernels, the CPU's point by point and eight at a time: cpu_vertices.hpp) rounds alike,
// whichever products a compiler would have fused.
PS_HD_HOST_INLINE float fused(float a, float b, float c) { return fmaf(a, b, c); }
PS_HD_HOST_INLINE double fused(double a, double b, double c) { return fma(a, b, c); }

// nrm may be null: no normal is wanted.
PS_HD_HOST_INLINE void store_vertex(const WorldMap& m, const float* idx, const float* g, float* pos, float* nrm) {
  for (int r = 0; r < 3; ++r)
    pos[r] = fused(m.jacobian[r * 3 + 2], idx[2],
                   fused(m.jacobian[r * 3 + 1], idx[1], fused(m.jacobian[r * 3], idx[0], m.origin[r])));
  if (!nrm) return;
  float n[3];
  for (int r = 0; r < 3; ++r)
    n[r] = fused(m.normal_matrix[r * 3 + 2], g[2], fused(m.normal_matrix[r * 3 + 1], g[1], m.normal_matrix[r * 3] * g[0]));
  const float len2 = fused(n[2], n[2], fused(n[1], n[1], n[0] * n[0]));
#if defined(__CUDA_ARCH__) || !defined(__SSE__)
  const float inv = len2 > 0 ? 1.0f / std::sqrt(len2) : 0.0f;
#else  // the estimate and one Newton step (relative error about 1e-7): sqrt then divide held the vertex loop's retirement
  // (subnormal and infinite lengths, which the estimate maps to infinity and zero, take the exact form)
  const float e = _mm_cvtss_f32(_mm_rsqrt_ss(_mm_set_ss(len2)));
  const float inv = (len2 >= std::numeric_limits<float>::min() && len2 <= std::numeric_limits<float>::max())
                        ? e * fused(-(0.5f * len2 * e), e, 1.5f)
                        : len2 > 0 ? 1.0f / std::sqrt(len2) : 0.0f;
#endif
  for (int r = 0; r < 3; ++r) nrm[r] = n[r] * inv;
}

// The centre vertex of cell (i, j, k), where an MC33 tunnel needs one: the mean of the cell's edge crossings, their
// gradients and their scalars (as Lewiner et al. place it). Rare, so written for clarity over speed.
template <class T, class R>
PS_HD_HOST_NOINLINE void center_vertex(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k, R level,
                         const WorldMap& m, float* pos, float* nrm, const SlabValues<float>* scalars, float* value) {
  float idx[3] = {0, 0, 0}, g[3] = {0, 0, 0}, sum = 0;
  int n = 0;
  for (int e = 0; e < 12; ++e) {
    const int c0 = edge_lower_corner(e), axis = edge_axis(e);
    const std::int64_t p0[3] = {i + (c0 & 1), j + (c0 >> 1 & 1), k + (c0 >> 2 & 1)};
    std::int64_t p1[3] = {p0[0], p0[1], p0[2]};
    ++p1[axis];
    const R a = R(s.at(p0[0], p0[1], p0[2])), b = R(s.at(p1[0], p1[1], p1[2]));
    if (is_inside(a, level) == is_inside(b, level)) continue;
    const R t = (is_finite(a) && is_finite(b)) ? (level - a) / (b - a) : R(0.5);
    R g0[3] = {}, g1[3] = {};
    if (nrm) {
      gradient(s, p0[0], p0[1], p0[2], g0);
      gradient(s, p1[0], p1[1], p1[2], g1);
    }
    for (int r = 0; r < 3; ++r) {
      idx[r] += float(p0[r]) + (r == axis ? float(t) : 0.0f);
      g[r] += float(g0[r] + t * (g1[r] - g0[r]));
    }
    if (scalars) {
      const float v0 = scalars->at(p0[0], p0[1], p0[2]);
      sum += v0 + float(t) * (scalars->at(p1[0], p1[1], p1[2]) - v0);
    }
    ++n;
  }
  const float inv = n > 0 ? 1.0f / float(n) : 0.0f;
  for (int r = 0; r < 3; ++r) idx[r] = n > 0 ? idx[r] * inv : float(r == 0 ? i : r == 1 ? j : k) + 0.5f;
  store_vertex(m, idx, g, pos, nrm);
  if (value) *value = sum * inv;
}

// The vertex where the edge from point (i, j, k) along `axis` crosses the level, from the point's sample `a`, its
// gradient g0 (when `nrm` is given) and its scalar s0; `inner` and `p` as point_vertices finds them. One body for
// every axis: a GPU warp whose lanes hold crossings along different axes runs it once, not once per axis.
template <class T, class R>
PS_HD_HOST_INLINE void crossing_vertex(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k,
                                       int axis, R a, const R* g0, bool inner, const T* p, R level, const WorldMap& m,
                                       float* pos, float* nrm, const SlabValues<float>* scalars, float s0,
                                       float* value) {
  const std::int64_t i1 = i + (axis == 0), j1 = j + (axis == 1), k1 = k + (axis == 2);
  const R b = R(s.at(i1, j1, k1));
  const R t = (is_finite(a) && is_finite(b)) ? (level - a) / (b - a) : R(0.5);
  R g1[3] = {};
  if (nrm) {
    if (inner) gradient_inner<T, R>(p + (axis == 0 ? 1 : axis == 1 ? s.nx : s.nx * s.ny), s.nx, s.nx * s.ny, g1);
    else gradient(s, i1, j1, k1, g1);
  }
  float idx[3] = {float(i), float(j), float(k)}, g[3];
  for (int r = 0; r < 3; ++r) {
    idx[r] += r == axis ? float(t) : 0.0f;  // selects: an index known at run time would put idx in memory
    g[r] = float(fused(t, g1[r] - g0[r], g0[r]));
  }
  store_vertex(m, idx, g, pos, nrm);
  if (scalars) *value = s0 + float(t) * (scalars->at(i1, j1, k1) - s0);
}

// Whether point (i, j, k) and its +x, +y, +z neighbours have all six neighbours (the gradients may use direct strides).
template <class T>
PS_HD bool inner_point(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k) {
  return i >= 1 && i + 2 < s.nx && j >= 1 && j + 2 < s.ny && k >= 1 && k + 2 < s.nz;
}

// Point (i, j, k)'s gradient (zero unless `wanted`), and whether it is an inner point (then p is its sample): what
// the vertices of its slots start from.
template <class T, class R>
struct PointGradient {
  bool inner;
  const T* p;
  R g[3];
};
template <class T, class R>
PS_HD_HOST_INLINE PointGradient<T, R> point_gradient(const SlabValues<T>& s, std::int64_t i, std::int64_t j,
                                                     std::int64_t k, bool wanted) {
  PointGradient<T, R> out{inner_point(s, i, j, k), nullptr, {}};
  if (out.inner) out.p = &s.data[((k - s.z_begin) * s.ny + j) * s.nx + i];
  if (wanted) {
    if (out.inner) gradient_inner<T, R>(out.p, s.nx, s.nx * s.ny, out.g);
    else gradient(s, i, j, k, out.g);
  }
  return out;
}

// Writes the vertices of point (i, j, k) in slot order: its own sample, the x, y, z edge crossings, the centre of
// the cell it is the lowest corner of (MC33); their normals unless `nrm` is null (no gradient is then computed); and,
// when `scalars` (a second volume on the same slab layout) is given, its values interpolated alike into `values`.
// (A null `nrm`, not a scratch array: nvcc 13.0 at -O3 dropped every normal store of the integer-type kernels when
// the CUDA kernel passed `normals ? normals + 3 * v : scratch`, which left the normals of uint8 volumes unwritten.)
template <class T, class R>
PS_HD_HOST_INLINE void point_vertices(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k, std::uint8_t flags,
                          R level, const WorldMap& m, float* pos, float* nrm, const SlabValues<float>* scalars = nullptr,
                          float* values = nullptr) {
  const PointGradient<T, R> at = point_gradient<T, R>(s, i, j, k, nrm != nullptr);
  const bool inner = at.inner;
  const T* p = at.p;
  const R* g0 = at.g;
  int slot = 0;
  const float s0 = scalars ? scalars->at(i, j, k) : 0.0f;
  if (flags & kSlotPoint) {
    const float idx[3] = {float(i), float(j), float(k)}, g[3] = {float(g0[0]), float(g0[1]), float(g0[2])};
    store_vertex(m, idx, g, pos, nrm);
    if (scalars) values[0] = s0;
    ++slot;
  }
  const R a = R(s.at(i, j, k));
  for (int axis = 0; axis < 3; ++axis) {
    if (!(flags & (kSlotX << axis))) continue;
    crossing_vertex(s, i, j, k, axis, a, g0, inner, p, level, m, pos + 3 * slot, nrm ? nrm + 3 * slot : nullptr,
                    scalars, s0, scalars ? values + slot : nullptr);
    ++slot;
  }
  if (flags & kSlotCenter) center_vertex(s, i, j, k, level, m, pos + 3 * slot, nrm ? nrm + 3 * slot : nullptr, scalars,
                                         scalars ? values + slot : nullptr);
}

// The one vertex of point (i, j, k) in slot `slot_bit` (a bit of its flags): what point_vertices writes for that
// slot alone, with the x, y and z crossings on one path.
template <class T, class R>
PS_HD_HOST_INLINE void slot_vertex(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k, int slot_bit,
                                   R level, const WorldMap& m, float* pos, float* nrm,
                                   const SlabValues<float>* scalars, float* value) {
  static_assert(kSlotX == 2 && kSlotY == 4 && kSlotZ == 8, "the crossings' slots are bits 1, 2 and 3");
  const int axis = slot_bit - 1;
  if (axis < 0 || axis > 2) {  // a sample on the level or a centre: rare
    point_vertices<T, R>(s, i, j, k, std::uint8_t(1u << slot_bit), level, m, pos, nrm, scalars, value);
    return;
  }
  const PointGradient<T, R> at = point_gradient<T, R>(s, i, j, k, nrm != nullptr);
  const bool inner = at.inner;
  const T* p = at.p;
  const R* g0 = at.g;
  crossing_vertex(s, i, j, k, axis, R(s.at(i, j, k)), g0, inner, p, level, m, pos, nrm, scalars,
                  scalars ? scalars->at(i, j, k) : 0.0f, value);
}

// scikit-image's value of a vertex: the largest LevelRange (level_range.hpp) among the cells that have a triangle at
// the vertex; NaN when one of them has a NaN corner. Every cell around a crossing edge has a triangle there, so
// these are the cells around the vertex's edge (four, fewer at the border); for a vertex on a sample equal to the
// level, the cells around that sample; for an MC33 centre vertex, its cell.
template <class T>
PS_HD float cells_range(const SlabValues<T>& s, const std::int64_t* lowest, const std::int64_t* highest, float level) {
  const std::int64_t n[3] = {s.nx, s.ny, s.nz};
  std::int64_t a[3], b[3];
  for (int d = 0; d < 3; ++d) a[d] = lowest[d] < 0 ? 0 : lowest[d], b[d] = highest[d] > n[d] - 2 ? n[d] - 2 : highest[d];
  float best = 0;
  bool nan = false;
  for (std::int64_t k = a[2]; k <= b[2]; ++k)
    for (std::int64_t j = a[1]; j <= b[1]; ++j)
      for (std::int64_t i = a[0]; i <= b[0]; ++i) {
        iso::LevelRange r;
        for (int c = 0; c < 8; ++c) r.add(float(s.at(i + (c & 1), j + (c >> 1 & 1), k + (c >> 2 & 1))) - level);
        best = r.hi - r.lo > best ? r.hi - r.lo : best;
        nan = nan || r.nan;
      }
  return nan ? NAN : best;
}

// The same for an edge whose four cells all lie in the grid, from the samples at `at` and `at + along` and their
// neighbours across it (strides `b`, `c`): the nine columns of two samples that its cells share.
template <class T>
PS_HD_HOST_INLINE float inner_edge_range(const T* at, std::int64_t along, std::int64_t b, std::int64_t c, float level) {
#if !defined(__CUDA_ARCH__) && defined(__SSE__)
  // The scalar form below, four lanes at a time (_mm_min_ps(x, y) is x < y ? x : y, the scalar form's select, so
  // NaN samples drop out alike): the same bits, in fewer instructions on every vertex. The cells pair neighbouring
  // lanes and neighbouring rows alike, so the lanes may run across either axis: along the unit stride where it
  // crosses the edge, which loads three samples at once, else across c.
  {
    const __m128 lev = _mm_set1_ps(level);
    __m128 v0[3], v1[3];  // three rows of three lanes (and a fourth that no cell reads): the columns' two samples
    bool loaded = false;
#if defined(__AVX__)
    if constexpr (std::is_same_v<T, float>) {
      if (b == 1) {  // a y or z edge: lanes along x (the fourth lane masked: it may lie past the array's end)
        const __m128i three = _mm_setr_epi32(-1, -1, -1, 0);
        PS_UNROLL for (int dc = 0; dc < 3; ++dc) {
          const float* q = at - 1 + (dc - 1) * c;
          v0[dc] = _mm_maskload_ps(q, three);
          v1[dc] = _mm_maskload_ps(q + along, three);
        }
        loaded = true;
      } else if (along == 1) {  // an x edge: each column's two samples side by side, three columns to a row
        PS_UNROLL for (int db = 0; db < 3; ++db) {
          const float* q = at + (db - 1) * b;
          const auto pair = [](const float* x) {  // (an unaligned 64-bit load: x is 4-byte aligned)
            return _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i_u*>(x)));
          };
          const __m128 u = _mm_unpacklo_ps(pair(q - c), pair(q)), w = _mm_unpacklo_ps(pair(q + c), pair(q + c));
          v0[db] = _mm_movelh_ps(u, w);
          v1[db] = _mm_movehl_ps(w, u);
        }
        loaded = true;
      }
    }
#endif
    if (!loaded)
      PS_UNROLL for (int db = 0; db < 3; ++db) {
        const T* q = at + (db - 1) * b;
        v0[db] = _mm_setr_ps(float(q[-c]), float(q[0]), float(q[c]), float(q[c]));
        v1[db] = _mm_setr_ps(float(q[along - c]), float(q[along]), float(q[along + c]), float(q[along + c]));
      }
    __m128 lo[3], hi[3], finite = _mm_setzero_ps();
    PS_UNROLL for (int r = 0; r < 3; ++r) {
      lo[r] = _mm_min_ps(v1[r], _mm_min_ps(v0[r], lev));
      hi[r] = _mm_max_ps(v1[r], _mm_max_ps(v0[r], lev));
      finite = _mm_add_ps(finite, _mm_add_ps(_mm_sub_ps(v0[r], v0[r]), _mm_sub_ps(v1[r], v1[r])));
    }
    if (_mm_movemask_ps(_mm_cmpneq_ps(finite, _mm_setzero_ps())) != 0)  // a NaN or an infinity: which one
      PS_UNROLL for (int db = 0; db < 3; ++db)
        for (int dc = 0; dc < 3; ++dc) {
          const T* q = at + (db - 1) * b + (dc - 1) * c;
          const float v0 = float(q[0]), v1 = float(q[along]);
          if (v0 != v0 || v1 != v1) return NAN;
        }
    __m128 best = _mm_setzero_ps();
    PS_UNROLL for (int db = 0; db < 2; ++db) {
      const __m128 l = _mm_min_ps(lo[db + 1], lo[db]), h = _mm_max_ps(hi[db + 1], hi[db]);
      // lanes 0, 1: the columns dc and dc + 1
      const __m128 cl = _mm_sub_ps(_mm_min_ps(_mm_shuffle_ps(l, l, _MM_SHUFFLE(3, 3, 2, 1)), l), lev);
      const __m128 ch = _mm_sub_ps(_mm_max_ps(_mm_shuffle_ps(h, h, _MM_SHUFFLE(3, 3, 2, 1)), h), lev);
      best = _mm_max_ps(_mm_sub_ps(ch, cl), best);
    }
    return _mm_cvtss_f32(_mm_max_ss(_mm_shuffle_ps(best, best, _MM_SHUFFLE(1, 1, 1, 1)), best));
  }
#endif
  // On the samples as they are, against the level: max(v − level, 0) is max(v, level) − level exactly (the
  // subtraction rounds monotonically), and so for the smallest.
  float lo[3][3], hi[3][3];
  float finite = 0;  // 0 while every sample is finite: v − v is NaN for a NaN or an infinity
  PS_UNROLL for (int db = 0; db < 3; ++db)
    PS_UNROLL for (int dc = 0; dc < 3; ++dc) {
      const T* q = at + (db - 1) * b + (dc - 1) * c;
      const float v0 = float(q[0]), v1 = float(q[along]);
      float l = v0 < level ? v0 : level, h = v0 > level ? v0 : level;  // (a NaN compares false: left out)
      lo[db][dc] = v1 < l ? v1 : l;
      hi[db][dc] = v1 > h ? v1 : h;
      finite += (v0 - v0) + (v1 - v1);
    }
  bool nan = false;
  if (finite != 0)  // a NaN or an infinity (rare): which one, sample by sample
    for (int db = 0; db < 3; ++db)
      for (int dc = 0; dc < 3; ++dc) {
        const T* q = at + (db - 1) * b + (dc - 1) * c;
        const float v0 = float(q[0]), v1 = float(q[along]);
        nan = nan || v0 != v0 || v1 != v1;
      }
  float best = 0;
  PS_UNROLL for (int db = 0; db < 2; ++db) {
    float l[3], h[3];  // the two columns across b, for each c
    PS_UNROLL for (int dc = 0; dc < 3; ++dc) {
      l[dc] = lo[db + 1][dc] < lo[db][dc] ? lo[db + 1][dc] : lo[db][dc];
      h[dc] = hi[db + 1][dc] > hi[db][dc] ? hi[db + 1][dc] : hi[db][dc];
    }
    PS_UNROLL for (int dc = 0; dc < 2; ++dc) {
      const float cl = (l[dc + 1] < l[dc] ? l[dc + 1] : l[dc]) - level;
      const float ch = (h[dc + 1] > h[dc] ? h[dc + 1] : h[dc]) - level;
      best = ch - cl > best ? ch - cl : best;
    }
  }
  return nan ? NAN : best;
}

// The same for an edge at the grid's border (fewer cells): out of line, so that the common path stays small.
template <class T>
PS_HD_HOST_NOINLINE float border_edge_range(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k,
                                            int axis, float level) {
  const std::int64_t p[3] = {i, j, k}, n[3] = {s.nx, s.ny, s.nz};
  const int b = axis == 0 ? 1 : 0, c = axis == 2 ? 1 : 2;
  iso::LevelRange column[3][3];  // (the columns outside the grid stay empty: no cell of the grid uses them)
  for (int db = 0; db < 3; ++db)
    for (int dc = 0; dc < 3; ++dc) {
      std::int64_t q[3];
      q[axis] = p[axis], q[b] = p[b] + db - 1, q[c] = p[c] + dc - 1;
      if (q[b] < 0 || q[b] >= n[b] || q[c] < 0 || q[c] >= n[c]) continue;
      for (int e = 0; e < 2; ++e, ++q[axis]) column[db][dc].add(float(s.at(q[0], q[1], q[2])) - level);
    }
  float best = 0;
  bool nan = false;
  for (int db = 0; db < 2; ++db)
    for (int dc = 0; dc < 2; ++dc) {
      const std::int64_t cb = p[b] + db - 1, cc = p[c] + dc - 1;  // the cell's lowest corner across the edge
      if (cb < 0 || cb > n[b] - 2 || cc < 0 || cc > n[c] - 2) continue;
      iso::LevelRange r = column[db][dc];
      for (int e = 1; e < 4; ++e) r.merge(column[db + (e & 1)][dc + (e >> 1)]);  // the cell's other three columns
      best = r.hi - r.lo > best ? r.hi - r.lo : best;
      nan = nan || r.nan;
    }
  return nan ? NAN : best;
}

// The value of the vertex of the crossing edge from point (i, j, k) along `axis`.
template <class T>
PS_HD_HOST_INLINE float edge_range(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k, int axis,
                                   float level) {
  const std::int64_t p[3] = {i, j, k}, n[3] = {s.nx, s.ny, s.nz};
  const int b = axis == 0 ? 1 : 0, c = axis == 2 ? 1 : 2;
  if (p[b] >= 1 && p[b] + 1 < n[b] && p[c] >= 1 && p[c] + 1 < n[c]) {
    const std::int64_t stride[3] = {1, s.nx, s.nx * s.ny};
    return inner_edge_range(&s.data[((k - s.z_begin) * s.ny + j) * s.nx + i], stride[axis], stride[b], stride[c], level);
  }
  return border_edge_range(s, i, j, k, axis, level);
}

// The value of point (i, j, k)'s vertex in slot `slot_bit` (a bit of its flags, as slot_vertex takes it).
template <class T>
PS_HD float slot_range(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k, int slot_bit, float level) {
  const int axis = slot_bit - 1;
  if (axis >= 0 && axis <= 2) return edge_range(s, i, j, k, axis, level);
  const std::int64_t p[3] = {i, j, k};
  if (slot_bit == 0) {
    const std::int64_t lowest[3] = {i - 1, j - 1, k - 1};
    return cells_range(s, lowest, p, level);
  }
  return cells_range(s, p, p, level);  // a centre vertex
}

// The values of every vertex of point (i, j, k), in slot order (as point_vertices writes the vertices).
template <class T>
PS_HD_HOST_INLINE void point_ranges(const SlabValues<T>& s, std::int64_t i, std::int64_t j, std::int64_t k,
                                    std::uint8_t flags, float level, float* values) {
  int slot = 0;
  if (flags & kSlotPoint) values[slot++] = slot_range(s, i, j, k, 0, level);
  for (int axis = 0; axis < 3; ++axis)
    if (flags & (kSlotX << axis)) values[slot++] = edge_range(s, i, j, k, axis, level);
  if (flags & kSlotCenter) values[slot] = slot_range(s, i, j, k, 6, level);
}

}  // namespace parasurf::mc
