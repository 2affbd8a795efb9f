// Orchestration of surface evaluation: validation, method choice, the multi-level cache (Palomar et al.,
// Sect. 4), and the CPU, CUDA and heterogeneous CPU+GPU schemes (static and dynamic distribution, Sect. 5.2).
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "core/backends.hpp"
#include "bezier/backend.hpp"
#include "bezier/cuda_backend.hpp"
#include "core/memory.hpp"
#include "parasurf/bezier.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

using bezier::Job;
using Clock = std::chrono::steady_clock;

template <class T>
struct SurfaceEvaluator<T>::State {
  MleCounters counters;
  // level 3
  int binom_m = -1, binom_n = -1;
  kern::BinomialRows binom_u{}, binom_v{};
  // level 2 on the host
  struct TableKey {
    int m = -1, n = -1, order = -1;
    std::int64_t rows = -1, cols = -1;
    bool operator==(const TableKey&) const = default;
  } table_key;
  std::vector<T> bu, dbu, ddbu, bv, dbv, ddbv;
  // level 1 inputs
  std::vector<T> net;                  // homogeneous control net in T
  std::vector<double> net_double;      // homogeneous control net in double (matrix tiles)
  std::vector<T> power;                // matrix tiles in T
  std::vector<T> q, qv, qvv;           // factored stage 1 (host)
  // hybrid: calibrated CPU share per configuration
  TableKey share_key;
  Method share_method = Method::Auto;
  double share = -1;
  bezier::cuda::Context* cuda = nullptr;

  ~State() {
    if constexpr (core::kCudaBuilt) bezier::cuda::destroy_context(cuda);
  }
  bezier::cuda::Context* gpu() {
    if constexpr (core::kCudaBuilt) {
      if (!cuda) cuda = bezier::cuda::create_context();
      return cuda;
    } else {
      core::no_cuda_backend("surfaces on cuda");
    }
  }
};

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <class T>
kern::OutView<T> out_view(const SampleSpans<T>& s) {
  kern::OutView<T> o;
  for (int c = 0; c < 3; ++c) {
    o.p[c] = s.position[c];
    o.du[c] = s.du[c];
    o.dv[c] = s.dv[c];
    o.nrm[c] = s.normal[c];
    o.duu[c] = s.duu[c];
    o.duv[c] = s.duv[c];
    o.dvv[c] = s.dvv[c];
  }
  o.flag = s.degenerate;
  return o;
}

template <class T>
void check_spans(const SampleSpans<T>& out, std::int64_t count, const EvalRequest& r) {
  auto need = [&](const std::array<T*, 3>& a, bool wanted, const char* what) {
    if (!wanted) return;
    for (T* p : a)
      if (!p) throw Error(ErrorKind::InvalidArgument, std::string("output '") + what + "' requested but not provided");
  };
  if (out.count < count)
    throw Error(ErrorKind::InvalidArgument, "output spans hold " + std::to_string(out.count) + " samples, " +
                                                std::to_string(count) + " needed");
  need(out.position, r.positions, "position");
  need(out.du, r.first_derivatives, "du");
  need(out.dv, r.first_derivatives, "dv");
  need(out.normal, r.normals, "normal");
  need(out.duu, r.second_derivatives, "duu");
  need(out.duv, r.second_derivatives, "duv");
  need(out.dvv, r.second_derivatives, "dvv");
  if (r.normals && !out.degenerate) throw Error(ErrorKind::InvalidArgument, "normals requested without flag array");
}

// Non-requested outputs must stay null so that kernels skip them.
template <class T>
SampleSpans<T> masked(SampleSpans<T> s, const EvalRequest& r) {
  if (!r.positions) s.position = {};
  if (!r.first_derivatives) s.du = s.dv = {};
  if (!r.normals) {
    s.normal = {};
    s.degenerate = nullptr;
  }
  if (!r.second_derivatives) s.duu = s.duv = s.dvv = {};
  return s;
}

}  // namespace

template <class T>
SurfaceEvaluator<T>::SurfaceEvaluator(EvalOptions options) : options_(options), state_(new State) {}
template <class T>
SurfaceEvaluator<T>::~SurfaceEvaluator() {
  delete state_;
}
template <class T>
const MleCounters& SurfaceEvaluator<T>::mle_counters() const {
  return state_->counters;
}

template <class T>
SurfaceSamples<T> SurfaceEvaluator<T>::evaluate_grid(const BezierSurface& surface, GridSpec grid,
                                                     EvalRequest request) {
  if (grid.rows < 2 || grid.cols < 2 || grid.rows > kMaxGridSide || grid.cols > kMaxGridSide)
    throw Error(ErrorKind::InvalidArgument, "grid resolution " + std::to_string(grid.rows) + "x" +
                                                std::to_string(grid.cols) + " is outside 2.." +
                                                std::to_string(kMaxGridSide) + " per direction");
  auto samples = allocate_samples<T>(grid.count(), request);
  evaluate_grid_into(surface, grid, request, spans_of(samples));
  return samples;
}

template <class T>
SurfaceSamples<T> SurfaceEvaluator<T>::evaluate_points(const BezierSurface& surface, std::span<const double> uv,
                                                       EvalRequest request) {
  auto samples = allocate_samples<T>(std::int64_t(uv.size() / 2), request);
  evaluate_points_into(surface, uv, request, spans_of(samples));
  return samples;
}

// Shared preparation: validation, level 3, homogeneous net, method-specific level-1 inputs.
template <class T>
static Job<T> prepare_job(const BezierSurface& surface, const EvalRequest& request, Method method,
                          typename SurfaceEvaluator<T>::State& st) {
  validate(surface);
  if (!request.positions && request.order() == 0)
    throw Error(ErrorKind::InvalidArgument, "nothing requested: ask for positions, derivatives or normals");
  Job<T> job;
  job.method = method;
  job.nc = surface.rational() ? 4 : 3;
  job.order = request.order();
  const int m = surface.degree_u, n = surface.degree_v;
  if (st.binom_m != m || st.binom_n != n) {
    kern::fill_binomial_rows(m, &st.binom_u);
    kern::fill_binomial_rows(n, &st.binom_v);
    st.binom_m = m;
    st.binom_n = n;
    ++st.counters.level3_builds;
  }
  const std::size_t count = std::size_t(surface.control_point_count());
  st.net.resize(count * job.nc);
  st.net_double.resize(count * job.nc);
  for (std::size_t k = 0; k < count; ++k) {
    const double w = surface.rational() ? surface.weights[k] : 1.0;
    for (int c = 0; c < 3; ++c) st.net_double[k * job.nc + c] = surface.points[3 * k + c] * w;
    if (job.nc == 4) st.net_double[k * job.nc + 3] = w;
  }
  for (std::size_t k = 0; k < st.net.size(); ++k) st.net[k] = T(st.net_double[k]);
  job.net = {m, n, st.net.data()};
  if (method == Method::Matrix) {
    auto tiles = bezier::build_power_tiles(m, n, job.nc, st.net_double.data());
    st.power.assign(tiles.g.begin(), tiles.g.end());
    job.power = {m, n, tiles.ku, tiles.kv, st.power.data()};
  }
  return job;
}

template <class T>
static bezier::cuda::Inputs<T> cuda_inputs(const Job<T>& job, const typename SurfaceEvaluator<T>::State& st,
                                           const EvalOptions& options) {
  bezier::cuda::Inputs<T> in;
  in.method = job.method;
  in.nc = job.nc;
  in.order = job.order;
  in.m = job.net.m;
  in.n = job.net.n;
  in.host_net = job.net.P;
  in.power = &st.power;
  in.power_ku = job.power.ku;
  in.power_kv = job.power.kv;
  in.binom_u = &st.binom_u;
  in.binom_v = &st.binom_v;
  in.rows = job.rows;
  in.cols = job.cols;
  in.uv = job.uv;
  in.point_count = job.point_count;
  in.poison = options.poison_device_buffers;
  in.launch_bytes = options.gpu_launch_bytes;
  in.tensor_cores = options.gpu_tensor_cores;
  in.fold_rows = options.gpu_fold_rows;
  return in;
}

// Level 2 and stage 1 on the host (for the CPU share of any scheme).
template <class T>
static void prepare_host_grid(Job<T>& job, typename SurfaceEvaluator<T>::State& st, int threads) {
  if (job.method != Method::Mle && job.method != Method::Factored) return;
  const int m = job.net.m, n = job.net.n;
  typename SurfaceEvaluator<T>::State::TableKey key{m, n, job.order, job.rows, job.cols};
  if (!(key == st.table_key)) {
    const auto mu = std::size_t(m + 1), nv = std::size_t(n + 1);
    core::check_host_allocation(sizeof(T) * 3 * (mu * job.rows + nv * job.cols), "the Bernstein tables");
    st.bu.resize(mu * job.rows);
    st.dbu.resize(job.order >= 1 ? mu * job.rows : 0);
    st.ddbu.resize(job.order >= 2 ? mu * job.rows : 0);
    st.bv.resize(nv * job.cols);
    st.dbv.resize(job.order >= 1 ? nv * job.cols : 0);
    st.ddbv.resize(job.order >= 2 ? nv * job.cols : 0);
    bezier::cpu::build_tables<T>(m, job.rows, job.order, st.binom_u, st.bu.data(), st.dbu.data(), st.ddbu.data(),
                                 threads);
    bezier::cpu::build_tables<T>(n, job.cols, job.order, st.binom_v, st.bv.data(), st.dbv.data(), st.ddbv.data(),
                                 threads);
    st.table_key = key;
    ++st.counters.level2_builds;
  }
  job.tables = {st.bu.data(), st.dbu.data(), st.ddbu.data(), st.bv.data(), st.dbv.data(), st.ddbv.data()};
  if (job.method == Method::Factored) {
    const std::size_t sz = std::size_t(m + 1) * job.nc * job.cols;
    st.q.resize(sz);
    st.qv.resize(job.order >= 1 ? sz : 0);
    st.qvv.resize(job.order >= 2 ? sz : 0);
    job.columns = bezier::cpu::build_factored_columns<T>(job, st.q.data(), st.qv.data(), st.qvv.data(), threads);
  }
}

// Heterogeneous evaluation over row tiles: the GPU takes tiles from the front, CPU threads from the back.
// Static: the split is fixed beforehand (--cpu-share, or profiled). Dynamic: both sides claim tiles on the
// fly and meet through per-tile flags in host-mapped memory (cuda_backend.hpp, DynamicTiles).
template <class T>
static void evaluate_hybrid(typename SurfaceEvaluator<T>::State& st, const EvalOptions& options_, EvalReport& report_,
                            Job<T>& job, GridSpec grid, const EvalRequest& request, const kern::OutView<T>& host_out,
                            int threads) {
  using State = typename SurfaceEvaluator<T>::State;
  prepare_host_grid(job, st, threads);
  auto in = cuda_inputs(job, st, options_);
  const std::int64_t tile_rows = options_.tile_rows > 0 ? options_.tile_rows : 64;
  const std::int64_t tiles = (grid.rows + tile_rows - 1) / tile_rows;
  const std::uint64_t total_bytes = sample_bytes(grid.count(), request, sizeof(T));
  if (total_bytes > std::uint64_t(0.8 * double(bezier::cuda::free_device_memory())))
    throw Error(ErrorKind::OutOfMemory, "hybrid evaluation keeps the whole output (" + core::format_bytes(total_bytes) +
                                            ") on the device; it does not fit, use --device cuda (chunked)");
  std::int64_t cpu_tiles = 0;
  if (options_.hybrid_scheme == HybridScheme::Static) {
    double share = options_.cpu_share;
    if (share < 0) {
      typename State::TableKey key{job.net.m, job.net.n, job.order, job.rows, job.cols};
      if (!(key == st.share_key) || st.share_method != job.method || st.share < 0) {
        // Profile: time the CPU on a few tiles and the GPU (kernel + copy) on a fifth of the grid.
        const std::int64_t cpu_rows = std::min(grid.rows, std::max<std::int64_t>(tile_rows, grid.rows / 64));
        auto t = Clock::now();
        bezier::cpu::evaluate_grid_rows<T>(job, grid.rows - cpu_rows, grid.rows, host_out, threads);
        const double cpu_per_row = seconds_since(t) / double(cpu_rows);
        const std::int64_t gpu_rows = std::max<std::int64_t>(tile_rows, grid.rows / 5);
        bezier::cuda::launch_grid<T>(st.gpu(), in, 0, gpu_rows, host_out, false, 0);  // warm-up, level 2
        bezier::cuda::finish_grid<T>(st.gpu(), 0, 0, host_out, nullptr);
        t = Clock::now();
        bezier::cuda::launch_grid<T>(st.gpu(), in, 0, gpu_rows, host_out, false, 0);
        bezier::cuda::finish_grid<T>(st.gpu(), 0, gpu_rows, host_out, nullptr);
        const double gpu_per_row = seconds_since(t) / double(gpu_rows);
        st.share = gpu_per_row / (gpu_per_row + cpu_per_row);
        st.share_key = key;
        st.share_method = job.method;
      }
      share = st.share;
    }
    share = std::clamp(share, 0.0, 1.0);
    cpu_tiles = std::min<std::int64_t>(tiles, std::llround(share * double(tiles)));
    const std::int64_t split = std::min(grid.rows, (tiles - cpu_tiles) * tile_rows);
    if (split > 0 && bezier::cuda::launch_grid<T>(st.gpu(), in, 0, split, host_out, false, 0))
      ++st.counters.level2_builds;
    if (split < grid.rows) bezier::cpu::evaluate_grid_rows<T>(job, split, grid.rows, host_out, threads);
    if (split > 0) bezier::cuda::finish_grid<T>(st.gpu(), 0, split, host_out, &report_);
  } else {
    const bezier::cuda::DynamicTiles dyn = bezier::cuda::dynamic_tiles(st.gpu(), tiles);
    if (bezier::cuda::launch_grid<T>(st.gpu(), in, 0, grid.rows, host_out, true, tile_rows))
      ++st.counters.level2_builds;
    // Each CPU thread claims one tile at a time from the back and evaluates it alone.
    std::atomic<std::int64_t> back{0};
    auto flag = [](volatile std::uint32_t* p) { return std::atomic_ref<std::uint32_t>(*const_cast<std::uint32_t*>(p)); };
    auto evaluate_tile = [&](std::int64_t tile) {
      const std::int64_t r0 = tile * tile_rows, r1 = std::min(grid.rows, r0 + tile_rows);
      bezier::cpu::evaluate_grid_rows<T>(job, r0, r1, host_out, 1);
    };
#pragma omp parallel num_threads(threads)
    {
      for (;;) {
        const std::int64_t tile = tiles - 1 - back.fetch_add(1);
        if (tile < 0) break;
        flag(dyn.cpu_claim + tile).store(1u);                   // seq_cst store, then
        if (flag(dyn.gpu_claim + tile).load() != 0u) break;     // seq_cst load: met the GPU
        flag(dyn.owner + tile).store(2u);
        evaluate_tile(tile);
      }
    }
    bezier::cuda::finish_grid<T>(st.gpu(), 0, 0, host_out, &report_);  // the kernel is done
    // Copy back the GPU's tiles (runs of consecutive tiles), finish the tiles both sides let go.
    std::vector<std::int64_t> orphans;
    for (std::int64_t t = 0; t < tiles;) {
      const std::uint32_t o = dyn.owner[t];
      std::int64_t e = t + 1;
      while (e < tiles && dyn.owner[e] == o) ++e;
      if (o == 1u) bezier::cuda::finish_grid<T>(st.gpu(), t * tile_rows, std::min(grid.rows, e * tile_rows), host_out, &report_);
      if (o == 2u) cpu_tiles += e - t;
      if (o == 0u)
        for (std::int64_t k = t; k < e; ++k) orphans.push_back(k);
      t = e;
    }
#pragma omp parallel for num_threads(threads)
    for (std::size_t k = 0; k < orphans.size(); ++k) evaluate_tile(orphans[k]);
    cpu_tiles += std::int64_t(orphans.size());
  }
  report_.tiles_cpu = cpu_tiles;
  report_.tiles_gpu = tiles - cpu_tiles;
  report_.cpu_share_used = double(cpu_tiles) / double(tiles);
}

template <class T>
void SurfaceEvaluator<T>::evaluate_grid_into(const BezierSurface& surface, GridSpec grid, EvalRequest request,
                                             SampleSpans<T> out) {
  const auto t0 = Clock::now();
  report_ = {};
  if (grid.rows < 2 || grid.cols < 2 || grid.rows > kMaxGridSide || grid.cols > kMaxGridSide)
    throw Error(ErrorKind::InvalidArgument, "grid resolution " + std::to_string(grid.rows) + "x" +
                                                std::to_string(grid.cols) + " is outside 2.." +
                                                std::to_string(kMaxGridSide) + " per direction");
  check_spans(out, grid.count(), request);
  out = masked(out, request);
  State& st = *state_;
  const Method method = options_.method == Method::Auto ? Method::Factored : options_.method;
  const Device device = resolve_device(options_.device);
  const int threads = cpu_thread_count(options_.threads);
  Job<T> job = prepare_job<T>(surface, request, method, st);
  job.rows = grid.rows;
  job.cols = grid.cols;
  const kern::OutView<T> host_out = out_view(out);
  report_.method_used = method;
  report_.device_used = device;

  if (device == Device::Cpu) {
    prepare_host_grid(job, st, threads);
    bezier::cpu::evaluate_grid_rows<T>(job, 0, grid.rows, host_out, threads);
  } else if constexpr (!core::kCudaBuilt) {
    core::no_cuda_backend(std::string("surfaces on ") + device_name(device));
  } else if (device == Device::Cuda) {
    auto in = cuda_inputs(job, st, options_);
    // Rows per launch so that the device outputs fit in 80% of free device memory.
    const std::uint64_t row_bytes = sample_bytes(grid.cols, request, sizeof(T));
    const std::uint64_t free_bytes = bezier::cuda::free_device_memory();
    std::int64_t chunk = std::max<std::int64_t>(1, std::int64_t(0.8 * double(free_bytes) / double(row_bytes)));
    chunk = std::min(chunk, grid.rows);
    for (std::int64_t r0 = 0; r0 < grid.rows; r0 += chunk) {
      const std::int64_t r1 = std::min(grid.rows, r0 + chunk);
      if (bezier::cuda::launch_grid<T>(st.gpu(), in, r0, r1, host_out, false, 0)) ++st.counters.level2_builds;
      bezier::cuda::finish_grid<T>(st.gpu(), r0, options_.skip_copy_back ? r0 : r1,
                                   host_out, &report_);
    }
  } else {
    evaluate_hybrid<T>(st, options_, report_, job, grid, request, host_out, threads);
  }
  ++st.counters.level1_runs;
  report_.seconds_total = seconds_since(t0);
}

template <class T>
void SurfaceEvaluator<T>::evaluate_points_into(const BezierSurface& surface, std::span<const double> uv,
                                               EvalRequest request, SampleSpans<T> out) {
  const auto t0 = Clock::now();
  report_ = {};
  if (uv.size() % 2 != 0) throw Error(ErrorKind::InvalidArgument, "(u,v) list has an odd number of values");
  const std::int64_t count = std::int64_t(uv.size() / 2);
  for (std::size_t k = 0; k < uv.size(); ++k)
    if (!(uv[k] >= 0.0 && uv[k] <= 1.0))
      throw Error(ErrorKind::InvalidArgument, "parameter " + std::to_string(k / 2) + " (" +
                                                  (k % 2 ? "v" : "u") + " = " + std::to_string(uv[k]) +
                                                  ") is outside [0,1] or not a number");
  check_spans(out, count, request);
  out = masked(out, request);
  State& st = *state_;
  const Method method = options_.method == Method::Auto ? Method::Factored : options_.method;
  Device device = resolve_device(options_.device);
  if (device == Device::Hybrid) device = Device::Cuda;  // a point list is one launch; no tiles to share
  Job<T> job = prepare_job<T>(surface, request, method, st);
  job.uv = uv.data();
  job.point_count = count;
  report_.method_used = method;
  report_.device_used = device;
  const kern::OutView<T> host_out = out_view(out);
  if (count > 0) {
    if (device == Device::Cpu)
      bezier::cpu::evaluate_point_list<T>(job, host_out, cpu_thread_count(options_.threads));
    else if constexpr (core::kCudaBuilt)
      bezier::cuda::evaluate_points<T>(st.gpu(), cuda_inputs(job, st, options_), host_out, &report_);
    else
      core::no_cuda_backend("surface points on cuda");
  }
  report_.seconds_total = seconds_since(t0);
}

template <class T>
SurfaceSamples<T> evaluate_grid(const BezierSurface& surface, GridSpec grid, EvalRequest request,
                                const EvalOptions& options, EvalReport* report) {
  SurfaceEvaluator<T> ev(options);
  auto s = ev.evaluate_grid(surface, grid, request);
  if (report) *report = ev.last_report();
  return s;
}

template <class T>
SurfaceSamples<T> evaluate_points(const BezierSurface& surface, std::span<const double> uv, EvalRequest request,
                                  const EvalOptions& options, EvalReport* report) {
  SurfaceEvaluator<T> ev(options);
  auto s = ev.evaluate_points(surface, uv, request);
  if (report) *report = ev.last_report();
  return s;
}

template class SurfaceEvaluator<float>;
template class SurfaceEvaluator<double>;
template SurfaceSamples<float> evaluate_grid<float>(const BezierSurface&, GridSpec, EvalRequest, const EvalOptions&,
                                                    EvalReport*);
template SurfaceSamples<double> evaluate_grid<double>(const BezierSurface&, GridSpec, EvalRequest,
                                                      const EvalOptions&, EvalReport*);
template SurfaceSamples<float> evaluate_points<float>(const BezierSurface&, std::span<const double>, EvalRequest,
                                                      const EvalOptions&, EvalReport*);
template SurfaceSamples<double> evaluate_points<double>(const BezierSurface&, std::span<const double>, EvalRequest,
                                                        const EvalOptions&, EvalReport*);

}  // namespace parasurf
