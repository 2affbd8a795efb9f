// Pinned double-buffered device-to-host copies into pageable memory (see staged_copy.hpp).
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "core/cuda_check.hpp"
#include "core/staged_copy.hpp"
#include "parasurf/device.hpp"

namespace parasurf::core {
namespace {

constexpr std::size_t kChunk = std::size_t(16) << 20;  // per buffer: large enough for full-rate DMA
constexpr std::size_t kStagedFrom = std::size_t(8) << 20;

// One thread's staging: two pinned buffers and their events, kept for the thread's life.
struct Staging {
  char* buffer[2] = {nullptr, nullptr};
  cudaEvent_t filled[2] = {nullptr, nullptr};
  int device = -1;
  bool failed = false;
  ~Staging() { release(); }
  void release() {
    for (int b = 0; b < 2; ++b) {
      if (buffer[b]) cudaFreeHost(buffer[b]);
      if (filled[b]) cudaEventDestroy(filled[b]);
      buffer[b] = nullptr;
      filled[b] = nullptr;
    }
  }
  bool ready(int dev) {
    if (device == dev && buffer[0]) return true;
    if (failed) return false;
    release();
    device = dev;
    for (int b = 0; b < 2; ++b)
      if (cudaHostAlloc(reinterpret_cast<void**>(&buffer[b]), kChunk, cudaHostAllocPortable) != cudaSuccess ||
          cudaEventCreateWithFlags(&filled[b], cudaEventDisableTiming) != cudaSuccess) {
        cudaGetLastError();  // pinned memory refused (locked-memory limits): the plain path from now on
        release();
        failed = true;
        return false;
      }
    return true;
  }
};

// Copies out of a staging buffer with the host's threads: one thread alone copies at a fraction of memory bandwidth.
void parallel_copy(char* dst, const char* src, std::size_t bytes) {
  const int threads = std::max(1, std::min(cpu_thread_count(0), int(bytes >> 20)));  // a MiB or more each
  const std::size_t share = (bytes + std::size_t(threads) - 1) / std::size_t(threads);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const std::size_t from = std::size_t(t) * share, to = std::min(bytes, from + share);
    if (from < to) std::memcpy(dst + from, src + from, to - from);
  }
}

}  // namespace

void download_to_pageable(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  thread_local Staging staging;
  int device = 0;
  PS_CUDA(cudaGetDevice(&device), "downloading to host memory");
  if (bytes < kStagedFrom || !staging.ready(device)) {
    PS_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream), "downloading to host memory");
    PS_CUDA(cudaStreamSynchronize(stream), "downloading to host memory");
    return;
  }
  char* out = static_cast<char*>(dst);
  const char* in = static_cast<const char*>(src);
  const std::size_t chunks = (bytes + kChunk - 1) / kChunk;
  auto size_of = [&](std::size_t c) { return std::min(kChunk, bytes - c * kChunk); };
  auto enqueue = [&](std::size_t c) {
    const int b = int(c & 1);
    PS_CUDA(cudaMemcpyAsync(staging.buffer[b], in + c * kChunk, size_of(c), cudaMemcpyDeviceToHost, stream),
            "downloading to host memory");
    PS_CUDA(cudaEventRecord(staging.filled[b], stream), "downloading to host memory");
  };
  enqueue(0);
  for (std::size_t c = 0; c < chunks; ++c) {
    // Chunk c + 1 goes into the other buffer, emptied when chunk c - 1 was copied out below.
    if (c + 1 < chunks) enqueue(c + 1);
    const int b = int(c & 1);
    PS_CUDA(cudaEventSynchronize(staging.filled[b]), "downloading to host memory");
    parallel_copy(out + c * kChunk, staging.buffer[b], size_of(c));
  }
}

}  // namespace parasurf::core
