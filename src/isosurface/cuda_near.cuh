// Isosurface CUDA engine, after pass 2: the vertices that may lie on a sample (near_sample.hpp), listed where the
// mesh was made so that the weld of crossings rounded onto a sample tests those few on the host instead of every
// vertex (a pass over the whole mesh after it came home).
#pragma once
#include <cstdint>

#include "isosurface/near_sample.hpp"

namespace parasurf::iso::cuda {

// The list's order follows the atomic adds (the host sorts it); past `capacity` only the count grows, and the host
// then tests every vertex.
__global__ void __launch_bounds__(256)
    near_sample_kernel(const float* __restrict__ positions, std::uint64_t vertices, NearSampleProbe probe,
                       std::uint32_t* __restrict__ ids, unsigned long long* __restrict__ count,
                       std::uint64_t capacity) {
  const std::uint64_t v = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= vertices) return;
  if (!near_sample(probe, positions + 3 * v, kNearListBase)) return;
  const unsigned long long at = atomicAdd(count, 1ull);
  if (at < capacity) ids[at] = std::uint32_t(v);
}

}  // namespace parasurf::iso::cuda
