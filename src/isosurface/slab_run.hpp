// One isosurface run's slabs, as planned by the driver (extract.cpp): which slices each slab owns and reads, where
// its samples lie on the host, and how several slab workers (one per GPU) share them (slab_run.cpp).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <latch>
#include <memory>
#include <vector>

#include "isosurface/engine.hpp"
#include "isosurface/level_mesh.hpp"
#include "parasurf/isosurface.hpp"

namespace parasurf::iso {

// A slab's samples as read on the host, and its labels and scalars converted to 4 bytes.
struct SlabBuffers {
  SlabHostBuffer data;
  std::vector<std::int32_t> labels;
  std::vector<float> scalars;
};

struct SlabRun {
  SlabRun(VolumeSource& v, const IsosurfaceOptions& options, std::vector<double> asked, std::vector<double> classified)
      : volume(v), o(options), levels(std::move(asked)), engine_levels(std::move(classified)) {}

  VolumeSource& volume;
  const IsosurfaceOptions& o;
  std::vector<double> levels;           // as asked
  std::vector<double> engine_levels;    // what the engines classify against (see level_above, level_below)
  std::int64_t zb = 0, ze = 0, nz = 0;  // the part's grid points [zb, ze) of nz
  std::int64_t slab_slices = 1, slab_count = 1;
  std::uint64_t slice_points = 0, slab_points = 0;  // samples of a slice, of a slab's buffers
  std::uint64_t slab_bytes = 0;                     // a slab's sample buffer (0: resident or computed on the device)
  std::size_t vbytes = 0;                           // bytes per sample
  const void* resident = nullptr;                   // the whole volume in host memory, or null
  bool on_device = false;                           // a built-in field computed by the CUDA engine
  SlabTask task;                                    // what every slab's task starts from
  std::vector<char> raw;                            // labels' and scalars' samples as read (one read at a time)

  // Slab s: its owned slices [z0, z1) and the slices [d0, d1) its cells and gradients read.
  std::array<std::int64_t, 4> span_of(std::int64_t s) const;
  // Reads slab s into `buf` (samples, unless resident or on the device; labels; scalars).
  void read_slab(std::int64_t s, SlabBuffers& buf);
  // Slab s's task: its slices and where its samples, labels and scalars lie.
  SlabTask task_of(SlabTask t, std::int64_t s, SlabBuffers& buf) const;
  // Buffers for one slab, pinned for a GPU.
  void allocate(SlabBuffers& buf, bool pinned) const;
};

// Slices [z0, z1) of a label volume into out as int32; `raw` is scratch for streamed sources. Throws
// Error(InvalidArgument) naming the volume and slice of a sample that is not an integer in the int32 range.
void read_labels(VolumeSource& labels, std::int64_t z0, std::int64_t z1, std::int32_t* out, std::vector<char>& raw);

// n samples of a type as float32 (all threads).
void samples_to_floats(const void* in, VoxelType type, std::size_t n, float* out);

// Several slab workers: one per listed GPU (the first may bring the engine already made), or (tests) several CPU
// engines sharing the cores.
struct SlabTeam {
  bool cpu = false;
  std::size_t workers = 1;
  std::vector<int> gpus;
  std::unique_ptr<SlabEngine> first_engine;  // worker 0's (GPU teams)
};

struct SlabTeamOutcome {
  StageSeconds seconds;  // summed over the workers
  double read_seconds = 0, host_mesh_seconds = 0, host_mesh_ahead_seconds = 0, workers_seconds = 0, join_seconds = 0;
  std::uint64_t coincident_removed = 0;
  // Released once the run is reported, as one GPU's engine is (freeing device memory takes milliseconds).
  std::vector<std::unique_ptr<SlabEngine>> engines;
};

// Runs every slab of `run` on the team, each level's mesh landing in `meshes` with exact seams. `expected_triangles`
// is read once `estimated` is counted down.
SlabTeamOutcome run_slab_team(SlabRun& run, SlabTeam team, std::vector<LevelMesh>& meshes, std::latch& estimated,
                              const std::uint64_t& expected_triangles);

}  // namespace parasurf::iso
