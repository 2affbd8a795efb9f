// One slab of marching cubes, the same two calls on every backend: count (classify points, count vertices and
// triangles per row, scan), then generate (write vertices and triangles into pre-sized arrays).
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "isosurface/field_value.hpp"
#include "isosurface/mc_kernels.hpp"
#include "isosurface/near_sample.hpp"
#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"
#include "parasurf/volume.hpp"

namespace parasurf::iso {

// The level the engines classify against so that samples equal to `level` count as outside: the smallest value of
// the engines' arithmetic for this sample type (float, or double for float64 samples) above it. Vertices move by
// less than a unit in the last place.
inline double level_above(double level, VoxelType type) {
  if (type == VoxelType::Float64) {
    const double n = std::nextafter(level, HUGE_VAL);
    return std::isfinite(n) ? n : level;
  }
  const float f = float(level);
  const float n = double(f) > level ? f : std::nextafter(f, HUGE_VALF);
  return std::isfinite(n) ? double(n) : level;
}

// The level the engines classify integer samples against when samples equal to `level` count as inside and
// degenerate triangles are kept: the largest value below it, so that no sample lies on the level (simulation of
// simplicity). Every tie then gives each crossing edge its own vertex, and the mesh stays 2-manifold where a shared
// vertex at the sample would pinch it; the triangles at such samples have zero area.
inline double level_below(double level, VoxelType type) {
  if (type == VoxelType::Float64) {
    const double n = std::nextafter(level, -HUGE_VAL);
    return std::isfinite(n) ? n : level;
  }
  const float f = float(level);
  const float n = double(f) < level ? f : std::nextafter(f, -HUGE_VALF);
  return std::isfinite(n) ? double(n) : level;
}

// What the engines classify a caller's level against, and whether samples equal to that lie on it (ties). A sample
// equal to the engine level of a shifted level lies strictly beyond the caller's level: plainly inside, no tie.
struct EngineLevel {
  double level;
  bool ties;
};
inline EngineLevel engine_level(double level, VoxelType type, bool ties_outside, bool keep_degenerate) {
  if (ties_outside) return {level_above(level, type), false};
  if (!keep_degenerate) return {level, true};
  // Ties inside with every crossing its own vertex: the level itself, on the level counting as inside and no sample
  // a tie, where the engines compare in the samples' type (for float32 the smallest float not below it); integers
  // compare against a threshold that takes the level below it, which no sample can equal.
  if (type == VoxelType::Float64) return {level, false};
  if (type == VoxelType::Float32) {
    const float f = float(level);
    return {double(f) >= level ? double(f) : double(std::nextafter(f, HUGE_VALF)), false};
  }
  return {level_below(level, type), false};
}

// A caller's mesh arrays on the CUDA engine's device, with room for `vertex_room` vertices and `triangle_room`
// triangles: count() writes the mesh into them directly when it fits (wrote_direct()), and generate() then copies
// nothing that already lies there. For runs without labels or scalars.
struct DirectMesh {
  float* positions = nullptr;
  float* normals = nullptr;  // with task normals
  float* values = nullptr;   // with task ranges
  std::uint32_t* triangles = nullptr;
  std::uint64_t vertex_room = 0, triangle_room = 0;
};

struct SlabTask {
  VoxelType type = VoxelType::Float32;
  const void* data = nullptr;           // host samples of slices [data_z0, data_z1)
  bool device_samples = false;          // data lies on the CUDA engine's device already (a caller's GPU array)
  int field = -1;                       // or a built-in field (float32) the engine computes on these slices itself
  std::array<double, 3> origin{}, spacing{};  // the field's sample grid
  const std::int32_t* labels = nullptr;  // optional label volume on the same slices: a label per triangle
  const float* scalars = nullptr;        // optional second volume on the same slices: a value per vertex
  std::int64_t data_z0 = 0, data_z1 = 0;
  std::array<std::int64_t, 3> dims{};
  std::int64_t z0 = 0, z1 = 0;          // points [z0, z1) own this slab's vertices; cells [z0, min(z1, nz−1))
  std::uint64_t vertex_base = 0;        // global id of this slab's first vertex (a GPU may write the mesh in count())
  double level = 0;
  // Whether samples equal to `level` lie on it (EngineLevel::ties); vertices interpolate at vertex_level, the
  // caller's level (NaN: `level`).
  bool ties = true;
  double vertex_level = std::numeric_limits<double>::quiet_NaN();
  double interpolation_level() const { return std::isnan(vertex_level) ? level : vertex_level; }
  mc::WorldMap map{};
  bool decider = false, tunnels = false, keep_degenerate = false, flip = false, normals = true;  // tunnels: MC33
  // Instead of scalars: each vertex's value is scikit-image's (mc::point_ranges), against the caller's level.
  bool ranges = false;
  float range_level = 0;
  // Active: the mesh is welded where crossings rounded onto a sample, and an engine that can lists the vertices
  // that may lie on one (near_sample_vertices) so that the weld tests those alone.
  NearSampleProbe near_probe;
  DirectMesh direct;  // optional (positions null: none)
  bool vertex_values() const { return scalars != nullptr || ranges; }
};

struct SlabCounts {
  std::uint64_t vertices = 0, triangles = 0;
};

struct MeshTail {
  float* positions = nullptr;         // this slab's first vertex
  float* normals = nullptr;           // or nullptr
  std::uint32_t* triangles = nullptr;  // this slab's first triangle
  std::int32_t* face_labels = nullptr;  // with task labels: this slab's first triangle's label
  float* values = nullptr;              // with task scalars: this slab's first vertex's value
};

struct StageSeconds {
  double upload = 0, classify = 0, scan = 0, generate = 0, download = 0;
};

class SlabEngine {
 public:
  virtual ~SlabEngine() = default;
  virtual std::string name() const = 0;
  // A GPU engine may also write the slab's mesh on the device here, when its arrays hold it: generate() then only
  // brings it home, and the host waits once instead of twice.
  virtual SlabCounts count(const SlabTask& task) = 0;
  // With the same task as count(). Appends the slab-relative indices of triangles that touch a sample on the level
  // (candidates for duplicates).
  virtual void generate(const SlabTask& task, const MeshTail& out, std::vector<std::uint64_t>& tie_triangles) = 0;
  // Several slab workers (GPUs): generate() with the mesh kept by the engine under `slot` (slab-relative vertex ids),
  // until fetch() brings it home once its place in the joined mesh is known, its vertex ids shifted by
  // `vertex_shift`. hold() returns false, having kept nothing, when there is no room for it (the caller then uses
  // generate() into host arrays); an engine that does not override it never holds.
  virtual bool hold(const SlabTask& task, std::size_t slot, std::vector<std::uint64_t>& tie_triangles) {
    (void)task, (void)slot, (void)tie_triangles;
    return false;
  }
  virtual void fetch(std::size_t slot, const MeshTail& out, std::uint32_t vertex_shift) {
    (void)slot, (void)out, (void)vertex_shift;
  }
  virtual StageSeconds seconds() const = 0;
  // Whether count() times its passes apart for seconds() (on by default). A GPU engine then records events between
  // them, which cost it microseconds a slab, a large share of a small volume's time; a caller that
  // times the whole call may turn it off. Upload, generate and download times are kept either way.
  virtual void time_stages(bool on) { (void)on; }
  // The vertices of the last generate() (ids from the slab's first, ascending) that may lie on a sample by the
  // task's near_probe; false when they were not listed (no active probe, a mesh left on the device, an engine that
  // does not list, too many to list), and then every vertex is tested.
  virtual bool near_sample_vertices(std::vector<std::uint32_t>& ids) {
    (void)ids;
    return false;
  }
  // Whether the last generate() may have left a vertex unused: only a vertex at a sample on the level can be, when
  // every triangle around it collapses and is dropped. (The CPU engine, when it settles ties in its count pass,
  // leaves none.)
  virtual bool point_vertices() const = 0;
  // Whether the last count() wrote the mesh into the task's DirectMesh (a GPU engine whose run fitted it).
  virtual bool wrote_direct() const { return false; }
  // Whether the last generate() placed a vertex on a sample equal to the level at all (where the level set may
  // pinch); true when the engine cannot tell.
  virtual bool tie_vertices() const { return true; }
  // Coincident tie triangles the engine dropped itself, in all slabs so far (it then lists none of them as ties).
  virtual std::uint64_t coincident_removed() const { return 0; }
  // Makes the task's samples ready for count() (on a GPU: resident on the device, from a finished prefetch when
  // it matches). Then prefetch() may start on another thread with the next task, while this one is processed.
  virtual void stage(const SlabTask& task) { (void)task; }
  virtual void prefetch(const SlabTask& next) { (void)next; }
  // Allocates ahead what a slab like `largest` needs (on a GPU: its samples, work arrays, and the mesh arrays of about
  // `expected_triangles`), so that the engine's start-up, not the first slab, pays for it. Arrays still grow as needed.
  virtual void prepare(const SlabTask& largest, std::uint64_t expected_triangles) { (void)largest, (void)expected_triangles; }
  // Bytes of work arrays per point of a slab (beyond the samples) whose rows hold nx points, for slab sizing.
  virtual double work_bytes_per_point(std::int64_t nx) const = 0;
  // Before the engine serves another run: forgets what the runs so far left (samples known by their host address,
  // times, flags, held slabs), and lets its arrays go when they hold more than `keep_bytes` of the device.
  virtual void reset(std::uint64_t keep_bytes) { (void)keep_bytes; }
};

// What every slab of a run shares (samples, slices and level are set per slab). `field`: a built-in field the
// engine computes itself, or -1.
SlabTask make_task(const VolumeGeometry& geometry, VoxelType type, const IsosurfaceOptions& options, int field);

std::unique_ptr<SlabEngine> make_cpu_engine(int threads);

// The error for a level outside the data range [lo, hi] of the volume `name` (lo > hi: no sample is a number).
Error level_outside_range(const std::string& name, double level, double lo, double hi);

// Built-in fields the CUDA engine computes itself (the gyroid's sines would differ from the host's).
inline bool field_on_device(const VolumeSource& volume, Device device) {
  return device == Device::Cuda && !volume.resident_data() && volume.builtin_field() >= 0 &&
         volume.builtin_field() != kGyroid;
}
// The CPU engine's threads for a volume of `points`: `requested` when set, else all but at most one per 8192 points
// (waking a team costs more than a small volume's work). Passes after the engine use the same team.
int cpu_engine_threads(int requested, std::int64_t points);
// Tests: false makes the CPU engine list its ties for the pass over the whole mesh, as the CUDA engine does, instead
// of resolving them in its count pass (the two must give the same mesh).
void set_cpu_local_ties(bool on);
// Tests: false makes the CPU engine make every vertex point by point (mc::point_vertices) instead of the float
// volumes' crossings eight at a time (cpu_vertices.hpp); the two must give the same mesh to the bit.
void set_cpu_batched_vertices(bool on);
// Whether one-engine runs list the vertices near samples for the weld (extract.cpp; tests compare with the whole scan).
void set_near_sample_listing(bool on);
// Tests: the bytes of slab meshes a CPU engine holds at most (hold()); beyond, it refuses, as a GPU out of memory.
void set_cpu_hold_limit(std::uint64_t bytes);
// The CUDA backend (engine_cuda.cu; only in builds with CUDA).
std::unique_ptr<SlabEngine> make_cuda_engine(int device);
// Tests: false makes marching_cubes_array on a CUDA array copy every mesh into result arrays of its own size instead
// of having the engine write it straight into arrays sized by the last mesh of the shape (the two must give the same
// mesh). array_cuda.cu; only in builds with CUDA.
void set_direct_array_meshes(bool on);
// A process keeps one idle CUDA engine per GPU between runs: making one (streams, events, tables, pinned totals) and
// its device arrays costs as much as a 256^3 volume's whole extraction. take_ gives the kept engine, reset, or a new
// one while another run holds it; keep_ keeps an engine whose run ended (its arrays let go beyond an eighth of the
// device's memory, at most 1 GiB), or frees it when one is kept already.
std::unique_ptr<SlabEngine> take_cuda_engine(int device);
void keep_cuda_engine(int device, std::unique_ptr<SlabEngine> engine);
std::uint64_t cuda_engine_free_memory(int device);
void* cuda_engine_pinned_alloc(std::size_t bytes);
void cuda_engine_pinned_free(void* p);

// The one place an engine is chosen: the CPU's with `cpu_threads`, or GPU `gpu`'s (Error(Device) in a build
// without CUDA).
std::unique_ptr<SlabEngine> make_engine(Device device, int gpu, int cpu_threads);
// Free device memory in bytes for slab sizing (0 without CUDA).
std::uint64_t cuda_free_memory(int device);
// Page-locked host memory, so that slab uploads run at the link's speed; nullptr without CUDA or when the system
// refuses (the caller then uses ordinary memory).
void* pinned_host_alloc(std::size_t bytes);
void pinned_host_free(void* p);

// Host bytes for slab samples: pinned when asked and possible, else ordinary.
class SlabHostBuffer {
 public:
  SlabHostBuffer() = default;
  SlabHostBuffer(const SlabHostBuffer&) = delete;
  SlabHostBuffer& operator=(const SlabHostBuffer&) = delete;
  ~SlabHostBuffer() { release(); }
  void allocate(std::size_t bytes, bool pinned) {
    release();
    if (bytes == 0) return;
    if (pinned) pinned_ = static_cast<char*>(pinned_host_alloc(bytes));
    if (!pinned_) {
      // Left unset: every slab's read writes what the engine uses, and a generator's threads fault its pages in as
      // they write. Zeroing a whole-volume slab on one thread first would take a third of a small run, and faulting it
      // in ahead with all threads is slower still.
      plain_.reset(new char[bytes]);
    }
    size_ = bytes;
  }
  char* data() { return pinned_ ? pinned_ : plain_.get(); }
  std::size_t size() const { return size_; }
  bool pinned() const { return pinned_ != nullptr; }

 private:
  void release() {
    if (pinned_) pinned_host_free(pinned_);
    pinned_ = nullptr;
    plain_.reset();
    size_ = 0;
  }
  char* pinned_ = nullptr;
  std::unique_ptr<char[]> plain_;
  std::size_t size_ = 0;
};

}  // namespace parasurf::iso
