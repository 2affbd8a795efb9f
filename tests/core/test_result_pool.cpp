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

// Under AddressSanitizer results stay on the heap, where overruns are caught.
constexpr bool kHeapResults = !test::kPooledResults;

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

// Of free blocks of one size, the one given back last serves next: a job repeated in a loop keeps taking its own
// blocks (whose copies count towards pinning them), not others of their size that earlier jobs left.
TEST(ResultPool, TheBlockGivenBackLastServesNext) {
  // An odd size, so that blocks other tests left in the pool are unlikely to be of it.
  const std::size_t n = (std::size_t(41) << 20) + 12345;
  std::size_t got[3] = {};
  std::uint8_t* blocks[3];
  for (int i = 0; i < 3; ++i) blocks[i] = core::take_scratch(n, got[i], n, "test");
  ASSERT_EQ(got[0], got[1]);
  ASSERT_EQ(got[1], got[2]);
  for (int i : {1, 0, 2}) core::give_scratch(blocks[i], got[i]);
  std::size_t size = 0;
  std::uint8_t* again = core::take_scratch(n, size, n, "test");
  EXPECT_EQ(again, blocks[2]);
  core::give_scratch(again, size);
  for (int repeat = 0; repeat < 3; ++repeat) {  // the same block, call after call
    std::uint8_t* next = core::take_scratch(n, size, n, "test");
    EXPECT_EQ(next, again) << "repeat " << repeat;
    core::give_scratch(next, size);
  }
  std::uint8_t* second = core::take_scratch(n, size, n, "test");
  std::uint8_t* third = core::take_scratch(n, size, n, "test");
  EXPECT_EQ(second, blocks[2]);
  EXPECT_EQ(third, blocks[0]) << "after the last given back, the one given back before it";
  core::give_scratch(second, size);
  core::give_scratch(third, size);
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

// Pinning on reuse (scratch.hpp): a block that device copies write each byte of once (a one-shot job, in pieces)
// stays pageable; one written over kPinAfterFills times, across lendings or in place, is pinned once, stays pinned
// while the pool keeps it, and is unpinned before the pool gives it back to the system. Memory outside the pool, or
// a range running past a block, is never pinned; a block whose pinning failed is not tried again.
namespace pins {
std::vector<std::pair<void*, std::size_t>> pinned;
std::vector<void*> unpinned;
bool refuse = false;
bool pin(void* p, std::size_t bytes) {
  if (refuse) return false;
  pinned.emplace_back(p, bytes);
  return true;
}
void unpin(void* p) { unpinned.push_back(p); }
bool copy(const void* p, std::size_t bytes) { return core::pinned_for_device_copy(p, bytes, pin, unpin); }
}  // namespace pins

TEST(ResultPool, BlocksThatCopiesFillAgainArePinnedOnceAndUnpinnedWhenDropped) {
  std::mt19937_64 rng(test::run_seed() ^ 0x91e5);
  const std::size_t mib = std::size_t(1) << 20;
  // A size no other test asks for, so that the block taken again below is this test's own.
  const std::size_t n = (std::size_t(41) + std::uniform_int_distribution<std::size_t>(0, 20)(rng)) * mib + 4096;
  pins::pinned.clear(), pins::unpinned.clear(), pins::refuse = false;
  const std::uint64_t pinned_before = core::scratch_pinned_bytes();
  std::size_t got = 0;
  std::uint8_t* const block = core::take_scratch(n, got, n, "test");
  // A job writing its result once, in slabs: not pinned.
  for (std::size_t at = 0; at < got; at += 7 * mib) EXPECT_FALSE(pins::copy(block + at, std::min(7 * mib, got - at)));
  // The block given back and lent again (the job repeated), then written in place: still not pinned, until the
  // copies reach kPinAfterFills times its size.
  core::give_scratch(block, got);
  std::size_t again_bytes = 0;
  ASSERT_EQ(core::take_scratch(n, again_bytes, n, "test"), block) << "the pool should hand the same block out again";
  ASSERT_EQ(again_bytes, got);
  for (std::uint64_t fill = 2; fill < core::kPinAfterFills; ++fill) EXPECT_FALSE(pins::copy(block, got)) << fill;
  // Outside the block, or past its end: never pinned.
  int local = 0;
  EXPECT_FALSE(pins::copy(&local, sizeof local));
  EXPECT_FALSE(pins::copy(block + got - 64, 128));
  EXPECT_FALSE(pins::copy(block + mib, got - 2 * mib)) << "pinned before the copies filled it kPinAfterFills times";
  EXPECT_TRUE(pins::pinned.empty());
  // The copy that completes the fills: pinned, the whole block, once.
  EXPECT_TRUE(pins::copy(block, 2 * mib));
  EXPECT_TRUE(pins::copy(block + 3 * mib, 5 * mib));
  ASSERT_EQ(pins::pinned.size(), 1u);
  EXPECT_EQ(pins::pinned[0].first, static_cast<void*>(block));
  EXPECT_EQ(pins::pinned[0].second, got);
  EXPECT_EQ(core::scratch_pinned_bytes(), pinned_before + got);
  EXPECT_TRUE(core::scratch_pinned(block + got - 1));
  EXPECT_FALSE(core::scratch_pinned(block + got)) << "past the block";
  core::give_scratch(block, got);
  EXPECT_TRUE(pins::unpinned.empty()) << "a block the pool keeps stays pinned";
  // Blocks returned after it push the pool past its limit: the oldest, this one, goes to the system, unpinned first.
  std::vector<std::pair<std::uint8_t*, std::size_t>> later;
  for (std::uint64_t taken = 0; taken <= core::kScratchRetained; taken += later.back().second) {
    std::size_t bytes = 0;
    later.emplace_back(core::take_scratch(100 * mib + 4096, bytes, 100 * mib + 4096, "test"), bytes);
    ASSERT_NE(later.back().first, block);
  }
  for (const auto& [p, bytes] : later) core::give_scratch(p, bytes);
  ASSERT_EQ(pins::unpinned.size(), 1u) << "the dropped block was not unpinned";
  EXPECT_EQ(pins::unpinned[0], static_cast<void*>(block));
  EXPECT_EQ(core::scratch_pinned_bytes(), pinned_before);
  EXPECT_FALSE(core::scratch_pinned(block));

  // A block the system would not pin is copied through staging from then on, and not offered again.
  pins::refuse = true;
  pins::pinned.clear();
  std::uint8_t* other = core::take_scratch(n, got, n, "test");
  for (std::uint64_t fill = 0; fill < core::kPinAfterFills; ++fill) EXPECT_FALSE(pins::copy(other, got));
  pins::refuse = false;
  EXPECT_FALSE(pins::copy(other, got)) << "a block that failed was tried again";
  EXPECT_TRUE(pins::pinned.empty());
  core::give_scratch(other, got);
}

}  // namespace
}  // namespace parasurf
