// Host-side interface of the CUDA surface backend (implemented in cuda.cu; only in builds with CUDA): the launches
// that the CUDA backend and the hybrid schemes (hybrid.cpp) drive.
#pragma once
#include <cstdint>

#include "bezier/backend.hpp"

namespace parasurf::bezier::cuda {

struct Context;  // device buffers, stream, events and the level-2 cache of one SurfaceEvaluator

Context* create_context();          // on the current device; throws Error when CUDA is unavailable
void destroy_context(Context* ctx) noexcept;

template <class T> struct Inputs {
  Method method = Method::Factored;
  int nc = 3, order = 1, m = 1, n = 1;
  const T* host_net = nullptr;                // homogeneous control net, (m+1)(n+1) x nc
  const std::vector<T>* power = nullptr;      // Matrix: tiles in the layout of kern::PowerView
  int power_ku = 1, power_kv = 1;
  const kern::BinomialRows* binom_u = nullptr;  // level 3
  const kern::BinomialRows* binom_v = nullptr;
  std::int64_t rows = 0, cols = 0;            // grid
  const double* uv = nullptr;                 // point list
  std::int64_t point_count = 0;
  bool poison = false;                        // fill device outputs with NaN first (tests)
  std::uint64_t launch_bytes = 0;             // most bytes of one output array per launch (0: 4 GiB)
  bool tensor_cores = false;                  // float factored grids may run stage 2 on tensor cores
  bool fold_rows = true;                      // factored whole grids fold rows u and 1 - u into one contraction
};

// The device inputs of a host job.
template <class T> Inputs<T> inputs_of(const Job<T>& job, const EvalOptions& options) {
  Inputs<T> in;
  in.method = job.method;
  in.nc = job.nc;
  in.order = job.order;
  in.m = job.net.m;
  in.n = job.net.n;
  in.host_net = job.net.P;
  in.power = job.power_tiles;
  in.power_ku = job.power.ku;
  in.power_kv = job.power.kv;
  in.binom_u = job.binom_u;
  in.binom_v = job.binom_v;
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

// Tile ownership of the dynamic CPU+GPU scheme, in pinned host memory mapped into the device. GPU blocks take
// tiles from the front (a device atomic orders them), CPU threads from the back (a host atomic). No atomic
// crosses the bus (PCIe hosts may lack them): at the meeting point each side raises its claim flag, fences,
// then reads the other side's flag (Dekker), so a tile is never taken twice; a tile both sides let go stays
// owner 0 and the host finishes it.
struct DynamicTiles {
  std::int64_t tiles = 0;
  volatile std::uint32_t* gpu_claim = nullptr;  // host pointers
  volatile std::uint32_t* cpu_claim = nullptr;
  volatile std::uint32_t* owner = nullptr;      // 0 none, 1 GPU, 2 CPU
};
DynamicTiles dynamic_tiles(Context* ctx, std::int64_t tiles);  // zeroed

// Uploads the net, (re)builds level 2 when degree, resolution or order changed, runs stage 1 of the factored
// method, and launches rows [row_begin, row_end) asynchronously. `which` says which outputs are wanted (its
// pointers are only tested for null). With `dynamic`, the kernel claims tiles of tile_rows rows as described
// above (after dynamic_tiles()). Returns true if level 2 was built.
template <class T>
bool launch_grid(Context* ctx, const Inputs<T>& in, std::int64_t row_begin, std::int64_t row_end,
                 const kern::OutView<T>& which, bool dynamic, std::int64_t tile_rows);

// Waits for the launch and copies rows [row_begin, row_end) (a sub-range of the launched rows) to host;
// may be called again for further ranges of the same launch.
template <class T>
void finish_grid(Context* ctx, std::int64_t row_begin, std::int64_t row_end, const kern::OutView<T>& host_out,
                 EvalReport* report);

template <class T>
void evaluate_points(Context* ctx, const Inputs<T>& in, const kern::OutView<T>& host_out, EvalReport* report);

// Free device memory in bytes (for chunking decisions).
std::uint64_t free_device_memory();


}  // namespace parasurf::bezier::cuda
