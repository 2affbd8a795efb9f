// The per-edit work of one FFD session, in the arithmetic T, with the same entry points on every backend.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "ffd/ffd_kernels.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"

namespace parasurf::ffd {

// Everything the per-edit kernels read, converted to T (control points are passed per update).
template <class T>
struct SessionData {
  FfdMethod method = FfdMethod::Accurate;
  LatticeView<T> lattice;                 // knots and to_param/to_world; control_points set per update
  std::vector<T> knots;
  std::int64_t control_point_count = 0;
  std::vector<T> rest_positions, rest_normals;  // point and uus
  // Accurate: the surfaces are sampled and reconstructed in double whatever T (their control points are then
  // stored as T, relative to the first); the vertices are evaluated in T.
  std::vector<SurfaceRecord<double>> surfaces;
  std::vector<double> knots_exact;
  double to_param_exact[12] = {}, to_world_exact[12] = {};
  std::vector<VertexRecord<T>> records;
  std::vector<std::int64_t> record_offsets;
  std::vector<double> inverse_table;
  std::int64_t sample_count = 0;                // points per update in the sample and control buffers
  std::int64_t vertex_count = 0;
  int threads = 1;                              // CPU threads (resolved, >= 1)
};

// The lattice layout of a T view in double (knots and control points are set by the caller).
template <class T>
LatticeView<double> make_exact_view(const LatticeView<T>& v, const double* to_param, const double* to_world) {
  LatticeView<double> x;
  for (int a = 0; a < 3; ++a) {
    x.knot_offset[a] = v.knot_offset[a];
    x.degree[a] = v.degree[a];
    x.count[a] = v.count[a];
  }
  for (int i = 0; i < 12; ++i) x.to_param[i] = to_param[i], x.to_world[i] = to_world[i];
  return x;
}

// The per-edit work on one device: update() deforms with the given control points (in T and, for the exact
// surfaces, in double) and keeps the results; download() copies the last update's positions and normals (V x 3
// each) into host arrays. The CPU and CUDA backends have this one entry; make_backend chooses between them.
template <class T>
class Backend {
 public:
  virtual ~Backend() = default;
  virtual void update(const T* control_points, const double* control_points_exact) = 0;
  virtual void download(T* positions, T* normals) const = 0;
  // The last update's positions and normals as float32 into device memory of the backend's GPU, and the triangles
  // (host_triangles, `words` of them) beside them: what a caller whose arrays live on that GPU gets back without a
  // trip through the host. Only the CUDA backend has results there.
  virtual void write_device(float* positions, float* normals, std::uint32_t* triangles, const std::uint32_t* host_triangles,
                            std::size_t words) const {
    (void)positions, (void)normals, (void)triangles, (void)host_triangles, (void)words;
    throw Error(ErrorKind::InvalidArgument, "FFD: results in GPU memory need a session on the GPU");
  }
  virtual int gpu() const { return -1; }
};

// `device` resolved (cpu or cuda); the data must outlive the backend (the CPU backend reads it on every update).
template <class T>
std::unique_ptr<Backend<T>> make_backend(Device device, const SessionData<T>& data);

template <class T>
std::unique_ptr<Backend<T>> make_cpu_backend(const SessionData<T>& data);   // ffd_cpu.cpp
template <class T>
std::unique_ptr<Backend<T>> make_cuda_backend(const SessionData<T>& data);  // ffd_cuda.cu (CUDA builds)

}  // namespace parasurf::ffd
