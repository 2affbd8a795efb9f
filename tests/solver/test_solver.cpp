// Subdivision solver: Bernstein algebra against direct evaluation, random square systems with known roots, and the
// `bezier` package's 27 curve-intersection cases (../shared/data/curves) with their exact parameters.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"
#include "solver/curve_coincidence.hpp"
#include "solver/engine.hpp"
#include "solver/system.hpp"
#include "support.hpp"
#include "team.hpp"

namespace parasurf {
namespace {

// x_var - r in the unit box of `vars` variables (degree 1 in x_var).
BernsteinPoly minus_root(double r, int var, int vars) { return BernsteinPoly::univariate({-r, 1 - r}, var, vars); }

// Equation i of a random system with a root at r: a diagonally dominant linear part, and a quadratic term of random
// weight up to `quadratic` in the next variable, which keeps the root at r and adds at most one nearby.
BernsteinPoly dominant_equation(const std::vector<double>& r, int i, double quadratic, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> c(-1, 1);
  const int n = int(r.size());
  BernsteinPoly f = 3.0 * minus_root(r[std::size_t(i)], i, n);
  for (int v = 0; v < n; ++v)
    if (v != i) f = f + c(rng) * minus_root(r[std::size_t(v)], v, n);
  const BernsteinPoly d = minus_root(r[std::size_t((i + 1) % n)], (i + 1) % n, n);
  return f + quadratic * c(rng) * (d * d);
}

BernsteinPoly random_poly(std::mt19937_64& rng, std::vector<int> degree) {
  BernsteinPoly p;
  p.degree = degree;
  std::normal_distribution<double> g;
  p.coef.resize(p.size());
  for (double& c : p.coef) c = g(rng);
  return p;
}

TEST(Bernstein, AlgebraMatchesEvaluation) {
  std::mt19937_64 rng(test::run_seed() + 20);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 20; ++trial) {
    const BernsteinPoly a = random_poly(rng, {int(rng() % 4), int(rng() % 4), int(rng() % 3)});
    const BernsteinPoly b = random_poly(rng, {int(rng() % 4), int(rng() % 3), int(rng() % 4)});
    const BernsteinPoly sum = a + b, diff = a - b, prod = a * b, da = derivative(a, 1);
    const BernsteinPoly el = elevate(a, 2, a.degree[2] + 3);
    const double lo = 0.2 * u(rng), hi = 0.5 + 0.5 * u(rng);
    const BernsteinPoly sub = restrict_to(a, 0, lo, hi);
    for (int k = 0; k < 10; ++k) {
      double x[3] = {u(rng), u(rng), u(rng)};
      const double va = a.evaluate(x), vb = b.evaluate(x);
      EXPECT_NEAR(sum.evaluate(x), va + vb, 1e-12);
      EXPECT_NEAR(diff.evaluate(x), va - vb, 1e-12);
      EXPECT_NEAR(prod.evaluate(x), va * vb, 1e-11);
      EXPECT_NEAR(el.evaluate(x), va, 1e-12);
      const double h = 1e-6;
      double xp[3] = {x[0], x[1] + h, x[2]}, xm[3] = {x[0], x[1] - h, x[2]};
      EXPECT_NEAR(da.evaluate(x), (a.evaluate(xp) - a.evaluate(xm)) / (2 * h), 1e-6);
      double xs[3] = {lo + x[0] * (hi - lo), x[1], x[2]};
      EXPECT_NEAR(sub.evaluate(x), a.evaluate(xs), 1e-12);
    }
  }
}

TEST(Bernstein, ValueAndGradientInOnePass) {
  std::mt19937_64 rng(test::run_seed() + 21);
  std::uniform_real_distribution<double> u(0, 1);
  // Beyond the random ones: a degree past the stack's basis (32), seven variables, and sizes past its work arrays.
  const std::vector<std::vector<int>> shapes = {{40}, {1, 1, 1, 1, 1, 1, 1}, {2, 0, 3, 1, 2, 0, 1}, {12, 12, 12}, {3, 3, 3, 3}};
  for (int trial = 0; trial < 40 + int(shapes.size()); ++trial) {
    // 1 to 5 variables, degrees 0 to 6 (degree 0 included: a promoted curve's other variables).
    std::vector<int> degree(std::size_t(1 + trial % 5));
    for (int& dg : degree) dg = int(rng() % 7);
    if (trial >= 40) degree = shapes[std::size_t(trial - 40)];
    const BernsteinPoly p = random_poly(rng, degree);
    double x[7], grad[7];
    for (int k = 0; k < 5; ++k) {
      for (double& xi : x) xi = u(rng);
      const double value = p.evaluate_with_gradient(x, grad);
      // Against de Casteljau and the exact derivative polynomials, to rounding of coefficients of size ~1.
      EXPECT_NEAR(value, p.evaluate(x), 1e-12) << "trial " << trial;
      for (int v = 0; v < p.variables(); ++v)
        EXPECT_NEAR(grad[v], derivative(p, v).evaluate(x), 1e-11) << "trial " << trial << " variable " << v;
    }
  }
}

TEST(Solver, RandomSystemsWithKnownRoots) {
  for (Device engine : test::solver_engines()) {
  SCOPED_TRACE(std::string("engine ") + device_name(engine));
  SolverOptions o;
  o.device = engine;
  // (x - a)(x - b) ... products of linear factors give roots known exactly.
  std::mt19937_64 rng(test::run_seed() + 21);
  std::uniform_real_distribution<double> u(0.05, 0.95);
  for (int trial = 0; trial < 10; ++trial) {
    const double a = u(rng), b = u(rng), c = u(rng);
    // f1 = (x - a)(x - b), f2 = y - c + 0.1 (x - a): roots (a, c) and (b, c - 0.1 (b - a)) when inside.
    const BernsteinPoly x = BernsteinPoly::univariate({0, 1}, 0, 2), y = BernsteinPoly::univariate({0, 1}, 1, 2);
    auto k = [](double v) { return BernsteinPoly::constant(2, v); };
    const BernsteinPoly f1 = (x - k(a)) * (x - k(b));
    const BernsteinPoly f2 = y - k(c) + 0.1 * (x - k(a));
    const SolveResult r = solve_system({f1, f2}, o);
    std::vector<std::array<double, 2>> want{{a, c}};
    const double y2 = c - 0.1 * (b - a);
    if (y2 >= 0 && y2 <= 1 && std::abs(a - b) > 1e-6) want.push_back({b, y2});
    ASSERT_EQ(r.roots.size(), want.size()) << "a=" << a << " b=" << b << " c=" << c;
    for (const auto& w : want) {
      bool found = false;
      for (const auto& root : r.roots) found = found || (std::abs(root.x[0] - w[0]) < 1e-12 && std::abs(root.x[1] - w[1]) < 1e-12);
      EXPECT_TRUE(found) << w[0] << "," << w[1];
    }
    for (const auto& root : r.roots) EXPECT_TRUE(root.proved_single) << "root " << root.x[0] << "," << root.x[1] << " of a=" << a << " b=" << b << " c=" << c;
  }
  {
    // Two simple roots 3.6e-4 apart (from a seed that failed on the GPU engines): the cell proved to hold one of them
    // is large enough there that Newton's step test never passed, and the root was reported as an unproved tangent.
    const double a = 0.60711508118424662, b = 0.60747760489990688, c = 0.22863662077322511;
    const BernsteinPoly x = BernsteinPoly::univariate({0, 1}, 0, 2), y = BernsteinPoly::univariate({0, 1}, 1, 2);
    auto k = [](double v) { return BernsteinPoly::constant(2, v); };
    const SolveResult r = solve_system({(x - k(a)) * (x - k(b)), y - k(c) + 0.1 * (x - k(a))}, o);
    ASSERT_EQ(r.roots.size(), 2u);
    for (const auto& root : r.roots) {
      EXPECT_TRUE(root.proved_single) << "root " << root.x[0] << "," << root.x[1];
      EXPECT_EQ(root.multiplicity_hint, 1) << "root " << root.x[0] << "," << root.x[1];
    }
    EXPECT_NEAR(r.roots[0].x[0], a, 1e-12);
    EXPECT_NEAR(r.roots[1].x[0], b, 1e-12);
  }
  // A double root is reported once, as a tangent.
  const BernsteinPoly x = BernsteinPoly::univariate({0, 1}, 0, 1);
  const BernsteinPoly sq = (x - BernsteinPoly::constant(1, 0.3)) * (x - BernsteinPoly::constant(1, 0.3));
  const SolveResult r = solve_system({sq}, o);
  ASSERT_EQ(r.roots.size(), 1u);
  EXPECT_NEAR(r.roots[0].x[0], 0.3, 1e-6);
  EXPECT_EQ(r.roots[0].multiplicity_hint, 2);
  // Infinitely many solutions: a region, never a stream of points.
  const BernsteinPoly xx = BernsteinPoly::univariate({0, 1}, 0, 2), yy = BernsteinPoly::univariate({0, 1}, 1, 2);
  const SolveResult line = solve_system({xx - yy, 2.0 * (xx - yy)}, o);
  EXPECT_TRUE(line.roots.empty());
  ASSERT_FALSE(line.regions.empty());
  EXPECT_EQ(line.status, "complete");
  }
}

// A team (threads standing in for MPI ranks) shares a batch out round robin and every member ends with the
// results of the process alone, bit for bit, in batch order.
TEST(Solver, TeamsShareABatchAndAgreeWithOneProcess) {
  std::mt19937_64 rng(test::run_seed() + 77);
  std::uniform_real_distribution<double> u(0.05, 0.95);
  const BernsteinPoly x = BernsteinPoly::univariate({0, 1}, 0, 2), y = BernsteinPoly::univariate({0, 1}, 1, 2);
  auto k = [](double v) { return BernsteinPoly::constant(2, v); };
  std::vector<std::vector<BernsteinPoly>> batch;
  for (int i = 0; i < 11; ++i) {
    const double a = u(rng), b = u(rng), c = u(rng);
    batch.push_back({(x - k(a)) * (x - k(b)), y - k(c) + 0.3 * (x - k(a)) * (y - k(b))});
  }
  for (Device engine : test::solver_engines()) {
    SCOPED_TRACE(std::string("engine ") + device_name(engine));
    SolverOptions o;
    o.device = engine;
    o.threads = 1;
    const std::vector<SolveResult> alone = solve_systems(batch, o);
    std::size_t roots = 0;
    for (const auto& r : alone) roots += r.roots.size();
    ASSERT_GE(roots, batch.size());  // every system has its root (a, c + ...) at least
    for (int members : {2, 3, 4}) {
      test::ThreadTeam team(members);
      std::vector<std::vector<SolveResult>> got(static_cast<std::size_t>(members));
      team.run([&](int member) {
        SolverOptions mo = o;
        mo.team = team.solver(member);
        got[std::size_t(member)] = solve_systems(batch, mo);
      });
      for (int m = 0; m < members; ++m) {
        ASSERT_EQ(got[std::size_t(m)].size(), alone.size());
        for (std::size_t i = 0; i < alone.size(); ++i) {
          const auto &want = alone[i], &have = got[std::size_t(m)][i];
          EXPECT_EQ(have.status, want.status);
          // The GPU engines report each system's share of the batch's cells, which depends on the batch.
          if (engine == Device::Cpu) EXPECT_EQ(have.nodes, want.nodes);
          ASSERT_EQ(have.roots.size(), want.roots.size()) << members << " members, member " << m << ", system " << i;
          for (std::size_t r = 0; r < want.roots.size(); ++r) {
            EXPECT_EQ(have.roots[r].x, want.roots[r].x);
            EXPECT_EQ(have.roots[r].residual, want.roots[r].residual);
            EXPECT_EQ(have.roots[r].proved_single, want.roots[r].proved_single);
            EXPECT_EQ(have.roots[r].multiplicity_hint, want.roots[r].multiplicity_hint);
          }
        }
      }
    }
  }
}

TEST(Solver, BadInputIsRefused) {
  BernsteinPoly p = BernsteinPoly::constant(2, 1.0);
  EXPECT_THROW(solve_system({p}), Error);  // 2 variables, 1 equation
  p.coef[0] = std::nan("");
  EXPECT_THROW(solve_system({p, p}), Error);
  EXPECT_THROW(solve_system({}), Error);
  SolverOptions o;
  for (double slack : {-1e-12, double(NAN), double(INFINITY)}) {
    o.zero_slack = slack;
    EXPECT_THROW(solve_system({BernsteinPoly::constant(1, 1.0)}, o), Error) << slack;
  }
  // A bad tolerance is refused even where no system is solved: one curve against itself (a shared arc over the
  // whole of both) and a batch of pairs whose boxes do not meet.
  BezierCurve2 a, far;
  a.points = {{0, 0}, {1, 2}, {2, -1}, {3, 1}};
  far.points = {{10, 10}, {11, 12}, {12, 9}, {13, 11}};
  for (double tolerance : {-1.0, 0.0, 1.0, double(NAN)}) {
    SolverOptions t;
    t.tolerance = tolerance;
    EXPECT_THROW(intersect_curves(a, a, t), Error) << tolerance;
    EXPECT_THROW(intersect_curve_pairs(std::vector<std::pair<BezierCurve2, BezierCurve2>>{{a, far}}, t), Error)
        << tolerance;
  }
}

// (x - 1/2)^2 + 1e-14 has no root; within a zero slack of 1e-13 it has a double one at 1/2, on every engine.
TEST(Solver, AZeroSlackKeepsANearMissAsATangentRoot) {
  BernsteinPoly f;
  f.degree = {2};
  f.coef = {0.25 + 1e-14, -0.25 + 1e-14, 0.25 + 1e-14};
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    EXPECT_TRUE(solve_system({f}, o).roots.empty()) << device_name(engine);
    o.zero_slack = 1e-13;
    const SolveResult r = solve_system({f}, o);
    ASSERT_EQ(r.roots.size(), 1u) << device_name(engine);
    EXPECT_GE(r.roots[0].multiplicity_hint, 2) << device_name(engine);
    EXPECT_NEAR(r.roots[0].x[0], 0.5, 1e-6) << device_name(engine);
  }
}

// A quadratic arc approximating the circle of radius r around the origin from angle a0 to a1, middle point pushed out
// by `bulge` (0: the exact tangent-intersection control point).
BezierCurve2 arc(double a0, double a1, double r, double bulge) {
  const double am = 0.5 * (a0 + a1), h = 0.5 * (a1 - a0);
  const double rm = r / std::cos(h) + bulge;
  return {{{r * std::cos(a0), r * std::sin(a0)}, {rm * std::cos(am), rm * std::sin(am)}, {r * std::cos(a1), r * std::sin(a1)}}};
}

TEST(Solver, RayTrapsObeyTheReflectionLaw) {
  const double pi = 3.14159265358979323846, w = pi / 6;
  for (Device engine : test::solver_engines()) {
  SCOPED_TRACE(std::string("engine ") + device_name(engine));
  SolverOptions o;
  o.device = engine;
  std::mt19937_64 rng(test::run_seed() + 22);
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  int traps = 0;
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<BezierCurve2> curves;
    for (int i = 0; i < 3; ++i) {
      const double c = pi / 2 + i * 2 * pi / 3;
      curves.push_back(arc(c - w, c + w, 1.0 + u(rng), u(rng)));
    }
    const RayTrapResult r = ray_traps(curves, o);
    ASSERT_EQ(r.status.substr(0, 8), "complete") << r.status;
    for (const auto& t : r.traps) {
      ++traps;
      for (int i = 0; i < 3; ++i) {
        const int j = (i + 1) % 3, l = (i + 2) % 3;
        const auto& p = t.points;
        const double ax = p[i][0] - p[j][0], ay = p[i][1] - p[j][1], bx = p[l][0] - p[j][0], by = p[l][1] - p[j][1];
        // normal of curve j at t_j from the derivative of its control polygon
        const auto& c = curves[j].points;
        const double s = t.t[j];
        const double dx = 2 * ((1 - s) * (c[1][0] - c[0][0]) + s * (c[2][0] - c[1][0]));
        const double dy = 2 * ((1 - s) * (c[1][1] - c[0][1]) + s * (c[2][1] - c[1][1]));
        const double an = -ax * dy + ay * dx, bn = -bx * dy + by * dx;
        EXPECT_GT(an * bn, 0) << "the ray stays on one side of the mirror";
        EXPECT_NEAR(an / std::hypot(ax, ay), bn / std::hypot(bx, by), 1e-9 * std::hypot(dx, dy)) << "equal angles";
      }
    }
  }
  EXPECT_GT(traps, 0);
  std::printf("  %s: %d ray traps of 3 quadratic mirrors, each obeying the reflection law\n", device_name(engine), traps);
  }
}

// Cox-de Boor reference for a B-spline curve point.
std::array<double, 2> de_boor_reference(const BSplineCurve2& c, double u) {
  const int p = c.degree, n = int(c.points.size());
  std::function<double(int, int)> N = [&](int i, int k) -> double {
    if (k == 0) {
      const bool last = c.knots[i + 1] == c.knots[n] && c.knots[i] < c.knots[i + 1];
      return (u >= c.knots[i] && u < c.knots[i + 1]) || (last && u == c.knots[n]) ? 1.0 : 0.0;
    }
    double a = 0, b = 0;
    if (c.knots[i + k] != c.knots[i]) a = (u - c.knots[i]) / (c.knots[i + k] - c.knots[i]) * N(i, k - 1);
    if (c.knots[i + k + 1] != c.knots[i + 1]) b = (c.knots[i + k + 1] - u) / (c.knots[i + k + 1] - c.knots[i + 1]) * N(i + 1, k - 1);
    return a + b;
  };
  std::array<double, 2> out{0, 0};
  for (int i = 0; i < n; ++i) {
    const double w = N(i, p);
    out[0] += w * c.points[i][0], out[1] += w * c.points[i][1];
  }
  return out;
}

TEST(Solver, BSplineCurvesPieceByPiece) {
  std::mt19937_64 rng(test::run_seed() + 23);
  std::uniform_real_distribution<double> u01(0, 1), g(-1, 1);
  BSplineCurve2 a;
  a.degree = 3;
  a.knots = {0, 0, 0, 0, 0.3, 0.3, 0.6, 1, 1, 1, 1};  // a double interior knot too
  for (int i = 0; i < 7; ++i) a.points.push_back({i / 6.0 * 4 - 2, g(rng)});
  const auto pieces = bspline_to_bezier(a);
  ASSERT_EQ(pieces.size(), 3u);
  for (int k = 0; k < 50; ++k) {  // the pieces are the curve, exactly
    const double u = u01(rng);
    for (const auto& pc : pieces)
      if (u >= pc.u0 && u <= pc.u1) {
        const double s = (u - pc.u0) / (pc.u1 - pc.u0);
        auto w = pc.curve.points;
        for (std::size_t r = 1; r < w.size(); ++r)
          for (std::size_t i = 0; i + r < w.size(); ++i)
            for (int d = 0; d < 2; ++d) w[i][d] = (1 - s) * w[i][d] + s * w[i + 1][d];
        const auto want = de_boor_reference(a, u);
        EXPECT_NEAR(w[0][0], want[0], 1e-12);
        EXPECT_NEAR(w[0][1], want[1], 1e-12);
      }
  }
  // Against a horizontal line: every crossing of y = level, found by bisection on the reference, exactly once.
  const double level = 0.25 * g(rng);
  BSplineCurve2 line{1, {0, 0, 1, 1}, {{-3, level}, {3, level}}};
  const CurveIntersectionResult r = intersect_curves(a, line);
  std::vector<double> want;
  const int samples = 20000;
  for (int i = 0; i < samples; ++i) {
    double lo = double(i) / samples, hi = double(i + 1) / samples;
    double flo = de_boor_reference(a, lo)[1] - level, fhi = de_boor_reference(a, hi)[1] - level;
    if (flo == 0) want.push_back(lo);
    if (flo * fhi >= 0) continue;
    for (int it = 0; it < 100; ++it) {
      const double mid = 0.5 * (lo + hi), fm = de_boor_reference(a, mid)[1] - level;
      if ((fm < 0) == (flo < 0)) lo = mid, flo = fm;
      else hi = mid;
    }
    want.push_back(0.5 * (lo + hi));
  }
  ASSERT_EQ(r.points.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(r.points[i].s, want[i], 1e-10);
  BSplineCurve2 bad = a;
  bad.knots[5] = 0.1;  // decreasing
  EXPECT_THROW(bspline_to_bezier(bad), Error);
  bad = a;
  bad.points.pop_back();  // count and knots disagree
  EXPECT_THROW(bspline_to_bezier(bad), Error);
}

double parse_number(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  const std::string s = v.get<std::string>();
  const auto slash = s.find('/');
  if (slash != std::string::npos) return std::stod(s.substr(0, slash)) / std::stod(s.substr(slash + 1));
  return std::strtod(s.c_str(), nullptr);  // decimal or C99 hex float
}

// |sin| of the angle between the curves' tangents at parameters s and t, in long double.
long double tangent_sine(const BezierCurve2& a, const BezierCurve2& b, long double s, long double t) {
  auto derivative = [](const BezierCurve2& c, long double u) {
    std::vector<std::array<long double, 2>> w;
    for (std::size_t i = 0; i + 1 < c.points.size(); ++i)
      w.push_back({(long double)(c.points[i + 1][0]) - c.points[i][0], (long double)(c.points[i + 1][1]) - c.points[i][1]});
    for (std::size_t r = 1; r < w.size(); ++r)
      for (std::size_t i = 0; i + r < w.size(); ++i)
        for (int k = 0; k < 2; ++k) w[i][k] = (1 - u) * w[i][k] + u * w[i + 1][k];
    return w[0];
  };
  const auto da = derivative(a, s), db = derivative(b, t);
  return std::abs(da[0] * db[1] - da[1] * db[0]) / (std::hypot(da[0], da[1]) * std::hypot(db[0], db[1]));
}

// Whether the curves have the same signed curvature at s and t (a contact of order 3 where they are tangent), in
// long double.
bool same_curvature(const BezierCurve2& a, const BezierCurve2& b, long double s, long double t) {
  auto curvature = [](const BezierCurve2& c, long double u) {
    const std::size_t n = c.points.size() - 1;
    if (n < 2) return 0.0L;
    std::vector<std::array<long double, 2>> d1, d2;
    for (std::size_t i = 0; i < n; ++i)
      d1.push_back({(long double)(c.points[i + 1][0]) - c.points[i][0], (long double)(c.points[i + 1][1]) - c.points[i][1]});
    for (std::size_t i = 0; i + 1 < n; ++i) d2.push_back({d1[i + 1][0] - d1[i][0], d1[i + 1][1] - d1[i][1]});
    auto at = [u](std::vector<std::array<long double, 2>> w) {
      for (std::size_t r = 1; r < w.size(); ++r)
        for (std::size_t i = 0; i + r < w.size(); ++i)
          for (int k = 0; k < 2; ++k) w[i][k] = (1 - u) * w[i][k] + u * w[i + 1][k];
      return w[0];
    };
    const auto p = at(d1), q = at(d2);  // (scaled) first and second derivatives
    const long double speed = std::hypot(p[0], p[1]);
    return (long double)(n - 1) / n * (p[0] * q[1] - p[1] * q[0]) / (speed * speed * speed);
  };
  const long double ka = curvature(a, s), kb = curvature(b, t);
  return std::abs(ka - kb) <= 1e-9L * std::max({std::abs(ka), std::abs(kb), 1.0L});
}

TEST(Solver, BezierPackageCurveIntersections) {
  const std::string path = test::shared_data("curves/curve_intersections.json");
  if (path.empty()) GTEST_SKIP() << "curves/curve_intersections.json not found (shared data absent)";
  nlohmann::json doc;
  std::ifstream(path) >> doc;
  std::map<std::string, BezierCurve2> curves;
  for (const auto& item : doc["curves"].items()) {
    const auto& cp = item.value()["control_points"];
    BezierCurve2 c;
    for (std::size_t i = 0; i < cp[0].size(); ++i) c.points.push_back({parse_number(cp[0][i]), parse_number(cp[1][i])});
    curves[item.key()] = c;
  }
  for (Device engine : test::solver_engines()) {
  SolverOptions o;
  o.device = engine;
  int cases = 0;
  double worst_standard = 0, worst_tangent = 0, worst_order3 = 0;
  for (const auto& inter : doc["intersections"]) {
    const std::string type = inter["type"];
    const auto& c1 = curves.at(inter["curve1"].get<std::string>());
    const auto& c2 = curves.at(inter["curve2"].get<std::string>());
    const CurveIntersectionResult r = intersect_curves(c1, c2, o);
    SCOPED_TRACE(std::string(device_name(engine)) + ": case " + std::to_string(inter["id"].get<int>()) + " (" + type + ")");
    ++cases;
    EXPECT_EQ(r.status, "complete");
    std::vector<std::array<double, 2>> want;
    for (std::size_t i = 0; i < inter["curve1_params"].size(); ++i)
      want.push_back({parse_number(inter["curve1_params"][i]), parse_number(inter["curve2_params"][i])});
    EXPECT_EQ(r.points.size(), want.size()) << "every intersection once, none spurious";
    for (const auto& w : want) {
      double best = 1e300;
      const CurveIntersection* nearest = nullptr;
      for (const auto& p : r.points)
        if (std::max(std::abs(p.s - w[0]), std::abs(p.t - w[1])) < best)
          best = std::max(std::abs(p.s - w[0]), std::abs(p.t - w[1])), nearest = &p;
      // The flag against the tangents at the exact parameters, in long double: tangent when they are parallel.
      const long double sine = tangent_sine(c1, c2, w[0], w[1]);
      if (nearest) EXPECT_EQ(nearest->tangent, sine < 1e-9L) << "at " << w[0] << ", " << w[1] << ": sine " << double(sine);
      if (type == "standard") {
        EXPECT_LE(best, 1e-12) << w[0] << ", " << w[1];
        worst_standard = std::max(worst_standard, best);
      } else if (!same_curvature(c1, c2, w[0], w[1])) {
        // Tangent and touching-coincident roots, refined on the curves with the tangency condition, a regular system
        // at a contact of order 2: to the last bits.
        EXPECT_LE(best, 1e-12) << w[0] << ", " << w[1];
        worst_tangent = std::max(worst_tangent, best);
      } else {
        // Contact of order 3 (equal curvature): the tangency system is singular there too, and its double root is
        // located to about sqrt(machine epsilon) at best, depending on the rounding of the build (FMA contraction).
        EXPECT_LE(best, 1e-6) << w[0] << ", " << w[1];
        worst_order3 = std::max(worst_order3, best);
      }
    }
  }
  EXPECT_EQ(cases, 27);
  std::printf("  %s: %d curve pairs: standard roots within %.3g, tangent roots within %.3g (equal curvature: %.3g)\n",
              device_name(engine), cases, worst_standard, worst_tangent, worst_order3);
  }
}

// A tangency moved, turned and scaled at random (its control points rounded, as a file's are) is still located to
// the last bits on every engine, so that engines agree on it: the distance between the curves is second order
// near a tangency (a point 1e-8 off is 1e-16 away), and only the tangents' angle tells the refined point better.
TEST(Solver, TangenciesAnywhereAreLocatedToTheLastBits) {
  const std::uint64_t seed = test::run_seed();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const double third = 1.0 / 3;
  const BezierCurve2 parabola{{{-1, 1}, {-third, -third}, {third, -third}, {1, 1}}};  // y = x^2, apex at s = 0.5
  const BezierCurve2 line{{{-1, 0}, {-third, 0}, {third, 0}, {1, 0}}};                  // its tangent there, t = 0.5
  std::vector<std::pair<BezierCurve2, BezierCurve2>> pairs;
  for (int k = 0; k < 200; ++k) {
    // Every other pair a thousand units from the origin, where the rounding of the placed control points (1e-13)
    // parts the tangency or makes it two crossings 1e-7 apart: still one tangent touch.
    const double far = k % 2 ? 1000.0 : 0.0;
    const double angle = 2 * M_PI * u(rng), scale = 0.2 + 0.3 * u(rng), dx = far + u(rng), dy = -far + u(rng);
    auto place = [&](BezierCurve2 c) {
      for (auto& p : c.points)
        p = {dx + scale * (std::cos(angle) * p[0] - std::sin(angle) * p[1]), dy + scale * (std::sin(angle) * p[0] + std::cos(angle) * p[1])};
      return c;
    };
    pairs.emplace_back(place(parabola), place(line));
  }
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    const std::vector<CurveIntersectionResult> r = intersect_curve_pairs(pairs, o);
    double worst = 0, worst_far = 0;
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      SCOPED_TRACE(std::string(device_name(engine)) + " pair " + std::to_string(k) + ", seed " + std::to_string(seed));
      ASSERT_EQ(r[k].points.size(), 1u);
      EXPECT_TRUE(r[k].points[0].tangent);
      double& w = k % 2 ? worst_far : worst;
      w = std::max({w, std::abs(r[k].points[0].s - 0.5), std::abs(r[k].points[0].t - 0.5)});
    }
    EXPECT_LE(worst, 1e-12) << device_name(engine) << ", seed " << seed;
    EXPECT_LE(worst_far, 1e-11) << device_name(engine) << ", seed " << seed;  // (the input's own rounding)
    std::printf("  %s: %zu placed tangencies within %.3g, %.3g far from the origin (seed %llu)\n", device_name(engine),
                pairs.size(), worst, worst_far, static_cast<unsigned long long>(seed));
  }
}

// A line parallel to a parabola's tangent at its apex, moved off it by `offset` of the curves' size: within the
// rounding of the coordinates a tangent touch, beyond it below the apex a miss, above it two crossings.
TEST(Solver, NearMissesTouchOnlyWithinRounding) {
  const double third = 1.0 / 3;
  const BezierCurve2 parabola{{{-1, 1}, {-third, -third}, {third, -third}, {1, 1}}};
  auto line = [&](double y) { return BezierCurve2{{{-1, y}, {-third, y}, {third, y}, {1, y}}}; };
  const double size = std::hypot(2.0, 1 + third);  // the pair's control box
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    SCOPED_TRACE(device_name(engine));
    for (double offset : {-1e-6, -1e-9, -1e-12})
      EXPECT_EQ(intersect_curves(parabola, line(offset * size), o).points.size(), 0u) << offset;
    for (double offset : {-1e-15, 0.0, 1e-15}) {
      const CurveIntersectionResult r = intersect_curves(parabola, line(offset * size), o);
      ASSERT_EQ(r.points.size(), 1u) << offset;
      EXPECT_TRUE(r.points[0].tangent) << offset;
      EXPECT_NEAR(r.points[0].s, 0.5, 1e-7) << offset;
    }
    for (double offset : {1e-6, 1e-3}) {
      const CurveIntersectionResult r = intersect_curves(parabola, line(offset * size), o);
      ASSERT_EQ(r.points.size(), 2u) << offset;
      EXPECT_FALSE(r.points[0].tangent || r.points[1].tangent) << offset;
    }
  }
}

// Curves that end on another curve, as drawings join them: a T-junction (a curve starting at a point of another,
// rounded as any computed point is) and curves joined end to end, each met once at the end, on every engine, also
// far from the origin; a curve that stops 1e-6 short of the other does not meet it there. (Before the solve's
// domain was grown, about a quarter of these were missed: the rounding put the root just outside the box.)
TEST(Solver, CurvesEndingOnCurvesMeetThere) {
  const std::uint64_t seed = test::run_seed() + 3;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  auto at = [](const BezierCurve2& c, double t, std::array<double, 2>* tangent) {
    auto p = c.points;
    const std::size_t n = p.size();
    for (std::size_t r = 1; r < n; ++r) {
      if (tangent && r == n - 1)
        *tangent = {double(n - 1) * (p[1][0] - p[0][0]), double(n - 1) * (p[1][1] - p[0][1])};
      for (std::size_t i = 0; i + r < n; ++i)
        for (int k = 0; k < 2; ++k) p[i][k] = (1 - t) * p[i][k] + t * p[i + 1][k];
    }
    return p[0];
  };
  struct Case {
    BezierCurve2 a, b;
    double s, t;   // where they meet (s = 0 or 1)
    bool meet;     // false: a stops short of b
    bool continues = false;  // b runs on from a as one curve: a tangent meeting, and no shared arc
  };
  std::vector<Case> cases;
  for (int k = 0; k < 240; ++k) {
    const double shift = k % 2 ? 1000.0 : 0.0;  // far from the origin every other time
    BezierCurve2 b;
    for (int i = 0; i < 3 + k % 3; ++i) b.points.push_back({shift + u(rng), -shift + u(rng)});
    const double s0 = 0.1 + 0.8 * u(rng);
    std::array<double, 2> d{};
    const std::array<double, 2> p = at(b, s0, &d);
    const double len = std::hypot(d[0], d[1]);
    const std::array<double, 2> normal{-d[1] / len, d[0] / len};
    BezierCurve2 a;
    switch (k % 3) {
      case 0:  // a T-junction: a starts on b and leaves on one side
      case 2: {  // the same, stopping 1e-6 short of b
        const double short_by = k % 3 == 2 ? 1e-6 : 0.0;
        a.points.push_back({p[0] + short_by * normal[0], p[1] + short_by * normal[1]});
        for (int i = 0; i < 3; ++i) {
          const double along = 0.3 * (u(rng) - 0.5), out = 0.1 + 0.2 * u(rng);
          a.points.push_back({p[0] + out * normal[0] + along * d[0] / len, p[1] + out * normal[1] + along * d[1] / len});
        }
        cases.push_back({a, b, 0.0, s0, short_by == 0});
        break;
      }
      default:
        if ((k / 6) % 2 == 0) {  // joined end to end: a ends where b starts
          for (int i = 0; i < 3; ++i) a.points.push_back({shift + u(rng), -shift + u(rng)});
          a.points.push_back(b.points.front());
          cases.push_back({a, b, 1.0, 0.0, true});
        } else {  // one curve cut in two at s0: the halves run on as one curve from their shared end (tangent there)
          const std::size_t n = b.points.size();
          BezierCurve2 left, right;
          right.points.resize(n);
          auto w = b.points;  // de Casteljau: step r gives left's point r and right's point n - 1 - r
          for (std::size_t r = 0; r < n; ++r) {
            left.points.push_back(w[0]);
            right.points[n - 1 - r] = w[n - 1 - r];
            for (std::size_t i = 0; i + 1 < n - r; ++i)
              for (int c = 0; c < 2; ++c) w[i][c] = (1 - s0) * w[i][c] + s0 * w[i + 1][c];
          }
          if ((k / 12) % 2 == 0) cases.push_back({left, right, 1.0, 0.0, true, true});
          else cases.push_back({right, left, 0.0, 1.0, true, true});
        }
    }
  }
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    std::vector<std::pair<BezierCurve2, BezierCurve2>> pairs;
    for (const Case& c : cases) pairs.emplace_back(c.a, c.b);
    const std::vector<CurveIntersectionResult> batch = intersect_curve_pairs(pairs, o);
    double worst = 0;
    int met = 0;
    for (std::size_t k = 0; k < cases.size(); ++k) {
      SCOPED_TRACE(std::string(device_name(engine)) + " case " + std::to_string(k) + ", seed " + std::to_string(seed));
      const Case& c = cases[k];
      const CurveIntersectionResult one = intersect_curves(c.a, c.b, o);
      ASSERT_EQ(one.points.size(), batch[k].points.size());
      int at_end = 0;
      for (const CurveIntersection& q : one.points)
        if (std::abs(q.s - c.s) <= 1e-6 && std::abs(q.t - c.t) <= 1e-6) {  // (other crossings lie elsewhere)
          ++at_end;
          EXPECT_EQ(q.s, c.s) << "met at the curve's end exactly";
          if (c.t == 0 || c.t == 1) EXPECT_EQ(q.t, c.t) << "and at the other's end exactly";
          EXPECT_NEAR(q.t, c.t, 1e-9);
          if (c.continues) EXPECT_TRUE(q.tangent) << "the halves of one curve are tangent where they meet";
          worst = std::max(worst, std::abs(q.t - c.t));
        }
      EXPECT_EQ(at_end, c.meet ? 1 : 0);
      if (c.continues) EXPECT_TRUE(one.overlaps.empty()) << "halves that only share an end share no arc";
      met += at_end;
    }
    EXPECT_EQ(met, 160);
    std::printf("  %s: %zu curves ending on curves, met within %.3g (seed %llu)\n", device_name(engine), cases.size(), worst,
                static_cast<unsigned long long>(seed));
  }
}

// A line across a B-spline curve exactly at a knot: both Bézier pieces meet it at their end, and the crossing is
// reported once, on every engine (before the solve's domain was grown, about one in thirty was missed).
TEST(Solver, CrossingsAtAKnotAreFoundOnce) {
  const std::uint64_t seed = test::run_seed() + 4;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    int once = 0;
    for (int k = 0; k < 200; ++k) {
      BSplineCurve2 a;
      a.degree = 2;
      a.points = {{u(rng), u(rng)}, {u(rng), u(rng)}, {u(rng), u(rng)}, {u(rng), u(rng)}};
      a.knots = {0, 0, 0, 0.5, 1, 1, 1};
      // At the knot the quadratic passes through the middle of P1 P2, along P2 - P1.
      const std::array<double, 2> p{0.5 * (a.points[1][0] + a.points[2][0]), 0.5 * (a.points[1][1] + a.points[2][1])};
      const std::array<double, 2> d{a.points[2][0] - a.points[1][0], a.points[2][1] - a.points[1][1]};
      BSplineCurve2 b;
      b.degree = 1;
      b.points = {{p[0] - 0.7 * d[1], p[1] + 0.7 * d[0]}, {p[0] + 0.3 * d[1], p[1] - 0.3 * d[0]}};  // across a, t = 0.7 at p
      b.knots = {0, 0, 1, 1};
      int near = 0;
      for (const auto& q : intersect_curves(a, b, o).points) near += std::abs(q.s - 0.5) < 1e-9 && std::abs(q.t - 0.7) < 1e-9;
      once += near == 1;
    }
    EXPECT_EQ(once, 200) << device_name(engine) << ", seed " << seed;
  }
}

// The arc of cubic c over [u0, u1] as a cubic of its own (blossoming): exact in double for dyadic u0, u1 and
// small integer control points, so the two curves coincide exactly where they overlap.
BezierCurve2 sub_arc(const BezierCurve2& c, double u0, double u1) {
  auto blossom = [&](double x, double y, double z) {
    auto w = c.points;
    const double u[3] = {x, y, z};
    for (int r = 0; r < 3; ++r)
      for (int i = 0; i + r < 3; ++i)
        for (int k = 0; k < 2; ++k) w[i][k] = (1 - u[r]) * w[i][k] + u[r] * w[i + 1][k];
    return w[0];
  };
  return BezierCurve2{{blossom(u0, u0, u0), blossom(u0, u0, u1), blossom(u0, u1, u1), blossom(u1, u1, u1)}};
}

// A batch of pairs gives each pair what intersect_curves gives it, on every engine: random cubics and quadratics,
// with tangent, overlapping and disjoint pairs mixed in.
// Random cubic and quintic pairs against a long-double reference, half of them a thousand units from the origin:
// every crossing where the curves meet at an angle (|sin| > 1e-3) is found once, to the last bits, and every point
// found lies on both curves (in long double). The reference: both curves as 256-segment polylines, each pair of
// crossing segments a start for Newton on C1(s) = C2(t) in long double.
TEST(Solver, RandomCurvePairsMatchALongDoubleReference) {
  const std::uint64_t seed = test::run_seed() + 5;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  using P = std::array<long double, 2>;
  auto at = [](const BezierCurve2& c, long double t, P* d) {
    std::vector<P> w;
    for (const auto& q : c.points) w.push_back({q[0], q[1]});
    const std::size_t n = w.size();
    for (std::size_t r = 1; r < n; ++r) {
      if (d && r == n - 1) *d = {(n - 1) * (w[1][0] - w[0][0]), (n - 1) * (w[1][1] - w[0][1])};
      for (std::size_t i = 0; i + r < n; ++i)
        for (int k = 0; k < 2; ++k) w[i][k] = (1 - t) * w[i][k] + t * w[i + 1][k];
    }
    return w[0];
  };
  auto sine = [&](const BezierCurve2& a, const BezierCurve2& b, long double s, long double t) {
    P da{}, db{};
    at(a, s, &da), at(b, t, &db);
    return std::abs(da[0] * db[1] - da[1] * db[0]) / (std::hypot(da[0], da[1]) * std::hypot(db[0], db[1]));
  };
  struct Pair {
    BezierCurve2 a, b;
    std::vector<std::array<long double, 2>> roots;  // the reference's crossings at an angle
  };
  constexpr int kSegments = 256;
  std::vector<Pair> pairs;
  for (int k = 0; k < 120; ++k) {
    const double far = k % 2 ? 1000.0 : 0.0;
    Pair p;
    for (int i = 0; i < 4 + 2 * (k % 3 == 0); ++i) p.a.points.push_back({far + u(rng), far + u(rng)});
    for (int i = 0; i < 4 + 2 * (k % 5 == 0); ++i) p.b.points.push_back({far + u(rng), far + u(rng)});
    std::vector<P> pa(kSegments + 1), pb(kSegments + 1);
    for (int i = 0; i <= kSegments; ++i) pa[i] = at(p.a, (long double)i / kSegments, nullptr), pb[i] = at(p.b, (long double)i / kSegments, nullptr);
    for (int i = 0; i < kSegments; ++i)
      for (int j = 0; j < kSegments; ++j) {
        const P e{pa[i + 1][0] - pa[i][0], pa[i + 1][1] - pa[i][1]}, f{pb[j + 1][0] - pb[j][0], pb[j + 1][1] - pb[j][1]};
        const long double det = e[0] * (-f[1]) - e[1] * (-f[0]);
        if (det == 0) continue;
        const P g{pb[j][0] - pa[i][0], pb[j][1] - pa[i][1]};
        const long double x = (g[0] * (-f[1]) - g[1] * (-f[0])) / det, y = (e[0] * g[1] - e[1] * g[0]) / det;
        if (x < -0.5 || x > 1.5 || y < -0.5 || y > 1.5) continue;  // (a little beyond: a crossing at a vertex)
        long double s = (i + std::clamp(x, 0.0L, 1.0L)) / kSegments, t = (j + std::clamp(y, 0.0L, 1.0L)) / kSegments;
        bool converged = false;
        for (int it = 0; it < 40 && !converged; ++it) {
          P da{}, db{};
          const P qa = at(p.a, s, &da), qb = at(p.b, t, &db);
          const long double r0 = qa[0] - qb[0], r1 = qa[1] - qb[1], dt = da[0] * (-db[1]) - da[1] * (-db[0]);
          const long double ds = (r0 * (-db[1]) - r1 * (-db[0])) / dt, dv = (da[0] * r1 - da[1] * r0) / dt;
          s -= ds, t -= dv;
          converged = std::abs(ds) + std::abs(dv) < 1e-17L;
        }
        if (!converged || s < 0 || s > 1 || t < 0 || t > 1 || !(sine(p.a, p.b, s, t) > 1e-3)) continue;
        bool again = false;
        for (const auto& r : p.roots) again = again || (std::abs(r[0] - s) < 1e-9L && std::abs(r[1] - t) < 1e-9L);
        if (!again) p.roots.push_back({s, t});
      }
    pairs.push_back(std::move(p));
  }
  std::vector<std::pair<BezierCurve2, BezierCurve2>> input;
  std::size_t crossings = 0;
  for (const Pair& p : pairs) input.emplace_back(p.a, p.b), crossings += p.roots.size();
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    const std::vector<CurveIntersectionResult> r = intersect_curve_pairs(input, o);
    double worst[2] = {0, 0}, worst_gap = 0;
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      SCOPED_TRACE(std::string(device_name(engine)) + " pair " + std::to_string(k) + ", seed " + std::to_string(seed));
      const Pair& p = pairs[k];
      EXPECT_EQ(r[k].status, "complete");
      for (const auto& want : p.roots) {
        int found = 0;
        double error = 1;
        for (const auto& q : r[k].points)
          if (std::abs(q.s - want[0]) < 1e-9L && std::abs(q.t - want[1]) < 1e-9L)
            ++found, error = double(std::max(std::abs(q.s - want[0]), std::abs(q.t - want[1])));
        EXPECT_EQ(found, 1) << "a crossing at (" << double(want[0]) << ", " << double(want[1]) << ")";
        // (the rounding of the coordinates, magnified by the crossing's angle)
        worst[k % 2] = std::max(worst[k % 2], error * double(sine(p.a, p.b, want[0], want[1])));
      }
      for (const auto& q : r[k].points) {
        const P qa = at(p.a, q.s, nullptr), qb = at(p.b, q.t, nullptr);
        const double gap = double(std::hypot(qa[0] - qb[0], qa[1] - qb[1]));
        EXPECT_LE(gap, 1e-14 * (1 + 1000 * (k % 2))) << "a point on both curves at (" << q.s << ", " << q.t << ")";
        worst_gap = std::max(worst_gap, gap / (1 + 1000 * (k % 2)));
      }
    }
    EXPECT_LE(worst[0], 1e-14);
    EXPECT_LE(worst[1], 1e-14);
    std::printf("  %s: %zu random pairs, %zu crossings at an angle: within %.3g (x sine), %.3g a thousand units out; "
                "points on both curves within %.3g of their scale (seed %llu)\n",
                device_name(engine), pairs.size(), crossings, worst[0], worst[1], worst_gap,
                static_cast<unsigned long long>(seed));
  }
}

TEST(Solver, CurvePairsInABatchEqualSingleCalls) {
  std::mt19937_64 rng(test::run_seed());
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::pair<BezierCurve2, BezierCurve2>> pairs;
  auto random_curve = [&](int n, double shift) {
    BezierCurve2 c;
    for (int i = 0; i < n; ++i) c.points.push_back({u(rng) + shift, u(rng)});
    return c;
  };
  for (int k = 0; k < 300; ++k) {
    const BezierCurve2 a = random_curve(3 + k % 3, 0);
    switch (k % 10) {
      case 0:  // overlapping: an arc of a cubic against the cubic
        if (a.points.size() == 4) pairs.emplace_back(a, sub_arc(a, 0.25, 0.75));
        break;
      case 1:  // tangent: a parabola and the line tangent to it at its apex
        pairs.emplace_back(BezierCurve2{{{0, 1}, {0.5, -1}, {1, 1}}}, BezierCurve2{{{0.2, 0}, {0.9, 0}}});
        break;
      case 2:  // disjoint boxes
        pairs.emplace_back(a, random_curve(4, 5));
        break;
      default:
        pairs.emplace_back(a, random_curve(3 + (k / 3) % 4, 0));
    }
  }
  for (Device engine : test::solver_engines()) {
    SolverOptions o;
    o.device = engine;
    const std::vector<CurveIntersectionResult> batch = intersect_curve_pairs(pairs, o);
    ASSERT_EQ(batch.size(), pairs.size());
    {  // the packed form: the same batch, to the bit
      std::vector<std::array<double, 2>> points;
      std::vector<std::int64_t> counts;
      for (const auto& [a, b] : pairs) {
        points.insert(points.end(), a.points.begin(), a.points.end());
        points.insert(points.end(), b.points.begin(), b.points.end());
        counts.push_back(std::int64_t(a.points.size())), counts.push_back(std::int64_t(b.points.size()));
      }
      const std::vector<CurveIntersectionResult> packed = intersect_curve_pairs(points, counts, o);
      ASSERT_EQ(packed.size(), batch.size());
      for (std::size_t k = 0; k < batch.size(); ++k) {
        ASSERT_EQ(packed[k].points.size(), batch[k].points.size()) << k;
        ASSERT_EQ(packed[k].overlaps.size(), batch[k].overlaps.size()) << k;
        EXPECT_EQ(packed[k].status, batch[k].status) << k;
        for (std::size_t i = 0; i < batch[k].points.size(); ++i) {
          EXPECT_EQ(packed[k].points[i].s, batch[k].points[i].s) << k;
          EXPECT_EQ(packed[k].points[i].t, batch[k].points[i].t) << k;
          EXPECT_EQ(packed[k].points[i].point, batch[k].points[i].point) << k;
          EXPECT_EQ(packed[k].points[i].tangent, batch[k].points[i].tangent) << k;
        }
        for (std::size_t i = 0; i < batch[k].overlaps.size(); ++i)
          EXPECT_EQ(packed[k].overlaps[i].s0, batch[k].overlaps[i].s0) << k;
      }
    }
    std::size_t roots = 0, overlaps = 0, tangents = 0;
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      SCOPED_TRACE(std::string(device_name(engine)) + " pair " + std::to_string(k));
      const CurveIntersectionResult one = intersect_curves(pairs[k].first, pairs[k].second, o);
      EXPECT_EQ(batch[k].status, one.status);
      ASSERT_EQ(batch[k].points.size(), one.points.size());
      for (std::size_t i = 0; i < one.points.size(); ++i) {
        EXPECT_NEAR(batch[k].points[i].s, one.points[i].s, 1e-14);
        EXPECT_NEAR(batch[k].points[i].t, one.points[i].t, 1e-14);
        EXPECT_EQ(batch[k].points[i].tangent, one.points[i].tangent);
        tangents += one.points[i].tangent;
      }
      ASSERT_EQ(batch[k].overlaps.size(), one.overlaps.size());
      for (std::size_t i = 0; i < one.overlaps.size(); ++i) {
        EXPECT_NEAR(batch[k].overlaps[i].s0, one.overlaps[i].s0, 1e-14);
        EXPECT_NEAR(batch[k].overlaps[i].t1, one.overlaps[i].t1, 1e-14);
      }
      roots += one.points.size(), overlaps += one.overlaps.size();
    }
    EXPECT_GT(roots, 100u);
    EXPECT_GE(overlaps, 8u);
    EXPECT_GE(tangents, 30u);
  }
}

// Packed curve pairs are checked before any work: counts that do not pair up, a curve of too few or too many
// points, counts past the points or short of them, a point that is not finite; the message names the pair.
TEST(Solver, PackedCurvePairsRefuseBadCounts) {
  const std::vector<std::array<double, 2>> four = {{0, 0}, {1, 1}, {0, 1}, {1, 0}};
  auto message = [&](std::vector<std::array<double, 2>> points, std::vector<std::int64_t> counts) {
    try {
      intersect_curve_pairs(points, counts);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(intersect_curve_pairs(four, std::vector<std::int64_t>{2, 2}).at(0).points.size(), 1u);
  EXPECT_NE(message(four, {2, 2, 0}).find("two per pair"), std::string::npos);
  EXPECT_NE(message(four, {1, 3}).find("pair 0, curve 1: needs 2..64"), std::string::npos);
  EXPECT_NE(message(four, {2, -2}).find("pair 0, curve 2: needs 2..64"), std::string::npos);
  std::vector<std::array<double, 2>> many(70, {0.5, 0.5});
  EXPECT_NE(message(many, {2, 65, 2, 1}).find("pair 0, curve 2"), std::string::npos);
  EXPECT_NE(message(four, {2, 4}).find("more than the 4 points"), std::string::npos);
  EXPECT_NE(message(four, {2, 2, 2, 2}).find("more than the 4 points"), std::string::npos);
  EXPECT_NE(message(many, {2, 2}).find("add up to 4 points, not the 70 given"), std::string::npos);
  std::vector<std::array<double, 2>> bad = four;
  bad[3][1] = NAN;
  EXPECT_NE(message(bad, {2, 2}).find("pair 0, curve 2: a control point is not finite"), std::string::npos);
  EXPECT_TRUE(intersect_curve_pairs({}, std::vector<std::int64_t>{}).empty());
}

// The GPU engines traverse the systems of one shape together: a batch whose shapes alternate (and differ only in
// one degree, or in an inequality's) falls into one group per shape, each in batch order.
TEST(Solver, BatchesGroupBySystemShape) {
  const std::uint64_t seed = test::run_seed() + 43;
  std::mt19937_64 rng(seed);
  const std::vector<std::vector<std::vector<int>>> shapes = {
      {{3, 3}, {3, 3}}, {{5, 5}, {5, 5}}, {{3, 5}, {3, 5}}, {{4}}, {{3, 3}, {3, 3}, {2, 2}}, {{3, 3}, {3, 3}, {2, 3}}};
  const std::vector<int> equations = {2, 2, 2, 1, 2, 2};
  std::vector<std::vector<BernsteinPoly>> eqs, positive;
  std::vector<int> variables;
  std::vector<std::vector<std::size_t>> expected;
  std::vector<int> group_of_shape(shapes.size(), -1);
  for (std::size_t i = 0; i < 5000; ++i) {
    const std::size_t k = i < 200 ? i % 2 : rng() % shapes.size();
    std::vector<BernsteinPoly> e, q;
    for (std::size_t p = 0; p < shapes[k].size(); ++p)
      (int(p) < equations[k] ? e : q).push_back(random_poly(rng, shapes[k][p]));
    eqs.push_back(std::move(e));
    positive.push_back(std::move(q));
    variables.push_back(int(shapes[k][0].size()));
    if (group_of_shape[k] < 0) group_of_shape[k] = int(expected.size()), expected.emplace_back();
    expected[std::size_t(group_of_shape[k])].push_back(i);
  }
  const std::vector<solver::System> none;
  const solver::Batch batch{none, eqs, positive, variables, true};
  for (int threads : {1, 3}) EXPECT_EQ(solver::shape_groups(batch, threads), expected) << "seed " << seed;
}

// n control points drawn in the unit square.
BezierCurve2 unit_square_curve(std::mt19937_64& rng, int n) {
  std::uniform_real_distribution<double> u(0, 1);
  BezierCurve2 c;
  for (int i = 0; i < n; ++i) c.points.push_back({u(rng), u(rng)});
  return c;
}

// The resident GPU engine keeps the frontier's counts on the device and lets the host look only every few levels;
// the hybrid engine reads every level back. Both run the same kernels in the same order, so their results are the
// same to the bit. Each solve runs on a new thread, whose work arrays start empty: the resident levels overflow
// their node and finished-cell buffers and run again after the host grows them. Also with a cell limit that
// stops a batch part way (the limit is applied on the device).
TEST(Solver, ResidentGpuLevelsEqualTheHybridLevels) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: the GPU engines do not run here";
  const std::uint64_t seed = test::run_seed() + 41;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  auto random_curve = [&](int n) { return unit_square_curve(rng, n); };
  std::vector<std::pair<BezierCurve2, BezierCurve2>> pairs;
  for (int k = 0; k < 3000; ++k)
    if (k % 7 == 0)  // tangent: deep levels of a few cells each
      pairs.emplace_back(BezierCurve2{{{0, 1}, {0.5, -1}, {1, 1}}}, BezierCurve2{{{0.2, 0}, {0.9 - 1e-3 * u(rng), 0}}});
    else
      pairs.emplace_back(random_curve(3 + k % 4), random_curve(4 + k % 3));
  auto on_a_new_thread = [](auto&& work) {
    std::exception_ptr failed;
    std::thread t([&] {
      try {
        work();
      } catch (...) {
        failed = std::current_exception();
      }
    });
    t.join();
    if (failed) std::rethrow_exception(failed);
  };
  SolverOptions resident, hybrid;
  resident.device = Device::Cuda;
  hybrid.device = Device::Hybrid;
  std::vector<CurveIntersectionResult> a, b;
  on_a_new_thread([&] { a = intersect_curve_pairs(pairs, resident); });
  on_a_new_thread([&] { b = intersect_curve_pairs(pairs, hybrid); });
  SCOPED_TRACE("seed " + std::to_string(seed));
  ASSERT_EQ(a.size(), b.size());
  std::size_t points = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].status, b[k].status) << k;
    ASSERT_EQ(a[k].points.size(), b[k].points.size()) << k;
    for (std::size_t i = 0; i < a[k].points.size(); ++i) {
      EXPECT_EQ(a[k].points[i].s, b[k].points[i].s) << k;
      EXPECT_EQ(a[k].points[i].t, b[k].points[i].t) << k;
      EXPECT_EQ(a[k].points[i].tangent, b[k].points[i].tangent) << k;
    }
    points += a[k].points.size();
  }
  EXPECT_GT(points, 1500u);
  // A line of roots in every system: a continuum the cell limit stops on both engines at the same level.
  const BernsteinPoly x = BernsteinPoly::univariate({0, 1}, 0, 2), y = BernsteinPoly::univariate({0, 1}, 1, 2);
  std::vector<std::vector<BernsteinPoly>> lines;
  for (int i = 0; i < 64; ++i) lines.push_back({x - y - BernsteinPoly::constant(2, 0.01 * i), 2.0 * (x - y)});
  SolverOptions limited = resident;
  limited.max_nodes = 200;  // the batch's 12,800 cells end the line's levels long before 1e-5
  limited.tolerance = 1e-5;
  std::vector<SolveResult> la, lb;
  on_a_new_thread([&] { la = solve_systems(lines, limited); });
  limited.device = Device::Hybrid;
  on_a_new_thread([&] { lb = solve_systems(lines, limited); });
  ASSERT_EQ(la.size(), lb.size());
  EXPECT_EQ(la[0].status.rfind("limit reached", 0), 0u) << la[0].status;
  for (std::size_t i = 0; i < la.size(); ++i) {
    EXPECT_EQ(la[i].status, lb[i].status);
    EXPECT_EQ(la[i].nodes, lb[i].nodes);
    ASSERT_EQ(la[i].roots.size(), lb[i].roots.size());
    ASSERT_EQ(la[i].regions.size(), lb[i].regions.size());
    for (std::size_t k = 0; k < la[i].regions.size(); ++k) EXPECT_EQ(la[i].regions[k].lo, lb[i].regions[k].lo);
  }
}

// The CUDA engine traverses a batch's shape groups (here 12 pairs of degrees) several at once, each from a thread of
// its own: the caller's hooks are still called one at a time, the roots are those of the run without hooks, and a
// stop ends every group's traversal.
TEST(Solver, GpuLanesCallTheHooksOneAtATime) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: the GPU engines do not run here";
  const std::uint64_t seed = test::run_seed() + 44;
  std::mt19937_64 rng(seed);
  auto random_curve = [&](int n) { return unit_square_curve(rng, n); };
  std::vector<std::pair<BezierCurve2, BezierCurve2>> pairs;
  for (int k = 0; k < 2400; ++k) pairs.emplace_back(random_curve(3 + k % 4), random_curve(4 + (k / 4) % 3));
  SolverOptions o;
  o.device = Device::Cuda;
  const std::vector<CurveIntersectionResult> plain = intersect_curve_pairs(pairs, o);
  std::atomic<int> inside{0}, calls{0};
  std::atomic<bool> overlapped{false};
  auto enter = [&] {
    if (inside.fetch_add(1) != 0) overlapped = true;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    ++calls;
    inside.fetch_sub(1);
  };
  o.progress = [&](int, std::int64_t) { enter(); };
  o.stop = [&] {
    enter();
    return false;
  };
  const std::vector<CurveIntersectionResult> hooked = intersect_curve_pairs(pairs, o);
  SCOPED_TRACE("seed " + std::to_string(seed));
  EXPECT_FALSE(overlapped.load());
  EXPECT_GT(calls.load(), 12);
  ASSERT_EQ(hooked.size(), plain.size());
  std::size_t points = 0;
  for (std::size_t k = 0; k < plain.size(); ++k) {
    ASSERT_EQ(hooked[k].points.size(), plain[k].points.size()) << k;
    for (std::size_t i = 0; i < plain[k].points.size(); ++i) EXPECT_EQ(hooked[k].points[i].s, plain[k].points[i].s) << k;
    points += plain[k].points.size();
  }
  EXPECT_GT(points, 1000u);
  o.progress = nullptr;
  o.stop = [] { return true; };
  const std::vector<CurveIntersectionResult> stopped = intersect_curve_pairs(pairs, o);
  std::size_t interrupted = 0, complete_with_points = 0;
  for (const auto& r : stopped) {
    interrupted += r.status.find("interrupted") != std::string::npos;
    complete_with_points += r.status == "complete" && !r.points.empty();
  }
  EXPECT_GT(interrupted, 1000u);
  EXPECT_EQ(complete_with_points, 0u);
}

// The CUDA engines settle the cells they prove to hold one root with Newton on the device (systems of one to three
// unknowns, degrees up to 15); the host settles the rest. Both settle the same cells from the same start with the
// same steps, so the roots agree to the rounding of the evaluations: here against the host's settling of the same
// traversal, on random systems of one, two and three unknowns with known roots, one whose Jacobian is too
// ill-scaled for the device's inverse (the host takes a least-squares step) and one of degree 16 (host only).
TEST(Solver, GpuSettledRootsEqualTheHostsNewton) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: the GPU engines do not run here";
  const std::uint64_t seed = test::run_seed() + 43;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.05, 0.95);
  std::vector<std::vector<BernsteinPoly>> systems;
  std::vector<std::vector<double>> known;  // a root each system must have
  for (int k = 0; k < 300; ++k) {
    const int n = 1 + k % 3;
    std::vector<double> r(static_cast<std::size_t>(n), 0.0);
    for (double& v : r) v = u(rng);
    std::vector<BernsteinPoly> eq;
    for (int i = 0; i < n; ++i) eq.push_back(dominant_equation(r, i, 0.5, rng));
    systems.push_back(eq);
    known.push_back(r);
  }
  systems.push_back({1e-12 * minus_root(0.3, 0, 2), minus_root(0.6, 1, 2)});
  known.push_back({0.3, 0.6});
  BernsteinPoly high = minus_root(0.41, 0, 1);
  for (int i = 0; i < 15; ++i) high = high * BernsteinPoly::univariate({1, 2}, 0, 1);
  systems.push_back({high});
  known.push_back({0.41});
  SolverOptions o;
  o.device = Device::Cuda;
  const std::int64_t settled_before = solver_gpu_traffic().settled;
  const std::vector<SolveResult> device = solve_systems(systems, o);
  const std::int64_t settled = solver_gpu_traffic().settled - settled_before;
  solver::set_gpu_settling(false);
  const std::vector<SolveResult> host = solve_systems(systems, o);
  solver::set_gpu_settling(true);
  SCOPED_TRACE("seed " + std::to_string(seed));
  // The device path ran: the random systems' proved roots (one or more each) are the device's to settle; the
  // ill-scaled system's and the degree-16 one's are not.
  EXPECT_GE(settled, 200) << "roots settled on the device";
  EXPECT_EQ(solver_gpu_traffic().settled - settled_before, settled) << "the device settled with its settling off";
  ASSERT_EQ(device.size(), host.size());
  double worst = 0;
  for (std::size_t i = 0; i < systems.size(); ++i) {
    ASSERT_EQ(device[i].status, host[i].status) << i;
    ASSERT_EQ(device[i].roots.size(), host[i].roots.size()) << i;
    for (std::size_t k = 0; k < host[i].roots.size(); ++k) {
      EXPECT_EQ(device[i].roots[k].proved_single, host[i].roots[k].proved_single) << i;
      for (std::size_t v = 0; v < host[i].roots[k].x.size(); ++v)
        worst = std::max(worst, std::abs(device[i].roots[k].x[v] - host[i].roots[k].x[v]));
    }
    bool found = false;  // the known root, once
    for (const Root& r : device[i].roots) {
      double d = 0;
      for (std::size_t v = 0; v < r.x.size(); ++v) d = std::max(d, std::abs(r.x[v] - known[i][v]));
      found = found || d < 1e-10;
    }
    EXPECT_TRUE(found) << "system " << i;
  }
  EXPECT_LT(worst, 1e-12);
  std::printf("  %zu systems: device and host settling agree within %.2g, %lld roots settled on the device (seed %llu)\n",
              systems.size(), worst, (long long)settled, (unsigned long long)seed);
}

// Small square systems (one to three unknowns, at most one inequality, degrees below 8) are tested and split on the
// GPU by kernels made for their shape; they must give the general kernels' cells bit for bit: the same roots, flags,
// regions and cell counts, on both GPU engines. Random systems with known roots (degrees raised up to 7 by positive
// factors), tangent roots (clusters of tolerance cells), an inequality that removes half the roots, and one system
// of degree 8 (general kernels only) in the same batch.
TEST(Solver, GpuSmallShapeKernelsEqualTheGeneralOnes) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: the GPU engines do not run here";
  const std::uint64_t seed = test::run_seed() + 47;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.05, 0.95), c(-1, 1);
  std::uniform_int_distribution<int> raise(0, 3);
  std::vector<std::vector<BernsteinPoly>> systems, positive;
  for (int k = 0; k < 1200; ++k) {
    const int n = 1 + k % 3;
    std::vector<double> r(static_cast<std::size_t>(n), 0.0);
    for (double& v : r) v = u(rng);
    std::vector<BernsteinPoly> eq;
    const int times = raise(rng);  // positive quadratic factors in every variable (a few shapes, not hundreds)
    for (int i = 0; i < n; ++i) {
      BernsteinPoly f = dominant_equation(r, i, 2.0, rng);
      for (int v = 0; v < n; ++v)
        for (int t = 0; t < times; ++t) f = f * BernsteinPoly::univariate({1, 1.5 + c(rng), 1 + 0.5 * c(rng)}, v, n);
      eq.push_back(f);
    }
    if (k % 7 == 3 && n == 2)  // a tangent root at r: y = r1 + (x - r0)^2 touching y = r1
      eq = {minus_root(r[1], 1, 2) + (-1.0) * (minus_root(r[0], 0, 2) * minus_root(r[0], 0, 2)), minus_root(r[1], 1, 2)};
    systems.push_back(eq);
    positive.push_back(k % 5 == 1 ? std::vector<BernsteinPoly>{minus_root(0.5, 0, n)} : std::vector<BernsteinPoly>{});
  }
  BernsteinPoly high = minus_root(0.41, 0, 1);
  for (int i = 0; i < 7; ++i) high = high * BernsteinPoly::univariate({1, 2}, 0, 1);
  systems.push_back({high});
  positive.push_back({});
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::size_t roots = 0, tangent = 0, regions = 0;
  for (const Device device : {Device::Cuda, Device::Hybrid}) {
    SolverOptions o;
    o.device = device;
    const std::int64_t before = solver::gpu_small_shape_traversals();
    const std::vector<SolveResult> small = solve_systems(systems, o, positive);
    const std::int64_t ran = solver::gpu_small_shape_traversals() - before;
    solver::set_gpu_small_shape_kernels(false);
    const std::vector<SolveResult> general = solve_systems(systems, o, positive);
    solver::set_gpu_small_shape_kernels(true);
    EXPECT_GT(ran, 0) << "the small-shape kernels did not run";
    EXPECT_EQ(solver::gpu_small_shape_traversals() - before, ran) << "they ran while switched off";
    ASSERT_EQ(small.size(), general.size());
    for (std::size_t i = 0; i < systems.size(); ++i) {
      const SolveResult &a = small[i], &b = general[i];
      ASSERT_EQ(a.status, b.status) << i;
      ASSERT_EQ(a.nodes, b.nodes) << i;
      ASSERT_EQ(a.roots.size(), b.roots.size()) << i;
      ASSERT_EQ(a.regions.size(), b.regions.size()) << i;
      for (std::size_t k = 0; k < a.roots.size(); ++k) {
        EXPECT_EQ(a.roots[k].x, b.roots[k].x) << i;
        EXPECT_EQ(a.roots[k].residual, b.roots[k].residual) << i;
        EXPECT_EQ(a.roots[k].proved_single, b.roots[k].proved_single) << i;
        EXPECT_EQ(a.roots[k].multiplicity_hint, b.roots[k].multiplicity_hint) << i;
        tangent += device == Device::Cuda && !a.roots[k].proved_single;
      }
      for (std::size_t k = 0; k < a.regions.size(); ++k) {
        EXPECT_EQ(a.regions[k].lo, b.regions[k].lo) << i;
        EXPECT_EQ(a.regions[k].hi, b.regions[k].hi) << i;
        EXPECT_EQ(a.regions[k].cells, b.regions[k].cells) << i;
      }
      if (device == Device::Cuda) roots += a.roots.size(), regions += a.regions.size();
    }
  }
  EXPECT_GT(roots, 1000u);
  EXPECT_GT(tangent, 25u) << "tangent roots (clusters of tolerance cells)";
  std::printf("  %zu systems: %zu roots (%zu tangent), %zu regions, equal on both kernels and engines (seed %llu)\n",
              systems.size(), roots, tangent, regions, (unsigned long long)seed);
}

// The cell limit holds per system on every engine: a batch of systems that each fit it completes even when their
// cells together pass it (engines that traverse a batch as one counted the batch against one system's limit, and a
// batch of 10^4 curve pairs ended partial on the GPU).
// auto sends a batch to the GPU only from 128 systems per CPU thread (and 2048) on; asked-for engines are kept.
TEST(Solver, AutoSendsOnlyWideBatchesToTheGpu) {
  const Device gpu = cuda_available() ? Device::Cuda : Device::Cpu;
  SolverOptions o;
  o.device = Device::Auto;
  o.threads = 4;
  EXPECT_EQ(solver::engine_for(o, 1), Device::Cpu);
  EXPECT_EQ(solver::engine_for(o, 2047), Device::Cpu);
  EXPECT_EQ(solver::engine_for(o, 2048), gpu);
  o.threads = 64;
  EXPECT_EQ(solver::engine_for(o, 8191), Device::Cpu);
  EXPECT_EQ(solver::engine_for(o, 8192), gpu);
  o.device = Device::Cpu;
  EXPECT_EQ(solver::engine_for(o, 1000000), Device::Cpu);
  o.device = Device::Hybrid;
  if (cuda_available())
    EXPECT_EQ(solver::engine_for(o, 1), Device::Hybrid);
  else
    EXPECT_THROW(solver::engine_for(o, 1), Error);  // asked for, not there: refused, not run elsewhere
}

// A batch with more systems than the task ring holds (2^16 slots): the roots left over are taken when the ring runs
// dry (they were handed out 64 per thread at the start, and the rest never, so the solve spun forever).
// More systems than the task ring's 2^16 slots, and than the 100,000 waiting cells at which one system's
// subdivision is taken for a continuum: every system is still solved whole and as it is alone (a proved root, no
// region), two-variable systems whose roots need a few splits.
TEST(Solver, ABatchLargerThanTheTaskRingIsSolvedWhole) {
  const std::size_t count = 120000;
  const BernsteinPoly x = BernsteinPoly::univariate({0, 1}, 0, 2), y = BernsteinPoly::univariate({0, 1}, 1, 2);
  std::vector<std::vector<BernsteinPoly>> systems(count);
  for (std::size_t i = 0; i < count; ++i) {
    const double a = (double(i) + 0.5) / double(count);
    // x^2 + y^2 = a^2 + 0.25 and y = 0.5 (x = a): curved, so not proved on the first cell.
    systems[i] = {x * x + y * y - BernsteinPoly::constant(2, a * a + 0.25), y - BernsteinPoly::constant(2, 0.5)};
  }
  SolverOptions o;
  o.cpu_scheme = SolverCpuScheme::TaskBuffer;
  o.threads = 3;
  o.max_seconds = 60;
  const std::vector<SolveResult> r = solve_systems(systems, o);
  ASSERT_EQ(r.size(), count);
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_EQ(r[i].status, "complete") << i;
    ASSERT_EQ(r[i].roots.size(), 1u) << i;
    ASSERT_TRUE(r[i].regions.empty()) << i;
    ASSERT_TRUE(r[i].roots[0].proved_single) << i;
    ASSERT_NEAR(r[i].roots[0].x[0], (double(i) + 0.5) / double(count), 1e-12) << i;
    ASSERT_NEAR(r[i].roots[0].x[1], 0.5, 1e-12) << i;
  }
}

// A system of zero polynomials (the closest-point conditions on a patch collapsed to a point) holds everywhere: one
// region, the unit box, at once, beside the batch's other systems solved as they are alone. Subdivided, it filled
// every level up to the cell limit (34 s).
TEST(Solver, AVacuousSystemIsTheWholeBoxAtOnce) {
  const BernsteinPoly x = BernsteinPoly::univariate({0, 1}, 0, 2), y = BernsteinPoly::univariate({0, 1}, 1, 2);
  const BernsteinPoly zero = BernsteinPoly::constant(2, 0.0) * (x * y);
  const std::vector<BernsteinPoly> circle = {x * x + y * y - BernsteinPoly::constant(2, 0.5), x - y};
  SolverOptions o;
  o.max_seconds = 20;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<SolveResult> r = solve_systems({circle, {zero, zero}, circle}, o);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1].status, "complete");
  EXPECT_TRUE(r[1].roots.empty());
  ASSERT_EQ(r[1].regions.size(), 1u);
  EXPECT_EQ(r[1].regions[0].lo, std::vector<double>({0.0, 0.0}));
  EXPECT_EQ(r[1].regions[0].hi, std::vector<double>({1.0, 1.0}));
  const SolveResult alone = solve_system(circle, o);
  for (std::size_t i : {std::size_t(0), std::size_t(2)}) {
    ASSERT_EQ(r[i].roots.size(), alone.roots.size());
    for (std::size_t k = 0; k < alone.roots.size(); ++k) EXPECT_EQ(r[i].roots[k].x, alone.roots[k].x);
  }
  // A batch of nothing but vacuous systems, and one such system alone.
  EXPECT_EQ(solve_systems({{zero, zero}, {zero, zero}}, o)[1].regions.size(), 1u);
  EXPECT_EQ(solve_system({zero, zero}, o).status, "complete");
}

TEST(Solver, TheCellLimitIsPerSystemInABatch) {
  const BernsteinPoly x = BernsteinPoly::univariate({0, 1}, 0, 2), y = BernsteinPoly::univariate({0, 1}, 1, 2);
  auto k = [](double v) { return BernsteinPoly::constant(2, v); };
  std::vector<std::vector<BernsteinPoly>> systems;
  for (int i = 0; i < 40; ++i) {
    // A circle and a line tangent to it (a cluster of cells at the tangency), moved a little each time.
    const double cx = 0.4 + 0.005 * i, cy = 0.45;
    systems.push_back({(x - k(cx)) * (x - k(cx)) + (y - k(cy)) * (y - k(cy)) - k(0.09), y - k(cy + 0.3)});
  }
  for (Device engine : test::solver_engines()) {
    SCOPED_TRACE(device_name(engine));
    SolverOptions o;
    o.device = engine;
    // The engines traverse differently: each one's own count for one system.
    const SolveResult alone = solve_system(systems[0], o);
    ASSERT_EQ(alone.status, "complete");
    ASSERT_GT(alone.nodes, 20);
    o.max_nodes = 2 * alone.nodes;  // each system fits; the 40 together have 20 times that
    const std::vector<SolveResult> r = solve_systems(systems, o);
    std::int64_t cells = 0;
    for (const SolveResult& s : r) {
      EXPECT_EQ(s.status, "complete");
      ASSERT_EQ(s.roots.size(), 1u);
      EXPECT_NEAR(s.roots[0].x[1], 0.75, 1e-3);
      cells += s.nodes;
    }
    if (engine == Device::Cpu) EXPECT_GT(cells, o.max_nodes);
    // and a system past the limit still stops: a line of roots (tens of thousands of cells at 1e-4) against 2000
    o.max_nodes = 2000;
    o.tolerance = 1e-4;
    EXPECT_EQ(solve_systems({{x - y, 2.0 * (x - y)}}, o)[0].status.rfind("limit reached", 0), 0u);
  }
}

// Overlapping curves: the overlap's ends are curve ends, found from the exact curves, so they are right to rounding
// and the same on every engine; the solver's cells only locate them.
TEST(Solver, CurveOverlapEndsAreExactOnEveryEngine) {
  std::mt19937_64 rng(test::run_seed());
  std::uniform_int_distribution<int> coordinate(-8, 8);
  for (int round = 0; round < 4; ++round) {
    // A cubic that keeps moving over the parameters the arcs below take, [-0.5, 1.5]: at a cusp (speed zero) or a
    // turn so tight that the curve runs back along itself, a point's parameter is a double root, located to
    // sqrt(machine epsilon) at best (integer control points drew a cusp exactly at an overlap's end).
    BezierCurve2 a;
    for (double slowest = 0; slowest < 1.0;) {
      a.points.clear();
      for (int i = 0; i < 4; ++i) a.points.push_back({double(coordinate(rng)), double(coordinate(rng))});
      a.points[3] = {a.points[0][0] + 9, a.points[0][1] + 5};  // never a closed loop
      slowest = HUGE_VAL;
      for (int k = 0; k <= 400; ++k) {
        const double u = -0.5 + 2.0 * k / 400, w[3] = {(1 - u) * (1 - u), 2 * u * (1 - u), u * u};
        double d[2] = {0, 0};
        for (int e = 0; e < 3; ++e)
          for (int c = 0; c < 2; ++c) d[c] += 3 * w[e] * (a.points[std::size_t(e + 1)][std::size_t(c)] - a.points[std::size_t(e)][std::size_t(c)]);
        slowest = std::min(slowest, std::hypot(d[0], d[1]));
      }
    }
    struct Case {
      double u0, u1;
      bool reversed;
    };
    for (const Case& k : {Case{0.25, 1.5, false}, Case{-0.5, 0.5, true}, Case{0.25, 0.75, false}, Case{-0.25, 1.25, true}}) {
      BezierCurve2 b = sub_arc(a, k.u0, k.u1);
      if (k.reversed) std::reverse(b.points.begin(), b.points.end());
      // Where a's parameter s meets b's t: t = (s - u0) / (u1 - u0), or 1 minus that when b runs the other way.
      const double s0 = std::max(0.0, k.u0), s1 = std::min(1.0, k.u1);
      double t0 = (s0 - k.u0) / (k.u1 - k.u0), t1 = (s1 - k.u0) / (k.u1 - k.u0);
      if (k.reversed) t0 = 1 - t0, t1 = 1 - t1, std::swap(t0, t1);
      std::vector<CurveOverlap> seen;
      for (Device engine : test::solver_engines()) {
        SolverOptions o;
        o.device = engine;
        const CurveIntersectionResult r = intersect_curves(a, b, o);
        SCOPED_TRACE(std::string(device_name(engine)) + " round " + std::to_string(round) + ": arc [" +
                     std::to_string(k.u0) + ", " + std::to_string(k.u1) + "]" + (k.reversed ? " reversed" : ""));
        ASSERT_EQ(r.overlaps.size(), 1u) << r.status << ", " << r.points.size() << " points; a: " << a.points[0][0] << " " << a.points[0][1] << ", " << a.points[1][0] << " " << a.points[1][1] << ", " << a.points[2][0] << " " << a.points[2][1] << ", " << a.points[3][0] << " " << a.points[3][1];
        const CurveOverlap& v = r.overlaps[0];
        EXPECT_NEAR(v.s0, s0, 1e-12);
        EXPECT_NEAR(v.s1, s1, 1e-12);
        EXPECT_NEAR(v.t0, t0, 1e-12);
        EXPECT_NEAR(v.t1, t1, 1e-12);
        for (const auto& w : seen) {
          EXPECT_NEAR(v.s0, w.s0, 1e-14);
          EXPECT_NEAR(v.s1, w.s1, 1e-14);
          EXPECT_NEAR(v.t0, w.t0, 1e-14);
          EXPECT_NEAR(v.t1, w.t1, 1e-14);
        }
        seen.push_back(v);
      }
    }
  }
}

// A quintic with a tight turn: the sample of the curve nearest to the other curve's end lay in another basin of the
// distance than the end's own, so the shared arc went unseen and was traced cell by cell (2^18 cells, a second).
TEST(Solver, SharedArcsOfQuinticsWithTightTurnsAreFoundDirectly) {
  const BezierCurve2 a{{{0.679412, 0.211084}, {0.548772, 0.999065}, {0.725208, 0.344670}, {0.566116, 0.217277},
                        {0.389115, 0.453786}, {0.315848, 0.590373}}};
  const BezierCurve2 b = curve_piece(a, 0.725394, 0.274932);  // reversed
  SolverOptions o;
  o.cpu_scheme = SolverCpuScheme::Levels;
  std::int64_t cells = 0;
  o.progress = [&](int, std::int64_t c) { cells += c; };
  const CurveIntersectionResult r = intersect_curves(a, b, o);
  ASSERT_EQ(r.overlaps.size(), 1u);
  EXPECT_NEAR(r.overlaps[0].s0, 0.274932, 1e-12);
  EXPECT_NEAR(r.overlaps[0].s1, 0.725394, 1e-12);
  EXPECT_EQ(r.overlaps[0].t0, 0.0);
  EXPECT_EQ(r.overlaps[0].t1, 1.0);
  EXPECT_TRUE(r.points.empty());
  EXPECT_LT(cells, 5000);  // the pieces beside the arc, not the arc
}

// Shared arcs are found from the curves themselves, not traced by subdivision (which took 0.1-0.4 s a pair): arcs
// of random cubics and quintics, either way round, a cubic's arc reaching past its ends, an arc raised to a higher
// degree, ends moved by rounding; and none where curves only cross, touch, or run 1e-6 apart. Crossings beside the
// arc (a loop of the common curve) are points of both curves away from the arc.
TEST(Solver, SharedArcsAreFoundDirectlyWithTheCrossingsBesideThem) {
  const std::uint64_t seed = test::run_seed() + 52;
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  auto random_curve = [&](int degree) {
    BezierCurve2 c;
    for (int i = 0; i <= degree; ++i) c.points.push_back({u(rng), u(rng)});
    return c;
  };
  auto raise = [](const BezierCurve2& c) {  // one degree up, the same curve
    const std::size_t n = c.points.size();
    BezierCurve2 r;
    r.points.resize(n + 1);
    r.points[0] = c.points[0], r.points[n] = c.points[n - 1];
    for (std::size_t i = 1; i < n; ++i)
      for (int k = 0; k < 2; ++k)
        r.points[i][std::size_t(k)] = double(i) / double(n) * c.points[i - 1][std::size_t(k)] +
                                      (1 - double(i) / double(n)) * c.points[i][std::size_t(k)];
    return r;
  };
  // The slowest speed of c over [lo, hi] (de Casteljau on the derivative's points, also outside [0, 1]).
  auto slowest = [](const BezierCurve2& c, double lo, double hi) {
    const std::size_t n = c.points.size() - 1;
    double least = HUGE_VAL;
    for (int k = 0; k <= 200; ++k) {
      const double t = lo + (hi - lo) * k / 200;
      std::vector<std::array<double, 2>> d(n);
      for (std::size_t i = 0; i < n; ++i)
        for (int c2 = 0; c2 < 2; ++c2)
          d[i][std::size_t(c2)] = double(n) * (c.points[i + 1][std::size_t(c2)] - c.points[i][std::size_t(c2)]);
      for (std::size_t r = 1; r < n; ++r)
        for (std::size_t i = 0; i + r < n; ++i)
          for (int c2 = 0; c2 < 2; ++c2)
            d[i][std::size_t(c2)] = (1 - t) * d[i][std::size_t(c2)] + t * d[i + 1][std::size_t(c2)];
      least = std::min(least, std::hypot(d[0][0], d[0][1]));
    }
    return least;
  };
  int loops = 0;
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    double u0 = 0.4 * u(rng), u1 = 0.6 + 0.4 * u(rng);
    if (round % 4 == 2) u0 -= 0.3, u1 += 0.3;  // past both ends (cubics): a lies inside b
    // A curve that keeps moving where the arc's ends fall: at a cusp a point's parameter is a double root, known to
    // about 1e-8 only, and the pieces cut there differ by more than the test's 1e-9 (the solver then traces the arc).
    BezierCurve2 a;
    do a = random_curve(round % 2 ? 5 : 3);
    while (slowest(a, std::min(u0, 0.0), std::max(u1, 1.0)) < 0.3);
    BezierCurve2 b = round % 4 == 2 ? sub_arc(a, u0, u1) : curve_piece(a, u0, u1);
    const bool reversed = round % 3 == 0;
    if (reversed) std::reverse(b.points.begin(), b.points.end());
    if (round % 5 == 1) b = raise(b);
    if (round % 7 == 3) b.points.front()[0] += 1e-14, b.points.back()[1] -= 1e-14;
    const double s0 = std::max(0.0, u0), s1 = std::min(1.0, u1);
    double t0 = (s0 - u0) / (u1 - u0), t1 = (s1 - u0) / (u1 - u0);
    if (reversed) t0 = 1 - t0, t1 = 1 - t1, std::swap(t0, t1);
    const auto arc = solver::coincident_arcs(a, b);
    ASSERT_TRUE(arc.has_value());
    EXPECT_NEAR(arc->s0, s0, 1e-9);
    EXPECT_NEAR(arc->s1, s1, 1e-9);
    EXPECT_NEAR(arc->t0, t0, 1e-9);
    EXPECT_NEAR(arc->t1, t1, 1e-9);
    const CurveIntersectionResult r = intersect_curves(a, b);
    EXPECT_EQ(r.status, "complete");
    ASSERT_EQ(r.overlaps.size(), 1u);
    EXPECT_NEAR(r.overlaps[0].s0, s0, 1e-9);
    EXPECT_NEAR(r.overlaps[0].t1, t1, 1e-9);
    for (const CurveIntersection& p : r.points) {
      const auto pa = curve_piece(a, p.s, p.s).points[0], pb = curve_piece(b, p.t, p.t).points[0];
      EXPECT_LT(std::hypot(pa[0] - pb[0], pa[1] - pb[1]), 1e-9) << p.s << " " << p.t;
      // Away from the arc: s outside it, or t not the arc's image of s.
      const double image = reversed ? t1 - (p.s - s0) / (s1 - s0) * (t1 - t0) : t0 + (p.s - s0) / (s1 - s0) * (t1 - t0);
      EXPECT_TRUE(p.s < s0 - 1e-6 || p.s > s1 + 1e-6 || std::abs(p.t - image) > 1e-6) << p.s << " " << p.t;
      ++loops;
    }
  }
  std::printf("  60 shared arcs, %d crossings beside them\n", loops);
  for (int k = 0; k < 200; ++k) {  // crossing, touching or near pairs: no shared arc
    const BezierCurve2 a = random_curve(3 + k % 3);
    BezierCurve2 b = k % 4 == 0 ? curve_piece(a, 0.2, 0.8) : random_curve(3 + k % 4);
    if (k % 4 == 0)
      for (auto& p : b.points) p[1] += 1e-6;
    EXPECT_FALSE(solver::coincident_arcs(a, b).has_value()) << "pair " << k;
  }
}

}  // namespace
}  // namespace parasurf
