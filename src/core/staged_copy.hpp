// Device-to-host copies into ordinary (pageable) memory, through pinned staging buffers: the GPU's copy engine
// fills one buffer while the host's threads empty the other. The driver's own pageable path copies out of its
// staging memory on one thread, about 10-15 GB/s on an H200 host, and slower when several processes copy at once.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace parasurf::core {

// Copies `bytes` from device memory `src` to pageable host memory `dst` on `stream` and returns when they are
// there. Small copies, and hosts where pinned memory cannot be had, take the plain cudaMemcpyAsync path.
// Thread-safe: each host thread has its own staging buffers.
void download_to_pageable(void* dst, const void* src, std::size_t bytes, cudaStream_t stream = nullptr);

}  // namespace parasurf::core
