// The JSON form of a B-spline / NURBS surface (docs/formats.md), shared by the patch reader and the solver's inputs.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "parasurf/patches.hpp"

namespace parasurf {
// Error(Parse) naming `where` and the field for anything malformed; the surface is validated.
BSplineSurface bspline_surface_from_json(const nlohmann::json& surface, const std::string& where);
}  // namespace parasurf
