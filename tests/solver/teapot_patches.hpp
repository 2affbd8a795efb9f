// The Utah teapot's 32 patches as Bézier surfaces, moved by `shift` (the closest-point and ray tests' model).
#pragma once
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "parasurf/patches.hpp"
#include "parasurf/solver.hpp"

namespace parasurf::test {

inline std::vector<BezierSurface> teapot_patches(std::array<double, 3> shift = {0, 0, 0}) {
  const PatchModel m = utah_teapot();
  std::vector<BezierSurface> out;
  for (std::int64_t p = 0; p < std::int64_t(m.patches.size()); ++p) {
    BezierSurface s = patch_surface(m, p);
    for (std::size_t i = 0; i < s.points.size(); ++i) s.points[i] += shift[i % 3];
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace parasurf::test
