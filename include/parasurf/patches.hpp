// Patch models: sets of Bézier patches (tensor-product and triangular, polynomial and rational, with optional
// normal patches), polyhedra and groups, read from BezierView (.bv), teapot (.bpt) and B-spline/NURBS (.json)
// files, or the built-in Utah teapot.
//
// Conventions (documented once, used everywhere; docs/formats.md has the file formats):
//  * Control points are stored homogeneous, four numbers each: (w*x, w*y, w*z, w); w = 1 for polynomial patches.
//  * Tensor-product patch of degrees (m, n): (m+1)(n+1) points, row-major, index i*(n+1)+j, i along u, j along v
//    (BezierView kind 5's order: m+1 rows of n+1 points).
//  * Triangular patch of degree d: (d+1)(d+2)/2 points in BezierView order, rows from the bottom: row r (0..d)
//    holds d+1-r points; point (row r, position k) is the control point b_{i,j,l} with j = r, i = k, l = d-r-k,
//    i.e. barycentric coordinates (s, t) -> s^i t^j (1-s-t)^l up to the multinomial factor.
//  * PN patches (BezierView kinds 9, 10) carry a second Bézier patch, of its own degrees, whose value is the normal.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "parasurf/bezier.hpp"

namespace parasurf {

enum class PatchKind : std::uint8_t { Tensor = 0, Triangle = 1 };

struct Patch {
  PatchKind kind = PatchKind::Tensor;
  int degree_u = 0;          // m (triangle: the degree d)
  int degree_v = 0;          // n (triangle: equals degree_u)
  bool rational = false;     // any weight != 1
  std::int64_t offset = 0;   // first control point in PatchModel::points (in points, not numbers)
  int normal_degree_u = -1;  // PN patches: degrees of the normal patch, else -1
  int normal_degree_v = -1;
  std::int64_t normal_offset = -1;  // first normal control point in PatchModel::normal_points
  int group = -1;            // index into PatchModel::groups, or -1
  int source_line = 0;       // line of the patch header in its file (0: built in)

  std::int64_t control_point_count() const {
    return kind == PatchKind::Tensor ? std::int64_t(degree_u + 1) * (degree_v + 1)
                                     : std::int64_t(degree_u + 1) * (degree_u + 2) / 2;
  }
};

struct Polyhedron {
  std::vector<double> vertices;           // V x 3
  std::vector<std::int64_t> face_starts;  // F + 1 offsets into face_indices
  std::vector<std::int64_t> face_indices; // 0-based vertex indices
  int group = -1;
};

struct PatchGroup {
  int color = 0;
  std::string name;
};

struct PatchModel {
  std::string name;
  std::vector<Patch> patches;
  std::vector<double> points;         // homogeneous control points, 4 numbers each
  std::vector<double> normal_points;  // control points of normal patches, 3 numbers each
  std::vector<Polyhedron> polyhedra;
  std::vector<PatchGroup> groups;
  // The decimal step a text file wrote its coordinates with (the finest among them: 1e-6 for "%.6f"), which two
  // copies of a shared point may differ by; 0 when not known (a model built in code, a JSON file).
  double printed_step = 0;

  std::int64_t tensor_patch_count() const;
  int max_degree() const;
};

// Readers. Each throws Error(Parse) naming the file, the line and what was expected; the kind of file is told by
// its extension (.bv, .bpt, .json) in read_patch_model.
PatchModel read_patch_model(const std::string& path);
PatchModel parse_bezierview(const std::string& text, const std::string& name = "<string>");
PatchModel parse_bpt(const std::string& text, const std::string& name = "<string>");
PatchModel parse_bspline_json(const std::string& text, const std::string& name = "<string>");

// Writes a model as a BezierView file (kinds 1, 3, 4/5, 8, 9, 10 and group lines), through a temporary file.
void write_bezierview(const std::string& path, const PatchModel& model);

// The Utah teapot of Martin Newell (1975): 32 bicubic patches (rim, body, lid, handle, spout, bottom), in its
// original coordinates (z up, height 3.15).
PatchModel utah_teapot();

// Synthetic model of `count` random bicubic patches arranged as a grid of surfaces (benchmarks).
PatchModel synthetic_bicubic_model(std::int64_t count, std::uint64_t seed);

// One tensor-product patch as a stand-alone surface for the surface engine.
BezierSurface patch_surface(const PatchModel& model, std::int64_t patch);

// Throws Error naming the patch when a degree, weight or coordinate is out of range or not finite.
void validate(const PatchModel& model);

// ---------------------------------------------------------------- B-spline and NURBS surfaces
// Tensor-product B-spline surface: degrees (p, q), knot vectors of (count_u + p + 1) and (count_v + q + 1)
// non-decreasing values, count_u x count_v control points row-major (index i*count_v + j, i along u), optional
// positive weights (NURBS). Evaluated on [knots_u[p], knots_u[count_u]] x [knots_v[q], knots_v[count_v]].
struct BSplineSurface {
  int degree_u = 3, degree_v = 3;
  int count_u = 0, count_v = 0;
  std::vector<double> knots_u, knots_v;
  std::vector<double> points;   // count_u * count_v x 3 (Cartesian)
  std::vector<double> weights;  // empty or count_u * count_v
};
void validate(const BSplineSurface& surface, const std::string& name = "B-spline surface");

// Exact conversion to Bézier patches by knot insertion (Boehm), one patch per non-empty knot span pair,
// appended to model; returns the number of patches appended. Patch (a, b) covers span a along u and b along v.
std::int64_t append_bezier_patches(const BSplineSurface& surface, PatchModel& model, int group = -1);

// De Boor evaluation of the surface at (u, v), for checks: x y z.
std::array<double, 3> evaluate_bspline(const BSplineSurface& surface, double u, double v);

// The surface at (u, v) pairs of its knot domain (uv: u0 v0 u1 v1 ...), with what `request` asks (positions,
// first and second derivatives with respect to u and v, unit normals), on the device `options` names: each pair is
// evaluated on its Bézier piece. Throws Error(InvalidArgument) naming the first pair outside the domain.
template <class T>
SurfaceSamples<T> evaluate_bspline_points(const BSplineSurface& surface, std::span<const double> uv, EvalRequest request,
                                          const EvalOptions& options = {}, EvalReport* report = nullptr);
// The same into caller-provided arrays of uv.size() / 2 samples (null pointers: not written).
template <class T>
void evaluate_bspline_points_into(const BSplineSurface& surface, std::span<const double> uv, EvalRequest request,
                                  SampleSpans<T> out, const EvalOptions& options = {}, EvalReport* report = nullptr);

}  // namespace parasurf
