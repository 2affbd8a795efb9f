// Closest points on patch sets: against a dense search refined by Newton in long double, on every engine, with
// the messy cases of real models (seams, collapsed edges, continua of nearest points, coordinates far from the
// origin) and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "parasurf/error.hpp"
#include "parasurf/patches.hpp"
#include "parasurf/solver.hpp"
#include "solver/teapot_patches.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

using Vec3 = std::array<double, 3>;
using test::teapot_patches;

long double ref_distance(const BezierSurface& s, long double u, long double v, const Vec3& q) {
  const test::RefJet j = test::reference_eval(s, u, v);
  long double d = 0;
  for (int k = 0; k < 3; ++k) d += (j.s[k] - q[k]) * (j.s[k] - q[k]);
  return std::sqrt(d);
}

// The nearest point by brute force: an n x n grid on every patch, then Newton on the squared distance (long
// double, clamped to the patch) from each grid point that is a local minimum of the grid.
long double reference_distance(const std::vector<BezierSurface>& patches, const Vec3& q, int n) {
  long double best = INFINITY;
  for (const BezierSurface& s : patches) {
    std::vector<long double> g((n + 1) * (n + 1));
    for (int a = 0; a <= n; ++a)
      for (int b = 0; b <= n; ++b) g[a * (n + 1) + b] = ref_distance(s, (long double)a / n, (long double)b / n, q);
    for (int a = 0; a <= n; ++a)
      for (int b = 0; b <= n; ++b) {
        const long double here = g[a * (n + 1) + b];
        best = std::min(best, here);
        bool minimum = true;
        for (int da = -1; da <= 1; ++da)
          for (int db = -1; db <= 1; ++db) {
            const int x = a + da, y = b + db;
            if (x >= 0 && x <= n && y >= 0 && y <= n && g[x * (n + 1) + y] < here) minimum = false;
          }
        if (!minimum) continue;
        long double u = (long double)a / n, v = (long double)b / n;
        for (int it = 0; it < 40; ++it) {
          const test::RefJet j = test::reference_eval(s, u, v);
          long double gu = 0, gv = 0, huu = 0, huv = 0, hvv = 0;
          for (int k = 0; k < 3; ++k) {
            const long double r = j.s[k] - q[k];
            gu += r * j.su[k], gv += r * j.sv[k];
            huu += j.su[k] * j.su[k] + r * j.suu[k];
            huv += j.su[k] * j.sv[k] + r * j.suv[k];
            hvv += j.sv[k] * j.sv[k] + r * j.svv[k];
          }
          const long double det = huu * hvv - huv * huv;
          if (!(det > 0)) break;  // not a minimum's basin: the grid value stands
          u = std::clamp(u - (hvv * gu - huv * gv) / det, (long double)0, (long double)1);
          v = std::clamp(v - (huu * gv - huv * gu) / det, (long double)0, (long double)1);
        }
        best = std::min(best, ref_distance(s, u, v, q));
      }
  }
  return best;
}

// The answer is a point of its patch, its distance is that point's, and no point of the reference is nearer.
void expect_valid(const std::vector<BezierSurface>& patches, const Vec3& q, const ClosestPoint& c, double tolerance,
                  const std::string& what, int grid) {
  SCOPED_TRACE(what);
  ASSERT_GE(c.patch, 0);
  ASSERT_LT(c.patch, std::int64_t(patches.size()));
  EXPECT_GE(c.u, 0);
  EXPECT_LE(c.u, 1);
  EXPECT_GE(c.v, 0);
  EXPECT_LE(c.v, 1);
  const test::RefJet j = test::reference_eval(patches[std::size_t(c.patch)], c.u, c.v);
  const double scale = 1 + std::abs(q[0]) + std::abs(q[1]) + std::abs(q[2]);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(c.point[k], double(j.s[k]), 1e-13 * scale);
  const double d = std::sqrt((c.point[0] - q[0]) * (c.point[0] - q[0]) + (c.point[1] - q[1]) * (c.point[1] - q[1]) +
                             (c.point[2] - q[2]) * (c.point[2] - q[2]));
  EXPECT_NEAR(c.distance, d, 1e-13 * scale);
  EXPECT_LE(c.distance, double(reference_distance(patches, q, grid)) + tolerance);
}

TEST(ClosestPoints, RandomPatchesMatchADenseSearchOnEveryEngine) {
  const std::uint64_t seed = test::run_seed();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 1.5);
  std::vector<BezierSurface> patches;
  // Bicubic, biquintic and mixed degrees; the neighbours of different degree overlap in space.
  const int degrees[4][2] = {{3, 3}, {5, 5}, {2, 4}, {3, 6}};
  for (int p = 0; p < 4; ++p) patches.push_back(make_random_surface(degrees[p][0], degrees[p][1], seed + 17 * p));
  std::vector<Vec3> queries;
  for (int i = 0; i < 24; ++i) queries.push_back({u(rng), u(rng), u(rng)});
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    const ClosestPointsResult r = closest_points(patches, queries, o);
    EXPECT_EQ(r.status, "complete") << device_name(engine);
    ASSERT_EQ(r.points.size(), queries.size());
    EXPECT_GE(r.systems, std::int64_t(queries.size()));
    for (std::size_t i = 0; i < queries.size(); ++i)
      expect_valid(patches, queries[i], r.points[i], 1e-10,
                   std::string(device_name(engine)) + " seed " + std::to_string(seed) + " query " + std::to_string(i),
                   48);
  }
}

// The teapot: points on the surface (on seams, at corners shared by patches, on the collapsed edges of the lid's
// knob and the bottom), a query on the axis of revolution (every point of a circle is nearest) and the same model
// far from the origin.
TEST(ClosestPoints, TeapotSeamsCollapsedEdgesAndTheAxis) {
  const std::vector<BezierSurface> teapot = teapot_patches();
  std::mt19937_64 rng(test::run_seed() + 1);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Vec3> on;
  std::vector<Vec3> queries;
  for (int i = 0; i < 12; ++i) {
    const auto p = std::size_t(rng() % teapot.size());
    double uv[2] = {u(rng), u(rng)};
    if (i % 3 == 1) uv[0] = 0;          // on an edge: a seam with the neighbour
    if (i % 3 == 2) uv[0] = uv[1] = 1;  // a corner
    const test::RefJet j = test::reference_eval(teapot[p], uv[0], uv[1]);
    queries.push_back({double(j.s[0]), double(j.s[1]), double(j.s[2])});
  }
  queries.push_back({0, 0, 3.2});   // above the lid's knob, on the axis: the knob's top
  queries.push_back({0, 0, 1.2});   // inside the body on the axis: a whole circle of the body is nearest
  queries.push_back({0, 0, -0.3});  // below the bottom's collapsed centre
  queries.push_back({4, 1, 2});     // out beside the spout
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    const ClosestPointsResult r = closest_points(teapot, queries, o);
    ASSERT_EQ(r.points.size(), queries.size());
    for (std::size_t i = 0; i < queries.size(); ++i) {
      const std::string what = std::string(device_name(engine)) + " query " + std::to_string(i);
      if (i < 12) EXPECT_LT(r.points[i].distance, 1e-12) << what;
      expect_valid(teapot, queries[i], r.points[i], 1e-9, what, 20);
    }
    EXPECT_NEAR(r.points[12].distance, 3.2 - 3.15, 1e-12);  // the knob's top is at height 3.15
  }
  // A million units away: the same answers to the coordinates' own rounding.
  const Vec3 shift = {1e6, -2e6, 5e5};
  const std::vector<BezierSurface> far = teapot_patches(shift);
  std::vector<Vec3> moved = queries;
  for (auto& q : moved)
    for (int k = 0; k < 3; ++k) q[k] += shift[k];
  const ClosestPointsResult near_origin = closest_points(teapot, queries), away = closest_points(far, moved);
  for (std::size_t i = 0; i < queries.size(); ++i)
    EXPECT_NEAR(away.points[i].distance, near_origin.points[i].distance, 1e-8) << "query " << i;
}

// Every answer is a foot point to the last bits: the chord to the query is perpendicular to the surface (to the
// free direction on an edge), on every engine, and the engines give the same point. A root the solver located
// only to a cluster of cells is polished by Newton; its distance alone cannot tell the better point, being second
// order in the error there (1e-8 off changes it by 1e-16).
TEST(ClosestPoints, FootPointsArePolishedOnEveryEngine) {
  const std::vector<BezierSurface> teapot = teapot_patches();
  const std::uint64_t seed = test::run_seed() + 2;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-4, 4);
  std::vector<Vec3> queries;
  for (int i = 0; i < 3000; ++i) queries.push_back({u(rng), u(rng), 1.5 + 0.6 * u(rng)});
  // Two whose nearest point lies on a patch's side, with the gradient pushing off the patch, reached from a sample
  // there (it once stopped 1e-9 off the side's foot point: the coupled Newton step, clamped, and Gauss-Newton along
  // the side, which converges only linearly this far from the surface).
  queries.push_back({0.49973857625547602, -0.0028316266474051055, 1.3667279936620469});
  queries.push_back({0.7770623805406105, 0.26863094771558416, 1.0846486861243876});
  std::vector<ClosestPointsResult> results;
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    results.push_back(closest_points(teapot, queries, o));
    const ClosestPointsResult& r = results.back();
    long double worst = 0;
    for (std::size_t i = 0; i < queries.size(); ++i) {
      const ClosestPoint& c = r.points[i];
      if (!(c.distance > 1e-6)) continue;
      const test::RefJet j = test::reference_eval(teapot[std::size_t(c.patch)], c.u, c.v);
      long double ru = 0, rv = 0, nu = 0, nv = 0, nr = 0;
      for (int k = 0; k < 3; ++k) {
        const long double chord = j.s[k] - queries[i][k];
        ru += chord * j.su[k], rv += chord * j.sv[k];
        nu += j.su[k] * j.su[k], nv += j.sv[k] * j.sv[k], nr += chord * chord;
      }
      // (cosines of the angles; on an edge or a collapsed one only the free direction counts)
      if (c.u > 0 && c.u < 1 && nu > 1e-20L) worst = std::max(worst, std::abs(ru) / std::sqrt(nu * nr));
      if (c.v > 0 && c.v < 1 && nv > 1e-20L) worst = std::max(worst, std::abs(rv) / std::sqrt(nv * nr));
    }
    EXPECT_LE(double(worst), 1e-10) << device_name(engine) << ", seed " << seed;
    std::printf("  %s: %zu foot points perpendicular within %.3g (seed %llu)\n", device_name(engine), queries.size(),
                double(worst), static_cast<unsigned long long>(seed));
  }
  for (std::size_t e = 1; e < results.size(); ++e)
    for (std::size_t i = 0; i < queries.size(); ++i)
      for (int k = 0; k < 3; ++k)
        EXPECT_NEAR(results[e].points[i].point[k], results[0].points[i].point[k], 1e-10)
            << "engine " << e << " query " << i;
}

// A query alone and in a batch give the same point on every engine (a system's solution does not depend on the
// others of its batch).
TEST(ClosestPoints, ABatchGivesWhatSingleQueriesGive) {
  const std::vector<BezierSurface> teapot = teapot_patches();
  std::mt19937_64 rng(test::run_seed() + 2);
  std::uniform_real_distribution<double> x(-3.5, 3.5), z(-0.5, 3.5);
  std::vector<Vec3> queries;
  for (int i = 0; i < 16; ++i) queries.push_back({x(rng), x(rng) * 0.7, z(rng)});
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    const ClosestPointsResult all = closest_points(teapot, queries, o);
    for (std::size_t i = 0; i < queries.size(); ++i) {
      const ClosestPointsResult one = closest_points(teapot, {queries[i]}, o);
      EXPECT_EQ(one.points[0].patch, all.points[i].patch) << device_name(engine) << " query " << i;
      EXPECT_NEAR(one.points[0].distance, all.points[i].distance, 1e-14) << device_name(engine) << " query " << i;
    }
  }
}

// Calls on one model reuse its prepared patches (a query at a time costs microseconds, not the model's preparation):
// models that differ only slightly, more of them than are kept, taken in turn, must each answer for themselves.
// Each model is the teapot moved by its own offset, so that an answer from another model's patches is off by the
// difference of the offsets; rays alike.
TEST(ClosestPoints, ModelsTakenInTurnAnswerForThemselves) {
  const std::vector<BezierSurface> teapot = teapot_patches();
  std::mt19937_64 rng(test::run_seed() + 5);
  std::uniform_real_distribution<double> x(-3.5, 3.5), z(-0.5, 3.5);
  const Vec3 q = {x(rng), x(rng) * 0.7, z(rng)};
  const ClosestPointsResult base = closest_points(teapot, {q});
  const RayHitsResult base_ray = intersect_rays(teapot, {{0.3, 0.2, 10}}, {{0, 0, -1}});
  ASSERT_GE(base_ray.hits[0].patch, 0);
  for (int round = 0; round < 3; ++round)
    for (int model = 0; model < 6; ++model) {
      const Vec3 offset = {0.25 * model, 0, model % 2 ? 1e-9 : 0.0};  // models 1 and 3 differ by 1e-9 from 0 and 2's
      std::vector<BezierSurface> moved = teapot;
      for (BezierSurface& s : moved)
        for (std::size_t i = 0; i < s.points.size(); ++i) s.points[i] += offset[i % 3];
      const Vec3 mq = {q[0] + offset[0], q[1] + offset[1], q[2] + offset[2]};
      const ClosestPoint got = closest_points(moved, {mq}).points[0];
      EXPECT_EQ(got.patch, base.points[0].patch) << "model " << model << ", round " << round;
      EXPECT_NEAR(got.distance, base.points[0].distance, 1e-12) << "model " << model << ", round " << round;
      for (int k = 0; k < 3; ++k)
        EXPECT_NEAR(got.point[std::size_t(k)] - offset[std::size_t(k)], base.points[0].point[std::size_t(k)], 1e-12)
            << "model " << model << ", round " << round;
      const RayHit hit =
          intersect_rays(moved, {{0.3 + offset[0], 0.2 + offset[1], 10 + offset[2]}}, {{0, 0, -1}}).hits[0];
      EXPECT_EQ(hit.patch, base_ray.hits[0].patch) << "model " << model << ", round " << round;
      EXPECT_NEAR(hit.point[0] - offset[0], base_ray.hits[0].point[0], 1e-12) << "model " << model;
      EXPECT_NEAR(hit.point[2] - offset[2], base_ray.hits[0].point[2], 1e-12) << "model " << model;
    }
}

TEST(ClosestPoints, BadInputIsRefusedWithTheReason) {
  const std::vector<BezierSurface> teapot = teapot_patches();
  auto message = [](auto&& call) { return test::error_message(call); };
  EXPECT_NE(message([] { closest_points({}, {{0, 0, 0}}); }).find("no patches"), std::string::npos);
  EXPECT_NE(message([&] { closest_points(teapot, {{0, NAN, 0}}); }).find("query 0 is not finite"), std::string::npos);
  std::vector<BezierSurface> rational = {make_random_surface(2, 2, 5, true)};
  EXPECT_NE(message([&] { closest_points(rational, {{0, 0, 0}}); }).find("patch 0 is rational"), std::string::npos);
  std::vector<BezierSurface> broken = teapot;
  broken[3].points[7] = INFINITY;
  EXPECT_NE(message([&] { closest_points(broken, {{0, 0, 0}}); }).find("patch 3"), std::string::npos);
  EXPECT_TRUE(closest_points(teapot, {}).points.empty());
}

}  // namespace
}  // namespace parasurf
