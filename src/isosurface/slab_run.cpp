// One isosurface run's slabs: reading them (samples, labels checked as int32, scalars as floats), their tasks, and
// several slab workers on one run (one per GPU, or CPU engines sharing the cores in tests): a worker claims the next
// slab, reads it (in z order, one at a time, as streamed sources need), counts it and makes its mesh, which waits on
// that GPU with slab-local vertex ids. Slab k's ids continue into slab k + 1's first slice, so shifting each slab by
// the vertices of the slabs before it welds the seams exactly (the slab scheme of Rogeiro 2011, work units of slices
// with overlap). Once the slabs before a slab are counted its place is known, and its worker brings it home there as
// soon as the level meshes have room: sized ahead from the field's formula, else by a sizer at the rate of the first
// third of the slabs (+25 %), else for the whole mesh once every slab is counted. (Slabs meshed on the host and
// joined after the workers would cost a quarter of a two-GPU run.) A slab a GPU cannot hold goes into host arrays of
// its own, copied in its turn.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <shared_mutex>

#include "core/kept_threads.hpp"
#include "core/memory.hpp"
#include "core/voxel_dispatch.hpp"
#include "isosurface/slab_run.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"

namespace parasurf::iso {

namespace {

template <class T>
void to_labels(const T* in, std::size_t n, std::int32_t* out, const std::string& name, std::int64_t z0,
               std::uint64_t slice) {
  bool bad = false;
#pragma omp parallel for reduction(|| : bad) num_threads(cpu_thread_count(0))
  for (std::size_t i = 0; i < n; ++i) {
    const double x = double(in[i]);
    const bool ok = x == std::floor(x) && x >= -2147483648.0 && x <= 2147483647.0;
    out[i] = ok ? std::int32_t(x) : 0;
    bad = bad || !ok;
  }
  if (!bad) return;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = double(in[i]);
    if (!(x == std::floor(x) && x >= -2147483648.0 && x <= 2147483647.0)) {
      char buf[200];
      std::snprintf(buf, sizeof buf, ": sample %g in slice %lld is not an integer label in the int32 range", x,
                    static_cast<long long>(z0 + std::int64_t(i / slice)));
      throw Error(ErrorKind::InvalidArgument, name + buf);
    }
  }
}

}  // namespace

void samples_to_floats(const void* in, VoxelType type, std::size_t n, float* out) {
  core::visit_voxel_type(type, [&](auto tag) {
    const auto* v = static_cast<const decltype(tag)*>(in);
#pragma omp parallel for num_threads(cpu_thread_count(0))
    for (std::size_t i = 0; i < n; ++i) out[i] = float(v[i]);
  });
}

void read_labels(VolumeSource& v, std::int64_t z0, std::int64_t z1, std::int32_t* out, std::vector<char>& raw) {
  const std::uint64_t slice = std::uint64_t(v.geometry().slice_voxels());
  const std::size_t n = std::size_t(std::uint64_t(z1 - z0) * slice);
  const void* in = nullptr;
  if (const void* all = v.resident_data()) {
    in = static_cast<const char*>(all) + std::uint64_t(z0) * slice * voxel_bytes(v.type());
  } else {
    raw.resize(n * voxel_bytes(v.type()));
    v.read_slices(z0, z1, raw.data());
    in = raw.data();
  }
  core::visit_voxel_type(
      v.type(), [&](auto tag) { to_labels(static_cast<const decltype(tag)*>(in), n, out, v.name(), z0, slice); });
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class Team {
 public:
  Team(SlabRun& run, SlabTeam team, std::vector<LevelMesh>& meshes, std::latch& estimated,
       const std::uint64_t& expected_triangles)
      : run_(run),
        o_(run.o),
        team_(std::move(team)),
        meshes_(meshes),
        estimated_(estimated),
        expected_triangles_(expected_triangles),
        nl_(run.levels.size()),
        slab_count_(run.slab_count),
        slab_levels_(std::size_t(slab_count_), std::vector<SlabLevel>(nl_)),
        on_host_(std::size_t(slab_count_)),
        counted_(std::size_t(slab_count_), 0),
        v_at_(nl_, std::vector<std::uint64_t>(std::size_t(slab_count_) + 1, 0)),
        t_at_(v_at_),
        room_vertices_(nl_, 0),
        room_triangles_(nl_, 0),
        room_base_(nl_),
        room_caps_(nl_),
        worker_seconds_(team_.workers) {
    out_.engines.resize(team_.workers);
  }

  SlabTeamOutcome run() {
    const auto workers_start = Clock::now();
    // The workers and the sizer on kept threads (threads made and joined in each run take milliseconds to end).
    core::run_on_kept_threads(team_.workers + 1, [&](std::size_t w) {
      if (w < team_.workers)
        worker(w);
      else
        sizer();
    });
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (failure_) std::rethrow_exception(failure_);
    }
    out_.workers_seconds = since(workers_start);
    const auto join_start = Clock::now();
    join();
    out_.join_seconds = since(join_start);
    out_.host_mesh_seconds = host_mesh_seconds_;
    out_.coincident_removed = coincident_;
    return std::move(out_);
  }

 private:
  struct SlabLevel {
    std::uint64_t vertices = 0, triangles = 0;
    std::vector<std::uint64_t> ties;  // slab-relative
    bool point_vertices = false, tie_vertices = false, held = false;
  };

  void fail(std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!failure_) failure_ = e;
    }
    {
      std::lock_guard<std::mutex> lock(join_mutex_);
      stop_ = true;
    }
    join_wake_.notify_all();
  }

  // Whether slab s's place is known and within the room (under join_mutex_).
  bool fits(std::int64_t s) const {
    if (s >= counted_prefix_) return false;
    for (std::size_t L = 0; L < nl_; ++L)
      if (v_at_[L][std::size_t(s) + 1] > room_vertices_[L] || t_at_[L][std::size_t(s) + 1] > room_triangles_[L])
        return false;
    return true;
  }

  // The level meshes' room as the arrays now stand (under join_mutex_, and arrays_mutex_ exclusive where they moved).
  void publish_room() {
    for (std::size_t L = 0; L < nl_; ++L) {
      room_base_[L] = tail_at(meshes_[L], 0, 0, o_);
      room_vertices_[L] = meshes_[L].positions.size() / 3;
      room_triangles_[L] = meshes_[L].triangles.size() / 3;
    }
  }

  // Room made ahead in pieces of about 64 MiB, each published as it is ready, so that the first slabs come home
  // while the rest is faulted in and zeroed (a large mesh's room made at once would hold every slab back).
  // Growing within the reserved room moves nothing, so slabs write below the room while the sizer grows it.
  void make_room_ahead(const std::vector<std::uint64_t>& vertices, const std::vector<std::uint64_t>& triangles) {
    const auto start_sizing = Clock::now();
    try {
      for (std::size_t L = 0; L < nl_; ++L) {
        const std::uint64_t bytes = host_mesh_bytes(o_, vertices[L], triangles[L]);
        const int pieces =
            int(std::clamp<std::uint64_t>(bytes / room_piece_bytes.load(std::memory_order_relaxed), 1, 16));
        size_ahead(
            meshes_[L], vertices[L], triangles[L], o_, pieces,
            [&](const MeshTail& base, std::uint64_t room_v, std::uint64_t room_t) {
              {
                std::lock_guard<std::mutex> lock(join_mutex_);
                room_base_[L] = base;
                room_vertices_[L] = room_v;
                room_triangles_[L] = room_t;
              }
              join_wake_.notify_all();
            },
            &room_caps_[L]);
      }
      out_.host_mesh_ahead_seconds = since(start_sizing);
    } catch (...) {  // only a head start (a reservation refused): the room is made for the whole mesh at the end
    }
  }

  // Room at the rate of the first third of the slabs, and a quarter more (no estimate was given).
  void room_from_first_slabs(std::unique_lock<std::mutex>& lock) {
    join_wake_.wait(lock, [&] { return stop_ || 3 * slabs_counted_ >= slab_count_; });
    if (stop_ || slabs_counted_ >= slab_count_) return;
    std::vector<std::uint64_t> vertices(nl_, 0), triangles(nl_, 0);
    for (std::int64_t s = 0; s < slab_count_; ++s)
      if (counted_[std::size_t(s)])
        for (std::size_t L = 0; L < nl_; ++L) {
          vertices[L] += slab_levels_[std::size_t(s)][L].vertices;
          triangles[L] += slab_levels_[std::size_t(s)][L].triangles;
        }
    const double scale = 1.25 * double(slab_count_) / double(slabs_counted_);
    std::uint64_t bytes = 0;
    for (std::size_t L = 0; L < nl_; ++L) {
      vertices[L] = std::uint64_t(double(vertices[L]) * scale);
      triangles[L] = std::uint64_t(double(triangles[L]) * scale);
      bytes += host_mesh_bytes(o_, vertices[L], triangles[L]);
    }
    if (bytes > core::available_host_memory() / 2) return;
    lock.unlock();
    make_room_ahead(vertices, triangles);
    lock.lock();
  }

  // Room for the whole mesh, once every slab is counted, where what was made ahead is short. What the slabs wrote
  // stays (resize keeps it); the arrays may move: no slab writes meanwhile, and the new places are published before
  // any writes again.
  void room_for_all(std::unique_lock<std::mutex>& lock) {
    const std::size_t end = std::size_t(slab_count_);
    bool short_of_room = false;
    std::uint64_t vertices = 0, triangles = 0;
    for (std::size_t L = 0; L < nl_; ++L) {
      short_of_room = short_of_room || v_at_[L][end] > room_vertices_[L] || t_at_[L][end] > room_triangles_[L];
      vertices += v_at_[L][end];
      triangles += t_at_[L][end];
    }
    if (!short_of_room) return;
    lock.unlock();
    core::check_host_allocation(host_mesh_bytes(o_, vertices, triangles),
                                run_.volume.name() + ": mesh of " + std::to_string(vertices) + " vertices and " +
                                    std::to_string(triangles) + " triangles");
    std::unique_lock<std::shared_mutex> arrays(arrays_mutex_);
    for (std::size_t L = 0; L < nl_; ++L) {
      LevelMesh& m = meshes_[L];
      const std::uint64_t nv = v_at_[L][end], nt = t_at_[L][end];
      if (3 * nv > m.positions.size()) core::resize_for_overwrite(m.positions, 3 * nv);
      if (o_.normals && 3 * nv > m.normals.size()) core::resize_for_overwrite(m.normals, 3 * nv);
      if (vertex_values(o_) && nv > m.values.size()) m.values.resize(nv);
      if (3 * nt > m.triangles.size()) core::resize_for_overwrite(m.triangles, 3 * nt);
      if (o_.labels && nt > m.labels.size()) m.labels.resize(nt);
    }
    lock.lock();
    publish_room();
  }

  // The sizer: room made ahead, then for the whole mesh once every slab is counted.
  void sizer() {
    try {
      estimated_.wait();
      if (nl_ == 1 && may_size_ahead(o_, expected_triangles_))
        make_room_ahead({expected_triangles_ / 2}, {expected_triangles_});
      std::unique_lock<std::mutex> lock(join_mutex_);
      if (room_vertices_[0] == 0) room_from_first_slabs(lock);
      join_wake_.wait(lock, [&] { return stop_ || counted_prefix_ == slab_count_; });
      if (stop_) return;
      room_for_all(lock);
      room_final_ = true;
      lock.unlock();
      join_wake_.notify_all();
    } catch (...) {
      fail(std::current_exception());
    }
  }

  // Brings home this worker's slabs (`mine`, in slab order) whose places are known and fit the room; with `all`,
  // waits for the rest.
  void bring_home(SlabEngine& eng, std::vector<std::int64_t>& mine, bool all) {
    while (!mine.empty()) {
      const std::int64_t s = mine.front();
      {
        std::unique_lock<std::mutex> lock(join_mutex_);
        if (all) join_wake_.wait(lock, [&] { return stop_ || fits(s) || room_final_; });
        if (stop_) return;
        if (!fits(s)) {
          if (!all) return;
          throw Error(ErrorKind::LimitReached, run_.volume.name() + ": no room was made for slab " + std::to_string(s));
        }
      }
      // The arrays cannot move while this slab writes; their places as published for that.
      std::shared_lock<std::shared_mutex> arrays(arrays_mutex_);
      std::vector<MeshTail> places(nl_);
      {
        std::lock_guard<std::mutex> lock(join_mutex_);
        for (std::size_t L = 0; L < nl_; ++L)
          places[L] = tail_from(room_base_[L], v_at_[L][std::size_t(s)], t_at_[L][std::size_t(s)]);
      }
      for (std::size_t L = 0; L < nl_; ++L) {
        const std::uint32_t v0 = std::uint32_t(v_at_[L][std::size_t(s)]);
        if (!slab_levels_[std::size_t(s)][L].held) {
          copy_slab_into(on_host_[std::size_t(s)][L], places[L], v0);
          on_host_[std::size_t(s)][L] = LevelMesh{};
          continue;
        }
        eng.fetch(std::size_t(s) * nl_ + L, places[L], v0);
      }
      mine.erase(mine.begin());
    }
  }

  // Counts slab s at every level; the engine holds each level's mesh, or it is made in host arrays of its own.
  void count_slab(SlabEngine& eng, std::int64_t s, SlabBuffers& buf) {
    SlabTask t = run_.task_of(run_.task, s, buf);
    t.vertex_base = 0;
    for (std::size_t L = 0; L < nl_; ++L) {
      SlabLevel& sl = slab_levels_[std::size_t(s)][L];
      t.level = run_.engine_levels[L];
      t.vertex_level = run_.levels[L];
      t.range_level = float(run_.levels[L]);
      const SlabCounts c = eng.count(t);
      if (c.vertices > std::numeric_limits<std::uint32_t>::max())
        throw Error(ErrorKind::LimitReached, run_.volume.name() + ": the mesh has more than 4294967295 vertices");
      sl.vertices = c.vertices;
      sl.triangles = c.triangles;
      sl.held = eng.hold(t, std::size_t(s) * nl_ + L, sl.ties);
      if (!sl.held) {
        const std::uint64_t grow = host_mesh_bytes(o_, c.vertices, c.triangles);
        core::check_host_allocation(grow, run_.volume.name() + ": mesh of " + std::to_string(c.vertices) +
                                              " more vertices and " + std::to_string(c.triangles) + " triangles");
        const auto grow_start = Clock::now();
        on_host_[std::size_t(s)].resize(nl_);
        LevelMesh& m = on_host_[std::size_t(s)][L];
        make_room(m.positions, 3 * c.vertices);
        if (o_.normals) make_room(m.normals, 3 * c.vertices);
        if (vertex_values(o_)) m.values.resize(c.vertices);
        make_room(m.triangles, 3 * c.triangles);
        if (o_.labels) m.labels.resize(c.triangles);
        m.vertices = c.vertices;
        m.triangle_count = c.triangles;
        host_mesh_seconds_ += since(grow_start);  // summed over the workers, which run concurrently
        eng.generate(t, tail_at(m, 0, 0, o_), sl.ties);
      }
      sl.point_vertices = eng.point_vertices();
      sl.tie_vertices = sl.held || eng.tie_vertices();  // a held slab is read later: assume ties
    }
  }

  // Slab s is counted: the places of the counted prefix advance.
  void mark_counted(std::int64_t s) {
    bool too_many = false;
    {
      std::lock_guard<std::mutex> lock(join_mutex_);
      counted_[std::size_t(s)] = 1;
      ++slabs_counted_;
      while (counted_prefix_ < slab_count_ && counted_[std::size_t(counted_prefix_)]) {
        const std::size_t p = std::size_t(counted_prefix_);
        for (std::size_t L = 0; L < nl_; ++L) {
          v_at_[L][p + 1] = v_at_[L][p] + slab_levels_[p][L].vertices;
          t_at_[L][p + 1] = t_at_[L][p] + slab_levels_[p][L].triangles;
          too_many = too_many || v_at_[L][p + 1] > std::numeric_limits<std::uint32_t>::max();
        }
        ++counted_prefix_;
      }
      if (counted_prefix_ == slab_count_)
        for (std::size_t L = 0; L < nl_; ++L) {
          room_caps_[L].vertices = v_at_[L][std::size_t(slab_count_)];
          room_caps_[L].triangles = t_at_[L][std::size_t(slab_count_)];
        }
    }
    if (too_many)
      throw Error(ErrorKind::LimitReached, run_.volume.name() + ": the mesh has more than 4294967295 vertices");
    join_wake_.notify_all();
  }

  void worker(std::size_t w) {
    try {
      auto eng = w == 0 && !team_.cpu
                     ? std::move(team_.first_engine)
                     : make_engine(team_.cpu ? Device::Cpu : Device::Cuda, team_.cpu ? 0 : team_.gpus[w],
                                   std::max(1, cpu_thread_count(o_.threads) / int(team_.workers)));
      SlabBuffers buf;
      run_.allocate(buf, !team_.cpu);
      std::vector<std::int64_t> mine;  // this worker's slabs not yet home, in slab order
      while (!stop_) {
        std::int64_t s = 0;
        {
          std::lock_guard<std::mutex> lock(read_mutex_);
          if (next_slab_ >= slab_count_) break;
          s = next_slab_++;
          const auto t0 = Clock::now();
          run_.read_slab(s, buf);
          out_.read_seconds += since(t0);
        }
        count_slab(*eng, s, buf);
        mark_counted(s);
        mine.push_back(s);
        bring_home(*eng, mine, false);
        std::lock_guard<std::mutex> lock(error_mutex_);
        ++done_;
        if (o_.progress) o_.progress(double(done_) / double(slab_count_));
      }
      bring_home(*eng, mine, true);
      worker_seconds_[w] = eng->seconds();
      coincident_ += eng->coincident_removed();
      out_.engines[w] = std::move(eng);
    } catch (...) {
      fail(std::current_exception());
    }
  }

  // The stage times summed; the ties in slab order, at the slabs' places; the arrays cut to what the slabs wrote.
  void join() {
    for (const auto& w : worker_seconds_) {
      out_.seconds.upload += w.upload;
      out_.seconds.classify += w.classify;
      out_.seconds.scan += w.scan;
      out_.seconds.generate += w.generate;
      out_.seconds.download += w.download;
    }
    for (std::size_t L = 0; L < nl_; ++L) {
      LevelMesh& m = meshes_[L];
      m.vertices = v_at_[L][std::size_t(slab_count_)];
      m.triangle_count = t_at_[L][std::size_t(slab_count_)];
      for (std::int64_t s = 0; s < slab_count_; ++s) {
        const SlabLevel& sl = slab_levels_[std::size_t(s)][L];
        for (auto t : sl.ties) m.ties.push_back(t_at_[L][std::size_t(s)] + t);
        m.point_vertices = m.point_vertices || sl.point_vertices;
        m.tie_vertices = m.tie_vertices || sl.tie_vertices;
      }
      m.trim();
      if (!m.values.empty()) m.values.resize(m.vertices);
      if (!m.labels.empty()) m.labels.resize(m.triangle_count);
    }
  }

  SlabRun& run_;
  const IsosurfaceOptions& o_;
  SlabTeam team_;
  std::vector<LevelMesh>& meshes_;
  std::latch& estimated_;
  const std::uint64_t& expected_triangles_;
  const std::size_t nl_;
  const std::int64_t slab_count_;
  SlabTeamOutcome out_;

  std::vector<std::vector<SlabLevel>> slab_levels_;
  std::vector<std::vector<LevelMesh>> on_host_;  // levels of slabs a GPU did not hold
  std::mutex read_mutex_, error_mutex_;
  std::int64_t next_slab_ = 0, done_ = 0;
  std::exception_ptr failure_;
  std::atomic<bool> stop_{false};
  // Under join_mutex_: the slabs counted, where each slab of the counted prefix lands, and the room.
  std::mutex join_mutex_;
  std::condition_variable join_wake_;
  std::vector<char> counted_;
  std::int64_t counted_prefix_ = 0, slabs_counted_ = 0;
  std::vector<std::vector<std::uint64_t>> v_at_, t_at_;
  std::vector<std::uint64_t> room_vertices_, room_triangles_;
  bool room_final_ = false;
  // The level meshes' arrays: slabs write their places under a shared lock, the sizer resizes under an exclusive
  // one. The sizer is the only thread that touches the vectors while the workers run, and publishes their room and
  // places under join_mutex_.
  std::shared_mutex arrays_mutex_;
  std::vector<MeshTail> room_base_;
  std::vector<RoomCap> room_caps_;  // set as the last slab is counted
  std::vector<StageSeconds> worker_seconds_;
  std::atomic<double> host_mesh_seconds_{0};
  std::atomic<std::uint64_t> coincident_{0};  // tie pairs the workers' engines removed
};

}  // namespace

std::array<std::int64_t, 4> SlabRun::span_of(std::int64_t s) const {
  const std::int64_t z0 = zb + s * slab_slices, z1 = std::min(ze, z0 + slab_slices);
  return {z0, z1, std::max<std::int64_t>(0, z0 - 1), std::min(nz, z1 + 2)};
}

// Reads run one at a time (slab k + 1 on the prefetch thread while slab k is processed), so `raw` is shared.
void SlabRun::read_slab(std::int64_t s, SlabBuffers& buf) {
  const auto sp = span_of(s);
  const std::size_t n = std::size_t(sp[3] - sp[2]) * slice_points;
  if (!resident && !on_device) volume.read_slices(sp[2], sp[3], buf.data.data());
  auto samples_of = [&](VolumeSource& v) -> const void* {
    if (const void* all = v.resident_data())
      return static_cast<const char*>(all) + std::uint64_t(sp[2]) * slice_points * voxel_bytes(v.type());
    raw.resize(n * voxel_bytes(v.type()));
    v.read_slices(sp[2], sp[3], raw.data());
    return raw.data();
  };
  if (o.labels) read_labels(*o.labels, sp[2], sp[3], buf.labels.data(), raw);
  if (o.scalars) {
    samples_to_floats(samples_of(*o.scalars), o.scalars->type(), n, buf.scalars.data());
  }
}

SlabTask SlabRun::task_of(SlabTask t, std::int64_t s, SlabBuffers& buf) const {
  const auto sp = span_of(s);
  t.z0 = sp[0];
  t.z1 = sp[1];
  t.data_z0 = sp[2];
  t.data_z1 = sp[3];
  t.data = resident    ? static_cast<const char*>(resident) + std::uint64_t(sp[2]) * slice_points * vbytes
           : on_device ? nullptr
                       : buf.data.data();
  t.labels = o.labels ? buf.labels.data() : nullptr;
  t.scalars = o.scalars ? buf.scalars.data() : nullptr;
  return t;
}

void SlabRun::allocate(SlabBuffers& buf, bool pinned) const {
  buf.data.allocate(slab_bytes, pinned);
  if (o.labels) buf.labels.resize(slab_points);
  if (o.scalars) buf.scalars.resize(slab_points);
}

SlabTeamOutcome run_slab_team(SlabRun& run, SlabTeam team, std::vector<LevelMesh>& meshes, std::latch& estimated,
                              const std::uint64_t& expected_triangles) {
  return Team(run, std::move(team), meshes, estimated, expected_triangles).run();
}

}  // namespace parasurf::iso
