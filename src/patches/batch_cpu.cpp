// CPU backend of patch batches: OpenMP over patches; tensor patches by sum factorisation over Bernstein tables
// (Q = Bu P per row of samples, then S = Q Bv per sample), the others by direct evaluation per sample.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <type_traits>
#include <vector>

#include "patches/batch.hpp"

namespace parasurf::patches::cpu {

namespace {

// Bernstein values and derivatives at the grid parameters, one table per (degree, segments), shared by patches,
// laid out sample-major ([sample][term]) and term-major ([term][sample], for loops that run along a row).
template <class T> struct BasisTables {
  std::map<std::pair<int, int>, std::vector<T>> by_key;
  // values, derivatives, values term-major, derivatives term-major; each (seg + 1) * (deg + 1)
  const T* get(int deg, int seg) const { return by_key.at({deg, seg}).data(); }
  void add(int deg, int seg) {
    auto [it, fresh] = by_key.try_emplace({deg, seg});
    if (!fresh) return;
    auto& v = it->second;
    const std::size_t size = std::size_t(seg + 1) * (deg + 1);
    v.resize(4 * size);
    for (int i = 0; i <= seg; ++i)
      kern::bernstein_jet<T, 1>(deg, kern::grid_param<T>(i, seg + 1), v.data() + i * (deg + 1), v.data() + size + i * (deg + 1), nullptr);
    for (int i = 0; i <= seg; ++i)
      for (int b = 0; b <= deg; ++b) {
        v[2 * size + std::size_t(b) * (seg + 1) + i] = v[std::size_t(i) * (deg + 1) + b];
        v[3 * size + std::size_t(b) * (seg + 1) + i] = v[size + std::size_t(i) * (deg + 1) + b];
      }
  }
};

constexpr int kRowChunk = 64;  // samples of a row handled together

// Homogeneous sums of a row's samples to positions and unit normals (Cartesian division for rational patches
// only); kern::unit_normal has no branch, so the loop vectorises. Returns how many normals degenerated (flagged
// in `degenerate`).
template <class T, bool Rational>
int finish_row(int count, const T (*h)[kRowChunk], const T (*hu)[kRowChunk], const T (*hv)[kRowChunk], T sign,
               T* __restrict px, T* __restrict py, T* __restrict pz, T* __restrict nx, T* __restrict ny, T* __restrict nz,
               bool* __restrict degenerate) {
  int bad = 0;
#pragma omp simd reduction(+ : bad)
  for (int k = 0; k < count; ++k) {
    T p[3], su[3], sv[3];
    const T iw = Rational ? T(1) / h[3][k] : T(1);
    for (int c = 0; c < 3; ++c) {
      p[c] = h[c][k] * iw;
      su[c] = Rational ? (hu[c][k] - p[c] * hu[3][k]) * iw : hu[c][k];
      sv[c] = Rational ? (hv[c][k] - p[c] * hv[3][k]) * iw : hv[c][k];
    }
    T n[3];
    const bool ok = kern::unit_normal(su, sv, n);  // branch-free; degenerate samples are redone after the row
    degenerate[k] = !ok;
    bad += !ok;
    px[k] = p[0], py[k] = p[1], pz[k] = p[2];
    nx[k] = sign * n[0], ny[k] = sign * n[1], nz[k] = sign * n[2];
  }
  return bad;
}

// N = n + 1 when known at compile time (common low degrees), 0 = runtime. Per row of samples: Q = Bu P (and its
// u-derivative) once, then every sample of the row at a time in loops along the row, which vectorise; samples
// whose normal degenerates are redone one by one with the limit normal.
template <class T, int N>
void tensor_tables(const patchk::PatchRecord& r, const T* P, const SampleViews<T>& out, const BasisTables<T>& tables) {
  const int m = r.du, n = N ? N - 1 : r.dv;
  const int nu = r.nu, nv = r.nv;
  const T* bu = tables.get(m, nu);
  const T* dbu = bu + std::size_t(nu + 1) * (m + 1);
  const std::size_t v_size = std::size_t(nv + 1) * (n + 1);
  const T* bv_rows = tables.get(n, nv) + 2 * v_size;  // term-major
  const T* dbv_rows = bv_rows + v_size;
  const bool rational = r.flags & patchk::kRational;
  const T sign = (r.flags & patchk::kFlipped) ? T(-1) : T(1);
  constexpr int kChunk = kRowChunk;
  T q[(N ? N : kern::kMaxDeg + 1) * 4], qu[(N ? N : kern::kMaxDeg + 1) * 4];
  alignas(64) T h[4][kChunk], hu[4][kChunk], hv[4][kChunk];
  bool degenerate[kChunk];
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
    for (int j0 = 0; j0 <= nv; j0 += kChunk) {
      const int count = std::min(kChunk, nv + 1 - j0);
      for (int c = 0; c < (rational ? 4 : 3); ++c) {  // the first term assigns: no zeroing pass
        const T qb = q[c], qub = qu[c];
        const T* __restrict wb = bv_rows + j0;
        const T* __restrict db = dbv_rows + j0;
#pragma omp simd
        for (int k = 0; k < count; ++k) {
          h[c][k] = wb[k] * qb;
          hv[c][k] = db[k] * qb;
          hu[c][k] = wb[k] * qub;
        }
      }
      for (int b = 1; b <= n; ++b) {
        const T* __restrict wb = bv_rows + std::size_t(b) * (nv + 1) + j0;
        const T* __restrict db = dbv_rows + std::size_t(b) * (nv + 1) + j0;
        for (int c = 0; c < (rational ? 4 : 3); ++c) {
          const T qb = q[b * 4 + c], qub = qu[b * 4 + c];
#pragma omp simd
          for (int k = 0; k < count; ++k) {
            h[c][k] += wb[k] * qb;
            hv[c][k] += db[k] * qb;
            hu[c][k] += wb[k] * qub;
          }
        }
      }
      T *px = out.pos[0] + base + j0, *py = out.pos[1] + base + j0, *pz = out.pos[2] + base + j0;
      T *nx = out.nrm[0] + base + j0, *ny = out.nrm[1] + base + j0, *nz = out.nrm[2] + base + j0;
      const int degenerates = rational ? finish_row<T, true>(count, h, hu, hv, sign, px, py, pz, nx, ny, nz, degenerate)
                                       : finish_row<T, false>(count, h, hu, hv, sign, px, py, pz, nx, ny, nz, degenerate);
      for (int k = 0; k < count && degenerates > 0; ++k)
        if (degenerate[k]) {
          T nrm[3];
          kern::degenerate_normal<T, 4>(kern::NetView<T>{r.du, r.dv, P}, kern::grid_param<T>(i, nu + 1),
                                        kern::grid_param<T>(j0 + k, nv + 1), nrm);
          nx[k] = sign * nrm[0], ny[k] = sign * nrm[1], nz[k] = sign * nrm[2];
        }
    }
  }
}

}  // namespace

template <class T> void evaluate(const HostBatch<T>& batch, const SampleViews<T>& out, int threads) {
  evaluate_range(batch, out, threads, 0, std::int64_t(batch.records.size()), 0, std::int64_t(batch.point_patch.size()));
}

template <class T>
void evaluate_range(const HostBatch<T>& batch, const SampleViews<T>& out, int threads, std::int64_t record_begin,
                    std::int64_t record_end, std::int64_t point_begin, std::int64_t point_end) {
  const T* pts = batch.points.data();
  const T* npts = batch.normal_points.data();
  BasisTables<T> tables;
  for (std::int64_t p = record_begin; p < record_end; ++p) {
    const patchk::PatchRecord& r = batch.records[std::size_t(p)];
    if (!(r.flags & (patchk::kTriangle | patchk::kNormalPatch))) tables.add(r.du, r.nu), tables.add(r.dv, r.nv);
  }
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
  for (std::int64_t p = record_begin; p < record_end; ++p) {
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
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t k = point_begin; k < point_end; ++k) {
    const patchk::PatchRecord& r = batch.records[batch.point_patch[k]];
    patchk::eval_sample<T>(r, pts, npts, T(batch.point_uv[2 * k]), T(batch.point_uv[2 * k + 1]), out.pos, out.nrm,
                           batch.samples + k);
  }
}

template void evaluate<float>(const HostBatch<float>&, const SampleViews<float>&, int);
template void evaluate<double>(const HostBatch<double>&, const SampleViews<double>&, int);
template void evaluate_range<float>(const HostBatch<float>&, const SampleViews<float>&, int, std::int64_t, std::int64_t,
                                    std::int64_t, std::int64_t);
template void evaluate_range<double>(const HostBatch<double>&, const SampleViews<double>&, int, std::int64_t, std::int64_t,
                                     std::int64_t, std::int64_t);

}  // namespace parasurf::patches::cpu
