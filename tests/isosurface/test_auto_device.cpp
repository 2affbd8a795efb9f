// `auto` for isosurfaces: the choice follows the faster estimate and learns from measured runs, the triangle
// estimate is close to the mesh made, tiny host volumes stay on the CPU with a GPU present, and the mesh is the
// same whichever side runs it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "core/auto_choice.hpp"
#include "isosurface/auto_device.hpp"
#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"
#include "parasurf/volume.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

TEST(AutoDevice, DecisionFollowsTheFasterSideAndLearns) {
  const char* job = "test-decision";
  core::DeviceEstimate e{2e-3, 1e-3};
  EXPECT_EQ(core::decide(job, e).device, Device::Cuda);
  EXPECT_EQ(core::decide(job, {1e-3, 1e-3}).device, Device::Cpu);  // a tie needs no GPU
  // The GPU took four times its estimate, twice: its correction passes 2 and the CPU is chosen.
  core::learn(job, Device::Cuda, 1e-3, 4e-3);
  EXPECT_NEAR(core::correction(job, Device::Cuda), 2.0, 1e-12);
  core::learn(job, Device::Cuda, 1e-3, 4e-3);
  EXPECT_GT(core::correction(job, Device::Cuda), 2.0);
  EXPECT_EQ(core::decide(job, e).device, Device::Cpu);
  // Absurd or missing measurements change nothing; a first CPU run slower than its estimate moves the factor
  // halfway (a cold first call must not keep the CPU from running again), and a single outlier by at most 2.
  const double before = core::correction(job, Device::Cpu);
  core::learn(job, Device::Cpu, 1e-3, std::nan(""));
  core::learn(job, Device::Cpu, 0, 1e-3);
  core::learn(job, Device::Cpu, 1e-3, -1);
  EXPECT_EQ(core::correction(job, Device::Cpu), before);
  core::learn(job, Device::Cpu, 1e-3, 4e-3);
  EXPECT_NEAR(core::correction(job, Device::Cpu), 2.0, 1e-12);
  core::learn(job, Device::Cpu, 1e-3, 1e3);
  EXPECT_NEAR(core::correction(job, Device::Cpu), std::sqrt(8.0), 1e-12);
  // Now the CPU is estimated at 5.7 ms against 2.8 ms on the GPU.
  EXPECT_NE(core::describe(core::decide(job, e)).find("auto chose cuda"), std::string::npos);
}

// A side that has not run a job in this process may be estimated a few times too slow and would then never run:
// from the second call on, when it lies within 2x of the chosen side, it runs once and learns (a measured side
// runs again now and then); reports of what auto would do never explore, nor do estimates that are bounds or sides
// far behind.
// A first CPU run faster than its estimate is taken at its word.
TEST(AutoDevice, AFirstCpuRunFasterThanItsEstimateReplacesIt) {
  const char* job = "test-first-fast";
  core::learn(job, Device::Cpu, 1e-3, 0.3e-3);
  EXPECT_NEAR(core::correction(job, Device::Cpu), 0.3, 1e-12);
  core::learn(job, Device::Cpu, 1e-3, 0.3e-3);  // later runs by the geometric mean
  EXPECT_NEAR(core::correction(job, Device::Cpu), 0.3, 1e-12);
}

TEST(AutoDevice, AnUnmeasuredSideCloseToTheChosenOneRunsOnce) {
  const char* job = "test-explore";
  const core::DeviceEstimate e{1.5e-3, 1e-3};
  EXPECT_EQ(core::decide(job, e, true).device, Device::Cuda);  // a process's first call: no lesson to use
  EXPECT_EQ(core::decide(job, e).device, Device::Cuda);        // a report
  const core::AutoDecision tried = core::decide(job, e, true);
  EXPECT_EQ(tried.device, Device::Cpu);
  EXPECT_TRUE(tried.exploring);
  EXPECT_NE(core::describe(tried).find("trying it once"), std::string::npos) << core::describe(tried);
  EXPECT_EQ(core::decide(job, e, true).device, Device::Cuda);  // once only
  // The CPU's run took 0.6 ms, not 1.5: now it leads, and the GPU (no call cost learned yet) is tried once.
  core::learn(job, Device::Cpu, 1.5e-3, 0.6e-3);
  EXPECT_EQ(core::decide(job, e, true).device, Device::Cuda);
  EXPECT_EQ(core::decide(job, e, true).device, Device::Cpu);
  EXPECT_EQ(core::decide(job, e, true).device, Device::Cpu);
  // Both sides measured: the one behind by less than 2x runs again on the 4th and 16th such call, so that one cold
  // or slowed run's lesson does not keep it out for the rest of the process.
  const char* again = "test-look-again";
  core::learn(again, Device::Cpu, 1e-3, 1e-3);
  core::learn_gpu_call(again, 1e-3);
  EXPECT_EQ(core::decide(again, e, true).device, Device::Cuda);  // the process's first call
  for (int close = 1; close <= 17; ++close) {
    const core::AutoDecision x = core::decide(again, e, true);
    const bool look = close == 4 || close == 16;
    EXPECT_EQ(x.device, look ? Device::Cpu : Device::Cuda) << "close call " << close;
    EXPECT_EQ(x.exploring, look) << "close call " << close;
    if (look) EXPECT_NE(core::describe(x).find("trying it again"), std::string::npos) << core::describe(x);
  }
  for (const char* other : {"test-explore-far", "test-explore-bound"}) {
    core::DeviceEstimate x = other[13] == 'f' ? core::DeviceEstimate{5e-3, 1e-3} : core::DeviceEstimate{1.5e-3, 1e-3};
    x.cpu_bound = other[13] == 'b';
    for (int call = 0; call < 3; ++call) EXPECT_EQ(core::decide(other, x, true).device, Device::Cuda) << other;
  }
}

TEST(AutoDevice, LinkRatesAreLearnedBySize) {
  // Far from any size the process has copied: the typical rate. (Sizes of 2^50 bytes are never copied.)
  const double huge = std::ldexp(1.0, 50);
  EXPECT_DOUBLE_EQ(core::link_seconds(true, huge, 1e10), huge / 1e10);
  core::learn_link(true, huge, huge / 2e10);
  EXPECT_NEAR(core::link_seconds(true, huge, 1e10), huge / 2e10, 1e-9 * huge / 2e10);
  EXPECT_NEAR(core::link_seconds(true, 4 * huge, 1e10), 4 * huge / 2e10, 1e-9 * huge);  // within a factor of 8
  EXPECT_DOUBLE_EQ(core::link_seconds(true, 32 * huge, 1e10), 32 * huge / 1e10);         // beyond it
  EXPECT_DOUBLE_EQ(core::link_seconds(false, huge, 1e10), huge / 1e10);                 // the other direction
  // A run slowed 200x (page faults, a busy host) moves a known rate by the square root of two at most, and a size
  // first measured so slow starts at half the nearest known rate.
  core::learn_link(true, huge, huge / 1e8);
  EXPECT_NEAR(core::link_seconds(true, huge, 1e10), huge / std::sqrt(2e10 * 1e10), 1e-9 * huge / 1e10);
  core::learn_link(true, 2 * huge, 2 * huge / 1e8);
  EXPECT_NEAR(core::link_seconds(true, 2 * huge, 1e10), 2 * huge / (std::sqrt(2e10 * 1e10) / 2), 1e-9 * huge / 1e10);
  // Rates grow with a copy's size (staged from 4 MiB): a small copy's slow rate does not make a larger one look
  // slower than the typical rate, and a larger size's first run faster than the small one's is taken as it is.
  const double small = std::ldexp(1.0, 40);
  core::learn_link(false, small, small / 2e9);
  EXPECT_DOUBLE_EQ(core::link_seconds(false, 4 * small, 1e10), 4 * small / 1e10);
  EXPECT_NEAR(core::link_seconds(false, small / 4, 1e10), small / 4 / 2e9, 1e-9 * small / 2e9);
  core::learn_link(false, 8 * small, 8 * small / 5e10);
  EXPECT_NEAR(core::link_seconds(false, 8 * small, 1e10), 8 * small / 5e10, 1e-9 * small / 5e10);
  core::learn_link(true, 1000, 1);  // too small to tell a rate
  EXPECT_DOUBLE_EQ(core::link_seconds(true, 1000, 1e10), 1000 / 1e10);
  EXPECT_DOUBLE_EQ(core::gpu_call_seconds("test-call", 5e-4), 5e-4);
  core::learn_gpu_call("test-call", 1.0);  // clamped: a call's fixed cost is not a second
  EXPECT_DOUBLE_EQ(core::gpu_call_seconds("test-call", 5e-4), 2e-2);
  core::learn_gpu_call("test-call", 1e-4);  // a fast call after it: halfway to half the known cost
  EXPECT_NEAR(core::gpu_call_seconds("test-call", 5e-4), std::sqrt(2e-2 * 1e-2), 1e-12);
}

// Samples of a built-in field in memory, as a caller's array would hold them.
std::vector<float> field_samples(const std::string& name, std::array<std::int64_t, 3> dims) {
  auto source = synthetic_field(name, dims);
  std::vector<float> v(std::size_t(dims[0] * dims[1] * dims[2]));
  source->read_slices(0, dims[2], v.data());
  return v;
}

TEST(AutoDevice, TrianglesExpectedFromRowsAreCloseToTheMesh) {
  std::mt19937_64 rng(test::run_seed());
  std::printf("seed %llu\n", (unsigned long long)test::run_seed());
  for (const std::string name : {"sphere", "torus", "gyroid", "tangle"})
    for (int trial = 0; trial < 2; ++trial) {
      const std::array<std::int64_t, 3> dims{std::int64_t(40 + rng() % 90), std::int64_t(40 + rng() % 90),
                                             std::int64_t(40 + rng() % 90)};
      std::vector<float> v = field_samples(name, dims);
      VolumeGeometry g;
      g.dims = dims;
      MemoryVolume volume(g, VoxelType::Float32, v.data(), name);
      const double level = synthetic_field_level(name);
      const double expected = iso::expected_triangles(volume, {level});
      IsosurfaceOptions o;
      o.levels = {level};
      o.device = Device::Cpu;
      const double made = double(extract_isosurface(volume, o).triangle_count());
      SCOPED_TRACE(name + " " + std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" + std::to_string(dims[2]));
      EXPECT_GT(expected, 0.6 * made);
      EXPECT_LT(expected, 1.6 * made);
    }
  // Samples not in memory: the typical density.
  auto streamed = synthetic_field("sphere", {50, 60, 70});
  EXPECT_NEAR(iso::expected_triangles(*streamed, {0.0}), iso::kTypicalTriangleDensity * 50 * 60 * 70, 1e-6);
}

TEST(AutoDevice, TinyHostVolumesStayOnTheCpuAndMeshesMatch) {
  // On a machine with a GPU too: no GPU call (its context, its link) is as short as the CPU's whole job.
  if (cuda_available()) cuda_warm_up(0);
  for (std::int64_t n : {24, 60, 100}) {
    const std::array<std::int64_t, 3> dims{n, n, n};
    std::vector<float> v = field_samples("tangle", dims);
    VolumeGeometry g;
    g.dims = dims;
    MemoryVolume volume(g, VoxelType::Float32, v.data(), "tangle");
    IsosurfaceOptions o;
    o.levels = {0.5};
    IsosurfaceReport rep;
    const TriangleMesh a = extract_isosurface(volume, o, &rep);
    o.device = Device::Cpu;
    const TriangleMesh b = extract_isosurface(volume, o);
    SCOPED_TRACE("n " + std::to_string(n) + ": " + rep.device + "; " + rep.device_choice);
    if (double(n) * n * n < iso::kAlwaysCpuSamples) {
      EXPECT_EQ(rep.device.rfind("cpu", 0), 0u);
      EXPECT_EQ(isosurface_auto_estimate(dims, VoxelType::Float32).device, Device::Cpu);
    }
    EXPECT_EQ(rep.device_choice.empty(), !cuda_available() || double(n) * n * n < iso::kAlwaysCpuSamples);
    EXPECT_EQ(a.positions, b.positions);
    EXPECT_EQ(a.triangles, b.triangles);
  }
  const AutoDeviceEstimate e = isosurface_auto_estimate({256, 256, 256}, VoxelType::Float32);
  if (!cuda_available()) {
    EXPECT_EQ(e.device, Device::Cpu);
    EXPECT_EQ(e.cuda_seconds, 0);
  } else {
    EXPECT_GT(e.cpu_seconds, 0);
    EXPECT_GT(e.cuda_seconds, 0);
  }
  EXPECT_THROW(isosurface_auto_estimate({1, 5, 5}, VoxelType::Float32), Error);
}

TEST(AutoDevice, FieldsComputedOnTheGpuRunThere) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  cuda_warm_up(0);
  // The CPU would compute every sample of the field; the GPU's kernels do, with nothing to upload.
  auto field = synthetic_field("torus", {384, 384, 384});
  IsosurfaceOptions o;
  o.levels = {0.0};
  IsosurfaceReport rep;
  extract_isosurface(*field, o, &rep);
  EXPECT_EQ(rep.device.rfind("cuda", 0), 0u) << rep.device_choice;
}

}  // namespace
}  // namespace parasurf
