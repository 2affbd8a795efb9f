// CPU backend of patch batches: OpenMP over patches; tensor patches by sum factorisation over Bernstein tables
// (Q = Bu P per row of samples, then S = Q Bv per sample), the others by direct evaluation per sample.
#include <omp.h>

#include <vector>

#include "patches/batch.hpp"

namespace parasurf::patches::cpu {

namespace {

template <class T>
void tensor_tables(const patchk::PatchRecord& r, const T* P, const SampleViews<T>& out, const HostBatch<T>& batch) {
  const int m = r.du, n = r.dv;
  const int nu = r.nu, nv = r.nv;
  thread_local std::vector<T> tab;
  tab.resize(std::size_t(nu + 1) * (m + 1) * 2 + std::size_t(nv + 1) * (n + 1) * 2 + std::size_t(n + 1) * 8);
  T* bu = tab.data();
  T* dbu = bu + std::size_t(nu + 1) * (m + 1);
  T* bv = dbu + std::size_t(nu + 1) * (m + 1);
  T* dbv = bv + std::size_t(nv + 1) * (n + 1);
  T* q = dbv + std::size_t(nv + 1) * (n + 1);  // (n+1) x 4 value, then (n+1) x 4 u-derivative
  T* qu = q + std::size_t(n + 1) * 4;
  for (int i = 0; i <= nu; ++i)
    kern::bernstein_jet<T, 1>(m, kern::grid_param<T>(i, nu + 1), bu + i * (m + 1), dbu + i * (m + 1), nullptr);
  for (int j = 0; j <= nv; ++j)
    kern::bernstein_jet<T, 1>(n, kern::grid_param<T>(j, nv + 1), bv + j * (n + 1), dbv + j * (n + 1), nullptr);
  for (int i = 0; i <= nu; ++i) {
    for (int b = 0; b <= n; ++b)
      for (int c = 0; c < 4; ++c) q[b * 4 + c] = qu[b * 4 + c] = T(0);
    for (int a = 0; a <= m; ++a) {
      const T wa = bu[i * (m + 1) + a], da = dbu[i * (m + 1) + a];
      const T* row = P + std::int64_t(a) * (n + 1) * 4;
      for (int b = 0; b <= n; ++b)
        for (int c = 0; c < 4; ++c) {
          q[b * 4 + c] += wa * row[b * 4 + c];
          qu[b * 4 + c] += da * row[b * 4 + c];
        }
    }
    const std::int64_t base = r.first + std::int64_t(i) * (nv + 1);
    for (int j = 0; j <= nv; ++j) {
      T h[4] = {}, hu[4] = {}, hv[4] = {};
      const T* wb = bv + j * (n + 1);
      const T* db = dbv + j * (n + 1);
      for (int b = 0; b <= n; ++b)
        for (int c = 0; c < 4; ++c) {
          h[c] += wb[b] * q[b * 4 + c];
          hv[c] += db[b] * q[b * 4 + c];
          hu[c] += wb[b] * qu[b * 4 + c];
        }
      const T iw = T(1) / h[3];
      T p[3], su[3], sv[3], nrm[3];
      for (int c = 0; c < 3; ++c) {
        p[c] = h[c] * iw;
        su[c] = (hu[c] - p[c] * hu[3]) * iw;
        sv[c] = (hv[c] - p[c] * hv[3]) * iw;
      }
      const std::int64_t k = base + j;
      if (!kern::unit_normal(su, sv, nrm)) {
        // rare (collapsed rows): the shared per-sample path takes the limit normal
        patchk::eval_sample<T>(r, batch.points.data(), batch.normal_points.data(), kern::grid_param<T>(i, nu + 1),
                               kern::grid_param<T>(j, nv + 1), out.pos, out.nrm, k);
        continue;
      }
      if (r.flags & patchk::kFlipped)
        for (int c = 0; c < 3; ++c) nrm[c] = -nrm[c];
      for (int c = 0; c < 3; ++c) {
        out.pos[c][k] = p[c];
        out.nrm[c][k] = nrm[c];
      }
    }
  }
}

}  // namespace

template <class T> void evaluate(const HostBatch<T>& batch, const SampleViews<T>& out, int threads) {
  const auto count = std::int64_t(batch.records.size());
  const T* pts = batch.points.data();
  const T* npts = batch.normal_points.data();
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
  for (std::int64_t p = 0; p < count; ++p) {
    const patchk::PatchRecord& r = batch.records[p];
    if (!(r.flags & (patchk::kTriangle | patchk::kNormalPatch))) {
      tensor_tables<T>(r, pts + r.cp * 4, out, batch);
      continue;
    }
    const std::int64_t n = patchk::sample_count(r);
    for (std::int64_t k = 0; k < n; ++k) {
      T u, v;
      patchk::sample_param<T>(r, k, u, v);
      patchk::eval_sample<T>(r, pts, npts, u, v, out.pos, out.nrm, r.first + k);
    }
  }
  const auto extra = std::int64_t(batch.point_patch.size());
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t k = 0; k < extra; ++k) {
    const patchk::PatchRecord& r = batch.records[batch.point_patch[k]];
    patchk::eval_sample<T>(r, pts, npts, T(batch.point_uv[2 * k]), T(batch.point_uv[2 * k + 1]), out.pos, out.nrm,
                           batch.samples + k);
  }
}

template void evaluate<float>(const HostBatch<float>&, const SampleViews<float>&, int);
template void evaluate<double>(const HostBatch<double>&, const SampleViews<double>&, int);

}  // namespace parasurf::patches::cpu
