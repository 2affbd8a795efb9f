// CPU backend of patch batches: OpenMP over patches; tensor patches by sum factorisation over Bernstein tables
// (Q = Bu P per row of samples, then S = Q Bv per sample), the others by direct evaluation per sample.
#include <omp.h>

#include <map>
#include <vector>

#include "patches/batch.hpp"

namespace parasurf::patches::cpu {

namespace {

// Bernstein values and derivatives at the grid parameters, one table per (degree, segments), shared by patches.
template <class T> struct BasisTables {
  std::map<std::pair<int, int>, std::vector<T>> by_key;
  const T* get(int deg, int seg) const { return by_key.at({deg, seg}).data(); }
  void add(int deg, int seg) {
    auto [it, fresh] = by_key.try_emplace({deg, seg});
    if (!fresh) return;
    auto& v = it->second;
    v.resize(std::size_t(seg + 1) * (deg + 1) * 2);
    for (int i = 0; i <= seg; ++i)
      kern::bernstein_jet<T, 1>(deg, kern::grid_param<T>(i, seg + 1), v.data() + i * (deg + 1),
                                v.data() + std::size_t(seg + 1) * (deg + 1) + i * (deg + 1), nullptr);
  }
};

// N = n + 1 when known at compile time (common low degrees), 0 = runtime.
template <class T, int N>
void tensor_tables(const patchk::PatchRecord& r, const T* P, const SampleViews<T>& out, const BasisTables<T>& tables) {
  const int m = r.du, n = N ? N - 1 : r.dv;
  const int nu = r.nu, nv = r.nv;
  const T* bu = tables.get(m, nu);
  const T* dbu = bu + std::size_t(nu + 1) * (m + 1);
  const T* bv = tables.get(n, nv);
  const T* dbv = bv + std::size_t(nv + 1) * (n + 1);
  T q[(N ? N : kern::kMaxDeg + 1) * 4], qu[(N ? N : kern::kMaxDeg + 1) * 4];
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
      patchk::store_homogeneous<T>(r, P, h, hu, hv, kern::grid_param<T>(i, nu + 1), kern::grid_param<T>(j, nv + 1),
                                   out.pos, out.nrm, base + j);
    }
  }
}

}  // namespace

template <class T> void evaluate(const HostBatch<T>& batch, const SampleViews<T>& out, int threads) {
  const auto count = std::int64_t(batch.records.size());
  const T* pts = batch.points.data();
  const T* npts = batch.normal_points.data();
  BasisTables<T> tables;
  for (const auto& r : batch.records)
    if (!(r.flags & (patchk::kTriangle | patchk::kNormalPatch))) tables.add(r.du, r.nu), tables.add(r.dv, r.nv);
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
  for (std::int64_t p = 0; p < count; ++p) {
    const patchk::PatchRecord& r = batch.records[p];
    if (!(r.flags & (patchk::kTriangle | patchk::kNormalPatch))) {
      const T* P = pts + r.cp * 4;
      switch (r.dv) {
        case 1: tensor_tables<T, 2>(r, P, out, tables); break;
        case 2: tensor_tables<T, 3>(r, P, out, tables); break;
        case 3: tensor_tables<T, 4>(r, P, out, tables); break;
        case 4: tensor_tables<T, 5>(r, P, out, tables); break;
        case 5: tensor_tables<T, 6>(r, P, out, tables); break;
        default: tensor_tables<T, 0>(r, P, out, tables);
      }
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
