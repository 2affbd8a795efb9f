// CPU thread counts and host memory checks.
#include <omp.h>

#include <algorithm>
#include <atomic>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#ifdef __linux__
#include <sys/mman.h>
#endif
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#endif

#include "core/memory.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

int hardware_threads() { return omp_get_num_procs(); }

namespace {
std::atomic<int> g_default_threads{0};
}

void set_default_cpu_threads(int threads) { g_default_threads = std::max(0, threads); }

int cpu_thread_limit() { return std::max(64, 8 * hardware_threads()); }

int cpu_thread_count(int requested) {
  if (requested < 0) throw Error(ErrorKind::InvalidArgument, "threads must be >= 0 (0 = all), got " + std::to_string(requested));
  // Each OpenMP thread has a stack of its own: a team of 100,000 exhausted the address space and crashed.
  // (The limit is at least 64: smaller requests skip it, whose processor count is a system call each time, and the
  // solver asks for one thread per system of a batch.)
  if (requested > 0) return requested <= 64 ? requested : std::min(requested, cpu_thread_limit());
  const int fixed = g_default_threads.load();
  return fixed > 0 ? fixed : omp_get_max_threads();
}

int cpu_thread_count_for(int requested, std::int64_t work, std::int64_t per_thread) {
  const int all = cpu_thread_count(requested);
  if (requested > 0) return all;
  const std::int64_t busy = per_thread > 0 ? work / per_thread : all;
  return int(std::clamp<std::int64_t>(busy, 1, all));
}

namespace core {

std::uint64_t available_host_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t value = 0;
  std::string unit;
  while (in >> key >> value >> unit)
    if (key == "MemAvailable:") return value * 1024;
  return 0;
}

#ifdef __linux__
namespace {
// Whether every page of [from, to) (page-aligned) is in memory, by mincore in blocks of 4096 pages.
bool all_pages_resident(std::uintptr_t from, std::uintptr_t to) {
  constexpr std::uintptr_t page = 4096, block = 4096;
  unsigned char resident[block];
  for (std::uintptr_t a = from; a < to; a += block * page) {
    const std::uintptr_t len = std::min(to - a, block * page);
    if (mincore(reinterpret_cast<void*>(a), len, resident) != 0) return false;
    for (std::uintptr_t n = 0; n < len / page; ++n)
      if (!(resident[n] & 1)) return false;
  }
  return true;
}
}  // namespace
#endif

void prefault(void* p, std::uint64_t bytes) {
#ifdef __linux__
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif
  constexpr std::uintptr_t page = 4096;
  const std::uintptr_t from = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
  const std::uintptr_t to = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(page - 1);
  if (to <= from) return;
  // Memory that malloc hands back from its own free lists is usually resident already: walking its pages again
  // costs more than writing them (4× on a 1 MiB mesh), while a residency query of the range costs a tenth of that.
  if (all_pages_resident(from, to)) return;
  // From 2 MiB, all threads: a slab's share of a mesh (tens of MiB) faulted in on one thread can take as long as the
  // GPU's whole extraction.
  if (to - from < (std::uintptr_t(2) << 20)) {
    // Small: one call on this thread, cheaper than a trap per page (a few µs each in a virtual machine).
    madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);  // older kernels: EINVAL, no harm
    return;
  }
  // Transparent huge pages where the system allows them on request: a 512th of the faults. The pages are then
  // touched by all threads (an atomic add of zero: a write that changes nothing): a fault takes only its own
  // mapping's lock, where MADV_POPULATE_WRITE holds the process's address-space lock and stalled the CUDA driver's
  // allocations meanwhile.
  madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
  const std::int64_t pages = std::int64_t((to - from) / page);
#pragma omp parallel for schedule(static) num_threads(cpu_thread_count(0))
  for (std::int64_t k = 0; k < pages; ++k)
    __atomic_fetch_add(reinterpret_cast<char*>(from + std::uintptr_t(k) * page), char(0), __ATOMIC_RELAXED);
#else
  (void)p, (void)bytes;
#endif
}

namespace {

// Pieces at least this large are copied with non-temporal stores.
constexpr std::size_t kStreamedPiece = std::size_t(256) << 10;

// memcpy whose stores bypass the caches (x86-64: SSE2 streaming stores, which every such CPU has). A plain copy
// first reads each destination line into the cache to write it (three memory streams per byte copied); a piece
// this large is not in the cache anyway, and the reader of these copies is a DMA engine or a later pass. On 2 cores,
// 8 MiB pieces through a 32 MiB ring: 39.8 against 34.6 GB/s; on an H100 host's 16 threads, a 64 MiB pageable array
// staged up in 1.56-1.60 ms against 1.69 ms (separate instances of the host). glibc's memcpy streams only beyond a
// fraction of the last-level cache, which a piece split over many threads does not reach.
void stream_copy(void* to, const void* from, std::size_t bytes) {
#if defined(__x86_64__) || defined(_M_X64)
  auto* d = static_cast<char*>(to);
  const auto* s = static_cast<const char*>(from);
  const std::size_t head = std::min(bytes, (16 - reinterpret_cast<std::uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  std::size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, bytes - i);
  _mm_sfence();  // the streamed stores are visible before the copy counts as done (a DMA reads them next)
#else
  std::memcpy(to, from, bytes);
#endif
}

}  // namespace

void parallel_copy(void* to, const void* from, std::size_t bytes, int threads) {
  if (threads <= 1 || bytes < (std::size_t(1) << 20)) {
    if (bytes >= kStreamedPiece) stream_copy(to, from, bytes);
    else std::memcpy(to, from, bytes);
    return;
  }
  const std::size_t per = ((bytes + std::size_t(threads) - 1) / std::size_t(threads) + 63) & ~std::size_t(63);
  const bool streamed = per >= kStreamedPiece;
#pragma omp parallel for num_threads(threads)
  for (int k = 0; k < threads; ++k) {
    const std::size_t a = std::size_t(k) * per;
    if (a >= bytes) continue;
    char* d = static_cast<char*>(to) + a;
    const char* s = static_cast<const char*>(from) + a;
    if (streamed) stream_copy(d, s, std::min(per, bytes - a));
    else std::memcpy(d, s, std::min(per, bytes - a));
  }
}

std::string format_bytes(std::uint64_t bytes) {
  char buf[64];
  const double b = double(bytes);
  if (b >= 1ull << 30) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
  else if (b >= 1ull << 20) std::snprintf(buf, sizeof buf, "%.2f MiB", b / double(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)bytes);
  return buf;
}

void check_host_allocation(std::uint64_t bytes, const std::string& what) {
  // Below 16 MiB the check is not worth reading /proc/meminfo (as long as a small extraction's scan):
  // such an allocation that still fails throws std::bad_alloc, which the callers report.
  if (bytes < (std::uint64_t(16) << 20)) return;
  const std::uint64_t avail = available_host_memory();
  if (avail != 0 && bytes > avail)
    throw Error(ErrorKind::OutOfMemory, what + " needs " + format_bytes(bytes) + " but only " + format_bytes(avail) +
                                            " of host memory is available");
}

}  // namespace core

void check_host_memory(std::uint64_t bytes, const std::string& what) { core::check_host_allocation(bytes, what); }

}  // namespace parasurf
