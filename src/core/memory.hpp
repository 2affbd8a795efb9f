// Host memory checks made before large allocations, so that absurd sizes fail with a message, not a crash.
#pragma once
#include <cstdint>
#include <string>

namespace parasurf::core {

// Bytes of host memory the system reports as available (MemAvailable), or 0 when unknown.
std::uint64_t available_host_memory();

// Throws Error(OutOfMemory) naming `what`, the bytes needed and the bytes available when it cannot fit.
void check_host_allocation(std::uint64_t bytes, const std::string& what);

std::string format_bytes(std::uint64_t bytes);

}  // namespace parasurf::core
