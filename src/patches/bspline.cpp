// B-spline and NURBS surfaces: exact conversion to Bézier patches by repeated knot insertion
// (W. Boehm, "Inserting new knots into B-spline curves", CAD 12(4), 1980) and de Boor evaluation for checks.
#include <algorithm>
#include <cmath>

#include "parasurf/error.hpp"
#include "parasurf/patches.hpp"

namespace parasurf {

void validate(const BSplineSurface& s, const std::string& name) {
  auto bad = [&](const std::string& msg) { throw Error(ErrorKind::InvalidArgument, name + ": " + msg); };
  if (s.degree_u < 1 || s.degree_u > kMaxBezierDegree || s.degree_v < 1 || s.degree_v > kMaxBezierDegree)
    bad("degree " + std::to_string(s.degree_u) + "x" + std::to_string(s.degree_v) + " is outside 1.." +
        std::to_string(kMaxBezierDegree));
  if (s.count_u < s.degree_u + 1 || s.count_v < s.degree_v + 1)
    bad(std::to_string(s.count_u) + "x" + std::to_string(s.count_v) + " control points: need at least degree+1 per direction");
  if (s.points.size() != std::size_t(s.count_u) * s.count_v * 3) bad("control point count disagrees with the grid size");
  if (!s.weights.empty() && s.weights.size() != std::size_t(s.count_u) * s.count_v) bad("weight count disagrees with the control points");
  auto check_knots = [&](const std::vector<double>& k, int p, int n, const char* dir) {
    if (k.size() != std::size_t(n + p + 1))
      bad(std::string("knot vector ") + dir + " has " + std::to_string(k.size()) + " values, expected count+degree+1 = " +
          std::to_string(n + p + 1));
    for (std::size_t i = 0; i < k.size(); ++i) {
      if (!std::isfinite(k[i])) bad(std::string("knot vector ") + dir + " has a non-finite value");
      if (i && k[i] < k[i - 1]) bad(std::string("knot vector ") + dir + " decreases at index " + std::to_string(i));
    }
    if (!(k[std::size_t(n)] > k[std::size_t(p)])) bad(std::string("knot vector ") + dir + " has an empty domain");
    for (std::size_t i = 1; i + 1 < k.size(); ++i) {
      const auto mult = std::count(k.begin(), k.end(), k[i]);
      if (mult > p + 1) bad(std::string("knot vector ") + dir + ": a knot has multiplicity above degree+1");
    }
  };
  check_knots(s.knots_u, s.degree_u, s.count_u, "u");
  check_knots(s.knots_v, s.degree_v, s.count_v, "v");
  for (double x : s.points)
    if (!std::isfinite(x)) bad("a control point is not finite");
  for (double w : s.weights)
    if (!(w > 0) || !std::isfinite(w)) bad("weights must be finite and > 0");
}

namespace {

// Control "rows" along one direction: rows[i] is a vector of L numbers (homogeneous points of the other direction).
using Rows = std::vector<std::vector<double>>;

void insert_knot(std::vector<double>& U, int p, Rows& P, double t) {
  // span k: U[k] <= t < U[k+1]
  const int n = int(P.size());
  int k = -1;
  for (int i = 0; i + 1 < int(U.size()); ++i)
    if (U[i] <= t && t < U[i + 1]) k = i;
  if (k < p || k > n) return;
  // Boehm: rows k-p+1 .. k are replaced by p new ones; the rows before stay, the rows after shift by one (moved,
  // not copied, so that inserting every knot of a long surface stays linear in its size per knot).
  Rows fresh(static_cast<std::size_t>(p));
  for (int i = k - p + 1; i <= k; ++i) {
    const double a = (t - U[i]) / (U[i + p] - U[i]);
    std::vector<double>& row = fresh[std::size_t(i - (k - p + 1))];
    if (a == 0.0 || i == n) {  // t = U[i]: the point is kept (also covers the last span of an open end)
      row = P[i - 1];
      continue;
    }
    row.resize(P[i].size());
    for (std::size_t c = 0; c < P[i].size(); ++c) row[c] = (1 - a) * P[i - 1][c] + a * P[i][c];
  }
  P.erase(P.begin() + (k - p + 1), P.begin() + k);
  P.insert(P.begin() + (k - p + 1), std::make_move_iterator(fresh.begin()), std::make_move_iterator(fresh.end()));
  U.insert(U.begin() + k + 1, t);
}

// Inserts every knot of the domain until it has multiplicity >= p; returns the Bézier segments' first row index
// (segment s spans rows first[s] .. first[s] + p).
std::vector<int> decompose(std::vector<double> U, int p, int n, Rows& P) {
  const double a = U[std::size_t(p)], b = U[std::size_t(n)];
  std::vector<double> distinct;
  for (double t : U)
    if (t >= a && t <= b && (distinct.empty() || t != distinct.back())) distinct.push_back(t);
  for (double t : distinct) {
    int mult = int(std::count(U.begin(), U.end(), t));
    for (; mult < p; ++mult) {
      const auto before = P.size();
      insert_knot(U, p, P, t);
      if (P.size() == before) break;  // t is the last knot: already fully clamped there
    }
  }
  std::vector<int> first;
  for (int k = p; k + 1 < int(U.size()) && k < int(P.size()); ++k)
    if (U[k] < U[k + 1] && U[k] >= a && U[k] < b) first.push_back(k - p);
  return first;
}

}  // namespace

std::int64_t append_bezier_patches(const BSplineSurface& s, PatchModel& model, int group) {
  validate(s);
  const bool rational = !s.weights.empty();
  // rows along u, each holding count_v homogeneous points
  Rows rows(std::size_t(s.count_u));
  for (int i = 0; i < s.count_u; ++i) {
    rows[i].resize(std::size_t(s.count_v) * 4);
    for (int j = 0; j < s.count_v; ++j) {
      const std::size_t k = std::size_t(i) * s.count_v + j;
      const double w = rational ? s.weights[k] : 1.0;
      for (int c = 0; c < 3; ++c) rows[i][std::size_t(j) * 4 + c] = s.points[3 * k + c] * w;
      rows[i][std::size_t(j) * 4 + 3] = w;
    }
  }
  const std::vector<int> first_u = decompose(s.knots_u, s.degree_u, s.count_u, rows);
  // transpose: rows along v, each holding all u rows
  const int nu = int(rows.size());
  Rows cols(std::size_t(s.count_v));
  for (int j = 0; j < s.count_v; ++j) {
    cols[j].resize(std::size_t(nu) * 4);
    for (int i = 0; i < nu; ++i)
      for (int c = 0; c < 4; ++c) cols[j][std::size_t(i) * 4 + c] = rows[i][std::size_t(j) * 4 + c];
  }
  const std::vector<int> first_v = decompose(s.knots_v, s.degree_v, s.count_v, cols);
  std::int64_t added = 0;
  for (int a : first_u)
    for (int b : first_v) {
      Patch p;
      p.degree_u = s.degree_u;
      p.degree_v = s.degree_v;
      p.rational = rational;
      p.group = group;
      p.offset = std::int64_t(model.points.size() / 4);
      for (int i = 0; i <= s.degree_u; ++i)
        for (int j = 0; j <= s.degree_v; ++j)
          for (int c = 0; c < 4; ++c) model.points.push_back(cols[std::size_t(b + j)][std::size_t(a + i) * 4 + c]);
      model.patches.push_back(p);
      ++added;
    }
  return added;
}

std::array<double, 3> evaluate_bspline(const BSplineSurface& s, double u, double v) {
  // de Boor along v for each of the p+1 relevant rows, then along u
  auto span = [](const std::vector<double>& U, int p, int n, double t) {
    if (t >= U[std::size_t(n)]) return n - 1;
    int k = p;
    while (k < n - 1 && U[std::size_t(k + 1)] <= t) ++k;
    return k;
  };
  auto de_boor = [](const std::vector<double>& U, int p, int k, double t, std::vector<std::array<double, 4>> d) {
    for (int r = 1; r <= p; ++r)
      for (int j = p; j >= r; --j) {
        const int i = k - p + j;
        const double den = U[std::size_t(i + p - r + 1)] - U[std::size_t(i)];
        const double a = den > 0 ? (t - U[std::size_t(i)]) / den : 0.0;
        for (int c = 0; c < 4; ++c) d[j][c] = (1 - a) * d[j - 1][c] + a * d[j][c];
      }
    return d[std::size_t(p)];
  };
  const int ku = span(s.knots_u, s.degree_u, s.count_u, u);
  const int kv = span(s.knots_v, s.degree_v, s.count_v, v);
  std::vector<std::array<double, 4>> along_u;
  for (int i = ku - s.degree_u; i <= ku; ++i) {
    std::vector<std::array<double, 4>> row;
    for (int j = kv - s.degree_v; j <= kv; ++j) {
      const std::size_t k = std::size_t(i) * s.count_v + j;
      const double w = s.weights.empty() ? 1.0 : s.weights[k];
      row.push_back({s.points[3 * k] * w, s.points[3 * k + 1] * w, s.points[3 * k + 2] * w, w});
    }
    along_u.push_back(de_boor(s.knots_v, s.degree_v, kv, v, row));
  }
  const auto h = de_boor(s.knots_u, s.degree_u, ku, u, along_u);
  return {h[0] / h[3], h[1] / h[3], h[2] / h[3]};
}

}  // namespace parasurf
