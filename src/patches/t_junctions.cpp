// T-junctions of a patch model: a side that no other side traces whole, but whose curve is the chain of other open
// sides' curves, as where a neighbour was split in two (or four) and the file kept the long side. Each link of the
// chain is checked as a sub-curve: the long curve is cut at the link's ends by de Casteljau's algorithm (a linear
// reparametrisation, which is what splitting a Bezier patch does), raised to the common degree and compared point
// for point with the link, as seams are (Farin, "Curves and Surfaces for CAGD", 5th ed., ch. 4-5). The
// tessellation then samples the long side at its pieces' samples, so that the mesh has no crack there.
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "patches/side_curves.hpp"
#include "patches/topology.hpp"

namespace parasurf::patches {
namespace {

// Limits that keep the search in proportion to the model on hostile files: a corner where more open sides meet is
// not searched from, a chain has at most kMaxPieces pieces, and the sub-curve checks of a model number at most
// kChecksPerSide per open side (a real T-junction takes two to four).
constexpr std::size_t kMaxOpenAtCorner = 64;
constexpr std::size_t kMaxPieces = 4096;
constexpr std::size_t kChecksPerSide = 16;

// The homogeneous curve over [a, b] (0 <= a < b <= 1) of c (degree d).
std::vector<double> sub_curve(const double* c, int d, double a, double b) {
  // The part over [a, 1], then that part's own part over [0, (b - a) / (1 - a)].
  std::vector<double> work(c, c + 4 * (d + 1));
  auto right_at = [&](std::vector<double>& w, double t) {  // w := part over [t, 1]
    std::vector<double> tri(w);
    std::vector<double> out(w.size());
    for (int q = 0; q < 4; ++q) out[4 * d + q] = tri[4 * d + q];
    for (int r = 1; r <= d; ++r) {
      for (int k = 0; k + r <= d; ++k)
        for (int q = 0; q < 4; ++q) tri[4 * k + q] = (1 - t) * tri[4 * k + q] + t * tri[4 * (k + 1) + q];
      for (int q = 0; q < 4; ++q) out[4 * (d - r) + q] = tri[4 * (d - r) + q];
    }
    w.swap(out);
  };
  auto left_at = [&](std::vector<double>& w, double t) {  // w := part over [0, t]
    std::vector<double> tri(w);
    std::vector<double> out(w.size());
    for (int q = 0; q < 4; ++q) out[q] = tri[q];
    for (int r = 1; r <= d; ++r) {
      for (int k = 0; k + r <= d; ++k)
        for (int q = 0; q < 4; ++q) tri[4 * k + q] = (1 - t) * tri[4 * k + q] + t * tri[4 * (k + 1) + q];
      for (int q = 0; q < 4; ++q) out[4 * r + q] = tri[q];
    }
    w.swap(out);
  };
  if (a > 0) right_at(work, a);
  if (b < 1) left_at(work, (b - a) / (1 - a));
  return work;
}

// Point and derivative (projected) of the homogeneous curve c at t.
void point_and_tangent(const double* c, int d, double t, double x[3], double dx[3]) {
  std::vector<double> tri(c, c + 4 * (d + 1));
  for (int r = 1; r < d; ++r)
    for (int k = 0; k + r <= d; ++k)
      for (int q = 0; q < 4; ++q) tri[4 * k + q] = (1 - t) * tri[4 * k + q] + t * tri[4 * (k + 1) + q];
  // tri[0], tri[1] are the last level's two points (for d >= 1)
  double h[4], dh[4];
  for (int q = 0; q < 4; ++q) {
    h[q] = d >= 1 ? (1 - t) * tri[q] + t * tri[4 + q] : tri[q];
    dh[q] = d >= 1 ? d * (tri[4 + q] - tri[q]) : 0.0;
  }
  for (int q = 0; q < 3; ++q) {
    x[q] = h[q] / h[3];
    dx[q] = (dh[q] * h[3] - h[q] * dh[3]) / (h[3] * h[3]);
  }
}

// The parameter in (lo, 1) where the curve comes nearest to p: the nearest of a few samples, then Gauss-Newton.
double nearest_parameter(const double* c, int d, double lo, const double p[3]) {
  const int samples = 2 * d + 8;
  double best = 1, best_dist = HUGE_VAL;
  for (int k = 1; k < samples; ++k) {
    const double t = lo + (1 - lo) * double(k) / samples;
    double x[3], dx[3];
    point_and_tangent(c, d, t, x, dx);
    const double dist = (x[0] - p[0]) * (x[0] - p[0]) + (x[1] - p[1]) * (x[1] - p[1]) + (x[2] - p[2]) * (x[2] - p[2]);
    if (dist < best_dist) best_dist = dist, best = t;
  }
  double t = best;
  for (int it = 0; it < 30; ++it) {
    double x[3], dx[3];
    point_and_tangent(c, d, t, x, dx);
    const double g = (x[0] - p[0]) * dx[0] + (x[1] - p[1]) * dx[1] + (x[2] - p[2]) * dx[2];
    const double h = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
    if (!(h > 0)) break;
    const double next = std::clamp(t - g / h, lo, 1.0);
    if (std::abs(next - t) <= 1e-16) break;
    t = next;
  }
  return t;
}

}  // namespace

void find_t_junctions(const PatchModel& m, Topology& t, const std::vector<const double*>& edge_curve, int degree,
                      double tol) {
  const std::size_t ne = t.edges.size();
  t.split_of.assign(ne, -1);
  t.splits.clear();
  t.piece_of_split.assign(ne, 0);
  auto unmatched = [&](std::size_t e) {
    const EdgeInfo& info = t.edges[e];
    return !info.collapsed && info.sides.size() == 1 && info.corner_a != info.corner_b;
  };
  std::unordered_map<std::int32_t, std::vector<std::int32_t>> open_at;  // corner -> unmatched edges there
  std::size_t unmatched_count = 0;
  for (std::size_t e = 0; e < ne; ++e) {
    if (!unmatched(e)) continue;
    ++unmatched_count;
    open_at[t.edges[e].corner_a].push_back(std::int32_t(e));
    open_at[t.edges[e].corner_b].push_back(std::int32_t(e));
  }
  if (unmatched_count < 3) return;  // a split needs a long side and two pieces
  std::size_t checks_left = kChecksPerSide * unmatched_count;
  std::vector<std::pair<std::int32_t, std::vector<SplitPiece>>> found;
  for (std::size_t e = 0; e < ne; ++e) {
    if (!unmatched(e) || m.patches[std::size_t(t.edges[e].sides[0].first)].kind != PatchKind::Tensor) continue;
    const double* whole = edge_curve[e];
    // the control points' box, which holds the curve: a piece's far corner must lie in it
    double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    for (int k = 0; k <= degree; ++k)
      for (int q = 0; q < 3; ++q) {
        const double x = whole[4 * k + q] / whole[4 * k + 3];
        lo[q] = std::min(lo[q], x), hi[q] = std::max(hi[q], x);
      }
    std::vector<SplitPiece> pieces;
    std::int32_t at = t.edges[e].corner_a;
    double t_at = 0;
    while (at != t.edges[e].corner_b && pieces.size() < kMaxPieces) {
      const auto list = open_at.find(at);
      if (list == open_at.end() || list->second.size() > kMaxOpenAtCorner) break;
      SplitPiece best;
      for (std::int32_t c : list->second) {
        if (std::size_t(c) == e) continue;
        const EdgeInfo& info = t.edges[std::size_t(c)];
        const bool reversed = info.corner_a != at;
        const double* piece_curve = edge_curve[std::size_t(c)];
        const double* far = piece_curve + (reversed ? 0 : 4 * degree);
        const double far_point[3] = {far[0] / far[3], far[1] / far[3], far[2] / far[3]};
        bool inside = true;
        for (int q = 0; q < 3; ++q) inside = inside && far_point[q] >= lo[q] - tol && far_point[q] <= hi[q] + tol;
        if (!inside) continue;
        if (checks_left == 0) break;
        --checks_left;
        const std::int32_t far_corner = reversed ? info.corner_a : info.corner_b;
        const double t_far = far_corner == t.edges[e].corner_b ? 1.0 : nearest_parameter(whole, degree, t_at, far_point);
        if (!(t_far > t_at) || (best.edge >= 0 && t_far >= best.t1)) continue;
        const std::vector<double> part = sub_curve(whole, degree, t_at, t_far);
        if (!same_curve(part.data(), piece_curve, degree, reversed, tol)) continue;
        best = {c, reversed, t_at, t_far};
      }
      if (best.edge < 0) break;
      pieces.push_back(best);
      const EdgeInfo& info = t.edges[std::size_t(best.edge)];
      at = best.reversed ? info.corner_a : info.corner_b;
      t_at = best.t1;
    }
    if (at == t.edges[e].corner_b && pieces.size() >= 2) {
      pieces.back().t1 = 1.0;
      found.push_back({std::int32_t(e), std::move(pieces)});
    }
  }
  // The finest chain was taken at every corner, so a split edge (a neighbour split twice) is never a piece, as its
  // own first piece is shorter; a chain that holds one anyway (a link matched only within the tolerance) is dropped.
  std::vector<std::uint8_t> is_split(ne, 0);
  for (const auto& f : found) is_split[std::size_t(f.first)] = 1;
  for (auto& [e, pieces] : found) {
    if (std::any_of(pieces.begin(), pieces.end(), [&](const SplitPiece& q) { return is_split[std::size_t(q.edge)] != 0; }))
      continue;
    t.split_of[std::size_t(e)] = std::int32_t(t.splits.size());
    for (const SplitPiece& piece : pieces) t.piece_of_split[std::size_t(piece.edge)] = 1;
    t.splits.push_back(std::move(pieces));
  }
}

}  // namespace parasurf::patches
