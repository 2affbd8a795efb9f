// B-spline free-form deformation of polygon meshes: point FFD, accurate FFD (Cui & Feng 2013) and the uniform
// up-sampling baseline, on the CPU and CUDA; polygon mesh readers (OBJ, PLY, OFF, STL); lattice edits and
// direct manipulation (Hu et al. 2001).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "parasurf/array.hpp"
#include "parasurf/device.hpp"
#include "parasurf/io.hpp"

namespace parasurf {

// ------------------------------------------------------------------------------------------------ polygon meshes

// Vertices and polygonal faces as read from a file; face f uses face_indices[face_offsets[f] .. face_offsets[f+1]).
struct PolygonMesh {
  std::vector<double> positions;               // V x 3
  std::vector<std::int64_t> face_offsets{0};   // F + 1
  std::vector<std::uint32_t> face_indices;
  std::vector<std::uint8_t> face_colors;       // F x 3 (PLY face red/green/blue), or empty
  std::int64_t vertex_count() const { return std::int64_t(positions.size() / 3); }
  std::int64_t face_count() const { return std::int64_t(face_offsets.size()) - 1; }
  void add_face(std::span<const std::uint32_t> corners);
};

struct MeshReadReport {
  std::string format;                 // "obj", "ply-ascii", "ply-binary", "off", "stl-ascii", "stl-binary"
  std::int64_t faces_read = 0;        // faces in the file
  std::int64_t degenerate_skipped = 0;  // repeated corners or zero area: skipped, never fatal
  std::int64_t welded_vertices = 0;   // STL corners merged into shared vertices by exact position
};

// Reads .obj, .ply (ASCII, binary little- and big-endian), .off and .stl (ASCII or binary) by extension. Faces
// with a NaN or infinite corner, indices out of range, counts beyond the file's size: Error(Parse) naming the
// file and line or byte. Degenerate faces are skipped and counted.
PolygonMesh read_polygon_mesh(const std::string& path, MeshReadReport* report = nullptr);
// The same from bytes in memory (`name` is used in messages and picks the format by extension).
PolygonMesh parse_polygon_mesh(std::string_view bytes, const std::string& name, MeshReadReport* report = nullptr);

struct MeshTopologyReport {
  std::int64_t edges = 0;
  std::int64_t boundary_edges = 0;       // used by one face
  std::int64_t non_manifold_edges = 0;   // used by more than two faces, or twice in one direction
  std::int64_t euler_characteristic = 0; // V - E + F over the vertices that faces use
  bool closed_manifold() const { return boundary_edges == 0 && non_manifold_edges == 0; }
};
MeshTopologyReport mesh_topology(const PolygonMesh& mesh);
MeshTopologyReport mesh_topology(const TriangleMesh& mesh);

// ------------------------------------------------------------------------------------------------ lattice

// A trivariate B-spline volume R(u,v,w) = sum R_ijk N_i(u) N_j(v) N_k(w) and the affine map that embeds world
// space in its parameter domain. Control point (i,j,k) is control_points[3 * (i + n0 * (j + n1 * k))].
// World points whose parameters fall outside the domain are not deformed.
struct Lattice {
  std::array<int, 3> degree{3, 3, 3};     // 1..3 per axis
  std::array<int, 3> count{4, 4, 4};      // control points per axis, >= degree + 1
  std::array<std::vector<double>, 3> knots;  // count + degree + 1 per axis, non-decreasing
  std::vector<double> control_points;     // count product x 3, world coordinates
  std::array<double, 12> world_to_parameter{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};  // 3x4 row-major
  std::int64_t control_point_count() const { return std::int64_t(count[0]) * count[1] * count[2]; }
  std::int64_t linear_index(int i, int j, int k) const { return i + std::int64_t(count[0]) * (j + std::int64_t(count[1]) * k); }
};

struct LatticeSpec {
  std::array<int, 3> count{9, 9, 9};
  std::array<int, 3> degree{3, 3, 3};
  double padding = 0.05;                           // fraction of the box's largest side added on every side
  std::array<std::vector<double>, 3> knots;        // empty: clamped uniform on [0, 1]
  std::optional<std::array<double, 12>> world_to_parameter;  // given: this embedding instead of the box
};

// JSON lattice layout: {"count": [n0,n1,n2], "degree": [p0,p1,p2], "padding": f, "knots": [[...],[...],[...]],
// "world_to_parameter": [12 numbers, 3x4 row-major]}; every key optional. Error(Parse) names the file and key.
LatticeSpec read_lattice_spec(const std::string& path);
LatticeSpec parse_lattice_spec(std::string_view json, const std::string& name);

// Builds the lattice over [box_min, box_max] (padded) or the given embedding, with control points at their rest
// positions (Greville abscissae), so that R is the identity on the domain. Throws Error(InvalidArgument) for a
// degree outside 1..3, too few control points, knot vectors of the wrong size, decreasing or without a span.
Lattice make_lattice(const LatticeSpec& spec, const std::array<double, 3>& box_min, const std::array<double, 3>& box_max);
// Rest positions of the control points (the identity deformation).
std::vector<double> rest_control_points(const Lattice& lattice);
// Checks the lattice's invariants; throws Error(InvalidArgument) naming the problem.
void validate_lattice(const Lattice& lattice);

// Evaluates the deformation at world points (double, on the CPU): positions and, when wanted, Jacobians
// d R / d x (3x3 row-major each). Points outside the domain map to themselves with the identity Jacobian.
void deform_points(const Lattice& lattice, std::span<const double> points, std::span<double> out,
                   std::span<double> jacobians = {});

// ------------------------------------------------------------------------------------------------ edits

struct ControlPointMove {
  std::array<int, 3> index{};
  std::array<double, 3> value{};
  bool is_displacement = false;  // false: new position
};
struct PointTarget {             // direct manipulation: move the deformed image of `point` (rest space) to `target`
  std::array<double, 3> point{};
  std::array<double, 3> target{};
};
struct LatticeEdits {
  std::vector<ControlPointMove> moves;
  std::vector<PointTarget> targets;
};
// JSON: {"moves": [{"index": [i,j,k], "position": [x,y,z]} | {"index": ..., "displacement": [dx,dy,dz]}],
//        "targets": [{"point": [x,y,z], "target": [x,y,z]}]}. Error(Parse) names the file and the entry.
LatticeEdits read_lattice_edits(const std::string& path);
LatticeEdits parse_lattice_edits(std::string_view json, const std::string& name);
// Applies moves (indices checked) then direct manipulation; returns the largest distance between a target and
// the deformed point afterwards (0 when there are no targets).
double apply_lattice_edits(Lattice& lattice, const LatticeEdits& edits);
// Least-norm control-point change that carries each point's image onto its target (Hu et al. 2001): closed form
// for one point, the Gram system of the basis values for several. Throws Error(InvalidArgument) when a point
// lies outside the domain or the targets contradict each other (singular Gram matrix).
void direct_manipulation(Lattice& lattice, std::span<const PointTarget> targets);

// ------------------------------------------------------------------------------------------------ deformation

enum class FfdMethod { Point, Accurate, Upsampled };
FfdMethod parse_ffd_method(const std::string& name);  // "point" | "accurate" | "uus"
const char* ffd_method_name(FfdMethod method);

struct FfdOptions {
  FfdMethod method = FfdMethod::Accurate;
  int level = 4;                    // m: every triangle of a piece becomes m^2 sub-triangles (accurate, uus)
  Device device = Device::Auto;
  int threads = 0;
  bool allow_non_manifold = false;  // refuse non-manifold input unless asked
};

struct FfdReport {
  Device device = Device::Cpu;
  FfdMethod method = FfdMethod::Accurate;
  std::int64_t input_faces = 0, input_triangles = 0;
  std::int64_t degenerate_skipped = 0;
  std::int64_t pieces = 0;          // convex pieces after clipping at the knot planes (accurate)
  std::int64_t surfaces = 0;        // Bézier surfaces (coplanar pieces of a knot box share one)
  std::int64_t samples = 0;         // volume samples per update (sum of (n_s+1)(n_t+1))
  std::int64_t output_vertices = 0, output_triangles = 0;
  int max_degree_s = 0, max_degree_t = 0;
  double preprocess_seconds = 0, update_seconds = 0;
  // Device::Auto with a usable GPU: what auto weighed and chose ("auto chose cpu: ..."), and where the session moved
  // to the GPU, after how many updates; empty otherwise.
  std::string device_choice;
};

// What `auto` would start an FFD session of this size on (per update: `vertices` output vertices, `surfaces` Bézier
// surfaces sampled by accurate FFD), with the CPU's update time and the GPU's first update (its start included) as
// this process knows them. A session that starts on the CPU moves to the GPU once its updates have cost the GPU's
// start (FfdReport::device_choice says so).
AutoDeviceEstimate ffd_auto_estimate(FfdMethod method, std::int64_t vertices, std::int64_t surfaces = 0,
                                     bool doubles = false, int threads = 0);

template <class T>
struct FfdState;

// One mesh and one lattice layout, prepared once; update() deforms with the lattice's current control points.
// T is the arithmetic of the per-edit work (float or double); preprocessing is always double.
template <class T>
class FfdSession {
 public:
  FfdSession(const PolygonMesh& mesh, const Lattice& lattice, const FfdOptions& options);
  ~FfdSession();
  FfdSession(const FfdSession&) = delete;
  FfdSession& operator=(const FfdSession&) = delete;

  // Deforms with these control points (same layout as the lattice given at construction).
  void update(std::span<const double> control_points);
  // Results of the last update, on the host (copied from the device when the session runs on CUDA).
  void download(std::vector<T>& positions, std::vector<T>& normals) const;
  TriangleMesh mesh() const;  // welded triangles, positions and normals of the last update
  // The same mesh written into the caller's arrays: positions and normals (3 x report().output_vertices floats
  // each) and triangles (3 x report().output_triangles). With MemorySpace::Cuda they are device pointers on the GPU
  // gpu() names, written there without a trip through the host (a session on the CPU refuses them).
  void write_mesh(float* positions, float* normals, std::uint32_t* triangles, MemorySpace space) const;
  int gpu() const;  // the GPU the session's updates run on, -1 on the CPU
  const std::vector<std::uint32_t>& triangles() const;
  // Undeformed world position of every output vertex (what point FFD of the subdivided input is applied to).
  const std::vector<double>& rest_positions() const;
  // For vertices inside one Bézier surface: the undeformed face normal, else (0,0,0).
  const std::vector<double>& rest_face_normals() const;
  const FfdReport& report() const;
  // Accurate FFD: the exact deformed surface of the last update, written through a temporary file; `parasurf
  // tessellate` and read_patch_model load both forms back. ".json": per Bézier surface its control net and the
  // trimming polygons of its pieces (docs/formats.md); ".bv": every triangle of every piece as a triangular Bézier
  // patch (BezierView kind 3) of the composed degree (at most the sum of the lattice degrees).
  void write_bezier_patches(const std::string& path) const;

 private:
  std::unique_ptr<FfdState<T>> state_;
};

extern template class FfdSession<float>;
extern template class FfdSession<double>;

}  // namespace parasurf
