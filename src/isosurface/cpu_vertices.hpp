// The CPU engine's crossing vertices of float volumes, eight at a time (engine_cpu.cpp): the vertex pass collects a
// row's edge crossings at inner points and makes them here with AVX2, where point by point (mc::point_vertices)
// every point's own mix of x, y and z slots took a different branch. The operations are mc::crossing_vertex's and
// mc::store_vertex's for float samples, fused and ordered as there (mc::fused), so the mesh is the same to the bit
// (a test compares the two paths).
#pragma once

#include <cstdint>
#include <limits>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "isosurface/mc_kernels.hpp"

namespace parasurf::iso::cpu_vertices {

// A row's crossings: point i of the row, the edge's axis (0 x, 1 y, 2 z) and the vertex's index in the mesh.
struct Crossings {
  static constexpr int kCapacity = 64;
  std::int32_t i[kCapacity];
  std::int32_t axis[kCapacity];
  std::uint64_t vertex[kCapacity];
  int n = 0;
};

#if defined(__AVX2__) && defined(__FMA__)
inline constexpr bool kAvailable = true;

// Whether the gathers' 32-bit element offsets reach every sample a gradient of this layout reads (two slices on).
inline bool offsets_fit(std::int64_t nx, std::int64_t ny) { return nx * ny * 3 + nx * 3 < (std::int64_t(1) << 29); }

namespace detail {
[[gnu::always_inline]] inline __m256 finite(__m256 x) {  // mc::is_finite
  const __m256 top = _mm256_set1_ps(mc::largest_finite<float>());
  return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_sub_ps(_mm256_setzero_ps(), top), _CMP_GE_OQ),
                       _mm256_cmp_ps(x, top, _CMP_LE_OQ));
}
[[gnu::always_inline]] inline __m256 at(const float* row, __m256i o) { return _mm256_i32gather_ps(row, o, 4); }
// The six neighbours' samples of points, by axis: lo[a] one step down axis a, hi[a] one step up.
struct Around {
  __m256 lo[3], hi[3];
};
[[gnu::always_inline]] inline Around around(const float* row, __m256i o, const __m256i* stride) {
  Around n;
  for (int a = 0; a < 3; ++a)
    n.lo[a] = at(row, _mm256_sub_epi32(o, stride[a])), n.hi[a] = at(row, _mm256_add_epi32(o, stride[a]));
  return n;
}
// mc::gradient_inner at points whose sample is v and neighbours n.
[[gnu::always_inline]] inline void gradient(__m256 v, const Around& n, __m256* g) {
  const __m256 keep = finite(v), half = _mm256_set1_ps(0.5f);
  for (int a = 0; a < 3; ++a) {
    const __m256 va = _mm256_blendv_ps(v, n.lo[a], finite(n.lo[a])), vb = _mm256_blendv_ps(v, n.hi[a], finite(n.hi[a]));
    g[a] = _mm256_and_ps(_mm256_mul_ps(_mm256_sub_ps(vb, va), half), keep);  // (vb - va) / 2 exactly; 0 at a NaN
  }
}
// mc::inner_edge_range of the edges from points p along `along` (a, b: their two samples; np, nq: the neighbours of
// both ends): the nine columns of two samples across each edge (strides across: x edges y and z, y edges x and z,
// z edges x and y; the four beside the edge are neighbours of its ends), each column's smallest and largest sample
// with the level, and the largest range of the four cells, 0 included; NaN where a sample is NaN. Minima and
// maxima are exact, so the order of the columns does not change a bit.
[[gnu::always_inline]] inline __m256 edge_ranges(const float* row, __m256i p, __m256i along, __m256i axis, __m256 a,
                                                 __m256 b, const Around& np, const Around& nq, __m256i vy, __m256i vz,
                                                 float range_level) {
  const __m256i one = _mm256_set1_epi32(1), x_edge = _mm256_cmpeq_epi32(axis, _mm256_setzero_si256()),
                z_edge = _mm256_cmpeq_epi32(axis, _mm256_set1_epi32(2));
  const __m256i across_b = _mm256_blendv_epi8(one, vy, x_edge), across_c = _mm256_blendv_epi8(vz, vy, z_edge);
  const __m256 bx = _mm256_castsi256_ps(x_edge), cz = _mm256_castsi256_ps(z_edge);
  // The columns one step across b (y for x edges, else x) and across c (y for z edges, else z), at both ends.
  auto across = [&](const Around& n, int db, int dc) __attribute__((always_inline)) {
    if (dc == 1) return db == 0 ? _mm256_blendv_ps(n.lo[0], n.lo[1], bx) : _mm256_blendv_ps(n.hi[0], n.hi[1], bx);
    return dc == 0 ? _mm256_blendv_ps(n.lo[2], n.lo[1], cz) : _mm256_blendv_ps(n.hi[2], n.hi[1], cz);
  };
  const __m256 lev = _mm256_set1_ps(range_level);
  __m256 lo[3][3], hi[3][3], nan = _mm256_setzero_ps();
  for (int db = 0; db < 3; ++db)
    for (int dc = 0; dc < 3; ++dc) {
      __m256 v0 = a, v1 = b;
      if (db != 1 && dc != 1) {  // a corner column: gathered
        __m256i o = db == 0 ? _mm256_sub_epi32(p, across_b) : _mm256_add_epi32(p, across_b);
        o = dc == 0 ? _mm256_sub_epi32(o, across_c) : _mm256_add_epi32(o, across_c);
        v0 = at(row, o), v1 = at(row, _mm256_add_epi32(o, along));
      } else if (db != 1 || dc != 1) {
        v0 = across(np, db, dc), v1 = across(nq, db, dc);
      }
      lo[db][dc] = _mm256_min_ps(v1, _mm256_min_ps(v0, lev));
      hi[db][dc] = _mm256_max_ps(v1, _mm256_max_ps(v0, lev));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q));
    }
  __m256 best = _mm256_setzero_ps();
  for (int db = 0; db < 2; ++db)
    for (int dc = 0; dc < 2; ++dc) {
      const __m256 l =
          _mm256_min_ps(_mm256_min_ps(lo[db][dc], lo[db + 1][dc]), _mm256_min_ps(lo[db][dc + 1], lo[db + 1][dc + 1]));
      const __m256 h =
          _mm256_max_ps(_mm256_max_ps(hi[db][dc], hi[db + 1][dc]), _mm256_max_ps(hi[db][dc + 1], hi[db + 1][dc + 1]));
      best = _mm256_max_ps(_mm256_sub_ps(_mm256_sub_ps(h, lev), _mm256_sub_ps(l, lev)), best);
    }
  return _mm256_blendv_ps(best, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), nan);
}
}  // namespace detail

// The vertices of the crossings c of the row of point (·, j, k) whose samples start at `row` (sy, sz: the row and
// slice strides): positions, normals unless `normals` is null, and unless `values` is null scikit-image's value
// of each against `range_level` (mc::edge_range). Every point and its +x, +y, +z neighbours have all six neighbours
// (mc::inner_point), and offsets_fit holds.
inline void crossing_vertices(const float* row, std::int64_t sy, std::int64_t sz, std::int64_t j, std::int64_t k,
                              float level, const mc::WorldMap& m, const Crossings& c, float* positions, float* normals,
                              float* values = nullptr, float range_level = 0) {
  using namespace detail;
  const __m256i one = _mm256_set1_epi32(1), vy = _mm256_set1_epi32(std::int32_t(sy)),
                vz = _mm256_set1_epi32(std::int32_t(sz));
  const __m256i stride[3] = {one, vy, vz};
  const __m256 lv = _mm256_set1_ps(level), fj = _mm256_set1_ps(float(j)), fk = _mm256_set1_ps(float(k));
  alignas(32) float out[7][8];
  for (int b = 0; b < c.n; b += 8) {
    const int lanes = c.n - b < 8 ? c.n - b : 8;
    // The last block's missing lanes repeat its first crossing (computed, not stored).
    alignas(32) std::int32_t ii[8], aa[8];
    for (int q = 0; q < 8; ++q) ii[q] = c.i[b + (q < lanes ? q : 0)], aa[q] = c.axis[b + (q < lanes ? q : 0)];
    const __m256i p = _mm256_load_si256(reinterpret_cast<const __m256i*>(ii)),
                  axis = _mm256_load_si256(reinterpret_cast<const __m256i*>(aa));
    const __m256i on_y = _mm256_cmpeq_epi32(axis, one), on_z = _mm256_cmpeq_epi32(axis, _mm256_set1_epi32(2));
    const __m256i q1 = _mm256_add_epi32(p, _mm256_blendv_epi8(_mm256_blendv_epi8(one, vy, on_y), vz, on_z));
    const __m256 a = at(row, p), bv = at(row, q1);
    const __m256 t = _mm256_blendv_ps(_mm256_set1_ps(0.5f), _mm256_div_ps(_mm256_sub_ps(lv, a), _mm256_sub_ps(bv, a)),
                                      _mm256_and_ps(finite(a), finite(bv)));
    const __m256 on_x = _mm256_castsi256_ps(_mm256_cmpeq_epi32(axis, _mm256_setzero_si256()));
    const __m256 idx[3] = {_mm256_add_ps(_mm256_cvtepi32_ps(p), _mm256_and_ps(t, on_x)),
                           _mm256_add_ps(fj, _mm256_and_ps(t, _mm256_castsi256_ps(on_y))),
                           _mm256_add_ps(fk, _mm256_and_ps(t, _mm256_castsi256_ps(on_z)))};
    for (int r = 0; r < 3; ++r)
      _mm256_store_ps(out[r], _mm256_fmadd_ps(_mm256_set1_ps(m.jacobian[r * 3 + 2]), idx[2],
                                              _mm256_fmadd_ps(_mm256_set1_ps(m.jacobian[r * 3 + 1]), idx[1],
                                                              _mm256_fmadd_ps(_mm256_set1_ps(m.jacobian[r * 3]), idx[0],
                                                                              _mm256_set1_ps(m.origin[r])))));
    Around np{}, nq{};
    if (normals || values) np = around(row, p, stride), nq = around(row, q1, stride);
    if (normals) {
      __m256 g0[3], g1[3], g[3], n[3];
      gradient(a, np, g0);
      gradient(bv, nq, g1);
      for (int r = 0; r < 3; ++r) g[r] = _mm256_fmadd_ps(t, _mm256_sub_ps(g1[r], g0[r]), g0[r]);
      for (int r = 0; r < 3; ++r)
        n[r] = _mm256_fmadd_ps(_mm256_set1_ps(m.normal_matrix[r * 3 + 2]), g[2],
                               _mm256_fmadd_ps(_mm256_set1_ps(m.normal_matrix[r * 3 + 1]), g[1],
                                               _mm256_mul_ps(_mm256_set1_ps(m.normal_matrix[r * 3]), g[0])));
      const __m256 len2 = _mm256_fmadd_ps(n[2], n[2], _mm256_fmadd_ps(n[1], n[1], _mm256_mul_ps(n[0], n[0])));
      // mc::store_vertex: the estimate and one Newton step within the normal range, 1 / sqrt outside it, 0 for none
      const __m256 e = _mm256_rsqrt_ps(len2);
      const __m256 newton = _mm256_mul_ps(
          e, _mm256_fnmadd_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), len2), e), e, _mm256_set1_ps(1.5f)));
      const __m256 exact = _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_sqrt_ps(len2)),
                                         _mm256_cmp_ps(len2, _mm256_setzero_ps(), _CMP_GT_OQ));
      const __m256 normal_range =
          _mm256_and_ps(_mm256_cmp_ps(len2, _mm256_set1_ps(std::numeric_limits<float>::min()), _CMP_GE_OQ),
                        _mm256_cmp_ps(len2, _mm256_set1_ps(std::numeric_limits<float>::max()), _CMP_LE_OQ));
      const __m256 inv = _mm256_blendv_ps(exact, newton, normal_range);
      for (int r = 0; r < 3; ++r) _mm256_store_ps(out[3 + r], _mm256_mul_ps(n[r], inv));
    }
    if (values)
      _mm256_store_ps(out[6], edge_ranges(row, p, _mm256_sub_epi32(q1, p), axis, a, bv, np, nq, vy, vz, range_level));
    for (int q = 0; q < lanes; ++q) {
      if (values) values[c.vertex[b + q]] = out[6][q];
      float* pos = positions + 3 * c.vertex[b + q];
      pos[0] = out[0][q], pos[1] = out[1][q], pos[2] = out[2][q];
      if (normals) {
        float* nrm = normals + 3 * c.vertex[b + q];
        nrm[0] = out[3][q], nrm[1] = out[4][q], nrm[2] = out[5][q];
      }
    }
  }
}
#else
inline constexpr bool kAvailable = false;
inline bool offsets_fit(std::int64_t, std::int64_t) { return false; }
inline void crossing_vertices(const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, float,
                              const mc::WorldMap&, const Crossings&, float*, float*, float* = nullptr, float = 0) {}
#endif

}  // namespace parasurf::iso::cpu_vertices
