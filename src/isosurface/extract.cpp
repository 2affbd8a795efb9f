// Isosurface driver: plans slabs of z-slices with the overlap exact seams need, reads the next slab while the
// engine works on the current one, sizes the output from the counting pass, and joins levels into one mesh.
// Slab scheme after Rogeiro 2011 (work units of slices with overlap); vertex ids are global from the start, so
// seams between slabs are welded without a merge pass.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <latch>
#include <limits>
#include <optional>
#include <thread>

#include "core/auto_choice.hpp"
#include "core/backends.hpp"
#include "core/kept_threads.hpp"
#include "core/memory.hpp"
#include "core/voxel_dispatch.hpp"
#include "isosurface/auto_device.hpp"
#include "isosurface/engine.hpp"
#include "isosurface/field_value.hpp"
#include "isosurface/level_mesh.hpp"
#include "isosurface/part.hpp"
#include "isosurface/slab_run.hpp"
#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"

namespace parasurf {

GradientDirection parse_gradient_direction(const std::string& name) {
  if (name == "descent") return GradientDirection::Descent;
  if (name == "ascent") return GradientDirection::Ascent;
  throw Error(ErrorKind::InvalidArgument, "gradient direction '" + name + "' is not 'descent' or 'ascent'");
}

CaseTopology parse_case_topology(const std::string& name) {
  if (name == "classic") return CaseTopology::Classic;
  if (name == "decider") return CaseTopology::Decider;
  if (name == "mc33") return CaseTopology::Mc33;
  throw Error(ErrorKind::InvalidArgument, "topology '" + name + "' is not 'classic', 'decider' or 'mc33'");
}

namespace {

using iso::copy_slab_into;
using iso::CountDownOnce;
using iso::host_mesh_bytes;
using iso::LevelMesh;
using iso::make_room;
using iso::may_size_ahead;
using iso::reserve_expected_mesh;
using iso::room_piece_bytes;
using iso::RoomCap;
using iso::size_ahead;
using iso::tail_at;
using iso::tail_from;

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

template <class T>
void range_of(const void* data, std::size_t n, double& lo, double& hi) {
  const T* v = static_cast<const T*>(data);
  double a = lo, b = hi;
#pragma omp parallel for reduction(min : a) reduction(max : b) num_threads(cpu_thread_count(0))
  for (std::size_t i = 0; i < n; ++i) {
    const double x = double(v[i]);
    if (std::isfinite(x)) {
      a = std::min(a, x);
      b = std::max(b, x);
    }
  }
  lo = a;
  hi = b;
}

void slab_range(VoxelType type, const void* data, std::size_t n, double& lo, double& hi) {
  core::visit_voxel_type(type, [&](auto tag) { range_of<decltype(tag)>(data, n, lo, hi); });
}

// The cofactor matrix of the index-to-world jacobian (its inverse transpose times det) and det.
std::array<double, 9> jacobian_cofactors(const VolumeGeometry& g, double& det) {
  const auto J = g.jacobian();
  det = J[0] * (J[4] * J[8] - J[5] * J[7]) - J[1] * (J[3] * J[8] - J[5] * J[6]) + J[2] * (J[3] * J[7] - J[4] * J[6]);
  if (!(std::fabs(det) > 0)) throw Error(ErrorKind::InvalidArgument, "the volume's orientation matrix is singular");
  return {J[4] * J[8] - J[5] * J[7], J[5] * J[6] - J[3] * J[8], J[3] * J[7] - J[4] * J[6],
          J[2] * J[7] - J[1] * J[8], J[0] * J[8] - J[2] * J[6], J[1] * J[6] - J[0] * J[7],
          J[1] * J[5] - J[2] * J[4], J[2] * J[3] - J[0] * J[5], J[0] * J[4] - J[1] * J[3]};
}

// World to index coordinates: rows of the inverse jacobian, then the origin.
iso::WorldToIndex world_to_index(const VolumeGeometry& g) {
  double det = 0;
  const auto cof = jacobian_cofactors(g, det);
  iso::WorldToIndex w;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) w.inverse[3 * r + c] = cof[3 * c + r] / det;  // the inverse is the cofactors' transpose
  for (int i = 0; i < 3; ++i) w.origin[i] = g.origin[i];
  return w;
}

mc::WorldMap world_map(const VolumeGeometry& g, GradientDirection dir, bool normals_down, bool& mirrored) {
  const auto J = g.jacobian();
  double det = 0;
  const auto cof = jacobian_cofactors(g, det);
  mirrored = det < 0;
  // Inverse transpose: cofactor matrix / det. Descent points normals down the gradient.
  const double sign = dir == GradientDirection::Descent || normals_down ? -1.0 : 1.0;
  mc::WorldMap m{};
  for (int i = 0; i < 9; ++i) {
    m.jacobian[i] = float(J[i]);
    m.normal_matrix[i] = float(sign * cof[i] / det);
  }
  for (int i = 0; i < 3; ++i) m.origin[i] = float(g.origin[i]);
  return m;
}

// Host bytes for one streamed slab: an eighth of the free memory, between 64 MiB and 2 GiB.
std::uint64_t host_slab_budget() {
  return std::max<std::uint64_t>(std::uint64_t(64) << 20,
                                 std::min<std::uint64_t>(std::uint64_t(2) << 30, core::available_host_memory() / 8));
}

// Bytes a file's samples may keep in memory once the data-range pass has read them (so that the extraction does not
// read and decompress the file again): what one slab of the extraction holds anyway.
std::uint64_t range_pass_budget(const IsosurfaceOptions& o) {
  return o.memory_budget ? o.memory_budget : host_slab_budget();
}

std::string level_name(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "level %g", v);
  return buf;
}

}  // namespace

distributed::WorldToIndex distributed::world_to_index_map(const VolumeGeometry& g) { return world_to_index(g); }

std::array<float, 3> label_color(std::int32_t label) {
  static const float table[21][3] = {
      {0.60f, 0.60f, 0.60f}, {0.90f, 0.30f, 0.25f}, {0.25f, 0.55f, 0.85f}, {0.35f, 0.75f, 0.35f}, {0.95f, 0.70f, 0.20f},
      {0.60f, 0.40f, 0.80f}, {0.20f, 0.75f, 0.75f}, {0.95f, 0.50f, 0.70f}, {0.55f, 0.40f, 0.25f}, {0.70f, 0.85f, 0.30f},
      {0.15f, 0.35f, 0.55f}, {0.95f, 0.60f, 0.45f}, {0.45f, 0.25f, 0.45f}, {0.60f, 0.80f, 0.95f}, {0.80f, 0.15f, 0.45f},
      {0.30f, 0.50f, 0.20f}, {0.85f, 0.85f, 0.55f}, {0.40f, 0.40f, 0.95f}, {0.95f, 0.35f, 0.05f}, {0.10f, 0.60f, 0.50f},
      {0.75f, 0.60f, 0.95f}};
  if (label >= 0 && label <= 20) return {table[label][0], table[label][1], table[label][2]};
  // Hue by the golden angle, fixed saturation and value.
  const double h = std::fmod(double(std::uint32_t(label)) * 0.6180339887498949, 1.0) * 6.0;
  const double s = 0.65, v = 0.9, c = v * s, x = c * (1 - std::fabs(std::fmod(h, 2.0) - 1)), m = v - c;
  double r = 0, g = 0, b = 0;
  switch (int(h) % 6) {
    case 0:
      r = c, g = x;
      break;
    case 1:
      r = x, g = c;
      break;
    case 2:
      g = c, b = x;
      break;
    case 3:
      g = x, b = c;
      break;
    case 4:
      r = x, b = c;
      break;
    default:
      r = c, b = x;
      break;
  }
  return {float(r + m), float(g + m), float(b + m)};
}

std::pair<double, double> volume_value_range(VolumeSource& volume) {
  const auto& g = volume.geometry();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  const std::size_t slice = std::size_t(g.slice_voxels());
  if (const void* all = volume.resident_data()) {
    slab_range(volume.type(), all, std::size_t(g.voxel_count()), lo, hi);
    return {lo, hi};
  }
  const std::int64_t per =
      std::max<std::int64_t>(1, std::int64_t((std::uint64_t(256) << 20) / (slice * voxel_bytes(volume.type()))));
  std::vector<char> buf(std::size_t(std::min(per, g.dims[2])) * slice * voxel_bytes(volume.type()));
  for (std::int64_t z = 0; z < g.dims[2]; z += per) {
    const std::int64_t z1 = std::min(g.dims[2], z + per);
    volume.read_slices(z, z1, buf.data());
    slab_range(volume.type(), buf.data(), std::size_t(z1 - z) * slice, lo, hi);
  }
  return {lo, hi};
}

namespace {

std::atomic<bool> near_listing{true};

iso::SlabTask slab_task(const VolumeSource& volume, const IsosurfaceOptions& o, bool field_on_device) {
  return iso::make_task(volume.geometry(), volume.type(), o, field_on_device ? volume.builtin_field() : -1);
}

// The device the engines run on (auto: CUDA when usable), and the GPUs listed (checked: visible, usable, once
// each; the first GPU when none is).
Device engine_device(const IsosurfaceOptions& o, std::vector<int>& gpus) {
  // (Hybrid: the engines are one GPU's or the CPU's; several GPUs are asked for with the device list.)
  Device device =
      o.device == Device::Hybrid ? (cuda_available() ? Device::Cuda : Device::Cpu) : resolve_device(o.device);
  gpus = o.cuda_devices;
  if (!gpus.empty()) {
    if (device != Device::Cuda)
      throw Error(ErrorKind::InvalidArgument, "CUDA devices were listed but the device is the CPU");
    const int visible = cuda_device_count();
    for (int d : gpus)
      if (d < 0 || d >= visible)
        throw Error(ErrorKind::InvalidArgument,
                    "CUDA device " + std::to_string(d) + " does not exist (" + std::to_string(visible) + " visible)");
      else if (!cuda_device_usable(d))
        throw Error(ErrorKind::Device, cuda_device_unusable_reason(d));
    std::sort(gpus.begin(), gpus.end());
    if (std::unique(gpus.begin(), gpus.end()) != gpus.end())
      throw Error(ErrorKind::InvalidArgument, "a CUDA device is listed twice");
  }
  if (device == Device::Cuda && gpus.empty()) gpus = {0};
  return device;
}

// Slices per slab: as asked, else the whole part when it fits the budget (the memory asked for; on a GPU a third
// of its free memory, and for streamed sources the host's slab budget too), else as many as fit with the overlap.
// On the CPU a large streamed part is cut into slabs of about 2^25 samples anyway, so that progress (and a caller's
// interrupt, which the progress hook throws) is heard during the run: the next slab is read while one is processed,
// so the cut costs nothing there. (A volume in memory stays one slab: its slabs' meshes would be joined by growing
// copies; a GPU keeps its one upload: a host array sent up in slabs, the next one beside this one's mesh coming home,
// would land each slab's mesh in a growing host mesh while the upload runs, and the copies home fall far below the
// link, several times the whole run's time.)
std::int64_t slab_slices_for(const IsosurfaceOptions& o, Device device, const std::vector<int>& gpus, std::int64_t part,
                             std::uint64_t slice_points, double per_slice, bool resident, bool on_device,
                             std::size_t worker_count) {
  const bool several = worker_count > 1;
  std::int64_t S = o.slab_slices;
  if (S <= 0) {
    std::uint64_t budget = o.memory_budget;
    if (budget == 0) {
      if (device == Device::Cuda) {
        budget = std::numeric_limits<std::uint64_t>::max();
        for (int d : gpus) budget = std::min(budget, iso::cuda_free_memory(d) / 3);
        // A streamed source also holds its slabs on the host: bounded as on the CPU, whatever the volume's size.
        if (!resident && !on_device) budget = std::min(budget, host_slab_budget());
      } else if (resident)
        budget = std::numeric_limits<std::uint64_t>::max();
      else
        budget = host_slab_budget();
    }
    const double fit = double(budget) / per_slice;
    S = fit >= double(part) ? part : std::max<std::int64_t>(1, std::int64_t(fit) - 3);
    // Several GPUs: at least three slabs each, so that whichever is free takes the next.
    if (several)
      S = std::min<std::int64_t>(
          S, std::max<std::int64_t>(1, (part + 3 * std::int64_t(worker_count) - 1) / (3 * std::int64_t(worker_count))));
    constexpr std::uint64_t kCpuSlabSamples = std::uint64_t(1) << 25;
    if (device == Device::Cpu && !resident && std::uint64_t(part) * slice_points > 2 * kCpuSlabSamples)
      S = std::min<std::int64_t>(S, std::max<std::int64_t>(2, std::int64_t(kCpuSlabSamples / slice_points)));
  }
  return std::min(S, part);
}

// Each level's mesh handed over as a part, as MPI ranks join them.
void hand_over_parts(std::vector<LevelMesh>& meshes, std::vector<iso::IsosurfacePart>& parts, IsosurfaceReport& rep) {
  for (std::size_t L = 0; L < meshes.size(); ++L) {
    iso::IsosurfacePart& p = parts[L];
    p.ties = std::move(meshes[L].ties);
    p.point_vertices = meshes[L].point_vertices;
    p.tie_vertices = meshes[L].tie_vertices;
    p.mesh.positions = std::move(meshes[L].positions);
    p.mesh.normals = std::move(meshes[L].normals);
    p.mesh.triangles = std::move(meshes[L].triangles);
    p.mesh.vertex_values = std::move(meshes[L].values);
    p.mesh.face_labels = std::move(meshes[L].labels);
    rep.vertices += p.mesh.vertex_count();
    rep.triangles += p.mesh.triangle_count();
  }
}

// As scikit-image, for a run that found no surface: a level outside the data range is an error; inside it, an empty
// mesh is an answer.
void check_levels_in_range(VolumeSource& volume, const std::vector<double>& levels, bool have_range,
                           IsosurfaceReport& rep) {
  if (!have_range) {  // (after the extraction: no later pass to keep the samples for)
    const auto [lo, hi] = volume_value_range(volume);
    rep.value_min = lo;
    rep.value_max = hi;
  }
  for (double l : levels)
    if (!(l >= rep.value_min && l <= rep.value_max))
      throw iso::level_outside_range(volume.name(), l, rep.value_min, rep.value_max);
}

// The levels asked for, or the middle of the data range (then in the report); each finite.
std::vector<double> levels_to_run(VolumeSource& volume, const IsosurfaceOptions& o, IsosurfaceReport& rep,
                                  bool& have_range) {
  std::vector<double> levels = o.levels;
  if (levels.empty()) {
    // (a pass that reads the volume: its time is the run's reading, as the report counts it)
    const auto t0 = std::chrono::steady_clock::now();
    volume.keep_resident(range_pass_budget(o));
    const auto [lo, hi] = volume_value_range(volume);
    rep.seconds_read += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rep.value_min = lo;
    rep.value_max = hi;
    have_range = true;
    if (!(lo <= hi)) throw Error(ErrorKind::InvalidArgument, volume.name() + ": no finite samples");
    levels.push_back(0.5 * (lo + hi));
  }
  for (double l : levels)
    if (!std::isfinite(l)) throw Error(ErrorKind::InvalidArgument, "the iso level must be a finite number");
  rep.levels = levels;
  return levels;
}

// Label and scalar volumes share the volume's grid; excluded labels need a label volume.
void check_companions(VolumeSource& volume, const IsosurfaceOptions& o) {
  const auto& dims = volume.geometry().dims;
  for (auto [other, what] : {std::pair{o.labels, "label volume"}, std::pair{o.scalars, "scalar volume"}}) {
    if (!other) continue;
    const auto d = other->geometry().dims;
    if (d != dims)
      throw Error(ErrorKind::InvalidArgument,
                  other->name() + ": the " + what + " has size " + std::to_string(d[0]) + "x" + std::to_string(d[1]) +
                      "x" + std::to_string(d[2]) + ", but " + volume.name() + " has " + std::to_string(dims[0]) + "x" +
                      std::to_string(dims[1]) + "x" + std::to_string(dims[2]) + ": they must share the grid");
  }
  if (!o.exclude_labels.empty() && !o.labels)
    throw Error(ErrorKind::InvalidArgument, "excluding labels needs a label volume");
}

// One engine (the CPU or one GPU) over the slabs in order, each slab's levels appended to the level meshes (vertex
// ids continue from what they hold), while the next slab is read (and uploaded) on a helper thread.
struct OneEngine {
  OneEngine(iso::SlabRun& r, iso::SlabEngine& e, bool on_gpu, std::vector<LevelMesh>& m, std::latch& est,
            std::latch& sz, const std::uint64_t& expected, IsosurfaceReport& report, Clock::time_point t0)
      : slabs(r),
        engine(e),
        gpu(on_gpu),
        meshes(m),
        estimated(est),
        sized(sz),
        expected_triangles(expected),
        rep(report),
        start(t0) {}

  iso::SlabRun& slabs;
  iso::SlabEngine& engine;
  bool gpu;
  std::vector<LevelMesh>& meshes;
  std::latch &estimated, &sized;
  const std::uint64_t& expected_triangles;  // read once `estimated` is counted down
  IsosurfaceReport& rep;
  Clock::time_point start;
  double read_seconds = 0, host_mesh_seconds = 0;
  std::uint64_t vertices_total = 0;
  iso::SlabBuffers buffers[2];          // slab s in buffers[s % 2]
  std::vector<std::uint32_t> near_ids;  // a slab's vertices that may lie on a sample

  void run_slab(std::int64_t s, iso::SlabBuffers& buf) {
    const IsosurfaceOptions& o = slabs.o;
    const std::int64_t part = slabs.ze - slabs.zb;
    iso::SlabTask t = slabs.task_of(slabs.task, s, buf);
    for (std::size_t L = 0; L < slabs.levels.size(); ++L) {
      t.level = slabs.engine_levels[L];
      t.vertex_level = slabs.levels[L];
      t.range_level = float(slabs.levels[L]);
      LevelMesh& m = meshes[L];
      const std::uint64_t v0 = m.vertices, t0 = m.triangle_count;
      t.vertex_base = v0;
      const iso::SlabCounts c = engine.count(t);
      // Counting (the classification with it) takes most of a slab: heard within one-slab runs too.
      if (o.progress)
        o.progress((double(s) + (double(L) + 0.6) / double(slabs.levels.size())) / double(slabs.slab_count));
      sized.wait();
      if (vertices_total + c.vertices > std::numeric_limits<std::uint32_t>::max())
        throw Error(ErrorKind::LimitReached, slabs.volume.name() + ": the mesh has more than 4294967295 vertices");
      const std::uint64_t grow = host_mesh_bytes(o, c.vertices, c.triangles);
      core::check_host_allocation(grow, slabs.volume.name() + ": mesh of " + std::to_string(c.vertices) +
                                            " more vertices and " + std::to_string(c.triangles) + " triangles");
      const auto grow_start = Clock::now();
      // Slabs appended into one mesh: when it must grow, room for the whole part at the rate of the slices so far
      // (growths of a large mesh, each a copy, would take a third of a one-GPU run), unless that cannot fit.
      double scale = 1;
      const std::int64_t slices_done = slabs.span_of(s)[1] - slabs.zb;
      if (slices_done < part && 3 * (v0 + c.vertices) > m.positions.capacity()) {
        scale = double(part) / double(slices_done);
        if (double(grow + v0 * 24 + t0 * 12) * scale > 0.5 * double(core::available_host_memory())) scale = 1;
      }
      make_room(m.positions, 3 * (v0 + c.vertices), scale);
      if (o.normals) make_room(m.normals, 3 * (v0 + c.vertices), scale);
      make_room(m.triangles, 3 * (t0 + c.triangles), scale);
      if (iso::vertex_values(o)) m.values.resize(v0 + c.vertices);
      if (o.labels) m.labels.resize(t0 + c.triangles);
      m.vertices = v0 + c.vertices;
      m.triangle_count = t0 + c.triangles;
      host_mesh_seconds += since(grow_start);
      const iso::MeshTail tail = tail_at(m, v0, t0, o);
      std::vector<std::uint64_t> ties;
      engine.generate(t, tail, ties);
      for (auto x : ties) m.ties.push_back(t0 + x);
      if (m.near_listed) {
        near_ids.clear();
        if (engine.near_sample_vertices(near_ids))
          for (const std::uint32_t id : near_ids) m.near_samples.push_back(v0 + id);
        else
          m.near_listed = false, m.near_samples = {};
      }
      m.point_vertices = m.point_vertices || engine.point_vertices();
      m.tie_vertices = m.tie_vertices || engine.tie_vertices();
      vertices_total += c.vertices;
    }
  }

  void run() {
    const IsosurfaceOptions& o = slabs.o;
    const std::int64_t slab_count = slabs.slab_count;
    for (int b = 0; b < (slab_count > 1 ? 2 : 1); ++b) slabs.allocate(buffers[b], gpu);
    const bool streamed = (!slabs.resident && !slabs.on_device) || o.labels || o.scalars;
    for (auto& m : meshes) m.near_listed = slabs.task.near_probe.active;
    // The mesh is sized ahead while the first slab is counted (the host's pages would take a quarter of a large
    // one-GPU run): the engine's arrays need only the estimate.
    estimated.wait();
    // The engine's arrays for the first slab (none is larger) and its share of the expected mesh, before the start.
    iso::SlabTask first = slabs.task;
    const auto sp = slabs.span_of(0);
    first.z0 = sp[0], first.z1 = sp[1], first.data_z0 = sp[2], first.data_z1 = sp[3];
    // The labels and scalars the slabs carry, so that their mesh arrays are sized too (else the first slab's mesh
    // cannot be made ahead on the GPU).
    first.labels = o.labels ? buffers[0].labels.data() : nullptr;
    first.scalars = o.scalars ? buffers[0].scalars.data() : nullptr;
    engine.prepare(first, expected_triangles * std::uint64_t(slabs.slab_slices) /
                              std::uint64_t(std::max<std::int64_t>(1, slabs.ze - slabs.zb)));
    rep.profile.seconds_setup = since(start);
    if (o.started) o.started();
    if (streamed) {
      const auto t = Clock::now();
      slabs.read_slab(0, buffers[0]);
      read_seconds += since(t);
    }
    // Streamed into pinned buffers, the device samples of slab s + 1 go up on the prefetch thread, after its read,
    // while slab s is processed; staging slab s first means that upload never lands in a buffer slab s still needs.
    // (From pageable memory, a volume resident on the host, the early upload is slower, competing with the mesh
    // downloads, so those slabs go up when their turn comes.)
    const bool upload_ahead = gpu && !slabs.on_device && !slabs.resident && buffers[0].data.pinned();
    for (std::int64_t s = 0; s < slab_count; ++s) {
      Error prefetch_error(ErrorKind::Io, "");
      bool prefetch_failed = false;
      // (On a kept thread: a thread made for each slab would also make its OpenMP team anew. Declared after what
      // the job writes, so that leaving the scope waits for it first.)
      std::optional<core::KeptJob> prefetch;
      if (upload_ahead) engine.stage(slabs.task_of(slabs.task, s, buffers[s % 2]));
      if ((streamed || upload_ahead) && s + 1 < slab_count) {
        prefetch.emplace([&, s] {
          try {
            if (streamed) slabs.read_slab(s + 1, buffers[(s + 1) % 2]);
            if (upload_ahead) engine.prefetch(slabs.task_of(slabs.task, s + 1, buffers[(s + 1) % 2]));
          } catch (const Error& e) {
            prefetch_error = e;
            prefetch_failed = true;
          } catch (const std::exception& e) {
            prefetch_error = Error(ErrorKind::Io, e.what());
            prefetch_failed = true;
          }
        });
      }
      try {
        run_slab(s, buffers[s % 2]);
      } catch (...) {
        prefetch.reset();  // (waits for it)
        throw;
      }
      if (prefetch) {
        const auto t = Clock::now();
        prefetch->wait();
        read_seconds += since(t);  // only the part of the read that did not overlap
        if (prefetch_failed) throw prefetch_error;
      }
      rep.profile.seconds_slab_done.push_back(since(start));
      if (o.progress) o.progress(double(s + 1) / double(slab_count));
    }
    for (auto& m : meshes) m.trim();
  }
};

// The whole volume (parts null), or the part whose grid points [zb, ze) own the vertices (an MPI rank's share): then
// one part per level, each with its ties returned instead of resolved, and the last cell layer's triangles refer
// to the next part's first vertices by ids that continue past this part's own.
// One function: the run's set-up in order (levels, device, slabs, buffers, engine, the mesh sized ahead) before the
// one-engine loop or the several-GPU scheduler, each a class of its own.
TriangleMesh extract_impl(VolumeSource& volume, const IsosurfaceOptions& o, IsosurfaceReport* report, std::int64_t zb,
                          std::int64_t ze, std::vector<iso::IsosurfacePart>* parts,
                          std::unique_ptr<iso::SlabEngine>* keep_engine = nullptr, int cpu_workers = 0) {
  const auto start = Clock::now();
  IsosurfaceReport rep;
  const auto& g = volume.geometry();
  const std::int64_t nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  if (nx < 2 || ny < 2 || nz < 2)
    throw Error(ErrorKind::InvalidArgument,
                volume.name() + ": size " + std::to_string(nx) + "x" + std::to_string(ny) + "x" + std::to_string(nz) +
                    " is too small: marching cubes needs at least 2 samples along every axis");
  if (ze < 0) ze = nz;
  if (zb < 0 || zb > ze || ze > nz)
    throw Error(ErrorKind::InvalidArgument, volume.name() + ": slice range out of bounds");
  const std::int64_t part = ze - zb;
  if (parts) {
    if (o.levels.empty()) throw Error(ErrorKind::InvalidArgument, "a part of a volume is extracted at given levels");
    if (!o.exclude_labels.empty())
      throw Error(ErrorKind::InvalidArgument, "a part of a volume is extracted without excluded labels");
    parts->assign(o.levels.size(), {});
    if (part == 0) return TriangleMesh{};
  }
  bool have_range = false;
  const std::vector<double> levels = levels_to_run(volume, o, rep, have_range);
  // What the engines classify against (iso::engine_level): the levels themselves, or just above them when ties count
  // as outside; with either rule of ties but the default, no sample is a tie.
  std::vector<double> engine_levels = levels;
  bool ties = true;
  for (double& l : engine_levels) {
    const iso::EngineLevel e = iso::engine_level(l, volume.type(), o.ties_outside, o.keep_degenerate);
    l = e.level;
    ties = e.ties;
  }
  check_companions(volume, o);

  // The engine.
  std::vector<int> gpus;
  const Device device = engine_device(o, gpus);
  // Slab workers: one per GPU listed, or (tests) several CPU engines sharing the cores.
  const bool cpu_team = cpu_workers > 1 && device == Device::Cpu;
  const std::size_t worker_count = cpu_team ? std::size_t(cpu_workers) : std::max<std::size_t>(1, gpus.size());
  const bool several = worker_count > 1;
  // A GPU takes a while to start (its context, a lock the driver holds host-wide): meanwhile the host mesh of the
  // expected size is reserved and faulted in on the CPU, so that it is not done after each slab's count. (Several
  // GPUs: only the estimate; the sizer makes the room while the workers run.)
  std::vector<LevelMesh> meshes(levels.size());
  std::uint64_t expected_triangles = 0;  // of the whole part, when reserving estimated it
  std::latch estimated(1), sized(1);
  std::jthread reserving;  // (declared after what it writes: joined before they end)
  // The size is given (MPI's cost pass), or estimated from a built-in field's formula on a GPU. (On the CPU, which
  // starts at once, only when given.)
  const bool estimable = device == Device::Cuda && volume.builtin_field() >= 0 && !volume.resident_data();
  if (levels.size() == 1 && !o.labels && !o.scalars && (o.expected_triangles > 0 || estimable))
    reserving = std::jthread([&] {
      reserve_expected_mesh(volume, o, zb, ze, meshes[0], rep.profile.seconds_host_mesh_ahead, expected_triangles,
                            estimated, sized, !several);
    });
  else {
    estimated.count_down();
    sized.count_down();
  }
  const auto engine_start = Clock::now();
  std::unique_ptr<iso::SlabEngine> engine = iso::make_engine(device, device == Device::Cuda ? gpus[0] : 0,
                                                             iso::cpu_engine_threads(o.threads, nx * ny * part));
  rep.profile.seconds_engine_start = since(engine_start);
  rep.device = engine->name();
  if (cpu_team) rep.device = "cpu (" + std::to_string(worker_count) + " workers)";
  if (gpus.size() > 1) {
    rep.device = "cuda";
    for (std::size_t d = 0; d < gpus.size(); ++d) rep.device += (d ? "," : " ") + std::to_string(gpus[d]);
    rep.device += " (" + std::to_string(gpus.size()) + " GPUs)";
  }

  // Slabs: the whole volume when it lies in memory on the CPU, else as many slices as the budget holds.
  const std::uint64_t slice_points = std::uint64_t(nx * ny);
  const std::size_t vbytes = voxel_bytes(volume.type());
  // Labels and scalars: their samples as read, then converted to 4 bytes, on host and device.
  const std::size_t extra_raw =
      std::max(o.labels ? voxel_bytes(o.labels->type()) : 0, o.scalars ? voxel_bytes(o.scalars->type()) : 0);
  const std::size_t extra_bytes = (o.labels ? 4 : 0) + (o.scalars ? 4 : 0);
  const void* resident = volume.resident_data();
  // Built-in fields are computed by the CUDA engine on the GPU (the gyroid's sines would differ from the host's).
  const bool on_device = iso::field_on_device(volume, device);
  // On one GPU the next streamed slab's samples are uploaded while this slab is processed: a second copy there.
  // (Several GPUs upload each slab in its turn.)
  const double sample_copies = device == Device::Cuda && !on_device && !resident && !several ? 2.0 : 1.0;
  const double per_slice = double(slice_points) * (sample_copies * double(vbytes) + engine->work_bytes_per_point(nx) +
                                                   double(extra_raw + extra_bytes));
  const std::int64_t S =
      slab_slices_for(o, device, gpus, part, slice_points, per_slice, resident != nullptr, on_device, worker_count);
  rep.slab_slices = S;
  const std::int64_t slab_count = (part + S - 1) / S;
  rep.slabs = slab_count;

  iso::SlabRun run{volume, o, levels, engine_levels};
  run.zb = zb, run.ze = ze, run.nz = nz;
  run.slab_slices = S, run.slab_count = slab_count;
  run.slice_points = slice_points;
  run.slab_points = std::uint64_t(S + 3) * slice_points;
  run.slab_bytes = run.slab_points * (resident || on_device ? 0 : vbytes);
  run.vbytes = vbytes;
  run.resident = resident;
  run.on_device = on_device;
  run.task = slab_task(volume, o, on_device);
  run.task.ties = ties;
  // One engine, one mesh welded after: the engine lists the vertices the weld must test.
  if (!o.keep_degenerate && !several && !parts && near_listing.load(std::memory_order_relaxed)) {
    run.task.near_probe = iso::near_sample_probe(world_to_index(volume.geometry()));
    run.task.near_probe.active = true;
  }
  const std::uint64_t slab_points = run.slab_points, slab_bytes = run.slab_bytes;
  const std::uint64_t extra_slab_bytes = slab_points * extra_bytes;
  // One GPU or the CPU: two buffers (read ahead); several GPUs: one per GPU.
  const int buffer_count = several ? int(worker_count) : slab_count > 1 ? 2 : 1;
  core::check_host_allocation(buffer_count * (slab_bytes + extra_slab_bytes) + slab_points * extra_raw,
                              volume.name() + ": slab buffers");
  rep.profile.peak_slab_bytes = buffer_count * (slab_bytes + extra_slab_bytes) + slab_points * extra_raw +
                                std::uint64_t(double(S + 1) * double(slice_points) * engine->work_bytes_per_point(nx));
  double read_seconds = 0, host_mesh_seconds = 0;
  iso::SlabTeamOutcome team_outcome;
  if (several) {
    rep.profile.seconds_setup = since(start);
    if (o.started) o.started();
    // The first GPU's engine, made above, serves its worker (making a GPU engine takes milliseconds).
    iso::SlabTeam team{cpu_team, worker_count, gpus, cpu_team ? nullptr : std::move(engine)};
    engine.reset();
    team_outcome = iso::run_slab_team(run, std::move(team), meshes, estimated, expected_triangles);
    read_seconds = team_outcome.read_seconds;
    host_mesh_seconds = team_outcome.host_mesh_seconds;
    if (team_outcome.host_mesh_ahead_seconds > 0)
      rep.profile.seconds_host_mesh_ahead = team_outcome.host_mesh_ahead_seconds;
    rep.profile.seconds_workers = team_outcome.workers_seconds;
    rep.profile.seconds_join = team_outcome.join_seconds;
  } else {
    OneEngine one(run, *engine, device == Device::Cuda, meshes, estimated, sized, expected_triangles, rep, start);
    one.run();
    read_seconds = one.read_seconds;
    host_mesh_seconds = one.host_mesh_seconds;
  }
  const iso::StageSeconds sec = engine ? engine->seconds() : team_outcome.seconds;
  const std::uint64_t coincident = engine ? engine->coincident_removed() : team_outcome.coincident_removed;
  // The GPU's engine serves the next run (kept_engine), unless the caller keeps it.
  if constexpr (core::kCudaBuilt)
    if (engine && device == Device::Cuda && !keep_engine) iso::keep_cuda_engine(gpus[0], std::move(engine));
  // Stage times and the report, as the run ends.
  auto finish_report = [&] {
    rep.seconds_read += read_seconds;  // (after the data-range pass's, if one ran)
    rep.profile.seconds_classify = sec.classify;
    rep.profile.seconds_scan = sec.scan;
    rep.profile.seconds_generate = sec.generate;
    rep.profile.seconds_copy = sec.upload + sec.download;
    rep.profile.seconds_upload = sec.upload;
    rep.profile.seconds_download = sec.download;
    rep.seconds_total = since(start);
    rep.profile.seconds_host_mesh = host_mesh_seconds;
    if (report) {
      *report = rep;
      report->duplicates_removed += std::int64_t(coincident);
    }
  };
  if (parts) {
    hand_over_parts(meshes, *parts, rep);
    finish_report();
    if (keep_engine) *keep_engine = std::move(engine);
    return TriangleMesh{};
  }
  // One mesh: levels in order, ids shifted, cleaned up (join_levels.cpp).
  TriangleMesh out = iso::join_levels(meshes, levels, o, world_to_index(volume.geometry()), rep);
  rep.vertices = out.vertex_count();
  rep.triangles = out.triangle_count();

  if (rep.triangles == 0) check_levels_in_range(volume, levels, have_range, rep);
  finish_report();
  return out;
}

}  // namespace

namespace iso {

Error level_outside_range(const std::string& name, double level, double lo, double hi) {
  char buf[200];
  if (!(lo <= hi))
    std::snprintf(buf, sizeof buf, ": level %g is outside the data range (no sample is a number: all are NaN)", level);
  else
    std::snprintf(buf, sizeof buf, ": level %g is outside the data range [%g, %g]", level, lo, hi);
  return Error(ErrorKind::InvalidArgument, name + buf);
}

void set_near_sample_listing(bool on) { near_listing.store(on, std::memory_order_relaxed); }

std::unique_ptr<SlabEngine> make_engine(Device device, int gpu, int cpu_threads) {
  if (device != Device::Cuda) return make_cpu_engine(cpu_threads);
  if constexpr (core::kCudaBuilt)
    return take_cuda_engine(gpu);
  else
    core::no_cuda_backend("isosurfaces on cuda");
}

std::uint64_t cuda_free_memory(int device) {
  if constexpr (core::kCudaBuilt)
    return cuda_engine_free_memory(device);
  else
    return 0;
}

void* pinned_host_alloc(std::size_t bytes) {
  if constexpr (core::kCudaBuilt)
    return cuda_engine_pinned_alloc(bytes);
  else
    return nullptr;
}

void pinned_host_free(void* p) {
  if constexpr (core::kCudaBuilt) cuda_engine_pinned_free(p);
}

}  // namespace iso

TriangleMesh extract_isosurface(VolumeSource& volume, const IsosurfaceOptions& o, IsosurfaceReport* report) {
  if (!iso::auto_weighs_devices(o)) return extract_impl(volume, o, report, 0, -1, nullptr);
  // auto with a GPU: the faster side for this call, from both estimates; the run that follows corrects the
  // estimate of the side it ran on (with the triangles it made, so only the rates are learned).
  const iso::AutoPick pick = iso::pick_device(volume, o);
  IsosurfaceOptions chosen = o;
  chosen.device = pick.device;
  const bool gpu = chosen.device == Device::Cuda, cold = gpu && !core::cuda_context_active(0);
  IsosurfaceReport rep;
  TriangleMesh mesh = extract_impl(volume, chosen, &rep, 0, -1, nullptr);
  if (pick.weighed) {
    // What the run measured, with the triangles it made: the CPU's estimate is scaled, the GPU's parts (the link's
    // rates, the fixed cost) are learned one by one. The read costs the same on either side.
    iso::AutoJob made = iso::auto_job(volume, o, double(rep.triangles));
    made.vertices = double(rep.vertices);
    if (gpu) iso::learn_from_gpu_run(made, rep, cold);
    // (A CPU chosen by the cheap bounds teaches nothing: estimating it again could start the calibration the bounds
    // spared, after the run.)
    else if (!pick.before.cpu_bound)
      if (const core::DeviceEstimate e = iso::estimate_seconds(made); !e.cpu_bound)
        core::learn("isosurface", Device::Cpu, e.cpu_seconds, rep.seconds_total - rep.seconds_read);
    rep.device_choice = core::describe(pick.decision);
  }
  if (report) *report = rep;
  return mesh;
}

namespace iso {

int cpu_engine_threads(int requested, std::int64_t points) {
  // Waking a whole team costs more than a small volume's work.
  return cpu_thread_count_for(requested, points, std::int64_t(1) << 13);
}

SlabTask make_task(const VolumeGeometry& g, VoxelType type, const IsosurfaceOptions& o, int field) {
  bool mirrored = false;
  SlabTask task;
  task.type = type;
  task.dims = g.dims;
  task.map = world_map(g, o.direction, o.normals_down, mirrored);
  task.decider = o.topology != CaseTopology::Classic;
  task.tunnels = o.topology == CaseTopology::Mc33;
  task.keep_degenerate = o.keep_degenerate;
  task.flip = (o.direction == GradientDirection::Ascent) != mirrored;
  task.normals = o.normals;
  task.ranges = o.vertex_ranges && !o.scalars;
  task.field = field;
  task.origin = g.origin;
  task.spacing = g.spacing;
  return task;
}

TriangleMesh extract_isosurface_on_cpu_workers(VolumeSource& volume, const IsosurfaceOptions& o, int workers,
                                               IsosurfaceReport* report) {
  IsosurfaceOptions cpu = o;
  cpu.device = Device::Cpu;
  return extract_impl(volume, cpu, report, 0, -1, nullptr, nullptr, workers);
}

void set_room_piece_bytes(std::uint64_t bytes) {
  room_piece_bytes.store(std::max<std::uint64_t>(1, bytes), std::memory_order_relaxed);
}

}  // namespace iso

std::vector<distributed::IsosurfacePart> distributed::extract_isosurface_parts(VolumeSource& volume,
                                                                               const IsosurfaceOptions& o,
                                                                               std::int64_t z_begin, std::int64_t z_end,
                                                                               IsosurfaceReport* report,
                                                                               std::shared_ptr<void>* keep_engine) {
  std::vector<IsosurfacePart> parts;
  std::unique_ptr<iso::SlabEngine> engine;
  extract_impl(volume, o, report, z_begin, z_end, &parts, keep_engine ? &engine : nullptr);
  if (keep_engine) *keep_engine = std::move(engine);
  return parts;
}

std::string distributed::level_group_name(double level) { return level_name(level); }

}  // namespace parasurf
