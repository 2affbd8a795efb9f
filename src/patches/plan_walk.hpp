// Vertex numbering and triangulation of a tessellation plan, host and device. The plan type P is the host Plan
// (tessellate.cpp, vectors) or PlanView (below, raw pointers that a kernel can take); both give nu, nv, first,
// extra_first, interior_base, zipper, edge_factor and edge_vertex_base by [index], plus the accessors triangle(p),
// flipped(p), side(p, s), edge_corner(e, end) and edge_collapsed(e). Vertices are numbered corners first, then
// edge interiors, then patch interiors, so every shared vertex has one number without any search.
#pragma once
#include <array>
#include <cstdint>

#include "core/hd.hpp"
#include "patches/batch_kernels.hpp"
#include "patches/topology.hpp"

namespace parasurf::patches {

struct PlanRef {
  std::int64_t vertex;
  std::int64_t sample;
};

// Device-copyable view of a plan: the arrays a kernel needs, copied to the device (no kernel builds one yet).
struct PlanView {
  const std::uint8_t* is_triangle = nullptr;           // per patch
  const std::uint8_t* is_flipped = nullptr;            // per patch
  const std::uint8_t* zipper = nullptr;                // per patch
  const int* nu = nullptr;                             // per patch
  const int* nv = nullptr;
  const std::int64_t* first = nullptr;                 // per patch: first grid sample
  const std::array<std::int64_t, 4>* extra_first = nullptr;  // per patch side: first extra sample, -1 on the grid
  const std::int64_t* interior_base = nullptr;         // per patch
  const std::array<SideRef, 4>* sides = nullptr;       // per patch
  const int* edge_factor = nullptr;                    // per edge
  const std::int64_t* edge_vertex_base = nullptr;      // per edge
  const std::array<std::int32_t, 2>* edge_corners = nullptr;  // per edge: canonical start and end corner
  const std::uint8_t* edge_collapse = nullptr;         // per edge

  PS_HD bool triangle(std::int64_t p) const { return is_triangle[p] != 0; }
  PS_HD bool flipped(std::int64_t p) const { return is_flipped[p] != 0; }
  PS_HD const SideRef& side(std::int64_t p, int s) const { return sides[p][s]; }
  PS_HD std::int32_t edge_corner(std::int64_t e, int end) const { return edge_corners[e][end]; }
  PS_HD bool edge_collapsed(std::int64_t e) const { return edge_collapse[e] != 0; }
  // Split edges (T-junctions) are assembled on the host only: a view never has one.
  PS_HD bool edge_split(std::int64_t) const { return false; }
  PS_HD std::int64_t split_vertex(std::int64_t, int) const { return -1; }
  PS_HD double split_param(std::int64_t, int) const { return 0.0; }
};

template <class P> PS_HD int side_segments(const P& pl, std::int64_t p, int s) {
  if (pl.triangle(p)) return pl.nu[p];
  return (s % 2 == 0) ? pl.nu[p] : pl.nv[p];
}
template <class P> PS_HD int side_factor(const P& pl, std::int64_t p, int s) { return pl.edge_factor[pl.side(p, s).edge]; }

// Vertex of sample k (0..f, counter-clockwise) of side s.
template <class P> PS_HD std::int64_t side_vertex(const P& pl, std::int64_t p, int s, int k) {
  const SideRef& sr = pl.side(p, s);
  const int f = pl.edge_factor[sr.edge];
  const int kc = sr.reversed ? f - k : k;
  if (kc == 0 || pl.edge_collapsed(sr.edge)) return pl.edge_corner(sr.edge, 0);
  if (kc == f) return pl.edge_corner(sr.edge, 1);
  if (pl.edge_split(sr.edge)) return pl.split_vertex(sr.edge, kc);
  return pl.edge_vertex_base[sr.edge] + kc - 1;
}

// Whether side s samples its own points rather than its grid's: its edge has another segment count, or is split.
template <class P> PS_HD bool side_off_grid(const P& pl, std::int64_t p, int s) {
  return side_factor(pl, p, s) != side_segments(pl, p, s) || pl.edge_split(pl.side(p, s).edge);
}

// Parameter of side sample k (0..f) along side s, counter-clockwise: k/f, or the pieces' samples on a split edge.
template <class P> PS_HD double side_param(const P& pl, std::int64_t p, int s, int k) {
  const SideRef& sr = pl.side(p, s);
  const int f = pl.edge_factor[sr.edge];
  if (!pl.edge_split(sr.edge) || k == 0 || k == f) return double(k) / f;
  const double t = pl.split_param(sr.edge, sr.reversed ? f - k : k);
  return sr.reversed ? 1 - t : t;
}

PS_HD std::int64_t tri_index(std::int64_t n, std::int64_t a, std::int64_t b) { return patchk::tri_row_start(n, b) + a; }

// Sample of side sample k of side s.
template <class P> PS_HD std::int64_t side_sample(const P& pl, std::int64_t p, int s, int k) {
  const std::int64_t first = pl.first[p];
  if (pl.triangle(p)) {
    const std::int64_t n = pl.nu[p];
    if (s == 0) return first + tri_index(n, k, 0);
    if (s == 1) return first + tri_index(n, n - k, k);
    return first + tri_index(n, 0, n - k);
  }
  const std::int64_t nu = pl.nu[p], nv = pl.nv[p];
  const int f = side_factor(pl, p, s);
  auto grid = [&](std::int64_t i, std::int64_t j) { return first + i * (nv + 1) + j; };
  auto corner = [&](int c) {
    switch (c & 3) {
      case 0: return grid(0, 0);
      case 1: return grid(nu, 0);
      case 2: return grid(nu, nv);
      default: return grid(0, nv);
    }
  };
  if (side_off_grid(pl, p, s)) {
    if (k == 0) return corner(s);
    if (k == f) return corner(s + 1);
    return pl.extra_first[p][s] + k - 1;
  }
  switch (s) {
    case 0: return grid(k, 0);
    case 1: return grid(nu, k);
    case 2: return grid(nu - k, nv);
    default: return grid(0, nv - k);
  }
}

template <class P> PS_HD PlanRef side_ref(const P& pl, std::int64_t p, int s, int k) {
  return {side_vertex(pl, p, s, k), side_sample(pl, p, s, k)};
}

// Grid sample (i, j) of a tensor patch.
template <class P> PS_HD PlanRef grid_ref(const P& pl, std::int64_t p, int i, int j) {
  const int nu = pl.nu[p], nv = pl.nv[p];
  if (i > 0 && i < nu && j > 0 && j < nv)
    return {pl.interior_base[p] + std::int64_t(i - 1) * (nv - 1) + (j - 1), pl.first[p] + std::int64_t(i) * (nv + 1) + j};
  if (j == 0) return side_ref(pl, p, 0, i);
  if (i == nu) return side_ref(pl, p, 1, j);
  if (j == nv) return side_ref(pl, p, 2, nu - i);
  return side_ref(pl, p, 3, nv - j);
}

// Lattice sample (a, b) of a triangular patch.
template <class P> PS_HD PlanRef lattice_ref(const P& pl, std::int64_t p, int a, int b) {
  const int n = pl.nu[p];
  if (b == 0) return side_ref(pl, p, 0, a);
  if (a + b == n) return side_ref(pl, p, 1, b);
  if (a == 0) return side_ref(pl, p, 2, n - b);
  // inner lattice of n-3 segments
  return {pl.interior_base[p] + tri_index(n - 3, a - 1, b - 1), pl.first[p] + tri_index(n, a, b)};
}

// Zips the strip between the side's samples outer(0..f) (parameters outer_t(k) along the side) and the inner row's
// points inner(0..q-1) (parameters inner_t(j)) into triangles with the interior on the left.
template <class Outer, class OuterT, class InnerT, class Inner, class Emit>
PS_HD void zip_strip(int f, int q, Outer&& outer, OuterT&& outer_t, InnerT&& inner_t, Inner&& inner, Emit&& emit) {
  int k = 0, j = 0;
  while (k < f || j < q - 1) {
    const bool advance_outer = j == q - 1 || (k < f && outer_t(k + 1) <= inner_t(j + 1));
    if (advance_outer) {
      emit(outer(k), outer(k + 1), inner(j));
      ++k;
    } else {
      emit(outer(k), inner(j + 1), inner(j));
      ++j;
    }
  }
}

// A triangle of patch p as the mesh takes it: none where two vertices are one (at collapsed edges), and the
// second and third corners swapped on a flipped patch. Returns whether it was taken.
template <class P, class Triangle>
PS_HD bool take_triangle(const P& pl, std::int64_t p, PlanRef a, PlanRef b, PlanRef c, Triangle&& triangle) {
  if (a.vertex == b.vertex || b.vertex == c.vertex || a.vertex == c.vertex) return false;
  if (pl.flipped(p)) {
    const PlanRef t = b;
    b = c, c = t;
  }
  triangle(a, b, c);
  return true;
}

// The grid cells a tensor patch triangulates two triangles each: all, or the inner grid of a zipped patch.
template <class P> PS_HD void cell_range(const P& pl, std::int64_t p, int& i0, int& i1, int& j0, int& j1) {
  const bool zip = pl.zipper[p] != 0;
  i0 = zip ? 1 : 0, i1 = zip ? pl.nu[p] - 1 : pl.nu[p];
  j0 = zip ? 1 : 0, j1 = zip ? pl.nv[p] - 1 : pl.nv[p];
}

// The two triangles of grid cell (i, j), before take_triangle.
template <class P, class Emit> PS_HD void cell_triangles(const P& pl, std::int64_t p, int i, int j, Emit&& emit) {
  const PlanRef a0 = grid_ref(pl, p, i, j), a1 = grid_ref(pl, p, i + 1, j);
  const PlanRef b0 = grid_ref(pl, p, i, j + 1), b1 = grid_ref(pl, p, i + 1, j + 1);
  emit(a0, a1, b0);
  emit(a1, b1, b0);
}

// The border strips of a zipped patch, sides 0..3, before take_triangle.
template <class P, class Emit> PS_HD void zipped_sides(const P& pl, std::int64_t p, Emit&& emit) {
  const int nu = pl.nu[p], nv = pl.nv[p];
  for (int s = 0; s < 4; ++s) {
    const int n = s % 2 == 0 ? nu : nv, q = n - 1;
    // inner row point j (0..q-1, its point j + 1 along the side's direction)
    auto inner = [&](int j) {
      const int k = j + 1;
      switch (s) {
        case 0: return grid_ref(pl, p, k, 1);
        case 1: return grid_ref(pl, p, nu - 1, k);
        case 2: return grid_ref(pl, p, nu - k, nv - 1);
        default: return grid_ref(pl, p, 1, nv - k);
      }
    };
    zip_strip(side_factor(pl, p, s), q, [&](int k) { return side_ref(pl, p, s, k); },
              [&](int k) { return side_param(pl, p, s, k); }, [&](int j) { return double(j + 1) / n; }, inner, emit);
  }
}

// Calls triangle(a, b, c) for each triangle of patch p, counter-clockwise, in a fixed order: the triangular
// lattice row by row; a tensor patch's cells row by row (two triangles each), then a zipped patch's border strips.
template <class P, class Triangle> PS_HD void triangulate_patch(const P& pl, std::int64_t p, Triangle&& triangle) {
  auto emit = [&](const PlanRef& a, const PlanRef& b, const PlanRef& c) { take_triangle(pl, p, a, b, c, triangle); };
  if (pl.triangle(p)) {
    const int n = pl.nu[p];
    for (int b = 0; b < n; ++b)
      for (int a = 0; a + b < n; ++a) {
        emit(lattice_ref(pl, p, a, b), lattice_ref(pl, p, a + 1, b), lattice_ref(pl, p, a, b + 1));
        if (a + b + 2 <= n)
          emit(lattice_ref(pl, p, a + 1, b), lattice_ref(pl, p, a + 1, b + 1), lattice_ref(pl, p, a, b + 1));
      }
    return;
  }
  int i0, i1, j0, j1;
  cell_range(pl, p, i0, i1, j0, j1);
  // a row's refs are carried to the next cell (cell_triangles' order)
  for (int i = i0; i < i1; ++i) {
    PlanRef a0 = grid_ref(pl, p, i, j0), a1 = grid_ref(pl, p, i + 1, j0);
    for (int j = j0; j < j1; ++j) {
      const PlanRef b0 = grid_ref(pl, p, i, j + 1), b1 = grid_ref(pl, p, i + 1, j + 1);
      emit(a0, a1, b0);
      emit(a1, b1, b0);
      a0 = b0, a1 = b1;
    }
  }
  if (pl.zipper[p]) zipped_sides(pl, p, emit);
}

// How many triangles triangulate_patch offers take_triangle for patch p: a bound of the ones it keeps, known from
// the plan alone (a zip strip of f outer and q inner points advances f + q - 1 times; a zipped side has q = n - 1).
template <class P> PS_HD std::int64_t triangles_offered(const P& pl, std::int64_t p) {
  if (pl.triangle(p)) return std::int64_t(pl.nu[p]) * pl.nu[p];
  int i0, i1, j0, j1;
  cell_range(pl, p, i0, i1, j0, j1);
  std::int64_t n = 2 * std::int64_t(i1 > i0 ? i1 - i0 : 0) * (j1 > j0 ? j1 - j0 : 0);
  if (pl.zipper[p])
    for (int s = 0; s < 4; ++s) n += side_factor(pl, p, s) + (s % 2 == 0 ? pl.nu[p] : pl.nv[p]) - 2;
  return n;
}

}  // namespace parasurf::patches
