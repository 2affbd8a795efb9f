// Generates the marching-cubes tables: on each cube face the crossings are joined so that the inside corners lie
// to the left (seen from outside); the face segments chain into closed loops around the cube, and each loop is
// fanned into triangles. A face shared by two cells makes the same choice in both, so meshes have no cracks.
#include "isosurface/mc_tables.hpp"

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
int edge_faces(int e) {
  const int c = edge_lower_corner(e), axis = edge_axis(e);
  int faces = 0;
  for (int a = 0; a < 3; ++a)
    if (a != axis) faces |= 1 << (2 * a + (c >> a & 1));
  return faces;
}

bool flat(int a, int b, int c) { return (edge_faces(a) & edge_faces(b) & edge_faces(c)) != 0; }

// A triangulation of the polygon p[0..n) (in loop order) with no flat triangle, preferring fans: the triangle on
// the side p[0]–p[n−1] is chosen first, then each remaining part recursively.
bool triangulate(const int* p, int n, int* out, int& count) {
  if (n < 3) return true;
  for (int apex = 1; apex + 1 < n; ++apex) {
    if (flat(p[0], p[apex], p[n - 1])) continue;
    const int saved = count;
    out[3 * count] = p[0];
    out[3 * count + 1] = p[apex];
    out[3 * count + 2] = p[n - 1];
    ++count;
    int right[12], rn = 0;
    for (int i = apex; i < n; ++i) right[rn++] = p[i];
    if (triangulate(p, apex + 1, out, count) && triangulate(right, rn, out, count)) return true;
    count = saved;
  }
  return false;
}

CaseEntry build(int cas, int join_mask) {
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
  CaseEntry entry{};
  bool used[12] = {};
  for (int start = 0; start < 12; ++start) {
    if (next[start] < 0 || used[start]) continue;
    int loop[12], n = 0;
    for (int e = start; !used[e]; e = next[e]) {
      if (next[e] < 0) throw std::logic_error("marching-cubes table: open loop");
      used[e] = true;
      loop[n++] = e;
    }
    // Triangulate so that no triangle lies flat in a cube face: the neighbour across that face could make the
    // same triangle, leaving two coincident faces in the mesh.
    int tris[3 * kMaxTriangles], count = 0;
    if (!triangulate(loop, n, tris, count)) throw std::logic_error("marching-cubes table: every triangulation is flat");
    for (int t = 0; t < count; ++t) {
      if (entry.count >= kMaxTriangles) throw std::logic_error("marching-cubes table: too many triangles");
      // Loops run with the inside on the left, which faces triangles toward the inside: reverse for outward normals.
      entry.edges[3 * entry.count + 0] = std::uint8_t(tris[3 * t]);
      entry.edges[3 * entry.count + 1] = std::uint8_t(tris[3 * t + 2]);
      entry.edges[3 * entry.count + 2] = std::uint8_t(tris[3 * t + 1]);
      ++entry.count;
    }
  }
  return entry;
}

CaseTables make_tables() {
  CaseTables t;
  t.entries.resize(256 * kFaceMasks);
  for (int cas = 0; cas < 256; ++cas) {
    std::uint8_t amb = 0;
    for (int face = 0; face < 6; ++face) {
      const int a = cas >> face_corner_of(face, 0) & 1, b = cas >> face_corner_of(face, 1) & 1;
      const int c = cas >> face_corner_of(face, 2) & 1, d = cas >> face_corner_of(face, 3) & 1;
      if (a == c && b == d && a != b) amb |= std::uint8_t(1 << face);
    }
    t.ambiguous_faces[cas] = amb;
    for (int mask = 0; mask < kFaceMasks; ++mask) {
      // Only ambiguous faces have a choice; other bits repeat the entry of mask & amb.
      const CaseEntry e = build(cas, mask & amb);
      t.entries[std::size_t(cas) * kFaceMasks + std::size_t(mask)] = e;
      if (e.count > t.max_triangles) t.max_triangles = e.count;
    }
  }
  return t;
}

}  // namespace

const CaseTables& case_tables() {
  static const CaseTables tables = make_tables();
  return tables;
}

}  // namespace parasurf::mc
