// Exceptions must not leave an OpenMP region: the runtime ends the process when one does. Each iteration's body
// runs through capture(), which keeps the first exception and makes later iterations skip their work; rethrow(),
// after the region, throws it on the calling thread.
#pragma once
#include <atomic>
#include <exception>
#include <mutex>

namespace parasurf::core {

class RegionErrors {
 public:
  template <class F>
  void capture(F&& body) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return;
    try {
      body();
    } catch (...) {
      const std::lock_guard<std::mutex> lock(guard_);
      if (!first_) first_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::atomic<bool> failed_{false};
  std::mutex guard_;
  std::exception_ptr first_;
};

}  // namespace parasurf::core
