// The CPU engine's wide row sweeps against their one-sample forms: the float inside row (32 samples at a time, a last
// block overlapping the one before) against the plain loop, and the 32-cell mixed masks against the 8-cell ones, on
// fresh random rows of every short length, with the values that real volumes hold at the edges of the rules: samples
// on the level, NaN, infinities, the largest finite float and subnormals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "isosurface/cpu_rows.hpp"
#include "support.hpp"

namespace rows = parasurf::iso::cpu_rows;

namespace {

float messy_sample(std::mt19937_64& rng, float level) {
  const float special[] = {level,
                           std::nextafter(level, 1e30f),
                           std::nextafter(level, -1e30f),
                           std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::max(),
                           -std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::denorm_min(),
                           -0.0f};
  std::uniform_int_distribution<int> pick(0, 19);
  const int p = pick(rng);
  if (p < 10) return special[p];
  return std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng) + level;
}

// The row's bytes, or a run on one side with a few bytes changed: both mixed and uniform rows.
std::vector<float> random_row(std::mt19937_64& rng, std::int64_t n, float level) {
  std::vector<float> v(static_cast<std::size_t>(n));
  const int shape = int(rng() % 3);
  for (auto& x : v) x = shape == 0 ? messy_sample(rng, level) : shape == 1 ? level + 1.0f : level - 1.0f;
  if (shape != 0)
    for (int c = int(rng() % 3); c > 0; --c) v[std::size_t(rng() % std::uint64_t(n))] = messy_sample(rng, level);
  return v;
}

}  // namespace

TEST(CpuRows, FloatInsideRowMatchesThePlainLoop) {
  std::mt19937_64 rng(parasurf::test::run_seed());
  for (int round = 0; round < 40; ++round)
    for (std::int64_t n = 1; n <= 130; ++n) {
      const float level = round % 4 == 0 ? 0.0f : std::uniform_real_distribution<float>(-1e3f, 1e3f)(rng);
      const std::vector<float> v = random_row(rng, n, level);
      std::vector<std::uint8_t> wide(std::size_t(n) + 1, 0xAB), plain(std::size_t(n) + 1, 0xAB);
      std::uint8_t on[2], any[2], all[2];
      rows::inside_row(v.data(), wide.data(), n, level, on[0], any[0], all[0]);  // the float overload
      rows::inside_row<float, float>(v.data(), plain.data(), n, level, on[1], any[1], all[1]);
      ASSERT_EQ(wide, plain) << "n " << n << " level " << level << " (seed " << parasurf::test::run_seed() << ")";
      EXPECT_EQ(wide[std::size_t(n)], 0xAB) << "a byte past the row was written";
      ASSERT_EQ(on[0], on[1]) << "n " << n;
      ASSERT_EQ(any[0], any[1]) << "n " << n;
      ASSERT_EQ(all[0], all[1]) << "n " << n;
    }
}

TEST(CpuRows, MixedCellsOf32AreThoseOf8) {
  std::mt19937_64 rng(parasurf::test::run_seed() ^ 0x5eed);
  for (int round = 0; round < 200; ++round) {
    const std::int64_t n = 33 + std::int64_t(rng() % 200);  // points; cells 0 .. n - 2
    std::vector<std::uint8_t> flags(4 * std::size_t(n));
    const std::uint64_t density = 1 + rng() % 64;  // how seldom a point is inside: sparse to dense mixed cells
    for (auto& f : flags) f = std::uint8_t((rng() % density == 0 ? 0x10 : 0) | (rng() & 0x4F));
    const std::uint8_t* row[4] = {flags.data(), flags.data() + n, flags.data() + 2 * n, flags.data() + 3 * n};
    for (std::int64_t i = 0; i + 33 <= n; ++i) {
      const std::uint32_t wide = rows::mixed32(row, i);
      for (int b = 0; b < 32; ++b) {
        const std::int64_t c = i + b, base = c & ~std::int64_t(7);
        const bool mixed = base + 9 <= n ? (rows::mixed8(row, base) >> (8 * (c - base)) & 0x10) != 0
                                         : [&] {  // near the row's end: the cell's corners one by one
                                             bool in = (row[0][c] & 0x10) != 0, m = false;
                                             for (int q = 0; q < 4; ++q)
                                               for (int d = 0; d < 2; ++d)
                                                 m = m || (((row[q][c + d] & 0x10) != 0) != in);
                                             return m;
                                           }();
        ASSERT_EQ((wide >> b & 1) != 0, mixed)
            << "cell " << c << " of " << n - 1 << " (seed " << parasurf::test::run_seed() << ")";
      }
    }
    // Every span visits its mixed cells once each, in order, and no other (short spans: every cell).
    for (int s = 0; s < 20; ++s) {
      const std::int64_t begin = std::int64_t(rng() % std::uint64_t(n - 1)),
                         end = begin + std::int64_t(rng() % std::uint64_t(n - 1 - begin + 1));
      std::vector<std::int64_t> seen, want;
      rows::for_mixed_cells(row, begin, end, [&](std::int64_t i) { seen.push_back(i); });
      for (std::int64_t i = begin; i < end; ++i) {
        bool in = (row[0][i] & 0x10) != 0, m = end - begin < 32;
        for (int q = 0; q < 4; ++q)
          for (int d = 0; d < 2; ++d) m = m || (((row[q][i + d] & 0x10) != 0) != in);
        if (m) want.push_back(i);
      }
      ASSERT_EQ(seen, want) << "span [" << begin << ", " << end << ") of " << n - 1 << " cells";
    }
  }
}
