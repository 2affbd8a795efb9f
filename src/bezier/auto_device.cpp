// `auto` for Bézier surface evaluation (see auto_device.hpp).
#include "bezier/auto_device.hpp"

#include <algorithm>

#include "parasurf/bezier.hpp"

namespace parasurf {
namespace bezier {
namespace {

// One CPU thread's cost of a point with normals (factored, float): about 27 ns for a bicubic net and 47 ns for a
// 16 x 16 one on the H200 host's cores and this project's 2-core machine alike; doubles about a third more.
constexpr double kCpuPointSeconds = 26e-9, kCpuPerControlPointSeconds = 0.08e-9, kDoubleFactor = 1.33;
// Threads scale at about 0.85 each (memory-bound stores), after a parallel region's start.
constexpr double kThreadEfficiency = 0.85, kParallelStartSeconds = 10e-6;
// A GPU call: launch and waits; results home at a rate between the driver's pageable copy (a process's first
// mid-size copy, 5-11 GB/s on an H200 host) and pinned staging emptied by all cores (about 40 GB/s there), until
// this process has measured its own; the kernels' rate (points with normals per second); a context's start (cuInit
// and the context on a large GPU).
constexpr double kGpuCallSeconds = 0.1e-3, kDownloadBytesPerSecond = 25e9, kGpuPointsPerSecond = 1e11;
constexpr double kContextStartSeconds = 0.3;

const char* job_name(const AutoJob& job) { return job.doubles ? "surface-double" : "surface-float"; }

double cpu_seconds(const AutoJob& job) {
  const int threads = cpu_thread_count_for(job.threads, job.points, 4096);
  const double one = double(job.points) * (kCpuPointSeconds + kCpuPerControlPointSeconds * double(job.control_points)) *
                     (job.doubles ? kDoubleFactor : 1.0);
  return threads > 1 ? one / (double(threads) * kThreadEfficiency) + kParallelStartSeconds : one;
}

double kernel_seconds(const AutoJob& job) {
  return double(job.points) / kGpuPointsPerSecond * (job.doubles ? 2.0 : 1.0);
}

}  // namespace

core::DeviceEstimate estimate_seconds(const AutoJob& job) {
  core::DeviceEstimate e;
  e.cpu_seconds = cpu_seconds(job);
  e.cuda_seconds = core::gpu_call_home_seconds(job_name(job), kContextStartSeconds, kGpuCallSeconds, job.bytes_home,
                                               kDownloadBytesPerSecond) +
                   kernel_seconds(job);
  return e;
}

Device choose_device(const AutoJob& job, std::string* why) {
  if (job.outputs_on_gpu >= 0) {
    if (why) *why = "auto chose cuda: the outputs lie in GPU memory";
    return Device::Cuda;
  }
  if (!cuda_available()) return Device::Cpu;
  const core::AutoDecision d = core::decide(job_name(job), estimate_seconds(job), true);
  if (why) *why = core::describe(d);
  return d.device;
}

void learn_from_run(const AutoJob& job, Device ran, double seconds, double transfer_seconds) {
  if (job.outputs_on_gpu >= 0) return;
  const core::DeviceEstimate e = estimate_seconds(job);
  if (ran == Device::Cpu) {
    core::learn(job_name(job), Device::Cpu, e.cpu_seconds, seconds);
  } else if (ran == Device::Cuda) {
    core::learn_link(false, job.bytes_home, transfer_seconds);
    // The rest of the call beside the copy and the kernels is its fixed cost.
    core::learn_gpu_call(job_name(job), seconds - transfer_seconds - kernel_seconds(job));
  }
}

}  // namespace bezier

AutoDeviceEstimate surface_auto_estimate(std::int64_t points, std::int64_t control_points, bool doubles, int threads) {
  bezier::AutoJob job;
  job.points = points;
  job.control_points = control_points;
  job.doubles = doubles;
  job.threads = threads;
  job.bytes_home = double(points) * (6 * (doubles ? 8 : 4) + 1);
  const core::AutoDecision d = core::decide(bezier::job_name(job), bezier::estimate_seconds(job));
  AutoDeviceEstimate e;
  e.cpu_seconds = d.cpu_seconds;
  if (!cuda_available()) return e;
  e.device = d.device;
  e.cuda_seconds = d.cuda_seconds;
  return e;
}

}  // namespace parasurf
