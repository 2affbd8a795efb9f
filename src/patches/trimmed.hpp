// Trimmed tensor-product Bézier patches (a control net plus convex trimming polygons in its (s,t) domain), as
// accurate FFD produces them, and their exact conversion to triangular Bézier patches.
#pragma once
#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasurf/patches.hpp"

namespace parasurf::patches {

// Control points (BezierView kind-3 order: rows j from the bottom, point i in row j, weight s^i t^j w^l) of the
// tensor patch of degrees ns x nt (points (ns+1)(nt+1) x 3, row-major in s) restricted to the triangle whose
// corners a, b, c (in (s,t)) carry the weights s, t and w; `degree` is the total degree of the restriction.
std::vector<double> tensor_on_triangle(int ns, int nt, const double* points, const std::array<double, 2>& a,
                                       const std::array<double, 2>& b, const std::array<double, 2>& c, int degree);

// {"parasurf_trimmed_bezier": 1, "surfaces": [{"degree": [ns, nt], "total_degree": n, "points": [[x,y,z], ...],
//   "trims": [[[s,t], ...], ...]}]}: every trimming polygon (convex) becomes triangular patches.
PatchModel parse_trimmed_json(const nlohmann::json& doc, const std::string& name);

}  // namespace parasurf::patches
