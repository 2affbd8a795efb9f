// Solver applications: exact divided differences, the Hausdorff distance of planar curves against a dense
// brute-force search refined by golden-section steps, and the solution-set sampler and polyline linking.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "parasurf/solver.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

TEST(Bernstein, DividedDifferencesAreExact) {
  std::mt19937_64 rng(test::run_seed() + 31);
  std::normal_distribution<double> g;
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> f(std::size_t(2 + rng() % 8));
    for (double& c : f) c = g(rng);
    const BernsteinPoly fp = BernsteinPoly::univariate(f, 0, 1);
    const BernsteinPoly h = divided_difference(f, 2, 0, 3);  // r = variable 2, s = variable 0
    const BernsteinPoly h0 = divided_difference_at_end(f, 0, 1, 2), h1 = divided_difference_at_end(f, 1, 1, 2);
    for (int k = 0; k < 20; ++k) {
      const double r = u(rng), s = u(rng);
      const double x[3] = {s, 0.3, r}, y[2] = {0.7, r};
      const double fr = fp.evaluate(&r), fs = fp.evaluate(&s), zero = 0, one = 1;
      EXPECT_NEAR(h.evaluate(x) * (r - s), fr - fs, 1e-12 * (1 + std::abs(fr)));
      EXPECT_NEAR(h0.evaluate(y) * r, fr - fp.evaluate(&zero), 1e-12 * (1 + std::abs(fr)));
      EXPECT_NEAR(h1.evaluate(y) * (r - 1), fr - fp.evaluate(&one), 1e-12 * (1 + std::abs(fr)));
    }
  }
}

BSplineCurve2 random_bspline(std::mt19937_64& rng, int count, int degree, double shift) {
  std::uniform_real_distribution<double> u(-1, 1);
  BSplineCurve2 c;
  c.degree = degree;
  for (int i = 0; i < count; ++i) c.points.push_back({2.0 * i / (count - 1) - 1 + 0.3 * u(rng), 0.6 * u(rng) + shift});
  c.knots.assign(std::size_t(degree + 1), 0.0);
  for (int i = 1; i < count - degree; ++i) c.knots.push_back(double(i) / (count - degree));
  c.knots.insert(c.knots.end(), std::size_t(degree + 1), 1.0);
  return c;
}

std::array<double, 2> evaluate(const std::vector<BezierPiece>& pieces, double u) {
  std::size_t i = 0;
  while (i + 1 < pieces.size() && u > pieces[i].u1) ++i;
  const double t = (u - pieces[i].u0) / (pieces[i].u1 - pieces[i].u0);
  auto w = pieces[i].curve.points;
  for (std::size_t r = 1; r < w.size(); ++r)
    for (std::size_t j = 0; j + r < w.size(); ++j)
      for (int k = 0; k < 2; ++k) w[j][k] = (1 - t) * w[j][k] + t * w[j + 1][k];
  return w[0];
}

// Golden-section search for the extremum of f in [a, b] (sign = 1: minimum, -1: maximum).
template <class F>
double golden(F&& f, double a, double b, double sign, double* arg = nullptr) {
  const double phi = 0.5 * (std::sqrt(5.0) - 1);
  double c = b - phi * (b - a), d = a + phi * (b - a), fc = sign * f(c), fd = sign * f(d);
  for (int it = 0; it < 90; ++it) {
    if (fc < fd) b = d, d = c, fd = fc, c = b - phi * (b - a), fc = sign * f(c);
    else a = c, c = d, fc = fd, d = a + phi * (b - a), fd = sign * f(d);
  }
  if (arg) *arg = 0.5 * (a + b);
  return sign * std::min(fc, fd);
}

// The distance from p to the curve by dense samples refined by golden-section steps around each local minimum.
double brute_distance(const BSplineCurve2& b, const std::array<double, 2>& p, int N = 4000) {
  const auto pb = bspline_to_bezier(b);
  const double b0 = pb.front().u0, b1 = pb.back().u1;
  auto dist = [&](double r) {
    const auto q = evaluate(pb, r);
    return std::hypot(q[0] - p[0], q[1] - p[1]);
  };
  std::vector<double> d(N + 1);
  for (int i = 0; i <= N; ++i) d[i] = dist(b0 + (b1 - b0) * i / N);
  double best = std::min(d[0], d[N]);
  for (int i = 0; i <= N; ++i)
    if ((i == 0 || d[i] <= d[i - 1]) && (i == N || d[i] <= d[i + 1]))
      best = std::min(best, golden(dist, b0 + (b1 - b0) * std::max(0, i - 1) / N, b0 + (b1 - b0) * std::min(N, i + 1) / N, 1));
  return best;
}

// Brute force: min over dense samples of B refined around every local minimum; max over dense samples of A refined
// around every local maximum.
double brute_one_sided(const BSplineCurve2& a, const BSplineCurve2& b) {
  const auto pa = bspline_to_bezier(a);
  const double a0 = pa.front().u0, a1 = pa.back().u1;
  const int N = 1500;
  auto h = [&](double t) { return brute_distance(b, evaluate(pa, t), 1500); };
  std::vector<double> d(N + 1);
  for (int i = 0; i <= N; ++i) d[i] = h(a0 + (a1 - a0) * i / N);
  double best = std::max(d[0], d[N]);
  for (int i = 0; i <= N; ++i)  // a peak can sit between an end and its neighbouring sample
    if ((i == 0 || d[i] >= d[i - 1]) && (i == N || d[i] >= d[i + 1]))
      best = std::max(best, golden(h, a0 + (a1 - a0) * std::max(0, i - 1) / N, a0 + (a1 - a0) * std::min(N, i + 1) / N, -1));
  return best;
}

TEST(Hausdorff, EqualsBruteForceOnRandomCurves) {
  const std::uint64_t seed = test::run_seed() + 32;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 4; ++trial) {
    const BSplineCurve2 a = random_bspline(rng, 5 + int(rng() % 4), 3, 0.0), b = random_bspline(rng, 4 + int(rng() % 5), 2 + int(rng() % 2), 0.4);
    const double ab = brute_one_sided(a, b), ba = brute_one_sided(b, a);
    std::vector<Device> engines = test::solver_engines();
    engines.push_back(Device::Auto);  // the CPU here: the directions side by side on 4 threads or more
    for (Device engine : engines) {
      SolverOptions o;
      o.device = engine;
      if (engine == Device::Auto) o.threads = 4;
      const HausdorffResult r = hausdorff_distance(a, b, o);
      SCOPED_TRACE(std::string(device_name(engine)) + ": seed " + std::to_string(seed) + " trial " + std::to_string(trial));
      ASSERT_EQ(r.status, "complete");
      EXPECT_NEAR(r.a_to_b.distance, ab, 1e-9);
      EXPECT_NEAR(r.b_to_a.distance, ba, 1e-9);
      EXPECT_NEAR(r.distance, std::max(ab, ba), 1e-9);
      // The reported pair: a point of A at its parameter, and the closest point of B.
      const auto pa = bspline_to_bezier(a), pb = bspline_to_bezier(b);
      const auto from = evaluate(pa, r.a_to_b.t), to = evaluate(pb, r.a_to_b.r);
      EXPECT_NEAR(std::hypot(from[0] - to[0], from[1] - to[1]), r.a_to_b.distance, 1e-12);
      // Its distance is the true distance from that point to B (no closer point of B was missed).
      EXPECT_NEAR(brute_distance(b, from), r.a_to_b.distance, 1e-12);
      EXPECT_NEAR(brute_distance(a, r.b_to_a.from), r.b_to_a.distance, 1e-12);
    }
  }
}

TEST(Hausdorff, SelfBisectorCase) {
  for (Device engine : test::solver_engines()) {
  SCOPED_TRACE(std::string("engine ") + device_name(engine));
  SolverOptions o;
  o.device = engine;
  // A straight segment above a "W": the farthest point of the segment from the W lies over the W's middle peak's
  // neighbourhood, where two closest points compete (the bisector case); the brute force agrees.
  BezierCurve2 a{{{-1, 1}, {1, 1}}};
  BezierCurve2 b{{{-1, 0}, {-0.5, -1.5}, {0, 1.2}, {0.5, -1.5}, {1, 0}}};
  const HausdorffResult r = hausdorff_distance(a, b, o);
  BSplineCurve2 sa{1, {0, 0, 1, 1}, a.points}, sb{4, {0, 0, 0, 0, 0, 1, 1, 1, 1, 1}, b.points};
  EXPECT_NEAR(r.a_to_b.distance, brute_one_sided(sa, sb), 1e-9);
  EXPECT_NEAR(r.b_to_a.distance, brute_one_sided(sb, sa), 1e-9);
  }
}

// A control point at 1e18 beside ones of order 1: the rounding of the systems' coefficients hides their sign over
// wide areas, so cells multiply without a continuum's wide frontier. Depth first, the task scheme refined them all
// to the tolerance (past the 60 s limit here on two cores, then "limit reached"); every engine now finishes, with
// the right answer: the near part of the quadratic is, to 1e-9, the ray from (1, 0) up, so the point of the other
// curve farthest from it is (0, 0.8), 1 away.
TEST(Hausdorff, FarControlPointFinishes) {
  const BezierCurve2 a{{{0, 1e18}, {0.5, 1}, {1, 0}}};
  const BSplineCurve2 b{2, {0, 0, 0, 0.5, 1, 1, 1}, {{0, 0.8}, {0.3, -0.2}, {0.7, 1.0}, {1, 0.2}}};
  const BSplineCurve2 sa{2, {0, 0, 0, 1, 1, 1}, a.points};
  // (The level scheme finishes too, in about 5 s on two cores and 25 s under AddressSanitizer: its clustering of
  // the wide cells it takes is quadratic; left out here.)
  std::vector<std::pair<Device, SolverCpuScheme>> runs{{Device::Cpu, SolverCpuScheme::TaskBuffer}};
  for (Device d : test::solver_engines())  // the GPU engines, breadth first, meet the waiting limit
    if (d != Device::Cpu) runs.emplace_back(d, SolverCpuScheme::TaskBuffer);
  for (const auto& [device, scheme] : runs) {
    SCOPED_TRACE(std::string(device_name(device)) + (scheme == SolverCpuScheme::TaskBuffer ? " tasks" : " levels"));
    SolverOptions o;
    o.device = device;
    o.cpu_scheme = scheme;
    o.max_seconds = 60;
    const HausdorffResult r = hausdorff_distance(sa, b, o);
    EXPECT_EQ(r.status, "complete");  // (about 1 s on two cores)
    EXPECT_NEAR(r.a_to_b.distance, 1e18, 1e3);
    EXPECT_NEAR(r.b_to_a.distance, 1.0, 1e-6);
    EXPECT_EQ(r.b_to_a.from[0], 0.0);
    EXPECT_EQ(r.b_to_a.from[1], 0.8);
  }
}

// ------------------------------------------------------------------------------------------------ surfaces

// A Bézier patch as the clamped B-spline of one span; points[i][j], i along u.
BSplineSurface bezier_surface(const std::vector<std::vector<std::array<double, 3>>>& points) {
  BSplineSurface s;
  s.count_u = int(points.size());
  s.count_v = int(points[0].size());
  s.degree_u = s.count_u - 1;
  s.degree_v = s.count_v - 1;
  for (int k = 0; k < 2; ++k) {
    auto& kn = k == 0 ? s.knots_u : s.knots_v;
    const int p = k == 0 ? s.degree_u : s.degree_v;
    kn.assign(std::size_t(p + 1), 0.0);
    kn.insert(kn.end(), std::size_t(p + 1), 1.0);
  }
  for (const auto& row : points)
    for (const auto& q : row) s.points.insert(s.points.end(), q.begin(), q.end());
  return s;
}

// z = x^2 + y^2 + lift over [-1, 1]^2, exactly (biquadratic).
BSplineSurface paraboloid(double lift) {
  const double x[3] = {-1, 0, 1}, sq[3] = {1, -1, 1};
  std::vector<std::vector<std::array<double, 3>>> p(3, std::vector<std::array<double, 3>>(3));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) p[i][j] = {x[i], x[j], sq[i] + sq[j] + lift};
  return bezier_surface(p);
}
BSplineSurface plane_z(double z, double half) {
  return bezier_surface({{{-half, -half, z}, {-half, half, z}}, {{half, -half, z}, {half, half, z}}});
}

// A wavy height field as a degree (2, 3) B-spline with interior knots: random heights in lift + tilt * x ± 0.4.
BSplineSurface wavy(std::mt19937_64& rng, double lift, double tilt = 0) {
  std::uniform_real_distribution<double> u(-1, 1);
  BSplineSurface s;
  s.degree_u = 2, s.degree_v = 3, s.count_u = 5, s.count_v = 6;
  s.knots_u = {0, 0, 0, 0.3, 0.7, 1, 1, 1};
  s.knots_v = {0, 0, 0, 0, 0.4, 0.6, 1, 1, 1, 1};
  for (int i = 0; i < s.count_u; ++i)
    for (int j = 0; j < s.count_v; ++j) {
      const double x = -1 + 2.0 * i / (s.count_u - 1), y = -1 + 2.0 * j / (s.count_v - 1);
      s.points.insert(s.points.end(), {x + 0.1 * u(rng), y + 0.1 * u(rng), lift + tilt * x + 0.4 * u(rng)});
    }
  return s;
}

double distance3(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

TEST(SurfaceIntersection, ParaboloidMeetsPlaneInOneClosedCircle) {
  for (Device engine : test::solver_engines()) {
  SCOPED_TRACE(std::string("engine ") + device_name(engine));
  SolverOptions o;
  o.device = engine;
  const SurfaceIntersectionResult r = intersect_surfaces(paraboloid(0), plane_z(0.5, 1.5), 1.0 / 64, o);
  ASSERT_EQ(r.status, "complete");
  ASSERT_EQ(r.curves.size(), 1u);
  const IntersectionCurve& c = r.curves[0];
  EXPECT_TRUE(c.closed);
  double length = 0, worst = 0;
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    const auto& p = c.points[i];
    worst = std::max({worst, std::abs(p[0] * p[0] + p[1] * p[1] - 0.5), std::abs(p[2] - 0.5)});
    if (i > 0) length += distance3(p, c.points[i - 1]);
  }
  EXPECT_LT(worst, 1e-10);
  // The polyline follows the circle in order: its length is the circumference, less the chord defect.
  EXPECT_NEAR(length, 2 * M_PI * std::sqrt(0.5), 0.01 * 2 * M_PI * std::sqrt(0.5));
  std::printf("  %s: paraboloid x plane: %zu points, closed, off the circle by %.2g, length %.6f (circle %.6f)\n", device_name(engine), c.points.size(), worst,
              length, 2 * M_PI * std::sqrt(0.5));
  }
}

// Surfaces that coincide over an area (a patch and an exact sub-patch of it; tilted overlapping planes): the
// intersection there is 2-D, reported as a region whose box is the overlap's to a few samples, not as curves; a
// tangential contact (a parabolic cylinder on a plane) stays one curve.
TEST(SurfaceIntersection, CoincidentAreasAreRegionsNotCurves) {
  std::mt19937_64 rng(test::run_seed() + 77);
  std::uniform_int_distribution<int> height(-4, 4);
  std::vector<std::vector<std::array<double, 3>>> p(4, std::vector<std::array<double, 3>>(4));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) p[std::size_t(i)][std::size_t(j)] = {i / 3.0, j / 3.0, height(rng) / 8.0};
  // The arc [a, b] of a cubic by blossoming: exact for dyadic a, b and these coordinates.
  auto arc = [](std::vector<std::array<double, 3>> c, double a, double b) {
    auto blossom = [&](double x, double y, double z) {
      auto w = c;
      for (double u : {x, y, z})
        for (std::size_t k = 0; k + 1 < w.size(); ++k)
          for (int d = 0; d < 3; ++d) w[k][std::size_t(d)] = (1 - u) * w[k][std::size_t(d)] + u * w[k + 1][std::size_t(d)];
      return w[0];
    };
    return std::vector<std::array<double, 3>>{blossom(a, a, a), blossom(a, a, b), blossom(a, b, b), blossom(b, b, b)};
  };
  auto q = p;
  for (int j = 0; j < 4; ++j) {
    std::vector<std::array<double, 3>> column;
    for (int i = 0; i < 4; ++i) column.push_back(p[std::size_t(i)][std::size_t(j)]);
    const auto c = arc(column, 0.25, 0.75);
    for (int i = 0; i < 4; ++i) q[std::size_t(i)][std::size_t(j)] = c[std::size_t(i)];
  }
  for (auto& row : q) row = arc(row, 0.125, 0.875);
  const double h = 1.0 / 64;
  for (Device engine : test::solver_engines()) {
    SCOPED_TRACE(std::string("engine ") + device_name(engine) + ", seed " + std::to_string(test::run_seed() + 77));
    SolverOptions o;
    o.device = engine;
    const SurfaceIntersectionResult r = intersect_surfaces(bezier_surface(p), bezier_surface(q), h, o);
    ASSERT_EQ(r.status, "complete");
    EXPECT_TRUE(r.curves.empty());
    ASSERT_EQ(r.overlaps.size(), 1u);
    const std::array<double, 4> lo{0.25, 0.125, 0, 0}, hi{0.75, 0.875, 1, 1};
    for (int c = 0; c < 4; ++c) {
      EXPECT_NEAR(r.overlaps[0].lo[std::size_t(c)], lo[std::size_t(c)], 2 * h) << "coordinate " << c;
      EXPECT_NEAR(r.overlaps[0].hi[std::size_t(c)], hi[std::size_t(c)], 2 * h) << "coordinate " << c;
    }
    // Two tilted planes that overlap on a quarter of the first: [0.5, 1]^2 of it is [0, 0.5]^2 of the second.
    auto tilted = [](double shift) {
      auto at = [&](double u, double v) {
        const double x = u + shift, y = v + shift;
        return std::array<double, 3>{x, y, 0.3 * x - 0.2 * y + 1};
      };
      return bezier_surface({{at(0, 0), at(0, 1)}, {at(1, 0), at(1, 1)}});
    };
    const SurfaceIntersectionResult t = intersect_surfaces(tilted(0), tilted(0.5), h, o);
    EXPECT_TRUE(t.curves.empty());
    ASSERT_EQ(t.overlaps.size(), 1u);
    EXPECT_NEAR(t.overlaps[0].lo[0], 0.5, 2 * h);
    EXPECT_NEAR(t.overlaps[0].hi[2], 0.5, 2 * h);
    // A parabolic cylinder z = (1 - 2u)^2 touches the plane z = 0 along u = 1/2: one curve, no region.
    const BSplineSurface cylinder = bezier_surface({{{0, 0, 1}, {0, 1, 1}}, {{0.5, 0, -1}, {0.5, 1, -1}}, {{1, 0, 1}, {1, 1, 1}}});
    const SurfaceIntersectionResult c = intersect_surfaces(plane_z(0, 2), cylinder, h, o);
    EXPECT_TRUE(c.overlaps.empty());
    EXPECT_EQ(c.curves.size(), 1u);
  }
}

TEST(SurfaceIntersection, PointsLieOnBothBSplineSurfaces) {
  for (Device engine : test::solver_engines()) {
  SCOPED_TRACE(std::string("engine ") + device_name(engine));
  SolverOptions o;
  o.device = engine;
  const std::uint64_t seed = test::run_seed() + 33;
  std::mt19937_64 rng(seed);
  // The second one is tilted so that it lies below the first near x = -1 and above it near x = 1: two untilted
  // random height fields need not meet at all.
  const BSplineSurface a = wavy(rng, 0.0), b = wavy(rng, 0.1, 0.8);
  const SurfaceIntersectionResult r = intersect_surfaces(a, b, 1.0 / 64, o);
  ASSERT_EQ(r.status, "complete");
  ASSERT_FALSE(r.curves.empty()) << "seed " << seed;
  double worst = 0, gap = 0;
  std::size_t points = 0;
  for (const auto& c : r.curves)
    for (std::size_t i = 0; i < c.points.size(); ++i) {
      const auto& q = c.params[i];
      worst = std::max({worst, distance3(evaluate_bspline(a, q[0], q[1]), c.points[i]), distance3(evaluate_bspline(b, q[2], q[3]), c.points[i])});
      if (i > 0) gap = std::max(gap, distance3(c.points[i], c.points[i - 1]));
      ++points;
    }
  EXPECT_LT(worst, 1e-10) << "seed " << seed;
  EXPECT_LT(gap, 0.2) << "seed " << seed;  // consecutive points are neighbours along the curve
  std::printf("  %s: wavy surfaces (seed %llu): %zu curve(s), %zu points, on both surfaces within %.2g\n", device_name(engine), (unsigned long long)seed,
              r.curves.size(), points, worst);
  }
}

Motion linear_motion(std::array<double, 4> from, std::array<double, 4> to) {
  Motion m;
  m.degree = 3;
  m.knots = {0, 0, 0, 0, 1, 1, 1, 1};
  for (int i = 0; i < 4; ++i) {
    std::array<double, 4> p{};
    for (int k = 0; k < 4; ++k) p[k] = from[k] + (to[k] - from[k]) * i / 3.0;
    m.points.push_back(p);
  }
  return m;
}

TEST(Contacts, ScaledParaboloidTouchesPlaneAtItsVertex) {
  for (Device engine : test::solver_engines()) {
  SCOPED_TRACE(std::string("engine ") + device_name(engine));
  SolverOptions o;
  o.device = engine;
  // scale 1 + 0.2 t, translation (0.1 t, 0, -2 t): the vertex z = scale reaches z = 0 at t = 1 / 1.8.
  const ContactResult r = contact_points(paraboloid(1.0), plane_z(0, 2), linear_motion({1, 0, 0, 0}, {1.2, 0.1, 0, -2}), o);
  ASSERT_EQ(r.status, "complete");
  ASSERT_EQ(r.contacts.size(), 1u);
  const ContactPoint& c = r.contacts[0];
  const double t = 1 / 1.8;
  EXPECT_NEAR(c.t, t, 1e-12);
  EXPECT_NEAR(c.u1, 0.5, 1e-9);
  EXPECT_NEAR(c.v1, 0.5, 1e-9);
  EXPECT_NEAR(c.point[0], 0.1 * t, 1e-12);
  EXPECT_NEAR(c.point[1], 0, 1e-12);
  EXPECT_NEAR(c.point[2], 0, 1e-12);
  }
}

TEST(Contacts, SatisfyAllFiveEquations) {
  for (Device engine : test::solver_engines()) {
  SCOPED_TRACE(std::string("engine ") + device_name(engine));
  SolverOptions o;
  o.device = engine;
  const std::uint64_t seed = test::run_seed() + 34;
  std::mt19937_64 rng(seed);
  const BSplineSurface a = wavy(rng, 0.0), b = wavy(rng, 0.0);
  std::uniform_real_distribution<double> u(-0.3, 0.3);
  // Down through the other surface, with a sideways drift and a changing scale (7 control points).
  Motion m;
  m.knots = {0, 0, 0, 0, 0.25, 0.5, 0.75, 1, 1, 1, 1};
  for (int i = 0; i < 7; ++i) m.points.push_back({0.8 + 0.05 * i, u(rng), u(rng), 1.6 - 0.5 * i});
  const ContactResult r = contact_points(a, b, m, o);
  ASSERT_EQ(r.status, "complete") << "seed " << seed;
  ASSERT_FALSE(r.contacts.empty()) << "seed " << seed;
  // Independent check by de Boor evaluation and central differences for the tangents.
  const auto pa = bspline_to_bezier(BSplineCurve2{3, m.knots, [&] {
                                                    std::vector<std::array<double, 2>> v;
                                                    for (const auto& p : m.points) v.push_back({p[0], p[1]});
                                                    return v;
                                                  }()}),
             pb = bspline_to_bezier(BSplineCurve2{3, m.knots, [&] {
                                                    std::vector<std::array<double, 2>> v;
                                                    for (const auto& p : m.points) v.push_back({p[2], p[3]});
                                                    return v;
                                                  }()});
  double worst_position = 0, worst_normal = 0;
  for (const auto& c : r.contacts) {
    const auto s_tx = evaluate(pa, c.t), ty_tz = evaluate(pb, c.t);
    const auto p1 = evaluate_bspline(a, c.u1, c.v1), p2 = evaluate_bspline(b, c.u2, c.v2);
    const std::array<double, 3> moved{s_tx[0] * p1[0] + s_tx[1], s_tx[0] * p1[1] + ty_tz[0], s_tx[0] * p1[2] + ty_tz[1]};
    worst_position = std::max(worst_position, distance3(moved, p2));
    const double h = 1e-6;
    auto diff = [&](const BSplineSurface& s, double uu, double vv, int along) {
      const auto lo = evaluate_bspline(s, uu - (along == 0) * h, vv - (along == 1) * h), hi = evaluate_bspline(s, uu + (along == 0) * h, vv + (along == 1) * h);
      std::array<double, 3> d{};
      for (int k = 0; k < 3; ++k) d[k] = (hi[k] - lo[k]) / (2 * h);
      return d;
    };
    const auto au = diff(a, c.u1, c.v1, 0), av = diff(a, c.u1, c.v1, 1), bu = diff(b, c.u2, c.v2, 0), bv = diff(b, c.u2, c.v2, 1);
    const std::array<double, 3> n{bu[1] * bv[2] - bu[2] * bv[1], bu[2] * bv[0] - bu[0] * bv[2], bu[0] * bv[1] - bu[1] * bv[0]};
    const double nn = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (const auto& t : {au, av}) {
      const double tt = std::sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
      worst_normal = std::max(worst_normal, std::abs(t[0] * n[0] + t[1] * n[1] + t[2] * n[2]) / (tt * nn));
    }
    EXPECT_LT(c.residual, 1e-10);
  }
  EXPECT_LT(worst_position, 1e-10) << "seed " << seed;
  EXPECT_LT(worst_normal, 1e-7) << "seed " << seed;  // central differences of step 1e-6
  std::printf("  %s: %zu contact(s) (seed %llu, %lld systems): positions within %.2g, tangent planes within %.2g\n", device_name(engine), r.contacts.size(),
              (unsigned long long)seed, (long long)r.combinations, worst_position, worst_normal);
  }
}

TEST(Bisectors, SurfaceSamplesAreEquidistantFeet) {
  for (Device engine : test::solver_engines()) {
  SCOPED_TRACE(std::string("engine ") + device_name(engine));
  SolverOptions o;
  o.device = engine;
  // The plane z = 0 and a paraboloid above it: the bisector is a surface between them.
  const BSplineSurface plane = plane_z(0, 1), cup = paraboloid(1.0);
  const SurfaceBisectorResult r = surface_bisector(plane, cup, 1.0 / 16, o);
  ASSERT_EQ(r.status, "complete");
  ASSERT_GT(r.samples.size(), 100u);
  double worst = 0;
  for (const auto& b : r.samples) {
    const auto p1 = evaluate_bspline(plane, b.u, b.v), p2 = evaluate_bspline(cup, b.s, b.t);
    worst = std::max(worst, std::abs(distance3(b.point, p1) - distance3(b.point, p2)));
    // On the plane's normal: straight above (or below) its foot.
    worst = std::max({worst, std::abs(b.point[0] - p1[0]), std::abs(b.point[1] - p1[1])});
    // On the paraboloid's normal: P - S2 parallel to (-2x, -2y, 1).
    const std::array<double, 3> d{b.point[0] - p2[0], b.point[1] - p2[1], b.point[2] - p2[2]};
    worst = std::max({worst, std::abs(d[0] + 2 * p2[0] * d[2]), std::abs(d[1] + 2 * p2[1] * d[2])});
  }
  EXPECT_LT(worst, 1e-9);
  std::printf("  %s: plane/paraboloid bisector: %zu samples, equidistant feet within %.2g\n", device_name(engine), r.samples.size(), worst);
  }
}

TEST(Bisectors, CurveBisectorPointsAreEquidistantFeet) {
  for (Device engine : test::solver_engines()) {
  SCOPED_TRACE(std::string("engine ") + device_name(engine));
  SolverOptions o;
  o.device = engine;
  const std::uint64_t seed = test::run_seed() + 35;
  std::mt19937_64 rng(seed);
  const BSplineCurve2 a = random_bspline(rng, 6, 3, 0.0), b = random_bspline(rng, 5, 2, 1.2);
  const CurveBisectorResult r = curve_bisector(a, b, 1.0 / 128, o);
  ASSERT_EQ(r.status, "complete");
  ASSERT_FALSE(r.curves.empty());
  const auto pa = bspline_to_bezier(a), pb = bspline_to_bezier(b);
  double worst = 0;
  std::size_t points = 0;
  for (const auto& c : r.curves)
    for (std::size_t i = 0; i < c.points.size(); ++i, ++points) {
      const auto p = c.points[i];
      const auto q1 = evaluate(pa, c.params[i][0]), q2 = evaluate(pb, c.params[i][1]);
      const double d1 = std::hypot(p[0] - q1[0], p[1] - q1[1]), d2 = std::hypot(p[0] - q2[0], p[1] - q2[1]);
      worst = std::max(worst, std::abs(d1 - d2) / (1 + d1));
    }
  EXPECT_LT(worst, 1e-9) << "seed " << seed;
  std::printf("  %s: curve bisector (seed %llu): %zu polyline(s), %zu points, equidistant within %.2g\n", device_name(engine), (unsigned long long)seed,
              r.curves.size(), points, worst);
  }
}

TEST(Engines, SameRootsFromEveryEngine) {
  const auto engines = test::solver_engines();
  if (engines.size() < 2) GTEST_SKIP() << "no CUDA device: only the CPU engine runs here";
  const std::uint64_t seed = test::run_seed() + 36;
  std::mt19937_64 rng(seed);
  const BSplineSurface a = wavy(rng, 0.0), b = wavy(rng, 0.0);
  Motion m;
  m.knots = {0, 0, 0, 0, 0.25, 0.5, 0.75, 1, 1, 1, 1};
  std::uniform_real_distribution<double> u(-0.3, 0.3);
  for (int i = 0; i < 7; ++i) m.points.push_back({0.8 + 0.05 * i, u(rng), u(rng), 1.6 - 0.5 * i});
  std::vector<ContactResult> results;
  for (Device engine : engines) {
    SolverOptions o;
    o.device = engine;
    results.push_back(contact_points(a, b, m, o));
  }
  for (std::size_t e = 1; e < engines.size(); ++e) {
    SCOPED_TRACE(std::string(device_name(engines[e])) + " against cpu, seed " + std::to_string(seed));
    ASSERT_EQ(results[e].contacts.size(), results[0].contacts.size());
    for (std::size_t i = 0; i < results[0].contacts.size(); ++i) {
      const auto &p = results[0].contacts[i], &q = results[e].contacts[i];
      EXPECT_NEAR(p.t, q.t, 1e-10);
      EXPECT_NEAR(p.u1, q.u1, 1e-10);
      EXPECT_NEAR(p.v1, q.v1, 1e-10);
      EXPECT_NEAR(p.u2, q.u2, 1e-10);
      EXPECT_NEAR(p.v2, q.v2, 1e-10);
    }
  }
}

TEST(Engines, TaskBufferSchemeMatchesLevels) {
  // The paper's CPU scheme (one lock-free buffer of nodes shared by the threads) against the level-by-level engine,
  // on batches (contacts, Hausdorff) and on a single system (ray traps of 4 mirrors).
  const std::uint64_t seed = test::run_seed() + 37;
  std::mt19937_64 rng(seed);
  SolverOptions levels, tasks;
  levels.cpu_scheme = SolverCpuScheme::Levels;
  tasks.cpu_scheme = SolverCpuScheme::TaskBuffer;
  const BSplineSurface a = wavy(rng, 0.0), b = wavy(rng, 0.0);
  Motion m;
  m.knots = {0, 0, 0, 0, 0.25, 0.5, 0.75, 1, 1, 1, 1};
  std::uniform_real_distribution<double> u(-0.3, 0.3);
  for (int i = 0; i < 7; ++i) m.points.push_back({0.8 + 0.05 * i, u(rng), u(rng), 1.6 - 0.5 * i});
  const ContactResult c1 = contact_points(a, b, m, levels), c2 = contact_points(a, b, m, tasks);
  SCOPED_TRACE("seed " + std::to_string(seed));
  ASSERT_EQ(c2.status, "complete");
  ASSERT_EQ(c1.contacts.size(), c2.contacts.size());
  for (std::size_t i = 0; i < c1.contacts.size(); ++i) {
    EXPECT_NEAR(c1.contacts[i].t, c2.contacts[i].t, 1e-12);
    EXPECT_NEAR(c1.contacts[i].u1, c2.contacts[i].u1, 1e-12);
    EXPECT_NEAR(c1.contacts[i].v2, c2.contacts[i].v2, 1e-12);
  }
  const BSplineCurve2 ca = random_bspline(rng, 7, 3, 0.0), cb = random_bspline(rng, 6, 2, 0.4);
  const HausdorffResult h1 = hausdorff_distance(ca, cb, levels), h2 = hausdorff_distance(ca, cb, tasks);
  EXPECT_EQ(h2.status, "complete");
  EXPECT_NEAR(h1.distance, h2.distance, 1e-14);
  std::vector<BezierCurve2> mirrors;
  for (int i = 0; i < 4; ++i) {
    const double c = 1.5707963267948966 + i * 1.5707963267948966, w = 0.6 * 0.7853981633974483, r = 1.0 + 0.03 * std::sin(3.0 * i);
    const double rm = r / std::cos(w);
    mirrors.push_back({{{r * std::cos(c - w), r * std::sin(c - w)}, {rm * std::cos(c), rm * std::sin(c)}, {r * std::cos(c + w), r * std::sin(c + w)}}});
  }
  const RayTrapResult r1 = ray_traps(mirrors, levels), r2 = ray_traps(mirrors, tasks);
  ASSERT_EQ(r1.traps.size(), r2.traps.size());
  for (std::size_t i = 0; i < r1.traps.size(); ++i)
    for (std::size_t k = 0; k < r1.traps[i].t.size(); ++k) EXPECT_NEAR(r1.traps[i].t[k], r2.traps[i].t[k], 1e-12);
  std::printf("  task buffer = levels: %zu contacts, Hausdorff %.15g, %zu ray traps of 4 mirrors\n", c2.contacts.size(), h2.distance,
              r2.traps.size());
}

}  // namespace
}  // namespace parasurf
