// The macro vocabulary that lets one inline function serve the CPU loops and the CUDA kernels.
#pragma once
#if defined(__CUDACC__)
#define PS_HD __host__ __device__ __forceinline__
#define PS_RESTRICT __restrict__
#else
#define PS_HD inline
#define PS_RESTRICT __restrict__
#endif
