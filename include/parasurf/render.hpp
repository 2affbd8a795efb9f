// Offscreen pictures of meshes: a small z-buffered software rasteriser (no display, no GPU needed) and a PNG writer.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "parasurf/io.hpp"

namespace parasurf {

struct RenderOptions {
  int width = 960, height = 720;
  std::array<double, 3> view{-1.0, -1.7, 0.9};  // direction from the scene towards the (orthographic) camera
  std::array<double, 3> up{0, 0, 1};
  int supersample = 3;                          // samples per pixel side, box-filtered
  std::array<float, 3> background{1, 1, 1};
  std::array<float, 3> color{0.72f, 0.76f, 0.84f};  // faces without a colour of their own
  double margin = 0.04;                         // fraction of the picture left around the mesh
};

// RGB bytes (height rows of width pixels, top row first). Face colours, in order of preference: face_rgb
// (F x 3 bytes), the mesh's per-group colours or palette, the default colour. Lambert shading with a headlight,
// both sides lit (back faces a little darker). Throws Error(InvalidArgument) for sizes outside 16..8192.
std::vector<std::uint8_t> render_mesh(const TriangleMesh& mesh, const RenderOptions& options,
                                      std::span<const std::uint8_t> face_rgb = {});

// A 2-D drawing: polylines (curves, paths) and dots, fitted into the picture with a margin; RGB bytes as above.
struct Plot2D {
  struct Line {
    std::vector<std::array<double, 2>> points;
    std::array<float, 3> color{0.2f, 0.3f, 0.8f};
    double width = 2.5;  // pixels
  };
  struct Dot {
    std::array<double, 2> at{};
    std::array<float, 3> color{0.85f, 0.2f, 0.15f};
    double radius = 5;   // pixels
  };
  std::vector<Line> lines;
  std::vector<Dot> dots;
};
std::vector<std::uint8_t> render_plot(const Plot2D& plot, int width, int height, int supersample = 3);

// Writes 8-bit RGB as PNG through a temporary file renamed on success; Error(Io) names the path.
void write_png(const std::string& path, std::span<const std::uint8_t> rgb, int width, int height);

}  // namespace parasurf
