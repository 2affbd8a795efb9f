// What the surface CUDA kernels (cuda.cu, cuda_tensor.cu) share: the compiled-in output sets, the out-of-line
// degenerate-normal fix-up, and the interface of the tensor-core path of the factored method.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "bezier/backend.hpp"

namespace parasurf::bezier::cuda {

// Output sets the factored kernels are compiled for; kOutRuntime tests every output pointer at run time.
enum : int { kOutRuntime = 0, kOutPositions = 1, kOutFirst = 2, kOutNormals = 4, kOutSecond = 8 };

// Finishes a sample whose Su x Sv vanished: the limit normal from a second-order re-evaluation. Out of line
// and called after the register tile is stored, so the rare path holds no registers of the common one.
template <class T, int NC>
__device__ __noinline__ void fix_degenerate_normal(kern::NetView<T> net, T u, T v, T* n0, T* n1, T* n2) {
  T nrm[3];
  kern::degenerate_normal<T, NC>(net, u, v, nrm);
  *n0 = nrm[0], *n1 = nrm[1], *n2 = nrm[2];
}

// Tensor-core path (float grids, positions and first derivatives, m + 1 <= kTensorMaxTerms): stage 2 of the
// factored method as warp-level TF32 matrix products with split operands (cuda_tensor.cu).
namespace tensor {
constexpr int kMaxTerms = 20;  // u-degree + 1: the u-basis of a warp's rows stays in registers

// Whether this device and build run the tensor-core kernels (compute capability 8.0 or later, code for it).
bool available(int device);
// Whether a job of this shape takes the path (output set compiled in, order <= 1, degree and size in range).
bool takes(int nc, int order, int m, std::int64_t rows, int outs);
// Bytes of stage 1 in the path's layout (operands split into TF32 halves, in MMA fragment order).
std::size_t columns_bytes(int nc, int order, int m, std::int64_t cols);
// Stage 1 into that layout (job.net and job.tables are device pointers).
void build_columns(const Job<float>& job, float* q, cudaStream_t stream);
// Stage 2 for rows [row_begin, row_end); out points at row row_begin.
void launch(const Job<float>& job, const float* q, std::int64_t row_begin, std::int64_t row_end,
            const kern::OutView<float>& out, int outs, int multiprocessors, cudaStream_t stream);
}  // namespace tensor

}  // namespace parasurf::bezier::cuda
