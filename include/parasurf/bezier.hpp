// Tensor-product Bézier surfaces, non-rational and rational, evaluated on grids or at (u,v) lists.
//
// Layout (documented once, used everywhere):
//  * Control net: (m+1) x (n+1) points, row-major, index i*(n+1)+j, i along u (degree m), j along v (degree n).
//    `points` holds x y z per control point (Cartesian); `weights` is empty (non-rational) or holds one weight
//    per control point (rational; evaluation is done in homogeneous coordinates w*x, w*y, w*z, w).
//  * Grid: rows x cols samples, u_i = i/(rows-1), v_j = j/(cols-1); sample (i,j) is element i*cols + j.
//  * Outputs are structure-of-arrays: one array per scalar component (x, y and z separately), each with one
//    element per sample in the order above. Unrequested outputs are empty.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "parasurf/device.hpp"
#include "parasurf/host_vector.hpp"

namespace parasurf {

inline constexpr int kMaxBezierDegree = 32;
inline constexpr std::int64_t kMaxGridSide = 1 << 16;   // per direction; the product is checked against memory

struct BezierSurface {
  int degree_u = 0;                // m, 1..kMaxBezierDegree
  int degree_v = 0;                // n, 1..kMaxBezierDegree
  std::vector<double> points;      // (m+1)(n+1) x 3, row-major as above
  std::vector<double> weights;     // empty, or (m+1)(n+1) positive finite weights

  bool rational() const { return !weights.empty(); }
  std::int64_t control_point_count() const { return std::int64_t(degree_u + 1) * (degree_v + 1); }
};

// Throws Error naming the problem when degrees, sizes, weights or coordinates are out of range or not finite.
void validate(const BezierSurface& surface);

// Evaluation methods, all available on every backend.
enum class Method {
  Auto,       // the fastest for the request (Factored on grids)
  Brute,      // eq. (1) per point, Bernstein terms recomputed per term (Palomar et al.'s BRF)
  Matrix,     // U(u) G V(v)^T with G = R(m) P R(n)^T (MAT); power bases local to sub-intervals for stability
  Mle,        // multi-level evaluation: binomials (level 3), Bernstein tables (level 2), O(mn) sum (level 1)
  Casteljau,  // de Casteljau per point
  Factored,   // sum factorisation: Q = P Bv^T per column, then S = Bu Q; O(m) per point
};
Method parse_method(const std::string& name);
const char* method_name(Method method);

// Heterogeneous CPU+GPU schemes (Palomar et al., Sect. 5.2).
enum class HybridScheme { Static, Dynamic };

struct GridSpec {
  std::int64_t rows = 2;   // samples along u (rho), >= 2
  std::int64_t cols = 2;   // samples along v (delta), >= 2
  std::int64_t count() const { return rows * cols; }
};

struct EvalRequest {
  bool positions = true;
  bool first_derivatives = false;   // Su, Sv
  bool normals = false;             // unit normals + degenerate flags
  bool second_derivatives = false;  // Suu, Suv, Svv
  int order() const { return second_derivatives ? 2 : ((first_derivatives || normals) ? 1 : 0); }
};

struct EvalOptions {
  Method method = Method::Auto;
  Device device = Device::Auto;
  int threads = 0;                       // CPU threads, 0 = all
  HybridScheme hybrid_scheme = HybridScheme::Dynamic;
  double cpu_share = -1.0;               // static scheme: fraction of row tiles for the CPU; < 0 = profile
  std::int64_t tile_rows = 0;            // hybrid tile height in rows; 0 = automatic
  bool poison_device_buffers = false;    // tests: fill device outputs with NaN before launch
  bool skip_copy_back = false;           // benchmarks: GPU results stay on the device (outputs not filled)
  std::uint64_t gpu_launch_bytes = 0;    // tests: most bytes of one output array per GPU launch (0: 4 GiB)
  // Float grids, factored method, positions / first derivatives / normals: the GPU's stage 2 as TF32 tensor-core
  // products with split operands (float accuracy; compute capability 8.0+). Opt-in: slower than the FP32 kernel on
  // the H200 (docs/performance.md).
  bool gpu_tensor_cores = false;
  // Whole uniform grids, factored method, order <= 1: the GPU evaluates rows u and 1 - u together (the Bernstein
  // basis is symmetric), half the multiply-adds. False runs the unfolded kernel (benchmarks, tests).
  bool gpu_fold_rows = true;
};

// What a run did (for benchmarks and tests).
struct EvalReport {
  Device device_used = Device::Cpu;
  Method method_used = Method::Factored;
  double seconds_total = 0;        // wall time of the call
  double seconds_kernel = 0;       // GPU: kernel time by events (0 on CPU)
  double seconds_transfer = 0;     // GPU: device-to-host copy time
  double cpu_share_used = 0;       // hybrid: fraction of samples computed by the CPU
  std::int64_t tiles_cpu = 0, tiles_gpu = 0;
  bool gpu_tensor_cores = false;   // GPU: stage 2 ran on tensor cores (see EvalOptions::gpu_tensor_cores)
  bool gpu_rows_folded = false;    // GPU: rows u and 1 - u ran as one contraction (see EvalOptions::gpu_fold_rows)
  // Device auto with a usable GPU: what auto chose and the two estimated times behind the choice (small grids stay
  // on the CPU; large ones, and outputs in GPU memory, go to the GPU).
  std::string device_choice;
};

// Sample arrays (structure of arrays).
template <class T>
struct SurfaceSamples {
  std::int64_t count = 0;
  std::array<HostVector<T>, 3> position, du, dv, normal, duu, duv, dvv;
  // 1 where Su x Sv vanishes (e.g. a collapsed row): normal then is the limit normal from second
  // derivatives when that exists, else (0,0,0). Otherwise 0 and the normal has unit length.
  HostVector<std::uint8_t> degenerate;
};

// Non-owning view of caller-provided outputs; a null pointer means "not requested".
template <class T>
struct SampleSpans {
  std::int64_t count = 0;
  std::array<T*, 3> position{}, du{}, dv{}, normal{}, duu{}, duv{}, dvv{};
  std::uint8_t* degenerate = nullptr;
};

template <class T>
SampleSpans<T> spans_of(SurfaceSamples<T>& samples);
// Allocates the arrays a request needs (throws Error with the byte count when that cannot fit in memory).
template <class T>
SurfaceSamples<T> allocate_samples(std::int64_t count, const EvalRequest& request);

// Counters of the multi-level cache (requirements A, B, C of Palomar et al., Sect. 4).
struct MleCounters {
  std::int64_t level3_builds = 0;   // binomial coefficients (degree changed)
  std::int64_t level2_builds = 0;   // Bernstein tables (resolution or degree changed)
  std::int64_t level1_runs = 0;     // surface evaluations
};

// A reusable evaluator: keeps per-degree and per-resolution tables (and device buffers) between calls,
// so that a new control net at the same degree and resolution recomputes level 1 only.
template <class T>
class SurfaceEvaluator {
 public:
  explicit SurfaceEvaluator(EvalOptions options = {});
  ~SurfaceEvaluator();
  SurfaceEvaluator(const SurfaceEvaluator&) = delete;
  SurfaceEvaluator& operator=(const SurfaceEvaluator&) = delete;

  SurfaceSamples<T> evaluate_grid(const BezierSurface& surface, GridSpec grid, EvalRequest request);
  void evaluate_grid_into(const BezierSurface& surface, GridSpec grid, EvalRequest request, SampleSpans<T> out);
  SurfaceSamples<T> evaluate_points(const BezierSurface& surface, std::span<const double> uv, EvalRequest request);
  void evaluate_points_into(const BezierSurface& surface, std::span<const double> uv, EvalRequest request,
                            SampleSpans<T> out);

  const EvalOptions& options() const { return options_; }
  void set_options(const EvalOptions& options) { options_ = options; }
  const EvalReport& last_report() const { return report_; }
  const MleCounters& mle_counters() const;

  struct State;  // caches (host tables, device buffers); defined in the implementation

 private:
  EvalOptions options_;
  EvalReport report_;
  State* state_;
};

// One-shot helpers.
// What `auto` would evaluate `points` samples with normals of a net of `control_points` into host memory on
// (T float or double; threads 0: all), with this process's estimates.
AutoDeviceEstimate surface_auto_estimate(std::int64_t points, std::int64_t control_points, bool doubles,
                                         int threads = 0);

template <class T>
SurfaceSamples<T> evaluate_grid(const BezierSurface& surface, GridSpec grid, EvalRequest request,
                                const EvalOptions& options = {}, EvalReport* report = nullptr);
template <class T>
SurfaceSamples<T> evaluate_points(const BezierSurface& surface, std::span<const double> uv, EvalRequest request,
                                  const EvalOptions& options = {}, EvalReport* report = nullptr);

// Built-in control nets.
BezierSurface make_random_surface(int degree_u, int degree_v, std::uint64_t seed, bool rational = false);
BezierSurface make_wavy_surface(int degree_u, int degree_v, double amplitude = 0.25, double frequency = 2.0);

// Bytes the outputs of a request take (for memory checks and bandwidth accounting).
std::uint64_t sample_bytes(std::int64_t count, const EvalRequest& request, int scalar_size);

}  // namespace parasurf
