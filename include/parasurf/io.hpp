// File formats: control nets (read) and triangle meshes (write).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "parasurf/bezier.hpp"

namespace parasurf {

// Control-net text format (docs/formats.md):
//   # comments run to the end of a line
//   bezier <m> <n>             or   rational <m> <n>
//   then (m+1)(n+1) points, row-major (i along u, j along v): "x y z" (bezier) or "x y z w" (rational: a
//   Cartesian point and its weight).
// Throws Error(Parse) naming the file, line and problem.
BezierSurface read_control_net(const std::string& path);
BezierSurface parse_control_net(const std::string& text, const std::string& name = "<string>");
void write_control_net(const std::string& path, const BezierSurface& surface);

// Indexed triangle mesh, counter-clockwise triangles; normals optional (one per vertex).
struct TriangleMesh {
  HostVector<float> positions;       // V x 3
  HostVector<float> normals;         // V x 3 or empty
  HostVector<std::uint32_t> triangles;  // F x 3
  std::vector<std::int32_t> face_groups;   // F group indices (-1: none), or empty
  std::vector<std::string> group_names;    // names of the groups, by index
  std::vector<float> group_colors;         // 3 per group (linear RGB in [0, 1]), or empty for a built-in palette
  HostVector<float> vertex_values;         // V scalars (written as "value"), or empty
  std::vector<std::int32_t> face_labels;        // F labels, or empty
  std::vector<std::int32_t> face_outer_labels;  // F labels of the side each normal points to, or empty
  std::int64_t vertex_count() const { return std::int64_t(positions.size() / 3); }
  std::int64_t triangle_count() const { return std::int64_t(triangles.size() / 3); }
};

// The rows x cols sample grid as a mesh of 2 (rows-1)(cols-1) triangles (normals if the samples have them).
template <class T>
TriangleMesh grid_mesh(const SurfaceSamples<T>& samples, std::int64_t rows, std::int64_t cols);

// Mesh file formats. PLY is binary little-endian unless PlyAscii (the text form, for readers that cannot take a
// binary PLY's face properties, e.g. meshio).
enum class MeshFormat { Ply, PlyAscii, Obj, Glb, Stl, Vtp, Vtu };

// Writes .ply (vertex property "value", face properties "group", "label", "outer_label" and the group colour as
// "red green blue" when present), .obj ("g" lines per group), .glb (glTF 2.0 binary; one primitive, material and
// vertex arrays per group, values as the vertex attribute "_VALUE"), .stl (binary), .vtp or .vtu (VTK XML PolyData /
// UnstructuredGrid, raw appended arrays; point data Normals and value, cell data group, label, outer_label and
// colour), by extension or in the format given,
// through a temporary file renamed on success, so that a failure never leaves a partial file; a symbolic link is kept
// (its target is written), and "-" or /dev/stdout (standard output; PLY unless a format is given), /dev/fd/N, pipes,
// FIFOs and devices are written in place, never replaced. Throws Error(Io).
void write_mesh(const std::string& path, const TriangleMesh& mesh);
void write_mesh(const std::string& path, const TriangleMesh& mesh, MeshFormat format);
// Whether a path names a mesh format write_mesh writes (by extension), and the list of them for messages.
bool is_mesh_output(const std::string& path);
std::string mesh_output_formats();
// The format of a path's extension, if it has one of the mesh extensions.
bool mesh_format_of(const std::string& path, MeshFormat& format);
// Format names: "ply", "ply-ascii", "obj", "glb", "stl", "vtp", "vtu".
const char* mesh_format_name(MeshFormat format);
// The format an output gets: `requested` (a format name, or empty for none) must agree with the path's extension
// when it has one (ply-ascii agrees with .ply); a path without one (a FIFO, a device) needs `requested`, except
// standard output and descriptors ("-", /dev/stdout, /dev/fd/N), which are PLY by default. Throws Error(InvalidArgument) naming the path and the choices.
MeshFormat choose_mesh_format(const std::string& path, const std::string& requested);

// Writes `data` to `path` by write_mesh's rules for outputs (a regular file through a temporary renamed on success,
// links kept, standard output, descriptors, pipes and devices in place). Throws Error(Io) naming the path.
void write_file(const std::string& path, const std::string& data);
// Removes the temporaries of outputs still being written: for a program's SIGINT/SIGTERM handler
// (async-signal-safe).
void remove_partial_outputs() noexcept;
// The descriptor that "-" and /dev/stdout write to: standard output, unless a program moved it (e.g. to keep its
// human-readable report off a mesh or JSON stream).
void set_standard_output(int fd) noexcept;

// Throws Error(InvalidArgument) naming `source` when a vertex position is not finite (inputs whose coordinates
// overflow the mesh's float range): such a mesh is an error, not a result.
void check_finite(const TriangleMesh& mesh, const std::string& source);

}  // namespace parasurf
