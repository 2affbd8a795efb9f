// Geometric properties, the multi-level cache, degenerate normals, backend parity and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/scratch.hpp"
#include "parasurf/array.hpp"
#include "parasurf/error.hpp"
#include "parasurf/patches.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

using test::devices;

EvalRequest all_outputs() {
  EvalRequest r;
  r.first_derivatives = r.normals = r.second_derivatives = true;
  return r;
}

TEST(Properties, CornersInterpolateControlPoints) {
  std::mt19937_64 rng(test::run_seed());
  for (Device dev : devices())
    for (Method method : {Method::Brute, Method::Matrix, Method::Mle, Method::Casteljau, Method::Factored}) {
      const int m = 1 + int(rng() % 32), n = 1 + int(rng() % 32);
      const BezierSurface s = make_random_surface(m, n, rng());
      EvalOptions opt;
      opt.method = method;
      opt.device = dev;
      const auto out = evaluate_grid<double>(s, {5, 4}, {}, opt);
      const std::int64_t corner_sample[4] = {0, 3, 16, 19};
      const std::size_t corner_point[4] = {0, std::size_t(n), std::size_t(m) * (n + 1), std::size_t(m) * (n + 1) + n};
      for (int k = 0; k < 4; ++k)
        for (int c = 0; c < 3; ++c) {
          // the matrix method's local power basis rounds; the others reproduce the corner exactly
          const double tol = method == Method::Matrix ? 1e-13 : 0.0;
          EXPECT_NEAR(out.position[c][corner_sample[k]], s.points[3 * corner_point[k] + c], tol)
              << device_name(dev) << " " << method_name(method) << " corner " << k;
        }
    }
}

TEST(Properties, PartitionOfUnity) {
  // A net whose points are all equal evaluates to that point with zero derivatives, for any weights.
  std::mt19937_64 rng(test::run_seed() + 1);
  for (Device dev : devices())
    for (Method method : {Method::Brute, Method::Matrix, Method::Mle, Method::Casteljau, Method::Factored}) {
      BezierSurface s = make_random_surface(1 + int(rng() % 32), 1 + int(rng() % 32), rng(), true);
      for (std::size_t k = 0; k < s.points.size(); ++k) s.points[k] = 0.25 + 0.5 * double(k % 3);
      EvalOptions opt;
      opt.method = method;
      opt.device = dev;
      const auto out = evaluate_grid<double>(s, {9, 7}, all_outputs(), opt);
      for (std::int64_t k = 0; k < out.count; ++k)
        for (int c = 0; c < 3; ++c) {
          ASSERT_NEAR(out.position[c][k], 0.25 + 0.5 * c, 1e-13) << method_name(method);
          ASSERT_NEAR(out.du[c][k], 0.0, 1e-10) << method_name(method);
          ASSERT_NEAR(out.dv[c][k], 0.0, 1e-10) << method_name(method);
        }
    }
}

TEST(Properties, RationalSphereFromBezierView) {
  const std::string path = test::shared_data("bezier/sphere.bv");
  if (path.empty()) GTEST_SKIP() << "../shared/data/bezier/sphere.bv not present";
  const PatchModel model = read_patch_model(path);
  std::vector<BezierSurface> patches;
  for (std::size_t k = 0; k < model.patches.size(); ++k) patches.push_back(patch_surface(model, std::int64_t(k)));
  ASSERT_EQ(patches.size(), 24u);
  for (Device dev : devices())
    for (Method method : {Method::Brute, Method::Matrix, Method::Mle, Method::Casteljau, Method::Factored}) {
      double worst = 0;
      EvalOptions opt;
      opt.method = method;
      opt.device = dev;
      for (const auto& p : patches) {
        ASSERT_TRUE(p.rational());
        const auto out = evaluate_grid<double>(p, {33, 33}, {}, opt);
        for (std::int64_t k = 0; k < out.count; ++k) {
          const double r = std::sqrt(out.position[0][k] * out.position[0][k] + out.position[1][k] * out.position[1][k] +
                                     out.position[2][k] * out.position[2][k]);
          worst = std::max(worst, std::fabs(r - 1.0));
        }
      }
      EXPECT_LE(worst, 1e-9) << device_name(dev) << " " << method_name(method);
    }
}

TEST(Properties, MultiLevelCacheRecomputesOnlyWhatChanged) {
  for (Device dev : devices()) {
    EvalOptions opt;
    opt.method = Method::Mle;
    opt.device = dev;
    SurfaceEvaluator<double> ev(opt);
    const EvalRequest req = all_outputs();
    const BezierSurface a = make_random_surface(7, 5, test::run_seed());
    const BezierSurface b = make_random_surface(7, 5, test::run_seed() + 17);
    ev.evaluate_grid(a, {40, 30}, req);
    const MleCounters c0 = ev.mle_counters();
    EXPECT_EQ(c0.level3_builds, 1);
    EXPECT_EQ(c0.level2_builds, 1);
    // (A) new control points: level 1 only
    const auto reused = ev.evaluate_grid(b, {40, 30}, req);
    const MleCounters c1 = ev.mle_counters();
    EXPECT_EQ(c1.level3_builds, 1);
    EXPECT_EQ(c1.level2_builds, 1);
    EXPECT_EQ(c1.level1_runs, 2);
    const auto fresh = evaluate_grid<double>(b, {40, 30}, req, opt);
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(reused.position[c], fresh.position[c]);
      EXPECT_EQ(reused.normal[c], fresh.normal[c]);
    }
    // (B) new resolution: levels 1-2
    ev.evaluate_grid(b, {41, 30}, req);
    EXPECT_EQ(ev.mle_counters().level3_builds, 1);
    EXPECT_EQ(ev.mle_counters().level2_builds, 2);
    // (C) new degree: all levels
    ev.evaluate_grid(make_random_surface(6, 5, 3), {41, 30}, req);
    EXPECT_EQ(ev.mle_counters().level3_builds, 2);
    EXPECT_EQ(ev.mle_counters().level2_builds, 3);
  }
}

TEST(Properties, CollapsedRowGivesFlaggedFiniteLimitNormal) {
  // Row i = 0 collapsed to one point (a triangular patch as a degenerate square): Sv = 0 along u = 0.
  BezierSurface s = make_random_surface(4, 5, test::run_seed() + 3);
  for (int j = 0; j <= 5; ++j)
    for (int c = 0; c < 3; ++c) s.points[3 * j + c] = s.points[c];
  EvalRequest req;
  req.normals = true;
  for (Device dev : devices())
    for (Method method : {Method::Mle, Method::Factored, Method::Casteljau}) {
      EvalOptions opt;
      opt.device = dev;
      opt.method = method;
      const auto g = evaluate_grid<double>(s, {2001, 11}, req, opt);
      for (std::int64_t j = 0; j < 11; ++j) {
        ASSERT_EQ(g.degenerate[j], 1) << "sample (0," << j << ")";
        EXPECT_EQ(g.degenerate[1 * 11 + j], 0) << "sample (1," << j << ")";
        // The limit normal is the long-double normal just inside the patch (at u = 1e-9: the normal can turn by tens
        // of degrees within the grid's first step where Su and Suv are nearly parallel).
        const test::RefJet r = test::reference_eval(s, 1e-9L, (long double)j / 10);
        long double n[3] = {r.su[1] * r.sv[2] - r.su[2] * r.sv[1], r.su[2] * r.sv[0] - r.su[0] * r.sv[2],
                            r.su[0] * r.sv[1] - r.su[1] * r.sv[0]};
        const long double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        double dot = 0;
        for (int c = 0; c < 3; ++c) dot += g.normal[c][j] * double(n[c] / len);
        EXPECT_GT(dot, 1 - 1e-6) << device_name(dev) << " " << method_name(method) << " column " << j << " (seed "
                                 << test::run_seed() << ")";
      }
    }
}

TEST(Properties, GpuMatchesCpuOnLargeGridAndHybridMatchesGpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  const BezierSurface s = make_random_surface(11, 15, test::run_seed() + 5, true);
  const EvalRequest req = all_outputs();
  const GridSpec grid{1037, 771};
  EvalOptions cpu, gpu, stat, dyn;
  cpu.device = Device::Cpu;
  gpu.device = Device::Cuda;
  gpu.poison_device_buffers = true;
  stat.device = dyn.device = Device::Hybrid;
  stat.hybrid_scheme = HybridScheme::Static;
  stat.cpu_share = 0.3;
  dyn.hybrid_scheme = HybridScheme::Dynamic;
  stat.poison_device_buffers = dyn.poison_device_buffers = true;
  const auto a = evaluate_grid<float>(s, grid, req, cpu);
  const auto b = evaluate_grid<float>(s, grid, req, gpu);
  EvalReport rs, rd;
  const auto c = evaluate_grid<float>(s, grid, req, stat, &rs);
  const auto d = evaluate_grid<float>(s, grid, req, dyn, &rd);
  EXPECT_GT(rs.tiles_cpu, 0);
  EXPECT_GT(rs.tiles_gpu, 0);
  // how the dynamic scheme splits depends on timing (under a sanitizer the CPU may take every tile); its
  // correctness is that the poisoned outputs below all hold the GPU-only values
  EXPECT_NEAR(rs.cpu_share_used, 0.3, 0.05) << "static split ignored --cpu-share";
  // Repeated calls: from the process's second mid-size copy on, the samples come home through pinned staging
  // (pieces of at most 8 MiB, all cores), and once copies have filled the result blocks the calls reuse a few times
  // over, straight into those blocks, pinned (core/scratch.hpp): the same bytes as the driver's copy.
  int straight = 0;  // calls whose samples came home into pinned blocks
  for (int again = 0; again < 40 && straight < 2; ++again) {
    const auto r = evaluate_grid<float>(s, grid, req, gpu);
    straight += core::scratch_pinned(r.position[0].data()) && core::scratch_pinned(r.normal[2].data());
    for (int comp = 0; comp < 3; ++comp) {
      ASSERT_EQ(r.position[comp], b.position[comp]);
      ASSERT_EQ(r.normal[comp], b.normal[comp]);
      ASSERT_EQ(r.du[comp], b.du[comp]);
    }
  }
  if (test::kPooledResults) EXPECT_EQ(straight, 2) << "the repeated calls' samples did not come home into pinned blocks";
  {
    // Arrays over one 32 MiB chunk: two pieces each, the second partial.
    const GridSpec big{2900, 2900};
    EvalRequest positions;
    const auto h = evaluate_grid<float>(s, big, positions, cpu);
    for (int again = 0; again < 2; ++again) {
      const auto r = evaluate_grid<float>(s, big, positions, gpu);
      for (int comp = 0; comp < 3; ++comp)
        for (std::int64_t k = 0; k < big.count(); ++k)
          ASSERT_NEAR(r.position[comp][k], h.position[comp][k], 1e-5 * test::bbox_size(s)) << k;
    }
  }
  const double tol = 1e-5 * test::bbox_size(s);
  for (int comp = 0; comp < 3; ++comp)
    for (std::int64_t k = 0; k < grid.count(); ++k) {
      ASSERT_NEAR(a.position[comp][k], b.position[comp][k], tol) << k;
      ASSERT_NEAR(b.position[comp][k], c.position[comp][k], tol) << k;
      ASSERT_NEAR(b.position[comp][k], d.position[comp][k], tol) << k;
      ASSERT_NEAR(b.normal[comp][k], d.normal[comp][k], 1e-3) << k;
    }
}

// `auto` weighs the CPU against the GPU per call: a small grid into host memory stays on the CPU (a GPU call's
// fixed cost alone is longer), a large one goes to the GPU once its context runs, outputs in GPU memory run there;
// without a GPU everything runs on the CPU. Results equal the chosen device's.
TEST(Properties, AutoKeepsSmallGridsOnTheCpuAndLargeOnesOnTheGpu) {
  const BezierSurface s = make_random_surface(3, 3, test::run_seed() + 11, false);
  EvalRequest req;
  EvalOptions automatic, cpu;
  cpu.device = Device::Cpu;
  EvalReport r;
  const auto small = evaluate_grid<float>(s, {16, 16}, req, automatic, &r);
  EXPECT_EQ(r.device_used, Device::Cpu) << r.device_choice;
  EXPECT_EQ(small.position, evaluate_grid<float>(s, {16, 16}, req, cpu).position);
  const AutoDeviceEstimate tiny = surface_auto_estimate(256, 16, false);
  EXPECT_EQ(tiny.device, Device::Cpu);
  if (!cuda_available()) {
    EXPECT_TRUE(r.device_choice.empty());
    GTEST_SKIP() << "no CUDA device (" << cuda_unavailable_reason() << "): auto ran the CPU, the GPU half skips";
  }
  EXPECT_NE(r.device_choice.find("auto chose cpu"), std::string::npos) << r.device_choice;
  cuda_warm_up(0);
  // A 3000^2 grid's samples: the GPU's kernel and link against about 40 CPU-thread-milliseconds per million
  // points; on a host with very many cores the CPU could win, so the choice is checked against the estimate.
  const AutoDeviceEstimate big = surface_auto_estimate(3000 * 3000, 16, false);
  EXPECT_GT(big.cuda_seconds, 0);
  const auto large = evaluate_grid<float>(s, {3000, 3000}, req, automatic, &r);
  // (or the other side, tried once to measure it: core::decide)
  EXPECT_TRUE(r.device_used == big.device || r.device_choice.find("trying it once") != std::string::npos)
      << r.device_choice;
  EXPECT_FALSE(r.device_choice.empty());
  EXPECT_EQ(large.count, 3000 * 3000);
  // Outputs in GPU memory: the GPU, whatever the size.
  const std::int64_t n = 16 * 16;
  Buffer dev = Buffer::cuda(0, std::size_t(3 * n) * sizeof(float));
  SampleSpans<float> out;
  out.count = n;
  for (int c = 0; c < 3; ++c) out.position[c] = static_cast<float*>(dev.data) + c * n;
  SurfaceEvaluator<float> ev(automatic);
  ev.evaluate_grid_into(s, {16, 16}, req, out);
  EXPECT_EQ(ev.last_report().device_used, Device::Cuda) << ev.last_report().device_choice;
}

// Grids whose output arrays pass 4 GiB run as several launches on the GPU (32-bit offsets in the kernel); a
// small per-launch limit makes the same split here, and the result must equal one launch bit for bit.
TEST(Properties, GpuGridSplitIntoLaunchesMatchesOneLaunch) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  const BezierSurface s = make_random_surface(6, 9, test::run_seed() + 9, false);
  const GridSpec grid{517, 389};
  for (int set = 0; set < 3; ++set) {
    EvalRequest req;
    req.normals = set != 1;
    req.first_derivatives = set != 0;
    EvalOptions one, split;
    one.device = split.device = Device::Cuda;
    one.poison_device_buffers = split.poison_device_buffers = true;
    split.gpu_launch_bytes = std::uint64_t(grid.cols) * sizeof(float) * 37;  // 37 rows per launch
    one.gpu_fold_rows = false;  // the folded kernel needs one launch; this compares the unfolded one split
    const auto a = evaluate_grid<float>(s, grid, req, one);
    const auto b = evaluate_grid<float>(s, grid, req, split);
    SCOPED_TRACE(testing::Message() << "output set " << set);
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(a.position[c], b.position[c]);
      EXPECT_EQ(a.du[c], b.du[c]);
      EXPECT_EQ(a.normal[c], b.normal[c]);
      for (float x : b.position[c]) ASSERT_TRUE(std::isfinite(x));
    }
    EXPECT_EQ(a.degenerate, b.degenerate);
  }
}

// The tensor-core path (float, 3xTF32) against the FP32 kernel: every k-step layout (u-degrees 1..19 cover 1 to
// 5 units of 4 terms), rational and not, even and odd row lengths (paired and single stores), each compiled-in
// output set. Both are float-accurate, so they agree to the conformance tolerance: positions 1e-5 L, first
// derivatives 1e-5 L d, normal directions 1e-4 where both are regular; the same degenerate flags.
TEST(Properties, GpuTensorCorePathMatchesFp32Kernel) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  std::mt19937_64 rng(test::run_seed() + 10);
  const int degrees[] = {1, 3, 4, 7, 8, 11, 12, 15, 16, 19};
  for (int i = 0; i < 10; ++i) {
    const int m = degrees[i], n = 1 + int(rng() % 32);
    const bool rational = i % 3 == 1;
    BezierSurface s = make_random_surface(m, n, rng(), rational);
    if (i == 5)  // a collapsed first row: degenerate normals along it
      for (int j = 0; j <= n; ++j)
        for (int c = 0; c < 3; ++c) s.points[3 * j + c] = s.points[c];
    const GridSpec grid = i % 2 == 0 ? GridSpec{517, 389} : GridSpec{130, 66};
    const int set = i % 4;  // positions; + normals; + first derivatives; + both
    EvalRequest req;
    req.normals = set == 1 || set == 3;
    req.first_derivatives = set >= 2;
    EvalOptions tc, fp32;
    tc.device = fp32.device = Device::Cuda;
    tc.method = fp32.method = Method::Factored;
    tc.poison_device_buffers = fp32.poison_device_buffers = true;
    tc.gpu_tensor_cores = true;
    EvalReport rt, rf;
    const auto a = evaluate_grid<float>(s, grid, req, tc, &rt);
    const auto b = evaluate_grid<float>(s, grid, req, fp32, &rf);
    SCOPED_TRACE(testing::Message() << "degrees " << m << "x" << n << (rational ? " rational" : "") << ", output set "
                                    << set << ", grid " << grid.rows << "x" << grid.cols);
    EXPECT_FALSE(rf.gpu_tensor_cores);
    if (!rt.gpu_tensor_cores) GTEST_SKIP() << "this GPU or build has no TF32 tensor cores (compute capability < 8.0)";
    const double L = test::bbox_size(s), d = std::max(m, n);
    for (int c = 0; c < 3; ++c) {
      ASSERT_EQ(a.position[c].size(), b.position[c].size());
      for (std::size_t k = 0; k < a.position[c].size(); ++k)
        ASSERT_NEAR(a.position[c][k], b.position[c][k], 1e-5 * L) << "sample " << k;
      for (std::size_t k = 0; k < a.du[c].size(); ++k) {
        ASSERT_NEAR(a.du[c][k], b.du[c][k], 1e-5 * L * d) << "sample " << k;
        ASSERT_NEAR(a.dv[c][k], b.dv[c][k], 1e-5 * L * d) << "sample " << k;
      }
    }
    EXPECT_EQ(a.degenerate, b.degenerate);
    for (std::size_t k = 0; k < a.degenerate.size(); ++k) {
      const double dot = a.normal[0][k] * b.normal[0][k] + a.normal[1][k] * b.normal[1][k] +
                         a.normal[2][k] * b.normal[2][k];
      if (!a.degenerate[k] && !b.degenerate[k]) ASSERT_GT(dot, 1.0 - 1e-4) << "sample " << k;
      for (int c = 0; c < 3; ++c) ASSERT_TRUE(std::isfinite(a.normal[c][k])) << "sample " << k;
    }
    if (i == 5) EXPECT_EQ(a.degenerate[0], 1) << "the collapsed row's normals are not flagged";
  }
}

// Whole grids fold rows u and 1 - u into one contraction on the GPU. Against the unfolded kernel: odd and even
// term counts (the middle term), odd and even row counts (the middle row), grids of one block and of several,
// every compiled-in output set, rational and not, a collapsed first or last row. Tolerances as in conformance:
// positions 1e-5 L (double 1e-12 L), first derivatives times d, normal directions 1e-4 (1e-10) where regular;
// the edge rows' positions bit for bit.
template <class T> void folded_matches_unfolded() {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  std::mt19937_64 rng(test::run_seed() + 11);
  const int degrees[] = {1, 2, 3, 4, 15, 16, 31, 32};
  const GridSpec grids[] = {{2, 33}, {3, 7}, {64, 40}, {65, 97}, {129, 130}, {130, 129}, {517, 389}, {1001, 64}};
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-12, ntol = sizeof(T) == 4 ? 1e-4 : 1e-10;
  for (int i = 0; i < 8; ++i) {
    const int m = degrees[i], n = 1 + int(rng() % 32);
    const bool rational = i % 3 == 1;
    BezierSurface s = make_random_surface(m, n, rng(), rational);
    const bool collapse = i == 5 || i == 6;  // first row, then last row: flagged degenerate normals
    const int row = i == 5 ? 0 : m;
    if (collapse)
      for (int j = 0; j <= n; ++j)
        for (int c = 0; c < 3; ++c) s.points[3 * (row * (n + 1) + j) + c] = s.points[3 * row * (n + 1) + c];
    const GridSpec grid = grids[i];
    const int set = i % 4;  // positions; + normals; + first derivatives; + both
    EvalRequest req;
    req.normals = set == 1 || set == 3 || collapse;
    req.first_derivatives = set >= 2;
    EvalOptions folded, plain;
    folded.device = plain.device = Device::Cuda;
    folded.method = plain.method = Method::Factored;
    folded.poison_device_buffers = plain.poison_device_buffers = true;
    plain.gpu_fold_rows = false;
    EvalReport rf, rp;
    const auto a = evaluate_grid<T>(s, grid, req, folded, &rf);
    const auto b = evaluate_grid<T>(s, grid, req, plain, &rp);
    SCOPED_TRACE(testing::Message() << "degrees " << m << "x" << n << (rational ? " rational" : "") << ", output set "
                                    << set << ", grid " << grid.rows << "x" << grid.cols);
    EXPECT_TRUE(rf.gpu_rows_folded);
    EXPECT_FALSE(rp.gpu_rows_folded);
    const double L = test::bbox_size(s), d = std::max(m, n);
    for (int c = 0; c < 3; ++c) {
      ASSERT_EQ(a.position[c].size(), b.position[c].size());
      for (std::size_t k = 0; k < a.position[c].size(); ++k)
        ASSERT_NEAR(a.position[c][k], b.position[c][k], tol * L) << "sample " << k;
      for (std::size_t k = 0; k < a.du[c].size(); ++k) {
        ASSERT_NEAR(a.du[c][k], b.du[c][k], tol * L * d) << "sample " << k;
        ASSERT_NEAR(a.dv[c][k], b.dv[c][k], tol * L * d) << "sample " << k;
      }
    }
    // the edge rows u = 0 and 1 are the boundary curves, exactly as the unfolded kernel gives them
    const std::int64_t last = (grid.rows - 1) * grid.cols;
    for (int c = 0; c < 3; ++c)
      for (std::int64_t j = 0; j < grid.cols; ++j) {
        ASSERT_EQ(a.position[c][j], b.position[c][j]) << "row 0, column " << j;
        ASSERT_EQ(a.position[c][last + j], b.position[c][last + j]) << "last row, column " << j;
      }
    EXPECT_EQ(a.degenerate, b.degenerate);
    for (std::size_t k = 0; k < a.degenerate.size(); ++k) {
      const double dot = a.normal[0][k] * b.normal[0][k] + a.normal[1][k] * b.normal[1][k] +
                         a.normal[2][k] * b.normal[2][k];
      if (!a.degenerate[k] && !b.degenerate[k]) ASSERT_GT(dot, 1.0 - ntol) << "sample " << k;
      for (int c = 0; c < 3; ++c) ASSERT_TRUE(std::isfinite(a.normal[c][k])) << "sample " << k;
    }
    if (collapse) {
      const std::int64_t first = i == 5 ? 0 : (grid.rows - 1) * grid.cols;
      for (std::int64_t j = 0; j < grid.cols; ++j)
        ASSERT_EQ(a.degenerate[first + j], 1) << "the collapsed row's normal at column " << j << " is not flagged";
    }
  }
}

TEST(Properties, GpuFoldedRowsMatchUnfoldedKernelFloat) { folded_matches_unfolded<float>(); }
TEST(Properties, GpuFoldedRowsMatchUnfoldedKernelDouble) { folded_matches_unfolded<double>(); }

TEST(BadInput, ApiRejectsWithClearMessages) {
  auto expect_error = [](auto&& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  BezierSurface s = make_random_surface(3, 3, 1);
  expect_error([&] { evaluate_grid<float>(s, {1, 10}, {}); }, "outside 2..");
  expect_error([&] { evaluate_grid<float>(s, {10, 70000}, {}); }, "outside 2..");
  BezierSurface big = s;
  big.degree_u = 33;
  expect_error([&] { evaluate_grid<float>(big, {4, 4}, {}); }, "outside 1..32");
  BezierSurface nan = s;
  nan.points[5] = std::numeric_limits<double>::quiet_NaN();
  expect_error([&] { evaluate_grid<float>(nan, {4, 4}, {}); }, "non-finite");
  BezierSurface w = make_random_surface(3, 3, 1, true);
  w.weights[2] = -1;
  expect_error([&] { evaluate_grid<float>(w, {4, 4}, {}); }, "weight 2");
  const std::vector<double> uv{0.5, 1.5};
  expect_error([&] { evaluate_points<float>(s, uv, {}); }, "outside [0,1]");
  expect_error([&] { parse_method("fastest"); }, "unknown method");
  expect_error([&] { parse_device("tpu"); }, "unknown device");
  // 65536^2 samples of every double output (21 numbers each): 0.7 TB, more than any machine here; refused before
  // allocating
  EvalRequest req;
  req.normals = req.first_derivatives = req.second_derivatives = true;
  expect_error([&] { evaluate_grid<double>(s, {65536, 65536}, req); }, "needs");
}

}  // namespace
}  // namespace parasurf
