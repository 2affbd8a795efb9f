// libFuzzer target for the solver's JSON inputs and the solver itself on hostile numbers: the first byte picks the
// application, the rest is the JSON. Any input must solve (within small limits) or throw parasurf::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/solver_json.hpp"
#include "parasurf/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > (1 << 14)) return 0;
  const int which = data[0] % 5;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return 0;
  parasurf::SolverOptions o;
  o.threads = 1;
  o.max_nodes = 20000;
  o.max_seconds = 2;
  try {
    if (which == 4) {
      parasurf::io::motion_from_json(parasurf::io::member(doc, "motion", "f"), "f");
      return 0;
    }
    if (which == 3) {
      const auto& list = parasurf::io::member(doc, "curves", "f");
      if (!list.is_array() || list.size() > 4) return 0;
      std::vector<parasurf::BezierCurve2> curves;
      for (const auto& c : list) curves.push_back(parasurf::io::bezier_curve_from_json(c, "f"));
      for (const auto& c : curves)
        if (c.points.size() > 4) return 0;  // keep each run short
      parasurf::ray_traps(curves, o);
      return 0;
    }
    const auto a = parasurf::io::bspline_curve(parasurf::io::member(doc, "curve1", "f"), "f");
    const auto b = parasurf::io::bspline_curve(parasurf::io::member(doc, "curve2", "f"), "f");
    if (a.points.size() > 8 || b.points.size() > 8) return 0;
    if (which == 0) parasurf::intersect_curves(a, b, o);
    if (which == 1) parasurf::hausdorff_distance(a, b, o);
    if (which == 2) parasurf::curve_bisector(a, b, 1.0 / 16, o);
  } catch (const parasurf::Error&) {
  }
  return 0;
}
