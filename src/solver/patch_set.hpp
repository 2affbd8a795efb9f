// What the solver's applications on a set of patches (closest points, rays) require of it, checked before any work:
// a message names the application, the patch and the limit.
#pragma once
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "parasurf/bezier.hpp"
#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"

namespace parasurf::solver {

// Polynomial patches of degree at most 16 each way, at most 2^20 of them, and at most 2^32 pairs of a patch and a
// query (each query looks at every patch's box) in one call.
inline void check_patch_set(const std::vector<BezierSurface>& patches, std::size_t queries, const std::string& what,
                            const std::string& query_name) {
  if (patches.empty()) throw Error(ErrorKind::InvalidArgument, what + ": no patches");
  constexpr std::size_t kMaxPatches = std::size_t(1) << 20, kMaxQueries = std::size_t(1) << 26;
  if (patches.size() > kMaxPatches)
    throw Error(ErrorKind::LimitReached, what + ": " + std::to_string(patches.size()) + " patches; at most " +
                                             std::to_string(kMaxPatches) + " in one call");
  if (queries > kMaxQueries)
    throw Error(ErrorKind::LimitReached, what + ": " + std::to_string(queries) + " " + query_name + "; at most " +
                                             std::to_string(kMaxQueries) + " in one call");
  for (std::size_t i = 0; i < patches.size(); ++i) {
    const std::string which = what + ": patch " + std::to_string(i);
    try {
      validate(patches[i]);
    } catch (const Error& e) {
      throw Error(e.kind(), which + ": " + e.what());
    }
    if (patches[i].rational())
      throw Error(ErrorKind::InvalidArgument, which + " is rational; the solver takes polynomial patches");
    if (patches[i].degree_u > 16 || patches[i].degree_v > 16)
      throw Error(ErrorKind::InvalidArgument, which + ": degree " + std::to_string(patches[i].degree_u) + "x" +
                                                  std::to_string(patches[i].degree_v) +
                                                  "; at most 16 in each direction");
  }
  constexpr double kMaxPairs = 4294967296.0;
  if (double(patches.size()) * double(queries) > kMaxPairs)
    throw Error(ErrorKind::LimitReached, what + ": " + std::to_string(queries) + " " + query_name + " on " +
                                             std::to_string(patches.size()) +
                                             " patches; at most 2^32 pairs in one call (split the " + query_name + ")");
}

// The box of a patch's control points (which holds the patch).
inline void control_box(const BezierSurface& s, std::array<double, 3>& lo, std::array<double, 3>& hi) {
  lo = hi = {s.points[0], s.points[1], s.points[2]};
  for (std::size_t i = 0; i < s.points.size(); i += 3)
    for (std::size_t k = 0; k < 3; ++k)
      lo[k] = std::min(lo[k], s.points[i + k]), hi[k] = std::max(hi[k], s.points[i + k]);
}

namespace detail {

// restrict_to's arithmetic on one line of at most 17 coefficients in place (at, at + stride, ...), without its
// allocations: de Casteljau at a keeping [a, 1], then at the image of b keeping [a, b].
inline void restrict_line(double* at, std::size_t stride, int count, double a, double b) {
  double line[17], w[17];
  for (int i = 0; i < count; ++i) line[i] = at[std::size_t(i) * stride];
  auto split = [&](double tau, bool keep_left) {
    for (int i = 0; i < count; ++i) w[i] = line[i];
    if (keep_left)
      line[0] = w[0];
    else
      line[count - 1] = w[count - 1];
    for (int r = 1; r < count; ++r) {
      for (int i = 0; i + r < count; ++i) w[i] = (1 - tau) * w[i] + tau * w[i + 1];
      if (keep_left)
        line[r] = w[0];
      else
        line[count - 1 - r] = w[count - 1 - r];
    }
  };
  if (a > 0) split(a, false);
  if (b < 1) split(a < 1 ? (b - a) / (1 - a) : 1.0, true);
  for (int i = 0; i < count; ++i) at[std::size_t(i) * stride] = line[i];
}

// restrict_to(p, var, a, b) for a polynomial in two variables of degree (m, n) (at most 16 each), coefficients
// row by row, in place.
inline void restrict_patch(double* c, int m, int n, int var, double a, double b) {
  const auto row = std::size_t(n + 1);
  if (var == 0)
    for (std::size_t j = 0; j < row; ++j) restrict_line(c + j, row, m + 1, a, b);
  else
    for (int i = 0; i <= m; ++i) restrict_line(c + std::size_t(i) * row, 1, n + 1, a, b);
}

}  // namespace detail

// The control points' boxes (lo, hi) of the pieces x pieces sub-patches of a patch whose coordinates are x (two
// variables, degree at most 16 each), each moved by offset (a patch kept relative to its centre gives absolute
// boxes): a sub-patch lies in its box, so a query that no box comes near cannot be near the patch. The same
// numbers as restrict_to on strips and then on their pieces; in one buffer, as a call on a few rays or points
// spent most of its time allocating the restricted polynomials.
inline std::vector<std::array<std::array<double, 3>, 2>> sub_patch_boxes(const std::array<BernsteinPoly, 3>& x,
                                                                         int pieces,
                                                                         const std::array<double, 3>& offset) {
  const int m = x[0].degree[0], n = x[0].degree[1];
  const std::size_t size = x[0].coef.size();
  std::vector<double> work(4 * size);  // three strips, then one piece at a time
  double* const piece = work.data() + 3 * size;
  std::vector<std::array<std::array<double, 3>, 2>> boxes;
  boxes.reserve(std::size_t(pieces) * std::size_t(pieces));
  for (int a = 0; a < pieces; ++a) {
    for (std::size_t k = 0; k < 3; ++k) {
      std::copy(x[k].coef.begin(), x[k].coef.end(), work.begin() + std::ptrdiff_t(k * size));
      detail::restrict_patch(work.data() + k * size, m, n, 0, double(a) / pieces, double(a + 1) / pieces);
    }
    for (int b = 0; b < pieces; ++b) {
      std::array<std::array<double, 3>, 2> box;
      for (std::size_t k = 0; k < 3; ++k) {
        std::copy_n(work.data() + k * size, size, piece);
        detail::restrict_patch(piece, m, n, 1, double(b) / pieces, double(b + 1) / pieces);
        const auto [lo, hi] = std::minmax_element(piece, piece + size);
        box[0][k] = *lo + offset[k], box[1][k] = *hi + offset[k];
      }
      boxes.push_back(box);
    }
  }
  return boxes;
}

}  // namespace parasurf::solver
