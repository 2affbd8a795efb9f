// `auto` for isosurfaces: the CPU engine's and a GPU's estimated time for one extraction, so that a call runs where
// it finishes first (small and mid-size host volumes on the CPU, where the GPU would spend longer on the host link
// than the CPU spends on the whole job; large ones, and fields computed on the GPU, there).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/auto_choice.hpp"
#include "parasurf/isosurface.hpp"
#include "parasurf/volume.hpp"

namespace parasurf::iso {

// One extraction's shape as the estimate sees it.
struct AutoJob {
  std::array<std::int64_t, 3> dims{0, 0, 0};
  VoxelType type = VoxelType::Float32;
  double triangles = 0;          // expected (per all levels)
  double vertices = 0;           // 0: half the triangles
  int levels = 1;
  bool samples_on_host = true;   // false: a built-in field, computed where the engine runs
  bool normals = true;
  int extra_volumes = 0;         // labels and scalars: 4 bytes per sample more up, one value per vertex more down
  int threads = 0;               // CPU threads asked for (0: all)
};

// Whether `auto` weighs the CPU against a GPU for these options (a usable GPU, no list of GPUs given).
bool auto_weighs_devices(const IsosurfaceOptions& o);
// The job of extracting `volume` with `o`, with this many triangles.
AutoJob auto_job(const VolumeSource& volume, const IsosurfaceOptions& o, double triangles);

// Seconds on each side, uncorrected. The CPU's rates are measured once per process and thread count on a small
// built-in job (under a few milliseconds); the GPU's come from the host link's rates (measured by this process's
// GPU runs, else typical ones), its fixed cost per call, its context's start when this process has not started it,
// and the engine's kernel rate.
core::DeviceEstimate estimate_seconds(const AutoJob& job);
// A GPU run of `made` (its actual triangles and vertices) reported `rep`: the link's rates for its copies and the
// call's fixed cost are learned from it (`context_started`: the run started the GPU's context).
void learn_from_gpu_run(const AutoJob& made, const IsosurfaceReport& rep, bool context_started);
// What `auto` takes for one run over `volume` (the CPU below kAlwaysCpuSamples, else the side estimated faster,
// which from a process's second call may be the unmeasured side tried once): `weighed` says whether the estimates
// were made (`before`, `decision`).
struct AutoPick {
  Device device = Device::Cpu;
  bool weighed = false;
  core::DeviceEstimate before;
  core::AutoDecision decision;
};
AutoPick pick_device(VolumeSource& volume, const IsosurfaceOptions& o);
// Triangles expected: from edge crossings on a lattice of rows when the samples lie in memory, else a typical
// density of scanned volumes.
double expected_triangles(VolumeSource& volume, const std::vector<double>& levels);
// Triangles per sample of a level where nothing better is known (scanned volumes at a tissue boundary: 0.03-0.15).
constexpr double kTypicalTriangleDensity = 0.05;
// Below this many samples (times levels) the CPU is taken without an estimate: no GPU call is shorter.
constexpr double kAlwaysCpuSamples = double(1 << 18);

}  // namespace parasurf::iso
