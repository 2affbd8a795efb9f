// Heterogeneous CPU+GPU evaluation of one grid over row tiles (Palomar et al. 2017, Sect. 5.2): the GPU takes tiles
// from the front, CPU threads from the back. Static: the split is fixed beforehand (EvalOptions::cpu_share, or
// profiled once per configuration). Dynamic: both sides claim tiles on the fly and meet through per-tile flags in
// host-mapped memory (cuda_backend.hpp, DynamicTiles).
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <vector>

#include "bezier/backend.hpp"
#include "bezier/cuda_backend.hpp"
#include "core/backends.hpp"
#include "core/memory.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"

namespace parasurf::bezier {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <class T>
class HybridBackend final : public Backend<T> {
 public:
  HybridBackend() : ctx_(cuda::create_context()) {}
  ~HybridBackend() override { cuda::destroy_context(ctx_); }
  HybridBackend(const HybridBackend&) = delete;
  HybridBackend& operator=(const HybridBackend&) = delete;

  int evaluate_grid(Job<T>& job, const kern::OutView<T>& out, const EvalOptions& options, EvalReport& report) override {
    const int threads = cpu_thread_count(options.threads);
    int builds = cpu_.prepare(job, threads) ? 1 : 0;
    const cuda::Inputs<T> in = cuda::inputs_of(job, options);
    const std::int64_t rows = job.rows;
    const std::int64_t tile_rows = options.tile_rows > 0 ? options.tile_rows : 64;
    const std::int64_t tiles = (rows + tile_rows - 1) / tile_rows;
    EvalRequest request;
    request.positions = out.p[0] != nullptr;
    request.first_derivatives = out.du[0] != nullptr;
    request.normals = out.nrm[0] != nullptr;
    request.second_derivatives = out.duu[0] != nullptr;
    const std::uint64_t total_bytes = sample_bytes(rows * job.cols, request, sizeof(T));
    if (total_bytes > std::uint64_t(0.8 * double(cuda::free_device_memory())))
      throw Error(ErrorKind::OutOfMemory, "hybrid evaluation keeps the whole output (" +
                                              core::format_bytes(total_bytes) +
                                              ") on the device; it does not fit, use --device cuda (chunked)");
    std::int64_t cpu_tiles = 0;
    if (options.hybrid_scheme == HybridScheme::Static)
      cpu_tiles = run_static(job, in, out, options, report, threads, tiles, tile_rows, builds);
    else
      cpu_tiles = run_dynamic(job, in, out, report, threads, tiles, tile_rows, builds);
    report.tiles_cpu = cpu_tiles;
    report.tiles_gpu = tiles - cpu_tiles;
    report.cpu_share_used = double(cpu_tiles) / double(tiles);
    return builds;
  }

  // A point list is one launch: no tiles to share.
  void evaluate_points(const Job<T>& job, const kern::OutView<T>& out, const EvalOptions& options,
                       EvalReport& report) override {
    cuda::evaluate_points<T>(ctx_, cuda::inputs_of(job, options), out, &report);
  }

 private:
  struct ShareKey {
    int m = -1, n = -1, order = -1;
    std::int64_t rows = -1, cols = -1;
    Method method = Method::Auto;
    bool operator==(const ShareKey&) const = default;
  };

  // The CPU's share of the rows from a profile: the CPU on a few tiles, the GPU (kernel and copy) on a fifth of the
  // grid; kept while the configuration stays the same.
  double profiled_share(const Job<T>& job, const cuda::Inputs<T>& in, const kern::OutView<T>& out, int threads,
                        std::int64_t tile_rows) {
    const ShareKey key{job.net.m, job.net.n, job.order, job.rows, job.cols, job.method};
    if (key == share_key_ && share_ >= 0) return share_;
    const std::int64_t rows = job.rows;
    const std::int64_t cpu_rows = std::min(rows, std::max<std::int64_t>(tile_rows, rows / 64));
    auto t = Clock::now();
    cpu_.rows(job, rows - cpu_rows, rows, out, threads);
    const double cpu_per_row = seconds_since(t) / double(cpu_rows);
    const std::int64_t gpu_rows = std::max<std::int64_t>(tile_rows, rows / 5);
    cuda::launch_grid<T>(ctx_, in, 0, gpu_rows, out, false, 0);  // warm-up, level 2
    cuda::finish_grid<T>(ctx_, 0, 0, out, nullptr);
    t = Clock::now();
    cuda::launch_grid<T>(ctx_, in, 0, gpu_rows, out, false, 0);
    cuda::finish_grid<T>(ctx_, 0, gpu_rows, out, nullptr);
    const double gpu_per_row = seconds_since(t) / double(gpu_rows);
    share_ = gpu_per_row / (gpu_per_row + cpu_per_row);
    share_key_ = key;
    return share_;
  }

  std::int64_t run_static(const Job<T>& job, const cuda::Inputs<T>& in, const kern::OutView<T>& out,
                          const EvalOptions& options, EvalReport& report, int threads, std::int64_t tiles,
                          std::int64_t tile_rows, int& builds) {
    const double share = std::clamp(
        options.cpu_share < 0 ? profiled_share(job, in, out, threads, tile_rows) : options.cpu_share, 0.0, 1.0);
    const std::int64_t cpu_tiles = std::min<std::int64_t>(tiles, std::llround(share * double(tiles)));
    const std::int64_t split = std::min(job.rows, (tiles - cpu_tiles) * tile_rows);
    if (split > 0 && cuda::launch_grid<T>(ctx_, in, 0, split, out, false, 0)) ++builds;
    if (split < job.rows) cpu_.rows(job, split, job.rows, out, threads);
    if (split > 0) cuda::finish_grid<T>(ctx_, 0, split, out, &report);
    return cpu_tiles;
  }

  std::int64_t run_dynamic(const Job<T>& job, const cuda::Inputs<T>& in, const kern::OutView<T>& out,
                           EvalReport& report, int threads, std::int64_t tiles, std::int64_t tile_rows, int& builds) {
    const cuda::DynamicTiles dyn = cuda::dynamic_tiles(ctx_, tiles);
    if (cuda::launch_grid<T>(ctx_, in, 0, job.rows, out, true, tile_rows)) ++builds;
    // Each CPU thread claims one tile at a time from the back and evaluates it alone.
    std::atomic<std::int64_t> back{0};
    auto flag = [](volatile std::uint32_t* p) {
      return std::atomic_ref<std::uint32_t>(*const_cast<std::uint32_t*>(p));
    };
    auto evaluate_tile = [&](std::int64_t tile) {
      const std::int64_t r0 = tile * tile_rows, r1 = std::min(job.rows, r0 + tile_rows);
      cpu_.rows(job, r0, r1, out, 1);
    };
#pragma omp parallel num_threads(threads)
    {
      for (;;) {
        const std::int64_t tile = tiles - 1 - back.fetch_add(1);
        if (tile < 0) break;
        flag(dyn.cpu_claim + tile).store(1u);                // seq_cst store, then
        if (flag(dyn.gpu_claim + tile).load() != 0u) break;  // seq_cst load: met the GPU
        flag(dyn.owner + tile).store(2u);
        evaluate_tile(tile);
      }
    }
    cuda::finish_grid<T>(ctx_, 0, 0, out, &report);  // the kernel is done
    // Copy back the GPU's tiles (runs of consecutive tiles), finish the tiles both sides let go.
    std::int64_t cpu_tiles = 0;
    std::vector<std::int64_t> orphans;
    for (std::int64_t t = 0; t < tiles;) {
      const std::uint32_t o = dyn.owner[t];
      std::int64_t e = t + 1;
      while (e < tiles && dyn.owner[e] == o) ++e;
      if (o == 1u) cuda::finish_grid<T>(ctx_, t * tile_rows, std::min(job.rows, e * tile_rows), out, &report);
      if (o == 2u) cpu_tiles += e - t;
      if (o == 0u)
        for (std::int64_t k = t; k < e; ++k) orphans.push_back(k);
      t = e;
    }
#pragma omp parallel for num_threads(threads)
    for (std::size_t k = 0; k < orphans.size(); ++k) evaluate_tile(orphans[k]);
    return cpu_tiles + std::int64_t(orphans.size());
  }

  CpuBackend<T> cpu_;
  cuda::Context* ctx_;
  ShareKey share_key_;
  double share_ = -1;
};

}  // namespace

template <class T>
std::unique_ptr<Backend<T>> make_hybrid_backend() {
  if constexpr (core::kCudaBuilt)
    return std::make_unique<HybridBackend<T>>();
  else
    core::no_cuda_backend("surfaces on hybrid");
}

template std::unique_ptr<Backend<float>> make_hybrid_backend<float>();
template std::unique_ptr<Backend<double>> make_hybrid_backend<double>();

}  // namespace parasurf::bezier
