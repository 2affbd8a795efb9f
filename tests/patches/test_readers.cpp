// Patch-file readers: every BezierView kind, groups, .bpt, B-spline JSON; malformed input rejected with a line.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "parasurf/error.hpp"
#include "parasurf/patches.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BezierView, ReadsEveryKindAndGroups) {
  const std::string text =
      "group 3 lid part\n"
      "1\n4 2\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n3 0 1 2\n3 0 2 3\n"
      "3\n1\n0 0 0\n1 0 0\n0 1 0\n"
      "Group 5 other\n"
      "4\n1\n0 0 0\n0 1 0\n1 0 0\n1 1 1\n"
      "5\n1 2\n0 0 0\n0 1 0\n0 2 0\n1 0 0\n1 1 1\n1 2 0\n"
      "8\n1 1\n0 0 0 1\n0 2 0 2\n2 0 0 2\n1 1 1 1\n"
      "9\n1 1\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n0 0 1\n0 0 1\n"
      "10\n1 1 1 1\n0 0 0\n0 1 0\n1 0 0\n1 1 0\n0 0 1\n0 0 1\n0 0 1\n0 0 1\n";
  const PatchModel m = parse_bezierview(text, "kinds.bv");
  ASSERT_EQ(m.polyhedra.size(), 1u);
  EXPECT_EQ(m.polyhedra[0].face_starts.size(), 3u);
  ASSERT_EQ(m.patches.size(), 6u);
  EXPECT_EQ(m.patches[0].kind, PatchKind::Triangle);
  EXPECT_EQ(m.patches[1].degree_u, 1);
  EXPECT_EQ(m.patches[2].degree_v, 2);
  EXPECT_TRUE(m.patches[3].rational);
  // homogeneous storage: the point (0,2,0) with weight 2 is stored as 0 2 0 2 (the file's w*x w*y w*z w)
  EXPECT_DOUBLE_EQ(m.points[std::size_t(m.patches[3].offset + 1) * 4 + 1], 2.0);
  EXPECT_EQ(m.patches[4].normal_degree_u, 1);
  EXPECT_EQ(m.patches[5].normal_degree_v, 1);
  ASSERT_EQ(m.groups.size(), 2u);
  EXPECT_EQ(m.groups[0].name, "lid part");
  EXPECT_EQ(m.groups[1].color, 5);
  EXPECT_EQ(m.polyhedra[0].group, 0);
  EXPECT_EQ(m.patches[0].group, 0);
  EXPECT_EQ(m.patches[1].group, 1);
  validate(m);
}

// The decimal step the coordinates were written with: the finest among the numbers with a fractional part;
// integers are exact as written, and a model with no decimals at all has none.
TEST(BezierView, NotesTheStepCoordinatesWereWrittenWith) {
  const std::string bilinear = "4\n1\n";
  auto step = [&](const std::string& points) { return parse_bezierview(bilinear + points, "t.bv").printed_step; };
  EXPECT_DOUBLE_EQ(step("0.050926 0.000000 1.5 1 0 0 0 1 0 1 1 0\n"), 1e-6);
  EXPECT_DOUBLE_EQ(step("-80.00 0.00 30.00 1.00 0.00 0.00 0.00 1.00 0.00 1.00 1.00 0.00\n"), 1e-2);
  EXPECT_DOUBLE_EQ(step(".66667 0 0 1 0 0 0 1 0 1 1 0\n"), 1e-5);
  EXPECT_DOUBLE_EQ(step("1.5e-05 0 0 1 0 0 0 1 0 1 1 2.25E+01\n"), 1e-6);
  EXPECT_EQ(step("0 0 0 1 0 0 0 1 0 1 1 0\n"), 0.0);
}

TEST(BezierView, GroupLinesNameGroupsByColourAndName) {
  // Files repeat a group line before every patch: the same colour and name are the same group.
  std::string text;
  for (int k = 0; k < 50; ++k)
    text += std::string("group ") + (k % 2 ? "7 wing" : "2 body") + "\n3\n1\n0 0 " + std::to_string(k) + "\n1 0 0\n0 1 0\n";
  text += "group 7 other\n3\n1\n0 0 0\n1 0 0\n0 1 0\n";
  const PatchModel m = parse_bezierview(text, "groups.bv");
  ASSERT_EQ(m.groups.size(), 3u);
  EXPECT_EQ(m.groups[0].name, "body");
  EXPECT_EQ(m.groups[1].name, "wing");
  EXPECT_EQ(m.groups[2].name, "other");
  for (int k = 0; k < 50; ++k) EXPECT_EQ(m.patches[std::size_t(k)].group, k % 2);
  EXPECT_EQ(m.patches.back().group, 2);
}

TEST(BezierView, RejectsMalformedInputWithLine) {
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {"6\n1\n0 0 0\n", "kinds.bv:1: patch kind 6 is not supported"},
      {"4\n1\n0 0 0\n1 0 0\n", "unexpected end of file"},
      {"4\n40\n", "outside 1..32"},
      {"8\n1 1\n0 0 0 1\n0 1 0 0\n1 0 0 1\n1 1 0 1\n", "weight 0 must be > 0"},
      {"8\n1 1\n0 0 0 1\n0 1 0 nan\n1 0 0 1\n1 1 0 1\n", "is not finite"},
      {"4\n1\n0 0 0\n1 x 0\n0 1 0\n1 1 1\n", "'x' is not a number"},
      {"1\n3 1\n0 0 0\n1 0 0\n0 1 0\n3 0 1 5\n", "face vertex index 5 is outside 0..2"},
      {"1\n3 2000000000\n0 0 0\n1 0 0\n0 1 0\n", "more than the file holds"},
      {"", "no patches"},
      {"7\n", "patch kind 7 is not supported"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of([&] { parse_bezierview(c.text, "kinds.bv"); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "input:\n" << c.text << "\nmessage: " << msg;
    EXPECT_NE(msg.find("kinds.bv:"), std::string::npos) << msg;
  }
}

TEST(BezierView, MutatedFilesNeverCrash) {
  const std::string base = "group 1 g\n5\n1 2\n0 0 0\n0 1 0\n0 2 0\n1 0 0\n1 1 1\n1 2 0\n3\n2\n0 0 0\n1 0 0\n2 0 0\n0 1 0\n1 1 1\n0 2 0\n";
  std::mt19937_64 rng(test::run_seed());
  const std::string alphabet = "0123456789 .-\nexn#g";
  for (int trial = 0; trial < 3000; ++trial) {
    std::string s = base;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % (s.size() + 1);
      switch (rng() % 3) {
        case 0: s.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        case 1: if (at < s.size()) s.erase(at, 1); break;
        default: if (at < s.size()) s[at] = alphabet[rng() % alphabet.size()];
      }
    }
    try {
      const PatchModel m = parse_bezierview(s, "mutated.bv");
      validate(m);
    } catch (const Error&) {
    }
  }
}

TEST(Bpt, ReadsPatchesAndRejectsCountMismatch) {
  const std::string two = "2\n1 1\n0 0 0\n0 1 0\n1 0 0\n1 1 0\n1 2\n0 0 0\n0 1 0\n0 2 0\n1 0 0\n1 1 0\n1 2 0\n";
  const PatchModel m = parse_bpt(two, "two.bpt");
  ASSERT_EQ(m.patches.size(), 2u);
  EXPECT_EQ(m.patches[1].degree_v, 2);
  EXPECT_NE(error_of([&] { parse_bpt("3" + two.substr(1), "x.bpt"); }).find("unexpected end of file"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_bpt("1" + two.substr(1), "x.bpt"); }).find("after the 1 patches"), std::string::npos);
}

TEST(Teapot, BuiltInHas32BicubicPatches) {
  const PatchModel t = utah_teapot();
  ASSERT_EQ(t.patches.size(), 32u);
  for (const auto& p : t.patches) EXPECT_EQ(p.degree_u * 10 + p.degree_v, 33);
  validate(t);
}

// geomdl / NURBS-Python test surface (tests/test_BSpline_Surface.py): 6x6 points, degree 3, knots with interior
// 0.33 and 0.66; their published points to 1e-3.
BSplineSurface geomdl_surface() {
  BSplineSurface s;
  s.degree_u = s.degree_v = 3;
  s.count_u = s.count_v = 6;
  s.knots_u = s.knots_v = {0, 0, 0, 0, 0.33, 0.66, 1, 1, 1, 1};
  const double z[6][6] = {{-10, -5, 0, 0, -5, -10}, {-8, -4, -4, -4, -4, -8}, {-5, -3, -8, -8, -3, -5},
                          {-3, -2, -8, -8, -2, -3}, {-8, -4, -4, -4, -4, -8}, {-10, -5, 2, 2, -5, -10}};
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) s.points.insert(s.points.end(), {-25.0 + 10 * i, -25.0 + 10 * j, z[i][j]});
  return s;
}

// Point of the piecewise-Bézier model at global (u, v): find the span patch and map to its local parameters.
std::array<double, 3> eval_piecewise(const PatchModel& m, const std::vector<double>& breaks_u,
                                     const std::vector<double>& breaks_v, double u, double v) {
  int a = 0, b = 0;
  while (a + 2 < int(breaks_u.size()) && u >= breaks_u[a + 1]) ++a;
  while (b + 2 < int(breaks_v.size()) && v >= breaks_v[b + 1]) ++b;
  const auto p = std::size_t(a) * (breaks_v.size() - 1) + b;
  const BezierSurface s = patch_surface(m, std::int64_t(p));
  const double lu = (u - breaks_u[a]) / (breaks_u[a + 1] - breaks_u[a]);
  const double lv = (v - breaks_v[b]) / (breaks_v[b + 1] - breaks_v[b]);
  const auto r = test::reference_eval(s, lu, lv);
  return {double(r.s[0]), double(r.s[1]), double(r.s[2])};
}

TEST(BSpline, GeomdlPublishedPoints) {
  const BSplineSurface s = geomdl_surface();
  PatchModel m;
  m.name = "geomdl";
  EXPECT_EQ(append_bezier_patches(s, m), 9);
  const std::vector<double> br = {0, 0.33, 0.66, 1};
  const struct {
    double u, v, x, y, z;
  } expected[] = {{0.3, 0.4, -7.006, -3.308, -6.265}, {0.6, 0.6, 3.533, 3.533, -6.801}, {0, 0, -25, -25, -10},
                  {1, 1, 25, 25, -10}};
  for (const auto& e : expected) {
    const auto p = eval_piecewise(m, br, br, e.u, e.v);
    const auto q = evaluate_bspline(s, e.u, e.v);
    EXPECT_NEAR(p[0], e.x, 1e-3) << e.u << "," << e.v;
    EXPECT_NEAR(p[1], e.y, 1e-3);
    EXPECT_NEAR(p[2], e.z, 1e-3);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(p[c], q[c], 1e-12);
  }
}

TEST(BSpline, KnotInsertionIsExactOnRandomNurbs) {
  std::mt19937_64 rng(test::run_seed() ^ 0xb5);
  std::uniform_real_distribution<double> U(-1, 1), W(0.3, 3);
  for (int trial = 0; trial < 40; ++trial) {
    BSplineSurface s;
    s.degree_u = 1 + int(rng() % 4);
    s.degree_v = 1 + int(rng() % 4);
    s.count_u = s.degree_u + 1 + int(rng() % 4);
    s.count_v = s.degree_v + 1 + int(rng() % 4);
    auto knots = [&](int p, int n) {
      std::vector<double> k;
      const bool clamped = rng() % 3 != 0;
      const int total = n + p + 1;
      for (int i = 0; i < total; ++i) k.push_back(double(i));
      if (clamped)
        for (int i = 0; i < total; ++i) k[i] = std::clamp(double(i - p), 0.0, double(n - p));
      if (rng() % 2 && n > p + 1) k[p + 1] = k[p + 2 < total - p - 1 ? p + 2 : p + 1];  // a double knot inside
      std::sort(k.begin(), k.end());
      return k;
    };
    s.knots_u = knots(s.degree_u, s.count_u);
    s.knots_v = knots(s.degree_v, s.count_v);
    for (int k = 0; k < s.count_u * s.count_v; ++k) {
      s.points.insert(s.points.end(), {U(rng), U(rng), U(rng)});
      s.weights.push_back(W(rng));
    }
    try {
      validate(s);
    } catch (const Error&) {
      continue;  // an empty domain from the random knots
    }
    PatchModel m;
    append_bezier_patches(s, m);
    auto breaks = [](const std::vector<double>& k, int p, int n) {
      std::vector<double> b;
      for (int i = p; i <= n; ++i)
        if (b.empty() || k[i] != b.back()) b.push_back(k[i]);
      return b;
    };
    const auto bu = breaks(s.knots_u, s.degree_u, s.count_u), bv = breaks(s.knots_v, s.degree_v, s.count_v);
    ASSERT_EQ(m.patches.size(), (bu.size() - 1) * (bv.size() - 1)) << "trial " << trial;
    for (int k = 0; k < 20; ++k) {
      const double u = bu.front() + (bu.back() - bu.front()) * (0.5 + 0.5 * U(rng));
      const double v = bv.front() + (bv.back() - bv.front()) * (0.5 + 0.5 * U(rng));
      const auto p = eval_piecewise(m, bu, bv, u, v);
      const auto q = evaluate_bspline(s, u, v);
      for (int c = 0; c < 3; ++c) ASSERT_NEAR(p[c], q[c], 1e-11) << "trial " << trial << " at " << u << "," << v;
    }
  }
}

TEST(BSpline, JsonReaderAndErrors) {
  const std::string doc =
      R"({"degree": [1, 2], "knots": [[0, 0, 1, 1], [0, 0, 0, 1, 1, 1]], "points": [[[0,0,0],[0,1,1],[0,2,0]], [[1,0,0],[1,1,1],[1,2,0]]]})";
  const PatchModel m = parse_bspline_json(doc, "s.json");
  ASSERT_EQ(m.patches.size(), 1u);
  EXPECT_EQ(m.patches[0].degree_v, 2);
  EXPECT_EQ(m.printed_step, 0.0) << "integers only";
  const std::string six =
      R"({"degree": [1, 1], "knots": [[0, 0, 1, 1], [0, 0, 1, 1]], "points": [[[0.123457,0,0],[0,1.5,1]], [[1,0,0],[1,1,1.25e-3]]]})";
  EXPECT_DOUBLE_EQ(parse_bspline_json(six, "six.json").printed_step, 1e-6);
  EXPECT_NE(error_of([&] { parse_bspline_json("{", "s.json"); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_bspline_json(R"({"degree": 3, "knots": [[0,1],[0,1]], "points": [[[0,0,0]]]})", "s.json"); })
                .find("s.json"),
            std::string::npos);
  const std::string bad_weight =
      R"({"degree": 1, "knots": [[0,0,1,1],[0,0,1,1]], "points": [[[0,0,0],[0,1,0]],[[1,0,0],[1,1,0]]], "weights": [[1,1],[1,-2]]})";
  EXPECT_NE(error_of([&] { parse_bspline_json(bad_weight, "w.json"); }).find("weights must be finite and > 0"),
            std::string::npos);
  // A misspelt key is named, not left out: "weight" would have made this NURBS surface polynomial.
  const std::string misspelt =
      R"({"surfaces": [{"degree": 1, "knots": [[0,0,1,1],[0,0,1,1]], "points": [[[0,0,0],[0,1,0]],[[1,0,0],[1,1,0]]], "weight": [[1,1],[1,2]]}]})";
  EXPECT_NE(error_of([&] { parse_bspline_json(misspelt, "m.json"); }).find("m.json: surface 0: unknown key \"weight\""),
            std::string::npos);
}

}  // namespace
}  // namespace parasurf
