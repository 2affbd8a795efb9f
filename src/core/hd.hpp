// The macro vocabulary that lets one inline function serve the CPU loops and the CUDA kernels.
#pragma once
#if defined(__CUDACC__)
#define PS_HD __host__ __device__ __forceinline__
#define PS_RESTRICT __restrict__
// rare paths kept out of line so that their registers and stack do not burden the hot loop
#define PS_HD_NOINLINE __host__ __device__ __noinline__
// rare paths kept out of line in CPU loops only (the kernels were measured with them inline)
#define PS_HD_HOST_NOINLINE PS_HD
// hot helpers of the CPU loops that GCC left out of line
#define PS_HD_HOST_INLINE PS_HD
#define PS_UNROLL _Pragma("unroll")
#else
#define PS_HD_NOINLINE [[gnu::noinline]]
#define PS_HD_HOST_NOINLINE [[gnu::noinline]]
#define PS_HD_HOST_INLINE [[gnu::always_inline]] inline
#define PS_UNROLL _Pragma("GCC unroll 4")
#define PS_HD inline
#define PS_RESTRICT __restrict__
#endif
