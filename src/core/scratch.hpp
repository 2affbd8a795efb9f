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

// The pool's blocks one at a time (ScratchBlock is built on these; result arrays take them too): at least n bytes
// in a block of `bytes`, a free block no larger than max(n rounded up, largest) or a fresh mapping; throws
// Error(OutOfMemory) naming `what`. give_scratch takes back a block with the size take_scratch reported.
std::uint8_t* take_scratch(std::size_t n, std::size_t& bytes, std::size_t largest, const char* what);
void give_scratch(std::uint8_t* data, std::size_t bytes) noexcept;

// Bytes the pool holds for later calls (tests).
std::uint64_t scratch_retained_bytes();

}  // namespace parasurf::core
