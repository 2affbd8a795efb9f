// `auto` for tessellation: the CPU's and a GPU's estimated time for one model's mesh in host memory, so that small
// meshes stay on the CPU (a GPU call's fixed cost, its context and the mesh's way home outweigh them) and large
// ones go to the GPU, which evaluates and welds there.
#pragma once
#include <cstdint>
#include <string>

#include "core/auto_choice.hpp"
#include "parasurf/device.hpp"

namespace parasurf::patches {

struct AutoJob {
  std::int64_t samples = 0;    // evaluated points
  std::int64_t vertices = 0;   // of the welded mesh
  std::int64_t triangles = 0;  // (about twice the vertices)
  bool doubles = true;
  int threads = 0;             // CPU threads asked for (0: all)
  bool host_assembly = false;  // on a GPU too (T-junctions, or asked): the samples come home and the host welds
};

// Seconds on each side, uncorrected: the CPU's evaluation over its threads and its assembly (which spreads over
// threads less well); the GPU's context start when this process has none, its call's fixed cost, the kernels, and
// the mesh's bytes over the link at the rate this process measured (else a typical one).
core::DeviceEstimate estimate_seconds(const AutoJob& job);
// Cpu or Cuda for `job` (requested Auto), with the reason in `why` ("auto chose cpu: ...").
Device choose_device(const AutoJob& job, std::string* why);
// A run of `job` on `ran` took `seconds` (evaluation and assembly), of which `download_seconds` brought the mesh home.
void learn_from_run(const AutoJob& job, Device ran, double seconds, double download_seconds);

}  // namespace parasurf::patches
