// scikit-image's mask after the engine, on the host, and the values next to its border (see cell_values.hpp).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <omp.h>

#include "core/voxel_dispatch.hpp"
#include "isosurface/array_mesh.hpp"
#include "isosurface/cell_values.hpp"
#include "isosurface/engine.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"

namespace parasurf::iso {

namespace {

cells::Grid grid_of(const ArrayView3& v, std::array<double, 3> cell_size) {
  cells::Grid g{static_cast<const char*>(v.data), {}, {}, {}};
  for (int a = 0; a < 3; ++a) {
    g.stride[a] = v.strides[a];
    g.shape[a] = v.shape[a];
    cells::set_cell_size(g, a, cell_size[a]);
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

// Drops the triangles whose cell is masked and the vertices only they used (with their values, when the mesh has
// them); `border` gets 1 for each kept vertex that a dropped triangle used too.
void drop_masked(const cells::Grid& g, const ArrayView3& mask, TriangleMesh& m, std::vector<std::uint8_t>& border,
                 int threads) {
  const std::int64_t nf = m.triangle_count(), nv = m.vertex_count();
  std::vector<std::uint8_t> keep(std::size_t(nf), 0), used(std::size_t(nv), 0), touched(std::size_t(nv), 0);
  const char* mk = static_cast<const char*>(mask.data);
  const float* p = m.positions.data();
  const std::uint32_t* t = m.triangles.data();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t f = 0; f < nf; ++f) {
    std::int64_t c[3];
    cells::face_cell(g, p, t, f, c);
    const bool k = mk[(c[0] + 1) * mask.strides[0] + (c[1] + 1) * mask.strides[1] + (c[2] + 1) * mask.strides[2]] != 0;
    keep[std::size_t(f)] = k;
    std::uint8_t* mark = k ? used.data() : touched.data();
    for (int a = 0; a < 3; ++a) std::atomic_ref<std::uint8_t>(mark[t[3 * f + a]]).store(1, std::memory_order_relaxed);
  }
  std::vector<std::uint32_t> face_at, vertex_at;
  const std::uint64_t kept_f = scan_flags(keep, face_at, threads), kept_v = scan_flags(used, vertex_at, threads);
  HostVector<float> pos(std::size_t(kept_v) * 3), nrm(m.normals.empty() ? 0 : std::size_t(kept_v) * 3);
  HostVector<float> val(m.vertex_values.empty() ? 0 : std::size_t(kept_v));
  border.assign(std::size_t(kept_v), 0);
  HostVector<std::uint32_t> tri(std::size_t(kept_f) * 3);
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static) nowait
    for (std::int64_t v = 0; v < nv; ++v)
      if (used[std::size_t(v)]) {
        border[vertex_at[std::size_t(v)]] = touched[std::size_t(v)];
        if (!val.empty()) val[vertex_at[std::size_t(v)]] = m.vertex_values[std::size_t(v)];
        for (int a = 0; a < 3; ++a) {
          pos[3 * std::size_t(vertex_at[std::size_t(v)]) + a] = m.positions[3 * std::size_t(v) + a];
          if (!nrm.empty()) nrm[3 * std::size_t(vertex_at[std::size_t(v)]) + a] = m.normals[3 * std::size_t(v) + a];
        }
      }
#pragma omp for schedule(static)
    for (std::int64_t f = 0; f < nf; ++f)
      if (keep[std::size_t(f)])
        for (int a = 0; a < 3; ++a) tri[3 * std::size_t(face_at[std::size_t(f)]) + a] = vertex_at[t[3 * f + a]];
  }
  m.positions = std::move(pos);
  m.normals = std::move(nrm);
  m.vertex_values = std::move(val);
  m.triangles = std::move(tri);
}

// values[v] for the vertices with only[v] set: the largest range of the cells of its triangles, each triangle's
// cell found from its centroid.
template <class T>
void fill_values(const cells::Grid& g, float level, const TriangleMesh& m, HostVector<float>& values,
                 const std::vector<std::uint8_t>& only, int threads) {
  const std::int64_t nf = m.triangle_count();
  for (std::size_t v = 0; v < only.size(); ++v)
    if (only[v]) values[v] = 0.0f;
  const float* p = m.positions.data();
  const std::uint32_t* t = m.triangles.data();
  // Triangles come in cell order, two to four a cell, and a cell's range reads eight samples in four rows of the
  // volume, far apart in memory: read once for the cell's run of triangles. The cells of the triangles kAhead
  // further on are found first and their rows asked of memory then, so that a range seldom waits for its samples
  // (it did for two thirds of this loop's time on a 256^3 float volume).
  constexpr std::int64_t kAhead = 32;
  const std::int64_t rows[4] = {0, g.stride[1], g.stride[0], g.stride[0] + g.stride[1]};
  // A vertex used by one thread's triangles alone takes a plain max; one shared with another thread's, an atomic
  // one (atomics took a third of the loop). Threads take runs of triangles in cell order, whose vertices lie in
  // nearly disjoint ranges of ids: a vertex is its thread's alone when its id lies above every id the threads
  // before use and below every id the threads after use.
  std::vector<std::int64_t> lowest(std::size_t(threads), 0), highest(std::size_t(threads), 0);
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t nt = omp_get_num_threads(), me = omp_get_thread_num();
    const std::int64_t f0 = nf * me / nt, f1 = nf * (me + 1) / nt;
    std::uint32_t lo = std::numeric_limits<std::uint32_t>::max(), hi = 0;
    for (std::int64_t i = 3 * f0; i < 3 * f1; ++i) lo = std::min(lo, t[i]), hi = std::max(hi, t[i]);
    lowest[std::size_t(me)] = f1 > f0 ? std::int64_t(lo) : std::numeric_limits<std::int64_t>::max();
    highest[std::size_t(me)] = f1 > f0 ? std::int64_t(hi) : -1;
#pragma omp barrier
    std::int64_t above = -1, below = std::numeric_limits<std::int64_t>::max();  // alone: above < id < below
    for (std::int64_t o = 0; o < nt; ++o)
      if (o < me) above = std::max(above, highest[std::size_t(o)]);
      else if (o > me) below = std::min(below, lowest[std::size_t(o)]);
    std::int64_t ring[kAhead];
    std::int64_t requested = -1;
    auto look_ahead = [&](std::int64_t f) {
      std::int64_t c[3];
      cells::face_cell(g, p, t, f, c);
      const std::int64_t at = cells::cell_offset(g, c);
      ring[f % kAhead] = at;
      if (at == requested) return;
      requested = at;
      for (std::int64_t r : rows) {
        __builtin_prefetch(g.data + at + r);
        __builtin_prefetch(g.data + at + r + g.stride[2]);
      }
    };
    for (std::int64_t f = f0; f < std::min(f0 + kAhead, f1); ++f) look_ahead(f);
    std::int64_t last = -1;
    float range = 0;
    std::uint32_t key = 0;
    for (std::int64_t f = f0; f < f1; ++f) {
      const std::int64_t at = ring[f % kAhead];
      if (f + kAhead < f1) look_ahead(f + kAhead);  // (into the slot just read)
      if (at != last) {
        range = cells::cell_range_at<T>(g, at, level);
        key = cells::range_key(range);
        last = at;
      }
      for (int a = 0; a < 3; ++a) {
        const std::int64_t id = t[3 * f + a];
        if (!only[std::size_t(id)]) continue;
        float& value = values[std::size_t(id)];
        if (id > above && id < below) {
          if (key > cells::range_key(value)) value = range;
          continue;
        }
        std::atomic_ref<float> slot(value);
        float now = slot.load(std::memory_order_relaxed);
        while (key > cells::range_key(now) && !slot.compare_exchange_weak(now, range, std::memory_order_relaxed)) {
        }
      }
    }
  }
}

}  // namespace

void finish_array_mesh(const ArrayView3& volume, const ArrayView3& mask, double level, std::array<double, 3> cell_size,
                       TriangleMesh& mesh, HostVector<float>* values, int threads) {
  threads = cpu_engine_threads(threads, volume.shape[0] * volume.shape[1] * volume.shape[2]);
  const cells::Grid g = grid_of(volume, cell_size);
  core::visit_voxel_type(volume.type, [&](auto tag) {
    using T = decltype(tag);
    std::vector<std::uint8_t> border;
    drop_masked(g, mask, mesh, border, threads);
    if (!values) return;
    // The engine's values, of every cell around each vertex: those next to a dropped triangle come from the
    // triangles kept.
    if (mesh.vertex_values.size() != std::size_t(mesh.vertex_count()))
      throw Error(ErrorKind::InvalidArgument, "finish_array_mesh: the mesh has no vertex values (vertex_ranges)");
    *values = std::move(mesh.vertex_values);
    if (std::find(border.begin(), border.end(), 1) != border.end())
      fill_values<T>(g, float(level), mesh, *values, border, threads);
  });
}

}  // namespace parasurf::iso
