// Pinches at ties on a mesh spread over MPI ranks, split exactly as one process splits them (manifold_ties.cpp).
// The pass looks only at the vertices on samples and their neighbours, and at the triangles around those (their
// 2-ring): those triangles go to rank 0 with their corners' positions, in the global order of ids, and the pass run
// there gives the one-process result (its choices depend only on those triangles and that order). Rank 0 sends back
// the corners that moved to a new vertex and which vertex each new one copies; the copies come after every other
// vertex, as one process appends them, held by the last rank's last level.
#include <algorithm>
#include <cmath>

#include "mpi_common.hpp"
#include "parasurf/device.hpp"

namespace parasurf::cli::mpi {

// One function: one exchange (gather to rank 0, the pass there, the moves sent back) whose halves share the
// per-level marks and id maps built at its start.
void split_pinches_across_ranks(std::vector<distributed::IsosurfacePart>& parts, const IsosurfaceOptions& o, const VolumeGeometry& g,
                                std::int64_t zb, std::vector<std::uint64_t>& own_v, const std::vector<std::uint64_t>& v_base,
                                std::vector<std::uint64_t>& total_v, const std::vector<std::uint64_t>& t_base,
                                std::uint64_t& all_v, IsosurfaceReport& rep) {
  const std::size_t levels = parts.size();
  const distributed::WorldToIndex to_index = distributed::world_to_index_map(g);
  const int threads = cpu_thread_count(o.threads);
  // The level holding global vertex id v on this rank, or levels when another rank holds it.
  auto level_of = [&](std::uint64_t v) {
    for (std::size_t L = 0; L < levels; ++L)
      if (v >= v_base[L] && v < v_base[L] + own_v[L]) return L;
    return levels;
  };
  // Whether own vertex v of level L lies in this rank's first plane of points (the previous rank's last cells use
  // the vertices there; no other vertex of this rank is used by another rank's triangles).
  auto first_plane = [&](std::size_t L, std::size_t v) {
    const float* p = &parts[L].mesh.positions[3 * v];
    const double* inv = to_index.inverse + 6;
    const double z = inv[0] * (double(p[0]) - to_index.origin[0]) + inv[1] * (double(p[1]) - to_index.origin[1]) +
                     inv[2] * (double(p[2]) - to_index.origin[2]);
    return std::abs(z - double(zb)) < 0.5;
  };
  // 1: on a sample; 2: next to one (a corner of a triangle with a corner on a sample).
  std::vector<std::vector<std::uint8_t>> flag(levels);
  std::vector<std::uint64_t> on_first;
  for (std::size_t L = 0; L < levels; ++L) {
    distributed::pinch_candidates(parts[L].mesh, threads, to_index, flag[L]);
    for (std::size_t v = 0; v < flag[L].size(); ++v)
      if (flag[L][v] && first_plane(L, v)) on_first.push_back(v_base[L] + v);
  }
  on_first = all_gather(on_first, MPI_UINT64_T, "sharing the vertices on samples");
  std::sort(on_first.begin(), on_first.end());
  auto listed = [](const std::vector<std::uint64_t>& ids, std::uint64_t v) { return std::binary_search(ids.begin(), ids.end(), v); };
  std::vector<std::uint64_t> far_marks;  // other ranks' vertices next to a sample through this rank's triangles
  for (std::size_t L = 0; L < levels; ++L) {
    const auto& t = parts[L].mesh.triangles;
    auto& f = flag[L];
    for (std::size_t k = 0; k < t.size(); k += 3) {
      bool near = false;
      for (int q = 0; q < 3; ++q) near = near || (t[k + q] < f.size() ? (f[t[k + q]] & 1) != 0 : listed(on_first, v_base[L] + t[k + q]));
      if (!near) continue;
      for (int q = 0; q < 3; ++q) {
        if (t[k + q] < f.size()) f[t[k + q]] |= 2;
        else far_marks.push_back(v_base[L] + t[k + q]);
      }
    }
  }
  for (const std::uint64_t v : all_gather(far_marks, MPI_UINT64_T, "sharing the vertices next to samples"))
    if (const std::size_t L = level_of(v); L < levels) flag[L][v - v_base[L]] |= 2;
  std::vector<std::uint64_t> looked_at;  // this rank's first-plane vertices the pass looks at
  for (std::size_t L = 0; L < levels; ++L)
    for (std::size_t v = 0; v < flag[L].size(); ++v)
      if (flag[L][v] && first_plane(L, v)) looked_at.push_back(v_base[L] + v);
  looked_at = all_gather(looked_at, MPI_UINT64_T, "sharing the vertices next to samples");
  std::sort(looked_at.begin(), looked_at.end());
  // The triangles around them, with global ids and corners, to rank 0.
  std::vector<std::uint64_t> ids, corners;
  for (std::size_t L = 0; L < levels; ++L) {
    const auto& t = parts[L].mesh.triangles;
    const auto& f = flag[L];
    for (std::size_t k = 0; k < t.size(); k += 3) {
      bool around = false;
      for (int q = 0; q < 3; ++q) around = around || (t[k + q] < f.size() ? f[t[k + q]] != 0 : listed(looked_at, v_base[L] + t[k + q]));
      if (!around) continue;
      ids.push_back(t_base[L] + k / 3);
      for (int q = 0; q < 3; ++q) corners.push_back(v_base[L] + t[k + q]);
    }
  }
  ids = all_gather(ids, MPI_UINT64_T, "gathering the triangles at ties", 0);
  corners = all_gather(corners, MPI_UINT64_T, "gathering the triangles at ties", 0);
  // Their corners' positions, from the ranks that hold them.
  std::vector<std::uint64_t> needed;
  if (g_rank == 0) {
    needed = corners;
    std::sort(needed.begin(), needed.end());
    needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  }
  broadcast(needed, MPI_UINT64_T, "asking for positions");
  std::vector<std::uint64_t> held;
  std::vector<float> held_at;
  for (const std::uint64_t v : needed)
    if (const std::size_t L = level_of(v); L < levels) {
      held.push_back(v);
      const float* p = &parts[L].mesh.positions[3 * (v - v_base[L])];
      held_at.insert(held_at.end(), p, p + 3);
    }
  held = all_gather(held, MPI_UINT64_T, "gathering positions", 0);
  held_at = all_gather(held_at, MPI_FLOAT, "gathering positions", 0);
  // Rank 0: the pass on the gathered triangles, in the order of their ids, vertices in the order of theirs.
  std::vector<std::uint64_t> sources;  // the vertex each new one copies
  std::vector<std::uint64_t> moved;    // (triangle id, corner 0..2, new vertex k) triples
  if (g_rank == 0) {
    TriangleMesh sub;
    sub.positions.resize(3 * needed.size());
    for (std::size_t k = 0; k < held.size(); ++k) {
      const auto at = std::size_t(std::lower_bound(needed.begin(), needed.end(), held[k]) - needed.begin());
      std::copy_n(&held_at[3 * k], 3, &sub.positions[3 * at]);
    }
    std::vector<std::size_t> order(ids.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
    for (const std::size_t k : order)
      for (int q = 0; q < 3; ++q)
        sub.triangles.push_back(
            std::uint32_t(std::lower_bound(needed.begin(), needed.end(), corners[3 * k + std::size_t(q)]) - needed.begin()));
    const HostVector<std::uint32_t> before = sub.triangles;
    const std::int64_t added =
        distributed::split_pinched_vertices(sub, o.direction == GradientDirection::Descent, threads, to_index);
    sources.assign(std::size_t(added), 0);
    for (std::size_t c = 0; c < before.size(); ++c)
      if (sub.triangles[c] != before[c]) {
        const std::uint64_t k = sub.triangles[c] - needed.size();
        sources[std::size_t(k)] = needed[before[c]];
        moved.insert(moved.end(), {ids[order[c / 3]], std::uint64_t(c % 3), k});
      }
  }
  broadcast(sources, MPI_UINT64_T, "sharing the split vertices");
  if (sources.empty()) return;
  broadcast(moved, MPI_UINT64_T, "sharing the split vertices");
  // The copies: the ranks holding their sources send position, normal and value to the last rank.
  const bool normals = !parts[0].mesh.normals.empty(), values = !parts[0].mesh.vertex_values.empty();
  std::vector<std::uint64_t> copy_ids;
  std::vector<float> copy_data;  // 7 per copy: position, normal, value
  for (std::size_t k = 0; k < sources.size(); ++k)
    if (const std::size_t L = level_of(sources[k]); L < levels) {
      const TriangleMesh& m = parts[L].mesh;
      const std::size_t v = std::size_t(sources[k] - v_base[L]);
      copy_ids.push_back(k);
      copy_data.insert(copy_data.end(), &m.positions[3 * v], &m.positions[3 * v] + 3);
      for (int c = 0; c < 3; ++c) copy_data.push_back(normals ? m.normals[3 * v + std::size_t(c)] : 0.0f);
      copy_data.push_back(values ? m.vertex_values[v] : 0.0f);
    }
  const int last = g_size - 1;
  copy_ids = all_gather(copy_ids, MPI_UINT64_T, "sending the split vertices", last);
  copy_data = all_gather(copy_data, MPI_FLOAT, "sending the split vertices", last);
  const std::uint64_t first_copy = all_v;  // (the last rank's last level ends there)
  if (g_rank == last) {
    TriangleMesh& m = parts[levels - 1].mesh;
    const std::size_t at = std::size_t(m.vertex_count());
    m.positions.resize(3 * (at + sources.size()));
    if (normals) m.normals.resize(3 * (at + sources.size()));
    if (values) m.vertex_values.resize(at + sources.size());
    for (std::size_t j = 0; j < copy_ids.size(); ++j) {
      const std::size_t v = at + std::size_t(copy_ids[j]);
      std::copy_n(&copy_data[7 * j], 3, &m.positions[3 * v]);
      if (normals) std::copy_n(&copy_data[7 * j + 3], 3, &m.normals[3 * v]);
      if (values) m.vertex_values[v] = copy_data[7 * j + 6];
    }
    own_v[levels - 1] += sources.size();
  }
  // The corners that moved, on the ranks holding their triangles.
  for (std::size_t j = 0; j < moved.size(); j += 3)
    for (std::size_t L = 0; L < levels; ++L) {
      const auto nt = std::uint64_t(parts[L].mesh.triangle_count());
      if (moved[j] < t_base[L] || moved[j] >= t_base[L] + nt) continue;
      parts[L].mesh.triangles[3 * (moved[j] - t_base[L]) + moved[j + 1]] = std::uint32_t(first_copy + moved[j + 2] - v_base[L]);
    }
  total_v[levels - 1] += sources.size();
  all_v += sources.size();
  rep.pinched_vertices_split = std::int64_t(sources.size());
}

}  // namespace parasurf::cli::mpi
