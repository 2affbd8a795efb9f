// An isosurface written as binary PLY part by part (write_isosurface_ply): the volume's slices in parts whose meshes
// fit a budget, each part extracted with exact seams (distributed::extract_isosurface_parts, as MPI ranks do), its
// vertex records and faces spilled to unnamed temporary files, the file assembled from them at the end with the
// header the whole mesh needs. Peak memory: one part's mesh and the engine's slabs.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <utility>

#include "core/auto_choice.hpp"
#include "io/atomic_file.hpp"
#include "isosurface/auto_device.hpp"
#include "isosurface/level_mesh.hpp"
#include "isosurface/part.hpp"
#include "parasurf/device.hpp"
#include "parasurf/distributed.hpp"
#include "parasurf/error.hpp"
#include "parasurf/io.hpp"

namespace parasurf {
namespace {

using Clock = std::chrono::steady_clock;

// An unnamed temporary file: nothing is left behind however the process ends.
class Spill {
 public:
  explicit Spill(const std::string& dir) : dir_(dir) {
#ifdef O_TMPFILE
    fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (fd_ < 0) {  // a file system without O_TMPFILE: a unique name, removed at once
      std::string name = dir + "/.parasurf-spill-XXXXXX";
      fd_ = ::mkstemp(name.data());
      if (fd_ >= 0) ::unlink(name.c_str());
    }
    if (fd_ < 0) throw Error(ErrorKind::Io, "cannot create a temporary file in " + dir + ": " + std::strerror(errno));
  }
  ~Spill() {
    if (fd_ >= 0) ::close(fd_);
  }
  Spill(const Spill&) = delete;
  Spill& operator=(const Spill&) = delete;

  void append(const void* data, std::size_t bytes) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      const ssize_t n = ::write(fd_, p, std::min<std::size_t>(bytes, std::size_t(1) << 30));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw Error(ErrorKind::Io,
                    "writing a temporary file in " + dir_ + ": " + std::strerror(n < 0 ? errno : ENOSPC));
      p += n, bytes -= std::size_t(n), size_ += std::uint64_t(n);
    }
  }
  void read(std::uint64_t at, void* out, std::size_t bytes) const {
    char* p = static_cast<char*>(out);
    while (bytes > 0) {
      const ssize_t n = ::pread(fd_, p, bytes, off_t(at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error(ErrorKind::Io, "reading back a temporary file in " + dir_ + ": " + std::strerror(errno));
      p += n, at += std::uint64_t(n), bytes -= std::size_t(n);
    }
  }
  std::uint64_t size() const { return size_; }

 private:
  std::string dir_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// Where the temporaries go: beside a file output (the same file system, which has room for the mesh), else TMPDIR.
std::string spill_directory(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto kind = fs::status(path, ec).type();
  const bool file =
      path != "-" && !path.starts_with("/dev/") && (kind == fs::file_type::not_found || kind == fs::file_type::regular);
  if (file) {
    const fs::path parent = fs::absolute(fs::path(path), ec).parent_path();
    if (!ec && !parent.empty()) return parent.string();
  }
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

// Mesh bytes a cell on the level brings, about: two triangles and a vertex with normal and value, and labels.
constexpr double kMeshBytesPerActiveCell = 64;
constexpr std::uint64_t kDefaultPartBytes = std::uint64_t(256) << 20;

// Grid-point boundaries of the parts: each part's cells on the levels about `part_bytes` of mesh, from a pass that
// counts them on every stride-th layer; at least two slices each.
std::vector<std::int64_t> part_bounds(VolumeSource& volume, const IsosurfaceOptions& o, std::uint64_t part_bytes) {
  const std::int64_t nz = volume.geometry().dims[2], layers = nz - 1;
  const std::vector<std::int64_t> costs =
      distributed::layer_costs(volume, o, 0, layers, std::max<std::int64_t>(1, layers / 64));
  std::vector<std::int64_t> bounds{0};
  double acc = 0;
  for (std::int64_t z = 0; z < std::min<std::int64_t>(layers, std::int64_t(costs.size())); ++z) {
    acc += double(costs[std::size_t(z)]) * kMeshBytesPerActiveCell;
    if (acc > double(part_bytes) && z + 1 - bounds.back() >= 2 && nz - (z + 1) >= 2) {
      bounds.push_back(z + 1);
      acc = 0;
    }
  }
  bounds.push_back(nz);
  return bounds;
}

// Whether a part's mesh needs the clean-up of join_levels that takes the whole mesh: samples equal to the level
// whose coincident tie triangles cancel, or whose collapsed triangles leave vertices unused (engines that do not
// settle them cell by cell). Pinches are checked part by part (PinchCheck).
bool has_ties(const distributed::IsosurfacePart& part, const IsosurfaceOptions& o) {
  return !part.ties.empty() || (part.point_vertices && !o.keep_degenerate);
}

// Vertices on samples equal to the level, where the level set may pinch: while every such vertex is one plain fan,
// split_pinched_vertices changes nothing (part.hpp), and the parts can be written as they come. A vertex's
// triangles lie in the cells below and above its sample, so those of a part's first vertices come partly from the
// part before: the corners that refer past a part's own vertices wait for the next part.
class PinchCheck {
 public:
  // `base`: the vertices before this part. False where some vertex on a sample is not one plain fan, closed or open
  // (at the volume's border). With `every_sample`, every vertex on a sample is checked, not only those of samples on
  // the level: crossings welded on a sample make the whole-mesh pass look at all of them.
  bool plain(const TriangleMesh& m, bool tie_vertices, std::uint64_t base, int threads,
             const iso::WorldToIndex& to_index, bool every_sample) {
    const std::uint64_t nv = std::uint64_t(m.vertex_count());
    const bool look = tie_vertices || every_sample;
    std::vector<std::uint8_t> on;
    if (look) iso::pinch_candidates(m, threads, to_index, on);
    auto on_sample = [&](std::uint64_t local) { return look && local < nv && (on[local] & 1); };
    std::vector<iso::FanCorner> settled, open;
    for (const iso::FanCorner& c : waiting_)
      if (on_sample(c.v - base)) settled.push_back(c);
    const std::size_t nt = std::size_t(m.triangle_count());
    for (std::size_t t = 0; t < nt; ++t) {
      const std::uint32_t* c = &m.triangles[3 * t];
      for (int q = 0; q < 3; ++q) {
        const iso::FanCorner corner{std::uint32_t(base + c[q]), std::uint32_t(base + c[(q + 1) % 3]),
                                    std::uint32_t(base + c[(q + 2) % 3])};
        if (c[q] >= nv)
          open.push_back(corner);
        else if (on_sample(c[q]))
          settled.push_back(corner);
      }
    }
    waiting_ = std::move(open);
    return iso::plain_fans(settled, true);
  }

 private:
  std::vector<iso::FanCorner> waiting_;  // corners at the next part's vertices
};

// Crossings that a rounding put on one sample, welded part by part as weld_rounded_crossings welds them in the whole
// mesh (rounded_ties.cpp). A group of such vertices lies around one sample z: the vertices of the edges at it, owned
// by the grid points of slices z - 1 and z, and its triangles lie in the cells of those slices. Each part is held
// until the next one is made; the two are then welded as one window, except the groups past a slice g that has none
// (g in the newer part's slices): those touch no cell of the older part, which is written, and wait for the next
// window with the newer one. Groups on both sides of g share no triangle, so welding them in turn gives what one
// weld of the whole mesh gives. A window without such a slice, or whose weld would renumber vertices that the part
// written before refers to, sends the run to memory.
class WeldWindow {
 public:
  struct Result {
    bool local = true;  // false: the whole mesh must weld
    std::int64_t welded = 0, degenerate = 0, coincident = 0;
  };
  std::uint64_t held_vertices() const { return held_ ? std::uint64_t(held_->vertex_count()) : 0; }
  // Takes the next part's mesh (slices [z0, z1) of nz), and appends to `out` the meshes to write now, in order.
  Result step(TriangleMesh&& m, std::int64_t z0, std::int64_t z1, std::int64_t nz, int threads,
              const iso::WorldToIndex& to_index, std::vector<TriangleMesh>& out) {
    Result r;
    if (!held_) {
      held_ = std::make_unique<TriangleMesh>(std::move(m));
      held_z0_ = z0;
      if (z1 >= nz) r = weld_held(nz, threads, to_index, nullptr);  // one part: weld it whole
      if (r.local && z1 >= nz) release(out);
      return r;
    }
    auto next = std::make_unique<TriangleMesh>(std::move(m));
    r = weld_held(z1 >= nz ? nz : -1, threads, to_index, next.get(), z0, z1);
    if (!r.local) return r;
    release(out);
    held_ = std::move(next);
    held_z0_ = z0;
    if (z1 >= nz) release(out);
    return r;
  }

 private:
  // Welds the groups of the held part and `next` (none: the held part alone) below a slice without groups in
  // [z0, z1) (`all_below` >= 0: every group), then splits the window back into the two.
  Result weld_held(std::int64_t all_below, int threads, const iso::WorldToIndex& to_index, TriangleMesh* next,
                   std::int64_t z0 = 0, std::int64_t z1 = 0) {
    Result r;
    TriangleMesh& a = *held_;
    const std::uint64_t na = std::uint64_t(a.vertex_count());
    std::vector<distributed::RoundedCandidate> both = iso::rounded_candidates(a, threads, to_index, {}, 0);
    if (next) {
      std::vector<distributed::RoundedCandidate> b = iso::rounded_candidates(*next, threads, to_index, {}, na);
      both.insert(both.end(), b.begin(), b.end());
    }
    if (iso::rounded_moves(both).empty()) return r;  // (sorts `both` as the groups below read it)
    const std::vector<std::pair<std::size_t, std::size_t>> groups = iso::rounded_groups(both);
    auto slice = [&](const std::pair<std::size_t, std::size_t>& q) { return both[q.first].key[3]; };
    // The slice the window's weld stops at: the last one of the newer part's with no group.
    std::int64_t below = all_below;
    if (below < 0) {
      for (std::int64_t g = z1 - 1; g >= z0 && below < 0; --g)
        if (std::none_of(groups.begin(), groups.end(), [&](const auto& q) { return slice(q) == g; })) below = g;
      if (below < 0) {
        r.local = false;
        return r;
      }
    }
    std::vector<std::pair<std::uint64_t, std::uint64_t>> moves;
    for (const auto& [first, end] : groups) {
      const std::int64_t z = slice({first, end});
      if (z >= below) continue;
      // A group on the held part's first slice would take the part written before: the last window welded those.
      if (held_z0_ > 0 && z <= held_z0_) {
        r.local = false;
        return r;
      }
      for (std::size_t c = first; c + 1 < end; ++c) moves.push_back({both[c].v, both[end - 1].v});
    }
    if (moves.empty()) return r;
    std::sort(moves.begin(), moves.end());
    for (const auto& mv : moves)
      if (std::binary_search(referenced_.begin(), referenced_.end(), std::uint32_t(mv.first))) {
        r.local = false;
        return r;
      }
    // One mesh of the two: the held part's triangles refer past its vertices to the next part's already.
    const std::size_t ta = std::size_t(a.triangle_count());
    if (next) {
      a.positions.insert(a.positions.end(), next->positions.begin(), next->positions.end());
      a.normals.insert(a.normals.end(), next->normals.begin(), next->normals.end());
      a.vertex_values.insert(a.vertex_values.end(), next->vertex_values.begin(), next->vertex_values.end());
      for (const std::uint32_t c : next->triangles) a.triangles.push_back(std::uint32_t(c + na));
      a.face_labels.insert(a.face_labels.end(), next->face_labels.begin(), next->face_labels.end());
      *next = TriangleMesh{};
    }
    iso::RoundedTies counts;
    std::vector<std::uint64_t> drop;
    const std::vector<std::uint64_t> maybe = iso::weld_moves(a, moves, threads, counts, &drop);
    r.welded = counts.vertices_welded;
    r.degenerate = counts.degenerate_dropped;
    r.coincident = counts.coincident_dropped;
    std::vector<char> used(maybe.size(), 0);
    for (const std::uint32_t c : a.triangles) {
      const auto it = std::lower_bound(maybe.begin(), maybe.end(), std::uint64_t(c));
      if (it != maybe.end() && *it == c) used[std::size_t(it - maybe.begin())] = 1;
    }
    std::vector<std::uint64_t> removed;
    for (std::size_t k = 0; k < maybe.size(); ++k)
      if (!used[k] && !std::binary_search(referenced_.begin(), referenced_.end(), std::uint32_t(maybe[k])))
        removed.push_back(maybe[k]);
    // The part written before refers to the held part's first vertices: none of those may be renumbered.
    if (!removed.empty() && !referenced_.empty() && removed.front() <= referenced_.back()) {
      r.local = false;
      return r;
    }
    iso::remove_vertices(a, 0, removed, removed);
    if (next) {  // back into the two parts
      const std::uint64_t va =
          na - std::uint64_t(std::lower_bound(removed.begin(), removed.end(), na) - removed.begin());
      const std::size_t kept_a =
          ta - std::size_t(std::lower_bound(drop.begin(), drop.end(), std::uint64_t(ta)) - drop.begin());
      auto tail = [](auto& from, auto& to, std::size_t at) {
        to.assign(from.begin() + std::ptrdiff_t(std::min(at, from.size())), from.end());
        from.resize(std::min(at, from.size()));
      };
      tail(a.positions, next->positions, 3 * std::size_t(va));
      tail(a.normals, next->normals, 3 * std::size_t(va));
      tail(a.vertex_values, next->vertex_values, std::size_t(va));
      tail(a.triangles, next->triangles, 3 * kept_a);
      tail(a.face_labels, next->face_labels, kept_a);
      for (std::uint32_t& c : next->triangles) c = std::uint32_t(c - va);
    }
    return r;
  }
  // Hands the held part on to be written; the next part's vertices its triangles use are kept.
  void release(std::vector<TriangleMesh>& out) {
    const std::uint64_t nv = std::uint64_t(held_->vertex_count());
    referenced_.clear();
    for (const std::uint32_t c : held_->triangles)
      if (c >= nv) referenced_.push_back(std::uint32_t(c - nv));
    std::sort(referenced_.begin(), referenced_.end());
    referenced_.erase(std::unique(referenced_.begin(), referenced_.end()), referenced_.end());
    out.push_back(std::move(*held_));
    held_.reset();
  }
  std::unique_ptr<TriangleMesh> held_;     // the part made last, not yet written
  std::int64_t held_z0_ = 0;               // its first slice
  std::vector<std::uint32_t> referenced_;  // its vertices that the part written before refers to
};

}  // namespace

// One function: the parts in order (each spilled as it comes), then the file from the spills; the in-memory run
// where a part needs the clean-up across the whole mesh.
StreamedIsosurfaceReport write_isosurface_ply(VolumeSource& volume, const IsosurfaceOptions& options,
                                              const std::string& path, std::uint64_t part_bytes) {
  const auto start = Clock::now();
  StreamedIsosurfaceReport out;
  if (!options.exclude_labels.empty())
    throw Error(ErrorKind::InvalidArgument,
                "a streamed mesh cannot exclude labels (their vertices are removed "
                "across the whole mesh); write it in memory");
  // One device for the whole file (auto decides once, for the whole volume): the CPU's and a GPU's meshes differ in
  // the last bits of their positions, so parts made on both would not give the in-memory run's file.
  IsosurfaceOptions on_one = options;
  std::string choice;
  bool chose_gpu = false;
  if (iso::auto_weighs_devices(options)) {
    const iso::AutoPick pick = iso::pick_device(volume, options);
    on_one.device = pick.device;
    chose_gpu = pick.device != Device::Cpu;
    if (pick.weighed) choice = core::describe(pick.decision);
  }
  auto in_memory = [&](const std::string& why) {
    StreamedIsosurfaceReport r;
    r.why = why;
    const TriangleMesh m = extract_isosurface(volume, on_one, &r.run);
    r.run.device_choice = choice;
    write_mesh(path, m, MeshFormat::Ply);
    r.run.seconds_total = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
  };
  const auto& g = volume.geometry();
  if (g.dims[0] < 2 || g.dims[1] < 2 || g.dims[2] < 4) return in_memory("the volume is too thin to split");
  IsosurfaceOptions o = on_one;
  IsosurfaceReport& rep = out.run;
  rep.device_choice = choice;
  if (o.levels.empty()) {  // as extract_isosurface: the middle of the data range
    // (a file small beside the parts' budget is read once for both passes)
    volume.keep_resident((part_bytes ? part_bytes : kDefaultPartBytes) / 4);
    const auto [lo, hi] = volume_value_range(volume);
    if (!(lo <= hi)) throw Error(ErrorKind::InvalidArgument, volume.name() + ": no finite samples");
    rep.value_min = lo, rep.value_max = hi;
    o.levels = {0.5 * (lo + hi)};
  }
  for (double l : o.levels)
    if (!std::isfinite(l)) throw Error(ErrorKind::InvalidArgument, "the iso level must be a finite number");
  rep.levels = o.levels;
  const std::size_t levels = o.levels.size();
  // Without degenerate triangles a part waits for the next one (WeldWindow): two are held, each half the budget.
  const std::uint64_t budget = part_bytes ? part_bytes : kDefaultPartBytes;
  const std::vector<std::int64_t> bounds = part_bounds(volume, o, o.keep_degenerate ? budget : budget / 2);
  const std::int64_t part_count = std::int64_t(bounds.size()) - 1;
  const distributed::WorldToIndex to_index = distributed::world_to_index_map(g);
  distributed::PlyLayout layout;
  layout.normals = o.normals;
  layout.values = iso::vertex_values(o);
  layout.groups = levels > 1 || o.labels;
  layout.labels = layout.colors = o.labels != nullptr;

  const std::string dir = spill_directory(path);
  std::vector<std::unique_ptr<Spill>> vertex_spill, face_spill;
  for (std::size_t L = 0; L < levels; ++L) {
    vertex_spill.push_back(std::make_unique<Spill>(dir));
    face_spill.push_back(std::make_unique<Spill>(dir));
  }
  std::vector<std::uint64_t> vertices(levels, 0), triangles(levels, 0);
  std::vector<std::set<std::int32_t>> labels_seen(levels);
  std::vector<WeldWindow> welds(levels);
  std::vector<PinchCheck> pinches(levels);
  const std::size_t face_words = layout.labels ? 4 : 3;  // three corners, and the label
  std::vector<char> records;
  std::vector<std::uint32_t> faces;
  const auto progress = options.progress;
  for (std::int64_t p = 0; p < part_count; ++p) {
    if (progress) o.progress = [&, p](double f) { progress((double(p) + f) / double(part_count)); };
    IsosurfaceReport pr;
    std::vector<distributed::IsosurfacePart> parts =
        distributed::extract_isosurface_parts(volume, o, bounds[std::size_t(p)], bounds[std::size_t(p) + 1], &pr);
    rep.device = pr.device;
    rep.slabs += pr.slabs;
    rep.slab_slices = std::max(rep.slab_slices, pr.slab_slices);
    rep.seconds_read += pr.seconds_read;
    rep.profile.seconds_classify += pr.profile.seconds_classify;
    rep.profile.seconds_scan += pr.profile.seconds_scan;
    rep.profile.seconds_generate += pr.profile.seconds_generate;
    rep.profile.seconds_copy += pr.profile.seconds_copy;
    rep.profile.peak_slab_bytes = std::max(rep.profile.peak_slab_bytes, pr.profile.peak_slab_bytes);
    for (std::size_t L = 0; L < levels; ++L) {
      distributed::IsosurfacePart& part = parts[L];
      if (has_ties(part, o)) {
        // A GPU that auto chose leaves ties to the whole mesh: the CPU's classic table settles them part by part,
        // so the run starts again there, which keeps memory bounded (a mesh made in memory may not fit).
        if (chose_gpu && !o.keep_degenerate && o.topology == CaseTopology::Classic) {
          IsosurfaceOptions on_cpu = options;
          on_cpu.device = Device::Cpu;
          vertex_spill.clear(), face_spill.clear();
          StreamedIsosurfaceReport r = write_isosurface_ply(volume, on_cpu, path, part_bytes);
          r.run.device_choice =
              choice + (choice.empty() ? "" : "; ") +
              "samples equal to the level: streamed on the CPU, which settles their ties part by part";
          return r;
        }
        return in_memory("samples equal to the level: the tie clean-up takes the whole mesh");
      }
      std::uint64_t all = 0;
      for (std::size_t k = 0; k < levels; ++k) all += vertices[k] + welds[k].held_vertices();
      if (all + std::uint64_t(part.mesh.vertex_count()) > 0xffffffffull)
        throw Error(ErrorKind::LimitReached, volume.name() + ": the mesh has more than 4294967295 vertices");
      // Crossings that rounding put on one sample are welded where two or more have the same position, as the
      // whole mesh welds them (a part waits for the next one); then every vertex on a sample must be one plain fan.
      std::vector<TriangleMesh> ready;
      if (!o.keep_degenerate) {
        const WeldWindow::Result w =
            welds[L].step(std::move(part.mesh), bounds[std::size_t(p)], bounds[std::size_t(p) + 1], g.dims[2],
                          cpu_thread_count(o.threads), to_index, ready);
        if (!w.local)
          return in_memory(
              "crossings that rounding put on one sample could not be welded part by part (groups on every slice "
              "of a part): welding them takes the whole mesh");
        rep.rounded_ties_welded += w.welded;
        rep.degenerate_removed += w.degenerate;
        rep.duplicates_removed += w.coincident;
      } else {
        ready.push_back(std::move(part.mesh));
      }
      for (const TriangleMesh& m : ready) {
        if (o.split_pinches && !pinches[L].plain(m, part.tie_vertices, vertices[L], cpu_thread_count(o.threads),
                                                 to_index, !o.keep_degenerate))
          return in_memory("the level set may pinch at a sample: splitting there takes the whole mesh");
        const std::int64_t nv = m.vertex_count(), nt = m.triangle_count();
        constexpr std::int64_t kBatch = 1 << 16;
        for (std::int64_t v0 = 0; v0 < nv; v0 += kBatch) {
          const std::int64_t v1 = std::min(nv, v0 + kBatch);
          records.resize(std::size_t(v1 - v0) * layout.vertex_bytes());
          layout.pack_vertices(m, v0, v1, records.data());
          vertex_spill[L]->append(records.data(), records.size());
        }
        for (std::int64_t t0 = 0; t0 < nt; t0 += kBatch) {
          const std::int64_t t1 = std::min(nt, t0 + kBatch);
          faces.clear();
          for (std::int64_t t = t0; t < t1; ++t) {
            for (int c = 0; c < 3; ++c)
              faces.push_back(std::uint32_t(vertices[L] + m.triangles[3 * std::size_t(t) + std::size_t(c)]));
            if (layout.labels) {
              const std::int32_t label = m.face_labels[std::size_t(t)];
              faces.push_back(std::uint32_t(label));
              labels_seen[L].insert(label);
            }
          }
          face_spill[L]->append(faces.data(), faces.size() * 4);
        }
        vertices[L] += std::uint64_t(nv);
        triangles[L] += std::uint64_t(nt);
      }
    }
  }
  std::uint64_t all_vertices = 0, all_triangles = 0;
  for (std::size_t L = 0; L < levels; ++L) all_vertices += vertices[L], all_triangles += triangles[L];
  // An empty result (and the errors an empty run reports) as the in-memory run gives it.
  if (all_triangles == 0) return in_memory("no surface found");

  // Groups as one mesh has them: the (level, label) pairs in order, each with its label's colour; else the levels.
  TriangleMesh chunk;  // a batch of faces with what pack_faces reads
  std::vector<std::string> group_names;
  std::vector<std::pair<std::int32_t, std::int32_t>> pairs;
  if (o.labels) {
    for (std::size_t L = 0; L < levels; ++L)
      for (std::int32_t label : labels_seen[L]) pairs.push_back({std::int32_t(L), label});
    for (const auto& [L, label] : pairs) {
      group_names.push_back(
          (levels > 1 ? distributed::level_group_name(o.levels[std::size_t(L)]) + " " : std::string()) + "label " +
          std::to_string(label));
      const auto c = label_color(label);
      chunk.group_colors.insert(chunk.group_colors.end(), c.begin(), c.end());
    }
  } else if (levels > 1) {
    for (double l : o.levels) group_names.push_back(distributed::level_group_name(l));
  }
  io::AtomicFile file(path);
  file.write(layout.header(all_vertices, all_triangles, group_names));
  constexpr std::size_t kCopyBytes = std::size_t(8) << 20;
  for (std::size_t L = 0; L < levels; ++L) {
    const Spill& s = *vertex_spill[L];
    records.resize(kCopyBytes);
    for (std::uint64_t at = 0; at < s.size(); at += kCopyBytes) {
      const std::size_t n = std::size_t(std::min<std::uint64_t>(kCopyBytes, s.size() - at));
      s.read(at, records.data(), n);
      file.write(records.data(), n);
    }
  }
  std::uint32_t shift = 0;  // the vertices of the levels before
  for (std::size_t L = 0; L < levels; ++L) {
    const Spill& s = *face_spill[L];
    constexpr std::uint64_t kBatch = 1 << 16;
    for (std::uint64_t t0 = 0; t0 < triangles[L]; t0 += kBatch) {
      const std::uint64_t n = std::min(kBatch, triangles[L] - t0);
      faces.resize(std::size_t(n * face_words));
      s.read(t0 * face_words * 4, faces.data(), faces.size() * 4);
      chunk.triangles.resize(std::size_t(3 * n));
      chunk.face_groups.assign(layout.groups ? std::size_t(n) : 0, std::int32_t(L));
      chunk.face_labels.resize(layout.labels ? std::size_t(n) : 0);
      for (std::size_t t = 0; t < n; ++t) {
        for (std::size_t c = 0; c < 3; ++c) chunk.triangles[3 * t + c] = faces[face_words * t + c] + shift;
        if (layout.labels) {
          const auto label = std::int32_t(faces[face_words * t + 3]);
          chunk.face_labels[t] = label;
          chunk.face_groups[t] = std::int32_t(
              std::lower_bound(pairs.begin(), pairs.end(), std::pair{std::int32_t(L), label}) - pairs.begin());
        }
      }
      records.resize(std::size_t(n) * layout.face_bytes());
      layout.pack_faces(chunk, 0, std::int64_t(n), 0, records.data());
      file.write(records.data(), records.size());
    }
    shift += std::uint32_t(vertices[L]);
  }
  file.commit();
  for (std::size_t L = 0; L < levels; ++L) out.spilled_bytes += vertex_spill[L]->size() + face_spill[L]->size();
  out.streamed = true;
  out.parts = part_count;
  rep.vertices = std::int64_t(all_vertices);
  rep.triangles = std::int64_t(all_triangles);
  rep.seconds_total = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace parasurf
