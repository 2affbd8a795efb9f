// The host side of the solver's CUDA engines (the traversal is solver_cuda.cu, after Park et al. 2011): a batch is
// grouped by shape (the GPU traverses systems of one shape together), each group's coefficients are packed into
// pinned memory on all threads, and the finished cells are handed back to their systems on all threads. A batch of
// tens of thousands of small systems spent more time copying polynomials and making per-cell vectors one at a
// time than the GPU spent on the traversal.
#include <omp.h>
#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/region_errors.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"
#include "solver/engine.hpp"

namespace parasurf::solver {

namespace {

GpuShape shape_of(const Batch& b, std::size_t i) {
  const int polys = batch_polys(b, i);
  if (polys > kGpuMaxPolys)
    throw Error(ErrorKind::InvalidArgument, "GPU solver: " + std::to_string(polys) +
                                                " polynomials per system; at most " + std::to_string(kGpuMaxPolys));
  GpuShape sh;
  sh.n = b.variables[i];
  sh.m = int(b.equations[i].size());
  sh.polys = polys;
  sh.square = b.square ? 1 : 0;
  for (int p = 0; p < polys; ++p) {
    const BernsteinPoly& poly = batch_poly(b, i, p);
    sh.size[p] = int(poly.coef.size());
    sh.offset[p] = sh.block;
    sh.block += sh.size[p];
    for (int v = 0; v < sh.n; ++v) {
      sh.degree[p][v] = poly.degree[std::size_t(v)];
      int inner = 1;
      for (int u = v + 1; u < sh.n; ++u) inner *= poly.degree[std::size_t(u)] + 1;
      sh.inner[p][v] = inner;
    }
  }
  return sh;
}

// The CUDA engines (cuda: the levels stay on the device; hybrid: the host builds each level's node list).
class CudaEngine final : public Engine {
 public:
  explicit CudaEngine(bool hybrid) : hybrid_(hybrid) {}
  std::vector<Subdivision> subdivide(const Batch& b, const SolverOptions& o) override {
    const std::size_t count = b.variables.size();
    std::vector<Subdivision> out(count);
    const int threads = cpu_thread_count(o.threads);
    const std::vector<std::vector<std::size_t>> groups = shape_groups(b, threads);
    // The caller's hooks, called from one lane at a time.
    SolverOptions lane_options = o;
    std::mutex hooks;
    if (o.progress)
      lane_options.progress = [&](int level, std::int64_t cells) {
        const std::lock_guard<std::mutex> lock(hooks);
        o.progress(level, cells);
      };
    if (o.stop)
      lane_options.stop = [&] {
        const std::lock_guard<std::mutex> lock(hooks);
        return o.stop();
      };
    const std::size_t lanes = hybrid_ ? 1 : std::min<std::size_t>(groups.size(), kGpuLanes);
    const int device = gpu_current_device();
    for (std::size_t g0 = 0; g0 < groups.size(); g0 += lanes) {
      const std::size_t running = std::min(lanes, groups.size() - g0);
      std::vector<GpuShape> shapes(running);
      std::vector<GpuLane*> lane(running);
      std::vector<const double*> coef(running);
      std::vector<GpuCells> cells(running);
      for (std::size_t l = 0; l < running; ++l) {  // packed on all threads, each group into its lane
        const auto& members = groups[g0 + l];
        GpuShape& sh = shapes[l] = shape_of(b, members[0]);
        sh.slack = o.zero_slack;
        const auto systems = std::int64_t(members.size());
        lane[l] = &gpu_lane(int(l));
        double* packed = gpu_staging(*lane[l], std::size_t(systems) * std::size_t(sh.block));
#pragma omp parallel for schedule(static) num_threads(threads) if (systems > 256)
        for (std::int64_t j = 0; j < systems; ++j)
          for (int p = 0; p < sh.polys; ++p) {
            const auto& c = batch_poly(b, members[std::size_t(j)], p).coef;
            std::memcpy(packed + std::size_t(j) * std::size_t(sh.block) + std::size_t(sh.offset[p]), c.data(),
                        c.size() * sizeof(double));
          }
        coef[l] = packed;
      }
      // (Where this runs inside another parallel region, the lanes take their turns on this thread.)
      core::RegionErrors errors;
#pragma omp parallel for schedule(static, 1) num_threads(int(running)) if (running > 1)
      for (std::int64_t l = 0; l < std::int64_t(running); ++l)
        errors.capture([&] {
          const auto at = std::size_t(l);
          gpu_set_device(device);
          cells[at] = subdivide_cuda(shapes[at], coef[at], int(groups[g0 + at].size()), b.square, lane_options, hybrid_,
                                     *lane[at], int(running));
        });
      errors.rethrow();
      for (std::size_t l = 0; l < running; ++l) hand_back(groups[g0 + l], shapes[l], cells[l], threads, out);
    }
    return out;
  }

 private:
  // A group's finished cells to its systems' subdivisions, on all threads.
  void hand_back(const std::vector<std::size_t>& members, const GpuShape& sh, const GpuCells& cells, int threads,
                 std::vector<Subdivision>& out) {
    const auto systems = std::int64_t(members.size());
    // Each system's cells in the order the GPU finished them (by level, then by node: the same on every run).
    std::vector<std::int64_t> first(std::size_t(systems) + 1, 0);
    for (std::int64_t k = 0; k < cells.count; ++k) ++first[std::size_t(cells.system[k]) + 1];
    for (std::int64_t j = 0; j < systems; ++j) first[std::size_t(j) + 1] += first[std::size_t(j)];
    std::vector<std::int64_t> order(std::size_t(cells.count)), fill(first.begin(), first.end() - 1);
    for (std::int64_t k = 0; k < cells.count; ++k) order[std::size_t(fill[std::size_t(cells.system[k])]++)] = k;
    const int n = sh.n;
    // The proved cells and the cells at the tolerance, system after system, in arrays of the engine's
    // (Subdivision::unique, candidate_boxes): where each system's runs start, then the runs written on all threads.
    std::vector<std::int64_t> unique_first(std::size_t(systems) + 1, 0), candidate_first(std::size_t(systems) + 1, 0);
#pragma omp parallel for schedule(static) num_threads(threads) if (systems > 256)
    for (std::int64_t j = 0; j < systems; ++j) {
      std::int64_t unique = 0;
      for (std::int64_t at = first[std::size_t(j)]; at < first[std::size_t(j) + 1]; ++at)
        unique += cells.unique[order[std::size_t(at)]] != 0;
      unique_first[std::size_t(j) + 1] = unique;
      candidate_first[std::size_t(j) + 1] = first[std::size_t(j) + 1] - first[std::size_t(j)] - unique;
    }
    for (std::int64_t j = 0; j < systems; ++j) {
      unique_first[std::size_t(j) + 1] += unique_first[std::size_t(j)];
      candidate_first[std::size_t(j) + 1] += candidate_first[std::size_t(j)];
    }
    const auto proved = std::size_t(unique_first.back());
    std::vector<double>& boxes = kept_.emplace_back(proved * std::size_t(2 * n));
    std::vector<double>& roots = kept_.emplace_back(cells.x ? proved * std::size_t(n) : 0);
    std::vector<double>& residuals = kept_.emplace_back(cells.x ? proved : 0);
    std::vector<double>& tolerance_boxes = kept_.emplace_back(std::size_t(candidate_first.back()) * std::size_t(2 * n));
#pragma omp parallel for schedule(static) num_threads(threads) if (systems > 256)
    for (std::int64_t j = 0; j < systems; ++j) {
      Subdivision& s = out[members[std::size_t(j)]];
      const auto u0 = std::size_t(unique_first[std::size_t(j)]), u1 = std::size_t(unique_first[std::size_t(j) + 1]);
      const auto c0 = std::size_t(candidate_first[std::size_t(j)]),
                 c1 = std::size_t(candidate_first[std::size_t(j) + 1]);
      std::size_t u = u0, c = c0;
      for (std::int64_t at = first[std::size_t(j)]; at < first[std::size_t(j) + 1]; ++at) {
        const std::int64_t k = order[std::size_t(at)];
        const double* box = cells.box + k * 2 * n;
        if (cells.unique[k]) {
          std::copy(box, box + 2 * n, boxes.begin() + std::ptrdiff_t(u * std::size_t(2 * n)));
          if (cells.x) {
            std::copy(cells.x + k * n, cells.x + (k + 1) * n, roots.begin() + std::ptrdiff_t(u * std::size_t(n)));
            residuals[u] = cells.residual[k];
          }
          ++u;
        } else {
          std::copy(box, box + 2 * n, tolerance_boxes.begin() + std::ptrdiff_t(c * std::size_t(2 * n)));
          ++c;
        }
      }
      if (u1 > u0) {
        s.unique = std::span<const double>(boxes).subspan(u0 * std::size_t(2 * n), (u1 - u0) * std::size_t(2 * n));
        if (cells.x) {
          s.unique_x = std::span<const double>(roots).subspan(u0 * std::size_t(n), (u1 - u0) * std::size_t(n));
          s.unique_residual = std::span<const double>(residuals).subspan(u0, u1 - u0);
        }
      }
      if (c1 > c0)
        s.candidate_boxes =
            std::span<const double>(tolerance_boxes).subspan(c0 * std::size_t(2 * n), (c1 - c0) * std::size_t(2 * n));
      s.status = cells.status;
      s.nodes = cells.nodes / systems;  // per-system share of the batch's cells
      s.tolerance = cells.tolerance;
    }
  }

  bool hybrid_;
  std::deque<std::vector<double>> kept_;  // the cells of the subdivisions made (a deque: they never move)
};

}  // namespace

std::unique_ptr<Engine> make_cuda_engine(bool hybrid) { return std::make_unique<CudaEngine>(hybrid); }

}  // namespace parasurf::solver
