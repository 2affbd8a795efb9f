// The CPU slab engine's row sweeps (engine_cpu.cpp): one flag byte per grid point (inside, on the level, owned
// vertex slots), classified a row at a time, and the cells' corner bytes read eight at a time, since most cells and
// points of a row have nothing to do and skipping them 8 by 8 is most of the speed of the sweeps.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "core/hd.hpp"
#include "isosurface/mc_kernels.hpp"
#include "isosurface/mc_tables.hpp"

namespace parasurf::iso::cpu_rows {

// Eight flag bytes at once.
constexpr std::uint64_t kSlotBytes = 0x4F4F4F4F4F4F4F4Full, kInsideBytes = 0x1010101010101010ull,
                        kOnLevelBytes = 0x2020202020202020ull;
[[gnu::always_inline]] inline std::uint64_t load8(const std::uint8_t* p) {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}
// Which of the cells i .. i + 7 between four flag rows are mixed (needs points i .. i + 8): byte b has its 0x10
// bit set when cell i + b has corners on both sides.
[[gnu::always_inline]] inline std::uint64_t mixed8(const std::uint8_t* const* row, std::int64_t i) {
  const std::uint64_t a = load8(row[0] + i) & kInsideBytes;
  std::uint64_t diff = a ^ (load8(row[0] + i + 1) & kInsideBytes);
  for (int q = 1; q < 4; ++q)
    diff |= (a ^ (load8(row[q] + i) & kInsideBytes)) | (a ^ (load8(row[q] + i + 1) & kInsideBytes));
  return diff;
}
// Which of the cells i .. i + 31 are mixed (needs points i .. i + 32): bit b set when cell i + b has corners on both
// sides. Four times mixed8's width in about its instructions, as most cells of a row are not mixed.
[[gnu::always_inline]] inline std::uint32_t mixed32(const std::uint8_t* const* row, std::int64_t i) {
#if defined(__AVX2__)
  const __m256i bit = _mm256_set1_epi8(char(kInsideBytes & 0xFF));
  auto inside = [&](const std::uint8_t* p) __attribute__((always_inline)) {
    return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), bit);
  };
  const __m256i a = inside(row[0] + i);
  __m256i diff = _mm256_xor_si256(a, inside(row[0] + i + 1));
  for (int q = 1; q < 4; ++q)
    diff = _mm256_or_si256(
        diff, _mm256_or_si256(_mm256_xor_si256(a, inside(row[q] + i)), _mm256_xor_si256(a, inside(row[q] + i + 1))));
  return std::uint32_t(_mm256_movemask_epi8(_mm256_slli_epi16(diff, 3)));  // bit 4 of each byte to its top bit
#else
  std::uint32_t m = 0;
  for (int w = 0; w < 4; ++w)
    m |= std::uint32_t((((mixed8(row, i + 8 * w) >> 4) & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56)
         << (8 * w);
  return m;
#endif
}

// visit(i) for every mixed cell i of [begin, end) between four flag rows, lowest first, 32 cells at a time; spans
// shorter than that visit every cell (the caller's work for an unmixed cell must be nothing).
template <class Visit>
[[gnu::always_inline]] inline void for_mixed_cells(const std::uint8_t* const* row, std::int64_t begin, std::int64_t end,
                                                   Visit&& visit) {
  if (end - begin < 32) {
    for (std::int64_t i = begin; i < end; ++i) visit(i);
    return;
  }
  std::int64_t i = begin;
  for (; i + 32 <= end; i += 32)
    for (std::uint32_t m = mixed32(row, i); m; m &= m - 1) visit(i + std::countr_zero(m));
  if (i < end)  // the last 32 cells, less those visited
    for (std::uint32_t m = mixed32(row, end - 32) >> (i - (end - 32)); m; m &= m - 1) visit(i + std::countr_zero(m));
}

// The first vertex slot of each corner's point of a cell: corner (q, i) starts after the slots before point i of row
// q, corner (q, i + 1) after point i's own slots too. through[q]: the slots of row q up to and including point i.
[[gnu::always_inline]] inline void corner_first_slots(const std::uint8_t* cf, const std::uint64_t* row_base,
                                                      const std::uint32_t* through, std::uint64_t* first) {
  for (int q = 0; q < 4; ++q) {
    const std::uint64_t after = row_base[q] + through[q];
    first[2 * q] = after - std::uint64_t(mc::slot_count(cf[2 * q]));
    first[2 * q + 1] = after;
  }
}

// The triangles of a cell none of whose corners lies on the level, straight from its entry: no key maps to an
// on-level sample, no triangle collapses, none is a tie.
[[gnu::always_inline]] inline void emit_plain_triangles(const mc::CaseEntry& e, const std::uint8_t* cf,
                                                        const std::uint64_t* row_base, const std::uint32_t* through,
                                                        bool flip, std::uint32_t* out) {
  std::uint64_t first[8];
  corner_first_slots(cf, row_base, through, first);
  const int b = flip ? 2 : 1, c = flip ? 1 : 2;
  for (int n = 0; n < e.count; ++n, out += 3) {
    out[0] = std::uint32_t(mc::edge_key_vertex(e.edges[3 * n], cf, first));
    out[b] = std::uint32_t(mc::edge_key_vertex(e.edges[3 * n + 1], cf, first));
    out[c] = std::uint32_t(mc::edge_key_vertex(e.edges[3 * n + 2], cf, first));
  }
}

// The flag bytes of cell i's eight corners in corner order (byte c: corner c), two bytes a row.
static_assert(std::endian::native == std::endian::little, "corner words are read and split as little-endian bytes");
[[gnu::always_inline]] inline std::uint64_t corner_flags8(const std::uint8_t* const* row, std::int64_t i) {
  std::uint64_t w = 0;
  for (int q = 0; q < 4; ++q) {
    std::uint16_t pair;
    std::memcpy(&pair, row[q] + i, 2);
    w |= std::uint64_t(pair) << (16 * q);
  }
  return w;
}
// mc::cell_case of those bytes: the inside bits (bit 4 of each byte) gathered into one byte by a multiply, whose
// partial products land each byte's bit on its own place in the top byte and carry nothing into it.
[[gnu::always_inline]] inline int case_of_corners(std::uint64_t corners) {
  return int((((corners >> 4) & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56);
}

// The corners on the level (bit c: corner c) of those bytes, gathered the same way from their kOnLevel bits.
[[gnu::always_inline]] inline int level_mask_of_corners(std::uint64_t corners) {
  static_assert(mc::kOnLevel == 32, "the on-level bit is bit 5 of a flag byte");
  return int((((corners >> 5) & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56);
}

// The corners that carry a point vertex (bit c: corner c), gathered from their kSlotPoint bits.
[[gnu::always_inline]] inline int point_slot_mask_of_corners(std::uint64_t corners) {
  static_assert(mc::kSlotPoint == 1, "the point slot is bit 0 of a flag byte");
  return int(((corners & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56);
}

// mc::cell_triangles with the edge keys from mc::kLevelEdgeKey: the cells with a corner on the level (and, with
// mask 0, those with a label) visit their surviving triangles as keys, in the entry's order.
template <class Visit>
[[gnu::always_inline]] inline void level_cell_triangles(const mc::CaseEntry& e, int level_mask, bool keep_degenerate,
                                                        Visit&& visit) {
  const std::uint8_t* key = mc::kLevelEdgeKey.key[level_mask];
  for (int n = 0; n < e.count; ++n) {
    const int a = key[e.edges[3 * n]], b = key[e.edges[3 * n + 1]], c = key[e.edges[3 * n + 2]];
    if (!keep_degenerate && (a == b || b == c || a == c)) continue;
    visit(a, b, c, (a | b | c) >= 16);  // keys are below 32: a corner key sets bit 4
  }
}

// mc::key_faces of every key (a test compares them).
struct KeyFaces {
  std::uint8_t faces[32];
};
inline const KeyFaces kKeyFaces = [] {
  KeyFaces t{};
  for (int key = 0; key < 32; ++key)
    if (key <= mc::kCenterKey || (key >= 16 && key < 24)) t.faces[key] = std::uint8_t(mc::key_faces(key));
  return t;
}();

// Bytes 0 .. b of a word.
[[gnu::always_inline]] inline std::uint64_t bytes_through(int b) {
  return b == 7 ? ~0ull : (1ull << (8 * (b + 1))) - 1;
}

// For 8- and 16-bit samples (exact in float): the smallest sample value that is inside (v >= level), and the
// value that equals the level (INT_MIN, which no sample takes, when the level is not such a value).
template <class T>
int small_int_threshold(float level) {
  const double c = std::ceil(double(level));
  if (std::isnan(c)) return std::numeric_limits<int>::max();  // nothing is >= NaN
  return int(std::clamp(c, double(std::numeric_limits<T>::min()), double(std::numeric_limits<T>::max()) + 1));
}
template <class T>
int small_int_equal(float level) {
  const double lv = double(level);
  const bool integral = lv == std::floor(lv) && lv >= double(std::numeric_limits<T>::min()) &&
                        lv <= double(std::numeric_limits<T>::max());
  return integral ? int(lv) : std::numeric_limits<int>::min();
}

// Inside bytes of one row (bit 0: mc::is_inside without a branch; bit 1: the sample equals `eq`, the level where
// samples on it are ties, NaN where none is), whether a sample equals it, and whether the row is all inside or has
// some inside. Separate functions with restrict
// pointers and local accumulators, so that the loops vectorise.
// The bytes [p, p + n) asked into the core's L2 ahead of a sweep that reads each sample once: one core's stream
// from memory is bounded by how far ahead the hardware prefetcher runs, and this sweep reads the whole volume.
inline void prefetch_ahead(const void* p, std::size_t n) {
  for (std::size_t at = 0; at < n; at += 64) __builtin_prefetch(static_cast<const char*>(p) + at, 0, 2);
}
inline constexpr std::size_t kSweepPrefetchBytes = 8192;

template <class T, class R>
void inside_row(const T* PS_RESTRICT v, std::uint8_t* PS_RESTRICT o, std::int64_t nx, R level, R eq,
                std::uint8_t& on_level, std::uint8_t& any_inside, std::uint8_t& all_inside) {
  const R top = mc::largest_finite<R>();
  std::uint8_t on = 0, any_in = 0, all_in = 1;
  for (std::int64_t i = 0; i < nx; ++i) {
    const R x = R(v[i]);
    const auto inside = std::uint8_t((x >= level) & (x <= top)), equal = std::uint8_t(x == eq);
    o[i] = std::uint8_t(inside | equal << 1);
    on |= equal;
    any_in |= inside;
    all_in &= inside;
  }
  on_level = on, any_inside = any_in, all_inside = all_in;
}

#if defined(__AVX2__)
// The wide inside rows' common part, for a row of at least 32 samples: bytes_at(i) gives the inside bytes of samples
// i .. i + 31 (bit 0 inside, bit 1 on the level), stored here block by block, the last block overlapping the one
// before (the same bytes for the samples done twice); and the row's on-level, any- and all-inside answers.
template <class Bytes>
[[gnu::always_inline]] inline void store_inside_blocks(std::uint8_t* PS_RESTRICT o, std::int64_t nx, Bytes&& bytes_at,
                                                       std::uint8_t& on_level, std::uint8_t& any_inside,
                                                       std::uint8_t& all_inside) {
  __m256i any = _mm256_setzero_si256(), all = _mm256_set1_epi8(-1);
  auto block = [&](std::int64_t at) __attribute__((always_inline)) {
    const __m256i bytes = bytes_at(at);
    any = _mm256_or_si256(any, bytes), all = _mm256_and_si256(all, bytes);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + at), bytes);
  };
  std::int64_t i = 0;
  for (; i + 32 <= nx; i += 32) block(i);
  if (i < nx) block(nx - 32);
  on_level = std::uint8_t(!_mm256_testz_si256(any, _mm256_set1_epi8(2)));
  any_inside = std::uint8_t(!_mm256_testz_si256(any, _mm256_set1_epi8(1)));
  all_inside = std::uint8_t(_mm256_testc_si256(all, _mm256_set1_epi8(1)));
}

// inside_row for float samples, 32 at a time: the compiler's own vectorisation of the loop above packs the compare
// masks to bytes at twice the instructions, and this sweep reads every sample of the volume. (eq & 2) - in is
// inside | equal << 1 with in and eq as 0 / -1 masks, in 32-bit lanes before the packs.
inline void inside_row(const float* PS_RESTRICT v, std::uint8_t* PS_RESTRICT o, std::int64_t nx, float level, float eq,
                       std::uint8_t& on_level, std::uint8_t& any_inside, std::uint8_t& all_inside) {
  if (nx < 32) {
    inside_row<float, float>(v, o, nx, level, eq, on_level, any_inside, all_inside);
    return;
  }
  const __m256 lv = _mm256_set1_ps(level), ev = _mm256_set1_ps(eq), top = _mm256_set1_ps(mc::largest_finite<float>());
  const __m256i two = _mm256_set1_epi32(2), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  store_inside_blocks(
      o, nx,
      [&](std::int64_t at) __attribute__((always_inline)) {
        __m256i b[4];
        for (int q = 0; q < 4; ++q) {
          const __m256 x = _mm256_loadu_ps(v + at + 8 * q);
          const __m256 in = _mm256_and_ps(_mm256_cmp_ps(x, lv, _CMP_GE_OQ), _mm256_cmp_ps(x, top, _CMP_LE_OQ));
          const __m256 on = _mm256_cmp_ps(x, ev, _CMP_EQ_OQ);
          b[q] = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(on), two), _mm256_castps_si256(in));
        }
        // The packs interleave the four vectors' 128-bit halves; the permutation puts the bytes back in sample order.
        return _mm256_permutevar8x32_epi32(
            _mm256_packs_epi16(_mm256_packs_epi32(b[0], b[1]), _mm256_packs_epi32(b[2], b[3])), order);
      },
      on_level, any_inside, all_inside);
}
#endif

// The same for 8- and 16-bit samples, which are exact in float: x >= level is v >= ceil(level), and x == level
// needs an integral level. Integer compares vectorise; the float conversion does not.
template <class T>
void inside_row_small_int(const T* PS_RESTRICT v, std::uint8_t* PS_RESTRICT o, std::int64_t nx, float level,
                          float eq_level, std::uint8_t& on_level, std::uint8_t& any_inside, std::uint8_t& all_inside) {
  const int thr = small_int_threshold<T>(level), eq = small_int_equal<T>(eq_level);
#if defined(__AVX2__)
  // 16-bit samples (CT volumes), 32 at a time as the float row above: the compiler widened each to 32 bits.
  if constexpr (sizeof(T) == 2) {
    if (nx >= 32) {
      constexpr int lowest = std::numeric_limits<T>::min(), highest = std::numeric_limits<T>::max();
      // Thresholds past the type's range are masks: nothing (or everything) is inside; no sample may equal the level.
      const __m256i can_in = _mm256_set1_epi16(thr > highest ? 0 : -1),
                    can_eq = _mm256_set1_epi16(eq < lowest ? 0 : -1);
      const __m256i t = _mm256_set1_epi16(short(std::clamp(thr, lowest, highest))),
                    e = _mm256_set1_epi16(short(std::clamp(eq, lowest, highest))), two = _mm256_set1_epi16(2);
      store_inside_blocks(
          o, nx,
          [&](std::int64_t at) __attribute__((always_inline)) {
            __m256i b[2];
            for (int q = 0; q < 2; ++q) {
              const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + at + 16 * q));
              __m256i in;
              if constexpr (std::is_signed_v<T>)
                in = _mm256_andnot_si256(_mm256_cmpgt_epi16(t, x), can_in);
              else
                in = _mm256_and_si256(_mm256_cmpeq_epi16(_mm256_max_epu16(x, t), x), can_in);
              const __m256i eqm = _mm256_and_si256(_mm256_cmpeq_epi16(x, e), can_eq);
              b[q] = _mm256_sub_epi16(_mm256_and_si256(eqm, two), in);  // inside | equal << 1, as in the float row
            }
            return _mm256_permute4x64_epi64(_mm256_packs_epi16(b[0], b[1]), 0xD8);
          },
          on_level, any_inside, all_inside);
      return;
    }
  }
#endif
  std::uint8_t on = 0, any_in = 0, all_in = 1;
  for (std::int64_t i = 0; i < nx; ++i) {
    const int x = int(v[i]);
    const auto inside = std::uint8_t(x >= thr), equal = std::uint8_t(x == eq);
    o[i] = std::uint8_t(inside | equal << 1);
    on |= equal;
    any_in |= inside;
    all_in &= inside;
  }
  on_level = on, any_inside = any_in, all_inside = all_in;
}

// mc::point_flags of a row near samples on the level, from inside bytes (bit 0 inside, bit 1 on the level) of the row
// a and of its -y, +y, -z, +z neighbour rows: a crossing whose far end lies on the level leaves no slot (that
// sample's vertex serves it), and a sample on the level carries the vertex when one of its six neighbours is
// outside. exact_point: one point from its byte A, the -x, +x neighbours' L, R (a missing one given as 1: inside, not
// on the level; has_r: whether the +x edge exists), and the -y/+y, -z/+z ones; returns its slots. Branch-free
// arithmetic, so that the row loop vectorises.
[[gnu::always_inline]] inline void exact_point(std::uint8_t A, std::uint8_t L, std::uint8_t R, std::uint8_t has_r,
                                               std::uint8_t Ym, std::uint8_t Yp, std::uint8_t Zm, std::uint8_t Zp,
                                               std::uint8_t& flag) {
  const std::uint8_t x = std::uint8_t((A ^ R) & ~(R >> 1) & has_r & 1);
  const std::uint8_t y = std::uint8_t((A ^ Yp) & ~(Yp >> 1) & 1), z = std::uint8_t((A ^ Zp) & ~(Zp >> 1) & 1);
  const std::uint8_t outside = std::uint8_t(~(L & R & Ym & Yp & Zm & Zp) & 1);
  const std::uint8_t on = std::uint8_t(0 - (A >> 1 & 1));  // 0xff on the level
  const std::uint8_t crossing = std::uint8_t((A & 1) << 4 | x << 1 | y << 2 | z << 3);
  flag = std::uint8_t((on & (mc::kInside | mc::kOnLevel | outside)) | (~on & crossing));
}
// Points a row's flag loops take at once: short rows (48 samples, say) would otherwise spend most of their time in
// the vectorised loop's scalar remainder.
constexpr int kRowChunk = 16;

// point(i) for i in [begin, end) in whole chunks of kRowChunk, the last one overlapping the one before (point must
// give the same result when called twice); shorter ranges point by point.
template <class Point>
[[gnu::always_inline]] inline void for_row_chunks(std::int64_t begin, std::int64_t end, Point&& point) {
  if (end - begin < kRowChunk) {
    for (std::int64_t i = begin; i < end; ++i) point(i);
    return;
  }
  for (std::int64_t i0 = begin;; i0 += kRowChunk) {
    if (i0 + kRowChunk > end) i0 = end - kRowChunk;
    for (int q = 0; q < kRowChunk; ++q) point(i0 + q);
    if (i0 + kRowChunk == end) break;
  }
}

// The vertex slots of a row of flags, eight bytes at a time (summing them in the flag loops widened every byte).
inline std::uint32_t row_slots(const std::uint8_t* f, std::int64_t nx) {
  std::uint32_t n = 0;
  std::int64_t i = 0;
  for (; i + 8 <= nx; i += 8) n += std::uint32_t(__builtin_popcountll(load8(f + i) & kSlotBytes));
  for (; i < nx; ++i) n += std::uint32_t(mc::slot_count(f[i]));
  return n;
}
inline std::uint32_t exact_row_flags(const std::uint8_t* PS_RESTRICT a, const std::uint8_t* PS_RESTRICT ym,
                                     const std::uint8_t* PS_RESTRICT yp, const std::uint8_t* PS_RESTRICT zm,
                                     const std::uint8_t* PS_RESTRICT zp, std::uint8_t* PS_RESTRICT f, std::int64_t nx) {
  const std::int64_t last = nx - 1;
  if (last == 0) {
    exact_point(a[0], 1, 1, 0, ym[0], yp[0], zm[0], zp[0], f[0]);
    return row_slots(f, nx);
  }
  exact_point(a[0], 1, a[1], 1, ym[0], yp[0], zm[0], zp[0], f[0]);
  exact_point(a[last], a[last - 1], 1, 0, ym[last], yp[last], zm[last], zp[last], f[last]);
  auto point = [&](std::int64_t i) __attribute__((always_inline)) {
    std::uint8_t flag;
    exact_point(a[i], a[i - 1], a[i + 1], 1, ym[i], yp[i], zm[i], zp[i], flag);
    f[i] = flag;
  };
  for_row_chunks(1, last, point);
  return row_slots(f, nx);
}

// The same for 8-bit unsigned samples, compared as bytes (the int compares above widen every sample to 32 bits):
// v >= thr as max(v, thr) == v, with thresholds 0 and 256 (everything and nothing inside) as masks.
inline void inside_row_uint8(const std::uint8_t* PS_RESTRICT v, std::uint8_t* PS_RESTRICT o, std::int64_t nx,
                             float level, float eq_level, std::uint8_t& on_level, std::uint8_t& any_inside,
                             std::uint8_t& all_inside) {
  const int thr = small_int_threshold<std::uint8_t>(level), eq = small_int_equal<std::uint8_t>(eq_level);
  const std::uint8_t t = std::uint8_t(std::clamp(thr, 0, 255)), e = std::uint8_t(eq < 0 ? 0 : eq);
  const std::uint8_t never_in = thr > 255 ? 0 : 1, never_eq = eq < 0 ? 0 : 1;  // 0: the test can never hold
  std::uint8_t on = 0, any_in = 0, all_in = 1;
  for (std::int64_t i = 0; i < nx; ++i) {
    const std::uint8_t x = v[i];
    const auto inside = std::uint8_t((std::max(x, t) == x) & never_in), equal = std::uint8_t((x == e) & never_eq);
    o[i] = std::uint8_t(inside | equal << 1);
    on |= equal;
    any_in |= inside;
    all_in &= inside;
  }
  on_level = on, any_inside = any_in, all_inside = all_in;
}

// Flags of a row none of whose points or +y, +z neighbours lies on the level, from the inside bytes of the row (a)
// and of its +y (b) and +z (c) rows: x, y, z crossings by xor. Returns its vertex slots.
inline std::uint32_t xor_row_flags(const std::uint8_t* PS_RESTRICT a, const std::uint8_t* PS_RESTRICT b,
                                   const std::uint8_t* PS_RESTRICT c, std::uint8_t* PS_RESTRICT f, std::int64_t nx) {
  const std::int64_t last = nx - 1;  // no +x edge
  auto point = [&](std::int64_t i) __attribute__((always_inline)) {
    const std::uint8_t x = std::uint8_t(a[i] ^ a[i + 1]);
    const std::uint8_t y = std::uint8_t(a[i] ^ b[i]), z = std::uint8_t(a[i] ^ c[i]);
    f[i] = std::uint8_t(a[i] << 4 | x << 1 | y << 2 | z << 3);
  };
  for_row_chunks(0, last, point);
  const std::uint8_t y = std::uint8_t(a[last] ^ b[last]), z = std::uint8_t(a[last] ^ c[last]);
  f[last] = std::uint8_t(a[last] << 4 | y << 2 | z << 3);
  return row_slots(f, nx);
}

}  // namespace parasurf::iso::cpu_rows
