// `auto` for FFD sessions: the CPU's and a GPU's estimated time per update (results brought home), and the GPU's
// one-time start (its context where this process has none, the session's arrays uploaded). A session starts on the
// GPU where its first update there already beats the CPU; where only later updates would, it starts on the CPU and
// moves to the GPU once its CPU updates have cost as much as that start (rent-or-buy: never more than twice the
// better of the two plans in hindsight, and a one-shot call never pays a start it cannot earn back).
#pragma once
#include <cstdint>
#include <string>

#include "core/auto_choice.hpp"
#include "parasurf/device.hpp"
#include "parasurf/ffd.hpp"

namespace parasurf::ffd {

struct AutoJob {
  FfdMethod method = FfdMethod::Accurate;
  std::int64_t vertices = 0;  // output vertices per update
  std::int64_t surfaces = 0;  // Bézier surfaces sampled per update (accurate)
  bool doubles = false;       // the updates' arithmetic
  int threads = 0;            // CPU threads asked for (0: all)
};

struct AutoPlan {
  Device device = Device::Cpu;    // for the first update
  double move_after_seconds = 0;  // > 0: move to the GPU once the CPU's updates have taken this long
  double cpu_update = 0, gpu_update = 0, gpu_start = 0;  // the estimates it weighed
  std::string why;
};

// Seconds per update on each side (the GPU's with its results copied home) and the GPU's one-time start.
core::DeviceEstimate estimate_update(const AutoJob& job);
double gpu_start_seconds(const AutoJob& job);
// The plan for a session of `job` from those estimates (no GPU usable: the CPU, no move).
AutoPlan plan(const AutoJob& job);
// The plan for given estimates (the rule itself, apart from the estimates).
AutoPlan plan_for(double cpu_update, double gpu_update, double gpu_start);
// A CPU update of `job` took `seconds`: later estimates of this job's CPU side follow it.
void learn_cpu_update(const AutoJob& job, double seconds);

}  // namespace parasurf::ffd
