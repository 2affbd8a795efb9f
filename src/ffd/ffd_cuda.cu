// CUDA backend of the per-edit FFD work. Accurate FFD follows Cui & Feng 2013 section 3.4's task layout: one
// thread per Chebyshev sample, one per Bézier control point (a lookup table maps threads to surfaces), then one
// thread per output vertex whatever its surface.
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "core/device_buffer.hpp"
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

template <class T>
__global__ void sample_kernel(LatticeView<T> L, const SurfaceRecord<T>* __restrict__ surfaces,
                              const std::int32_t* __restrict__ sample_surface, std::int64_t n, T* __restrict__ samples) {
  const std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= n) return;
  const SurfaceRecord<T> rec = surfaces[sample_surface[g]];
  const int local = int(g - rec.control_offset);
  surface_sample(L, rec, local / (rec.degree_t + 1), local % (rec.degree_t + 1), samples + 3 * g);
}

template <class T>
__global__ void control_kernel(const T* __restrict__ inverse_table, const SurfaceRecord<T>* __restrict__ surfaces,
                               const std::int32_t* __restrict__ sample_surface, std::int64_t n, const T* __restrict__ samples,
                               T* __restrict__ controls) {
  const std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= n) return;
  const SurfaceRecord<T> rec = surfaces[sample_surface[g]];
  const int local = int(g - rec.control_offset);
  surface_control_point(inverse_table, rec, samples, local / (rec.degree_t + 1), local % (rec.degree_t + 1), controls + 3 * g);
}

template <class T>
__global__ void vertex_kernel(const SurfaceRecord<T>* __restrict__ surfaces, const T* __restrict__ controls,
                              const VertexRecord<T>* __restrict__ records, const std::int64_t* __restrict__ offsets,
                              std::int64_t n, T* __restrict__ out, T* __restrict__ out_normals) {
  const std::int64_t v = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= n) return;
  T p[3], q[3];
  accurate_vertex(surfaces, controls, records, offsets, v, p, q);
  for (int d = 0; d < 3; ++d) out[3 * v + d] = p[d], out_normals[3 * v + d] = q[d];
}

unsigned blocks_for(std::int64_t n) { return unsigned((n + kBlock - 1) / kBlock); }

template <class V>
void upload(DeviceBuffer& buf, const std::vector<V>& v, const char* what) {
  buf.ensure(std::max<std::size_t>(1, v.size() * sizeof(V)), what);
  if (!v.empty()) PS_CUDA(cudaMemcpy(buf.ptr, v.data(), v.size() * sizeof(V), cudaMemcpyHostToDevice), what);
}

template <class T>
class CudaSessionImpl final : public CudaSession<T> {
 public:
  explicit CudaSessionImpl(const SessionData<T>& d) : method_(d.method), lattice_(d.lattice) {
    PS_CUDA(cudaGetDevice(&device_), "finding the current device for FFD");
    PS_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating the FFD stream");
    n_vertices_ = d.vertex_count;
    n_controls_ = d.control_point_count;
    upload(knots_, d.knots, "uploading the lattice knots");
    control_points_.ensure(std::size_t(3 * n_controls_) * sizeof(T), "allocating the lattice control points");
    out_.ensure(std::max<std::size_t>(1, std::size_t(3 * n_vertices_) * sizeof(T)), "allocating the FFD positions");
    out_normals_.ensure(std::max<std::size_t>(1, std::size_t(3 * n_vertices_) * sizeof(T)), "allocating the FFD normals");
    if (method_ != FfdMethod::Accurate) {
      upload(rest_, d.rest_positions, "uploading the rest positions");
      upload(rest_normals_, d.rest_normals, "uploading the rest normals");
    } else {
      n_samples_ = d.sample_count;
      std::vector<std::int32_t> owner(static_cast<std::size_t>(n_samples_));
      std::int32_t* slot = owner.data();
      const SurfaceRecord<T>* recs = d.surfaces.data();
      for (std::int64_t s = 0; s < std::int64_t(d.surfaces.size()); ++s) {
        const std::int64_t first = recs[s].control_offset;
        const std::int64_t count = std::int64_t(recs[s].degree_s + 1) * (recs[s].degree_t + 1);
        for (std::int64_t k = 0; k < count; ++k) slot[first + k] = static_cast<std::int32_t>(s);
      }
      upload(sample_surface_, owner, "uploading the sample table");
      upload(surfaces_, d.surfaces, "uploading the Bezier surfaces");
      upload(records_, d.records, "uploading the vertex records");
      upload(offsets_, d.record_offsets, "uploading the vertex record offsets");
      upload(inverse_, d.inverse_table, "uploading the reconstruction matrices");
      samples_.ensure(std::max<std::size_t>(1, std::size_t(3 * n_samples_) * sizeof(T)), "allocating the FFD samples");
      controls_.ensure(std::max<std::size_t>(1, std::size_t(3 * n_samples_) * sizeof(T)), "allocating the FFD control points");
    }
    lattice_.knots = knots_.as<T>();
    lattice_.control_points = control_points_.as<T>();
  }
  ~CudaSessionImpl() override { cudaStreamDestroy(stream_); }

  void update(const T* control_points) override {
    PS_CUDA(cudaSetDevice(device_), "selecting the FFD device");
    PS_CUDA(cudaMemcpyAsync(control_points_.ptr, control_points, std::size_t(3 * n_controls_) * sizeof(T),
                            cudaMemcpyHostToDevice, stream_),
            "uploading the control points");
    if (method_ != FfdMethod::Accurate) {
      if (n_vertices_ > 0)
        point_kernel<T><<<blocks_for(n_vertices_), kBlock, 0, stream_>>>(lattice_, rest_.as<T>(), rest_normals_.as<T>(), n_vertices_,
                                                                         out_.as<T>(), out_normals_.as<T>());
      PS_CUDA_LAUNCH("launching point FFD");
    } else {
      if (n_samples_ > 0) {
        sample_kernel<T><<<blocks_for(n_samples_), kBlock, 0, stream_>>>(lattice_, surfaces_.as<SurfaceRecord<T>>(),
                                                                          sample_surface_.as<std::int32_t>(), n_samples_, samples_.as<T>());
        PS_CUDA_LAUNCH("launching the FFD sampling");
        control_kernel<T><<<blocks_for(n_samples_), kBlock, 0, stream_>>>(inverse_.as<T>(), surfaces_.as<SurfaceRecord<T>>(),
                                                                           sample_surface_.as<std::int32_t>(), n_samples_,
                                                                           samples_.as<T>(), controls_.as<T>());
        PS_CUDA_LAUNCH("launching the Bezier reconstruction");
      }
      if (n_vertices_ > 0)
        vertex_kernel<T><<<blocks_for(n_vertices_), kBlock, 0, stream_>>>(surfaces_.as<SurfaceRecord<T>>(), controls_.as<T>(),
                                                                           records_.as<VertexRecord<T>>(), offsets_.as<std::int64_t>(),
                                                                           n_vertices_, out_.as<T>(), out_normals_.as<T>());
      PS_CUDA_LAUNCH("launching the FFD tessellation");
    }
    PS_CUDA(cudaStreamSynchronize(stream_), "running the FFD update");
  }

  void download(T* positions, T* normals) const override {
    PS_CUDA(cudaSetDevice(device_), "selecting the FFD device");
    const std::size_t bytes = std::size_t(3 * n_vertices_) * sizeof(T);
    PS_CUDA(cudaMemcpy(positions, out_.ptr, bytes, cudaMemcpyDeviceToHost), "downloading the FFD positions");
    PS_CUDA(cudaMemcpy(normals, out_normals_.ptr, bytes, cudaMemcpyDeviceToHost), "downloading the FFD normals");
  }

 private:
  FfdMethod method_;
  LatticeView<T> lattice_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::int64_t n_vertices_ = 0, n_controls_ = 0, n_samples_ = 0;
  DeviceBuffer knots_, control_points_, out_, out_normals_, rest_, rest_normals_;
  DeviceBuffer sample_surface_, surfaces_, records_, offsets_, inverse_, samples_, controls_;
};

}  // namespace

template <class T>
std::unique_ptr<CudaSession<T>> make_cuda_session(const SessionData<T>& data) {
  return std::make_unique<CudaSessionImpl<T>>(data);
}
template std::unique_ptr<CudaSession<float>> make_cuda_session(const SessionData<float>&);
template std::unique_ptr<CudaSession<double>> make_cuda_session(const SessionData<double>&);

}  // namespace parasurf::ffd
