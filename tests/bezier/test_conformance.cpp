// Conformance of every method on every backend against the long-double reference, on fresh random nets of
// random degrees 1..32 (seed printed by test_main). Tolerances, relative to the control net's bounding-box
// diagonal L: positions float 1e-5 L, double 1e-12 L; first derivatives the same times d = max(m,n) and
// second derivatives times d^2 (the size of the exact derivative nets), both times (w_max/w_min)^k for
// rational nets. GPU outputs are poisoned (NaN) on host and device before each run and checked all written.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "support.hpp"

namespace parasurf {
namespace {

struct Case {
  Device device;
  Method method;
  bool dbl;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << device_name(c.device) << "/" << method_name(c.method) << "/" << (c.dbl ? "double" : "float");
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  return std::string(device_name(info.param.device)) + "_" + method_name(info.param.method) + "_" +
         (info.param.dbl ? "double" : "float");
}

class Conformance : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (GetParam().device != Device::Cpu && !cuda_available())
      GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  }

  template <class T>
  void run_grid_and_list() {
    const Case c = GetParam();
    std::mt19937_64 rng(test::run_seed() ^ (std::uint64_t(c.method) << 8) ^ (std::uint64_t(c.device) << 16));
    std::uniform_int_distribution<int> degree(1, kMaxBezierDegree);
    std::uniform_int_distribution<int> side(2, 9);
    const double tol = sizeof(T) == 4 ? 1e-5 : 1e-12;
    const int cases = c.method == Method::Brute ? 6 : 10;
    for (int k = 0; k < cases; ++k) {
      const int m = k == 0 ? kMaxBezierDegree : degree(rng), n = k == 0 ? kMaxBezierDegree : degree(rng);
      const bool rational = k % 2 == 1;
      const std::uint64_t net_seed = rng();
      const BezierSurface s = make_random_surface(m, n, net_seed, rational);
      SCOPED_TRACE(testing::Message() << "degree " << m << "x" << n << (rational ? " rational" : "") << " net seed "
                                      << net_seed);
      EvalOptions opt;
      opt.method = c.method;
      opt.device = c.device;
      opt.poison_device_buffers = true;
      if (c.device == Device::Hybrid) {
        opt.tile_rows = 2;
        opt.hybrid_scheme = k % 2 ? HybridScheme::Static : HybridScheme::Dynamic;
        opt.cpu_share = 0.5;
      }
      // Output sets in turn (the GPU compiles the common ones separately): everything, positions + normals,
      // positions + first derivatives, positions + both, positions alone. Every other grid is large enough for
      // whole register tiles of GPU rows.
      EvalRequest req;
      req.first_derivatives = k % 5 == 0 || k % 5 == 2 || k % 5 == 3;
      req.normals = k % 5 == 0 || k % 5 == 1 || k % 5 == 3;
      req.second_derivatives = k % 5 == 0;
      std::uniform_int_distribution<int> big_side(10, 40);
      const GridSpec grid = k % 2 ? GridSpec{side(rng), side(rng)} : GridSpec{big_side(rng), big_side(rng)};
      SurfaceEvaluator<T> ev(opt);
      auto out = allocate_samples<T>(grid.count(), req);
      poison(out);
      ev.evaluate_grid_into(s, grid, req, spans_of(out));
      std::vector<double> uv;
      for (std::int64_t i = 0; i < grid.rows; ++i)
        for (std::int64_t j = 0; j < grid.cols; ++j)
          uv.insert(uv.end(), {i == grid.rows - 1 ? 1.0 : double(i) / double(grid.rows - 1),
                               j == grid.cols - 1 ? 1.0 : double(j) / double(grid.cols - 1)});
      check(s, uv, out, tol);
      // the same samples as a (u,v) list, and fresh random (u,v)
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      for (int r = 0; r < 16; ++r) uv.insert(uv.end(), {unit(rng), unit(rng)});
      auto list = allocate_samples<T>(std::int64_t(uv.size() / 2), req);
      poison(list);
      ev.evaluate_points_into(s, uv, req, spans_of(list));
      check(s, uv, list, tol);
    }
  }

  template <class T>
  static void poison(SurfaceSamples<T>& out) {
    for (auto* a : {&out.position, &out.du, &out.dv, &out.normal, &out.duu, &out.duv, &out.dvv})
      for (auto& v : *a) std::fill(v.begin(), v.end(), std::numeric_limits<T>::quiet_NaN());
    std::fill(out.degenerate.begin(), out.degenerate.end(), std::uint8_t(7));
  }

  template <class T>
  static void check(const BezierSurface& s, const std::vector<double>& uv, const SurfaceSamples<T>& out,
                    double tol) {
    const double L = test::bbox_size(s);
    double wr = 1;
    if (s.rational()) {
      const auto [lo, hi] = std::minmax_element(s.weights.begin(), s.weights.end());
      wr = *hi / *lo;
    }
    const double d = std::max(s.degree_u, s.degree_v);
    const double tol0 = tol * L, tol1 = tol * L * d * wr * wr, tol2 = tol * L * d * d * wr * wr * wr;
    double worst0 = 0, worst1 = 0, worst2 = 0;
    for (std::int64_t k = 0; k < out.count; ++k) {
      const auto ref = test::reference_eval(s, uv[2 * k], uv[2 * k + 1]);
      for (int c = 0; c < 3; ++c) {
        auto err = [&](const HostVector<T>& got, long double want) {
          if (got.empty()) return 0.0;  // not requested
          const double e = std::fabs(double(got[k]) - double(want));
          return std::isnan(double(got[k])) ? std::numeric_limits<double>::infinity() : e;
        };
        worst0 = std::max(worst0, err(out.position[c], ref.s[c]));
        worst1 = std::max({worst1, err(out.du[c], ref.su[c]), err(out.dv[c], ref.sv[c])});
        worst2 = std::max({worst2, err(out.duu[c], ref.suu[c]), err(out.duv[c], ref.suv[c]),
                           err(out.dvv[c], ref.svv[c])});
      }
      if (out.normal[0].empty()) continue;
      ASSERT_LE(out.degenerate[k], 1) << "flag of sample " << k << " not written";
      const double n2 = double(out.normal[0][k]) * out.normal[0][k] + double(out.normal[1][k]) * out.normal[1][k] +
                        double(out.normal[2][k]) * out.normal[2][k];
      if (!out.degenerate[k]) ASSERT_NEAR(n2, 1.0, sizeof(T) == 4 ? 1e-5 : 1e-12) << "sample " << k;
      ASSERT_TRUE(std::isfinite(n2)) << "sample " << k;
      // direction: the reference Su x Sv, where it is well conditioned (sine of the angle above 0.05)
      const long double nx = ref.su[1] * ref.sv[2] - ref.su[2] * ref.sv[1];
      const long double ny = ref.su[2] * ref.sv[0] - ref.su[0] * ref.sv[2];
      const long double nz = ref.su[0] * ref.sv[1] - ref.su[1] * ref.sv[0];
      const long double len = std::sqrt(nx * nx + ny * ny + nz * nz);
      const long double lu = std::sqrt(ref.su[0] * ref.su[0] + ref.su[1] * ref.su[1] + ref.su[2] * ref.su[2]);
      const long double lv = std::sqrt(ref.sv[0] * ref.sv[0] + ref.sv[1] * ref.sv[1] + ref.sv[2] * ref.sv[2]);
      if (!out.degenerate[k] && len > 0.05L * lu * lv) {
        const double ntol = sizeof(T) == 4 ? 1e-2 : 1e-6;
        EXPECT_NEAR(out.normal[0][k], double(nx / len), ntol) << "normal of sample " << k;
        EXPECT_NEAR(out.normal[1][k], double(ny / len), ntol) << "normal of sample " << k;
        EXPECT_NEAR(out.normal[2][k], double(nz / len), ntol) << "normal of sample " << k;
      }
    }
    EXPECT_LE(worst0, tol0) << "positions";
    EXPECT_LE(worst1, tol1) << "first derivatives";
    EXPECT_LE(worst2, tol2) << "second derivatives";
  }
};

TEST_P(Conformance, RandomNetsAgainstLongDoubleReference) {
  if (GetParam().dbl) run_grid_and_list<double>();
  else run_grid_and_list<float>();
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Device d : {Device::Cpu, Device::Cuda, Device::Hybrid})
    for (Method m : {Method::Brute, Method::Matrix, Method::Mle, Method::Casteljau, Method::Factored})
      for (bool dbl : {false, true}) cases.push_back({d, m, dbl});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, Conformance, testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace parasurf
