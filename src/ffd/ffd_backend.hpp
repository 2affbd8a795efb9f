// The per-edit work of one FFD session, in the arithmetic T, with the same entry points on every backend.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "ffd/ffd_kernels.hpp"
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
  std::vector<SurfaceRecord<T>> surfaces;       // accurate
  std::vector<VertexRecord<T>> records;
  std::vector<std::int64_t> record_offsets;
  std::vector<T> inverse_table;
  std::int64_t sample_count = 0;                // points per update in the sample and control buffers
  std::int64_t vertex_count = 0;
  int threads = 1;                              // CPU threads (resolved, >= 1)
};

// CPU: deforms into positions/normals (V x 3 each); samples and controls are scratch of sample_count x 3.
template <class T>
void update_cpu(const SessionData<T>& data, const T* control_points, std::vector<T>& samples, std::vector<T>& controls,
                std::vector<T>& positions, std::vector<T>& normals);

// CUDA: the session's data lives on one device; update() leaves the results there until download().
template <class T>
class CudaSession {
 public:
  virtual ~CudaSession() = default;
  virtual void update(const T* control_points) = 0;
  virtual void download(T* positions, T* normals) const = 0;
};
template <class T>
std::unique_ptr<CudaSession<T>> make_cuda_session(const SessionData<T>& data);

}  // namespace parasurf::ffd
