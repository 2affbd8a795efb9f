// CPU thread counts and host memory checks.
#include <omp.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/memory.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

int hardware_threads() { return omp_get_num_procs(); }

int cpu_thread_count(int requested) {
  if (requested < 0) throw Error(ErrorKind::InvalidArgument, "--threads must be >= 0 (0 = all), got " + std::to_string(requested));
  return requested == 0 ? omp_get_max_threads() : requested;
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

std::string format_bytes(std::uint64_t bytes) {
  char buf[64];
  const double b = double(bytes);
  if (b >= 1ull << 30) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
  else if (b >= 1ull << 20) std::snprintf(buf, sizeof buf, "%.2f MiB", b / double(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)bytes);
  return buf;
}

void check_host_allocation(std::uint64_t bytes, const std::string& what) {
  const std::uint64_t avail = available_host_memory();
  if (avail != 0 && bytes > avail)
    throw Error(ErrorKind::OutOfMemory, what + " needs " + format_bytes(bytes) + " but only " + format_bytes(avail) +
                                            " of host memory is available");
}

}  // namespace core
}  // namespace parasurf
