// `auto` for FFD sessions (see auto_device.hpp). Rates measured on the H200 host (16 threads) and a 2-core machine
// with the 9x9x9 tricubic lattice of `bench ffd`; each process's CPU updates correct the CPU's side.
#include "ffd/auto_device.hpp"

#include <algorithm>
#include <cstdio>

#include "core/backends.hpp"

namespace parasurf::ffd {
namespace {

// One CPU thread's cost per output vertex (point and uus: the lattice and its Jacobian at the vertex, about 0.22 us;
// accurate: a surface point and normal, about 0.16 us) and per Bézier surface sampled (accurate, about 7 us for a
// tricubic lattice); threads beyond two share the memory bus (about 0.6 each on the H200 host); a team's wake-up.
constexpr double kCpuVertexSeconds = 0.22e-6, kCpuAccurateVertexSeconds = 0.16e-6, kCpuSurfaceSeconds = 7.3e-6;
constexpr double kCpuFixedSeconds = 20e-6, kManyThreadsEfficiency = 0.6, kDoubleFactor = 1.3;
// A GPU update: launches and the wait (about 25 us on an H200), the kernels per vertex and per surface, the results
// home at a pageable rate until this process measured its own; its start: the context, the session's arrays made
// and uploaded (about 40 bytes a vertex or surface record) and a fixed part.
constexpr double kGpuCallSeconds = 25e-6, kGpuVertexSeconds = 0.14e-9, kGpuSurfaceSeconds = 9e-9;
constexpr double kDownloadBytesPerSecond = 15e9, kContextStartSeconds = 0.3, kSetupSeconds = 1e-3;
constexpr double kSetupBytesPerItem = 40, kUploadBytesPerSecond = 10e9;

const char* job_name(const AutoJob& job) {
  switch (job.method) {
    case FfdMethod::Point:
      return "ffd-point";
    case FfdMethod::Upsampled:
      return "ffd-uus";
    default:
      return "ffd-accurate";
  }
}

double cpu_update_seconds(const AutoJob& job) {
  const int threads = cpu_thread_count_for(job.threads, job.vertices, 4096);
  const double per_thread = threads > 2 ? kManyThreadsEfficiency : 0.95;
  const double work = job.method == FfdMethod::Accurate
                          ? double(job.vertices) * kCpuAccurateVertexSeconds + double(job.surfaces) * kCpuSurfaceSeconds
                          : double(job.vertices) * kCpuVertexSeconds;
  return kCpuFixedSeconds +
         work * (job.doubles ? kDoubleFactor : 1.0) / std::max(1.0, threads > 1 ? threads * per_thread : 1.0);
}

double bytes_home(const AutoJob& job) { return double(job.vertices) * 6 * (job.doubles ? 8 : 4); }

}  // namespace

core::DeviceEstimate estimate_update(const AutoJob& job) {
  core::DeviceEstimate e;
  e.cpu_seconds = cpu_update_seconds(job);
  e.cuda_seconds = kGpuCallSeconds + double(job.vertices) * kGpuVertexSeconds * (job.doubles ? 2 : 1) +
                   double(job.surfaces) * kGpuSurfaceSeconds * (job.doubles ? 1 : 2) +
                   core::link_seconds(false, bytes_home(job), kDownloadBytesPerSecond);
  return e;
}

double gpu_start_seconds(const AutoJob& job) {
  return (core::cuda_context_active(0) ? 0 : kContextStartSeconds) + kSetupSeconds +
         double(job.vertices + job.surfaces) * kSetupBytesPerItem / kUploadBytesPerSecond;
}

AutoPlan plan_for(double cpu_update, double gpu_update, double gpu_start) {
  AutoPlan p;
  p.cpu_update = cpu_update, p.gpu_update = gpu_update, p.gpu_start = gpu_start;
  char text[200];
  if (gpu_start + gpu_update <= cpu_update) {
    p.device = Device::Cuda;
    std::snprintf(text, sizeof text,
                  "auto chose cuda: about %.3g ms an update (%.3g ms to start) against %.3g ms on the cpu",
                  gpu_update * 1e3, gpu_start * 1e3, cpu_update * 1e3);
  } else if (gpu_update < cpu_update) {
    p.move_after_seconds = gpu_start;
    std::snprintf(
        text, sizeof text,
        "auto chose cpu: about %.3g ms an update against %.3g ms on cuda after %.3g ms to start; moves to cuda "
        "once its updates took that long",
        cpu_update * 1e3, gpu_update * 1e3, gpu_start * 1e3);
  } else {
    std::snprintf(text, sizeof text, "auto chose cpu: about %.3g ms an update against %.3g ms on cuda",
                  cpu_update * 1e3, gpu_update * 1e3);
  }
  p.why = text;
  return p;
}

AutoPlan plan(const AutoJob& job) {
  if (!core::kCudaBuilt || !cuda_available()) return {};
  const core::DeviceEstimate e = estimate_update(job);
  return plan_for(e.cpu_seconds * core::correction(job_name(job), Device::Cpu), e.cuda_seconds, gpu_start_seconds(job));
}

void learn_cpu_update(const AutoJob& job, double seconds) {
  core::learn(job_name(job), Device::Cpu, cpu_update_seconds(job), seconds);
}

}  // namespace parasurf::ffd

namespace parasurf {

AutoDeviceEstimate ffd_auto_estimate(FfdMethod method, std::int64_t vertices, std::int64_t surfaces, bool doubles,
                                     int threads) {
  ffd::AutoJob job;
  job.method = method;
  job.vertices = vertices;
  job.surfaces = surfaces;
  job.doubles = doubles;
  job.threads = threads;
  AutoDeviceEstimate out;
  const ffd::AutoPlan p = ffd::plan(job);
  out.device = p.device;
  out.cpu_seconds = p.cpu_update;
  out.cuda_seconds = p.gpu_update + p.gpu_start;
  return out;
}

}  // namespace parasurf
