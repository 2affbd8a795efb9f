// Per-sample Bézier surface math, written once for the CPU loops and the CUDA kernels.
// Palomar et al. 2017, "High-Performance Computation of Bézier Surfaces on Parallel and Heterogeneous Platforms".
// No allocation, no exceptions, no std containers: plain arrays bounded by kMaxDeg.
#pragma once
#include <cstdint>

#include "core/hd.hpp"

namespace parasurf::kern {

constexpr int kMaxDeg = 32;

// ---------------------------------------------------------------- small helpers
template <class T> PS_HD T ps_sqrt(T x);
template <> PS_HD float ps_sqrt<float>(float x) { return __builtin_sqrtf(x); }
template <> PS_HD double ps_sqrt<double>(double x) { return __builtin_sqrt(x); }
template <class T> PS_HD T ps_max(T a, T b) { return a > b ? a : b; }
// 1/sqrt(x): one hardware instruction on the device (within 2 ulp in float), a correctly rounded quotient on the host
template <class T> PS_HD T ps_rsqrt(T x) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 4) return rsqrtf(x);
  else return rsqrt(x);
#else
  return T(1) / ps_sqrt(x);
#endif
}

// Below this |Su x Sv| / max(|Su|^2, |Sv|^2) the normal is declared degenerate.
template <class T> struct DegenerateThreshold;
template <> struct DegenerateThreshold<float> { static constexpr float value = 1e-5f; };
template <> struct DegenerateThreshold<double> { static constexpr double value = 1e-12; };

// C(n,k) by the multiplicative formula: every intermediate is an integer below 2^53 for n <= 62.
PS_HD double binomial(int n, int k) {
  if (k < 0 || k > n) return 0.0;
  double r = 1.0;
  for (int i = 1; i <= k; ++i) r = r * double(n - k + i) / double(i);
  return r;
}

template <class T> PS_HD T int_pow(T x, int e) {
  T r = T(1);
  for (int i = 0; i < e; ++i) r *= x;
  return r;
}

// ---------------------------------------------------------------- Bernstein jets
// Values of B_{i,d}(t), i = 0..d, and (Order >= 1) first and (Order >= 2) second derivatives, O(d) each:
// B_{i,d} = C(d,i) t^i (1-t)^(d-i);  B' = d (B_{i-1,d-1} - B_{i,d-1});  B'' = d(d-1)(B_{i-2,d-2} - 2B_{i-1,d-2} + B_{i,d-2}).
// Level 3 of the multi-level evaluation: binomial rows C(d,.), C(d-1,.), C(d-2,.) for one direction.
struct BinomialRows {
  double c[3][kMaxDeg + 1];
};
PS_HD void fill_binomial_rows(int d, BinomialRows* rows) {
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k <= kMaxDeg; ++k) rows->c[r][k] = (d - r >= 0) ? binomial(d - r, k) : 0.0;
}
PS_HD double binom_of(const BinomialRows* rows, int d, int r, int k) {
  if (k < 0 || k > d - r) return 0.0;
  return rows ? rows->c[r][k] : binomial(d - r, k);
}

// Values of B_{i,d}(t), i = 0..d, and (Order >= 1) first and (Order >= 2) second derivatives, O(d) each:
// B_{i,d} = C(d,i) t^i (1-t)^(d-i);  B' = d (B_{i-1,d-1} - B_{i,d-1});  B'' = d(d-1)(B_{i-2,d-2} - 2B_{i-1,d-2} + B_{i,d-2}).
// rows: precomputed binomials (level 3), or null to compute them here.
template <class T, int Order>
PS_HD void bernstein_jet(int d, T t, T* PS_RESTRICT b, T* PS_RESTRICT db, T* PS_RESTRICT ddb,
                         const BinomialRows* rows = nullptr) {
  T tp[kMaxDeg + 1], sp[kMaxDeg + 1];
  const T s = T(1) - t;
  tp[0] = T(1);
  sp[0] = T(1);
  for (int k = 1; k <= d; ++k) {
    tp[k] = tp[k - 1] * t;
    sp[k] = sp[k - 1] * s;
  }
  // term(r, k) = B_{k, d-r}(t), zero outside 0..d-r
  auto term = [&](int r, int k) -> T {
    if (k < 0 || k > d - r) return T(0);
    return T(binom_of(rows, d, r, k)) * tp[k] * sp[d - r - k];
  };
  for (int i = 0; i <= d; ++i) b[i] = term(0, i);
  if constexpr (Order >= 1) {
    for (int i = 0; i <= d; ++i) db[i] = T(d) * (term(1, i - 1) - term(1, i));
  }
  if constexpr (Order >= 2) {
    for (int i = 0; i <= d; ++i)
      ddb[i] = d < 2 ? T(0) : T(d) * T(d - 1) * (term(2, i - 2) - T(2) * term(2, i - 1) + term(2, i));
  }
}

// ---------------------------------------------------------------- data views
// Control net in homogeneous form, NC = 3 (x y z) or 4 (w*x w*y w*z w), interleaved: P[(i*(n+1)+j)*NC + c].
template <class T> struct NetView {
  int m = 0, n = 0;
  const T* P = nullptr;
};

// Homogeneous jet of one sample: value and derivatives up to the order asked for.
template <class T, int NC> struct Jet {
  T s[NC], su[NC], sv[NC], suu[NC], suv[NC], svv[NC];
};
template <class T, int NC> PS_HD void clear(Jet<T, NC>& h) {
  for (int c = 0; c < NC; ++c) h.s[c] = h.su[c] = h.sv[c] = h.suu[c] = h.suv[c] = h.svv[c] = T(0);
}

// Outputs, structure of arrays (see include/parasurf/bezier.hpp); null = not requested.
template <class T> struct OutView {
  T* p[3] = {};
  T* du[3] = {};
  T* dv[3] = {};
  T* nrm[3] = {};
  T* duu[3] = {};
  T* duv[3] = {};
  T* dvv[3] = {};
  std::uint8_t* flag = nullptr;
};

// Cartesian jet after the rational quotient rule.
template <class T> struct CartJet {
  T s[3], su[3], sv[3], suu[3], suv[3], svv[3];
};

template <class T, int NC, int Order>
PS_HD CartJet<T> to_cartesian(const Jet<T, NC>& h) {
  CartJet<T> r;
  if constexpr (NC == 3) {
    for (int c = 0; c < 3; ++c) {
      r.s[c] = h.s[c];
      r.su[c] = h.su[c];
      r.sv[c] = h.sv[c];
      r.suu[c] = h.suu[c];
      r.suv[c] = h.suv[c];
      r.svv[c] = h.svv[c];
    }
  } else {
    // S = X/W;  Su = (Xu - S Wu)/W;  Suu = (Xuu - 2 Su Wu - S Wuu)/W;  Suv = (Xuv - Su Wv - Sv Wu - S Wuv)/W
    const T iw = T(1) / h.s[3];
    for (int c = 0; c < 3; ++c) r.s[c] = h.s[c] * iw;
    if constexpr (Order >= 1) {
      for (int c = 0; c < 3; ++c) {
        r.su[c] = (h.su[c] - r.s[c] * h.su[3]) * iw;
        r.sv[c] = (h.sv[c] - r.s[c] * h.sv[3]) * iw;
      }
    }
    if constexpr (Order >= 2) {
      for (int c = 0; c < 3; ++c) {
        r.suu[c] = (h.suu[c] - T(2) * r.su[c] * h.su[3] - r.s[c] * h.suu[3]) * iw;
        r.suv[c] = (h.suv[c] - r.su[c] * h.sv[3] - r.sv[c] * h.su[3] - r.s[c] * h.suv[3]) * iw;
        r.svv[c] = (h.svv[c] - T(2) * r.sv[c] * h.sv[3] - r.s[c] * h.svv[3]) * iw;
      }
    }
  }
  return r;
}

template <class T> PS_HD void cross(const T* a, const T* b, T* out) {
  out[0] = a[1] * b[2] - a[2] * b[1];
  out[1] = a[2] * b[0] - a[0] * b[2];
  out[2] = a[0] * b[1] - a[1] * b[0];
}
template <class T> PS_HD T dot3(const T* a, const T* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

// Whether Su x Sv (squared length len2) is a normal, not a vanishing one, relative to |Su|^2 and |Sv|^2.
template <class T> PS_HD bool normal_is_regular(T len2, T su2, T sv2) {
  const T thr = DegenerateThreshold<T>::value * ps_max(su2, sv2);
  return len2 > thr * thr && len2 > T(0);
}

// Unit normal Su x Sv; returns false (degenerate) when it vanishes relative to |Su|, |Sv|. Branch-free: where it
// returns false, nrm holds inf or NaN and the caller replaces it (limit normal, or zero).
template <class T> PS_HD bool unit_normal(const T* su, const T* sv, T* nrm) {
  cross(su, sv, nrm);
  const T len2 = dot3(nrm, nrm);
  const T inv = ps_rsqrt(len2);
  for (int c = 0; c < 3; ++c) nrm[c] *= inv;
  return normal_is_regular(len2, dot3(su, su), dot3(sv, sv));
}

// Limit normal where Su x Sv vanishes: near a collapsed row Sv ~ (u-u0) Suv, near a collapsed column
// Su ~ (v-v0) Suv, so the direction is +-(Su x Suv) + +-(Suv x Sv), signs pointing into the patch.
template <class T> PS_HD bool limit_normal(const CartJet<T>& j, T u, T v, T* nrm) {
  T a[3], b[3];
  cross(j.su, j.suv, a);
  cross(j.suv, j.sv, b);
  const T su = u <= T(0.5) ? T(1) : T(-1);
  const T sv = v <= T(0.5) ? T(1) : T(-1);
  for (int c = 0; c < 3; ++c) nrm[c] = su * a[c] + sv * b[c];
  const T len2 = dot3(nrm, nrm);
  const T scale = ps_max(dot3(j.su, j.su), dot3(j.sv, j.sv)) + dot3(j.suv, j.suv);
  if (!(len2 > T(1e-30) * scale * scale) || !(len2 > T(0))) {
    nrm[0] = nrm[1] = nrm[2] = T(0);
    return false;
  }
  const T inv = T(1) / ps_sqrt(len2);
  for (int c = 0; c < 3; ++c) nrm[c] *= inv;
  return true;
}

// ---------------------------------------------------------------- per-sample methods
// Direct: Bernstein jets per sample, then sum-factorised contraction (O(m+n) basis, O(mn) sum).
template <class T, int NC, int Order>
PS_HD Jet<T, NC> jet_direct(const NetView<T>& net, T u, T v) {
  T bu[kMaxDeg + 1], dbu[kMaxDeg + 1], ddbu[kMaxDeg + 1];
  T bv[kMaxDeg + 1], dbv[kMaxDeg + 1], ddbv[kMaxDeg + 1];
  bernstein_jet<T, Order>(net.m, u, bu, dbu, ddbu);
  bernstein_jet<T, Order>(net.n, v, bv, dbv, ddbv);
  Jet<T, NC> h;
  clear(h);
  for (int i = 0; i <= net.m; ++i) {
    T q[NC] = {}, qv[NC] = {}, qvv[NC] = {};
    const T* row = net.P + std::int64_t(i) * (net.n + 1) * NC;
    for (int j = 0; j <= net.n; ++j) {
      for (int c = 0; c < NC; ++c) {
        const T p = row[j * NC + c];
        q[c] += p * bv[j];
        if constexpr (Order >= 1) qv[c] += p * dbv[j];
        if constexpr (Order >= 2) qvv[c] += p * ddbv[j];
      }
    }
    for (int c = 0; c < NC; ++c) {
      h.s[c] += bu[i] * q[c];
      if constexpr (Order >= 1) {
        h.su[c] += dbu[i] * q[c];
        h.sv[c] += bu[i] * qv[c];
      }
      if constexpr (Order >= 2) {
        h.suu[c] += ddbu[i] * q[c];
        h.suv[c] += dbu[i] * qv[c];
        h.svv[c] += bu[i] * qvv[c];
      }
    }
  }
  return h;
}

// Brute force (BRF): eq. (1) with every Bernstein term, and its derivatives, recomputed per term.
template <class T> PS_HD T brute_basis(int d, int i, T t) {
  if (i < 0 || i > d) return T(0);
  return T(binomial(d, i)) * int_pow(t, i) * int_pow(T(1) - t, d - i);
}
template <class T> PS_HD T brute_basis_d1(int d, int i, T t) {
  return T(d) * (brute_basis(d - 1, i - 1, t) - brute_basis(d - 1, i, t));
}
template <class T> PS_HD T brute_basis_d2(int d, int i, T t) {
  if (d < 2) return T(0);
  return T(d) * T(d - 1) *
         (brute_basis(d - 2, i - 2, t) - T(2) * brute_basis(d - 2, i - 1, t) + brute_basis(d - 2, i, t));
}

template <class T, int NC, int Order>
PS_HD Jet<T, NC> jet_brute(const NetView<T>& net, T u, T v) {
  Jet<T, NC> h;
  clear(h);
  for (int i = 0; i <= net.m; ++i) {
    for (int j = 0; j <= net.n; ++j) {
      const T* p = net.P + (std::int64_t(i) * (net.n + 1) + j) * NC;
      const T bu = brute_basis(net.m, i, u), bv = brute_basis(net.n, j, v);
      for (int c = 0; c < NC; ++c) h.s[c] += p[c] * bu * bv;
      if constexpr (Order >= 1) {
        const T dbu = brute_basis_d1(net.m, i, u), dbv = brute_basis_d1(net.n, j, v);
        for (int c = 0; c < NC; ++c) {
          h.su[c] += p[c] * dbu * bv;
          h.sv[c] += p[c] * bu * dbv;
        }
        if constexpr (Order >= 2) {
          const T ddbu = brute_basis_d2(net.m, i, u), ddbv = brute_basis_d2(net.n, j, v);
          for (int c = 0; c < NC; ++c) {
            h.suu[c] += p[c] * ddbu * bv;
            h.suv[c] += p[c] * dbu * dbv;
            h.svv[c] += p[c] * bu * ddbv;
          }
        }
      }
    }
  }
  return h;
}

// Multi-level evaluation, level 1 (the paper's Algorithm 1): O(mn) sum over precomputed Bernstein rows.
// bu/dbu/ddbu point at the sample's row of the level-2 u table, bv/... at its column of the v table.
template <class T, int NC, int Order>
PS_HD Jet<T, NC> jet_tables(const NetView<T>& net, const T* bu, const T* dbu, const T* ddbu, const T* bv,
                            const T* dbv, const T* ddbv) {
  Jet<T, NC> h;
  clear(h);
  for (int i = 0; i <= net.m; ++i) {
    for (int j = 0; j <= net.n; ++j) {
      const T* p = net.P + (std::int64_t(i) * (net.n + 1) + j) * NC;
      const T w = bu[i] * bv[j];
      for (int c = 0; c < NC; ++c) h.s[c] += p[c] * w;
      if constexpr (Order >= 1) {
        const T wu = dbu[i] * bv[j], wv = bu[i] * dbv[j];
        for (int c = 0; c < NC; ++c) {
          h.su[c] += p[c] * wu;
          h.sv[c] += p[c] * wv;
        }
      }
      if constexpr (Order >= 2) {
        const T wuu = ddbu[i] * bv[j], wuv = dbu[i] * dbv[j], wvv = bu[i] * ddbv[j];
        for (int c = 0; c < NC; ++c) {
          h.suu[c] += p[c] * wuu;
          h.suv[c] += p[c] * wuv;
          h.svv[c] += p[c] * wvv;
        }
      }
    }
  }
  return h;
}

// de Casteljau on d+1 points of NC components (stride NC): value, first and second derivative.
template <class T, int NC, int Order>
PS_HD void casteljau_curve(const T* pts, int d, T t, T* val, T* d1, T* d2) {
  T w[(kMaxDeg + 1) * NC];
  for (int k = 0; k < (d + 1) * NC; ++k) w[k] = pts[k];
  const T s = T(1) - t;
  if constexpr (Order >= 2) {
    for (int c = 0; c < NC; ++c) d2[c] = T(0);
  }
  for (int r = d; r >= 1; --r) {  // r+1 points remain before this pass
    if constexpr (Order >= 2) {
      if (r == 2)
        for (int c = 0; c < NC; ++c) d2[c] = T(d) * T(d - 1) * (w[2 * NC + c] - T(2) * w[NC + c] + w[c]);
    }
    if constexpr (Order >= 1) {
      if (r == 1)
        for (int c = 0; c < NC; ++c) d1[c] = T(d) * (w[NC + c] - w[c]);
    }
    for (int k = 0; k < r; ++k)
      for (int c = 0; c < NC; ++c) w[k * NC + c] = s * w[k * NC + c] + t * w[(k + 1) * NC + c];
  }
  for (int c = 0; c < NC; ++c) val[c] = w[c];
}

template <class T, int NC, int Order>
PS_HD Jet<T, NC> jet_casteljau(const NetView<T>& net, T u, T v) {
  T q[(kMaxDeg + 1) * NC], qv[(kMaxDeg + 1) * NC], qvv[(kMaxDeg + 1) * NC];
  for (int i = 0; i <= net.m; ++i)
    casteljau_curve<T, NC, Order>(net.P + std::int64_t(i) * (net.n + 1) * NC, net.n, v, q + i * NC, qv + i * NC,
                                  qvv + i * NC);
  Jet<T, NC> h;
  clear(h);
  casteljau_curve<T, NC, Order>(q, net.m, u, h.s, h.su, h.suu);
  if constexpr (Order >= 1) {
    T unused[NC];
    casteljau_curve<T, NC, (Order >= 2 ? 1 : 0)>(qv, net.m, u, h.sv, h.suv, unused);
  }
  if constexpr (Order >= 2) {
    T unused1[NC], unused2[NC];
    casteljau_curve<T, NC, 0>(qvv, net.m, u, h.svv, unused1, unused2);
  }
  return h;
}

// Matrix form U(t_u) G V(t_v)^T (MAT). G is stored per pair of sub-intervals (a,b) in a power basis local to
// them (u = c_a + h_u t_u, t in [-1,1]), which keeps the conversion well conditioned up to degree 32.
template <class T> struct PowerView {
  int m = 0, n = 0, ku = 1, kv = 1;  // sub-intervals per direction
  const T* G = nullptr;             // [((a*kv + b)*(m+1) + k)*(n+1) + l]*NC + c
};

template <class T> PS_HD int interval_of(T t, int k, T* local) {
  int a = int(t * T(k));
  a = a < 0 ? 0 : (a >= k ? k - 1 : a);
  const T h = T(0.5) / T(k);
  const T center = (T(a) + T(0.5)) / T(k);
  *local = (t - center) / h;
  return a;
}

template <class T, int NC, int Order>
PS_HD Jet<T, NC> jet_matrix(const PowerView<T>& pw, T u, T v) {
  T tu, tv;
  const int a = interval_of(u, pw.ku, &tu);
  const int b = interval_of(v, pw.kv, &tv);
  const T* G = pw.G + (std::int64_t(a) * pw.kv + b) * (pw.m + 1) * (pw.n + 1) * NC;
  // Horner in t_v per row k (value, first, second derivative), then Horner in t_u over the rows.
  T s0[NC] = {}, s1[NC] = {}, s2[NC] = {};     // u-Horner of row values: S, dS/dtu, d2S/dtu2 / 2
  T v0[NC] = {}, v1[NC] = {};                  // u-Horner of row d/dtv: Sv, dSv/dtu
  T w0[NC] = {};                               // u-Horner of row d2/dtv2 / 2: Svv / 2
  for (int k = pw.m; k >= 0; --k) {
    const T* row = G + std::int64_t(k) * (pw.n + 1) * NC;
    T r0[NC], r1[NC], r2[NC];
    for (int c = 0; c < NC; ++c) r0[c] = r1[c] = r2[c] = T(0);
    for (int l = pw.n; l >= 0; --l) {
      for (int c = 0; c < NC; ++c) {
        if constexpr (Order >= 2) r2[c] = r2[c] * tv + r1[c];
        if constexpr (Order >= 1) r1[c] = r1[c] * tv + r0[c];
        r0[c] = r0[c] * tv + row[l * NC + c];
      }
    }
    for (int c = 0; c < NC; ++c) {
      if constexpr (Order >= 2) {
        s2[c] = s2[c] * tu + s1[c];
        v1[c] = v1[c] * tu + v0[c];
        w0[c] = w0[c] * tu + r2[c];
      }
      if constexpr (Order >= 1) {
        s1[c] = s1[c] * tu + s0[c];
        v0[c] = v0[c] * tu + r1[c];
      }
      s0[c] = s0[c] * tu + r0[c];
    }
  }
  const T iu = T(2 * pw.ku), iv = T(2 * pw.kv);  // dt/du = 1/h = 2k
  Jet<T, NC> h;
  clear(h);
  for (int c = 0; c < NC; ++c) {
    h.s[c] = s0[c];
    if constexpr (Order >= 1) {
      h.su[c] = s1[c] * iu;
      h.sv[c] = v0[c] * iv;
    }
    if constexpr (Order >= 2) {
      h.suu[c] = T(2) * s2[c] * iu * iu;
      h.suv[c] = v1[c] * iu * iv;
      h.svv[c] = T(2) * w0[c] * iv * iv;
    }
  }
  return h;
}

// Factored method, stage 2: one step k of the rank-(m+1) update for one sample and one component,
// with b = B_k(u) (and derivatives) and q = Q_k(v) (and v-derivatives).
template <class T, int Order>
PS_HD void factored_step(T b, T db, T ddb, T q, T qv, T qvv, T& s, T& su, T& sv, T& suu, T& suv, T& svv) {
  s += b * q;
  if constexpr (Order >= 1) {
    su += db * q;
    sv += b * qv;
  }
  if constexpr (Order >= 2) {
    suu += ddb * q;
    suv += db * qv;
    svv += b * qvv;
  }
}

// ---------------------------------------------------------------- finishing and storing one sample
// Where Su x Sv vanished: re-evaluate with second derivatives and take the limit normal. Out of line.
template <class T, int NC>
PS_HD_NOINLINE bool degenerate_normal(const NetView<T>& net, T u, T v, T* nrm) {
  const CartJet<T> j2 = to_cartesian<T, NC, 2>(jet_direct<T, NC, 2>(net, u, v));
  return limit_normal(j2, u, v, nrm);
}

// Stores one sample's outputs, except the normal where Su x Sv vanished: returns false there, and the caller
// finishes that sample with store_degenerate_normal.
template <class T, int NC, int Order>
PS_HD bool store_regular_sample(const Jet<T, NC>& h, const OutView<T>& out, std::int64_t idx) {
  const CartJet<T> j = to_cartesian<T, NC, Order>(h);
  bool ok = true;
  for (int c = 0; c < 3; ++c)
    if (out.p[c]) out.p[c][idx] = j.s[c];
  if constexpr (Order >= 1) {
    for (int c = 0; c < 3; ++c) {
      if (out.du[c]) out.du[c][idx] = j.su[c];
      if (out.dv[c]) out.dv[c][idx] = j.sv[c];
    }
    if (out.nrm[0]) {
      T nrm[3];
      ok = unit_normal(j.su, j.sv, nrm);
      if (ok)
        for (int c = 0; c < 3; ++c) out.nrm[c][idx] = nrm[c];
      if (out.flag) out.flag[idx] = ok ? 0 : 1;
    }
  }
  if constexpr (Order >= 2) {
    for (int c = 0; c < 3; ++c) {
      if (out.duu[c]) out.duu[c][idx] = j.suu[c];
      if (out.duv[c]) out.duv[c][idx] = j.suv[c];
      if (out.dvv[c]) out.dvv[c][idx] = j.svv[c];
    }
  }
  return ok;
}

// The normal of a sample where Su x Sv vanished: the limit normal from a second-order re-evaluation.
template <class T, int NC>
PS_HD void store_degenerate_normal(const NetView<T>& net, T u, T v, const OutView<T>& out, std::int64_t idx) {
  T nrm[3];
  degenerate_normal<T, NC>(net, u, v, nrm);
  for (int c = 0; c < 3; ++c) out.nrm[c][idx] = nrm[c];
}

template <class T, int NC, int Order>
PS_HD void store_sample(const Jet<T, NC>& h, const OutView<T>& out, std::int64_t idx, T u, T v,
                        const NetView<T>& net) {
  if (store_regular_sample<T, NC, Order>(h, out, idx)) return;
  if constexpr (Order >= 2) {
    // the jet at hand has the second derivatives the limit normal needs
    T nrm[3];
    limit_normal(to_cartesian<T, NC, Order>(h), u, v, nrm);
    for (int c = 0; c < 3; ++c) out.nrm[c][idx] = nrm[c];
  } else {
    store_degenerate_normal<T, NC>(net, u, v, out, idx);
  }
}

// Grid parameter of sample i of count (count >= 2), exact at both ends.
template <class T> PS_HD T grid_param(std::int64_t i, std::int64_t count) {
  return i == count - 1 ? T(1) : T(double(i) / double(count - 1));
}

}  // namespace parasurf::kern
