// Isosurface CUDA engine, pass 1a: the inside and on-level bit of every sample (see cuda_segments.cuh).
#pragma once
#include "isosurface/cuda_segments.cuh"

namespace parasurf::iso::cuda {
// Pass 1a: which samples are inside and which lie on the level, one bit each, per segment of 32 points. A warp takes
// 128 points of a row, lane l the points l + 32 p, so that each ballot is one segment's word, and marches them
// through kFlagSlices slices. Per point this is a load, two compares and a share of two ballots; per-point flag
// bytes would cost tens of instructions a point here, so they are made per segment from the bits (pass 1b).
constexpr int kClassifyPoints = 4 * kSegmentPoints, kFlagTileY = 8, kFlagSlices = 16;
template <class T>
__global__ void __launch_bounds__(32 * kFlagTileY) classify_kernel(mc::SlabValues<T> s, RowGrid g,
                                                                   typename mc::RealOf<T>::type level, bool ties,
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
          const std::uint32_t on_bits = __ballot_sync(0xffffffffu, has && ties && v[z][p] == level);
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
                                                                        typename mc::RealOf<T>::type level, bool ties,
                                                                        std::uint32_t* __restrict__ inside,
                                                                        std::uint32_t* __restrict__ on_level) {
  constexpr int P = 16 / int(sizeof(T)), G = 32 / P;
  static_assert(kWordCompareType<T>, "1- and 2-byte integer samples");
  constexpr int kPerWord = 4 / int(sizeof(T));
  IntegerLevel l = integer_level<T>(float(level));
  l.may_equal = l.may_equal && ties;
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

}  // namespace parasurf::iso::cuda
