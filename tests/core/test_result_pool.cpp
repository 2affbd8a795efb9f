// Large results (HostVector) come from the process's scratch pool: a freed result's block goes back to the pool
// and the next result of a size it fits takes it, so its pages are not faulted in and cleared again. Blocks too
// large for a request stay for larger ones; threads allocating and freeing at once get distinct blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "core/scratch.hpp"
#include "parasurf/host_vector.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kHeapResults = true;  // results stay on the heap under AddressSanitizer, where overruns are caught
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kHeapResults = true;
#else
constexpr bool kHeapResults = false;
#endif
#else
constexpr bool kHeapResults = false;
#endif

// Past the pool's limit the blocks that came back longest ago go first: a job repeated with results larger than an
// earlier job's finds its own blocks again (the pool once dropped the largest blocks first, so every call of such
// a job faulted its results in anew while the earlier job's blocks stayed).
TEST(ResultPool, ARepeatedJobKeepsItsBlocksOverAnEarlierJobs) {
  const std::size_t mib = std::size_t(1) << 20, earlier = 60 * mib, later = 100 * mib;
  std::size_t got = 0;
  std::vector<std::pair<std::uint8_t*, std::size_t>> blocks;
  for (int i = 0; i < 3; ++i) blocks.emplace_back(core::take_scratch(earlier, got, earlier, "test"), got);
  for (const auto& [p, bytes] : blocks) core::give_scratch(p, bytes);
  blocks.clear();
  for (int i = 0; i < 2; ++i) blocks.emplace_back(core::take_scratch(later, got, later, "test"), got);
  const std::vector<std::pair<std::uint8_t*, std::size_t>> job = blocks;
  for (const auto& [p, bytes] : blocks) core::give_scratch(p, bytes);
  EXPECT_LE(core::scratch_retained_bytes(), core::kScratchRetained);
  const std::uint64_t before = core::scratch_retained_bytes();
  std::uint8_t* again = core::take_scratch(later, got, later, "test");
  EXPECT_EQ(core::scratch_retained_bytes() + got, before) << "the repeated job's blocks were given back to the system";
  EXPECT_TRUE(again == job[0].first || again == job[1].first);
  core::give_scratch(again, got);
}

TEST(ResultPool, AFreedResultsBlockServesTheNext) {
  if (kHeapResults) GTEST_SKIP() << "results stay on the heap under AddressSanitizer";
  std::mt19937_64 rng(test::run_seed() ^ 0x9e50);
  // An odd size, so that no block another test left in the pool is likely to be the one reused.
  const std::size_t n =
      (std::size_t(37) << 20) / sizeof(float) + std::uniform_int_distribution<std::size_t>(1, 999)(rng);
  const float* first = nullptr;
  std::uint64_t retained_after_free = 0, retained_while_held = 0;
  {
    HostVector<float> a(n);
    first = a.data();
    std::fill(a.begin(), a.end(), 1.5f);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % (std::uintptr_t(2) << 20), 0u) << "blocks start on a huge page";
    retained_while_held = core::scratch_retained_bytes();
  }
  retained_after_free = core::scratch_retained_bytes();
  EXPECT_GE(retained_after_free, retained_while_held + n * sizeof(float)) << "the freed result's block is kept";
  {
    HostVector<float> b(n);
    // The pool hands out the smallest free block that fits: this one, or one at least as small.
    EXPECT_LE(core::scratch_retained_bytes() + n * sizeof(float), retained_after_free);
    std::fill(b.begin(), b.end(), 2.5f);
    EXPECT_EQ(b[n / 2], 2.5f);
  }
  // A request for a quarter of a free block's size does not take it; one of its own size does.
  const float* again = nullptr;
  {
    HostVector<float> small(n / 4);
    EXPECT_NE(small.data(), first);
    HostVector<float> same(n);
    again = same.data();
  }
  {
    HostVector<float> small(n / 4);
    EXPECT_NE(small.data(), again);
  }
}

TEST(ResultPool, ThreadsGetDistinctBlocks) {
  std::mt19937_64 rng(test::run_seed() ^ 0x7e4d);
  const int threads = 4, rounds = 50;
  std::vector<std::uint64_t> seeds(threads);
  for (auto& s : seeds) s = rng();
  std::vector<int> bad(threads, 0);
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      std::mt19937_64 r(seeds[std::size_t(t)]);
      for (int k = 0; k < rounds; ++k) {
        const std::size_t n = std::uniform_int_distribution<std::size_t>(std::size_t(1) << 19, std::size_t(3) << 20)(r);
        HostVector<std::uint32_t> v(n);
        const std::uint32_t tag = std::uint32_t(t * 1000 + k);
        std::fill(v.begin(), v.end(), tag);
        std::this_thread::yield();
        bad[std::size_t(t)] += int(std::count_if(v.begin(), v.end(), [&](std::uint32_t x) { return x != tag; }));
      }
    });
  for (auto& th : team) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(bad[std::size_t(t)], 0) << "thread " << t << " found another's writes";
  EXPECT_LE(core::scratch_retained_bytes(), core::kScratchRetained);
}

}  // namespace
}  // namespace parasurf
