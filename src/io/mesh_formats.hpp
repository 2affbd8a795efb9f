// Pieces the mesh writers share: the colour of a face group and the VTK XML writer.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "parasurf/io.hpp"

namespace parasurf::io {

// The colour of a group: its own when the mesh has colours, else the built-in palette.
inline const float* group_colour(const TriangleMesh& m, int g) {
  static const float palette[8][3] = {{0.80f, 0.72f, 0.55f}, {0.35f, 0.55f, 0.80f}, {0.80f, 0.40f, 0.35f},
                                      {0.45f, 0.70f, 0.45f}, {0.70f, 0.55f, 0.80f}, {0.85f, 0.75f, 0.35f},
                                      {0.40f, 0.75f, 0.75f}, {0.65f, 0.65f, 0.65f}};
  if (g >= 0 && std::size_t(3 * g + 2) < m.group_colors.size()) return &m.group_colors[std::size_t(3 * g)];
  return palette[(g < 0 ? 0 : g) % 8];
}

inline std::uint8_t colour_byte(float c) { return std::uint8_t(std::lround(std::clamp(c, 0.0f, 1.0f) * 255.0f)); }

// .vtp (PolyData) or, with `unstructured`, .vtu (UnstructuredGrid of triangles).
void write_vtk_xml(const std::string& path, const TriangleMesh& mesh, bool unstructured);

}  // namespace parasurf::io
