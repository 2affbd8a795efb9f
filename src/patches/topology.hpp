// Patch adjacency from the control points: corners, shared and collapsed edges, and consistent orientation.
// Two sides are one edge when their curves coincide: raised to a common degree (exact), their control polygons agree
// point for point within a tolerance relative to the model's size, in either direction. Files whose neighbours
// differ in degree, or whose shared points differ in the last digits, weld so; the welded vertices along an edge
// come from the edge itself.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "parasurf/patches.hpp"

namespace parasurf::patches {

struct SideRef {
  std::int32_t edge = -1;
  bool reversed = false;   // the side runs against the edge's canonical direction
};

struct EdgeInfo {
  std::int32_t corner_a = -1, corner_b = -1;   // at the canonical start and end
  bool collapsed = false;                      // all control points equal: the edge is one point
  std::vector<std::pair<std::int32_t, std::int8_t>> sides;  // (patch, side)
};

// A piece of a split edge: an edge whose curve is the split edge's curve over [t0, t1] (t0 < t1, along the split
// edge's canonical direction), run the other way when `reversed`.
struct SplitPiece {
  std::int32_t edge = -1;
  bool reversed = false;
  double t0 = 0, t1 = 0;
};

struct Topology {
  std::vector<std::array<SideRef, 4>> sides;       // per patch, 3 used by triangles
  std::vector<std::array<std::int32_t, 4>> corners;  // per patch, corner s starts side s
  std::vector<EdgeInfo> edges;
  std::int32_t corner_count = 0;
  std::vector<std::uint8_t> flipped;               // per patch
  std::vector<std::int32_t> component;             // per patch, connected through shared edges
  std::vector<std::uint8_t> component_closed;      // per component: every side shared or collapsed
  double seam_tolerance = 0;                       // the distance within which points were taken as one
  // T-junctions: an open side whose curve is the chain of other open sides' curves (a neighbour split in the file)
  // is a split edge; its samples are its pieces' samples, so the mesh shares their vertices.
  std::vector<std::int32_t> split_of;              // per edge: index into splits, -1 when not split
  std::vector<std::vector<SplitPiece>> splits;     // per split edge: its pieces from its canonical start to end
  std::vector<std::uint8_t> piece_of_split;        // per edge: a piece of some split edge
  bool split(std::int64_t e) const { return split_of[std::size_t(e)] >= 0; }
  // An edge no other side meets: neither shared, collapsed, split nor a piece.
  bool open(std::int64_t e) const {
    const EdgeInfo& info = edges[std::size_t(e)];
    return !info.collapsed && info.sides.size() < 2 && !split(e) && !piece_of_split[std::size_t(e)];
  }
};

inline int side_count(const Patch& p) { return p.kind == PatchKind::Tensor ? 4 : 3; }

// Control point indices (relative to the patch) along side s, counter-clockwise in the parameter plane.
std::vector<std::int64_t> side_point_indices(const Patch& p, int side);

// relative_tolerance: of the diagonal of the control points' box (0: exact equality; T-junctions are then matched
// within 1e-12 of the diagonal, as a split curve is never bitwise its parent's).
Topology build_topology(const PatchModel& model, bool orient, double relative_tolerance = 1e-9);

// Finds the split edges of `t` (t_junctions.cpp). edge_curve[e] is edge e's curve raised to `degree`, homogeneous,
// in its canonical direction; `tol` as for seams.
void find_t_junctions(const PatchModel& model, Topology& t, const std::vector<const double*>& edge_curve, int degree,
                      double tol);

}  // namespace parasurf::patches
