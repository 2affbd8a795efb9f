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
  std::vector<float> positions;       // V x 3
  std::vector<float> normals;         // V x 3 or empty
  std::vector<std::uint32_t> triangles;  // F x 3
  std::vector<std::int32_t> face_groups;   // F group indices (-1: none), or empty
  std::vector<std::string> group_names;    // names of the groups, by index
  std::vector<float> group_colors;         // 3 per group (linear RGB in [0, 1]), or empty for a built-in palette
  std::vector<float> vertex_values;        // V scalars (written as "value"), or empty
  std::vector<std::int32_t> face_labels;        // F labels, or empty
  std::vector<std::int32_t> face_outer_labels;  // F labels of the side each normal points to, or empty
  std::int64_t vertex_count() const { return std::int64_t(positions.size() / 3); }
  std::int64_t triangle_count() const { return std::int64_t(triangles.size() / 3); }
};

// The rows x cols sample grid as a mesh of 2 (rows-1)(cols-1) triangles (normals if the samples have them).
template <class T>
TriangleMesh grid_mesh(const SurfaceSamples<T>& samples, std::int64_t rows, std::int64_t cols);

// Writes .ply (binary little-endian; vertex property "value", face properties "group", "label", "outer_label" and
// the group colour as "red green blue" when present), .obj ("g" lines per group), .glb (glTF 2.0 binary; one
// primitive, material and vertex arrays per group, values as the vertex attribute "_VALUE"), .stl (binary), .vtp or .vtu (VTK
// XML PolyData / UnstructuredGrid, raw appended arrays; point data Normals and value, cell data group, label,
// outer_label and colour) by extension,
// through a temporary file renamed on success, so that a failure never leaves a partial file; a symbolic link is kept
// (its target is written), and "-" (standard output, PLY), pipes, FIFOs and devices are written in place, never
// replaced. Throws Error(Io).
void write_mesh(const std::string& path, const TriangleMesh& mesh);
// Whether a path names a mesh format write_mesh writes (by extension), and the list of them for messages.
bool is_mesh_output(const std::string& path);
std::string mesh_output_formats();

// Throws Error(InvalidArgument) naming `source` when a vertex position is not finite (inputs whose coordinates
// overflow the mesh's float range): such a mesh is an error, not a result.
void check_finite(const TriangleMesh& mesh, const std::string& source);

}  // namespace parasurf
