// Internal entry points of the surface backends. Every backend takes the same job description; the evaluator
// keeps one Backend per device (make_backend chooses it) and calls its two entries.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "bezier/kernels.hpp"
#include "parasurf/bezier.hpp"

namespace parasurf::bezier {

// Level 2 of the multi-level evaluation: Bernstein rows per grid line (rows x (m+1), cols x (n+1)).
template <class T> struct GridTables {
  const T* bu = nullptr; const T* dbu = nullptr; const T* ddbu = nullptr;
  const T* bv = nullptr; const T* dbv = nullptr; const T* ddbv = nullptr;
};

// Stage 1 of the factored method: Q_i(v_j) = sum_l P_il B_l(v_j) and its v-derivatives, element
// j*sj + i*si + c*sc (the GPU keeps a column's points together, the CPU keeps a row of columns together).
template <class T> struct FactoredColumns {
  const T* q = nullptr; const T* qv = nullptr; const T* qvv = nullptr;
  std::int64_t sj = 0, si = 0, sc = 0;
};

// Everything a backend needs for one evaluation; pointers are host or device pointers as the backend expects.
template <class T> struct Job {
  Method method = Method::Factored;
  int nc = 3;       // 3 non-rational, 4 rational (homogeneous)
  int order = 1;    // 0 positions, 1 first derivatives, 2 second derivatives
  kern::NetView<T> net;
  kern::PowerView<T> power;   // Matrix
  GridTables<T> tables;       // Mle, Factored (grid only)
  FactoredColumns<T> columns; // Factored (grid only)
  std::int64_t rows = 0, cols = 0;   // grid
  const double* uv = nullptr;        // point list (u0 v0 u1 v1 ...), when not a grid
  std::int64_t point_count = 0;
  const kern::BinomialRows* binom_u = nullptr;  // level 3 (host), kept by the evaluator
  const kern::BinomialRows* binom_v = nullptr;
  const std::vector<T>* power_tiles = nullptr;  // Matrix: the tiles `power` views (host)
};

// One way of evaluating surfaces: the CPU, the GPU, or both on one grid. A backend keeps its own caches between
// calls (level 2 and stage 1 on the host, device buffers and level 2 on the device).
template <class T> class Backend {
 public:
  virtual ~Backend() = default;
  // Every row of the job's grid into host outputs. Returns how many times this call built level 2.
  virtual int evaluate_grid(Job<T>& job, const kern::OutView<T>& out, const EvalOptions& options,
                            EvalReport& report) = 0;
  // The job's (u, v) list into host outputs.
  virtual void evaluate_points(const Job<T>& job, const kern::OutView<T>& out, const EvalOptions& options,
                               EvalReport& report) = 0;
};

// The backend of a resolved device (Cpu, Cuda or Hybrid). In a build without CUDA, asking for Cuda or Hybrid
// throws Error(Device).
template <class T> std::unique_ptr<Backend<T>> make_backend(Device device);

// The CPU backend, also the CPU's share of the hybrid schemes (prepare once, then rows).
template <class T> class CpuBackend final : public Backend<T> {
 public:
  int evaluate_grid(Job<T>& job, const kern::OutView<T>& out, const EvalOptions& options, EvalReport& report) override;
  void evaluate_points(const Job<T>& job, const kern::OutView<T>& out, const EvalOptions& options,
                       EvalReport& report) override;
  // Level 2 (rebuilt only when degree, resolution or order changed) and stage 1 of the factored method into the
  // job; returns whether level 2 was built.
  bool prepare(Job<T>& job, int threads);
  // Rows [row_begin, row_end) of a prepared grid job.
  void rows(const Job<T>& job, std::int64_t row_begin, std::int64_t row_end, const kern::OutView<T>& out,
            int threads) const;

 private:
  struct TableKey {
    int m = -1, n = -1, order = -1;
    std::int64_t rows = -1, cols = -1;
    bool operator==(const TableKey&) const = default;
  } key_;
  std::vector<T> bu_, dbu_, ddbu_, bv_, dbv_, ddbv_;  // level 2
  std::vector<T> q_, qv_, qvv_;                        // factored stage 1
};

// Defined with the CUDA backend (cuda.cu) and the hybrid schemes (hybrid.cpp); make_backend names them only where
// this build has CUDA.
template <class T> std::unique_ptr<Backend<T>> make_cuda_backend();
template <class T> std::unique_ptr<Backend<T>> make_hybrid_backend();

// Calls f.template operator()<NC, Order>() for the job's runtime nc and order.
template <class F> decltype(auto) dispatch_nc_order(int nc, int order, F&& f) {
  if (nc == 3) {
    if (order == 0) return f.template operator()<3, 0>();
    if (order == 1) return f.template operator()<3, 1>();
    return f.template operator()<3, 2>();
  }
  if (order == 0) return f.template operator()<4, 0>();
  if (order == 1) return f.template operator()<4, 1>();
  return f.template operator()<4, 2>();
}

// The per-sample computation shared by both backends for the per-point methods (all but Factored on grids).
template <class T, int NC, int Order>
PS_HD kern::Jet<T, NC> jet_of_sample(const Job<T>& job, Method method, std::int64_t i, std::int64_t j, T u, T v) {
  switch (method) {
    case Method::Brute: return kern::jet_brute<T, NC, Order>(job.net, u, v);
    case Method::Casteljau: return kern::jet_casteljau<T, NC, Order>(job.net, u, v);
    case Method::Matrix: return kern::jet_matrix<T, NC, Order>(job.power, u, v);
    case Method::Mle:
      if (job.tables.bu) {
        const std::int64_t mu = job.net.m + 1, nv = job.net.n + 1;
        return kern::jet_tables<T, NC, Order>(job.net, job.tables.bu + i * mu, job.tables.dbu + i * mu,
                                              job.tables.ddbu + i * mu, job.tables.bv + j * nv,
                                              job.tables.dbv + j * nv, job.tables.ddbv + j * nv);
      }
      return kern::jet_direct<T, NC, Order>(job.net, u, v);
    default: return kern::jet_direct<T, NC, Order>(job.net, u, v);
  }
}

// Level-2 tables of one direction: out rows of (d+1) values each for b, db, ddb.
template <class T, int Order>
PS_HD void table_row(int d, std::int64_t index, std::int64_t count, const kern::BinomialRows* rows, T* b, T* db,
                     T* ddb) {
  const T t = kern::grid_param<T>(index, count);
  const std::int64_t off = index * (d + 1);
  T lb[kern::kMaxDeg + 1], ldb[kern::kMaxDeg + 1], lddb[kern::kMaxDeg + 1];
  kern::bernstein_jet<T, Order>(d, t, lb, ldb, lddb, rows);
  for (int k = 0; k <= d; ++k) {
    b[off + k] = lb[k];
    if constexpr (Order >= 1) db[off + k] = ldb[k];
    if constexpr (Order >= 2) ddb[off + k] = lddb[k];
  }
}

// Stage 1 of the factored method for column j and row i of the net: Q_i(v_j) and its v-derivatives (NC each).
template <class T, int NC, int Order>
PS_HD void factored_entry(const kern::NetView<T>& net, const T* bv, const T* dbv, const T* ddbv, std::int64_t j, int i,
                          T* q, T* qv, T* qvv) {
  const int nv = net.n + 1;
  for (int c = 0; c < NC; ++c) {
    q[c] = T(0);
    if constexpr (Order >= 1) qv[c] = T(0);
    if constexpr (Order >= 2) qvv[c] = T(0);
  }
  for (int l = 0; l < nv; ++l) {
    const T* p = net.P + (std::int64_t(i) * nv + l) * NC;
    for (int c = 0; c < NC; ++c) {
      q[c] += p[c] * bv[j * nv + l];
      if constexpr (Order >= 1) qv[c] += p[c] * dbv[j * nv + l];
      if constexpr (Order >= 2) qvv[c] += p[c] * ddbv[j * nv + l];
    }
  }
}

// One column of stage 1 of the factored method, stored with strides (the CPU layout).
template <class T, int NC, int Order>
PS_HD void factored_column(const kern::NetView<T>& net, const T* bv, const T* dbv, const T* ddbv, std::int64_t j,
                           T* q, T* qv, T* qvv, std::int64_t sj, std::int64_t si, std::int64_t sc) {
  for (int i = 0; i <= net.m; ++i) {
    T a[NC], b[NC], c2[NC];
    factored_entry<T, NC, Order>(net, bv, dbv, ddbv, j, i, a, b, c2);
    for (int c = 0; c < NC; ++c) {
      const std::int64_t o = j * sj + i * si + c * sc;
      q[o] = a[c];
      if constexpr (Order >= 1) qv[o] = b[c];
      if constexpr (Order >= 2) qvv[o] = c2[c];
    }
  }
}

namespace cpu {
template <class T>
void evaluate_grid_rows(const Job<T>& job, std::int64_t row_begin, std::int64_t row_end, const kern::OutView<T>& out,
                        int threads);
template <class T>
void evaluate_point_list(const Job<T>& job, const kern::OutView<T>& out, int threads);
template <class T>
void build_tables(int d, std::int64_t count, int order, const kern::BinomialRows& rows, T* b, T* db, T* ddb, int threads);
// Fills q/qv/qvv (each (m+1)*NC*cols) in the CPU layout and returns the view with its strides.
template <class T>
FactoredColumns<T> build_factored_columns(const Job<T>& job, T* q, T* qv, T* qvv, int threads);
}  // namespace cpu

// Power-basis tiles for the Matrix method, computed on the host in double (then converted).
struct PowerTiles {
  int ku = 1, kv = 1;
  std::vector<double> g;   // layout of kern::PowerView
};
PowerTiles build_power_tiles(int m, int n, int nc, const double* homogeneous_net);

}  // namespace parasurf::bezier
