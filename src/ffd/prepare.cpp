// FFD preprocessing: faces split into convex planar polygons, clipped at the knot planes (accurate FFD, after
// Cui & Feng 2013, section 3.1), coplanar pieces of a knot box gathered into one Bézier surface, and the uniform
// m^2 tessellation whose shared-edge points are computed once from canonically ordered endpoints.
#include "ffd/prepare.hpp"

#include <omp.h>

#include "core/eigen.hpp"
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <unordered_map>
#include <cstdio>

#include "core/region_errors.hpp"
#include "ffd/lattice_view.hpp"
#include "parasurf/error.hpp"

namespace parasurf::ffd {

namespace {

using Vec3 = std::array<double, 3>;
constexpr std::uint32_t kNoEdge = 0xffffffffu;

Vec3 sub(const Vec3& a, const Vec3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
double dot(const Vec3& a, const Vec3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
double norm(const Vec3& a) { return std::sqrt(dot(a, a)); }
bool lex_less(const Vec3& a, const Vec3& b) { return a < b; }

Vec3 newell(const std::vector<Vec3>& p) {
  Vec3 n{0, 0, 0};
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Vec3& a = p[i];
    const Vec3& b = p[(i + 1) % p.size()];
    n[0] += (a[1] - b[1]) * (a[2] + b[2]);
    n[1] += (a[2] - b[2]) * (a[0] + b[0]);
    n[2] += (a[0] - b[0]) * (a[1] + b[1]);
  }
  return n;
}

// Exact-position key for welding: shared points are computed bit for bit alike on both sides.
// The class separates coincident sheets: -1 for points on mesh edges and vertices (shared between faces), else
// the face the point lies inside.
struct Key {
  std::uint64_t b[3];
  std::int64_t cls;
  bool operator==(const Key& o) const { return b[0] == o.b[0] && b[1] == o.b[1] && b[2] == o.b[2] && cls == o.cls; }
};
struct KeyHash {
  std::size_t operator()(const Key& k) const {
    std::uint64_t h = 0x9e3779b97f4a7c15ull;
    for (auto v : {k.b[0], k.b[1], k.b[2], std::uint64_t(k.cls)}) {
      h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdull;
    }
    return std::size_t(h ^ (h >> 33));
  }
};
// Points by key, each given the next id on its first sight: an open-addressed table (linear probing, at most half
// full) of 8-byte slots, the upper half of the key's hash beside the point's id + 1 (0: empty); keys are compared,
// from the points themselves (`key_of_id`), only where those halves agree. (A node-based map spent most of the
// tessellation allocating, hashing into and freeing its nodes; a table of whole keys was many times the caches.)
class WeldIndex {
 public:
  WeldIndex() : slots_(std::size_t(1) << 12, 0), mask_((std::size_t(1) << 12) - 1) {}
  // Room for `points` keys without growing.
  template <class KeyOfId>
  void reserve(std::size_t points, KeyOfId&& key_of_id) {
    std::size_t n = std::size_t(1) << 12;
    while (n < 2 * points) n *= 2;
    if (n > slots_.size()) grow(n, key_of_id);
  }
  // Asks for the slot where a key hashed to h starts its search: the lookups of a triangle's points are issued
  // together, as the table is larger than the caches.
  void prefetch(std::size_t h) const { __builtin_prefetch(&slots_[h & mask_]); }
  // The id of `k` (hashed to h), or `fresh` (then recorded) when it is new.
  template <class KeyOfId>
  std::pair<std::uint32_t, bool> find_or_add(const Key& k, std::size_t h, std::uint32_t fresh, KeyOfId&& key_of_id) {
    if (2 * (used_ + 1) > slots_.size()) grow(2 * slots_.size(), key_of_id);
    const std::uint64_t tag = std::uint64_t(h) >> 32 << 32;
    for (std::size_t at = h & mask_;; at = (at + 1) & mask_) {
      const std::uint64_t slot = slots_[at];
      if (slot == 0) {
        slots_[at] = tag | (std::uint64_t(fresh) + 1);  // (ids stay below 2^32 - 1: check_vertex_limit)
        ++used_;
        return {fresh, true};
      }
      if ((slot >> 32 << 32) == tag) {
        const auto id = std::uint32_t((slot & 0xffffffffu) - 1);
        if (key_of_id(id) == k) return {id, false};
      }
    }
  }

 private:
  template <class KeyOfId>
  void grow(std::size_t n, KeyOfId& key_of_id) {
    std::vector<std::uint64_t> slots(n, 0);
    const std::size_t mask = n - 1;
    for (const std::uint64_t slot : slots_)
      if (slot) {
        std::size_t at = KeyHash{}(key_of_id(std::uint32_t((slot & 0xffffffffu) - 1))) & mask;
        while (slots[at]) at = (at + 1) & mask;
        slots[at] = slot;
      }
    slots_ = std::move(slots), mask_ = mask;
  }
  std::vector<std::uint64_t> slots_;
  std::size_t mask_ = 0, used_ = 0;
};

Key key_of(const Vec3& p, std::int64_t cls) {
  return {{std::bit_cast<std::uint64_t>(p[0] + 0.0), std::bit_cast<std::uint64_t>(p[1] + 0.0), std::bit_cast<std::uint64_t>(p[2] + 0.0)}, cls};
}

// Point k of m along segment PQ, from the lexicographically smaller end, so both faces of an edge agree.
Vec3 segment_point(const Vec3& p, const Vec3& q, int k, int m) {
  const bool flip = lex_less(q, p);
  const Vec3& lo = flip ? q : p;
  const Vec3& hi = flip ? p : q;
  const int kk = flip ? m - k : k;
  if (kk == 0) return lo;
  if (kk == m) return hi;
  const double t = double(kk) / m;
  return {lo[0] + t * (hi[0] - lo[0]), lo[1] + t * (hi[1] - lo[1]), lo[2] + t * (hi[2] - lo[2])};
}

// A convex planar polygon of a face (the whole face, or an ear of a non-convex one); boundary[i] says whether
// edge i (corner i -> i+1) is an edge of the mesh rather than a diagonal inside the face.
struct FacePolygon {
  std::vector<std::uint32_t> idx;
  std::int64_t face = 0;
  std::vector<char> boundary;
};

bool convex_and_planar(const std::vector<Vec3>& p, const Vec3& n) {
  const double nn = norm(n);
  if (nn == 0) return false;
  double size = 0;
  for (const auto& v : p) size = std::max(size, norm(sub(v, p[0])));
  for (const auto& v : p)
    if (std::abs(dot(sub(v, p[0]), n)) > 1e-10 * size * nn) return false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Vec3 e0 = sub(p[(i + 1) % p.size()], p[i]);
    const Vec3 e1 = sub(p[(i + 2) % p.size()], p[(i + 1) % p.size()]);
    if (dot(cross(e0, e1), n) < 0) return false;
  }
  return true;
}

// Ear clipping in the plane of the Newell normal; O(n^2), for the rare non-convex face.
std::vector<std::array<std::uint32_t, 3>> ear_clip(const std::vector<std::uint32_t>& idx, const std::vector<Vec3>& p, const Vec3& n) {
  std::vector<std::array<std::uint32_t, 3>> out;
  std::vector<int> live(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) live[i] = int(i);
  // Predicates with a tolerance, so that a corner on a diagonal counts as blocking it and no sliver ear is cut.
  const double nl = norm(n);
  double scale = 0;
  for (const auto& v : p) scale = std::max(scale, norm(sub(v, p[0])));
  const double eps = 1e-12 * scale * scale;
  auto area_sign = [&](int a, int b, int c) { return dot(cross(sub(p[b], p[a]), sub(p[c], p[a])), n) / nl; };
  auto inside = [&](int a, int b, int c, int x) {
    return area_sign(a, b, x) >= -eps && area_sign(b, c, x) >= -eps && area_sign(c, a, x) >= -eps;
  };
  int guard = 0;
  while (live.size() > 3 && guard < int(p.size() * p.size()) + 8) {
    ++guard;
    bool clipped = false;
    for (std::size_t i = 0; i < live.size(); ++i) {
      const int a = live[(i + live.size() - 1) % live.size()], b = live[i], c = live[(i + 1) % live.size()];
      if (area_sign(a, b, c) <= eps) continue;
      bool ear = true;
      for (int x : live)
        if (x != a && x != b && x != c && inside(a, b, c, x)) {
          ear = false;
          break;
        }
      if (!ear) continue;
      out.push_back({idx[a], idx[b], idx[c]});
      live.erase(live.begin() + i);
      clipped = true;
      break;
    }
    if (!clipped) {  // self-intersecting or numerically flat: fall back to a fan of what is left
      for (std::size_t i = 1; i + 1 < live.size(); ++i) out.push_back({idx[live[0]], idx[live[i]], idx[live[i + 1]]});
      return out;
    }
  }
  if (live.size() == 3) out.push_back({idx[live[0]], idx[live[1]], idx[live[2]]});
  return out;
}

// Vertices in parameter space; a coordinate within rounding of a knot plane is put on it, so that a vertex meant to
// lie on a plane (a mesh edge along a knot plane) does not leave slivers one ulp wide.
std::vector<Vec3> to_parameter_space(const PolygonMesh& mesh, const Lattice& lattice) {
  std::vector<Vec3> q(std::size_t(mesh.vertex_count()));
  for (std::size_t v = 0; v < q.size(); ++v) affine_apply(lattice.world_to_parameter.data(), mesh.positions.data() + 3 * v, q[v].data());
  for (int a = 0; a < 3; ++a) {
    const auto& k = lattice.knots[a];
    const double tol = 1e-12 * (k[lattice.count[a]] - k[lattice.degree[a]]);
    for (auto& p : q) {
      const auto it = std::lower_bound(k.begin(), k.end(), p[a] - tol);
      if (it != k.end() && std::abs(*it - p[a]) <= tol) p[a] = *it;
    }
  }
  return q;
}

// Every face as convex planar polygons (indices into the mesh), in the given space.
std::vector<FacePolygon> convex_polygons(const PolygonMesh& mesh, const std::vector<Vec3>& q, FfdReport& report) {
  std::vector<FacePolygon> out;
  std::vector<Vec3> p;
  std::vector<std::uint32_t> idx;
  for (std::int64_t f = 0; f < mesh.face_count(); ++f) {
    idx.assign(mesh.face_indices.begin() + mesh.face_offsets[f], mesh.face_indices.begin() + mesh.face_offsets[f + 1]);
    p.clear();
    for (auto v : idx) p.push_back(q[v]);
    const Vec3 n = newell(p);
    if (n == Vec3{0, 0, 0}) {
      ++report.degenerate_skipped;
      continue;
    }
    if (idx.size() == 3 || convex_and_planar(p, n)) {
      out.push_back({idx, f, std::vector<char>(idx.size(), 1)});
      continue;
    }
    const std::size_t k = idx.size();
    auto position = [&](std::uint32_t v) { return std::size_t(std::find(idx.begin(), idx.end(), v) - idx.begin()); };
    for (const auto& t : ear_clip(idx, p, n)) {
      FacePolygon fp{{t[0], t[1], t[2]}, f, {}};
      for (int e = 0; e < 3; ++e) {
        const std::size_t a = position(t[e]), b = position(t[(e + 1) % 3]);
        fp.boundary.push_back((a + 1) % k == b || (b + 1) % k == a);
      }
      out.push_back(std::move(fp));
    }
  }
  return out;
}

// Fan triangles of a convex polygon (corner indices, -1 for the centroid) from an apex that makes none of them
// flat (collinear corners happen where a knot plane passes through an edge); the centroid when no corner can.
std::vector<std::array<int, 3>> fan(const std::vector<Vec3>& p, const Vec3& n) {
  const int k = int(p.size());
  std::vector<std::array<int, 3>> tris;
  double scale = 0;
  for (const auto& v : p) scale = std::max(scale, norm(sub(v, p[0])));
  const double flat = 1e-13 * scale * scale * norm(n);
  for (int apex = 0; apex < k; ++apex) {
    tris.clear();
    bool ok = true;
    for (int i = 1; i + 1 < k && ok; ++i) {
      const int b = (apex + i) % k, c = (apex + i + 1) % k;
      ok = dot(cross(sub(p[b], p[apex]), sub(p[c], p[apex])), n) > flat;
      tris.push_back({apex, b, c});
    }
    if (ok) return tris;
  }
  tris.clear();
  for (int i = 0; i < k; ++i) tris.push_back({-1, i, (i + 1) % k});
  return tris;
}

// Welded output under construction: boundary points by exact key, interior points new.
class Tessellation {
  auto key_of_id() const {
    return [this](std::uint32_t id) { return key_of(points[id], classes_[id]); };
  }

 public:
  explicit Tessellation(int m) : m_(m) {}
  // Room for about `boundary` points on boundaries (the weld table) and `all` points, `triangles` triangles (address
  // space only: growing by copies moved every array several times).
  void reserve(std::size_t boundary, std::size_t all, std::size_t triangle_count) {
    index_.reserve(boundary, key_of_id());
    points.reserve(all), classes_.reserve(all), triangles.reserve(3 * triangle_count);
  }
  std::uint32_t boundary_point(const Key& k, std::size_t h, const Vec3& q) {
    const auto [id, fresh] = index_.find_or_add(k, h, std::uint32_t(points.size()), key_of_id());
    if (fresh) points.push_back(q), classes_.push_back(k.cls);
    return id;
  }
  std::uint32_t interior_point(const Vec3& q) {
    points.push_back(q), classes_.push_back(0);  // (never looked up)
    return std::uint32_t(points.size() - 1);
  }
  // m^2 sub-triangles of (a, b, c); corner_cls and edge_cls (ab, bc, ca) are the weld classes of the corners and of
  // the points inside each edge; `on_vertex(id, point)` sees every vertex the triangle uses.
  template <class OnVertex>
  void subdivide(const Vec3& a, const Vec3& b, const Vec3& c, const std::array<std::int64_t, 3>& corner_cls,
                 const std::array<std::int64_t, 3>& edge_cls, OnVertex&& on_vertex) {
    const int m = m_;
    const std::size_t count = std::size_t((m + 1) * (m + 2) / 2);
    ids_.assign(count, 0);
    auto at = [&](int i, int j) { return std::size_t(j * (m + 1) - j * (j - 1) / 2 + i); };
    auto slot = [&](int i, int j) -> std::uint32_t& { return ids_[at(i, j)]; };
    // The points and their keys first (the table's slots asked for), then the ids, in the same order.
    q_.resize(count), keys_.resize(count), hashes_.resize(count), boundary_.resize(count);
    for (int j = 0; j <= m; ++j)
      for (int i = 0; i + j <= m; ++i) {
        const std::size_t k = at(i, j);
        Vec3& q = q_[k];
        std::int64_t cls = 0;
        boundary_[k] = 1;
        if (i == 0 && j == 0) q = a, cls = corner_cls[0];
        else if (i == m) q = b, cls = corner_cls[1];
        else if (j == m) q = c, cls = corner_cls[2];
        else if (j == 0) q = segment_point(a, b, i, m), cls = edge_cls[0];
        else if (i == 0) q = segment_point(a, c, j, m), cls = edge_cls[2];
        else if (i + j == m) q = segment_point(b, c, j, m), cls = edge_cls[1];
        else {
          const double u = double(i) / m, v = double(j) / m, w = 1.0 - u - v;
          for (int d = 0; d < 3; ++d) q[d] = w * a[d] + u * b[d] + v * c[d];
          boundary_[k] = 0;
        }
        if (boundary_[k]) {
          keys_[k] = key_of(q, cls);
          hashes_[k] = KeyHash{}(keys_[k]);
          index_.prefetch(hashes_[k]);
        }
      }
    for (int j = 0; j <= m; ++j)
      for (int i = 0; i + j <= m; ++i) {
        const std::size_t k = at(i, j);
        const std::uint32_t id = boundary_[k] ? boundary_point(keys_[k], hashes_[k], q_[k]) : interior_point(q_[k]);
        slot(i, j) = id;
        on_vertex(id, q_[k]);
      }
    for (int j = 0; j < m; ++j)
      for (int i = 0; i + j < m; ++i) {
        triangles.insert(triangles.end(), {slot(i, j), slot(i + 1, j), slot(i, j + 1)});
        if (i + j + 1 < m) triangles.insert(triangles.end(), {slot(i + 1, j), slot(i + 1, j + 1), slot(i, j + 1)});
      }
  }
  std::vector<Vec3> points;
  std::vector<std::uint32_t> triangles;

 private:
  int m_;
  WeldIndex index_;
  std::vector<std::int64_t> classes_;  // each point's weld class
  std::vector<std::uint32_t> ids_;
  std::vector<Vec3> q_;  // a triangle's points, its boundary points' keys and hashes
  std::vector<Key> keys_;
  std::vector<std::size_t> hashes_;
  std::vector<std::uint8_t> boundary_;
};

void check_vertex_limit(std::size_t n) {
  if (n >= 0xffffffffull)
    throw Error(ErrorKind::LimitReached, "FFD output would have more than 2^32 vertices: lower --level");
}

// Area-weighted vertex normals of a triangle set (world space).
std::vector<double> vertex_normals(const std::vector<double>& pos, const std::vector<std::uint32_t>& tri) {
  std::vector<double> n(pos.size(), 0.0);
  for (std::size_t t = 0; t + 2 < tri.size(); t += 3) {
    Vec3 p[3];
    for (int c = 0; c < 3; ++c) p[c] = {pos[3 * tri[t + c]], pos[3 * tri[t + c] + 1], pos[3 * tri[t + c] + 2]};
    const Vec3 fn = cross(sub(p[1], p[0]), sub(p[2], p[0]));
    for (int c = 0; c < 3; ++c)
      for (int d = 0; d < 3; ++d) n[3 * tri[t + c] + d] += fn[d];
  }
  for (std::size_t v = 0; v < n.size() / 3; ++v) {
    const double len = std::sqrt(n[3 * v] * n[3 * v] + n[3 * v + 1] * n[3 * v + 1] + n[3 * v + 2] * n[3 * v + 2]);
    if (len > 0)
      for (int d = 0; d < 3; ++d) n[3 * v + d] /= len;
  }
  return n;
}

}  // namespace

std::vector<double> chebyshev_inverse_table() {
  std::vector<double> table;
  for (int n = 1; n <= kMaxPieceDegree; ++n) {
    Eigen::MatrixXd b(n + 1, n + 1);
    for (int i = 0; i <= n; ++i) {
      const double s = chebyshev_node<double>(i, n);
      for (int k = 0; k <= n; ++k) b(i, k) = std::tgamma(n + 1.0) / (std::tgamma(k + 1.0) * std::tgamma(n - k + 1.0)) * std::pow(s, k) * std::pow(1 - s, n - k);
    }
    const Eigen::MatrixXd inv = b.fullPivLu().inverse();
    for (int a = 0; a <= n; ++a)
      for (int i = 0; i <= n; ++i) table.push_back(inv(a, i));
  }
  return table;
}

Prepared prepare_point(const PolygonMesh& mesh, const Lattice&, FfdReport& report) {
  Prepared out;
  std::vector<Vec3> world(std::size_t(mesh.vertex_count()));
  for (std::size_t v = 0; v < world.size(); ++v) world[v] = {mesh.positions[3 * v], mesh.positions[3 * v + 1], mesh.positions[3 * v + 2]};
  const auto polys = convex_polygons(mesh, world, report);
  for (const auto& fp : polys) {
    const auto& p = fp.idx;
    for (std::size_t i = 1; i + 1 < p.size(); ++i) out.triangles.insert(out.triangles.end(), {p[0], p[i], p[i + 1]});
  }
  out.rest_positions = mesh.positions;
  out.rest_normals = vertex_normals(out.rest_positions, out.triangles);
  report.input_triangles = std::int64_t(out.triangles.size() / 3);
  return out;
}

Prepared prepare_upsampled(const PolygonMesh& mesh, const Lattice&, int level, FfdReport& report) {
  std::vector<Vec3> world(std::size_t(mesh.vertex_count()));
  for (std::size_t v = 0; v < world.size(); ++v) world[v] = {mesh.positions[3 * v], mesh.positions[3 * v + 1], mesh.positions[3 * v + 2]};
  const auto polys = convex_polygons(mesh, world, report);
  Tessellation tess(level);
  for (const auto& fp : polys) {
    const auto& p = fp.idx;
    const std::size_t k = p.size();
    for (std::size_t i = 1; i + 1 < k; ++i) {
      ++report.input_triangles;
      // Mesh edges weld across faces; fan diagonals only inside this face.
      const std::int64_t ab = i == 1 && fp.boundary[0] ? -1 : fp.face, bc = fp.boundary[i] ? -1 : fp.face,
                         ca = i + 2 == k && fp.boundary[k - 1] ? -1 : fp.face;
      tess.subdivide(world[p[0]], world[p[i]], world[p[i + 1]], {-1, -1, -1}, {ab, bc, ca}, [](std::uint32_t, const Vec3&) {});
      check_vertex_limit(tess.points.size());
    }
  }
  Prepared out;
  out.triangles = std::move(tess.triangles);
  for (const auto& q : tess.points) out.rest_positions.insert(out.rest_positions.end(), q.begin(), q.end());
  out.rest_normals = vertex_normals(out.rest_positions, out.triangles);
  return out;
}

namespace {

// A polygon being clipped: corners in parameter space, and for each edge (corner i -> i+1) the original mesh edge
// it lies on (so that both faces of that edge compute its crossings alike), or none for cuts inside the face.
struct ClipPolygon {
  std::vector<Vec3> q;
  std::vector<std::array<std::uint32_t, 2>> edge;  // original vertex ids (smaller first) or {kNoEdge, kNoEdge}
  std::vector<char> on_mesh_edge;                  // corner lies on a mesh edge or vertex (welds across faces)
};

struct Clipper {
  const std::vector<Vec3>& verts;  // parameter-space mesh vertices

  Vec3 crossing(const Vec3& v, const Vec3& w, const std::array<std::uint32_t, 2>& e, int axis, double c) const {
    Vec3 lo, hi;
    if (e[0] != kNoEdge) {
      lo = verts[e[0]];
      hi = verts[e[1]];
    } else {
      const bool flip = lex_less(w, v);
      lo = flip ? w : v;
      hi = flip ? v : w;
    }
    const double t = (c - lo[axis]) / (hi[axis] - lo[axis]);
    Vec3 x{lo[0] + t * (hi[0] - lo[0]), lo[1] + t * (hi[1] - lo[1]), lo[2] + t * (hi[2] - lo[2])};
    x[axis] = c;
    return x;
  }

  // Splits at plane q[axis] = c into the parts below and above.
  void split(const ClipPolygon& p, int axis, double c, ClipPolygon& below, ClipPolygon& above) const {
    below = {};
    above = {};
    const std::size_t n = p.q.size();
    const std::array<std::uint32_t, 2> none{kNoEdge, kNoEdge};
    for (std::size_t i = 0; i < n; ++i) {
      const Vec3& v = p.q[i];
      const Vec3& w = p.q[(i + 1) % n];
      const double sv = v[axis] - c, sw = w[axis] - c;
      const auto& tag = p.edge[i];
      const char flag = p.on_mesh_edge[i];
      if (sv <= 0) {
        below.q.push_back(v);
        below.edge.push_back(sw <= 0 || sv < 0 ? tag : none);
        below.on_mesh_edge.push_back(flag);
      }
      if (sv >= 0) {
        above.q.push_back(v);
        above.edge.push_back(sw >= 0 || sv > 0 ? tag : none);
        above.on_mesh_edge.push_back(flag);
      }
      if ((sv < 0 && sw > 0) || (sv > 0 && sw < 0)) {
        const Vec3 x = crossing(v, w, tag, axis, c);
        const char x_flag = tag[0] != kNoEdge;
        // Entering a side: the crossing starts the rest of the original edge; leaving it: the cut along the plane.
        below.q.push_back(x);
        below.edge.push_back(sv < 0 ? none : tag);
        below.on_mesh_edge.push_back(x_flag);
        above.q.push_back(x);
        above.edge.push_back(sv > 0 ? none : tag);
        above.on_mesh_edge.push_back(x_flag);
      }
    }
    dedupe(below);
    dedupe(above);
  }

  // Drops repeated corners (a crossing that lands on a corner); fewer than 3 left: nothing.
  static void dedupe(ClipPolygon& p) {
    std::size_t i = 0;
    while (p.q.size() >= 2 && i < p.q.size()) {
      const std::size_t j = (i + 1) % p.q.size();
      if (p.q[i] == p.q[j]) {
        p.edge[i] = p.edge[j];
        p.on_mesh_edge[i] = char(p.on_mesh_edge[i] | p.on_mesh_edge[j]);
        p.q.erase(p.q.begin() + std::ptrdiff_t(j));
        p.edge.erase(p.edge.begin() + std::ptrdiff_t(j));
        p.on_mesh_edge.erase(p.on_mesh_edge.begin() + std::ptrdiff_t(j));
        if (j < i) --i;
      } else {
        ++i;
      }
    }
    if (p.q.size() < 3) p = {};
  }
};

struct Piece {
  ClipPolygon poly;
  std::int64_t face;  // index into the convex polygon list
  int surface = -1;
};

// Direction pair for the plane with parameter-space normal n: along axis_s the coordinates of axes with a zero
// component stay fixed, so the surface's degree in s is the sum of the lattice degrees of the other axes.
void choose_axes(const Vec3& n, const std::array<int, 3>& degree, bool identity, Vec3& a, Vec3& b, int& ds, int& dt) {
  const Vec3 e[3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  const double len = norm(n);
  int best_cost = 1 << 30;
  double best_cond = -1;
  for (int k = 0; k < 3; ++k)
    for (int l = 0; l < 3; ++l) {
      if (k == l) continue;
      const int m = 3 - k - l;
      const double cond = std::abs(n[m]) / len;
      if (cond < 0.3) continue;
      const Vec3 ca = cross(n, e[k]), cb = cross(n, e[l]);
      int da = 0, db = 0;
      for (int i = 0; i < 3; ++i) {
        if (ca[i] != 0) da += degree[i];
        if (cb[i] != 0) db += degree[i];
      }
      if (identity) da = db = 1;
      const int cost = (da + 1) * (db + 1);
      if (cost < best_cost || (cost == best_cost && cond > best_cond)) {
        best_cost = cost;
        best_cond = cond;
        a = ca;
        b = cb;
        ds = da;
        dt = db;
      }
    }
  if (dot(cross(a, b), n) < 0) b = {-b[0], -b[1], -b[2]};
}

}  // namespace

// One function (its four stages numbered inside): each stage consumes the lists the one before built (clipped
// pieces, shared surfaces, their frames), which live only for the call.
Prepared prepare_accurate(const PolygonMesh& mesh, const Lattice& lattice, int level, int threads, FfdReport& report) {
  const std::vector<Vec3> q = to_parameter_space(mesh, lattice);
  const auto polys = convex_polygons(mesh, q, report);
  for (const auto& p : polys) report.input_triangles += std::int64_t(p.idx.size()) - 2;

  // Cut planes per axis: every distinct knot of the domain, its ends included (outside parts stay undeformed).
  std::array<std::vector<double>, 3> planes;
  for (int a = 0; a < 3; ++a) {
    const auto& k = lattice.knots[a];
    for (int i = lattice.degree[a]; i <= lattice.count[a]; ++i)
      if (planes[a].empty() || k[i] != planes[a].back()) planes[a].push_back(k[i]);
  }
  const auto arrays = make_lattice_arrays<double>(lattice, lattice.control_points);
  const LatticeView<double>& L = arrays.view;

  // 1. Clip every polygon into pieces that each lie in one knot box: faces apart, on all threads, each thread a run
  // of faces in order (its pieces then follow the previous run's).
  const Clipper clipper{q};
  std::vector<std::vector<Piece>> runs(static_cast<std::size_t>(std::max(1, threads)));
  core::RegionErrors errors;
#pragma omp parallel num_threads(std::max(1, threads)) if (polys.size() >= 256)
  {
    std::vector<Piece>& mine = runs[std::size_t(omp_get_thread_num())];
    std::vector<ClipPolygon> work, next;
#pragma omp for schedule(static)
    for (std::int64_t fi = 0; fi < std::int64_t(polys.size()); ++fi) {
      errors.capture([&] {
        const std::size_t f = std::size_t(fi);
        ClipPolygon start;
        const auto& idx = polys[f].idx;
        for (std::size_t i = 0; i < idx.size(); ++i) {
          const std::uint32_t a = idx[i], b = idx[(i + 1) % idx.size()];
          start.q.push_back(q[a]);
          // Diagonals of an ear-clipped face are not mesh edges: their crossings are canonical all the same.
          start.edge.push_back(polys[f].boundary[i] ? std::array<std::uint32_t, 2>{std::min(a, b), std::max(a, b)}
                                                    : std::array<std::uint32_t, 2>{kNoEdge, kNoEdge});
          start.on_mesh_edge.push_back(1);
        }
        work.assign(1, start);
        for (int axis = 0; axis < 3; ++axis) {
          next.clear();
          for (auto& poly : work) {
            double lo = poly.q[0][axis], hi = lo;
            for (const auto& v : poly.q) lo = std::min(lo, v[axis]), hi = std::max(hi, v[axis]);
            ClipPolygon rest = poly, below, above;
            for (double c : planes[axis]) {
              if (!(c > lo && c < hi)) continue;
              clipper.split(rest, axis, c, below, above);
              if (!below.q.empty()) next.push_back(std::move(below));
              rest = std::move(above);
              if (rest.q.empty()) break;
            }
            if (!rest.q.empty()) next.push_back(std::move(rest));
          }
          std::swap(work, next);
        }
        for (auto& poly : work) mine.push_back({std::move(poly), std::int64_t(f), -1});
      });
    }
  }
  errors.rethrow();
  std::vector<Piece> pieces;
  {
    std::size_t count = 0;
    for (const auto& r : runs) count += r.size();
    pieces.reserve(count);
    for (auto& r : runs)
      for (auto& pc : r) pieces.push_back(std::move(pc));
  }
  report.pieces = std::int64_t(pieces.size());

  // 2. Coplanar pieces of one knot box share a surface: key = (box, quantised plane), checked exactly after.
  struct SurfaceBuild {
    Vec3 normal;       // unit, parameter space, of the first face
    Vec3 point;        // a point of the plane
    int span[3];
    std::vector<std::size_t> pieces;
  };
  std::vector<SurfaceBuild> builds;
  struct PlaneKeyHash {
    std::size_t operator()(const std::array<long long, 8>& k) const {
      std::uint64_t h = 0x9e3779b97f4a7c15ull;
      for (long long v : k) h = (h ^ std::uint64_t(v)) * 0xff51afd7ed558ccdull, h ^= h >> 29;
      return std::size_t(h);
    }
  };
  std::unordered_map<std::array<long long, 8>, std::vector<int>, PlaneKeyHash> by_key;  // (only looked up)
  by_key.reserve(pieces.size());
  double extent = 0;
  for (int a = 0; a < 3; ++a) extent = std::max(extent, L.domain_hi[a] - L.domain_lo[a]);
  std::vector<Vec3> face_normal(polys.size());
  for (std::size_t f = 0; f < polys.size(); ++f) {
    std::vector<Vec3> p;
    for (auto v : polys[f].idx) p.push_back(q[v]);
    const Vec3 n = newell(p);
    const double len = norm(n);
    face_normal[f] = {n[0] / len, n[1] / len, n[2] / len};
    // A component at rounding level is taken as zero: an axis-aligned face then gets the lower-degree surface.
    for (int d = 0; d < 3; ++d)
      if (std::abs(face_normal[f][d]) < 1e-13) face_normal[f][d] = 0;
  }
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    Piece& pc = pieces[i];
    Vec3 c{0, 0, 0};
    for (const auto& v : pc.poly.q)
      for (int d = 0; d < 3; ++d) c[d] += v[d] / double(pc.poly.q.size());
    int span[3] = {-1, -1, -1};
    bool inside = true;
    for (int a = 0; a < 3; ++a) inside = inside && c[a] > L.domain_lo[a] && c[a] < L.domain_hi[a];
    if (inside)
      for (int a = 0; a < 3; ++a) span[a] = find_span(L.knots + L.knot_offset[a], L.degree[a], L.count[a], c[a]);
    const Vec3& n = face_normal[pc.face];
    const double offset = dot(n, pc.poly.q[0]) / extent;
    std::array<long long, 8> key{span[0], span[1], span[2], std::llround(n[0] * 1e9), std::llround(n[1] * 1e9),
                                 std::llround(n[2] * 1e9), std::llround(offset * 1e9), 0};
    auto& candidates = by_key[key];
    int found = -1;
    for (int s : candidates) {
      const SurfaceBuild& b = builds[s];
      if (norm(cross(b.normal, n)) > 1e-12 || dot(b.normal, n) < 0) continue;
      bool coplanar = true;
      for (const auto& v : pc.poly.q) coplanar = coplanar && std::abs(dot(sub(v, b.point), b.normal)) <= 1e-12 * extent;
      if (coplanar) {
        found = s;
        break;
      }
    }
    if (found < 0) {
      found = int(builds.size());
      builds.push_back({n, pc.poly.q[0], {span[0], span[1], span[2]}, {}});
      candidates.push_back(found);
    }
    builds[found].pieces.push_back(i);
    pc.surface = found;
  }

  // 3. Each surface: directions, bounding rectangle of its pieces, degrees.
  Prepared out;
  std::vector<Eigen::Matrix<double, 3, 2>> frames(builds.size());
  std::vector<Vec3> origins(builds.size());
  std::vector<std::array<double, 4>> rect(builds.size());  // smin, tmin, 1/(smax-smin), 1/(tmax-tmin)
  const auto to_world = invert_affine(lattice.world_to_parameter);
  std::vector<Vec3> world_normal(builds.size());
  for (std::size_t s = 0; s < builds.size(); ++s) {
    const SurfaceBuild& b = builds[s];
    Vec3 a, bb;
    int ds = 1, dt = 1;
    choose_axes(b.normal, lattice.degree, b.span[0] < 0, a, bb, ds, dt);
    Eigen::Matrix<double, 3, 2> frame;
    for (int d = 0; d < 3; ++d) frame(d, 0) = a[d], frame(d, 1) = bb[d];
    const Eigen::Matrix2d gram_inv = (frame.transpose() * frame).inverse();
    double smin = 1e300, smax = -1e300, tmin = 1e300, tmax = -1e300;
    for (std::size_t pi : b.pieces)
      for (const auto& v : pieces[pi].poly.q) {
        const Eigen::Vector3d r(v[0] - b.point[0], v[1] - b.point[1], v[2] - b.point[2]);
        const Eigen::Vector2d st = gram_inv * (frame.transpose() * r);
        smin = std::min(smin, st[0]), smax = std::max(smax, st[0]);
        tmin = std::min(tmin, st[1]), tmax = std::max(tmax, st[1]);
      }
    if (!(smax > smin)) smax = smin + 1;
    if (!(tmax > tmin)) tmax = tmin + 1;
    SurfaceRecord<double> rec{};
    for (int d = 0; d < 3; ++d) {
      rec.origin[d] = b.point[d] + smin * a[d] + tmin * bb[d];
      rec.axis_s[d] = (smax - smin) * a[d];
      rec.axis_t[d] = (tmax - tmin) * bb[d];
      rec.span[d] = b.span[d];
    }
    rec.degree_s = ds;
    rec.degree_t = dt;
    rec.control_offset = out.control_points;
    out.control_points += std::int64_t(ds + 1) * (dt + 1);
    report.max_degree_s = std::max(report.max_degree_s, ds);
    report.max_degree_t = std::max(report.max_degree_t, dt);
    out.surfaces.push_back(rec);
    frames[s] = frame;
    origins[s] = b.point;
    rect[s] = {smin, tmin, 1.0 / (smax - smin), 1.0 / (tmax - tmin)};
    // World normal of the plane: cof(to_world) n, the way area vectors map.
    Vec3 n = b.normal;
    const Vec3 c0{to_world[0], to_world[4], to_world[8]}, c1{to_world[1], to_world[5], to_world[9]}, c2{to_world[2], to_world[6], to_world[10]};
    const Vec3 x = cross(c1, c2), y = cross(c2, c0), z = cross(c0, c1);
    Vec3 w{n[0] * x[0] + n[1] * y[0] + n[2] * z[0], n[0] * x[1] + n[1] * y[1] + n[2] * z[1], n[0] * x[2] + n[1] * y[2] + n[2] * z[2]};
    const double wl = norm(w);
    world_normal[s] = {w[0] / wl, w[1] / wl, w[2] / wl};
  }
  report.surfaces = std::int64_t(out.surfaces.size());
  report.samples = out.control_points;

  // 4. Tessellate: fan each piece, subdivide each triangle m^2, record (surface, s, t) per vertex and surface.
  Tessellation tess(level);
  std::vector<VertexRecord<double>> first;
  {
    // About k - 2 triangles for a piece of k corners, each made of m^2 triangles, with (m - 1)(m - 2) / 2 points of
    // its own inside and 3m on its edges, shared with its neighbours (a hint: the arrays grow past it).
    std::size_t fans = 0;
    for (const Piece& pc : pieces) fans += std::max<std::size_t>(1, pc.poly.q.size() - 2);
    const std::size_t m = std::size_t(level), boundary = fans * 2 * m;
    const std::size_t points = fans * ((m - 1) * (m - 2) / 2) + boundary;
    tess.reserve(boundary, points, fans * m * m);
    first.reserve(points);
  }
  // The records of a vertex on several surfaces after its first, in the order met: a list per vertex through
  // `next` (kNoEdge ends it), head and tail by vertex.
  struct Extra {
    VertexRecord<double> rec;
    std::uint32_t next;
  };
  std::vector<Extra> extras;
  std::vector<std::uint32_t> extra_head, extra_tail;
  for (const Piece& pc : pieces) {
    const int s = pc.surface;
    const Eigen::Matrix2d gram_inv = (frames[s].transpose() * frames[s]).inverse();
    auto on_vertex = [&](std::uint32_t id, const Vec3& v) {
      const Eigen::Vector3d r(v[0] - origins[s][0], v[1] - origins[s][1], v[2] - origins[s][2]);
      const Eigen::Vector2d st = gram_inv * (frames[s].transpose() * r);
      const VertexRecord<double> rec{(st[0] - rect[s][0]) * rect[s][2], (st[1] - rect[s][1]) * rect[s][3], s};
      if (id >= first.size()) {
        first.resize(id + 1, VertexRecord<double>{0, 0, -1});
        extra_head.resize(id + 1, kNoEdge), extra_tail.resize(id + 1, kNoEdge);
      }
      if (first[id].surface < 0) {
        first[id] = rec;
      } else if (first[id].surface != s) {
        bool known = false;
        for (std::uint32_t e = extra_head[id]; e != kNoEdge && !known; e = extras[e].next)
          known = extras[e].rec.surface == s;
        if (!known) {
          check_vertex_limit(extras.size());
          const auto n = std::uint32_t(extras.size());
          extras.push_back({rec, kNoEdge});
          (extra_tail[id] == kNoEdge ? extra_head[id] : extras[extra_tail[id]].next) = n;
          extra_tail[id] = n;
        }
      }
    };
    // Weld classes: corners and edges on mesh edges join other faces (-1), everything else stays in this face.
    const std::int64_t face_cls = polys[pc.face].face;
    const int k = int(pc.poly.q.size());
    Vec3 centroid{0, 0, 0};
    for (const auto& v : pc.poly.q)
      for (int d = 0; d < 3; ++d) centroid[d] += v[d] / double(k);
    auto corner = [&](int i) { return i < 0 ? centroid : pc.poly.q[i]; };
    auto corner_cls = [&](int i) { return i >= 0 && pc.poly.on_mesh_edge[i] ? std::int64_t(-1) : face_cls; };
    auto edge_cls = [&](int x, int y) {
      int e = -1;
      if (x >= 0 && y == (x + 1) % k) e = x;
      else if (y >= 0 && x == (y + 1) % k) e = y;
      return e >= 0 && pc.poly.edge[e][0] != kNoEdge ? std::int64_t(-1) : face_cls;
    };
    // Total degree of R on this plane: the lattice degrees of the axes that vary over it.
    int total_degree = 1;
    if (builds[s].span[0] >= 0) {
      total_degree = 0;
      const Vec3& n = builds[s].normal;
      for (int a = 0; a < 3; ++a) {
        const bool constant = n[(a + 1) % 3] == 0 && n[(a + 2) % 3] == 0;
        if (!constant) total_degree += lattice.degree[a];
      }
      total_degree = std::min(total_degree, out.surfaces[s].degree_s + out.surfaces[s].degree_t);
    }
    {
      Prepared::PiecePolygon pp{s, total_degree, {}};
      for (const auto& v : pc.poly.q) {
        const Eigen::Vector3d r(v[0] - origins[s][0], v[1] - origins[s][1], v[2] - origins[s][2]);
        const Eigen::Vector2d st = gram_inv * (frames[s].transpose() * r);
        pp.st.push_back({(st[0] - rect[s][0]) * rect[s][2], (st[1] - rect[s][1]) * rect[s][3]});
      }
      out.piece_polygons.push_back(std::move(pp));
    }
    for (const auto& t : fan(pc.poly.q, face_normal[pc.face])) {
      Prepared::PieceTriangle pt{s, total_degree, {}, {}};
      for (int c = 0; c < 3; ++c) {
        const Vec3 v = corner(t[c]);
        const Eigen::Vector3d r(v[0] - origins[s][0], v[1] - origins[s][1], v[2] - origins[s][2]);
        const Eigen::Vector2d st = gram_inv * (frames[s].transpose() * r);
        pt.st[c][0] = (st[0] - rect[s][0]) * rect[s][2];
        pt.st[c][1] = (st[1] - rect[s][1]) * rect[s][3];
        affine_apply(to_world.data(), v.data(), pt.rest[c]);
      }
      out.piece_triangles.push_back(pt);
      tess.subdivide(corner(t[0]), corner(t[1]), corner(t[2]), {corner_cls(t[0]), corner_cls(t[1]), corner_cls(t[2])},
                     {edge_cls(t[0], t[1]), edge_cls(t[1], t[2]), edge_cls(t[2], t[0])}, on_vertex);
      check_vertex_limit(tess.points.size());
    }
  }
  out.triangles = std::move(tess.triangles);
  const std::size_t nv = tess.points.size();
  out.rest_positions.resize(3 * nv);
  out.rest_normals.assign(3 * nv, 0.0);
  out.record_offsets.resize(nv + 1);
  out.records.reserve(nv + extras.size());
  for (std::size_t v = 0; v < nv; ++v) {
    affine_apply(to_world.data(), tess.points[v].data(), out.rest_positions.data() + 3 * v);
    out.record_offsets[v] = std::int64_t(out.records.size());
    out.records.push_back(first[v]);
    if (extra_head[v] == kNoEdge) {
      for (int d = 0; d < 3; ++d) out.rest_normals[3 * v + d] = world_normal[first[v].surface][d];
    } else {
      for (std::uint32_t e = extra_head[v]; e != kNoEdge; e = extras[e].next) out.records.push_back(extras[e].rec);
    }
  }
  out.record_offsets[nv] = std::int64_t(out.records.size());
  return out;
}

}  // namespace parasurf::ffd
