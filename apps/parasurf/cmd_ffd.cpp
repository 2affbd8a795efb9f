// parasurf ffd: deform a polygon mesh with a B-spline lattice (point, accurate or up-sampled FFD).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "parasurf/commands.hpp"
#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"
#include "parasurf/patches.hpp"
#include "parasurf/tessellate.hpp"

namespace parasurf::cli {

namespace {

struct FfdArgs {
  std::string input, output, patches, lattice = "9", degree = "3", lattice_file, edits, method = "accurate", precision = "double",
                         device = "auto", json, format;
  double padding = 0.05, twist_degrees = 0;
  int level = 4, threads = 0;
  bool allow_non_manifold = false;
};

// "9", "9x9x9" or "4x5x6" -> three integers; throws naming the option.
std::array<int, 3> parse_triple(const std::string& text, const std::string& option) {
  std::array<int, 3> out{};
  std::size_t pos = 0;
  int n = 0;
  while (n < 3) {
    const std::size_t x = text.find('x', pos);
    const std::string part = text.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    std::size_t used = 0;
    long v = 0;
    try {
      v = std::stol(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || v < 1 || v > 4096)
      throw Error(ErrorKind::InvalidArgument, option + " '" + text + "' is not N or NxNxN with N in 1..4096");
    out[n++] = int(v);
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  if (n == 1) out[1] = out[2] = out[0];
  else if (n != 3 || text.find('x', pos) != std::string::npos)
    throw Error(ErrorKind::InvalidArgument, option + " '" + text + "' is not N or NxNxN");
  return out;
}

// The built-in input: the Utah teapot tessellated into a welded mesh (8 segments per patch side).
PolygonMesh teapot_mesh() {
  TessellationOptions o;
  o.resolution = 8;
  o.device = Device::Cpu;
  const TriangleMesh t = to_triangle_mesh(tessellate(utah_teapot(), o));
  PolygonMesh m;
  m.positions.assign(t.positions.begin(), t.positions.end());
  for (std::int64_t f = 0; f < t.triangle_count(); ++f) m.add_face(std::span<const std::uint32_t>(t.triangles.data() + 3 * f, 3));
  return m;
}

// The built-in edit: a twist of `degrees` about the vertical (z) axis through the lattice's centre, growing from
// nothing at the bottom layer to the full angle at the top.
void twist(Lattice& l, double degrees) {
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  for (std::size_t i = 0; i < l.control_points.size(); ++i)
    lo[i % 3] = std::min(lo[i % 3], l.control_points[i]), hi[i % 3] = std::max(hi[i % 3], l.control_points[i]);
  const double cx = 0.5 * (lo[0] + hi[0]), cy = 0.5 * (lo[1] + hi[1]);
  for (std::size_t p = 0; p < l.control_points.size() / 3; ++p) {
    double* c = l.control_points.data() + 3 * p;
    const double a = degrees * 3.14159265358979323846 / 180 * (c[2] - lo[2]) / (hi[2] - lo[2]);
    const double x = c[0] - cx, y = c[1] - cy;
    c[0] = cx + std::cos(a) * x - std::sin(a) * y;
    c[1] = cy + std::sin(a) * x + std::cos(a) * y;
  }
}

template <class T>
void run(const FfdArgs& a, const PolygonMesh& mesh, const Lattice& lattice, const FfdOptions& o, nlohmann::json& report) {
  FfdSession<T> session(mesh, lattice, o);
  session.update(lattice.control_points);
  const TriangleMesh deformed = session.mesh();
  check_finite(deformed, a.input + " deformed by the lattice" + (a.edits.empty() ? "" : " with the edits of " + a.edits));
  write_mesh(a.output, deformed, choose_mesh_format(a.output, a.format));
  if (!a.patches.empty()) session.write_bezier_patches(a.patches);
  const FfdReport& r = session.report();
  std::printf("ffd %s on %s (%s): %lld faces -> %lld triangles, %lld vertices", ffd_method_name(r.method), device_name(r.device),
              a.precision.c_str(), (long long)r.input_faces, (long long)r.output_triangles, (long long)r.output_vertices);
  if (r.method == FfdMethod::Accurate)
    std::printf("; %lld pieces in %lld Bezier surfaces (degree up to %dx%d)", (long long)r.pieces, (long long)r.surfaces,
                r.max_degree_s, r.max_degree_t);
  std::printf("\n  preprocessing %.3f s, update %.3f ms -> %s\n", r.preprocess_seconds, 1e3 * r.update_seconds, a.output.c_str());
  if (!r.device_choice.empty()) std::printf("  %s\n", r.device_choice.c_str());
  report["method"] = ffd_method_name(r.method);
  report["device"] = device_name(r.device);
  if (!r.device_choice.empty()) report["device_choice"] = r.device_choice;
  report["precision"] = a.precision;
  report["level"] = o.level;
  report["input_faces"] = r.input_faces;
  report["input_triangles"] = r.input_triangles;
  report["pieces"] = r.pieces;
  report["surfaces"] = r.surfaces;
  report["samples"] = r.samples;
  report["max_degree"] = {r.max_degree_s, r.max_degree_t};
  report["vertices"] = r.output_vertices;
  report["triangles"] = r.output_triangles;
  report["seconds"] = {{"total", r.preprocess_seconds + r.update_seconds},
                       {"preprocess", r.preprocess_seconds},
                       {"update", r.update_seconds}};
  report["degenerate_skipped"] = report.value("degenerate_skipped", std::int64_t(0)) + r.degenerate_skipped;
}

}  // namespace

void add_ffd(CLI::App& app) {
  auto a = std::make_shared<FfdArgs>();
  auto* cmd = app.add_subcommand("ffd", "Deform a polygon mesh (.obj, .ply, .off, .stl) with a B-spline lattice: point FFD, "
                                        "accurate FFD (exact trimmed Bezier pieces, tessellated) or uniform up-sampling");
  cmd->add_option("input", a->input, "Mesh file: .obj, .ply, .off or .stl (none: the Utah teapot, twisted 45 degrees)");
  cmd->add_option("--twist", a->twist_degrees, "Also twist the lattice by this angle about z, growing from bottom to top");
  cmd->add_option("--output,-o", a->output, "Output mesh: .ply, .obj, .glb, .stl, .vtp or .vtu (default: <input stem>-ffd.ply)");
  cmd->add_option("--patches", a->patches,
                  "Accurate: also write the exact deformed surface: .json (control nets + trimming polygons) or .bv "
                  "(triangular Bezier patches); both load back with tessellate");
  cmd->add_option("--lattice", a->lattice, "Control points per axis: N or NxNxN (default 9)");
  cmd->add_option("--degree", a->degree, "B-spline degree per axis, 1..3: D or DxDxD (default 3)");
  cmd->add_option("--padding", a->padding, "Lattice margin around the mesh's box, as a fraction of its largest side");
  cmd->add_option("--lattice-file", a->lattice_file,
                  "JSON lattice layout (count, degree, padding, explicit knots, world_to_parameter embedding); "
                  "overrides --lattice, --degree and --padding");
  cmd->add_option("--edits", a->edits, "JSON edits: control-point moves and direct-manipulation targets (docs/formats.md)");
  cmd->add_option("--method", a->method, "point | accurate | uus")->check(CLI::IsMember({"point", "accurate", "uus"}));
  cmd->add_option("--subdivisions,-m", a->level, "Accurate and uus: each triangle becomes m^2 sub-triangles (1..256)");
  // The old name, kept for scripts: "level" means the iso value in `isosurface`.
  cmd->add_option_function<int>(
         "--level",
         [a](const int& m) {
           a->level = m;
           std::fprintf(stderr, "parasurf: warning: ffd --level is now --subdivisions (-m)\n");
         },
         "Old name of --subdivisions")
      ->group("");
  cmd->add_option("--precision", a->precision, "float | double")->check(CLI::IsMember({"float", "double"}));
  cmd->add_option("--device", a->device, "auto | cpu | cuda");
  add_threads_option(cmd, a->threads);
  cmd->add_flag("--allow-non-manifold", a->allow_non_manifold, "Deform meshes with non-manifold edges too");
  add_mesh_format_option(cmd, a->format);
  cmd->add_option("--json", a->json, "Write the report as JSON to this file");
  cmd->callback([a] {
    const bool builtin = a->input.empty();
    if (builtin && a->edits.empty() && a->twist_degrees == 0) a->twist_degrees = 45;
    if (a->output.empty() && builtin) a->output = "teapot-ffd.ply";
    if (a->output.empty()) {
      std::string stem = a->input.substr(a->input.find_last_of('/') + 1);
      stem = stem.substr(0, stem.find_last_of('.'));
      a->output = stem + "-ffd.ply";
    }
    if (!a->patches.empty() && a->method != "accurate")
      throw Error(ErrorKind::InvalidArgument, "--patches needs --method accurate (the other methods have no exact surface)");
    choose_mesh_format(a->output, a->format);  // a bad name fails before any work
    MeshReadReport read;
    if (builtin) read.format = "built-in Utah teapot";
    if (!builtin) note_if_fifo(a->input);
    const PolygonMesh mesh = builtin ? teapot_mesh() : read_polygon_mesh(a->input, &read);
    if (builtin) std::printf("mesh: Utah teapot (built in), %lld triangles\n", (long long)mesh.face_count());
    if (read.degenerate_skipped)
      std::printf("%s: skipped %lld degenerate faces (repeated corners or no area)\n", a->input.c_str(), (long long)read.degenerate_skipped);
    LatticeSpec spec;
    if (!a->lattice_file.empty()) {
      spec = read_lattice_spec(a->lattice_file);
    } else {
      spec.count = parse_triple(a->lattice, "--lattice");
      spec.degree = parse_triple(a->degree, "--degree");
      spec.padding = a->padding;
    }
    std::array<double, 3> lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
    for (std::int64_t v = 0; v < mesh.vertex_count(); ++v)
      for (int d = 0; d < 3; ++d) lo[d] = std::min(lo[d], mesh.positions[3 * v + d]), hi[d] = std::max(hi[d], mesh.positions[3 * v + d]);
    // A lattice, an edit or a mesh refused names the file it came from.
    Lattice lattice = naming_file(a->lattice_file.empty() ? a->input : a->lattice_file, [&] { return make_lattice(spec, lo, hi); });
    double miss = 0;
    if (!a->edits.empty()) {
      const LatticeEdits edits = read_lattice_edits(a->edits);
      miss = naming_file(a->edits, [&] { return apply_lattice_edits(lattice, edits); });
      std::printf("edits: %zu control-point moves, %zu targets (largest miss %.3g)\n", edits.moves.size(), edits.targets.size(), miss);
    }
    if (a->twist_degrees != 0) {
      if (!std::isfinite(a->twist_degrees)) throw Error(ErrorKind::InvalidArgument, "--twist must be a finite angle");
      twist(lattice, a->twist_degrees);
      std::printf("twist: %g degrees about z\n", a->twist_degrees);
    }
    FfdOptions o;
    o.method = parse_ffd_method(a->method);
    o.level = a->level;
    o.device = parse_device(a->device);
    o.threads = a->threads;
    o.allow_non_manifold = a->allow_non_manifold;
    nlohmann::json report;
    report["input_format"] = read.format;
    report["degenerate_skipped"] = read.degenerate_skipped;
    report["lattice"] = {{"count", lattice.count}, {"degree", lattice.degree}};
    report["target_miss"] = miss;
    // A failure of the deformation may come from the mesh or from the lattice (one far larger than the mesh leaves
    // every face degenerate in its coordinates): both are named.
    std::string named = builtin ? std::string() : a->input;
    if (!a->lattice_file.empty()) named = named.empty() ? a->lattice_file : named + " with lattice " + a->lattice_file;
    naming_file(named, [&] {
      if (a->precision == "float") run<float>(*a, mesh, lattice, o, report);
      else run<double>(*a, mesh, lattice, o, report);
    });
    if (!a->json.empty())
      write_json_report(a->json, "ffd", builtin ? std::string("built-in Utah teapot") : a->input, a->output, report);
  });
}

}  // namespace parasurf::cli
