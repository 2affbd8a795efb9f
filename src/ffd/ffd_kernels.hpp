// B-spline volume and Bézier-piece arithmetic shared by the CPU loops and the CUDA kernels.
// Accurate FFD after Cui & Feng, "Real-time B-spline Free-Form Deformation via GPU acceleration",
// Computers & Graphics 37 (2013): a planar piece inside one knot box maps to a polynomial surface, whose
// Bernstein control points come from samples at Chebyshev points and a precomputed inverse collocation matrix.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/hd.hpp"

namespace parasurf::ffd {

constexpr int kMaxVolumeDegree = 3;
constexpr int kMaxPieceDegree = 9;  // a plane through a tricubic box: at most 3 + 3 + 3 per direction

// The lattice as the kernels see it: knots of the three axes back to back, control points xyz interleaved.
template <class T>
struct LatticeView {
  const T* knots = nullptr;
  const T* control_points = nullptr;
  int knot_offset[3] = {0, 0, 0};
  int degree[3] = {3, 3, 3};
  int count[3] = {4, 4, 4};
  T domain_lo[3] = {0, 0, 0}, domain_hi[3] = {1, 1, 1};
  T to_param[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};    // world -> parameter, 3x4 row-major
  T to_world[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};    // its inverse
};

template <class T>
PS_HD void affine_apply(const T* m, const T* p, T* out) {
  for (int r = 0; r < 3; ++r) out[r] = m[4 * r] * p[0] + m[4 * r + 1] * p[1] + m[4 * r + 2] * p[2] + m[4 * r + 3];
}

// Knot span s with knots[s] <= u < knots[s+1], clamped to the domain's first and last spans.
template <class T>
PS_HD int find_span(const T* knots, int degree, int count, T u) {
  int lo = degree, hi = count;  // spans degree .. count-1
  if (u >= knots[count]) return count - 1;
  if (u <= knots[degree]) {
    while (lo + 1 < count && knots[lo + 1] <= knots[degree]) ++lo;  // skip empty spans at the start
    return lo;
  }
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (u < knots[mid]) hi = mid;
    else lo = mid;
  }
  return lo;
}

// The degree+1 basis functions non-zero on `span` and their derivatives at u (u may lie outside the span:
// the span's polynomial is extrapolated, which is what a piece's samples outside its box need).
template <class T>
PS_HD void basis_and_derivative(const T* knots, int span, int degree, T u, T* value, T* derivative) {
  T left[kMaxVolumeDegree + 1], right[kMaxVolumeDegree + 1], temp[kMaxVolumeDegree + 1];
  value[0] = T(1);
  for (int j = 1; j <= degree; ++j) {
    left[j] = u - knots[span + 1 - j];
    right[j] = knots[span + j] - u;
    T saved = T(0);
    for (int r = 0; r < j; ++r) {
      const T t = value[r] / (right[r + 1] + left[j - r]);
      if (j == degree) temp[r] = t;
      value[r] = saved + right[r + 1] * t;
      saved = left[j - r] * t;
    }
    value[j] = saved;
  }
  // N'_{i,p} = p (N_{i,p-1} / (t_{i+p} - t_i) - N_{i+1,p-1} / (t_{i+p+1} - t_{i+1})), from the last pass's quotients.
  for (int r = 0; r <= degree; ++r) {
    const T before = r > 0 ? temp[r - 1] : T(0);
    const T after = r < degree ? temp[r] : T(0);
    derivative[r] = T(degree) * (before - after);
  }
}

// The same with compile-time degrees, so that the loops unroll and the basis stays in registers (the tricubic
// lattice of every benchmark).
template <class T, int P>
PS_HD void basis_fixed(const T* knots, int span, T u, T* value) {
  T left[P + 1], right[P + 1];
  value[0] = T(1);
PS_UNROLL
  for (int j = 1; j <= P; ++j) {
    left[j] = u - knots[span + 1 - j];
    right[j] = knots[span + j] - u;
    T saved = T(0);
PS_UNROLL
    for (int r = 0; r < j; ++r) {
      const T t = value[r] / (right[r + 1] + left[j - r]);
      value[r] = saved + right[r + 1] * t;
      saved = left[j - r] * t;
    }
    value[j] = saved;
  }
}

// Runtime degree 1..3: the compile-time scheme above.
template <class T>
PS_HD void basis_only(const T* knots, int span, int degree, T u, T* value) {
  if (degree == 1) basis_fixed<T, 1>(knots, span, u, value);
  else if (degree == 2) basis_fixed<T, 2>(knots, span, u, value);
  else basis_fixed<T, 3>(knots, span, u, value);
}

// R at parameter q with the polynomial of the given spans.
template <class T>
PS_HD void volume_point(const LatticeView<T>& L, const int* span, const T* q, T* out) {
  T nu[4], nv[4], nw[4];
  basis_only(L.knots + L.knot_offset[0], span[0], L.degree[0], q[0], nu);
  basis_only(L.knots + L.knot_offset[1], span[1], L.degree[1], q[1], nv);
  basis_only(L.knots + L.knot_offset[2], span[2], L.degree[2], q[2], nw);
  T acc[3] = {0, 0, 0};
  const int i0 = span[0] - L.degree[0], j0 = span[1] - L.degree[1], k0 = span[2] - L.degree[2];
  for (int c = 0; c <= L.degree[2]; ++c) {
    T plane[3] = {0, 0, 0};
    for (int b = 0; b <= L.degree[1]; ++b) {
      const T* row = L.control_points + 3 * (std::int64_t(i0) + std::int64_t(L.count[0]) * ((j0 + b) + std::int64_t(L.count[1]) * (k0 + c)));
      T line[3] = {0, 0, 0};
      for (int a = 0; a <= L.degree[0]; ++a)
        for (int d = 0; d < 3; ++d) line[d] += nu[a] * row[3 * a + d];
      for (int d = 0; d < 3; ++d) plane[d] += nv[b] * line[d];
    }
    for (int d = 0; d < 3; ++d) acc[d] += nw[c] * plane[d];
  }
  for (int d = 0; d < 3; ++d) out[d] = acc[d];
}

template <class T, int P0, int P1, int P2>
PS_HD void volume_point_fixed(const LatticeView<T>& L, const int* span, const T* q, T* out) {
  T nu[P0 + 1], nv[P1 + 1], nw[P2 + 1];
  basis_fixed<T, P0>(L.knots + L.knot_offset[0], span[0], q[0], nu);
  basis_fixed<T, P1>(L.knots + L.knot_offset[1], span[1], q[1], nv);
  basis_fixed<T, P2>(L.knots + L.knot_offset[2], span[2], q[2], nw);
  T acc[3] = {0, 0, 0};
  const int row_stride = 3 * L.count[0], plane_stride = row_stride * L.count[1];
  const T* base = L.control_points + 3 * (span[0] - P0) + row_stride * (span[1] - P1) + std::int64_t(plane_stride) * (span[2] - P2);
PS_UNROLL
  for (int c = 0; c <= P2; ++c) {
    T plane[3] = {0, 0, 0};
PS_UNROLL
    for (int b = 0; b <= P1; ++b) {
      const T* row = base + std::int64_t(plane_stride) * c + row_stride * b;
      T line[3] = {0, 0, 0};
PS_UNROLL
      for (int a = 0; a <= P0; ++a)
PS_UNROLL
        for (int d = 0; d < 3; ++d) line[d] += nu[a] * row[3 * a + d];
PS_UNROLL
      for (int d = 0; d < 3; ++d) plane[d] += nv[b] * line[d];
    }
PS_UNROLL
    for (int d = 0; d < 3; ++d) acc[d] += nw[c] * plane[d];
  }
  for (int d = 0; d < 3; ++d) out[d] = acc[d];
}

// R and dR/dq (columns: d/du, d/dv, d/dw; jac[3*row + col]) at q with the given spans.
template <class T>
PS_HD void volume_point_jacobian(const LatticeView<T>& L, const int* span, const T* q, T* out, T* jac) {
  T n[3][4], dn[3][4];
  for (int a = 0; a < 3; ++a) basis_and_derivative(L.knots + L.knot_offset[a], span[a], L.degree[a], q[a], n[a], dn[a]);
  T p[3] = {0, 0, 0}, du[3] = {0, 0, 0}, dv[3] = {0, 0, 0}, dw[3] = {0, 0, 0};
  const int i0 = span[0] - L.degree[0], j0 = span[1] - L.degree[1], k0 = span[2] - L.degree[2];
  for (int c = 0; c <= L.degree[2]; ++c) {
    T pl[3] = {0, 0, 0}, plu[3] = {0, 0, 0}, plv[3] = {0, 0, 0};
    for (int b = 0; b <= L.degree[1]; ++b) {
      const T* row = L.control_points + 3 * (std::int64_t(i0) + std::int64_t(L.count[0]) * ((j0 + b) + std::int64_t(L.count[1]) * (k0 + c)));
      T line[3] = {0, 0, 0}, lineu[3] = {0, 0, 0};
      for (int a = 0; a <= L.degree[0]; ++a)
        for (int d = 0; d < 3; ++d) {
          line[d] += n[0][a] * row[3 * a + d];
          lineu[d] += dn[0][a] * row[3 * a + d];
        }
      for (int d = 0; d < 3; ++d) {
        pl[d] += n[1][b] * line[d];
        plu[d] += n[1][b] * lineu[d];
        plv[d] += dn[1][b] * line[d];
      }
    }
    for (int d = 0; d < 3; ++d) {
      p[d] += n[2][c] * pl[d];
      du[d] += n[2][c] * plu[d];
      dv[d] += n[2][c] * plv[d];
      dw[d] += dn[2][c] * pl[d];
    }
  }
  for (int d = 0; d < 3; ++d) {
    out[d] = p[d];
    jac[3 * d + 0] = du[d];
    jac[3 * d + 1] = dv[d];
    jac[3 * d + 2] = dw[d];
  }
}

template <class T>
PS_HD void cross3(const T* a, const T* b, T* out) {
  out[0] = a[1] * b[2] - a[2] * b[1];
  out[1] = a[2] * b[0] - a[0] * b[2];
  out[2] = a[0] * b[1] - a[1] * b[0];
}

template <class T>
PS_HD void normalize3(T* v) {
  const T len2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
  if (len2 > T(0)) {
    const T inv = T(1) / std::sqrt(len2);
    v[0] *= inv, v[1] *= inv, v[2] *= inv;
  }
}

// Point FFD of one world point with its normal: cof(J) n, which is how a surface element's normal transforms.
// Points outside the domain stay where they are.
template <class T>
PS_HD void deform_point_with_normal(const LatticeView<T>& L, const T* x, const T* normal, T* out, T* out_normal) {
  T q[3];
  affine_apply(L.to_param, x, q);
  bool inside = true;
  for (int a = 0; a < 3; ++a) inside = inside && q[a] >= L.domain_lo[a] && q[a] <= L.domain_hi[a];
  if (!inside) {
    for (int d = 0; d < 3; ++d) out[d] = x[d], out_normal[d] = normal[d];
    return;
  }
  int span[3];
  for (int a = 0; a < 3; ++a) span[a] = find_span(L.knots + L.knot_offset[a], L.degree[a], L.count[a], q[a]);
  T jq[9];
  volume_point_jacobian(L, span, q, out, jq);
  // d R / d x = (d R / d q) M, with M the linear part of world -> parameter.
  T j[9];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c)
      j[3 * r + c] = jq[3 * r] * L.to_param[c] + jq[3 * r + 1] * L.to_param[4 + c] + jq[3 * r + 2] * L.to_param[8 + c];
  const T c0[3] = {j[0], j[3], j[6]}, c1[3] = {j[1], j[4], j[7]}, c2[3] = {j[2], j[5], j[8]};
  T a[3], b[3], c[3];
  cross3(c1, c2, a);
  cross3(c2, c0, b);
  cross3(c0, c1, c);
  for (int d = 0; d < 3; ++d) out_normal[d] = normal[0] * a[d] + normal[1] * b[d] + normal[2] * c[d];
  normalize3(out_normal);
}

// ------------------------------------------------------------------------------------------------ pieces

// One Bézier surface: the plane p(s,t) = origin + s axis_s + t axis_t (parameter space) over [0,1]^2, deformed
// by the polynomial of one knot box (span[0] < 0: outside the lattice, the identity in world space).
template <class T>
struct SurfaceRecord {
  T origin[3], axis_s[3], axis_t[3];
  int span[3];
  int degree_s, degree_t;
  std::int64_t control_offset;  // first of (degree_s+1)(degree_t+1) points in the sample and control buffers
};

// Chebyshev node i of n+1 on [0, 1] (the seed's equation 2).
template <class T>
PS_HD T chebyshev_node(int i, int n) {
  return (T(1) - std::cos(T(2 * i + 1) / T(2 * (n + 1)) * T(3.14159265358979323846))) / T(2);
}

// Offset of the (n+1)^2 inverse collocation matrix of degree n in the table of degrees 1..kMaxPieceDegree.
PS_HD int inverse_matrix_offset(int n) {
  int off = 0;
  for (int k = 1; k < n; ++k) off += (k + 1) * (k + 1);
  return off;
}
constexpr int kInverseTableSize = 4 + 9 + 16 + 25 + 36 + 49 + 64 + 81 + 100;

// The sample of a surface at (u, v) of its rectangle.
template <class T>
PS_HD void surface_sample_at(const LatticeView<T>& L, const SurfaceRecord<T>& s, T u, T v, T* out) {
  T q[3];
  for (int d = 0; d < 3; ++d) q[d] = s.origin[d] + u * s.axis_s[d] + v * s.axis_t[d];
  if (s.span[0] < 0) {
    affine_apply(L.to_world, q, out);
    return;
  }
  if (L.degree[0] == 3 && L.degree[1] == 3 && L.degree[2] == 3) volume_point_fixed<T, 3, 3, 3>(L, s.span, q, out);
  else volume_point(L, s.span, q, out);
}

// The sample of a surface at Chebyshev point (i, j).
template <class T>
PS_HD void surface_sample(const LatticeView<T>& L, const SurfaceRecord<T>& s, int i, int j, T* out) {
  surface_sample_at(L, s, chebyshev_node<T>(i, s.degree_s), chebyshev_node<T>(j, s.degree_t), out);
}

// All control points of one surface, Sinv F Tinv^T (the seed's two small products per piece), separably.
template <class T>
PS_HD void surface_controls(const T* inverse_table, const SurfaceRecord<T>& s, const T* samples, T* controls) {
  const int ns = s.degree_s, nt = s.degree_t;
  const T* si = inverse_table + inverse_matrix_offset(ns);
  const T* ti = inverse_table + inverse_matrix_offset(nt);
  const T* f = samples + 3 * s.control_offset;
  T* q = controls + 3 * s.control_offset;
  T tmp[(kMaxPieceDegree + 1) * (kMaxPieceDegree + 1) * 3];
  for (int i = 0; i <= ns; ++i)
    for (int b = 0; b <= nt; ++b) {
      T acc[3] = {0, 0, 0};
      for (int j = 0; j <= nt; ++j)
        for (int d = 0; d < 3; ++d) acc[d] += ti[b * (nt + 1) + j] * f[3 * (i * (nt + 1) + j) + d];
      for (int d = 0; d < 3; ++d) tmp[3 * (i * (nt + 1) + b) + d] = acc[d];
    }
  for (int a = 0; a <= ns; ++a)
    for (int b = 0; b <= nt; ++b) {
      T acc[3] = {0, 0, 0};
      for (int i = 0; i <= ns; ++i)
        for (int d = 0; d < 3; ++d) acc[d] += si[a * (ns + 1) + i] * tmp[3 * (i * (nt + 1) + b) + d];
      for (int d = 0; d < 3; ++d) q[3 * (a * (nt + 1) + b) + d] = acc[d];
    }
}

// Bernstein basis of degree n at x with derivatives.
template <class T>
PS_HD void bernstein_and_derivative(int n, T x, T* value, T* derivative) {
  // Degree n-1 by the triangular scheme, then degree n and n (B^{n-1}_{i-1} - B^{n-1}_i).
  T prev[kMaxPieceDegree + 1];
  const T y = T(1) - x;
  prev[0] = T(1);
  for (int k = 1; k < n; ++k) {
    T saved = T(0);
    for (int i = 0; i < k; ++i) {
      const T t = prev[i];
      prev[i] = saved + y * t;
      saved = x * t;
    }
    prev[k] = saved;
  }
  for (int i = 0; i <= n; ++i) {
    const T lo = i > 0 ? prev[i - 1] : T(0);
    const T hi = i < n ? prev[i] : T(0);
    value[i] = x * lo + y * hi;
    derivative[i] = T(n) * (lo - hi);
  }
}

// Control points stored relative to the first: entry 0 is Q_00, entry k > 0 is Q_k - Q_00. Derivatives then sum
// small differences held to full relative precision, so that float normals of a tiny piece stay accurate (absolute
// coordinates would cancel away the digits a tiny piece's tangents live in).
template <class T>
PS_HD void encode_relative(const double* q, int count, T* out) {
  for (int d = 0; d < 3; ++d) out[d] = T(q[d]);
  for (int k = 1; k < count; ++k)
    for (int d = 0; d < 3; ++d) out[3 * k + d] = T(q[3 * k + d] - q[d]);
}

// Position and unnormalised normal (P_s x P_t) of a surface at (s, t) from its relative control points.
template <class T, class R>
PS_HD void surface_point(const R& rec, const T* controls, T s, T t, T* out, T* normal) {
  T bs[kMaxPieceDegree + 1], dbs[kMaxPieceDegree + 1], bt[kMaxPieceDegree + 1], dbt[kMaxPieceDegree + 1];
  bernstein_and_derivative(rec.degree_s, s, bs, dbs);
  bernstein_and_derivative(rec.degree_t, t, bt, dbt);
  const T* c = controls + 3 * rec.control_offset;
  T p[3] = {0, 0, 0}, ps[3] = {0, 0, 0}, pt[3] = {0, 0, 0};
  for (int a = 0; a <= rec.degree_s; ++a) {
    T row[3] = {0, 0, 0}, rowt[3] = {0, 0, 0};
    for (int b = 0; b <= rec.degree_t; ++b) {
      const int k = a * (rec.degree_t + 1) + b;
      if (k == 0) continue;  // Q_00 - Q_00
      for (int d = 0; d < 3; ++d) {
        const T v = c[3 * k + d];
        row[d] += bt[b] * v;
        rowt[d] += dbt[b] * v;
      }
    }
    for (int d = 0; d < 3; ++d) {
      p[d] += bs[a] * row[d];
      ps[d] += dbs[a] * row[d];
      pt[d] += bs[a] * rowt[d];
    }
  }
  for (int d = 0; d < 3; ++d) out[d] = c[d] + p[d];
  cross3(ps, pt, normal);
}

// One evaluation of an output vertex: which surface and where in it.
template <class T>
struct VertexRecord {
  T s, t;
  std::int32_t surface;
};

// One record's point and unit normal (the GPU evaluates records in parallel, then averages per vertex, so that a
// vertex shared by hundreds of surfaces, like a pole, does not serialise one thread).
template <class T, class R>
PS_HD void record_point(const R* surfaces, const T* controls, const VertexRecord<T>& rec, T* position, T* normal) {
  surface_point(surfaces[rec.surface], controls, rec.s, rec.t, position, normal);
  normalize3(normal);
}

// Output vertex v: position from its first record, normal as the mean of the unit normals of its surfaces
// (more than one only on creases between non-coplanar faces).
template <class T, class R>
PS_HD void accurate_vertex(const R* surfaces, const T* controls, const VertexRecord<T>* records,
                           const std::int64_t* record_offsets, std::int64_t v, T* position, T* normal) {
  T n_sum[3] = {0, 0, 0};
  for (std::int64_t r = record_offsets[v]; r < record_offsets[v + 1]; ++r) {
    const VertexRecord<T> rec = records[r];
    T p[3], n[3];
    surface_point(surfaces[rec.surface], controls, rec.s, rec.t, p, n);
    normalize3(n);
    if (r == record_offsets[v])
      for (int d = 0; d < 3; ++d) position[d] = p[d];
    for (int d = 0; d < 3; ++d) n_sum[d] += n[d];
  }
  normalize3(n_sum);
  for (int d = 0; d < 3; ++d) normal[d] = n_sum[d];
}

}  // namespace parasurf::ffd
