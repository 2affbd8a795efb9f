// T-junctions in a patch model: neighbours split in the file (once, twice, nested, raised in degree, with seams that
// agree only to 1e-14) weld into one closed surface with no crack, uniform and adaptive, on every backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "mesh_checks.hpp"
#include "patch_fixtures.hpp"
#include "parasurf/tessellate.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

double enclosed_volume(const PatchMesh& m) {
  double v = 0;
  for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
    const double* a = &m.positions[3 * std::size_t(m.triangles[3 * t])];
    const double* b = &m.positions[3 * std::size_t(m.triangles[3 * t + 1])];
    const double* c = &m.positions[3 * std::size_t(m.triangles[3 * t + 2])];
    v += a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) + a[2] * (b[0] * c[1] - b[1] * c[0]);
  }
  return v / 6;
}

// The pillow with two opposite faces split in the file at random parameters: face 0 in two along u; face 1 in two
// along v, its first half again in two along u, its second half raised to degrees (5, 4); every coordinate then
// moved by up to 1e-14 of itself. Each long side is traced by two shorter ones.
struct SplitPillow {
  PatchModel model;
  int t_junctions = 0, pieces = 0;
};

SplitPillow split_pillow(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> cut(0.2, 0.8), jitter(-1.0, 1.0);
  SplitPillow s;
  s.model = test::pillow();
  test::split(s.model, 0, true, cut(rng));   // face 0: two halves along u; its neighbours' sides at v = 0, 1 are long
  s.t_junctions += 2;
  test::split(s.model, 1, false, cut(rng));  // face 1: halves along v (the second half is the new last patch)
  const std::size_t second_half = s.model.patches.size() - 1;
  test::split(s.model, 1, true, cut(rng));   // its first half in two along u
  test::elevate(s.model, second_half, 5, 4);
  // face 1: its side at v = 0 (two quarters), at u = 0 and u = 1 (a quarter and the second half each), and the
  // second half's side against the two quarters
  s.t_junctions += 4;
  s.pieces = 2 * s.t_junctions;
  for (std::size_t k = 0; k < s.model.points.size(); ++k)
    if (k % 4 != 3) s.model.points[k] += 1e-14 * jitter(rng) * std::max(1.0, std::abs(s.model.points[k]));
  return s;
}

TEST(TJunctions, SplitNeighboursWeldIntoOneClosedSurface) {
  std::mt19937_64 rng(test::run_seed());
  const SplitPillow split = split_pillow(rng);
  const PatchModel whole = test::pillow();
  TessellationOptions fine;
  fine.device = Device::Cpu;
  fine.resolution = 48;
  const double volume = enclosed_volume(tessellate(whole, fine));
  for (Device dev : test::devices())
    for (double tol : {0.0, 1e-3}) {
      SCOPED_TRACE(std::string(device_name(dev)) + (tol > 0 ? ", adaptive" : ", uniform"));
      TessellationOptions o;
      o.device = dev;
      o.resolution = 6;
      o.tolerance = tol;
      TessellationReport rep;
      const PatchMesh mesh = tessellate(split.model, o, &rep);
      const auto census = test::edge_census(mesh);
      EXPECT_EQ(census.boundary, 0);
      EXPECT_EQ(census.non_manifold, 0);
      EXPECT_EQ(census.misoriented, 0);
      EXPECT_EQ(test::euler_characteristic(mesh), 2);
      EXPECT_EQ(rep.open_edges, 0);
      EXPECT_EQ(rep.t_junction_edges, split.t_junctions);
      EXPECT_EQ(rep.t_junction_pieces, split.pieces);
      // the same solid as the unsplit pillow (faces outward: positive volume)
      EXPECT_NEAR(enclosed_volume(mesh), volume, (tol > 0 ? 0.02 : 0.05) * volume);
      if (tol > 0) {
        const auto dev_sampled = sampled_patch_deviation(split.model, o, 6);
        for (std::size_t p = 0; p < dev_sampled.size(); ++p) EXPECT_LE(dev_sampled[p], tol) << "patch " << p;
      }
    }
}

// A long side's vertices are its pieces' vertices: on the split edge every mesh vertex is one of the pieces'
// samples, at the same position whichever patch wrote it (the mesh has one vertex there, not two close ones).
TEST(TJunctions, LongSideSharesThePiecesVertices) {
  std::mt19937_64 rng(test::run_seed() + 1);
  const SplitPillow split = split_pillow(rng);
  for (int r : {1, 2, 5, 9}) {
    TessellationOptions o;
    o.device = Device::Cpu;
    o.resolution = r;
    o.crease_angle_degrees = 180;  // one normal per vertex, so that duplicated positions would show
    const PatchMesh mesh = tessellate(split.model, o);
    const auto census = test::edge_census(mesh);
    EXPECT_EQ(census.boundary, 0) << "resolution " << r;
    EXPECT_EQ(test::euler_characteristic(mesh), 2) << "resolution " << r;
    // no two used vertices at one position
    std::vector<std::array<double, 3>> used;
    std::vector<std::uint8_t> seen(std::size_t(mesh.vertex_count()), 0);
    for (std::uint32_t v : mesh.triangles)
      if (!seen[v]) seen[v] = 1, used.push_back({mesh.positions[3 * v], mesh.positions[3 * v + 1], mesh.positions[3 * v + 2]});
    std::sort(used.begin(), used.end());
    std::int64_t close = 0;
    for (std::size_t k = 1; k < used.size(); ++k)
      close += std::abs(used[k][0] - used[k - 1][0]) < 1e-9 && std::abs(used[k][1] - used[k - 1][1]) < 1e-9 &&
               std::abs(used[k][2] - used[k - 1][2]) < 1e-9;
    EXPECT_EQ(close, 0) << "resolution " << r;
  }
}

// Rational patches (the sphere and torus of ../shared/data, skipped without them): one patch cut along u, then its
// first part along v, in homogeneous coordinates; the model stays closed, with the four long sides stitched.
TEST(TJunctions, RationalModelsSplitInTheFileStayClosed) {
  for (const char* name : {"bezier/sphere.bv", "bezier/tor.bv"}) {
    const std::string path = test::shared_data(name);
    if (path.empty()) GTEST_SKIP() << name << " not found (set PARASURF_DATA)";
    PatchModel m = read_patch_model(path);
    ASSERT_TRUE(m.patches[0].rational && m.patches[0].kind == PatchKind::Tensor) << name;
    std::mt19937_64 rng(test::run_seed() + 2);
    std::uniform_real_distribution<double> cut(0.2, 0.8);
    test::split(m, 0, true, cut(rng));
    test::split(m, 0, false, cut(rng));
    for (double tol : {0.0, 1e-3}) {
      TessellationOptions o;
      o.device = Device::Cpu;
      o.resolution = 6;
      o.tolerance = tol;
      TessellationReport rep;
      const PatchMesh mesh = tessellate(m, o, &rep);
      const auto census = test::edge_census(mesh);
      EXPECT_EQ(census.boundary, 0) << name << " tolerance " << tol;
      EXPECT_EQ(census.non_manifold, 0) << name;
      EXPECT_EQ(rep.open_edges, 0) << name;
      // the neighbours at v = 0, v = 1 and u = 0, and the second half's side against the two quarters
      EXPECT_EQ(rep.t_junction_edges, 4) << name;
      EXPECT_EQ(test::euler_characteristic(mesh), std::string(name) == "bezier/sphere.bv" ? 2 : 0) << name;
    }
  }
}

// Where two neighbours both split their shared edge, at different places, no side is a chain of the other's
// pieces: those four sides stay open and are reported so (the boundary has exactly their segments), while the
// other two long sides the splits make are stitched.
TEST(TJunctions, OverlapsThatAreNoChainStayOpen) {
  PatchModel m = test::pillow();
  // face 0 (x = -1; u along y, v along z) cut at y = -0.2; face 4 (z = -1; u along x, v along y) cut at y = 0.2:
  // both cut the edge x = z = -1
  test::split(m, 0, true, 0.4);
  test::split(m, 4, false, 0.6);
  TessellationOptions o;
  o.device = Device::Cpu;
  o.resolution = 4;
  TessellationReport rep;
  const PatchMesh mesh = tessellate(m, o, &rep);
  EXPECT_EQ(rep.t_junction_edges, 2);  // face 0's other cut side (on face 5), face 4's (on face 1)
  EXPECT_EQ(rep.open_edges, 4);
  EXPECT_EQ(test::edge_census(mesh).boundary, rep.open_side_segments);
  EXPECT_EQ(rep.open_side_segments, 4 * 4);
}

}  // namespace
}  // namespace parasurf
