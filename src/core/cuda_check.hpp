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
