// Mesh clean-up after the slabs: coincident tie triangles that cancel in pairs, vertices no triangle uses (removed
// and the corners renumbered in place, in parallel), and triangles of excluded labels.
#include <algorithm>
#include <span>
#include <atomic>
#include <cstring>
#include <mutex>

#include "isosurface/part.hpp"
#include "parasurf/device.hpp"

namespace parasurf::iso {

// Drops the triangles of excluded labels and the vertices no remaining triangle uses (order kept).
void exclude_labels(TriangleMesh& m, const std::vector<std::int32_t>& excluded) {
  if (excluded.empty()) return;
  const std::size_t nt = m.face_labels.size(), nv = std::size_t(m.vertex_count());
  std::vector<std::uint32_t> remap(nv, UINT32_MAX);
  std::size_t w = 0;
  for (std::size_t t = 0; t < nt; ++t) {
    if (std::find(excluded.begin(), excluded.end(), m.face_labels[t]) != excluded.end()) continue;
    for (int c = 0; c < 3; ++c) {
      m.triangles[3 * w + c] = m.triangles[3 * t + c];
      remap[m.triangles[3 * t + c]] = 0;
    }
    m.face_labels[w] = m.face_labels[t];
    if (!m.face_groups.empty()) m.face_groups[w] = m.face_groups[t];
    ++w;
  }
  m.triangles.resize(3 * w);
  m.face_labels.resize(w);
  if (!m.face_groups.empty()) m.face_groups.resize(w);
  std::uint32_t kept = 0;
  for (std::size_t v = 0; v < nv; ++v) {
    if (remap[v] == UINT32_MAX) continue;
    remap[v] = kept;
    for (int c = 0; c < 3; ++c) {
      m.positions[3 * kept + c] = m.positions[3 * v + c];
      if (!m.normals.empty()) m.normals[3 * kept + c] = m.normals[3 * v + c];
    }
    if (!m.vertex_values.empty()) m.vertex_values[kept] = m.vertex_values[v];
    ++kept;
  }
  m.positions.resize(3 * std::size_t(kept));
  if (!m.normals.empty()) m.normals.resize(3 * std::size_t(kept));
  if (!m.vertex_values.empty()) m.vertex_values.resize(kept);
  for (auto& v : m.triangles) v = remap[v];
}

}  // namespace parasurf::iso

namespace parasurf::distributed {
using namespace parasurf::iso;

std::vector<std::uint64_t> unreferenced_vertices(std::span<const std::uint32_t> triangles, std::uint64_t first,
                                                 std::uint64_t count, std::vector<std::uint32_t>* beyond) {
  std::vector<std::uint8_t> used(count, 0);
  const auto n = std::int64_t(triangles.size());
  std::mutex beyond_mutex;
#pragma omp parallel num_threads(cpu_thread_count(0))
  {
    std::vector<std::uint32_t> past;
#pragma omp for schedule(static) nowait
    for (std::int64_t k = 0; k < n; ++k) {
      const std::uint32_t corner = triangles[std::size_t(k)];
      const std::uint64_t v = std::uint64_t(corner) - first;  // below first: wraps past count
      if (v < count)
        std::atomic_ref<std::uint8_t>(used[v]).store(1, std::memory_order_relaxed);
      else if (beyond && corner >= first + count)
        past.push_back(corner);
    }
    if (beyond && !past.empty()) {
      std::sort(past.begin(), past.end());
      past.erase(std::unique(past.begin(), past.end()), past.end());
      std::lock_guard<std::mutex> lock(beyond_mutex);
      beyond->insert(beyond->end(), past.begin(), past.end());
    }
  }
  if (beyond) {
    std::sort(beyond->begin(), beyond->end());
    beyond->erase(std::unique(beyond->begin(), beyond->end()), beyond->end());
  }
  std::vector<std::uint64_t> unused;
  const std::uint8_t* const marks = used.data();
  for (std::uint64_t v = 0; v < count; ++v) {  // unused vertices are rare: memchr skips the marked ones fast
    const auto* hit = static_cast<const std::uint8_t*>(std::memchr(marks + v, 0, count - v));
    if (!hit) break;
    v = std::uint64_t(hit - marks);
    unused.push_back(first + v);
  }
  return unused;
}
}  // namespace parasurf::distributed

namespace parasurf::iso {

namespace {
// Keeps the items (of `per` values each) of [0, n) whose indices are not in `removed` (ascending), moved down in
// place by chunks in parallel: a chunk's items move down by at most k = removed.size(), into the last k of the
// chunk before, so every chunk saves those first.
template <class T, class A>
void compact_in_place(std::vector<T, A>& values, std::size_t per, const std::vector<std::uint64_t>& removed, std::uint64_t n) {
  const std::uint64_t k = removed.size();
  if (k == 0 || values.empty()) return;
  const std::uint64_t chunk = std::max<std::uint64_t>(std::uint64_t(1) << 16, 2 * k);
  const auto chunks = std::int64_t((n + chunk - 1) / chunk);
  std::vector<T> saved(std::size_t(chunks) * k * per);
  T* const v = values.data();
  auto range = [&](std::int64_t c, std::uint64_t& a, std::uint64_t& tail, std::uint64_t& b) {
    a = std::uint64_t(c) * chunk;
    b = std::min(n, a + chunk);
    tail = b - std::min(k, b - a);
  };
#pragma omp parallel num_threads(cpu_thread_count(0))
  {
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < chunks; ++c) {
      std::uint64_t a, tail, b;
      range(c, a, tail, b);
      std::memcpy(&saved[std::size_t(c) * k * per], v + tail * per, (b - tail) * per * sizeof(T));
    }
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < chunks; ++c) {
      std::uint64_t a, tail, b;
      range(c, a, tail, b);
      auto d = std::uint64_t(std::lower_bound(removed.begin(), removed.end(), a) - removed.begin());  // removed below i
      for (std::uint64_t i = a; i < tail;) {  // runs between removed items, in ascending order (they only move down)
        const std::uint64_t stop = d < k && removed[d] < tail ? removed[d] : tail;
        if (stop > i && d > 0) std::memmove(v + (i - d) * per, v + i * per, (stop - i) * per * sizeof(T));
        if (stop < tail) ++d;
        i = stop < tail ? stop + 1 : tail;
      }
      for (std::uint64_t i = tail; i < b; ++i) {  // the saved last items
        while (d < k && removed[d] < i) ++d;
        if (d < k && removed[d] == i) continue;
        std::memcpy(v + (i - d) * per, &saved[(std::size_t(c) * k + (i - tail)) * per], per * sizeof(T));
      }
    }
  }
  values.resize((n - k) * per);
}
}  // namespace

}  // namespace parasurf::iso

namespace parasurf::distributed {
using namespace parasurf::iso;

void remove_vertices(TriangleMesh& m, std::uint64_t first, const std::vector<std::uint64_t>& own_removed,
                     const std::vector<std::uint64_t>& all_removed) {
  // Only the removed ids from `first` on move a corner down.
  const auto from = std::lower_bound(all_removed.begin(), all_removed.end(), first);
  const std::vector<std::uint64_t> after(from, all_removed.end());
  if (after.empty()) return;
  const std::uint64_t nv = std::uint64_t(m.vertex_count());
  const auto n = std::int64_t(m.triangles.size());
  // A few removed ids (the usual case) are searched for each corner; many, through a table of the removed ids below
  // each own vertex.
  std::vector<std::uint32_t> shift;
  if (after.size() > 4096) {
    shift.resize(nv);
    const std::int64_t blocks = std::int64_t((nv + 65535) / 65536);
#pragma omp parallel for schedule(static) num_threads(cpu_thread_count(0))
    for (std::int64_t c = 0; c < blocks; ++c) {
      const std::uint64_t u0 = std::uint64_t(c) * 65536, u1 = std::min(nv, u0 + 65536);
      auto below = std::size_t(std::lower_bound(after.begin(), after.end(), first + u0) - after.begin());
      for (std::uint64_t u = u0; u < u1; ++u) {
        while (below < after.size() && after[below] < first + u) ++below;
        shift[u] = std::uint32_t(below);
      }
    }
  }
#pragma omp parallel for schedule(static) num_threads(cpu_thread_count(0))
  for (std::int64_t k = 0; k < n; ++k) {
    std::uint32_t& v = m.triangles[std::size_t(k)];
    v -= v < shift.size() ? shift[v] : std::uint32_t(std::lower_bound(after.begin(), after.end(), first + v) - after.begin());
  }
  if (own_removed.empty()) return;
  std::vector<std::uint64_t> local(own_removed.size());
  for (std::size_t d = 0; d < own_removed.size(); ++d) local[d] = own_removed[d] - first;
  compact_in_place(m.positions, 3, local, nv);
  compact_in_place(m.normals, 3, local, nv);
  compact_in_place(m.vertex_values, 1, local, nv);
}

std::vector<std::uint64_t> coincident_tie_drops(const std::vector<std::uint32_t>& corners, const std::vector<std::uint64_t>& ids) {
  struct Key {
    std::uint32_t v[3];
    std::uint64_t t;
  };
  std::vector<Key> keys;
  keys.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    Key k{{corners[3 * i], corners[3 * i + 1], corners[3 * i + 2]}, ids[i]};
    std::sort(k.v, k.v + 3);
    keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return std::lexicographical_compare(a.v, a.v + 3, b.v, b.v + 3) || (std::equal(a.v, a.v + 3, b.v) && a.t < b.t);
  });
  std::vector<std::uint64_t> drop;
  for (std::size_t a = 0; a < keys.size();) {
    std::size_t b = a + 1;
    while (b < keys.size() && std::equal(keys[a].v, keys[a].v + 3, keys[b].v)) ++b;
    // An even group cancels; an odd one keeps its first member.
    for (std::size_t c = ((b - a) % 2 ? a + 1 : a); c < b; ++c) drop.push_back(keys[c].t);
    a = b;
  }
  std::sort(drop.begin(), drop.end());
  return drop;
}
}  // namespace parasurf::distributed

