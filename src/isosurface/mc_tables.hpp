// Marching-cubes case tables, generated (not transcribed) from the cube's face rules, for every corner case and
// every choice of how ambiguous faces connect.
// Lorensen & Cline 1987 (the cases); Nielson & Hamann 1991 (asymptotic decider for ambiguous faces); Chernyaev 1995
// and Lewiner et al. 2003 (MC33: tunnels of the trilinear interpolant through a cell's interior).
#pragma once
#include <cstdint>
#include <vector>

namespace parasurf::mc {

// Corner and edge numbering: see mc_kernels.hpp.
constexpr int kMaxTriangles = 16;
constexpr int kCenterKey = 12;  // the cell's centre vertex (MC33 tunnels), after the twelve edges
constexpr int kFaceMasks = 64;  // one "join the inside corners" bit per face; face f = 2 · axis + side
constexpr int kInteriorSets = 16;  // interior connection bits: see interior_connections in mc_kernels.hpp
constexpr std::uint16_t kNoTunnel = 0xffff;

struct CaseEntry {
  std::uint8_t count;                      // triangles
  std::uint8_t edges[3 * kMaxTriangles];   // cell edges (or kCenterKey), three per triangle, wound for outward
                                           // (descent) normals
  bool center = false;                     // a triangle uses the centre vertex
};

// Where the entry of a case and face mask lies in CaseTables::entries: mask-major, so that the 256 entries of the
// classic table (mask 0), which most cells read, share 13 KB instead of one page per case.
constexpr int entry_index(int cas, int face_mask) { return face_mask * 256 + cas; }

struct CaseTables {
  std::vector<CaseEntry> entries;          // [entry_index(case, face mask)]
  std::uint8_t ambiguous_faces[256];       // faces where the case has four crossings
  std::uint8_t classic_triangles[256];     // triangles of each case's classic entry (face mask 0)
  int max_triangles = 0;
};

// MC33 tunnels, for a case and face mask whose surface can hold one: the block b of entries
// [b · kInteriorSets + interior connections]; kNoTunnel elsewhere.
struct TunnelTables {
  std::vector<std::uint16_t> block;         // [case · 64 + face mask]
  std::vector<CaseEntry> entries;
  std::uint8_t case_flags[256];             // ambiguous faces (bits 0–5) and, in bit 6, whether some face mask can tunnel
  int max_triangles = 0;
};

// Built once, on first use (thread-safe). The tunnel tables take longer and are built only when asked for.
const CaseTables& case_tables();
const TunnelTables& tunnel_tables();

}  // namespace parasurf::mc
