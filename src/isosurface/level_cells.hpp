// Classic-table cells with corners on the level, resolved where they lie (CPU): which triangles survive, which
// coincident tie pairs cancel, and which vertex slots no surviving triangle uses. The count pass makes these
// decisions, so the mesh comes out with no pair to remove and no unused vertex, and needs no pass over it afterwards.
//
// Why local decisions give the global answer: two triangles with the same three vertices both lie in every cell
// holding those vertices; three distinct vertices of one cell are held by two cells only when they lie in the face
// the cells share. So a tie triangle's coincident twins are in its own cell or in the neighbour across the face it
// lies in, and that neighbour also touches each of its vertices. A group of identical triangles cancels when it is
// even and keeps its first member (cell order, then table order) when odd, as the global pass over listed ties does.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "isosurface/mc_kernels.hpp"
#include "isosurface/mc_tables.hpp"

namespace parasurf::iso::level_cells {

// A triangle that survives the collapse, its vertex keys in the entry's winding order.
struct LevelTriangle {
  std::uint8_t key[3];
  bool on_level;  // a key is an on-level corner
};

// What a classic cell with case `cas` and on-level corner mask `om` keeps, from the table alone: bits are keys
// (edges 0-11, corners 16-23).
struct Summary {
  std::uint32_t referenced = 0;  // keys used by a triangle that survives the collapse
  std::uint32_t slots = 0;       // crossing edges, and on-level corners next to an outside corner
  std::uint32_t orphanable = 0;  // those slots that no surviving triangle uses
  std::uint32_t first = 0;       // its surviving triangles: Tables::triangles[first, first + kept)
  std::uint8_t kept = 0;
  bool paired = false;           // a surviving tie triangle lies in a face or repeats another: may cancel
};

// A cell's corners as a base-3 number (0 outside, 1 inside, 2 on the level): the 3^8 cases with on-level corners.
constexpr std::array<std::uint16_t, 256> kTernary = [] {
  std::array<std::uint16_t, 256> t{};
  for (int m = 0; m < 256; ++m)
    for (int c = 0, power = 1; c < 8; ++c, power *= 3) t[std::size_t(m)] = std::uint16_t(t[std::size_t(m)] + (m >> c & 1) * power);
  return t;
}();
inline std::size_t cell_index(int cas, int om) { return std::size_t(kTernary[std::size_t(cas)]) + kTernary[std::size_t(om)]; }

// What the cell loops read of a Summary, in one word (26 KB for all cells, where the summaries take 130 KB):
constexpr std::uint32_t kFirstMask = 0x1FFFF;  // bits 0-16: first
constexpr int kKeptShift = 17;                 // bits 17-21: kept
constexpr std::uint32_t kKeptMask = 31;
constexpr std::uint32_t kPairedBit = 1u << 22;
constexpr int kOrphanShift = 23;               // bits 23-30: the orphanable corners (unpaired cells orphan no edge)
static_assert(6561 * mc::kMaxTriangles <= kFirstMask + 1 && mc::kMaxTriangles <= kKeptMask, "cell words too narrow");

struct Tables {
  std::array<Summary, 6561> summary;  // [cell_index(cas, om)], om within the inside corners of cas
  std::array<std::uint32_t, 6561> word;
  std::vector<LevelTriangle> triangles;
};
// Built once, on first use (thread-safe).
const Tables& tables();

// The key of a cell's edge along `axis` from corner c0 (whose bit `axis` is 0): the inverse of edge_lower_corner and
// edge_axis.
constexpr int edge_of(int c0, int axis) {
  const int p = axis == 0 ? c0 >> 1 : axis == 1 ? ((c0 & 1) | (c0 >> 2 & 1) << 1) : c0 & 3;
  return 4 * axis + p;
}

// A vertex key of cell (i, j, k) as a grid entity: 4 · point index + 0 (the point) or 1 + axis (its edge).
inline std::int64_t entity(int key, std::int64_t i, std::int64_t j, std::int64_t k, std::int64_t nx, std::int64_t ny) {
  const int c = key >= 16 ? key - 16 : mc::edge_lower_corner(key);
  const std::int64_t point = ((k + (c >> 2 & 1)) * ny + j + (c >> 1 & 1)) * nx + i + (c & 1);
  return 4 * point + (key >= 16 ? 0 : 1 + mc::edge_axis(key));
}

struct Triangle {
  int keys[3];  // sorted
  bool on_level;
};

// The surviving triangles of a classic cell, in table order, keys sorted; returns their count.
inline int surviving(int cas, int om, Triangle* out) {
  const Tables& t = tables();
  const Summary& sum = t.summary[cell_index(cas, om)];
  for (int n = 0; n < sum.kept; ++n) {
    const LevelTriangle& lt = t.triangles[sum.first + std::size_t(n)];
    int k3[3] = {lt.key[0], lt.key[1], lt.key[2]};
    std::sort(k3, k3 + 3);
    out[n] = {{k3[0], k3[1], k3[2]}, lt.on_level};
  }
  return sum.kept;
}

inline int common_faces(const Triangle& t) {
  return mc::key_faces(t.keys[0]) & mc::key_faces(t.keys[1]) & mc::key_faces(t.keys[2]);
}

// The case and on-level corner mask of cell (i, j, k) from its samples.
template <class T>
void sample_cell_bits(const mc::SlabValues<T>& s, typename mc::RealOf<T>::type level, std::int64_t i, std::int64_t j,
                      std::int64_t k, int& cas, int& om) {
  std::uint8_t cf[8];
  mc::sample_corner_flags(s, i, j, k, level, cf);
  cas = mc::cell_case(cf), om = 0;
  for (int c = 0; c < 8; ++c) om |= (cf[c] & mc::kOnLevel) ? 1 << c : 0;
}

// The kept bits (bit n: surviving triangle n in table order) of classic cell (i, j, k) once coincident groups are
// resolved, its samples read from s. only_key >= 0 decides only the triangles that use that key (the others are
// reported kept): their twins lie in cells touching that key's vertex, so the samples read stay within one slice of
// it. cas, om: the cell's case and on-level mask.
template <class T>
std::uint32_t kept_triangles(const mc::SlabValues<T>& s, typename mc::RealOf<T>::type level, std::int64_t i,
                             std::int64_t j, std::int64_t k, int cas, int om, int only_key = -1) {
  Triangle tri[mc::kMaxTriangles];
  const int n = surviving(cas, om, tri);
  std::uint32_t kept = (1u << n) - 1;
  const std::int64_t cell[3] = {i, j, k}, size[3] = {s.nx - 1, s.ny - 1, s.nz - 1};
  for (int a = 0; a < n; ++a) {
    if (!tri[a].on_level) continue;
    if (only_key >= 0 && tri[a].keys[0] != only_key && tri[a].keys[1] != only_key && tri[a].keys[2] != only_key) continue;
    int group = 1, before = 0;
    for (int b = 0; b < n; ++b)
      if (b != a && std::equal(tri[a].keys, tri[a].keys + 3, tri[b].keys)) ++group, before += b < a;
    const int faces = common_faces(tri[a]);
    if (faces) {
      const int f = __builtin_ctz(unsigned(faces)), axis = f >> 1, side = f & 1;
      std::int64_t at[3] = {i, j, k};
      at[axis] += side ? 1 : -1;
      if (at[axis] >= 0 && at[axis] < size[axis]) {
        int ncas, nom;
        sample_cell_bits(s, level, at[0], at[1], at[2], ncas, nom);
        std::int64_t mine[3];
        for (int q = 0; q < 3; ++q) mine[q] = entity(tri[a].keys[q], cell[0], cell[1], cell[2], s.nx, s.ny);
        std::sort(mine, mine + 3);
        Triangle other[mc::kMaxTriangles];
        const int m = ncas == 0 || ncas == 255 ? 0 : surviving(ncas, nom, other);
        for (int b = 0; b < m; ++b) {
          if (!other[b].on_level) continue;
          std::int64_t theirs[3];
          for (int q = 0; q < 3; ++q) theirs[q] = entity(other[b].keys[q], at[0], at[1], at[2], s.nx, s.ny);
          std::sort(theirs, theirs + 3);
          if (std::equal(mine, mine + 3, theirs)) ++group, before += side == 0;  // the -side neighbour comes first
        }
      }
    }
    if (group % 2 == 0 || before > 0) kept &= ~(1u << a);
  }
  return kept;
}

// Whether a triangle that survives everything uses the slot of point (i, j, k): its point vertex (axis < 0) or its
// edge along axis. Every existing cell around that vertex is visited; cell_bits(i, j, k, cas, om) gives a cell's case
// and on-level mask (from flag bytes where the caller has them), and pairs are resolved from the samples.
template <class T, class CellBits>
bool slot_used(const mc::SlabValues<T>& s, typename mc::RealOf<T>::type level, std::int64_t i, std::int64_t j,
               std::int64_t k, int axis, CellBits&& cell_bits) {
  const auto& table = tables().summary;
  const std::int64_t p[3] = {i, j, k}, size[3] = {s.nx - 1, s.ny - 1, s.nz - 1};
  for (int o = 0; o < 8; ++o) {
    std::int64_t cell[3];
    int c = 0;
    bool exists = true;
    for (int q = 0; q < 3; ++q) {
      const int back = o >> q & 1;  // the cell below the point along q, or the one above
      if (q == axis && back) exists = false;  // an edge along axis starts at the point: only the cells above
      cell[q] = p[q] - back;
      c |= back << q;
      exists = exists && cell[q] >= 0 && cell[q] < size[q];
    }
    if (!exists) continue;
    const int key = axis < 0 ? 16 + c : edge_of(c, axis);
    int cas, om;
    cell_bits(cell[0], cell[1], cell[2], cas, om);
    if (cas == 0 || cas == 255) continue;
    const Summary& sum = table[cell_index(cas, om)];
    if (!(sum.referenced >> key & 1)) continue;
    if (!sum.paired) return true;
    Triangle tri[mc::kMaxTriangles];
    const int n = surviving(cas, om, tri);
    const std::uint32_t kept = kept_triangles(s, level, cell[0], cell[1], cell[2], cas, om, key);
    for (int t = 0; t < n; ++t)
      if ((kept >> t & 1) && (tri[t].keys[0] == key || tri[t].keys[1] == key || tri[t].keys[2] == key)) return true;
  }
  return false;
}
template <class T>
bool slot_used(const mc::SlabValues<T>& s, typename mc::RealOf<T>::type level, std::int64_t i, std::int64_t j,
               std::int64_t k, int axis) {
  return slot_used(s, level, i, j, k, axis, [&](std::int64_t ci, std::int64_t cj, std::int64_t ck, int& cas, int& om) {
    sample_cell_bits(s, level, ci, cj, ck, cas, om);
  });
}

}  // namespace parasurf::iso::level_cells
