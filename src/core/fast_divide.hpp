// Division by a run-time constant as a multiply and a shift (Granlund and Montgomery, "Division by invariant integers
// using multiplication", PLDI 1994): the kernels divide indices by the row length and the row count, and a 32-bit
// division is a twenty-instruction subroutine on the GPU. With p = 31 + ceil(log2 d) and m = ceil(2^p / d) < 2^32,
// floor(n m / 2^p) = floor(n / d) for every n < 2^31; larger numerators take the plain division.
#pragma once
#include <cstdint>

#include "core/hd.hpp"

namespace parasurf::core {

struct FastDivisor {
  std::int64_t divisor = 1;
  std::uint32_t multiplier = 1u << 31;
  std::uint32_t shift = 31;

  FastDivisor() = default;
  explicit FastDivisor(std::int64_t d) : divisor(d) {
    if (d <= 0 || d >= (std::int64_t(1) << 31)) {  // only the plain division (quotient's fallback) then
      multiplier = 0;
      return;
    }
    std::uint32_t ceil_log2 = 0;
    while ((std::int64_t(1) << ceil_log2) < d) ++ceil_log2;
    shift = 31 + ceil_log2;
    multiplier = std::uint32_t(((std::uint64_t(1) << shift) + std::uint64_t(d) - 1) / std::uint64_t(d));
  }

  // n / divisor and its remainder, for n >= 0.
  PS_HD std::int64_t quotient(std::int64_t n, std::int64_t& remainder) const {
    if (multiplier != 0 && (n >> 31) == 0) {
      const auto q = std::uint32_t((std::uint64_t(std::uint32_t(n)) * multiplier) >> shift);
      remainder = std::uint32_t(n) - q * std::uint32_t(divisor);
      return q;
    }
    const std::int64_t q = n / divisor;
    remainder = n - q * divisor;
    return q;
  }
};

}  // namespace parasurf::core
