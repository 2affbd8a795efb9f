// The host mesh of one level as slabs fill it: its arrays, the room made for them ahead of the slabs (sized from an
// estimate or from the counting pass, faulted in by several threads while the engine runs), and the copies of
// slabs into it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <latch>
#include <limits>
#include <vector>

#include "core/memory.hpp"
#include "isosurface/engine.hpp"
#include "parasurf/distributed.hpp"
#include "parasurf/isosurface.hpp"

namespace parasurf::iso {

// Whether the mesh carries a value per vertex (interpolated scalars or scikit-image's cell ranges).
inline bool vertex_values(const IsosurfaceOptions& o) { return o.scalars != nullptr || o.vertex_ranges; }

struct LevelMesh {
  HostVector<float> positions, normals, values;  // HostVector: the slabs' copies write every element
  HostVector<std::uint32_t> triangles;
  std::vector<std::int32_t> labels;
  std::vector<std::uint64_t> ties;
  bool point_vertices = false;  // some vertex sits on a sample equal to the level (it may have lost its triangles)
  bool tie_vertices = false;    // some vertex sits on a sample equal to the level (the level set may pinch there)
  // The vertices that may lie on a sample, ascending, when every slab's engine listed them (near_listed).
  std::vector<std::uint64_t> near_samples;
  bool near_listed = false;
  // What the slabs wrote: the arrays may be longer (sized ahead, reserve_expected_mesh) until trim().
  std::uint64_t vertices = 0, triangle_count = 0;
  void trim() {
    positions.resize(3 * vertices);
    if (!normals.empty()) normals.resize(3 * vertices);
    triangles.resize(3 * triangle_count);
  }
};

// Room for n values: arrays sized ahead serve as they are, others grow as slabs come. `likely_scale` > 1 reserves
// room for what is likely to come, but pages are faulted in only for what came: a guess too high costs address
// space, not memory (faulting in the whole guess held 8x the mesh for a surface in the first of 8 slabs).
template <class T, class A> void make_room(std::vector<T, A>& v, std::size_t n, double likely_scale = 1) {
  if (n <= v.size()) return;
  if (n > v.capacity() && likely_scale > 1) v.reserve(std::max(n, std::size_t(double(n) * likely_scale)));
  if (n > v.capacity()) {
    core::resize_for_overwrite(v, n);
    return;
  }
  core::prefault(v.data() + v.size(), std::uint64_t(n - v.size()) * sizeof(T));
  v.resize(n);
}

// Ties can fold two sheets onto the same samples: identical triangles then come in pairs that cancel. Returns how
// many triangles were removed.
std::int64_t remove_duplicate_ties(LevelMesh& m);

// The levels' meshes as one, cleaned up as a run returns it (join_levels.cpp); `meshes` are emptied.
TriangleMesh join_levels(std::vector<LevelMesh>& meshes, const std::vector<double>& levels, const IsosurfaceOptions& o,
                         const distributed::WorldToIndex& to_index, IsosurfaceReport& rep);

// Marching cubes makes about two triangles and one vertex per active cell (the surface's Euler characteristic is
// small next to its size); the estimate of active cells comes from the cost pass of the load balance.
// Host bytes of a mesh of `vertices` and `triangles` with the outputs the options ask for.
std::uint64_t host_mesh_bytes(const IsosurfaceOptions& o, std::uint64_t vertices, std::uint64_t triangles);

// `base` (a mesh's first vertex and triangle) moved to vertex v0 and triangle t0.
MeshTail tail_from(const MeshTail& base, std::uint64_t v0, std::uint64_t t0);
// Where a slab's mesh lands in `m`: from vertex v0 and triangle t0, the arrays the options ask for.
MeshTail tail_at(LevelMesh& m, std::uint64_t v0, std::uint64_t t0, const IsosurfaceOptions& o);

// The exact size of a level mesh, once every slab is counted: room made ahead stops there.
struct RoomCap {
  std::atomic<std::uint64_t> vertices{std::numeric_limits<std::uint64_t>::max()};
  std::atomic<std::uint64_t> triangles{std::numeric_limits<std::uint64_t>::max()};
};

// A level mesh's arrays sized for `vertices` and `triangles` (or `cap`, once it is known), so that slabs written into
// them later only write. Zeroing (vector::resize) is one thread's work per array, so each array gets a thread of its
// own, the triangles (the largest) first. The arrays grow in `pieces`, and with `grown` the room made so far is told
// after each (where the arrays start, the vertices and triangles): growing within the reserved room moves nothing, so
// slabs may write below the room while the rest grows.
void size_ahead(LevelMesh& m, std::uint64_t vertices, std::uint64_t triangles, const IsosurfaceOptions& o, int pieces = 1,
                const std::function<void(const MeshTail&, std::uint64_t, std::uint64_t)>& grown = {},
                const RoomCap* cap = nullptr);

// Slab `part`'s arrays copied to `to` (which has room), its vertex ids shifted by `shift`, in pieces of at most 2^18
// vertices or triangles so that every core copies (a slab per thread left most idle). Slabs may copy into their
// places at once; their ties are the caller's.
void copy_slab_into(const LevelMesh& part, const MeshTail& to, std::uint32_t shift);

// The size of the pieces in which several GPUs' level meshes are made room for (set_room_piece_bytes, for tests).
extern std::atomic<std::uint64_t> room_piece_bytes;

// Whether a level mesh of `triangles` (and half as many vertices) may be sized ahead: a guess, so at most half the
// host memory available.
bool may_size_ahead(const IsosurfaceOptions& o, std::uint64_t triangles);

// Counts a latch down once: when called, or else as it goes (an early return or an exception).
struct CountDownOnce {
  std::latch& latch;
  bool done = false;
  void operator()() {
    if (!done) latch.count_down();
    done = true;
  }
  ~CountDownOnce() { (*this)(); }
};

// The mesh's expected size (given, or estimated from a built-in field's formula), counted down on `estimated` as soon
// as it is known (or none is); then, with `size_it`, the level mesh sized ahead for it, counted down on `sized`.
// (Latches, not a join: the thread's exit takes its OpenMP threads down, which takes milliseconds.)
void reserve_expected_mesh(VolumeSource& volume, const IsosurfaceOptions& o, std::int64_t zb, std::int64_t ze, LevelMesh& m,
                           double& seconds, std::uint64_t& expected, std::latch& estimated, std::latch& sized, bool size_it);

}  // namespace parasurf::iso
