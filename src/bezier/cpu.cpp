// CPU backend of surface evaluation: OpenMP loops over the shared per-sample math (kernels.hpp).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "bezier/backend.hpp"
#include "core/memory.hpp"
#include "parasurf/device.hpp"

namespace parasurf::bezier::cpu {

namespace {

// Factored stage 2 on one row and a chunk of columns: the inner loops run along contiguous columns so that
// the compiler vectorises them; then every sample is finished by the shared store_sample.
template <class T, int NC, int Order>
void factored_row_chunk(const Job<T>& job, std::int64_t i, std::int64_t j0, std::int64_t j1,
                        const kern::OutView<T>& out) {
  constexpr int kChunk = 128;
  alignas(64) T s[NC][kChunk], su[NC][kChunk], sv[NC][kChunk], suu[NC][kChunk], suv[NC][kChunk], svv[NC][kChunk];
  const int w = int(j1 - j0);
  const int mu = job.net.m + 1;
  const FactoredColumns<T>& F = job.columns;
  for (int c = 0; c < NC; ++c)
    for (int t = 0; t < w; ++t) {
      s[c][t] = su[c][t] = sv[c][t] = T(0);
      if constexpr (Order >= 2) suu[c][t] = suv[c][t] = svv[c][t] = T(0);
    }
  for (int k = 0; k < mu; ++k) {
    const T b = job.tables.bu[i * mu + k];
    const T db = Order >= 1 ? job.tables.dbu[i * mu + k] : T(0);
    const T ddb = Order >= 2 ? job.tables.ddbu[i * mu + k] : T(0);
    for (int c = 0; c < NC; ++c) {
      const T* PS_RESTRICT q = F.q + k * F.si + c * F.sc + j0;
      const T* PS_RESTRICT qv = Order >= 1 ? F.qv + k * F.si + c * F.sc + j0 : nullptr;
      const T* PS_RESTRICT qvv = Order >= 2 ? F.qvv + k * F.si + c * F.sc + j0 : nullptr;
#pragma omp simd
      for (int t = 0; t < w; ++t)
        kern::factored_step<T, Order>(b, db, ddb, q[t], Order >= 1 ? qv[t] : T(0), Order >= 2 ? qvv[t] : T(0), s[c][t],
                                      su[c][t], sv[c][t], suu[c][t], suv[c][t], svv[c][t]);
    }
  }
  const T u = kern::grid_param<T>(i, job.rows);
  for (int t = 0; t < w; ++t) {
    kern::Jet<T, NC> h;
    kern::clear(h);
    for (int c = 0; c < NC; ++c) {
      h.s[c] = s[c][t];
      if constexpr (Order >= 1) {
        h.su[c] = su[c][t];
        h.sv[c] = sv[c][t];
      }
      if constexpr (Order >= 2) {
        h.suu[c] = suu[c][t];
        h.suv[c] = suv[c][t];
        h.svv[c] = svv[c][t];
      }
    }
    const std::int64_t j = j0 + t;
    kern::store_sample<T, NC, Order>(h, out, i * job.cols + j, u, kern::grid_param<T>(j, job.cols), job.net);
  }
}

}  // namespace

template <class T>
void evaluate_grid_rows(const Job<T>& job, std::int64_t row_begin, std::int64_t row_end, const kern::OutView<T>& out,
                        int threads) {
  dispatch_nc_order(job.nc, job.order, [&]<int NC, int Order>() {
    if (job.method == Method::Factored) {
      constexpr std::int64_t kChunk = 128;
      const std::int64_t chunks = (job.cols + kChunk - 1) / kChunk;
      const std::int64_t items = (row_end - row_begin) * chunks;
#pragma omp parallel for schedule(static) num_threads(threads)
      for (std::int64_t it = 0; it < items; ++it) {
        const std::int64_t i = row_begin + it / chunks;
        const std::int64_t j0 = (it % chunks) * kChunk;
        factored_row_chunk<T, NC, Order>(job, i, j0, std::min(job.cols, j0 + kChunk), out);
      }
      return;
    }
    const std::int64_t first = row_begin * job.cols, last = row_end * job.cols;
#pragma omp parallel for schedule(static, 256) num_threads(threads)
    for (std::int64_t idx = first; idx < last; ++idx) {
      const std::int64_t i = idx / job.cols, j = idx % job.cols;
      const T u = kern::grid_param<T>(i, job.rows), v = kern::grid_param<T>(j, job.cols);
      const auto h = jet_of_sample<T, NC, Order>(job, job.method, i, j, u, v);
      kern::store_sample<T, NC, Order>(h, out, idx, u, v, job.net);
    }
  });
}

template <class T>
void evaluate_point_list(const Job<T>& job, const kern::OutView<T>& out, int threads) {
  dispatch_nc_order(job.nc, job.order, [&]<int NC, int Order>() {
#pragma omp parallel for schedule(static, 256) num_threads(threads)
    for (std::int64_t idx = 0; idx < job.point_count; ++idx) {
      const T u = T(job.uv[2 * idx]), v = T(job.uv[2 * idx + 1]);
      const auto h = jet_of_sample<T, NC, Order>(job, job.method, 0, 0, u, v);
      kern::store_sample<T, NC, Order>(h, out, idx, u, v, job.net);
    }
  });
}

template <class T>
void build_tables(int d, std::int64_t count, int order, const kern::BinomialRows& rows, T* b, T* db, T* ddb,
                  int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t i = 0; i < count; ++i) {
    if (order == 0) table_row<T, 0>(d, i, count, &rows, b, db, ddb);
    else if (order == 1) table_row<T, 1>(d, i, count, &rows, b, db, ddb);
    else table_row<T, 2>(d, i, count, &rows, b, db, ddb);
  }
}

template <class T>
FactoredColumns<T> build_factored_columns(const Job<T>& job, T* q, T* qv, T* qvv, int threads) {
  FactoredColumns<T> f;
  f.q = q;
  f.qv = qv;
  f.qvv = qvv;
  f.sj = 1;
  f.sc = job.cols;
  f.si = std::int64_t(job.nc) * job.cols;
  dispatch_nc_order(job.nc, job.order, [&]<int NC, int Order>() {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t j = 0; j < job.cols; ++j)
      factored_column<T, NC, Order>(job.net, job.tables.bv, job.tables.dbv, job.tables.ddbv, j, q, qv, qvv, f.sj,
                                    f.si, f.sc);
  });
  return f;
}

#define PARASURF_INSTANTIATE(T)                                                                                  \
  template void evaluate_grid_rows<T>(const Job<T>&, std::int64_t, std::int64_t, const kern::OutView<T>&, int); \
  template void evaluate_point_list<T>(const Job<T>&, const kern::OutView<T>&, int);                            \
  template void build_tables<T>(int, std::int64_t, int, const kern::BinomialRows&, T*, T*, T*, int);           \
  template FactoredColumns<T> build_factored_columns<T>(const Job<T>&, T*, T*, T*, int);
PARASURF_INSTANTIATE(float)
PARASURF_INSTANTIATE(double)
#undef PARASURF_INSTANTIATE

}  // namespace parasurf::bezier::cpu

namespace parasurf::bezier {

template <class T>
bool CpuBackend<T>::prepare(Job<T>& job, int threads) {
  if (job.method != Method::Mle && job.method != Method::Factored) return false;
  const int m = job.net.m, n = job.net.n;
  const TableKey key{m, n, job.order, job.rows, job.cols};
  const bool build = !(key == key_);
  if (build) {
    const auto mu = std::size_t(m + 1), nv = std::size_t(n + 1);
    core::check_host_allocation(sizeof(T) * 3 * (mu * job.rows + nv * job.cols), "the Bernstein tables");
    bu_.resize(mu * job.rows);
    dbu_.resize(job.order >= 1 ? mu * job.rows : 0);
    ddbu_.resize(job.order >= 2 ? mu * job.rows : 0);
    bv_.resize(nv * job.cols);
    dbv_.resize(job.order >= 1 ? nv * job.cols : 0);
    ddbv_.resize(job.order >= 2 ? nv * job.cols : 0);
    cpu::build_tables<T>(m, job.rows, job.order, *job.binom_u, bu_.data(), dbu_.data(), ddbu_.data(), threads);
    cpu::build_tables<T>(n, job.cols, job.order, *job.binom_v, bv_.data(), dbv_.data(), ddbv_.data(), threads);
    key_ = key;
  }
  job.tables = {bu_.data(), dbu_.data(), ddbu_.data(), bv_.data(), dbv_.data(), ddbv_.data()};
  if (job.method == Method::Factored) {
    const std::size_t size = std::size_t(m + 1) * job.nc * job.cols;
    q_.resize(size);
    qv_.resize(job.order >= 1 ? size : 0);
    qvv_.resize(job.order >= 2 ? size : 0);
    job.columns = cpu::build_factored_columns<T>(job, q_.data(), qv_.data(), qvv_.data(), threads);
  }
  return build;
}

template <class T>
void CpuBackend<T>::rows(const Job<T>& job, std::int64_t row_begin, std::int64_t row_end, const kern::OutView<T>& out,
                         int threads) const {
  cpu::evaluate_grid_rows<T>(job, row_begin, row_end, out, threads);
}

template <class T>
int CpuBackend<T>::evaluate_grid(Job<T>& job, const kern::OutView<T>& out, const EvalOptions& options, EvalReport&) {
  const int threads = cpu_thread_count(options.threads);
  const bool built = prepare(job, threads);
  rows(job, 0, job.rows, out, threads);
  return built ? 1 : 0;
}

template <class T>
void CpuBackend<T>::evaluate_points(const Job<T>& job, const kern::OutView<T>& out, const EvalOptions& options,
                                    EvalReport&) {
  cpu::evaluate_point_list<T>(job, out, cpu_thread_count(options.threads));
}

template class CpuBackend<float>;
template class CpuBackend<double>;

}  // namespace parasurf::bezier

