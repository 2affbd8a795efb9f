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

#include "core/memory.hpp"
#include "isosurface/labels.hpp"
#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"

namespace parasurf {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Label of sample (i, j, k), the background outside the grid.
struct PaddedLabels {
  const std::int32_t* data;
  std::int64_t nx, ny, nz;
  std::int32_t background;
  std::int32_t at(std::int64_t i, std::int64_t j, std::int64_t k) const {
    if (i < 0 || j < 0 || k < 0 || i >= nx || j >= ny || k >= nz) return background;
    return data[(k * ny + j) * nx + i];
  }
};

// Cells (c_i, c_j, c_k) in [−1, n − 1] per axis, stored shifted by one.
struct CellGrid {
  std::int64_t cx, cy, cz;
  std::int64_t index(std::int64_t i, std::int64_t j, std::int64_t k) const { return ((k + 1) * cy + j + 1) * cx + i + 1; }
};

int distinct_labels(const std::int32_t* c) {
  int n = 0;
  for (int a = 0; a < 8; ++a) {
    bool seen = false;
    for (int b = 0; b < a; ++b) seen = seen || c[b] == c[a];
    n += seen ? 0 : 1;
  }
  return n;
}

}  // namespace

TriangleMesh extract_label_boundaries(VolumeSource& volume, const LabelBoundaryOptions& o, LabelBoundaryReport* report) {
  const auto start = Clock::now();
  const auto& g = volume.geometry();
  const std::int64_t nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  if (nx < 1 || ny < 1 || nz < 1) throw Error(ErrorKind::InvalidArgument, volume.name() + ": empty label volume");
  if (o.smoothing_iterations < 0 || o.smoothing_iterations > 10000)
    throw Error(ErrorKind::InvalidArgument, "smoothing iterations must be 0..10000");
  if (!(o.relaxation >= 0 && o.relaxation <= 1)) throw Error(ErrorKind::InvalidArgument, "relaxation must be in [0, 1]");
  if (!(o.constraint >= 0 && o.constraint < 0.5))
    throw Error(ErrorKind::InvalidArgument, "the constraint must be in [0, 0.5) voxels");
  const int threads = cpu_thread_count(o.threads);
  const CellGrid cells{nx + 1, ny + 1, nz + 1};
  const std::uint64_t voxels = std::uint64_t(g.voxel_count()),
                      cell_count = std::uint64_t(cells.cx) * std::uint64_t(cells.cy) * std::uint64_t(cells.cz);
  core::check_host_allocation(voxels * 4 + cell_count * 4, volume.name() + ": labels and cell vertex ids");

  // The labels, whole (the per-label mode is in core).
  std::vector<std::int32_t> labels(voxels);
  {
    std::vector<char> raw;
    const std::uint64_t slice = std::uint64_t(nx * ny);
    const std::int64_t per = std::max<std::int64_t>(1, std::int64_t((std::uint64_t(128) << 20) / (slice * 8)));
    for (std::int64_t z = 0; z < nz; z += per)
      iso::read_labels(volume, z, std::min(nz, z + per), labels.data() + std::uint64_t(z) * slice, raw);
  }
  const PaddedLabels L{labels.data(), nx, ny, nz, o.background};
  const double seconds_read = since(start);
  const auto t_cells = Clock::now();

  // Pass 1: which cells carry a vertex, counted per cell row (j, k), then numbered in row order.
  const std::int64_t cell_rows = cells.cy * cells.cz;
  std::vector<std::uint32_t> vertex_of(cell_count, std::numeric_limits<std::uint32_t>::max());
  std::vector<std::uint64_t> row_count(std::size_t(cell_rows) + 1, 0);
  auto corners = [&](std::int64_t i, std::int64_t j, std::int64_t k, std::int32_t* c) {
    for (int q = 0; q < 8; ++q) c[q] = L.at(i + (q & 1), j + (q >> 1 & 1), k + (q >> 2 & 1));
  };
  // A row of samples (j, k), or nullptr for a row of background outside the grid.
  auto row_of = [&](std::int64_t j, std::int64_t k) -> const std::int32_t* {
    return (j < 0 || k < 0 || j >= ny || k >= nz) ? nullptr : labels.data() + (k * ny + j) * nx;
  };
  auto value = [&](const std::int32_t* row, std::int64_t i) {
    return (row && i >= 0 && i < nx) ? row[i] : o.background;
  };
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (std::int64_t r = 0; r < cell_rows; ++r) {
    const std::int64_t j = r % cells.cy - 1, k = r / cells.cy - 1;
    const std::int32_t* rows[4] = {row_of(j, k), row_of(j + 1, k), row_of(j, k + 1), row_of(j + 1, k + 1)};
    std::uint64_t n = 0;
    // Column i of the cell row: its four samples, and whether they agree; cell i spans columns i and i + 1.
    auto column = [&](std::int64_t i, std::int32_t& v) {
      v = value(rows[0], i);
      return value(rows[1], i) == v && value(rows[2], i) == v && value(rows[3], i) == v;
    };
    std::int32_t left_value;
    bool left_uniform = column(-1, left_value);
    for (std::int64_t i = -1; i < nx; ++i) {
      std::int32_t right_value;
      const bool right_uniform = column(i + 1, right_value);
      if (!(left_uniform && right_uniform && left_value == right_value)) {
        vertex_of[std::size_t(cells.index(i, j, k))] = 0;
        ++n;
      }
      left_uniform = right_uniform;
      left_value = right_value;
    }
    row_count[std::size_t(r) + 1] = n;
  }
  for (std::int64_t r = 0; r < cell_rows; ++r) row_count[std::size_t(r) + 1] += row_count[std::size_t(r)];
  const std::uint64_t vertex_count = row_count[std::size_t(cell_rows)];
  if (vertex_count > std::numeric_limits<std::uint32_t>::max())
    throw Error(ErrorKind::LimitReached, volume.name() + ": the boundary mesh has more than 4294967295 vertices");
  core::check_host_allocation(vertex_count * 2 * 3 * 4 + vertex_count, volume.name() + ": boundary vertices");
  std::vector<float> pos(3 * vertex_count);
  std::vector<std::uint8_t> junction(vertex_count);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (std::int64_t r = 0; r < cell_rows; ++r) {
    const std::int64_t j = r % cells.cy - 1, k = r / cells.cy - 1;
    std::uint64_t v = row_count[std::size_t(r)];
    for (std::int64_t i = -1; i < nx; ++i) {
      auto& id = vertex_of[std::size_t(cells.index(i, j, k))];
      if (id != 0) continue;
      id = std::uint32_t(v);
      std::int32_t c[8];
      corners(i, j, k, c);
      junction[v] = distinct_labels(c) >= 3 ? 1 : 0;
      pos[3 * v] = float(i) + 0.5f;
      pos[3 * v + 1] = float(j) + 0.5f;
      pos[3 * v + 2] = float(k) + 0.5f;
      ++v;
    }
  }

  // Pass 2: a quad for every sample edge whose ends differ (the two labels: first the larger, the normal pointing
  // from it into the other), counted per sample row and written at scanned offsets.
  auto excluded = [&](std::int32_t a) {
    return std::find(o.exclude_labels.begin(), o.exclude_labels.end(), a) != o.exclude_labels.end();
  };
  // Sample rows (j, k) over the padded range [−1, n]: an edge along axis a starts at a sample in [−1, n_a − 1]
  // and lies on real samples along the other two axes (else both ends are background).
  const std::int64_t srows = (ny + 2) * (nz + 2);
  std::vector<std::uint64_t> quad_base(std::size_t(srows) + 1, 0);
  const bool any_excluded = !o.exclude_labels.empty();
  auto for_each_quad = [&](std::int64_t r, auto&& emit) {
    const std::int64_t j = r % (ny + 2) - 1, k = r / (ny + 2) - 1;
    const std::int32_t *here_row = row_of(j, k), *y_row = row_of(j + 1, k), *z_row = row_of(j, k + 1);
    // x edges need j, k on the grid; y edges k and i; z edges i and j.
    const bool jk = j >= 0 && j < ny && k >= 0 && k < nz, y_ok = k >= 0 && k < nz && j < ny,
               z_ok = j >= 0 && j < ny && k < nz;
    if (!jk && !y_ok && !z_ok) return;
    for (std::int64_t i = -1; i <= nx; ++i) {
      const std::int64_t p[3] = {i, j, k};
      const std::int32_t here = value(here_row, i);
      const bool i_real = i >= 0 && i < nx;
      const std::int32_t there[3] = {jk && i < nx ? value(here_row, i + 1) : here, y_ok && i_real ? value(y_row, i) : here,
                                     z_ok && i_real ? value(z_row, i) : here};
      for (int a = 0; a < 3; ++a) {
        if (there[a] == here || (any_excluded && (excluded(here) || excluded(there[a])))) continue;
        emit(p, a, here, there[a]);
      }
    }
  };
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (std::int64_t r = 0; r < srows; ++r) {
    std::uint64_t n = 0;
    for_each_quad(r, [&](const std::int64_t*, int, std::int32_t, std::int32_t) { ++n; });
    quad_base[std::size_t(r) + 1] = n;
  }
  for (std::int64_t r = 0; r < srows; ++r) quad_base[std::size_t(r) + 1] += quad_base[std::size_t(r)];
  const std::uint64_t quad_count = quad_base[std::size_t(srows)];
  core::check_host_allocation(quad_count * (16 + 8 + 2 * 12 + 8), volume.name() + ": boundary faces");
  std::vector<std::uint32_t> quads(4 * quad_count);
  std::vector<std::int32_t> quad_labels(2 * quad_count);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (std::int64_t r = 0; r < srows; ++r) {
    std::uint64_t at = quad_base[std::size_t(r)];
    for_each_quad(r, [&](const std::int64_t* p, int a, std::int32_t here, std::int32_t there) {
      const int u = (a + 1) % 3, v = (a + 2) % 3;
      // Cells around the edge, counter-clockwise about +axis a: (0,0), (−1,0), (−1,−1), (0,−1) in (u, v).
      std::uint32_t ring[4];
      const int du[4] = {0, 1, 1, 0}, dv[4] = {0, 0, 1, 1};
      for (int c = 0; c < 4; ++c) {
        std::int64_t cell[3] = {p[0], p[1], p[2]};
        cell[u] -= du[c];
        cell[v] -= dv[c];
        ring[c] = vertex_of[std::size_t(cells.index(cell[0], cell[1], cell[2]))];
      }
      const bool forward = here > there;  // the normal runs +a from `here` into `there`
      std::uint32_t* out = &quads[4 * at];
      for (int c = 0; c < 4; ++c) out[c] = forward ? ring[c] : ring[3 - c];
      quad_labels[2 * at] = std::max(here, there);
      quad_labels[2 * at + 1] = std::min(here, there);
      ++at;
    });
  }
  const double seconds_faces = since(t_cells);
  const auto t_smooth = Clock::now();

  // Smoothing: neighbours along quad edges (a compressed list), Jacobi steps clamped to each vertex's cell.
  if (o.smoothing_iterations > 0 && vertex_count > 0) {
    std::vector<std::uint64_t> degree(vertex_count + 1, 0);
    for (std::uint64_t qd = 0; qd < quad_count; ++qd)
      for (int c = 0; c < 4; ++c) degree[quads[4 * qd + c] + 1] += 2;
    for (std::uint64_t v = 0; v < vertex_count; ++v) degree[v + 1] += degree[v];
    std::vector<std::uint32_t> nbr(degree[vertex_count]);
    std::vector<std::uint64_t> fill(degree.begin(), degree.end() - 1);
    for (std::uint64_t qd = 0; qd < quad_count; ++qd)
      for (int c = 0; c < 4; ++c) {
        const std::uint32_t a = quads[4 * qd + c], b = quads[4 * qd + (c + 1) % 4], z = quads[4 * qd + (c + 3) % 4];
        nbr[fill[a]++] = b;
        nbr[fill[a]++] = z;
      }
    std::vector<std::uint64_t> unique_end(vertex_count);
#pragma omp parallel for schedule(dynamic, 1024) num_threads(threads)
    for (std::int64_t v = 0; v < std::int64_t(vertex_count); ++v) {
      auto b = nbr.begin() + std::int64_t(degree[std::size_t(v)]), e = nbr.begin() + std::int64_t(degree[std::size_t(v) + 1]);
      std::sort(b, e);
      unique_end[std::size_t(v)] = std::uint64_t(std::unique(b, e) - nbr.begin());
    }
    std::vector<float> next(pos.size()), centre(pos);
    // Taubin's λ|μ steps (a shrinking step, then an inflating one) smooth the voxel steps without the volume loss
    // of plain Laplacian smoothing; pass band k = 1/λ + 1/μ = 0.1.
    const float lambda = float(o.relaxation), mu = lambda > 0 ? 1.0f / (0.1f - 1.0f / lambda) : 0.0f;
    const float limit = float(o.constraint);
    for (int it = 0; it < o.smoothing_iterations; ++it) {
      const float relax = (it % 2 == 1 && o.preserve_volume) ? mu : lambda;
#pragma omp parallel for schedule(dynamic, 1024) num_threads(threads)
      for (std::int64_t v = 0; v < std::int64_t(vertex_count); ++v) {
        float sum[3] = {0, 0, 0};
        int n = 0;
        for (std::uint64_t e = degree[std::size_t(v)]; e < unique_end[std::size_t(v)]; ++e) {
          const std::uint32_t w = nbr[e];
          if (junction[std::size_t(v)] && !junction[w]) continue;  // junction curves stay sharp
          for (int a = 0; a < 3; ++a) sum[a] += pos[3 * std::size_t(w) + a];
          ++n;
        }
        for (int a = 0; a < 3; ++a) {
          const float x = pos[3 * std::size_t(v) + a];
          const float moved = n ? x + relax * (sum[a] / float(n) - x) : x;
          const float c = centre[3 * std::size_t(v) + a];
          next[3 * std::size_t(v) + a] = std::clamp(moved, c - limit, c + limit);
        }
      }
      pos.swap(next);
    }
  }
  const double seconds_smooth = since(t_smooth);

  // Output: world positions, two triangles per quad split along the shorter diagonal, labels and groups per pair.
  TriangleMesh m;
  m.positions.resize(3 * vertex_count);
  const auto J = g.jacobian();
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t v = 0; v < std::int64_t(vertex_count); ++v) {
    const float* x = &pos[3 * std::size_t(v)];
    for (int r = 0; r < 3; ++r)
      m.positions[3 * std::size_t(v) + r] =
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
    const std::uint32_t* q = &quads[4 * std::size_t(qd)];
    std::uint32_t* t = &m.triangles[6 * std::size_t(qd)];
    if (dist2(q[0], q[2]) <= dist2(q[1], q[3])) {
      const std::uint32_t tri[6] = {q[0], q[1], q[2], q[0], q[2], q[3]};
      std::copy(tri, tri + 6, t);
    } else {
      const std::uint32_t tri[6] = {q[0], q[1], q[3], q[1], q[2], q[3]};
      std::copy(tri, tri + 6, t);
    }
    for (int h = 0; h < 2; ++h) {
      m.face_labels[2 * std::size_t(qd) + h] = quad_labels[2 * std::size_t(qd)];
      m.face_outer_labels[2 * std::size_t(qd) + h] = quad_labels[2 * std::size_t(qd) + 1];
    }
  }
  std::vector<std::pair<std::int32_t, std::int32_t>> pairs;
  for (std::uint64_t qd = 0; qd < quad_count; ++qd) pairs.emplace_back(quad_labels[2 * qd], quad_labels[2 * qd + 1]);
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
    report->junction_vertices = std::count(junction.begin(), junction.end(), 1);
    report->seconds_read = seconds_read;
    report->seconds_faces = seconds_faces;
    report->seconds_smooth = seconds_smooth;
    report->seconds_total = since(start);
  }
  return m;
}

}  // namespace parasurf
