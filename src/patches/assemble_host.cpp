// Host assembly of a tessellation: the welded mesh from the plan's vertex numbering and the evaluated samples.
// Seam vertices take the first patch's sample; their normals are clustered by the crease angle; triangles come
// per patch in patch order; closed components are turned to face outward. The device assembly (assemble_cuda.cu)
// gives the same mesh bit for bit (both are compiled without floating-point contraction).
#include <omp.h>

#include <algorithm>
#include <array>
#include <string>

#include "core/memory.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"
#include "patches/assemble_math.hpp"
#include "patches/plan.hpp"

namespace parasurf::patches {

// ---------------------------------------------------------------- assembly
// A plain patch (tensor, not zipped, at least 2 x 2 cells, four distinct uncollapsed edges and corners) has no two
// equal vertices in a triangle, so it makes all 2 nu nv of its grid triangles.
bool plain_patch(const Plan& pl, std::int64_t p) {
  if (pl.model->patches[p].kind != PatchKind::Tensor || pl.zipper[p] || pl.nu[p] < 2 || pl.nv[p] < 2) return false;
  const auto& sides = pl.topo.sides[p];
  const auto& corners = pl.topo.corners[p];
  for (int a = 0; a < 4; ++a) {
    if (pl.topo.edges[sides[a].edge].collapsed) return false;
    for (int b = a + 1; b < 4; ++b)
      if (sides[a].edge == sides[b].edge || corners[a] == corners[b]) return false;
  }
  return true;
}

void check_mesh_size(const Plan& pl) {
  if (pl.vertices >= (std::int64_t(1) << 32))
    throw Error(ErrorKind::InvalidArgument, "the mesh would have " + std::to_string(pl.vertices) +
                                                " vertices, above the 2^32 that 32-bit indices hold; lower the resolution");
  core::check_host_allocation(std::uint64_t(pl.vertices) * 48, "a mesh of " + std::to_string(pl.vertices) + " vertices");
}

// Patches a closed component turned outward (counted against the orientation the topology chose).
void count_flips(const Plan& pl, const std::vector<double>& volume, TessellationReport* rep) {
  if (!rep) return;
  for (std::size_t p = 0; p < pl.topo.component.size(); ++p) {
    const auto c = std::size_t(pl.topo.component[p]);
    const bool outward_flip = pl.topo.component_closed[c] && !volume.empty() && volume[c] < 0;
    rep->flipped_patches += (pl.topo.flipped[p] != 0) != outward_flip;
  }
}

// polyhedra: their own vertices, one flat normal per face (fans of convex faces); then the group names
void append_polyhedra(PatchMesh& mesh, const PatchModel& m, TessellationReport* rep) {
  for (const auto& poly : m.polyhedra) {
    const auto base = std::uint32_t(mesh.positions.size() / 3);
    mesh.positions.insert(mesh.positions.end(), poly.vertices.begin(), poly.vertices.end());
    for (std::size_t f = 0; f + 1 < poly.face_starts.size(); ++f) {
      const auto s0 = poly.face_starts[f], s1 = poly.face_starts[f + 1];
      // Newell's normal of the polygon
      double n[3] = {0, 0, 0};
      for (auto k = s0; k < s1; ++k) {
        const double* a = &poly.vertices[std::size_t(poly.face_indices[k]) * 3];
        const double* b = &poly.vertices[std::size_t(poly.face_indices[k + 1 < s1 ? k + 1 : s0]) * 3];
        n[0] += (a[1] - b[1]) * (a[2] + b[2]);
        n[1] += (a[2] - b[2]) * (a[0] + b[0]);
        n[2] += (a[0] - b[0]) * (a[1] + b[1]);
      }
      const double len = norm3(n);
      const auto slot = std::uint32_t(mesh.normals.size() / 3);
      for (int c = 0; c < 3; ++c) mesh.normals.push_back(len > 0 ? n[c] / len : 0.0);
      for (auto k = s0 + 1; k + 1 < s1; ++k) {
        const std::uint32_t tri[3] = {base + std::uint32_t(poly.face_indices[s0]), base + std::uint32_t(poly.face_indices[k]),
                                      base + std::uint32_t(poly.face_indices[k + 1])};
        if (tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2]) continue;
        mesh.triangles.insert(mesh.triangles.end(), tri, tri + 3);
        mesh.triangle_normals.insert(mesh.triangle_normals.end(), {slot, slot, slot});
        mesh.face_group.push_back(poly.group);
        mesh.face_patch.push_back(-1);
        if (rep) ++rep->polyhedron_faces;
      }
    }
  }
  for (const auto& g : m.groups) mesh.group_names.push_back(g.name);
}

// Seam vertices (corners and edge vertices): every ring sample of every patch contributes; the first (by sample)
// gives the position, the normals are clustered by the crease angle. Allocates the normals (a slot per vertex, then
// one per extra cluster) and fills slot_of_sample for the seam's samples. Returns the vertices with a crease.
template <class T>
std::int64_t weld_seams(const Plan& pl, const SampleStore<T>& st, const TessellationOptions& o, int threads,
                        PatchMesh& mesh, std::vector<std::uint32_t>& slot_of_sample) {
  const PatchModel& m = *pl.model;
  const auto np = std::int64_t(m.patches.size());
  struct Contribution {
    std::int64_t vertex, sample;
  };
  // Seam vertices are the corners and edge vertices, numbered below the first patch interior: a counting sort by
  // vertex, then by sample within each vertex (the first sample gives the position).
  const std::int64_t seam_vertices = np > 0 ? pl.interior_base[0] : pl.topo.corner_count;
  // Both passes run over patches in parallel; where a contribution lands within its vertex's run depends on the
  // threads, and the sort by sample below makes the order deterministic again.
  std::vector<std::int64_t> seam_first(std::size_t(seam_vertices) + 1, 0);
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads)
  for (std::int64_t p = 0; p < np; ++p)
    for (int s = 0; s < patches::side_count(m.patches[p]); ++s)
      for (int k = 0; k < pl.factor(p, s); ++k) {
        std::int64_t& count = seam_first[std::size_t(side_vertex(pl, p, s, k)) + 1];
#pragma omp atomic
        ++count;
      }
  for (std::int64_t v = 0; v < seam_vertices; ++v) seam_first[std::size_t(v) + 1] += seam_first[std::size_t(v)];
  std::vector<Contribution> seam(std::size_t(seam_first.back()));
  {
    std::vector<std::int64_t> fill(seam_first.begin(), seam_first.end() - 1);
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads)
    for (std::int64_t p = 0; p < np; ++p)
      for (int s = 0; s < patches::side_count(m.patches[p]); ++s)
        for (int k = 0; k < pl.factor(p, s); ++k) {
          const std::int64_t v = side_vertex(pl, p, s, k);
          std::int64_t at;
#pragma omp atomic capture
          at = fill[std::size_t(v)]++;
          seam[std::size_t(at)] = {v, side_sample(pl, p, s, k)};
        }
  }
#pragma omp parallel for schedule(dynamic, 1024) num_threads(threads)
  for (std::int64_t v = 0; v < seam_vertices; ++v)
    std::sort(seam.begin() + seam_first[std::size_t(v)], seam.begin() + seam_first[std::size_t(v) + 1],
              [](const Contribution& a, const Contribution& b) { return a.sample < b.sample; });
  const math::CreaseTest crease(math::crease_cosine(o.crease_angle_degrees));
  // seam sample -> normal slot (none: the sample's vertex)
  slot_of_sample.assign(std::size_t(pl.grid_samples + pl.extra_samples), UINT32_MAX);
  // Normals clustered per seam vertex in parallel: the first cluster is the vertex's own slot; further clusters
  // (creases) are gathered per thread in vertex order and numbered after, as a serial sweep would number them.
  // The normals are allocated once their count is known, so the seam's first clusters wait in seam_normals.
  struct Crease {
    std::int64_t vertex;
    double normal[3];               // unit
    std::size_t first, count;       // its samples in the thread's crease_samples
  };
  const int teams = std::max(1, threads);
  std::vector<std::vector<Crease>> creases(static_cast<std::size_t>(teams));
  std::vector<std::vector<std::int64_t>> crease_samples(static_cast<std::size_t>(teams));
  std::vector<double> seam_normals;
  core::resize_for_overwrite(seam_normals, std::size_t(seam_vertices) * 3);
  std::int64_t crease_vertices = 0;
#pragma omp parallel num_threads(teams) reduction(+ : crease_vertices)
  {
    std::vector<std::array<double, 3>> sums;  // greedy clusters: sum of their normals
    std::vector<int> cluster;                 // cluster of each contribution of the vertex
    auto& mine = creases[std::size_t(omp_get_thread_num())];
    auto& my_samples = crease_samples[std::size_t(omp_get_thread_num())];
    // static: each thread's vertices are one ascending block, so the threads' lists in order are in vertex order
#pragma omp for schedule(static)
    for (std::int64_t v = 0; v < seam_vertices; ++v) {
      const auto a = std::size_t(seam_first[std::size_t(v)]), b = std::size_t(seam_first[std::size_t(v) + 1]);
      double* nv = &seam_normals[std::size_t(v) * 3];
      if (a == b) {
        nv[0] = nv[1] = nv[2] = 0.0;
        for (int c = 0; c < 3; ++c) mesh.positions[std::size_t(v) * 3 + c] = 0.0;
        continue;
      }
      for (int c = 0; c < 3; ++c) mesh.positions[std::size_t(v) * 3 + c] = double(st.pos[c][std::size_t(seam[a].sample)]);
      sums.clear();
      cluster.clear();
      for (std::size_t k = a; k < b; ++k) {
        const std::size_t s = std::size_t(seam[k].sample);
        const double n[3] = {double(st.nrm[0][s]), double(st.nrm[1][s]), double(st.nrm[2][s])};
        int hit = -1;
        for (std::size_t c = 0; c < sums.size() && hit < 0; ++c)
          if (crease.joins(sums[c].data(), n)) hit = int(c);
        if (hit < 0) {
          hit = int(sums.size());
          sums.push_back({0, 0, 0});
        }
        for (int c = 0; c < 3; ++c) sums[hit][c] += n[c];
        cluster.push_back(hit);
        if (hit == 0) slot_of_sample[s] = std::uint32_t(v);
      }
      math::unit3(sums[0].data(), nv);
      if (sums.size() > 1) {
        ++crease_vertices;
        for (std::size_t c = 1; c < sums.size(); ++c) {
          Crease cr{v, {0, 0, 0}, my_samples.size(), 0};
          math::unit3(sums[c].data(), cr.normal);
          for (std::size_t k = a; k < b; ++k)
            if (cluster[k - a] == int(c)) my_samples.push_back(seam[k].sample), ++cr.count;
          mine.push_back(cr);
        }
      }
    }
  }
  std::size_t extra = 0;
  for (const auto& list : creases) extra += list.size();
  core::resize_for_overwrite(mesh.normals, (std::size_t(pl.vertices) + extra) * 3);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t k = 0; k < seam_vertices * 3; ++k) mesh.normals[std::size_t(k)] = seam_normals[std::size_t(k)];
  {
    std::size_t slot = std::size_t(pl.vertices);
    for (std::size_t t = 0; t < creases.size(); ++t)
      for (const Crease& cr : creases[t]) {
        std::copy_n(cr.normal, 3, &mesh.normals[slot * 3]);
        for (std::size_t k = cr.first; k < cr.first + cr.count; ++k)
          slot_of_sample[std::size_t(crease_samples[t][k])] = std::uint32_t(slot);
        ++slot;
      }
  }
  return crease_vertices;
}

// Interior vertices come from their patch alone.
template <class T>
void put_interiors(const Plan& pl, const SampleStore<T>& st, int threads, PatchMesh& mesh) {
  const PatchModel& m = *pl.model;
  const auto np = std::int64_t(m.patches.size());
  auto put = [&](std::int64_t v, std::int64_t s) {
    for (int c = 0; c < 3; ++c) {
      mesh.positions[std::size_t(v) * 3 + c] = double(st.pos[c][std::size_t(s)]);
      mesh.normals[std::size_t(v) * 3 + c] = double(st.nrm[c][std::size_t(s)]);
    }
  };
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (std::int64_t p = 0; p < np; ++p) {
    if (m.patches[p].kind == PatchKind::Triangle) {
      const int n = pl.nu[p];
      for (int b = 1; b < n; ++b)
        for (int a = 1; a + b < n; ++a) {
          const Ref r = lattice_ref(pl, p, a, b);
          put(r.vertex, r.sample);
        }
    } else {
      for (int i = 1; i < pl.nu[p]; ++i)
        for (int j = 1; j < pl.nv[p]; ++j) {
          const Ref r = grid_ref(pl, p, i, j);
          put(r.vertex, r.sample);
        }
    }
  }
}

// Triangles, per patch in parallel, concatenated in patch order (counted, then written in place), with their normal
// slots, groups and patches; zero-area ones dropped unless kept.
void make_triangles(const Plan& pl, const TessellationOptions& o, int threads,
                    const std::vector<std::uint32_t>& slot_of_sample, PatchMesh& mesh) {
  const PatchModel& m = *pl.model;
  const auto np = std::int64_t(m.patches.size());
  auto normal_slot = [&](const Ref& r) -> std::uint32_t {
    const std::uint32_t slot = slot_of_sample[std::size_t(r.sample)];
    return slot != UINT32_MAX ? slot : std::uint32_t(r.vertex);
  };
  // triangles, per patch in parallel, concatenated in patch order: counted, then written in place
  // A plain patch (tensor, not zipped, at least 2 x 2 cells, four distinct uncollapsed edges and corners) has no
  // two equal vertices in a triangle, so it makes all 2 nu nv of them; the others are counted by triangulating.
  // The device sizes its buffers by patches::triangles_offered before it counts: every host assembly checks it.
  std::vector<std::int64_t> tri_first(std::size_t(np) + 1, 0);
  int over_bound = 0;
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) reduction(max : over_bound)
  for (std::int64_t p = 0; p < np; ++p) {
    std::int64_t count = 0;
    if (plain_patch(pl, p)) count = 2 * std::int64_t(pl.nu[p]) * pl.nv[p];
    else triangulate_patch(pl, p, [&](const Ref&, const Ref&, const Ref&) { ++count; });
    tri_first[std::size_t(p) + 1] = count;
    if (count > patches::triangles_offered(pl, p)) over_bound = 1;
  }
  if (over_bound)
    throw Error(ErrorKind::InvalidArgument, "internal error in tessellation: a patch made more triangles than its bound");
  for (std::int64_t p = 0; p < np; ++p) tri_first[p + 1] += tri_first[p];
  const std::int64_t nt = tri_first[np];
  core::resize_for_overwrite(mesh.triangles, std::size_t(nt) * 3);
  core::resize_for_overwrite(mesh.triangle_normals, std::size_t(nt) * 3);
  core::resize_for_overwrite(mesh.face_group, std::size_t(nt));
  core::resize_for_overwrite(mesh.face_patch, std::size_t(nt));
  std::vector<std::uint8_t> keep;
  if (!o.keep_degenerate) core::resize_for_overwrite(keep, std::size_t(nt));
  std::int64_t dropped = 0;
  int miscounted = 0;
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) reduction(+ : dropped) reduction(max : miscounted)
  for (std::int64_t p = 0; p < np; ++p) {
    std::size_t t3 = std::size_t(tri_first[p]) * 3;
    const std::size_t end3 = std::size_t(tri_first[p + 1]) * 3;
    triangulate_patch(pl, p, [&](const Ref& a, const Ref& b, const Ref& c) {
      if (t3 == end3) {  // more than counted: never overwrite the next patch's triangles
        miscounted = 1;
        return;
      }
      for (const Ref* r : {&a, &b, &c}) {
        mesh.triangles[t3] = std::uint32_t(r->vertex);
        mesh.triangle_normals[t3++] = normal_slot(*r);
      }
    });
    if (t3 != end3) miscounted = 1;
    for (std::int64_t t = tri_first[p]; t < tri_first[p + 1]; ++t) {
      mesh.face_group[t] = m.patches[p].group;
      mesh.face_patch[t] = std::int32_t(p);
      if (!o.keep_degenerate) {
        const double* a = &mesh.positions[std::size_t(mesh.triangles[3 * t]) * 3];
        const double* b = &mesh.positions[std::size_t(mesh.triangles[3 * t + 1]) * 3];
        const double* c = &mesh.positions[std::size_t(mesh.triangles[3 * t + 2]) * 3];
        const bool zero = math::zero_area(a, b, c);
        keep[t] = !zero;
        dropped += zero;
      }
    }
  }
  if (miscounted)
    throw Error(ErrorKind::InvalidArgument,
                "internal error in tessellation: a patch made another number of triangles than it was counted for");
  if (dropped > 0) {  // compaction only where a zero-area triangle was found
    std::int64_t w = 0;
    for (std::int64_t t = 0; t < nt; ++t) {
      if (!keep[t]) continue;
      for (int c = 0; c < 3; ++c) {
        mesh.triangles[3 * w + c] = mesh.triangles[3 * t + c];
        mesh.triangle_normals[3 * w + c] = mesh.triangle_normals[3 * t + c];
      }
      mesh.face_group[w] = mesh.face_group[t];
      mesh.face_patch[w] = mesh.face_patch[t];
      ++w;
    }
    mesh.triangles.resize(std::size_t(w) * 3);
    mesh.triangle_normals.resize(std::size_t(w) * 3);
    mesh.face_group.resize(std::size_t(w));
    mesh.face_patch.resize(std::size_t(w));
  }
}

// Closed components face outward: those whose signed volume is negative are turned over (nothing to do without
// one).
void orient_components(const Plan& pl, PatchMesh& mesh, TessellationReport* rep) {
  const auto np = std::int64_t(pl.model->patches.size());
  // As the device orients (assemble_math.hpp): per patch in triangle order, then per component in patch order.
  const auto nc = pl.topo.component_closed.size();
  std::vector<double> volume(nc, 0.0);
  const bool any_closed = std::find(pl.topo.component_closed.begin(), pl.topo.component_closed.end(), 1) != pl.topo.component_closed.end();
  const std::int64_t nf = any_closed ? mesh.triangle_count() : 0;
  auto corner = [&](std::int64_t t, int k) { return &mesh.positions[std::size_t(mesh.triangles[3 * t + k]) * 3]; };
  if (any_closed) {
    std::vector<double> sums(std::size_t(np) * 4, 0.0), patch_volume(std::size_t(np), 0.0);
    for (std::int64_t t = 0; t < nf; ++t) math::add_centre_term(&sums[std::size_t(mesh.face_patch[t]) * 4], corner(t, 0));
    const std::vector<double> centre = math::component_centres(np, pl.topo.component.data(), sums.data(), nc);
    for (std::int64_t t = 0; t < nf; ++t) {
      const auto p = std::size_t(mesh.face_patch[t]), c = std::size_t(pl.topo.component[p]);
      if (pl.topo.component_closed[c])
        patch_volume[p] = math::add_volume_term(patch_volume[p], corner(t, 0), corner(t, 1), corner(t, 2), &centre[c * 3]);
    }
    for (std::int64_t p = 0; p < np; ++p) {
      double& v = volume[std::size_t(pl.topo.component[std::size_t(p)])];
      v = math::add(v, patch_volume[std::size_t(p)]);
    }
  }
  std::vector<std::uint8_t> flip_slot(mesh.normals.size() / 3, 0);
  bool any = false;
  for (std::int64_t t = 0; t < nf; ++t) {
    const auto c = std::size_t(pl.topo.component[std::size_t(mesh.face_patch[t])]);
    if (!pl.topo.component_closed[c] || volume[c] >= 0) continue;
    std::swap(mesh.triangles[3 * t + 1], mesh.triangles[3 * t + 2]);
    std::swap(mesh.triangle_normals[3 * t + 1], mesh.triangle_normals[3 * t + 2]);
    for (int k = 0; k < 3; ++k) flip_slot[mesh.triangle_normals[3 * t + k]] = 1;
    any = true;
  }
  if (any)
    for (std::size_t s = 0; s < flip_slot.size(); ++s)
      if (flip_slot[s])
        for (int k = 0; k < 3; ++k) mesh.normals[s * 3 + k] = -mesh.normals[s * 3 + k];
  count_flips(pl, volume, rep);
}

template <class T>
PatchMesh assemble(const Plan& pl, const SampleStore<T>& st, const TessellationOptions& o, TessellationReport* rep) {
  // A team's member 0 assembles alone once the others are done: it may take the node's cores.
  const bool team = o.team && o.team->members > 1;
  const int threads = team && o.team->assembly_threads > 0 ? o.team->assembly_threads : cpu_thread_count(o.threads);
  PatchMesh mesh;
  check_mesh_size(pl);
  core::resize_for_overwrite(mesh.positions, std::size_t(pl.vertices) * 3);
  std::vector<std::uint32_t> slot_of_sample;
  const std::int64_t crease_vertices = weld_seams(pl, st, o, threads, mesh, slot_of_sample);
  put_interiors(pl, st, threads, mesh);
  make_triangles(pl, o, threads, slot_of_sample, mesh);
  if (o.orient) orient_components(pl, mesh, rep);
  append_polyhedra(mesh, *pl.model, rep);
  if (rep) rep->crease_vertices = crease_vertices;
  return mesh;
}

template PatchMesh assemble<float>(const Plan&, const SampleStore<float>&, const TessellationOptions&, TessellationReport*);
template PatchMesh assemble<double>(const Plan&, const SampleStore<double>&, const TessellationOptions&,
                                    TessellationReport*);

}  // namespace parasurf::patches
