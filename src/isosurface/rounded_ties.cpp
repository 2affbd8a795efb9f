// A sample a rounding away from the level (a level-set function that is zero up to 1e-16 there, as analytic fields
// sampled on a grid often are) is not a tie: each edge crossing next to it gets its own vertex. But the crossing's
// parameter is below half a unit in the last place of the float index coordinate, so every such vertex lands exactly
// on the sample, and the triangles between them have zero area. Without degenerate triangles, they are the same
// vertex, as an exact tie would give: this pass welds vertices of one part (level) that lie on one sample at
// bitwise the same position, then drops the triangles that repeat a vertex and cancels coincident pairs, as for
// exact ties (the pinch pass after it keeps the result 2-manifold). scikit-image's allow_degenerate=False does the
// same merge (Lewiner et al., "Efficient implementation of marching cubes' cases with topological guarantees",
// Journal of Graphics Tools 8(2), 2003).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "isosurface/near_sample.hpp"
#include "isosurface/part.hpp"


namespace parasurf::distributed {
using namespace parasurf::iso;

namespace {

// The exact test of a vertex the coarse one passed: all three index coordinates whole within the rounding of its
// float position (only bitwise-equal positions are welded, so a crossing near a sample but not on it stays).
struct ExactOnSample {
  const double* o;
  const double* inv;
  double row[3];  // index units per world unit, by axis (the rounding of a float position, mapped to index units)
  const std::vector<std::uint64_t>& part_starts;
  std::uint64_t base;
  bool operator()(const TriangleMesh& m, std::uint64_t v, RoundedCandidate& c) const {
    const float* q = &m.positions[3 * std::size_t(v)];
    const double d[3] = {double(q[0]) - o[0], double(q[1]) - o[1], double(q[2]) - o[2]};
    const double size = std::abs(double(q[0])) + std::abs(double(q[1])) + std::abs(double(q[2]));
    for (int a = 0; a < 3; ++a) {
      const double x = inv[3 * a] * d[0] + inv[3 * a + 1] * d[1] + inv[3 * a + 2] * d[2];
      if (!(std::abs(x - std::nearbyint(x)) <= 1e-3 + size * row[a])) return false;
      c.key[1 + a] = std::int64_t(std::nearbyint(x));
    }
    c.key[0] = std::int64_t(std::upper_bound(part_starts.begin(), part_starts.end(), v) - part_starts.begin());
    std::memcpy(c.bits, q, sizeof c.bits);
    c.v = base + v;
    return true;
  }
};

}  // namespace

std::vector<RoundedCandidate> rounded_candidates(const TriangleMesh& m, int threads, const WorldToIndex& to_index,
                                                 const std::vector<std::uint64_t>& part_starts, std::uint64_t base) {
  const std::size_t nv = std::size_t(m.vertex_count());
  threads = std::max(1, threads);
  std::vector<std::vector<RoundedCandidate>> found(static_cast<std::size_t>(threads));
  ExactOnSample exact{to_index.origin, to_index.inverse, {}, part_starts, base};
  const NearSampleProbe probe = near_sample_probe(to_index, exact.row);
  constexpr std::int64_t kBlock = 512;
  const std::int64_t blocks = (std::int64_t(nv) + kBlock - 1) / kBlock;
#pragma omp parallel num_threads(threads)
  {
    auto& mine = found[std::size_t(omp_get_thread_num())];
    std::uint8_t on[kBlock];
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t v0 = b * kBlock, n = std::min<std::int64_t>(kBlock, std::int64_t(nv) - v0);
      const float* p = &m.positions[3 * std::size_t(v0)];
      // The coarse test first, branch-free so that it vectorises eight wide (most vertices are a crossing on no
      // sample); the few it passes are tested exactly.
#pragma omp simd
      for (std::int64_t i = 0; i < n; ++i) on[i] = near_sample(probe, p + 3 * i, kNearCoarseBase);
      RoundedCandidate c{};
      for (std::int64_t i = 0; i < n; ++i)
        if (on[i] && exact(m, std::uint64_t(v0 + i), c)) mine.push_back(c);
    }
  }
  std::vector<RoundedCandidate> all;
  for (auto& f : found) all.insert(all.end(), f.begin(), f.end());
  return all;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> rounded_moves(std::vector<RoundedCandidate>& candidates) {
  std::sort(candidates.begin(), candidates.end(), [](const RoundedCandidate& a, const RoundedCandidate& b) {
    if (!std::equal(a.key, a.key + 4, b.key)) return std::lexicographical_compare(a.key, a.key + 4, b.key, b.key + 4);
    if (!std::equal(a.bits, a.bits + 3, b.bits)) return std::lexicographical_compare(a.bits, a.bits + 3, b.bits, b.bits + 3);
    return a.v < b.v;
  });
  // Each group of two or more becomes its last (highest) vertex: a rank's triangles may refer to later ranks'
  // vertices, never to earlier ones.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> moves;
  for (const auto& [a, b] : iso::rounded_groups(candidates))
    for (std::size_t c = a; c + 1 < b; ++c) moves.push_back({candidates[c].v, candidates[b - 1].v});
  std::sort(moves.begin(), moves.end());
  return moves;
}

WeldedTriangles apply_rounded_moves(TriangleMesh& m, std::uint64_t base,
                                    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& moves, int threads) {
  WeldedTriangles out;
  if (moves.empty()) return out;
  threads = std::max(1, threads);
  // The vertices of the groups (ids from base), marked: 1 in a group, 2 moved away.
  std::uint64_t top = 0;
  for (const auto& [from, to] : moves) top = std::max(top, to);
  std::vector<std::uint8_t> mark(std::size_t(top + 1 - std::min(top + 1, base)), 0);
  for (const auto& [from, to] : moves) {
    if (to >= base) mark[std::size_t(to - base)] |= 1;
    if (from >= base) mark[std::size_t(from - base)] = 2;
  }
  const std::size_t nt = std::size_t(m.triangle_count());
  std::vector<std::vector<std::uint64_t>> touched(static_cast<std::size_t>(threads)), degenerate(touched.size());
#pragma omp parallel num_threads(threads)
  {
    auto& mine = touched[std::size_t(omp_get_thread_num())];
    auto& flat = degenerate[std::size_t(omp_get_thread_num())];
#pragma omp for schedule(static)
    for (std::int64_t t = 0; t < std::int64_t(nt); ++t) {
      std::uint32_t* c = &m.triangles[3 * std::size_t(t)];
      bool hit = false;
      for (int q = 0; q < 3; ++q) {
        if (c[q] >= mark.size() || !mark[c[q]]) continue;
        hit = true;
        if (mark[c[q]] == 2)
          c[q] = std::uint32_t(std::lower_bound(moves.begin(), moves.end(), std::pair{base + c[q], std::uint64_t(0)})->second - base);
      }
      if (!hit) continue;
      (c[0] == c[1] || c[1] == c[2] || c[0] == c[2] ? flat : mine).push_back(std::uint64_t(t));
    }
  }
  for (auto& list : touched) out.touched.insert(out.touched.end(), list.begin(), list.end());
  for (auto& list : degenerate) out.degenerate.insert(out.degenerate.end(), list.begin(), list.end());
  return out;
}

void drop_triangles(TriangleMesh& m, const std::vector<std::uint64_t>& drop) {
  if (drop.empty()) return;
  const std::size_t nt = std::size_t(m.triangle_count());
  auto compact = [&](auto& per_face, std::size_t per) {
    if (per_face.empty()) return;
    std::size_t w = 0, d = 0;
    for (std::size_t t = 0; t < nt; ++t) {
      if (d < drop.size() && drop[d] == t) {
        ++d;
        continue;
      }
      if (w != t) std::copy_n(&per_face[per * t], per, &per_face[per * w]);
      ++w;
    }
    per_face.resize(per * w);
  };
  compact(m.triangles, 3);
  compact(m.face_groups, 1);
  compact(m.face_labels, 1);
  compact(m.face_outer_labels, 1);
}
}  // namespace parasurf::distributed

namespace parasurf::iso {

std::vector<std::pair<std::size_t, std::size_t>> rounded_groups(const std::vector<RoundedCandidate>& sorted) {
  auto same = [](const RoundedCandidate& a, const RoundedCandidate& b) {
    return std::equal(a.key, a.key + 4, b.key) && std::equal(a.bits, a.bits + 3, b.bits);
  };
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  for (std::size_t a = 0; a < sorted.size();) {
    std::size_t b = a + 1;
    while (b < sorted.size() && same(sorted[a], sorted[b])) ++b;
    if (b - a >= 2) groups.push_back({a, b});
    a = b;
  }
  return groups;
}

std::vector<std::uint64_t> weld_moves(TriangleMesh& m, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& moves,
                                      int threads, RoundedTies& counts, std::vector<std::uint64_t>* dropped) {
  const std::uint64_t nv = std::uint64_t(m.vertex_count());
  WeldedTriangles w = apply_rounded_moves(m, 0, moves, threads);
  std::vector<std::uint32_t> corners;
  for (const std::uint64_t t : w.touched) corners.insert(corners.end(), &m.triangles[3 * t], &m.triangles[3 * t] + 3);
  std::vector<std::uint64_t> drop = coincident_tie_drops(corners, w.touched);
  counts.vertices_welded += std::int64_t(moves.size());
  counts.degenerate_dropped += std::int64_t(w.degenerate.size());
  counts.coincident_dropped += std::int64_t(drop.size());
  drop.insert(drop.end(), w.degenerate.begin(), w.degenerate.end());
  std::sort(drop.begin(), drop.end());
  std::vector<std::uint64_t> maybe;
  for (const auto& mv : moves) maybe.push_back(mv.first);
  for (const std::uint64_t t : drop)
    for (int q = 0; q < 3; ++q)
      if (m.triangles[3 * t + std::size_t(q)] < nv) maybe.push_back(m.triangles[3 * t + std::size_t(q)]);
  std::sort(maybe.begin(), maybe.end());
  maybe.erase(std::unique(maybe.begin(), maybe.end()), maybe.end());
  drop_triangles(m, drop);
  if (dropped) *dropped = std::move(drop);
  return maybe;
}

std::vector<RoundedCandidate> listed_rounded_candidates(const TriangleMesh& m, const std::vector<std::uint64_t>& listed,
                                                        const WorldToIndex& to_index,
                                                        const std::vector<std::uint64_t>& part_starts) {
  distributed::ExactOnSample exact{to_index.origin, to_index.inverse, {}, part_starts, 0};
  near_sample_probe(to_index, exact.row);
  std::vector<RoundedCandidate> found;
  RoundedCandidate c{};
  for (const std::uint64_t v : listed)
    if (v < std::uint64_t(m.vertex_count()) && exact(m, v, c)) found.push_back(c);
  return found;
}

RoundedTies weld_rounded_crossings(TriangleMesh& m, int threads, const WorldToIndex& to_index,
                                   const std::vector<std::uint64_t>& part_starts,
                                   const std::vector<std::uint64_t>* listed) {
  RoundedTies out;
  const std::size_t nv = std::size_t(m.vertex_count());
  if (m.triangle_count() == 0 || nv < 2) return out;
  std::vector<RoundedCandidate> candidates = listed ? listed_rounded_candidates(m, *listed, to_index, part_starts)
                                                    : rounded_candidates(m, threads, to_index, part_starts, 0);
  if (candidates.size() < 2) return out;
  const auto moves = rounded_moves(candidates);
  if (moves.empty()) return out;
  weld_moves(m, moves, threads, out);
  // The welded vertices, and any whose triangles all went, are removed (order kept).
  const std::vector<std::uint64_t> unused = unreferenced_vertices(m.triangles, 0, std::uint64_t(nv));
  remove_vertices(m, 0, unused, unused);
  return out;
}

}  // namespace parasurf::iso
