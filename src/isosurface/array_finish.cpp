// scikit-image's mask and per-vertex values after the engine, on the host (see cell_values.hpp).
#include <atomic>
#include <cstring>
#include <omp.h>

#include "core/voxel_dispatch.hpp"
#include "isosurface/array_mesh.hpp"
#include "isosurface/cell_values.hpp"
#include "isosurface/engine.hpp"
#include "parasurf/device.hpp"

namespace parasurf::iso {

namespace {

cells::Grid grid_of(const ArrayView3& v, std::array<double, 3> cell_size) {
  cells::Grid g{static_cast<const char*>(v.data), {}, {}, {}};
  for (int a = 0; a < 3; ++a) {
    g.stride[a] = v.strides[a];
    g.shape[a] = v.shape[a];
    g.cell[a] = cell_size[a];
  }
  return g;
}

// Exclusive prefix sums of `flags` (0/1) by blocks, in parallel; returns the total.
std::uint64_t scan_flags(const std::vector<std::uint8_t>& flags, std::vector<std::uint32_t>& index, int threads) {
  const std::int64_t n = std::int64_t(flags.size());
  index.resize(flags.size());
  std::vector<std::uint64_t> block_sum(std::size_t(threads) + 1, 0);
  std::uint64_t total = 0;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::int64_t b0 = n * t / nt, b1 = n * (t + 1) / nt;
    std::uint64_t s = 0;
    for (std::int64_t i = b0; i < b1; ++i) s += flags[std::size_t(i)];
    block_sum[std::size_t(t) + 1] = s;
#pragma omp barrier
#pragma omp single
    {
      for (int b = 0; b < nt; ++b) block_sum[std::size_t(b) + 1] += block_sum[std::size_t(b)];
      total = block_sum[std::size_t(nt)];
    }
    std::uint64_t at = block_sum[std::size_t(t)];
    for (std::int64_t i = b0; i < b1; ++i) {
      index[std::size_t(i)] = std::uint32_t(at);
      at += flags[std::size_t(i)];
    }
  }
  return total;
}

void drop_masked(const cells::Grid& g, const ArrayView3& mask, TriangleMesh& m, int threads) {
  const std::int64_t nf = m.triangle_count(), nv = m.vertex_count();
  std::vector<std::uint8_t> keep(std::size_t(nf), 0), used(std::size_t(nv), 0);
  const char* mk = static_cast<const char*>(mask.data);
  const float* p = m.positions.data();
  const std::uint32_t* t = m.triangles.data();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t f = 0; f < nf; ++f) {
    std::int64_t c[3];
    cells::face_cell(g, p, t, f, c);
    const bool k = mk[(c[0] + 1) * mask.strides[0] + (c[1] + 1) * mask.strides[1] + (c[2] + 1) * mask.strides[2]] != 0;
    keep[std::size_t(f)] = k;
    if (k)
      for (int a = 0; a < 3; ++a) std::atomic_ref<std::uint8_t>(used[t[3 * f + a]]).store(1, std::memory_order_relaxed);
  }
  std::vector<std::uint32_t> face_at, vertex_at;
  const std::uint64_t kept_f = scan_flags(keep, face_at, threads), kept_v = scan_flags(used, vertex_at, threads);
  std::vector<float> pos(std::size_t(kept_v) * 3), nrm(m.normals.empty() ? 0 : std::size_t(kept_v) * 3);
  std::vector<std::uint32_t> tri(std::size_t(kept_f) * 3);
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static) nowait
    for (std::int64_t v = 0; v < nv; ++v)
      if (used[std::size_t(v)])
        for (int a = 0; a < 3; ++a) {
          pos[3 * std::size_t(vertex_at[std::size_t(v)]) + a] = m.positions[3 * std::size_t(v) + a];
          if (!nrm.empty()) nrm[3 * std::size_t(vertex_at[std::size_t(v)]) + a] = m.normals[3 * std::size_t(v) + a];
        }
#pragma omp for schedule(static)
    for (std::int64_t f = 0; f < nf; ++f)
      if (keep[std::size_t(f)])
        for (int a = 0; a < 3; ++a) tri[3 * std::size_t(face_at[std::size_t(f)]) + a] = vertex_at[t[3 * f + a]];
  }
  m.positions = std::move(pos);
  m.normals = std::move(nrm);
  m.triangles = std::move(tri);
}

template <class T>
void fill_values(const cells::Grid& g, float level, const TriangleMesh& m, std::vector<float>& values, int threads) {
  const std::int64_t nf = m.triangle_count();
  values.assign(std::size_t(m.vertex_count()), 0.0f);
  const float* p = m.positions.data();
  const std::uint32_t* t = m.triangles.data();
  // Triangles come in cell order, two to four a cell: a cell's range (eight samples in four rows of the volume,
  // far apart in memory) is read once for its run of triangles.
#pragma omp parallel num_threads(threads)
  {
    std::int64_t last[3] = {-1, -1, -1};
    float range = 0;
    std::uint32_t key = 0;
#pragma omp for schedule(static)
    for (std::int64_t f = 0; f < nf; ++f) {
      std::int64_t c[3];
      cells::face_cell(g, p, t, f, c);
      if (c[0] != last[0] || c[1] != last[1] || c[2] != last[2]) {
        range = cells::cell_range<T>(g, c, level);
        key = cells::range_key(range);
        last[0] = c[0], last[1] = c[1], last[2] = c[2];
      }
      for (int a = 0; a < 3; ++a) {
        std::atomic_ref<float> slot(values[t[3 * f + a]]);
        float now = slot.load(std::memory_order_relaxed);
        while (key > cells::range_key(now) && !slot.compare_exchange_weak(now, range, std::memory_order_relaxed)) {
        }
      }
    }
  }
}

}  // namespace

void finish_array_mesh(const ArrayView3& volume, const ArrayView3* mask, double level, std::array<double, 3> cell_size,
                       TriangleMesh& mesh, std::vector<float>* values, int threads) {
  threads = cpu_engine_threads(threads, volume.shape[0] * volume.shape[1] * volume.shape[2]);
  const cells::Grid g = grid_of(volume, cell_size);
  core::visit_voxel_type(volume.type, [&](auto tag) {
    using T = decltype(tag);
    if (mask) drop_masked(g, *mask, mesh, threads);
    if (values) fill_values<T>(g, float(level), mesh, *values, threads);
  });
}

}  // namespace parasurf::iso
