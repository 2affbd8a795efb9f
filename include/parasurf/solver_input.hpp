// The JSON inputs of `parasurf solve` (docs/solver.md), read without exposing a JSON library: one document whose
// members are taken by name. Curves are {"points": [[x, y], ...]} (+ "degree", "knots" for a B-spline), surfaces
// the patch reader's B-spline objects, motions {"degree", "knots", "points": [[scale, tx, ty, tz], ...]}. Every
// malformed input is an Error(Parse) naming the input and the member.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parasurf/patches.hpp"
#include "parasurf/solver.hpp"

namespace parasurf {

class SolverInput {
 public:
  // A file of at most 64 MiB, or a text; nesting deeper than the parser's limit is refused before parsing.
  static SolverInput read(const std::string& path);
  static SolverInput parse(std::string_view text, const std::string& name);
  SolverInput(SolverInput&&) noexcept;
  SolverInput& operator=(SolverInput&&) noexcept;
  ~SolverInput();

  const std::string& name() const;
  bool has(const std::string& key) const;
  // A curve member; is_bspline(key) tells whether it has knots (a B-spline) or is one Bézier curve.
  BSplineCurve2 curve(const std::string& key) const;
  bool is_bspline(const std::string& key) const;
  BSplineSurface surface(const std::string& key) const;
  Motion motion(const std::string& key) const;
  // An array of Bézier curves ("curves" of ray traps).
  std::vector<BezierCurve2> bezier_curves(const std::string& key) const;
  // An array of {"curve1", "curve2"} Bézier pairs (a batch; a pair with knots is refused).
  std::vector<std::pair<BezierCurve2, BezierCurve2>> bezier_pairs(const std::string& key) const;
  // An array of [x, y, z] points with finite coordinates (closest-point queries, ray origins and directions).
  std::vector<std::array<double, 3>> points3(const std::string& key) const;
  // A string member (a model's path).
  std::string text(const std::string& key) const;
  // A finite number member.
  double number(const std::string& key) const;

 private:
  struct Document;
  explicit SolverInput(std::unique_ptr<Document> doc);
  std::unique_ptr<Document> doc_;
};

}  // namespace parasurf
