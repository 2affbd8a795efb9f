// Growable device allocation, released on destruction; every call checked.
#pragma once
#include <cstddef>

#include "core/cuda_check.hpp"

namespace parasurf::core {

struct DeviceBuffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { release(); }
  void ensure(std::size_t n, const char* what) {
    if (n <= bytes) return;
    release();
    PS_CUDA(cudaMalloc(&ptr, n), what);
    bytes = n;
  }
  void release() noexcept {
    if (ptr) cudaFree(ptr);
    ptr = nullptr;
    bytes = 0;
  }
  template <class T> T* as() const { return static_cast<T*>(ptr); }
};

}  // namespace parasurf::core
