// Parts of an isosurface for runs split across processes (MPI ranks): each part owns the vertices of the grid
// points [z_begin, z_end) and the triangles of the cell layers that start there, in the canonical order of a whole
// run, so concatenating the parts (vertex ids shifted by the vertices before each part) gives the whole run's mesh.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parasurf/isosurface.hpp"

namespace parasurf::iso {

class SlabEngine;

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
// (no excluded labels, no groups: the caller groups over all parts); any engine
// (CPU, one GPU), streamed slab by slab within the part, every level from one read of each slab.
// With keep_engine, the engine (and its device memory) is handed to the caller to release when it suits, instead of
// before returning: an MPI rank releases it while the mesh is written.
std::vector<IsosurfacePart> extract_isosurface_parts(VolumeSource& volume, const IsosurfaceOptions& options, std::int64_t z_begin,
                                                    std::int64_t z_end, IsosurfaceReport* report = nullptr,
                                                    std::unique_ptr<SlabEngine>* keep_engine = nullptr);

// The several-GPU scheduler (slabs to whichever worker is free, held by the worker until their places in the joined
// mesh are known) run with `workers` CPU engines sharing the cores, so that tests check it where no second GPU is.
TriangleMesh extract_isosurface_on_cpu_workers(VolumeSource& volume, const IsosurfaceOptions& options, int workers,
                                              IsosurfaceReport* report = nullptr);

// The several-GPU scheduler makes room ahead for the mesh in pieces of about this many bytes (64 MiB; tests set less
// so that small meshes come home while the room grows too).
void set_room_piece_bytes(std::uint64_t bytes);

// The face group name a whole run gives a level when it extracts several ("level 0.5").
std::string level_group_name(double level);

// Drops the triangles of excluded labels and the vertices no remaining triangle uses (order kept).
void exclude_labels(TriangleMesh& m, const std::vector<std::int32_t>& excluded);

// Which tie triangles cancel (sorted ids): coincident ones (the same three vertices) in pairs, an odd group keeping
// its first. corners: the three vertex ids of each tie, in the order of ids.
std::vector<std::uint64_t> coincident_tie_drops(const std::vector<std::uint32_t>& corners, const std::vector<std::uint64_t>& ids);

// Makes the mesh 2-manifold where the level set pinches at a sample equal to the level (manifold_ties.cpp): a vertex
// whose triangles form several fans becomes one vertex per fan, edges shared by more than two triangles pair them
// across their outside wedges. `normals_to_lower`: triangles are wound around normals that point to lower values;
// `to_index`: world to index coordinates (vertices on samples are found by it). Returns the vertices added.
struct WorldToIndex {
  double inverse[9];  // of the index-to-world jacobian, row-major
  double origin[3];   // world position of index (0, 0, 0)
};
std::int64_t split_pinched_vertices(TriangleMesh& m, bool normals_to_lower, int threads, const WorldToIndex& to_index);
// Its first step: examined[v] = 1 where vertex v lies on a sample (where the pass looks, with its neighbours);
// returns how many do.
std::int64_t pinch_candidates(const TriangleMesh& m, int threads, const WorldToIndex& to_index,
                              std::vector<std::uint8_t>& examined);

// Welds the vertices of one part that crossings a rounding from a sample put on that sample at bitwise the same
// position (rounded_ties.cpp), then drops the triangles that repeat a vertex, cancels coincident pairs and removes
// the vertices left unused. part_starts: the first vertex of each part after the first (levels are not welded
// together).
struct RoundedTies {
  std::int64_t vertices_welded = 0, degenerate_dropped = 0, coincident_dropped = 0;
};
RoundedTies weld_rounded_crossings(TriangleMesh& m, int threads, const WorldToIndex& to_index,
                                   const std::vector<std::uint64_t>& part_starts);
// Its steps, for meshes spread over processes. A vertex on a sample: (part, sample i, j, k), its position's bits
// and its id (base + its index).
struct RoundedCandidate {
  std::int64_t key[4];
  std::uint32_t bits[3];
  std::uint32_t unused;
  std::uint64_t v;
};
std::vector<RoundedCandidate> rounded_candidates(const TriangleMesh& m, int threads, const WorldToIndex& to_index,
                                                 const std::vector<std::uint64_t>& part_starts, std::uint64_t base);
// (welded id, the id it becomes), sorted: each group of candidates at one sample and position becomes its highest id.
std::vector<std::pair<std::uint64_t, std::uint64_t>> rounded_moves(std::vector<RoundedCandidate>& candidates);
// Moves the corners (corner c is vertex base + c); lists the triangles that then repeat a vertex, and the others
// at a group's vertices (where coincident pairs may have formed), ascending.
struct WeldedTriangles {
  std::vector<std::uint64_t> degenerate, touched;
};
WeldedTriangles apply_rounded_moves(TriangleMesh& m, std::uint64_t base,
                                    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& moves, int threads);
// Removes the triangles of the ascending ids `drop` with their per-face values (order kept).
void drop_triangles(TriangleMesh& m, const std::vector<std::uint64_t>& drop);
// World to index coordinates of a grid.
WorldToIndex world_to_index_map(const VolumeGeometry& g);

// Vertices of ids [first, first + count) that no corner in `triangles` refers to, ascending. Marks in parallel.
// With `beyond`, the same pass lists the distinct corners past them (first + count and up), ascending.
std::vector<std::uint64_t> unreferenced_vertices(const std::vector<std::uint32_t>& triangles, std::uint64_t first,
                                                 std::uint64_t count, std::vector<std::uint32_t>* beyond = nullptr);

// Removes this mesh's vertices of the ascending ids `own_removed` (its first vertex has id `first`; a triangle
// corner v stands for vertex first + v, past the mesh's own vertices too) and renumbers every corner v to v minus
// the ids of `all_removed` in [first, first + v) (the removed vertices of every mesh that shares the numbering;
// `own_removed` is part of it). Both passes run on all threads.
void remove_vertices(TriangleMesh& m, std::uint64_t first, const std::vector<std::uint64_t>& own_removed,
                     const std::vector<std::uint64_t>& all_removed);

// Cells crossing each level in each cell layer z of [z_begin, z_end), summed over the levels (the cheap first pass
// of the load balance): the middle layer of every stride is counted and stands for all of them.
std::vector<std::int64_t> active_cells_per_slice(VolumeSource& volume, const std::vector<double>& levels, std::int64_t z_begin,
                                                 std::int64_t z_end, std::int64_t stride = 1);

// The cost of each cell layer for balancing ranks, summed over the levels: active cells as above, or, for a built-in
// field, the active cells among every k-th cell in x and y times k^2, from the field's formula (k = min(nx, ny) / 512,
// at least 1, larger where the layers counted would pass about a million cells per thread, or `cell_budget` cells
// in all where one is given).
std::vector<std::int64_t> layer_costs(VolumeSource& volume, const IsosurfaceOptions& options, std::int64_t z_begin,
                                      std::int64_t z_end, std::int64_t stride = 1, std::uint64_t cell_budget = 0);

}  // namespace parasurf::iso
