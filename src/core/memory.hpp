// Host memory checks made before large allocations, so that absurd sizes fail with a message, not a crash.
#pragma once
#include <cstdint>
#include <algorithm>
#include <string>
#include <vector>

namespace parasurf::core {

// Bytes of host memory the system reports as available (MemAvailable), or 0 when unknown.
std::uint64_t available_host_memory();

// Throws Error(OutOfMemory) naming `what`, the bytes needed and the bytes available when it cannot fit.
void check_host_allocation(std::uint64_t bytes, const std::string& what);

std::string format_bytes(std::uint64_t bytes);

// Faults in the pages of [p, p + bytes), memory no other thread uses yet (contents unchanged): below 2 MiB in one
// system call (Linux MADV_POPULATE_WRITE), from 2 MiB as transparent huge pages touched by all threads.
void prefault(void* p, std::uint64_t bytes);

// memcpy split over `threads` OpenMP threads (one copy below 1 MiB): one core moves a fraction of what the memory can.
void parallel_copy(void* to, const void* from, std::size_t bytes, int threads);

// v.resize(n) for a vector of plain values whose new part is about to be overwritten: fresh pages are faulted in
// by all threads first (a HostVector's new elements are then left as they are, a std::vector's cleared). Grows by
// half again beyond the first allocation, as slabs are appended one by one.
template <class T, class A> void resize_for_overwrite(std::vector<T, A>& v, std::size_t n) {
  if (n > v.capacity()) {
    v.reserve(v.capacity() == 0 ? n : std::max(n, v.capacity() + v.capacity() / 2));
    prefault(v.data() + v.size(), std::uint64_t(v.capacity() - v.size()) * sizeof(T));
  }
  v.resize(n);
}

}  // namespace parasurf::core
