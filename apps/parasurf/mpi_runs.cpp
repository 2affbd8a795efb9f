// Runs under mpirun. `parasurf tessellate` and `parasurf solve`: teams whose exchanges are MPI collectives (patch
// samples gathered, solver results all-gathered); rank 0 writes. `parasurf isosurface`: the volume split into z ranges, one per rank, balanced by a cheap first
// pass that counts active cells; each rank reads and extracts only its range (on the GPU chosen by its local rank,
// or the CPU); vertex ids are made global by a prefix sum over the ranks, coincident tie triangles are resolved
// globally, and the mesh is written collectively with MPI-IO into one binary PLY (other formats: gathered to rank
// 0). The result is byte for byte the single-process mesh. A failing rank aborts all with its message; the output
// appears only when every rank has succeeded (written to a temporary name, renamed last).
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <thread>
#include <nlohmann/json.hpp>

#include "mpi_common.hpp"
#include "parasurf/commands.hpp"
#include "parasurf/distributed.hpp"
#include "parasurf/error.hpp"
#include "parasurf/device.hpp"
#include "parasurf/io.hpp"
#include "parasurf/solver.hpp"
#include "parasurf/tessellate.hpp"

namespace parasurf::cli {

using mpi::all_gather;
using mpi::check;
using mpi::g_rank;
using mpi::g_size;

namespace {

bool g_initialised = false;
int g_local_rank = 0, g_local_size = 1;  // on this rank's node
// Marks on the host-wide clock (CLOCK_MONOTONIC): the report's timeline of every rank's phases, comparable across ranks
// of a node.
double mark() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
// The timeline's marks in order (the first four slabs' meshes home; later slabs are left out).
constexpr int kMarks = 20;
constexpr const char* kMarkNames[kMarks] = {"mpi_init", "mpi_ready", "start", "costs_counted", "costs_shared", "part_start",
                                            "engines_ready", "slab1_home", "slab2_home", "slab3_home", "slab4_home",
                                            "part_extracted", "part_done", "ids_numbered", "ties_gathered", "unused_listed",
                                            "unused_shared", "unused_removed", "ties_settled", "numbered"};
double g_mark_init_begin = 0, g_mark_init_end = 0;  // MPI_Init's start and end

double now() { return MPI_Wtime(); }

// Equal-cost z boundaries: points [b[r], b[r+1]) own rank r's vertices. The cost of cell layer z is its active
// cells plus a share (cell_weight per cell) for reading and classifying the layer at all.
std::vector<std::int64_t> balance(const std::vector<std::int64_t>& active, std::int64_t nz, std::int64_t slice_cells, int ranks,
                                  double cell_weight) {
  std::vector<double> cost(active.size());
  const double base = cell_weight * double(slice_cells);
  double total = 0;
  for (std::size_t z = 0; z < active.size(); ++z) total += cost[z] = double(active[z]) + base;
  std::vector<std::int64_t> b(std::size_t(ranks + 1), nz);
  b[0] = 0;
  double acc = 0;
  int r = 1;
  for (std::size_t z = 0; z < active.size() && r < ranks; ++z) {
    acc += cost[z];
    while (r < ranks && acc >= total * r / ranks) b[std::size_t(r++)] = std::int64_t(z) + 1;
  }
  return b;
}

}  // namespace

bool mpi_world() {
  // Started by mpirun (Open MPI, MPICH/PMI) with more than one process.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* s = std::getenv(v))
      if (std::atoi(s) > 1) return true;
  return false;
}

int mpi_rank() { return g_rank; }

void mpi_pick_gpu() {
  const char* local = nullptr;
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if ((local = std::getenv(v))) break;
  if (!local) return;
  std::vector<std::string> gpus;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::string list = visible, item;
    for (char c : list + ",")
      if (c == ',') {
        if (!item.empty()) gpus.push_back(item);
        item.clear();
      } else {
        item += c;
      }
  } else {
    std::error_code ec;  // the driver lists its GPUs without starting CUDA
    int count = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) (void)e, ++count;
    for (int i = 0; i < count; ++i) gpus.push_back(std::to_string(i));
  }
  if (gpus.empty()) return;
  setenv("CUDA_VISIBLE_DEVICES", gpus[std::size_t(std::atoi(local)) % gpus.size()].c_str(), 1);
}

void mpi_begin() {
  if (g_initialised) return;
  int provided = 0;
  g_mark_init_begin = mark();
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "starting MPI");
  g_mark_init_end = mark();
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  g_initialised = true;
  // The ranks on one node share its cores: every OpenMP loop of a rank uses its share unless --threads says otherwise.
  MPI_Comm node;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node), "grouping ranks by node");
  MPI_Comm_rank(node, &g_local_rank);
  MPI_Comm_size(node, &g_local_size);
  MPI_Comm_free(&node);
  const int share = std::max(1, hardware_threads() / g_local_size);
  omp_set_num_threads(share);
  set_default_cpu_threads(share);
}

void mpi_end() {
  if (!g_initialised) return;
  // Ranks that are done wait without spinning, so that the node's cores stay free for the ranks still at work.
  MPI_Request done;
  if (MPI_Ibarrier(MPI_COMM_WORLD, &done) == MPI_SUCCESS)
    for (int finished = 0; !finished;) {
      MPI_Test(&done, &finished, MPI_STATUS_IGNORE);
      if (!finished) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  MPI_Finalize();
  g_initialised = false;
}

[[noreturn]] void mpi_abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

bool output_rank() { return g_rank == 0; }

std::shared_ptr<const TessellationTeam> mpi_tessellation_team() {
  if (!g_initialised || g_size < 2) return nullptr;
  auto team = std::make_shared<TessellationTeam>();
  team->member = g_rank;
  team->members = g_size;
  team->assembly_threads = hardware_threads();  // the other ranks wait idle (mpi_end) while rank 0 assembles
  team->exchange = [](void* data, std::size_t element_bytes, const std::vector<std::int64_t>& bounds, bool everyone) {
    std::vector<int> counts(static_cast<std::size_t>(g_size)), displs(static_cast<std::size_t>(g_size));
    for (int r = 0; r < g_size; ++r) {
      const std::int64_t from = bounds[std::size_t(r)], count = bounds[std::size_t(r) + 1] - from;
      if (bounds[std::size_t(r) + 1] > std::numeric_limits<int>::max())
        throw Error(ErrorKind::LimitReached, "MPI tessellation: more than 2147483647 samples in one exchange (use fewer segments or more ranks)");
      counts[std::size_t(r)] = int(count);
      displs[std::size_t(r)] = int(from);
    }
    MPI_Datatype element;
    check(MPI_Type_contiguous(int(element_bytes), MPI_BYTE, &element), "describing patch samples");
    MPI_Type_commit(&element);
    int rc;
    if (everyone)
      rc = MPI_Allgatherv(MPI_IN_PLACE, 0, element, data, counts.data(), displs.data(), element, MPI_COMM_WORLD);
    else if (g_rank == 0)
      rc = MPI_Gatherv(MPI_IN_PLACE, 0, element, data, counts.data(), displs.data(), element, 0, MPI_COMM_WORLD);
    else
      rc = MPI_Gatherv(static_cast<char*>(data) + std::size_t(displs[std::size_t(g_rank)]) * element_bytes, counts[std::size_t(g_rank)],
                       element, nullptr, nullptr, nullptr, element, 0, MPI_COMM_WORLD);
    MPI_Type_free(&element);
    check(rc, "exchanging patch samples");
  };
  return team;
}

std::shared_ptr<const SolverTeam> mpi_solver_team() {
  if (!g_initialised || g_size < 2) return nullptr;
  auto team = std::make_shared<SolverTeam>();
  team->member = g_rank;
  team->members = g_size;
  team->all_gather = [](const std::string& mine) {
    const std::int64_t size = std::int64_t(mine.size());
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(g_size));
    check(MPI_Allgather(&size, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, MPI_COMM_WORLD), "sharing solver results");
    std::vector<int> counts(static_cast<std::size_t>(g_size)), displs(static_cast<std::size_t>(g_size));
    std::int64_t total = 0;
    for (int r = 0; r < g_size; ++r) {
      displs[std::size_t(r)] = int(total);
      counts[std::size_t(r)] = int(sizes[std::size_t(r)]);
      total += sizes[std::size_t(r)];
      if (total > std::numeric_limits<int>::max())
        throw Error(ErrorKind::LimitReached, "MPI solve: the results of one batch pass 2 GB");
    }
    std::string all(std::size_t(total), '\0');
    check(MPI_Allgatherv(mine.data(), int(size), MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, MPI_COMM_WORLD),
          "sharing solver results");
    std::vector<std::string> parts;
    for (int r = 0; r < g_size; ++r) parts.push_back(all.substr(std::size_t(displs[std::size_t(r)]), std::size_t(counts[std::size_t(r)])));
    return parts;
  };
  return team;
}

namespace {

// One rank's share of an isosurface spread over the ranks, in the steps of the one-process pipeline: balanced
// ranges, this rank's part, global ids, cancelled ties, welded rounded crossings, unused vertices removed, pinches
// split, groups, then the mesh written and the report. Each step that changes the mesh is collective.
struct RankRun {
  VolumeSource& volume;
  IsosurfaceOptions o;
  const std::string balance_mode;
  const VolumeGeometry& g;
  const std::int64_t nx, ny, nz;
  Device device = Device::Cpu;
  double t0 = 0, t_balance = 0, t_part = 0, t_ready = 0, t_extract = 0, t_write = 0;
  // The timeline's marks (host-wide clock), for the JSON report.
  double m_t0 = 0, m_costs = 0, m_gathered = 0, m_part_begin = 0, m_ready = 0, m_extracted = 0, m_part_end = 0,
         m_numbered_ids = 0, m_ties_gathered = 0, m_unused_listed = 0, m_unused_shared = 0, m_unused_removed = 0,
         m_ties = 0, m_numbered = 0;
  std::int64_t zb = 0, ze = 0;  // this rank's grid points
  IsosurfaceReport rep;
  std::shared_ptr<void> engine;  // released while the mesh is written, not before the ranks number it
  std::vector<distributed::IsosurfacePart> parts;
  std::size_t levels = 0;
  // Per level: this rank's vertices and triangles, the global ids before them, and the level's totals.
  std::vector<std::uint64_t> own_v, own_t, v_base, t_base, total_v, total_t;
  std::uint64_t all_v = 0, all_t = 0, vertices_removed = 0;
  int welded_any = 0;
  bool met = false;  // this rank has met the others once its engine started
  std::vector<std::string> group_names;
  std::vector<float> group_colors;

  RankRun(VolumeSource& v, IsosurfaceOptions options, const std::string& balance)
      : volume(v), o(std::move(options)), balance_mode(balance), g(v.geometry()), nx(g.dims[0]), ny(g.dims[1]),
        nz(g.dims[2]) {}

  void prepare();
  void balance_ranges();
  void extract_part();
  std::uint64_t number(const std::vector<std::uint64_t>& own, std::vector<std::uint64_t>& base,
                       std::vector<std::uint64_t>& total, const char* what);
  void renumber_triangles();
  std::vector<std::uint64_t> coincident(const std::vector<std::uint64_t>& ids, const std::vector<std::uint32_t>& corners);
  std::vector<std::uint64_t> own_drops(std::size_t L, const std::vector<std::uint64_t>& drop) const;
  void cancel_ties();
  void weld_rounded_crossings();
  void remove_unused_vertices();
  void make_groups();
  void write(const std::string& out, MeshFormat format);
  void write_collective(const std::string& out, const distributed::PlyLayout& layout);
  void write_through_rank0(const std::string& out, MeshFormat format, const distributed::PlyLayout& layout);
  void report(const std::string& out, const std::string& input, bool show, const std::string& json);
};

void RankRun::prepare() {
  t0 = now();
  if (o.levels.empty()) throw Error(ErrorKind::InvalidArgument, "MPI runs need --level (the data range is not scanned first)");
  if (!o.exclude_labels.empty()) throw Error(ErrorKind::InvalidArgument, "MPI runs do not take --exclude-label yet");
  if (nx < 2 || ny < 2 || nz < 2) throw Error(ErrorKind::InvalidArgument, volume.name() + ": too small for marching cubes");
  // The node's cores shared among its ranks.
  if (o.threads <= 0) o.threads = std::max(1, hardware_threads() / g_local_size);
  // Every OpenMP loop of this rank (generators and readers on the prefetch thread too), not only the engine's.
  omp_set_num_threads(o.threads);
  set_default_cpu_threads(o.threads);
  device = resolve_device(o.device);
  o.device = device;
  if (device == Device::Cuda) o.cuda_devices = {g_local_rank % cuda_device_count()};  // one GPU per rank on a node
  o.progress = nullptr;
  if (const char* fail = std::getenv("PARASURF_TEST_FAIL_RANK"))  // fault injection for the tests
    if (std::atoi(fail) == g_rank)
      throw Error(ErrorKind::Io, volume.name() + ": rank " + std::to_string(g_rank) + " could not read its slices (injected by PARASURF_TEST_FAIL_RANK)");
  m_t0 = mark();
  levels = o.levels.size();
}

// First pass: active cells per layer, each rank over an equal share, then equal-cost ranges.
void RankRun::balance_ranges() {
  const std::int64_t layers = nz - 1;
  std::vector<std::int64_t> bounds(static_cast<std::size_t>(g_size + 1));
  t_balance = now();
  if (balance_mode == "equal") {
    for (int r = 0; r <= g_size; ++r) bounds[std::size_t(r)] = r == g_size ? nz : layers * r / g_size;
  } else {
    const std::int64_t a = layers * g_rank / g_size, b = layers * (g_rank + 1) / g_size;
    // About 64 layers counted over the whole volume: enough to see where the surface is, a small part of the work.
    const std::vector<std::int64_t> mine = distributed::layer_costs(volume, o, a, b, std::max<std::int64_t>(1, layers / 64));
    m_costs = mark();
    std::vector<int> counts(static_cast<std::size_t>(g_size)), displs(static_cast<std::size_t>(g_size));
    for (int r = 0; r < g_size; ++r) {
      displs[std::size_t(r)] = int(layers * r / g_size);
      counts[std::size_t(r)] = int(layers * (r + 1) / g_size - layers * r / g_size);
    }
    std::vector<std::int64_t> all(static_cast<std::size_t>(layers));
    check(MPI_Allgatherv(mine.data(), int(mine.size()), MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, MPI_COMM_WORLD),
          "sharing the active-cell counts");
    m_gathered = mark();
    // Classifying a cell against making an active cell's triangles and bringing them home: about 1:50 for a CPU or
    // samples read from a file, 1:500 for a field computed on the GPU (the two costs as measured on an H200).
    const double cell_weight = device == Device::Cuda && volume.builtin_field() >= 0 ? 0.002 : 0.02;
    bounds = balance(all, nz, (nx - 1) * (ny - 1), g_size, cell_weight);
    // About two triangles per active cell: this rank's host mesh is made ready while its GPU starts.
    if (o.levels.size() == 1) {
      std::uint64_t active = 0;
      for (std::int64_t z = bounds[std::size_t(g_rank)]; z < std::min(bounds[std::size_t(g_rank + 1)], layers); ++z) active += std::uint64_t(all[std::size_t(z)]);
      o.expected_triangles = 2 * active;
    }
  }
  t_balance = now() - t_balance;
  zb = bounds[std::size_t(g_rank)], ze = bounds[std::size_t(g_rank + 1)];
}

// Second pass: this rank's part of every level. Every rank meets the others once its engine has started (GPU
// context, buffers): what follows is the extraction proper, timed apart from the start-up. A rank with no slices
// meets them after its (empty) part.
void RankRun::extract_part() {
  o.started = [this] {
    check(MPI_Barrier(MPI_COMM_WORLD), "waiting for every rank's engine");
    t_ready = now();
    m_ready = mark();
    met = true;
  };
  t_part = now();
  m_part_begin = mark();
  parts = distributed::extract_isosurface_parts(volume, o, zb, ze, &rep, &engine);
  m_extracted = mark();
  if (!met) o.started();
  t_part = now() - t_part;
  m_part_end = mark();
  // Global ids: level by level, and within a level rank by rank, as one process orders them. A part's triangles keep
  // their ids from 0 (a corner v is vertex v_base + v): the writer adds the base as it packs them, and nothing waits
  // for the other ranks before then.
  own_v.assign(levels, 0), own_t.assign(levels, 0), v_base.assign(levels, 0), t_base.assign(levels, 0);
  total_v.assign(levels, 0), total_t.assign(levels, 0);
  for (std::size_t L = 0; L < levels; ++L) own_v[L] = std::uint64_t(parts[L].mesh.vertex_count());
  all_v = number(own_v, v_base, total_v, "numbering vertices");
  if (all_v > 0xffffffffull) throw Error(ErrorKind::LimitReached, volume.name() + ": the mesh has more than 4294967295 vertices");
  renumber_triangles();
  m_numbered_ids = mark();
}

// The ids before this rank's of each level (`base`) and each level's total, from every rank's `own`; returns the
// total over the levels.
std::uint64_t RankRun::number(const std::vector<std::uint64_t>& own, std::vector<std::uint64_t>& base,
                              std::vector<std::uint64_t>& total, const char* what) {
  const int count = int(levels);
  check(MPI_Exscan(own.data(), base.data(), count, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD), what);
  if (g_rank == 0) std::fill(base.begin(), base.end(), 0);
  check(MPI_Allreduce(own.data(), total.data(), count, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD), what);
  std::uint64_t before = 0;  // the levels before this one
  for (std::size_t L = 0; L < levels; ++L) base[L] += before, before += total[L];
  return before;
}

void RankRun::renumber_triangles() {
  for (std::size_t L = 0; L < levels; ++L) own_t[L] = std::uint64_t(parts[L].mesh.triangle_count());
  number(own_t, t_base, total_t, "numbering triangles");
}

// Which of the listed triangles (global ids and corners) cancel as coincident, across the whole mesh as in one
// process: rank 0 decides and every rank gets the ids.
std::vector<std::uint64_t> RankRun::coincident(const std::vector<std::uint64_t>& ids, const std::vector<std::uint32_t>& corners) {
  int n = int(ids.size());
  std::vector<int> counts(static_cast<std::size_t>(g_size)), displs(static_cast<std::size_t>(g_size)), counts3(static_cast<std::size_t>(g_size)), displs3(static_cast<std::size_t>(g_size));
  check(MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "gathering ties");
  int total = 0;
  for (int r = 0; r < g_size; ++r) {
    displs[std::size_t(r)] = total;
    counts3[std::size_t(r)] = 3 * counts[std::size_t(r)];
    displs3[std::size_t(r)] = 3 * total;
    total += counts[std::size_t(r)];
  }
  std::vector<std::uint64_t> all_ids(std::size_t(g_rank == 0 ? total : 0));
  std::vector<std::uint32_t> all_corners(std::size_t(g_rank == 0 ? 3 * total : 0));
  check(MPI_Gatherv(ids.data(), n, MPI_UINT64_T, all_ids.data(), counts.data(), displs.data(), MPI_UINT64_T, 0, MPI_COMM_WORLD),
        "gathering ties");
  check(MPI_Gatherv(corners.data(), 3 * n, MPI_UINT32_T, all_corners.data(), counts3.data(), displs3.data(), MPI_UINT32_T, 0, MPI_COMM_WORLD),
        "gathering ties");
  std::vector<std::uint64_t> drop;
  if (g_rank == 0 && total > 1) drop = distributed::coincident_tie_drops(all_corners, all_ids);
  std::uint64_t nd = drop.size();
  check(MPI_Bcast(&nd, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "sharing dropped ties");
  drop.resize(std::size_t(nd));
  if (nd) check(MPI_Bcast(drop.data(), int(nd), MPI_UINT64_T, 0, MPI_COMM_WORLD), "sharing dropped ties");
  return drop;
}

// This rank's triangles among the ascending global ids `drop`, as local ids.
std::vector<std::uint64_t> RankRun::own_drops(std::size_t L, const std::vector<std::uint64_t>& drop) const {
  std::vector<std::uint64_t> mine;
  const auto nt = std::uint64_t(parts[L].mesh.triangle_count());
  for (auto it = std::lower_bound(drop.begin(), drop.end(), t_base[L]); it != drop.end() && *it < t_base[L] + nt; ++it)
    mine.push_back(*it - t_base[L]);
  return mine;
}

// Coincident tie triangles cancel within each level across the whole mesh, as in one process.
void RankRun::cancel_ties() {
  rep.duplicates_removed = 0;
  for (std::size_t L = 0; L < levels; ++L) {
    TriangleMesh& m = parts[L].mesh;
    std::vector<std::uint64_t> ids;
    std::vector<std::uint32_t> corners;
    for (auto t : parts[L].ties) {
      ids.push_back(t_base[L] + t);
      for (int c = 0; c < 3; ++c) corners.push_back(std::uint32_t(v_base[L] + m.triangles[3 * t + std::size_t(c)]));
    }
    const std::vector<std::uint64_t> drop = coincident(ids, corners);
    rep.duplicates_removed += std::int64_t(drop.size());
    distributed::drop_triangles(m, own_drops(L, drop));
  }
  m_ties_gathered = mark();
  if (rep.duplicates_removed) renumber_triangles();
}

// Crossings a rounding from a sample, welded as one process welds them (rounded_ties.cpp). A group at a sample on
// a plane this rank shares with a neighbour (its first plane of points, and the next rank's first) spans both
// ranks: those candidates go to every rank, the others stay; each rank then has every move its triangles need.
// Triangles that repeat a vertex go; coincident ones among those at a group cancel, rank 0 deciding.
void RankRun::weld_rounded_crossings() {
  if (o.keep_degenerate) return;
  std::int64_t welded = 0;
  const distributed::WorldToIndex to_index = distributed::world_to_index_map(volume.geometry());
  MPI_Datatype candidate_type;
  check(MPI_Type_contiguous(int(sizeof(distributed::RoundedCandidate)), MPI_BYTE, &candidate_type), "sharing rounded crossings");
  check(MPI_Type_commit(&candidate_type), "sharing rounded crossings");
  bool dropped = false;
  for (std::size_t L = 0; L < levels; ++L) {
    TriangleMesh& m = parts[L].mesh;
    std::vector<distributed::RoundedCandidate> local = distributed::rounded_candidates(m, cpu_thread_count(o.threads), to_index, {}, v_base[L]), shared;
    for (std::size_t k = 0; k < local.size();)
      if (local[k].key[3] == zb || local[k].key[3] == ze) {
        shared.push_back(local[k]);
        local[k] = local.back();
        local.pop_back();
      } else {
        ++k;
      }
    const std::vector<distributed::RoundedCandidate> everyone = all_gather(shared, candidate_type, "sharing rounded crossings");
    local.insert(local.end(), everyone.begin(), everyone.end());
    const auto moves = distributed::rounded_moves(local);
    for (const auto& [from, to] : moves) welded += from >= v_base[L] && from < v_base[L] + own_v[L];
    distributed::WeldedTriangles w = distributed::apply_rounded_moves(m, v_base[L], moves, cpu_thread_count(o.threads));
    std::vector<std::uint64_t> ids;
    std::vector<std::uint32_t> corners;
    for (const std::uint64_t t : w.touched) {
      ids.push_back(t_base[L] + t);
      for (int c = 0; c < 3; ++c) corners.push_back(std::uint32_t(v_base[L] + m.triangles[3 * t + std::size_t(c)]));
    }
    const std::vector<std::uint64_t> twins = coincident(ids, corners);
    rep.duplicates_removed += std::int64_t(twins.size());
    rep.degenerate_removed += std::int64_t(w.degenerate.size());  // (this rank's; summed below)
    std::vector<std::uint64_t> drop = own_drops(L, twins);
    drop.insert(drop.end(), w.degenerate.begin(), w.degenerate.end());
    std::sort(drop.begin(), drop.end());
    distributed::drop_triangles(m, drop);
    dropped = dropped || !drop.empty();
  }
  MPI_Type_free(&candidate_type);
  welded_any = int(dropped || welded > 0);
  check(MPI_Allreduce(MPI_IN_PLACE, &welded_any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD), "welding rounded crossings");
  std::int64_t counts[2] = {welded, rep.degenerate_removed};
  check(MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD), "welding rounded crossings");
  rep.rounded_ties_welded = counts[0];
  rep.degenerate_removed = counts[1];
  if (welded_any) renumber_triangles();
}

// Vertices left unused (a sample on the level whose triangles all collapsed, or cancelled ties), as one process
// removes them: each rank lists its own vertices that its triangles do not use; a rank's last cell layer uses
// the next rank's first vertices, so every rank strikes the listed ones its triangles use; the rest go, and
// every corner drops by the removed ids below it. Then the pinches at ties are split.
// (Tie candidates that all survived leave every vertex its triangles: only cancelled ones count, as in one process.)
void RankRun::remove_unused_vertices() {
  int maybe_unused = int(rep.duplicates_removed > 0 || welded_any);  // the same on every rank (rank 0 shared the drops)
  for (std::size_t L = 0; L < levels; ++L)
    maybe_unused |= int(parts[L].point_vertices && !o.keep_degenerate);
  check(MPI_Allreduce(MPI_IN_PLACE, &maybe_unused, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD), "looking for unused vertices");
  // Where a vertex lies on a sample (a tie, or a welded crossing) the level set may pinch.
  int ties = welded_any;
  for (std::size_t L = 0; L < levels; ++L) ties |= int(parts[L].tie_vertices);
  check(MPI_Allreduce(MPI_IN_PLACE, &ties, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD), "looking for ties");
  if (maybe_unused) {
    std::vector<std::uint64_t> mine;
    std::vector<std::vector<std::uint32_t>> foreign(levels);  // corners on the next rank's vertices
    for (std::size_t L = 0; L < levels; ++L)
      for (const auto v : distributed::unreferenced_vertices(parts[L].mesh.triangles, 0, own_v[L], &foreign[L])) mine.push_back(v_base[L] + v);
    m_unused_listed = mark();
    std::vector<std::uint64_t> listed = all_gather(mine, MPI_UINT64_T, "sharing unused vertices");
    std::sort(listed.begin(), listed.end());
    std::vector<std::uint8_t> used(listed.size(), 0);
    for (std::size_t L = 0; L < levels; ++L)
      for (const std::uint32_t corner : foreign[L]) {  // (own vertices are listed only if unused)
        const std::uint64_t v = v_base[L] + corner;
        const auto it = std::lower_bound(listed.begin(), listed.end(), v);
        if (it != listed.end() && *it == v) used[std::size_t(it - listed.begin())] = 1;
      }
    check(MPI_Allreduce(MPI_IN_PLACE, used.data(), int(used.size()), MPI_UINT8_T, MPI_MAX, MPI_COMM_WORLD),
          "sharing unused vertices");
    std::vector<std::uint64_t> removed;
    m_unused_shared = mark();
    for (std::size_t k = 0; k < listed.size(); ++k)
      if (!used[k]) removed.push_back(listed[k]);
    if (!removed.empty()) {
      for (std::size_t L = 0; L < levels; ++L) {
        std::vector<std::uint64_t> own;
        for (auto v : removed)
          if (v >= v_base[L] && v < v_base[L] + own_v[L]) own.push_back(v);
        distributed::remove_vertices(parts[L].mesh, v_base[L], own, removed);
        own_v[L] = std::uint64_t(parts[L].mesh.vertex_count());
      }
      all_v = number(own_v, v_base, total_v, "numbering vertices");
      m_unused_removed = mark();
      vertices_removed = removed.size();
    }
  }
  if (ties && o.split_pinches)
    mpi::split_pinches_across_ranks(parts, o, volume.geometry(), zb, own_v, v_base, total_v, t_base, all_v, rep);
  m_ties = mark();
}

// Groups as in one process: with labels, the (level, label) pairs of the whole mesh in order, each with its
// label's colour; else, with several levels, one group per level.
void RankRun::make_groups() {
  if (o.labels) {
    std::vector<std::int32_t> mine;  // (level, label) pairs, flattened
    for (std::size_t L = 0; L < levels; ++L) {
      std::vector<std::int32_t> labels = parts[L].mesh.face_labels;
      std::sort(labels.begin(), labels.end());
      labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
      for (auto label : labels) mine.insert(mine.end(), {std::int32_t(L), label});
    }
    const std::vector<std::int32_t> all = all_gather(mine, MPI_INT32_T, "sharing the labels");
    std::vector<std::pair<std::int32_t, std::int32_t>> distinct;
    for (std::size_t k = 0; k + 1 < all.size(); k += 2) distinct.push_back({all[k], all[k + 1]});
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (const auto& [L, label] : distinct) {
      group_names.push_back((levels > 1 ? distributed::level_group_name(o.levels[std::size_t(L)]) + " " : std::string()) + "label " +
                            std::to_string(label));
      const auto c = label_color(label);
      group_colors.insert(group_colors.end(), c.begin(), c.end());
    }
    for (std::size_t L = 0; L < levels; ++L) {
      TriangleMesh& m = parts[L].mesh;
      m.face_groups.resize(m.face_labels.size());
      for (std::size_t t = 0; t < m.face_labels.size(); ++t)
        m.face_groups[t] = std::int32_t(std::lower_bound(distinct.begin(), distinct.end(), std::pair{std::int32_t(L), m.face_labels[t]}) -
                                        distinct.begin());
      m.group_colors = group_colors;  // the PLY colour of each face comes from its group
    }
  } else if (levels > 1) {
    for (std::size_t L = 0; L < levels; ++L) {
      group_names.push_back(distributed::level_group_name(o.levels[L]));
      parts[L].mesh.face_groups.assign(parts[L].mesh.triangles.size() / 3, std::int32_t(L));
    }
  }
  for (std::size_t L = 0; L < levels; ++L) all_t += total_t[L];
  t_extract = now() - t0;
  m_numbered = mark();
}

// A binary PLY into a regular file (or a new one): written by all ranks at once. Anything else (another format,
// standard output, a pipe, a link, whose target is written as the ordinary writer does) goes through rank 0.
void RankRun::write(const std::string& out, MeshFormat format) {
  const double t_write0 = now();
  std::jthread release([e = std::move(engine)]() mutable { e.reset(); });
  distributed::PlyLayout layout;
  layout.normals = o.normals;
  layout.values = o.scalars != nullptr;
  layout.groups = levels > 1 || o.labels;
  layout.labels = o.labels != nullptr;
  layout.colors = o.labels != nullptr;
  std::error_code status_error;
  const auto kind = std::filesystem::symlink_status(out, status_error).type();
  const bool collective = format == MeshFormat::Ply && out != "-" && !out.starts_with("/dev/") &&
                          (kind == std::filesystem::file_type::not_found || kind == std::filesystem::file_type::regular);
  if (collective)
    write_collective(out, layout);
  else
    write_through_rank0(out, format, layout);
  t_write = now() - t_write0;
}

// parasurf's binary PLY: rank 0 writes the header, every rank its records of every level at their offsets, into a
// partial file renamed once every rank is done.
void RankRun::write_collective(const std::string& out, const distributed::PlyLayout& layout) {
  const std::string partial = out + ".partial";
  const std::string header = layout.header(all_v, all_t, group_names);
  const std::size_t vbytes = layout.vertex_bytes(), fbytes = layout.face_bytes();
  if (g_rank == 0) std::filesystem::remove(partial);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File f;
  check(MPI_File_open(MPI_COMM_WORLD, partial.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &f), ("opening " + partial).c_str());
  const MPI_Offset vstart = MPI_Offset(header.size()), fstart = vstart + MPI_Offset(all_v * vbytes);
  if (g_rank == 0) check(MPI_File_write_at(f, 0, header.data(), int(header.size()), MPI_CHAR, MPI_STATUS_IGNORE), "writing the header");
  // Record buffers left uninitialised (the threads that pack the records fault their pages in), kept between levels.
  struct Records {
    std::unique_ptr<char[]> bytes;
    std::size_t n = 0, capacity = 0;
    void resize(std::size_t to) {
      if (to > capacity) bytes.reset(new char[capacity = to]);
      n = to;
    }
    char* data() const { return bytes.get(); }
    std::size_t size() const { return n; }
  } vbuf, fbuf;
  for (std::size_t L = 0; L < levels; ++L) {
    const TriangleMesh& m = parts[L].mesh;
    const std::int64_t nv = m.vertex_count(), nt = m.triangle_count();
    vbuf.resize(std::size_t(nv) * vbytes);
    fbuf.resize(std::size_t(nt) * fbytes);
    constexpr std::int64_t kChunk = 1 << 16;
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < (nv + kChunk - 1) / kChunk; ++c)
      layout.pack_vertices(m, c * kChunk, std::min(nv, (c + 1) * kChunk), vbuf.data() + std::size_t(c * kChunk) * vbytes);
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < (nt + kChunk - 1) / kChunk; ++c)
      layout.pack_faces(m, c * kChunk, std::min(nt, (c + 1) * kChunk), std::uint32_t(v_base[L]), fbuf.data() + std::size_t(c * kChunk) * fbytes);
    // Every rank takes part in as many collective writes as the rank with the most pieces of this level.
    const std::uint64_t pieces = std::max<std::uint64_t>(1, (std::max(vbuf.size(), fbuf.size()) + (1u << 30) - 1) >> 30);
    std::uint64_t rounds = 0;
    check(MPI_Allreduce(&pieces, &rounds, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD), "planning the writes");
    for (std::uint64_t k = 0; k < rounds; ++k) {
      auto piece = [&](const Records& buf, MPI_Offset at) {
        const std::size_t from = std::min<std::size_t>(buf.size(), std::size_t(k) << 30), to = std::min<std::size_t>(buf.size(), from + (1u << 30));
        check(MPI_File_write_at_all(f, at + MPI_Offset(from), buf.data() + from, int(to - from), MPI_CHAR, MPI_STATUS_IGNORE),
              "writing the mesh");
      };
      piece(vbuf, vstart + MPI_Offset(v_base[L] * vbytes));
      piece(fbuf, fstart + MPI_Offset(t_base[L] * fbytes));
    }
  }
  check(MPI_File_close(&f), "closing the mesh");
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) std::filesystem::rename(partial, out);
}

// Other formats: every level's pieces gathered to rank 0 in order, written by the ordinary writer.
void RankRun::write_through_rank0(const std::string& out, MeshFormat format, const distributed::PlyLayout& layout) {
  auto gather = [&](const auto& local, auto& all, MPI_Datatype type) {
    int n = int(local.size());
    std::vector<int> counts(static_cast<std::size_t>(g_size)), displs(static_cast<std::size_t>(g_size));
    check(MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "gathering the mesh");
    int total = 0;
    for (int r = 0; r < g_size; ++r) displs[std::size_t(r)] = total, total += counts[std::size_t(r)];
    const std::size_t at = all.size();
    all.resize(at + std::size_t(g_rank == 0 ? total : 0));
    check(MPI_Gatherv(local.data(), n, type, all.data() + at, counts.data(), displs.data(), type, 0, MPI_COMM_WORLD), "gathering the mesh");
  };
  TriangleMesh whole;
  for (std::size_t L = 0; L < levels; ++L) {
    const TriangleMesh& m = parts[L].mesh;
    gather(m.positions, whole.positions, MPI_FLOAT);
    if (layout.normals) gather(m.normals, whole.normals, MPI_FLOAT);
    if (layout.values) gather(m.vertex_values, whole.vertex_values, MPI_FLOAT);
    std::vector<std::uint32_t> corners(m.triangles.size());
    const auto base = std::uint32_t(v_base[L]);
#pragma omp parallel for schedule(static)
    for (std::int64_t k = 0; k < std::int64_t(corners.size()); ++k) corners[std::size_t(k)] = m.triangles[std::size_t(k)] + base;
    gather(corners, whole.triangles, MPI_UINT32_T);
    if (layout.groups) gather(m.face_groups, whole.face_groups, MPI_INT32_T);
    if (layout.labels) gather(m.face_labels, whole.face_labels, MPI_INT32_T);
  }
  whole.group_names = group_names;
  whole.group_colors = group_colors;
  if (g_rank == 0) write_mesh(out, whole, format);
  MPI_Barrier(MPI_COMM_WORLD);
}

// Per-rank ranges and times, on rank 0.
void RankRun::report(const std::string& out, const std::string& input, bool show, const std::string& json) {
  std::uint64_t mine_v = 0, mine_t = 0;
  for (std::size_t L = 0; L < levels; ++L) mine_v += own_v[L], mine_t += own_t[L];
  auto slab_home = [&](std::size_t k) { return k < rep.profile.seconds_slab_done.size() ? m_part_begin + rep.profile.seconds_slab_done[k] : 0.0; };
  struct RankFigures {
    double extract, seconds_read;
    std::int64_t zb, ze, vertices, triangles;
    double startup, balance, part, setup, classify, scan, generate, copy, host_mesh, numbering, after_start, host_mesh_ahead;
    double marks[kMarks], engine_start, upload, download, part_total;
  } mine{t_extract, rep.seconds_read, zb, ze, std::int64_t(mine_v), std::int64_t(mine_t),
         m_t0 - g_mark_init_begin, t_balance, t_part, rep.profile.seconds_setup, rep.profile.seconds_classify, rep.profile.seconds_scan, rep.profile.seconds_generate,
         rep.profile.seconds_copy, rep.profile.seconds_host_mesh, t_extract - t_balance - t_part, t0 + t_extract - t_ready,
         rep.profile.seconds_host_mesh_ahead,
         {g_mark_init_begin, g_mark_init_end, m_t0, m_costs, m_gathered, m_part_begin, m_ready, slab_home(0), slab_home(1), slab_home(2),
          slab_home(3), m_extracted, m_part_end, m_numbered_ids, m_ties_gathered, m_unused_listed, m_unused_shared, m_unused_removed, m_ties, m_numbered},
         rep.profile.seconds_engine_start, rep.profile.seconds_upload, rep.profile.seconds_download, rep.seconds_total};
  std::vector<RankFigures> figures(static_cast<std::size_t>(g_size));
  check(MPI_Gather(&mine, int(sizeof mine), MPI_BYTE, figures.data(), int(sizeof mine), MPI_BYTE, 0, MPI_COMM_WORLD), "gathering figures");
  if (g_rank != 0) return;
  double slowest = 0, mean = 0, slowest_after_start = 0;
  for (const auto& f : figures)
    slowest = std::max(slowest, f.extract), mean += f.extract / g_size, slowest_after_start = std::max(slowest_after_start, f.after_start);
  if (show) {
    std::string level_list;
    for (double l : o.levels) {
      char text[32];
      std::snprintf(text, sizeof text, "%g", l);
      level_list += (level_list.empty() ? "" : ", ") + std::string(text);
    }
    std::printf("volume: %s, %lldx%lldx%lld %s; level%s %s\n", volume.name().c_str(), (long long)nx, (long long)ny, (long long)nz,
                voxel_type_name(volume.type()), levels > 1 ? "s" : "", level_list.c_str());
    std::printf("MPI: %d ranks (%s), ranges balanced %s in %.2f ms\n", g_size, device_name(device),
                balance_mode == "equal" ? "by slices" : "by active cells", t_balance * 1e3);
    for (int r = 0; r < g_size; ++r) {
      const auto& f = figures[std::size_t(r)];
      std::printf("  rank %d: slices [%lld, %lld), %lld vertices, %lld triangles, %.2f ms\n", r, (long long)f.zb, (long long)f.ze,
                  (long long)f.vertices, (long long)f.triangles, f.extract * 1e3);
    }
    std::printf("time: %.2f ms (slowest rank %.2f, mean %.2f; balance %.2f; after every engine started %.2f); writing %.2f ms\n",
                slowest * 1e3, slowest * 1e3, mean * 1e3, t_balance * 1e3, slowest_after_start * 1e3, t_write * 1e3);
    print_tie_cleanup(rep);
    std::printf("wrote %s (%llu vertices, %llu triangles)\n", out.c_str(), (unsigned long long)all_v, (unsigned long long)all_t);
  }
  if (!json.empty()) {
    double first = 1e300;
    for (const auto& f : figures) first = std::min(first, f.marks[0]);
    auto timeline = [&](const double* m) {
      nlohmann::json t;
      for (int k = 0; k < kMarks; ++k)
        if (m[k] > 0) t[kMarkNames[k]] = m[k] - first;
      return t;
    };
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& f : figures)
      ranks.push_back({{"z_begin", f.zb}, {"z_end", f.ze}, {"vertices", f.vertices}, {"triangles", f.triangles}, {"seconds", f.extract},
                       {"phases", {{"mpi_start", f.startup}, {"cost_pass", f.balance}, {"part", f.part}, {"part_setup", f.setup},
                                   {"part_read", f.seconds_read}, {"part_classify", f.classify}, {"part_scan", f.scan},
                                   {"part_generate", f.generate}, {"part_copy", f.copy}, {"part_host_mesh", f.host_mesh},
                                   {"part_host_mesh_ahead", f.host_mesh_ahead},
                                   {"numbering_and_ties", f.numbering}, {"after_start", f.after_start},
                                   {"part_engine_start", f.engine_start}, {"part_upload", f.upload}, {"part_download", f.download},
                                   {"part_after_report", f.part - f.part_total}}},
                       {"timeline", timeline(f.marks)}});
    const nlohmann::json j = {{"dims", g.dims}, {"levels", o.levels}, {"mpi_ranks", g_size},
                              {"device", device_name(device)}, {"balance", balance_mode}, {"vertices", all_v},
                              {"triangles", all_t}, {"unused_vertices_removed", vertices_removed}, {"ranks", ranks},
                              {"seconds", {{"total", slowest}, {"slowest_rank", slowest}, {"mean_rank", mean},
                                           {"after_start", slowest_after_start},
                                           {"balance", t_balance}, {"write", t_write}}}};
    write_json_report(json, "isosurface", input, out, j);
  }
  if (all_t == 0) {
    std::fprintf(stderr, "parasurf: no surface found at the given level; wrote an empty mesh to %s\n", out.c_str());
    throw ExitStatus{3};
  }
}

}  // namespace

void isosurface_mpi(VolumeSource& volume, IsosurfaceOptions o, const std::string& out, MeshFormat format,
                    const std::string& input, bool show, const std::string& json, const std::string& balance_mode) {
  RankRun run(volume, std::move(o), balance_mode);
  run.prepare();
  run.balance_ranges();
  run.extract_part();
  run.cancel_ties();
  run.weld_rounded_crossings();
  run.remove_unused_vertices();
  run.make_groups();
  run.write(out, format);
  run.report(out, input, show, json);
}

}  // namespace parasurf::cli
