// Generates the marching-cubes tables: on each cube face the crossings are joined so that the inside corners lie
// to the left (seen from outside); the face segments chain into closed loops around the cube, and each loop is
// fanned into triangles. A face shared by two cells makes the same choice in both, so meshes have no cracks.
#include "isosurface/mc_tables.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <tuple>
#include <stdexcept>

#include "isosurface/mc_kernels.hpp"

namespace parasurf::mc {

namespace {

int edge_between(int c0, int c1) {
  const int axis = (c0 ^ c1) == 1 ? 0 : (c0 ^ c1) == 2 ? 1 : 2;
  for (int e = axis * 4; e < axis * 4 + 4; ++e)
    if (edge_lower_corner(e) == (c0 & c1)) return e;
  throw std::logic_error("marching-cubes table: corners are not adjacent");
}

// The two faces (bits 2 · axis + side) an edge lies on.
int edge_faces_of(int e) {
  const int c = edge_lower_corner(e), axis = edge_axis(e);
  int faces = 0;
  for (int a = 0; a < 3; ++a)
    if (a != axis) faces |= 1 << (2 * a + (c >> a & 1));
  return faces;
}
int edge_faces(int e) {
  static const std::array<int, 12> table = [] {
    std::array<int, 12> t{};
    for (int k = 0; k < 12; ++k) t[std::size_t(k)] = edge_faces_of(k);
    return t;
  }();
  return table[std::size_t(e)];
}

bool flat(int a, int b, int c) { return (edge_faces(a) & edge_faces(b) & edge_faces(c)) != 0; }

struct Loop {
  int n = 0;
  int edges[12];
};

// The loops of crossings on the cube's surface for a case and face choice, each with the inside corners on its left
// (seen from outside the cube).
std::vector<Loop> surface_loops(int cas, int join_mask) {
  auto inside = [&](int c) { return (cas >> c & 1) != 0; };
  int next[12];
  for (int& n : next) n = -1;
  for (int face = 0; face < 6; ++face) {
    const int side = face % 2;
    int ring[4];
    for (int n = 0; n < 4; ++n) ring[n] = face_corner_of(face, n);
    if (side == 0) std::swap(ring[1], ring[3]);  // counter-clockwise seen from outside
    int crossing[4], kind[4], m = 0;             // kind 1: exit (inside -> outside walking ccw), 0: entry
    for (int n = 0; n < 4; ++n) {
      const int a = ring[n], b = ring[(n + 1) % 4];
      if (inside(a) == inside(b)) continue;
      crossing[m] = edge_between(a, b);
      kind[m] = inside(a) ? 1 : 0;
      ++m;
    }
    const bool join = (join_mask >> face & 1) != 0;
    for (int n = 0; n < m; ++n) {
      if (kind[n] != 1) continue;
      // Separate the inside corners: go back to the entry before; join them: go on to the entry after.
      const int to = join ? (n + 1) % m : (n + m - 1) % m;
      next[crossing[n]] = crossing[to];
    }
  }
  std::vector<Loop> loops;
  bool used[12] = {};
  for (int start = 0; start < 12; ++start) {
    if (next[start] < 0 || used[start]) continue;
    Loop loop;
    for (int e = start; !used[e]; e = next[e]) {
      if (next[e] < 0) throw std::logic_error("marching-cubes table: open loop");
      used[e] = true;
      loop.edges[loop.n++] = e;
    }
    loops.push_back(loop);
  }
  return loops;
}

void add_triangle(CaseEntry& entry, int a, int b, int c) {
  if (entry.count >= kMaxTriangles) throw std::logic_error("marching-cubes table: too many triangles");
  entry.edges[3 * entry.count + 0] = std::uint8_t(a);
  entry.edges[3 * entry.count + 1] = std::uint8_t(b);
  entry.edges[3 * entry.count + 2] = std::uint8_t(c);
  ++entry.count;
}

// Edge midpoints stand in for the crossings when choosing how to zip a tube.
std::array<double, 3> edge_midpoint(int e) {
  const int c = edge_lower_corner(e), axis = edge_axis(e);
  std::array<double, 3> p{double(c & 1), double(c >> 1 & 1), double(c >> 2 & 1)};
  p[std::size_t(axis)] = 0.5;
  return p;
}

double distance(int e0, int e1) {
  const auto a = edge_midpoint(e0), b = edge_midpoint(e1);
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

// A chord's cost: its length, plus a large penalty where it lies in a cube face. Where a chord must lie in a face,
// the cells on the two sides of that face take chords of disjoint kinds, so they never make the same edge: on a
// face at side 0 of its axis, chords that cut off face corner 0 or 2 or run along the face's first axis; at side 1,
// the others.
double chord_cost(int e0, int e1) {
  const int shared = edge_faces(e0) & edge_faces(e1);
  if (!shared) return distance(e0, e1);
  int face = 0;
  while (!(shared >> face & 1)) ++face;
  const int c00 = edge_lower_corner(e0), c01 = c00 | 1 << edge_axis(e0);
  const int c10 = edge_lower_corner(e1), c11 = c10 | 1 << edge_axis(e1);
  int kind = 0;  // 0: this side's kind, 1: the other side's
  if (edge_axis(e0) == edge_axis(e1)) {
    kind = edge_axis(e0) == (face / 2 + 1) % 3 ? 0 : 1;
  } else {
    const int common = (c00 == c10 || c00 == c11) ? c00 : c01;
    int n = 0;
    while (face_corner_of(face, n) != common) ++n;
    kind = n % 2;
  }
  if (face % 2 == 1) kind = 1 - kind;
  return distance(e0, e1) + (kind == 0 ? 100.0 : 1000.0);
}
// The same from a table: the tube search asks for it millions of times.
double cost(int e0, int e1) {
  static const std::array<double, 144> table = [] {
    std::array<double, 144> t{};
    for (int a = 0; a < 12; ++a)
      for (int b = 0; b < 12; ++b) t[std::size_t(a * 12 + b)] = a == b ? 0.0 : chord_cost(a, b);
    return t;
  }();
  return table[std::size_t(e0 * 12 + e1)];
}

// The triangulation of the polygon p[0..n) (in loop order) with the cheapest chords (see cost) and no flat
// triangle, by the classic interval recursion over sub-polygons; false when every triangulation has a flat one.
bool triangulate(const int* p, int n, int* out, int& count) {
  constexpr double kNone = 1e30;
  double best[12][12];
  int apex[12][12];
  for (int len = 1; len < n; ++len)
    for (int i = 0; i + len < n; ++i) {
      const int j = i + len;
      best[i][j] = len == 1 ? 0.0 : kNone;
      for (int k = i + 1; k < j; ++k) {
        if (best[i][k] >= kNone || best[k][j] >= kNone || flat(p[i], p[k], p[j])) continue;
        const double c = best[i][k] + best[k][j];
        if (c < best[i][j]) best[i][j] = c, apex[i][j] = k;
      }
      if (len > 1 && best[i][j] < kNone && !(i == 0 && j == n - 1)) best[i][j] += cost(p[i], p[j]);
    }
  if (best[0][n - 1] >= kNone) return false;
  auto emit = [&](auto&& self, int i, int j) -> void {
    if (j - i < 2) return;
    const int k = apex[i][j];
    out[3 * count] = p[i], out[3 * count + 1] = p[k], out[3 * count + 2] = p[j];
    ++count;
    self(self, i, k);
    self(self, k, j);
  };
  emit(emit, 0, n - 1);
  return true;
}

// A disk spanning one loop. Loops run with the inside on the left, which faces triangles toward the inside: they
// are reversed for outward normals.
void add_disk(CaseEntry& entry, const Loop& loop) {
  // No triangle may lie flat in a cube face, and no chord should: the neighbour across that face could make the same
  // triangle or chord, leaving coincident faces or an edge of four triangles.
  int tris[3 * kMaxTriangles], count = 0;
  if (!triangulate(loop.edges, loop.n, tris, count))
    throw std::logic_error("marching-cubes table: every triangulation is flat");
  for (int t = 0; t < count; ++t) add_triangle(entry, tris[3 * t], tris[3 * t + 2], tris[3 * t + 1]);
}

// A tube joining two loops (a tunnel of the trilinear interpolant through the cell). Both loops keep the direction
// their disks would give them, so one is walked forward while the other is walked backward; the triangles between
// them form a zip, where one stretch may instead be fanned from the cell's centre vertex (key kCenterKey) so that
// no edge needs to lie in a cube face. Every starting pair, interleaving and centre stretch is tried; the cheapest
// (see cost; the centre costs a little, so it is used only to avoid face chords) without a flat triangle wins.
struct Tube {
  int count = 0;
  int tris[3 * kMaxTriangles];
  bool center = false;
};

Tube tube_between(const Loop& a, const Loop& b, bool center_allowed) {
  int ra[12], rb[12];  // disk direction: the loops reversed
  for (int i = 0; i < a.n; ++i) ra[i] = a.edges[a.n - 1 - i];
  for (int j = 0; j < b.n; ++j) rb[j] = b.edges[b.n - 1 - j];
  double best = 1e30;
  Tube result, work;
  for (int a0 = 0; a0 < a.n; ++a0)
    for (int b0 = 0; b0 < b.n; ++b0) {
      auto va = [&](int i) { return ra[(a0 + i) % a.n]; };
      auto vb = [&](int j) { return rb[((b0 - j) % b.n + b.n) % b.n]; };
      auto put = [&](int x, int y, int z) {
        work.tris[3 * work.count] = x, work.tris[3 * work.count + 1] = y, work.tris[3 * work.count + 2] = z;
        ++work.count;
      };
      // After i steps along a and j along b, the open diagonal is (va(i), vb(j)). A diagonal may appear once only
      // (else the tube pinches), so (i mod n, j mod m) never repeats.
      bool seen[12][12] = {};
      auto walk = [&](auto&& self, int i, int j, double length) -> void {
        if (length >= best) return;
        if (i == a.n && j == b.n) {
          best = length;
          result = work;
          return;
        }
        bool& here = seen[i % a.n][j % b.n];
        if (here && !(i == 0 && j == 0)) return;
        here = true;
        const int saved = work.count;
        if (work.count + 1 <= kMaxTriangles) {
          if (i < a.n && !flat(va(i), va(i + 1), vb(j))) {
            put(va(i), va(i + 1), vb(j));
            self(self, i + 1, j, length + cost(va(i + 1), vb(j)));
            work.count = saved;
          }
          if (j < b.n && !flat(vb(j + 1), vb(j), va(i))) {
            put(vb(j + 1), vb(j), va(i));
            self(self, i, j + 1, length + cost(va(i), vb(j + 1)));
            work.count = saved;
          }
        }
        // A centre stretch from (i, j) to (i2, j2): the disk between the two diagonals fanned from the centre.
        for (int i2 = i; center_allowed && !work.center && i2 <= a.n && i2 - i < a.n; ++i2)
          for (int j2 = j; j2 <= b.n && j2 - j < b.n; ++j2) {
            if (i2 == i && j2 == j) continue;
            const bool last = i2 == a.n && j2 == b.n;
            if (last && i == 0 && j == 0) continue;
            if (!last && seen[i2 % a.n][j2 % b.n]) continue;
            if (work.count + (i2 - i) + (j2 - j) + 2 > kMaxTriangles) continue;
            put(vb(j), va(i), kCenterKey);
            for (int x = i; x < i2; ++x) put(va(x), va(x + 1), kCenterKey);
            put(va(i2), vb(j2), kCenterKey);
            for (int y = j; y < j2; ++y) put(vb(y + 1), vb(y), kCenterKey);
            work.center = true;
            self(self, i2, j2, length + 50.0 + 0.1 * ((i2 - i) + (j2 - j)) + (last ? 0.0 : cost(va(i2), vb(j2))));
            work.center = false;
            work.count = saved;
          }
        here = i == 0 && j == 0;
      };
      walk(walk, 0, 0, cost(va(0), vb(0)));
    }
  return result;
}

struct CornerSets {
  int parent[8];
  int find(int c) { return parent[c] == c ? c : parent[c] = find(parent[c]); }
  void join(int a, int b) { parent[find(a)] = find(b); }
};

// Which loops bound one piece of surface: a piece separates one connected inside region of the cell from one
// connected outside region, so loops whose inside patches and outside patches are both connected belong together.
// Patches connect along cube edges and across faces as the face choice says; the interior bits add connections
// through the cell between the vertical edges (0,0)-(1,1) and (1,0)-(0,1): inside (bits 0, 1) or outside (2, 3).
std::vector<std::vector<int>> loop_groups(int cas, int join_mask, int interior, const std::vector<Loop>& loops) {
  auto inside = [&](int c) { return (cas >> c & 1) != 0; };
  CornerSets sets;
  for (int c = 0; c < 8; ++c) sets.parent[c] = c;
  for (int e = 0; e < 12; ++e) {
    const int c0 = edge_lower_corner(e), c1 = c0 | 1 << edge_axis(e);
    if (inside(c0) == inside(c1)) sets.join(c0, c1);
  }
  for (int face = 0; face < 6; ++face) {
    const int a = face_corner_of(face, 0), b = face_corner_of(face, 1), c = face_corner_of(face, 2),
              d = face_corner_of(face, 3);
    if (!(inside(a) == inside(c) && inside(b) == inside(d) && inside(a) != inside(b))) continue;
    const bool join_inside = (join_mask >> face & 1) != 0;
    if (inside(a) == join_inside) sets.join(a, c);
    else sets.join(b, d);
  }
  for (int bit = 0; bit < 4; ++bit) {
    if (!(interior >> bit & 1)) continue;
    const bool want_inside = bit < 2;
    const int p = bit % 2 == 0 ? 0 : 1, q = bit % 2 == 0 ? 3 : 2;  // vertical edges by (x | y << 1)
    const int pc = inside(p) == want_inside ? p : p + 4, qc = inside(q) == want_inside ? q : q + 4;
    if (inside(pc) == want_inside && inside(qc) == want_inside) sets.join(pc, qc);
  }
  std::vector<std::vector<int>> groups;
  std::vector<std::pair<int, int>> keys;
  for (int l = 0; l < int(loops.size()); ++l) {
    const int e = loops[std::size_t(l)].edges[0];
    const int c0 = edge_lower_corner(e), c1 = c0 | 1 << edge_axis(e);
    const std::pair<int, int> key = inside(c0) ? std::pair{sets.find(c0), sets.find(c1)} : std::pair{sets.find(c1), sets.find(c0)};
    std::size_t g = 0;
    while (g < keys.size() && keys[g] != key) ++g;
    if (g == keys.size()) {
      keys.push_back(key);
      groups.emplace_back();
    }
    groups[g].push_back(l);
  }
  return groups;
}

// The triangles of a case for a face choice and interior connections. A piece with one loop is a disk, with two a
// tube; more than two loops in one piece cannot come from a trilinear cell, and such a piece falls back to disks.
// Disks and tubes are memoised by their loops: many cases share them.
class EntryBuilder {
 public:
  CaseEntry build(int cas, int join_mask, int interior) {
    const std::vector<Loop> loops = surface_loops(cas, join_mask);
    CaseEntry entry{};
    for (const auto& group : loop_groups(cas, join_mask, interior, loops)) {
      if (group.size() == 2) {
        const Tube& tube = tube_of(loops[std::size_t(group[0])], loops[std::size_t(group[1])], !entry.center);
        if (tube.count > 0 && entry.count + tube.count <= kMaxTriangles) {
          for (int t = 0; t < tube.count; ++t) add_triangle(entry, tube.tris[3 * t], tube.tris[3 * t + 1], tube.tris[3 * t + 2]);
          entry.center = entry.center || tube.center;
          continue;
        }
      }
      for (int l : group) add_disk(entry, loops[std::size_t(l)]);
    }
    return entry;
  }

 private:
  static std::vector<int> key(const Loop& l) { return std::vector<int>(l.edges, l.edges + l.n); }
  const Tube& tube_of(const Loop& a, const Loop& b, bool center_allowed) {
    auto k = std::make_tuple(key(a), key(b), center_allowed);
    auto it = tubes_.find(k);
    if (it == tubes_.end()) it = tubes_.emplace(k, tube_between(a, b, center_allowed)).first;
    return it->second;
  }
  std::map<std::tuple<std::vector<int>, std::vector<int>, bool>, Tube> tubes_;
};

bool same(const CaseEntry& a, const CaseEntry& b) {
  return a.count == b.count && a.center == b.center && std::equal(a.edges, a.edges + 3 * a.count, b.edges);
}

std::uint8_t ambiguous_faces_of(int cas) {
  std::uint8_t amb = 0;
  for (int face = 0; face < 6; ++face) {
    const int a = cas >> face_corner_of(face, 0) & 1, b = cas >> face_corner_of(face, 1) & 1;
    const int c = cas >> face_corner_of(face, 2) & 1, d = cas >> face_corner_of(face, 3) & 1;
    if (a == c && b == d && a != b) amb |= std::uint8_t(1 << face);
  }
  return amb;
}

CaseTables make_tables() {
  CaseTables t;
  EntryBuilder builder;
  t.entries.resize(256 * kFaceMasks);
  for (int cas = 0; cas < 256; ++cas) {
    const std::uint8_t amb = ambiguous_faces_of(cas);
    t.ambiguous_faces[cas] = amb;
    for (int mask = 0; mask < kFaceMasks; ++mask) {
      // Only ambiguous faces have a choice; other bits repeat the entry of mask & amb.
      const std::size_t index = std::size_t(entry_index(cas, mask));
      t.entries[index] = (mask & amb) == mask ? builder.build(cas, mask, 0) : t.entries[std::size_t(entry_index(cas, mask & amb))];
      if (t.entries[index].count > t.max_triangles) t.max_triangles = t.entries[index].count;
    }
    t.classic_triangles[cas] = t.entries[std::size_t(entry_index(cas, 0))].count;
  }
  return t;
}

TunnelTables make_tunnel_tables() {
  const CaseTables& base = case_tables();
  // Cases are independent: built in parallel (each thread memoises its own tubes), then numbered in case order,
  // so the tables do not depend on the thread count.
  std::vector<std::vector<std::pair<int, std::array<CaseEntry, kInteriorSets>>>> per_case(256);
#pragma omp parallel
  {
    EntryBuilder builder;
#pragma omp for schedule(dynamic, 1)
    for (int cas = 0; cas < 256; ++cas) {
      const std::uint8_t amb = base.ambiguous_faces[cas];
      for (int mask = 0; mask < kFaceMasks; ++mask) {
        if ((mask & amb) != mask) continue;
        const CaseEntry& e = base.entries[std::size_t(entry_index(cas, mask))];
        std::array<CaseEntry, kInteriorSets> block;
        bool tunnel = false;
        for (int interior = 0; interior < kInteriorSets; ++interior) {
          block[std::size_t(interior)] = interior == 0 ? e : builder.build(cas, mask, interior);
          tunnel = tunnel || !same(block[std::size_t(interior)], e);
        }
        if (tunnel) per_case[std::size_t(cas)].emplace_back(mask, block);
      }
    }
  }
  TunnelTables t;
  t.block.assign(256 * kFaceMasks, kNoTunnel);
  for (int cas = 0; cas < 256; ++cas) {
    const std::uint8_t amb = base.ambiguous_faces[cas];
    t.case_flags[cas] = amb;
    for (const auto& [mask, block] : per_case[std::size_t(cas)]) {
      t.block[std::size_t(cas) * kFaceMasks + std::size_t(mask)] = std::uint16_t(t.entries.size() / kInteriorSets);
      t.case_flags[cas] |= 64;
      for (const CaseEntry& b : block) {
        t.entries.push_back(b);
        if (b.count > t.max_triangles) t.max_triangles = b.count;
      }
    }
    // Only ambiguous faces have a choice: other bits repeat the block of mask & amb.
    for (int mask = 0; mask < kFaceMasks; ++mask)
      if ((mask & amb) != mask)
        t.block[std::size_t(cas) * kFaceMasks + std::size_t(mask)] = t.block[std::size_t(cas) * kFaceMasks + std::size_t(mask & amb)];
  }
  return t;
}

}  // namespace

const CaseTables& case_tables() {
  static const CaseTables tables = make_tables();
  return tables;
}

const TunnelTables& tunnel_tables() {
  static const TunnelTables tables = make_tunnel_tables();
  return tables;
}

}  // namespace parasurf::mc
