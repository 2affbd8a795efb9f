// Internal entry points of the patch-batch backends: the same description for CPU and CUDA, and one Backend
// interface over the CPU, the GPU and both (make_backend chooses).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "parasurf/tessellate.hpp"
#include "patches/batch_kernels.hpp"

namespace parasurf::patches {

// A batch in host memory, converted to T: records, control points (4 per point), normal control points (3).
template <class T> struct HostBatch {
  std::vector<patchk::PatchRecord> records;
  std::vector<T> points;
  std::vector<T> normal_points;
  std::int64_t samples = 0;
  int max_degree = 1;
  // point list evaluated after the grids: (record index, u, v); outputs follow the grid samples
  std::vector<std::int64_t> point_patch;
  std::vector<double> point_uv;
  std::int64_t total() const { return samples + std::int64_t(point_patch.size()); }
};

// SoA output views (host or device pointers as the backend expects).
template <class T> struct SampleViews {
  T* pos[3] = {};
  T* nrm[3] = {};
};

// How a backend runs a batch: the GPU's strategy, the CPU's threads, the hybrid scheme and the CPU's share.
struct BatchSettings {
  PatchStrategy strategy = PatchStrategy::Auto;
  int threads = 0;  // 0: all
  HybridScheme scheme = HybridScheme::Dynamic;
  double cpu_share = -1;  // Static: < 0 profiles first
};

// One way of evaluating patch batches: the CPU, the GPU, or both on one batch.
template <class T> class Backend {
 public:
  virtual ~Backend() = default;
  // The batch's samples into host outputs (batch.total() each).
  virtual BatchTiming evaluate(const HostBatch<T>& batch, const SampleViews<T>& out) = 0;
};

// The backend of a resolved device (Cpu, Cuda or Hybrid); Error(Device) for Cuda or Hybrid in a build without CUDA.
// Samples that stay on the device (no host outputs, or consumed there by the assembly) are the CUDA backend's
// own entry, `gpu::evaluate` below.
template <class T> std::unique_ptr<Backend<T>> make_backend(Device device, const BatchSettings& settings);

namespace cpu {
template <class T> void evaluate(const HostBatch<T>& batch, const SampleViews<T>& out, int threads);
// Records [record_begin, record_end) and listed points [point_begin, point_end) only, into the whole batch's outputs.
template <class T>
void evaluate_range(const HostBatch<T>& batch, const SampleViews<T>& out, int threads, std::int64_t record_begin,
                    std::int64_t record_end, std::int64_t point_begin, std::int64_t point_end);
}

// The CUDA backend (batch_cuda.cu, assemble_cuda.cu): only in builds with CUDA. The rest of the capability calls it
// through `gpu` below.
namespace cuda {
// Called with the samples' device views after evaluation, while they live; true when it consumed them (no copy
// back), false to have them copied back as without it.
template <class T> using OnDevice = std::function<bool(const SampleViews<T>& device_samples)>;
// Uploads, evaluates and (copy_back) downloads; kernel time measured by events.
template <class T>
BatchTiming evaluate(const HostBatch<T>& batch, PatchStrategy strategy, const SampleViews<T>& host_out, bool copy_back,
                     const OnDevice<T>& on_device = {});
}

// The CUDA backend where this build has it (the device is chosen by resolve_device); without it these throw
// Error(Device).
namespace gpu {
template <class T>
BatchTiming evaluate(const HostBatch<T>& batch, PatchStrategy strategy, const SampleViews<T>& host_out, bool copy_back,
                     const cuda::OnDevice<T>& on_device = {});
}  // namespace gpu

namespace hybrid {
// CPU threads and the GPU on one batch, into host outputs (the schemes of the surface engine, Palomar et al.
// Sect. 5.2, over contiguous runs of patches): Static gives the CPU the last `cpu_share` of the samples (< 0: a
// profiling round first measures both sides on a chunk each); Dynamic cuts the batch into chunks that the GPU takes
// from the front, half of what is left each time, and the CPU's threads from the back, one at a time, until they
// meet. BatchTiming::cpu_share reports the CPU's share of the samples.
template <class T>
BatchTiming evaluate(const HostBatch<T>& batch, PatchStrategy strategy, const SampleViews<T>& out, int threads,
                     HybridScheme scheme, double cpu_share);
}  // namespace hybrid

}  // namespace parasurf::patches
