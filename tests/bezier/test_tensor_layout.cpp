// The index maps of the tensor-core surface kernel (src/bezier/tensor_layout.hpp), replayed on the CPU: stage 1
// writes a record through term_offsets; each warp product is rebuilt from what every lane loads (k8_fragment,
// k4_fragment, a_term, lane_row) placed by the PTX fragment layouts, and must equal Bu Q computed directly. The
// GPU test (Properties.GpuTensorCorePathMatchesFp32Kernel) needs a GPU; this one checks the maps on every run.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "bezier/tensor_layout.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

using namespace bezier::tensor_layout;

TEST(TensorLayout, WarpProductsFromTheIndexMapsEqualTheDirectProduct) {
  std::mt19937_64 rng(test::run_seed() + 20);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const double lo_scale = std::ldexp(1.0, -12);  // lo halves differ from hi ones, so a swap would show
  for (int terms = 1; terms <= 20; ++terms)
    for (int slots : {3, 4, 6, 8}) {
      SCOPED_TRACE(testing::Message() << terms << " terms, " << slots << " slots");
      const Steps st(terms);
      ASSERT_EQ(4 * st.units, 8 * st.k8 + (st.tail ? 4 : 0));
      ASSERT_GE(4 * st.units, terms);
      ASSERT_LT(4 * st.units, terms + 4);
      // Q[k][n][e]: 8 columns; basis[r][k]: 16 rows
      std::vector<double> q(std::size_t(terms) * 8 * slots), basis(std::size_t(16) * terms);
      for (auto& x : q) x = uniform(rng);
      for (auto& x : basis) x = uniform(rng);
      auto q_at = [&](int k, int n, int e) { return k < terms ? q[(std::size_t(k) * 8 + n) * slots + e] : 0.0; };
      // Stage 1: every float of the record written exactly once.
      std::vector<double> rec(std::size_t(record_floats(slots, st)), std::numeric_limits<double>::quiet_NaN());
      std::vector<int> writes(rec.size(), 0);
      for (int k = 0; k < 4 * st.units; ++k)
        for (int n = 0; n < 8; ++n)
          for (int e = 0; e < slots; ++e) {
            std::int64_t hi = -1, lo = -1;
            term_offsets(k, n, e, slots, st, &hi, &lo);
            ASSERT_TRUE(hi >= 0 && hi < std::int64_t(rec.size()) && lo >= 0 && lo < std::int64_t(rec.size()));
            rec[std::size_t(hi)] = q_at(k, n, e);
            rec[std::size_t(lo)] = q_at(k, n, e) * lo_scale;
            ++writes[std::size_t(hi)], ++writes[std::size_t(lo)];
          }
      for (std::size_t i = 0; i < writes.size(); ++i) ASSERT_EQ(writes[i], 1) << "record float " << i;
      // Stage 2: the warp's products, operands placed where the PTX layouts say each lane's registers go.
      auto a_value = [&](int unit, int lane, int half) {
        const int k = a_term(unit, lane);
        return k < terms ? basis[std::size_t(lane_row(lane, half)) * terms + k] : 0.0;
      };
      std::vector<double> d(std::size_t(16) * 8 * slots, 0.0);
      auto accumulate = [&](int depth, const double (*a)[8], const double (*b)[8], int e) {
        for (int r = 0; r < 16; ++r)
          for (int n = 0; n < 8; ++n)
            for (int k = 0; k < depth; ++k) d[(std::size_t(r) * 8 + n) * slots + e] += a[r][k] * b[k][n];
      };
      for (int e = 0; e < slots; ++e) {
        for (int step = 0; step < st.k8; ++step) {
          double a[16][8], b[8][8];
          for (int lane = 0; lane < 32; ++lane) {
            const int g = lane >> 2, t = lane & 3;
            a[g][t] = a_value(2 * step, lane, 0), a[g + 8][t] = a_value(2 * step, lane, 1);
            a[g][t + 4] = a_value(2 * step + 1, lane, 0), a[g + 8][t + 4] = a_value(2 * step + 1, lane, 1);
            const double* f = &rec[std::size_t(k8_fragment(step, e, slots, lane))];  // hi(t), hi(t+4), lo(t), lo(t+4)
            b[t][g] = f[0] + f[2];
            b[t + 4][g] = f[1] + f[3];
          }
          accumulate(8, a, b, e);
        }
        if (st.tail) {
          double a[16][8] = {}, b[8][8] = {};
          for (int lane = 0; lane < 32; ++lane) {
            const int g = lane >> 2, t = lane & 3;
            a[g][t] = a_value(2 * st.k8, lane, 0), a[g + 8][t] = a_value(2 * st.k8, lane, 1);
            const double* f = &rec[std::size_t(k4_fragment(e, slots, st, lane))];  // hi(t), lo(t)
            b[t][g] = f[0] + f[1];
          }
          accumulate(4, a, b, e);
        }
      }
      // Read-out: each (lane, element) is one sample of the 16 x 8 tile; elements 0, 1 (and 2, 3) are one row's
      // columns c, c + 1, as the kernel's paired stores assume.
      std::vector<int> seen(16 * 8, 0);
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < 4; ++i) {
          const int r = c_row(lane, i), n = c_col(lane, i);
          ASSERT_TRUE(r >= 0 && r < 16 && n >= 0 && n < 8);
          ++seen[std::size_t(r) * 8 + n];
          EXPECT_EQ(r, c_row(lane, i & 2));
          EXPECT_EQ(n, c_col(lane, 0) + (i & 1));
          for (int e = 0; e < slots; ++e) {
            double direct = 0;
            for (int k = 0; k < terms; ++k) direct += basis[std::size_t(r) * terms + k] * q_at(k, n, e);
            ASSERT_NEAR(d[(std::size_t(r) * 8 + n) * slots + e], direct * (1 + lo_scale), 1e-12)
                << "row " << r << " column " << n << " slot " << e;
          }
        }
      for (int x : seen) ASSERT_EQ(x, 1);
    }
}

}  // namespace
}  // namespace parasurf
