// Bézier pieces of B-spline surfaces and the polynomials the surface applications build from them (intersection,
// contacts, bisectors): coordinates and derivatives in Bernstein form over chosen variables of a system, normal
// cones, and the plane of a planar piece.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "parasurf/patches.hpp"
#include "parasurf/solver.hpp"

namespace parasurf::solver {

using Vec3 = std::array<double, 3>;

struct SurfacePiece {
  int du = 0, dv = 0;
  std::array<std::vector<double>, 3> c;  // coordinates, (du + 1)(dv + 1) row-major (i along u)
  double u0 = 0, u1 = 1, v0 = 0, v1 = 1;
  int iu = 0, iv = 0;  // span indices
  Vec3 lo{}, hi{};
};

// The non-rational surface's pieces, one per knot span pair; `which` names it in errors.
std::vector<SurfacePiece> surface_pieces(const BSplineSurface& s, const std::string& which);

// A coordinate of a piece as a polynomial in variables (var_u, var_v) of `vars` (var_u < var_v).
BernsteinPoly surface_coord(const SurfacePiece& p, int k, int var_u, int var_v, int vars);

struct SurfacePolys {
  std::array<BernsteinPoly, 3> x, xu, xv;
};
SurfacePolys surface_polys(const SurfacePiece& p, int var_u, int var_v, int vars);

std::array<BernsteinPoly, 3> cross(const std::array<BernsteinPoly, 3>& a, const std::array<BernsteinPoly, 3>& b);
BernsteinPoly dot(const std::array<BernsteinPoly, 3>& a, const std::array<BernsteinPoly, 3>& b);

bool boxes_meet(const Vec3& alo, const Vec3& ahi, const Vec3& blo, const Vec3& bhi);

// A piece's coordinates as polynomials in its (u, v), made once for the points evaluated on it.
using PieceCoords = std::array<BernsteinPoly, 3>;
PieceCoords piece_coords(const SurfacePiece& p);
Vec3 piece_point(const PieceCoords& c, double u, double v);

// A cone that holds every normal direction of a piece (Sederberg & Meyers' normal cones): the normal Su x Sv is a
// polynomial whose coefficient vectors span it. Half angle pi when they do not lie in one open half-space.
struct NormalCone {
  Vec3 axis{};
  double half_angle = 3.14159265358979323846;
};
NormalCone normal_cone(const SurfacePiece& p);
// Normals of the two pieces can be parallel (same or opposite direction) only when their cones allow it.
bool cones_allow_parallel(const NormalCone& a, const NormalCone& b);

// The largest side of a piece's box.
double piece_extent(const SurfacePiece& p);
// How far apart two of a piece's points may lie and still count as one: coordinates far from the origin carry their
// own rounding (a file's 1e6 has ~1e-10 of it), the rest is the piece's size.
double piece_tolerance(const SurfacePiece& p);

// The piece raised to degrees (du, dv) >= its own, one degree at a time (Farin, "Curves and Surfaces for CAGD",
// section 6.1): the same surface with more control points.
SurfacePiece elevated(const SurfacePiece& p, int du, int dv);
// Where p, moved by every affine map x -> s_k x + T_k of `maps` ({s_k, T_k}), is q. Either the whole pieces: once
// both are raised to common degrees, their control points agree within q's tolerance under one of the eight
// symmetries of the parameter square. Or, for pieces of one surface cut at other knots, the part of their
// parameter boxes they share: both restricted to it agree the same way with their parameters as they are. Such
// pairs coincide over that part (a part resting in its seat, a patch written again at another degree or with more
// knots), and the systems they pose vanish on a set that subdivision would refine without end.
struct Coincidence {
  bool found = false;
  std::array<double, 4> lo{}, hi{};  // the box in (u_p, v_p, u_q, v_q)
};
Coincidence coincidence(const SurfacePiece& p, const SurfacePiece& q, const std::vector<std::array<double, 4>>& maps);

// The plane of a planar piece: every control point within `tol` of n . x = d (so, by the convex hull property, the
// whole piece). Planar faces are common in CAD models, and two pieces in one plane make the intersection and
// bisector equations vanish over an area, or (parallel planes) the contact equations vanish along the time axis:
// subdivision would refine those sets without end, so the applications treat such pairs apart.
struct PiecePlane {
  bool planar = false;
  Vec3 n{};  // unit normal
  double d = 0, tol = 0;
  double angle_tol = 0;  // the normal's: tol over the piece's size
};
PiecePlane piece_plane(const SurfacePiece& p);
// Both planar with parallel normals (either direction).
bool parallel_planes(const PiecePlane& a, const PiecePlane& b);
// Both in one plane: parallel, and the second's control points within the tolerances of the first's plane.
bool coplanar(const PiecePlane& a, const SurfacePiece& b, const PiecePlane& bp);

// The piece pairs' intersection (variables u1, v1, u2, v2): curves linked across pieces, and areas where the
// pieces coincide as overlap regions (samples at `resolution` of a span).
SurfaceIntersectionResult intersect_piece_pairs(const std::vector<SurfacePiece>& pa, const std::vector<SurfacePiece>& pb,
                                                const std::vector<std::pair<int, int>>& pairs, double resolution,
                                                const SolverOptions& o);
// The intersection of coplanar piece pairs (pieces of `pa` and `pb` by index, `planes` the first pieces' planes):
// each pair is first expressed in coordinates of the first piece's plane, the normal coordinate exactly zero for
// both. In world coordinates, rounding (a file's digits, a frame far from the origin) tilts one face against the
// other by ~1e-15, and the exact intersection of such faces is a line, not the area they share.
SurfaceIntersectionResult intersect_coplanar_pairs(const std::vector<SurfacePiece>& pa, const std::vector<SurfacePiece>& pb,
                                                   const std::vector<PiecePlane>& planes,
                                                   const std::vector<std::pair<int, int>>& pairs, double resolution,
                                                   const SolverOptions& o);
// Coplanar areas are sampled at this spacing at the finest: they are reported as boxes, which finer samples would
// not sharpen in proportion to their cost (it grows with the square of the sample count).
inline constexpr double kCoplanarResolution = 1.0 / 128;

// Removes near-duplicate points (within `merge` in every coordinate), keeping the first; returns kept indices.
// The points are samples of per-piece systems in piece-normalised coordinates (piece index + local parameter).
std::vector<std::size_t> unique_points(const double* pts, std::size_t count, std::size_t n, double merge);  // n per point

SolverOptions quiet(const SolverOptions& o);
int thread_count(const SolverOptions& o);

}  // namespace parasurf::solver
