// Label volumes (object identification), excluded labels and per-vertex scalars of a second volume, on every
// backend and slab split.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "isosurface/iso_checks.hpp"
#include "isosurface/mc_kernels.hpp"
#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

using test::devices;

// Two balls of random centres and radii, apart; labels: the nearer centre (1 or 2); scalars: a random linear map.
struct TwoBalls {
  VolumeGeometry g;
  double c[2][3], r[2], lin[4];
  std::vector<float> field, scalars;
  std::vector<std::uint16_t> labels, stripes;
  explicit TwoBalls(std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-0.15, 0.15), rad(0.25, 0.4), coef(-2, 2);
    g.dims = {41, 23, 29};
    g.spacing = {0.1, 0.09, 0.11};
    g.origin = {-2, -1, -1.5};
    for (int b = 0; b < 2; ++b) {
      c[b][0] = (b ? 1.0 : -1.0) + u(rng);
      c[b][1] = u(rng);
      c[b][2] = u(rng);
      r[b] = rad(rng);
    }
    for (double& x : lin) x = coef(rng);
    const std::size_t n = std::size_t(g.voxel_count());
    field.resize(n);
    scalars.resize(n);
    labels.resize(n);
    stripes.resize(n);
    for (std::int64_t k = 0; k < g.dims[2]; ++k)
      for (std::int64_t j = 0; j < g.dims[1]; ++j)
        for (std::int64_t i = 0; i < g.dims[0]; ++i) {
          const auto p = g.world(double(i), double(j), double(k));
          const std::size_t at = std::size_t((k * g.dims[1] + j) * g.dims[0] + i);
          const double d0 = distance(p, 0), d1 = distance(p, 1);
          field[at] = float(std::max(r[0] - d0, r[1] - d1));
          labels[at] = d0 < d1 ? 1 : 2;
          stripes[at] = std::uint16_t(1 + (i / 4 + j / 3 + k / 2) % 4);
          scalars[at] = float(value(p.data()));
        }
  }
  double distance(const std::array<double, 3>& p, int b) const {
    return std::sqrt((p[0] - c[b][0]) * (p[0] - c[b][0]) + (p[1] - c[b][1]) * (p[1] - c[b][1]) +
                     (p[2] - c[b][2]) * (p[2] - c[b][2]));
  }
  template <class P>
  double value(const P& p) const {
    return lin[0] * p[0] + lin[1] * p[1] + lin[2] * p[2] + lin[3];
  }
};

TEST(IsosurfaceLabels, CellLabelIsTheMostFrequentInsideLabel) {
  std::uint8_t cf[8] = {};
  std::int32_t lab[8] = {7, 3, 3, 5, 5, 9, 9, 9};
  EXPECT_EQ(mc::cell_label(cf, lab), 7) << "no inside corner: corner 0";
  cf[1] = cf[3] = cf[4] = mc::kInside;  // inside labels 3, 5, 5
  EXPECT_EQ(mc::cell_label(cf, lab), 5);
  cf[2] = mc::kInside;  // 3, 3, 5, 5: a tie goes to the smaller label
  EXPECT_EQ(mc::cell_label(cf, lab), 3);
  cf[5] = cf[6] = cf[7] = mc::kInside;  // 9 three times
  EXPECT_EQ(mc::cell_label(cf, lab), 9);
}

TEST(IsosurfaceLabels, TrianglesCarryTheirObjectsLabelAndScalarsInterpolate) {
  const std::uint64_t seed = test::run_seed() ^ 0x1abe1;
  std::mt19937_64 rng(seed);
  const TwoBalls balls(rng);
  MemoryVolume field(balls.g, balls.field, "two balls");
  MemoryVolume labels(balls.g, VoxelType::UInt16, balls.stripes.data(), "striped labels");
  MemoryVolume scalars(balls.g, balls.scalars, "scalars");
  TriangleMesh reference;
  for (Device d : devices())
    for (std::int64_t slab : {0, 1, 4, 7}) {
      IsosurfaceOptions o;
      o.levels = {0.0};
      o.device = d;
      o.slab_slices = slab;
      o.labels = &labels;
      o.scalars = &scalars;
      const TriangleMesh m = extract_isosurface(field, o);
      const std::string what = std::string(device_name(d)) + ", slabs of " + std::to_string(slab) + ", seed " + std::to_string(seed);
      ASSERT_GT(m.triangle_count(), 200) << what;
      ASSERT_EQ(m.face_labels.size(), std::size_t(m.triangle_count())) << what;
      ASSERT_EQ(m.vertex_values.size(), std::size_t(m.vertex_count())) << what;
      // Every triangle carries the most frequent label among the inside corners of the cell holding its centroid.
      std::int64_t wrong = 0;
      std::vector<std::int64_t> count(5, 0);
      for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
        std::int64_t cell[3];
        for (int a = 0; a < 3; ++a) {
          double x = 0;
          for (int c = 0; c < 3; ++c) x += m.positions[3 * std::size_t(m.triangles[3 * t + c]) + a] / 3.0;
          cell[a] = std::int64_t(std::floor((x - balls.g.origin[a]) / balls.g.spacing[a]));
        }
        int votes[5] = {};
        for (int c = 0; c < 8; ++c) {
          const std::size_t at = std::size_t(((cell[2] + (c >> 2)) * balls.g.dims[1] + cell[1] + (c >> 1 & 1)) *
                                                 balls.g.dims[0] + cell[0] + (c & 1));
          if (balls.field[at] >= 0) ++votes[balls.stripes[at]];
        }
        const int expected = int(std::max_element(votes, votes + 5) - votes);  // the first, so the smaller, on a tie
        wrong += m.face_labels[std::size_t(t)] != expected;
        ++count[std::size_t(std::clamp(m.face_labels[std::size_t(t)], 0, 4))];
      }
      EXPECT_EQ(wrong, 0) << what;
      for (int l = 1; l <= 4; ++l) EXPECT_GT(count[std::size_t(l)], 0) << what << ": label " << l;
      ASSERT_EQ(m.group_names.size(), 4u) << what;
      EXPECT_EQ(m.group_names[0], "label 1");
      EXPECT_EQ(m.group_colors.size(), 12u);
      for (std::int64_t t = 0; t < m.triangle_count(); ++t)
        ASSERT_EQ(m.face_groups[std::size_t(t)], m.face_labels[std::size_t(t)] - 1) << what;
      // A linear scalar field interpolates exactly along edges: float rounding only.
      double worst = 0;
      for (std::int64_t v = 0; v < m.vertex_count(); ++v)
        worst = std::max(worst, std::fabs(double(m.vertex_values[std::size_t(v)]) - balls.value(&m.positions[3 * std::size_t(v)])));
      EXPECT_LT(worst, 1e-4) << what;
      if (reference.triangles.empty()) reference = m;
      EXPECT_EQ(m.triangles, reference.triangles) << what;
      EXPECT_EQ(m.face_labels, reference.face_labels) << what;
      double worst_value = 0;
      for (std::size_t v = 0; v < m.vertex_values.size(); ++v)
        worst_value = std::max(worst_value, double(std::fabs(m.vertex_values[v] - reference.vertex_values[v])));
      EXPECT_LT(worst_value, 1e-5) << what;
    }
}

TEST(IsosurfaceLabels, ExcludedLabelLeavesTheOtherObjectClosed) {
  const std::uint64_t seed = test::run_seed() ^ 0xe8c1;
  std::mt19937_64 rng(seed);
  const TwoBalls balls(rng);
  MemoryVolume field(balls.g, balls.field, "two balls");
  MemoryVolume labels(balls.g, VoxelType::UInt16, balls.labels.data(), "labels");
  for (Device d : devices()) {
    IsosurfaceOptions o;
    o.levels = {0.0};
    o.device = d;
    o.labels = &labels;
    const TriangleMesh both = extract_isosurface(field, o);
    o.exclude_labels = {2};
    o.slab_slices = 5;
    const TriangleMesh one = extract_isosurface(field, o);
    const auto ones = std::count(both.face_labels.begin(), both.face_labels.end(), 1);
    EXPECT_EQ(one.triangle_count(), ones) << device_name(d) << ", seed " << seed;
    EXPECT_TRUE(std::all_of(one.face_labels.begin(), one.face_labels.end(), [](int l) { return l == 1; }));
    const auto e = test::iso_edges(one);
    EXPECT_EQ(e.boundary, 0) << "ball 1 alone is closed";
    EXPECT_EQ(e.unbalanced, 0);
    EXPECT_EQ(test::iso_used_vertices(one), one.vertex_count()) << "vertices of excluded triangles are removed";
    EXPECT_EQ(test::iso_euler(one), 2);
    EXPECT_EQ(one.group_names.size(), 1u);
  }
}

TEST(IsosurfaceLabels, BadLabelVolumesAreRefused) {
  auto v = synthetic_field("sphere", {12, 12, 12});
  IsosurfaceOptions o;
  o.levels = {0.0};
  VolumeGeometry other;
  other.dims = {12, 12, 11};
  std::vector<std::int32_t> ids(12 * 12 * 11, 1);
  MemoryVolume small(other, VoxelType::Int32, ids.data(), "small labels");
  o.labels = &small;
  try {
    extract_isosurface(*v, o);
    FAIL() << "a label volume of another size must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("small labels"), std::string::npos) << e.what();
  }
  VolumeGeometry same;
  same.dims = {12, 12, 12};
  std::vector<float> frac(12 * 12 * 12, 1.0f);
  frac[100] = 1.5f;
  MemoryVolume fractional(same, frac, "fractional labels");
  o.labels = &fractional;
  EXPECT_THROW(extract_isosurface(*v, o), Error);
  o.labels = nullptr;
  o.exclude_labels = {1};
  EXPECT_THROW(extract_isosurface(*v, o), Error);
  o.exclude_labels.clear();
  o.scalars = &small;
  EXPECT_THROW(extract_isosurface(*v, o), Error);
}

}  // namespace
}  // namespace parasurf
