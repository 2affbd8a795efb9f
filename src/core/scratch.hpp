// Scratch memory for engines' per-call work arrays (classification bytes and the like), kept between calls.
//
// A work array of a large extraction is tens of MiB: taken fresh from the system on every call, the kernel zeroes
// each page at its first touch, a cost of the same order as the extraction's own sweeps. Blocks come
// straight from mmap (2 MiB aligned, huge pages on request), so that keeping them does not move malloc's
// thresholds for the caller's own allocations, and return to a process-wide pool when the engine lets go; the
// pool keeps up to kScratchRetained bytes and gives the rest back to the system.
#pragma once
#include <cstddef>
#include <cstdint>

namespace parasurf::core {

inline constexpr std::uint64_t kScratchRetained = std::uint64_t(256) << 20;

class ScratchBlock {
 public:
  ScratchBlock() = default;
  ScratchBlock(const ScratchBlock&) = delete;
  ScratchBlock& operator=(const ScratchBlock&) = delete;
  ScratchBlock(ScratchBlock&& o) noexcept;
  ScratchBlock& operator=(ScratchBlock&& o) noexcept;
  ~ScratchBlock();

  // At least n bytes, contents undefined (a smaller block goes back to the pool first). With fault_in, pages not
  // yet resident are faulted in by all threads now rather than one trap at a time in the caller's loops.
  // Throws Error(OutOfMemory) naming `what` when the system refuses.
  void reserve(std::size_t n, bool fault_in, const char* what);
  std::uint8_t* data() { return data_; }
  const std::uint8_t* data() const { return data_; }
  std::size_t capacity() const { return bytes_; }

 private:
  void release();
  std::uint8_t* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Bytes the pool holds for later calls (tests).
std::uint64_t scratch_retained_bytes();

}  // namespace parasurf::core
