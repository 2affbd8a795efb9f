// CUDA device enumeration and the copy-bandwidth probe used as the physical floor of the benchmarks.
#include <algorithm>
#include <vector>

#include "core/cuda_check.hpp"
#include "parasurf/device.hpp"

namespace parasurf {

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

}  // namespace parasurf
