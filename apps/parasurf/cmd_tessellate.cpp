// parasurf tessellate: a patch model (BezierView, .bpt, B-spline JSON, or the built-in teapot) into a welded mesh.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "parasurf/commands.hpp"
#include "parasurf/error.hpp"
#include "parasurf/patches.hpp"
#include "parasurf/tessellate.hpp"

namespace parasurf::cli {

namespace {

struct TessellateArgs {
  std::string input, output, precision = "double", device = "auto", strategy = "auto", json, format;
  int resolution = 16;
  double tolerance = 0, crease = 30;
  bool keep_degenerate = false, no_orient = false, compare_uniform = false, host_assembly = false;
  std::string hybrid_scheme = "dynamic";
  double cpu_share = -1;
  int threads = 0;
  double seam_tolerance = 1e-9;
};

std::string default_output(const std::string& input) {
  if (input.empty()) return "teapot.ply";
  auto slash = input.find_last_of('/');
  std::string stem = slash == std::string::npos ? input : input.substr(slash + 1);
  const auto dot = stem.find_last_of('.');
  if (dot != std::string::npos) stem = stem.substr(0, dot);
  return stem + ".ply";
}

}  // namespace

void add_tessellate(CLI::App& app) {
  auto a = std::make_shared<TessellateArgs>();
  auto* cmd = app.add_subcommand("tessellate",
                                 "Tessellate a patch model (.bv, .bpt, B-spline .json; none = the Utah teapot) into a "
                                 "welded, crack-free mesh");
  cmd->add_option("input", a->input, "Patch file: BezierView .bv, teapot .bpt, B-spline/NURBS .json (docs/formats.md)");
  cmd->add_option("--output,-o", a->output, "Mesh file: .ply, .obj, .glb, .stl, .vtp or .vtu (default: <input stem>.ply, teapot.ply)");
  auto* res = cmd->add_option("--resolution,-r", a->resolution, "Segments per patch side (uniform), 1..16384");
  auto* tol = cmd->add_option("--tolerance,-t", a->tolerance,
                              "Adaptive: largest distance from the surface to the mesh, in model units");
  res->excludes(tol);
  cmd->add_option("--crease-angle", a->crease, "Average normals across seams only below this angle (degrees)");
  cmd->add_flag("--keep-degenerate", a->keep_degenerate, "Keep zero-area triangles");
  cmd->add_flag("--no-orient", a->no_orient, "Keep every patch's own orientation");
  cmd->add_option("--seam-tolerance", a->seam_tolerance,
                  "Patch sides are one seam when their curves agree within this fraction of the model's size "
                  "(default 1e-9; 0: bitwise equal control points), or within the decimal step the file wrote its "
                  "coordinates with where that is larger");
  cmd->add_flag("--compare-uniform", a->compare_uniform,
                "With --tolerance: also find the uniform resolution that meets it and report its triangle count");
  cmd->add_option("--precision", a->precision, "float | double")->check(CLI::IsMember({"float", "double"}));
  cmd->add_option("--device", a->device, "auto | cpu | cuda | hybrid (CPU threads and the GPU evaluate together)");
  cmd->add_option("--hybrid-scheme", a->hybrid_scheme,
                  "hybrid: dynamic (runs of patches taken on the fly by both) or static (a fixed CPU share)")
      ->check(CLI::IsMember({"static", "dynamic"}));
  cmd->add_option("--cpu-share", a->cpu_share, "hybrid static: fraction of the samples for the CPU (default: profiled)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--strategy", a->strategy, "GPU strategy: auto | direct | casteljau | tables");
  add_threads_option(cmd, a->threads);
  cmd->add_flag("--host-assembly", a->host_assembly,
                "On CUDA: copy the samples back and weld on the host's threads (default: weld on the GPU)");
  add_mesh_format_option(cmd, a->format);
  cmd->add_option("--json", a->json, "Write the report as JSON to this file");
  cmd->callback([a, tol] {
    if (a->output.empty()) a->output = default_output(a->input);
    const MeshFormat format = choose_mesh_format(a->output, a->format);
    TessellationOptions o;
    o.resolution = a->resolution;
    o.tolerance = a->tolerance;
    if (a->tolerance < 0 || !std::isfinite(a->tolerance) || (tol->count() > 0 && !(a->tolerance > 0)))
      throw Error(ErrorKind::InvalidArgument, "--tolerance must be a positive number");
    o.crease_angle_degrees = a->crease;
    o.keep_degenerate = a->keep_degenerate;
    o.orient = !a->no_orient;
    o.seam_tolerance = a->seam_tolerance;
    o.precision = a->precision == "float" ? Precision::Float : Precision::Double;
    o.device = parse_device(a->device);
    o.strategy = parse_patch_strategy(a->strategy);
    o.threads = a->threads;
    o.assemble_on_device = !a->host_assembly;
    o.hybrid_scheme = a->hybrid_scheme == "static" ? HybridScheme::Static : HybridScheme::Dynamic;
    o.cpu_share = a->cpu_share;
    if (output_rank()) o.progress = [](double f) { progress_bar("tessellation", f); };  // drawn only on a terminal
    o.team = mpi_tessellation_team();  // under mpirun: every rank evaluates its share of the patches
    note_if_fifo(a->input);
    const PatchModel model = a->input.empty() ? utah_teapot() : read_patch_model(a->input);
    TessellationReport rep;
    const PatchMesh mesh = tessellate(model, o, &rep);
    if (!output_rank()) return;  // rank 0 assembles and writes
    const TriangleMesh out = to_triangle_mesh(mesh);
    check_finite(out, a->input.empty() ? "the Utah teapot" : a->input);
    write_mesh(a->output, out, format);
    const double total =
        rep.seconds_plan + rep.seconds_evaluate + rep.seconds_exchange + rep.seconds_assemble + rep.seconds_download;
    std::printf("model: %s\n", model.name.c_str());
    std::printf("patches: %lld (%lld tensor-product, %lld triangular), polyhedron faces: %lld\n", (long long)rep.patches,
                (long long)rep.tensor_patches, (long long)rep.triangular_patches, (long long)rep.polyhedron_faces);
    std::printf("edges: %lld shared, %lld open, %lld collapsed, %lld T-junctions stitched (%lld sides); %lld patches "
                "reoriented; %lld crease vertices\n",
                (long long)rep.shared_edges, (long long)rep.open_edges, (long long)rep.collapsed_edges,
                (long long)rep.t_junction_edges, (long long)rep.t_junction_pieces, (long long)rep.flipped_patches,
                (long long)rep.crease_vertices);
    if (model.printed_step > 0 && rep.seam_tolerance > 0)
      std::printf("seams: sides within %.3g taken as one (coordinates written to steps of %g)\n", rep.seam_tolerance,
                  model.printed_step);
    if (o.tolerance > 0)
      std::printf("tolerance %g: %d..%d segments per patch side\n", o.tolerance, rep.min_segments, rep.max_segments);
    else
      std::printf("resolution: %d segments per patch side\n", o.resolution);
    std::printf("points evaluated: %lld on %s (%s, %s); mesh: %lld vertices, %lld triangles\n",
                (long long)rep.evaluated_points, device_name(rep.device), rep.strategy.c_str(), a->precision.c_str(),
                (long long)mesh.vertex_count(), (long long)mesh.triangle_count());
    std::printf("time: %.2f ms (plan %.2f, evaluate %.2f, assemble on the %s %.2f", total * 1e3, rep.seconds_plan * 1e3,
                rep.seconds_evaluate * 1e3, rep.assembled_on_device ? "GPU" : "host", rep.seconds_assemble * 1e3);
    if (rep.assembled_on_device) std::printf(", mesh download %.2f", rep.seconds_download * 1e3);
    std::printf(")\n");
    if (!rep.assembly_note.empty()) std::printf("assembled on the host: %s\n", rep.assembly_note.c_str());
    if (!rep.device_choice.empty()) std::printf("%s\n", rep.device_choice.c_str());
    if (rep.device == Device::Hybrid)
      std::printf("hybrid (%s): the CPU evaluated %.1f%% of the samples\n", a->hybrid_scheme.c_str(), rep.cpu_share * 100);
    if (o.team)
      std::printf("MPI: %d ranks; rank 0 evaluated %lld of the patches, gathered the others' samples in %.2f ms\n",
                  o.team->members, (long long)rep.own_patches, rep.seconds_exchange * 1e3);
    nlohmann::json j = {{"model", model.name},         {"patches", rep.patches},
                        {"evaluated_points", rep.evaluated_points}, {"vertices", mesh.vertex_count()},
                        {"triangles", mesh.triangle_count()},        {"device", device_name(rep.device)},
                        {"strategy", rep.strategy},                  {"device_choice", rep.device_choice},
                        {"shared_edges", rep.shared_edges}, {"open_edges", rep.open_edges}, {"seam_tolerance", rep.seam_tolerance},
                        {"t_junction_edges", rep.t_junction_edges}, {"t_junction_pieces", rep.t_junction_pieces},
                        {"mpi_ranks", o.team ? o.team->members : 1},
                        {"assembled_on", rep.assembled_on_device ? "gpu" : "host"},
                        {"seconds", {{"total", total}, {"plan", rep.seconds_plan}, {"evaluate", rep.seconds_evaluate},
                                     {"exchange", rep.seconds_exchange}, {"assemble", rep.seconds_assemble},
                                     {"download", rep.seconds_download}}}};
    if (o.tolerance > 0) {
      j["tolerance"] = o.tolerance;
      if (a->compare_uniform) {
        const int n = uniform_resolution_for(model, o.tolerance, 2048);
        TessellationOptions u = o;
        u.tolerance = 0;
        u.resolution = n;
        u.device = Device::Cpu;
        u.team = nullptr;  // rank 0 alone: the other ranks are done
        const PatchMesh um = tessellate(model, u);
        std::printf("uniform resolution meeting the tolerance: %d segments, %lld triangles (adaptive: %lld, %.2fx fewer)\n",
                    n, (long long)um.triangle_count(), (long long)mesh.triangle_count(),
                    double(um.triangle_count()) / double(std::max<std::int64_t>(1, mesh.triangle_count())));
        j["uniform_resolution"] = n;
        j["uniform_triangles"] = um.triangle_count();
      }
    }
    // The file has a vertex per (position, normal): a position on a crease is written once per side.
    const std::int64_t split = out.vertex_count() - mesh.vertex_count();
    std::printf("wrote %s (%lld vertices, %lld triangles", a->output.c_str(), (long long)out.vertex_count(),
                (long long)out.triangle_count());
    if (split > 0) std::printf("; +%lld at creases, a vertex per normal", (long long)split);
    std::printf(")\n");
    if (!a->json.empty()) {
      write_json_report(a->json, "tessellate", a->input.empty() ? "built-in Utah teapot" : a->input, a->output, j);
    }
  });
}

}  // namespace parasurf::cli
