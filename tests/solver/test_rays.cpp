// Rays against patch sets: against Newton on (u, v, t) in long double from a dense grid of starts, on every engine,
// with the messy cases of real models (rays through seams and shared corners, rays along an axis through collapsed
// edges, a model far from the origin) and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "parasurf/error.hpp"
#include "parasurf/patches.hpp"
#include "parasurf/solver.hpp"
#include "solver/patch_set.hpp"
#include "solver/teapot_patches.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

using Vec3 = std::array<double, 3>;
using test::teapot_patches;

// The nearest t > 0 where the ray meets the patches: Newton on S(u, v) - o - t d = 0 in long double from an
// n x n grid of starts on every patch (t started at the projection of the start point), kept where it converges
// inside the patch. Infinity where no start converges.
long double reference_t(const std::vector<BezierSurface>& patches, const Vec3& o, const Vec3& d, int n) {
  long double best = INFINITY;
  const long double dd = (long double)d[0] * d[0] + (long double)d[1] * d[1] + (long double)d[2] * d[2];
  for (const BezierSurface& s : patches)
    for (int a = 0; a <= n; ++a)
      for (int b = 0; b <= n; ++b) {
        long double u = (long double)a / n, v = (long double)b / n, t = 0;
        {
          const test::RefJet j = test::reference_eval(s, u, v);
          for (int k = 0; k < 3; ++k) t += (j.s[k] - o[k]) * d[k] / dd;
        }
        bool converged = false;
        for (int it = 0; it < 40 && !converged; ++it) {
          const test::RefJet j = test::reference_eval(s, u, v);
          long double f[3], m[3][3];
          for (int k = 0; k < 3; ++k)
            f[k] = j.s[k] - o[k] - t * d[k], m[k][0] = j.su[k], m[k][1] = j.sv[k], m[k][2] = -d[k];
          const long double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                                  m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                                  m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
          if (!(std::abs(det) > 1e-30L)) break;
          long double x[3];
          for (int c = 0; c < 3; ++c) {  // Cramer's rule: column c replaced by f
            long double q[3][3];
            for (int r = 0; r < 3; ++r)
              for (int k = 0; k < 3; ++k) q[r][k] = k == c ? f[r] : m[r][k];
            x[c] =
                (q[0][0] * (q[1][1] * q[2][2] - q[1][2] * q[2][1]) - q[0][1] * (q[1][0] * q[2][2] - q[1][2] * q[2][0]) +
                 q[0][2] * (q[1][0] * q[2][1] - q[1][1] * q[2][0])) /
                det;
          }
          u -= x[0], v -= x[1], t -= x[2];
          if (std::abs(u) > 10 || std::abs(v) > 10) break;
          converged = std::abs(x[0]) + std::abs(x[1]) < 1e-15L;
        }
        if (converged && u >= -1e-12L && u <= 1 + 1e-12L && v >= -1e-12L && v <= 1 + 1e-12L && t > 0)
          best = std::min(best, t);
      }
  return best;
}

// A hit is a point of its patch on the ray, at the t it reports.
void expect_on_ray(const std::vector<BezierSurface>& patches, const Vec3& o, const Vec3& d, const RayHit& h,
                   const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_GE(h.patch, 0);
  ASSERT_LT(h.patch, std::int64_t(patches.size()));
  EXPECT_GE(h.u, 0);
  EXPECT_LE(h.u, 1);
  EXPECT_GE(h.v, 0);
  EXPECT_LE(h.v, 1);
  const test::RefJet j = test::reference_eval(patches[std::size_t(h.patch)], h.u, h.v);
  const double scale = 1 + std::abs(o[0]) + std::abs(o[1]) + std::abs(o[2]) +
                       std::abs(h.t) * std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(h.point[k], double(j.s[k]), 1e-13 * scale);
    EXPECT_NEAR(h.point[k], o[k] + h.t * d[k], 1e-9 * scale);
  }
}

TEST(Rays, RandomPatchesMatchNewtonFromEveryStartOnEveryEngine) {
  const std::uint64_t seed = test::run_seed();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<BezierSurface> patches;
  // Bicubic, biquintic and mixed degrees, overlapping in space.
  const int degrees[4][2] = {{3, 3}, {5, 5}, {2, 4}, {3, 6}};
  for (int p = 0; p < 4; ++p) patches.push_back(make_random_surface(degrees[p][0], degrees[p][1], seed + 17 * p));
  std::vector<Vec3> origins, directions;
  for (int i = 0; i < 24; ++i) {
    const Vec3 o = {4 * u(rng) - 1.5, 4 * u(rng) - 1.5, 4 * u(rng) - 1.5}, at = {u(rng), u(rng), u(rng)};
    origins.push_back(o);
    directions.push_back({at[0] - o[0], at[1] - o[1], at[2] - o[2]});
  }
  std::vector<long double> want;
  for (std::size_t i = 0; i < origins.size(); ++i) want.push_back(reference_t(patches, origins[i], directions[i], 16));
  int hits = 0;
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    const RayHitsResult r = intersect_rays(patches, origins, directions, o);
    EXPECT_EQ(r.status, "complete") << device_name(engine);
    ASSERT_EQ(r.hits.size(), origins.size());
    for (std::size_t i = 0; i < origins.size(); ++i) {
      const std::string what =
          std::string(device_name(engine)) + " seed " + std::to_string(seed) + " ray " + std::to_string(i);
      if (std::isinf(double(want[i]))) {
        // Newton from the grid found nothing: the solver may still find a grazing hit, which must be on the ray.
        if (r.hits[i].patch >= 0) expect_on_ray(patches, origins[i], directions[i], r.hits[i], what);
        continue;
      }
      ++hits;
      expect_on_ray(patches, origins[i], directions[i], r.hits[i], what);
      // No nearer hit is missed (the reference's starts may miss a root, never invent one).
      EXPECT_LE(r.hits[i].t, double(want[i]) * (1 + 1e-10) + 1e-12)
          << what << " diff " << r.hits[i].t - double(want[i]) << " uv " << r.hits[i].u << " " << r.hits[i].v;
    }
  }
  std::printf("  seed %llu: %d of %zu rays hit (per engine)\n", (unsigned long long)seed,
              hits / int(test::solver_engines().size()), origins.size());
  EXPECT_GT(hits, 0);
}

// The teapot: rays aimed at points on seams, at corners shared by four patches and at the collapsed edges on the
// axis (the lid's knob, the bottom), straight down the axis, and the same model far from the origin: each ray hits
// its target or something nearer on the way, and the shifted model gives the same hits.
TEST(Rays, TeapotSeamsCornersTheAxisAndFarFromTheOrigin) {
  const std::vector<BezierSurface> teapot = teapot_patches();
  std::mt19937_64 rng(test::run_seed() + 3);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Vec3> origins, directions, targets;
  for (int i = 0; i < 30; ++i) {
    const auto p = std::size_t(rng() % teapot.size());
    double uv[2] = {u(rng), u(rng)};
    if (i % 3 == 1) uv[0] = 0;          // on an edge: a seam with the neighbour
    if (i % 3 == 2) uv[0] = uv[1] = 1;  // a corner
    const test::RefJet j = test::reference_eval(teapot[p], uv[0], uv[1]);
    const Vec3 target = {double(j.s[0]), double(j.s[1]), double(j.s[2])};
    const Vec3 o = {8 * u(rng) - 4, 8 * u(rng) - 4, 8 * u(rng) - 2};
    origins.push_back(o);
    directions.push_back({target[0] - o[0], target[1] - o[1], target[2] - o[2]});  // t = 1 at the target
    targets.push_back(target);
  }
  origins.push_back({0, 0, 10}), directions.push_back({0, 0, -1});  // down the axis: the knob's top (z = 3.15)
  origins.push_back({0, 0, -5}), directions.push_back({0, 0, 1});   // up the axis: the bottom's centre (z = 0)
  // Oblique rays at the poles, where four patches meet in one point: far from the origin, rounding that differs from
  // patch to patch can open that point to a ray aimed at it.
  const Vec3 knob_origins[] = {
      {0.70463296082198124, -3.1481519561562568, 4.5386055465746509}, {-2.5, 1.25, 6}, {3, 3, 3.5}, {-1, -3.5, 5}};
  const Vec3 bottom_origins[] = {{0.6, -2.9, -2}, {-3, 0.4, -1.5}, {2, 2, -4}};
  for (const Vec3& o : knob_origins) origins.push_back(o), directions.push_back({-o[0], -o[1], 3.15 - o[2]});
  for (const Vec3& o : bottom_origins) origins.push_back(o), directions.push_back({-o[0], -o[1], -o[2]});
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    const RayHitsResult r = intersect_rays(teapot, origins, directions, o);
    EXPECT_EQ(r.status, "complete");
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const std::string what = std::string(device_name(engine)) + " ray " + std::to_string(i);
      expect_on_ray(teapot, origins[i], directions[i], r.hits[i], what);
      EXPECT_LE(r.hits[i].t, 1 + 1e-9) << what;  // the target, or a nearer point of the teapot on the way
    }
    const RayHit& down = r.hits[targets.size()];
    expect_on_ray(teapot, origins[targets.size()], directions[targets.size()], down, "down the axis");
    EXPECT_NEAR(down.point[2], 3.15, 1e-9);
    const RayHit& up = r.hits[targets.size() + 1];
    expect_on_ray(teapot, origins[targets.size() + 1], directions[targets.size() + 1], up, "up the axis");
    EXPECT_NEAR(up.point[2], 0, 1e-9);
    for (std::size_t i = targets.size() + 2; i < origins.size(); ++i) {  // the oblique rays at the poles
      const std::string what = std::string(device_name(engine)) + " pole ray " + std::to_string(i);
      expect_on_ray(teapot, origins[i], directions[i], r.hits[i], what);
      EXPECT_NEAR(r.hits[i].t, 1, 1e-9) << what;
    }
    // Far from the origin: the same patches and parameters, the same t.
    const Vec3 shift = {3e6, -2e6, 1e6};
    std::vector<Vec3> far_origins = origins;
    for (Vec3& p : far_origins)
      for (int k = 0; k < 3; ++k) p[k] += shift[k];
    const RayHitsResult f = intersect_rays(teapot_patches(shift), far_origins, directions, o);
    // The shifted coordinates are rounded to about 1e-10, which moves a hit along the ray by that over the cosine
    // of its angle to the normal, and a grazing hit (tangent to the surface) by up to the square root of it.
    for (std::size_t i = 0; i < origins.size(); ++i) {
      EXPECT_EQ(f.hits[i].patch >= 0, r.hits[i].patch >= 0) << "far, ray " << i;
      if (r.hits[i].patch < 0) continue;
      const test::RefJet j = test::reference_eval(teapot[std::size_t(r.hits[i].patch)], r.hits[i].u, r.hits[i].v);
      const Vec3& d = directions[i];
      const long double n[3] = {j.su[1] * j.sv[2] - j.su[2] * j.sv[1], j.su[2] * j.sv[0] - j.su[0] * j.sv[2],
                                j.su[0] * j.sv[1] - j.su[1] * j.sv[0]};
      const long double nn = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]),
                        dn = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
      const double cosine = nn > 0 ? double(std::abs(n[0] * d[0] + n[1] * d[1] + n[2] * d[2]) / (nn * dn)) : 0.0;
      const double tolerance = cosine > 0.05 ? 1e-8 * (1 + r.hits[i].t) / cosine : 1e-4 * (1 + r.hits[i].t);
      EXPECT_NEAR(f.hits[i].t, r.hits[i].t, tolerance) << "far, ray " << i << ", cosine " << cosine;
    }
  }
}

TEST(Rays, ABatchGivesWhatSingleRaysGiveAndMissesAreMisses) {
  const std::vector<BezierSurface> teapot = teapot_patches();
  std::vector<Vec3> origins, directions;
  std::mt19937_64 rng(test::run_seed() + 5);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < 20; ++i)
    origins.push_back({6 * u(rng), 6 * u(rng), 6 * u(rng)}), directions.push_back({u(rng), u(rng), u(rng)});
  origins.push_back({0, 0, 10}), directions.push_back({0, 0, 1});    // away from the teapot
  origins.push_back({10, 10, 10}), directions.push_back({1, 0, 0});  // beside it
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    const RayHitsResult all = intersect_rays(teapot, origins, directions, o);
    EXPECT_EQ(all.hits[20].patch, -1);
    EXPECT_EQ(all.hits[21].patch, -1);
    for (std::size_t i = 0; i < origins.size(); ++i) {
      const RayHitsResult one = intersect_rays(teapot, {origins[i]}, {directions[i]}, o);
      EXPECT_EQ(one.hits[0].patch, all.hits[i].patch) << device_name(engine) << " ray " << i;
      EXPECT_NEAR(one.hits[0].t, all.hits[i].t, 1e-14 * (1 + std::abs(all.hits[i].t)))
          << device_name(engine) << " ray " << i;
    }
    // t_min: a ray from a point on the surface skips that point.
    const RayHitsResult again = intersect_rays(teapot, {all.hits[0].point}, {directions[0]}, o, 1e-9);
    if (all.hits[0].patch >= 0 && again.hits[0].patch >= 0) EXPECT_GT(again.hits[0].t, 1e-9);
  }
}

// The edge of an open patch: a ray just inside it or on it hits, one 1e-7 outside misses (the grown domain that
// catches rays through seams must not catch rays beside an edge), also far from the origin.
TEST(Rays, AnOpenPatchsEdgeIsExact) {
  for (const double far : {0.0, 2e6}) {
    BezierSurface flat;
    flat.degree_u = flat.degree_v = 2;
    for (int i = 0; i <= 2; ++i)
      for (int j = 0; j <= 2; ++j) flat.points.insert(flat.points.end(), {far + i / 2.0, j / 2.0, 0.1 * i * j});
    const std::vector<Vec3> origins = {{far + 1 - 1e-12, 0.5, 5},     {far + 1, 0.5, 5},
                                       {far + 1 + 1e-7, 0.5, 5},      {far + 1, 1, 5},
                                       {far + 1 + 1e-7, 1 + 1e-7, 5}, {far - 1e-7, 0.3, 5}};
    const std::vector<Vec3> down(origins.size(), Vec3{0, 0, -1});
    for (Device engine : test::solver_engines()) {
      SolverOptions o;
      o.device = engine;
      const RayHitsResult r = intersect_rays({flat}, origins, down, o);
      const std::string what = std::string(device_name(engine)) + (far > 0 ? " far" : "");
      EXPECT_EQ(r.hits[0].patch, 0) << what;
      EXPECT_EQ(r.hits[1].patch, 0) << what;
      EXPECT_EQ(r.hits[2].patch, -1) << what;
      EXPECT_EQ(r.hits[3].patch, 0) << what;  // the corner
      EXPECT_EQ(r.hits[4].patch, -1) << what;
      EXPECT_EQ(r.hits[5].patch, -1) << what;
      for (int i : {0, 1, 3})
        expect_on_ray({flat}, origins[std::size_t(i)], down[std::size_t(i)], r.hits[std::size_t(i)], what);
    }
  }
}

// The boxes that prune rays and closest-point queries: the control boxes of the sub-patches that restrict_to makes,
// to rounding (the same de Casteljau steps; the compiler may fuse their products differently), for random degrees
// up to 16 each way and coordinates far from the origin.
TEST(Rays, SubPatchBoxesAreTheRestrictedPatchesBoxes) {
  std::mt19937_64 rng(test::run_seed() + 41);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int trial = 0; trial < 40; ++trial) {
    const int m = 1 + int(rng() % 16), n = 1 + int(rng() % 16), pieces = 1 + int(rng() % 5);
    const double far = trial % 2 ? 1e6 : 0;
    std::array<BernsteinPoly, 3> x;
    for (auto& p : x) {
      p.degree = {m, n};
      for (int i = 0; i < (m + 1) * (n + 1); ++i) p.coef.push_back(far + u(rng));
    }
    const std::array<double, 3> offset = {u(rng), far, -far};
    const auto boxes = solver::sub_patch_boxes(x, pieces, offset);
    ASSERT_EQ(boxes.size(), std::size_t(pieces * pieces));
    for (int a = 0; a < pieces; ++a)
      for (int b = 0; b < pieces; ++b)
        for (std::size_t k = 0; k < 3; ++k) {
          const BernsteinPoly strip = restrict_to(x[k], 0, double(a) / pieces, double(a + 1) / pieces);
          const BernsteinPoly piece = restrict_to(strip, 1, double(b) / pieces, double(b + 1) / pieces);
          const auto [lo, hi] = std::minmax_element(piece.coef.begin(), piece.coef.end());
          const auto& box = boxes[std::size_t(a * pieces + b)];
          const double rounding = 1e-14 * (1 + far);
          ASSERT_NEAR(box[0][k], *lo + offset[k], rounding)
              << "degree " << m << "x" << n << ", piece " << a << "," << b;
          ASSERT_NEAR(box[1][k], *hi + offset[k], rounding)
              << "degree " << m << "x" << n << ", piece " << a << "," << b;
        }
  }
}

TEST(Rays, BadInputIsRefusedWithTheReason) {
  const std::vector<BezierSurface> teapot = teapot_patches();
  auto message = [](auto&& call) { return test::error_message(call); };
  EXPECT_NE(message([] { intersect_rays({}, {{0, 0, 0}}, {{0, 0, 1}}); }).find("no patches"), std::string::npos);
  EXPECT_NE(message([&] {
              intersect_rays(teapot, {{0, NAN, 0}}, {{0, 0, 1}});
            }).find("ray 0 is not finite"),
            std::string::npos);
  EXPECT_NE(message([&] {
              intersect_rays(teapot, {{0, 0, 0}, {1, 1, 1}}, {{0, 0, 1}, {0, 0, 0}});
            }).find("ray 1 has no direction"),
            std::string::npos);
  EXPECT_NE(message([&] {
              intersect_rays(teapot, {{0, 0, 0}}, {{1e-300, 0, 1e-300}});
            }).find("ray 0 has no direction"),
            std::string::npos);
  EXPECT_NE(message([&] {
              intersect_rays(teapot, {{0, 0, 0}}, {});
            }).find("1 origins but 0 directions"),
            std::string::npos);
  std::vector<BezierSurface> rational = {make_random_surface(2, 2, 5, true)};
  EXPECT_NE(message([&] {
              intersect_rays(rational, {{0, 0, 0}}, {{0, 0, 1}});
            }).find("patch 0 is rational"),
            std::string::npos);
  EXPECT_NE(message([&] {
              intersect_rays(teapot, {{0, 0, 0}}, {{0, 0, 1}}, {}, NAN);
            }).find("t_min"),
            std::string::npos);
  EXPECT_TRUE(intersect_rays(teapot, {}, {}).hits.empty());
}

}  // namespace
}  // namespace parasurf
