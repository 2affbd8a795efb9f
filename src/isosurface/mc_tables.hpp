// Marching-cubes case tables, generated (not transcribed) from the cube's face rules, for every corner case and
// every choice of how ambiguous faces connect.
// Lorensen & Cline 1987 (the cases); Nielson & Hamann 1991 (asymptotic decider for ambiguous faces).
#pragma once
#include <cstdint>
#include <vector>

namespace parasurf::mc {

// Corner and edge numbering: see mc_kernels.hpp.
constexpr int kMaxTriangles = 12;
constexpr int kFaceMasks = 64;  // one "join the inside corners" bit per face; face f = 2 · axis + side

struct CaseEntry {
  std::uint8_t count;                      // triangles
  std::uint8_t edges[3 * kMaxTriangles];   // cell edges, three per triangle, wound for outward (descent) normals
};

struct CaseTables {
  std::vector<CaseEntry> entries;          // [case · 64 + face mask]
  std::uint8_t ambiguous_faces[256];       // faces where the case has four crossings
  int max_triangles = 0;
};

// Built once, on first use (thread-safe).
const CaseTables& case_tables();

}  // namespace parasurf::mc
