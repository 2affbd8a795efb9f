// The binary PLY layout of parasurf's meshes: the header and the fixed-size vertex and face records. Shared by the
// PLY writer and the MPI writer, which writes every rank's records at their offsets of one file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "parasurf/io.hpp"

namespace parasurf::io {

struct PlyLayout {
  bool normals = false, values = false, groups = false, colors = false, labels = false, outer_labels = false;
  bool ascii = false;  // the header's format line only: records are written by the text writer

  static PlyLayout of(const TriangleMesh& mesh);  // the properties the mesh's arrays hold
  std::size_t vertex_bytes() const { return 12 + (normals ? 12 : 0) + (values ? 4 : 0); }
  std::size_t face_bytes() const { return 13 + (groups ? 4 : 0) + (labels ? 4 : 0) + (outer_labels ? 4 : 0) + (colors ? 3 : 0); }
  std::string header(std::uint64_t vertices, std::uint64_t faces, const std::vector<std::string>& group_names) const;
  // Records of vertices [v0, v1) and faces [t0, t1) of `mesh` into `out`; face indices shifted by `index_shift`.
  void pack_vertices(const TriangleMesh& mesh, std::int64_t v0, std::int64_t v1, char* out) const;
  void pack_faces(const TriangleMesh& mesh, std::int64_t t0, std::int64_t t1, std::uint32_t index_shift, char* out) const;
};

}  // namespace parasurf::io
