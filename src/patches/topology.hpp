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

struct Topology {
  std::vector<std::array<SideRef, 4>> sides;       // per patch, 3 used by triangles
  std::vector<std::array<std::int32_t, 4>> corners;  // per patch, corner s starts side s
  std::vector<EdgeInfo> edges;
  std::int32_t corner_count = 0;
  std::vector<std::uint8_t> flipped;               // per patch
  std::vector<std::int32_t> component;             // per patch, connected through shared edges
  std::vector<std::uint8_t> component_closed;      // per component: every side shared or collapsed
  double seam_tolerance = 0;                       // the distance within which points were taken as one
};

inline int side_count(const Patch& p) { return p.kind == PatchKind::Tensor ? 4 : 3; }

// Control point indices (relative to the patch) along side s, counter-clockwise in the parameter plane.
std::vector<std::int64_t> side_point_indices(const Patch& p, int side);

// relative_tolerance: of the diagonal of the control points' box (0: exact equality).
Topology build_topology(const PatchModel& model, bool orient, double relative_tolerance = 1e-9);

}  // namespace parasurf::patches
