// parasurf isosurface: a welded marching-cubes mesh from a volume file, a raw file or a built-in field.
#include <sys/resource.h>

#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "parasurf/commands.hpp"
#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"

namespace parasurf::cli {

namespace {

struct IsoArgs {
  std::string input, output, field, size = "128", levels, direction = "descent", topology = "classic";
  std::string format, device = "auto", devices, json, raw_dims, raw_type, endian = "little", spacing, origin, labels, scalars, balance = "cost";
  std::vector<std::int32_t> exclude_labels;
  bool keep_degenerate = false, keep_pinches = false, no_normals = false, quiet = false, per_label = false;
  bool stream_mesh = false;
  int threads = 0, smoothing = 32;
  std::int64_t slab_slices = 0, header_bytes = 0;
  double memory_mb = 0;
};

std::vector<double> parse_list(const std::string& text, const std::string& option, std::size_t want = 0) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !std::isfinite(v))
      throw Error(ErrorKind::InvalidArgument, option + ": '" + item + "' is not a finite number");
    out.push_back(v);
  }
  if (out.empty() || (want && out.size() != want))
    throw Error(ErrorKind::InvalidArgument, option + " '" + text + "': expected " +
                                                (want ? std::to_string(want) + " comma-separated numbers" : "numbers"));
  return out;
}

std::array<std::int64_t, 3> parse_dims(const std::string& text, const std::string& option) {
  std::array<std::int64_t, 3> d{};
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, 'x')) parts.push_back(item);
  if (parts.size() != 1 && parts.size() != 3)
    throw Error(ErrorKind::InvalidArgument, option + " '" + text + "' is not N or NxMxK");
  for (int a = 0; a < 3; ++a) {
    const std::string& p = parts[parts.size() == 1 ? 0 : std::size_t(a)];
    char* end = nullptr;
    const long long v = std::strtoll(p.c_str(), &end, 10);
    if (p.empty() || *end != '\0' || v < 1)
      throw Error(ErrorKind::InvalidArgument, option + " '" + text + "': sizes must be positive integers");
    d[a] = v;
  }
  return d;
}

std::string stem_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  std::string stem = slash == std::string::npos ? path : path.substr(slash + 1);
  for (const char* ext : {".nii.gz", ".gz", ".nii", ".nrrd", ".nhdr", ".mhd", ".mha", ".vtk", ".raw"})
    if (stem.size() > std::strlen(ext) && stem.ends_with(ext)) return stem.substr(0, stem.size() - std::strlen(ext));
  return stem;
}


// The volume the arguments name: a built-in field (the tangle when nothing is named), a raw file, or a volume file.
std::unique_ptr<VolumeSource> open_input(const IsoArgs& a, std::string& field) {
  std::unique_ptr<VolumeSource> volume;
  field = a.field;
  if (a.input.empty() && field.empty()) field = "tangle";
  if (!a.input.empty() && !field.empty())
    throw Error(ErrorKind::InvalidArgument, "give either an input file or --field, not both");
  if (!field.empty()) {
    // (a field's samples span its own box: a spacing or origin given for it would be left out of the mesh)
    if (!a.spacing.empty() || !a.origin.empty())
      throw Error(ErrorKind::InvalidArgument, "--spacing and --origin apply to raw files, not to --field " + field);
    volume = synthetic_field(field, parse_dims(a.size, "--size"));
  } else if (!a.raw_dims.empty() || !a.raw_type.empty()) {
    if (a.raw_dims.empty() || a.raw_type.empty())
      throw Error(ErrorKind::InvalidArgument, "a raw file needs both --raw-dims and --raw-type");
    RawVolumeOptions r;
    r.dims = parse_dims(a.raw_dims, "--raw-dims");
    r.type = parse_voxel_type(a.raw_type);
    r.big_endian = a.endian == "big";
    r.header_bytes = a.header_bytes;
    if (!a.spacing.empty()) {
      const auto s = parse_list(a.spacing, "--spacing", 3);
      r.spacing = {s[0], s[1], s[2]};
    }
    if (!a.origin.empty()) {
      const auto o = parse_list(a.origin, "--origin", 3);
      r.origin = {o[0], o[1], o[2]};
    }
    volume = open_raw_volume(a.input, r);
  } else {
    if (!a.spacing.empty() || !a.origin.empty())
      throw Error(ErrorKind::InvalidArgument, "--spacing and --origin apply to raw files (headers carry their own)");
    note_if_fifo(a.input);
    volume = open_volume(a.input);
  }
  return volume;
}

// --per-label: the boundaries between the regions of a label map.
void run_per_label(const IsoArgs& a, VolumeSource& volume, const std::string& out, MeshFormat format,
                   const std::string& input) {
  if (!a.levels.empty() || !a.labels.empty() || !a.scalars.empty())
    throw Error(ErrorKind::InvalidArgument, "--per-label takes the label map as input: no --level, --labels or --scalars");
  LabelBoundaryOptions lo;
  lo.smoothing_iterations = a.smoothing;
  lo.exclude_labels = a.exclude_labels;
  lo.threads = a.threads;
  lo.device = parse_device(a.device);
  LabelBoundaryReport rep;
  const TriangleMesh mesh = extract_label_boundaries(volume, lo, &rep);
  check_finite(mesh, volume.name());
  write_mesh(out, mesh, format);
  const auto& g = volume.geometry();
  if (!a.quiet) {
    std::printf("label map: %s, %lldx%lldx%lld %s; %zu labels with boundaries, %lld label pairs\n",
                volume.name().c_str(), (long long)g.dims[0], (long long)g.dims[1], (long long)g.dims[2],
                voxel_type_name(volume.type()), rep.labels.size(), (long long)rep.label_pairs);
    std::printf("%s; time: %.2f ms (read %.2f, faces %.2f, smoothing %.2f)\n", rep.device.c_str(), rep.seconds_total * 1e3,
                rep.seconds_read * 1e3, rep.seconds_faces * 1e3, rep.seconds_smooth * 1e3);
    std::printf("wrote %s (%lld vertices, %lld triangles)\n", out.c_str(), (long long)mesh.vertex_count(),
                (long long)mesh.triangle_count());
  }
  if (!a.json.empty()) {
    nlohmann::json j = {{"dims", g.dims},
                        {"mode", "per-label"},             {"labels", rep.labels}, {"device", rep.device},
                        {"label_pairs", rep.label_pairs},  {"vertices", mesh.vertex_count()},
                        {"triangles", mesh.triangle_count()}, {"groups", mesh.group_names},
                        {"seconds", {{"total", rep.seconds_total}, {"read", rep.seconds_read},
                                     {"faces", rep.seconds_faces}, {"smooth", rep.seconds_smooth}}}};
    write_json_report(a.json, "isosurface", input, out, j);
  }
  if (mesh.triangle_count() == 0) {
    std::fprintf(stderr, "parasurf: the label map has no boundaries; wrote an empty mesh to %s\n", out.c_str());
    throw ExitStatus{3};
  }
}

// The extraction's options from the arguments; `labels` and `scalars` hold the companion volumes they point to.
IsosurfaceOptions isosurface_options(const IsoArgs& a, const std::string& field, std::unique_ptr<VolumeSource>& labels,
                                     std::unique_ptr<VolumeSource>& scalars) {
  IsosurfaceOptions o;
  if (!a.labels.empty()) o.labels = (labels = open_volume(a.labels)).get();
  if (!a.scalars.empty()) o.scalars = (scalars = open_volume(a.scalars)).get();
  o.exclude_labels = a.exclude_labels;
  if (!a.levels.empty()) o.levels = parse_list(a.levels, "--level");
  else if (!field.empty()) o.levels = {synthetic_field_level(field)};
  o.direction = parse_gradient_direction(a.direction);
  o.topology = parse_case_topology(a.topology);
  o.keep_degenerate = a.keep_degenerate;
  o.split_pinches = !a.keep_pinches;
  o.normals = !a.no_normals;
  o.device = parse_device(a.device);
  if (!a.devices.empty()) {
    if (o.device == Device::Cpu) throw Error(ErrorKind::InvalidArgument, "--devices lists GPUs; it conflicts with --device cpu");
    if (!cuda_available()) throw Error(ErrorKind::Device, "--devices: " + cuda_unavailable_reason());
    o.device = Device::Cuda;
    if (a.devices == "all") {
      for (int d = 0; d < cuda_device_count(); ++d)
        if (cuda_device_usable(d)) o.cuda_devices.push_back(d);
    } else {
      for (double d : parse_list(a.devices, "--devices")) {
        if (d != std::floor(d) || d < 0 || d > 1024)
          throw Error(ErrorKind::InvalidArgument, "--devices: '" + a.devices + "' is not all or GPU indices");
        o.cuda_devices.push_back(int(d));
      }
    }
  }
  o.threads = a.threads;
  if (a.slab_slices < 0) throw Error(ErrorKind::InvalidArgument, "--slab-slices must be 0 or positive");
  o.slab_slices = a.slab_slices;
  if (!(a.memory_mb >= 0) || a.memory_mb > 1e9) throw Error(ErrorKind::InvalidArgument, "--memory must be 0..1e9 MiB");
  o.memory_budget = std::uint64_t(a.memory_mb * 1048576.0);
  return o;
}

std::uint64_t peak_rss_bytes();

// Levels of a volume, on one process (or spread over the ranks under mpirun), with the report.
void run_levels(const IsoArgs& a, VolumeSource& volume, IsosurfaceOptions o, const std::string& out, MeshFormat format,
                const std::string& input) {
  const bool show = !a.quiet;
  if (mpi_world()) {  // mpirun -np N: every rank extracts its own z range
    isosurface_mpi(volume, o, out, format, input, show, a.json, a.balance);
    return;
  }
  if (show)
    o.progress = [](double f) { progress_bar("slabs", f); };
  const auto& g = volume.geometry();
  if (show)
    std::printf("volume: %s, %lldx%lldx%lld %s, spacing %g %g %g\n", volume.name().c_str(), (long long)g.dims[0],
                (long long)g.dims[1], (long long)g.dims[2], voxel_type_name(volume.type()), g.spacing[0],
                g.spacing[1], g.spacing[2]);
  IsosurfaceReport rep;
  const TriangleMesh mesh = extract_isosurface(volume, o, &rep);
  check_finite(mesh, volume.name());
  write_mesh(out, mesh, format);
  const double voxels = double(g.voxel_count()) * double(rep.levels.size());
  if (show) {
    std::printf("levels:");
    for (double l : rep.levels) std::printf(" %g", l);
    std::printf("\n%s, %lld slab(s) of %lld slices\n", rep.device.c_str(), (long long)rep.slabs,
                (long long)rep.slab_slices);
    if (!rep.device_choice.empty()) std::printf("%s\n", rep.device_choice.c_str());
    std::printf("time: %.2f ms (read %.2f, classify %.2f, scan %.2f, generate %.2f, copy %.2f); %.1f Mvoxel/s\n",
                rep.seconds_total * 1e3, rep.seconds_read * 1e3, rep.profile.seconds_classify * 1e3, rep.profile.seconds_scan * 1e3,
                rep.profile.seconds_generate * 1e3, rep.profile.seconds_copy * 1e3, voxels / rep.seconds_total / 1e6);
    print_tie_cleanup(rep);
    std::printf("wrote %s (%lld vertices, %lld triangles)\n", out.c_str(), (long long)mesh.vertex_count(),
                (long long)mesh.triangle_count());
  }
  if (!a.json.empty()) {
    nlohmann::json j = {{"dims", g.dims},
                        {"type", voxel_type_name(volume.type())},
                        {"levels", rep.levels},
                        {"device", rep.device},
                        {"device_choice", rep.device_choice},
                        {"slabs", rep.slabs},
                        {"vertices", mesh.vertex_count()},
                        {"triangles", mesh.triangle_count()},
                        {"groups", mesh.group_names},
                        {"coincident_tie_triangles_removed", rep.duplicates_removed},
                        {"pinched_vertices_split", rep.pinched_vertices_split},
                        {"rounded_ties_welded", rep.rounded_ties_welded},
                        {"degenerate_triangles_removed", rep.degenerate_removed},
                        {"peak_rss_bytes", peak_rss_bytes()},
                        {"seconds", {{"total", rep.seconds_total},
                                     {"read", rep.seconds_read},
                                     {"classify", rep.profile.seconds_classify},
                                     {"scan", rep.profile.seconds_scan},
                                     {"generate", rep.profile.seconds_generate},
                                     {"copy", rep.profile.seconds_copy},
                                     {"setup", rep.profile.seconds_setup},
                                     {"host_mesh", rep.profile.seconds_host_mesh},
                                     {"host_mesh_ahead", rep.profile.seconds_host_mesh_ahead},
                                     {"engine_start", rep.profile.seconds_engine_start}, {"upload", rep.profile.seconds_upload},
                                     {"download", rep.profile.seconds_download}}}};
    write_json_report(a.json, "isosurface", input, out, j);
  }
  if (mesh.triangle_count() == 0) {
    std::fprintf(stderr, "parasurf: no surface found at the given level(s); wrote an empty mesh to %s\n", out.c_str());
    throw ExitStatus{3};
  }
}

// The process's peak resident memory so far (Linux: kilobytes in ru_maxrss).
std::uint64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return std::uint64_t(u.ru_maxrss) * 1024;
}

// --stream-mesh: the mesh written part by part (binary PLY), never whole in memory.
void run_streamed(const IsoArgs& a, VolumeSource& volume, IsosurfaceOptions o, const std::string& out, MeshFormat format,
                  const std::string& input) {
  if (format != MeshFormat::Ply)
    throw Error(ErrorKind::InvalidArgument, "--stream-mesh writes binary PLY: name a .ply output (or --format ply)");
  const bool show = !a.quiet;
  if (show) o.progress = [](double f) { progress_bar("parts", f); };
  const StreamedIsosurfaceReport r =
      write_isosurface_ply(volume, o, out, std::uint64_t(std::max(0.0, a.memory_mb) * 1048576.0));
  const IsosurfaceReport& rep = r.run;
  if (show) {
    std::printf("%s, %lld slab(s)\n", rep.device.c_str(), (long long)rep.slabs);
    if (r.streamed)
      std::printf("streamed in %lld parts (%.1f MB through temporary files)\n", (long long)r.parts, r.spilled_bytes * 1e-6);
    else
      std::printf("made in memory: %s\n", r.why.c_str());
    std::printf("time: %.2f ms; peak memory %.1f MB\n", rep.seconds_total * 1e3, peak_rss_bytes() * 1e-6);
    std::printf("wrote %s (%lld vertices, %lld triangles)\n", out.c_str(), (long long)rep.vertices, (long long)rep.triangles);
  }
  if (!a.json.empty()) {
    nlohmann::json j = {{"dims", volume.geometry().dims}, {"type", voxel_type_name(volume.type())},
                        {"levels", rep.levels},           {"device", rep.device},
                        {"streamed", r.streamed},         {"not_streamed_because", r.why},
                        {"parts", r.parts},               {"spilled_bytes", r.spilled_bytes},
                        {"vertices", rep.vertices},       {"triangles", rep.triangles},
                        {"peak_rss_bytes", peak_rss_bytes()}, {"seconds", {{"total", rep.seconds_total}}}};
    write_json_report(a.json, "isosurface", input, out, j);
  }
  if (rep.triangles == 0) {
    std::fprintf(stderr, "parasurf: no surface found at the given level(s); wrote an empty mesh to %s\n", out.c_str());
    throw ExitStatus{3};
  }
}

// Whether the mesh may not fit in memory: at a typical density of scanned volumes (0.05 triangles per sample and
// level, about 26 bytes each with their share of the vertices), more than half of the host's available memory.
bool mesh_may_not_fit(const VolumeSource& volume, const IsosurfaceOptions& o) {
  const double bytes = double(volume.geometry().voxel_count()) * double(std::max<std::size_t>(1, o.levels.size())) *
                       0.05 * 26;
  try {
    check_host_memory(std::uint64_t(2 * bytes), "the mesh");
  } catch (const Error&) {
    return true;
  }
  return false;
}

}  // namespace

void add_isosurface(CLI::App& app) {
  auto a = std::make_shared<IsoArgs>();
  auto* cmd = app.add_subcommand(
      "isosurface", "Marching-cubes isosurface of a volume (NIfTI, NRRD, MetaImage, VTK, raw; none = the built-in "
                    "tangle field) as a welded mesh with normals");
  cmd->add_option("input", a->input, "Volume: .nii[.gz], .nrrd/.nhdr, .mhd/.mha, .vtk, or raw with --raw-dims");
  cmd->add_option("--output,-o", a->output, "Mesh: .ply, .obj, .glb, .stl, .vtp or .vtu (default: <input stem>.ply)");
  add_mesh_format_option(cmd, a->format);
  cmd->add_option("--field", a->field, "Built-in field instead of a file: sphere | torus | gyroid | tangle");
  cmd->add_option("--size", a->size, "Samples of the built-in field: N or NxMxK (default 128)");
  cmd->add_option("--level,-l", a->levels, "Iso value(s), comma-separated (default: the field's, or mid-range)");
  cmd->add_option("--gradient-direction", a->direction, "descent (normals toward lower values) | ascent");
  cmd->add_option("--topology", a->topology, "classic | decider (asymptotic decider on ambiguous faces) | mc33 (decider plus interior tunnels: the trilinear topology)");
  cmd->add_flag("--keep-pinches", a->keep_pinches,
                "One vertex per sample on the level even where the level set pinches there (not 2-manifold; what "
                "MPI runs write)");
  cmd->add_flag("--keep-degenerate", a->keep_degenerate, "Samples equal to the level count as just above it: a 2-manifold mesh, with triangles of about zero area there");
  cmd->add_flag("--no-normals", a->no_normals, "Skip vertex normals");
  cmd->add_option("--device", a->device, "auto | cpu | cuda");
  cmd->add_option("--devices", a->devices, "Several GPUs: all | 0,1,... (slabs go to whichever is free)");
  add_threads_option(cmd, a->threads);
  cmd->add_option("--slab-slices", a->slab_slices, "z-slices per slab (0 = from the memory budget)");
  cmd->add_option("--memory", a->memory_mb,
                  "Memory budget for one slab, MiB (0 = automatic); with --stream-mesh also the mesh held per part");
  cmd->add_flag("--stream-mesh", a->stream_mesh,
                "Write the mesh (binary PLY) part by part through temporary files beside the output: the same file, "
                "for meshes larger than memory (chosen by itself when the mesh may not fit)");
  cmd->add_option("--raw-dims", a->raw_dims, "Raw file: NxMxK samples (x fastest)");
  cmd->add_option("--raw-type", a->raw_type, "Raw file: uint8 int8 uint16 int16 uint32 int32 float32 float64");
  cmd->add_option("--endian", a->endian, "Raw file: little | big")->check(CLI::IsMember({"little", "big"}));
  cmd->add_option("--header-bytes", a->header_bytes, "Raw file: bytes to skip before the samples");
  cmd->add_option("--spacing", a->spacing, "Raw file: sx,sy,sz");
  cmd->add_option("--origin", a->origin, "Raw file: ox,oy,oz");
  cmd->add_option("--labels", a->labels,
                  "Label volume on the same grid: each triangle gets its cell's label, a face property and a colour");
  cmd->add_option("--exclude-label", a->exclude_labels, "Drop the triangles of this label (repeatable; needs --labels)")
      ->delimiter(',');
  cmd->add_flag("--per-label", a->per_label,
                "The input is a label map: extract the boundaries between its labels (Surface Nets), each face once "
                "with its two labels");
  cmd->add_option("--smoothing", a->smoothing, "--per-label: smoothing iterations (0 = blocky, default 32)");
  cmd->add_option("--scalars", a->scalars, "Second volume on the same grid, interpolated to every vertex (\"value\")");
  cmd->add_flag("--quiet,-q", a->quiet, "Print only errors");
  cmd->add_option("--json", a->json, "Write the report as JSON to this file");
  cmd->add_option("--balance", a->balance,
                  "Under mpirun: z ranges per rank by active cells (cost, from a first pass) or equal slices (equal)")
      ->check(CLI::IsMember({"cost", "equal"}));
  cmd->callback([a] {
    std::string field;
    const std::unique_ptr<VolumeSource> volume = open_input(*a, field);
    if (a->output.empty()) a->output = (field.empty() ? stem_of(a->input) : field) + ".ply";
    const std::string& out = a->output;
    const MeshFormat format = choose_mesh_format(out, a->format);
    const std::string input = a->input.empty() ? volume->name() : a->input;

    if (a->per_label) return run_per_label(*a, *volume, out, format, input);
    std::unique_ptr<VolumeSource> labels, scalars;
    const IsosurfaceOptions o = isosurface_options(*a, field, labels, scalars);
    if (!mpi_world() && (a->stream_mesh || (format == MeshFormat::Ply && o.exclude_labels.empty() &&
                                             mesh_may_not_fit(*volume, o)))) {
      if (!a->stream_mesh && !a->quiet)
        std::printf("the mesh may not fit in memory: writing it part by part (as --stream-mesh)\n");
      return run_streamed(*a, *volume, o, out, format, input);
    }
    run_levels(*a, *volume, o, out, format, input);
  });
}

}  // namespace parasurf::cli
