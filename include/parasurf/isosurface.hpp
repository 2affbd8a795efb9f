// Marching-cubes isosurfaces: welded, oriented meshes with gradient normals, from any VolumeSource, on the CPU
// (threads) or CUDA, slab by slab so that volumes larger than memory stream through.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "parasurf/array.hpp"
#include "parasurf/device.hpp"
#include "parasurf/io.hpp"
#include "parasurf/volume.hpp"

namespace parasurf {

enum class GradientDirection { Descent, Ascent };  // as scikit-image: descent = normals toward lower values
// classic: a fixed rule on ambiguous faces; decider: the asymptotic decider on faces; mc33: the decider on faces
// and tunnels through the cell interior where the trilinear interpolant has them (topologically correct).
enum class CaseTopology { Classic, Decider, Mc33 };

GradientDirection parse_gradient_direction(const std::string& name);  // "descent" | "ascent"
CaseTopology parse_case_topology(const std::string& name);            // "classic" | "decider" | "mc33"

struct IsosurfaceOptions {
  std::vector<double> levels;  // empty: the middle of the data range (one extra pass over the data)
  GradientDirection direction = GradientDirection::Descent;
  CaseTopology topology = CaseTopology::Classic;
  // Samples equal to a level (ties counted inside) are taken as just above it, so that the mesh is 2-manifold, with
  // triangles of about zero area there, instead of sharing one vertex and dropping the triangles that collapse.
  bool keep_degenerate = false;
  // A sample equal to a level counts as inside by default; true: as outside (scikit-image's rule, inside means
  // greater than the level), so that a binary mask at level 0 gives its surface.
  bool ties_outside = false;
  // Where the level set pinches at a sample on the level (ties inside), the vertex there becomes one vertex per
  // sheet, so that the mesh is 2-manifold; false keeps one vertex per sample (non-manifold there), as MPI runs do.
  bool split_pinches = true;
  bool normals = true;
  bool normals_down = false;  // normals down the gradient whatever the direction (scikit-image's convention)
  Device device = Device::Auto;
  // Several GPUs (indices): slabs go to whichever is free and the seams are welded; empty: the first GPU.
  std::vector<int> cuda_devices;
  int threads = 0;                  // CPU threads, 0 = all
  std::int64_t slab_slices = 0;     // z-slices per slab, 0 = from the memory budget
  std::uint64_t memory_budget = 0;  // bytes for one slab's samples and work arrays, 0 = automatic
  std::function<void(double)> progress;  // fraction done, called between slabs
  // Object identification (Rogeiro 2011's tag volume): an integer volume on the same grid gives each triangle the
  // label of its cell (the most frequent label among the cell's inside corners, the smaller one on a tie).
  VolumeSource* labels = nullptr;
  std::vector<std::int32_t> exclude_labels;  // triangles with these labels are dropped (needs labels)
  // A second volume on the same grid, interpolated to every vertex (mesh.vertex_values).
  VolumeSource* scalars = nullptr;
  // Instead of scalars: each vertex's value (mesh.vertex_values) is scikit-image's, the largest range
  // max(v − level, 0) − min(v − level, 0) of the samples of a cell with a triangle at the vertex (NaN where such a
  // cell has a NaN sample).
  bool vertex_ranges = false;
  // Triangles expected (one level), e.g. from a cost pass: the host mesh is reserved and faulted in while the engine
  // starts (a GPU's start takes a while). 0: on a GPU, estimated from a built-in field's formula, else not reserved.
  std::uint64_t expected_triangles = 0;
  // Called once the engine has started (GPU context, buffers), before the first slab: MPI runs meet there.
  std::function<void()> started;
};

// A distinct colour per label from a built-in table (label 0 grey; 1–20 a qualitative table; beyond, hues spread
// by the golden angle). Linear RGB in [0, 1].
std::array<float, 3> label_color(std::int32_t label);

// Where an isosurface run's time went, for benchmarks and tuning: the stages' names follow the engines and may
// change between versions (the mesh and the report's other fields do not depend on them).
struct IsosurfaceProfile {
  double seconds_classify = 0, seconds_scan = 0, seconds_generate = 0;  // the engine's passes (summed over slabs)
  double seconds_copy = 0, seconds_upload = 0, seconds_download = 0;    // host<->device: the sum and its halves
  double seconds_setup = 0;            // engine start (a CUDA context) and buffers, before the first slab
  double seconds_engine_start = 0;     // making the engine (a CUDA context, its tables), within seconds_setup
  double seconds_host_mesh = 0;        // growing the host mesh arrays for each slab's output (several GPUs: summed)
  double seconds_host_mesh_ahead = 0;  // sizing them ahead while the engine started (within seconds_setup)
  double seconds_workers = 0;  // several GPUs: from the start of the slab workers until the last one ended
  double seconds_join = 0;     // several GPUs: joining the slabs' meshes in slab order, after the workers
  std::uint64_t peak_slab_bytes = 0;      // host bytes held for samples and work arrays at once
  std::vector<double> seconds_slab_done;  // when each slab's mesh was home, from the run's start (one GPU or CPU)
};

struct IsosurfaceReport {
  std::string device;  // what ran
  // With device auto and a usable GPU: what auto chose and the two estimated times behind the choice.
  std::string device_choice;
  std::int64_t slabs = 0, slab_slices = 0;
  std::int64_t vertices = 0, triangles = 0;
  std::int64_t duplicates_removed = 0;  // pairs of coincident triangles where samples equal the level
  std::int64_t pinched_vertices_split = 0;  // vertices added where the level set pinches at a sample on the level
  // Without degenerate triangles: crossings a rounding from a sample that landed on it, welded into one vertex, and
  // the zero-area triangles that dropped out between them.
  std::int64_t rounded_ties_welded = 0, degenerate_removed = 0;
  double value_min = 0, value_max = 0;  // of the finite samples, when a range pass ran (no level, or no surface)
  std::vector<double> levels;
  double seconds_read = 0, seconds_total = 0;  // reading the volume (the part not overlapped), the whole call
  IsosurfaceProfile profile;  // where the rest of the time went
};

// One mesh for all levels: face_groups holds the level index of each triangle when there are several levels.
// With labels, face_labels holds each triangle's label and the groups are the (level, label) pairs in order, each
// with its label colour; excluded labels' triangles and the vertices only they used are removed.
// Vertices and triangles come in a canonical order (by owning grid point, then x/y/z edge; by cell, then case
// table order), so that the CPU, CUDA and any slab split give the same mesh.
// Throws Error(InvalidArgument) for dims < 2 or a level outside the data range when nothing is found,
// Error(OutOfMemory) when the counted mesh cannot fit, Error(LimitReached) beyond 2^32 − 1 vertices; labels or
// scalars on another grid, or labels that are not integers in the int32 range: Error(InvalidArgument).
TriangleMesh extract_isosurface(VolumeSource& volume, const IsosurfaceOptions& options,
                                IsosurfaceReport* report = nullptr);

// The mesh extract_isosurface makes, written as binary PLY to `path` with the bytes write_mesh writes for it, but
// part by part so that a mesh larger than memory can be written: slices of the volume are extracted in turn (each
// part's mesh about `part_bytes`, from a first pass that counts the cells on the level), their vertex records and
// faces spilled to unnamed temporary files beside the output (or in TMPDIR for standard output and pipes), and the
// file assembled at the end (written to a temporary and renamed, as write_mesh does). Seams are exact: a part's
// last cells use the next part's first vertices. Samples equal to a level stream too where the CPU's classic table
// settles their ties cell by cell and every vertex on them is one plain fan (checked part by part). Where the level
// set pinches at such a sample, where ties are left to a pass over the whole mesh (other tables, the GPU engine,
// keep_degenerate; a run that auto sent to the GPU starts again on the CPU instead), the run is made in memory, with
// the same result, and the report says so (streamed false). Crossings a rounding put on one sample are welded part
// by part: without keep_degenerate each part waits for the next, so two parts (each half of `part_bytes`) are held
// at once. Excluded labels are refused (Error(InvalidArgument)).
struct StreamedIsosurfaceReport {
  IsosurfaceReport run;      // the parts' runs summed (slabs, times, counts)
  bool streamed = false;     // false: the mesh was made in memory (`why` says why)
  std::string why;
  std::int64_t parts = 0;
  std::uint64_t spilled_bytes = 0;  // written to the temporary files
};
StreamedIsosurfaceReport write_isosurface_ply(VolumeSource& volume, const IsosurfaceOptions& options,
                                              const std::string& path, std::uint64_t part_bytes = 0);

// Boundaries between the regions of a label map (Surface Nets, as vtkSurfaceNets3D): one mesh in which a face
// between labels a and b exists once and both regions share it. Each triangle carries its two labels: face_labels
// holds the larger, face_outer_labels the smaller, and the triangle's normal points from the first into the
// second (so objects on a background of 0 face outward). Groups are the label pairs, coloured by the first label.
// Samples are voxel centres and the background label lies outside the grid, so regions touching the border close.
// The label volume is held whole (4 bytes per voxel, plus 4 per cell for vertex ids, on the host or the GPU).
// CPU and CUDA give the same mesh (smoothing steps are exact float operations on both). No normals are written:
// a vertex where regions meet belongs to several surfaces.
struct LabelBoundaryOptions {
  int smoothing_iterations = 32;      // 0: vertices stay at cell centres (a blocky surface)
  double relaxation = 0.5;            // fraction of the way to the neighbours' mean per iteration
  bool preserve_volume = true;        // every second step inflates (Taubin λ|μ), so smoothing does not shrink
  double constraint = 0.45;           // how far a vertex may leave its cell centre along each axis, in voxels
  std::int32_t background = 0;        // the label outside the grid
  std::vector<std::int32_t> exclude_labels;  // faces touching these labels are dropped
  Device device = Device::Auto;       // cpu | cuda (auto: CUDA when present); both give the same mesh
  int threads = 0;
};

struct LabelBoundaryReport {
  std::string device;                // what ran
  std::vector<std::int32_t> labels;  // labels that have a boundary
  std::int64_t label_pairs = 0, vertices = 0, triangles = 0, junction_vertices = 0;
  double seconds_read = 0, seconds_faces = 0, seconds_smooth = 0, seconds_total = 0;
};

TriangleMesh extract_label_boundaries(VolumeSource& labels, const LabelBoundaryOptions& options,
                                      LabelBoundaryReport* report = nullptr);

// Marching cubes on an array in scikit-image's conventions (skimage.measure.marching_cubes), on the host or on a
// CUDA array where it lies; the results stay in that memory space (a CUDA array's mesh stays on its GPU).
struct ArrayIsosurfaceOptions {
  double level = std::numeric_limits<double>::quiet_NaN();  // NaN: the middle of the data range
  std::array<double, 3> spacing{1, 1, 1};                   // per array axis
  GradientDirection direction = GradientDirection::Descent;
  std::int64_t step = 1;              // every step-th sample along each axis (scikit-image's step_size)
  bool allow_degenerate = true;       // keep triangles that collapse where samples equal the level
  bool ties_outside = true;           // scikit-image's rule: a sample equal to the level is outside
  CaseTopology topology = CaseTopology::Mc33;  // "lewiner": Mc33; "lorensen": Classic
  const ArrayView3* mask = nullptr;   // same shape, one byte per sample (0: drop); a cell is kept when its last
                                      // corner (largest indices, on the stepped grid) is set
  Device device = Device::Auto;       // host arrays: cpu | cuda | auto; CUDA arrays run on their own GPU
  int threads = 0;
  std::function<void(double)> progress;  // fraction done, between slabs; may throw to stop the run
  bool values = true;                 // false: `values` left empty (benchmarks time the mesh alone)
};

// verts V×3 float32 (array index order times spacing), faces F×3 int32 (as uint32 bits; fewer than 2^31 vertices),
// normals V×3 float32 (unit, down the gradient, in index order), values V float32: for each vertex the largest
// value range, level-shifted and 0 included, of the cells its triangles cross (scikit-image's "maximum value of
// the data in the local region"). An empty mesh when the level lies in the data range but no cell crosses it.
struct ArrayMesh {
  Buffer verts, faces, normals, values;
  std::int64_t vertices = 0, triangles = 0;
  std::string device;  // what ran
};

// Throws Error(InvalidArgument) for shapes under 2 (after the step), a non-finite level or one outside the data
// range, a mask of another shape; Error(Device) for a CUDA array without a usable GPU.
ArrayMesh marching_cubes_array(const ArrayView3& volume, const ArrayIsosurfaceOptions& options);

// Marching cubes over and over on one volume kept on the GPU (a level slider, or timing the engine's passes alone):
// the samples of a C-contiguous host array (x fastest: shape {nz, ny, nx}) go up once, and each extract() runs the
// engine's passes with the mesh left in its device buffers, returning the counts. The array must outlive the object.
// Throws Error(Device) without a usable GPU, Error(InvalidArgument) for another layout or a dimension under 2.
class ResidentIsosurface {
 public:
  ResidentIsosurface(const ArrayView3& volume, CaseTopology topology = CaseTopology::Mc33, bool normals = true);
  ~ResidentIsosurface();
  ResidentIsosurface(ResidentIsosurface&&) noexcept;
  ResidentIsosurface& operator=(ResidentIsosurface&&) noexcept;

  struct Counts {
    std::int64_t vertices = 0, triangles = 0;
  };
  Counts extract(double level);
  // Whether extract() times its passes apart for profile() (off by default: the events cost the GPU microseconds a
  // call, a large share of a small volume's time).
  void time_stages(bool on);
  IsosurfaceProfile profile() const;  // the passes' seconds summed over the calls so far

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What `auto` would run marching cubes on for a volume in host memory of these dimensions and sample type with
// about this many triangles (0: a typical density of scanned volumes), and the estimated seconds on each side as
// this process knows them (the CPU's rates are measured once per process; both sides are corrected by the runs
// that followed). Without a usable GPU: the CPU, and cuda_seconds 0.
AutoDeviceEstimate isosurface_auto_estimate(std::array<std::int64_t, 3> dims, VoxelType type, double triangles = 0,
                                            int threads = 0);

// Minimum and maximum of the finite samples (one pass over the source).
std::pair<double, double> volume_value_range(VolumeSource& volume);

}  // namespace parasurf
