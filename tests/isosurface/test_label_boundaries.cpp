// Label-map boundaries (Surface Nets): each region's faces form a closed, consistently oriented surface; unsmoothed,
// the surface is exactly the boundary of the region's voxels (area and volume); smoothed, it approaches the smooth
// shape; faces between two regions exist once.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numbers>
#include <random>
#include <set>

#include "isosurface/iso_checks.hpp"
#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

// The faces of one label, oriented out of it.
TriangleMesh region_of(const TriangleMesh& m, std::int32_t label) {
  TriangleMesh r;
  r.positions = m.positions;
  for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
    const std::uint32_t* f = &m.triangles[3 * std::size_t(t)];
    if (m.face_labels[std::size_t(t)] == label) r.triangles.insert(r.triangles.end(), {f[0], f[1], f[2]});
    else if (m.face_outer_labels[std::size_t(t)] == label) r.triangles.insert(r.triangles.end(), {f[0], f[2], f[1]});
  }
  return r;
}

struct Labelled {
  VolumeGeometry g;
  std::vector<std::int32_t> ids;
  std::int32_t& at(std::int64_t i, std::int64_t j, std::int64_t k) {
    return ids[std::size_t((k * g.dims[1] + j) * g.dims[0] + i)];
  }
  std::int64_t count(std::int32_t l) const { return std::count(ids.begin(), ids.end(), l); }
  double voxel_volume() const { return g.spacing[0] * g.spacing[1] * g.spacing[2]; }
};

Labelled make(std::array<std::int64_t, 3> dims, std::array<double, 3> spacing) {
  Labelled v;
  v.g.dims = dims;
  v.g.spacing = spacing;
  v.ids.assign(std::size_t(dims[0] * dims[1] * dims[2]), 0);
  return v;
}

TEST(LabelBoundaries, UnsmoothedBoxIsExactlyItsVoxelsBoundary) {
  Labelled v = make({12, 10, 11}, {0.5, 1.0, 2.0});
  for (std::int64_t k = 4; k < 8; ++k)
    for (std::int64_t j = 2; j < 7; ++j)
      for (std::int64_t i = 3; i < 9; ++i) v.at(i, j, k) = 7;
  MemoryVolume vol(v.g, VoxelType::Int32, v.ids.data(), "box labels");
  for (Device d : test::devices()) {
  SCOPED_TRACE(device_name(d));
  LabelBoundaryOptions o;
  o.device = d;
  o.smoothing_iterations = 0;
  const TriangleMesh m = extract_label_boundaries(vol, o);
  const auto e = test::iso_edges(m);
  EXPECT_EQ(e.boundary, 0);
  EXPECT_EQ(e.non_manifold, 0);
  EXPECT_EQ(e.unbalanced, 0);
  EXPECT_EQ(test::iso_euler(m), 2);
  EXPECT_NEAR(test::iso_volume(m), 6 * 5 * 4 * v.voxel_volume(), 1e-4) << "normals point out of label 7";
  EXPECT_NEAR(test::iso_area(m), 2 * (3.0 * 5 + 5 * 8.0 + 3.0 * 8), 1e-4);
  for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
    ASSERT_EQ(m.face_labels[std::size_t(t)], 7);
    ASSERT_EQ(m.face_outer_labels[std::size_t(t)], 0);
  }
  ASSERT_EQ(m.group_names, std::vector<std::string>{"labels 7|0"});
  // Smoothed, the box stays closed and keeps its volume within 10 % (plain Laplacian smoothing loses about 40 %).
  o.smoothing_iterations = 32;
  const TriangleMesh s = extract_label_boundaries(vol, o);
  EXPECT_EQ(test::iso_edges(s).boundary, 0);
  EXPECT_NEAR(test::iso_volume(s) / (6 * 5 * 4 * v.voxel_volume()), 1.0, 0.1);
  o.preserve_volume = false;
  EXPECT_LT(test::iso_volume(extract_label_boundaries(vol, o)), 0.8 * 6 * 5 * 4 * v.voxel_volume());
  }
}

TEST(LabelBoundaries, SmoothedBallApproachesTheSphere) {
  const std::uint64_t seed = test::run_seed() ^ 0xba11;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(-0.5, 0.5);
  const double c[3] = {14 + jitter(rng), 13 + jitter(rng), 15 + jitter(rng)}, radius = 9.5 + jitter(rng);
  Labelled v = make({29, 27, 31}, {1, 1, 1});
  for (std::int64_t k = 0; k < 31; ++k)
    for (std::int64_t j = 0; j < 27; ++j)
      for (std::int64_t i = 0; i < 29; ++i)
        if (std::hypot(i - c[0], j - c[1], k - c[2]) <= radius) v.at(i, j, k) = 3;
  MemoryVolume vol(v.g, VoxelType::Int32, v.ids.data(), "ball labels");
  for (Device d : test::devices()) {
  SCOPED_TRACE(device_name(d));
  LabelBoundaryOptions o;
  o.device = d;
  const TriangleMesh m = extract_label_boundaries(vol, o);
  const auto e = test::iso_edges(m);
  EXPECT_EQ(e.boundary, 0) << "seed " << seed;
  EXPECT_EQ(e.non_manifold, 0) << "seed " << seed;
  EXPECT_EQ(test::iso_euler(m), 2) << "seed " << seed;
  const double voxels = double(v.count(3)), r_eff = std::cbrt(3 * voxels / (4 * std::numbers::pi));
  // Volume-preserving smoothing: within 2 % of the voxel count; the staircase's 50 % excess area gone to within 4 %.
  EXPECT_NEAR(test::iso_volume(m) / voxels, 1.0, 0.02) << "seed " << seed;
  EXPECT_NEAR(test::iso_area(m) / (4 * std::numbers::pi * r_eff * r_eff), 1.0, 0.04) << "seed " << seed;
  }
}

TEST(LabelBoundaries, EveryRegionOfARandomMapIsClosedAndFacesAreShared) {
  const std::uint64_t seed = test::run_seed() ^ 0x3e65;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Labelled v = make({19, 17, 21}, {0.7, 1.1, 0.9});
  v.g.origin = {-3, 2, 5};
  // Voronoi regions of random sites with random labels 0–4: junctions of three and four labels.
  std::vector<std::array<double, 4>> sites(9);
  for (auto& s : sites) s = {u(rng) * 19, u(rng) * 17, u(rng) * 21, std::floor(u(rng) * 5)};
  for (std::int64_t k = 0; k < 21; ++k)
    for (std::int64_t j = 0; j < 17; ++j)
      for (std::int64_t i = 0; i < 19; ++i) {
        double best = 1e30;
        for (const auto& s : sites) {
          const double d = std::hypot(i - s[0], j - s[1], k - s[2]);
          if (d < best) best = d, v.at(i, j, k) = std::int32_t(s[3]);
        }
      }
  std::vector<std::uint16_t> narrow(v.ids.begin(), v.ids.end());
  MemoryVolume vol(v.g, VoxelType::UInt16, narrow.data(), "voronoi labels");
  for (Device d : test::devices())
  for (int iterations : {0, 16}) {
    SCOPED_TRACE(device_name(d));
    LabelBoundaryOptions o;
    o.device = d;
    o.smoothing_iterations = iterations;
    LabelBoundaryReport rep;
    const TriangleMesh m = extract_label_boundaries(vol, o, &rep);
    const std::string what = "seed " + std::to_string(seed) + ", " + std::to_string(iterations) + " iterations";
    ASSERT_GT(m.triangle_count(), 0) << what;
    std::set<std::array<std::uint32_t, 3>> seen;
    for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
      ASSERT_GT(m.face_labels[std::size_t(t)], m.face_outer_labels[std::size_t(t)]) << what;
      std::array<std::uint32_t, 3> f = {m.triangles[3 * t], m.triangles[3 * t + 1], m.triangles[3 * t + 2]};
      std::sort(f.begin(), f.end());
      ASSERT_TRUE(f[0] != f[1] && f[1] != f[2]) << what << ": degenerate triangle";
      ASSERT_TRUE(seen.insert(f).second) << what << ": a face appears twice";
    }
    for (std::int32_t label : rep.labels) {
      const TriangleMesh r = region_of(m, label);
      const auto e = test::iso_edges(r);
      EXPECT_EQ(e.boundary, 0) << what << ", label " << label;
      EXPECT_EQ(e.unbalanced, 0) << what << ", label " << label;
      const double expected = label == 0 ? -double(v.count(1) + v.count(2) + v.count(3) + v.count(4))
                                         : double(v.count(label));
      if (iterations == 0)  // the exact voxel boundary (background: the voxels of all the others, turned inside out)
        EXPECT_NEAR(test::iso_volume(r), expected * v.voxel_volume(), 1e-3 * std::fabs(expected)) << what << ", label " << label;
    }
    for (float x : m.positions) ASSERT_TRUE(std::isfinite(x));
  }
}

TEST(LabelBoundaries, ExcludedLabelsAndBadInput) {
  Labelled v = make({8, 8, 8}, {1, 1, 1});
  for (std::int64_t k = 2; k < 6; ++k)
    for (std::int64_t j = 2; j < 6; ++j)
      for (std::int64_t i = 2; i < 6; ++i) v.at(i, j, k) = i < 4 ? 1 : 2;
  MemoryVolume vol(v.g, VoxelType::Int32, v.ids.data(), "two boxes");
  LabelBoundaryOptions o;
  o.exclude_labels = {0};
  const TriangleMesh inner = extract_label_boundaries(vol, o);
  ASSERT_GT(inner.triangle_count(), 0);
  for (std::int64_t t = 0; t < inner.triangle_count(); ++t) {
    EXPECT_EQ(inner.face_labels[std::size_t(t)], 2);
    EXPECT_EQ(inner.face_outer_labels[std::size_t(t)], 1);
  }
  EXPECT_EQ(test::iso_edges(inner).boundary, 16) << "the 4x4 interface is an open square";
  EXPECT_EQ(test::iso_used_vertices(inner), inner.vertex_count()) << "vertices of excluded faces are dropped";
  o.exclude_labels.clear();
  o.relaxation = 2;
  EXPECT_THROW(extract_label_boundaries(vol, o), Error);
  o.relaxation = 0.5;
  o.constraint = 0.5;
  EXPECT_THROW(extract_label_boundaries(vol, o), Error);
  std::vector<float> frac(512, 0.0f);
  frac[77] = 0.25f;
  MemoryVolume fractional(v.g, frac, "fractional");
  try {
    extract_label_boundaries(fractional, {});
    FAIL() << "fractional labels must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fractional"), std::string::npos) << e.what();
  }
}

TEST(LabelBoundaries, CpuAndCudaGiveTheSameMesh) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  const std::uint64_t seed = test::run_seed() ^ 0xc0da5;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> label(0, 6);
  // Random blobs: labels of a coarse random grid, upsampled, so there are regions, junctions and lone voxels.
  Labelled v = make({37, 29, 33}, {0.8, 1.0, 1.3});
  std::vector<std::int32_t> coarse(8 * 8 * 8);
  for (auto& c : coarse) c = label(rng);
  for (std::int64_t k = 0; k < 33; ++k)
    for (std::int64_t j = 0; j < 29; ++j)
      for (std::int64_t i = 0; i < 37; ++i)
        v.at(i, j, k) = (i * 7 + j * 3 + k) % 41 == 0 ? label(rng) : coarse[std::size_t(((k / 5) * 8 + j / 4) * 8 + i / 5)];
  MemoryVolume vol(v.g, VoxelType::Int32, v.ids.data(), "random blobs");
  for (int iterations : {0, 32})
    for (bool exclude : {false, true}) {
      LabelBoundaryOptions o;
      o.smoothing_iterations = iterations;
      if (exclude) o.exclude_labels = {0, 3};
      o.device = Device::Cpu;
      const TriangleMesh c = extract_label_boundaries(vol, o);
      o.device = Device::Cuda;
      LabelBoundaryReport rep;
      const TriangleMesh g = extract_label_boundaries(vol, o, &rep);
      const std::string what = "seed " + std::to_string(seed) + ", " + std::to_string(iterations) + " iterations" +
                               (exclude ? ", excluding 0 and 3" : "");
      EXPECT_EQ(rep.device, "cuda");
      ASSERT_GT(c.triangle_count(), 0) << what;
      EXPECT_EQ(g.triangles, c.triangles) << what;
      EXPECT_EQ(g.positions, c.positions) << what << ": the same float steps on both";
      EXPECT_EQ(g.face_labels, c.face_labels) << what;
      EXPECT_EQ(g.face_outer_labels, c.face_outer_labels) << what;
    }
}

}  // namespace
}  // namespace parasurf
