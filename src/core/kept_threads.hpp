// Threads kept for the process's life, lent to jobs that need threads of their own (a worker per GPU): a thread's
// OpenMP team is made when it first runs a parallel loop and goes down with the thread, a visible cost at the end of
// every several-GPU run if each run started and joined threads of its own.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>

namespace parasurf::core {

// Runs job(0), ..., job(n - 1) at once on n kept threads (idle ones lent again, more made as needed) and returns
// when all have returned. The job catches its own exceptions (one that escapes ends the process, as it would on a
// std::thread).
void run_on_kept_threads(std::size_t n, const std::function<void(std::size_t)>& job);

// One job started on a kept thread beside the caller (a slab's read or upload ahead, every slab of a run: a thread
// made for each would also make its OpenMP team anew). wait() returns once the job has returned; the destructor
// waits too. The job catches its own exceptions.
class KeptJob {
 public:
  explicit KeptJob(std::function<void()> job);
  ~KeptJob() { wait(); }
  KeptJob(const KeptJob&) = delete;
  KeptJob& operator=(const KeptJob&) = delete;
  void wait();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace parasurf::core
