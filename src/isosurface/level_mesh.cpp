// The host mesh of one level as slabs fill it (see level_mesh.hpp).
#include "isosurface/level_mesh.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "isosurface/part.hpp"
#include "parasurf/device.hpp"

namespace parasurf::iso {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

std::int64_t remove_duplicate_ties(LevelMesh& m) {
  if (m.ties.size() < 2) return 0;
  std::vector<std::uint32_t> corners;
  corners.reserve(3 * m.ties.size());
  for (auto t : m.ties) corners.insert(corners.end(), &m.triangles[3 * t], &m.triangles[3 * t] + 3);
  std::vector<std::uint64_t> drop = iso::coincident_tie_drops(corners, m.ties);
  if (drop.empty()) return 0;
  std::sort(drop.begin(), drop.end());
  // The kept runs between dropped triangles move down, a run at a time (drops are few).
  const std::size_t n = m.triangles.size() / 3;
  std::size_t w = std::size_t(drop[0]);
  for (std::size_t d = 0; d < drop.size(); ++d) {
    const std::size_t from = std::size_t(drop[d]) + 1, to = d + 1 < drop.size() ? std::size_t(drop[d + 1]) : n;
    if (from >= to) continue;
    std::memmove(&m.triangles[3 * w], &m.triangles[3 * from], 3 * (to - from) * sizeof(std::uint32_t));
    if (!m.labels.empty()) std::memmove(&m.labels[w], &m.labels[from], (to - from) * sizeof(m.labels[0]));
    w += to - from;
  }
  m.triangles.resize(3 * w);
  if (!m.labels.empty()) m.labels.resize(w);
  return std::int64_t(drop.size());
}

std::uint64_t host_mesh_bytes(const IsosurfaceOptions& o, std::uint64_t vertices, std::uint64_t triangles) {
  return vertices * ((o.normals ? 24 : 12) + (iso::vertex_values(o) ? 4 : 0)) + triangles * (o.labels ? 16 : 12);
}

iso::MeshTail tail_from(const iso::MeshTail& base, std::uint64_t v0, std::uint64_t t0) {
  iso::MeshTail tail;
  tail.positions = base.positions ? base.positions + 3 * v0 : nullptr;
  tail.normals = base.normals ? base.normals + 3 * v0 : nullptr;
  tail.values = base.values ? base.values + v0 : nullptr;
  tail.triangles = base.triangles ? base.triangles + 3 * t0 : nullptr;
  tail.face_labels = base.face_labels ? base.face_labels + t0 : nullptr;
  return tail;
}

iso::MeshTail tail_at(LevelMesh& m, std::uint64_t v0, std::uint64_t t0, const IsosurfaceOptions& o) {
  iso::MeshTail base;
  base.positions = m.positions.data();
  base.normals = o.normals ? m.normals.data() : nullptr;
  base.values = iso::vertex_values(o) ? m.values.data() : nullptr;
  base.triangles = m.triangles.data();
  base.face_labels = o.labels ? m.labels.data() : nullptr;
  return tail_from(base, v0, t0);
}

void size_ahead(LevelMesh& m, std::uint64_t vertices, std::uint64_t triangles, const IsosurfaceOptions& o, int pieces,
                const std::function<void(const iso::MeshTail&, std::uint64_t, std::uint64_t)>& grown, const RoomCap* cap) {
  m.positions.reserve(std::size_t(3 * vertices));
  if (o.normals) m.normals.reserve(std::size_t(3 * vertices));
  if (iso::vertex_values(o)) m.values.reserve(std::size_t(vertices));
  m.triangles.reserve(std::size_t(3 * triangles));
  if (o.labels) m.labels.reserve(std::size_t(triangles));
  const iso::MeshTail base = tail_at(m, 0, 0, o);  // (the lanes below own the vectors until they are joined)
  // Three lanes: triangles (and labels), positions, normals (and values). This thread faults each piece's pages in
  // with all threads, ahead of the lanes, which zero a piece once it is in (faulting all of the triangles' pages
  // first would hold their zeroing back); each lane tells the triangles or vertices it has
  // room for.
  struct Array {
    char* data;  // where the array starts, taken before the lanes own the vectors
    std::uint64_t from, bytes_per;  // its size now and the bytes of an element of the lane's count, in bytes
  };
  auto array_of = [](auto& v, std::uint64_t per) {
    return Array{reinterpret_cast<char*>(v.data()), v.size() * sizeof(v[0]), per * sizeof(v[0])};
  };
  const std::uint64_t counts[3] = {triangles, vertices, vertices};
  std::vector<Array> arrays[3];
  arrays[0].push_back(array_of(m.triangles, 3));
  if (o.labels) arrays[0].push_back(array_of(m.labels, 1));
  arrays[1].push_back(array_of(m.positions, 3));
  if (o.normals) arrays[2].push_back(array_of(m.normals, 3));
  if (iso::vertex_values(o)) arrays[2].push_back(array_of(m.values, 1));
  std::atomic<int> faulted[3] = {0, 0, 0};  // pieces whose pages are in, by lane
  auto fault_piece = [&](int which, int p) {
    const std::uint64_t a = counts[which] * std::uint64_t(p - 1) / std::uint64_t(pieces);
    const std::uint64_t b = counts[which] * std::uint64_t(p) / std::uint64_t(pieces);
    for (const Array& x : arrays[which]) {
      const std::uint64_t lo = std::max(x.from, a * x.bytes_per), hi = b * x.bytes_per;
      if (hi > lo) core::prefault(x.data + lo, hi - lo);
    }
    faulted[which].store(p, std::memory_order_release);
    faulted[which].notify_one();
  };
  std::atomic<std::uint64_t> ready[3] = {0, 0, 0};
  std::mutex telling;
  auto lane = [&](int which, auto& first, std::uint64_t per_first, auto* second, std::uint64_t per_second) {
    const std::uint64_t count = counts[which];
    for (int p = 1; p <= pieces; ++p) {
      for (int f = faulted[which].load(std::memory_order_acquire); f < p; f = faulted[which].load(std::memory_order_acquire))
        faulted[which].wait(f, std::memory_order_acquire);
      std::uint64_t n = count * std::uint64_t(p) / std::uint64_t(pieces);
      const std::uint64_t exact = !cap ? n : which == 0 ? cap->triangles.load() : cap->vertices.load();
      const bool last = p == pieces || exact <= n;
      n = std::min(n, exact);
      if (per_first * n > first.size()) first.resize(std::size_t(per_first * n));
      if (second && per_second * n > second->size()) second->resize(std::size_t(per_second * n));
      ready[which] = n;
      if (grown) {
        std::lock_guard<std::mutex> lock(telling);  // (rooms told in order: each at least the last)
        grown(base, std::min(ready[1].load(), ready[2].load()), ready[0].load());
      }
      if (last) break;
    }
  };
  using Floats = std::vector<float>;
  fault_piece(0, 1);
  std::jthread triangle_lane([&] { lane(0, m.triangles, 3, o.labels ? &m.labels : nullptr, 1); });
  fault_piece(1, 1);
  std::jthread position_lane([&] { lane(1, m.positions, 3, static_cast<Floats*>(nullptr), 0); });
  fault_piece(2, 1);
  std::jthread normal_lane([&] {
    if (o.normals) lane(2, m.normals, 3, iso::vertex_values(o) ? &m.values : nullptr, 1);
    else lane(2, m.values, iso::vertex_values(o) ? 1 : 0, static_cast<Floats*>(nullptr), 0);
  });
  for (int p = 2; p <= pieces; ++p)
    for (int which = 0; which < 3; ++which) fault_piece(which, p);
}

void copy_slab_into(const LevelMesh& part, const iso::MeshTail& to, std::uint32_t shift) {
  struct Piece {
    bool triangles;
    std::uint64_t first, last;
  };
  constexpr std::uint64_t block = std::uint64_t(1) << 18;
  const std::uint64_t nv = part.positions.size() / 3, nt = part.triangles.size() / 3;
  std::vector<Piece> pieces;
  for (std::uint64_t f = 0; f < nv; f += block) pieces.push_back({false, f, std::min(nv, f + block)});
  for (std::uint64_t f = 0; f < nt; f += block) pieces.push_back({true, f, std::min(nt, f + block)});
  auto copy = [](const auto& from, std::uint64_t a, std::uint64_t b, auto* at) {
    if (!from.empty() && at) std::copy(from.begin() + std::ptrdiff_t(a), from.begin() + std::ptrdiff_t(b), at + a);
  };
#pragma omp parallel for schedule(dynamic, 1) num_threads(cpu_thread_count(0))
  for (std::int64_t i = 0; i < std::int64_t(pieces.size()); ++i) {
    const Piece& q = pieces[std::size_t(i)];
    if (!q.triangles) {
      copy(part.positions, 3 * q.first, 3 * q.last, to.positions);
      copy(part.normals, 3 * q.first, 3 * q.last, to.normals);
      copy(part.values, q.first, q.last, to.values);
    } else {
      for (std::uint64_t k = 3 * q.first; k < 3 * q.last; ++k) to.triangles[k] = part.triangles[k] + shift;
      copy(part.labels, q.first, q.last, to.face_labels);
    }
  }
}

std::atomic<std::uint64_t> room_piece_bytes{std::uint64_t(64) << 20};

bool may_size_ahead(const IsosurfaceOptions& o, std::uint64_t triangles) {
  return triangles > 0 && host_mesh_bytes(o, triangles / 2, triangles) <= core::available_host_memory() / 2;
}

void reserve_expected_mesh(VolumeSource& volume, const IsosurfaceOptions& o, std::int64_t zb, std::int64_t ze, LevelMesh& m,
                           double& seconds, std::uint64_t& expected, std::latch& estimated, std::latch& sized, bool size_it) {
  const auto start = Clock::now();
  CountDownOnce announce{estimated}, announce_sized{sized};
  try {
    std::uint64_t triangles = o.expected_triangles;
    if (triangles == 0 && volume.builtin_field() >= 0 && !volume.resident_data()) {
      const std::int64_t layers = std::min(ze, volume.geometry().dims[2] - 1) - zb;
      if (layers <= 0) return;
      // A million cells sampled: the engines wait for this count, so it must stay small beside a run.
      const auto cost = iso::layer_costs(volume, o, zb, zb + layers, std::max<std::int64_t>(1, layers / 64), 1u << 20);
      for (auto c : cost) triangles += 2 * std::uint64_t(c);
      if (triangles < (1u << 20)) return;  // small meshes are cheap to grow
    }
    if (triangles == 0) return;
    triangles += triangles / 8;           // the sampled count errs by a few percent either way
    expected = triangles;
    announce();
    if (!size_it || !may_size_ahead(o, triangles)) return;
    size_ahead(m, triangles / 2, triangles, o);
    seconds = since(start);  // (only when the arrays were sized ahead)
  } catch (...) {  // only a hint: the mesh grows as usual
  }
}

}  // namespace parasurf::iso
