// CUDA device enumeration, result buffers on a device, the producer streams of callers' arrays, and the
// copy-bandwidth probe used as the physical floor of the benchmarks.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/auto_choice.hpp"
#include "core/cuda_arch.hpp"
#include "core/cuda_check.hpp"
#include "parasurf/array.hpp"
#include "parasurf/device.hpp"

namespace parasurf {

namespace {

#ifdef PARASURF_CUDA_ARCHS
constexpr const char* kArchitectures = PARASURF_CUDA_ARCHS;
#else
constexpr const char* kArchitectures = "";
#endif

__global__ void image_probe_kernel() {}

struct Usability {
  bool known = false;
  bool usable = false;
  std::string reason;  // why not, when not
};

// Decided once per device: the capability against the build's list, and where the driver would have to compile
// PTX (or the list cannot be read), a trial of the image itself. Only that trial starts the device's context.
Usability decide_usability(int device) {
  Usability u;
  u.known = true;
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    u.reason = "CUDA device " + std::to_string(device) + " cannot be queried";
    return u;
  }
  char name[256] = {0};
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) == cudaSuccess) std::snprintf(name, sizeof name, "%s", p.name);
  cudaGetLastError();
  const std::string who = std::string(name[0] ? name : "CUDA device") + " (device " + std::to_string(device) +
                          ", compute capability " + std::to_string(major) + "." + std::to_string(minor) + ")";
  const std::string built = "this build has kernels for " + core::describe_cuda_architectures(kArchitectures);
  const core::ImageMatch match = core::match_cuda_image(kArchitectures, major, minor);
  if (match == core::ImageMatch::Binary) {
    u.usable = true;
    return u;
  }
  if (match == core::ImageMatch::None) {
    u.reason = who + " cannot run this build: " + built + "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=" +
               std::to_string(major) + std::to_string(minor) + " (or a list that includes it)";
    return u;
  }
  int current = 0;
  cudaGetDevice(&current);
  cudaFuncAttributes attributes{};
  cudaError_t err = cudaSetDevice(device);
  if (err == cudaSuccess) err = cudaFuncGetAttributes(&attributes, image_probe_kernel);
  cudaGetLastError();
  cudaSetDevice(current);
  if (err == cudaSuccess) {
    u.usable = true;
    return u;
  }
  u.reason = who + " cannot run this build's kernels (" + cudaGetErrorString(err) + "): " + built +
             "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(major) + std::to_string(minor);
  return u;
}

const Usability& usability(int device) {
  static std::mutex mutex;
  static std::vector<Usability> decided;
  std::lock_guard lock(mutex);
  if (device >= int(decided.size())) decided.resize(std::size_t(device) + 1);
  if (!decided[std::size_t(device)].known) decided[std::size_t(device)] = decide_usability(device);
  return decided[std::size_t(device)];
}

}  // namespace

bool cuda_device_usable(int device_index) {
  if (device_index < 0 || device_index >= cuda_device_count()) return false;
  return usability(device_index).usable;
}

std::string cuda_device_unusable_reason(int device_index) {
  if (device_index < 0 || device_index >= cuda_device_count())
    return "CUDA device " + std::to_string(device_index) + " does not exist (" + std::to_string(cuda_device_count()) +
           " visible)";
  return usability(device_index).reason;
}

std::string cuda_fallback_warning() {
  if (cuda_device_count() == 0 || cuda_device_usable(0)) return "";
  return cuda_device_unusable_reason(0) + "; running on the CPU";
}

BuildFeatures build_features() {
  BuildFeatures f;
  f.cuda = true;
  f.openmp = true;
#ifdef PARASURF_CUDA_ARCHS
  f.cuda_architectures = PARASURF_CUDA_ARCHS;
#endif
  f.compiler = __VERSION__;
  return f;
}

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA driver or device (") + cudaGetErrorString(err) + ")";
  }
  if (count == 0) return "no CUDA device found";
  if (!cuda_device_usable(0)) return cuda_device_unusable_reason(0);
  return "";
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" status
    return 0;
  }
  return count;
}

namespace core {
// Through the driver's entry point (the runtime has no query that leaves an inactive context alone); false where the
// driver cannot say.
bool cuda_context_active(int device_index) {
  using GetState = int (*)(int, unsigned int*, int*);
  static GetState get_state = [] {
    void* fn = nullptr;
    const char* name = "cuDevicePrimaryCtxGetState";
#if CUDART_VERSION >= 12050
    cudaDriverEntryPointQueryResult found{};
    const bool ok = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) == cudaSuccess &&
                    found == cudaDriverEntryPointSuccess;
#elif CUDART_VERSION >= 12000
    cudaDriverEntryPointQueryResult found{};
    const bool ok = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &found) == cudaSuccess &&
                    found == cudaDriverEntryPointSuccess;
#else
    const bool ok = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault) == cudaSuccess;
#endif
    if (!ok) fn = nullptr;
    cudaGetLastError();
    return reinterpret_cast<GetState>(fn);
  }();
  unsigned int flags = 0;
  int active = 0;
  return get_state && get_state(device_index, &flags, &active) == 0 && active != 0;
}
}  // namespace core

void cuda_warm_up(int device_index) noexcept {
  if (device_index < 0 || device_index >= cuda_device_count()) return;
  if (cudaSetDevice(device_index) == cudaSuccess) cudaFree(nullptr);  // the first runtime call creates the context
  cudaGetLastError();
}

std::vector<CudaDeviceInfo> cuda_devices() {
  std::vector<CudaDeviceInfo> out;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" status
    return out;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    CudaDeviceInfo info;
    info.index = d;
    info.name = p.name;
    info.total_memory_bytes = p.totalGlobalMem;
    info.multiprocessors = p.multiProcessorCount;
    info.compute_major = p.major;
    info.compute_minor = p.minor;
    info.l2_cache_bytes = std::uint64_t(p.l2CacheSize);
    info.can_map_host_memory = p.canMapHostMemory != 0;
    int native = 0;
    cudaDeviceGetAttribute(&native, cudaDevAttrHostNativeAtomicSupported, d);
    info.host_native_atomics = native != 0;
    int current = 0;
    cudaGetDevice(&current);
    if (cudaSetDevice(d) == cudaSuccess) {
      size_t free_b = 0, total_b = 0;
      if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) info.free_memory_bytes = free_b;
      cudaSetDevice(current);
    }
    out.push_back(info);
  }
  return out;
}

double measure_cuda_copy_bandwidth(int device_index, std::uint64_t bytes) {
  PS_CUDA(cudaSetDevice(device_index), "selecting the device for the bandwidth probe");
  void *a = nullptr, *b = nullptr;
  PS_CUDA(cudaMalloc(&a, bytes), "allocating the bandwidth probe source");
  const cudaError_t e2 = cudaMalloc(&b, bytes);
  if (e2 != cudaSuccess) {
    cudaFree(a);
    core::throw_cuda(e2, "allocating the bandwidth probe destination", "cudaMalloc");
  }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  cudaError_t err = cudaMemset(a, 0x5a, bytes);
  for (int r = 0; r < 12 && err == cudaSuccess; ++r) {
    cudaEventRecord(start);
    err = cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (r >= 2) ms.push_back(t);  // first runs warm up
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  if (err != cudaSuccess) core::throw_cuda(err, "running the bandwidth probe", "cudaMemcpy");
  std::sort(ms.begin(), ms.end());
  const double median_s = ms[ms.size() / 2] * 1e-3;
  return 2.0 * double(bytes) / median_s;  // read + write
}

LinkBandwidth measure_cuda_link_bandwidth(int device_index, std::uint64_t bytes) {
  PS_CUDA(cudaSetDevice(device_index), "selecting the device for the link probe");
  void *host = nullptr, *dev = nullptr;
  PS_CUDA(cudaMallocHost(&host, bytes), "pinning the link probe's host buffer");
  cudaError_t err = cudaMalloc(&dev, bytes);
  if (err != cudaSuccess) {
    cudaFreeHost(host);
    core::throw_cuda(err, "allocating the link probe's device buffer", "cudaMalloc");
  }
  std::memset(host, 0x5a, bytes);  // pages faulted in before the first copy
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  // Best of several copies each way: the link's rate, not the noise of a host shared with other work.
  float best[2] = {1e30f, 1e30f};
  for (int r = 0; r < 8 && err == cudaSuccess; ++r)
    for (int way = 0; way < 2 && err == cudaSuccess; ++way) {
      cudaEventRecord(start);
      err = way == 0 ? cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice)
                     : cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
      cudaEventRecord(stop);
      cudaEventSynchronize(stop);
      float t = 0;
      cudaEventElapsedTime(&t, start, stop);
      if (r > 0) best[way] = std::min(best[way], t);  // the first copy each way warms up
    }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(dev);
  cudaFreeHost(host);
  if (err != cudaSuccess) core::throw_cuda(err, "running the link probe", "cudaMemcpy");
  return {double(bytes) / (best[0] * 1e-3), double(bytes) / (best[1] * 1e-3)};
}

// Results come from the device's stream-ordered pool, kept (not returned to the driver) between calls: a call's
// outputs then cost no cudaMalloc, and freeing them no device-wide synchronisation. Freed memory is reused in the
// order of the legacy default stream, so a consumer must be done with a result (on any stream) when it lets go.
Buffer Buffer::cuda(int device, std::size_t bytes) {
  PS_CUDA(cudaSetDevice(device), "selecting the CUDA device");
  static std::once_flag kept[64];
  if (device >= 0 && device < 64)
    std::call_once(kept[device], [device] {
      cudaMemPool_t pool = nullptr;
      if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
        std::uint64_t keep = ~std::uint64_t(0);
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
      }
      cudaGetLastError();
    });
  void* p = nullptr;
  PS_CUDA(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 1), cudaStreamLegacy), "allocating a result array");
  Buffer b;
  b.owner = std::shared_ptr<void>(p, [device](void* q) {
    int was = 0;
    cudaGetDevice(&was);
    cudaSetDevice(device);
    cudaFreeAsync(q, cudaStreamLegacy);
    cudaSetDevice(was);
  });
  b.data = p;
  b.bytes = bytes;
  b.space = MemorySpace::Cuda;
  b.device = device;
  return b;
}

void cuda_wait_stream(int device, std::uintptr_t stream) {
  if (stream == 0) return;
  PS_CUDA(cudaSetDevice(device), "selecting the CUDA device");
  const cudaStream_t s = stream == 1 ? cudaStreamLegacy : stream == 2 ? cudaStreamPerThread
                                                                        : reinterpret_cast<cudaStream_t>(stream);
  PS_CUDA(cudaStreamSynchronize(s), "waiting for the array's producer stream");
}

int cuda_device_of(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
}

}  // namespace parasurf
