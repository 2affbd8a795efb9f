// marching_cubes_array on a caller's CUDA array (Lewiner et al. 2003 conventions, as scikit-image): the samples are
// read where they lie, the mesh, its mask and its values are made on the same GPU and stay there.
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <tuple>

#include "core/cuda_check.hpp"
#include "core/device_buffer.hpp"
#include "core/voxel_dispatch.hpp"
#include "isosurface/array_mesh.hpp"
#include "isosurface/cell_values.hpp"
#include "isosurface/engine.hpp"
#include "parasurf/device.hpp"

namespace parasurf {

namespace iso {

namespace {

constexpr int kThreads = 256;
unsigned blocks(std::int64_t n) { return unsigned(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 1 << 20)); }

template <class T>
__global__ void gather_kernel(const char* in, cells::Grid g, T* out, std::int64_t n) {
  for (std::int64_t p = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; p < n; p += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t c = p % g.shape[2], r = p / g.shape[2], b = r % g.shape[1], a = r / g.shape[1];
    out[p] = *reinterpret_cast<const T*>(in + a * g.stride[0] + b * g.stride[1] + c * g.stride[2]);
  }
}

template <class T>
__global__ void range_kernel(const T* v, std::int64_t n, double* lo_hi) {
  __shared__ double lo[kThreads], hi[kThreads];
  double a = INFINITY, b = -INFINITY;
  for (std::int64_t p = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; p < n; p += std::int64_t(gridDim.x) * blockDim.x) {
    const double x = double(v[p]);
    if (isfinite(x)) a = fmin(a, x), b = fmax(b, x);
  }
  lo[threadIdx.x] = a;
  hi[threadIdx.x] = b;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (int(threadIdx.x) < s) {
      lo[threadIdx.x] = fmin(lo[threadIdx.x], lo[threadIdx.x + s]);
      hi[threadIdx.x] = fmax(hi[threadIdx.x], hi[threadIdx.x + s]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) lo_hi[2 * blockIdx.x] = lo[0], lo_hi[2 * blockIdx.x + 1] = hi[0];
}

// flag = 1 when some vertex lies on a sample (all three coordinates whole multiples of the cell): a crossing a
// rounding from a sample, which without degenerate triangles the host welds (rounded_ties.cpp).
__global__ void on_sample_kernel(const float* p, std::int64_t nv, double c0, double c1, double c2, std::uint32_t* flag) {
  const double inv[3] = {1.0 / c0, 1.0 / c1, 1.0 / c2};
  for (std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; v < nv; v += std::int64_t(gridDim.x) * blockDim.x) {
    bool whole = true;
    for (int a = 0; a < 3; ++a) {
      const double x = double(p[3 * v + a]) * inv[a];
      whole = whole && fabs(x - rint(x)) <= 1e-3;
    }
    if (whole) *flag = 1;
  }
}

// keep[f]: whether triangle f's cell is in the mask; used[v] / touched[v]: whether a kept / dropped triangle uses v.
__global__ void mask_kernel(cells::Grid g, const char* mask, cells::Grid m, const float* p, const std::uint32_t* t,
                            std::int64_t nf, std::uint32_t* keep, std::uint32_t* used, std::uint32_t* touched) {
  for (std::int64_t f = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; f < nf; f += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t c[3];
    cells::face_cell(g, p, t, f, c);
    const bool k = mask[(c[0] + 1) * m.stride[0] + (c[1] + 1) * m.stride[1] + (c[2] + 1) * m.stride[2]] != 0;
    keep[f] = k;
    std::uint32_t* mark = k ? used : touched;
    for (int a = 0; a < 3; ++a) mark[t[3 * f + a]] = 1;
  }
}

// The kept vertices' values; those next to a dropped triangle are cleared (values_kernel then takes the kept
// triangles' ranges) and flagged in `border`.
__global__ void compact_values_kernel(const std::uint32_t* used, const std::uint32_t* touched, const std::uint32_t* at,
                                      std::int64_t nv, const float* values, float* values2, std::uint32_t* border) {
  for (std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; v < nv; v += std::int64_t(gridDim.x) * blockDim.x)
    if (used[v]) {
      border[at[v]] = touched[v];
      values2[at[v]] = touched[v] ? 0.0f : values[v];
    }
}

__global__ void compact_vertices_kernel(const std::uint32_t* used, const std::uint32_t* at, std::int64_t nv, const float* p,
                                        const float* n, float* p2, float* n2) {
  for (std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; v < nv; v += std::int64_t(gridDim.x) * blockDim.x)
    if (used[v])
      for (int a = 0; a < 3; ++a) p2[3 * std::size_t(at[v]) + a] = p[3 * v + a], n2[3 * std::size_t(at[v]) + a] = n[3 * v + a];
}

__global__ void compact_faces_kernel(const std::uint32_t* keep, const std::uint32_t* at, const std::uint32_t* vertex_at,
                                     std::int64_t nf, const std::uint32_t* t, std::uint32_t* t2) {
  for (std::int64_t f = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; f < nf; f += std::int64_t(gridDim.x) * blockDim.x)
    if (keep[f])
      for (int a = 0; a < 3; ++a) t2[3 * std::size_t(at[f]) + a] = vertex_at[t[3 * f + a]];
}

// The largest range of the cells of each vertex's triangles (a triangle's cell from its centroid), for the vertices
// flagged in `only`.
template <class T>
__global__ void values_kernel(cells::Grid g, float level, const float* p, const std::uint32_t* t, std::int64_t nf,
                              const std::uint32_t* only, unsigned* keys) {
  for (std::int64_t f = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; f < nf; f += std::int64_t(gridDim.x) * blockDim.x) {
    const std::uint32_t* tri = t + 3 * f;
    if (!only[tri[0]] && !only[tri[1]] && !only[tri[2]]) continue;
    std::int64_t c[3];
    cells::face_cell(g, p, t, f, c);
    const unsigned key = cells::range_key(cells::cell_range<T>(g, c, level));
    for (int a = 0; a < 3; ++a)
      if (only[tri[a]]) atomicMax(keys + tri[a], key);
  }
}

// The process's kept engine for one call (take_cuda_engine), kept again when the call returns; an engine a failed
// call leaves is freed.
struct EngineLease {
  explicit EngineLease(int d) : device(d), engine(take_cuda_engine(d)) {}
  EngineLease(const EngineLease&) = delete;
  EngineLease& operator=(const EngineLease&) = delete;
  ~EngineLease() {
    if (std::uncaught_exceptions() > 0) return;
    try {
      keep_cuda_engine(device, std::move(engine));
    } catch (...) {  // (freed instead)
    }
  }
  int device;
  std::unique_ptr<SlabEngine> engine;
};

// The size of the last mesh made from an array of each shape and type on each device: a call like the last one
// (a loop over frames or volumes of one size) gets result arrays with room for it before the count, and the
// engine writes the mesh straight into them.
struct LastMeshes {
  using Key = std::tuple<int, VoxelType, std::int64_t, std::int64_t, std::int64_t>;
  std::mutex mutex;
  std::map<Key, SlabCounts> sizes;
};
std::atomic<bool> direct_meshes{true};
LastMeshes& last_meshes() {
  static auto* m = new LastMeshes;  // never destroyed: the keys are plain and the process may still be running calls
  return *m;
}

// A flag in pinned host memory the device writes: read after the call's last wait, without a copy of its own.
// One per thread, kept for the process.
std::uint32_t* host_flag() {
  thread_local std::uint32_t* flag = nullptr;
  if (!flag) {
    void* p = nullptr;
    PS_CUDA(cudaHostAlloc(&p, sizeof(std::uint32_t), cudaHostAllocMapped | cudaHostAllocPortable), "allocating a flag");
    flag = static_cast<std::uint32_t*>(p);
  }
  return flag;
}

std::uint64_t exclusive_sum(const std::uint32_t* in, std::uint32_t* out, std::int64_t n, core::DeviceBuffer& temp) {
  std::size_t bytes = 0;
  PS_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n), "sizing a scan");
  temp.ensure(std::max<std::size_t>(bytes, 1), "allocating a scan's workspace");
  PS_CUDA(cub::DeviceScan::ExclusiveSum(temp.ptr, bytes, in, out, n), "scanning the kept triangles");
  std::uint32_t last[2] = {0, 0};
  PS_CUDA(cudaMemcpy(&last[0], out + n - 1, 4, cudaMemcpyDeviceToHost), "reading a scan's total");
  PS_CUDA(cudaMemcpy(&last[1], in + n - 1, 4, cudaMemcpyDeviceToHost), "reading a scan's total");
  return std::uint64_t(last[0]) + last[1];
}

// The host path on a copy of the samples, its mesh brought back: for meshes whose samples on the level left
// coincident triangles or unused vertices, which the host's clean-up removes.
ArrayMesh through_host(const ArrayView3& v, const ArrayIsosurfaceOptions& o, const void* samples) {
  const std::size_t bytes = std::size_t(v.shape[0] * v.shape[1] * v.shape[2]) * voxel_bytes(v.type);
  std::vector<char> host(bytes);
  PS_CUDA(cudaMemcpy(host.data(), samples, bytes, cudaMemcpyDeviceToHost), "copying the samples home");
  std::vector<char> host_mask;
  ArrayView3 hv{host.data(), v.type, v.shape, ArrayView3::c_strides(v.shape, v.type), MemorySpace::Host, 0};
  ArrayView3 hm;
  ArrayIsosurfaceOptions ho = o;
  ho.step = 1;  // the samples copied are the stepped grid's: its cells are step times the spacing
  for (int a = 0; a < 3; ++a) ho.spacing[a] = o.spacing[a] * double(o.step);
  ho.device = Device::Cuda;
  if (o.mask) {
    const ArrayView3 m = o.mask->stepped(o.step);
    std::vector<char> all(std::size_t(v.shape[0] * v.shape[1] * v.shape[2]));
    // The mask's samples one by one would be slow through cudaMemcpy: gather them on the device first.
    core::DeviceBuffer packed;
    packed.ensure(all.size(), "allocating the mask's copy");
    cells::Grid g{static_cast<const char*>(m.data), {m.strides[0], m.strides[1], m.strides[2]}, {m.shape[0], m.shape[1], m.shape[2]}, {1, 1, 1}};
    gather_kernel<std::uint8_t><<<blocks(std::int64_t(all.size())), kThreads>>>(g.data, g, packed.as<std::uint8_t>(), std::int64_t(all.size()));
    PS_CUDA_LAUNCH("packing the mask");
    PS_CUDA(cudaMemcpy(all.data(), packed.ptr, all.size(), cudaMemcpyDeviceToHost), "copying the mask home");
    host_mask = std::move(all);
    hm = ArrayView3{host_mask.data(), VoxelType::UInt8, v.shape, ArrayView3::c_strides(v.shape, VoxelType::UInt8), MemorySpace::Host, 0};
    ho.mask = &hm;
  }
  ArrayMesh h = marching_cubes_array(hv, ho);
  ArrayMesh d;
  d.device = h.device;
  d.vertices = h.vertices;
  d.triangles = h.triangles;
  for (auto [from, to] : {std::pair{&h.verts, &d.verts}, std::pair{&h.normals, &d.normals}, std::pair{&h.faces, &d.faces},
                          std::pair{&h.values, &d.values}}) {
    *to = Buffer::cuda(v.device, from->bytes);
    PS_CUDA(cudaMemcpy(to->data, from->data, from->bytes, cudaMemcpyHostToDevice), "copying the mesh to the GPU");
  }
  return d;
}

}  // namespace

void set_direct_array_meshes(bool on) { direct_meshes.store(on, std::memory_order_relaxed); }

// One function: the engine run, the values and the mask passes share the device arrays of the one mesh it
// hands over; the steps are marked inside.
ArrayMesh marching_cubes_cuda_array(const ArrayView3& volume, const ArrayIsosurfaceOptions& o) {
  if (o.device == Device::Cpu)
    throw Error(ErrorKind::InvalidArgument, "the array lies on CUDA device " + std::to_string(volume.device) +
                                                ": device='cpu' would need a copy to the host (make one, or pass 'auto' or 'cuda')");
  if (!cuda_available()) throw Error(ErrorKind::Device, "a CUDA array was given but " + cuda_unavailable_reason());
  PS_CUDA(cudaSetDevice(volume.device), "selecting the CUDA device");
  const ArrayView3 v = volume.stepped(o.step);
  const std::int64_t n = v.shape[0] * v.shape[1] * v.shape[2];
  std::array<double, 3> cell;
  for (int a = 0; a < 3; ++a) cell[a] = o.spacing[a] * double(o.step);

  // Samples the engine can read: the array itself when C-ordered, else packed on the device.
  core::DeviceBuffer packed, work, temp;
  const void* samples = v.data;
  if (!v.c_contiguous()) {
    packed.ensure(std::size_t(n) * voxel_bytes(v.type), "allocating the packed samples");
    cells::Grid g{static_cast<const char*>(v.data), {v.strides[0], v.strides[1], v.strides[2]}, {v.shape[0], v.shape[1], v.shape[2]}, {1, 1, 1}};
    core::visit_voxel_type(v.type, [&](auto tag) {
      using T = decltype(tag);
      gather_kernel<T><<<blocks(n), kThreads>>>(g.data, g, packed.as<T>(), n);
    });
    PS_CUDA_LAUNCH("packing the samples");
    samples = packed.ptr;
  }
  auto range = [&] {
    const unsigned nb = std::min<unsigned>(blocks(n), 4096);
    work.ensure(std::size_t(nb) * 16, "allocating the range pass");
    core::visit_voxel_type(v.type, [&](auto tag) {
      using T = decltype(tag);
      range_kernel<T><<<nb, kThreads>>>(static_cast<const T*>(samples), n, work.as<double>());
    });
    PS_CUDA_LAUNCH("finding the data range");
    std::vector<double> lh(2 * std::size_t(nb));
    PS_CUDA(cudaMemcpy(lh.data(), work.ptr, lh.size() * 8, cudaMemcpyDeviceToHost), "reading the data range");
    double lo = INFINITY, hi = -INFINITY;
    for (unsigned b = 0; b < nb; ++b) lo = std::min(lo, lh[2 * b]), hi = std::max(hi, lh[2 * b + 1]);
    return std::pair{lo, hi};
  };
  double level = o.level;
  if (std::isnan(level)) {
    const auto [lo, hi] = range();
    if (!(lo <= hi)) throw Error(ErrorKind::InvalidArgument, "array: no finite samples");
    level = 0.5 * (lo + hi);
  }

  const IsosurfaceOptions io = array_order_options(o);
  const VolumeGeometry geometry = array_order_geometry(v, cell);
  SlabTask task = make_task(geometry, v.type, io, -1);
  task.data = samples;
  task.device_samples = true;
  task.data_z0 = 0;
  task.data_z1 = task.z1 = geometry.dims[2];
  task.z0 = 0;
  const EngineLevel classified = engine_level(level, v.type, io.ties_outside, io.keep_degenerate);
  task.level = classified.level;
  task.ties = classified.ties;
  task.vertex_level = level;
  // The engine writes the values with the vertices; where a mask drops triangles, the values of the vertices next
  // to them come from the triangles kept (below).
  task.ranges = o.values;
  task.range_level = float(level);

  // Result arrays with room for the last mesh of this shape (an eighth to spare) that the engine may fill directly.
  const LastMeshes::Key key{volume.device, v.type, v.shape[0], v.shape[1], v.shape[2]};
  SlabCounts room;
  if (direct_meshes.load(std::memory_order_relaxed)) {
    const std::lock_guard<std::mutex> lock(last_meshes().mutex);
    if (const auto it = last_meshes().sizes.find(key); it != last_meshes().sizes.end()) room = it->second;
  }
  Buffer verts, normals, faces, values;
  if (room.triangles > 0) {
    room.vertices += room.vertices / 8 + 64;
    room.triangles += room.triangles / 8 + 64;
    verts = Buffer::cuda(volume.device, std::size_t(room.vertices) * 12);
    normals = Buffer::cuda(volume.device, std::size_t(room.vertices) * 12);
    faces = Buffer::cuda(volume.device, std::size_t(room.triangles) * 12);
    if (task.ranges) values = Buffer::cuda(volume.device, std::size_t(room.vertices) * 4);
    task.direct = {static_cast<float*>(verts.data), static_cast<float*>(normals.data),
                   task.ranges ? static_cast<float*>(values.data) : nullptr, static_cast<std::uint32_t*>(faces.data),
                   room.vertices, room.triangles};
  }

  const EngineLease lease(volume.device);
  SlabEngine& engine = *lease.engine;
  engine.time_stages(false);
  const SlabCounts counts = engine.count(task);
  {
    const std::lock_guard<std::mutex> lock(last_meshes().mutex);
    auto& sizes = last_meshes().sizes;
    if (sizes.size() >= 256 && !sizes.count(key)) sizes.clear();  // a loop over many shapes: kept bounded
    sizes[key] = counts;
  }
  ArrayMesh out;
  out.device = engine.name();
  if (counts.triangles == 0) {
    const auto [lo, hi] = range();
    if (!(level >= lo && level <= hi)) throw level_outside_range("array", level, lo, hi);
    return out;
  }
  if (counts.vertices >= (std::uint64_t(1) << 31))
    throw Error(ErrorKind::LimitReached, "the mesh has " + std::to_string(counts.vertices) +
                                             " vertices: int32 face indices hold fewer than 2^31");
  const std::int64_t nv = std::int64_t(counts.vertices), nf = std::int64_t(counts.triangles);
  if (engine.wrote_direct()) {
    verts.bytes = normals.bytes = std::size_t(nv) * 12;
    faces.bytes = std::size_t(nf) * 12;
    if (task.ranges) values.bytes = std::size_t(nv) * 4;
  } else {
    verts = Buffer::cuda(volume.device, std::size_t(nv) * 12);
    normals = Buffer::cuda(volume.device, std::size_t(nv) * 12);
    faces = Buffer::cuda(volume.device, std::size_t(nf) * 12);
    if (task.ranges) values = Buffer::cuda(volume.device, std::size_t(nv) * 4);
  }
  MeshTail tail;
  tail.values = task.ranges ? static_cast<float*>(values.data) : nullptr;
  tail.positions = static_cast<float*>(verts.data);
  tail.normals = static_cast<float*>(normals.data);
  tail.triangles = static_cast<std::uint32_t*>(faces.data);
  std::vector<std::uint64_t> ties;
  engine.generate(task, tail, ties);
  if (ties.size() >= 2 || (engine.point_vertices() && !o.allow_degenerate)) return through_host(v, o, samples);
  // Whether a vertex lies on a sample, read after the next wait (the mask's, or the call's last).
  volatile std::uint32_t* on_sample = nullptr;
  if (!o.allow_degenerate) {
    std::uint32_t* flag = host_flag();
    *flag = 0;
    std::uint32_t* seen = nullptr;
    PS_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&seen), flag, 0), "mapping a flag");
    on_sample_kernel<<<blocks(nv), kThreads>>>(static_cast<const float*>(verts.data), nv, cell[0], cell[1], cell[2], seen);
    PS_CUDA_LAUNCH("looking for vertices on samples");
    on_sample = flag;
  }

  cells::Grid g{static_cast<const char*>(samples), {}, {}, {}};
  const auto c = ArrayView3::c_strides(v.shape, v.type);
  for (int a = 0; a < 3; ++a) g.stride[a] = c[a], g.shape[a] = v.shape[a], cells::set_cell_size(g, a, cell[a]);
  if (o.mask) {
    if (on_sample) {
      PS_CUDA(cudaDeviceSynchronize(), "looking for vertices on samples");
      if (*on_sample) return through_host(v, o, samples);
      on_sample = nullptr;
    }
    const ArrayView3 m = o.mask->stepped(o.step);
    cells::Grid mg{static_cast<const char*>(m.data), {m.strides[0], m.strides[1], m.strides[2]}, {}, {}};
    core::DeviceBuffer flags, at, border;
    flags.ensure(std::size_t(nf + 2 * nv) * 4, "allocating the mask's flags");
    at.ensure(std::size_t(nf + nv) * 4, "allocating the mask's flags");
    std::uint32_t *keep = flags.as<std::uint32_t>(), *used = keep + nf, *touched = used + nv,
                  *face_at = at.as<std::uint32_t>(), *vertex_at = face_at + nf;
    PS_CUDA(cudaMemset(used, 0, std::size_t(2 * nv) * 4), "clearing the mask's flags");
    mask_kernel<<<blocks(nf), kThreads>>>(g, static_cast<const char*>(m.data), mg, static_cast<const float*>(verts.data),
                                          static_cast<const std::uint32_t*>(faces.data), nf, keep, used, touched);
    PS_CUDA_LAUNCH("masking the triangles");
    const std::int64_t kf = std::int64_t(exclusive_sum(keep, face_at, nf, temp));
    const std::int64_t kv = std::int64_t(exclusive_sum(used, vertex_at, nv, temp));
    if (kf == 0) return out;
    Buffer v2 = Buffer::cuda(volume.device, std::size_t(kv) * 12), n2 = Buffer::cuda(volume.device, std::size_t(kv) * 12),
           f2 = Buffer::cuda(volume.device, std::size_t(kf) * 12);
    compact_vertices_kernel<<<blocks(nv), kThreads>>>(used, vertex_at, nv, static_cast<const float*>(verts.data),
                                                      static_cast<const float*>(normals.data), static_cast<float*>(v2.data),
                                                      static_cast<float*>(n2.data));
    compact_faces_kernel<<<blocks(nf), kThreads>>>(keep, face_at, vertex_at, nf, static_cast<const std::uint32_t*>(faces.data),
                                                   static_cast<std::uint32_t*>(f2.data));
    PS_CUDA_LAUNCH("compacting the masked mesh");
    if (o.values) {
      Buffer values2 = Buffer::cuda(volume.device, std::size_t(kv) * 4);
      border.ensure(std::size_t(kv) * 4, "allocating the mask's border flags");
      compact_values_kernel<<<blocks(nv), kThreads>>>(used, touched, vertex_at, nv, static_cast<const float*>(values.data),
                                                      static_cast<float*>(values2.data), border.as<std::uint32_t>());
      PS_CUDA_LAUNCH("compacting the vertex values");
      core::visit_voxel_type(v.type, [&](auto tag) {
        using T = decltype(tag);
        values_kernel<T><<<blocks(kf), kThreads>>>(g, float(level), static_cast<const float*>(v2.data),
                                                   static_cast<const std::uint32_t*>(f2.data), kf,
                                                   border.as<std::uint32_t>(), static_cast<unsigned*>(values2.data));
      });
      PS_CUDA_LAUNCH("the values next to the mask's border");
      values = std::move(values2);
    }
    verts = std::move(v2), normals = std::move(n2), faces = std::move(f2);
    out.vertices = kv;
    out.triangles = kf;
  } else {
    out.vertices = nv;
    out.triangles = nf;
  }
  PS_CUDA(cudaDeviceSynchronize(), "finishing the mesh");
  if (on_sample && *on_sample) return through_host(v, o, samples);
  if (o.progress) o.progress(1.0);
  out.verts = std::move(verts);
  out.normals = std::move(normals);
  out.faces = std::move(faces);
  out.values = std::move(values);
  return out;
}

}  // namespace iso

}  // namespace parasurf
