// CPU threads and the GPU on one patch batch: the static and dynamic distributions of Palomar et al. 2017
// (Sect. 5.2), over contiguous runs of patches instead of output tiles. The GPU side evaluates its runs as
// sub-batches (control points copied once) and copies each run's samples straight to their place in the host
// outputs; the CPU side evaluates its runs in place with the remaining threads.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "core/backends.hpp"
#include "parasurf/error.hpp"
#include "patches/assemble.hpp"
#include "patches/batch.hpp"

namespace parasurf::patches::hybrid {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <class T> SampleViews<T> offset(const SampleViews<T>& v, std::int64_t by) {
  SampleViews<T> o;
  for (int c = 0; c < 3; ++c) o.pos[c] = v.pos[c] + by, o.nrm[c] = v.nrm[c] + by;
  return o;
}

// A batch's records and listed points as runs: first sample of each record, and the point range of a record run.
template <class T> struct Runs {
  const HostBatch<T>& b;
  std::int64_t records() const { return std::int64_t(b.records.size()); }
  std::int64_t first(std::int64_t r) const { return r < records() ? b.records[std::size_t(r)].first : b.samples; }
  std::int64_t point(std::int64_t r) const {
    return std::int64_t(std::lower_bound(b.point_patch.begin(), b.point_patch.end(), r) - b.point_patch.begin());
  }
  std::int64_t samples(std::int64_t ra, std::int64_t rb) const { return first(rb) - first(ra) + point(rb) - point(ra); }
  // the record where [r, rb) holds about `share` of the samples of [ra, rb)
  std::int64_t split(std::int64_t ra, std::int64_t rb, double share) const {
    const double want = (1.0 - std::clamp(share, 0.0, 1.0)) * double(samples(ra, rb));
    std::int64_t lo = ra, hi = rb;
    while (lo < hi) {
      const std::int64_t mid = (lo + hi) / 2;
      if (double(samples(ra, mid)) < want) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  // chunk boundaries: `count` runs of about equal sample counts
  std::vector<std::int64_t> chunks(int count) const {
    std::vector<std::int64_t> bounds{0};
    for (int k = 1; k < count; ++k) bounds.push_back(std::max(bounds.back(), split(0, records(), 1.0 - double(k) / count)));
    bounds.push_back(records());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    return bounds;
  }
};

// The GPU's side: its runs as sub-batches that share one copy of the control points.
template <class T> class GpuSide {
 public:
  GpuSide(const HostBatch<T>& b, PatchStrategy strategy, const SampleViews<T>& out) : runs_{b}, strategy_(strategy), out_(out) {
    sub_.max_degree = b.max_degree;
  }
  void evaluate(std::int64_t ra, std::int64_t rb) {
    if (ra >= rb) return;
    const HostBatch<T>& b = runs_.b;
    const std::int64_t base = runs_.first(ra), xa = runs_.point(ra), xb = runs_.point(rb);
    sub_.records.assign(b.records.begin() + ra, b.records.begin() + rb);
    // only the control points the run reads go up (a square net of the larger degree bounds every kind's count)
    const auto points = std::int64_t(b.points.size() / 4), normals = std::int64_t(b.normal_points.size() / 3);
    std::int64_t lo = points, hi = 0, nlo = normals, nhi = 0;
    for (const auto& r : sub_.records) {
      const std::int64_t side = std::max(r.du, r.dv) + 1, nside = std::max(r.ndu, r.ndv) + 1;
      lo = std::min(lo, r.cp), hi = std::max(hi, std::min(points, r.cp + side * side));
      if (r.flags & patchk::kNormalPatch) nlo = std::min(nlo, r.ncp), nhi = std::max(nhi, std::min(normals, r.ncp + nside * nside));
    }
    lo = std::min(lo, hi), nlo = std::min(nlo, nhi);
    sub_.points.assign(b.points.begin() + 4 * lo, b.points.begin() + 4 * hi);
    sub_.normal_points.assign(b.normal_points.begin() + 3 * nlo, b.normal_points.begin() + 3 * nhi);
    for (auto& r : sub_.records) {
      r.first -= base;
      r.cp -= lo;
      if (r.flags & patchk::kNormalPatch) r.ncp -= nlo;
    }
    sub_.samples = runs_.first(rb) - base;
    sub_.point_patch.clear();
    for (std::int64_t x = xa; x < xb; ++x) sub_.point_patch.push_back(b.point_patch[std::size_t(x)] - ra);
    sub_.point_uv.assign(b.point_uv.begin() + 2 * xa, b.point_uv.begin() + 2 * xb);
    gpu::evaluate<T>(sub_, strategy_, SampleViews<T>{}, false, [&](const SampleViews<T>& on_device) {
      gpu::download<T>(on_device, offset(out_, base), sub_.samples);
      gpu::download<T>(offset(on_device, sub_.samples), offset(out_, b.samples + xa), xb - xa);
      return true;
    });
  }

 private:
  Runs<T> runs_;
  PatchStrategy strategy_;
  SampleViews<T> out_;
  HostBatch<T> sub_;
};

}  // namespace

template <class T>
BatchTiming evaluate(const HostBatch<T>& batch, PatchStrategy strategy, const SampleViews<T>& out, int threads,
                     HybridScheme scheme, double cpu_share) {
  const auto t0 = Clock::now();
  const Runs<T> runs{batch};
  const int cpu_threads = std::max(1, threads - 1);  // one core drives the GPU
  GpuSide<T> gpu(batch, strategy, out);
  std::int64_t cpu_samples = 0;
  std::exception_ptr gpu_failure;  // read after join
  std::atomic<bool> gpu_failed{false};  // read by the CPU side while the GPU side runs
  auto on_gpu = [&](auto&& work) {
    return std::jthread([&, work] {  // joins on the way out, also when the CPU side throws
      try {
        work();
      } catch (...) {
        gpu_failure = std::current_exception();
        gpu_failed = true;
      }
    });
  };
  auto on_cpu = [&](std::int64_t ra, std::int64_t rb) {
    cpu::evaluate_range(batch, out, cpu_threads, ra, rb, runs.point(ra), runs.point(rb));
    cpu_samples += runs.samples(ra, rb);
  };
  const std::int64_t n = runs.records();
  if (scheme == HybridScheme::Static) {
    std::int64_t ra = 0, rb = n;
    if (cpu_share < 0 && n >= 2) {
      // profiling round: the GPU takes the first 32nd of the samples, the CPU the last, at the same time
      const auto bounds = runs.chunks(32);
      const std::int64_t g1 = bounds[1], c0 = bounds[bounds.size() - 2];
      double gpu_seconds = 0, cpu_seconds = 0;
      std::jthread g = on_gpu([&] {
        const auto s0 = Clock::now();
        gpu.evaluate(0, g1);
        gpu_seconds = since(s0);
      });
      const auto s0 = Clock::now();
      if (c0 > g1) on_cpu(c0, n);
      cpu_seconds = since(s0);
      g.join();
      if (gpu_failure) std::rethrow_exception(gpu_failure);
      const double gpu_rate = double(runs.samples(0, g1)) / std::max(gpu_seconds, 1e-9);
      const double cpu_rate = c0 > g1 ? double(runs.samples(c0, n)) / std::max(cpu_seconds, 1e-9) : 0.0;
      cpu_share = cpu_rate / std::max(cpu_rate + gpu_rate, 1e-30);
      ra = g1;
      rb = c0 > g1 ? c0 : n;
    }
    const std::int64_t k = runs.split(ra, rb, std::max(cpu_share, 0.0));
    std::jthread g = on_gpu([&] { gpu.evaluate(ra, k); });
    if (k < rb) on_cpu(k, rb);
    g.join();
    if (gpu_failure) std::rethrow_exception(gpu_failure);
  } else {
    // dynamic: the GPU takes half of what is left from the front, the CPU one chunk at a time from the back
    const auto bounds = runs.chunks(64);
    std::mutex guard;
    std::size_t front = 0, back = bounds.size() - 1;
    std::jthread g = on_gpu([&] {
      for (;;) {
        std::size_t a, z;
        {
          const std::lock_guard<std::mutex> lock(guard);
          if (front >= back) return;
          a = front;
          z = front + std::max<std::size_t>(1, (back - front) / 2);
          front = z;
        }
        gpu.evaluate(bounds[a], bounds[z]);
      }
    });
    for (;;) {
      std::size_t k;
      {
        const std::lock_guard<std::mutex> lock(guard);
        if (front >= back || gpu_failed) break;
        k = --back;
      }
      on_cpu(bounds[k], bounds[k + 1]);
    }
    g.join();
    if (gpu_failure) std::rethrow_exception(gpu_failure);
  }
  BatchTiming t;
  t.kernel_seconds = t.total_seconds = since(t0);
  t.device = Device::Hybrid;
  t.strategy = strategy == PatchStrategy::Auto ? PatchStrategy::Tables : strategy;
  t.cpu_share = double(cpu_samples) / double(std::max<std::int64_t>(runs.samples(0, n), 1));
  return t;
}

template BatchTiming evaluate<float>(const HostBatch<float>&, PatchStrategy, const SampleViews<float>&, int, HybridScheme,
                                     double);
template BatchTiming evaluate<double>(const HostBatch<double>&, PatchStrategy, const SampleViews<double>&, int,
                                      HybridScheme, double);

}  // namespace parasurf::patches::hybrid
