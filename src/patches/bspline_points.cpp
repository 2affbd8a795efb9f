// B-spline and NURBS surfaces evaluated at parameter pairs. Each pair goes to the Bézier piece of its knot spans
// (the exact conversion by knot insertion of bspline.cpp: W. Boehm, "Inserting new knots into B-spline curves",
// CAD 12(4), 1980), is mapped to that piece's unit square and evaluated there by the Bézier evaluator; derivatives
// follow by the chain rule of that affine map. A pair on a knot belongs to the span that starts there (the last
// one to the last span), as in de Boor's algorithm.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "parasurf/error.hpp"
#include "parasurf/patches.hpp"

namespace parasurf {

namespace {

// The breakpoints of a knot vector's domain: the distinct knots from knots[p] to knots[count].
std::vector<double> breakpoints(const std::vector<double>& knots, int p, int count) {
  std::vector<double> out;
  for (int k = p; k <= count; ++k)
    if (out.empty() || knots[std::size_t(k)] > out.back()) out.push_back(knots[std::size_t(k)]);
  return out;
}

std::int64_t span_of(const std::vector<double>& breaks, double t) {
  const auto it = std::upper_bound(breaks.begin(), breaks.end(), t);
  return std::clamp<std::int64_t>(std::int64_t(it - breaks.begin()) - 1, 0, std::int64_t(breaks.size()) - 2);
}

}  // namespace

template <class T>
void evaluate_bspline_points_into(const BSplineSurface& s, std::span<const double> uv, EvalRequest request,
                                  SampleSpans<T> out, const EvalOptions& options, EvalReport* report) {
  const auto start = std::chrono::steady_clock::now();
  validate(s);
  if (uv.size() % 2 != 0)
    throw Error(ErrorKind::InvalidArgument, "uv must hold (u, v) pairs: an even count of numbers");
  const std::int64_t n = std::int64_t(uv.size() / 2);
  const std::vector<double> bu = breakpoints(s.knots_u, s.degree_u, s.count_u),
                            bv = breakpoints(s.knots_v, s.degree_v, s.count_v);
  PatchModel model;
  append_bezier_patches(s, model);
  const std::int64_t nu = std::int64_t(bu.size()) - 1, nv = std::int64_t(bv.size()) - 1;
  if (std::int64_t(model.patches.size()) != nu * nv)
    throw Error(ErrorKind::InvalidArgument, "B-spline surface: knot spans and Bezier pieces disagree");

  // The piece of every pair, and the pairs of each piece in order (a counting sort).
  std::vector<std::int64_t> piece(static_cast<std::size_t>(n)), first(static_cast<std::size_t>(nu * nv + 1), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    const double u = uv[2 * std::size_t(k)], v = uv[2 * std::size_t(k) + 1];
    if (!(u >= bu.front() && u <= bu.back() && v >= bv.front() && v <= bv.back()))
      throw Error(ErrorKind::InvalidArgument, "uv pair " + std::to_string(k) + " (" + std::to_string(u) + ", " +
                                                  std::to_string(v) + ") is outside the surface's domain [" +
                                                  std::to_string(bu.front()) + ", " + std::to_string(bu.back()) +
                                                  "] x [" + std::to_string(bv.front()) + ", " +
                                                  std::to_string(bv.back()) + "]");
    piece[std::size_t(k)] = span_of(bu, u) * nv + span_of(bv, v);
    ++first[std::size_t(piece[std::size_t(k)] + 1)];
  }
  for (std::size_t p = 1; p < first.size(); ++p) first[p] += first[p - 1];
  std::vector<std::int64_t> order(static_cast<std::size_t>(n)), next(first.begin(), first.end() - 1);
  for (std::int64_t k = 0; k < n; ++k) order[std::size_t(next[std::size_t(piece[std::size_t(k)])]++)] = k;

  if (out.count != n)
    throw Error(ErrorKind::InvalidArgument, "evaluate_bspline_points: the outputs do not hold every pair");
  SurfaceEvaluator<T> evaluator(options);
  EvalReport total;
  std::vector<double> local;
  for (std::int64_t p = 0; p < nu * nv; ++p) {
    const std::int64_t k0 = first[std::size_t(p)], k1 = first[std::size_t(p + 1)];
    if (k0 == k1) continue;
    const std::int64_t a = p / nv, b = p % nv;
    const double u0 = bu[std::size_t(a)], du = bu[std::size_t(a + 1)] - u0;
    const double v0 = bv[std::size_t(b)], dv = bv[std::size_t(b + 1)] - v0;
    const Patch& patch = model.patches[std::size_t(p)];
    BezierSurface piece_surface;
    piece_surface.degree_u = patch.degree_u;
    piece_surface.degree_v = patch.degree_v;
    const std::int64_t count = patch.control_point_count();
    piece_surface.points.resize(std::size_t(3 * count));
    if (patch.rational) piece_surface.weights.resize(std::size_t(count));
    for (std::int64_t i = 0; i < count; ++i) {
      const double* q = &model.points[std::size_t(4 * (patch.offset + i))];
      for (int c = 0; c < 3; ++c) piece_surface.points[std::size_t(3 * i + c)] = q[c] / q[3];
      if (patch.rational) piece_surface.weights[std::size_t(i)] = q[3];
    }
    local.resize(std::size_t(2 * (k1 - k0)));
    for (std::int64_t j = k0; j < k1; ++j) {
      const std::int64_t k = order[std::size_t(j)];
      local[std::size_t(2 * (j - k0))] = std::clamp((uv[2 * std::size_t(k)] - u0) / du, 0.0, 1.0);
      local[std::size_t(2 * (j - k0) + 1)] = std::clamp((uv[2 * std::size_t(k) + 1] - v0) / dv, 0.0, 1.0);
    }
    const SurfaceSamples<T> r = evaluator.evaluate_points(piece_surface, local, request);
    const EvalReport& rep = evaluator.last_report();
    total.device_used = rep.device_used, total.method_used = rep.method_used;
    total.seconds_kernel += rep.seconds_kernel, total.seconds_transfer += rep.seconds_transfer;
    // d/du = (d/ds) / du on this piece, and so on for the second derivatives.
    const T su = T(1 / du), sv = T(1 / dv), suu = T(1 / (du * du)), suv = T(1 / (du * dv)), svv = T(1 / (dv * dv));
    for (std::int64_t j = k0; j < k1; ++j) {
      const auto k = std::size_t(order[std::size_t(j)]), i = std::size_t(j - k0);
      for (std::size_t c = 0; c < 3; ++c) {
        if (out.position[c] && !r.position[c].empty()) out.position[c][k] = r.position[c][i];
        if (out.normal[c] && !r.normal[c].empty()) out.normal[c][k] = r.normal[c][i];
        if (out.du[c] && !r.du[c].empty()) out.du[c][k] = r.du[c][i] * su;
        if (out.dv[c] && !r.dv[c].empty()) out.dv[c][k] = r.dv[c][i] * sv;
        if (out.duu[c] && !r.duu[c].empty()) out.duu[c][k] = r.duu[c][i] * suu;
        if (out.duv[c] && !r.duv[c].empty()) out.duv[c][k] = r.duv[c][i] * suv;
        if (out.dvv[c] && !r.dvv[c].empty()) out.dvv[c][k] = r.dvv[c][i] * svv;
      }
      if (out.degenerate && !r.degenerate.empty()) out.degenerate[k] = r.degenerate[i];
    }
  }
  total.seconds_total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report) *report = total;
}

template <class T>
SurfaceSamples<T> evaluate_bspline_points(const BSplineSurface& s, std::span<const double> uv, EvalRequest request,
                                          const EvalOptions& options, EvalReport* report) {
  SurfaceSamples<T> out = allocate_samples<T>(std::int64_t(uv.size() / 2), request);
  evaluate_bspline_points_into(s, uv, request, spans_of(out), options, report);
  return out;
}

template void evaluate_bspline_points_into<float>(const BSplineSurface&, std::span<const double>, EvalRequest,
                                                  SampleSpans<float>, const EvalOptions&, EvalReport*);
template void evaluate_bspline_points_into<double>(const BSplineSurface&, std::span<const double>, EvalRequest,
                                                   SampleSpans<double>, const EvalOptions&, EvalReport*);
template SurfaceSamples<float> evaluate_bspline_points<float>(const BSplineSurface&, std::span<const double>,
                                                              EvalRequest, const EvalOptions&, EvalReport*);
template SurfaceSamples<double> evaluate_bspline_points<double>(const BSplineSurface&, std::span<const double>,
                                                                EvalRequest, const EvalOptions&, EvalReport*);

}  // namespace parasurf
