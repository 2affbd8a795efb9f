// CPU slab engine: OpenMP over grid rows. Pass 1 classifies every point once (one byte: inside, on-level, owned
// vertex slots) and counts vertices and triangles per row; an exclusive scan over rows sizes the output; pass 2
// writes each row's vertices and each cell row's triangles at their scanned offsets, so no merge pass is needed.
// With the classic table, pass 1 also settles the ties (samples equal to the level) cell by cell: coincident pairs
// and the vertices left unused (level_cells.hpp), so no pass over the finished mesh is needed either.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <type_traits>
#include <cstring>
#include <map>
#include <memory>

#include "core/memory.hpp"
#include "core/scratch.hpp"
#include "core/voxel_dispatch.hpp"
#include "isosurface/cpu_rows.hpp"
#include "isosurface/cpu_vertices.hpp"
#include "isosurface/engine.hpp"
#include "isosurface/level_cells.hpp"
#include "isosurface/mc_tables.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"

namespace parasurf::iso {

namespace {

using namespace cpu_rows;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::atomic<bool> local_ties_enabled{true};
std::atomic<bool> batched_vertices_enabled{true};
std::atomic<std::uint64_t> hold_limit{std::numeric_limits<std::uint64_t>::max()};

}  // namespace

const level_cells::Tables& level_cells::tables() {
  static const std::unique_ptr<const Tables> built = [] {  // 170 KB: on the heap, not a thread's stack
    auto owned = std::make_unique<Tables>();
    Tables& t = *owned;
    const auto& entries = mc::case_tables().entries;
    for (int cas = 1; cas < 255; ++cas)
      for (int om = 0; om < 256; ++om) {
        if (om & ~cas) continue;  // a corner on the level is inside
        Summary& sum = t.summary[cell_index(cas, om)];
        sum.first = std::uint32_t(t.triangles.size());
        const mc::CaseEntry& e = entries[std::size_t(mc::entry_index(cas, 0))];
        level_cell_triangles(e, om, false, [&](int a, int b, int c, bool on_level) {
          t.triangles.push_back({{std::uint8_t(a), std::uint8_t(b), std::uint8_t(c)}, on_level});
          sum.referenced |= 1u << a | 1u << b | 1u << c;
        });
        sum.kept = std::uint8_t(t.triangles.size() - sum.first);
        LevelTriangle* tri = t.triangles.data() + sum.first;
        std::array<std::array<int, 3>, mc::kMaxTriangles> sorted{};
        for (int a = 0; a < sum.kept; ++a) {
          LevelTriangle& x = tri[a];
          sorted[std::size_t(a)] = {x.key[0], x.key[1], x.key[2]};
          std::sort(sorted[std::size_t(a)].begin(), sorted[std::size_t(a)].end());
          if (!x.on_level) continue;
          const int faces = mc::key_faces(x.key[0]) & mc::key_faces(x.key[1]) & mc::key_faces(x.key[2]);
          if (faces) {  // (three distinct keys share at most one face)
            x.face = std::uint8_t(std::countr_zero(unsigned(faces)));
            int ids[3] = {face_id(x.key[0], x.face), face_id(x.key[1], x.face), face_id(x.key[2], x.face)};
            std::sort(ids, ids + 3);
            x.face_ids = std::uint16_t(ids[0] | ids[1] << 5 | ids[2] << 10);
          }
        }
        for (int a = 0; a < sum.kept; ++a) {
          LevelTriangle& x = tri[a];
          if (!x.on_level) continue;
          for (int b = 0; b < sum.kept; ++b)
            if (b != a && sorted[std::size_t(b)] == sorted[std::size_t(a)])
              ++x.same, x.same_before = std::uint8_t(x.same_before + (b < a));
          sum.paired = sum.paired || x.face != kNoFace || x.same > 1;
        }
        // Slots of the cell: crossing edges, and on-level corners next to an outside corner. (An unused point vertex
        // is unused in every cell around it, among them those holding its outside neighbour: listing it from those
        // alone suffices, and spares the many cells where an on-level corner merely lies amid inside ones.)
        std::uint32_t slots = 0;
        for (int c = 0; c < 8; ++c)
          for (int axis = 0; axis < 3; ++axis)
            if ((om >> c & 1) && !(cas >> (c ^ 1 << axis) & 1)) slots |= 1u << (16 + c);
        for (int e = 0; e < 12; ++e) {
          const int c0 = mc::edge_lower_corner(e), c1 = c0 | 1 << mc::edge_axis(e);
          if ((cas >> c0 & 1) != (cas >> c1 & 1) && !(om >> c0 & 1) && !(om >> c1 & 1)) slots |= 1u << e;
        }
        sum.orphanable = slots & ~sum.referenced;
        sum.slots = slots;
        // An unpaired cell that left a crossing edge unused would need the edge checked: it takes the paired path.
        if (sum.orphanable & 0xFFFFu) sum.paired = true;
        t.corner_refs[cell_index(cas, om)] = std::uint8_t(sum.referenced >> 16);
        t.word[cell_index(cas, om)] = sum.first | std::uint32_t(sum.kept) << kKeptShift | (sum.paired ? kPairedBit : 0) |
                                      (sum.orphanable >> 16) << kOrphanShift;
      }
    return owned;
  }();
  return *built;
}

namespace {

// Bytes that are not zeroed when they grow: the sweeps write every byte before anything reads it. Kept in the
// process's scratch pool between extractions (core/scratch.hpp), so that a caller's next call finds them resident.
class ByteBuffer {
 public:
  // sparse: only a few rows are ever written (so its pages stay untouched, and unfaulted, elsewhere).
  explicit ByteBuffer(bool sparse = false) : sparse_(sparse) {}
  void resize(std::size_t n) { block_.reserve(n, !sparse_, "isosurface work bytes"); }
  std::uint8_t* data() { return block_.data(); }
  const std::uint8_t* data() const { return block_.data(); }

 private:
  core::ScratchBlock block_;
  bool sparse_;
};

// A per-row array (counts, offsets, first and last cells): a view into the engine's one block of them.
template <class T>
class RowArray {
 public:
  void view(std::uint8_t*& at, std::size_t n) {
    data_ = reinterpret_cast<T*>(at);
    n_ = n;
    at += (n * sizeof(T) + 63) & ~std::size_t(63);
  }
  T* data() { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  std::size_t size() const { return n_; }

 private:
  T* data_ = nullptr;
  std::size_t n_ = 0;
};

class CpuEngine final : public SlabEngine {
 public:
  explicit CpuEngine(int threads) : threads_(cpu_thread_count(threads)) {}
  std::string name() const override { return "cpu (" + std::to_string(threads_) + " threads)"; }
  StageSeconds seconds() const override { return seconds_; }
  bool point_vertices() const override { return point_vertices_; }
  bool tie_vertices() const override { return tie_vertices_; }
  std::uint64_t coincident_removed() const override { return coincident_dropped_; }
  // Flag bytes, the threads' rings of inside bytes (one byte per point at most), and the point marks of ties (a
  // third byte, touched only in rows on the level).
  double work_bytes_per_point(std::int64_t) const override { return 3.0; }

  SlabCounts count(const SlabTask& task) override {
    counts_ = core::visit_voxel_type(task.type, [&](auto tag) { return count_t<decltype(tag)>(task); });
    return counts_;
  }
  void generate(const SlabTask& task, const MeshTail& out, std::vector<std::uint64_t>& ties) override {
    core::visit_voxel_type(task.type, [&](auto tag) { generate_t<decltype(tag)>(task, out, ties); });
  }
  // Held in host arrays of the engine's own, up to set_cpu_hold_limit()'s bytes (as a GPU is bounded by its memory).
  bool hold(const SlabTask& task, std::size_t slot, std::vector<std::uint64_t>& ties) override {
    const std::size_t nv = counts_.vertices, nt = counts_.triangles;
    const std::uint64_t bytes = nv * ((task.normals ? 24 : 12) + (task.vertex_values() ? 4 : 0)) + nt * (task.labels ? 16 : 12);
    if (held_bytes_ + bytes > hold_limit.load(std::memory_order_relaxed)) return false;
    Held& h = held_[slot];
    h.positions.resize(3 * nv);
    if (task.normals) h.normals.resize(3 * nv);
    if (task.vertex_values()) h.values.resize(nv);
    h.triangles.resize(3 * nt);
    if (task.labels) h.labels.resize(nt);
    h.bytes = bytes;
    held_bytes_ += bytes;
    MeshTail mine;
    mine.positions = h.positions.data();
    mine.normals = task.normals ? h.normals.data() : nullptr;
    mine.values = task.vertex_values() ? h.values.data() : nullptr;
    mine.triangles = h.triangles.data();
    mine.face_labels = task.labels ? h.labels.data() : nullptr;
    generate(task, mine, ties);
    return true;
  }
  void fetch(std::size_t slot, const MeshTail& out, std::uint32_t vertex_shift) override {
    auto it = held_.find(slot);
    if (it == held_.end()) throw Error(ErrorKind::InvalidArgument, "CPU isosurface engine: no slab held in slot " + std::to_string(slot));
    const Held& h = it->second;
    if (out.positions) std::copy(h.positions.begin(), h.positions.end(), out.positions);
    if (out.normals) std::copy(h.normals.begin(), h.normals.end(), out.normals);
    if (out.values) std::copy(h.values.begin(), h.values.end(), out.values);
    if (out.triangles)
      for (std::size_t i = 0; i < h.triangles.size(); ++i) out.triangles[i] = h.triangles[i] + vertex_shift;
    if (out.face_labels) std::copy(h.labels.begin(), h.labels.end(), out.face_labels);
    held_bytes_ -= h.bytes;
    held_.erase(it);
  }

 private:
  struct Layout {
    std::int64_t nx, ny, nz, z0, z1, flag_z1, cell_z1;
    std::int64_t cells[3];  // the grid's cells along each axis
    std::int64_t flag_rows() const { return (flag_z1 - z0) * ny; }
  };
  static Layout layout(const SlabTask& t) {
    Layout l{t.dims[0], t.dims[1], t.dims[2], t.z0, t.z1, std::min(t.z1 + 1, t.dims[2]), std::min(t.z1, t.dims[2] - 1),
             {t.dims[0] - 1, t.dims[1] - 1, t.dims[2] - 1}};
    return l;
  }

  // Cells of a row that can be mixed: a crossing of cell i leaves a slot at point i or i + 1 of its four rows.
  std::pair<std::int64_t, std::int64_t> cell_span(std::int64_t r, const Layout& l) const {
    std::int64_t lo = l.nx, hi = -1;
    for (std::int64_t q : {r, r + 1, r + l.ny, r + l.ny + 1}) {
      lo = std::min(lo, row_first_[std::size_t(q)]);
      hi = std::max(hi, row_last_[std::size_t(q)]);
    }
    return {std::max<std::int64_t>(0, lo - 1), std::min(hi + 1, l.nx - 1)};
  }

  template <class T>
  static mc::SlabValues<T> values(const SlabTask& t) {
    return {static_cast<const T*>(t.data), t.dims[0], t.dims[1], t.dims[2], t.data_z0};
  }

  static mc::CaseLookup lookup(const SlabTask& task) {
    mc::CaseLookup l;
    const auto& tables = mc::case_tables();
    l.entries = tables.entries.data();
    if (task.decider) l.case_flags = tables.ambiguous_faces;
    if (task.tunnels) {
      const auto& tunnels = mc::tunnel_tables();
      l.case_flags = tunnels.case_flags;
      l.tunnel_block = tunnels.block.data();
      l.tunnel_entries = tunnels.entries.data();
    }
    return l;
  }

  // One function: the row sweep keeps its row pointers and running offsets in locals across the classify, count and
  // tie passes of a row, which a split into calls would pass through memory on every row.
  template <class T>
  SlabCounts count_t(const SlabTask& task) {
    using R = typename mc::RealOf<T>::type;
    const auto t0 = Clock::now();
    const Layout l = layout(task);
    const auto s = values<T>(task);
    const R level = R(task.level);
    const R eq = task.ties ? level : std::numeric_limits<R>::quiet_NaN();  // the samples that are ties: none if NaN
    const std::int64_t rows = l.flag_rows();
    flags_.resize(std::size_t(rows * l.nx));
    const std::int64_t inside_z1 = std::min(l.flag_z1 + 1, l.nz), inside_rows = (inside_z1 - l.z0) * l.ny;
    view_rows(std::size_t(rows), std::size_t(inside_rows));
    std::fill_n(row_vertices_.data(), rows, 0u);
    std::fill_n(row_triangles_.data(), rows, 0u);
    std::fill_n(row_first_.data(), rows, l.nx);
    std::fill_n(row_last_.data(), rows, std::int64_t(-1));
    // Three sweeps per slice: sweep 1 (vectorised) makes the inside bytes of the slice's points and notes the rows
    // holding a sample on the level, sweep 2 turns inside bytes into flags, and the count pass reads the flags of the
    // cells. Each thread runs them over a range of slices of its own, a few slices apart, so that what one sweep writes
    // the next reads from the core's cache: inside bytes live only in a ring of three slices per thread, and a cell
    // slice is counted three slices after its flags were made. Cells whose count may read flags of another thread's
    // slices (ties look two cells away) are counted after a barrier.
    const std::int64_t nx = l.nx, ny = l.ny;
    const std::size_t slice_bytes = std::size_t(ny * nx);
    const std::size_t ring_slot = (slice_bytes + 2 * std::size_t(ny) + 63) & ~std::size_t(63);
    // Four slices or more per thread, so that the rings hold at most one byte per point of the slab (as the budget
    // of work_bytes_per_point assumes) however many threads there are.
    const int team = int(std::min<std::int64_t>(threads_, std::max<std::int64_t>(1, (l.flag_z1 - l.z0) / 4)));
    ring_.resize(std::size_t(team) * 3 * ring_slot);
    std::uint8_t* flags = flags_.data();
    const mc::CaseLookup cases = lookup(task);
    const std::uint8_t* classic_triangles = mc::case_tables().classic_triangles;
    // Cells with an MC33 centre vertex, as (row, cell): marked after the loop, which reads the flags they change.
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> centers(task.tunnels ? std::size_t(threads_) : 0u);
    // Classic cells without kept degenerates resolve their ties here (level_cells.hpp); other topologies list them
    // for the pass over the whole mesh.
    const bool local = resolves_ties_locally(task);
    const auto& summaries = level_cells::tables().summary;
    const std::uint32_t* cell_words = level_cells::tables().word.data();
    const std::uint8_t* corner_refs = level_cells::tables().corner_refs.data();
    const level_cells::LevelTriangle* level_triangles = level_cells::tables().triangles.data();
    // Slot ids (drop_unused_slots): edges found unused, and points that some cell left unused.
    std::vector<std::vector<std::int64_t>> unused_slots(static_cast<std::size_t>(threads_));
    std::vector<std::vector<std::int64_t>> unused_points(static_cast<std::size_t>(threads_));
    // point_used[flag row · nx + i]: 1 once a kept triangle of a cell of this slab uses the point's vertex. Only
    // rows holding on-level samples are read, and they are zeroed in the flag sweep.
    if (local) point_used_.resize(std::size_t(rows * l.nx));
    std::uint8_t* point_used = point_used_.data();
    std::uint64_t dropped = 0;
    // The three passes share one parallel region: on small volumes, starting a region per pass cost more than the
    // barriers between the passes.
#pragma omp parallel num_threads(team) reduction(+ : dropped)
    {
    std::vector<std::int64_t>& my_unused = unused_slots[std::size_t(omp_get_thread_num())];
    std::vector<std::int64_t>& my_points = unused_points[std::size_t(omp_get_thread_num())];
    struct SlotAnswer {
      std::int64_t slot = -1;
      bool unused = false;
    };
    constexpr std::size_t kSlotMemo = 256;
    std::array<SlotAnswer, kSlotMemo> slot_memo{};
    const auto cell_bits = cell_bits_of(l, flags, s, level);
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::int64_t slices = l.flag_z1 - l.z0;
    const std::int64_t ka = l.z0 + slices * t / nt, kb = l.z0 + slices * (t + 1) / nt;
    // The slices whose rows this thread notes in row_on_level_ (the last thread has the slice past the flags too):
    // every inside slice has one owner, so no row is left unwritten.
    const std::int64_t own_end = t == nt - 1 ? inside_z1 : kb;
    std::uint8_t* const ring = ring_.data() + std::size_t(t) * 3 * ring_slot;
    // Slice k's inside bytes, then its rows' on-level and uniform bytes (k >= z0 - 1).
    auto ring_at = [&](std::int64_t k) { return ring + std::size_t((k - l.z0 + 3) % 3) * ring_slot; };
    auto sweep1 = [&](std::int64_t k) {
      std::uint8_t* const in = ring_at(k);
      std::uint8_t *const on_rows = in + slice_bytes, *const uniform = on_rows + ny;
      const T* const base = s.data + (k - task.data_z0) * ny * nx;
      for (std::int64_t j = 0; j < ny; ++j) {
        // Locals and restrict: byte stores could alias anything, which would stop the loop from vectorising.
        const T* PS_RESTRICT v = base + j * nx;
        std::uint8_t* PS_RESTRICT o = in + j * nx;
        prefetch_ahead(reinterpret_cast<const char*>(v) + kSweepPrefetchBytes, std::size_t(nx) * sizeof(T));
        std::uint8_t on = 0, any_in = 0, all_in = 1;
        if constexpr (std::is_same_v<T, std::uint8_t>)
          inside_row_uint8(v, o, nx, level, float(eq), on, any_in, all_in);
        else if constexpr (std::is_integral_v<T> && sizeof(T) <= 2)
          inside_row_small_int(v, o, nx, level, float(eq), on, any_in, all_in);
        else
          inside_row(v, o, nx, level, eq, on, any_in, all_in);
        on_rows[j] = on;
        uniform[j] = all_in ? 1 : any_in ? 2 : 0;  // all inside, mixed, all outside
      }
      if (k >= ka && k < own_end) std::memcpy(row_on_level_.data() + (k - l.z0) * ny, on_rows, std::size_t(ny));
    };
    // Flags from inside bytes (x, y, z crossings by xor); rows near on-level samples take the exact path.
    auto sweep2 = [&](std::int64_t k) {
      const bool has_z = k + 1 < l.nz;
      const std::uint8_t* const in0 = ring_at(k);
      const std::uint8_t *const on0 = in0 + slice_bytes, *const un0 = on0 + ny;
      const std::uint8_t* const in1 = has_z ? ring_at(k + 1) : in0;
      const std::uint8_t *const on1 = in1 + slice_bytes, *const un1 = on1 + ny;
      const std::uint8_t* const below = k > l.z0 ? ring_at(k - 1) : in0;
      for (std::int64_t j = 0; j < ny; ++j) {
        const std::int64_t r = (k - l.z0) * ny + j;
        std::uint8_t* f = flags + r * nx;
        if (local && on0[j]) std::memset(point_used + r * nx, 0, std::size_t(nx));
        const bool has_y = j + 1 < ny;
        const bool exact = on0[j] || (has_y && on0[j + 1]) || (has_z && on1[j]);
        std::uint32_t n = 0;
        const std::uint8_t ua = un0[j], ub = has_y ? un0[j + 1] : ua, uc = has_z ? un1[j] : ua;
        if (!exact && ua != 2 && ua == ub && ua == uc) {  // the row and its +y, +z rows all on one side: no slots
          std::memset(f, ua << 4, std::size_t(nx));
        } else if (exact && j >= 1 && has_y && k > l.z0 && has_z) {  // the six neighbour rows are in the ring
          const std::uint8_t* a = in0 + j * nx;
          n = exact_row_flags(a, a - nx, a + nx, below + j * nx, in1 + j * nx, f, nx);
        } else if (exact) {
          for (std::int64_t i = 0; i < nx; ++i) {
            f[i] = mc::point_flags<T, R>(s, i, j, k, level);
            n += std::uint32_t(mc::slot_count(f[i]));
          }
        } else {
          const std::uint8_t* a = in0 + j * nx;
          n = xor_row_flags(a, has_y ? a + nx : a, has_z ? in1 + j * nx : a, f, nx);
        }
        row_vertices_[std::size_t(r)] = n;
        if (n) {  // the first and last points with a slot, eight at a time
          std::int64_t lo = 0, hi = nx - 1;
          for (std::uint64_t w; lo + 8 <= nx; lo += 8)
            if ((w = load8(f + lo) & kSlotBytes)) {
              lo += __builtin_ctzll(w) >> 3;
              break;
            }
          while (!(f[lo] & mc::kSlotMask)) ++lo;
          for (std::uint64_t w; hi >= 7; hi -= 8)
            if ((w = load8(f + hi - 7) & kSlotBytes)) {
              hi -= 7 - ((63 - __builtin_clzll(w)) >> 3);
              break;
            }
          while (!(f[hi] & mc::kSlotMask)) --hi;
          row_first_[std::size_t(r)] = lo;
          row_last_[std::size_t(r)] = hi;
        }
      }
    };
    auto count_row = [&](std::int64_t r) {
      const std::int64_t k = l.z0 + r / l.ny, j = r % l.ny;
      const std::uint8_t* row[4] = {flags + r * l.nx, flags + (r + 1) * l.nx, flags + (r + l.ny) * l.nx,
                                    flags + (r + l.ny + 1) * l.nx};
      const auto [i_begin, i_end] = cell_span(r, l);
      std::uint32_t n = 0;
      auto count_cell = [&](std::int64_t i, std::uint64_t corners, int cas) {
        if (cas == 0 || cas == 255) return;
        const auto& e = mc::case_entry(cases, s, cas, level, i, j, k);
        int kept = 0;
        level_cell_triangles(e, level_mask_of_corners(corners), task.keep_degenerate, [&](int, int, int, bool) { ++kept; });
        n += std::uint32_t(kept);
        std::uint8_t cf[8];
        std::memcpy(cf, &corners, 8);
        if (e.center && mc::uses_center(e, cf, task.keep_degenerate))
          centers[std::size_t(omp_get_thread_num())].emplace_back(r, i);
      };
      // A cell with no corner on the level whose case has no ambiguity to decide (which also rules out MC33 centres)
      // has its classic entry's triangles: counted from a byte table, without the entry.
      // Rows none of whose corners lie on the level skip that test.
      const std::size_t q0 = std::size_t(r), q2 = std::size_t(r + l.ny);
      const std::uint64_t level_bytes =
          (row_on_level_[q0] | row_on_level_[q0 + 1] | row_on_level_[q2] | row_on_level_[q2 + 1]) ? kOnLevelBytes : 0;
      // Classic cells with corners on the level take their count from the summary of their case and on-level mask,
      // and list the slots they leave unused (which other cells may use); cells whose tie triangles may cancel
      // resolve them here.
      auto count_fast = [&](std::int64_t i) __attribute__((always_inline)) {
        const std::uint64_t corners = corner_flags8(row, i);
        const int cas = case_of_corners(corners);
        if ((corners & level_bytes) && local) {
          const int om = level_mask_of_corners(corners);
          const std::size_t at = level_cells::cell_index(cas, om);
          const std::uint32_t word = cell_words[at];
          const std::uint32_t points = std::uint32_t(point_slot_mask_of_corners(corners));
          std::uint32_t kept = word >> level_cells::kKeptShift & level_cells::kKeptMask;
          std::uint32_t used_points = corner_refs[at] & points;
          std::uint32_t maybe_unused_points = word >> level_cells::kOrphanShift & points, edges = 0;
          if (word & level_cells::kPairedBit) {
            const std::uint32_t all = kept, kept_bits = level_cells::kept_triangles(cell_bits, i, j, k, l.cells, cas, om);
            kept = std::uint32_t(std::popcount(kept_bits));
            dropped += all - kept;
            // Its slots all checked: the kept triangles' corners mark their points, and its crossing edges are
            // checked here against the cells around them.
            const level_cells::LevelTriangle* lt = level_triangles + (word & level_cells::kFirstMask);
            std::uint32_t keys = 0;
            for (std::uint32_t n = 0; n < all; ++n)
              if (kept_bits >> n & 1) keys |= 1u << lt[n].key[0] | 1u << lt[n].key[1] | 1u << lt[n].key[2];
            used_points = keys >> 16 & points;
            maybe_unused_points = summaries[at].slots >> 16 & points;
            edges = summaries[at].slots & 0xFFFu;
          }
          n += kept;
          // Points a kept triangle of this cell uses are marked; those it leaves unused are listed, to lose their
          // vertex after the loop if no cell around them marked them.
          for (; used_points; used_points &= used_points - 1) {
            const int c = std::countr_zero(used_points);
            std::atomic_ref<std::uint8_t>(point_used[(r + (c >> 1 & 1) + (c >> 2 & 1) * l.ny) * l.nx + i + (c & 1)])
                .store(1, std::memory_order_relaxed);
          }
          for (; maybe_unused_points; maybe_unused_points &= maybe_unused_points - 1) {
            const int c = std::countr_zero(maybe_unused_points);
            my_points.push_back(4 * ((r + (c >> 1 & 1) + (c >> 2 & 1) * l.ny) * l.nx + i + (c & 1)));
          }
          // Edges (only cells whose ties cancel can leave one unused): checked at once against every cell around.
          for (; edges; edges &= edges - 1) {
            const int key = std::countr_zero(edges), c = mc::edge_lower_corner(key), axis = mc::edge_axis(key);
            const std::int64_t pi = i + (c & 1), pj = j + (c >> 1 & 1), pk = k + (c >> 2 & 1);
            const std::int64_t slot = 4 * (((pk - l.z0) * l.ny + pj) * l.nx + pi) + 1 + axis;
            // Neighbouring cells list the same edges: the last answers are kept, a few per slot.
            SlotAnswer& memo = slot_memo[std::size_t((slot ^ slot >> 9) & (kSlotMemo - 1))];
            if (memo.slot != slot) memo = {slot, !level_cells::slot_used(pi, pj, pk, axis, l.cells, cell_bits)};
            if (memo.unused) my_unused.push_back(slot);
          }
        } else if ((corners & level_bytes) || (cases.case_flags && cases.case_flags[cas])) {
          count_cell(i, corners, cas);
        } else {
          n += classic_triangles[cas];
        }
      };
      for_mixed_cells(row, i_begin, i_end, count_fast);  // (cases 0 and 255 have no triangles)
      row_triangles_[std::size_t(r)] = n;
    };
    auto count_slice = [&](std::int64_t c) {
      for (std::int64_t j = 0; j + 1 < ny; ++j) count_row((c - l.z0) * ny + j);
    };
    // Whether the flags that cell slice c's count may read (slices c - 2 to c + 3) are all this thread's.
    auto pipelined = [&](std::int64_t c) { return (ka == l.z0 || c - 2 >= ka) && (kb == l.flag_z1 || c + 3 < kb); };
    if (ka < kb) {
      if (ka > l.z0) sweep1(ka - 1);
      sweep1(ka);
      for (std::int64_t k = ka; k < kb; ++k) {
        if (k + 1 < inside_z1) sweep1(k + 1);
        sweep2(k);
        const std::int64_t c = k - 3;
        if (c >= ka && c < l.cell_z1 && pipelined(c)) count_slice(c);
      }
      for (std::int64_t c = std::max(ka, kb - 3); c < std::min(kb, l.cell_z1); ++c)
        if (pipelined(c)) count_slice(c);
    } else if (t == nt - 1) {
      for (std::int64_t k = l.flag_z1; k < inside_z1; ++k) sweep1(k);
    }
#pragma omp barrier
    for (std::int64_t c = ka; c < std::min(kb, l.cell_z1); ++c)
      if (!pipelined(c)) count_slice(c);
    }
    auto mark_center = [&](std::int64_t r, std::int64_t i) {
      flags[r * l.nx + i] |= mc::kSlotCenter;
      ++row_vertices_[std::size_t(r)];
      row_first_[std::size_t(r)] = std::min(row_first_[std::size_t(r)], i);
      row_last_[std::size_t(r)] = std::max(row_last_[std::size_t(r)], i);
    };
    for (const auto& list : centers)
      for (const auto& [r, i] : list) mark_center(r, i);
    if (local) drop_unused_slots<T>(task, l, unused_slots, unused_points);
    // The centres of the next slab's first cells, which own vertices of the slice this slab numbers last.
    if (task.tunnels && l.z1 + 1 < l.nz) {
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads_)
      for (std::int64_t j = 0; j < l.ny - 1; ++j)
        for (std::int64_t i = 0; i + 1 < l.nx; ++i)
          if (mc::cell_needs_center(cases, s, i, j, l.z1, level, task.keep_degenerate, task.ties))
            mark_center((l.z1 - l.z0) * l.ny + j, i);
    }
    coincident_dropped_ += dropped;
    seconds_.classify += since(t0);
    const auto t1 = Clock::now();
    std::uint64_t v = 0, tri = 0, slab_vertices = 0;
    const std::int64_t owned_rows = (l.z1 - l.z0) * l.ny;
    for (std::int64_t r = 0; r < rows; ++r) {
      if (r == owned_rows) slab_vertices = v;
      row_vertex_base_[std::size_t(r)] = v;
      row_triangle_base_[std::size_t(r)] = tri;
      v += row_vertices_[std::size_t(r)];
      tri += row_triangles_[std::size_t(r)];
    }
    if (owned_rows == rows) slab_vertices = v;
    seconds_.scan += since(t1);
    return {slab_vertices, tri};
  }

  // The case and on-level mask of a cell (cell_bits(i, j, k, cas, om)): from the flag bytes where its corners have
  // them, else from its samples.
  template <class T, class R>
  static auto cell_bits_of(const Layout& l, const std::uint8_t* flags, const mc::SlabValues<T>& s, R level) {
    return [&l, flags, s, level](std::int64_t ci, std::int64_t cj, std::int64_t ck, int& cas, int& om) {
      if (ck >= l.z0 && ck + 1 < l.flag_z1) {
        const std::uint8_t* base = flags + ((ck - l.z0) * l.ny + cj) * l.nx;
        const std::uint8_t* rows[4] = {base, base + l.nx, base + l.ny * l.nx, base + (l.ny + 1) * l.nx};
        const std::uint64_t corners = corner_flags8(rows, ci);
        cas = case_of_corners(corners), om = level_mask_of_corners(corners);
        return;
      }
      level_cells::sample_cell_bits(s, level, ci, cj, ck, cas, om);
    };
  }

  // Classic cells, no degenerate triangles kept: the count pass resolves coincident ties and unused slots.
  static bool resolves_ties_locally(const SlabTask& t) {
    return !t.decider && !t.tunnels && !t.keep_degenerate && local_ties_enabled.load(std::memory_order_relaxed);
  }

  // Slots that no surviving triangle uses lose their vertex, so that none is left unused in the mesh: those the
  // cell loop found (`found`: 4 · (flag row · nx + i) + 0 for the point or 1 + axis) and, at the slab's ends, slots
  // whose cells lie in the previous or next slab, checked here: the point vertices of the first slice, and the point
  // and z slots of the next slab's first slice, which this slab's numbering counts. Both slabs decide a shared
  // slice's slots alike, from the same samples.
  template <class T>
  void drop_unused_slots(const SlabTask& task, const Layout& l, const std::vector<std::vector<std::int64_t>>& found,
                         const std::vector<std::vector<std::int64_t>>& points) {
    using R = typename mc::RealOf<T>::type;
    const auto s = values<T>(task);
    const R level = R(task.level);
    std::vector<std::int64_t> slots;
    for (auto& list : found) slots.insert(slots.end(), list.begin(), list.end());
    // Points some cell left unused: where every cell around them lies in this slab, the marks decide (2: listed);
    // in the first and last slices, the checks below do.
    std::uint8_t* point_used = point_used_.data();
    const auto cell_bits = cell_bits_of(l, flags_.data(), s, level);
    for (const auto& list : points)
      for (const std::int64_t slot : list) {
        const std::int64_t point = slot >> 2, k = l.z0 + point / l.nx / l.ny;
        if ((k == l.z0 && l.z0 > 0) || k >= l.z1 || point_used[point]) continue;
        point_used[point] = 2;
        slots.push_back(slot);
      }
    const std::int64_t inside_rows = std::int64_t(row_on_level_.size());
    auto on_level_near = [&](std::int64_t r) {  // rows r - 1 .. r + 1 of r's slice and of the next one
      bool near = false;
      for (std::int64_t dz : {std::int64_t(0), l.ny})
        for (std::int64_t dy = -1; dy <= 1; ++dy) {
          const std::int64_t q = r + dz + dy, j = r % l.ny + dy;
          near = near || (j >= 0 && j < l.ny && q < inside_rows && row_on_level_[std::size_t(q)]);
        }
      return near;
    };
    auto check_slice = [&](std::int64_t z, std::uint8_t wanted, bool all_rows) {
      for (std::int64_t r = (z - l.z0) * l.ny, end = r + l.ny; r < end; ++r) {
        if (!all_rows && !on_level_near(r)) continue;
        const std::uint8_t* f = flags_.data() + r * l.nx;
        for (std::int64_t i = 0; i < l.nx; ++i)
          for (int type = 0; type < 4; ++type)
            if ((f[i] & wanted & (1 << type)) && !level_cells::slot_used(i, r % l.ny, z, type - 1, l.cells, cell_bits))
              slots.push_back(4 * (r * l.nx + i) + type);
      }
    };
    if (l.z0 > 0) {  // no cell of this slab lies below the first slice; with no cell at all (the last slice), x, y too
      if (l.z0 + 1 < l.nz) check_slice(l.z0, mc::kSlotPoint, false);  // (the marks miss the previous slab's cells)
      else check_slice(l.z0, mc::kSlotPoint | mc::kSlotX | mc::kSlotY, true);
    }
    if (l.z1 < l.nz) check_slice(l.z1, mc::kSlotPoint | mc::kSlotZ, false);  // cells above it: the next slab's
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    for (const std::int64_t slot : slots) {
      const std::int64_t point = slot >> 2;
      flags_.data()[point] &= std::uint8_t(~(1 << (slot & 3)));
      --row_vertices_[std::size_t(point / l.nx)];
    }
  }

  // The vertices of row r's points, the first at vertex v of `out`; returns whether a point vertex was among them.
  // A row whose points all have their gradients' neighbours (but its first and last two) collects its points' x, y,
  // z crossings and makes them in batches (float volumes: cpu_vertices.hpp); point vertices and MC33 centres are
  // made point by point.
  template <class T>
  int row_vertices(const SlabTask& task, const Layout& l, std::int64_t r, const MeshTail& out, std::uint64_t v,
                   bool batch_rows, cpu_vertices::Crossings& crossings) const {
    using R = typename mc::RealOf<T>::type;
    const auto s = values<T>(task);
    const R level = R(task.interpolation_level());
    const mc::SlabValues<float> scalars{task.scalars, l.nx, l.ny, l.nz, task.data_z0};
    const std::int64_t k = l.z0 + r / l.ny, j = r % l.ny;
    const std::uint8_t* f = flags_.data() + r * l.nx;
    const std::int64_t last = row_last_[std::size_t(r)];
    int saw_point = 0;
    auto emit = [&](std::int64_t i) {
      float* nrm = out.normals ? out.normals + 3 * v : nullptr;
      mc::point_vertices<T, R>(s, i, j, k, f[i], level, task.map, out.positions + 3 * v, nrm,
                               task.scalars ? &scalars : nullptr, out.values ? out.values + v : nullptr);
      if (task.ranges && out.values) mc::point_ranges(s, i, j, k, f[i], task.range_level, out.values + v);
      v += std::uint64_t(mc::slot_count(f[i]));
      saw_point |= f[i] & mc::kSlotPoint;
    };
    const bool batched = batch_rows && j >= 1 && j + 2 < l.ny && k >= 1 && k + 2 < l.nz;
    auto flush = [&] {
      if constexpr (std::is_same_v<T, float>) {
        cpu_vertices::crossing_vertices(s.data + ((k - task.data_z0) * l.ny + j) * l.nx, l.nx, l.nx * l.ny, j, k,
                                        level, task.map, crossings, out.positions, out.normals,
                                        task.ranges ? out.values : nullptr, task.range_level);
      }
      crossings.n = 0;
    };
    auto take = [&](std::int64_t i) __attribute__((always_inline)) {
      const std::uint8_t fi = f[i];
      if (!batched || i < 1 || i + 2 >= l.nx || (fi & (mc::kSlotPoint | mc::kSlotCenter))) {
        emit(i);
        return;
      }
      std::uint64_t slot = 0;
      for (int axis = 0; axis < 3; ++axis) {  // (written whether or not the slot exists; counted if it does)
        const int n = crossings.n, has = fi >> (1 + axis) & 1;
        crossings.i[n] = std::int32_t(i), crossings.axis[n] = axis, crossings.vertex[n] = v + slot;
        crossings.n = n + has, slot += std::uint64_t(has);
      }
      v += slot;
      if (crossings.n > cpu_vertices::Crossings::kCapacity - 3) flush();
    };
    std::int64_t i = row_first_[std::size_t(r)];
    for (; i + 8 <= last + 1; i += 8)  // the points with slots among eight, lowest first
      for (std::uint64_t m = load8(f + i) & kSlotBytes; m;) {
        const int bit = __builtin_ctzll(m);
        take(i + (bit >> 3));
        m &= ~(0xFFull << (bit & ~7));
      }
    for (; i <= last; ++i)
      if (f[i] & mc::kSlotMask) take(i);
    if (crossings.n) flush();
    return saw_point;
  }

  // The triangle sweep of a row keeps its pointers and running offsets in locals, as count_t does.
  template <class T>
  void generate_t(const SlabTask& task, const MeshTail& out, std::vector<std::uint64_t>& ties) {
    using R = typename mc::RealOf<T>::type;
    const auto t0 = Clock::now();
    const Layout l = layout(task);
    const auto s = values<T>(task);
    const R level = R(task.level);
    const std::uint8_t* flags = flags_.data();
    const std::int64_t owned_rows = (l.z1 - l.z0) * l.ny;
    const mc::CaseLookup cases = lookup(task);
    const std::int64_t cell_rows = (l.cell_z1 - l.z0) * l.ny;
    std::vector<std::vector<std::uint64_t>> thread_ties(static_cast<std::size_t>(threads_));
    int any_point = 0;
    const bool local = resolves_ties_locally(task);
    const std::uint32_t* cell_words = level_cells::tables().word.data();
    const level_cells::LevelTriangle* level_triangles = level_cells::tables().triangles.data();
    const auto cell_bits = cell_bits_of(l, flags, s, level);
    // Float volumes make the crossing vertices of inner points eight at a time (cpu_vertices.hpp).
    const bool batch_rows = std::is_same_v<T, float> && cpu_vertices::kAvailable && !task.scalars &&
                            cpu_vertices::offsets_fit(l.nx, l.ny) &&
                            batched_vertices_enabled.load(std::memory_order_relaxed);
    // Vertices and triangles are independent (triangles need only the scanned vertex ids): one parallel region,
    // no barrier between the two loops.
#pragma omp parallel num_threads(threads_)
    {
      int saw_point = 0;
      cpu_vertices::Crossings crossings;
#pragma omp for schedule(dynamic, 64) nowait
      for (std::int64_t r = 0; r < owned_rows; ++r) {
        if (row_vertices_[std::size_t(r)] == 0) continue;
        const std::int64_t k = l.z0 + r / l.ny, j = r % l.ny;
        // The rows that the gradients of row r + 2 will read beyond those of this row: fetched ahead, as its
        // vertices are too sparse for the hardware prefetcher.
        if (r + 2 < owned_rows && row_vertices_[std::size_t(r + 2)] && j + 4 < l.ny && k >= 1 && k + 2 < l.nz) {
          const std::int64_t lo = row_first_[std::size_t(r + 2)], hi = row_last_[std::size_t(r + 2)] + 1;
          const std::int64_t sy = l.nx, sz = l.nx * l.ny;
          const T* base = s.data + ((k - task.data_z0) * l.ny + j + 2) * l.nx;
          for (const std::int64_t offset : {-sz, sz, 2 * sz, 2 * sy})
            for (std::int64_t x = lo; x <= hi; x += std::int64_t(64 / sizeof(T))) __builtin_prefetch(base + offset + x);
        }
        saw_point |= row_vertices<T>(task, l, r, out, row_vertex_base_[std::size_t(r)], batch_rows, crossings);
      }
      if (saw_point) {
#pragma omp atomic write
        any_point = 1;
      }
      auto& my_ties = thread_ties[std::size_t(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 64)
      for (std::int64_t r = 0; r < cell_rows; ++r) {
        if (row_triangles_[std::size_t(r)] == 0) continue;
        const std::int64_t k = l.z0 + r / l.ny, j = r % l.ny;
        const std::int64_t rr[4] = {r, r + 1, r + l.ny, r + l.ny + 1};
        const std::uint8_t* row[4];
        std::uint64_t base[4];
        for (int q = 0; q < 4; ++q) {
          row[q] = flags + rr[q] * l.nx;
          base[q] = task.vertex_base + row_vertex_base_[std::size_t(rr[q])];
        }
        std::uint64_t t = row_triangle_base_[std::size_t(r)];
        const auto [i_begin, i_end] = cell_span(r, l);
        // Cell i's triangles; through[q]: the slots of row q's points up to and including i (from the span's start).
        // The triangles of a cell with a corner on the level or a label: degenerate ones dropped, ties listed. Out
        // of line, so that the common path below stays small.
        auto emit_general = [&](std::int64_t i, const std::uint32_t* through, const std::uint8_t* cf, int level_mask,
                                const mc::CaseEntry& e) __attribute__((noinline)) {
          std::uint64_t first[8];
          corner_first_slots(cf, base, through, first);
          const std::int32_t label =
              task.labels ? mc::cell_label_at(task.labels, l.nx, l.ny, task.data_z0, i, j, k, cf) : 0;
          // Tie triangles that can have a coincident twin, listed for the pair check: those in a cell face (the
          // neighbouring cell can make the same one) and those whose keys another triangle of this cell also
          // collapsed to. The rest cannot be repeated anywhere.
          std::uint32_t cell_keys[mc::kMaxTriangles];
          std::uint64_t cell_ids[mc::kMaxTriangles];
          bool listed[mc::kMaxTriangles];
          int cell_ties = 0;
          level_cell_triangles(e, level_mask, task.keep_degenerate, [&](int a, int b, int c, bool on_level) {
            std::uint32_t* tri = out.triangles + 3 * t;
            tri[0] = std::uint32_t(mc::edge_key_vertex(a, cf, first));
            tri[1] = std::uint32_t(mc::edge_key_vertex(task.flip ? c : b, cf, first));
            tri[2] = std::uint32_t(mc::edge_key_vertex(task.flip ? b : c, cf, first));
            if (out.face_labels) out.face_labels[t] = label;
            if (on_level) {
              const int lo = std::min({a, b, c}), hi = std::max({a, b, c}), mid = a + b + c - lo - hi;
              const std::uint32_t keys = std::uint32_t(lo | mid << 5 | hi << 10);  // keys are below 32
              bool listed_now = (kKeyFaces.faces[a] & kKeyFaces.faces[b] & kKeyFaces.faces[c]) != 0;
              for (int q = 0; q < cell_ties; ++q)
                if (cell_keys[q] == keys) {
                  listed_now = true;
                  if (!listed[q]) my_ties.push_back(cell_ids[q]), listed[q] = true;
                }
              if (listed_now) my_ties.push_back(t);
              cell_keys[cell_ties] = keys, cell_ids[cell_ties] = t, listed[cell_ties] = listed_now, ++cell_ties;
            }
            ++t;
          });
        };
        // A cell with a corner on the level, its ties resolved in the count pass: its surviving triangles from the
        // table, less the coincident ones the count pass dropped too.
        auto emit_level = [&](std::int64_t i, const std::uint32_t* through, const std::uint8_t* cf, int cas,
                              int level_mask) __attribute__((always_inline)) {
          std::uint64_t first[8];
          corner_first_slots(cf, base, through, first);
          const std::int32_t label =
              task.labels ? mc::cell_label_at(task.labels, l.nx, l.ny, task.data_z0, i, j, k, cf) : 0;
          const std::uint32_t word = cell_words[level_cells::cell_index(cas, level_mask)];
          const std::uint32_t kept_bits =
              (word & level_cells::kPairedBit) ? level_cells::kept_triangles(cell_bits, i, j, k, l.cells, cas, level_mask) : ~0u;
          const level_cells::LevelTriangle* lt = level_triangles + (word & level_cells::kFirstMask);
          for (int n = 0, kept = int(word >> level_cells::kKeptShift & level_cells::kKeptMask); n < kept; ++n) {
            if (!(kept_bits >> n & 1)) continue;
            std::uint32_t* tri = out.triangles + 3 * t;
            tri[0] = std::uint32_t(mc::edge_key_vertex(lt[n].key[0], cf, first));
            tri[1] = std::uint32_t(mc::edge_key_vertex(lt[n].key[task.flip ? 2 : 1], cf, first));
            tri[2] = std::uint32_t(mc::edge_key_vertex(lt[n].key[task.flip ? 1 : 2], cf, first));
            if (out.face_labels) out.face_labels[t] = label;
            ++t;
          }
        };
        auto emit_cell = [&](std::int64_t i, const std::uint32_t* through) __attribute__((always_inline)) {
          const std::uint64_t corners = corner_flags8(row, i);
          std::uint8_t cf[8];
          std::memcpy(cf, &corners, 8);
          const int cas = case_of_corners(corners);
          if (cas == 0 || cas == 255) return;
          const auto& e = mc::case_entry(cases, s, cas, level, i, j, k);
          if (!task.labels && !(corners & kOnLevelBytes)) {  // no ties, no labels: every triangle of the entry, as it is
            emit_plain_triangles(e, cf, base, through, task.flip, out.triangles + 3 * t);
            t += e.count;
            return;
          }
          if (local && (corners & kOnLevelBytes)) {
            emit_level(i, through, cf, cas, level_mask_of_corners(corners));
            return;
          }
          emit_general(i, through, cf, level_mask_of_corners(corners), e);
        };
        std::uint32_t before[4] = {0, 0, 0, 0};  // slots of the points before i in each row (none before the span)
        std::int64_t i = i_begin;
        for (; i + 32 <= i_end; i += 32) {  // the mixed cells among 32; the rest only move the slot counts on
          std::uint32_t words[4][4];  // slots of each row's points in each eight of the 32
          for (int q = 0; q < 4; ++q)
            for (int w = 0; w < 4; ++w)
              words[q][w] = std::uint32_t(__builtin_popcountll(load8(row[q] + i + 8 * w) & kSlotBytes));
          for (std::uint32_t m = mixed32(row, i); m; m &= m - 1) {
            const int b = std::countr_zero(m), w = b >> 3;
            std::uint32_t through[4];
            for (int q = 0; q < 4; ++q) {
              through[q] = before[q] + std::uint32_t(__builtin_popcountll(load8(row[q] + i + 8 * w) & kSlotBytes &
                                                                          bytes_through(b & 7)));
              for (int x = 0; x < w; ++x) through[q] += words[q][x];
            }
            emit_cell(i + b, through);
          }
          for (int q = 0; q < 4; ++q) before[q] += words[q][0] + words[q][1] + words[q][2] + words[q][3];
        }
        for (; i + 8 <= i_end; i += 8) {  // the rest: the mixed cells among eight
          std::uint64_t slots[4];
          for (int q = 0; q < 4; ++q) slots[q] = load8(row[q] + i) & kSlotBytes;
          for (std::uint64_t m = mixed8(row, i); m; m &= m - 1) {
            const int b = __builtin_ctzll(m) >> 3;
            std::uint32_t through[4];
            for (int q = 0; q < 4; ++q) through[q] = before[q] + std::uint32_t(__builtin_popcountll(slots[q] & bytes_through(b)));
            emit_cell(i + b, through);
          }
          for (int q = 0; q < 4; ++q) before[q] += std::uint32_t(__builtin_popcountll(slots[q]));
        }
        for (; i < i_end; ++i) {
          for (int q = 0; q < 4; ++q) before[q] += std::uint32_t(mc::slot_count(row[q][i]));
          emit_cell(i, before);
        }
      }
    }
    for (auto& v : thread_ties) ties.insert(ties.end(), v.begin(), v.end());
    point_vertices_ = any_point != 0 && !local;  // locally resolved: no slot is left unused
    tie_vertices_ = any_point != 0;
    seconds_.generate += since(t0);
  }

  struct Held {
    std::vector<float> positions, normals, values;
    std::vector<std::uint32_t> triangles;
    std::vector<std::int32_t> labels;
    std::uint64_t bytes = 0;
  };
  std::map<std::size_t, Held> held_;
  std::uint64_t held_bytes_ = 0;
  SlabCounts counts_;
  int threads_;
  bool point_vertices_ = false;
  bool tie_vertices_ = false;
  std::uint64_t coincident_dropped_ = 0;
  StageSeconds seconds_;
  ByteBuffer flags_, point_used_{true};  // point_used_: rows with samples on the level only
  ByteBuffer ring_;                      // each thread's three slices of inside bytes
  // The per-row arrays in one block of the scratch pool. As std::vectors they went back to malloc with the engine,
  // which returned the top of its heap to the system, and the next extraction faulted the pages in again (2.7 MB for
  // a 256³ volume: about 1 ms of a 2-core run); the pool's block stays resident. Its pages are touched only as far
  // as the rows reach. New elements are not cleared: each array is filled or written whole before it is read.
  void view_rows(std::size_t rows, std::size_t inside_rows) {
    const auto bytes = [](std::size_t n, std::size_t size) { return (n * size + 63) & ~std::size_t(63); };
    rows_block_.reserve(bytes(inside_rows, 1) + 2 * bytes(rows, 8) + 2 * bytes(rows, 4) + 2 * bytes(rows, 8), false,
                        "isosurface row arrays");
    std::uint8_t* at = rows_block_.data();
    row_on_level_.view(at, inside_rows);
    row_first_.view(at, rows), row_last_.view(at, rows);
    row_vertices_.view(at, rows), row_triangles_.view(at, rows);
    row_vertex_base_.view(at, rows), row_triangle_base_.view(at, rows);
  }
  core::ScratchBlock rows_block_;
  RowArray<std::uint8_t> row_on_level_;
  RowArray<std::int64_t> row_first_, row_last_;
  RowArray<std::uint32_t> row_vertices_, row_triangles_;
  RowArray<std::uint64_t> row_vertex_base_, row_triangle_base_;
};

}  // namespace

std::unique_ptr<SlabEngine> make_cpu_engine(int threads) { return std::make_unique<CpuEngine>(threads); }

void set_cpu_local_ties(bool on) { local_ties_enabled.store(on, std::memory_order_relaxed); }
void set_cpu_batched_vertices(bool on) { batched_vertices_enabled.store(on, std::memory_order_relaxed); }
void set_cpu_hold_limit(std::uint64_t bytes) { hold_limit.store(bytes, std::memory_order_relaxed); }

}  // namespace parasurf::iso
