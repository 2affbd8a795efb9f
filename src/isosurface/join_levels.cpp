// The levels' meshes of a run as one mesh, as the library returns it: levels in order (ids shifted, a face group
// per level), coincident tie triangles cancelled, vertices no triangle uses removed, crossings that rounding put on
// a sample welded (rounded_ties.cpp), pinches at ties split (manifold_ties.cpp), excluded labels dropped and the
// (level, label) groups named and coloured.
#include <algorithm>
#include <string>
#include <utility>

#include "isosurface/level_mesh.hpp"
#include "isosurface/part.hpp"
#include "parasurf/device.hpp"

namespace parasurf::iso {

TriangleMesh join_levels(std::vector<LevelMesh>& meshes, const std::vector<double>& levels, const IsosurfaceOptions& o,
                         const WorldToIndex& to_index, IsosurfaceReport& rep) {
  TriangleMesh out;
  std::uint64_t nv = 0, nt = 0;
  bool maybe_unused = false;  // some vertex may have lost all its triangles
  bool maybe_pinched = false;  // some vertex sits on a sample equal to the level, where the level set may pinch
  std::vector<std::uint64_t> part_starts;  // the first vertex of each level after the first
  // The vertices that may lie on a sample, when every level's engine listed them: the weld tests those alone.
  bool listed = !o.keep_degenerate;
  std::vector<std::uint64_t> near;
  for (auto& m : meshes) {
    if (&m != &meshes.front()) part_starts.push_back(nv);
    listed = listed && m.near_listed;
    if (listed)
      for (const std::uint64_t v : m.near_samples) near.push_back(nv + v);
    const std::int64_t dropped = remove_duplicate_ties(m);
    rep.duplicates_removed += dropped;
    maybe_unused = maybe_unused || (m.point_vertices && !o.keep_degenerate) || dropped > 0;
    maybe_pinched = maybe_pinched || m.tie_vertices;
    nv += m.positions.size() / 3;
    nt += m.triangles.size() / 3;
  }
  if (meshes.size() == 1) {
    out.positions = std::move(meshes[0].positions);
    out.normals = std::move(meshes[0].normals);
    out.triangles = std::move(meshes[0].triangles);
    out.vertex_values = std::move(meshes[0].values);
    out.face_labels = std::move(meshes[0].labels);
  } else {
    out.positions.reserve(3 * nv);
    if (o.normals) out.normals.reserve(3 * nv);
    out.triangles.reserve(3 * nt);
    out.face_groups.reserve(nt);
    std::uint32_t shift = 0;
    for (std::size_t L = 0; L < meshes.size(); ++L) {
      auto& m = meshes[L];
      out.positions.insert(out.positions.end(), m.positions.begin(), m.positions.end());
      out.normals.insert(out.normals.end(), m.normals.begin(), m.normals.end());
      out.vertex_values.insert(out.vertex_values.end(), m.values.begin(), m.values.end());
      out.face_labels.insert(out.face_labels.end(), m.labels.begin(), m.labels.end());
      for (auto v : m.triangles) out.triangles.push_back(v + shift);
      out.face_groups.insert(out.face_groups.end(), m.triangles.size() / 3, std::int32_t(L));
      out.group_names.push_back(level_group_name(levels[L]));
      shift += std::uint32_t(m.positions.size() / 3);
      m = LevelMesh{};
    }
  }
  if (maybe_unused) {
    // A sample on the level whose triangles all collapsed (and were dropped) leaves a vertex no triangle uses.
    const std::vector<std::uint64_t> unused = unreferenced_vertices(out.triangles, 0, std::uint64_t(out.vertex_count()));
    remove_vertices(out, 0, unused, unused);
    listed = listed && unused.empty();  // (the listed ids would have moved)
  }
  if (!o.keep_degenerate) {
    const RoundedTies w = weld_rounded_crossings(
        out, cpu_thread_count_for(o.threads, out.vertex_count(), std::int64_t(1) << 15), to_index,
        part_starts, listed ? &near : nullptr);
    rep.rounded_ties_welded = w.vertices_welded;
    rep.degenerate_removed = w.degenerate_dropped;
    rep.duplicates_removed += w.coincident_dropped;
    maybe_pinched = maybe_pinched || w.vertices_welded > 0;
  }
  if (maybe_pinched && o.split_pinches)
    rep.pinched_vertices_split =
        split_pinched_vertices(out, o.direction == GradientDirection::Descent,
                                    cpu_thread_count_for(o.threads, out.vertex_count(), std::int64_t(1) << 16),
                                    to_index);
  if (o.labels) {
    exclude_labels(out, o.exclude_labels);
    // Groups: the (level, label) pairs in order, each with its label's colour.
    const std::size_t nt = out.face_labels.size();
    std::vector<std::pair<std::int32_t, std::int32_t>> pairs(nt);
    for (std::size_t t = 0; t < nt; ++t)
      pairs[t] = {out.face_groups.empty() ? 0 : out.face_groups[t], out.face_labels[t]};
    std::vector<std::pair<std::int32_t, std::int32_t>> distinct = pairs;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    out.face_groups.resize(nt);
    for (std::size_t t = 0; t < nt; ++t)
      out.face_groups[t] =
          std::int32_t(std::lower_bound(distinct.begin(), distinct.end(), pairs[t]) - distinct.begin());
    out.group_names.clear();
    out.group_colors.clear();
    for (const auto& [L, label] : distinct) {
      out.group_names.push_back((levels.size() > 1 ? level_group_name(levels[std::size_t(L)]) + " " : std::string()) +
                                "label " + std::to_string(label));
      const auto c = label_color(label);
      out.group_colors.insert(out.group_colors.end(), c.begin(), c.end());
    }
  }
  if (out.triangles.empty()) {  // samples on the level whose triangles all collapsed leave vertices: none is used
    out.positions.clear();
    out.normals.clear();
    out.vertex_values.clear();
  }
  return out;
}

}  // namespace parasurf::iso
