// Runtime device detection and selection (CPU always present; CUDA when built in and a device exists).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parasurf {

// Where work runs. Auto = CUDA when a device is present, else CPU. Hybrid = CPU threads and the GPU together.
enum class Device { Auto, Cpu, Cuda, Hybrid };

Device parse_device(const std::string& name);  // "auto" | "cpu" | "cuda" | "hybrid"; throws Error otherwise
const char* device_name(Device device);

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  std::uint64_t total_memory_bytes = 0;
  std::uint64_t free_memory_bytes = 0;
  int multiprocessors = 0;
  int compute_major = 0, compute_minor = 0;
  std::uint64_t l2_cache_bytes = 0;
  bool host_native_atomics = false;   // cudaDevAttrHostNativeAtomicSupported
  bool can_map_host_memory = false;
};

struct BuildFeatures {
  bool cuda = false;        // CUDA backend compiled in
  bool openmp = false;
  std::string cuda_architectures;
  std::string compiler;
};

BuildFeatures build_features();

// Enumerates CUDA devices; empty when CUDA is not built in, no driver or no device. Never throws.
std::vector<CudaDeviceInfo> cuda_devices();
// Why cuda_devices() is empty (driver message, "not built with CUDA", ...); empty string when devices exist.
std::string cuda_unavailable_reason();
// Devices visible to this process, without starting a CUDA context on any (cuda_devices() starts one on each).
int cuda_device_count();
// Whether this build's kernels run on a device (its compute capability against the architectures built; where
// the driver would compile PTX, a trial load). Decided once per device and process. Never throws.
bool cuda_device_usable(int device_index);
// Why not, naming the device, its compute capability and the architectures built; empty when usable.
std::string cuda_device_unusable_reason(int device_index);
// A device is visible but cannot run this build, so `auto` runs on the CPU: the one line to show the user (the
// library never prints). Empty when there is nothing to warn about, including machines without a GPU.
std::string cuda_fallback_warning();
// A device is visible and device 0 can run this build's kernels.
bool cuda_available();
// Starts the CUDA context of a device ahead of use (a few hundred ms on large GPUs), e.g. on a thread while the
// process does other start-up work. Never throws; does nothing without CUDA.
void cuda_warm_up(int device_index = 0) noexcept;

// What `auto` would run a job on, and the estimated seconds on each side as this process knows them (each
// capability's *_auto_estimate). Without a usable GPU: the CPU, and cuda_seconds 0.
struct AutoDeviceEstimate {
  Device device = Device::Cpu;
  double cpu_seconds = 0, cuda_seconds = 0;
};

// Resolves Auto to Cpu or Cuda; throws Error when Cuda/Hybrid is requested and no device exists.
Device resolve_device(Device requested);

// Measured device-to-device copy bandwidth in bytes/s (read + write counted), median of several runs.
double measure_cuda_copy_bandwidth(int device_index = 0, std::uint64_t bytes = 1ull << 30);

// The host link's rates in bytes/s, each way, between pinned host memory and a device: the floor of any job that
// moves its inputs up and its results home (bytes in / host_to_device + bytes out / device_to_host, or the larger
// of the two when they overlap). Best of several copies of `bytes`. Throws Error(Device) without CUDA.
struct LinkBandwidth {
  double host_to_device = 0, device_to_host = 0;
  // Seconds for a job that moves `up` bytes to the device and `down` bytes home, one after the other.
  double seconds(double up, double down) const { return up / host_to_device + down / device_to_host; }
  // The same with the two directions overlapped (a job that copies in chunks while it computes).
  double overlapped_seconds(double up, double down) const {
    return up / host_to_device > down / device_to_host ? up / host_to_device : down / device_to_host;
  }
};
LinkBandwidth measure_cuda_link_bandwidth(int device_index = 0, std::uint64_t bytes = 256ull << 20);

// CPU threads: 0 = all available; requests above cpu_thread_limit() get that many. Applies to the library's OpenMP
// regions. Throws Error(InvalidArgument) for a negative count.
int cpu_thread_count(int requested);
// Threads for `work` items of which a thread should have at least `per_thread`: `requested` when it is set (> 0),
// else all, but no more than the work keeps busy (waking a team of threads costs more than a small job's work).
int cpu_thread_count_for(int requested, std::int64_t work, std::int64_t per_thread);
// The most threads one parallel region uses: 8 per hardware thread, at least 64.
int cpu_thread_limit();
// What "all threads" (0) means from now on, in every thread of the process (0: all available again). Several
// processes sharing a node (MPI ranks) each take their share of its cores.
void set_default_cpu_threads(int threads);
int hardware_threads();

// Throws Error(OutOfMemory) naming `what`, the bytes needed and the bytes the system has available when `bytes` of
// host memory cannot fit: checked before a large allocation, so that an absurd size fails with a message.
void check_host_memory(std::uint64_t bytes, const std::string& what);

}  // namespace parasurf
