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
  bool cpu_bound = false;  // cpu_seconds is a bound that settled the choice, not an estimate from measured rates
};

struct AutoDecision {
  Device device = Device::Cpu;
  double cpu_seconds = 0, cuda_seconds = 0;  // corrected by what this process measured
  bool exploring = false;                    // the slower-looking side, run to measure it (see decide)
  bool measured_before = false;              // (exploring) a side this process measured before: tried again
};

// The faster side after correction; ties go to the CPU (no GPU context, no host memory pinned). For a run
// (`for_run`; not for a report of what auto would do), from the process's second call of the job on: the side not
// chosen runs instead when its estimate lies within 2x of the chosen one's, on the first such call where this
// process has not measured it (no CPU run learned; no GPU call cost learned), else on the 4th, 16th, 64th... such
// call, so that its estimate is corrected by measurements (the caller learns from every run). Estimates that are
// bounds (cpu_bound) never explore.
AutoDecision decide(const char* job, DeviceEstimate raw, bool for_run = false);
// A run of `job` on `ran` that was estimated at `estimated_seconds` (uncorrected) took `measured_seconds`.
// Measurements of one call are noisy: the correction moves part of the way and stays within [1/4, 4].
void learn(const char* job, Device ran, double estimated_seconds, double measured_seconds);
// The correction factor now in use (1 until the first run on that side).
double correction(const char* job, Device side);
// Seconds to move `bytes` between pageable host memory and the GPU (up: to the device), from the rates this
// process measured for copies of about that size (within a factor of 8), else `typical_bytes_per_second`. Rates
// differ by size: small copies pay per-copy costs, large ones go through pinned staging.
double link_seconds(bool up, double bytes, double typical_bytes_per_second);
// A copy of `bytes` took `seconds` (ignored below 64 KiB, where the fixed cost is all there is to see).
void learn_link(bool up, double bytes, double seconds);
// A GPU call's fixed cost for `job` (launches, waits, buffers), learned as the rest of its measured time.
double gpu_call_seconds(const char* job, double typical_seconds);
void learn_gpu_call(const char* job, double seconds);
// A GPU call whose results come home: its context's start when this process has not started it, the job's fixed
// cost (gpu_call_seconds) and `bytes_home` over the link (link_seconds), each from what the process measured where
// it has, else the typical values given.
double gpu_call_home_seconds(const char* job, double context_start_seconds, double typical_call_seconds,
                             double bytes_home, double typical_bytes_per_second);

// Whether this process has started the device's context already (a GPU's first call pays for that).
bool cuda_context_active(int device_index);
// The GPU whose memory holds `p`, or -1 for host memory, without starting CUDA: no GPU memory exists before this
// process has started a context.
int gpu_holding(const void* p);
// "auto chose cpu: about 5.9 ms against 8.1 ms on cuda" for reports.
std::string describe(const AutoDecision& d);

}  // namespace parasurf::core
