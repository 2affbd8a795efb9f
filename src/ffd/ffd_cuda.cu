// CUDA backend of the per-edit FFD work. Accurate FFD after Cui & Feng 2013 section 3.4: the samples and control
// points of each Bézier surface computed together (here one warp per surface, in shared memory), then one thread
// per (vertex, surface) record whatever its surface, then one per vertex to average crease normals.
#include <cuda_runtime.h>

#include <type_traits>

#include "core/cuda_check.hpp"
#include "core/device_buffer.hpp"
#include "core/staging.hpp"
#include "parasurf/device.hpp"
#include "ffd/ffd_backend.hpp"

namespace parasurf::ffd {

namespace {

using core::DeviceBuffer;
constexpr int kBlock = 256;

template <class T>
__global__ void point_kernel(LatticeView<T> L, const T* __restrict__ rest, const T* __restrict__ rest_normals,
                             std::int64_t n, T* __restrict__ out, T* __restrict__ out_normals) {
  const std::int64_t v = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= n) return;
  const T x[3] = {rest[3 * v], rest[3 * v + 1], rest[3 * v + 2]};
  const T nn[3] = {rest_normals[3 * v], rest_normals[3 * v + 1], rest_normals[3 * v + 2]};
  T p[3], q[3];
  deform_point_with_normal(L, x, nn, p, q);
  for (int d = 0; d < 3; ++d) out[3 * v + d] = p[d], out_normals[3 * v + d] = q[d];
}

// One warp per Bezier surface: its lanes sample the volume at the Chebyshev points into shared memory, then apply
// the two small inverse matrices there (separably), so samples never travel through global memory.
constexpr int kSurfaceWarps = 4;
constexpr int kMaxControls = (kMaxPieceDegree + 1) * (kMaxPieceDegree + 1);

template <class T>
__global__ void __launch_bounds__(32 * kSurfaceWarps) surface_kernel(LatticeView<double> L, const SurfaceRecord<double>* __restrict__ surfaces,
                                                                     std::int64_t n, const double* __restrict__ inverse_table,
                                                                     T* __restrict__ controls) {
  // In double whatever T: the control points are then stored relative to the first (see encode_relative).
  __shared__ double f[kSurfaceWarps][3 * kMaxControls];
  __shared__ double tmp[kSurfaceWarps][3 * kMaxControls];
  const int w = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const std::int64_t s = std::int64_t(blockIdx.x) * kSurfaceWarps + w;
  if (s >= n) return;  // whole warps leave together
  const SurfaceRecord<double> rec = surfaces[s];
  const int ns = rec.degree_s, nt = rec.degree_t, count = (ns + 1) * (nt + 1);
  for (int k = lane; k < count; k += 32) surface_sample(L, rec, k / (nt + 1), k % (nt + 1), &f[w][3 * k]);
  __syncwarp();
  const double* si = inverse_table + inverse_matrix_offset(ns);
  const double* ti = inverse_table + inverse_matrix_offset(nt);
  for (int k = lane; k < count; k += 32) {
    const int i = k / (nt + 1), b = k % (nt + 1);
    double acc[3] = {0, 0, 0};
    for (int j = 0; j <= nt; ++j)
      for (int d = 0; d < 3; ++d) acc[d] += ti[b * (nt + 1) + j] * f[w][3 * (i * (nt + 1) + j) + d];
    for (int d = 0; d < 3; ++d) tmp[w][3 * k + d] = acc[d];
  }
  __syncwarp();
  for (int k = lane; k < count; k += 32) {
    const int a = k / (nt + 1), b = k % (nt + 1);
    double acc[3] = {0, 0, 0};
    for (int i = 0; i <= ns; ++i)
      for (int d = 0; d < 3; ++d) acc[d] += si[a * (ns + 1) + i] * tmp[w][3 * (i * (nt + 1) + b) + d];
    for (int d = 0; d < 3; ++d) f[w][3 * k + d] = acc[d];  // the samples are no longer needed
  }
  __syncwarp();
  T* out = controls + 3 * rec.control_offset;
  for (int k = lane; k < count; k += 32)
    for (int d = 0; d < 3; ++d) out[3 * k + d] = k == 0 ? T(f[w][d]) : T(f[w][3 * k + d] - f[w][d]);
}

template <class T>
__global__ void record_kernel(const SurfaceRecord<double>* __restrict__ surfaces, const T* __restrict__ controls,
                              const VertexRecord<T>* __restrict__ records, std::int64_t n, T* __restrict__ record_points) {
  const std::int64_t r = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= n) return;
  T p[3], q[3];
  record_point(surfaces, controls, records[r], p, q);
  for (int d = 0; d < 3; ++d) record_points[6 * r + d] = p[d], record_points[6 * r + 3 + d] = q[d];
}

// Position from the vertex's first record, normal the mean of its records' unit normals.
template <class T>
__global__ void gather_kernel(const T* __restrict__ record_points, const std::int64_t* __restrict__ offsets, std::int64_t n,
                              T* __restrict__ out, T* __restrict__ out_normals) {
  const std::int64_t v = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= n) return;
  const std::int64_t first = offsets[v], last = offsets[v + 1];
  T nsum[3] = {0, 0, 0};
  for (std::int64_t r = first; r < last; ++r)
    for (int d = 0; d < 3; ++d) nsum[d] += record_points[6 * r + 3 + d];
  normalize3(nsum);
  for (int d = 0; d < 3; ++d) out[3 * v + d] = record_points[6 * first + d], out_normals[3 * v + d] = nsum[d];
}

// Positions and normals (n numbers each) rounded to float, as the host's mesh() rounds them.
template <class T>
__global__ void to_float_kernel(const T* __restrict__ p, const T* __restrict__ q, std::int64_t n, float* __restrict__ out_p,
                                float* __restrict__ out_q) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out_p[i] = float(p[i]), out_q[i] = float(q[i]);
}

unsigned blocks_for(std::int64_t n) { return unsigned((n + kBlock - 1) / kBlock); }

// On the session's stream, so that its kernels run after the data has landed: a cudaMemcpy from pageable memory
// may return before its DMA completes, and the legacy stream does not order a non-blocking stream's work (on a
// busy GPU the last vertices' rest normals were read before they arrived, and came out zero).
template <class V>
void upload(DeviceBuffer& buf, const std::vector<V>& v, const char* what, cudaStream_t stream) {
  buf.ensure(std::max<std::size_t>(1, v.size() * sizeof(V)), what);
  if (!v.empty()) PS_CUDA(cudaMemcpyAsync(buf.ptr, v.data(), v.size() * sizeof(V), cudaMemcpyHostToDevice, stream), what);
}

template <class T>
class CudaBackend final : public Backend<T> {
 public:
  explicit CudaBackend(const SessionData<T>& d)
      : method_(d.method), lattice_(d.lattice), exact_(make_exact_view(d.lattice, d.to_param_exact, d.to_world_exact)) {
    PS_CUDA(cudaGetDevice(&device_), "finding the current device for FFD");
    PS_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating the FFD stream");
    n_vertices_ = d.vertex_count;
    n_controls_ = d.control_point_count;
    upload(knots_, d.knots, "uploading the lattice knots", stream_);
    control_points_.ensure(std::size_t(3 * n_controls_) * sizeof(T), "allocating the lattice control points");
    out_.ensure(std::max<std::size_t>(1, std::size_t(3 * n_vertices_) * sizeof(T)), "allocating the FFD positions");
    out_normals_.ensure(std::max<std::size_t>(1, std::size_t(3 * n_vertices_) * sizeof(T)), "allocating the FFD normals");
    if (method_ != FfdMethod::Accurate) {
      upload(rest_, d.rest_positions, "uploading the rest positions", stream_);
      upload(rest_normals_, d.rest_normals, "uploading the rest normals", stream_);
    } else {
      n_samples_ = d.sample_count;
      n_surfaces_ = std::int64_t(d.surfaces.size());
      n_records_ = std::int64_t(d.records.size());
      record_points_.ensure(std::max<std::size_t>(1, std::size_t(6 * n_records_) * sizeof(T)), "allocating the FFD record points");
      upload(surfaces_, d.surfaces, "uploading the Bezier surfaces", stream_);
      upload(knots_exact_, d.knots_exact, "uploading the lattice knots (double)", stream_);
      control_points_exact_.ensure(std::size_t(3 * n_controls_) * sizeof(double), "allocating the lattice control points (double)");
      upload(records_, d.records, "uploading the vertex records", stream_);
      upload(offsets_, d.record_offsets, "uploading the vertex record offsets", stream_);
      upload(inverse_, d.inverse_table, "uploading the reconstruction matrices", stream_);
      controls_.ensure(std::max<std::size_t>(1, std::size_t(3 * n_samples_) * sizeof(T)), "allocating the FFD control points");
    }
    PS_CUDA(cudaStreamSynchronize(stream_), "uploading the FFD session");  // (the host's vectors may go after this)
    lattice_.knots = knots_.as<T>();
    lattice_.control_points = control_points_.as<T>();
    exact_.knots = knots_exact_.as<double>();
    exact_.control_points = control_points_exact_.as<double>();
  }
  ~CudaBackend() override { cudaStreamDestroy(stream_); }

  void update(const T* control_points, const double* control_points_exact) override {
    PS_CUDA(cudaSetDevice(device_), "selecting the FFD device");
    if (method_ != FfdMethod::Accurate)
      PS_CUDA(cudaMemcpyAsync(control_points_.ptr, control_points, std::size_t(3 * n_controls_) * sizeof(T),
                              cudaMemcpyHostToDevice, stream_),
              "uploading the control points");
    else
      PS_CUDA(cudaMemcpyAsync(control_points_exact_.ptr, control_points_exact, std::size_t(3 * n_controls_) * sizeof(double),
                              cudaMemcpyHostToDevice, stream_),
              "uploading the control points");
    if (method_ != FfdMethod::Accurate) {
      if (n_vertices_ > 0)
        point_kernel<T><<<blocks_for(n_vertices_), kBlock, 0, stream_>>>(lattice_, rest_.as<T>(), rest_normals_.as<T>(), n_vertices_,
                                                                         out_.as<T>(), out_normals_.as<T>());
      PS_CUDA_LAUNCH("launching point FFD");
    } else {
      if (n_surfaces_ > 0) {
        surface_kernel<T><<<unsigned((n_surfaces_ + kSurfaceWarps - 1) / kSurfaceWarps), 32 * kSurfaceWarps, 0, stream_>>>(
            exact_, surfaces_.as<SurfaceRecord<double>>(), n_surfaces_, inverse_.as<double>(), controls_.as<T>());
        PS_CUDA_LAUNCH("launching the FFD sampling and Bezier reconstruction");
      }
      if (n_records_ > 0) {
        record_kernel<T><<<blocks_for(n_records_), kBlock, 0, stream_>>>(surfaces_.as<SurfaceRecord<double>>(), controls_.as<T>(),
                                                                          records_.as<VertexRecord<T>>(), n_records_, record_points_.as<T>());
        PS_CUDA_LAUNCH("launching the FFD tessellation");
        gather_kernel<T><<<blocks_for(n_vertices_), kBlock, 0, stream_>>>(record_points_.as<T>(), offsets_.as<std::int64_t>(),
                                                                          n_vertices_, out_.as<T>(), out_normals_.as<T>());
        PS_CUDA_LAUNCH("launching the FFD normal gather");
      }
    }
    PS_CUDA(cudaStreamSynchronize(stream_), "running the FFD update");
  }

  void write_device(float* positions, float* normals, std::uint32_t* triangles, const std::uint32_t* host_triangles,
                    std::size_t words) const override {
    PS_CUDA(cudaSetDevice(device_), "selecting the FFD device");
    // On the legacy stream, in whose order the caller's result arrays were allocated (Buffer::cuda, stream-ordered);
    // update() has finished the session's own stream.
    const cudaStream_t legacy = cudaStreamLegacy;
    const std::size_t count = std::size_t(3 * n_vertices_);
    if constexpr (std::is_same_v<T, float>) {
      PS_CUDA(cudaMemcpyAsync(positions, out_.ptr, count * sizeof(float), cudaMemcpyDeviceToDevice, legacy), "copying the FFD positions");
      PS_CUDA(cudaMemcpyAsync(normals, out_normals_.ptr, count * sizeof(float), cudaMemcpyDeviceToDevice, legacy), "copying the FFD normals");
    } else if (count > 0) {
      to_float_kernel<T><<<blocks_for(std::int64_t(count)), kBlock, 0, legacy>>>(out_.as<T>(), out_normals_.as<T>(), std::int64_t(count),
                                                                                 positions, normals);
      PS_CUDA_LAUNCH("converting the FFD results to float");
    }
    if (words > 0)
      PS_CUDA(cudaMemcpyAsync(triangles, host_triangles, words * sizeof(std::uint32_t), cudaMemcpyHostToDevice, legacy),
              "uploading the FFD triangles");
    PS_CUDA(cudaStreamSynchronize(legacy), "writing the FFD mesh on the GPU");
  }
  int gpu() const override { return device_; }

  void download(T* positions, T* normals) const override {
    PS_CUDA(cudaSetDevice(device_), "selecting the FFD device");
    const std::size_t bytes = std::size_t(3 * n_vertices_) * sizeof(T);
    core::copy_home(device_, {{positions, out_.ptr, bytes}, {normals, out_normals_.ptr, bytes}}, stream_,
                    cpu_thread_count(0), "downloading the FFD positions and normals");
  }

 private:
  FfdMethod method_;
  LatticeView<T> lattice_;
  LatticeView<double> exact_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::int64_t n_vertices_ = 0, n_controls_ = 0, n_samples_ = 0, n_surfaces_ = 0, n_records_ = 0;
  DeviceBuffer knots_, control_points_, knots_exact_, control_points_exact_, out_, out_normals_, rest_, rest_normals_;
  DeviceBuffer surfaces_, records_, offsets_, inverse_, controls_, record_points_;
};

}  // namespace

template <class T>
std::unique_ptr<Backend<T>> make_cuda_backend(const SessionData<T>& data) {
  return std::make_unique<CudaBackend<T>>(data);
}
template std::unique_ptr<Backend<float>> make_cuda_backend(const SessionData<float>&);
template std::unique_ptr<Backend<double>> make_cuda_backend(const SessionData<double>&);

}  // namespace parasurf::ffd
