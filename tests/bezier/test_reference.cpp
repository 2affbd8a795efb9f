// Long-double reference for the conformance tests: de Casteljau on the homogeneous net and on its exact
// difference nets (Su = m sum (P_{i+1,j} - P_ij) B_{i,m-1} B_{j,n}, ...), then the quotient rule.
#include <cmath>

#include "support.hpp"

namespace parasurf::test {

namespace {

using LD = long double;
using Net = std::vector<std::vector<std::vector<LD>>>;  // [i][j][c], c = 4 homogeneous

std::vector<LD> casteljau(std::vector<std::vector<LD>> pts, LD t) {
  for (std::size_t r = pts.size() - 1; r >= 1; --r)
    for (std::size_t k = 0; k < r; ++k)
      for (std::size_t c = 0; c < pts[k].size(); ++c) pts[k][c] = (1 - t) * pts[k][c] + t * pts[k + 1][c];
  return pts[0];
}

std::vector<LD> eval(const Net& net, LD u, LD v) {
  if (net.empty() || net[0].empty()) return std::vector<LD>(4, 0.0L);
  std::vector<std::vector<LD>> col;
  for (const auto& row : net) col.push_back(casteljau(row, v));
  return casteljau(col, u);
}

Net diff_u(const Net& n) {
  Net d;
  const LD m = LD(n.size() - 1);
  for (std::size_t i = 0; i + 1 < n.size(); ++i) {
    d.push_back(n[i]);
    for (std::size_t j = 0; j < n[i].size(); ++j)
      for (int c = 0; c < 4; ++c) d[i][j][c] = m * (n[i + 1][j][c] - n[i][j][c]);
  }
  return d;
}

Net diff_v(const Net& n) {
  Net d(n.size());
  const LD k = LD(n[0].size() - 1);
  for (std::size_t i = 0; i < n.size(); ++i)
    for (std::size_t j = 0; j + 1 < n[i].size(); ++j) {
      std::vector<LD> p(4);
      for (int c = 0; c < 4; ++c) p[c] = k * (n[i][j + 1][c] - n[i][j][c]);
      d[i].push_back(p);
    }
  return d;
}

}  // namespace

RefJet reference_eval(const BezierSurface& s, LD u, LD v) {
  Net net(s.degree_u + 1, std::vector<std::vector<LD>>(s.degree_v + 1, std::vector<LD>(4)));
  for (int i = 0; i <= s.degree_u; ++i)
    for (int j = 0; j <= s.degree_v; ++j) {
      const std::size_t k = std::size_t(i) * (s.degree_v + 1) + j;
      const LD w = s.rational() ? LD(s.weights[k]) : 1.0L;
      for (int c = 0; c < 3; ++c) net[i][j][c] = LD(s.points[3 * k + c]) * w;
      net[i][j][3] = w;
    }
  const auto H = eval(net, u, v);
  const auto Hu = eval(diff_u(net), u, v), Hv = eval(diff_v(net), u, v);
  const auto Huu = eval(diff_u(diff_u(net)), u, v), Huv = eval(diff_v(diff_u(net)), u, v),
             Hvv = eval(diff_v(diff_v(net)), u, v);
  RefJet r;
  const LD W = H[3];
  for (int c = 0; c < 3; ++c) r.s[c] = H[c] / W;
  for (int c = 0; c < 3; ++c) {
    r.su[c] = (Hu[c] - r.s[c] * Hu[3]) / W;
    r.sv[c] = (Hv[c] - r.s[c] * Hv[3]) / W;
  }
  for (int c = 0; c < 3; ++c) {
    r.suu[c] = (Huu[c] - 2 * r.su[c] * Hu[3] - r.s[c] * Huu[3]) / W;
    r.suv[c] = (Huv[c] - r.su[c] * Hv[3] - r.sv[c] * Hu[3] - r.s[c] * Huv[3]) / W;
    r.svv[c] = (Hvv[c] - 2 * r.sv[c] * Hv[3] - r.s[c] * Hvv[3]) / W;
  }
  return r;
}

double bbox_size(const BezierSurface& s) {
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  for (std::size_t k = 0; k < s.points.size(); ++k) {
    lo[k % 3] = std::min(lo[k % 3], s.points[k]);
    hi[k % 3] = std::max(hi[k % 3], s.points[k]);
  }
  double d2 = 0;
  for (int c = 0; c < 3; ++c) d2 += (hi[c] - lo[c]) * (hi[c] - lo[c]);
  return std::sqrt(d2);
}


}  // namespace parasurf::test
