// `auto` for Bézier surface evaluation: the CPU's and a GPU's estimated time for one call whose results land in host
// memory, so that small grids stay on the CPU (a GPU call's fixed cost and the link outweigh them) and large ones
// go to the GPU. Results asked into a GPU's memory run there.
#pragma once
#include <cstdint>
#include <string>

#include "core/auto_choice.hpp"
#include "parasurf/device.hpp"

namespace parasurf::bezier {

struct AutoJob {
  std::int64_t points = 0;
  std::int64_t control_points = 0;  // of the net ((m + 1)(n + 1))
  bool doubles = false;
  double bytes_home = 0;    // the requested outputs' bytes
  int threads = 0;          // CPU threads asked for (0: all)
  int outputs_on_gpu = -1;  // the device whose memory holds the outputs, or -1 (host memory)
};

// Seconds on each side, uncorrected: the CPU's from a per-point cost (its growth with the net's size measured on
// the CPU engines) over the threads; the GPU's from its context's start when this process has not started it, the
// call's fixed cost, the results' bytes over the link at the rates this process measured (else a typical one)
// and the kernel.
core::DeviceEstimate estimate_seconds(const AutoJob& job);
// Cpu or Cuda for `job` (requested Auto), with the reason in `why` ("auto chose cpu: ...").
Device choose_device(const AutoJob& job, std::string* why);
// A run of `job` on `ran` took `seconds` (the call), of which `transfer_seconds` brought results home.
void learn_from_run(const AutoJob& job, Device ran, double seconds, double transfer_seconds);

}  // namespace parasurf::bezier
