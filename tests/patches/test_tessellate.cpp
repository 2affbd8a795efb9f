// Tessellation: welded closed manifolds on the sphere and torus, the teapot's topology, per-patch agreement with
// the surface engine, adaptive tolerance without cracks, CPU and CUDA batches against each other.
#include <cstdlib>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "mesh_checks.hpp"
#include "patch_fixtures.hpp"
#if PARASURF_HAVE_CUDA
#include "core/device_buffer.hpp"
#endif
#include "patches/plan.hpp"
#include "parasurf/bezier.hpp"
#include "parasurf/device.hpp"
#include "parasurf/tessellate.hpp"
#include "support.hpp"
#include "team.hpp"

namespace parasurf {
namespace {

PatchModel shared_model(const std::string& name) {
  const std::string path = test::shared_data("bezier/" + name);
  if (path.empty()) return {};
  return read_patch_model(path);
}

// Patches of `from` appended to `to` (control points copied, groups dropped).
void append_patches(PatchModel& to, const PatchModel& from) {
  for (auto p : from.patches) {
    p.offset += std::int64_t(to.points.size() / 4);
    p.group = -1;
    to.patches.push_back(p);
  }
  to.points.insert(to.points.end(), from.points.begin(), from.points.end());
}

#define REQUIRE_MODEL(m, file)                                                        \
  const PatchModel m = shared_model(file);                                            \
  if (m.patches.empty()) GTEST_SKIP() << "shared data bezier/" file " not found (set PARASURF_DATA)"

using test::devices;

// A team (threads standing in for MPI ranks) evaluates its shares of the patches, and of the tolerance planning's
// checks; member 0 assembles exactly the single-process mesh, the others return nothing.
TEST(Tessellate, TeamsShareThePatchesAndGiveTheSameMesh) {
  const PatchModel teapot = utah_teapot();
  for (Device dev : devices())
    for (double tol : {0.0, 2e-3}) {
      TessellationOptions o;
      o.resolution = 13;
      o.tolerance = tol;
      o.device = dev;
      o.threads = 1;
      const PatchMesh alone = tessellate(teapot, o);
      ASSERT_GT(alone.triangle_count(), 0);
      for (int members : {2, 3, 5, 40}) {  // 40: more members than patches
        SCOPED_TRACE(std::string(device_name(dev)) + ", tolerance " + std::to_string(tol) + ", " + std::to_string(members) + " members");
        test::ThreadTeam team(members);
        std::vector<PatchMesh> got(static_cast<std::size_t>(members));
        std::vector<TessellationReport> reports(static_cast<std::size_t>(members));
        team.run([&](int member) {
          TessellationOptions mo = o;
          mo.team = team.tessellation(member);
          got[std::size_t(member)] = tessellate(teapot, mo, &reports[std::size_t(member)]);
        });
        EXPECT_EQ(got[0].positions, alone.positions);
        EXPECT_EQ(got[0].normals, alone.normals);
        EXPECT_EQ(got[0].triangles, alone.triangles);
        EXPECT_EQ(got[0].triangle_normals, alone.triangle_normals);
        std::int64_t shared = 0;
        for (int m = 0; m < members; ++m) {
          if (m > 0) EXPECT_EQ(got[std::size_t(m)].triangle_count(), 0);
          if (members <= 32) EXPECT_GT(reports[std::size_t(m)].own_patches, 0);
          EXPECT_LT(reports[std::size_t(m)].own_patches, 32);
          shared += reports[std::size_t(m)].own_patches;
        }
        EXPECT_EQ(shared, 32);
      }
    }
}

TEST(Tessellate, SphereIsClosedManifoldOnTheUnitSphere) {
  REQUIRE_MODEL(sphere, "sphere.bv");
  for (Device dev : devices())
    for (double tol : {0.0, 1e-3}) {
      TessellationOptions o;
      o.resolution = 12;
      o.tolerance = tol;
      o.device = dev;
      const PatchMesh m = tessellate(sphere, o);
      const auto census = test::edge_census(m);
      EXPECT_EQ(census.boundary, 0) << device_name(dev) << " tol " << tol;
      EXPECT_EQ(census.non_manifold, 0);
      EXPECT_EQ(census.misoriented, 0);
      EXPECT_EQ(test::euler_characteristic(m), 2);
      double worst = 0, inward = 0;
      for (std::int64_t v = 0; v < m.vertex_count(); ++v) {
        const double* p = &m.positions[3 * v];
        worst = std::max(worst, std::abs(std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) - 1.0));
      }
      // outward: every normal points away from the centre
      for (std::int64_t k = 0; k < m.triangle_count() * 3; ++k) {
        const double* p = &m.positions[3 * std::size_t(m.triangles[k])];
        const double* n = &m.normals[3 * std::size_t(m.triangle_normals[k])];
        inward = std::min(inward, p[0] * n[0] + p[1] * n[1] + p[2] * n[2]);
      }
      EXPECT_LE(worst, 1e-9) << device_name(dev);
      EXPECT_GT(inward, -1e-6) << "a normal points inward";
    }
}

// Seams come from geometry: shared points that differ in their last digits, and neighbours of different degree,
// still weld into a closed surface, uniform and adaptive, on every backend. With bitwise matching (tolerance 0) the
// same files open up, which shows that the fixtures test what they claim.
TEST(Tessellate, SeamsWeldWithinTheToleranceAndAcrossDegrees) {
  std::mt19937_64 rng(test::run_seed());
  std::uniform_real_distribution<double> jitter(-1.0, 1.0);
  PatchModel noisy = test::pillow();
  for (std::size_t k = 0; k < noisy.points.size(); ++k)  // each patch's own copy of a shared point moves apart
    if (k % 4 != 3) noisy.points[k] += 1e-14 * jitter(rng) * std::max(1.0, std::abs(noisy.points[k]));
  PatchModel mixed = test::pillow();
  for (std::size_t p = 0; p < mixed.patches.size(); p += 2) test::elevate(mixed, p, 5, 4);
  EXPECT_EQ(mixed.patches[0].degree_u, 5);
  for (const auto& [name, model] : {std::pair<const char*, const PatchModel*>{"noisy", &noisy}, {"mixed", &mixed}}) {
    TessellationOptions exact;
    exact.device = Device::Cpu;
    exact.resolution = 6;
    exact.seam_tolerance = 0;
    TessellationReport rep;
    const PatchMesh open = tessellate(*model, exact, &rep);
    EXPECT_GT(test::edge_census(open).boundary, 0) << name << ": the fixture does not need the tolerance";
    EXPECT_GT(rep.open_edges, 0) << name;
    for (Device dev : devices())
      for (double tol : {0.0, 1e-3}) {
        TessellationOptions o;
        o.device = dev;
        o.resolution = 6;
        o.tolerance = tol;
        const PatchMesh mesh = tessellate(*model, o, &rep);
        const auto census = test::edge_census(mesh);
        EXPECT_EQ(census.boundary, 0) << name << " " << device_name(dev) << " tol " << tol;
        EXPECT_EQ(census.non_manifold, 0) << name;
        EXPECT_EQ(census.misoriented, 0) << name;
        EXPECT_EQ(test::euler_characteristic(mesh), 2) << name << " " << device_name(dev) << " tol " << tol;
        EXPECT_EQ(rep.open_edges, 0) << name;
        EXPECT_EQ(rep.shared_edges, 12) << name;
      }
  }
}

// A file written to six decimals (as twg2.bv is) rounds each patch's copy of a shared point on its own, so the copies
// differ by up to 1e-6, far above the default fraction of a small model's size: the sides still weld, within the
// step the file was written with. A model built in code (no printed step) opens there, and bitwise matching stays
// bitwise.
TEST(Tessellate, SixDecimalFilesWeldWithinTheirStep) {
  std::mt19937_64 rng(test::run_seed() ^ 0x6dec);
  std::uniform_real_distribution<double> jitter(-4e-7, 4e-7);
  const PatchModel pillow = test::pillow();
  std::string text;
  char buf[96];
  for (const Patch& p : pillow.patches) {
    text += "4\n3\n";
    for (std::int64_t k = 0; k < p.control_point_count(); ++k) {
      const double* q = &pillow.points[std::size_t(p.offset + k) * 4];
      // (a scale and shift whose values lie off the six-decimal grid, so that the copies round apart)
      std::snprintf(buf, sizeof buf, "%.6f %.6f %.6f\n", 0.123456789 * q[0] + 0.0111111 + jitter(rng),
                    0.123456789 * q[1] + 0.0111111 + jitter(rng), 0.123456789 * q[2] + 0.0111111 + jitter(rng));
      text += buf;
    }
  }
  const PatchModel model = parse_bezierview(text, "pillow-6-decimals.bv");
  EXPECT_DOUBLE_EQ(model.printed_step, 1e-6);
  TessellationOptions o;
  o.device = Device::Cpu;
  o.resolution = 5;
  TessellationReport rep;
  PatchMesh mesh = tessellate(model, o, &rep);
  EXPECT_EQ(rep.open_edges, 0);
  EXPECT_EQ(rep.shared_edges, 12);
  EXPECT_DOUBLE_EQ(rep.seam_tolerance, 1.25e-6);
  EXPECT_EQ(test::edge_census(mesh).boundary, 0);
  EXPECT_EQ(test::euler_characteristic(mesh), 2);
  PatchModel built = model;
  built.printed_step = 0;
  tessellate(built, o, &rep);
  EXPECT_GT(rep.open_edges, 0) << "the fixture needs the printed step";
  o.seam_tolerance = 0;
  tessellate(model, o, &rep);
  EXPECT_GT(rep.open_edges, 0) << "bitwise matching";
}

// twg2.bv (288 patches of degrees 3 to 5, six decimals): closed once its seams weld within the file's step.
TEST(Tessellate, Twg2IsClosed) {
  REQUIRE_MODEL(twg2, "twg2.bv");
  for (Device dev : devices())
    for (double tolerance : {0.0, 1e-3}) {
      TessellationOptions o;
      o.device = dev;
      o.tolerance = tolerance;
      TessellationReport rep;
      const PatchMesh mesh = tessellate(twg2, o, &rep);
      const std::string what = std::string(device_name(dev)) + (tolerance > 0 ? ", adaptive" : ", uniform");
      EXPECT_EQ(rep.open_edges, 0) << what;
      EXPECT_EQ(rep.shared_edges, 576) << what;
      const auto census = test::edge_census(mesh);
      EXPECT_EQ(census.boundary, 0) << what;
      EXPECT_EQ(census.non_manifold, 0) << what;
    }
}

TEST(Tessellate, TorusIsClosedWithEulerZero) {
  REQUIRE_MODEL(torus, "tor.bv");
  for (Device dev : devices()) {
    TessellationOptions o;
    o.resolution = 10;
    o.device = dev;
    const PatchMesh m = tessellate(torus, o);
    const auto census = test::edge_census(m);
    EXPECT_EQ(census.boundary, 0);
    EXPECT_EQ(census.non_manifold, 0);
    EXPECT_EQ(census.misoriented, 0);
    EXPECT_EQ(test::euler_characteristic(m), 0);
    double worst = 0;
    for (std::int64_t v = 0; v < m.vertex_count(); ++v) {
      const double* p = &m.positions[3 * v];
      const double ring = std::sqrt(p[0] * p[0] + p[1] * p[1]) - 2.0;
      worst = std::max(worst, std::abs(std::sqrt(ring * ring + p[2] * p[2]) - 1.0));
    }
    EXPECT_LE(worst, 2e-5) << device_name(dev);
  }
}

TEST(Tessellate, TeapotTopologyAndCpuGpuAgreement) {
  const PatchModel teapot = utah_teapot();
  PatchMesh reference;
  for (Device dev : devices()) {
    TessellationOptions o;
    o.resolution = 9;
    o.device = dev;
    TessellationReport rep;
    const PatchMesh m = tessellate(teapot, o, &rep);
    const auto census = test::edge_census(m);
    EXPECT_EQ(census.non_manifold, 0);
    EXPECT_EQ(census.misoriented, 0);
    // open only where the model is: rim top, lid bottom, the two ends of spout and handle (16 patch sides)
    EXPECT_EQ(rep.open_edges, 16);
    EXPECT_EQ(census.boundary, 16 * o.resolution);
    for (std::int64_t t = 0; t < m.triangle_count(); ++t) ASSERT_GT(test::triangle_area(m, t), 0.0) << "triangle " << t;
    for (double x : m.normals) ASSERT_TRUE(std::isfinite(x));
    for (std::size_t k = 0; k < m.normals.size(); k += 3)
      EXPECT_NEAR(m.normals[k] * m.normals[k] + m.normals[k + 1] * m.normals[k + 1] + m.normals[k + 2] * m.normals[k + 2], 1.0, 1e-9);
    if (dev == Device::Cpu) {
      reference = m;
      continue;
    }
    // GPU: same triangles (the topology is the host's), same positions to rounding
    ASSERT_EQ(m.triangles, reference.triangles);
    ASSERT_EQ(m.positions.size(), reference.positions.size());
    for (std::size_t k = 0; k < m.positions.size(); ++k) ASSERT_NEAR(m.positions[k], reference.positions[k], 1e-12);
  }
}

TEST(Tessellate, Twg2PatchesMatchTheSurfaceEngine) {  // positions and normals, every backend
  REQUIRE_MODEL(twg2, "twg2.bv");
  ASSERT_EQ(twg2.patches.size(), 288u);
  const int n = 7;
  for (Device dev : devices()) {
    BatchOptions o;
    o.device = dev;
    PatchSamples<double> s;
    evaluate_patch_grids<double>(twg2, {{n, n}}, o, &s);
    double worst = 0, worst_normal = 0;
    for (std::size_t p = 0; p < twg2.patches.size(); ++p) {
      const BezierSurface surf = patch_surface(twg2, std::int64_t(p));
      EvalOptions eo;
      eo.device = Device::Cpu;
      EvalRequest want;
      want.normals = true;
      const auto ref = evaluate_grid<double>(surf, GridSpec{n + 1, n + 1}, want, eo);
      const double scale = test::bbox_size(surf);
      for (std::int64_t k = 0; k < ref.count; ++k) {
        // The model may orient a patch against its parametrisation: compare normals up to one sign per patch.
        double same = 0, opposite = 0;
        for (int c = 0; c < 3; ++c) {
          const std::size_t at = std::size_t(s.first[p] + k);
          worst = std::max(worst, std::abs(s.position[c][at] - ref.position[c][k]) / scale);
          same = std::max(same, std::abs(s.normal[c][at] - ref.normal[c][k]));
          opposite = std::max(opposite, std::abs(s.normal[c][at] + ref.normal[c][k]));
        }
        worst_normal = std::max(worst_normal, std::min(same, opposite));
      }
    }
    EXPECT_LE(worst, 1e-12) << device_name(dev);
    EXPECT_LE(worst_normal, 1e-9) << device_name(dev);
  }
}

TEST(Tessellate, AdaptiveMeetsToleranceWithoutCracksAndWithFewerTriangles) {
  std::vector<std::pair<std::string, PatchModel>> models = {{"teapot", utah_teapot()}};
  if (const auto s = shared_model("sphere.bv"); !s.patches.empty()) models.push_back({"sphere", s});
  if (const auto s = shared_model("twg2.bv"); !s.patches.empty()) models.push_back({"twg2", s});
  for (const auto& [name, model] : models) {
    const double diag = [&] {
      double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
      for (std::size_t k = 0; k < model.points.size(); k += 4)
        for (int c = 0; c < 3; ++c)
          lo[c] = std::min(lo[c], model.points[k + c] / model.points[k + 3]),
          hi[c] = std::max(hi[c], model.points[k + c] / model.points[k + 3]);
      return std::sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) + (hi[2] - lo[2]) * (hi[2] - lo[2]));
    }();
    const double tol = 2e-4 * diag;
    TessellationOptions o;
    o.tolerance = tol;
    TessellationReport rep;
    const PatchMesh adaptive = tessellate(model, o, &rep);
    const auto dev = sampled_patch_deviation(model, o, 6);
    for (std::size_t p = 0; p < dev.size(); ++p) ASSERT_LE(dev[p], tol) << name << " patch " << p;
    // crack-free: the welded mesh has boundary edges only on the model's open sides, as many as uniform has there
    const auto census = test::edge_census(adaptive);
    EXPECT_EQ(census.non_manifold, 0) << name;
    EXPECT_EQ(census.misoriented, 0) << name;
    EXPECT_EQ(census.boundary, rep.open_side_segments) << name;
    const int uniform = uniform_resolution_for(model, tol, 512);
    TessellationOptions u;
    u.resolution = uniform;
    const PatchMesh um = tessellate(model, u);
    std::printf("[ adaptive ] %s: tolerance %.3g -> %lld triangles; uniform %d -> %lld triangles\n", name.c_str(), tol,
                (long long)adaptive.triangle_count(), uniform, (long long)um.triangle_count());
    // the sphere's 24 patches are alike, so one resolution fits them all and adaptivity has nothing to save;
    // models whose patches differ must need fewer triangles
    if (name != "sphere") EXPECT_LT(adaptive.triangle_count(), um.triangle_count()) << name;
  }
}

// The planner coarsens every patch to within 95 % of the tolerance as it samples (5 points per triangle side);
// sampled twice as densely, every patch must still be within the tolerance, from coarse to fine tolerances.
TEST(Tessellate, AdaptiveMeetsToleranceFromCoarseToFine) {
  const PatchModel teapot = utah_teapot();
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  for (std::size_t k = 0; k < teapot.points.size(); k += 4)
    for (int c = 0; c < 3; ++c) lo[c] = std::min(lo[c], teapot.points[k + c]), hi[c] = std::max(hi[c], teapot.points[k + c]);
  const double diag = std::sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                                (hi[2] - lo[2]) * (hi[2] - lo[2]));
  for (double rel : {3e-2, 1e-3, 5e-5}) {
    TessellationOptions o;
    o.tolerance = rel * diag;
    const auto dev = sampled_patch_deviation(teapot, o, 10);
    for (std::size_t p = 0; p < dev.size(); ++p) ASSERT_LE(dev[p], o.tolerance) << "tolerance " << rel << " patch " << p;
    // the coarsening leaves nothing far below the tolerance everywhere: the worst patch is near it
    EXPECT_GT(*std::max_element(dev.begin(), dev.end()), 0.8 * o.tolerance) << "tolerance " << rel;
  }
}

// A tolerance far below a patch's size asks for more segments than an int holds: the estimate is the most a side
// takes (the conversion wrapped it to one segment, and the teapot at 1e-300 came out coarser than at 1e-3).
TEST(Tessellate, AdaptiveEstimateForATinyToleranceIsTheFinest) {
  const PatchModel teapot = utah_teapot();
  for (double target : {1e-300, 1e-200, 5e-324}) {
    const auto [nu, nv] = patches::estimate_segments(teapot.patches[0], teapot.points.data(), target);
    EXPECT_EQ(nu, patches::kMaxSegments) << target;
    EXPECT_EQ(nv, patches::kMaxSegments) << target;
  }
  const auto [nu, nv] = patches::estimate_segments(teapot.patches[0], teapot.points.data(), 1e-3);
  EXPECT_GT(nu, 1);
  EXPECT_LT(nu, patches::kMaxSegments);
  EXPECT_GT(nv, 1);
}

// The adaptive planner's lattice of a patch's grid refined k times gives triangle_deviation's value for every
// triangle of a grid cell (the same points, made as curves of a band of rows instead of one by one), on random
// rational nets of mixed degrees; a triangle of a band already passed is left to the caller.
TEST(Tessellate, RefinedGridDeviationEqualsThePointwiseOne) {
  std::mt19937_64 rng(test::run_seed() ^ 0x7e1d);
  std::uniform_real_distribution<double> coord(-2.0, 2.0), weight(0.5, 2.0);
  for (int trial = 0; trial < 20; ++trial) {
    patchk::PatchRecord rec;
    rec.du = std::int16_t(1 + rng() % 6);
    rec.dv = std::int16_t(1 + rng() % 6);
    rec.nu = int(1 + rng() % 9);
    rec.nv = int(1 + rng() % 9);
    rec.cp = 3;  // (a net that does not start the array)
    const int k = 2 + int(rng() % 4);
    std::vector<double> pts(std::size_t(rec.cp + (rec.du + 1) * (rec.dv + 1)) * 4, 0.0);
    for (std::size_t q = std::size_t(rec.cp) * 4; q < pts.size(); q += 4) {
      const double w = weight(rng);
      for (int c = 0; c < 3; ++c) pts[q + c] = w * coord(rng);
      pts[q + 3] = w;
    }
    patches::RefinedGrid grid(rec, pts.data(), k);
    auto corner = [&](int i, int j, double (&uv)[2], double (&xyz)[3]) {
      uv[0] = kern::grid_param<double>(i, rec.nu + 1);
      uv[1] = kern::grid_param<double>(j, rec.nv + 1);
      patchk::eval_position<double>(rec, pts.data(), uv[0], uv[1], xyz);
    };
    double worst = 0;
    for (int i = 0; i < rec.nu; ++i)
      for (int j = 0; j < rec.nv; ++j)
        for (const auto& t : {std::array<int, 6>{i, j, i + 1, j, i, j + 1}, std::array<int, 6>{i + 1, j, i + 1, j + 1, i, j + 1}}) {
          int ij[3][2];
          double uv[3][2], xyz[3][3];
          for (int v = 0; v < 3; ++v) {
            ij[v][0] = t[std::size_t(2 * v)], ij[v][1] = t[std::size_t(2 * v + 1)];
            corner(ij[v][0], ij[v][1], uv[v], xyz[v]);
          }
          const double expected = patches::triangle_deviation(rec, pts.data(), uv, xyz, k);
          double got = -1;
          ASSERT_TRUE(grid.triangle_deviation(ij, xyz, got)) << "trial " << trial;
          EXPECT_NEAR(got, expected, 1e-12 * (1 + expected)) << "trial " << trial << " cell " << i << "," << j;
          worst = std::max(worst, expected);
        }
    EXPECT_GT(worst, 0.0) << "trial " << trial;  // (a net that is not flat: the comparison compares something)
    if (rec.nu > 1) {  // the first band is behind: not taken
      int ij[3][2] = {{0, 0}, {1, 0}, {0, 1}};
      double xyz[3][3] = {}, d = 0;
      EXPECT_FALSE(grid.triangle_deviation(ij, xyz, d));
    }
    int wide[3][2] = {{0, 0}, {0, 2}, {1, 0}};  // not within one cell
    double xyz[3][3] = {}, d = 0;
    EXPECT_FALSE(grid.triangle_deviation(wide, xyz, d));
  }
}

// GPU samples against the CPU's in both precisions: teapot-sized coordinates are O(3), so 1e-12 absolute in
// double and 1e-5 in float; unit normals 1e-9 in double.
void expect_batch_matches(const PatchSamples<double>& d, const PatchSamples<double>& ref, const PatchSamples<float>& f,
                          const PatchSamples<float>& reff, const std::string& what) {
  ASSERT_EQ(d.count(), ref.count()) << what;
  ASSERT_EQ(f.count(), reff.count()) << what;
  double wd = 0, wf = 0, wn = 0;
  for (int c = 0; c < 3; ++c)
    for (std::int64_t k = 0; k < ref.count(); ++k) {
      wd = std::max(wd, std::abs(d.position[c][k] - ref.position[c][k]));
      wf = std::max(wf, double(std::abs(f.position[c][k] - reff.position[c][k])));
      wn = std::max(wn, std::abs(d.normal[c][k] - ref.normal[c][k]));
    }
  EXPECT_LE(wd, 1e-12) << what;
  EXPECT_LE(wn, 1e-9) << what;
  EXPECT_LE(wf, 1e-5) << what;
}

TEST(Tessellate, BatchStrategiesAgreeAcrossBackends) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  PatchModel mixed = utah_teapot();
  for (const char* name : {"tri1.bv", "sphere.bv"})
    if (const auto t = shared_model(name); !t.patches.empty()) append_patches(mixed, t);
  for (int n : {1, 5, 33}) {
    BatchOptions cpu;
    cpu.device = Device::Cpu;
    PatchSamples<double> ref;
    evaluate_patch_grids<double>(mixed, {{n, n + 2}}, cpu, &ref);
    PatchSamples<float> reff;
    evaluate_patch_grids<float>(mixed, {{n, n + 2}}, cpu, &reff);
    for (PatchStrategy st : {PatchStrategy::Direct, PatchStrategy::Casteljau, PatchStrategy::Tables}) {
      BatchOptions g;
      g.device = Device::Cuda;
      g.strategy = st;
      PatchSamples<double> d;
      evaluate_patch_grids<double>(mixed, {{n, n + 2}}, g, &d);
      PatchSamples<float> f;
      evaluate_patch_grids<float>(mixed, {{n, n + 2}}, g, &f);
      expect_batch_matches(d, ref, f, reff, std::string(patch_strategy_name(st)) + " n=" + std::to_string(n));
    }
  }
}

// Large batches of small patches go to the GPU several to a block: runs of alike patches form the packs, and
// every change of degree, segments or kind (triangles, rational, flipped) breaks a run. Copies of the teapot (and
// the shared triangle and sphere models) one after another make a batch over the packing threshold.
TEST(Tessellate, PackedSmallPatchesMatchTheCpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  PatchModel one = utah_teapot();
  for (const char* name : {"tri1.bv", "sphere.bv"})
    if (const auto t = shared_model(name); !t.patches.empty()) append_patches(one, t);
  PatchModel many = one;
  many.patches.clear();
  while (many.patches.size() < 5000) many.patches.insert(many.patches.end(), one.patches.begin(), one.patches.end());
  for (int n : {1, 6, 15, 40}) {  // 40: too many samples to pack, the single-patch kernel beside packed runs
    BatchOptions cpu;
    cpu.device = Device::Cpu;
    BatchOptions gpu;
    gpu.device = Device::Cuda;
    gpu.strategy = PatchStrategy::Tables;
    PatchSamples<double> ref, d;
    evaluate_patch_grids<double>(many, {{n, n + 2}}, cpu, &ref);
    evaluate_patch_grids<double>(many, {{n, n + 2}}, gpu, &d);
    PatchSamples<float> reff, f;
    evaluate_patch_grids<float>(many, {{n, n + 2}}, cpu, &reff);
    evaluate_patch_grids<float>(many, {{n, n + 2}}, gpu, &f);
    expect_batch_matches(d, ref, f, reff, "packed n=" + std::to_string(n));
  }
}

// The tables kernel leaves the samples whose Su x Sv vanishes (the teapot's poles, the sphere's) to a second kernel
// that gives them their limit normal, from a list; when the list is full, a scan of the tiles finds the rest. Both
// ways, single and packed tiles, against the CPU's limit normals.
TEST(Tessellate, DegenerateNormalsListedOrScannedMatchTheCpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  PatchModel one = utah_teapot();
  if (const auto t = shared_model("sphere.bv"); !t.patches.empty()) append_patches(one, t);
  PatchModel many = one;
  many.patches.clear();
  while (many.patches.size() < 5000) many.patches.insert(many.patches.end(), one.patches.begin(), one.patches.end());
  struct Restore {
    ~Restore() { ::unsetenv("PARASURF_DEGENERATE_LIST_CAPACITY"); }
  } restore;
  for (const PatchModel* model : {&one, &many})
    for (int n : {6, 40})
      for (const char* capacity : {"", "7", "0"}) {
        if (*capacity) ::setenv("PARASURF_DEGENERATE_LIST_CAPACITY", capacity, 1);
        else ::unsetenv("PARASURF_DEGENERATE_LIST_CAPACITY");
        BatchOptions cpu;
        cpu.device = Device::Cpu;
        BatchOptions gpu;
        gpu.device = Device::Cuda;
        gpu.strategy = PatchStrategy::Tables;
        PatchSamples<double> ref, d;
        evaluate_patch_grids<double>(*model, {{n, n}}, cpu, &ref);
        evaluate_patch_grids<double>(*model, {{n, n}}, gpu, &d);
        PatchSamples<float> reff, f;
        evaluate_patch_grids<float>(*model, {{n, n}}, cpu, &reff);
        evaluate_patch_grids<float>(*model, {{n, n}}, gpu, &f);
        const std::string what = std::to_string(model->patches.size()) + " patches, n=" + std::to_string(n) +
                                 ", list capacity " + (*capacity ? capacity : "default");
        expect_batch_matches(d, ref, f, reff, what);
        // float normals too (expect_batch_matches compares double ones): a pole left without its limit normal is zero
        double worstf = 0;
        for (int c = 0; c < 3; ++c)
          for (std::int64_t k = 0; k < ref.count(); ++k)
            worstf = std::max(worstf, double(std::abs(f.normal[c][k] - reff.normal[c][k])));
        EXPECT_LE(worstf, 1e-3) << what;
      }
}

// Welding and assembly on the GPU, from samples that never leave it, against the host's assembly of the same
// CUDA samples, bit for bit: the same vertices and normals, normal slots, triangles in the same order, groups and
// patches, crease and flip counts. Models: the teapot (collapsed edges), plus the shared triangle and sphere models, an inside-out sphere
// (a closed component turned outward), a patch squashed to a line (every triangle of zero area), a random sheet,
// with uniform, random per-patch (zipped sides) and adaptive resolutions, at two crease angles.
TEST(Tessellate, DeviceAssemblyMatchesTheHostAssembly) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  const std::uint64_t seed = test::run_seed();
  std::printf("seed %llu (set PARASURF_TEST_SEED to repeat)\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  PatchModel mixed = utah_teapot();
  for (const char* name : {"tri1.bv", "sphere.bv"})
    if (const auto t = shared_model(name); !t.patches.empty()) append_patches(mixed, t);
  const PatchModel sphere = shared_model("sphere.bv");
  if (!sphere.patches.empty()) {
    PatchModel inside_out = sphere;
    for (std::size_t k = 0; k < inside_out.points.size(); k += 4) inside_out.points[k] = -inside_out.points[k] + 5 * inside_out.points[k + 3];
    append_patches(mixed, inside_out);
  }
  {
    PatchModel line = utah_teapot();
    line.patches.resize(1);
    for (std::size_t k = 0; k < line.points.size(); k += 4) line.points[k + 1] = line.points[k + 2] = 0.0, line.points[k] += 20;
    append_patches(mixed, line);
  }
  append_patches(mixed, synthetic_bicubic_model(60, seed));
  // A square pyramid's four faces as bilinear patches collapsed at the apex: an apex of four normal clusters, so
  // that the speculative clustering of its many contributions breaks off and the serial walk takes over.
  append_patches(mixed, parse_bezierview("5 1 1\n1 -1 9  1 1 9  0 0 10  0 0 10\n"
                                         "5 1 1\n1 1 9  -1 1 9  0 0 10  0 0 10\n"
                                         "5 1 1\n-1 1 9  -1 -1 9  0 0 10  0 0 10\n"
                                         "5 1 1\n-1 -1 9  1 -1 9  0 0 10  0 0 10\n",
                                         "pyramid"));
  std::vector<int> random_resolution(mixed.patches.size());
  for (int& r : random_resolution) r = 1 + int(rng() % 12);
  struct Case {
    const char* name;
    int resolution;
    bool per_patch;
    double tolerance, crease;
    bool keep_degenerate;
  };
  const Case cases[] = {{"uniform 9", 9, false, 0, 30, false},     {"uniform 2, keep degenerate", 2, false, 0, 30, true},
                        {"random per patch", 0, true, 0, 30, false}, {"adaptive", 0, false, 2e-3, 30, false},
                        {"crease 5 degrees", 7, false, 0, 5, false},
                        // poles of 164 and more contributions: several staged chunks, speculation broken by creases
                        {"uniform 40, crease 5 degrees", 40, false, 0, 5, false}};
  for (const Case& c : cases)
    for (Precision precision : {Precision::Float, Precision::Double}) {
      SCOPED_TRACE(std::string(c.name) + (precision == Precision::Float ? ", float" : ", double"));
      TessellationOptions o;
      o.device = Device::Cuda;
      o.precision = precision;
      o.resolution = c.per_patch ? 16 : std::max(c.resolution, 1);
      if (c.per_patch) o.patch_resolution = random_resolution;
      o.tolerance = c.tolerance;
      o.crease_angle_degrees = c.crease;
      o.keep_degenerate = c.keep_degenerate;
      TessellationReport host_rep, device_rep;
      o.assemble_on_device = false;
      const PatchMesh host = tessellate(mixed, o, &host_rep);
      o.assemble_on_device = true;
      const PatchMesh dev = tessellate(mixed, o, &device_rep);
      EXPECT_FALSE(host_rep.assembled_on_device);
      ASSERT_TRUE(device_rep.assembled_on_device) << device_rep.assembly_note;
      ASSERT_GT(host.triangle_count(), 0);
      EXPECT_EQ(dev.positions, host.positions);
      EXPECT_EQ(dev.triangles, host.triangles);
      EXPECT_EQ(dev.triangle_normals, host.triangle_normals);
      EXPECT_EQ(dev.face_group, host.face_group);
      EXPECT_EQ(dev.face_patch, host.face_patch);
      EXPECT_EQ(dev.group_names, host.group_names);
      EXPECT_EQ(device_rep.crease_vertices, host_rep.crease_vertices);
      EXPECT_EQ(device_rep.flipped_patches, host_rep.flipped_patches);
      EXPECT_EQ(device_rep.polyhedron_faces, host_rep.polyhedron_faces);
      EXPECT_EQ(dev.normals, host.normals);  // the same sums in the same order, without fused multiply-adds
      if (precision == Precision::Float) {
        // the compaction that waits for the counts, which models above 2^22 triangles take
        ::setenv("PARASURF_COMPACT_AHEAD_TRIANGLES", "0", 1);
        const PatchMesh waited = tessellate(mixed, o, nullptr);
        ::unsetenv("PARASURF_COMPACT_AHEAD_TRIANGLES");
        EXPECT_EQ(waited.triangles, host.triangles);
        EXPECT_EQ(waited.triangle_normals, host.triangle_normals);
        EXPECT_EQ(waited.face_patch, host.face_patch);
        EXPECT_EQ(waited.normals, host.normals);
      }
      if (c.keep_degenerate) {
        std::int64_t zero = 0;
        for (std::int64_t t = 0; t < dev.triangle_count(); ++t) zero += test::triangle_area(dev, t) == 0.0;
        EXPECT_GT(zero, 0) << "the line patch's triangles are kept";
      }
      if (!sphere.patches.empty()) EXPECT_GE(host_rep.flipped_patches, std::int64_t(sphere.patches.size())) << "the inside-out sphere turns outward";
    }
}

// The device assembly lets the stream-ordered pool keep its memory between assemblies (a quarter of the device). That
// relies on the driver giving what the pool keeps back to a plain allocation that needs it: here the pool holds 60 %
// of the free memory and a DeviceBuffer then takes half of it (on the H100 this passes without any trim of ours).
TEST(DeviceMemory, PoolKeptForAssembliesYieldsToPlainAllocations) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
#if PARASURF_HAVE_CUDA
  int device = 0;
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, device), cudaSuccess);
  std::uint64_t threshold = 0, keep_all = ~std::uint64_t(0);
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), cudaSuccess);
  ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all), cudaSuccess);
  std::size_t free0 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  void* held = nullptr;
  ASSERT_EQ(cudaMallocAsync(&held, free0 / 10 * 6, nullptr), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(held, nullptr), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  std::size_t free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_LT(free1, free0 / 2) << "the pool did not keep the freed memory";
  {
    core::DeviceBuffer buffer;
    EXPECT_NO_THROW(buffer.ensure(free0 / 2, "allocating half the device's free memory"));
    EXPECT_NE(buffer.ptr, nullptr);
  }
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), cudaSuccess);
  EXPECT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
#endif
}

// CPU threads and the GPU together (Device::Hybrid), both schemes, against the CPU alone: batches of thousands of
// patches (many runs each way), and tessellations of the model once, with zipped sides (listed side samples).
TEST(Tessellate, HybridSchemesMatchTheCpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  PatchModel one = utah_teapot();
  for (const char* name : {"tri1.bv", "sphere.bv"})
    if (const auto t = shared_model(name); !t.patches.empty()) append_patches(one, t);
  PatchModel mixed = one;  // copies of the same patches: unit-sized coordinates, as the tolerances assume
  while (mixed.patches.size() < 3000) mixed.patches.insert(mixed.patches.end(), one.patches.begin(), one.patches.end());
  struct Scheme {
    const char* name;
    HybridScheme scheme;
    double share;
  };
  const Scheme schemes[] = {{"static 0.3", HybridScheme::Static, 0.3},
                            {"static profiled", HybridScheme::Static, -1},
                            {"dynamic", HybridScheme::Dynamic, -1}};
  for (int n : {5, 17}) {
    BatchOptions cpu;
    cpu.device = Device::Cpu;
    PatchSamples<double> ref;
    PatchSamples<float> reff;
    evaluate_patch_grids<double>(mixed, {{n, n + 2}}, cpu, &ref);
    evaluate_patch_grids<float>(mixed, {{n, n + 2}}, cpu, &reff);
    for (const Scheme& sc : schemes) {
      BatchOptions h;
      h.device = Device::Hybrid;
      h.hybrid_scheme = sc.scheme;
      h.cpu_share = sc.share;
      PatchSamples<double> d;
      PatchSamples<float> f;
      const BatchTiming td = evaluate_patch_grids<double>(mixed, {{n, n + 2}}, h, &d);
      evaluate_patch_grids<float>(mixed, {{n, n + 2}}, h, &f);
      expect_batch_matches(d, ref, f, reff, std::string(sc.name) + " n=" + std::to_string(n));
      EXPECT_EQ(td.device, Device::Hybrid);
      EXPECT_GE(td.cpu_share, 0.0);
      EXPECT_LE(td.cpu_share, 1.0);
      if (sc.share > 0) EXPECT_NEAR(td.cpu_share, sc.share, 0.02) << "runs of patches split at the asked share";
    }
  }
  // tessellation: the same triangles as the CPU's, positions to rounding
  for (double tol : {0.0, 2e-3}) {
    TessellationOptions o;
    o.resolution = 9;
    o.tolerance = tol;
    o.device = Device::Cpu;
    const PatchMesh reference = tessellate(one, o);
    for (const Scheme& sc : schemes) {
      SCOPED_TRACE(std::string(sc.name) + ", tolerance " + std::to_string(tol));
      o.device = Device::Hybrid;
      o.hybrid_scheme = sc.scheme;
      o.cpu_share = sc.share;
      TessellationReport rep;
      const PatchMesh m = tessellate(one, o, &rep);
      EXPECT_EQ(rep.device, Device::Hybrid);
      ASSERT_EQ(m.triangles, reference.triangles);
      ASSERT_EQ(m.positions.size(), reference.positions.size());
      double worst = 0;
      for (std::size_t k = 0; k < m.positions.size(); ++k) worst = std::max(worst, std::abs(m.positions[k] - reference.positions[k]));
      EXPECT_LE(worst, 1e-12);
    }
  }
}

TEST(Tessellate, WritersProduceReadableFiles) {
  TessellationOptions o;
  o.resolution = 4;
  const TriangleMesh tm = to_triangle_mesh(tessellate(utah_teapot(), o));
  EXPECT_EQ(tm.face_groups.size(), std::size_t(tm.triangle_count()));
  for (const char* ext : {".ply", ".obj", ".glb"}) {
    const std::string path = test::temp_path(std::string("teapot") + ext);
    write_mesh(path, tm);
    std::FILE* f = std::fopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr) << path;
    char head[4] = {};
    ASSERT_EQ(std::fread(head, 1, 4, f), 4u);
    std::fclose(f);
    if (std::string(ext) == ".glb") EXPECT_EQ(std::string(head, 4), "glTF");
    if (std::string(ext) == ".ply") EXPECT_EQ(std::string(head, 3), "ply");
    std::remove(path.c_str());
  }
}

// auto weighs the CPU against a GPU per model: the teapot at 2 segments a side (288 points) stays on the CPU and is
// the CPU's mesh; at 256 it runs where this process's estimate says (a GPU's fixed cost and the mesh's way home
// against the host's evaluation and welding).
TEST(Tessellate, AutoKeepsSmallModelsOnTheCpu) {
  const PatchModel teapot = utah_teapot();
  TessellationOptions automatic, cpu;
  automatic.resolution = cpu.resolution = 2;
  cpu.device = Device::Cpu;
  TessellationReport r;
  const PatchMesh small = tessellate(teapot, automatic, &r);
  EXPECT_EQ(r.device, Device::Cpu) << r.device_choice;
  const PatchMesh want = tessellate(teapot, cpu);
  EXPECT_EQ(small.positions, want.positions);
  EXPECT_EQ(small.triangles, want.triangles);
  EXPECT_EQ(tessellation_auto_estimate(288).device, Device::Cpu);
  if (!cuda_available()) {
    EXPECT_TRUE(r.device_choice.empty());
    GTEST_SKIP() << "no CUDA device (" << cuda_unavailable_reason() << "): auto ran the CPU, the GPU half skips";
  }
  EXPECT_NE(r.device_choice.find("auto chose cpu"), std::string::npos) << r.device_choice;
  cuda_warm_up(0);
  automatic.resolution = 256;
  const AutoDeviceEstimate big = tessellation_auto_estimate(32 * 257 * 257);
  EXPECT_GT(big.cuda_seconds, 0);
  const PatchMesh large = tessellate(teapot, automatic, &r);
  // (or the other side, tried once to measure it: core::decide)
  EXPECT_TRUE(r.device == big.device || r.device_choice.find("trying it once") != std::string::npos)
      << r.device_choice;
  EXPECT_FALSE(r.device_choice.empty());
  EXPECT_GT(large.triangle_count(), 32 * 256 * 256);
}

}  // namespace
}  // namespace parasurf
