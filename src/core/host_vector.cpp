// Storage of HostVector (include/parasurf/host_vector.hpp): results whose elements the library writes itself.
#include "parasurf/host_vector.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#ifdef __linux__
#include <sys/mman.h>
#endif

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
}  // namespace

void* allocate_result(std::size_t bytes) {
  void* p = nullptr;
  if (bytes >= kHuge) {
    // Aligned to a huge page so that the system can back it with huge pages when asked (madvise mode).
    if (posix_memalign(&p, kHuge, bytes) != 0) throw std::bad_alloc();
#ifdef __linux__
    madvise(p, bytes & ~(kHuge - 1), MADV_HUGEPAGE);  // a hint: no harm where refused
#endif
  } else {
    p = ::operator new(bytes);
  }
  if (kPoison) std::memset(p, 0xFF, bytes);
  return p;
}

void free_result(void* p, std::size_t bytes) noexcept {
  if (bytes >= kHuge)
    std::free(p);
  else
    ::operator delete(p);
}

}  // namespace parasurf::detail
