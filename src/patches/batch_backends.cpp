// The patch-batch backends behind one interface (batch.hpp): the CPU's loop, the CUDA evaluation copied home, and
// the hybrid distributions (batch_hybrid.cpp); and the CUDA backend's own entries where this build has CUDA.
#include <chrono>
#include <string>

#include "core/backends.hpp"
#include "parasurf/device.hpp"
#include "patches/assemble.hpp"
#include "patches/batch.hpp"

namespace parasurf::patches {

namespace {

template <class T>
class CpuBackend final : public Backend<T> {
 public:
  explicit CpuBackend(int threads) : threads_(cpu_thread_count(threads)) {}
  BatchTiming evaluate(const HostBatch<T>& batch, const SampleViews<T>& out) override {
    const auto t0 = std::chrono::steady_clock::now();
    cpu::evaluate<T>(batch, out, threads_);
    BatchTiming t;
    t.kernel_seconds = t.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t.device = Device::Cpu;
    t.strategy = PatchStrategy::Tables;
    return t;
  }

 private:
  int threads_;
};

template <class T>
class CudaBackend final : public Backend<T> {
 public:
  explicit CudaBackend(PatchStrategy strategy) : strategy_(strategy) {}
  BatchTiming evaluate(const HostBatch<T>& batch, const SampleViews<T>& out) override {
    return gpu::evaluate<T>(batch, strategy_, out, true);
  }

 private:
  PatchStrategy strategy_;
};

template <class T>
class HybridBackend final : public Backend<T> {
 public:
  explicit HybridBackend(const BatchSettings& s) : s_(s) {}
  BatchTiming evaluate(const HostBatch<T>& batch, const SampleViews<T>& out) override {
    return hybrid::evaluate<T>(batch, s_.strategy, out, cpu_thread_count(s_.threads), s_.scheme, s_.cpu_share);
  }

 private:
  BatchSettings s_;
};

}  // namespace

template <class T>
std::unique_ptr<Backend<T>> make_backend(Device device, const BatchSettings& settings) {
  if (device == Device::Cpu) return std::make_unique<CpuBackend<T>>(settings.threads);
  if constexpr (core::kCudaBuilt) {
    if (device == Device::Hybrid) return std::make_unique<HybridBackend<T>>(settings);
    return std::make_unique<CudaBackend<T>>(settings.strategy);
  } else {
    core::no_cuda_backend(std::string("patches on ") + device_name(device));
  }
}

template std::unique_ptr<Backend<float>> make_backend<float>(Device, const BatchSettings&);
template std::unique_ptr<Backend<double>> make_backend<double>(Device, const BatchSettings&);

}  // namespace parasurf::patches

// The CUDA backend's own entries: samples left on the device, consumed there, or brought home later.
namespace parasurf::patches::gpu {

template <class T>
BatchTiming evaluate(const HostBatch<T>& batch, PatchStrategy strategy, const SampleViews<T>& host_out, bool copy_back,
                     const cuda::OnDevice<T>& on_device) {
  if constexpr (core::kCudaBuilt)
    return cuda::evaluate<T>(batch, strategy, host_out, copy_back, on_device);
  else
    core::no_cuda_backend("patches on cuda");
}

template <class T>
AssemblyOutcome assemble(const AssemblyPlan& plan, const SampleViews<T>& device_samples, PatchMesh& mesh) {
  if constexpr (core::kCudaBuilt)
    return cuda::assemble<T>(plan, device_samples, mesh);
  else
    core::no_cuda_backend("patch assembly on cuda");
}

template <class T>
void download(const SampleViews<T>& device_samples, const SampleViews<T>& host, std::int64_t n) {
  if constexpr (core::kCudaBuilt)
    cuda::download<T>(device_samples, host, n);
  else
    core::no_cuda_backend("patch samples on cuda");
}

#define PARASURF_INSTANTIATE(T)                                                                     \
  template BatchTiming evaluate<T>(const HostBatch<T>&, PatchStrategy, const SampleViews<T>&, bool, \
                                   const cuda::OnDevice<T>&);                                       \
  template AssemblyOutcome assemble<T>(const AssemblyPlan&, const SampleViews<T>&, PatchMesh&);     \
  template void download<T>(const SampleViews<T>&, const SampleViews<T>&, std::int64_t);
PARASURF_INSTANTIATE(float)
PARASURF_INSTANTIATE(double)
#undef PARASURF_INSTANTIATE

}  // namespace parasurf::patches::gpu
