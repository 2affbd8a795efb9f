// `auto`'s choice between the CPU and a GPU for one call, from each side's estimated time. The estimates come from
// the capability (its work, the bytes that would cross the host link); this file keeps, per kind of job, how far
// this process's measured runs were from them, so that a model that is off on this machine corrects itself.
#pragma once
#include <string>

#include "parasurf/device.hpp"

namespace parasurf::core {

struct DeviceEstimate {
  double cpu_seconds = 0;
  double cuda_seconds = 0;
};

struct AutoDecision {
  Device device = Device::Cpu;
  double cpu_seconds = 0, cuda_seconds = 0;  // corrected by what this process measured
};

// The faster side after correction; ties go to the CPU (no GPU context, no host memory pinned).
AutoDecision decide(const char* job, DeviceEstimate raw);
// A run of `job` on `ran` that was estimated at `estimated_seconds` (uncorrected) took `measured_seconds`.
// Measurements of one call are noisy: the correction moves part of the way and stays within [1/4, 4].
void learn(const char* job, Device ran, double estimated_seconds, double measured_seconds);
// The correction factor now in use (1 until the first run on that side).
double correction(const char* job, Device side);
// Whether this process has started the device's context already (a GPU's first call pays for that).
bool cuda_context_active(int device_index);
// "auto chose cpu: about 5.9 ms against 8.1 ms on cuda" for reports.
std::string describe(const AutoDecision& d);

}  // namespace parasurf::core
