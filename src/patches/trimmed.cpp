// Exact conversion of trimmed tensor-product Bézier patches to triangular Bézier patches: the tensor patch is
// sampled on the degree-n triangular lattice of each fan triangle and the collocation system is solved (the
// restriction is a polynomial of total degree n, so the result is exact up to rounding).
#include "patches/trimmed.hpp"

#include "core/eigen.hpp"
#include <cmath>
#include <map>
#include <mutex>

#include "parasurf/error.hpp"

namespace parasurf::patches {

namespace {

const Eigen::MatrixXd& collocation_inverse(int n) {
  static std::mutex lock;
  static std::map<int, Eigen::MatrixXd> cache;
  std::lock_guard<std::mutex> guard(lock);
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  const int count = (n + 1) * (n + 2) / 2;
  Eigen::MatrixXd m(count, count);
  auto fact = [](int k) { return std::tgamma(k + 1.0); };
  int row = 0;
  for (int j = 0; j <= n; ++j)
    for (int i = 0; i + j <= n; ++i, ++row) {
      const double s = double(i) / n, t = double(j) / n, w = 1.0 - s - t;
      int col = 0;
      for (int jj = 0; jj <= n; ++jj)
        for (int ii = 0; ii + jj <= n; ++ii, ++col) {
          const int ll = n - ii - jj;
          m(row, col) = fact(n) / (fact(ii) * fact(jj) * fact(ll)) * std::pow(s, ii) * std::pow(t, jj) * std::pow(w, ll);
        }
    }
  return cache.emplace(n, m.fullPivLu().inverse()).first->second;
}

// The tensor patch at (s, t) by de Casteljau in both directions.
std::array<double, 3> tensor_point(int ns, int nt, const double* p, double s, double t) {
  std::vector<std::array<double, 3>> rows(std::size_t(ns + 1));
  std::vector<std::array<double, 3>> w(std::size_t(nt + 1));
  for (int a = 0; a <= ns; ++a) {
    for (int b = 0; b <= nt; ++b)
      for (int d = 0; d < 3; ++d) w[b][d] = p[3 * (a * (nt + 1) + b) + d];
    for (int r = 1; r <= nt; ++r)
      for (int b = 0; b + r <= nt; ++b)
        for (int d = 0; d < 3; ++d) w[b][d] = (1 - t) * w[b][d] + t * w[b + 1][d];
    rows[a] = w[0];
  }
  for (int r = 1; r <= ns; ++r)
    for (int a = 0; a + r <= ns; ++a)
      for (int d = 0; d < 3; ++d) rows[a][d] = (1 - s) * rows[a][d] + s * rows[a + 1][d];
  return rows[0];
}

}  // namespace

std::vector<double> tensor_on_triangle(int ns, int nt, const double* points, const std::array<double, 2>& a,
                                       const std::array<double, 2>& b, const std::array<double, 2>& c, int n) {
  const int count = (n + 1) * (n + 2) / 2;
  Eigen::MatrixXd values(count, 3);
  int row = 0;
  for (int j = 0; j <= n; ++j)
    for (int i = 0; i + j <= n; ++i, ++row) {
      const double s = double(i) / n, t = double(j) / n, w = 1.0 - s - t;
      const auto p = tensor_point(ns, nt, points, s * a[0] + t * b[0] + w * c[0], s * a[1] + t * b[1] + w * c[1]);
      for (int d = 0; d < 3; ++d) values(row, d) = p[d];
    }
  const Eigen::MatrixXd cps = collocation_inverse(n) * values;
  std::vector<double> out(std::size_t(3 * count));
  for (int r = 0; r < count; ++r)
    for (int d = 0; d < 3; ++d) out[std::size_t(3 * r + d)] = cps(r, d);
  return out;
}

PatchModel parse_trimmed_json(const nlohmann::json& doc, const std::string& name) {
  auto fail = [&](const std::string& msg) -> void { throw Error(ErrorKind::Parse, name + ": " + msg); };
  if (!doc.contains("surfaces") || !doc["surfaces"].is_array()) fail("expected \"surfaces\": [...]");
  PatchModel model;
  for (std::size_t si = 0; si < doc["surfaces"].size(); ++si) {
    const auto& s = doc["surfaces"][si];
    const std::string where = "surfaces[" + std::to_string(si) + "]";
    if (!s.is_object() || !s.contains("degree") || !s.contains("points") || !s.contains("trims")) fail(where + ": expected degree, points and trims");
    const auto& deg = s["degree"];
    if (!deg.is_array() || deg.size() != 2 || !deg[0].is_number_integer() || !deg[1].is_number_integer()) fail(where + ".degree: expected [ns, nt]");
    const int ns = deg[0].get<int>(), nt = deg[1].get<int>();
    if (ns < 1 || nt < 1 || ns > 32 || nt > 32) fail(where + ".degree: outside 1..32");
    if (s.contains("total_degree") && !s["total_degree"].is_number_integer()) fail(where + ".total_degree: expected an integer");
    const int n = s.value("total_degree", std::min(ns + nt, 24));
    // Accurate FFD's pieces have at most degree 9; 24 bounds the collocation systems a hostile file can ask for.
    if (n < 1 || n > ns + nt || n > 24) fail(where + ".total_degree: outside 1..min(ns+nt, 24)");
    const auto& pts = s["points"];
    if (!pts.is_array() || int(pts.size()) != (ns + 1) * (nt + 1)) fail(where + ".points: expected (ns+1)(nt+1) points");
    std::vector<double> net;
    for (const auto& p : pts) {
      if (!p.is_array() || p.size() != 3) fail(where + ".points: expected [x, y, z] triples");
      for (int d = 0; d < 3; ++d) {
        if (!p[d].is_number() || !std::isfinite(p[d].get<double>())) fail(where + ".points: a coordinate is not a finite number");
        net.push_back(p[d].get<double>());
      }
    }
    if (!s["trims"].is_array()) fail(where + ".trims: expected a list of polygons");
    for (const auto& poly : s["trims"]) {
      std::vector<std::array<double, 2>> q;
      if (!poly.is_array() || poly.size() < 3) fail(where + ".trims: a polygon needs at least 3 (s, t) corners");
      for (const auto& v : poly) {
        if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) fail(where + ".trims: expected [s, t] pairs");
        q.push_back({v[0].get<double>(), v[1].get<double>()});
      }
      // Convex polygon: a fan; flat triangles (collinear corners) carry no surface and are skipped.
      for (std::size_t i = 1; i + 1 < q.size(); ++i) {
        const double area = (q[i][0] - q[0][0]) * (q[i + 1][1] - q[0][1]) - (q[i][1] - q[0][1]) * (q[i + 1][0] - q[0][0]);
        if (!(std::abs(area) > 1e-300)) continue;
        const auto cps = tensor_on_triangle(ns, nt, net.data(), q[0], q[i], q[i + 1], n);
        Patch patch;
        patch.kind = PatchKind::Triangle;
        patch.degree_u = patch.degree_v = n;
        patch.offset = std::int64_t(model.points.size() / 4);
        for (std::size_t k = 0; k < cps.size() / 3; ++k) model.points.insert(model.points.end(), {cps[3 * k], cps[3 * k + 1], cps[3 * k + 2], 1.0});
        model.patches.push_back(patch);
      }
    }
  }
  if (model.patches.empty()) fail("no trimmed patches");
  return model;
}

}  // namespace parasurf::patches
