// core::prefault faults pages in without changing what they hold: fresh memory whose pages are partly written (so
// the residency check does not skip it) keeps its bytes, below 2 MiB (one system call) and above (huge pages touched
// by all threads), at unaligned ends.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstdint>
#include <algorithm>
#include <random>
#include <vector>

#include "core/memory.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

TEST(Prefault, FaultsPagesInAndKeepsTheirBytes) {
  std::mt19937_64 rng(test::run_seed() ^ 0x9a9e);
  constexpr std::size_t page = 4096;
  for (std::size_t bytes : {std::size_t(1) << 20, (std::size_t(9) << 20) + 777}) {
    const std::size_t mapped = bytes + 2 * page;
    void* m = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    auto* base = static_cast<unsigned char*>(m);
    unsigned char* p = base + 123;  // unaligned start and end
    // Every third page written with a pattern; the rest never touched.
    std::uniform_int_distribution<int> byte(1, 255);
    std::vector<unsigned char> want(bytes, 0);
    for (std::size_t at = 0; at < bytes; at += 3 * page)
      for (std::size_t k = at; k < std::min(bytes, at + 64); ++k) p[k] = want[k] = (unsigned char)byte(rng);
    core::prefault(p, bytes);
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < bytes; ++k) wrong += p[k] != want[k];
    EXPECT_EQ(wrong, 0u) << bytes << " bytes";
    // Whole pages inside the range are resident now.
    const std::size_t first = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page - reinterpret_cast<std::uintptr_t>(base);
    const std::size_t last = (reinterpret_cast<std::uintptr_t>(p) + bytes) / page * page - reinterpret_cast<std::uintptr_t>(base);
    std::vector<unsigned char> resident((last - first) / page);
    ASSERT_EQ(mincore(base + first, last - first, resident.data()), 0);
    std::size_t missing = 0;
    for (unsigned char r : resident) missing += !(r & 1);
    EXPECT_EQ(missing, 0u) << bytes << " bytes: pages not faulted in";
    munmap(m, mapped);
  }
}

}  // namespace
}  // namespace parasurf
