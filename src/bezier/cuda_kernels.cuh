// The kernels of the CUDA surface backend (cuda.cu runs them): the factored kernel (stage 1 per column, stage 2 a
// rank-(m+1) update per sample, register-tiled over R rows, plain or folded for whole uniform grids), the per-point
// methods, the basis tables. Palomar et al. 2017, Sect. 5.1; the factored kernel is ours (see cuda.cu). Included by
// cuda.cu alone: one translation unit, so that every template is instantiated where it is launched.
#pragma once
#include <cuda_pipeline.h>

#include "bezier/cuda_backend.hpp"
#include "bezier/cuda_shared.cuh"
#include "core/device_buffer.hpp"

namespace parasurf::bezier::cuda {

namespace {

using core::DeviceBuffer;

constexpr int kWarpCols = 32;   // columns per block (one per lane)
constexpr int kWarps = 8;       // warps per block, each on its own rows
constexpr int kPerPointBlock = 256;

// Rows per thread: accumulators are R x NC x (1 + 2 Order) values; keep them in registers.
template <class T, int NC, int Order> constexpr int rows_per_thread() { return Order >= 2 || NC == 4 ? 4 : 8; }
// float fits 2 blocks of 256 threads per SM in 128 registers; double needs the whole register file
template <class T> constexpr int min_blocks_per_sm() { return sizeof(T) == 4 ? 2 : 1; }

// Device-side view of DynamicTiles (see cuda_backend.hpp): front is a device-memory counter.
struct DeviceTiles {
  unsigned long long* front = nullptr;
  volatile std::uint32_t* gpu_claim = nullptr;
  volatile std::uint32_t* cpu_claim = nullptr;
  volatile std::uint32_t* owner = nullptr;
  long long tiles = 0;
};

// Claims the next GPU tile from the front; -1 when the tiles ran out or the CPU side was met.
__device__ long long claim_front_tile(const DeviceTiles& d) {
  const unsigned long long f = atomicAdd(d.front, 1ull);
  if ((long long)f >= d.tiles) return -1;
  d.gpu_claim[f] = 1u;
  __threadfence_system();  // the claim is visible to the host before we read the host's claim
  if (d.cpu_claim[f] != 0u) return -1;
  d.owner[f] = 1u;
  return (long long)f;
}

// Device layout of stage 1 (Q): for each k, the values q (NC), qv (NC), qvv (NC) of every column, in 8-byte units
// (a float pair or one double) stored unit-major, [k][unit][column], columns padded to whole groups of 32. A
// group's slice of one (k, unit) is then 256 contiguous bytes, copied straight into shared memory, and each lane
// reads its unit there without bank conflicts.
template <class T> constexpr int q_unit_values() { return 8 / int(sizeof(T)); }
template <class T, int NC, int Order> constexpr int q_units() {
  return (NC * (1 + Order) + q_unit_values<T>() - 1) / q_unit_values<T>();
}
__host__ __device__ inline std::int64_t padded_cols(std::int64_t cols) { return (cols + kWarpCols - 1) / kWarpCols * kWarpCols; }

// R consecutive values (of shared memory) as 16-byte vector loads (src 16-byte aligned, R a multiple of 16 bytes),
// or 8-byte ones for two floats.
template <class T, int R> __device__ __forceinline__ void load_rows(const T* src, T* dst) {
  if constexpr (sizeof(T) == 4 && R == 2) {
    const float2 x = *reinterpret_cast<const float2*>(src);
    dst[0] = x.x, dst[1] = x.y;
    return;
  } else {
    static_assert((R * sizeof(T)) % 16 == 0);
    constexpr int kPer = 16 / sizeof(T);
#pragma unroll
    for (int i = 0; i < R / kPer; ++i) {
      if constexpr (sizeof(T) == 4) {
        const float4* v = reinterpret_cast<const float4*>(src) + i;
        const float4 x = *v;
        dst[4 * i] = x.x, dst[4 * i + 1] = x.y, dst[4 * i + 2] = x.z, dst[4 * i + 3] = x.w;
      } else {
        const double2* v = reinterpret_cast<const double2*>(src) + i;
        const double2 x = *v;
        dst[2 * i] = x.x, dst[2 * i + 1] = x.y;
      }
    }
  }
}

// Stores one sample of a compiled-in output set (Cartesian values) at byte offset `at` of each output array;
// false where Su x Sv vanished (that normal is inf or NaN, and the caller fixes it after the tile). Streaming
// stores (evict first): the outputs are not read again here, and the basis and Q stay in L2.
template <class T, int Order, int Outs>
__device__ __forceinline__ bool store_sample_at(const kern::OutView<T>& out, std::uint32_t at, const T* s, const T* su,
                                                const T* sv) {
  auto put = [&](T* base, T value) { __stcs(reinterpret_cast<T*>(reinterpret_cast<char*>(base) + at), value); };
#pragma unroll
  for (int c = 0; c < 3; ++c) {
    if constexpr ((Outs & kOutPositions) != 0) put(out.p[c], s[c]);
    if constexpr ((Outs & kOutFirst) != 0) {
      put(out.du[c], su[c]);
      put(out.dv[c], sv[c]);
    }
  }
  bool ok = true;
  if constexpr (Order >= 1 && (Outs & kOutNormals) != 0) {
    T n[3];
    ok = kern::unit_normal(su, sv, n);
#pragma unroll
    for (int c = 0; c < 3; ++c) put(out.nrm[c], n[c]);
    out.flag[at / sizeof(T)] = ok ? 0 : 1;
  }
  return ok;
}

// Stores the R rows (first row `row`, clipped to row_end) of one column from the accumulators, one output
// group at a time so that each group's test is made once; normals branch-free, degenerate ones fixed last.
template <class T, int NC, int Order, int R, int Outs>
__device__ __forceinline__ void store_rows(const Job<T>& job, T (&s)[R][NC], T (&su)[R][NC], T (&sv)[R][NC],
                                           T (&suu)[R][NC], T (&suv)[R][NC], T (&svv)[R][NC], std::int64_t col,
                                           std::int64_t row, std::int64_t row_end, std::int64_t out_base,
                                           const kern::OutView<T>& out) {
  // Rational nets: the quotient rule, in place (components 0..2 become Cartesian).
  if constexpr (NC == 4) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      kern::Jet<T, NC> h;
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        h.s[c] = s[r][c], h.su[c] = su[r][c], h.sv[c] = sv[r][c];
        h.suu[c] = suu[r][c], h.suv[c] = suv[r][c], h.svv[c] = svv[r][c];
      }
      const kern::CartJet<T> j = kern::to_cartesian<T, NC, Order>(h);
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        s[r][c] = j.s[c], su[r][c] = j.su[c], sv[r][c] = j.sv[c];
        suu[r][c] = j.suu[c], suv[r][c] = j.suv[c], svv[r][c] = j.svv[c];
      }
    }
  }
  const std::int64_t cols = job.cols;
  const int valid = col < cols ? int(min(std::int64_t(R), row_end - row)) : 0;  // padding lanes store nothing
  std::uint32_t degenerate = 0;  // rows whose Su x Sv vanished, finished last
  // Normal of row r (branch-free: where it vanished the value is inf or NaN and is overwritten by the fix-up).
  auto normal_of = [&](int r, T* n) {
    const bool ok = kern::unit_normal(su[r], sv[r], n);
    degenerate |= ok ? 0u : 1u << r;
    return ok;
  };
  if constexpr (Outs != kOutRuntime) {
    // Row by row, every wanted output of the row; addresses are 32-bit byte offsets from the (uniform) array
    // bases, which the launch guarantees by splitting grids whose arrays pass 4 GiB.
    const std::uint32_t first = std::uint32_t((row - out_base) * cols + col) * std::uint32_t(sizeof(T));
    const std::uint32_t step = std::uint32_t(cols) * std::uint32_t(sizeof(T));
    auto row_out = [&](int r) {
      if (!store_sample_at<T, Order, Outs>(out, first + r * step, s[r], su[r], sv[r])) degenerate |= 1u << r;
    };
    if (valid == R) {
#pragma unroll
      for (int r = 0; r < R; ++r) row_out(r);
    } else {
#pragma unroll
      for (int r = 0; r < R; ++r)
        if (r < valid) row_out(r);
    }
  } else {
    // Any output set: one group at a time, each component's pointer tested.
    const std::int64_t first = (row - out_base) * cols + col;
    auto put = [&](T* const* group, const T (&a)[R][NC]) {
#pragma unroll
      for (int r = 0; r < R; ++r)
        if (r < valid)
#pragma unroll
          for (int c = 0; c < 3; ++c)
            if (group[c]) group[c][first + r * cols] = a[r][c];
    };
    put(out.p, s);
    if constexpr (Order >= 1) {
      put(out.du, su);
      put(out.dv, sv);
      if (out.nrm[0]) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (r >= valid) break;
          T n[3];
          const bool ok = normal_of(r, n);
          const std::int64_t i = first + r * cols;
#pragma unroll
          for (int c = 0; c < 3; ++c) out.nrm[c][i] = n[c];
          if (out.flag) out.flag[i] = ok ? 0 : 1;
        }
      }
    }
    if constexpr (Order >= 2) {
      put(out.duu, suu);
      put(out.duv, suv);
      put(out.dvv, svv);
    }
  }
  while (degenerate) {
    const int r = __ffs(degenerate) - 1;
    degenerate &= degenerate - 1;
    const std::int64_t i = (row + r - out_base) * cols + col;
    fix_degenerate_normal<T, NC>(job.net, kern::grid_param<T>(row + r, job.rows), kern::grid_param<T>(col, job.cols),
                                 out.nrm[0] + i, out.nrm[1] + i, out.nrm[2] + i);
  }
}

// One lane's Q record of a staged step: U units of 8 bytes, one conflict-free load each.
template <class T, int U> __device__ __forceinline__ void load_record(const T* sq, T (&rec)[U * q_unit_values<T>()]) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    if constexpr (sizeof(T) == 4) {
      const float2 x = *reinterpret_cast<const float2*>(sq + u * kWarpCols * 2);
      rec[2 * u] = x.x, rec[2 * u + 1] = x.y;
    } else {
      rec[u] = sq[u * kWarpCols];
    }
  }
}

// One thread: column `col`, local rows [r_first, r_first + R) of the block's rows (rows row0 + r), clipped to
// row_end. The u-basis is staged [k][derivative][row], so that a thread's R rows are one vector load (a
// broadcast across the warp); the group's Q is staged [k][unit][lane] (q_units), one conflict-free 8-byte
// load per unit.
template <class T, int NC, int Order, int R, int Outs>
__device__ void factored_rows(const Job<T>& job, const T* basis, const T* group_q, std::int64_t col, std::int64_t row0,
                              int r_first, std::int64_t row_end, std::int64_t out_base, const kern::OutView<T>& out) {
  constexpr int kRows = kWarps * R, U = q_units<T, NC, Order>(), UV = q_unit_values<T>();
  const int mu = job.net.m + 1;
  T s[R][NC], su[R][NC], sv[R][NC], suu[R][NC], suv[R][NC], svv[R][NC];
  const T* bp = basis + r_first;
  const T* qp = group_q + threadIdx.x * UV;
  // Step k of the rank-(m+1) update; the first one assigns, so the accumulators need no clearing.
  auto step = [&]<bool First>(int k) {
    const T* sb = bp + k * (Order + 1) * kRows;
    T rec[U * UV];
    load_record<T, U>(qp + k * U * kWarpCols * UV, rec);
    T b[R], db[R] = {}, ddb[R] = {};
    load_rows<T, R>(sb, b);
    if constexpr (Order >= 1) load_rows<T, R>(sb + kRows, db);
    if constexpr (Order >= 2) load_rows<T, R>(sb + 2 * kRows, ddb);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const T q = rec[c], qv = rec[Order >= 1 ? NC + c : c], qvv = rec[Order >= 2 ? 2 * NC + c : c];
        if constexpr (First) {
          s[r][c] = b[r] * q;
          su[r][c] = db[r] * q, sv[r][c] = b[r] * qv;
          suu[r][c] = ddb[r] * q, suv[r][c] = db[r] * qv, svv[r][c] = b[r] * qvv;
        } else {
          kern::factored_step<T, Order>(b[r], db[r], ddb[r], q, qv, qvv, s[r][c], su[r][c], sv[r][c], suu[r][c],
                                        suv[r][c], svv[r][c]);
        }
      }
  };
  step.template operator()<true>(0);
  constexpr int kUnroll = Order >= 2 ? 1 : 2;  // two steps in flight, except where their registers would spill
#pragma unroll kUnroll
  for (int k = 1; k < mu; ++k) step.template operator()<false>(k);
  store_rows<T, NC, Order, R, Outs>(job, s, su, sv, suu, suv, svv, col, row0 + r_first, row_end, out_base, out);
}

// Folded stage 2 (whole uniform grid, order <= 1). Row r < ceil(rows/2) and its mirror rows-1-r (u' = 1 - u)
// share one contraction over k <= m/2: with p = b_k + b_{m-k}, n = b_k - b_{m-k} (the middle term: b, 0) and
// E = (Q_k + Q_{m-k})/2, D = (Q_k - Q_{m-k})/2 (middle: Q, 0), S(u) = sum pE + nD and S(1-u) = sum pE - nD;
// Su(1-u) = -(sum dp E - dn D), Sv like S with the v-derivatives of E and D. One thread: column `col`, pairs
// [pair0 + r_first, + R) of the staged pairs, clipped to the half, except pair 0 (the edge rows, exact from stage
// 1); basis staged [k][p n dp dn][pair], Q as records 2k (E) and 2k+1 (D).
template <class T, int NC, int Order, int R, int Outs>
__device__ void folded_rows(const Job<T>& job, const T* basis, const T* group_q, std::int64_t col, std::int64_t pair0,
                            int r_first, const kern::OutView<T>& out) {
  static_assert(Order <= 1 && Outs != kOutRuntime);
  constexpr int kPairs = kWarps * R, U = q_units<T, NC, Order>(), UV = q_unit_values<T>(), kKinds = 2 * (Order + 1);
  const int steps = (job.net.m + 2) / 2;
  T es[R][NC], ds[R][NC], esu[R][NC], dsu[R][NC], esv[R][NC], dsv[R][NC];
  const T* bp = basis + r_first;
  const T* qp = group_q + threadIdx.x * UV;
  auto step = [&]<bool First>(int k) {
    const T* sb = bp + k * kKinds * kPairs;
    T e[U * UV], d[U * UV];
    load_record<T, U>(qp + 2 * k * U * kWarpCols * UV, e);
    load_record<T, U>(qp + (2 * k + 1) * U * kWarpCols * UV, d);
    T bpl[R], bmi[R];
    [[maybe_unused]] T dbpl[R], dbmi[R];
    load_rows<T, R>(sb, bpl);
    load_rows<T, R>(sb + kPairs, bmi);
    if constexpr (Order >= 1) {
      load_rows<T, R>(sb + 2 * kPairs, dbpl);
      load_rows<T, R>(sb + 3 * kPairs, dbmi);
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const T eq = e[c], dq = d[c];
        if constexpr (First) {
          es[r][c] = bpl[r] * eq, ds[r][c] = bmi[r] * dq;
        } else {
          es[r][c] += bpl[r] * eq, ds[r][c] += bmi[r] * dq;
        }
        if constexpr (Order >= 1) {
          const T eqv = e[NC + c], dqv = d[NC + c];
          if constexpr (First) {
            esu[r][c] = dbpl[r] * eq, dsu[r][c] = dbmi[r] * dq;
            esv[r][c] = bpl[r] * eqv, dsv[r][c] = bmi[r] * dqv;
          } else {
            esu[r][c] += dbpl[r] * eq, dsu[r][c] += dbmi[r] * dq;
            esv[r][c] += bpl[r] * eqv, dsv[r][c] += bmi[r] * dqv;
          }
        }
      }
  };
  step.template operator()<true>(0);
#pragma unroll 2
  for (int k = 1; k < steps; ++k) step.template operator()<false>(k);

  const std::int64_t rows = job.rows, cols = job.cols, first_pair = pair0 + r_first;
  // pairs of this thread inside the upper half, and those whose mirror is another row (not the middle one)
  const int upper = col < cols ? int(max(std::int64_t(0), min(std::int64_t(R), (rows + 1) / 2 - first_pair))) : 0;
  const int lower = col < cols ? int(max(std::int64_t(0), min(std::int64_t(R), rows / 2 - first_pair))) : 0;
  const std::uint32_t step_bytes = std::uint32_t(cols) * std::uint32_t(sizeof(T));
  const std::uint32_t top = std::uint32_t(first_pair * cols + col) * std::uint32_t(sizeof(T));
  const std::uint32_t bottom = std::uint32_t((rows - 1 - first_pair) * cols + col) * std::uint32_t(sizeof(T));
  std::uint32_t degenerate = 0;  // bit r: row first_pair + r; bit R + r: its mirror
  auto row_out = [&](int r, bool mirror) {
    kern::Jet<T, NC> h;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      h.s[c] = mirror ? es[r][c] - ds[r][c] : es[r][c] + ds[r][c];
      h.su[c] = mirror ? dsu[r][c] - esu[r][c] : esu[r][c] + dsu[r][c];
      h.sv[c] = mirror ? esv[r][c] - dsv[r][c] : esv[r][c] + dsv[r][c];
      h.suu[c] = h.suv[c] = h.svv[c] = T(0);
    }
    const kern::CartJet<T> j = kern::to_cartesian<T, NC, Order>(h);
    const std::uint32_t at = mirror ? bottom - r * step_bytes : top + r * step_bytes;
    if (!store_sample_at<T, Order, Outs>(out, at, j.s, j.su, j.sv)) degenerate |= 1u << (mirror ? R + r : r);
  };
  if (lower == R && first_pair > 0) {
#pragma unroll
    for (int r = 0; r < R; ++r) row_out(r, false), row_out(r, true);
  } else {
    const int edge = first_pair == 0 ? 1 : 0;  // rows 0 and rows - 1 came from stage 1
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r >= edge && r < upper) row_out(r, false);
      if (r >= edge && r < lower) row_out(r, true);
    }
  }
  while (degenerate) {
    const int bit = __ffs(degenerate) - 1;
    degenerate &= degenerate - 1;
    const std::int64_t row = bit < R ? first_pair + bit : rows - 1 - (first_pair + bit - R);
    const std::int64_t i = row * cols + col;
    fix_degenerate_normal<T, NC>(job.net, kern::grid_param<T>(row, rows), kern::grid_param<T>(col, cols),
                                 out.nrm[0] + i, out.nrm[1] + i, out.nrm[2] + i);
  }
}

// Per block: basis values per staged row (steps x kinds) and Q records per column, plain or folded.
template <int Order, bool Folded> __host__ __device__ constexpr int basis_per_row(int mu) {
  return Folded ? (mu + 1) / 2 * 2 * (Order + 1) : mu * (Order + 1);
}
template <bool Folded> __host__ __device__ constexpr int q_records(int mu) { return Folded ? (mu + 1) / 2 * 2 : mu; }

// Shared memory of one block: the staged u-basis and two Q buffers (one being used, the next group's arriving).
template <class T, int NC, int Order, int R, bool Folded> constexpr std::size_t factored_shared_bytes(int mu) {
  return (std::size_t(basis_per_row<Order, Folded>(mu)) * kWarps * R +
          2 * std::size_t(q_records<Folded>(mu)) * q_units<T, NC, Order>() * kWarpCols * q_unit_values<T>()) *
         sizeof(T);
}

// Whole block: stage the u-basis of rows [row0, row0 + kWarps R) in shared memory, then sweep column groups
// [g0, g1), each warp on its R rows. The next group's Q is copied in (cp.async) while the current one computes.
// Folded, the rows are pairs [row0, row_end) of the upper half and the basis is staged as sums and differences.
template <class T, int NC, int Order, int R, int Outs, bool Folded>
__device__ void factored_block(const Job<T>& job, std::int64_t row0, std::int64_t row_end, std::int64_t g0,
                               std::int64_t g1, std::int64_t out_base, const kern::OutView<T>& out, T* shared,
                               bool stages_again) {
  constexpr int kRows = kWarps * R, U = q_units<T, NC, Order>(), UV = q_unit_values<T>(), kThreads = kWarpCols * kWarps;
  const int mu = job.net.m + 1, records = q_records<Folded>(mu);
  T* basis = shared;
  T* q_buffers = basis + basis_per_row<Order, Folded>(mu) * kRows;  // two of q_size values (indexed arithmetically,
  const int q_size = records * U * kWarpCols * UV;                   // so the compiler keeps the shared space)
  const int tid = threadIdx.y * kWarpCols + threadIdx.x;
  if constexpr (Folded) {
    const int steps = (mu + 1) / 2;
    for (int e = tid; e < kRows * steps; e += kThreads) {
      const int k = e / kRows, r = e % kRows, mirror = mu - 1 - k;
      const std::int64_t src = min(row0 + r, row_end - 1) * mu;  // clamped: padding pairs are never stored
      T* dst = basis + k * 2 * (Order + 1) * kRows + r;
      auto fold = [&](const T* table, T* to) {
        const T a = table[src + k], b = table[src + mirror];
        to[0] = k == mirror ? a : a + b;
        to[kRows] = k == mirror ? T(0) : a - b;
      };
      fold(job.tables.bu, dst);
      if constexpr (Order >= 1) fold(job.tables.dbu, dst + 2 * kRows);
    }
  } else {
    for (int e = tid; e < kRows * mu; e += kThreads) {
      const int k = e / kRows, r = e % kRows;
      const std::int64_t row = min(row0 + r, row_end - 1);  // clamped: padding rows are never stored
      const std::int64_t src = row * mu + k;
      T* dst = basis + k * (Order + 1) * kRows + r;
      __pipeline_memcpy_async(dst, job.tables.bu + src, sizeof(T));
      if constexpr (Order >= 1) __pipeline_memcpy_async(dst + kRows, job.tables.dbu + src, sizeof(T));
      if constexpr (Order >= 2) __pipeline_memcpy_async(dst + 2 * kRows, job.tables.ddbu + src, sizeof(T));
    }
  }
  const std::int64_t stride = padded_cols(job.cols) * UV;  // T values between consecutive (k, unit) slices
  constexpr int kPer = 16 / sizeof(T), kChunks = kWarpCols * UV / kPer;  // 16-byte copies per slice
  auto stage_q = [&](std::int64_t g, T* dst) {
    const T* src = job.columns.q + g * kWarpCols * UV;
    for (int e = tid; e < records * U * kChunks; e += kThreads) {
      const int slice = e / kChunks, part = e % kChunks;
      __pipeline_memcpy_async(dst + slice * kWarpCols * UV + part * kPer, src + slice * stride + part * kPer, 16);
    }
  };
  stage_q(g0, q_buffers);
  __pipeline_commit();
  for (std::int64_t g = g0; g < g1; ++g) {
    __pipeline_wait_prior(0);
    __syncthreads();  // this group's Q (and the basis) landed; every warp is done with the other buffer
    const int cur = int(g - g0) & 1;
    if (g + 1 < g1) {
      stage_q(g + 1, q_buffers + (cur ^ 1) * q_size);
      __pipeline_commit();
    }
    if constexpr (Folded)
      folded_rows<T, NC, Order, R, Outs>(job, basis, q_buffers + cur * q_size, g * kWarpCols + threadIdx.x, row0,
                                         threadIdx.y * R, out);
    else
      factored_rows<T, NC, Order, R, Outs>(job, basis, q_buffers + cur * q_size, g * kWarpCols + threadIdx.x, row0,
                                           threadIdx.y * R, row_end, out_base, out);
  }
  if (stages_again) __syncthreads();  // the staged rows are free again
}

// Static: block (x: chunk of `span` column groups, y: row block) covers 32 x span columns and kWarps x R rows of
// [row_begin, row_end). Dynamic: persistent blocks claim tiles of `span` rows from the front and sweep all
// column groups. Folded (static only): the rows are the pairs of the upper half, row_end = ceil(rows/2).
template <class T, int NC, int Order, int R, int MinBlocks, int Outs, bool Folded>
__global__ void __launch_bounds__(kWarpCols* kWarps, MinBlocks) factored_kernel(Job<T> job, std::int64_t row_begin,
                                                                        std::int64_t row_end, kern::OutView<T> out,
                                                                        DeviceTiles dyn, std::int64_t span) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* shared = reinterpret_cast<T*>(shared_bytes);
  constexpr std::int64_t kRows = kWarps * R;
  if (Folded || !dyn.front) {
    const std::int64_t row0 = row_begin + std::int64_t(blockIdx.y) * kRows;
    const std::int64_t groups = (job.cols + kWarpCols - 1) / kWarpCols;
    const std::int64_t g0 = std::int64_t(blockIdx.x) * span, g1 = min(groups, g0 + span);
    factored_block<T, NC, Order, R, Outs, Folded>(job, row0, row_end, g0, g1, row_begin, out, shared, false);
    return;
  }
  if constexpr (!Folded) {
    __shared__ long long tile;
    const std::int64_t groups = (job.cols + kWarpCols - 1) / kWarpCols;
    for (;;) {
      if (threadIdx.x == 0 && threadIdx.y == 0) tile = claim_front_tile(dyn);
      __syncthreads();
      const long long t = tile;
      __syncthreads();  // everyone has read `tile` before the next claim overwrites it
      if (t < 0) return;
      const std::int64_t t0 = std::int64_t(t) * span, t1 = min(row_end, t0 + span);
      for (std::int64_t row0 = t0; row0 < t1; row0 += kRows)
        factored_block<T, NC, Order, R, Outs, false>(job, row0, t1, 0, groups, row_begin, out, shared, true);
    }
  }
}

// Per-point methods (brute, matrix, mle, casteljau): one thread per sample, static or claimed tiles.
template <class T, int NC, int Order, Method M>
__global__ void __launch_bounds__(kPerPointBlock) per_point_kernel(Job<T> job, std::int64_t row_begin,
                                                                   std::int64_t row_end, kern::OutView<T> out,
                                                                   DeviceTiles dyn, std::int64_t tile_rows) {
  auto sample = [&](std::int64_t idx) {
    const std::int64_t i = idx / job.cols, j = idx % job.cols;
    const T u = kern::grid_param<T>(i, job.rows), v = kern::grid_param<T>(j, job.cols);
    const auto h = jet_of_sample<T, NC, Order>(job, M, i, j, u, v);
    kern::store_sample<T, NC, Order>(h, out, idx - row_begin * job.cols, u, v, job.net);
  };
  if (!dyn.front) {
    const std::int64_t idx = row_begin * job.cols + std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx < row_end * job.cols) sample(idx);
    return;
  }
  __shared__ long long tile;
  for (;;) {
    if (threadIdx.x == 0) tile = claim_front_tile(dyn);
    __syncthreads();
    const long long t = tile;
    __syncthreads();
    if (t < 0) return;
    const std::int64_t first = t * tile_rows * job.cols, last = min(row_end, std::int64_t((t + 1) * tile_rows)) * job.cols;
    for (std::int64_t idx = first + threadIdx.x; idx < last; idx += blockDim.x) sample(idx);
  }
}

template <class T, int NC, int Order, Method M>
__global__ void __launch_bounds__(kPerPointBlock) point_list_kernel(Job<T> job, kern::OutView<T> out) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= job.point_count) return;
  const T u = T(job.uv[2 * idx]), v = T(job.uv[2 * idx + 1]);
  const auto h = jet_of_sample<T, NC, Order>(job, M, 0, 0, u, v);
  kern::store_sample<T, NC, Order>(h, out, idx, u, v, job.net);
}

template <class T, int Order>
__global__ void table_kernel(int d, std::int64_t count, kern::BinomialRows rows, T* b, T* db, T* ddb) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) table_row<T, Order>(d, i, count, &rows, b, db, ddb);
}

// Stage 1 per column j; folded, record 2k holds E = (Q_k + Q_{m-k})/2 and record 2k+1 D = (Q_k - Q_{m-k})/2
// (the middle record of an odd count: Q and 0), each with its v-derivatives, and the edge rows u = 0 and 1 are
// stored here from Q_0, Q_1, Q_{m-1}, Q_m: exact boundary curves (E + D would round), which stage 2 skips.
template <class T, int NC, int Order, bool Folded>
__global__ void columns_kernel(Job<T> job, T* q, kern::OutView<T> edge_out) {
  constexpr int U = q_units<T, NC, Order>(), UV = q_unit_values<T>(), kValues = 3 * NC > U * UV ? 3 * NC : U * UV;
  const std::int64_t j = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= job.cols) return;
  const std::int64_t stride = padded_cols(job.cols);
  auto put = [&](int record, const T (&v)[kValues]) {
    for (int u = 0; u < U; ++u)
      for (int h = 0; h < UV; ++h) q[((std::int64_t(record) * U + u) * stride + j) * UV + h] = v[u * UV + h];
  };
  const int m = job.net.m;
  T edge[4][kValues] = {};  // Q_0, Q_1, Q_{m-1}, Q_m with their v-derivatives (folded)
  auto entry = [&](int i, T* v) {
    factored_entry<T, NC, Order>(job.net, job.tables.bv, job.tables.dbv, job.tables.ddbv, j, i, v, v + NC, v + 2 * NC);
    for (int x = 0; x < kValues && Folded; ++x) {
      if (i == 0) edge[0][x] = v[x];
      if (i == 1) edge[1][x] = v[x];
      if (i == m - 1) edge[2][x] = v[x];
      if (i == m) edge[3][x] = v[x];
    }
  };
  if constexpr (Folded) {
    for (int k = 0; 2 * k <= m; ++k) {
      T a[kValues] = {}, b[kValues] = {};
      entry(k, a);
      if (k != m - k) entry(m - k, b);
      T e[kValues], d[kValues];
      for (int x = 0; x < kValues; ++x) {
        e[x] = k == m - k ? a[x] : T(0.5) * (a[x] + b[x]);
        d[x] = k == m - k ? T(0) : T(0.5) * (a[x] - b[x]);
      }
      put(2 * k, e);
      put(2 * k + 1, d);
    }
    // S(0, v) = Q_0, Su = m (Q_1 - Q_0), Sv = Q_0'; S(1, v) = Q_m, Su = m (Q_m - Q_{m-1}), Sv = Q_m'
    const T v_at = kern::grid_param<T>(j, job.cols);
    for (int end = 0; end < 2; ++end) {
      const T* at = edge[end ? 3 : 0];
      const T* next = edge[end ? 2 : 1];
      kern::Jet<T, NC> h;
      kern::clear(h);
      for (int c = 0; c < NC; ++c) {
        h.s[c] = at[c];
        if constexpr (Order >= 1) {
          h.su[c] = T(m) * (end ? at[c] - next[c] : next[c] - at[c]);
          h.sv[c] = at[NC + c];
        }
      }
      const std::int64_t row = end ? job.rows - 1 : 0;
      kern::store_sample<T, NC, Order>(h, edge_out, row * job.cols + j, T(end), v_at, job.net);
    }
  } else {
    for (int i = 0; i <= m; ++i) {
      T values[kValues] = {};
      entry(i, values);
      put(i, values);
    }
  }
}

unsigned blocks_for(std::int64_t n, int per_block) { return unsigned((n + per_block - 1) / per_block); }

}  // namespace

}  // namespace parasurf::bezier::cuda
