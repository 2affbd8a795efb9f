// parasurf render: an offscreen PNG picture of a mesh file (no display needed).
#include <chrono>
#include <cmath>
#include <cstdio>

#include "parasurf/commands.hpp"
#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"
#include "parasurf/render.hpp"

namespace parasurf::cli {

namespace {

std::array<double, 3> parse_vector(const std::string& text, const std::string& option) {
  std::array<double, 3> v{};
  int n = 0;
  std::size_t pos = 0;
  while (n < 3 && pos <= text.size()) {
    const std::size_t comma = text.find(',', pos);
    const std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || !std::isfinite(x))
      throw Error(ErrorKind::InvalidArgument, option + " '" + text + "' is not three numbers x,y,z");
    v[n++] = x;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (n != 3) throw Error(ErrorKind::InvalidArgument, option + " '" + text + "' is not three numbers x,y,z");
  return v;
}

// Area-weighted vertex normals, for smooth shading of meshes read without normals.
std::vector<float> smooth_normals(const TriangleMesh& m) {
  std::vector<double> n(m.positions.size(), 0.0);
  for (std::int64_t f = 0; f < m.triangle_count(); ++f) {
    const std::uint32_t* t = m.triangles.data() + 3 * f;
    double e1[3], e2[3];
    for (int k = 0; k < 3; ++k) e1[k] = m.positions[3 * t[1] + k] - m.positions[3 * t[0] + k], e2[k] = m.positions[3 * t[2] + k] - m.positions[3 * t[0] + k];
    const double c[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
    for (int v = 0; v < 3; ++v)
      for (int k = 0; k < 3; ++k) n[3 * t[v] + k] += c[k];
  }
  std::vector<float> out(n.size());
  for (std::size_t v = 0; v < n.size() / 3; ++v) {
    const double l = std::sqrt(n[3 * v] * n[3 * v] + n[3 * v + 1] * n[3 * v + 1] + n[3 * v + 2] * n[3 * v + 2]);
    for (int k = 0; k < 3; ++k) out[3 * v + k] = l > 0 ? float(n[3 * v + k] / l) : 0.0f;
  }
  return out;
}

}  // namespace

void add_render(CLI::App& app) {
  struct Args {
    std::string input, output, size = "960x720", view = "-1,-1.7,0.9", up = "0,0,1", color, json;
    int supersample = 3;
    bool flat = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("render", "Draw a mesh (.ply, .obj, .off, .stl) into a PNG picture, offscreen");
  cmd->add_option("input", a->input, "Mesh file; PLY face colours (red green blue) are used")->required();
  cmd->add_option("--output,-o", a->output, "PNG file, or - for standard output (default: <input stem>.png)");
  cmd->add_option("--size", a->size, "Width x height in pixels (16..8192 each)");
  cmd->add_option("--view", a->view, "Direction from the mesh towards the camera, x,y,z");
  cmd->add_option("--up", a->up, "Up direction of the picture, x,y,z");
  cmd->add_option("--color", a->color, "Colour of faces without their own, r,g,b in 0..1");
  cmd->add_option("--supersample", a->supersample, "Samples per pixel side (1..4)");
  cmd->add_flag("--flat", a->flat, "Face normals instead of smooth vertex normals");
  cmd->add_option("--json", a->json, "Write the report as JSON to this file (- for standard output)");
  cmd->callback([a] {
    const auto started = std::chrono::steady_clock::now();
    if (a->output.empty()) {
      std::string stem = a->input.substr(a->input.find_last_of('/') + 1);
      a->output = stem.substr(0, stem.find_last_of('.')) + ".png";
    }
    RenderOptions o;
    const auto wh = parse_pair(a->size, "--size");
    o.width = int(std::clamp<std::int64_t>(wh.first, 0, 1 << 20));
    o.height = int(std::clamp<std::int64_t>(wh.second, 0, 1 << 20));
    o.view = parse_vector(a->view, "--view");
    o.up = parse_vector(a->up, "--up");
    o.supersample = a->supersample;
    if (!a->color.empty()) {
      const auto c = parse_vector(a->color, "--color");
      for (int k = 0; k < 3; ++k) o.color[k] = float(std::clamp(c[k], 0.0, 1.0));
    }
    if (o.width < 16 || o.width > 8192 || o.height < 16 || o.height > 8192)
      throw Error(ErrorKind::InvalidArgument, "--size " + a->size + ": each side must be in 16..8192");
    const bool stream = a->output == "-" || a->output.starts_with("/dev/");  // standard output, a descriptor
    if (!stream && (a->output.size() < 5 || a->output.substr(a->output.size() - 4) != ".png"))
      throw Error(ErrorKind::InvalidArgument, "the picture '" + a->output + "' must be a .png file");
    const PolygonMesh pm = read_polygon_mesh(a->input);
    TriangleMesh m;
    m.positions.assign(pm.positions.begin(), pm.positions.end());
    std::vector<std::uint8_t> rgb;
    for (std::int64_t f = 0; f < pm.face_count(); ++f)
      for (std::int64_t c = pm.face_offsets[f] + 1; c + 1 < pm.face_offsets[f + 1]; ++c) {
        m.triangles.insert(m.triangles.end(), {pm.face_indices[pm.face_offsets[f]], pm.face_indices[c], pm.face_indices[c + 1]});
        if (!pm.face_colors.empty()) rgb.insert(rgb.end(), pm.face_colors.begin() + 3 * f, pm.face_colors.begin() + 3 * f + 3);
      }
    if (!a->flat) {
      const std::vector<float> n = smooth_normals(m);
      m.normals.assign(n.begin(), n.end());
    }
    const auto pixels = render_mesh(m, o, rgb);
    write_png(a->output, pixels, o.width, o.height);
    std::printf("wrote %s (%dx%d, %lld triangles)\n", a->output.c_str(), o.width, o.height, (long long)m.triangle_count());
    if (!a->json.empty())
      write_json_report(a->json, "render", a->input, a->output,
                        {{"size", {o.width, o.height}},
                         {"triangles", m.triangle_count()},
                         {"seconds", {{"total", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}}}});
  });
}

}  // namespace parasurf::cli
