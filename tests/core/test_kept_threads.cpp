// Kept threads run a run's jobs at once (each job waits for all the others, which would hang if they ran in turn),
// and a later run borrows the same threads again instead of making new ones.
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
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

// A job started beside the caller runs while the caller works (each waits for the other's signal, which would hang if
// the job ran in wait()), wait() returns once it has run, and the next job borrows the same thread.
TEST(KeptThreads, AJobRunsBesideTheCallerOnAKeptThread) {
  std::thread::id ids[2];
  for (auto& id : ids) {
    std::barrier both(2);
    int ran = 0;
    {
      core::KeptJob job([&] {
        both.arrive_and_wait();  // the caller is running too
        ran = 1;
        id = std::this_thread::get_id();
      });
      both.arrive_and_wait();
      job.wait();
      EXPECT_EQ(ran, 1) << "wait() returns once the job has run";
      job.wait();  // a second wait returns at once
    }
    EXPECT_NE(id, std::this_thread::get_id());
  }
  EXPECT_EQ(ids[0], ids[1]) << "the second job should borrow the first one's thread";
  int ran = 0;
  {
    core::KeptJob job([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ran = 1;
    });
  }
  EXPECT_EQ(ran, 1) << "the destructor waits for the job";
}

}  // namespace
}  // namespace parasurf
