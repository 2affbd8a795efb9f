// Arrays shared with callers without copies: strided views of their memory in (numpy, DLPack, the CUDA array
// interface), owned buffers out that a caller can adopt (a numpy array, a DLPack tensor).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "parasurf/volume.hpp"

namespace parasurf {

enum class MemorySpace { Host, Cuda };

// A 3-D array in the caller's memory: element (a0, a1, a2) lies at data + a0·strides[0] + a1·strides[1] +
// a2·strides[2] bytes (numpy's layout; strides may be negative or zero). A CUDA array lives on `device`.
struct ArrayView3 {
  const void* data = nullptr;
  VoxelType type = VoxelType::Float32;
  std::array<std::int64_t, 3> shape{0, 0, 0};
  std::array<std::int64_t, 3> strides{0, 0, 0};  // bytes
  MemorySpace space = MemorySpace::Host;
  int device = 0;

  // Strides of a C-ordered array of this shape and type.
  static std::array<std::int64_t, 3> c_strides(std::array<std::int64_t, 3> shape, VoxelType type);
  bool c_contiguous() const;
  // The view of every step-th element along each axis (shape rounded up, as numpy's a[::s, ::s, ::s]).
  ArrayView3 stepped(std::int64_t step) const;
};

// A block of memory the library filled: host memory (a moved vector) or a CUDA allocation on `device`, freed
// when the last copy of `owner` goes.
struct Buffer {
  std::shared_ptr<void> owner;
  void* data = nullptr;
  std::size_t bytes = 0;
  MemorySpace space = MemorySpace::Host;
  int device = 0;

  template <class T, class A>
  static Buffer adopt(std::vector<T, A>&& values) {
    auto held = std::make_shared<std::vector<T, A>>(std::move(values));
    Buffer b;
    b.data = held->data();
    b.bytes = held->size() * sizeof(T);
    b.owner = std::move(held);
    return b;
  }
  // Device memory of `bytes` on `device`; throws Error(OutOfMemory) or Error(Device).
  static Buffer cuda(int device, std::size_t bytes);
};

// Makes later work on this process's CUDA device see what the producer's `stream` wrote (DLPack / CUDA array
// interface numbering: 1 the legacy default stream, 2 the per-thread default stream, else a cudaStream_t): waits
// for that stream's work so far. Does nothing for 0 or without CUDA.
void cuda_wait_stream(int device, std::uintptr_t stream);
// The CUDA device whose memory holds `p`, or -1 for host memory (and without CUDA).
int cuda_device_of(const void* p);

}  // namespace parasurf
