// scikit-image's per-vertex `values` and `mask` (Lewiner et al. 2003, as skimage.measure.marching_cubes returns
// them), written once for the host loop and the CUDA kernel: the cell of a triangle and its value range.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/hd.hpp"
#include "isosurface/level_range.hpp"

namespace parasurf::iso::cells {

// Strided samples (bytes between neighbours along each array axis) of the stepped grid.
struct Grid {
  const char* data;
  std::int64_t stride[3];
  std::int64_t shape[3];
  double cell[3];  // world size of a cell along each array axis (step · spacing)
  double inv_cell3[3] = {0, 0, 0};  // 1 / (3 · cell), set by set_cell_size (0: always divide)
};

PS_HD void set_cell_size(Grid& g, int axis, double size) {
  g.cell[axis] = size;
  g.inv_cell3[axis] = 1.0 / (3.0 * size);
}

// floor(sum / (3 · cell)) with the quotient rounded as the division rounds it, mostly without dividing: the product
// by the reciprocal lies within 4 ulp of the rounded quotient, so its floor is the same unless it lies that close to
// an integer (or is not finite); then the division decides.
PS_HD double centroid_floor(const Grid& g, int axis, double sum) {
  const double q = sum * g.inv_cell3[axis], f = floor(q);
  const double margin = 8.9e-16 * fabs(q) + 1e-300;
  if (q - f > margin && f + 1 - q > margin) return f;
  return floor(sum / (3.0 * g.cell[axis]));
}

// The cell a triangle lies in: the floor of its centroid in grid units, clamped to the grid's cells.
PS_HD void cell_of(const Grid& g, const float* p0, const float* p1, const float* p2, std::int64_t* c) {
  for (int a = 0; a < 3; ++a) {
    double f = centroid_floor(g, a, double(p0[a]) + double(p1[a]) + double(p2[a]));
    if (!(f >= 0)) f = 0;  // NaN too
    if (f > double(g.shape[a] - 2)) f = double(g.shape[a] - 2);
    c[a] = std::int64_t(f);
  }
}

// The cell of triangle f of a mesh (positions V×3, triangles F×3).
PS_HD void face_cell(const Grid& g, const float* positions, const std::uint32_t* triangles, std::int64_t f, std::int64_t* c) {
  const std::uint32_t* t = triangles + 3 * f;
  cell_of(g, positions + 3 * std::size_t(t[0]), positions + 3 * std::size_t(t[1]), positions + 3 * std::size_t(t[2]), c);
}

// The byte offset of cell c's first corner.
PS_HD std::int64_t cell_offset(const Grid& g, const std::int64_t* c) {
  return c[0] * g.stride[0] + c[1] * g.stride[1] + c[2] * g.stride[2];
}

// The cell's LevelRange. `offset`: cell_offset of the cell.
template <class T>
PS_HD float cell_range_at(const Grid& g, std::int64_t offset, float level) {
  const char* at = g.data + offset;
  const std::int64_t corner[8] = {0,
                                  g.stride[2],
                                  g.stride[1],
                                  g.stride[1] + g.stride[2],
                                  g.stride[0],
                                  g.stride[0] + g.stride[2],
                                  g.stride[0] + g.stride[1],
                                  g.stride[0] + g.stride[1] + g.stride[2]};
  LevelRange r;
  for (int d = 0; d < 8; ++d) r.add(float(*reinterpret_cast<const T*>(at + corner[d])) - level);
  return r.value();
}
template <class T>
PS_HD float cell_range(const Grid& g, const std::int64_t* c, float level) {
  return cell_range_at<T>(g, cell_offset(g, c), level);
}

// A range as an unsigned key whose order is the float's (ranges are >= 0 or NaN, which sorts above them): the
// largest over a vertex's triangles is an atomic max on the key, the same in any order on any device.
PS_HD std::uint32_t range_key(float r) {
  union {
    float f;
    std::uint32_t u;
  } x{r};
  return x.u;
}

}  // namespace parasurf::iso::cells
