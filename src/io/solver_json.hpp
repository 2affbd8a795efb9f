// The JSON inputs of `parasurf solve` (docs/solver.md): curves, motions, numbers (fractions and hex floats
// accepted, as in the bezier package's test data). Every malformed input is an Error(Parse) naming `where`.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "parasurf/solver.hpp"

namespace parasurf::io {

double number(const nlohmann::json& v, const std::string& where);
// {"points": [[x, y], ...]} or {"control_points": [[x0, x1, ...], [y0, y1, ...]]}
// A key other than points or control_points (and, with `bspline`, degree and knots) is refused by name: a
// misspelt or unsupported one (weights) would otherwise change the curve without a word.
BezierCurve2 bezier_curve_from_json(const nlohmann::json& c, const std::string& where, bool bspline = false);
// A Bézier curve, or a B-spline with "degree" and "knots" beside the points.
BSplineCurve2 bspline_curve(const nlohmann::json& j, const std::string& where);
// {"degree": 3, "knots": [...], "points": [[scale, tx, ty, tz], ...]}
Motion motion_from_json(const nlohmann::json& j, const std::string& where);
// doc[key], or an Error naming the input and the missing member.
const nlohmann::json& member(const nlohmann::json& doc, const char* key, const std::string& input);


}  // namespace parasurf::io
