// CPU-only build: the CUDA entry points exist and report that CUDA is not built in.
#include "bezier/cuda_backend.hpp"
#include "core/auto_choice.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

BuildFeatures build_features() {
  BuildFeatures f;
  f.cuda = false;
  f.openmp = true;
  f.compiler = __VERSION__;
  return f;
}
std::vector<CudaDeviceInfo> cuda_devices() { return {}; }
int cuda_device_count() { return 0; }
bool cuda_device_usable(int) { return false; }
std::string cuda_device_unusable_reason(int) { return cuda_unavailable_reason(); }
std::string cuda_fallback_warning() { return ""; }
void cuda_warm_up(int) noexcept {}
namespace core {
bool cuda_context_active(int) { return false; }
}  // namespace core
std::string cuda_unavailable_reason() { return "this build has no CUDA backend (PARASURF_ENABLE_CUDA=OFF)"; }
double measure_cuda_copy_bandwidth(int, std::uint64_t) {
  throw Error(ErrorKind::Device, "bandwidth measurement needs the CUDA backend");
}

namespace bezier::cuda {
[[noreturn]] static void no_cuda() { throw Error(ErrorKind::Device, cuda_unavailable_reason()); }
Context* create_context() { no_cuda(); }
void destroy_context(Context*) noexcept {}
template <class T>
bool launch_grid(Context*, const Inputs<T>&, std::int64_t, std::int64_t, const kern::OutView<T>&, bool,
                 std::int64_t) { no_cuda(); }
template <class T>
void finish_grid(Context*, std::int64_t, std::int64_t, const kern::OutView<T>&, EvalReport*) { no_cuda(); }
template <class T>
void evaluate_points(Context*, const Inputs<T>&, const kern::OutView<T>&, EvalReport*) { no_cuda(); }
std::uint64_t free_device_memory() { return 0; }
DynamicTiles dynamic_tiles(Context*, std::int64_t) { no_cuda(); }
#define PARASURF_INSTANTIATE(T)                                                                                     \
  template bool launch_grid<T>(Context*, const Inputs<T>&, std::int64_t, std::int64_t, const kern::OutView<T>&,    \
                               bool, std::int64_t);                                                                \
  template void finish_grid<T>(Context*, std::int64_t, std::int64_t, const kern::OutView<T>&, EvalReport*);        \
  template void evaluate_points<T>(Context*, const Inputs<T>&, const kern::OutView<T>&, EvalReport*);
PARASURF_INSTANTIATE(float)
PARASURF_INSTANTIATE(double)
}  // namespace bezier::cuda

}  // namespace parasurf
