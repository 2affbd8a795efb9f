// CUDA backend of surface evaluation: thin kernels over the shared per-sample math (kernels.hpp, backend.hpp).
// Palomar et al. 2017 (per-point methods, Sect. 5.1; CPU-GPU cooperation, Sect. 5.2). The factored kernel is
// ours: stage 1 contracts the net with the v basis per column, stage 2 is a rank-(m+1) update per sample,
// register-tiled over R rows so that each Q load feeds R samples, with the u-basis and each 32-column group's Q
// staged in shared memory (the next group's copied in by cp.async while this one computes). Whole uniform grids
// fold rows u and 1 - u into one contraction (B_k(1 - u) = B_{m-k}(u)), which halves stage 2's multiply-adds.
#include <algorithm>
#include <cuda_pipeline.h>
#include <vector>

#include "bezier/cuda_backend.hpp"
#include "bezier/cuda_shared.cuh"
#include "core/cuda_check.hpp"
#include "core/device_buffer.hpp"
#include "core/memory.hpp"
#include "core/staging.hpp"
#include "parasurf/device.hpp"

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

struct Context {
  int device = 0;
  int multiprocessors = 1;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  DeviceBuffer net, uv, power, tables, columns, outputs;
  struct Key {
    int m = -1, n = -1, order = -1, scalar = 0;
    std::int64_t rows = -1, cols = -1;
    bool operator==(const Key&) const = default;
  } table_key;
  DeviceBuffer front;                       // dynamic scheme: device counter
  std::uint32_t* flags_host = nullptr;      // dynamic scheme: 3 x tiles mapped flags
  std::uint32_t* flags_dev = nullptr;
  std::int64_t flags_tiles = 0, dyn_tiles = 0;
  // the launch in flight
  int tensor_available = -1;  // tensor-core kernels run here (-1: not asked yet)
  bool tensor_launched = false;  // the launch in flight took the tensor-core path
  bool folded_launched = false;  // the launch in flight folded rows u and 1 - u
  std::int64_t launched_begin = 0, launched_end = 0, cols = 0;
  void* dev_out[22] = {};  // p, du, dv, nrm, duu, duv, dvv (x3 each), flag
  bool pending = false;

  ~Context() {
    if (stream) cudaStreamDestroy(stream);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (flags_host) cudaFreeHost(flags_host);
    front.release();
    net.release();
    uv.release();
    power.release();
    tables.release();
    columns.release();
    outputs.release();
  }
};

Context* create_context() {
  auto* ctx = new Context;
  try {
    PS_CUDA(cudaGetDevice(&ctx->device), "selecting the CUDA device");
    PS_CUDA(cudaDeviceGetAttribute(&ctx->multiprocessors, cudaDevAttrMultiProcessorCount, ctx->device),
            "reading the multiprocessor count");
    PS_CUDA(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking), "creating a stream");
    PS_CUDA(cudaEventCreate(&ctx->start), "creating an event");
    PS_CUDA(cudaEventCreate(&ctx->stop), "creating an event");
  } catch (...) {
    delete ctx;
    throw;
  }
  return ctx;
}

void destroy_context(Context* ctx) noexcept { delete ctx; }

std::uint64_t free_device_memory() {
  size_t free_b = 0, total_b = 0;
  PS_CUDA(cudaMemGetInfo(&free_b, &total_b), "querying free device memory");
  return free_b;
}

DynamicTiles dynamic_tiles(Context* ctx, std::int64_t tiles) {
  if (tiles > ctx->flags_tiles) {
    if (ctx->flags_host) cudaFreeHost(ctx->flags_host);
    ctx->flags_host = nullptr;
    ctx->flags_tiles = 0;
    PS_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&ctx->flags_host), 3 * tiles * sizeof(std::uint32_t),
                          cudaHostAllocMapped),
            "allocating the host-mapped tile flags");
    PS_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&ctx->flags_dev), ctx->flags_host, 0),
            "mapping the tile flags");
    ctx->flags_tiles = tiles;
  }
  std::fill(ctx->flags_host, ctx->flags_host + 3 * tiles, 0u);
  ctx->front.ensure(sizeof(unsigned long long), "allocating the tile counter");
  PS_CUDA(cudaMemsetAsync(ctx->front.ptr, 0, sizeof(unsigned long long), ctx->stream), "resetting the tile counter");
  ctx->dyn_tiles = tiles;
  DynamicTiles d;
  d.tiles = tiles;
  d.gpu_claim = ctx->flags_host;
  d.cpu_claim = ctx->flags_host + tiles;
  d.owner = ctx->flags_host + 2 * tiles;
  return d;
}

namespace {

template <class T>
T* const* out_slots(const kern::OutView<T>& o, int k) {
  static_assert(sizeof(T*) == sizeof(void*));
  const T* const* groups[7] = {o.p, o.du, o.dv, o.nrm, o.duu, o.duv, o.dvv};
  return const_cast<T* const*>(groups[k]);
}

// Device copies of the job's inputs: net, level 2 (cached), stage 1, power tiles.
// Folded (edge_out given), stage 1 also stores the grid's edge rows there.
template <class T>
Job<T> device_job(Context* ctx, const Inputs<T>& in, bool* level2_built, bool tensor = false,
                  const kern::OutView<T>* edge_out = nullptr) {
  const bool folded = edge_out != nullptr;
  Job<T> job;
  job.method = in.method;
  job.nc = in.nc;
  job.order = in.order;
  job.rows = in.rows;
  job.cols = in.cols;
  const std::size_t net_bytes = std::size_t(in.m + 1) * (in.n + 1) * in.nc * sizeof(T);
  ctx->net.ensure(net_bytes, "allocating the control net on the device");
  PS_CUDA(cudaMemcpyAsync(ctx->net.ptr, in.host_net, net_bytes, cudaMemcpyHostToDevice, ctx->stream),
          "uploading the control net");
  job.net = {in.m, in.n, ctx->net.as<T>()};
  if (in.method == Method::Matrix) {
    const std::size_t bytes = in.power->size() * sizeof(T);
    ctx->power.ensure(bytes, "allocating the power-basis tiles");
    PS_CUDA(cudaMemcpyAsync(ctx->power.ptr, in.power->data(), bytes, cudaMemcpyHostToDevice, ctx->stream),
            "uploading the power-basis tiles");
    job.power = {in.m, in.n, in.power_ku, in.power_kv, ctx->power.as<T>()};
  }
  const bool grid = in.uv == nullptr;
  if (grid && (in.method == Method::Mle || in.method == Method::Factored)) {
    const std::size_t mu = in.m + 1, nv = in.n + 1;
    const std::size_t nu_vals = mu * in.rows, nv_vals = nv * in.cols;
    T* base = nullptr;
    const Context::Key key{in.m, in.n, in.order, int(sizeof(T)), in.rows, in.cols};
    if (!(key == ctx->table_key)) {
      ctx->table_key = {};
      ctx->tables.ensure(3 * (nu_vals + nv_vals) * sizeof(T), "allocating the Bernstein tables");
    }
    base = ctx->tables.as<T>();
    T *bu = base, *dbu = bu + nu_vals, *ddbu = dbu + nu_vals;
    T *bv = ddbu + nu_vals, *dbv = bv + nv_vals, *ddbv = dbv + nv_vals;
    if (!(key == ctx->table_key)) {
      auto build = [&](int d, std::int64_t count, const kern::BinomialRows& rows, T* b, T* db, T* ddb) {
        const unsigned blocks = blocks_for(count, 128);
        if (in.order == 0) table_kernel<T, 0><<<blocks, 128, 0, ctx->stream>>>(d, count, rows, b, db, ddb);
        else if (in.order == 1) table_kernel<T, 1><<<blocks, 128, 0, ctx->stream>>>(d, count, rows, b, db, ddb);
        else table_kernel<T, 2><<<blocks, 128, 0, ctx->stream>>>(d, count, rows, b, db, ddb);
        PS_CUDA_LAUNCH("launching the Bernstein table kernel");
      };
      build(in.m, in.rows, *in.binom_u, bu, dbu, ddbu);
      build(in.n, in.cols, *in.binom_v, bv, dbv, ddbv);
      ctx->table_key = key;
      *level2_built = true;
    }
    job.tables = {bu, dbu, ddbu, bv, dbv, ddbv};
    if constexpr (std::is_same_v<T, float>) {
      if (tensor) {
        const std::size_t bytes = tensor::columns_bytes(in.nc, in.order, in.m, in.cols);
        ctx->columns.ensure(bytes, "allocating the factored columns");
        job.columns = {ctx->columns.as<float>(), nullptr, nullptr, 0, 0, 0};  // the tensor path's layout
        tensor::build_columns(job, ctx->columns.as<float>(), ctx->stream);
        return job;
      }
    }
    if (in.method == Method::Factored) {
      dispatch_nc_order(in.nc, in.order, [&]<int NC, int Order>() {
        const std::size_t records = folded ? q_records<true>(int(mu)) : mu;
        const std::size_t values = records * q_units<T, NC, Order>() * padded_cols(in.cols) * q_unit_values<T>();
        ctx->columns.ensure(values * sizeof(T), "allocating the factored columns");
        T* q = ctx->columns.as<T>();
        const unsigned blocks = blocks_for(in.cols, 128);
        if (folded) columns_kernel<T, NC, Order, true><<<blocks, 128, 0, ctx->stream>>>(job, q, *edge_out);
        else columns_kernel<T, NC, Order, false><<<blocks, 128, 0, ctx->stream>>>(job, q, {});
        job.columns = {q, nullptr, nullptr, 0, 0, 0};  // the layout of q_units, not strides
      });
      PS_CUDA_LAUNCH("launching the factored stage-1 kernel");
    }
  }
  return job;
}

// Allocates device outputs for `count` samples, for the outputs `which` asks for.
template <class T>
kern::OutView<T> device_outputs(Context* ctx, const kern::OutView<T>& which, std::int64_t count, bool poison) {
  std::size_t bytes = 0;
  for (int k = 0; k < 7; ++k)
    for (int c = 0; c < 3; ++c)
      if (out_slots(which, k)[c]) bytes += std::size_t(count) * sizeof(T);
  if (which.flag) bytes += std::size_t(count);
  size_t free_b = 0, total_b = 0;
  PS_CUDA(cudaMemGetInfo(&free_b, &total_b), "querying free device memory");
  if (bytes > ctx->outputs.bytes && bytes - ctx->outputs.bytes > free_b)
    throw Error(ErrorKind::OutOfMemory, "device outputs need " + core::format_bytes(bytes) + " but only " +
                                            core::format_bytes(free_b) + " of device memory is free");
  ctx->outputs.ensure(bytes, "allocating the device outputs");
  if (poison) PS_CUDA(cudaMemsetAsync(ctx->outputs.ptr, 0xFF, bytes, ctx->stream), "poisoning the device outputs");
  char* p = static_cast<char*>(ctx->outputs.ptr);
  kern::OutView<T> o;
  T** groups[7] = {o.p, o.du, o.dv, o.nrm, o.duu, o.duv, o.dvv};
  for (int k = 0; k < 7; ++k)
    for (int c = 0; c < 3; ++c) {
      groups[k][c] = nullptr;
      if (out_slots(which, k)[c]) {
        groups[k][c] = reinterpret_cast<T*>(p);
        p += std::size_t(count) * sizeof(T);
      }
      ctx->dev_out[k * 3 + c] = groups[k][c];
    }
  o.flag = which.flag ? reinterpret_cast<std::uint8_t*>(p) : nullptr;
  ctx->dev_out[21] = o.flag;
  return o;
}

// `out` advanced by `by` samples (null outputs stay null).
template <class T> kern::OutView<T> shifted(kern::OutView<T> out, std::int64_t by) {
  T** groups[7] = {out.p, out.du, out.dv, out.nrm, out.duu, out.duv, out.dvv};
  for (T** g : groups)
    for (int c = 0; c < 3; ++c)
      if (g[c]) g[c] += by;
  if (out.flag) out.flag += by;
  return out;
}

// The compile-time output set matching `out`, or kOutRuntime when a group is only partly requested or holds
// second derivatives.
template <class T> int output_set(const kern::OutView<T>& out) {
  int outs = 0;
  bool partial = false;
  auto group = [&](T* const* g, int bit) {
    const int n = (g[0] != nullptr) + (g[1] != nullptr) + (g[2] != nullptr);
    if (n == 3) outs |= bit;
    partial |= n != 0 && n != 3;
  };
  group(out.p, kOutPositions);
  group(out.du, kOutFirst);
  group(out.dv, kOutFirst);
  group(out.nrm, kOutNormals);
  if (partial || (out.du[0] != nullptr) != (out.dv[0] != nullptr) || (out.nrm[0] != nullptr) != (out.flag != nullptr) ||
      out.duu[0] || out.duv[0] || out.dvv[0])
    return kOutRuntime;
  return outs;
}

// Rows whose outputs stay below 4 GiB per array (or the caller's limit): the factored kernels of fixed output sets
// address them by 32-bit byte offsets.
template <class T> std::int64_t narrow_rows(std::int64_t cols, std::uint64_t launch_bytes) {
  constexpr std::uint64_t kNarrowBytes = (std::uint64_t(1) << 32) - 1;
  const std::uint64_t limit = launch_bytes ? std::min(launch_bytes, kNarrowBytes) : kNarrowBytes;
  return std::max<std::int64_t>(1, std::int64_t(limit / (std::uint64_t(cols) * sizeof(T))));
}

template <class T, int NC, int Order>
void launch_sample_kernel(Context* ctx, const Job<T>& job, std::int64_t r0, std::int64_t r1,
                          const kern::OutView<T>& out, const DeviceTiles& dyn, std::int64_t tile_rows,
                          std::uint64_t launch_bytes, bool folded, bool* ran_folded) {
  const bool counter = dyn.front != nullptr;
  const std::int64_t tiles = dyn.tiles;
  if (job.method == Method::Factored) {
    // Dynamic tiles take the 64-bit path beyond the narrow rows.
    const std::int64_t narrow = narrow_rows<T>(job.cols, launch_bytes);
    auto go = [&]<int R, int MinBlocks, int Outs, bool Folded>() {
      const dim3 block(kWarpCols, kWarps);
      const std::size_t shared = factored_shared_bytes<T, NC, Order, R, Folded>(job.net.m + 1);
      auto* kernel = factored_kernel<T, NC, Order, R, MinBlocks, Outs, Folded>;
      int optin = 0;
      PS_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx->device),
              "querying the device's shared memory");
      if (shared > std::size_t(optin)) {
        // high degrees on a GPU with little shared memory: the per-point multi-level kernel needs none
        const unsigned grid = counter ? unsigned(std::min<std::int64_t>(tiles, std::int64_t(ctx->multiprocessors) * 8))
                                      : blocks_for((r1 - r0) * job.cols, kPerPointBlock);
        per_point_kernel<T, NC, Order, Method::Mle>
            <<<grid, kPerPointBlock, 0, ctx->stream>>>(job, r0, r1, out, dyn, tile_rows);
        return;
      }
      core::allow_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), shared,
                                        "allowing the surface kernel its shared memory");
      *ran_folded = Folded;
      if (counter) {
        const dim3 grid(unsigned(std::min<std::int64_t>(tiles, std::int64_t(ctx->multiprocessors) * 2)));
        kernel<<<grid, block, shared, ctx->stream>>>(job, r0, r1, out, dyn, tile_rows);
        return;
      }
      // One launch per 4 GiB of each array; folded, the upper half's pairs in one launch (the caller checked).
      const std::int64_t end = Folded ? (r1 + 1) / 2 : r1;
      const std::int64_t span = Folded || Outs == kOutRuntime ? end - r0 : narrow;
      // Each block takes several column groups of its rows, so that staging their basis is paid once: as many
      // groups as make about one wave of resident blocks.
      int resident = 0;
      PS_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kWarpCols * kWarps, shared),
              "querying the surface kernel's occupancy");
      const std::int64_t slots = std::max<std::int64_t>(1, std::int64_t(resident) * ctx->multiprocessors);
      const std::int64_t groups = (job.cols + kWarpCols - 1) / kWarpCols;
      for (std::int64_t a = r0; a < end; a += span) {
        const std::int64_t b = std::min(end, a + span);
        const std::int64_t row_blocks = (b - a + kWarps * R - 1) / (kWarps * R);
        const std::int64_t per_block = std::clamp<std::int64_t>((groups * row_blocks + slots - 1) / slots, 1, groups);
        const dim3 grid(unsigned((groups + per_block - 1) / per_block), unsigned(row_blocks));
        kernel<<<grid, block, shared, ctx->stream>>>(job, a, b, shifted(out, (a - r0) * job.cols), dyn, per_block);
      }
    };
    constexpr int R = rows_per_thread<T, NC, Order>(), MinBlocks = min_blocks_per_sm<T>();
    // The common output sets get kernels without run-time output tests; the rest test each pointer. Folded
    // kernels hold R/2 pairs of rows per thread: as many samples as the plain ones.
    const int outs = counter && r1 - r0 > narrow ? kOutRuntime : output_set(out);
    auto fixed = [&]<int Outs>() {
      if (folded) return go.template operator()<R / 2, MinBlocks, Outs, true>();
      go.template operator()<R, MinBlocks, Outs, false>();
    };
    if constexpr (Order == 0) {
      if (outs == kOutPositions) return fixed.template operator()<kOutPositions>();
    } else if constexpr (Order == 1) {
      if (outs == (kOutPositions | kOutNormals)) return fixed.template operator()<kOutPositions | kOutNormals>();
      if (outs == (kOutPositions | kOutFirst)) return fixed.template operator()<kOutPositions | kOutFirst>();
      if (outs == (kOutPositions | kOutFirst | kOutNormals))
        return fixed.template operator()<kOutPositions | kOutFirst | kOutNormals>();
    }
    go.template operator()<R, MinBlocks, kOutRuntime, false>();
    return;
  }
  const unsigned grid = counter ? unsigned(std::min<std::int64_t>(tiles, std::int64_t(ctx->multiprocessors) * 8))
                                : blocks_for((r1 - r0) * job.cols, kPerPointBlock);
  switch (job.method) {
    case Method::Brute:
      per_point_kernel<T, NC, Order, Method::Brute>
          <<<grid, kPerPointBlock, 0, ctx->stream>>>(job, r0, r1, out, dyn, tile_rows);
      break;
    case Method::Matrix:
      per_point_kernel<T, NC, Order, Method::Matrix>
          <<<grid, kPerPointBlock, 0, ctx->stream>>>(job, r0, r1, out, dyn, tile_rows);
      break;
    case Method::Casteljau:
      per_point_kernel<T, NC, Order, Method::Casteljau>
          <<<grid, kPerPointBlock, 0, ctx->stream>>>(job, r0, r1, out, dyn, tile_rows);
      break;
    default:
      per_point_kernel<T, NC, Order, Method::Mle>
          <<<grid, kPerPointBlock, 0, ctx->stream>>>(job, r0, r1, out, dyn, tile_rows);
      break;
  }
}

template <class T, int NC, int Order>
void launch_point_list(Context* ctx, const Job<T>& job, const kern::OutView<T>& out) {
  const unsigned grid = blocks_for(job.point_count, kPerPointBlock);
  switch (job.method) {
    case Method::Brute:
      point_list_kernel<T, NC, Order, Method::Brute><<<grid, kPerPointBlock, 0, ctx->stream>>>(job, out);
      break;
    case Method::Matrix:
      point_list_kernel<T, NC, Order, Method::Matrix><<<grid, kPerPointBlock, 0, ctx->stream>>>(job, out);
      break;
    case Method::Casteljau:
      point_list_kernel<T, NC, Order, Method::Casteljau><<<grid, kPerPointBlock, 0, ctx->stream>>>(job, out);
      break;
    default:  // mle and factored: per-point Bernstein jets, sum-factorised contraction
      point_list_kernel<T, NC, Order, Method::Factored><<<grid, kPerPointBlock, 0, ctx->stream>>>(job, out);
      break;
  }
}

// The outputs may be host memory or a caller's device memory (UVA tells which): the copies say neither. Outputs in
// pageable host memory come home through pinned staging emptied by all cores where that pays (the driver's own
// pageable copy runs on one thread, far below the link).
template <class T>
void copy_back(Context* ctx, std::int64_t first, std::int64_t count, std::int64_t dev_first,
               const kern::OutView<T>& host_out) {
  std::vector<core::HostCopy> copies;
  for (int k = 0; k < 7; ++k)
    for (int c = 0; c < 3; ++c) {
      T* h = out_slots(host_out, k)[c];
      if (h && ctx->dev_out[k * 3 + c])
        copies.push_back({h + first, static_cast<T*>(ctx->dev_out[k * 3 + c]) + dev_first, std::size_t(count) * sizeof(T)});
    }
  if (host_out.flag && ctx->dev_out[21])
    copies.push_back({host_out.flag + first, static_cast<std::uint8_t*>(ctx->dev_out[21]) + dev_first, std::size_t(count)});
  std::size_t total = 0, pageable_bytes = 0;
  for (const auto& c : copies) total += c.bytes;
  std::vector<char> pageable(copies.size(), 0);
  if (total >= core::kMinStagedBytes)
    for (std::size_t i = 0; i < copies.size(); ++i)
      if (core::pageable(copies[i].host)) pageable[i] = 1, pageable_bytes += copies[i].bytes;
  core::StagingPair pair;
  if (pageable_bytes > 0 && core::staging_pays(ctx->device, pageable_bytes, false)) pair = core::take_staging(ctx->device);
  std::vector<core::HostCopy> staged;
  for (std::size_t i = 0; i < copies.size(); ++i)
    if (pair && pageable[i]) staged.push_back(copies[i]);
    else
      PS_CUDA(cudaMemcpyAsync(copies[i].host, copies[i].device, copies[i].bytes, cudaMemcpyDefault, ctx->stream),
              "copying samples to the host");
  if (!pair) return;
  struct GiveBack {
    core::StagingPair p;
    ~GiveBack() { core::give_back_staging(p); }
  } give_back{pair};
  core::download_staged(pair, staged, ctx->stream, cpu_thread_count(0));
}

}  // namespace

template <class T>
bool launch_grid(Context* ctx, const Inputs<T>& in, std::int64_t row_begin, std::int64_t row_end,
                 const kern::OutView<T>& which, bool dynamic, std::int64_t tile_rows) {
  PS_CUDA(cudaSetDevice(ctx->device), "selecting the CUDA device");
  bool built = false;
  // Float grids of the factored method with a compiled-in output set run stage 2 on tensor cores.
  const int outs = output_set(which);
  bool tensor = std::is_same_v<T, float> && in.tensor_cores && in.method == Method::Factored && !dynamic &&
                tensor::takes(in.nc, in.order, in.m, row_end - row_begin, outs);
  if (tensor && ctx->tensor_available < 0) ctx->tensor_available = tensor::available(ctx->device) ? 1 : 0;
  tensor = tensor && ctx->tensor_available == 1;
  // Whole grids of a fixed output set fold rows u and 1 - u (needs both halves in one narrow launch).
  const bool folded = in.fold_rows && in.method == Method::Factored && !tensor && !dynamic && row_begin == 0 &&
                      row_end == in.rows && in.order <= 1 && outs != kOutRuntime &&
                      in.rows <= narrow_rows<T>(in.cols, in.launch_bytes);
  const kern::OutView<T> out = device_outputs(ctx, which, (row_end - row_begin) * in.cols, in.poison);
  const Job<T> job = device_job(ctx, in, &built, tensor, folded ? &out : nullptr);
  DeviceTiles dyn;
  if (dynamic) {
    dyn.front = ctx->front.as<unsigned long long>();
    dyn.tiles = ctx->dyn_tiles;
    dyn.gpu_claim = ctx->flags_dev;
    dyn.cpu_claim = ctx->flags_dev + ctx->dyn_tiles;
    dyn.owner = ctx->flags_dev + 2 * ctx->dyn_tiles;
  }
  PS_CUDA(cudaEventRecord(ctx->start, ctx->stream), "recording an event");
  bool ran_folded = false;
  if constexpr (std::is_same_v<T, float>) {
    if (tensor) tensor::launch(job, job.columns.q, row_begin, row_end, out, outs, ctx->multiprocessors, ctx->stream);
  }
  if (!tensor)
    dispatch_nc_order(in.nc, in.order, [&]<int NC, int Order>() {
      launch_sample_kernel<T, NC, Order>(ctx, job, row_begin, row_end, out, dyn, tile_rows, in.launch_bytes, folded,
                                         &ran_folded);
    });
  PS_CUDA_LAUNCH("launching the surface kernel");
  ctx->tensor_launched = tensor;
  ctx->folded_launched = ran_folded;
  PS_CUDA(cudaEventRecord(ctx->stop, ctx->stream), "recording an event");
  ctx->launched_begin = row_begin;
  ctx->launched_end = row_end;
  ctx->cols = in.cols;
  ctx->pending = true;
  return built;
}

template <class T>
void finish_grid(Context* ctx, std::int64_t row_begin, std::int64_t row_end, const kern::OutView<T>& host_out,
                 EvalReport* report) {
  float kernel_ms = 0;
  if (ctx->pending) {
    PS_CUDA(cudaEventSynchronize(ctx->stop), "running the surface kernel");
    PS_CUDA(cudaEventElapsedTime(&kernel_ms, ctx->start, ctx->stop), "timing the surface kernel");
    ctx->pending = false;
  }
  if (row_end > row_begin) {
    if (row_begin < ctx->launched_begin || row_end > ctx->launched_end)
      throw Error(ErrorKind::InvalidArgument, "finish_grid rows outside the launched range");
    PS_CUDA(cudaEventRecord(ctx->start, ctx->stream), "recording an event");
    copy_back(ctx, row_begin * ctx->cols, (row_end - row_begin) * ctx->cols,
              (row_begin - ctx->launched_begin) * ctx->cols, host_out);
    PS_CUDA(cudaEventRecord(ctx->stop, ctx->stream), "recording an event");
    PS_CUDA(cudaEventSynchronize(ctx->stop), "copying samples to the host");
    float copy_ms = 0;
    PS_CUDA(cudaEventElapsedTime(&copy_ms, ctx->start, ctx->stop), "timing the copy");
    if (report) report->seconds_transfer += copy_ms * 1e-3;
  }
  if (report) {
    report->seconds_kernel += kernel_ms * 1e-3;
    report->gpu_tensor_cores = report->gpu_tensor_cores || ctx->tensor_launched;
    report->gpu_rows_folded = report->gpu_rows_folded || ctx->folded_launched;
  }
}

template <class T>
void evaluate_points(Context* ctx, const Inputs<T>& in, const kern::OutView<T>& host_out, EvalReport* report) {
  PS_CUDA(cudaSetDevice(ctx->device), "selecting the CUDA device");
  bool built = false;
  Job<T> job = device_job(ctx, in, &built);
  const std::size_t uv_bytes = std::size_t(in.point_count) * 2 * sizeof(double);
  ctx->uv.ensure(uv_bytes, "allocating the (u,v) list on the device");
  PS_CUDA(cudaMemcpyAsync(ctx->uv.ptr, in.uv, uv_bytes, cudaMemcpyHostToDevice, ctx->stream),
          "uploading the (u,v) list");
  job.uv = ctx->uv.as<double>();
  job.point_count = in.point_count;
  const kern::OutView<T> out = device_outputs(ctx, host_out, in.point_count, in.poison);
  PS_CUDA(cudaEventRecord(ctx->start, ctx->stream), "recording an event");
  dispatch_nc_order(in.nc, in.order, [&]<int NC, int Order>() { launch_point_list<T, NC, Order>(ctx, job, out); });
  PS_CUDA_LAUNCH("launching the point-list kernel");
  PS_CUDA(cudaEventRecord(ctx->stop, ctx->stream), "recording an event");
  PS_CUDA(cudaEventSynchronize(ctx->stop), "running the point-list kernel");
  float ms = 0;
  cudaEventElapsedTime(&ms, ctx->start, ctx->stop);
  if (report) report->seconds_kernel = ms * 1e-3;
  copy_back(ctx, 0, in.point_count, 0, host_out);
  PS_CUDA(cudaStreamSynchronize(ctx->stream), "copying samples to the host");
}

#define PARASURF_INSTANTIATE(T)                                                                                  \
  template bool launch_grid<T>(Context*, const Inputs<T>&, std::int64_t, std::int64_t, const kern::OutView<T>&, \
                               bool, std::int64_t);                                                             \
  template void finish_grid<T>(Context*, std::int64_t, std::int64_t, const kern::OutView<T>&, EvalReport*);     \
  template void evaluate_points<T>(Context*, const Inputs<T>&, const kern::OutView<T>&, EvalReport*);
PARASURF_INSTANTIATE(float)
PARASURF_INSTANTIATE(double)
#undef PARASURF_INSTANTIATE

}  // namespace parasurf::bezier::cuda
