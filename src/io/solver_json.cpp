// Parsing of the solver's JSON inputs (see solver_json.hpp).
#include "io/solver_json.hpp"

#include <cmath>
#include <cstdlib>

#include "parasurf/error.hpp"

namespace parasurf::io {

double number(const nlohmann::json& v, const std::string& where) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {  // "p/q" fractions and C99 hex floats, as in the bezier package's test data
    const std::string s = v.get<std::string>();
    const auto slash = s.find('/');
    char* end = nullptr;
    if (slash != std::string::npos) {
      const double p = std::strtod(s.substr(0, slash).c_str(), &end), q = std::strtod(s.substr(slash + 1).c_str(), nullptr);
      if (q != 0 && std::isfinite(p / q)) return p / q;
    } else {
      const double x = std::strtod(s.c_str(), &end);
      if (end && *end == '\0' && std::isfinite(x)) return x;
    }
  }
  throw Error(ErrorKind::Parse, where + ": expected a finite number, a fraction \"p/q\" or a hex float");
}

// {"control_points": [[x0, x1, ...], [y0, y1, ...]]} or {"points": [[x, y], ...]}
BezierCurve2 bezier_curve_from_json(const nlohmann::json& c, const std::string& where, bool bspline) {
  BezierCurve2 out;
  if (c.is_object())
    for (const auto& item : c.items()) {
      const std::string& key = item.key();
      if (key == "points" || key == "control_points" || (bspline && (key == "degree" || key == "knots"))) continue;
      if (key == "weights")
        throw Error(ErrorKind::InvalidArgument, where + ": rational curves (\"weights\") are not supported by the solver");
      throw Error(ErrorKind::Parse, where + ": unknown key \"" + key + "\" (a curve takes \"points\"" +
                                        (bspline ? std::string(", \"degree\" and \"knots\")") : std::string(" alone here)")));
    }
  if (c.contains("points")) {
    const auto& p = c["points"];
    if (!p.is_array()) throw Error(ErrorKind::Parse, where + ".points: expected [[x, y], ...]");
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (!p[i].is_array() || p[i].size() != 2) throw Error(ErrorKind::Parse, where + ".points: expected [[x, y], ...]");
      out.points.push_back({number(p[i][0], where), number(p[i][1], where)});
    }
  } else if (c.contains("control_points")) {
    const auto& p = c["control_points"];
    if (!p.is_array() || p.size() != 2 || !p[0].is_array() || !p[1].is_array() || p[0].size() != p[1].size())
      throw Error(ErrorKind::Parse, where + ".control_points: expected [[x0, x1, ...], [y0, y1, ...]]");
    for (std::size_t i = 0; i < p[0].size(); ++i) out.points.push_back({number(p[0][i], where), number(p[1][i], where)});
  } else {
    throw Error(ErrorKind::Parse, where + ": expected \"points\" or \"control_points\"");
  }
  return out;
}


// A curve object: Bézier by default; B-spline with "degree" and "knots" beside the points.
BSplineCurve2 bspline_curve(const nlohmann::json& j, const std::string& where) {
  const BezierCurve2 c = bezier_curve_from_json(j, where, true);
  BSplineCurve2 b;
  b.points = c.points;
  b.degree = int(c.points.size()) - 1;
  if (j.contains("degree")) {
    if (!j["degree"].is_number_integer()) throw Error(ErrorKind::Parse, where + ".degree: expected an integer");
    const auto d = j["degree"].get<std::int64_t>();
    const auto most = std::int64_t(c.points.size()) - 1;
    if (d < 1 || d > most)
      throw Error(ErrorKind::Parse, where + ".degree " + std::to_string(d) + " is outside 1.." + std::to_string(most) +
                                        " (" + std::to_string(c.points.size()) + " control points)");
    if (d != most && !j.contains("knots"))
      throw Error(ErrorKind::Parse, where + ".degree " + std::to_string(d) + " without \"knots\": a curve without knots is a "
                                        "Bezier curve of degree " + std::to_string(most));
    b.degree = int(d);
  }
  if (j.contains("knots")) {
    if (!j["knots"].is_array()) throw Error(ErrorKind::Parse, where + ".knots: expected an array");
    for (const auto& k : j["knots"]) b.knots.push_back(number(k, where + ".knots"));
  } else {
    b.knots = bezier_knots(b.degree);
  }
  return b;
}

const nlohmann::json& member(const nlohmann::json& doc, const char* key, const std::string& input) {
  if (!doc.is_object() || !doc.contains(key)) throw Error(ErrorKind::Parse, input + ": expected a member \"" + std::string(key) + "\"");
  return doc[key];
}

Motion motion_from_json(const nlohmann::json& j, const std::string& where) {
  Motion m;
  if (!j.is_object() || !j.contains("points") || !j.contains("knots") || !j["points"].is_array() || !j["knots"].is_array())
    throw Error(ErrorKind::Parse, where + ": expected {\"degree\": 3, \"knots\": [...], \"points\": [[scale, tx, ty, tz], ...]}");
  if (j.contains("degree")) {
    if (!j["degree"].is_number_integer()) throw Error(ErrorKind::Parse, where + ".degree: expected an integer");
    const auto d = j["degree"].get<std::int64_t>();
    if (d < 1 || d > std::int64_t(j["points"].size()) - 1)
      throw Error(ErrorKind::Parse, where + ".degree " + std::to_string(d) + " is outside 1.." +
                                        std::to_string(std::int64_t(j["points"].size()) - 1) + " (one less than the points)");
    m.degree = int(d);
  }
  for (const auto& k : j["knots"]) m.knots.push_back(number(k, where + ".knots"));
  for (const auto& p : j["points"]) {
    if (!p.is_array() || p.size() != 4) throw Error(ErrorKind::Parse, where + ".points: expected [scale, tx, ty, tz] per control point");
    m.points.push_back({number(p[0], where), number(p[1], where), number(p[2], where), number(p[3], where)});
  }
  return m;
}

}  // namespace parasurf::io
