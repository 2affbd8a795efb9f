// Core's device runtime in a build without CUDA: no devices, and every CUDA entry point of the public API reports
// that this build has none. (Capabilities name their CUDA backends only where the build has them: core/backends.hpp.)
#include "core/auto_choice.hpp"
#include "parasurf/array.hpp"
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
LinkBandwidth measure_cuda_link_bandwidth(int, std::uint64_t) {
  throw Error(ErrorKind::Device, "bandwidth measurement needs the CUDA backend");
}
Buffer Buffer::cuda(int, std::size_t) {
  throw Error(ErrorKind::Device, "this build has no CUDA backend (configure with a CUDA toolkit)");
}
void cuda_wait_stream(int, std::uintptr_t) {}
int cuda_device_of(const void*) { return -1; }

}  // namespace parasurf
