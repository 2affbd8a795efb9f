// The CPU engine's wide row sweeps against their one-sample forms: the float and 16-bit inside rows (32 samples at a
// time, a last block overlapping the one before) against the plain loop and the rule, and the 32- and 8-cell mixed
// masks against the cells' corners, on fresh random rows of every short length, with the values that real volumes
// hold at the edges of the rules: samples on the level, NaN, infinities, the largest finite float, subnormals, the
// ends of the integer types.
#include <gtest/gtest.h>

#include <algorithm>
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
      rows::inside_row(v.data(), wide.data(), n, level, level, on[0], any[0], all[0]);  // the float overload
      rows::inside_row<float, float>(v.data(), plain.data(), n, level, level, on[1], any[1], all[1]);
      ASSERT_EQ(wide, plain) << "n " << n << " level " << level << " (seed " << parasurf::test::run_seed() << ")";
      EXPECT_EQ(wide[std::size_t(n)], 0xAB) << "a byte past the row was written";
      ASSERT_EQ(on[0], on[1]) << "n " << n;
      ASSERT_EQ(any[0], any[1]) << "n " << n;
      ASSERT_EQ(all[0], all[1]) << "n " << n;
    }
}

// 16-bit rows (CT volumes) against the rule itself: a sample is inside when it is at least the level, and on the
// level when equal to it, levels integral or not, inside the type's range or past either end, or NaN.
template <class T>
void check_small_int_rows(std::mt19937_64& rng) {
  constexpr int lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  for (int round = 0; round < 40; ++round)
    for (std::int64_t n = 1; n <= 100; ++n) {
      float level;
      switch (rng() % 6) {
        case 0:
          level = float(lo + int(rng() % std::uint64_t(hi - lo + 1)));
          break;  // integral: samples may equal it
        case 1:
          level = float(lo + int(rng() % std::uint64_t(hi - lo + 1))) + 0.5f;
          break;
        case 2:
          level = float(lo) - float(rng() % 3);
          break;  // at or below the lowest value: all inside
        case 3:
          level = float(hi) + float(rng() % 3);
          break;  // at or above the highest
        case 4:
          level = std::numeric_limits<float>::quiet_NaN();
          break;
        default:
          level = std::uniform_real_distribution<float>(-1e5f, 1e5f)(rng);
      }
      std::vector<T> v(static_cast<std::size_t>(n));
      const int centre = std::isfinite(level) ? std::clamp(int(std::lround(level)), lo, hi) : 0;
      for (auto& x : v)
        x = rng() % 4 == 0 ? T(lo + int(rng() % std::uint64_t(hi - lo + 1)))
                           : T(std::clamp(centre + int(rng() % 5) - 2, lo, hi));  // near the level: ties and both sides
      std::vector<std::uint8_t> got(static_cast<std::size_t>(n) + 1, 0xAB), want(static_cast<std::size_t>(n));
      std::uint8_t on, any, all, want_on = 0, want_any = 0, want_all = 1;
      rows::inside_row_small_int<T>(v.data(), got.data(), n, level, level, on, any, all);
      for (std::int64_t i = 0; i < n; ++i) {
        const float x = float(v[std::size_t(i)]);
        const std::uint8_t in = x >= level, eq = x == level;
        want[std::size_t(i)] = std::uint8_t(in | eq << 1);
        want_on |= eq, want_any |= in, want_all &= in;
      }
      ASSERT_EQ(std::vector<std::uint8_t>(got.begin(), got.begin() + n), want)
          << sizeof(T) * 8 << "-bit row of " << n << ", level " << level << " (seed " << parasurf::test::run_seed()
          << ")";
      EXPECT_EQ(got[std::size_t(n)], 0xAB) << "a byte past the row was written";
      ASSERT_EQ(on, want_on);
      ASSERT_EQ(any, want_any);
      ASSERT_EQ(all, want_all);
    }
}

TEST(CpuRows, SixteenBitInsideRowsFollowTheRule) {
  std::mt19937_64 rng(parasurf::test::run_seed() ^ 0x1616);
  check_small_int_rows<std::int16_t>(rng);
  check_small_int_rows<std::uint16_t>(rng);
  check_small_int_rows<std::int8_t>(rng);
}

namespace {
// Whether cell c between four flag rows has corners on both sides, corner by corner.
bool mixed_by_corners(const std::uint8_t* const* row, std::int64_t c) {
  const bool in = (row[0][c] & 0x10) != 0;
  for (int q = 0; q < 4; ++q)
    for (int d = 0; d < 2; ++d)
      if (((row[q][c + d] & 0x10) != 0) != in) return true;
  return false;
}
}  // namespace

TEST(CpuRows, MixedCellMasksMatchTheCorners) {
  std::mt19937_64 rng(parasurf::test::run_seed() ^ 0x5eed);
  for (int round = 0; round < 200; ++round) {
    const std::int64_t n = 33 + std::int64_t(rng() % 200);  // points; cells 0 .. n - 2
    std::vector<std::uint8_t> flags(4 * std::size_t(n));
    const std::uint64_t density = 1 + rng() % 64;  // how seldom a point is inside: sparse to dense mixed cells
    for (auto& f : flags) f = std::uint8_t((rng() % density == 0 ? 0x10 : 0) | (rng() & 0x4F));
    const std::uint8_t* row[4] = {flags.data(), flags.data() + n, flags.data() + 2 * n, flags.data() + 3 * n};
    for (std::int64_t i = 0; i + 33 <= n; ++i) {
      const std::uint32_t wide = rows::mixed32(row, i);
      const std::uint64_t narrow = rows::mixed8(row, i);
      for (int b = 0; b < 32; ++b) {
        const bool mixed = mixed_by_corners(row, i + b);
        ASSERT_EQ((wide >> b & 1) != 0, mixed)
            << "mixed32: cell " << i + b << " of " << n - 1 << " (seed " << parasurf::test::run_seed() << ")";
        if (b < 8) ASSERT_EQ((narrow >> (8 * b) & 0x10) != 0, mixed) << "mixed8: cell " << i + b;
      }
    }
    // Every span visits its mixed cells once each, in order, and no other (short spans: every cell).
    for (int s = 0; s < 20; ++s) {
      const std::int64_t begin = std::int64_t(rng() % std::uint64_t(n - 1)),
                         end = begin + std::int64_t(rng() % std::uint64_t(n - 1 - begin + 1));
      std::vector<std::int64_t> seen, want;
      rows::for_mixed_cells(row, begin, end, [&](std::int64_t i) { seen.push_back(i); });
      for (std::int64_t i = begin; i < end; ++i)
        if (end - begin < 32 || mixed_by_corners(row, i)) want.push_back(i);
      ASSERT_EQ(seen, want) << "span [" << begin << ", " << end << ") of " << n - 1 << " cells";
    }
  }
}
