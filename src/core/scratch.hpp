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

// Pinning on reuse. A GPU copy into pageable memory goes through pinned staging that the host's cores empty: three
// passes over host memory per byte, at the rate of the host's memory rather than the link's. A block of the pool
// that device copies fill again and again (a process repeating a job, whose freed results' blocks serve the next
// call, or a caller evaluating into the same arrays) is pinned (page-locked) once and stays so while the pool keeps
// it, so that later copies go straight at the link's rate. Pinning a block costs about as much as a few staged
// copies into it (and unpinning as much again), so only a block that device copies have written over several
// times is pinned; a one-shot job, which writes each byte of its results once, never pays for it.
//
// Whether [p, p + bytes) lies in one block of the pool that is pinned: once device copies have written
// kPinAfterFills times the block's size into it (this one counted), it is pinned by `pin` (which returns false
// where it cannot pin; the block is then never tried again), and `unpin` is called on it before the pool gives it
// back to the system. Memory outside the pool: false. The CUDA runtime passes its registration functions, so that
// this file stays free of CUDA.
inline constexpr std::uint64_t kPinAfterFills = 4;
using PinFunction = bool (*)(void* data, std::size_t bytes);
using UnpinFunction = void (*)(void* data);
bool pinned_for_device_copy(const void* p, std::size_t bytes, PinFunction pin, UnpinFunction unpin);
// Bytes of the pool's blocks (lent or free) that are pinned, and whether p lies in a pinned block (tests).
std::uint64_t scratch_pinned_bytes();
bool scratch_pinned(const void* p);

}  // namespace parasurf::core
