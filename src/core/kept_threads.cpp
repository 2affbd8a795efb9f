// Kept threads: each waits for its next job; a run takes idle ones (or makes more) and gives them back when done.
#include "core/kept_threads.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace parasurf::core {
namespace {

class KeptThread {
 public:
  KeptThread() : thread_([this] { serve(); }) { thread_.detach(); }
  void post(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = std::move(job);
    }
    wake_.notify_one();
  }

 private:
  void serve() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return bool(job_); });
        job = std::move(job_);
        job_ = nullptr;
      }
      job();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<void()> job_;
  std::thread thread_;  // (last: starts once the rest is made)
};

// Never freed: the threads outlive static destruction, blocked on their own objects.
std::mutex& pool_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<KeptThread*>& idle_threads() {
  static auto* idle = new std::vector<KeptThread*>;
  return *idle;
}

KeptThread* lend_thread() {
  {
    std::lock_guard<std::mutex> lock(pool_mutex());
    auto& idle = idle_threads();
    if (!idle.empty()) {
      KeptThread* t = idle.back();
      idle.pop_back();
      return t;
    }
  }
  return new KeptThread;
}

}  // namespace

struct KeptJob::State {
  std::mutex mutex;
  std::condition_variable done_wake;
  bool done = false;
};

KeptJob::KeptJob(std::function<void()> job) : state_(std::make_shared<State>()) {
  KeptThread* thread = lend_thread();
  thread->post([state = state_, job = std::move(job), thread] {
    job();
    {
      std::lock_guard<std::mutex> lock(pool_mutex());
      idle_threads().push_back(thread);
    }
    std::lock_guard<std::mutex> lock(state->mutex);
    state->done = true;
    state->done_wake.notify_all();
  });
}

void KeptJob::wait() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->done_wake.wait(lock, [&] { return state_->done; });
}

void run_on_kept_threads(std::size_t n, const std::function<void(std::size_t)>& job) {
  if (n == 0) return;
  std::vector<KeptThread*> lent;
  {
    std::lock_guard<std::mutex> lock(pool_mutex());
    auto& idle = idle_threads();
    while (lent.size() < n && !idle.empty()) {
      lent.push_back(idle.back());
      idle.pop_back();
    }
  }
  while (lent.size() < n) lent.push_back(new KeptThread);
  // (Counted under a mutex, not a latch: the last job's thread must be done with the count before this returns.)
  std::mutex done_mutex;
  std::condition_variable all_done;
  std::size_t running = n;
  for (std::size_t i = 0; i < n; ++i)
    lent[i]->post([&, i] {
      job(i);
      std::lock_guard<std::mutex> lock(done_mutex);
      if (--running == 0) all_done.notify_all();
    });
  {
    std::unique_lock<std::mutex> lock(done_mutex);
    all_done.wait(lock, [&] { return running == 0; });
  }
  std::lock_guard<std::mutex> lock(pool_mutex());
  idle_threads().insert(idle_threads().end(), lent.begin(), lent.end());
}

}  // namespace parasurf::core
