// Surface description helpers: validation, names, built-in control nets, sample allocation.
#include <cmath>
#include <new>
#include <random>
#include <string>

#include "core/memory.hpp"
#include "parasurf/bezier.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

void validate(const BezierSurface& s) {
  auto bad = [](const std::string& msg) { throw Error(ErrorKind::InvalidArgument, msg); };
  if (s.degree_u < 1 || s.degree_u > kMaxBezierDegree || s.degree_v < 1 || s.degree_v > kMaxBezierDegree)
    bad("surface degree " + std::to_string(s.degree_u) + "x" + std::to_string(s.degree_v) + " is outside 1.." +
        std::to_string(kMaxBezierDegree));
  const auto count = std::size_t(s.control_point_count());
  if (s.points.size() != count * 3)
    bad("control net of degree " + std::to_string(s.degree_u) + "x" + std::to_string(s.degree_v) + " needs " +
        std::to_string(count) + " points (" + std::to_string(count * 3) + " coordinates), got " +
        std::to_string(s.points.size()) + " coordinates");
  if (!s.weights.empty() && s.weights.size() != count)
    bad("rational control net needs " + std::to_string(count) + " weights, got " + std::to_string(s.weights.size()));
  for (std::size_t k = 0; k < s.points.size(); ++k)
    if (!std::isfinite(s.points[k]))
      bad("control point " + std::to_string(k / 3) + " has a non-finite coordinate");
  for (std::size_t k = 0; k < s.weights.size(); ++k)
    if (!std::isfinite(s.weights[k]) || !(s.weights[k] > 0))
      bad("weight " + std::to_string(k) + " must be finite and > 0, got " + std::to_string(s.weights[k]));
}

Method parse_method(const std::string& name) {
  if (name == "auto") return Method::Auto;
  if (name == "brute") return Method::Brute;
  if (name == "matrix") return Method::Matrix;
  if (name == "mle") return Method::Mle;
  if (name == "casteljau") return Method::Casteljau;
  if (name == "factored") return Method::Factored;
  throw Error(ErrorKind::InvalidArgument,
              "unknown method '" + name + "' (expected auto, brute, matrix, mle, casteljau or factored)");
}

const char* method_name(Method m) {
  switch (m) {
    case Method::Auto: return "auto";
    case Method::Brute: return "brute";
    case Method::Matrix: return "matrix";
    case Method::Mle: return "mle";
    case Method::Casteljau: return "casteljau";
    case Method::Factored: return "factored";
  }
  return "?";
}

std::uint64_t sample_bytes(std::int64_t count, const EvalRequest& r, int scalar_size) {
  std::uint64_t per = 0;
  if (r.positions) per += 3 * scalar_size;
  if (r.first_derivatives) per += 6 * scalar_size;
  if (r.normals) per += 3 * scalar_size + 1;
  if (r.second_derivatives) per += 9 * scalar_size;
  return per * std::uint64_t(count);
}

template <class T>
SurfaceSamples<T> allocate_samples(std::int64_t count, const EvalRequest& r) {
  core::check_host_allocation(sample_bytes(count, r, sizeof(T)),
                              "the output of " + std::to_string(count) + " samples");
  SurfaceSamples<T> s;
  s.count = count;
  try {
    auto make = [&](auto& a) {
      for (auto& v : a) v.resize(std::size_t(count));
    };
    if (r.positions) make(s.position);
    if (r.first_derivatives) {
      make(s.du);
      make(s.dv);
    }
    if (r.normals) {
      make(s.normal);
      s.degenerate.resize(std::size_t(count));
    }
    if (r.second_derivatives) {
      make(s.duu);
      make(s.duv);
      make(s.dvv);
    }
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::OutOfMemory, "out of host memory allocating " +
                                            core::format_bytes(sample_bytes(count, r, sizeof(T))) + " of samples");
  }
  return s;
}

template <class T>
SampleSpans<T> spans_of(SurfaceSamples<T>& s) {
  SampleSpans<T> o;
  o.count = s.count;
  auto ptrs = [](auto& a, std::array<T*, 3>& p) {
    for (int c = 0; c < 3; ++c) p[c] = a[c].empty() ? nullptr : a[c].data();
  };
  ptrs(s.position, o.position);
  ptrs(s.du, o.du);
  ptrs(s.dv, o.dv);
  ptrs(s.normal, o.normal);
  ptrs(s.duu, o.duu);
  ptrs(s.duv, o.duv);
  ptrs(s.dvv, o.dvv);
  o.degenerate = s.degenerate.empty() ? nullptr : s.degenerate.data();
  return o;
}

template SurfaceSamples<float> allocate_samples<float>(std::int64_t, const EvalRequest&);
template SurfaceSamples<double> allocate_samples<double>(std::int64_t, const EvalRequest&);
template SampleSpans<float> spans_of<float>(SurfaceSamples<float>&);
template SampleSpans<double> spans_of<double>(SurfaceSamples<double>&);

BezierSurface make_random_surface(int degree_u, int degree_v, std::uint64_t seed, bool rational) {
  BezierSurface s;
  s.degree_u = degree_u;
  s.degree_v = degree_v;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> coord(-1.0, 1.0), weight(0.5, 2.0);
  const auto count = std::size_t(degree_u + 1) * (degree_v + 1);
  s.points.resize(count * 3);
  // a graph-like layout (x,y on a grid) plus noise, so that the surface is not wildly self-intersecting
  for (int i = 0; i <= degree_u; ++i)
    for (int j = 0; j <= degree_v; ++j) {
      const auto k = std::size_t(i) * (degree_v + 1) + j;
      s.points[3 * k + 0] = double(i) / degree_u + 0.2 * coord(rng);
      s.points[3 * k + 1] = double(j) / degree_v + 0.2 * coord(rng);
      s.points[3 * k + 2] = coord(rng);
    }
  if (rational) {
    s.weights.resize(count);
    for (auto& w : s.weights) w = weight(rng);
  }
  validate(s);
  return s;
}

BezierSurface make_wavy_surface(int degree_u, int degree_v, double amplitude, double frequency) {
  BezierSurface s;
  s.degree_u = degree_u;
  s.degree_v = degree_v;
  const auto count = std::size_t(degree_u + 1) * (degree_v + 1);
  s.points.resize(count * 3);
  const double pi = 3.14159265358979323846;
  for (int i = 0; i <= degree_u; ++i)
    for (int j = 0; j <= degree_v; ++j) {
      const auto k = std::size_t(i) * (degree_v + 1) + j;
      const double x = double(i) / degree_u, y = double(j) / degree_v;
      s.points[3 * k + 0] = x;
      s.points[3 * k + 1] = y;
      s.points[3 * k + 2] = amplitude * std::sin(2 * pi * frequency * x) * std::cos(2 * pi * frequency * y);
    }
  validate(s);
  return s;
}

}  // namespace parasurf
