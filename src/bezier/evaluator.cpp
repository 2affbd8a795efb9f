// Orchestration of surface evaluation: validation, method choice, level 3 and the control net of the multi-level
// cache (Palomar et al., Sect. 4), and the choice of backend (CPU, CUDA, or both: hybrid.cpp, Sect. 5.2).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/backends.hpp"
#include "bezier/auto_device.hpp"
#include "bezier/backend.hpp"
#include "core/memory.hpp"
#include "parasurf/bezier.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

using bezier::Job;
using Clock = std::chrono::steady_clock;

namespace {
// A one-shot call (evaluate_grid, evaluate_points) makes and drops its evaluator around the evaluation: on a GPU,
// making the evaluator's buffers and freeing them cost about as much as a small grid's evaluation, so auto, learning
// from the evaluation alone, kept small one-shot grids on a GPU that took 2.7-4.5x the CPU's time. Such calls learn
// from their whole time; the evaluation inside hands them its lesson.
struct DeferredLesson {
  bool defer = false, ready = false;
  bezier::AutoJob job;
  Device device = Device::Cpu;
  double transfer_seconds = 0;
};
thread_local DeferredLesson t_lesson;

void learn_or_defer(const bezier::AutoJob& job, Device device, double seconds, double transfer_seconds) {
  if (!t_lesson.defer) return bezier::learn_from_run(job, device, seconds, transfer_seconds);
  t_lesson.ready = true;
  t_lesson.job = job;
  t_lesson.device = device;
  t_lesson.transfer_seconds = transfer_seconds;
}
}  // namespace

template <class T>
struct SurfaceEvaluator<T>::State {
  MleCounters counters;
  // level 3
  int binom_m = -1, binom_n = -1;
  kern::BinomialRows binom_u{}, binom_v{};
  // level 1 inputs
  std::vector<T> net;              // homogeneous control net in T
  std::vector<double> net_double;  // homogeneous control net in double (matrix tiles)
  std::vector<T> power;            // matrix tiles in T
  // one backend per device asked for (Cpu, Cuda, Hybrid), each with its caches
  std::unique_ptr<bezier::Backend<T>> backends[3];

  bezier::Backend<T>& backend(Device device) {
    const int at = device == Device::Cpu ? 0 : device == Device::Cuda ? 1 : 2;
    if (!backends[at]) backends[at] = bezier::make_backend<T>(device);
    return *backends[at];
  }
};

namespace bezier {
template <class T> std::unique_ptr<Backend<T>> make_backend(Device device) {
  if (device == Device::Cpu) return std::make_unique<CpuBackend<T>>();
  if constexpr (core::kCudaBuilt)
    return device == Device::Hybrid ? make_hybrid_backend<T>() : make_cuda_backend<T>();
  else
    core::no_cuda_backend(std::string("surfaces on ") + device_name(device));
}
template std::unique_ptr<Backend<float>> make_backend<float>(Device);
template std::unique_ptr<Backend<double>> make_backend<double>(Device);
}  // namespace bezier

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

// The call as auto's estimate sees it: points, the net, the outputs' bytes and where they lie.
template <class T>
bezier::AutoJob auto_job(const BezierSurface& surface, std::int64_t points, const kern::OutView<T>& out, int threads) {
  bezier::AutoJob job;
  job.points = points;
  job.control_points = surface.control_point_count();
  job.doubles = sizeof(T) == 8;
  job.threads = threads;
  const T* const* kinds[] = {out.p, out.du, out.dv, out.nrm, out.duu, out.duv, out.dvv};
  const void* first = out.flag;
  for (const T* const* k : kinds)
    for (int c = 0; c < 3; ++c)
      if (k[c]) {
        job.bytes_home += double(points) * sizeof(T);
        if (!first) first = k[c];
      }
  if (out.flag) job.bytes_home += double(points);
  job.outputs_on_gpu = core::gpu_holding(first);
  return job;
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
  job.binom_u = &st.binom_u;
  job.binom_v = &st.binom_v;
  if (method == Method::Matrix) {
    auto tiles = bezier::build_power_tiles(m, n, job.nc, st.net_double.data());
    st.power.assign(tiles.g.begin(), tiles.g.end());
    job.power = {m, n, tiles.ku, tiles.kv, st.power.data()};
    job.power_tiles = &st.power;
  }
  return job;
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
  const kern::OutView<T> host_out = out_view(out);
  const bool weigh = options_.device == Device::Auto && !options_.skip_copy_back;
  const bezier::AutoJob auto_of = weigh ? auto_job(surface, grid.count(), host_out, options_.threads) : bezier::AutoJob{};
  const Device device =
      weigh ? bezier::choose_device(auto_of, &report_.device_choice) : resolve_device(options_.device);
  Job<T> job = prepare_job<T>(surface, request, method, st);
  job.rows = grid.rows;
  job.cols = grid.cols;
  report_.method_used = method;
  report_.device_used = device;

  st.counters.level2_builds += st.backend(device).evaluate_grid(job, host_out, options_, report_);
  ++st.counters.level1_runs;
  report_.seconds_total = seconds_since(t0);
  if (weigh) learn_or_defer(auto_of, device, report_.seconds_total, report_.seconds_transfer);
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
  const kern::OutView<T> host_out = out_view(out);
  const bool weigh = options_.device == Device::Auto && !options_.skip_copy_back && count > 0;
  const bezier::AutoJob auto_of = weigh ? auto_job(surface, count, host_out, options_.threads) : bezier::AutoJob{};
  const Device device =
      weigh ? bezier::choose_device(auto_of, &report_.device_choice) : resolve_device(options_.device);
  Job<T> job = prepare_job<T>(surface, request, method, st);
  job.uv = uv.data();
  job.point_count = count;
  report_.method_used = method;
  report_.device_used = device == Device::Hybrid ? Device::Cuda : device;  // a point list is one launch: no tiles
  if (count > 0) st.backend(device).evaluate_points(job, host_out, options_, report_);
  report_.seconds_total = seconds_since(t0);
  if (weigh) learn_or_defer(auto_of, device, report_.seconds_total, report_.seconds_transfer);
}

namespace {
// A one-shot call: an evaluator made for `call` and dropped after it; auto learns from the whole (see DeferredLesson).
template <class T, class Call>
SurfaceSamples<T> one_shot(const EvalOptions& options, EvalReport* report, Call call) {
  const auto t0 = Clock::now();
  struct Scope {  // (the lesson is cleared however the call ends)
    Scope() { t_lesson = {}, t_lesson.defer = true; }
    ~Scope() { t_lesson = {}; }
  } scope;
  SurfaceSamples<T> s;
  EvalReport r;
  {
    SurfaceEvaluator<T> ev(options);
    s = call(ev);
    r = ev.last_report();
  }
  if (t_lesson.ready)
    bezier::learn_from_run(t_lesson.job, t_lesson.device, seconds_since(t0), t_lesson.transfer_seconds);
  if (report) *report = r;
  return s;
}
}  // namespace

template <class T>
SurfaceSamples<T> evaluate_grid(const BezierSurface& surface, GridSpec grid, EvalRequest request,
                                const EvalOptions& options, EvalReport* report) {
  return one_shot<T>(options, report,
                     [&](SurfaceEvaluator<T>& ev) { return ev.evaluate_grid(surface, grid, request); });
}

template <class T>
SurfaceSamples<T> evaluate_points(const BezierSurface& surface, std::span<const double> uv, EvalRequest request,
                                  const EvalOptions& options, EvalReport* report) {
  return one_shot<T>(options, report,
                     [&](SurfaceEvaluator<T>& ev) { return ev.evaluate_points(surface, uv, request); });
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
