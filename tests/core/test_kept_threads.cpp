// Kept threads run a run's jobs at once (each job waits for all the others, which would hang if they ran in turn),
// and a later run borrows the same threads again instead of making new ones.
#include <gtest/gtest.h>

#include <barrier>
#include <mutex>
#include <set>
#include <thread>

#include "core/kept_threads.hpp"

namespace parasurf {
namespace {

TEST(KeptThreads, RunJobsAtOnceAndAreLentAgain) {
  std::set<std::thread::id> first, second;
  std::mutex m;
  for (auto* ids : {&first, &second}) {
    constexpr std::size_t n = 5;
    std::barrier all(std::ptrdiff_t{n});
    std::vector<int> ran(n, 0);
    core::run_on_kept_threads(n, [&](std::size_t i) {
      all.arrive_and_wait();  // every job is running at once
      ran[i] += 1;
      std::lock_guard<std::mutex> lock(m);
      ids->insert(std::this_thread::get_id());
    });
    EXPECT_EQ(ran, std::vector<int>(n, 1)) << "every job ran once, before the run returned";
    EXPECT_EQ(ids->size(), n) << "one thread per job";
  }
  EXPECT_EQ(first, second) << "the second run should borrow the first run's threads";
  EXPECT_EQ(first.count(std::this_thread::get_id()), 0u);
}

}  // namespace
}  // namespace parasurf
