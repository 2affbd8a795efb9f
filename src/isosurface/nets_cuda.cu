// Label-map boundaries on the GPU: the same steps as the CPU (nets_kernels.hpp), one block per cell row or sample
// row with block scans for in-row offsets, CUB scans over rows, a radix sort for the neighbour lists, and one
// kernel per smoothing step. Results equal the CPU's to the bit.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include <chrono>
#include <limits>

#include "core/cuda_check.hpp"
#include "core/device_buffer.hpp"
#include "isosurface/nets_core.hpp"
#include "parasurf/error.hpp"

namespace parasurf::nets {

namespace {

constexpr int kThreads = 128;
constexpr std::uint32_t kNone = 0xFFFFFFFFu;

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

__global__ void __launch_bounds__(kThreads) count_cells(Grid g, std::uint32_t* __restrict__ row_count) {
  using Reduce = cub::BlockReduce<std::uint32_t, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const CellRow c = cell_row(g, blockIdx.x);
  std::uint32_t n = 0;
  for (std::int64_t i = std::int64_t(threadIdx.x) - 1; i < g.nx; i += kThreads) n += cell_labels(g, c, i) >= 2 ? 1u : 0u;
  const std::uint32_t total = Reduce(temp).Sum(n);
  if (threadIdx.x == 0) row_count[blockIdx.x] = total;
}

__global__ void __launch_bounds__(kThreads) number_cells(Grid g, const std::uint64_t* __restrict__ row_first,
                                                          std::uint32_t* __restrict__ vertex_of,
                                                          float* __restrict__ positions,
                                                          std::uint8_t* __restrict__ junction) {
  using Scan = cub::BlockScan<std::uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage temp;
  const CellRow c = cell_row(g, blockIdx.x);
  std::uint64_t base = row_first[blockIdx.x];
  for (std::int64_t i0 = -1; i0 < g.nx; i0 += kThreads) {
    const std::int64_t i = i0 + threadIdx.x;
    const int labels = i < g.nx ? cell_labels(g, c, i) : 1;
    std::uint32_t offset, chunk;
    Scan(temp).ExclusiveSum(labels >= 2 ? 1u : 0u, offset, chunk);
    if (i < g.nx) {
      const std::uint64_t cell = std::uint64_t(g.cell_index(i, c.j, c.k));
      if (labels >= 2) {
        const std::uint64_t v = base + offset;
        vertex_of[cell] = std::uint32_t(v);
        junction[v] = labels >= 3 ? 1 : 0;
        positions[3 * v] = float(i) + 0.5f;
        positions[3 * v + 1] = float(c.j) + 0.5f;
        positions[3 * v + 2] = float(c.k) + 0.5f;
      } else {
        vertex_of[cell] = kNone;
      }
    }
    base += chunk;
    __syncthreads();  // the scan's storage is reused by the next chunk
  }
}

__global__ void __launch_bounds__(kThreads) count_quads(Grid g, std::uint32_t* __restrict__ row_count) {
  using Reduce = cub::BlockReduce<std::uint32_t, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  std::uint32_t n = 0;
  for (std::int64_t i = std::int64_t(threadIdx.x) - 1; i <= g.nx; i += kThreads)
    row_quads(g, blockIdx.x, i, [&](std::int64_t, std::int64_t, std::int64_t, int, std::int32_t, std::int32_t) { ++n; });
  const std::uint32_t total = Reduce(temp).Sum(n);
  if (threadIdx.x == 0) row_count[blockIdx.x] = total;
}

__global__ void __launch_bounds__(kThreads) write_quads(Grid g, const std::uint64_t* __restrict__ row_first,
                                                         const std::uint32_t* __restrict__ vertex_of,
                                                         std::uint32_t* __restrict__ quads,
                                                         std::int32_t* __restrict__ quad_labels) {
  using Scan = cub::BlockScan<std::uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage temp;
  std::uint64_t base = row_first[blockIdx.x];
  for (std::int64_t i0 = -1; i0 <= g.nx; i0 += kThreads) {
    const std::int64_t i = i0 + threadIdx.x;
    std::uint32_t n = 0;
    if (i <= g.nx)
      row_quads(g, blockIdx.x, i, [&](std::int64_t, std::int64_t, std::int64_t, int, std::int32_t, std::int32_t) { ++n; });
    std::uint32_t offset, chunk;
    Scan(temp).ExclusiveSum(n, offset, chunk);
    if (n) {
      std::uint64_t at = base + offset;
      row_quads(g, blockIdx.x, i,
                [&](std::int64_t qi, std::int64_t qj, std::int64_t qk, int a, std::int32_t here, std::int32_t there) {
                  std::int64_t cells[4];
                  quad_cells(g, qi, qj, qk, a, here, there, cells);
                  for (int c = 0; c < 4; ++c) quads[4 * at + c] = vertex_of[cells[c]];
                  quad_labels[2 * at] = here > there ? here : there;
                  quad_labels[2 * at + 1] = here > there ? there : here;
                  ++at;
                });
    }
    base += chunk;
    __syncthreads();
  }
}

// Two directed edges per quad corner: to the next and to the previous corner, as (from << 32 | to).
__global__ void edge_keys(const std::uint32_t* __restrict__ quads, std::uint64_t quad_count,
                          std::uint64_t* __restrict__ keys) {
  const std::uint64_t q = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q >= quad_count) return;
  const std::uint32_t* quad = quads + 4 * q;
  for (int c = 0; c < 4; ++c) {
    const std::uint64_t from = std::uint64_t(quad[c]) << 32;
    keys[8 * q + 2 * c] = from | quad[(c + 1) % 4];
    keys[8 * q + 2 * c + 1] = from | quad[(c + 3) % 4];
  }
}

// first[v]: where v's neighbours start in the sorted unique edges (a binary search); first[V] = edge count.
__global__ void neighbour_lists(const std::uint64_t* __restrict__ keys, const std::uint64_t* __restrict__ edge_count,
                                std::uint64_t vertex_count, std::uint64_t* __restrict__ first,
                                std::uint32_t* __restrict__ neighbours) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::uint64_t edges = *edge_count;
  if (t < edges) neighbours[t] = std::uint32_t(keys[t]);
  if (t > vertex_count) return;
  const std::uint64_t want = t << 32;
  std::uint64_t lo = 0, hi = edges;
  while (lo < hi) {
    const std::uint64_t mid = (lo + hi) / 2;
    if (keys[mid] < want) lo = mid + 1;
    else hi = mid;
  }
  first[t] = lo;
}

__global__ void smooth_step(const float* __restrict__ pos, const float* __restrict__ centre,
                            const std::uint64_t* __restrict__ first, const std::uint32_t* __restrict__ neighbours,
                            const std::uint8_t* __restrict__ junction, std::uint64_t vertex_count, float factor,
                            float limit, float* __restrict__ out) {
  const std::uint64_t v = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v < vertex_count) smooth_vertex(std::uint32_t(v), pos, centre, first, neighbours, junction, factor, limit, out);
}

unsigned blocks_for(std::uint64_t n) { return unsigned((n + 255) / 256); }

}  // namespace

void core_cuda(const Grid& host, const Params& params, int device, Core& out) {
  PS_CUDA(cudaSetDevice(device), "selecting the CUDA device");
  const auto t_faces = Clock::now();
  const std::uint64_t voxels = std::uint64_t(host.nx) * std::uint64_t(host.ny) * std::uint64_t(host.nz);
  const std::uint64_t cell_count = std::uint64_t(host.nx + 1) * std::uint64_t(host.ny + 1) * std::uint64_t(host.nz + 1);
  core::DeviceBuffer labels, excluded, vertex_of, row_count, row_first, scan_temp, counts;
  labels.ensure(voxels * 4, "allocating the label map");
  PS_CUDA(cudaMemcpy(labels.ptr, host.labels, voxels * 4, cudaMemcpyHostToDevice), "uploading the label map");
  excluded.ensure(std::max<std::size_t>(4, std::size_t(host.excluded_count) * 4), "allocating the excluded labels");
  if (host.excluded_count)
    PS_CUDA(cudaMemcpy(excluded.ptr, host.excluded, std::size_t(host.excluded_count) * 4, cudaMemcpyHostToDevice),
            "uploading the excluded labels");
  Grid g = host;
  g.labels = labels.as<std::int32_t>();
  g.excluded = excluded.as<std::int32_t>();

  auto scan_rows = [&](std::int64_t rows, const char* what) {
    std::size_t temp = 0;
    PS_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp, row_count.as<std::uint32_t>(), row_first.as<std::uint64_t>(),
                                          rows + 1),
            what);
    scan_temp.ensure(temp, what);
    PS_CUDA(cub::DeviceScan::ExclusiveSum(scan_temp.ptr, temp, row_count.as<std::uint32_t>(),
                                          row_first.as<std::uint64_t>(), rows + 1),
            what);
    std::uint64_t total = 0;
    PS_CUDA(cudaMemcpy(&total, row_first.as<std::uint64_t>() + rows, 8, cudaMemcpyDeviceToHost), what);
    return total;
  };

  // Cells with a vertex.
  const std::int64_t cell_rows = g.cell_rows(), srows = g.sample_rows();
  const std::int64_t rows = std::max(cell_rows, srows);
  row_count.ensure(std::size_t(rows + 1) * 4, "allocating row counts");
  row_first.ensure(std::size_t(rows + 1) * 8, "allocating row offsets");
  PS_CUDA(cudaMemset(row_count.ptr, 0, std::size_t(rows + 1) * 4), "clearing row counts");
  count_cells<<<unsigned(cell_rows), kThreads>>>(g, row_count.as<std::uint32_t>());
  PS_CUDA_LAUNCH("counting boundary cells");
  const std::uint64_t vertex_count = scan_rows(cell_rows, "scanning boundary cells");
  if (vertex_count > std::numeric_limits<std::uint32_t>::max())
    throw Error(ErrorKind::LimitReached, "the boundary mesh has more than 4294967295 vertices");
  core::DeviceBuffer positions, junction;
  vertex_of.ensure(cell_count * 4, "allocating cell vertex ids");
  positions.ensure(std::max<std::uint64_t>(12, vertex_count * 12), "allocating boundary vertices");
  junction.ensure(std::max<std::uint64_t>(1, vertex_count), "allocating junction flags");
  number_cells<<<unsigned(cell_rows), kThreads>>>(g, row_first.as<std::uint64_t>(), vertex_of.as<std::uint32_t>(),
                                                  positions.as<float>(), junction.as<std::uint8_t>());
  PS_CUDA_LAUNCH("numbering boundary vertices");

  // Quads.
  PS_CUDA(cudaMemset(row_count.ptr, 0, std::size_t(rows + 1) * 4), "clearing row counts");
  count_quads<<<unsigned(srows), kThreads>>>(g, row_count.as<std::uint32_t>());
  PS_CUDA_LAUNCH("counting boundary faces");
  const std::uint64_t quad_count = scan_rows(srows, "scanning boundary faces");
  core::DeviceBuffer quads, quad_labels;
  quads.ensure(std::max<std::uint64_t>(16, quad_count * 16), "allocating boundary faces");
  quad_labels.ensure(std::max<std::uint64_t>(8, quad_count * 8), "allocating face labels");
  write_quads<<<unsigned(srows), kThreads>>>(g, row_first.as<std::uint64_t>(), vertex_of.as<std::uint32_t>(),
                                             quads.as<std::uint32_t>(), quad_labels.as<std::int32_t>());
  PS_CUDA_LAUNCH("writing boundary faces");
  PS_CUDA(cudaDeviceSynchronize(), "extracting label boundaries");
  vertex_of.release();
  labels.release();
  out.seconds_faces = since(t_faces);

  const auto t_smooth = Clock::now();
  if (params.iterations > 0 && vertex_count > 0 && quad_count > 0) {
    const std::uint64_t key_count = 8 * quad_count;
    core::DeviceBuffer keys, sorted, first, neighbours, centre, next;
    keys.ensure(key_count * 8, "allocating edges");
    sorted.ensure(key_count * 8, "allocating edges");
    counts.ensure(8, "allocating counters");
    edge_keys<<<blocks_for(quad_count), 256>>>(quads.as<std::uint32_t>(), quad_count, keys.as<std::uint64_t>());
    PS_CUDA_LAUNCH("listing edges");
    std::size_t temp = 0;
    PS_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, temp, keys.as<std::uint64_t>(), sorted.as<std::uint64_t>(),
                                           key_count),
            "sizing the edge sort");
    scan_temp.ensure(temp, "allocating the edge sort");
    PS_CUDA(cub::DeviceRadixSort::SortKeys(scan_temp.ptr, temp, keys.as<std::uint64_t>(), sorted.as<std::uint64_t>(),
                                           key_count),
            "sorting edges");
    PS_CUDA(cub::DeviceSelect::Unique(nullptr, temp, sorted.as<std::uint64_t>(), keys.as<std::uint64_t>(),
                                      counts.as<std::uint64_t>(), key_count),
            "sizing the edge selection");
    scan_temp.ensure(temp, "allocating the edge selection");
    PS_CUDA(cub::DeviceSelect::Unique(scan_temp.ptr, temp, sorted.as<std::uint64_t>(), keys.as<std::uint64_t>(),
                                      counts.as<std::uint64_t>(), key_count),
            "removing repeated edges");
    sorted.release();
    first.ensure((vertex_count + 1) * 8, "allocating neighbour lists");
    neighbours.ensure(key_count * 4, "allocating neighbour lists");
    neighbour_lists<<<blocks_for(std::max(key_count, vertex_count + 1)), 256>>>(
        keys.as<std::uint64_t>(), counts.as<std::uint64_t>(), vertex_count, first.as<std::uint64_t>(),
        neighbours.as<std::uint32_t>());
    PS_CUDA_LAUNCH("building neighbour lists");
    keys.release();
    centre.ensure(vertex_count * 12, "allocating smoothing buffers");
    next.ensure(vertex_count * 12, "allocating smoothing buffers");
    PS_CUDA(cudaMemcpy(centre.ptr, positions.ptr, vertex_count * 12, cudaMemcpyDeviceToDevice), "keeping cell centres");
    for (int step = 0; step < params.iterations; ++step) {
      smooth_step<<<blocks_for(vertex_count), 256>>>(positions.as<float>(), centre.as<float>(), first.as<std::uint64_t>(),
                                                    neighbours.as<std::uint32_t>(), junction.as<std::uint8_t>(),
                                                    vertex_count, params.factor(step), params.limit, next.as<float>());
      PS_CUDA_LAUNCH("smoothing");
      std::swap(positions.ptr, next.ptr);
      std::swap(positions.bytes, next.bytes);
    }
    PS_CUDA(cudaDeviceSynchronize(), "smoothing");
  }
  out.seconds_smooth = since(t_smooth);

  out.positions.resize(3 * vertex_count);
  out.junction.resize(vertex_count);
  out.quads.resize(4 * quad_count);
  out.quad_labels.resize(2 * quad_count);
  PS_CUDA(cudaMemcpy(out.positions.data(), positions.ptr, vertex_count * 12, cudaMemcpyDeviceToHost), "downloading vertices");
  PS_CUDA(cudaMemcpy(out.junction.data(), junction.ptr, vertex_count, cudaMemcpyDeviceToHost), "downloading vertices");
  PS_CUDA(cudaMemcpy(out.quads.data(), quads.ptr, quad_count * 16, cudaMemcpyDeviceToHost), "downloading faces");
  PS_CUDA(cudaMemcpy(out.quad_labels.data(), quad_labels.ptr, quad_count * 8, cudaMemcpyDeviceToHost),
          "downloading face labels");
}

}  // namespace parasurf::nets
