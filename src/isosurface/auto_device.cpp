// `auto` for isosurfaces (see auto_device.hpp). The CPU side is t = c0 + u · (samples · levels + w · triangles),
// c0 and u measured on this machine; the GPU side is its fixed cost per call plus the bytes over the host link at
// typical effective rates plus the kernels. Both are then corrected by what this process's runs measured
// (core/auto_choice.cpp), so a link or a CPU unlike the typical one is learned after a call or two.
// Also the cost of each layer of a volume, by which MPI ranks split it (part.hpp).
#include "core/backends.hpp"
#include "isosurface/auto_device.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <numbers>
#include <type_traits>

#include "core/voxel_dispatch.hpp"
#include "isosurface/engine.hpp"
#include "isosurface/field_value.hpp"
#include "isosurface/part.hpp"
#include "isosurface/slab_run.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"

namespace parasurf::iso {
namespace {

// A triangle costs the CPU engine about as much as this many classified samples (its vertices' interpolation and
// normals, the triangle's indices); the calibration measures the rest.
constexpr double kTriangleWeight = 40;
// GPU: per call (launches, waits; the engine and its arrays are kept between calls, and the first call's making of
// them is learned with the rest), the link's effective rates for pageable host memory through the engine's staging,
// the kernels' rate per sample and per triangle, and a context's start (cuInit, the context, the module's load),
// typical of a data-centre GPU. The first three are replaced by what this process measures. (A call's fixed cost:
// on an H100 host a 64^3 uint8 volume from host memory took 0.19 ms in all once small meshes came home through a
// pinned buffer, about 0.11 ms of it neither the link nor the kernels; at 0.25 ms the estimate lay more than twice
// the CPU's, so auto never tried the GPU there and kept the CPU at 1.15x the GPU's time.)
constexpr double kGpuCallSeconds = 0.12e-3;
constexpr double kUploadBytesPerSecond = 25e9;
constexpr double kDownloadBytesPerSecond = 15e9;
constexpr double kGpuSamplesPerSecond = 1.5e11;
constexpr double kGpuTrianglesPerSecond = 5e9;
constexpr double kContextStartSeconds = 0.3;
// The host mesh's fresh arrays, made when the slab's counts are known (faulted in and cleared: about 12 GB/s of mesh
// on the H200 host), a cost the GPU's run pays in full while the CPU's calibration holds its share. Pages a freed
// result left in the process's pool cost almost nothing: the rate is learned from the GPU runs' measured time (the
// same time the call's fixed cost is learned without), so that the estimate does not keep a cost the runs no
// longer pay.
constexpr double kHostMeshBytesPerSecond = 12e9;
std::atomic<double> host_mesh_seconds_per_byte{1 / kHostMeshBytesPerSecond};
// A built-in field's samples cost the CPU this much each to compute (the GPU computes them in its kernels).
constexpr double kFieldSampleSeconds = 8e-9;

struct CpuRates {
  double c0 = 0, per_unit = 0;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Best of `timed` CPU runs on a built-in field of n^3 float samples, after `warm_ups` untimed ones: {work units,
// seconds}.
std::pair<double, double> calibration_run(int n, int threads, int warm_ups, int timed) {
  std::vector<float> axis(std::size_t(n) * 3);
  for (int i = 0; i < n; ++i) {
    const double t = 2 * std::numbers::pi * 3 * (i + 0.5) / n;
    axis[i] = float(std::sin(t)), axis[n + i] = float(std::cos(t)), axis[2 * n + i] = float(std::sin(t + 0.7));
  }
  std::vector<float> samples(std::size_t(n) * n * n);
  for (int z = 0; z < n; ++z)
    for (int y = 0; y < n; ++y) {
      float* row = samples.data() + (std::size_t(z) * n + y) * n;
      const float yz = axis[n + y] + axis[2 * n + z];
      for (int x = 0; x < n; ++x) row[x] = axis[x] + yz;
    }
  VolumeGeometry g;
  g.dims = {n, n, n};
  MemoryVolume volume(g, VoxelType::Float32, samples.data(), "calibration");
  IsosurfaceOptions o;
  o.levels = {0.1};
  o.device = Device::Cpu;
  o.threads = threads;
  double best = 1e30, triangles = 0;
  for (int r = 0; r < warm_ups + timed; ++r) {
    IsosurfaceReport rep;
    const auto t0 = std::chrono::steady_clock::now();
    extract_isosurface(volume, o, &rep);
    if (r >= warm_ups) best = std::min(best, seconds_since(t0));
    triangles = double(rep.triangles);
  }
  return {double(n) * n * n + kTriangleWeight * triangles, best};
}

// Measured once per process and thread count (two small runs, the best of five and of three). The process's first
// runs are not timed: its threads start and the engine's arrays are faulted in then (on a 2-core machine the first
// two 64^3 runs took 50 and 26 ms against 2.8 ms after, which made every estimate 3x too slow). On a shared host
// the best of two was still 3x slow at times (an H100 host: 0.79 ms estimated for a 64^3 run of 0.24 ms, and auto
// sent it to the GPU at 1.2x the CPU's time); the extra runs cost a few milliseconds once.
CpuRates cpu_rates(int threads) {
  static std::mutex lock;
  static std::map<int, CpuRates> known;
  std::lock_guard<std::mutex> g(lock);
  if (auto it = known.find(threads); it != known.end()) return it->second;
  const auto [w0, t0] = calibration_run(64, threads, 2, 5);
  const auto [w1, t1] = calibration_run(128, threads, 1, 3);
  CpuRates r;
  r.per_unit = (t1 - t0) / (w1 - w0);
  r.c0 = t0 - r.per_unit * w0;
  if (!(r.per_unit > 0) || r.c0 < 0) r = {0, t1 / w1};  // noise: the larger run's plain rate
  known[threads] = r;
  return r;
}

double cpu_units(const AutoJob& job) {
  const double samples = double(job.dims[0]) * double(job.dims[1]) * double(job.dims[2]);
  return samples * job.levels * (1 + 0.25 * job.extra_volumes) + kTriangleWeight * job.triangles;
}

double samples_of(const AutoJob& job) { return double(job.dims[0]) * double(job.dims[1]) * double(job.dims[2]); }

double bytes_up(const AutoJob& job) {
  return samples_of(job) * ((job.samples_on_host ? double(voxel_bytes(job.type)) : 0) + 4.0 * job.extra_volumes);
}

double bytes_down(const AutoJob& job) {
  const double vertices = job.vertices > 0 ? job.vertices : job.triangles / 2;
  return vertices * (12 + (job.normals ? 12 : 0) + 4.0 * job.extra_volumes) + job.triangles * 12;
}

double kernel_seconds(const AutoJob& job) {
  return samples_of(job) * job.levels / kGpuSamplesPerSecond + job.triangles / kGpuTrianglesPerSecond;
}

double gpu_seconds(const AutoJob& job) {
  return (core::cuda_context_active(0) ? 0 : kContextStartSeconds) +
         core::gpu_call_seconds("isosurface", kGpuCallSeconds) +
         core::link_seconds(true, bytes_up(job), kUploadBytesPerSecond) +
         core::link_seconds(false, bytes_down(job), kDownloadBytesPerSecond) + kernel_seconds(job) +
         bytes_down(job) * host_mesh_seconds_per_byte.load(std::memory_order_relaxed);
}

// Crossed edges along x, y and z from the rows of a lattice: each row's x edges, and the y and z edges to the next
// row and slice (the last row and slice use the ones before them).
template <class T>
double crossings_on_rows(const T* data, const std::array<std::int64_t, 3>& d, double level, std::int64_t ky,
                         std::int64_t kz) {
  // Compared in the samples' own arithmetic (float for float samples: the smallest float not below the level gives
  // the same answer as the comparison in double), and counted without a carried value, so the loops vectorise.
  using C = std::conditional_t<std::is_same_v<T, float>, float, double>;
  C at = C(level);
  if constexpr (std::is_same_v<C, float>)
    if (double(at) < level) at = std::nextafter(at, HUGE_VALF);
  std::int64_t crossings = 0;
  const std::int64_t dy = d[1] > 1 ? d[0] : 0, dz = d[2] > 1 ? d[0] * d[1] : 0;
  for (std::int64_t j = 0; j < kz; ++j)
    for (std::int64_t i = 0; i < ky; ++i) {
      const std::int64_t y = (2 * i + 1) * d[1] / (2 * ky), z = (2 * j + 1) * d[2] / (2 * kz);
      const T* row = data + (z * d[1] + y) * d[0];
      const T* next_row = y + 1 < d[1] ? row + dy : row - dy;
      const T* next_slice = z + 1 < d[2] ? row + dz : row - dz;
      std::int64_t count = 0;
      for (std::int64_t x = 0; x < d[0]; ++x) {
        const bool in = C(row[x]) >= at;
        count += (in != (C(next_row[x]) >= at)) + (in != (C(next_slice[x]) >= at));
      }
      for (std::int64_t x = 1; x < d[0]; ++x) count += (C(row[x]) >= at) != (C(row[x - 1]) >= at);
      crossings += count;
    }
  return double(crossings);
}

}  // namespace

core::DeviceEstimate estimate_seconds(const AutoJob& job) {
  const int threads = cpu_engine_threads(job.threads, job.dims[0] * job.dims[1] * job.dims[2]);
  const double units = cpu_units(job);
  const double samples = double(job.dims[0]) * double(job.dims[1]) * double(job.dims[2]);
  const double field = job.samples_on_host ? 0 : samples * kFieldSampleSeconds / threads;
  core::DeviceEstimate e;
  e.cuda_seconds = gpu_seconds(job);
  // Bounds on the CPU before measuring it (3 ns per unit on one thread at worst, half the threads' worth; 0.3 ns
  // per unit per thread at best): where they settle the choice, no calibration is spent.
  const double slow = 2e-4 + field + units * 3e-9 / std::max(1.0, threads / 2.0);
  const double fast = field + units * 0.3e-9 / threads;
  if (slow < 0.5 * e.cuda_seconds || fast > 2 * e.cuda_seconds) {
    e.cpu_seconds = slow < 0.5 * e.cuda_seconds ? slow : fast;
    e.cpu_bound = true;
    return e;
  }
  const CpuRates r = cpu_rates(threads);
  e.cpu_seconds = r.c0 + field + r.per_unit * units;
  return e;
}

void learn_from_gpu_run(const AutoJob& made, const IsosurfaceReport& rep, bool context_started) {
  core::learn_link(true, bytes_up(made), rep.profile.seconds_upload);
  core::learn_link(false, bytes_down(made), rep.profile.seconds_download);
  // (The host mesh's arrays grow with the mesh: not a fixed cost. Its rate moves halfway to each run's, as the
  // link's do; a mesh under 1 MiB shows little but the fixed costs.)
  if (const double bytes = bytes_down(made); bytes >= double(1 << 20) && rep.profile.seconds_host_mesh >= 0) {
    const double known = host_mesh_seconds_per_byte.load(std::memory_order_relaxed);
    const double measured = std::clamp(rep.profile.seconds_host_mesh / bytes, known / 4, known * 4);
    host_mesh_seconds_per_byte.store(0.5 * (known + measured), std::memory_order_relaxed);
  }
  core::learn_gpu_call("isosurface", rep.seconds_total - rep.seconds_read - rep.profile.seconds_upload -
                                         rep.profile.seconds_download - rep.profile.seconds_host_mesh -
                                         (context_started ? rep.profile.seconds_engine_start : 0) - kernel_seconds(made));
}

double expected_triangles(VolumeSource& volume, const std::vector<double>& levels) {
  const auto d = volume.geometry().dims;
  const double samples = double(d[0]) * double(d[1]) * double(d[2]);
  const void* data = volume.resident_data();
  if (!data || levels.empty())
    return kTypicalTriangleDensity * samples * double(std::max<std::size_t>(1, levels.size()));
  // About 65,536 samples on a lattice of whole rows: a vertex per crossed edge, and about two triangles per vertex
  // (a closed surface has twice as many).
  const std::int64_t rows = std::clamp<std::int64_t>(65536 / std::max<std::int64_t>(1, d[0]), 16, d[1] * d[2]);
  const std::int64_t ky = std::clamp<std::int64_t>(
      std::int64_t(std::ceil(std::sqrt(double(rows) * double(d[1]) / double(d[2])))), 1, d[1]);
  const std::int64_t kz = std::clamp<std::int64_t>((rows + ky - 1) / ky, 1, d[2]);
  double total = 0;
  for (double level : levels)
    total += core::visit_voxel_type(volume.type(), [&](auto tag) {
      return crossings_on_rows(static_cast<const decltype(tag)*>(data), d, level, ky, kz);
    });
  return 2 * total * double(d[1]) * double(d[2]) / double(ky * kz);
}

bool auto_weighs_devices(const IsosurfaceOptions& o) {
  return o.device == Device::Auto && o.cuda_devices.empty() && core::kCudaBuilt && cuda_available();
}

AutoPick pick_device(VolumeSource& volume, const IsosurfaceOptions& o) {
  AutoPick p;
  const auto& d = volume.geometry().dims;
  const double samples = double(d[0]) * double(d[1]) * double(d[2]) * double(std::max<std::size_t>(1, o.levels.size()));
  if (samples < kAlwaysCpuSamples) return p;
  p.weighed = true;
  p.before = estimate_seconds(auto_job(volume, o, expected_triangles(volume, o.levels)));
  p.decision = core::decide("isosurface", p.before, true);
  p.device = p.decision.device;
  return p;
}

AutoJob auto_job(const VolumeSource& volume, const IsosurfaceOptions& o, double triangles) {
  AutoJob job;
  job.dims = volume.geometry().dims;
  job.type = volume.type();
  job.triangles = triangles;
  job.levels = int(std::max<std::size_t>(1, o.levels.size()));
  job.samples_on_host = !field_on_device(volume, Device::Cuda);
  job.normals = o.normals;
  job.extra_volumes = (o.labels ? 1 : 0) + (o.scalars ? 1 : 0);
  job.threads = o.threads;
  return job;
}

}  // namespace parasurf::iso

namespace parasurf {

AutoDeviceEstimate isosurface_auto_estimate(std::array<std::int64_t, 3> dims, VoxelType type, double triangles,
                                            int threads) {
  AutoDeviceEstimate out;
  for (std::int64_t n : dims)
    if (n < 2) throw Error(ErrorKind::InvalidArgument, "isosurface_auto_estimate: every dimension must be at least 2");
  if (!(triangles >= 0)) throw Error(ErrorKind::InvalidArgument, "isosurface_auto_estimate: triangles must be >= 0");
  IsosurfaceOptions o;
  o.threads = threads;
  if (!iso::auto_weighs_devices(o)) return out;
  const double samples = double(dims[0]) * double(dims[1]) * double(dims[2]);
  iso::AutoJob job;
  job.dims = dims;
  job.type = type;
  job.triangles = triangles > 0 ? triangles : iso::kTypicalTriangleDensity * samples;
  job.threads = threads;
  const core::AutoDecision d = core::decide("isosurface", iso::estimate_seconds(job));
  out.device = samples < iso::kAlwaysCpuSamples ? Device::Cpu : d.device;
  out.cpu_seconds = d.cpu_seconds;
  out.cuda_seconds = d.cuda_seconds;
  return out;
}

namespace iso {

// The layer that stands for the layers [from, to) of a sampled count: the middle one, so that a count that rises or
// falls along z errs both ways within the block instead of lagging a whole stride (which shifted MPI ranges).
namespace {
std::int64_t middle_layer(std::int64_t from, std::int64_t to) { return from + (to - from - 1) / 2; }
}  // namespace

}  // namespace iso

std::vector<std::int64_t> distributed::layer_costs(VolumeSource& volume, const IsosurfaceOptions& o, std::int64_t z_begin,
                                                   std::int64_t z_end, std::int64_t stride, std::uint64_t cell_budget) {
  using namespace iso;
  const int field = volume.builtin_field();
  if (o.levels.empty()) throw Error(ErrorKind::InvalidArgument, "layer costs need the levels");
  if (field < 0 || volume.resident_data()) return active_cells_per_slice(volume, o.levels, z_begin, z_end, stride);
  // A built-in field: one cell at a hashed place in every k x k block of a layer, its corners straight from the
  // formula (no slices generated, nothing on the GPU), standing for the block's cells. (The same corner of every
  // block aliased with the surfaces: the 2048^3 torus came 8.5 % short with k = 12.)
  const auto& g = volume.geometry();
  const std::int64_t nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  z_end = std::min(z_end, nz - 1);
  std::vector<std::int64_t> out(std::size_t(std::max<std::int64_t>(0, z_end - z_begin)), 0);
  if (z_begin >= z_end) return out;
  stride = std::max<std::int64_t>(1, stride);
  // k = size / 512, or more where the layers counted would take this rank's threads more than about a million cells
  // each (a few ms of formula evaluations), as for small volumes on ranks of one thread, or pass `cell_budget`.
  std::vector<std::int64_t> layers;
  for (std::int64_t z0 = z_begin; z0 < z_end; z0 += stride) layers.push_back(middle_layer(z0, std::min(z_end, z0 + stride)));
  const double counted = double(layers.size()) * double(nx - 1) * double(ny - 1);
  const std::int64_t k = std::max({std::int64_t(1), std::min(nx, ny) / 512,
                                   std::int64_t(std::ceil(std::sqrt(counted / (1e6 * cpu_thread_count(0))))),
                                   cell_budget ? std::int64_t(std::ceil(std::sqrt(counted / double(cell_budget)))) : 1});
  auto value = [&](std::int64_t x, std::int64_t y, std::int64_t z) {
    return float(field_value(field, field_coordinate(g.origin[0], g.spacing[0], x), field_coordinate(g.origin[1], g.spacing[1], y),
                             field_coordinate(g.origin[2], g.spacing[2], z)));
  };
  auto mix = [](std::uint64_t h) {  // splitmix64's finaliser
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return h ^ (h >> 31);
  };
  const std::int64_t bx_count = (nx - 1 + k - 1) / k, by_count = (ny - 1 + k - 1) / k;
  std::vector<std::int64_t> counts(layers.size(), 0);
  // All layers' block rows in one parallel loop: one team start for the count, not one per layer.
#pragma omp parallel num_threads(cpu_thread_count(0))
  {
    std::vector<std::int64_t> mine(layers.size(), 0);
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < std::int64_t(layers.size()) * by_count; ++r) {
      const std::size_t li = std::size_t(r / by_count);
      const std::int64_t z = layers[li], by = r % by_count, y0 = by * k, h = std::min(k, ny - 1 - y0);
      for (std::int64_t bx = 0; bx < bx_count; ++bx) {
        const std::int64_t x0 = bx * k, w = std::min(k, nx - 1 - x0);
        const std::uint64_t hash = mix((std::uint64_t(z) << 42) ^ (std::uint64_t(by) << 21) ^ std::uint64_t(bx));
        const std::int64_t x = x0 + std::int64_t(hash % std::uint64_t(w)), y = y0 + std::int64_t((hash >> 32) % std::uint64_t(h));
        float corner[8];
        for (int c = 0; c < 8; ++c) corner[c] = value(x + (c & 1), y + (c >> 1 & 1), z + (c >> 2));
        for (double level : o.levels) {
          bool in = false, outside = false;
          for (float v : corner) (v >= level ? in : outside) = true;
          if (in && outside) mine[li] += w * h;
        }
      }
    }
#pragma omp critical
    for (std::size_t i = 0; i < layers.size(); ++i) counts[i] += mine[i];
  }
  for (std::size_t li = 0; li < layers.size(); ++li) {
    const std::int64_t z0 = z_begin + std::int64_t(li) * stride;
    for (std::int64_t l = z0; l < std::min(z_end, z0 + stride); ++l) out[std::size_t(l - z_begin)] = counts[li];
  }
  return out;
}

namespace iso {

std::vector<std::int64_t> active_cells_per_slice(VolumeSource& volume, const std::vector<double>& levels, std::int64_t z_begin,
                                                 std::int64_t z_end, std::int64_t stride) {
  const auto& g = volume.geometry();
  const std::int64_t nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  z_end = std::min(z_end, nz - 1);  // cell layers
  std::vector<std::int64_t> out(std::size_t(std::max<std::int64_t>(0, z_end - z_begin)), 0);
  if (z_begin >= z_end) return out;
  const std::uint64_t slice = std::uint64_t(nx * ny);
  stride = std::max<std::int64_t>(1, stride);
  std::vector<char> raw;
  std::vector<float> f(2 * slice);
  // One layer in every stride (two slices read), its middle one, gives its count to all of them.
  for (std::int64_t z0 = z_begin; z0 < z_end; z0 += stride) {
    const std::int64_t z = middle_layer(z0, std::min(z_end, z0 + stride));
    const void* samples;
    if (const void* all = volume.resident_data()) {
      samples = static_cast<const char*>(all) + std::uint64_t(z) * slice * voxel_bytes(volume.type());
    } else {
      raw.resize(2 * slice * voxel_bytes(volume.type()));
      volume.read_slices(z, z + 2, raw.data());
      samples = raw.data();
    }
    samples_to_floats(samples, volume.type(), 2 * slice, f.data());
    // A cell is active when its corners lie on both sides (a value equal to the level counts as inside).
    const float* a = f.data();
    const float* b = a + slice;
    std::int64_t count = 0;
#pragma omp parallel for schedule(static) reduction(+ : count) num_threads(cpu_thread_count(0))
    for (std::int64_t y = 0; y < ny - 1; ++y)
      for (std::int64_t x = 0; x + 1 < nx; ++x) {
        const std::int64_t i = y * nx + x;
        const float c[8] = {a[i], a[i + 1], a[i + nx], a[i + nx + 1], b[i], b[i + 1], b[i + nx], b[i + nx + 1]};
        for (double level : levels) {  // every level from the one read of the two slices
          bool in = false, outside = false;
          for (float v : c) (v >= level ? in : outside) = true;
          count += in && outside;
        }
      }
    for (std::int64_t k = z0; k < std::min(z_end, z0 + stride); ++k) out[std::size_t(k - z_begin)] = count;
  }
  return out;
}

}  // namespace iso

}  // namespace parasurf
