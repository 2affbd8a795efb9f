// Solver applications: exact divided differences, the Hausdorff distance of planar curves against a dense
// brute-force search refined by golden-section steps, and the solution-set sampler and polyline linking.
#include <gtest/gtest.h>

#include <cmath>
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

// Brute force: min over dense samples of B refined around every local minimum; max over dense samples of A refined
// around every local maximum.
double brute_one_sided(const BSplineCurve2& a, const BSplineCurve2& b) {
  const auto pa = bspline_to_bezier(a), pb = bspline_to_bezier(b);
  const double a0 = pa.front().u0, a1 = pa.back().u1, b0 = pb.front().u0, b1 = pb.back().u1;
  const int N = 1500;
  auto dmin = [&](const std::array<double, 2>& p) {
    auto dist = [&](double r) {
      const auto q = evaluate(pb, r);
      return std::hypot(q[0] - p[0], q[1] - p[1]);
    };
    std::vector<double> d(N + 1);
    for (int i = 0; i <= N; ++i) d[i] = dist(b0 + (b1 - b0) * i / N);
    double best = std::min(d[0], d[N]);
    for (int i = 1; i < N; ++i)
      if (d[i] <= d[i - 1] && d[i] <= d[i + 1]) best = std::min(best, golden(dist, b0 + (b1 - b0) * (i - 1) / N, b0 + (b1 - b0) * (i + 1) / N, 1));
    return best;
  };
  auto h = [&](double t) { return dmin(evaluate(pa, t)); };
  std::vector<double> d(N + 1);
  for (int i = 0; i <= N; ++i) d[i] = h(a0 + (a1 - a0) * i / N);
  double best = std::max(d[0], d[N]);
  for (int i = 1; i < N; ++i)
    if (d[i] >= d[i - 1] && d[i] >= d[i + 1]) best = std::max(best, golden(h, a0 + (a1 - a0) * (i - 1) / N, a0 + (a1 - a0) * (i + 1) / N, -1));
  return best;
}

TEST(Hausdorff, EqualsBruteForceOnRandomCurves) {
  const std::uint64_t seed = test::run_seed() + 32;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 4; ++trial) {
    const BSplineCurve2 a = random_bspline(rng, 5 + int(rng() % 4), 3, 0.0), b = random_bspline(rng, 4 + int(rng() % 5), 2 + int(rng() % 2), 0.4);
    const HausdorffResult r = hausdorff_distance(a, b);
    ASSERT_EQ(r.status, "complete");
    const double ab = brute_one_sided(a, b), ba = brute_one_sided(b, a);
    SCOPED_TRACE("seed " + std::to_string(seed) + " trial " + std::to_string(trial));
    EXPECT_NEAR(r.a_to_b.distance, ab, 1e-9);
    EXPECT_NEAR(r.b_to_a.distance, ba, 1e-9);
    EXPECT_NEAR(r.distance, std::max(ab, ba), 1e-9);
    // The reported pair: a point of A at its parameter, and the closest point of B.
    const auto pa = bspline_to_bezier(a), pb = bspline_to_bezier(b);
    const auto from = evaluate(pa, r.a_to_b.t), to = evaluate(pb, r.a_to_b.r);
    EXPECT_NEAR(std::hypot(from[0] - to[0], from[1] - to[1]), r.a_to_b.distance, 1e-12);
  }
}

TEST(Hausdorff, SelfBisectorCase) {
  // A straight segment above a "W": the farthest point of the segment from the W lies over the W's middle peak's
  // neighbourhood, where two closest points compete (the bisector case); the brute force agrees.
  BezierCurve2 a{{{-1, 1}, {1, 1}}};
  BezierCurve2 b{{{-1, 0}, {-0.5, -1.5}, {0, 1.2}, {0.5, -1.5}, {1, 0}}};
  const HausdorffResult r = hausdorff_distance(a, b);
  BSplineCurve2 sa{1, {0, 0, 1, 1}, a.points}, sb{4, {0, 0, 0, 0, 0, 1, 1, 1, 1, 1}, b.points};
  EXPECT_NEAR(r.a_to_b.distance, brute_one_sided(sa, sb), 1e-9);
  EXPECT_NEAR(r.b_to_a.distance, brute_one_sided(sb, sa), 1e-9);
}

}  // namespace
}  // namespace parasurf
