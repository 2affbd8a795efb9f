// Tessellation of patch models: the plan (plan.cpp), one batch evaluation of every sample on the chosen device (a
// team's members each evaluating their share), the adaptive planner's checks by sampling, and assembly of the
// welded mesh on the device or on the host (assemble_host.cpp).
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include "core/memory.hpp"
#include "parasurf/error.hpp"
#include "parasurf/tessellate.hpp"
#include "patches/assemble.hpp"
#include "patches/assemble_math.hpp"
#include "patches/auto_device.hpp"
#include "patches/batch.hpp"
#include "patches/plan.hpp"
#include "patches/plan_walk.hpp"
#include "patches/topology.hpp"

namespace parasurf {

PatchStrategy parse_patch_strategy(const std::string& name) {
  if (name == "auto") return PatchStrategy::Auto;
  if (name == "direct") return PatchStrategy::Direct;
  if (name == "casteljau") return PatchStrategy::Casteljau;
  if (name == "tables") return PatchStrategy::Tables;
  throw Error(ErrorKind::InvalidArgument, "unknown patch strategy '" + name + "' (auto, direct, casteljau, tables)");
}

const char* patch_strategy_name(PatchStrategy s) {
  switch (s) {
    case PatchStrategy::Auto: return "auto";
    case PatchStrategy::Direct: return "direct";
    case PatchStrategy::Casteljau: return "casteljau";
    case PatchStrategy::Tables: return "tables";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

using patches::append_polyhedra;
using patches::assemble;
using patches::check_mesh_size;
using patches::count_flips;
using patches::estimate_segments;
using patches::kMaxSegments;
using patches::make_plan;
using patches::plain_patch;
using patches::Plan;
using patches::Ref;
using patches::SampleStore;
using patches::triangle_deviation;
using patches::triangulate_patch;

// One member's share of a team run: patches [patch[k], patch[k+1]), their grid samples [grid[k], grid[k+1]) and
// their side samples [extra[k], extra[k+1]) (counted from the first side sample). Contiguous ranges of about equal
// sample counts.
struct TeamRanges {
  std::vector<std::int64_t> patch, grid, extra;
};

TeamRanges team_ranges(const Plan& pl, int members) {
  const auto np = std::int64_t(pl.model->patches.size());
  std::vector<std::int64_t> cost(std::size_t(np) + 1, 0);  // samples before patch p, grid and side
  std::size_t x = 0;
  for (std::int64_t p = 0; p < np; ++p) {
    std::int64_t extras = 0;
    while (x < pl.extra_patch.size() && pl.extra_patch[x] == p) ++x, ++extras;
    cost[std::size_t(p) + 1] = cost[std::size_t(p)] + (pl.first[p + 1] - pl.first[p]) + extras;
  }
  TeamRanges r;
  for (int k = 0; k <= members; ++k) {
    const std::int64_t target = cost.back() * k / members;
    const std::int64_t p = k == members ? np : std::int64_t(std::lower_bound(cost.begin(), cost.end(), target) - cost.begin());
    r.patch.push_back(p);
    r.grid.push_back(pl.first[p]);
    r.extra.push_back(std::int64_t(std::lower_bound(pl.extra_patch.begin(), pl.extra_patch.end(), p) - pl.extra_patch.begin()));
  }
  return r;
}

// The batch of patches [pa, pb) (all by default): sample indices counted from the range's first sample.
template <class T> patches::HostBatch<T> make_batch(const Plan& pl, std::int64_t pa = 0, std::int64_t pb = -1) {
  const PatchModel& m = *pl.model;
  patches::HostBatch<T> b;
  if (pb < 0) pb = std::int64_t(m.patches.size());
  const std::int64_t base = pl.first[pa];
  b.records.resize(std::size_t(pb - pa));
  b.points.assign(m.points.begin(), m.points.end());
  b.normal_points.assign(m.normal_points.begin(), m.normal_points.end());
  for (std::int64_t p = pa; p < pb; ++p) {
    const Patch& patch = m.patches[p];
    patchk::PatchRecord& r = b.records[p - pa];
    r.flags = (patch.kind == PatchKind::Triangle ? patchk::kTriangle : 0u) | (patch.rational ? patchk::kRational : 0u) |
              (patch.normal_offset >= 0 ? patchk::kNormalPatch : 0u) | (pl.topo.flipped[p] ? patchk::kFlipped : 0u);
    r.du = std::int16_t(patch.degree_u);
    r.dv = std::int16_t(patch.degree_v);
    r.ndu = std::int16_t(std::max(patch.normal_degree_u, 0));
    r.ndv = std::int16_t(std::max(patch.normal_degree_v, 0));
    r.nu = pl.nu[p];
    r.nv = pl.nv[p];
    r.cp = patch.offset;
    r.ncp = std::max<std::int64_t>(patch.normal_offset, 0);
    r.first = pl.first[p] - base;
    b.max_degree = std::max({b.max_degree, patch.degree_u, patch.degree_v});
  }
  b.samples = pl.first[pb] - base;
  const auto xa = std::lower_bound(pl.extra_patch.begin(), pl.extra_patch.end(), pa) - pl.extra_patch.begin();
  const auto xb = std::lower_bound(pl.extra_patch.begin(), pl.extra_patch.end(), pb) - pl.extra_patch.begin();
  for (auto x = xa; x < xb; ++x) b.point_patch.push_back(pl.extra_patch[std::size_t(x)] - pa);
  b.point_uv.assign(pl.extra_uv.begin() + 2 * xa, pl.extra_uv.begin() + 2 * xb);
  return b;
}


Device pick_device(Device requested) { return resolve_device(requested); }

template <class T>
BatchTiming run_batch(const patches::HostBatch<T>& batch, SampleStore<T>& store, Device device, PatchStrategy strategy,
                      int threads, HybridScheme scheme = HybridScheme::Dynamic, double cpu_share = -1) {
  const std::int64_t n = batch.total();
  core::check_host_allocation(std::uint64_t(n) * 6 * sizeof(T), std::to_string(n) + " patch samples");
  for (int c = 0; c < 3; ++c) core::resize_for_overwrite(store.pos[c], std::size_t(n)), core::resize_for_overwrite(store.nrm[c], std::size_t(n));
  return patches::make_backend<T>(device, {strategy, threads, scheme, cpu_share})->evaluate(batch, store.views());
}

// Team run: this member evaluates its patches into the whole model's sample arrays, then the exchange fills in
// the others' samples (on every member when `everyone`, else on member 0).
template <class T>
BatchTiming run_team_batch(const Plan& pl, const TessellationTeam& team, const TeamRanges& ranges, SampleStore<T>& store,
                           Device device, PatchStrategy strategy, int threads, bool everyone, double* seconds_exchange) {
  const std::size_t me = std::size_t(team.member);
  const auto batch = make_batch<T>(pl, ranges.patch[me], ranges.patch[me + 1]);
  SampleStore<T> mine;
  BatchTiming timing;  // a member with no patches (more members than patches) only takes part in the exchange
  if (batch.total() > 0) timing = run_batch<T>(batch, mine, device, strategy, threads);
  const std::int64_t total = pl.grid_samples + pl.extra_samples;
  core::check_host_allocation(std::uint64_t(total) * 6 * sizeof(T), std::to_string(total) + " patch samples");
  const auto t0 = Clock::now();
  const std::int64_t own_grid = batch.samples;
  for (auto* arrays : {store.pos, store.nrm})
    for (int c = 0; c < 3; ++c) core::resize_for_overwrite(arrays[c], std::size_t(total));
  for (int c = 0; c < 3; ++c)
    for (auto [from, to] : {std::pair{mine.pos, store.pos}, std::pair{mine.nrm, store.nrm}}) {
      std::copy(from[c].begin(), from[c].begin() + own_grid, to[c].begin() + ranges.grid[me]);
      std::copy(from[c].begin() + own_grid, from[c].end(), to[c].begin() + pl.grid_samples + ranges.extra[me]);
      team.exchange(to[c].data(), sizeof(T), ranges.grid, everyone);
      team.exchange(to[c].data() + pl.grid_samples, sizeof(T), ranges.extra, everyone);
    }
  if (seconds_exchange) *seconds_exchange += since(t0);
  return timing;
}

bool team_run(const TessellationOptions& o) { return o.team && o.team->members > 1; }

// Largest sampled parametric deviation of each patch from its triangles (k+1 points per triangle side); with
// `only`, just the patches it marks (the others get 0). `store` takes the samples: a planner's passes reuse it
// rather than fault in fresh pages on every pass.
std::vector<double> plan_deviation(const Plan& pl, int k, int threads, SampleStore<double>& store,
                                   const TessellationTeam* team = nullptr, const std::vector<std::uint8_t>* only = nullptr) {
  const PatchModel& model = *pl.model;
  const auto batch = make_batch<double>(pl);
  const auto np = std::int64_t(model.patches.size());
  std::int64_t pa = 0, pb = np;
  TeamRanges ranges;
  if (team && team->members > 1) {
    ranges = team_ranges(pl, team->members);
    pa = ranges.patch[std::size_t(team->member)], pb = ranges.patch[std::size_t(team->member) + 1];
    run_team_batch<double>(pl, *team, ranges, store, Device::Cpu, PatchStrategy::Tables, threads, true, nullptr);
  } else {
    run_batch<double>(batch, store, Device::Cpu, PatchStrategy::Tables, threads);
  }
  auto param = [&](std::int64_t p, std::int64_t s, double& u, double& v) {
    if (s >= pl.grid_samples) {
      u = pl.extra_uv[std::size_t(s - pl.grid_samples) * 2];
      v = pl.extra_uv[std::size_t(s - pl.grid_samples) * 2 + 1];
      return;
    }
    patchk::sample_param<double>(batch.records[p], s - pl.first[p], u, v);
  };
  std::vector<double> worst(static_cast<std::size_t>(np), 0.0);
  k = std::max(2, k);
#pragma omp parallel for schedule(dynamic, 1) num_threads(cpu_thread_count(threads))
  for (std::int64_t p = pa; p < pb; ++p) {
    if (only && !(*only)[std::size_t(p)]) continue;
    std::vector<Ref> tris;
    triangulate_patch(pl, p, tris);
    const patchk::PatchRecord& rec = batch.records[p];
    // (lattice indices are ints: a refinement beyond 2^24 lattice points a side is sampled point by point)
    const bool grid = !(rec.flags & patchk::kTriangle) && std::int64_t(k) * std::max(rec.nu, rec.nv) < (1 << 24);
    std::optional<patches::RefinedGrid> refined;
    if (grid) refined.emplace(rec, batch.points.data(), k);
    const std::int64_t g0 = pl.first[p], g1 = g0 + std::int64_t(rec.nu + 1) * (rec.nv + 1);
    for (std::size_t t = 0; t < tris.size(); t += 3) {
      double xyz[3][3];
      int ij[3][2];
      bool cell = grid;  // corners all grid samples of this patch
      for (int v = 0; v < 3; ++v) {
        const std::int64_t s = tris[t + v].sample;
        for (int c = 0; c < 3; ++c) xyz[v][c] = store.pos[c][std::size_t(s)];
        if (s >= g0 && s < g1 && s < pl.grid_samples) {
          ij[v][0] = int((s - g0) / (rec.nv + 1));
          ij[v][1] = int((s - g0) % (rec.nv + 1));
        } else {
          cell = false;
        }
      }
      double d;
      if (cell && refined->triangle_deviation(ij, xyz, d)) {
        worst[p] = std::max(worst[p], d);
        continue;
      }
      double uv[3][2];
      for (int v = 0; v < 3; ++v) param(p, tris[t + v].sample, uv[v][0], uv[v][1]);
      worst[p] = std::max(worst[p], triangle_deviation(rec, batch.points.data(), uv, xyz, k));
    }
  }
  if (team && team->members > 1) team->exchange(worst.data(), sizeof(double), ranges.patch, true);
  return worst;
}

// The plan for the options: with a tolerance, the a-priori segments are checked by sampling and patches that
// miss are refined (error ~ h^2) until every one meets 90% of the tolerance. The estimate and the refinement
// aim below the tolerance, so a last pass gives back what the margin cost: each patch tries one segment fewer,
// along u then along v, and keeps it where its sampled deviation (with the edges its neighbours end with) stays
// within 95% of the tolerance.
Plan plan_for(const PatchModel& m, const TessellationOptions& o) {
  Plan pl = make_plan(m, o);
  if (!(o.tolerance > 0)) return pl;
  const double target = 0.9 * o.tolerance, keep = 0.95 * o.tolerance;
  std::vector<double> dev;
  SampleStore<double> store;
  for (int round = 0; round < 8; ++round) {
    dev = plan_deviation(pl, 4, o.threads, store, o.team.get());
    bool changed = false;
    for (std::size_t p = 0; p < dev.size(); ++p) {
      if (dev[p] <= target) continue;
      const double grow = std::sqrt(dev[p] / (0.85 * o.tolerance));
      for (auto* n : {&pl.nu[p], &pl.nv[p]})  // (clamped before the conversion to int, which a huge growth overflows)
        *n = std::max(*n + 1, int(std::min(double(kMaxSegments), std::ceil(*n * grow))));
      for (auto* n : {&pl.nu[p], &pl.nv[p]}) *n = std::min(*n, kMaxSegments);
      changed = true;
    }
    if (!changed) break;
    finish_plan(pl);
  }
  if (*std::max_element(dev.begin(), dev.end()) > keep) return pl;  // refinement ran out of rounds: no coarsening
  const auto np = std::int64_t(m.patches.size());
  for (int step = 0; step < 6; ++step) {
    const int direction = step % 2;
    Plan trial = pl;
    for (std::int64_t p = 0; p < np; ++p) {
      const bool triangle = m.patches[p].kind == PatchKind::Triangle;
      if (triangle && direction == 1) continue;  // one segment count for both directions, tried once
      int& n = direction == 0 ? trial.nu[p] : trial.nv[p];
      if (n <= 1) continue;
      --n;
      if (triangle) trial.nv[p] = n;
    }
    // Patches that miss take their segments back, which can only refine their neighbours' shared edges; repeat
    // until all are within `keep`, or give the whole step up. Only patches whose grid or sides differ from the
    // plan's are sampled again.
    bool accepted = false;
    // A patch's deviation depends on its segments and its sides' factors alone: it is sampled again only where
    // those differ from the last plan sampled (the accepted plan, then the previous attempt).
    auto shape = [&](const Plan& q, std::int64_t p) {
      std::array<int, 6> x{q.nu[p], q.nv[p], 0, 0, 0, 0};
      for (int sd = 0; sd < patches::side_count(m.patches[p]); ++sd) x[std::size_t(2 + sd)] = q.factor(p, sd);
      return x;
    };
    std::vector<std::array<int, 6>> sampled_shape(static_cast<std::size_t>(np));
    for (std::int64_t p = 0; p < np; ++p) sampled_shape[std::size_t(p)] = shape(pl, p);
    std::vector<double> d = dev;
    for (int attempt = 0; attempt < 4 && !accepted; ++attempt) {
      finish_plan(trial);
      std::vector<std::uint8_t> differs(std::size_t(np), 0);
      for (std::int64_t p = 0; p < np; ++p) {
        const auto x = shape(trial, p);
        differs[std::size_t(p)] = x != sampled_shape[std::size_t(p)];
        sampled_shape[std::size_t(p)] = x;
      }
      const auto fresh = plan_deviation(trial, 4, o.threads, store, o.team.get(), &differs);
      for (std::int64_t p = 0; p < np; ++p)
        if (differs[std::size_t(p)]) d[std::size_t(p)] = fresh[std::size_t(p)];
      accepted = true;
      for (std::int64_t p = 0; p < np; ++p) {
        if (d[std::size_t(p)] <= keep) continue;
        accepted = false;
        trial.nu[p] = pl.nu[p];
        trial.nv[p] = pl.nv[p];
      }
    }
    if (!accepted) break;
    dev = std::move(d);
    const bool same = trial.nu == pl.nu && trial.nv == pl.nv;
    pl = std::move(trial);
    if (same && direction == 1) break;
  }
  return pl;
}


// The plan as the device assembly reads it: host arrays kept alive with the view that points into them.
struct DeviceAssemblyInput {
  patches::AssemblyPlan plan;
  std::vector<std::uint8_t> is_triangle, plain, edge_collapse;
  std::vector<std::array<std::int32_t, 2>> edge_corners;
  std::vector<std::int32_t> group;
};

void fill_device_assembly_input(const Plan& pl, const TessellationOptions& o, DeviceAssemblyInput& in) {
  const PatchModel& m = *pl.model;
  const auto np = std::int64_t(m.patches.size());
  in.is_triangle.resize(std::size_t(np));
  in.plain.resize(std::size_t(np));
  in.group.resize(std::size_t(np));
#pragma omp parallel for schedule(static) num_threads(cpu_thread_count(o.threads))
  for (std::int64_t p = 0; p < np; ++p) {
    in.is_triangle[std::size_t(p)] = m.patches[p].kind == PatchKind::Triangle;
    in.plain[std::size_t(p)] = plain_patch(pl, p);
    in.group[std::size_t(p)] = m.patches[p].group;
  }
  in.edge_collapse.resize(pl.topo.edges.size());
  in.edge_corners.resize(pl.topo.edges.size());
#pragma omp parallel for schedule(static) num_threads(cpu_thread_count(o.threads))
  for (std::size_t e = 0; e < pl.topo.edges.size(); ++e) {
    in.edge_collapse[e] = pl.topo.edges[e].collapsed;
    in.edge_corners[e] = {pl.topo.edges[e].corner_a, pl.topo.edges[e].corner_b};
  }
  patches::AssemblyPlan& a = in.plan;
  a.view.is_triangle = in.is_triangle.data();
  a.view.is_flipped = pl.topo.flipped.data();
  a.view.zipper = pl.zipper.data();
  a.view.nu = pl.nu.data();
  a.view.nv = pl.nv.data();
  a.view.first = pl.first.data();
  a.view.extra_first = pl.extra_first.data();
  a.view.interior_base = pl.interior_base.data();
  a.view.sides = pl.topo.sides.data();
  a.view.edge_factor = pl.edge_factor.data();
  a.view.edge_vertex_base = pl.edge_vertex_base.data();
  a.view.edge_corners = in.edge_corners.data();
  a.view.edge_collapse = in.edge_collapse.data();
  a.plain = in.plain.data();
  a.group = in.group.data();
  a.component = pl.topo.component.data();
  a.component_closed = pl.topo.component_closed;
  a.patches = np;
  a.edges = std::int64_t(pl.topo.edges.size());
  a.seam_vertices = np > 0 ? pl.interior_base[0] : pl.topo.corner_count;
  a.vertices = pl.vertices;
  a.samples = pl.grid_samples + pl.extra_samples;
  a.cos_crease = patches::math::crease_cosine(o.crease_angle_degrees);
  a.keep_degenerate = o.keep_degenerate;
  a.orient = o.orient;
}


template <class T>
PatchMesh tessellate_as(const PatchModel& model, const TessellationOptions& o, TessellationReport* rep) {
  auto t0 = Clock::now();
  const Plan pl = plan_for(model, o);
  if (rep) {
    rep->seconds_plan = since(t0);
    rep->patches = std::int64_t(model.patches.size());
    rep->tensor_patches = model.tensor_patch_count();
    rep->triangular_patches = rep->patches - rep->tensor_patches;
    rep->evaluated_points = pl.grid_samples + pl.extra_samples;
    rep->seam_tolerance = pl.topo.seam_tolerance;
    for (std::size_t k = 0; k < pl.topo.edges.size(); ++k) {
      const auto& e = pl.topo.edges[k];
      if (e.collapsed) ++rep->collapsed_edges;
      else if (e.sides.size() >= 2) ++rep->shared_edges;
      else if (pl.topo.split(std::int64_t(k))) ++rep->t_junction_edges;
      else if (pl.topo.piece_of_split[k]) ++rep->t_junction_pieces;
      else ++rep->open_edges, rep->open_side_segments += pl.edge_factor[k];
    }
    if (!pl.nu.empty()) {
      rep->min_segments = std::min(*std::min_element(pl.nu.begin(), pl.nu.end()), *std::min_element(pl.nv.begin(), pl.nv.end()));
      rep->max_segments = std::max(*std::max_element(pl.nu.begin(), pl.nu.end()), *std::max_element(pl.nv.begin(), pl.nv.end()));
    }
  }
  // The phases' shares of a typical run: planning is short, evaluation and assembly split the rest.
  if (o.progress) o.progress(0.1);
  SampleStore<T> store;
  // auto with a GPU: the faster side for this model's mesh, by the estimates (patches/auto_device.hpp); a team's
  // members all take the GPU when there is one (their shares are chosen together).
  patches::AutoJob auto_job;
  const bool weigh = o.device == Device::Auto && !team_run(o) && cuda_available();
  if (weigh) {
    auto_job.samples = pl.grid_samples + pl.extra_samples;
    auto_job.vertices = pl.vertices;
    auto_job.triangles = 2 * pl.vertices;
    auto_job.doubles = std::is_same_v<T, double>;
    auto_job.threads = o.threads;
    auto_job.host_assembly = !o.assemble_on_device || !pl.topo.splits.empty();
  }
  std::string choice;
  const Device device = weigh ? patches::choose_device(auto_job, &choice) : pick_device(o.device);
  if (rep) rep->device_choice = choice;
  const auto run_start = Clock::now();
  // What this run teaches auto (the evaluation and assembly, the mesh's way home).
  auto learn = [&](double download_seconds) {
    if (weigh) patches::learn_from_run(auto_job, device, since(run_start), download_seconds);
  };
  {
    // The whole run's host memory, known from the plan before any work: the mesh, and beside it the samples
    // wherever they come to the host.
    const bool samples_on_host = !(device == Device::Cuda && o.assemble_on_device);
    const std::uint64_t samples = std::uint64_t(pl.grid_samples + pl.extra_samples);
    core::check_host_allocation(std::uint64_t(pl.vertices) * 48 + (samples_on_host ? samples * 6 * sizeof(T) : 0),
                                "the tessellation (" + std::to_string(samples) + " samples, a mesh of " +
                                    std::to_string(pl.vertices) + " vertices; lower the resolution)");
  }
  t0 = Clock::now();
  BatchTiming timing;
  double seconds_exchange = 0, seconds_given_up = 0;
  if (team_run(o)) {
    const TeamRanges ranges = team_ranges(pl, o.team->members);
    timing = run_team_batch<T>(pl, *o.team, ranges, store, device, o.strategy, o.threads, false, &seconds_exchange);
    if (rep) rep->own_patches = ranges.patch[std::size_t(o.team->member) + 1] - ranges.patch[std::size_t(o.team->member)];
  } else if (device == Device::Cuda && o.assemble_on_device && pl.topo.splits.empty()) {
    // The samples stay on the device, where the mesh is welded and assembled; where the device cannot (memory),
    // they come back and the host assembles as below.
    check_mesh_size(pl);
    const auto f0 = Clock::now();
    DeviceAssemblyInput input;
    fill_device_assembly_input(pl, o, input);
    const double fill_seconds = since(f0);  // assembly's share, though it runs before the evaluation
    patches::AssemblyOutcome outcome;
    double consumer_seconds = 0, attempt_seconds = 0;
    PatchMesh device_mesh;
    const std::int64_t samples = pl.grid_samples + pl.extra_samples;
    const patches::cuda::OnDevice<T> consume = [&](const patches::SampleViews<T>& on_device) {
      const auto c0 = Clock::now();
      outcome = patches::gpu::assemble<T>(input.plan, on_device, device_mesh);
      attempt_seconds = since(c0);
      if (!outcome.done) {
        core::check_host_allocation(std::uint64_t(samples) * 6 * sizeof(T), std::to_string(samples) + " patch samples");
        for (int c = 0; c < 3; ++c)
          core::resize_for_overwrite(store.pos[c], std::size_t(samples)), core::resize_for_overwrite(store.nrm[c], std::size_t(samples));
        patches::gpu::download<T>(on_device, store.views(), samples);
      }
      consumer_seconds = since(c0);
      return true;
    };
    timing = patches::gpu::evaluate<T>(make_batch<T>(pl), o.strategy, patches::SampleViews<T>{}, false, consume);
    if (rep) {
      rep->own_patches = rep->patches;
      rep->seconds_evaluate = since(t0) - consumer_seconds - fill_seconds;
      rep->device = timing.device;
      rep->strategy = patch_strategy_name(timing.strategy);
      rep->assembly_note = outcome.why_not;
    }
    if (outcome.done) {
      if (o.progress) o.progress(0.4);
      if (rep) {
        rep->assembled_on_device = true;
        rep->seconds_assemble = outcome.seconds_device + fill_seconds;
        rep->seconds_download = outcome.seconds_download;
        rep->crease_vertices = outcome.crease_vertices;
        rep->seconds_assembly_phases[0] = fill_seconds;
        for (int k = 0; k < 4; ++k) rep->seconds_assembly_phases[k + 1] = outcome.phase_seconds[k];
      }
      if (o.orient) count_flips(pl, outcome.component_volume, rep);
      append_polyhedra(device_mesh, model, rep);
      learn(outcome.seconds_download);
      if (o.progress) o.progress(1.0);
      return device_mesh;
    }
    seconds_given_up = attempt_seconds + fill_seconds;  // not evaluation: the device's try
  } else {
    timing = run_batch<T>(make_batch<T>(pl), store, device, o.strategy, o.threads, o.hybrid_scheme, o.cpu_share);
    if (rep) rep->own_patches = rep->patches;
    if (rep && device == Device::Cuda && o.assemble_on_device)
      rep->assembly_note = "the model has T-junctions, which the host assembly stitches";
  }
  if (rep) {
    rep->seconds_evaluate = since(t0) - seconds_exchange - seconds_given_up;
    rep->seconds_exchange = seconds_exchange;
    rep->device = timing.device;
    rep->strategy = patch_strategy_name(timing.strategy);
    rep->cpu_share = timing.cpu_share;
  }
  if (o.progress) o.progress(0.4);
  if (team_run(o) && o.team->member != 0) return PatchMesh{};  // member 0 assembles
  t0 = Clock::now();
  PatchMesh mesh = assemble<T>(pl, store, o, rep);
  if (rep) rep->seconds_assemble = since(t0);
  if (device == Device::Cpu) learn(0);  // (a GPU's run welded here would blur its estimate)
  if (o.progress) o.progress(1.0);
  return mesh;
}

}  // namespace

PatchMesh tessellate(const PatchModel& model, const TessellationOptions& o, TessellationReport* rep) {
  validate(model);
  if (o.crease_angle_degrees < 0 || o.crease_angle_degrees > 180 || !std::isfinite(o.crease_angle_degrees))
    throw Error(ErrorKind::InvalidArgument, "crease angle must be within 0..180 degrees");
  if (o.tolerance < 0 || std::isnan(o.tolerance)) throw Error(ErrorKind::InvalidArgument, "tolerance must be > 0");
  if (rep) *rep = TessellationReport{};
  return o.precision == Precision::Float ? tessellate_as<float>(model, o, rep) : tessellate_as<double>(model, o, rep);
}

std::vector<double> sampled_patch_deviation(const PatchModel& model, const TessellationOptions& options,
                                            int samples_per_edge) {
  validate(model);
  SampleStore<double> store;
  return plan_deviation(plan_for(model, options), samples_per_edge, options.threads, store);
}

int uniform_resolution_for(const PatchModel& model, double tolerance, int max_resolution) {
  auto meets = [&](int n) {
    TessellationOptions o;
    o.resolution = n;
    const auto dev = sampled_patch_deviation(model, o, 4);
    return *std::max_element(dev.begin(), dev.end()) <= tolerance;
  };
  int lo = 0, hi = 1;
  while (hi <= max_resolution && !meets(hi)) lo = hi, hi *= 2;
  if (hi > max_resolution) {
    if (!meets(max_resolution)) return max_resolution + 1;
    hi = max_resolution;
  }
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (meets(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

template <class T>
BatchTiming evaluate_patch_grids(const PatchModel& model, const std::vector<std::pair<int, int>>& segments,
                                 const BatchOptions& options, PatchSamples<T>* out) {
  validate(model);
  const auto np = std::int64_t(model.patches.size());
  if (segments.size() != 1 && std::int64_t(segments.size()) != np)
    throw Error(ErrorKind::InvalidArgument, "segments: give one (nu, nv) pair or one per patch");
  Plan pl;
  pl.model = &model;
  pl.topo.flipped.assign(std::size_t(np), 0);
  pl.nu.resize(std::size_t(np));
  pl.nv.resize(std::size_t(np));
  pl.first.resize(std::size_t(np) + 1);
  std::int64_t s = 0;
  for (std::int64_t p = 0; p < np; ++p) {
    const auto [a, b] = segments.size() == 1 ? segments[0] : segments[std::size_t(p)];
    if (a < 1 || b < 1 || a > kMaxSegments || b > kMaxSegments)
      throw Error(ErrorKind::InvalidArgument, "segments " + std::to_string(a) + "x" + std::to_string(b) + " outside 1.." +
                                                  std::to_string(kMaxSegments));
    const bool tri = model.patches[p].kind == PatchKind::Triangle;
    pl.nu[p] = tri ? std::max(a, b) : a;
    pl.nv[p] = tri ? pl.nu[p] : b;
    pl.first[p] = s;
    s += tri ? std::int64_t(pl.nu[p] + 1) * (pl.nu[p] + 2) / 2 : std::int64_t(a + 1) * (b + 1);
  }
  pl.first[np] = s;
  pl.grid_samples = s;
  const auto batch = make_batch<T>(pl);
  const Device device = pick_device(options.device);
  SampleStore<T> store;
  if (device == Device::Cuda && !options.copy_back) {
    // samples stay on the device: no host arrays
    return patches::gpu::evaluate<T>(batch, options.strategy, patches::SampleViews<T>{}, false);
  }
  if (out)  // reuse the caller's arrays: no fresh pages to fault in when the sizes match
    for (int c = 0; c < 3; ++c) store.pos[c] = std::move(out->position[c]), store.nrm[c] = std::move(out->normal[c]);
  BatchTiming t = run_batch<T>(batch, store, device, options.strategy, options.threads, options.hybrid_scheme,
                               options.cpu_share);
  if (out) {
    for (int c = 0; c < 3; ++c) out->position[c] = std::move(store.pos[c]), out->normal[c] = std::move(store.nrm[c]);
    out->first = pl.first;
  }
  return t;
}

template BatchTiming evaluate_patch_grids<float>(const PatchModel&, const std::vector<std::pair<int, int>>&,
                                                 const BatchOptions&, PatchSamples<float>*);
template BatchTiming evaluate_patch_grids<double>(const PatchModel&, const std::vector<std::pair<int, int>>&,
                                                  const BatchOptions&, PatchSamples<double>*);

TriangleMesh to_triangle_mesh(const PatchMesh& pm) {
  // One output vertex per (position, normal) pair, numbered in the order of the corner that first uses it (the
  // order a single sweep over the corners would give), computed in parallel: the first corner of each position,
  // the few corners whose normal differs from that corner's (crease splits), then a scan over the corners that
  // create a vertex.
  TriangleMesh tm;
  const std::int64_t nf = pm.triangle_count(), corners = 3 * nf, nv = pm.vertex_count();
  const std::uint32_t* tri = pm.triangles.data();
  const std::uint32_t* nrm = pm.triangle_normals.data();
  constexpr std::uint64_t kNone = UINT64_MAX;
  std::vector<std::uint64_t> first(std::size_t(nv), kNone);  // first corner of each position
#pragma omp parallel for schedule(static)
  for (std::int64_t k = 0; k < corners; ++k) {
    std::atomic_ref<std::uint64_t> slot(first[tri[k]]);
    for (std::uint64_t seen = slot.load(std::memory_order_relaxed); std::uint64_t(k) < seen;)
      if (slot.compare_exchange_weak(seen, std::uint64_t(k), std::memory_order_relaxed)) break;
  }
  // Corners whose normal differs from their position's first one, in corner order; each (position, normal) pair
  // creates its vertex at its first such corner.
  std::vector<std::uint8_t> creates(static_cast<std::size_t>(corners), 0);
  std::vector<std::vector<std::int64_t>> split_parts(static_cast<std::size_t>(omp_get_max_threads()));
#pragma omp parallel
  {
    auto& mine = split_parts[std::size_t(omp_get_thread_num())];
#pragma omp for schedule(static)
    for (std::int64_t k = 0; k < corners; ++k) {
      const std::uint64_t f = first[tri[k]];
      if (f == std::uint64_t(k)) creates[std::size_t(k)] = 1;
      else if (nrm[k] != nrm[f]) mine.push_back(k);
    }
  }
  std::vector<std::int64_t> splits;
  for (auto& part : split_parts) splits.insert(splits.end(), part.begin(), part.end());
  std::sort(splits.begin(), splits.end());
  std::unordered_map<std::uint64_t, std::int64_t> split_first;  // (position << 32 | normal) -> first corner
  for (std::int64_t k : splits)
    if (split_first.try_emplace((std::uint64_t(tri[k]) << 32) | nrm[k], k).second) creates[std::size_t(k)] = 1;
  // Output vertex of each creating corner: an exclusive scan, in chunks.
  std::vector<std::uint32_t> index(static_cast<std::size_t>(corners));
  const int chunks = std::max(1, omp_get_max_threads());
  std::vector<std::uint64_t> chunk_base(std::size_t(chunks) + 1, 0);
  auto chunk_range = [&](int c) { return std::pair{corners * c / chunks, corners * (c + 1) / chunks}; };
#pragma omp parallel for schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    const auto [k0, k1] = chunk_range(c);
    std::uint64_t n = 0;
    for (std::int64_t k = k0; k < k1; ++k) n += creates[std::size_t(k)];
    chunk_base[std::size_t(c) + 1] = n;
  }
  for (int c = 0; c < chunks; ++c) chunk_base[std::size_t(c) + 1] += chunk_base[std::size_t(c)];
  const std::uint64_t outputs = chunk_base[std::size_t(chunks)];
  tm.positions.resize(std::size_t(outputs) * 3);
  tm.normals.resize(std::size_t(outputs) * 3);
#pragma omp parallel for schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    const auto [k0, k1] = chunk_range(c);
    std::uint64_t o = chunk_base[std::size_t(c)];
    for (std::int64_t k = k0; k < k1; ++k) {
      if (!creates[std::size_t(k)]) continue;
      index[std::size_t(k)] = std::uint32_t(o);
      for (int d = 0; d < 3; ++d) {
        tm.positions[std::size_t(o) * 3 + d] = float(pm.positions[std::size_t(tri[k]) * 3 + d]);
        tm.normals[std::size_t(o) * 3 + d] = float(pm.normals[std::size_t(nrm[k]) * 3 + d]);
      }
      ++o;
    }
  }
  tm.triangles.resize(std::size_t(corners));
#pragma omp parallel for schedule(static)
  for (std::int64_t k = 0; k < corners; ++k) {
    const std::uint64_t f = first[tri[k]];
    std::uint64_t from = f;  // the corner that created this corner's vertex
    if (nrm[k] != nrm[f]) from = std::uint64_t(split_first.at((std::uint64_t(tri[k]) << 32) | nrm[k]));
    tm.triangles[std::size_t(k)] = index[std::size_t(from)];
  }
  tm.face_groups.assign(pm.face_group.begin(), pm.face_group.end());
  tm.group_names = pm.group_names;
  return tm;
}

}  // namespace parasurf
