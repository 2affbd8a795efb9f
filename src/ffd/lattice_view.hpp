// The lattice converted to the arithmetic of a backend: knots and control points as T, and the kernels' view.
#pragma once
#include <span>
#include <vector>

#include "ffd/ffd_kernels.hpp"
#include "parasurf/ffd.hpp"

namespace parasurf::ffd {

template <class T>
struct LatticeArrays {
  std::vector<T> knots, control_points;
  LatticeView<T> view;  // points into the vectors above (re-point for a device copy)
};

// Inverse of a 3x4 affine map; throws Error(InvalidArgument) when it is singular.
std::array<double, 12> invert_affine(const std::array<double, 12>& m);

template <class T>
LatticeArrays<T> make_lattice_arrays(const Lattice& lattice, std::span<const double> control_points) {
  LatticeArrays<T> a;
  int offset = 0;
  for (int axis = 0; axis < 3; ++axis) {
    a.view.knot_offset[axis] = offset;
    a.view.degree[axis] = lattice.degree[axis];
    a.view.count[axis] = lattice.count[axis];
    for (double k : lattice.knots[axis]) a.knots.push_back(T(k));
    offset += int(lattice.knots[axis].size());
    a.view.domain_lo[axis] = T(lattice.knots[axis][lattice.degree[axis]]);
    a.view.domain_hi[axis] = T(lattice.knots[axis][lattice.count[axis]]);
  }
  a.control_points.assign(control_points.begin(), control_points.end());
  const auto inv = invert_affine(lattice.world_to_parameter);
  for (int i = 0; i < 12; ++i) {
    a.view.to_param[i] = T(lattice.world_to_parameter[i]);
    a.view.to_world[i] = T(inv[i]);
  }
  a.view.knots = a.knots.data();
  a.view.control_points = a.control_points.data();
  return a;
}

}  // namespace parasurf::ffd
