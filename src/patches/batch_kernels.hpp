// Per-sample math of patch batches (tensor-product and triangular Bézier patches, rational, PN normals),
// written once for the CPU loops and the CUDA kernels. One launch covers every patch of a model: each patch
// record says where its control points and its samples live.
#pragma once
#include <cstdint>

#include "bezier/kernels.hpp"

namespace parasurf::patchk {

using kern::kMaxDeg;

enum : std::uint32_t { kTriangle = 1u, kRational = 2u, kNormalPatch = 4u, kFlipped = 8u };

// One patch of a batch. Tensor: (nu+1)(nv+1) grid samples, sample (i,j) at local index i*(nv+1)+j, u = i/nu,
// v = j/nv. Triangle: lattice of nu segments, (nu+1)(nu+2)/2 samples, row b (t = b/nu) holds a = 0..nu-b (s = a/nu).
struct PatchRecord {
  std::uint32_t flags = 0;
  std::int16_t du = 0, dv = 0;    // degrees (triangle: du = dv = d)
  std::int16_t ndu = 0, ndv = 0;  // normal patch degrees (kNormalPatch)
  std::int32_t nu = 1, nv = 1;    // segments
  std::int64_t cp = 0;            // first control point (4 numbers each, homogeneous)
  std::int64_t ncp = 0;           // first normal control point (3 numbers each)
  std::int64_t first = 0;         // first output sample
};

PS_HD std::int64_t sample_count(const PatchRecord& r) {
  return (r.flags & kTriangle) ? std::int64_t(r.nu + 1) * (r.nu + 2) / 2 : std::int64_t(r.nu + 1) * (r.nv + 1);
}

// Row offset of the triangular lattice/net: row b of an n-segment lattice starts at b(n+1) - b(b-1)/2.
PS_HD std::int64_t tri_row_start(std::int64_t n, std::int64_t b) { return b * (n + 1) - b * (b - 1) / 2; }

// (a, b) of local sample k of an n-segment triangular lattice.
PS_HD void tri_lattice_of(std::int64_t n, std::int64_t k, std::int64_t& a, std::int64_t& b) {
  // solve tri_row_start(n, b) <= k by a floating estimate, then correct
  const double nn = double(n) + 1.5;
  double est = nn - kern::ps_sqrt(nn * nn - 2.0 * double(k));
  b = std::int64_t(est);
  if (b < 0) b = 0;
  if (b > n) b = n;
  while (b > 0 && tri_row_start(n, b) > k) --b;
  while (b < n && tri_row_start(n, b + 1) <= k) ++b;
  a = k - tri_row_start(n, b);
}

// (u, v) of local sample k of a patch (triangle: (s, t)).
template <class T> PS_HD void sample_param(const PatchRecord& r, std::int64_t k, T& u, T& v) {
  if (r.flags & kTriangle) {
    std::int64_t a, b;
    tri_lattice_of(r.nu, k, a, b);
    u = a == r.nu ? T(1) : T(double(a) / double(r.nu));
    v = b == r.nu ? T(1) : T(double(b) / double(r.nu));
  } else {
    const std::int64_t i = k / (r.nv + 1), j = k % (r.nv + 1);
    u = kern::grid_param<T>(i, r.nu + 1);
    v = kern::grid_param<T>(j, r.nv + 1);
  }
}

// Triangular Bézier patch of degree d (BezierView order, see include/parasurf/patches.hpp): value and the
// derivatives along s and t, from the three points of the last de Casteljau level computed directly in the
// degree d-1 Bernstein basis. P: NC numbers per control point.
template <class T, int NC>
PS_HD void triangle_jet(const T* P, int d, T s, T t, T* val, T* ds, T* dt) {
  const T r = T(1) - s - t;
  T sp[kMaxDeg + 1], tp[kMaxDeg + 1], rp[kMaxDeg + 1];
  sp[0] = tp[0] = rp[0] = T(1);
  for (int k = 1; k < d; ++k) {
    sp[k] = sp[k - 1] * s;
    tp[k] = tp[k - 1] * t;
    rp[k] = rp[k - 1] * r;
  }
  T a100[NC] = {}, a010[NC] = {}, a001[NC] = {};
  const int e = d - 1;
  for (int j = 0; j <= e; ++j)
    for (int i = 0; i + j <= e; ++i) {
      const int l = e - i - j;
      const T w = T(kern::binomial(e, j) * kern::binomial(e - j, i)) * sp[i] * tp[j] * rp[l];
      // control point (i, j) of degree d sits in row j at position i
      const T* b00 = P + (tri_row_start(d, j) + i) * NC;  // (i, j, l+1)
      const T* b10 = b00 + NC;                            // (i+1, j, l)
      const T* b01 = P + (tri_row_start(d, j + 1) + i) * NC;  // (i, j+1, l)
      for (int c = 0; c < NC; ++c) {
        a100[c] += w * b10[c];
        a010[c] += w * b01[c];
        a001[c] += w * b00[c];
      }
    }
  for (int c = 0; c < NC; ++c) {
    val[c] = s * a100[c] + t * a010[c] + r * a001[c];
    if (ds) ds[c] = T(d) * (a100[c] - a001[c]);
    if (dt) dt[c] = T(d) * (a010[c] - a001[c]);
  }
}

// Position and unit normal of a tensor-patch sample from its homogeneous value and first derivatives (quotient
// rule), the limit normal where Su x Sv vanishes, flipped for reoriented patches; written to SoA arrays.
// `uv(u, v)` gives the sample's parameters; only the rare degenerate path needs them.
#if defined(__CUDA_ARCH__)
// 1 / x correctly rounded, as the host's division gives it, without the general division's numerator handling.
__device__ __forceinline__ float rcp_rn(float x) { return __frcp_rn(x); }
__device__ __forceinline__ double rcp_rn(double x) { return __drcp_rn(x); }
#endif

// Position, first derivatives -> position and unit normal in the SoA arrays (the limit normal where Su x Sv
// vanishes, flipped for reoriented patches).
template <class T, class UV>
PS_HD void store_cartesian(const PatchRecord& r, const T* P, const T* p, const T* su, const T* sv, UV&& uv,
                           T* const* pos, T* const* nrm, std::int64_t out) {
  T n[3];
  if (!kern::unit_normal(su, sv, n)) {
    T u, v;
    uv(u, v);
    kern::degenerate_normal<T, 4>(kern::NetView<T>{r.du, r.dv, P}, u, v, n);
  }
  const T sign = (r.flags & kFlipped) ? T(-1) : T(1);
  for (int c = 0; c < 3; ++c) {
#if defined(__CUDA_ARCH__)
    // streaming stores: the samples are not read again by this kernel, the tables and nets stay in L2
    __stcs(pos[c] + out, p[c]);
    __stcs(nrm[c] + out, sign * n[c]);
#else
    pos[c][out] = p[c];
    nrm[c][out] = sign * n[c];
#endif
  }
}

// Homogeneous value and first derivatives -> Cartesian position and derivatives (quotient rule).
template <class T>
PS_HD void homogeneous_to_cartesian(const T* h, const T* hu, const T* hv, T* p, T* su, T* sv) {
#if defined(__CUDA_ARCH__)
  const T iw = rcp_rn(h[3]);
#else
  const T iw = T(1) / h[3];
#endif
  for (int c = 0; c < 3; ++c) {
    p[c] = h[c] * iw;
    su[c] = (hu[c] - p[c] * hu[3]) * iw;
    sv[c] = (hv[c] - p[c] * hv[3]) * iw;
  }
}

template <class T, class UV>
PS_HD void store_homogeneous(const PatchRecord& r, const T* P, const T* h, const T* hu, const T* hv, UV&& uv,
                             T* const* pos, T* const* nrm, std::int64_t out) {
  T p[3], su[3], sv[3];
  homogeneous_to_cartesian(h, hu, hv, p, su, sv);
  store_cartesian<T>(r, P, p, su, sv, uv, pos, nrm, out);
}

// The value of a net of NC components, triangular of degree du or tensor du x dv, at (u, v).
template <class T, int NC>
PS_HD void net_value(const T* P, bool triangle, int du, int dv, T u, T v, T* out) {
  if (triangle) {
    triangle_jet<T, NC>(P, du, u, v, out, nullptr, nullptr);
    return;
  }
  const kern::Jet<T, NC> jet = kern::jet_direct<T, NC, 0>(kern::NetView<T>{du, dv, P}, u, v);
  for (int c = 0; c < NC; ++c) out[c] = jet.s[c];
}

// The position of one sample alone (a third of eval_sample's work: no derivatives, no normal patch).
template <class T>
PS_HD void eval_position(const PatchRecord& r, const T* points, T u, T v, T* p) {
  T h[4];
  net_value<T, 4>(points + r.cp * 4, (r.flags & kTriangle) != 0, r.du, r.dv, u, v, h);
  const T iw = T(1) / h[3];
  for (int c = 0; c < 3; ++c) p[c] = h[c] * iw;
}

// Writes the position and unit normal of one sample (SoA arrays). Returns false where the normal is degenerate
// (then a limit normal, or zero when even that vanishes).
template <class T>
PS_HD bool eval_sample(const PatchRecord& r, const T* points, const T* normal_points, T u, T v, T* const* pos,
                       T* const* nrm, std::int64_t out) {
  const T* P = points + r.cp * 4;
  T p[3], n[3];
  bool ok = true;
  if (r.flags & kTriangle) {
    T h[4], hs[4], ht[4];
    triangle_jet<T, 4>(P, r.du, u, v, h, hs, ht);
    const T iw = T(1) / h[3];
    T su[3], sv[3];
    for (int c = 0; c < 3; ++c) {
      p[c] = h[c] * iw;
      su[c] = (hs[c] - p[c] * hs[3]) * iw;
      sv[c] = (ht[c] - p[c] * ht[3]) * iw;
    }
    ok = kern::unit_normal(su, sv, n);
    if (!ok) n[0] = n[1] = n[2] = T(0);
  } else {
    const kern::NetView<T> net{r.du, r.dv, P};
    const kern::Jet<T, 4> h = kern::jet_direct<T, 4, 1>(net, u, v);
    const kern::CartJet<T> j = kern::to_cartesian<T, 4, 1>(h);
    for (int c = 0; c < 3; ++c) p[c] = j.s[c];
    ok = kern::unit_normal(j.su, j.sv, n);
    if (!ok) kern::degenerate_normal<T, 4>(net, u, v, n);
  }
  if (r.flags & kNormalPatch) {
    // PN patch: the normal is the value of the normal patch
    T q[3];
    net_value<T, 3>(normal_points + r.ncp * 3, (r.flags & kTriangle) != 0, r.ndu, r.ndv, u, v, q);
    const T len2 = kern::dot3(q, q);
    if (len2 > T(0)) {
      const T inv = T(1) / kern::ps_sqrt(len2);
      for (int c = 0; c < 3; ++c) n[c] = q[c] * inv;
      ok = true;
    }
  }
  if (r.flags & kFlipped)
    for (int c = 0; c < 3; ++c) n[c] = -n[c];
  for (int c = 0; c < 3; ++c) {
    pos[c][out] = p[c];
    nrm[c][out] = n[c];
  }
  return ok;
}

}  // namespace parasurf::patchk
