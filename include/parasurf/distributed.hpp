// The steps of an isosurface extraction spread over processes, for a driver that owns the communication (the CLI's
// MPI runs, apps/parasurf/mpi_runs.cpp, or any other transport). Each process extracts the part of the volume whose
// grid points [z_begin, z_end) own the vertices; vertex ids become global by adding the vertices of the parts before
// it; triangles that may cancel (samples equal to the level), crossings a rounding put on a sample, and vertices no
// triangle uses are settled with the functions below on data the driver exchanges; the binary PLY records of every
// part can then be written at their offsets of one file. Done in that order, the result is byte for byte the mesh
// one process makes with extract_isosurface.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "parasurf/io.hpp"
#include "parasurf/isosurface.hpp"
#include "parasurf/volume.hpp"

namespace parasurf::distributed {

struct IsosurfacePart {
  // Vertex ids start at 0, the part's first vertex (the caller adds the vertices before the part as it writes).
  // Triangles of the last cell layer refer to the next part's first vertices by ids that continue past this
  // part's own (mesh.vertex_count()).
  TriangleMesh mesh;
  std::vector<std::uint64_t> ties;  // triangles that may cancel with a coincident one (samples equal to the level)
  bool point_vertices = false;      // a vertex sits on a sample equal to the level: it may be used by no triangle
  bool tie_vertices = false;        // a vertex sits on a sample equal to the level (where the level set may pinch)
};

// One part per level of options.levels (which must be given), scalars as vertex values, labels as face labels
// (no excluded labels, no groups: the caller groups over all parts); any engine (CPU, one GPU), streamed slab by
// slab within the part, every level from one read of each slab. With keep_engine, the engine (and its device
// memory) is handed to the caller to release when it suits (by resetting the pointer), instead of before returning:
// a process may release it while the mesh is written.
std::vector<IsosurfacePart> extract_isosurface_parts(VolumeSource& volume, const IsosurfaceOptions& options,
                                                     std::int64_t z_begin, std::int64_t z_end,
                                                     IsosurfaceReport* report = nullptr,
                                                     std::shared_ptr<void>* keep_engine = nullptr);

// The cost of each cell layer of [z_begin, z_end) for balancing processes, summed over the levels: the cells that
// cross a level (the middle layer of every `stride` stands for all of them), or, for a built-in field, the active
// cells among every k-th cell in x and y times k^2, from the field's formula (k = min(nx, ny) / 512, at least 1,
// larger where the layers counted would pass about a million cells per thread, or `cell_budget` cells in all where
// one is given).
std::vector<std::int64_t> layer_costs(VolumeSource& volume, const IsosurfaceOptions& options, std::int64_t z_begin,
                                      std::int64_t z_end, std::int64_t stride = 1, std::uint64_t cell_budget = 0);

// The face group name a whole run gives a level when it extracts several ("level 0.5").
std::string level_group_name(double level);

// Which tie triangles cancel (sorted ids): coincident ones (the same three vertices) in pairs, an odd group keeping
// its first. corners: the three global vertex ids of each tie, in the order of `ids` (every part's ties gathered).
std::vector<std::uint64_t> coincident_tie_drops(const std::vector<std::uint32_t>& corners,
                                                const std::vector<std::uint64_t>& ids);

// Removes the triangles of the ascending ids `drop` with their per-face values (order kept).
void drop_triangles(TriangleMesh& m, const std::vector<std::uint64_t>& drop);

// World to index coordinates of a grid.
struct WorldToIndex {
  double inverse[9];  // of the index-to-world jacobian, row-major
  double origin[3];   // world position of index (0, 0, 0)
};
WorldToIndex world_to_index_map(const VolumeGeometry& g);

// Makes the mesh 2-manifold where the level set pinches at a sample equal to the level: a vertex whose triangles
// form several fans becomes one vertex per fan, edges shared by more than two triangles pair them across their
// outside wedges. `normals_to_lower`: triangles are wound around normals that point to lower values; `to_index`:
// world to index coordinates (vertices on samples are found by it). Returns the vertices added. Its result depends
// only on the triangles around vertices on samples and their order, so a driver may gather those in one process.
std::int64_t split_pinched_vertices(TriangleMesh& m, bool normals_to_lower, int threads, const WorldToIndex& to_index);
// Its first step: examined[v] = 1 where vertex v lies on a sample (where the pass looks, with its neighbours);
// returns how many do.
std::int64_t pinch_candidates(const TriangleMesh& m, int threads, const WorldToIndex& to_index,
                              std::vector<std::uint8_t>& examined);

// Crossings that a rounding from a sample put on that sample are welded into one vertex across parts. A vertex on a
// sample: (part, sample i, j, k), its position's bits and its global id (base + its index).
struct RoundedCandidate {
  std::int64_t key[4];
  std::uint32_t bits[3];
  std::uint32_t unused;
  std::uint64_t v;
};
// part_starts: the first vertex of each level's part after the first (levels are not welded together).
std::vector<RoundedCandidate> rounded_candidates(const TriangleMesh& m, int threads, const WorldToIndex& to_index,
                                                 const std::vector<std::uint64_t>& part_starts, std::uint64_t base);
// (welded id, the id it becomes), sorted: each group of candidates at one sample and position becomes its highest
// id. Run on every process's candidates gathered.
std::vector<std::pair<std::uint64_t, std::uint64_t>> rounded_moves(std::vector<RoundedCandidate>& candidates);
// Moves the corners (corner c is vertex base + c); lists the triangles that then repeat a vertex, and the others at
// a group's vertices (where coincident pairs may have formed), ascending.
struct WeldedTriangles {
  std::vector<std::uint64_t> degenerate, touched;
};
WeldedTriangles apply_rounded_moves(TriangleMesh& m, std::uint64_t base,
                                    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& moves, int threads);

// Vertices of ids [first, first + count) that no corner in `triangles` refers to, ascending. With `beyond`, the same
// pass lists the distinct corners past them (first + count and up), ascending.
std::vector<std::uint64_t> unreferenced_vertices(std::span<const std::uint32_t> triangles, std::uint64_t first,
                                                 std::uint64_t count, std::vector<std::uint32_t>* beyond = nullptr);

// Removes this mesh's vertices of the ascending ids `own_removed` (its first vertex has id `first`; a triangle
// corner v stands for vertex first + v, past the mesh's own vertices too) and renumbers every corner v to v minus
// the ids of `all_removed` in [first, first + v) (the removed vertices of every part that shares the numbering;
// `own_removed` is part of it).
void remove_vertices(TriangleMesh& m, std::uint64_t first, const std::vector<std::uint64_t>& own_removed,
                     const std::vector<std::uint64_t>& all_removed);

// The binary PLY layout parasurf writes (write_mesh): a header, then fixed-size vertex and face records, so that
// every process can pack its records and write them at their offsets of one file.
struct PlyLayout {
  bool normals = false, values = false, groups = false, colors = false, labels = false, outer_labels = false;
  bool ascii = false;  // the header's format line only: records are written by the text writer

  static PlyLayout of(const TriangleMesh& mesh);  // the properties the mesh's arrays hold
  std::size_t vertex_bytes() const { return 12 + (normals ? 12 : 0) + (values ? 4 : 0); }
  std::size_t face_bytes() const {
    return 13 + (groups ? 4 : 0) + (labels ? 4 : 0) + (outer_labels ? 4 : 0) + (colors ? 3 : 0);
  }
  std::string header(std::uint64_t vertices, std::uint64_t faces, const std::vector<std::string>& group_names) const;
  // Records of vertices [v0, v1) and faces [t0, t1) of `mesh` into `out`; face indices shifted by `index_shift`.
  void pack_vertices(const TriangleMesh& mesh, std::int64_t v0, std::int64_t v1, char* out) const;
  void pack_faces(const TriangleMesh& mesh, std::int64_t t0, std::int64_t t1, std::uint32_t index_shift,
                  char* out) const;
};

}  // namespace parasurf::distributed
