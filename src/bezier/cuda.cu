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
#include "bezier/cuda_kernels.cuh"
#include "bezier/cuda_shared.cuh"
#include "core/cuda_check.hpp"
#include "core/device_buffer.hpp"
#include "core/memory.hpp"
#include "core/staging.hpp"
#include "parasurf/device.hpp"

namespace parasurf::bezier::cuda {

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
  core::copy_home(ctx->device, copies, ctx->stream, cpu_thread_count(0), "copying samples to the host");
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

namespace {

// The CUDA backend: one context (stream, device buffers, the device's level 2) for the evaluator's calls. Grids
// run in launches of as many rows as fit in 80 % of the free device memory.
template <class T> class CudaBackend final : public Backend<T> {
 public:
  CudaBackend() : ctx_(create_context()) {}
  ~CudaBackend() override { destroy_context(ctx_); }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  int evaluate_grid(Job<T>& job, const kern::OutView<T>& out, const EvalOptions& options, EvalReport& report) override {
    const Inputs<T> in = inputs_of(job, options);
    const std::uint64_t row_bytes = sample_bytes(job.cols, request_of(out), sizeof(T));
    std::int64_t chunk = std::max<std::int64_t>(1, std::int64_t(0.8 * double(free_device_memory()) / double(row_bytes)));
    chunk = std::min(chunk, job.rows);
    int builds = 0;
    for (std::int64_t r0 = 0; r0 < job.rows; r0 += chunk) {
      const std::int64_t r1 = std::min(job.rows, r0 + chunk);
      if (launch_grid<T>(ctx_, in, r0, r1, out, false, 0)) ++builds;
      finish_grid<T>(ctx_, r0, options.skip_copy_back ? r0 : r1, out, &report);
    }
    return builds;
  }

  void evaluate_points(const Job<T>& job, const kern::OutView<T>& out, const EvalOptions& options,
                       EvalReport& report) override {
    cuda::evaluate_points<T>(ctx_, inputs_of(job, options), out, &report);
  }

 private:
  // The request an output view answers (its pointers tell which outputs are wanted).
  static EvalRequest request_of(const kern::OutView<T>& out) {
    EvalRequest r;
    r.positions = out.p[0] != nullptr;
    r.first_derivatives = out.du[0] != nullptr;
    r.normals = out.nrm[0] != nullptr;
    r.second_derivatives = out.duu[0] != nullptr;
    return r;
  }
  Context* ctx_;
};

}  // namespace

#define PARASURF_INSTANTIATE(T)                                                                                  \
  template bool launch_grid<T>(Context*, const Inputs<T>&, std::int64_t, std::int64_t, const kern::OutView<T>&, \
                               bool, std::int64_t);                                                             \
  template void finish_grid<T>(Context*, std::int64_t, std::int64_t, const kern::OutView<T>&, EvalReport*);     \
  template void evaluate_points<T>(Context*, const Inputs<T>&, const kern::OutView<T>&, EvalReport*);
PARASURF_INSTANTIATE(float)
PARASURF_INSTANTIATE(double)
#undef PARASURF_INSTANTIATE

}  // namespace parasurf::bezier::cuda

namespace parasurf::bezier {
template <class T> std::unique_ptr<Backend<T>> make_cuda_backend() {
  return std::make_unique<cuda::CudaBackend<T>>();
}
template std::unique_ptr<Backend<float>> make_cuda_backend<float>();
template std::unique_ptr<Backend<double>> make_cuda_backend<double>();
}  // namespace parasurf::bezier
