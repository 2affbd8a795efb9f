// `auto` for tessellation (see auto_device.hpp).
#include "patches/auto_device.hpp"

#include <algorithm>
#include <cmath>

#include "parasurf/tessellate.hpp"

namespace parasurf {
namespace patches {
namespace {

// One CPU thread's cost per evaluated point with normals (tables, doubles: about 50 ns on the H200 host's cores and
// this project's 2-core machine), spread over threads at about 0.85 each; the host assembly's per point (welding,
// normals, triangles: about 80 ns on one thread) spreads as the square root of the threads (its passes over the
// seams and the vertex map are partly serial); floats save about a quarter; the plan's fixed part.
constexpr double kCpuEvaluateSeconds = 50e-9, kCpuAssembleSeconds = 80e-9, kFloatFactor = 0.75;
constexpr double kThreadEfficiency = 0.85, kCpuFixedSeconds = 0.1e-3;
// A GPU run: launches, the assembly's phases and waits (about 0.55 ms on an H200, whatever the size), the kernels'
// cost per point, the mesh home at a rate between the driver's pageable copy and pinned staging emptied by all
// cores until this process has measured its own, and a context's start.
constexpr double kGpuCallSeconds = 0.55e-3, kGpuPointSeconds = 0.75e-9, kDownloadBytesPerSecond = 20e9;
constexpr double kContextStartSeconds = 0.3;

const char* job_name(const AutoJob& job) { return job.doubles ? "tessellate-double" : "tessellate-float"; }

// The welded mesh's bytes in host memory: positions and normals (about one normal per vertex), triangles' position
// and normal indices, their group and patch.
double mesh_bytes(const AutoJob& job) {
  const double real = job.doubles ? 8 : 4;
  return double(job.vertices) * 6 * real + double(job.triangles) * 32;
}

int cpu_threads(const AutoJob& job) { return cpu_thread_count_for(job.threads, job.samples, 4096); }

double cpu_assembly_seconds(const AutoJob& job) {
  return double(job.samples) * kCpuAssembleSeconds / std::sqrt(double(cpu_threads(job)));
}

double cpu_seconds(const AutoJob& job) {
  const int threads = cpu_threads(job);
  const double scale = job.doubles ? 1.0 : kFloatFactor;
  const double evaluate = double(job.samples) * kCpuEvaluateSeconds * scale /
                          std::max(1.0, double(threads) * (threads > 1 ? kThreadEfficiency : 1.0));
  return kCpuFixedSeconds + evaluate + cpu_assembly_seconds(job);
}

// What comes home from the GPU: the mesh, or the samples (positions and normals) for the host to weld.
double bytes_home(const AutoJob& job) {
  return job.host_assembly ? double(job.samples) * 6 * (job.doubles ? 8 : 4) : mesh_bytes(job);
}

double kernel_seconds(const AutoJob& job) { return double(job.samples) * kGpuPointSeconds * (job.doubles ? 2 : 1); }

}  // namespace

core::DeviceEstimate estimate_seconds(const AutoJob& job) {
  core::DeviceEstimate e;
  e.cpu_seconds = cpu_seconds(job);
  e.cuda_seconds = core::gpu_call_home_seconds(job_name(job), kContextStartSeconds, kGpuCallSeconds, bytes_home(job),
                                               kDownloadBytesPerSecond) +
                   kernel_seconds(job) + (job.host_assembly ? cpu_assembly_seconds(job) : 0);
  return e;
}

Device choose_device(const AutoJob& job, std::string* why) {
  if (!cuda_available()) return Device::Cpu;
  const core::AutoDecision d = core::decide(job_name(job), estimate_seconds(job), true);
  if (why) *why = core::describe(d);
  return d.device;
}

void learn_from_run(const AutoJob& job, Device ran, double seconds, double download_seconds) {
  const core::DeviceEstimate e = estimate_seconds(job);
  if (ran == Device::Cpu) {
    core::learn(job_name(job), Device::Cpu, e.cpu_seconds, seconds);
  } else if (ran == Device::Cuda && !job.host_assembly) {  // (the host's part would blur the GPU's)
    if (download_seconds > 0) core::learn_link(false, bytes_home(job), download_seconds);
    core::learn_gpu_call(job_name(job), seconds - download_seconds - kernel_seconds(job));
  }
}

}  // namespace patches

AutoDeviceEstimate tessellation_auto_estimate(std::int64_t samples, bool doubles, int threads) {
  patches::AutoJob job;
  job.samples = samples;
  job.vertices = samples;  // (grid samples shared along seams: about one vertex each)
  job.triangles = 2 * samples;
  job.doubles = doubles;
  job.threads = threads;
  const core::AutoDecision d = core::decide(patches::job_name(job), patches::estimate_seconds(job));
  AutoDeviceEstimate out;
  out.device = cuda_available() ? d.device : Device::Cpu;
  out.cpu_seconds = d.cpu_seconds;
  out.cuda_seconds = cuda_available() ? d.cuda_seconds : 0;
  return out;
}

}  // namespace parasurf
