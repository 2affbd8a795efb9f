// Every CUDA call goes through PS_CUDA(call, "what was being done"): failures become parasurf::Error.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "parasurf/error.hpp"

namespace parasurf::core {

[[noreturn]] inline void throw_cuda(cudaError_t err, const char* what, const char* call) {
  throw Error(err == cudaErrorMemoryAllocation ? ErrorKind::OutOfMemory : ErrorKind::Device,
              std::string("CUDA error while ") + what + ": " + cudaGetErrorString(err) + " (" + call + ")");
}

}  // namespace parasurf::core

#define PS_CUDA(call, what)                                                 \
  do {                                                                      \
    const cudaError_t ps_err_ = (call);                                     \
    if (ps_err_ != cudaSuccess) ::parasurf::core::throw_cuda(ps_err_, what, #call); \
  } while (0)

// After a kernel launch: launch-configuration errors now, execution errors at the next synchronisation.
#define PS_CUDA_LAUNCH(what) PS_CUDA(cudaGetLastError(), what)

#include <map>
#include <mutex>
#include <utility>

namespace parasurf::core {

// Raises a kernel's dynamic shared memory limit on the current device to at least `bytes`, never lowers it: the
// attribute belongs to the process, so a lower value set by one thread would fail another's launch in flight.
inline void allow_dynamic_shared_memory(const void* kernel, std::size_t bytes, const char* what) {
  static std::mutex guard;
  static std::map<std::pair<int, const void*>, std::size_t> allowed;
  int device = 0;
  PS_CUDA(cudaGetDevice(&device), what);
  const std::lock_guard<std::mutex> lock(guard);
  std::size_t& now = allowed[{device, kernel}];
  if (bytes <= now) return;
  PS_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)), what);
  now = bytes;
}

}  // namespace parasurf::core
