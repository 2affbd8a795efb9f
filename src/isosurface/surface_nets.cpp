// Boundaries between the labels of a label map as one shared mesh: Surface Nets.
// Gibson 1998 ("Constrained elastic surface nets"), multi-label form after Frisken 2022 ("SurfaceNets for
// multi-label segmentations with preservation of sharp boundaries"), as VTK's vtkSurfaceNets3D does.
//
// Samples are voxel centres; outside the volume lies the background label. Every cell of 2×2×2 samples whose labels
// differ carries one vertex, first at the cell centre; every pair of neighbouring samples with different labels
// gives a quad joining the four cells around their edge. So a face between labels a and b exists once and both
// objects use it. Vertices are then relaxed towards their neighbours, each kept within its cell; vertices where
// three or more labels meet follow only their like, so junction curves stay sharp. Smoothing alternates shrinking
// and inflating steps (Taubin 1995, "A signal processing approach to fair surface design") so volumes keep.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/backends.hpp"
#include "core/memory.hpp"
#include "isosurface/slab_run.hpp"
#include "isosurface/nets_core.hpp"
#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"

namespace parasurf {

namespace nets {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

void core_cpu(const Grid& g, const Params& params, int threads, Core& out) {
  const auto t_faces = Clock::now();
  const std::uint64_t cell_count = std::uint64_t(g.nx + 1) * std::uint64_t(g.ny + 1) * std::uint64_t(g.nz + 1);
  // Cells with a vertex, counted per cell row, then numbered in row order.
  const std::int64_t cell_rows = g.cell_rows();
  std::vector<std::uint32_t> vertex_of(cell_count, std::numeric_limits<std::uint32_t>::max());
  std::vector<std::uint64_t> row_first(std::size_t(cell_rows) + 1, 0);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (std::int64_t r = 0; r < cell_rows; ++r) {
    const CellRow c = cell_row(g, r);
    // Column i: its four samples and whether they agree; cell i spans columns i and i + 1.
    auto column = [&](std::int64_t i, std::int32_t& v) {
      v = g.value(c.rows[0], i);
      return g.value(c.rows[1], i) == v && g.value(c.rows[2], i) == v && g.value(c.rows[3], i) == v;
    };
    std::uint64_t n = 0;
    std::int32_t left_value;
    bool left_uniform = column(-1, left_value);
    for (std::int64_t i = -1; i < g.nx; ++i) {
      std::int32_t right_value;
      const bool right_uniform = column(i + 1, right_value);
      if (!(left_uniform && right_uniform && left_value == right_value)) {
        vertex_of[std::size_t(g.cell_index(i, c.j, c.k))] = 0;
        ++n;
      }
      left_uniform = right_uniform;
      left_value = right_value;
    }
    row_first[std::size_t(r) + 1] = n;
  }
  for (std::int64_t r = 0; r < cell_rows; ++r) row_first[std::size_t(r) + 1] += row_first[std::size_t(r)];
  const std::uint64_t vertex_count = row_first[std::size_t(cell_rows)];
  if (vertex_count > std::numeric_limits<std::uint32_t>::max())
    throw Error(ErrorKind::LimitReached, "the boundary mesh has more than 4294967295 vertices");
  core::check_host_allocation(vertex_count * (2 * 3 * 4 + 1), "boundary vertices");
  out.positions.assign(3 * vertex_count, 0.0f);
  out.junction.assign(vertex_count, 0);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (std::int64_t r = 0; r < cell_rows; ++r) {
    const CellRow c = cell_row(g, r);
    std::uint64_t v = row_first[std::size_t(r)];
    for (std::int64_t i = -1; i < g.nx; ++i) {
      auto& id = vertex_of[std::size_t(g.cell_index(i, c.j, c.k))];
      if (id != 0) continue;
      id = std::uint32_t(v);
      out.junction[v] = cell_labels(g, c, i) >= 3 ? 1 : 0;
      out.positions[3 * v] = float(i) + 0.5f;
      out.positions[3 * v + 1] = float(c.j) + 0.5f;
      out.positions[3 * v + 2] = float(c.k) + 0.5f;
      ++v;
    }
  }

  // Quads: counted per sample row, written at scanned offsets.
  const std::int64_t srows = g.sample_rows();
  std::vector<std::uint64_t> quad_first(std::size_t(srows) + 1, 0);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (std::int64_t r = 0; r < srows; ++r) {
    std::uint64_t n = 0;
    for (std::int64_t i = -1; i <= g.nx; ++i)
      row_quads(g, r, i, [&](std::int64_t, std::int64_t, std::int64_t, int, std::int32_t, std::int32_t) { ++n; });
    quad_first[std::size_t(r) + 1] = n;
  }
  for (std::int64_t r = 0; r < srows; ++r) quad_first[std::size_t(r) + 1] += quad_first[std::size_t(r)];
  const std::uint64_t quad_count = quad_first[std::size_t(srows)];
  core::check_host_allocation(quad_count * (16 + 8 + 2 * 12 + 8 + 64), "boundary faces");
  out.quads.resize(4 * quad_count);
  out.quad_labels.resize(2 * quad_count);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (std::int64_t r = 0; r < srows; ++r) {
    std::uint64_t at = quad_first[std::size_t(r)];
    for (std::int64_t i = -1; i <= g.nx; ++i)
      row_quads(g, r, i, [&](std::int64_t qi, std::int64_t qj, std::int64_t qk, int a, std::int32_t here, std::int32_t there) {
        std::int64_t cells[4];
        quad_cells(g, qi, qj, qk, a, here, there, cells);
        for (int c = 0; c < 4; ++c) out.quads[4 * at + c] = vertex_of[std::size_t(cells[c])];
        out.quad_labels[2 * at] = std::max(here, there);
        out.quad_labels[2 * at + 1] = std::min(here, there);
        ++at;
      });
  }
  out.seconds_faces = since(t_faces);

  const auto t_smooth = Clock::now();
  if (params.iterations > 0 && vertex_count > 0) {
    // Neighbours along quad edges: sorted, without repeats, in one compressed list.
    std::vector<std::uint64_t> degree(vertex_count + 1, 0);
    for (std::uint64_t q = 0; q < quad_count; ++q)
      for (int c = 0; c < 4; ++c) degree[out.quads[4 * q + c] + 1] += 2;
    for (std::uint64_t v = 0; v < vertex_count; ++v) degree[v + 1] += degree[v];
    std::vector<std::uint32_t> all(degree[vertex_count]);
    std::vector<std::uint64_t> fill(degree.begin(), degree.end() - 1);
    for (std::uint64_t q = 0; q < quad_count; ++q)
      for (int c = 0; c < 4; ++c) {
        const std::uint32_t* quad = &out.quads[4 * q];
        all[fill[quad[c]]++] = quad[(c + 1) % 4];
        all[fill[quad[c]]++] = quad[(c + 3) % 4];
      }
    std::vector<std::uint64_t> kept(vertex_count + 1, 0);
#pragma omp parallel for schedule(dynamic, 1024) num_threads(threads)
    for (std::int64_t v = 0; v < std::int64_t(vertex_count); ++v) {
      auto b = all.begin() + std::int64_t(degree[std::size_t(v)]), e = all.begin() + std::int64_t(degree[std::size_t(v) + 1]);
      std::sort(b, e);
      kept[std::size_t(v) + 1] = std::uint64_t(std::unique(b, e) - b);
    }
    for (std::uint64_t v = 0; v < vertex_count; ++v) kept[v + 1] += kept[v];
    std::vector<std::uint32_t> neighbours(kept[vertex_count]);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t v = 0; v < std::int64_t(vertex_count); ++v)
      std::copy(all.begin() + std::int64_t(degree[std::size_t(v)]),
                all.begin() + std::int64_t(degree[std::size_t(v)] + (kept[std::size_t(v) + 1] - kept[std::size_t(v)])),
                neighbours.begin() + std::int64_t(kept[std::size_t(v)]));
    std::vector<float> next(out.positions.size()), centre(out.positions);
    for (int step = 0; step < params.iterations; ++step) {
      const float factor = params.factor(step);
#pragma omp parallel for schedule(static) num_threads(threads)
      for (std::int64_t v = 0; v < std::int64_t(vertex_count); ++v)
        smooth_vertex(std::uint32_t(v), out.positions.data(), centre.data(), kept.data(), neighbours.data(),
                      out.junction.data(), factor, params.limit, next.data());
      out.positions.swap(next);
    }
  }
  out.seconds_smooth = since(t_smooth);
}

}  // namespace nets

TriangleMesh extract_label_boundaries(VolumeSource& volume, const LabelBoundaryOptions& o, LabelBoundaryReport* report) {
  const auto start = nets::Clock::now();
  const auto& g = volume.geometry();
  const std::int64_t nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  if (nx < 1 || ny < 1 || nz < 1) throw Error(ErrorKind::InvalidArgument, volume.name() + ": empty label volume");
  if (o.smoothing_iterations < 0 || o.smoothing_iterations > 10000)
    throw Error(ErrorKind::InvalidArgument, "smoothing iterations must be 0..10000");
  if (!(o.relaxation >= 0 && o.relaxation <= 1)) throw Error(ErrorKind::InvalidArgument, "relaxation must be in [0, 1]");
  if (!(o.constraint >= 0 && o.constraint < 0.5))
    throw Error(ErrorKind::InvalidArgument, "the constraint must be in [0, 0.5) voxels");
  Device device = resolve_device(o.device == Device::Hybrid ? Device::Auto : o.device);
  if (device == Device::Cuda && !cuda_available())
    throw Error(ErrorKind::Device, "--device cuda: " + cuda_unavailable_reason());
  const std::uint64_t voxels = std::uint64_t(g.voxel_count()),
                      cell_count = std::uint64_t(nx + 1) * std::uint64_t(ny + 1) * std::uint64_t(nz + 1);
  core::check_host_allocation(voxels * 4 + (device == Device::Cpu ? cell_count * 4 : 0),
                              volume.name() + ": labels and cell vertex ids");

  // The labels, whole (this mode works in core).
  std::vector<std::int32_t> labels(voxels);
  {
    std::vector<char> raw;
    const std::uint64_t slice = std::uint64_t(nx * ny);
    const std::int64_t per = std::max<std::int64_t>(1, std::int64_t((std::uint64_t(128) << 20) / (slice * 8)));
    for (std::int64_t z = 0; z < nz; z += per)
      iso::read_labels(volume, z, std::min(nz, z + per), labels.data() + std::uint64_t(z) * slice, raw);
  }
  const double seconds_read = nets::since(start);
  const nets::Grid grid{labels.data(), nx, ny, nz, o.background, o.exclude_labels.data(), int(o.exclude_labels.size())};
  nets::Params params;
  params.iterations = o.smoothing_iterations;
  // Taubin's λ|μ steps (a shrinking step, then an inflating one) smooth the voxel steps without the volume loss
  // of plain Laplacian smoothing; pass band k = 1/λ + 1/μ = 0.1.
  params.lambda = float(o.relaxation);
  params.mu = (o.preserve_volume && o.relaxation > 0) ? float(1.0 / (0.1 - 1.0 / o.relaxation)) : 0.0f;
  params.limit = float(o.constraint);
  nets::Core core;
  if (device == Device::Cuda) {
    if constexpr (parasurf::core::kCudaBuilt) nets::core_cuda(grid, params, 0, core);
    else parasurf::core::no_cuda_backend("label boundaries on cuda");
  }
  else nets::core_cpu(grid, params, cpu_thread_count(o.threads), core);
  labels = {};
  const std::uint64_t quad_count = core.quad_labels.size() / 2;

  // Vertices no face uses (their faces were excluded) are dropped; the rest keep their order.
  const std::uint64_t cells_with_vertex = core.junction.size();
  std::vector<std::uint32_t> remap(cells_with_vertex, std::numeric_limits<std::uint32_t>::max());
  for (std::uint32_t v : core.quads) remap[v] = 0;
  std::uint32_t vertex_count = 0;
  for (auto& r : remap)
    if (r == 0) r = vertex_count++;

  // Output: world positions, two triangles per quad split along the shorter diagonal, labels and groups per pair.
  TriangleMesh m;
  m.positions.resize(3 * std::size_t(vertex_count));
  const auto J = g.jacobian();
  const int threads = cpu_thread_count(o.threads);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t v = 0; v < std::int64_t(cells_with_vertex); ++v) {
    const std::uint32_t to = remap[std::size_t(v)];
    if (to == std::numeric_limits<std::uint32_t>::max()) continue;
    const float* x = &core.positions[3 * std::size_t(v)];
    for (int r = 0; r < 3; ++r)
      m.positions[3 * std::size_t(to) + r] =
          float(g.origin[r] + J[3 * r] * x[0] + J[3 * r + 1] * x[1] + J[3 * r + 2] * x[2]);
  }
  m.triangles.resize(6 * quad_count);
  m.face_labels.resize(2 * quad_count);
  m.face_outer_labels.resize(2 * quad_count);
  auto dist2 = [&](std::uint32_t a, std::uint32_t b) {
    double d = 0;
    for (int r = 0; r < 3; ++r) {
      const double x = double(m.positions[3 * std::size_t(a) + r]) - m.positions[3 * std::size_t(b) + r];
      d += x * x;
    }
    return d;
  };
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t qd = 0; qd < std::int64_t(quad_count); ++qd) {
    std::uint32_t q[4];
    for (int c = 0; c < 4; ++c) q[c] = remap[core.quads[4 * std::size_t(qd) + c]];
    std::uint32_t* t = &m.triangles[6 * std::size_t(qd)];
    const bool first_diagonal = dist2(q[0], q[2]) <= dist2(q[1], q[3]);
    const std::uint32_t tri[2][6] = {{q[0], q[1], q[2], q[0], q[2], q[3]}, {q[0], q[1], q[3], q[1], q[2], q[3]}};
    std::copy(tri[first_diagonal ? 0 : 1], tri[first_diagonal ? 0 : 1] + 6, t);
    for (int h = 0; h < 2; ++h) {
      m.face_labels[2 * std::size_t(qd) + h] = core.quad_labels[2 * std::size_t(qd)];
      m.face_outer_labels[2 * std::size_t(qd) + h] = core.quad_labels[2 * std::size_t(qd) + 1];
    }
  }
  std::vector<std::pair<std::int32_t, std::int32_t>> pairs;
  for (std::uint64_t qd = 0; qd < quad_count; ++qd)
    pairs.emplace_back(core.quad_labels[2 * qd], core.quad_labels[2 * qd + 1]);
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  m.face_groups.resize(2 * quad_count);
  for (std::uint64_t t = 0; t < 2 * quad_count; ++t)
    m.face_groups[t] = std::int32_t(std::lower_bound(pairs.begin(), pairs.end(),
                                                     std::pair{m.face_labels[t], m.face_outer_labels[t]}) -
                                    pairs.begin());
  for (const auto& [a, b] : pairs) {
    m.group_names.push_back("labels " + std::to_string(a) + "|" + std::to_string(b));
    const auto c = label_color(a);
    m.group_colors.insert(m.group_colors.end(), c.begin(), c.end());
  }
  if (report) {
    report->device = device == Device::Cuda ? "cuda" : "cpu";
    report->labels.clear();
    for (const auto& [a, b] : pairs) {
      report->labels.push_back(a);
      report->labels.push_back(b);
    }
    std::sort(report->labels.begin(), report->labels.end());
    report->labels.erase(std::unique(report->labels.begin(), report->labels.end()), report->labels.end());
    report->label_pairs = std::int64_t(pairs.size());
    report->vertices = m.vertex_count();
    report->triangles = m.triangle_count();
    report->junction_vertices = 0;
    for (std::uint64_t v = 0; v < cells_with_vertex; ++v)
      report->junction_vertices += (core.junction[v] && remap[v] != std::numeric_limits<std::uint32_t>::max()) ? 1 : 0;
    report->seconds_read = seconds_read;
    report->seconds_faces = core.seconds_faces;
    report->seconds_smooth = core.seconds_smooth;
    report->seconds_total = nets::since(start);
  }
  return m;
}

}  // namespace parasurf
