// Storage of HostVector (include/parasurf/host_vector.hpp): results whose elements the library writes itself.
#include "parasurf/host_vector.hpp"

#include "core/scratch.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <unordered_map>

namespace parasurf::detail {

namespace {
constexpr std::size_t kHuge = std::size_t(2) << 20;

// Under AddressSanitizer fresh results are filled with 0xFF bytes (NaN, -1, the largest index), so that an element
// the library forgot to write shows in the tests instead of reading as the zero a fresh page happens to hold.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPoison = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kPoison = true;
#else
constexpr bool kPoison = false;
#endif
#else
constexpr bool kPoison = false;
#endif

// Large results come from the process's scratch pool (core/scratch.hpp): a result freed by the caller leaves its
// pages resident for the next one, which then costs no page faults or clearing by the system (a 256³ mesh's arrays
// are about 15 MiB; clearing them was a tenth of the extraction on two cores). Lent blocks are listed here, as
// the allocator frees with the size it asked for, not the block's. Under AddressSanitizer results stay on the heap,
// where overruns are caught.
struct Lent {
  std::mutex guard;
  std::unordered_map<void*, std::size_t> blocks;
};
Lent& lent() {
  static auto* l = new Lent();  // never destroyed: results may outlive static destruction (a Python array)
  return *l;
}

}  // namespace

void* allocate_result(std::size_t bytes) {
  void* p = nullptr;
  if (bytes >= kHuge && !kPoison) {
    std::size_t got = 0;
    std::uint8_t* block = nullptr;
    try {
      // A free block up to twice the size asked for is taken; a larger one stays for a larger result.
      block = core::take_scratch(bytes, got, 2 * bytes, "result array");
      Lent& l = lent();
      std::lock_guard<std::mutex> lock(l.guard);
      l.blocks.emplace(block, got);
    } catch (const std::exception&) {
      if (block) core::give_scratch(block, got);
      throw std::bad_alloc();
    }
    return block;
  }
  if (bytes >= kHuge) {
    if (posix_memalign(&p, kHuge, bytes) != 0) throw std::bad_alloc();
  } else {
    p = ::operator new(bytes);
  }
  if (kPoison) std::memset(p, 0xFF, bytes);
  return p;
}

void free_result(void* p, std::size_t bytes) noexcept {
  if (bytes >= kHuge && !kPoison) {
    Lent& l = lent();
    std::size_t got = 0;
    {
      std::lock_guard<std::mutex> lock(l.guard);
      auto it = l.blocks.find(p);
      if (it == l.blocks.end()) return;  // not lent by allocate_result: nothing of ours to give back
      got = it->second;
      l.blocks.erase(it);
    }
    core::give_scratch(static_cast<std::uint8_t*>(p), got);
  } else if (bytes >= kHuge) {
    std::free(p);
  } else {
    ::operator delete(p);
  }
}

}  // namespace parasurf::detail
