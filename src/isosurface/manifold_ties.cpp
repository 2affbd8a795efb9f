// Where the level set pinches at a sample equal to the level, the one vertex placed on that sample joins sheets
// that only touch there: the mesh is non-manifold at that vertex, and along mesh edges between two such samples.
// This pass makes it 2-manifold without moving anything. Around every vertex its triangles are grouped into fans
// through the edges they share; an edge used by more than two triangles pairs them by their order around it, each
// with its neighbour across a wedge that lies outside (value below the level), as simulation of simplicity with
// ties inside would (Edelsbrunner and Muecke, "Simulation of simplicity", ACM TOG 9(1), 1990): the inside stays
// connected through the tie and every outside wedge gets its own sheet. A vertex with several fans is then one
// vertex per fan (copies at the same position), as in the non-manifold vertex splitting of Gueziec, Taubin, Lazarus
// and Horn, "Cutting and stitching: converting sets of polygons to manifold surfaces", IEEE TVCG 7(2), 2001.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <vector>

#include "isosurface/part.hpp"

namespace parasurf::iso {
namespace {

// A corner of the mesh: 3 triangle + which corner (0..2), packed in 32 bits to keep the pass's memory small.
struct Corner {
  std::uint32_t code;
  std::uint32_t triangle() const { return code / 3; }
  std::uint32_t at() const { return code % 3; }
};

std::uint32_t find(std::vector<std::uint32_t>& parent, std::uint32_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// An edge used by more than two triangles (2k of them, k run each way): its triangles in their order around it and
// the ways to pair them into k edges of one sheet each (a triangle run a -> b with one run b -> a), most likely first.
struct SheetEdge {
  std::uint32_t a = 0, b = 0;                       // a < b
  std::vector<std::pair<std::uint32_t, bool>> around;  // (triangle, runs a -> b), by angle about a -> b
  bool alternating = false;
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> pairings;  // none: the edge cannot be paired
  std::size_t pairing = 0;                                                    // the one chosen
};

// Sorts the triangles around edge (a, b) by the angle of their third vertex about the edge.
void order_around(const TriangleMesh& m, SheetEdge& e) {
  const float* pa = &m.positions[3 * std::size_t(e.a)];
  const float* pb = &m.positions[3 * std::size_t(e.b)];
  double axis[3] = {double(pb[0]) - pa[0], double(pb[1]) - pa[1], double(pb[2]) - pa[2]};
  const double len = std::sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
  if (!(len > 0)) return;
  for (double& x : axis) x /= len;
  const int k = std::abs(axis[0]) < 0.6 ? 0 : std::abs(axis[1]) < 0.6 ? 1 : 2;
  double e1[3] = {0, 0, 0};
  e1[k] = 1;
  const double d = e1[0] * axis[0] + e1[1] * axis[1] + e1[2] * axis[2];
  for (int c = 0; c < 3; ++c) e1[c] -= d * axis[c];
  const double n1 = std::sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
  for (double& x : e1) x /= n1;
  const double e2[3] = {axis[1] * e1[2] - axis[2] * e1[1], axis[2] * e1[0] - axis[0] * e1[2],
                        axis[0] * e1[1] - axis[1] * e1[0]};
  std::vector<std::pair<double, std::pair<std::uint32_t, bool>>> items;
  for (const auto& [t, forward] : e.around) {
    std::uint32_t c = 0;
    for (int q = 0; q < 3; ++q) {
      const std::uint32_t v = m.triangles[3 * std::size_t(t) + q];
      if (v != e.a && v != e.b) c = v;
    }
    const float* pc = &m.positions[3 * std::size_t(c)];
    const double r[3] = {double(pc[0]) - pa[0], double(pc[1]) - pa[1], double(pc[2]) - pa[2]};
    items.push_back({std::atan2(r[0] * e2[0] + r[1] * e2[1] + r[2] * e2[2], r[0] * e1[0] + r[1] * e1[1] + r[2] * e1[2]),
                     {t, forward}});
  }
  std::sort(items.begin(), items.end());
  const std::size_t n = items.size();
  auto alternating = [&] {
    bool ok = n % 2 == 0;
    for (std::size_t i = 0; i < n && ok; ++i) ok = items[i].second.second != items[(i + 1) % n].second.second;
    return ok;
  };
  // Two triangles folded onto one half-plane (their third vertices in one direction, up to the rounding of float
  // positions) have no order of their own: they take the one that keeps the directions alternating. The order is
  // cyclic: a fold may come first, last, or straddle the angle of +-pi.
  if (!alternating())
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t j = (i + 1) % n, h = (i + n - 1) % n;
      double gap = std::abs(items[j].first - items[i].first);
      gap = std::min(gap, 2 * std::numbers::pi - gap);
      if (gap <= 1e-6 && items[i].second.second != items[j].second.second &&
          items[h].second.second == items[i].second.second)
        std::swap(items[i].second, items[j].second);
    }
  for (std::size_t i = 0; i < n; ++i) e.around[i] = items[i].second;
  e.alternating = alternating();
}

// The ways to pair the triangles around an edge. Alternating around it (the usual case), a triangle that runs a -> b
// has its normal, and with normals to lower values the outside, on the side of increasing angle: pairing each with
// its neighbour across a wedge that lies outside comes first, as simulation of simplicity with ties inside would
// (the inside stays connected through the tie), then across one that lies inside. After those, every other way to
// match the triangles run a -> b with those run b -> a, for up to four of each: where MC33 triangles of one cell fold
// onto a half-plane or cross at collapsed ties, the angles do not tell the order.
void list_pairings(SheetEdge& e, bool normals_to_lower) {
  using Pairs = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
  const std::size_t n = e.around.size();
  e.pairings.clear();
  e.pairing = 0;
  auto canonical = [](Pairs p) {  // each pair as (run a -> b, run b -> a), sorted
    std::sort(p.begin(), p.end());
    return p;
  };
  if (e.alternating)
    for (int inside = 0; inside < 2; ++inside) {
      const bool forward_opens = normals_to_lower == (inside == 0);
      Pairs pairs;
      for (std::size_t i = 0; i < n; ++i)
        if (e.around[i].second == forward_opens) {
          const auto [x, y] = std::pair{e.around[i].first, e.around[(i + 1) % n].first};
          pairs.push_back(e.around[i].second ? std::pair{x, y} : std::pair{y, x});
        }
      e.pairings.push_back(canonical(std::move(pairs)));
    }
  std::vector<std::uint32_t> forward, backward;
  for (const auto& [t, f] : e.around) (f ? forward : backward).push_back(t);
  if (forward.size() != backward.size() || forward.size() > 4) return;
  std::vector<std::size_t> match(backward.size());
  std::iota(match.begin(), match.end(), std::size_t(0));
  do {
    Pairs pairs;
    for (std::size_t i = 0; i < forward.size(); ++i) pairs.push_back({forward[i], backward[match[i]]});
    pairs = canonical(std::move(pairs));
    if (std::find(e.pairings.begin(), e.pairings.end(), pairs) == e.pairings.end()) e.pairings.push_back(std::move(pairs));
  } while (std::next_permutation(match.begin(), match.end()));
}

template <class Visit> void for_each_pair(const SheetEdge& e, Visit&& visit) {
  if (e.pairing < e.pairings.size())
    for (const auto& [ta, tb] : e.pairings[e.pairing]) visit(ta, tb);
}

}  // namespace

}  // namespace parasurf::iso

namespace parasurf::distributed {
using namespace parasurf::iso;

std::int64_t pinch_candidates(const TriangleMesh& m, int threads, const WorldToIndex& to_index,
                               std::vector<std::uint8_t>& examined) {
  const std::size_t nv = std::size_t(m.vertex_count());
  examined.assign(nv, 0);
  const double* o = to_index.origin;
  const double* inv = to_index.inverse;
  // A coarse test in float first (eight wide; its margin covers the float rounding of the map and the subtraction,
  // growing with the coordinates), then the exact one in double for the few it passes.
  float of[3], invf[9], growth[3];
  for (int a = 0; a < 3; ++a) {
    of[a] = float(o[a]);
    growth[a] = float((std::abs(inv[3 * a]) + std::abs(inv[3 * a + 1]) + std::abs(inv[3 * a + 2])) * 0x1p-20);
  }
  for (int k = 0; k < 9; ++k) invf[k] = float(inv[k]);
  const float base = std::abs(of[0]) + std::abs(of[1]) + std::abs(of[2]);
  constexpr std::int64_t kBlock = 512;
  const std::int64_t blocks = (std::int64_t(nv) + kBlock - 1) / kBlock;
  std::int64_t on_samples = 0;
#pragma omp parallel for schedule(static) num_threads(std::max(1, threads)) reduction(+ : on_samples)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t v0 = b * kBlock, n = std::min<std::int64_t>(kBlock, std::int64_t(nv) - v0);
    const float* p = &m.positions[3 * std::size_t(v0)];
    std::uint8_t* near = &examined[std::size_t(v0)];
    float xyz[3][kBlock];  // the block's coordinates, one array per axis (so that the test below vectorises)
    for (std::int64_t i = 0; i < n; ++i)
      for (int a = 0; a < 3; ++a) xyz[a][i] = p[3 * i + a];
    float worst[kBlock];  // the largest distance from a whole number, less its margin
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) {
      const float d0 = xyz[0][i] - of[0], d1 = xyz[1][i] - of[1], d2 = xyz[2][i] - of[2];
      const float size = std::abs(xyz[0][i]) + std::abs(xyz[1][i]) + std::abs(xyz[2][i]) + base;
      float w = -1;
      for (int a = 0; a < 3; ++a) {
        const float x = invf[3 * a] * d0 + invf[3 * a + 1] * d1 + invf[3 * a + 2] * d2;
        w = std::max(w, std::abs(x - std::nearbyint(x)) - (0.02f + size * growth[a]));
      }
      worst[i] = w;
    }
    for (std::int64_t i = 0; i < n; ++i) near[i] = worst[i] <= 0;
    for (std::int64_t i = 0; i < n; ++i) {
      if (!near[i]) continue;
      const float* q = p + 3 * i;
      const double d[3] = {double(q[0]) - o[0], double(q[1]) - o[1], double(q[2]) - o[2]};
      bool whole = true;
      for (int a = 0; a < 3 && whole; ++a) {
        const double x = inv[3 * a] * d[0] + inv[3 * a + 1] * d[1] + inv[3 * a + 2] * d[2];
        whole = std::abs(x - std::nearbyint(x)) <= 1e-2;
      }
      near[i] = whole;
      on_samples += whole;
    }
  }
  return on_samples;
}
}  // namespace parasurf::distributed

namespace parasurf::iso {

namespace {

// The pass on a whole mesh (split_pinched_vertices runs it on the triangles around the vertices on samples).
// One function: its steps (chains, fans at edges of several sheets, pairings, new vertices) share the per-vertex
// corner lists built at its start.
std::int64_t split_core(TriangleMesh& m, bool normals_to_lower, int threads, const WorldToIndex& to_index) {
  const std::size_t nv = std::size_t(m.vertex_count()), nt = std::size_t(m.triangle_count());
  threads = std::max(1, threads);
  // Vertices on samples: their index coordinates (the inverse of the index-to-world map) are whole numbers. Only
  // they, and their neighbours, can be where sheets meet; a crossing a hair from a sample is looked at too.
  std::vector<std::uint8_t> examined;
  if (pinch_candidates(m, threads, to_index, examined) == 0) return 0;
  for (std::size_t t = 0; t < nt; ++t) {
    const std::uint32_t* c = &m.triangles[3 * t];
    if ((examined[c[0]] | examined[c[1]] | examined[c[2]]) & 1)
      for (int q = 0; q < 3; ++q) examined[c[q]] |= 2;  // bit 1: a neighbour of a vertex on a sample (or one itself)
  }
  // corners by examined vertex (the others have none listed)
  std::vector<std::uint32_t> first(nv + 1, 0);
  for (std::uint32_t v : m.triangles)
    if (examined[v]) ++first[std::size_t(v) + 1];
  std::partial_sum(first.begin(), first.end(), first.begin());
  std::vector<Corner> corners(first[nv]);
  {
    std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (std::size_t t = 0; t < nt; ++t)
      for (int q = 0; q < 3; ++q)
        if (examined[m.triangles[3 * t + q]]) corners[fill[m.triangles[3 * t + q]]++] = {std::uint32_t(3 * t + std::size_t(q))};
  }
  // Chains: per vertex, its triangles joined through edges that exactly two of them share, run both ways. A vertex
  // of one chain and no edge of several sheets is manifold; several chains and no such edge: a pinch (each chain a
  // cone), split. The edges of several sheets are gathered, each once (at its smaller end).
  std::vector<std::uint8_t> chain_of(corners.size(), 0);  // a vertex of more corners than 255 is kept whole
  std::vector<std::uint32_t> chains(nv, 1);
  std::vector<std::uint8_t> keep_whole(nv, 0);  // an edge of several sheets whose far end was not examined
  std::vector<std::vector<SheetEdge>> found(static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    std::vector<std::uint32_t> parent, id;
    std::vector<std::pair<std::uint32_t, std::pair<std::uint32_t, bool>>> edges;  // (other vertex, (local, v -> w))
    auto& mine = found[std::size_t(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 4096)
    for (std::int64_t vi = 0; vi < std::int64_t(nv); ++vi) {
      const auto v = std::uint32_t(vi);
      const std::uint32_t c0 = first[v], deg = first[v + 1] - c0;
      if (deg < 2) continue;
      if (deg > 255) {
        keep_whole[v] = 1;
        continue;
      }
      // Most vertices are a plain closed fan: each triangle's next vertex is exactly one other triangle's previous
      // one, and following that from the first triangle visits all of them. That is checked without sorting.
      if (deg <= 16) {
        std::uint32_t nx[16], pv[16];
        for (std::uint32_t i = 0; i < deg; ++i) {
          const Corner& c = corners[c0 + i];
          nx[i] = m.triangles[3 * std::size_t(c.triangle()) + (c.at() + 1) % 3];
          pv[i] = m.triangles[3 * std::size_t(c.triangle()) + (c.at() + 2) % 3];
        }
        std::uint32_t at = 0, steps = 0;
        bool plain = true;
        do {
          std::uint32_t hit = deg, hits = 0;
          for (std::uint32_t k = 0; k < deg; ++k)
            if (pv[k] == nx[at]) hit = k, ++hits;
          plain = hits == 1;
          at = hit;
          ++steps;
        } while (plain && at != 0 && steps <= deg);
        if (plain && steps == deg) continue;  // one chain (the default)
      }
      parent.resize(deg);
      std::iota(parent.begin(), parent.end(), 0u);
      edges.clear();
      for (std::uint32_t i = 0; i < deg; ++i) {
        const Corner& c = corners[c0 + i];
        edges.push_back({m.triangles[3 * std::size_t(c.triangle()) + (c.at() + 1) % 3], {i, true}});   // runs v -> next
        edges.push_back({m.triangles[3 * std::size_t(c.triangle()) + (c.at() + 2) % 3], {i, false}});  // runs prev -> v
      }
      std::sort(edges.begin(), edges.end());
      for (std::size_t e = 0; e < edges.size();) {
        std::size_t f = e;
        while (f < edges.size() && edges[f].first == edges[e].first) ++f;
        const std::uint32_t w = edges[e].first;
        if (f - e == 2 && edges[e].second.second != edges[e + 1].second.second) {
          parent[find(parent, edges[e].second.first)] = find(parent, edges[e + 1].second.first);
        } else if (f - e > 2) {
          if (!examined[w]) keep_whole[v] = 1;
          else if (v < w) {
            SheetEdge se;
            se.a = v, se.b = w;
            for (std::size_t g = e; g < f; ++g)
              se.around.push_back({corners[c0 + edges[g].second.first].triangle(), edges[g].second.second});
            mine.push_back(std::move(se));
          }
        }
        e = f;
      }
      std::uint32_t count = 0;
      id.assign(deg, UINT32_MAX);
      for (std::uint32_t i = 0; i < deg; ++i) {
        const std::uint32_t r = find(parent, i);
        if (id[r] == UINT32_MAX) id[r] = count++;
        chain_of[c0 + i] = std::uint8_t(id[r]);
      }
      chains[v] = count;
    }
  }
  std::vector<SheetEdge> sheets;
  for (auto& list : found)
    for (auto& e : list) sheets.push_back(std::move(e));
  std::sort(sheets.begin(), sheets.end(), [](const SheetEdge& x, const SheetEdge& y) {
    return x.a < y.a || (x.a == y.a && x.b < y.b);
  });
  for (SheetEdge& e : sheets) {
    order_around(m, e);
    list_pairings(e, normals_to_lower);
  }
  // Fans at the vertices on edges of several sheets: chains joined by the pairs of every such edge there.
  std::vector<std::vector<std::uint32_t>> sheets_at_list;
  std::vector<std::int64_t> slot(nv, -1);  // index into sheets_at_list
  for (std::size_t k = 0; k < sheets.size(); ++k)
    for (std::uint32_t x : {sheets[k].a, sheets[k].b}) {
      if (slot[x] < 0) slot[x] = std::int64_t(sheets_at_list.size()), sheets_at_list.emplace_back();
      sheets_at_list[std::size_t(slot[x])].push_back(std::uint32_t(k));
    }
  auto local_corner = [&](std::uint32_t v, std::uint32_t t) {
    for (std::uint32_t c = first[v]; c < first[v + 1]; ++c)
      if (corners[c].triangle() == t) return c;
    return first[v + 1];
  };
  // fan of each chain of the vertex; UINT32_MAX entries: the vertex is left whole (an edge there cannot be paired)
  std::vector<std::vector<std::uint32_t>> fan_of_chain(sheets_at_list.size());
  auto make_fans = [&](std::uint32_t v) {
    const auto s = std::size_t(slot[v]);
    std::vector<std::uint32_t> parent(chains[v]);
    std::iota(parent.begin(), parent.end(), 0u);
    bool whole = false;
    for (std::uint32_t k : sheets_at_list[s]) {
      if (sheets[k].pairings.empty()) whole = true;
      for_each_pair(sheets[k], [&](std::uint32_t ta, std::uint32_t tb) {
        const std::uint32_t i = chain_of[local_corner(v, ta)], j = chain_of[local_corner(v, tb)];
        parent[find(parent, i)] = find(parent, j);
      });
    }
    whole = whole || keep_whole[v];
    auto& fan = fan_of_chain[s];
    fan.assign(chains[v], whole ? 0u : UINT32_MAX);
    if (whole) return;
    std::vector<std::uint32_t> id(chains[v], UINT32_MAX);
    std::uint32_t count = 0;
    for (std::uint32_t c = 0; c < chains[v]; ++c) {
      const std::uint32_t r = find(parent, c);
      if (id[r] == UINT32_MAX) id[r] = count++;
      fan[c] = id[r];
    }
  };
  auto fan_at = [&](std::uint32_t v, std::uint32_t t) {
    return fan_of_chain[std::size_t(slot[v])][chain_of[local_corner(v, t)]];
  };
  // An edge is resolved when its pairs land on distinct (fan at a, fan at b): each pair is then an edge of its own.
  auto resolved = [&](const SheetEdge& e) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> keys;
    for_each_pair(e, [&](std::uint32_t ta, std::uint32_t) { keys.push_back({fan_at(e.a, ta), fan_at(e.b, ta)}); });
    std::sort(keys.begin(), keys.end());
    return !keys.empty() && std::adjacent_find(keys.begin(), keys.end()) == keys.end();
  };
  for (std::uint32_t v = 0; v < nv; ++v)
    if (slot[v] >= 0) make_fans(v);
  // Each edge takes the first of its pairings; where the sheets then still share the edge (they touch along it, one
  // fan around each end), the next that separates them. A few rounds, as a change at one end moves the fans there.
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (SheetEdge& e : sheets) {
      if (e.pairings.size() < 2 || resolved(e)) continue;
      const std::size_t was = e.pairing;
      for (std::size_t p = 0; p < e.pairings.size(); ++p) {
        if (p == was) continue;
        e.pairing = p;
        make_fans(e.a);
        make_fans(e.b);
        if (resolved(e)) break;
      }
      if (!resolved(e)) {  // no pairing resolves it alone: keep the one it had
        e.pairing = was;
        make_fans(e.a);
        make_fans(e.b);
      } else {
        changed = true;
      }
    }
    if (!changed) break;
  }
  // fan of every corner
  std::vector<std::uint8_t> fan_of(corners.size(), 0);
  std::vector<std::uint32_t> fans(nv, 1);
  for (std::uint32_t v = 0; v < nv; ++v) {
    if (keep_whole[v]) continue;  // fan 0 for every corner
    if (slot[v] < 0) {
      fans[v] = chains[v];
      for (std::uint32_t c = first[v]; c < first[v + 1]; ++c) fan_of[c] = chain_of[c];
      continue;
    }
    const auto& fan = fan_of_chain[std::size_t(slot[v])];
    std::uint32_t count = 0;
    for (std::uint32_t c = first[v]; c < first[v + 1]; ++c) {
      fan_of[c] = std::uint8_t(fan[chain_of[c]]);
      count = std::max(count, std::uint32_t(fan_of[c]) + 1);
    }
    fans[v] = count;
  }
  // a new vertex for every fan after a vertex's first, numbered by vertex then fan
  std::vector<std::uint32_t> extra_first(nv + 1, 0);
  for (std::size_t v = 0; v < nv; ++v) extra_first[v + 1] = extra_first[v] + (fans[v] > 1 ? fans[v] - 1 : 0);
  const std::uint32_t added = extra_first[nv];
  if (added == 0) return 0;
  const std::size_t total = nv + added;
  m.positions.resize(3 * total);
  if (!m.normals.empty()) m.normals.resize(3 * total);
  if (!m.vertex_values.empty()) m.vertex_values.resize(total);
  for (std::size_t v = 0; v < nv; ++v) {
    if (fans[v] < 2) continue;
    for (std::uint32_t f = 1; f < fans[v]; ++f) {
      const std::size_t copy = nv + extra_first[v] + f - 1;
      for (int c = 0; c < 3; ++c) m.positions[3 * copy + c] = m.positions[3 * v + c];
      if (!m.normals.empty())
        for (int c = 0; c < 3; ++c) m.normals[3 * copy + c] = m.normals[3 * v + c];
      if (!m.vertex_values.empty()) m.vertex_values[copy] = m.vertex_values[v];
    }
    for (std::uint32_t c = first[v]; c < first[v + 1]; ++c)
      if (fan_of[c] > 0)
        m.triangles[corners[c].code] = std::uint32_t(nv + extra_first[v] + fan_of[c] - 1);
  }
  return std::int64_t(added);
}

}  // namespace

}  // namespace parasurf::iso

namespace parasurf::distributed {
using namespace parasurf::iso;

bool plain_fans(std::vector<FanCorner>& list, bool open_too) {
  std::sort(list.begin(), list.end(), [](const FanCorner& a, const FanCorner& b) { return a.v < b.v; });
  for (std::size_t a = 0; a < list.size();) {
    std::size_t b = a;
    while (b < list.size() && list[b].v == list[a].v) ++b;
    const std::size_t deg = b - a;
    // The triangles no other precedes (none whose next vertex is their previous one): none for a closed fan, one
    // for an open one.
    std::size_t first = a, starts = 0;
    for (std::size_t k = a; k < b; ++k) {
      bool preceded = false;
      for (std::size_t j = a; j < b && !preceded; ++j) preceded = list[j].next == list[k].prev;
      if (!preceded) first = k, ++starts;
    }
    if (starts > (open_too ? 1u : 0u)) return false;
    const bool open = starts == 1;
    std::size_t at = first, steps = 0;
    for (;;) {
      std::size_t hit = b, hits = 0;
      for (std::size_t k = a; k < b; ++k)
        if (list[k].prev == list[at].next) hit = k, ++hits;
      ++steps;
      if (hits > 1 || steps > deg) return false;
      if (hits == 0) {  // the open fan's last triangle
        if (!open || steps != deg) return false;
        break;
      }
      at = hit;
      if (at == first) {  // round a closed fan
        if (open || steps != deg || deg < 3) return false;
        break;
      }
    }
    a = b;
  }
  return true;
}

std::int64_t split_pinched_vertices(TriangleMesh& m, bool normals_to_lower, int threads, const WorldToIndex& to_index) {
  const std::size_t nv = std::size_t(m.vertex_count()), nt = std::size_t(m.triangle_count());
  if (nt == 0 || 3 * nt > UINT32_MAX) return 0;  // (meshes past 1.4 billion triangles are left as they are)
  threads = std::max(1, threads);
  // The pass looks only at the vertices on samples, their neighbours and the triangles around those (a 2-ring): it
  // runs on those triangles alone, in their order and their vertices' (which gives what it gives on the whole mesh),
  // and its new vertices are then appended here in its order.
  std::vector<std::uint8_t> flag;
  if (pinch_candidates(m, threads, to_index, flag) == 0) return 0;
  auto gather = [&](std::uint8_t bits) {  // the triangles with a corner flagged in `bits`, ascending
    std::vector<std::vector<std::uint32_t>> found(static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
    {
      auto& mine = found[std::size_t(omp_get_thread_num())];
#pragma omp for schedule(static)
      for (std::int64_t t = 0; t < std::int64_t(nt); ++t) {
        const std::uint32_t* c = &m.triangles[3 * std::size_t(t)];
        if ((flag[c[0]] | flag[c[1]] | flag[c[2]]) & bits) mine.push_back(std::uint32_t(t));
      }
    }
    std::vector<std::uint32_t> all;
    for (auto& f : found) all.insert(all.end(), f.begin(), f.end());
    return all;
  };
  const std::vector<std::uint32_t> at_samples = gather(1);
  // Where samples on the level are everywhere (integer data at a data value), the pass runs on the whole mesh: the
  // shortcuts below would only add to it. (Both ways give the same mesh.)
  if (at_samples.size() > nt / 8) return split_core(m, normals_to_lower, threads, to_index);
  // Most vertices on samples are a plain closed fan (part.hpp): then there is nothing to split.
  {
    std::vector<FanCorner> list;
    for (const std::uint32_t t : at_samples)
      for (int q = 0; q < 3; ++q) {
        const std::uint32_t* c = &m.triangles[3 * std::size_t(t)];
        if (flag[c[q]] & 1) list.push_back({c[q], c[(q + 1) % 3], c[(q + 2) % 3]});
      }
    if (plain_fans(list)) return 0;
  }
  for (const std::uint32_t t : at_samples)
    for (int q = 0; q < 3; ++q) flag[m.triangles[3 * std::size_t(t) + std::size_t(q)]] |= 2;
  const std::vector<std::uint32_t> around = gather(3);
  for (const std::uint32_t t : around)
    for (int q = 0; q < 3; ++q) flag[m.triangles[3 * std::size_t(t) + std::size_t(q)]] |= 4;
  std::vector<std::uint32_t> vertices;  // those of the triangles around, ascending
  std::vector<std::uint32_t> sub_index(nv);  // a vertex's index among them (set for those only)
  for (std::size_t v = 0; v < nv; ++v)
    if (flag[v] & 4) sub_index[v] = std::uint32_t(vertices.size()), vertices.push_back(std::uint32_t(v));
  TriangleMesh sub;
  sub.positions.resize(3 * vertices.size());
  for (std::size_t k = 0; k < vertices.size(); ++k) std::copy_n(&m.positions[3 * std::size_t(vertices[k])], 3, &sub.positions[3 * k]);
  sub.triangles.resize(3 * around.size());
  for (std::size_t k = 0; k < sub.triangles.size(); ++k)
    sub.triangles[k] = sub_index[m.triangles[3 * std::size_t(around[k / 3]) + k % 3]];
  const HostVector<std::uint32_t> before = sub.triangles;
  const std::int64_t added = split_core(sub, normals_to_lower, threads, to_index);
  if (added == 0) return 0;
  // New vertex k copies the vertex whose corners moved to it.
  const std::size_t total = nv + std::size_t(added);
  m.positions.resize(3 * total);
  if (!m.normals.empty()) m.normals.resize(3 * total);
  if (!m.vertex_values.empty()) m.vertex_values.resize(total);
  for (std::size_t c = 0; c < before.size(); ++c) {
    if (sub.triangles[c] == before[c]) continue;
    const std::size_t copy = nv + (sub.triangles[c] - vertices.size()), from = vertices[before[c]];
    std::copy_n(&m.positions[3 * from], 3, &m.positions[3 * copy]);
    if (!m.normals.empty()) std::copy_n(&m.normals[3 * from], 3, &m.normals[3 * copy]);
    if (!m.vertex_values.empty()) m.vertex_values[copy] = m.vertex_values[from];
    m.triangles[3 * std::size_t(around[c / 3]) + c % 3] = std::uint32_t(copy);
  }
  return added;
}
}  // namespace parasurf::distributed

