// Tensor-core path of the factored method for float grids. Stage 2, S(u_r, v_j) = sum_k Bu_k(u_r) Q_k(v_j) with
// its derivatives, is a product of an (rows x terms) basis matrix and a (terms x columns) matrix per coordinate,
// so a warp computes it with mma.sync on TF32 operands. TF32 keeps 11 significant bits; each operand x is split
// into hi = tf32(x) and lo = tf32(x - hi), and hi*hi + hi*lo + lo*hi (the lo*lo term is below float rounding)
// recovers float accuracy: Ootomo & Yokota 2022, "Recovering single precision accuracy from Tensor Cores while
// surpassing the FP32 theoretical peak performance" (IJHPCA 36(4)). The FP32 kernel in cuda.cu spends ~9 FFMA
// per sample per term; here a warp's 16 x 8 samples per 8 terms cost 3 MMAs per output tile. Measured on the H200
// (float, positions + normals, 2000^2) it is correct (Properties.GpuTensorCorePathMatchesFp32Kernel) but slower than
// the FP32 kernel at every degree (docs/performance.md). It issues less than half the instructions, yet with
// 16 warps per SM (128 registers) its warps wait on the stage-1 loads before each product; staging the records in
// shared memory with cp.async did not help (50 Gpt/s). So it stays opt-in (EvalOptions::gpu_tensor_cores).
// The fragment layouts and the index maps are in tensor_layout.hpp.
#include <algorithm>

#include "bezier/cuda_shared.cuh"
#include "bezier/tensor_layout.hpp"
#include "core/cuda_check.hpp"

namespace parasurf::bezier::cuda::tensor {

namespace {

constexpr int kWarps = 8;                   // warps per block, each on its own 16 rows
constexpr int kRowsPerWarp = 16;
constexpr int kColsPerGroup = 8;            // one MMA column tile
constexpr int kMaxUnits = kMaxTerms / 4;    // terms in units of 4 (one k4 step, half a k8 step)

using tensor_layout::Steps;
using tensor_layout::record_floats;

// Values per (term, column) of stage 1: q per coordinate, then q' per coordinate.
template <int NC, int Order> constexpr int slots() { return NC * (1 + Order); }

__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// Two TF32 halves of a value: hi carries its first 11 bits, lo the next 11.
struct Split {
  std::uint32_t hi, lo;
};
__device__ __forceinline__ Split split(float x) {
  const std::uint32_t hi = to_tf32(x);
  return {hi, to_tf32(x - __uint_as_float(hi))};
}

// One unit (4 terms) of the A operand for rows g and g+8.
struct AUnit {
  Split r0, r1;
};

template <bool First>
__device__ __forceinline__ void mma_k8(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                       std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
#if __CUDA_ARCH__ >= 800
  if constexpr (First) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(0.0f));
  } else {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
#endif
}

template <bool First>
__device__ __forceinline__ void mma_k4(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t b0) {
#if __CUDA_ARCH__ >= 800
  if constexpr (First) {
    asm("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%7,%7,%7};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a0), "r"(a1), "r"(b0), "f"(0.0f));
  } else {
    asm("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(b0));
  }
#endif
}

// d (+)= A B over 8 terms (units a, b) with split operands; the small products first.
template <bool First>
__device__ __forceinline__ void mma3_k8(float (&d)[4], const AUnit& a, const AUnit& b, float4 q) {
  const std::uint32_t qh0 = __float_as_uint(q.x), qh1 = __float_as_uint(q.y);
  const std::uint32_t ql0 = __float_as_uint(q.z), ql1 = __float_as_uint(q.w);
  mma_k8<First>(d, a.r0.lo, a.r1.lo, b.r0.lo, b.r1.lo, qh0, qh1);
  mma_k8<false>(d, a.r0.hi, a.r1.hi, b.r0.hi, b.r1.hi, ql0, ql1);
  mma_k8<false>(d, a.r0.hi, a.r1.hi, b.r0.hi, b.r1.hi, qh0, qh1);
}
template <bool First>
__device__ __forceinline__ void mma3_k4(float (&d)[4], const AUnit& a, float2 q) {
  const std::uint32_t qh = __float_as_uint(q.x), ql = __float_as_uint(q.y);
  mma_k4<First>(d, a.r0.lo, a.r1.lo, qh);
  mma_k4<false>(d, a.r0.hi, a.r1.hi, ql);
  mma_k4<false>(d, a.r0.hi, a.r1.hi, qh);
}

// Stage 1: thread (column j, term k) computes Q_k(v_j) (and Q'_k) and writes its split halves where the lanes
// of the MMA B fragments read them. Columns and terms past the net's are zeros.
template <int NC, int Order>
__global__ void columns_kernel(Job<float> job, float* q) {
  constexpr int E = slots<NC, Order>();
  const Steps st(job.net.m + 1);
  const int terms = 4 * st.units;
  const std::int64_t idx = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t groups = (job.cols + kColsPerGroup - 1) / kColsPerGroup;
  const std::int64_t j = idx / terms;
  const int k = int(idx % terms);
  if (j >= groups * kColsPerGroup) return;
  float v[3 * NC] = {};
  if (j < job.cols && k <= job.net.m)
    factored_entry<float, NC, Order>(job.net, job.tables.bv, job.tables.dbv, job.tables.ddbv, j, k, v, v + NC,
                                     v + 2 * NC);
  float* rec = q + (j / kColsPerGroup) * record_floats(E, st);
  const int g = int(j % kColsPerGroup);
  for (int e = 0; e < E; ++e) {
    const Split s = split(v[e]);
    std::int64_t hi, lo;
    tensor_layout::term_offsets(k, g, e, E, st, &hi, &lo);
    rec[hi] = __uint_as_float(s.hi);
    rec[lo] = __uint_as_float(s.lo);
  }
}

// Accumulator tiles: P channels, then Su, then Sv (NC each); element i of a tile is sample (row g + 8 (i / 2),
// column 2t + i % 2) of the warp's 16 x 8 tile.
template <int NC, int Order> constexpr int tiles() { return NC * (1 + 2 * Order); }

// k8 step S (units 2S and 2S+1) of every tile.
template <int NC, int Order, int S, bool First>
__device__ __forceinline__ void step_k8(float (&acc)[tiles<NC, Order>()][4], const AUnit (&bu)[kMaxUnits],
                                        const AUnit (&dbu)[kMaxUnits], const float* rec, int lane) {
  constexpr int E = slots<NC, Order>();
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const float4 qv = __ldg(reinterpret_cast<const float4*>(rec + tensor_layout::k8_fragment(S, e, E, lane)));
    const int c = e % NC;
    if (e < NC) {
      mma3_k8<First>(acc[c], bu[2 * S], bu[2 * S + 1], qv);
      if constexpr (Order >= 1) mma3_k8<First>(acc[NC + c], dbu[2 * S], dbu[2 * S + 1], qv);
    } else {
      mma3_k8<First>(acc[2 * NC + c], bu[2 * S], bu[2 * S + 1], qv);
    }
  }
}

// The k4 step on unit U (the terms' last 4).
template <int NC, int Order, int U, bool First>
__device__ __forceinline__ void step_k4(float (&acc)[tiles<NC, Order>()][4], const AUnit (&bu)[kMaxUnits],
                                        const AUnit (&dbu)[kMaxUnits], const float* rec, const Steps& st,
                                        int lane) {
  constexpr int E = slots<NC, Order>();
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const float2 qv = __ldg(reinterpret_cast<const float2*>(rec + tensor_layout::k4_fragment(e, E, st, lane)));
    const int c = e % NC;
    if (e < NC) {
      mma3_k4<First>(acc[c], bu[U], qv);
      if constexpr (Order >= 1) mma3_k4<First>(acc[NC + c], dbu[U], qv);
    } else {
      mma3_k4<First>(acc[2 * NC + c], bu[U], qv);
    }
  }
}

// Stores one row's pair of samples (columns col, col + 1; the second exists when `both`) of every wanted output.
template <int NC, int Order, int Outs>
__device__ __forceinline__ void store_pair(const Job<float>& job, const float (&acc)[tiles<NC, Order>()][4], int h,
                                           std::int64_t row, std::int64_t col, std::int64_t index, bool both,
                                           const kern::OutView<float>& out) {
  float s[2][3], su[2][3], sv[2][3], n[2][3];
  bool ok[2] = {true, true};
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    kern::Jet<float, NC> jet;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      jet.s[c] = acc[c][2 * h + p];
      jet.su[c] = Order >= 1 ? acc[NC + c][2 * h + p] : 0.0f;
      jet.sv[c] = Order >= 1 ? acc[2 * NC + c][2 * h + p] : 0.0f;
      jet.suu[c] = jet.suv[c] = jet.svv[c] = 0.0f;
    }
    const kern::CartJet<float> cj = kern::to_cartesian<float, NC, Order>(jet);
#pragma unroll
    for (int c = 0; c < 3; ++c) s[p][c] = cj.s[c], su[p][c] = cj.su[c], sv[p][c] = cj.sv[c];
    if constexpr (Order >= 1 && (Outs & kOutNormals) != 0) ok[p] = kern::unit_normal(su[p], sv[p], n[p]);
  }
  // Pairs go out as one 8-byte streaming store where the address allows it (the arrays of one call may share an
  // allocation at 4-byte offsets, so the index's parity alone does not say).
  auto put = [&](float* base, float a, float b) {
    if (both && (reinterpret_cast<std::uintptr_t>(base + index) & 7) == 0) {
      __stcs(reinterpret_cast<float2*>(base + index), make_float2(a, b));
    } else {
      __stcs(base + index, a);
      if (both) __stcs(base + index + 1, b);
    }
  };
#pragma unroll
  for (int c = 0; c < 3; ++c) {
    if constexpr ((Outs & kOutPositions) != 0) put(out.p[c], s[0][c], s[1][c]);
    if constexpr ((Outs & kOutFirst) != 0) {
      put(out.du[c], su[0][c], su[1][c]);
      put(out.dv[c], sv[0][c], sv[1][c]);
    }
  }
  if constexpr (Order >= 1 && (Outs & kOutNormals) != 0) {
#pragma unroll
    for (int c = 0; c < 3; ++c) put(out.nrm[c], n[0][c], n[1][c]);
    const std::uint8_t f0 = ok[0] ? 0 : 1, f1 = ok[1] ? 0 : 1;
    if (both && (reinterpret_cast<std::uintptr_t>(out.flag + index) & 1) == 0) {
      *reinterpret_cast<std::uint16_t*>(out.flag + index) = std::uint16_t(f0 | (f1 << 8));  // little-endian
    } else {
      out.flag[index] = f0;
      if (both) out.flag[index + 1] = f1;
    }
    // Where Su x Sv vanished, the limit normal replaces what was stored (rare: collapsed rows and columns).
#pragma unroll
    for (int p = 0; p < 2; ++p)
      if (!ok[p] && (p == 0 || both)) {
        const std::int64_t i = index + p;
        fix_degenerate_normal<float, NC>(job.net, kern::grid_param<float>(row, job.rows),
                                         kern::grid_param<float>(col + p, job.cols), out.nrm[0] + i, out.nrm[1] + i,
                                         out.nrm[2] + i);
      }
  }
}

// Block (x: a span of 8-column groups, y: kWarps x 16 rows); each warp keeps the u-basis of its 16 rows in
// registers (split) and sweeps the span, reading stage 1 in fragment order (the block's warps read the same
// record, so it comes from L1).
template <int NC, int Order, int Outs>
__global__ void __launch_bounds__(32 * kWarps, 2)
    sample_kernel(Job<float> job, const float* q, std::int64_t row_begin, std::int64_t row_end,
                  kern::OutView<float> out, std::int64_t span) {
#if __CUDA_ARCH__ >= 800
  constexpr int E = slots<NC, Order>(), kTiles = tiles<NC, Order>();
  const int lane = threadIdx.x;
  const std::int64_t row0 = row_begin + (std::int64_t(blockIdx.y) * kWarps + threadIdx.y) * kRowsPerWarp;
  if (row0 >= row_end) return;  // whole warp; the kernel has no block barrier
  const int mu = job.net.m + 1;
  const Steps st(mu);
  AUnit bu[kMaxUnits], dbu[kMaxUnits];
  {
    const std::int64_t ra = min(row0 + tensor_layout::lane_row(lane, 0), job.rows - 1);
    const std::int64_t rb = min(row0 + tensor_layout::lane_row(lane, 1), job.rows - 1);
#pragma unroll
    for (int u = 0; u < kMaxUnits; ++u) {
      const int k = tensor_layout::a_term(u, lane);
      float x0 = 0, x1 = 0, y0 = 0, y1 = 0;
      if (k < mu) {
        x0 = __ldg(job.tables.bu + ra * mu + k), x1 = __ldg(job.tables.bu + rb * mu + k);
        if constexpr (Order >= 1) y0 = __ldg(job.tables.dbu + ra * mu + k), y1 = __ldg(job.tables.dbu + rb * mu + k);
      }
      bu[u] = {split(x0), split(x1)};
      dbu[u] = {split(y0), split(y1)};
    }
  }
  const std::int64_t groups = (job.cols + kColsPerGroup - 1) / kColsPerGroup;
  const std::int64_t g0 = std::int64_t(blockIdx.x) * span, g1 = min(groups, g0 + span);
  const std::int64_t stride = record_floats(E, st);
  // Accumulator elements 0, 1 are row ra, columns col and col + 1; elements 2, 3 the same columns of row rb.
  const std::int64_t ra = row0 + tensor_layout::c_row(lane, 0), rb = row0 + tensor_layout::c_row(lane, 2);
  for (std::int64_t j8 = g0; j8 < g1; ++j8) {
    __syncwarp();  // mma.sync needs the whole warp: the last group's stores (and fix-ups) may have diverged
    const float* rec = q + j8 * stride;
    float acc[kTiles][4];
    static_assert(kMaxUnits == 5, "the step sequence below covers up to 5 units");
    if (st.k8 == 0) {
      step_k4<NC, Order, 0, true>(acc, bu, dbu, rec, st, lane);
    } else {
      step_k8<NC, Order, 0, true>(acc, bu, dbu, rec, lane);
      if (st.k8 == 1) {
        if (st.tail) step_k4<NC, Order, 2, false>(acc, bu, dbu, rec, st, lane);
      } else {
        step_k8<NC, Order, 1, false>(acc, bu, dbu, rec, lane);
        if (st.tail) step_k4<NC, Order, 4, false>(acc, bu, dbu, rec, st, lane);
      }
    }
    const std::int64_t col = j8 * kColsPerGroup + tensor_layout::c_col(lane, 0);
    if (col < job.cols) {
      const bool both = col + 1 < job.cols;
      if (ra < row_end) store_pair<NC, Order, Outs>(job, acc, 0, ra, col, (ra - row_begin) * job.cols + col, both, out);
      if (rb < row_end) store_pair<NC, Order, Outs>(job, acc, 1, rb, col, (rb - row_begin) * job.cols + col, both, out);
    }
  }
#endif
}

template <class F> void dispatch(int nc, int order, int outs, F&& f) {
  auto with_nc = [&]<int NC>() {
    if (order == 0) return f.template operator()<NC, 0, kOutPositions>();
    if (outs == (kOutPositions | kOutNormals)) return f.template operator()<NC, 1, kOutPositions | kOutNormals>();
    if (outs == (kOutPositions | kOutFirst)) return f.template operator()<NC, 1, kOutPositions | kOutFirst>();
    return f.template operator()<NC, 1, kOutPositions | kOutFirst | kOutNormals>();
  };
  if (nc == 3) with_nc.template operator()<3>();
  else with_nc.template operator()<4>();
}

}  // namespace

bool available(int device) {
  int major = 0;
  PS_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
          "querying the device's compute capability");
  if (major < 8) return false;
  cudaFuncAttributes attr{};
  PS_CUDA(cudaFuncGetAttributes(&attr, sample_kernel<3, 1, kOutPositions | kOutNormals>),
          "querying the tensor-core surface kernel");
  return attr.binaryVersion >= 80 && attr.ptxVersion >= 80;
}

bool takes(int nc, int order, int m, std::int64_t rows, int outs) {
  if (nc != 3 && nc != 4) return false;
  if (m + 1 > kMaxTerms || order > 1) return false;
  if ((rows + kWarps * kRowsPerWarp - 1) / (kWarps * kRowsPerWarp) > 65535) return false;  // grid y
  if (order == 0) return outs == kOutPositions;
  return outs == (kOutPositions | kOutNormals) || outs == (kOutPositions | kOutFirst) ||
         outs == (kOutPositions | kOutFirst | kOutNormals);
}

std::size_t columns_bytes(int nc, int order, int m, std::int64_t cols) {
  const std::int64_t groups = (cols + kColsPerGroup - 1) / kColsPerGroup;
  return std::size_t(groups * record_floats(nc * (1 + order), Steps(m + 1))) * sizeof(float);
}

void build_columns(const Job<float>& job, float* q, cudaStream_t stream) {
  const std::int64_t groups = (job.cols + kColsPerGroup - 1) / kColsPerGroup;
  const std::int64_t threads = groups * kColsPerGroup * 4 * Steps(job.net.m + 1).units;
  const unsigned blocks = unsigned((threads + 127) / 128);
  if (job.nc == 3 && job.order == 0) columns_kernel<3, 0><<<blocks, 128, 0, stream>>>(job, q);
  else if (job.nc == 3) columns_kernel<3, 1><<<blocks, 128, 0, stream>>>(job, q);
  else if (job.order == 0) columns_kernel<4, 0><<<blocks, 128, 0, stream>>>(job, q);
  else columns_kernel<4, 1><<<blocks, 128, 0, stream>>>(job, q);
  PS_CUDA_LAUNCH("launching the tensor-core stage-1 kernel");
}

void launch(const Job<float>& job, const float* q, std::int64_t row_begin, std::int64_t row_end,
            const kern::OutView<float>& out, int outs, int multiprocessors, cudaStream_t stream) {
  dispatch(job.nc, job.order, outs, [&]<int NC, int Order, int Outs>() {
    auto* kernel = sample_kernel<NC, Order, Outs>;
    const dim3 block(32, kWarps);
    int resident = 0;
    PS_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, 32 * kWarps, 0),
            "querying the tensor-core surface kernel's occupancy");
    // About one wave: each block sweeps enough column groups that the grid fills the resident slots once.
    const std::int64_t slots = std::max<std::int64_t>(1, std::int64_t(resident) * multiprocessors);
    const std::int64_t groups = (job.cols + kColsPerGroup - 1) / kColsPerGroup;
    const std::int64_t row_blocks = (row_end - row_begin + kWarps * kRowsPerWarp - 1) / (kWarps * kRowsPerWarp);
    const std::int64_t span = std::clamp<std::int64_t>((groups * row_blocks + slots - 1) / slots, 1, groups);
    const dim3 grid(unsigned((groups + span - 1) / span), unsigned(row_blocks));
    kernel<<<grid, block, 0, stream>>>(job, q, row_begin, row_end, out, span);
  });
  PS_CUDA_LAUNCH("launching the tensor-core surface kernel");
}

}  // namespace parasurf::bezier::cuda::tensor
