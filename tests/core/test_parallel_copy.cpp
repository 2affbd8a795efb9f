// core::parallel_copy gives the source's bytes whatever the size, the thread count and the alignment of both ends:
// small copies (memcpy), pieces from 256 KiB (streamed stores with a head to align and a tail), split over threads.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/memory.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

TEST(ParallelCopy, GivesTheSourcesBytesAtEverySizeAndAlignment) {
  const std::uint64_t seed = test::run_seed() ^ 0xc0b7;
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> from((std::size_t(9) << 20) + 64), to(from.size() + 64);
  for (auto& b : from) b = static_cast<unsigned char>(rng());
  const std::size_t sizes[] = {0,
                               1,
                               15,
                               63,
                               64,
                               65,
                               4096 + 3,
                               (std::size_t(256) << 10) - 1,
                               std::size_t(256) << 10,
                               (std::size_t(256) << 10) + 17,
                               (std::size_t(1) << 20) + 5,
                               (std::size_t(9) << 20) - 31};
  for (const std::size_t bytes : sizes)
    for (const int threads : {1, 2, 3, 16})
      for (const std::size_t src_off : {std::size_t(0), std::size_t(5)})
        for (const std::size_t dst_off : {std::size_t(0), std::size_t(9), std::size_t(16)}) {
          std::fill(to.begin(), to.end(), 0xA5);
          core::parallel_copy(to.data() + dst_off, from.data() + src_off, bytes, threads);
          std::size_t wrong = 0;
          for (std::size_t k = 0; k < bytes; ++k) wrong += to[dst_off + k] != from[src_off + k];
          // Nothing written outside the destination.
          for (std::size_t k = 0; k < dst_off; ++k) wrong += to[k] != 0xA5;
          for (std::size_t k = dst_off + bytes; k < to.size(); ++k) wrong += to[k] != 0xA5;
          ASSERT_EQ(wrong, 0u) << bytes << " bytes, " << threads << " threads, source +" << src_off << ", destination +"
                               << dst_off << " (seed " << seed << ")";
        }
}

}  // namespace
}  // namespace parasurf
