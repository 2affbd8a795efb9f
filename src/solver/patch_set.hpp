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

// The control points' boxes (lo, hi) of the pieces x pieces sub-patches of a patch whose coordinates are x, each
// moved by offset (a patch kept relative to its centre gives absolute boxes): a sub-patch lies in its box, so a
// query that no box comes near cannot be near the patch.
inline std::vector<std::array<std::array<double, 3>, 2>> sub_patch_boxes(const std::array<BernsteinPoly, 3>& x,
                                                                         int pieces,
                                                                         const std::array<double, 3>& offset) {
  std::vector<std::array<std::array<double, 3>, 2>> boxes;
  for (int a = 0; a < pieces; ++a) {
    std::array<BernsteinPoly, 3> strip;
    for (std::size_t k = 0; k < 3; ++k) strip[k] = restrict_to(x[k], 0, double(a) / pieces, double(a + 1) / pieces);
    for (int b = 0; b < pieces; ++b) {
      std::array<std::array<double, 3>, 2> box;
      for (std::size_t k = 0; k < 3; ++k) {
        const BernsteinPoly piece = restrict_to(strip[k], 1, double(b) / pieces, double(b + 1) / pieces);
        const auto [lo, hi] = std::minmax_element(piece.coef.begin(), piece.coef.end());
        box[0][k] = *lo + offset[k], box[1][k] = *hi + offset[k];
      }
      boxes.push_back(box);
    }
  }
  return boxes;
}

}  // namespace parasurf::solver
