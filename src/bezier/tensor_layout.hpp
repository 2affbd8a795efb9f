// Index maps of the tensor-core path of the factored method (cuda_tensor.cu), host and device, so that a CPU
// test can replay a warp's matrix products from the same maps (tests/bezier/test_tensor_layout.cpp).
//
// Warp-level mma.m16n8k8 / m16n8k4 on .tf32 operands (PTX ISA), lane = 4 g + t:
//   A (16 x 8): a0 (row g, k t), a1 (row g+8, k t), a2 (row g, k t+4), a3 (row g+8, k t+4); k4 takes a0, a1
//   B (8 x 8):  b0 (k t, col g), b1 (k t+4, col g); k4 takes b0
//   C (16 x 8): c0 (row g, col 2t), c1 (row g, col 2t+1), c2 (row g+8, col 2t), c3 (row g+8, col 2t+1)
// Rows are samples along u, k the u-terms, columns 8 consecutive samples along v.
#pragma once
#include <cstdint>

#include "core/hd.hpp"

namespace parasurf::bezier::tensor_layout {

// The m + 1 terms in units of 4 (one k4 product, half a k8 product): k8 whole k8 products, then one k4 when
// `tail`. The A operand of a k8 product S is units 2S and 2S+1; the k4's is unit 2 k8.
struct Steps {
  int units, k8;
  bool tail;
  PS_HD explicit Steps(int terms) : units((terms + 3) / 4), k8((terms + 3) / 4 / 2), tail((terms + 3) / 4 % 2 != 0) {}
};

// Stage 1 of one 8-column group, `slots` values per (term, column) (q per coordinate, then q' per coordinate),
// each split in TF32 halves: per k8 product and slot, a float4 per lane (hi(k t), hi(k t+4), lo(k t), lo(k t+4))
// of column g; then, for the k4, a float2 per lane (hi(k t), lo(k t)).
PS_HD std::int64_t record_floats(int slots, const Steps& s) {
  return std::int64_t(s.k8) * slots * 128 + (s.tail ? std::int64_t(slots) * 64 : 0);
}
// Floats (from the record's start) of the float4 that lane reads for k8 product `step`, slot e.
PS_HD std::int64_t k8_fragment(int step, int slot, int slots, int lane) {
  return ((std::int64_t(step) * slots + slot) * 32 + lane) * 4;
}
// ... and of the float2 of the k4 product.
PS_HD std::int64_t k4_fragment(int slot, int slots, const Steps& s, int lane) {
  return std::int64_t(s.k8) * slots * 128 + (std::int64_t(slot) * 32 + lane) * 2;
}
// Where stage 1 puts the halves of term k, column g (0..7), slot e: the floats `hi` and `lo` of the record.
PS_HD void term_offsets(int k, int g, int slot, int slots, const Steps& s, std::int64_t* hi, std::int64_t* lo) {
  if (k < 8 * s.k8) {
    const int within = k % 8, lane = 4 * g + within % 4, half = within / 4;
    const std::int64_t at = k8_fragment(k / 8, slot, slots, lane);
    *hi = at + half;
    *lo = at + 2 + half;
  } else {
    const std::int64_t at = k4_fragment(slot, slots, s, 4 * g + (k - 8 * s.k8));
    *hi = at;
    *lo = at + 1;
  }
}
// The term of A unit u that a lane holds, and the row (half 0: g, half 1: g + 8) of the warp's 16.
PS_HD int a_term(int unit, int lane) { return 4 * unit + (lane & 3); }
PS_HD int lane_row(int lane, int half) { return (lane >> 2) + 8 * half; }
// Row and column (within the warp's 16 x 8 tile) of accumulator element i (0..3) of a lane.
PS_HD int c_row(int lane, int i) { return (lane >> 2) + 8 * (i / 2); }
PS_HD int c_col(int lane, int i) { return 2 * (lane & 3) + i % 2; }

}  // namespace parasurf::bezier::tensor_layout
