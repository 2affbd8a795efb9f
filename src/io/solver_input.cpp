// The solver's JSON inputs behind a class of the public API: the command line and other programs read them without
// the JSON library (io/solver_json.hpp holds the member readers).
#include "parasurf/solver_input.hpp"

#include <cmath>

#include "io/bspline_json.hpp"
#include "io/json_text.hpp"
#include "io/solver_json.hpp"
#include "io/text_cursor.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

struct SolverInput::Document {
  std::string name;
  nlohmann::json json;
};

SolverInput::SolverInput(std::unique_ptr<Document> doc) : doc_(std::move(doc)) {}
SolverInput::SolverInput(SolverInput&&) noexcept = default;
SolverInput& SolverInput::operator=(SolverInput&&) noexcept = default;
SolverInput::~SolverInput() = default;

SolverInput SolverInput::read(const std::string& path) {
  return parse(io::read_text_file(path, "solver input", 64ull << 20), path);
}

SolverInput SolverInput::parse(std::string_view text, const std::string& name) {
  auto doc = std::make_unique<Document>();
  doc->name = name;
  doc->json = io::parse_json(text, name);
  return SolverInput(std::move(doc));
}

const std::string& SolverInput::name() const { return doc_->name; }

bool SolverInput::has(const std::string& key) const { return doc_->json.is_object() && doc_->json.contains(key); }

BSplineCurve2 SolverInput::curve(const std::string& key) const {
  return io::bspline_curve(io::member(doc_->json, key.c_str(), doc_->name), doc_->name + ": " + key);
}

bool SolverInput::is_bspline(const std::string& key) const {
  const nlohmann::json& j = io::member(doc_->json, key.c_str(), doc_->name);
  return j.is_object() && j.contains("knots");
}

BSplineSurface SolverInput::surface(const std::string& key) const {
  return bspline_surface_from_json(io::member(doc_->json, key.c_str(), doc_->name), doc_->name + ": " + key);
}

Motion SolverInput::motion(const std::string& key) const {
  return io::motion_from_json(io::member(doc_->json, key.c_str(), doc_->name), doc_->name + ": " + key);
}

std::vector<BezierCurve2> SolverInput::bezier_curves(const std::string& key) const {
  const nlohmann::json& list = io::member(doc_->json, key.c_str(), doc_->name);
  if (!list.is_array())
    throw Error(ErrorKind::Parse, doc_->name + ": expected {\"" + key + "\": [{\"points\": [[x, y], ...]}, ...]}");
  std::vector<BezierCurve2> curves;
  for (std::size_t i = 0; i < list.size(); ++i)
    curves.push_back(io::bezier_curve_from_json(list[i], doc_->name + ": " + key + "[" + std::to_string(i) + "]"));
  return curves;
}

std::vector<std::pair<BezierCurve2, BezierCurve2>> SolverInput::bezier_pairs(const std::string& key) const {
  const nlohmann::json& list = io::member(doc_->json, key.c_str(), doc_->name);
  if (!list.is_array())
    throw Error(ErrorKind::Parse, doc_->name + ": \"" + key + "\" must be an array of {curve1, curve2}");
  std::vector<std::pair<BezierCurve2, BezierCurve2>> pairs;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const std::string where = doc_->name + ": " + key + "[" + std::to_string(k) + "]";
    const auto &j1 = io::member(list[k], "curve1", where), &j2 = io::member(list[k], "curve2", where);
    if ((j1.is_object() && j1.contains("knots")) || (j2.is_object() && j2.contains("knots")))
      throw Error(ErrorKind::InvalidArgument, where + ": a batch takes Bezier curves (no knots)");
    pairs.emplace_back(BezierCurve2{io::bspline_curve(j1, where + ".curve1").points},
                       BezierCurve2{io::bspline_curve(j2, where + ".curve2").points});
  }
  return pairs;
}

std::vector<std::array<double, 3>> SolverInput::points3(const std::string& key) const {
  const nlohmann::json& list = io::member(doc_->json, key.c_str(), doc_->name);
  if (!list.is_array()) throw Error(ErrorKind::Parse, doc_->name + ": expected {\"" + key + "\": [[x, y, z], ...]}");
  std::vector<std::array<double, 3>> points(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& p = list[i];
    const std::string where = doc_->name + ": " + key + "[" + std::to_string(i) + "]";
    if (!p.is_array() || p.size() != 3) throw Error(ErrorKind::Parse, where + " must be [x, y, z]");
    for (std::size_t k = 0; k < 3; ++k) {
      if (!p[k].is_number()) throw Error(ErrorKind::Parse, where + " must be [x, y, z] (numbers)");
      points[i][k] = p[k].get<double>();
      if (!std::isfinite(points[i][k])) throw Error(ErrorKind::Parse, where + " is not finite");
    }
  }
  return points;
}

std::string SolverInput::text(const std::string& key) const {
  const nlohmann::json& j = io::member(doc_->json, key.c_str(), doc_->name);
  if (!j.is_string()) throw Error(ErrorKind::Parse, doc_->name + ": \"" + key + "\" must be a string");
  return j.get<std::string>();
}

double SolverInput::number(const std::string& key) const {
  const nlohmann::json& j = io::member(doc_->json, key.c_str(), doc_->name);
  if (!j.is_number()) throw Error(ErrorKind::Parse, doc_->name + ": \"" + key + "\" must be a number");
  const double x = j.get<double>();
  if (!std::isfinite(x)) throw Error(ErrorKind::Parse, doc_->name + ": \"" + key + "\" is not finite");
  return x;
}

}  // namespace parasurf
