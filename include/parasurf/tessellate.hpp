// Tessellation of patch models into welded, crack-free triangle meshes, and batch evaluation of every patch of a
// model in one launch (CPU threads, CUDA, or both).
#pragma once
#include <cstdint>
#include <string>
#include <functional>
#include <memory>
#include <vector>

#include "parasurf/bezier.hpp"
#include "parasurf/device.hpp"
#include "parasurf/io.hpp"
#include "parasurf/patches.hpp"

namespace parasurf {

// How a GPU evaluates a batch of patches. The first two are the strategies of the seed post (one thread per
// (u,v) point with direct evaluation; de Casteljau with the threads of a block cooperating through shared
// memory); Tables is ours: Bernstein tables per (degree, resolution) shared by every patch, sum factorisation
// per row of samples. The CPU backend runs Tables for tensor patches and Direct for the others.
enum class PatchStrategy { Auto, Direct, Casteljau, Tables };
PatchStrategy parse_patch_strategy(const std::string& name);
const char* patch_strategy_name(PatchStrategy strategy);

enum class Precision { Float, Double };

// Several cooperating processes tessellating one model (MPI ranks; the CLI sets this up under mpirun). Every
// member plans the whole model (cheap and deterministic), evaluates the samples of its own contiguous range of
// patches (balanced by sample count), and `exchange` completes the samples; member 0 assembles the mesh, which is
// the single-process mesh exactly; the others return an empty mesh. With a tolerance, the planning's deviation
// checks are shared out the same way.
struct TessellationTeam {
  int member = 0, members = 1;
  // `data` holds bounds.back() elements of `element_bytes`; member k has filled [bounds[k], bounds[k+1]). Must fill
  // every other member's range, on every member when `everyone`, else on member 0 only (the others may skip).
  std::function<void(void* data, std::size_t element_bytes, const std::vector<std::int64_t>& bounds, bool everyone)> exchange;
  int assembly_threads = 0;  // CPU threads of member 0's assembly (0: TessellationOptions::threads)
};

struct TessellationOptions {
  int resolution = 16;                  // segments per patch side (uniform mode), >= 1
  std::vector<int> patch_resolution;    // optional: segments per patch (overrides resolution)
  double tolerance = 0;                 // > 0: adaptive; bound on the distance from surface to mesh (model units)
  double crease_angle_degrees = 30;     // normals are averaged across seams only below this angle
  bool keep_degenerate = false;         // keep zero-area triangles
  bool orient = true;                   // make neighbouring patches' orientation agree (and closed parts outward)
  // Two patch sides are one seam when their curves, raised to a common degree, agree within this fraction of the
  // model's size (the diagonal of its control points' box), or within the decimal step a text file wrote its
  // coordinates with (PatchModel::printed_step) where that is larger; 0 asks for bitwise equal control points.
  double seam_tolerance = 1e-9;
  Precision precision = Precision::Double;
  Device device = Device::Auto;
  int threads = 0;                      // CPU threads, 0 = all
  PatchStrategy strategy = PatchStrategy::Auto;
  // Device::Hybrid: how CPU threads and the GPU share the evaluation; the static scheme's CPU fraction of the
  // samples (< 0: measured by a profiling round). The assembly then runs on the host.
  HybridScheme hybrid_scheme = HybridScheme::Dynamic;
  double cpu_share = -1;
  // CUDA runs: weld and assemble on the GPU from samples that stay there (false: on the host's threads, after the
  // samples are copied back). Either way the same mesh; the host takes over where the GPU lacks the memory.
  bool assemble_on_device = true;
  std::shared_ptr<const TessellationTeam> team;  // null: this process alone
  // Fraction done, called after each phase (planned, evaluated, assembled), for long batches.
  std::function<void(double)> progress;
};

// Welded mesh: positions are shared by every triangle that touches them; normals are indexed per corner, so a
// vertex on a crease has one normal per side while staying one vertex.
struct PatchMesh {
  HostVector<double> positions;                // V x 3
  HostVector<double> normals;                  // N x 3, unit
  HostVector<std::uint32_t> triangles;         // F x 3 position indices, counter-clockwise seen from the normal
  HostVector<std::uint32_t> triangle_normals;  // F x 3 normal indices
  std::vector<std::int32_t> face_group;        // F, group index or -1
  std::vector<std::int32_t> face_patch;        // F, patch index (-1: polyhedron face)
  std::vector<std::string> group_names;
  std::int64_t vertex_count() const { return std::int64_t(positions.size() / 3); }
  std::int64_t triangle_count() const { return std::int64_t(triangles.size() / 3); }
};

struct TessellationReport {
  std::int64_t patches = 0, tensor_patches = 0, triangular_patches = 0, polyhedron_faces = 0;
  std::int64_t evaluated_points = 0;
  std::int64_t shared_edges = 0, open_edges = 0, collapsed_edges = 0, flipped_patches = 0;
  std::int64_t open_side_segments = 0;          // mesh edges on open patch sides (the mesh's boundary)
  // The distance (model units, largest coordinate difference) within which sides were one seam: the options'
  // fraction of the model's size, or the decimal step the file was written with where that is larger.
  double seam_tolerance = 0;
  // T-junctions: long sides traced by a chain of other sides (a neighbour split in the file), and those sides;
  // both are stitched, neither is open
  std::int64_t t_junction_edges = 0, t_junction_pieces = 0;
  std::int64_t crease_vertices = 0;
  int min_segments = 0, max_segments = 0;       // over patches and directions
  double seconds_plan = 0, seconds_evaluate = 0, seconds_assemble = 0;
  double seconds_exchange = 0;                  // team runs: completing the samples from the other members
  bool assembled_on_device = false;             // seconds_assemble is GPU time (the samples never left it)
  double seconds_download = 0;                  // assembled on the device: the mesh copied to host memory
  // assembled on the device, host wall time: preparation of the plan; sizes and plan upload; counts and seams
  // launched; vertices, triangles and compaction launched; the wait for the device to finish
  double seconds_assembly_phases[5] = {0, 0, 0, 0, 0};
  std::string assembly_note;                    // why the host assembled where the device was asked to
  std::int64_t own_patches = 0;                 // team runs: the patches this member evaluated
  Device device = Device::Cpu;
  // With device auto and a usable GPU: what auto chose and the two estimated times behind the choice.
  std::string device_choice;
  std::string strategy;
  double cpu_share = 0;                         // Hybrid: fraction of the samples the CPU evaluated
};

PatchMesh tessellate(const PatchModel& model, const TessellationOptions& options, TessellationReport* report = nullptr);

// Largest distance between each patch and its triangles, sampled at `samples_per_edge` points per triangle edge
// direction (parametric distance: the surface point and the mesh point of the same (u,v); an upper bound of the
// geometric distance). Only for meshes made by tessellate(); per patch in the returned vector.
std::vector<double> sampled_patch_deviation(const PatchModel& model, const TessellationOptions& options,
                                            int samples_per_edge = 4);

// Smallest uniform resolution whose sampled deviation is at most `tolerance` on every patch (up to max_resolution;
// returns max_resolution + 1 when none is).
int uniform_resolution_for(const PatchModel& model, double tolerance, int max_resolution = 1024);

// What `auto` would tessellate a model of `samples` evaluated points (about as many mesh vertices) into host memory
// on (doubles or floats; threads 0: all), with this process's estimates.
AutoDeviceEstimate tessellation_auto_estimate(std::int64_t samples, bool doubles = true, int threads = 0);

// One vertex per (position, normal) pair, float, with per-face groups: what PLY and glTF hold.
TriangleMesh to_triangle_mesh(const PatchMesh& mesh);

// ---------------------------------------------------------------- batch evaluation (benchmarks, Python)
// Positions and unit normals of every patch on its own grid (tensor: (n_u+1)(n_v+1) samples; triangle: its
// lattice), structure of arrays, patch k's samples from first[k].
template <class T> struct PatchSamples {
  std::vector<T> position[3];
  std::vector<T> normal[3];
  std::vector<std::int64_t> first;   // patches + 1 offsets
  std::int64_t count() const { return first.empty() ? 0 : first.back(); }
};

struct BatchOptions {
  Device device = Device::Auto;
  int threads = 0;
  PatchStrategy strategy = PatchStrategy::Auto;
  HybridScheme hybrid_scheme = HybridScheme::Dynamic;  // Device::Hybrid (see TessellationOptions)
  double cpu_share = -1;
  bool copy_back = true;   // false: leave the samples on the device (benchmarks)
};

struct BatchTiming {
  double kernel_seconds = 0;  // device time of the evaluation kernel(s) (CPU: wall time of the loop)
  double total_seconds = 0;   // with uploads and copies
  Device device = Device::Cpu;
  PatchStrategy strategy = PatchStrategy::Tables;
  double cpu_share = 0;       // Hybrid: fraction of the samples the CPU evaluated
};

// segments: per patch (n_u, n_v) pairs, or one pair for all. Throws Error when the output would not fit in memory.
template <class T>
BatchTiming evaluate_patch_grids(const PatchModel& model, const std::vector<std::pair<int, int>>& segments,
                                 const BatchOptions& options, PatchSamples<T>* out);

}  // namespace parasurf
