// Parts of an isosurface for runs split across processes: the public steps are in parasurf/distributed.hpp; these
// are the library's own (the several-GPU scheduler's test hooks, whole-run clean-up passes).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parasurf/distributed.hpp"
#include "parasurf/isosurface.hpp"

namespace parasurf::distributed {
// A corner of a triangle at a vertex on a sample: the vertex, and the triangle's next and previous vertices.
struct FanCorner {
  std::uint32_t v, next, prev;
};
// Whether every vertex listed is a plain closed fan: each of its triangles' next vertex is exactly one other
// triangle's previous one, following that visits all of them, and there are three or more. There no sheets meet,
// nor along an edge from there (such an edge breaks the fans at both ends), and split_pinched_vertices changes
// nothing. With open_too, one open fan passes as well (a vertex at the volume's border): a chain from the one
// triangle no other precedes through all the others, each next vertex some other's previous one once at most.
// Sorts the list by vertex.
bool plain_fans(std::vector<FanCorner>& corners, bool open_too = false);
}  // namespace parasurf::distributed

namespace parasurf::iso {

using distributed::apply_rounded_moves;
using distributed::coincident_tie_drops;
using distributed::drop_triangles;
using distributed::extract_isosurface_parts;
using distributed::FanCorner;
using distributed::IsosurfacePart;
using distributed::layer_costs;
using distributed::level_group_name;
using distributed::pinch_candidates;
using distributed::plain_fans;
using distributed::remove_vertices;
using distributed::rounded_candidates;
using distributed::rounded_moves;
using distributed::RoundedCandidate;
using distributed::split_pinched_vertices;
using distributed::unreferenced_vertices;
using distributed::WeldedTriangles;
using distributed::world_to_index_map;
using distributed::WorldToIndex;

// The several-GPU scheduler (slabs to whichever worker is free, held by the worker until their places in the joined
// mesh are known) run with `workers` CPU engines sharing the cores, so that tests check it where no second GPU is.
TriangleMesh extract_isosurface_on_cpu_workers(VolumeSource& volume, const IsosurfaceOptions& options, int workers,
                                               IsosurfaceReport* report = nullptr);

// The several-GPU scheduler makes room ahead for the mesh in pieces of about this many bytes (64 MiB; tests set less
// so that small meshes come home while the room grows too).
void set_room_piece_bytes(std::uint64_t bytes);

// Drops the triangles of excluded labels and the vertices no remaining triangle uses (order kept).
void exclude_labels(TriangleMesh& m, const std::vector<std::int32_t>& excluded);

// Welds the vertices of one part that crossings a rounding from a sample put on that sample at bitwise the same
// position (rounded_ties.cpp), then drops the triangles that repeat a vertex, cancels coincident pairs and removes
// the vertices left unused. part_starts: the first vertex of each part after the first (levels are not welded
// together). The steps for meshes spread over processes are rounded_candidates, rounded_moves, apply_rounded_moves.
struct RoundedTies {
  std::int64_t vertices_welded = 0, degenerate_dropped = 0, coincident_dropped = 0;
};
// listed: the vertices that may lie on a sample, ascending, as the engines found them where they made the mesh (else
// every vertex is tested).
RoundedTies weld_rounded_crossings(TriangleMesh& m, int threads, const WorldToIndex& to_index,
                                   const std::vector<std::uint64_t>& part_starts,
                                   const std::vector<std::uint64_t>* listed = nullptr);
// The candidates among the listed vertices (ids of m, ascending), as rounded_candidates finds them among all.
std::vector<RoundedCandidate> listed_rounded_candidates(const TriangleMesh& m, const std::vector<std::uint64_t>& listed,
                                                        const WorldToIndex& to_index,
                                                        const std::vector<std::uint64_t>& part_starts);
// Its steps, for a mesh welded piece by piece (stream_ply.cpp). The groups of candidates that rounded_moves sorted:
// [first, end) of each run at one sample and position, two or more long.
std::vector<std::pair<std::size_t, std::size_t>> rounded_groups(const std::vector<RoundedCandidate>& sorted);
// The moves (of m's own vertices, ids from 0) applied, the triangles that then repeat a vertex dropped and
// coincident pairs cancelled (order kept), the counts added to `counts`. Returns the vertices that may be left
// unused: those moved away and the dropped triangles' corners among m's vertices, ascending. `dropped`: the dropped
// triangles' ids before the drop, ascending.
std::vector<std::uint64_t> weld_moves(TriangleMesh& m,
                                      const std::vector<std::pair<std::uint64_t, std::uint64_t>>& moves, int threads,
                                      RoundedTies& counts, std::vector<std::uint64_t>* dropped = nullptr);

// Cells crossing each level in each cell layer z of [z_begin, z_end), summed over the levels (the cheap first pass
// of the load balance): the middle layer of every stride is counted and stands for all of them.
std::vector<std::int64_t> active_cells_per_slice(VolumeSource& volume, const std::vector<double>& levels,
                                                 std::int64_t z_begin, std::int64_t z_end, std::int64_t stride = 1);

}  // namespace parasurf::iso
