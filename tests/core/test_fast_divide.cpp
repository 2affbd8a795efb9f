// FastDivisor against the plain division: every divisor up to 4096 and random ones up to 2^31 - 1, numerators at the
// edges (0, multiples of d and their neighbours, 2^31 - 1) and random ones, and the fallbacks past 2^31.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/fast_divide.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

void expect_exact(const core::FastDivisor& f, std::int64_t n) {
  std::int64_t remainder = -1;
  const std::int64_t q = f.quotient(n, remainder);
  ASSERT_EQ(q, n / f.divisor) << "n " << n << " d " << f.divisor;
  ASSERT_EQ(remainder, n % f.divisor) << "n " << n << " d " << f.divisor;
}

TEST(FastDivisor, EqualsDivisionAtEdgesAndOnRandomNumerators) {
  std::mt19937_64 rng(test::run_seed());
  std::vector<std::int64_t> divisors;
  for (std::int64_t d = 1; d <= 4096; ++d) divisors.push_back(d);
  for (int b = 12; b <= 31; ++b) {
    const std::int64_t p = std::int64_t(1) << b;
    divisors.insert(divisors.end(), {p - 1, p, p + 1});
  }
  std::uniform_int_distribution<std::int64_t> any_divisor(1, (std::int64_t(1) << 31) - 1);
  for (int t = 0; t < 2000; ++t) divisors.push_back(any_divisor(rng));
  std::uniform_int_distribution<std::int64_t> below_2_31(0, (std::int64_t(1) << 31) - 1);
  constexpr std::int64_t kTop = (std::int64_t(1) << 31) - 1;
  for (const std::int64_t d : divisors) {
    const core::FastDivisor f(d);
    for (const std::int64_t n : {std::int64_t(0), std::int64_t(1), d - 1, d, d + 1, 2 * d - 1, 2 * d, kTop, kTop - 1,
                                 kTop / d * d, kTop / d * d - 1})
      if (n >= 0) expect_exact(f, n);
    for (int t = 0; t < 64; ++t) expect_exact(f, below_2_31(rng));
    // Numerators of 2^31 and more take the plain division.
    for (const std::int64_t n : {kTop + 1, std::int64_t(1) << 40, (std::int64_t(1) << 40) + d - 1}) expect_exact(f, n);
  }
  // Divisors of 2^31 and more, too.
  for (const std::int64_t d : {std::int64_t(1) << 31, (std::int64_t(1) << 33) + 7}) {
    const core::FastDivisor f(d);
    for (const std::int64_t n : {std::int64_t(0), d - 1, d, std::int64_t(1) << 40}) expect_exact(f, n);
  }
}

}  // namespace
}  // namespace parasurf
