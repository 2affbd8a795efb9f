// parasurf surface: evaluate a Bézier surface on a grid and write it as a triangle mesh.
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "parasurf/bezier.hpp"
#include "parasurf/commands.hpp"
#include "parasurf/error.hpp"
#include "parasurf/io.hpp"

namespace parasurf::cli {

namespace {

struct SurfaceArgs {
  std::string input, generator = "wavy", degree = "5x5", resolution = "256x256", method = "auto",
                     precision = "float", device = "auto", output = "surface.ply", obj, json, format;
  std::int64_t seed = -1;
  bool rational = false, tensor_cores = false;
  int threads = 0;
};

template <class T>
void run(const SurfaceArgs& a, const BezierSurface& surface, GridSpec grid) {
  EvalOptions opt;
  opt.method = parse_method(a.method);
  opt.device = parse_device(a.device);
  opt.threads = a.threads;
  opt.gpu_tensor_cores = a.tensor_cores;
  EvalRequest req;
  req.positions = true;
  req.normals = true;
  EvalReport report;
  // The mesh's 32-bit indices limit the grid: refuse before evaluating, not after.
  if (grid.rows * grid.cols > std::int64_t(UINT32_MAX))
    throw Error(ErrorKind::InvalidArgument, "--resolution " + std::to_string(grid.rows) + "x" + std::to_string(grid.cols) +
                                                ": a grid of " + std::to_string(grid.rows * grid.cols) +
                                                " vertices exceeds the 2^32 vertex indices of the mesh writer");
  auto samples = evaluate_grid<T>(surface, grid, req, opt, &report);
  std::int64_t degenerate = 0;
  for (auto f : samples.degenerate) degenerate += f;
  const TriangleMesh mesh = grid_mesh(samples, grid.rows, grid.cols);
  check_finite(mesh, a.input.empty() ? "the generated surface" : a.input);
  write_mesh(a.output, mesh, choose_mesh_format(a.output, a.format));
  if (!a.obj.empty()) write_mesh(a.obj, mesh);
  std::printf("surface: degree %dx%d%s, %lldx%lld samples, method %s, device %s, %s\n", surface.degree_u,
              surface.degree_v, surface.rational() ? " rational" : "", (long long)grid.rows, (long long)grid.cols,
              method_name(report.method_used), device_name(report.device_used), a.precision.c_str());
  if (!report.device_choice.empty()) std::printf("%s\n", report.device_choice.c_str());
  if (a.tensor_cores && !report.gpu_tensor_cores)
    std::printf("note: the tensor-core path did not apply (it takes float grids of the factored method on a GPU of "
                "compute capability 8.0+, u-degree up to 19)\n");
  std::printf("evaluated in %.3f ms (%.1f Mpoints/s)%s; %lld degenerate normals\n", report.seconds_total * 1e3,
              grid.count() / report.seconds_total * 1e-6, report.seconds_kernel > 0 ? " incl. transfer" : "",
              (long long)degenerate);
  std::printf("wrote %s (%lld vertices, %lld triangles)%s%s\n", a.output.c_str(), (long long)mesh.vertex_count(),
              (long long)mesh.triangle_count(), a.obj.empty() ? "" : " and ", a.obj.c_str());
  if (!a.json.empty()) {
    const nlohmann::json doc = {{"degree", {surface.degree_u, surface.degree_v}},
                             {"rational", surface.rational()},
                             {"resolution", {grid.rows, grid.cols}},
                             {"method", method_name(report.method_used)},
                             {"device", device_name(report.device_used)},
                             {"device_choice", report.device_choice},
                             {"precision", a.precision},
                             {"seconds", {{"total", report.seconds_total}, {"kernel", report.seconds_kernel}}},
                             {"degenerate_normals", degenerate},
                             {"vertices", mesh.vertex_count()},
                             {"triangles", mesh.triangle_count()}};
    write_json_report(a.json, "surface", a.input.empty() ? "built-in " + a.generator : a.input, a.output, doc);
  }
}

}  // namespace

void add_surface(CLI::App& app) {
  auto args = std::make_shared<SurfaceArgs>();
  auto* cmd = app.add_subcommand(
      "surface", "Evaluate a Bezier surface (a control-net file, or a built-in one) on a grid; write a mesh");
  cmd->add_option("input", args->input, "Control-net file (docs/formats.md); none = built-in generator");
  cmd->add_option("--generator", args->generator, "Built-in net when no file is given: wavy | random")
      ->check(CLI::IsMember({"wavy", "random"}));
  cmd->add_option("--degree", args->degree, "Degree of the built-in net, M or MxN (1..32)");
  cmd->add_option("--seed", args->seed, "Seed of the random net (default: fresh, printed)");
  cmd->add_flag("--rational", args->rational, "Random net with random weights");
  cmd->add_option("--resolution,-r", args->resolution, "Grid samples, N or RxC (2..65536 each)");
  cmd->add_option("--method", args->method, "auto | brute | matrix | mle | casteljau | factored");
  cmd->add_option("--precision", args->precision, "float | double")->check(CLI::IsMember({"float", "double"}));
  cmd->add_option("--device", args->device, "auto | cpu | cuda | hybrid");
  add_threads_option(cmd, args->threads);
  cmd->add_flag("--tensor-cores", args->tensor_cores,
                "GPU, float, factored: stage 2 on TF32 tensor cores with split operands (opt-in; slower than the FP32 kernel on the H200)");
  cmd->add_option("--output,-o", args->output, "Mesh file: .ply, .obj, .glb, .stl, .vtp or .vtu");
  add_mesh_format_option(cmd, args->format);
  cmd->add_option("--json", args->json, "Write the report as JSON to this file (- for standard output)");
  cmd->add_option("--obj", args->obj, "Also write this .obj file");
  cmd->callback([args] {
    const auto [rows, cols] = parse_pair(args->resolution, "--resolution");
    if (rows < 2 || cols < 2 || rows > kMaxGridSide || cols > kMaxGridSide)
      throw Error(ErrorKind::InvalidArgument, "--resolution " + args->resolution + " is outside 2.." +
                                                  std::to_string(kMaxGridSide) + " per direction");
    // fail on bad names before any work, so that no output is half written
    if (!args->output.empty()) choose_mesh_format(args->output, args->format);
    if (!args->obj.empty() && !(args->obj.size() > 4 && args->obj.ends_with(".obj")))
      throw Error(ErrorKind::InvalidArgument, "--obj must name a .obj file, not '" + args->obj + "'");
    if (args->output.empty()) throw Error(ErrorKind::InvalidArgument, "--output must name a mesh file (" + mesh_output_formats() + ")");
    parse_method(args->method);
    parse_device(args->device);
    BezierSurface surface;
    if (!args->input.empty()) {
      surface = read_control_net(args->input);
      validate(surface);
    } else {
      const auto [m, n] = parse_pair(args->degree, "--degree");
      if (m < 1 || n < 1 || m > kMaxBezierDegree || n > kMaxBezierDegree)
        throw Error(ErrorKind::InvalidArgument,
                    "--degree " + args->degree + " is outside 1.." + std::to_string(kMaxBezierDegree));
      if (args->generator == "random") {
        const std::uint64_t seed = args->seed >= 0 ? std::uint64_t(args->seed) : std::random_device{}();
        std::printf("random control net, seed %llu\n", (unsigned long long)seed);
        surface = make_random_surface(int(m), int(n), seed, args->rational);
      } else {
        surface = make_wavy_surface(int(m), int(n));
      }
    }
    const GridSpec grid{rows, cols};
    if (args->precision == "double") run<double>(*args, surface, grid);
    else run<float>(*args, surface, grid);
  });
}

}  // namespace parasurf::cli
