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
#include <array>
#include <cstdint>
#include <vector>

#include "isosurface/mc_kernels.hpp"
#include "isosurface/mc_tables.hpp"

namespace parasurf::iso::level_cells {

constexpr std::uint8_t kNoFace = 0xFF;

// A triangle that survives the collapse, its vertex keys in the entry's winding order, with what pairing it needs.
struct LevelTriangle {
  std::uint8_t key[3];
  bool on_level;                // a key is an on-level corner
  std::uint8_t face = kNoFace;  // the cell face (2 · axis + side) its three keys lie on, if any
  std::uint8_t same = 1;        // the cell's triangles with the same keys, itself included
  std::uint8_t same_before = 0;  // of those, the ones before it in table order
  std::uint16_t face_ids = 0;   // on a face: its keys as ids the neighbour across that face gives the same vertices
};

// A key on face f as an id shared with the neighbour across f (whose corners there differ in bit `axis` only): a
// corner its position without that bit, an edge 8 + that position + 8 · its axis.
inline int face_id(int key, int face) {
  const int axis = face >> 1;
  if (key >= 16) return (key - 16) & ~(1 << axis);
  return 8 + (mc::edge_lower_corner(key) & ~(1 << axis)) + 8 * mc::edge_axis(key);
}

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
  std::array<std::uint8_t, 6561> corner_refs;  // the on-level corners its surviving triangles use (bit c: corner c)
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

// The case and on-level corner mask of cell (i, j, k) from its samples.
template <class T>
void sample_cell_bits(const mc::SlabValues<T>& s, typename mc::RealOf<T>::type level, std::int64_t i, std::int64_t j,
                      std::int64_t k, int& cas, int& om) {
  std::uint8_t cf[8];
  mc::sample_corner_flags(s, i, j, k, level, cf);
  cas = mc::cell_case(cf), om = 0;
  for (int c = 0; c < 8; ++c) om |= (cf[c] & mc::kOnLevel) ? 1 << c : 0;
}

// The kept bits (bit n: surviving triangle n in table order) of classic cell (i, j, k), of case cas and on-level mask
// om, once coincident groups are resolved. only_key >= 0 decides only the triangles that use that key (the others
// are reported kept): their twins lie in cells touching that key's vertex. cell_bits(i, j, k, cas, om) gives a
// neighbour's case and mask; cells: the grid's cells along each axis.
template <class CellBits>
std::uint32_t kept_triangles(CellBits&& cell_bits, std::int64_t i, std::int64_t j, std::int64_t k,
                             const std::int64_t* cells, int cas, int om, int only_key = -1) {
  const Tables& t = tables();
  const Summary& sum = t.summary[cell_index(cas, om)];
  const LevelTriangle* tri = t.triangles.data() + sum.first;
  std::uint32_t kept = (1u << sum.kept) - 1;
  for (int a = 0; a < sum.kept; ++a) {
    const LevelTriangle& x = tri[a];
    if (!x.on_level || (x.same == 1 && x.face == kNoFace)) continue;
    if (only_key >= 0 && x.key[0] != only_key && x.key[1] != only_key && x.key[2] != only_key) continue;
    int group = x.same, before = x.same_before;
    if (x.face != kNoFace) {
      const int axis = x.face >> 1, side = x.face & 1;
      std::int64_t at[3] = {i, j, k};
      at[axis] += side ? 1 : -1;
      if (at[axis] >= 0 && at[axis] < cells[axis]) {
        int ncas, nom;
        cell_bits(at[0], at[1], at[2], ncas, nom);
        if (ncas != 0 && ncas != 255) {
          const Summary& other = t.summary[cell_index(ncas, nom)];
          const LevelTriangle* y = t.triangles.data() + other.first;
          for (int b = 0; b < other.kept; ++b)
            if (y[b].face == (x.face ^ 1) && y[b].face_ids == x.face_ids) ++group, before += side == 0;  // -side first
        }
      }
    }
    if (group % 2 == 0 || before > 0) kept &= ~(1u << a);
  }
  return kept;
}

// Whether a triangle that survives everything uses the slot of point (i, j, k): its point vertex (axis < 0) or its
// edge along axis. Every existing cell around that vertex is visited; cell_bits(i, j, k, cas, om) gives a cell's case
// and on-level mask (from flag bytes where the caller has them, else from the samples).
template <class CellBits>
bool slot_used(std::int64_t i, std::int64_t j, std::int64_t k, int axis, const std::int64_t* cells,
               CellBits&& cell_bits) {
  const Tables& t = tables();
  const std::int64_t p[3] = {i, j, k};
  for (int o = 0; o < 8; ++o) {
    std::int64_t cell[3];
    int c = 0;
    bool exists = true;
    for (int q = 0; q < 3; ++q) {
      const int back = o >> q & 1;  // the cell below the point along q, or the one above
      if (q == axis && back) exists = false;  // an edge along axis starts at the point: only the cells above
      cell[q] = p[q] - back;
      c |= back << q;
      exists = exists && cell[q] >= 0 && cell[q] < cells[q];
    }
    if (!exists) continue;
    const int key = axis < 0 ? 16 + c : edge_of(c, axis);
    int cas, om;
    cell_bits(cell[0], cell[1], cell[2], cas, om);
    if (cas == 0 || cas == 255) continue;
    const Summary& sum = t.summary[cell_index(cas, om)];
    if (!(sum.referenced >> key & 1)) continue;
    if (!sum.paired) return true;
    const std::uint32_t kept = kept_triangles(cell_bits, cell[0], cell[1], cell[2], cells, cas, om, key);
    const LevelTriangle* tri = t.triangles.data() + sum.first;
    for (int n = 0; n < sum.kept; ++n)
      if ((kept >> n & 1) && (tri[n].key[0] == key || tri[n].key[1] == key || tri[n].key[2] == key)) return true;
  }
  return false;
}

}  // namespace parasurf::iso::level_cells
