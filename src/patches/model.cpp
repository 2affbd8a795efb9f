// Patch-model helpers: validation, single-patch extraction, synthetic models.
#include <algorithm>
#include <cmath>
#include <random>

#include "parasurf/error.hpp"
#include "parasurf/patches.hpp"

namespace parasurf {

std::int64_t PatchModel::tensor_patch_count() const {
  return std::count_if(patches.begin(), patches.end(), [](const Patch& p) { return p.kind == PatchKind::Tensor; });
}

int PatchModel::max_degree() const {
  int d = 0;
  for (const auto& p : patches) d = std::max({d, p.degree_u, p.degree_v});
  return d;
}

void validate(const PatchModel& m) {
  const std::int64_t npts = std::int64_t(m.points.size() / 4);
  const std::int64_t nnrm = std::int64_t(m.normal_points.size() / 3);
  for (std::size_t k = 0; k < m.patches.size(); ++k) {
    const Patch& p = m.patches[k];
    const std::string where = m.name + ": patch " + std::to_string(k) +
                              (p.source_line ? " (line " + std::to_string(p.source_line) + ")" : std::string());
    if (p.degree_u < 1 || p.degree_u > kMaxBezierDegree || p.degree_v < 1 || p.degree_v > kMaxBezierDegree)
      throw Error(ErrorKind::InvalidArgument, where + ": degree " + std::to_string(p.degree_u) + "x" +
                                                  std::to_string(p.degree_v) + " is outside 1.." +
                                                  std::to_string(kMaxBezierDegree));
    if (p.kind == PatchKind::Triangle && p.degree_u != p.degree_v)
      throw Error(ErrorKind::InvalidArgument, where + ": a triangular patch has one degree");
    if (p.offset < 0 || p.offset + p.control_point_count() > npts)
      throw Error(ErrorKind::InvalidArgument, where + ": control points out of range");
    for (std::int64_t i = 0; i < p.control_point_count(); ++i) {
      const double* h = &m.points[std::size_t(p.offset + i) * 4];
      for (int c = 0; c < 4; ++c)
        if (!std::isfinite(h[c]))
          throw Error(ErrorKind::InvalidArgument, where + ": control point " + std::to_string(i) + " is not finite");
      if (!(h[3] > 0))
        throw Error(ErrorKind::InvalidArgument, where + ": weight of control point " + std::to_string(i) + " is " +
                                                    std::to_string(h[3]) + "; weights must be > 0");
    }
    if (p.normal_offset >= 0) {
      const std::int64_t n = p.kind == PatchKind::Triangle
                                 ? std::int64_t(p.normal_degree_u + 1) * (p.normal_degree_u + 2) / 2
                                 : std::int64_t(p.normal_degree_u + 1) * (p.normal_degree_v + 1);
      if (p.normal_degree_u < 1 || p.normal_degree_u > kMaxBezierDegree || p.normal_degree_v < 1 ||
          p.normal_degree_v > kMaxBezierDegree || p.normal_offset + n > nnrm)
        throw Error(ErrorKind::InvalidArgument, where + ": normal patch out of range");
      for (std::int64_t i = 0; i < n * 3; ++i)
        if (!std::isfinite(m.normal_points[std::size_t(p.normal_offset * 3 + i)]))
          throw Error(ErrorKind::InvalidArgument, where + ": normal control point is not finite");
    }
    if (p.group >= int(m.groups.size())) throw Error(ErrorKind::InvalidArgument, where + ": group out of range");
  }
  for (std::size_t k = 0; k < m.polyhedra.size(); ++k) {
    const Polyhedron& poly = m.polyhedra[k];
    const auto nv = std::int64_t(poly.vertices.size() / 3);
    for (double x : poly.vertices)
      if (!std::isfinite(x))
        throw Error(ErrorKind::InvalidArgument, m.name + ": polyhedron " + std::to_string(k) + " has a non-finite vertex");
    for (auto i : poly.face_indices)
      if (i < 0 || i >= nv)
        throw Error(ErrorKind::InvalidArgument, m.name + ": polyhedron " + std::to_string(k) + " face index " +
                                                    std::to_string(i) + " is outside 0.." + std::to_string(nv - 1));
  }
}

BezierSurface patch_surface(const PatchModel& m, std::int64_t index) {
  if (index < 0 || index >= std::int64_t(m.patches.size()))
    throw Error(ErrorKind::InvalidArgument, "patch index " + std::to_string(index) + " out of range");
  const Patch& p = m.patches[index];
  if (p.kind != PatchKind::Tensor)
    throw Error(ErrorKind::InvalidArgument, "patch " + std::to_string(index) + " is triangular, not a tensor-product surface");
  BezierSurface s;
  s.degree_u = p.degree_u;
  s.degree_v = p.degree_v;
  const auto n = p.control_point_count();
  s.points.resize(std::size_t(n) * 3);
  if (p.rational) s.weights.resize(std::size_t(n));
  for (std::int64_t k = 0; k < n; ++k) {
    const double* h = &m.points[std::size_t(p.offset + k) * 4];
    for (int c = 0; c < 3; ++c) s.points[3 * k + c] = p.rational ? h[c] / h[3] : h[c];
    if (p.rational) s.weights[k] = h[3];
  }
  return s;
}

PatchModel synthetic_bicubic_model(std::int64_t count, std::uint64_t seed) {
  if (count < 1 || count > (std::int64_t(1) << 26))
    throw Error(ErrorKind::InvalidArgument, "synthetic model of " + std::to_string(count) + " patches is outside 1..2^26");
  // A C0 sheet of patches (side x side grid) with random heights: neighbours share their boundary rows exactly.
  const auto side = std::int64_t(std::ceil(std::sqrt(double(count))));
  const std::int64_t nx = side * 3 + 1;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> h(-0.5, 0.5);
  std::vector<double> heights(std::size_t(nx * nx));
  for (auto& z : heights) z = h(rng);
  PatchModel m;
  m.name = "synthetic (" + std::to_string(count) + " bicubic patches, seed " + std::to_string(seed) + ")";
  m.points.reserve(std::size_t(count) * 64);
  for (std::int64_t k = 0; k < count; ++k) {
    const std::int64_t a = k / side, b = k % side;
    Patch p;
    p.degree_u = p.degree_v = 3;
    p.offset = std::int64_t(m.points.size() / 4);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        const std::int64_t gi = a * 3 + i, gj = b * 3 + j;
        m.points.insert(m.points.end(), {double(gi) / 3.0, double(gj) / 3.0, heights[std::size_t(gi * nx + gj)], 1.0});
      }
    m.patches.push_back(p);
  }
  return m;
}

}  // namespace parasurf
