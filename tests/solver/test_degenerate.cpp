// Degenerate inputs of the surface applications, which subdivision alone would refine without end: faces in one
// plane (intersection, bisector), parallel planar faces that a motion brings into one plane (contacts), and one
// curved surface written twice (another degree, more knots, reversed parameters) at rest (contacts, bisector). Each
// case is placed in a random frame far from the origin, and the second face's control points carry rounding at the
// 1e-15 level, so that the planes agree closely but not bit for bit, as faces read from files do.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "parasurf/solver.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

using Vec3 = std::array<double, 3>;

struct Frame {
  Vec3 origin{}, ex{}, ey{}, ez{};
  Vec3 at(double x, double y, double z) const {
    Vec3 p;
    for (int k = 0; k < 3; ++k) p[k] = origin[k] + x * ex[k] + y * ey[k] + z * ez[k];
    return p;
  }
};

// A random rotation (a normalised Gaussian quaternion) about a point up to 1e4 from the origin.
Frame random_frame(std::mt19937_64& rng) {
  std::normal_distribution<double> g;
  double q[4], len = 0;
  for (double& c : q) c = g(rng), len += c * c;
  len = std::sqrt(len);
  for (double& c : q) c /= len;
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  Frame f;
  f.ex = {1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)};
  f.ey = {2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x)};
  f.ez = {2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)};
  std::uniform_real_distribution<double> u(-1e4, 1e4);
  f.origin = {u(rng), u(rng), u(rng)};
  return f;
}

// The rectangle [x0, x1] x [y0, y1] at height z of the frame as a biquadratic Bézier patch; `jitter` moves each
// control point by up to that fraction of its size.
BSplineSurface flat_patch(const Frame& f, double x0, double x1, double y0, double y1, double z, std::mt19937_64& rng,
                          double jitter) {
  std::uniform_real_distribution<double> u(-1, 1);
  BSplineSurface s;
  s.degree_u = s.degree_v = 2;
  s.count_u = s.count_v = 3;
  s.knots_u = s.knots_v = {0, 0, 0, 1, 1, 1};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const Vec3 p = f.at(x0 + (x1 - x0) * i / 2, y0 + (y1 - y0) * j / 2, z);
      for (double c : p) s.points.push_back(c * (1 + jitter * u(rng)));
    }
  return s;
}

Motion linear(const std::array<double, 4>& from, const std::array<double, 4>& to) {
  Motion m;
  m.degree = 1;
  m.knots = {0, 0, 1, 1};
  m.points = {from, to};
  return m;
}

TEST(Degenerate, CoplanarFacesMeetInARegionAtAnyResolution) {
  const std::uint64_t seed = test::run_seed() + 401;
  std::mt19937_64 rng(seed);
  const Frame f = random_frame(rng);
  const BSplineSurface a = flat_patch(f, 0, 1, 0, 1, 0, rng, 0), b = flat_patch(f, 0.25, 1.25, 0.5, 1.5, 0, rng, 1e-15);
  for (Device engine : test::solver_engines()) {
    SCOPED_TRACE(std::string("engine ") + device_name(engine) + ", seed " + std::to_string(seed));
    SolverOptions o;
    o.device = engine;
    o.max_seconds = 20;
    // At 1e-6 of a span the area would be 10^12 samples: the coplanar pair is sampled at 1/128 instead.
    const SurfaceIntersectionResult r = intersect_surfaces(a, b, 1e-6, o);
    ASSERT_EQ(r.status, "complete");
    EXPECT_TRUE(r.curves.empty());
    ASSERT_EQ(r.overlaps.size(), 1u);
    const std::array<double, 4> lo{0.25, 0.5, 0, 0}, hi{1, 1, 0.75, 0.5};
    for (int c = 0; c < 4; ++c) {
      EXPECT_NEAR(r.overlaps[0].lo[std::size_t(c)], lo[std::size_t(c)], 2.0 / 128) << "coordinate " << c;
      EXPECT_NEAR(r.overlaps[0].hi[std::size_t(c)], hi[std::size_t(c)], 2.0 / 128) << "coordinate " << c;
    }
    // The same faces a hair apart (1e-6 of their size, far above rounding): parallel planes, no intersection.
    const BSplineSurface apart = flat_patch(f, 0.25, 1.25, 0.5, 1.5, 1e-6, rng, 0);
    const SurfaceIntersectionResult n = intersect_surfaces(a, apart, 1.0 / 64, o);
    EXPECT_EQ(n.status, "complete");
    EXPECT_TRUE(n.curves.empty());
    EXPECT_TRUE(n.overlaps.empty());
  }
}

TEST(Degenerate, BisectorOfCoplanarFacesIsTheirOverlap) {
  const std::uint64_t seed = test::run_seed() + 402;
  std::mt19937_64 rng(seed);
  const Frame f = random_frame(rng);
  const BSplineSurface a = flat_patch(f, 0, 1, 0, 1, 0, rng, 0), b = flat_patch(f, 0, 1, 0, 1, 0, rng, 1e-15);
  for (Device engine : test::solver_engines()) {
    SCOPED_TRACE(std::string("engine ") + device_name(engine) + ", seed " + std::to_string(seed));
    SolverOptions o;
    o.device = engine;
    o.max_seconds = 20;
    const double h = 1.0 / 64;
    const SurfaceBisectorResult r = surface_bisector(a, b, h, o);
    ASSERT_EQ(r.status, "complete");
    EXPECT_TRUE(r.samples.empty());
    ASSERT_EQ(r.overlaps.size(), 1u);
    for (int c = 0; c < 4; ++c) {
      EXPECT_NEAR(r.overlaps[0].lo[std::size_t(c)], 0, 2 * h) << "coordinate " << c;
      EXPECT_NEAR(r.overlaps[0].hi[std::size_t(c)], 1, 2 * h) << "coordinate " << c;
    }
  }
}

TEST(Degenerate, ParallelFacesTouchWhenTheirPlanesMeet) {
  const std::uint64_t seed = test::run_seed() + 403;
  std::mt19937_64 rng(seed);
  const Frame f = random_frame(rng);
  std::uniform_real_distribution<double> u(0.2, 0.8);
  const double when = u(rng), gap = 0.5;
  // The moving face starts `gap` above the fixed one and moves down along the frame's normal (and sideways), so
  // that the planes meet at t = when; the fixed face is large enough to hold it then.
  const BSplineSurface moving = flat_patch(f, 0, 1, 0, 1, gap, rng, 0), fixed = flat_patch(f, -2, 3, -2, 3, 0, rng, 1e-15);
  const Vec3 end = f.at(0.3, -0.2, -gap / when), start = f.at(0, 0, 0);
  const Motion down = linear({1, 0, 0, 0}, {1, end[0] - start[0], end[1] - start[1], end[2] - start[2]});
  for (Device engine : test::solver_engines()) {
    SCOPED_TRACE(std::string("engine ") + device_name(engine) + ", seed " + std::to_string(seed));
    SolverOptions o;
    o.device = engine;
    o.max_seconds = 20;
    const ContactResult r = contact_points(moving, fixed, down, o);
    ASSERT_EQ(r.status, "complete");
    EXPECT_TRUE(r.contacts.empty());
    ASSERT_EQ(r.regions.size(), 1u);
    EXPECT_NEAR(r.regions[0].t0, when, 1e-9);
    EXPECT_NEAR(r.regions[0].t1, when, 1e-9);
    // The whole moving face touches: its box is the unit square (to the sampling), inside the fixed face's.
    for (int c = 0; c < 2; ++c) {
      EXPECT_NEAR(r.regions[0].lo[std::size_t(c)], 0, 2.0 / 64);
      EXPECT_NEAR(r.regions[0].hi[std::size_t(c)], 1, 2.0 / 64);
      EXPECT_GT(r.regions[0].lo[std::size_t(c + 2)], 0.2);
      EXPECT_LT(r.regions[0].hi[std::size_t(c + 2)], 0.8);
    }
    // Half the way down the planes never meet; with no motion, faces in one plane touch all the time.
    const Motion half = linear({1, 0, 0, 0}, {1, 0.5 * (end[0] - start[0]), 0.5 * (end[1] - start[1]), 0.5 * (end[2] - start[2])});
    const BSplineSurface low = flat_patch(f, 0, 1, 0, 1, gap / when, rng, 0);
    const ContactResult never = contact_points(low, fixed, half, o);
    EXPECT_EQ(never.status, "complete");
    EXPECT_TRUE(never.regions.empty() && never.contacts.empty());
    const BSplineSurface same = flat_patch(f, 0, 1, 0, 1, 0, rng, 1e-15);
    const ContactResult always = contact_points(same, fixed, linear({1, 0, 0, 0}, {1, 0, 0, 0}), o);
    ASSERT_EQ(always.status, "complete");
    ASSERT_EQ(always.regions.size(), 1u);
    EXPECT_EQ(always.regions[0].t0, 0);
    EXPECT_EQ(always.regions[0].t1, 1);
    std::printf("  %s: frame at (%.0f, %.0f, %.0f): planes meet at t = %.12f (expected %.12f)\n", device_name(engine), f.origin[0],
                f.origin[1], f.origin[2], r.regions[0].t0, when);
  }
}

TEST(Degenerate, CurvedCopiesThatStayTogetherAreOneRegion) {
  const std::uint64_t seed = test::run_seed() + 404;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  // A random bicubic patch far from the origin, and its copy with the u direction reversed, v written at degree 5
  // (the same surface, two degree raisings) and rounding at 1e-15.
  const Frame f = random_frame(rng);
  BSplineSurface a, b;
  a.degree_u = a.degree_v = 3;
  a.count_u = a.count_v = 4;
  a.knots_u = a.knots_v = {0, 0, 0, 0, 1, 1, 1, 1};
  std::vector<Vec3> net;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) net.push_back(f.at(i / 3.0, j / 3.0, 0.3 * u(rng)));
  for (const Vec3& p : net) a.points.insert(a.points.end(), p.begin(), p.end());
  b = a;
  b.degree_v = 5;
  b.count_v = 6;
  b.knots_v = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
  b.points.clear();
  for (int i = 3; i >= 0; --i) {
    // Raising a row's degree from n to n + 1: q_k = k/(n+1) p_(k-1) + (1 - k/(n+1)) p_k.
    std::vector<Vec3> row(net.begin() + 4 * i, net.begin() + 4 * i + 4);
    for (int n = 3; n < 5; ++n) {
      std::vector<Vec3> up(std::size_t(n + 2));
      for (int k = 0; k <= n + 1; ++k)
        for (int c = 0; c < 3; ++c)
          up[std::size_t(k)][std::size_t(c)] = (k > 0 ? double(k) / (n + 1) * row[std::size_t(k - 1)][std::size_t(c)] : 0) +
                                               (k <= n ? (1 - double(k) / (n + 1)) * row[std::size_t(k)][std::size_t(c)] : 0);
      row = up;
    }
    for (const Vec3& p : row)
      for (double c : p) b.points.push_back(c * (1 + 1e-15 * u(rng)));
  }
  // And a copy with a knot inserted along u at a random tau (Boehm: q_i = tau p_i + (1 - tau) p_(i-1), i = 1..3):
  // the same surface cut into two pieces at other knots.
  const double tau = 0.2 + 0.6 * (u(rng) + 1) / 2;
  BSplineSurface k = a;
  k.count_u = 5;
  k.knots_u = {0, 0, 0, 0, tau, 1, 1, 1, 1};
  k.points.clear();
  for (int i = 0; i <= 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int c = 0; c < 3; ++c) {
        const double p0 = i > 0 ? net[std::size_t(4 * (i - 1) + j)][std::size_t(c)] : 0;
        const double p1 = i < 4 ? net[std::size_t(4 * i + j)][std::size_t(c)] : 0;
        k.points.push_back(i == 0 ? p1 : i == 4 ? p0 : tau * p1 + (1 - tau) * p0);
      }
  Motion rest;  // two motion pieces, the surface at rest in both
  rest.degree = 1;
  rest.knots = {0, 0, 0.5, 1, 1};
  rest.points = {{1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}};
  for (Device engine : test::solver_engines()) {
    SCOPED_TRACE(std::string("engine ") + device_name(engine) + ", seed " + std::to_string(seed));
    SolverOptions o;
    o.device = engine;
    o.max_seconds = 10;  // without the recognition the contact set is subdivided to this limit
    const ContactResult r = contact_points(a, b, rest, o);
    ASSERT_EQ(r.status, "complete");
    EXPECT_TRUE(r.contacts.empty());
    ASSERT_EQ(r.regions.size(), 2u);
    EXPECT_EQ(r.regions[0].t0, 0);
    EXPECT_EQ(r.regions[0].t1, 0.5);
    EXPECT_EQ(r.regions[1].t1, 1);
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(r.regions[0].lo[std::size_t(c)], 0);
      EXPECT_EQ(r.regions[0].hi[std::size_t(c)], 1);
    }
    // The bisector of the two is no surface where they coincide: all of them, one overlap.
    const SurfaceBisectorResult bis = surface_bisector(a, b, 1.0 / 4, o);
    ASSERT_EQ(bis.status, "complete");
    ASSERT_EQ(bis.overlaps.size(), 1u);
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(bis.overlaps[0].lo[std::size_t(c)], 0);
      EXPECT_EQ(bis.overlaps[0].hi[std::size_t(c)], 1);
    }
    // The knot-inserted copy at rest: in contact over [0, tau] and [tau, 1] along u, all of v, in both motion pieces.
    SCOPED_TRACE("knot at " + std::to_string(tau));
    const ContactResult rk = contact_points(k, a, rest, o);
    ASSERT_EQ(rk.status, "complete");
    EXPECT_TRUE(rk.contacts.empty());
    ASSERT_EQ(rk.regions.size(), 4u);
    double covered = 0;
    for (const ContactRegion& g : rk.regions) {
      EXPECT_EQ(g.lo[0], g.lo[2]);
      EXPECT_EQ(g.hi[0], g.hi[2]);
      EXPECT_TRUE(g.lo[0] == 0 || g.lo[0] == tau);
      EXPECT_EQ(g.hi[1], 1);
      covered += (g.hi[0] - g.lo[0]) * (g.t1 - g.t0);
    }
    EXPECT_NEAR(covered, 1.0, 1e-15);
    EXPECT_EQ(surface_bisector(a, k, 1.0 / 4, o).overlaps.size(), 2u);
  }
}

}  // namespace
}  // namespace parasurf
