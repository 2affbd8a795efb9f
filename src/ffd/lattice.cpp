// Lattice construction and checks, control-point edits, and direct manipulation of FFD
// (Hu, Zhang, Tai, Sun, "Direct manipulation of FFD: efficient explicit solutions and decomposible multiple
// point constraints", The Visual Computer 17, 2001: the least-norm lattice change is B^T (B B^T)^-1 d).
#include "core/eigen.hpp"
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "ffd/lattice_view.hpp"
#include "io/json_text.hpp"
#include "io/text_cursor.hpp"
#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"

namespace parasurf {

namespace {
[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorKind::InvalidArgument, "lattice: " + msg); }
const char* kAxis[3] = {"x", "y", "z"};
}  // namespace

namespace ffd {
std::array<double, 12> invert_affine(const std::array<double, 12>& m) {
  Eigen::Matrix3d a;
  Eigen::Vector3d c;
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 3; ++k) a(r, k) = m[4 * r + k];
    c(r) = m[4 * r + 3];
  }
  const double scale = a.cwiseAbs().maxCoeff();
  if (!(scale > 0) || !std::isfinite(scale) || std::abs(a.determinant()) <= 1e-14 * scale * scale * scale)
    invalid("the world-to-parameter map is singular or not finite");
  const Eigen::Matrix3d inv = a.inverse();
  const Eigen::Vector3d ci = -inv * c;
  std::array<double, 12> out{};
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 3; ++k) out[4 * r + k] = inv(r, k);
    out[4 * r + 3] = ci(r);
  }
  return out;
}
}  // namespace ffd

void validate_lattice(const Lattice& l) {
  for (int a = 0; a < 3; ++a) {
    const int p = l.degree[a], n = l.count[a];
    if (p < 1 || p > 3) invalid(std::string("degree ") + std::to_string(p) + " along " + kAxis[a] + " is outside 1..3");
    if (n < p + 1 || n > 4096)
      invalid(std::to_string(n) + " control points along " + kAxis[a] + ": need " + std::to_string(p + 1) +
              ".." + "4096 for degree " + std::to_string(p));
    const auto& k = l.knots[a];
    if (int(k.size()) != n + p + 1)
      invalid(std::string("knot vector along ") + kAxis[a] + " has " + std::to_string(k.size()) + " values; " +
              std::to_string(n) + " control points of degree " + std::to_string(p) + " need " + std::to_string(n + p + 1));
    for (std::size_t i = 0; i < k.size(); ++i) {
      if (!std::isfinite(k[i])) invalid(std::string("knot ") + std::to_string(i) + " along " + kAxis[a] + " is not finite");
      if (i > 0 && k[i] < k[i - 1])
        invalid(std::string("knot vector along ") + kAxis[a] + " decreases at index " + std::to_string(i) + " (" +
                std::to_string(k[i - 1]) + " then " + std::to_string(k[i]) + ")");
    }
    for (std::size_t i = 0; i + p + 1 < k.size(); ++i)
      if (k[i + p + 1] == k[i])
        invalid(std::string("knot vector along ") + kAxis[a] + " repeats a value more than degree times at index " +
                std::to_string(i));
    if (!(k[n] > k[p])) invalid(std::string("knot vector along ") + kAxis[a] + " has an empty domain");
  }
  if (std::int64_t(l.control_points.size()) != 3 * l.control_point_count())
    invalid("expected " + std::to_string(3 * l.control_point_count()) + " control-point coordinates, got " +
            std::to_string(l.control_points.size()));
  for (double v : l.control_points)
    if (!std::isfinite(v)) invalid("a control point is not finite");
  ffd::invert_affine(l.world_to_parameter);
}

std::vector<double> rest_control_points(const Lattice& l) {
  const auto to_world = ffd::invert_affine(l.world_to_parameter);
  std::vector<double> out(std::size_t(3 * l.control_point_count()));
  std::array<std::vector<double>, 3> greville;
  for (int a = 0; a < 3; ++a)
    for (int i = 0; i < l.count[a]; ++i) {
      double sum = 0;
      for (int j = 1; j <= l.degree[a]; ++j) sum += l.knots[a][i + j];
      greville[a].push_back(sum / l.degree[a]);
    }
  for (int k = 0; k < l.count[2]; ++k)
    for (int j = 0; j < l.count[1]; ++j)
      for (int i = 0; i < l.count[0]; ++i) {
        const double q[3] = {greville[0][i], greville[1][j], greville[2][k]};
        ffd::affine_apply(to_world.data(), q, out.data() + 3 * l.linear_index(i, j, k));
      }
  return out;
}

Lattice make_lattice(const LatticeSpec& spec, const std::array<double, 3>& box_min, const std::array<double, 3>& box_max) {
  Lattice l;
  l.degree = spec.degree;
  l.count = spec.count;
  for (int a = 0; a < 3; ++a) {
    const int p = spec.degree[a], n = spec.count[a];
    if (p < 1 || p > 3) invalid(std::string("degree ") + std::to_string(p) + " along " + kAxis[a] + " is outside 1..3");
    if (n < p + 1 || n > 4096)
      invalid(std::to_string(n) + " control points along " + kAxis[a] + ": need " + std::to_string(p + 1) +
              "..4096 for degree " + std::to_string(p));
    if (!spec.knots[a].empty()) {
      l.knots[a] = spec.knots[a];
    } else {  // clamped uniform on [0, 1]
      const int spans = n - p;
      for (int i = 0; i <= p; ++i) l.knots[a].push_back(0.0);
      for (int i = 1; i < spans; ++i) l.knots[a].push_back(double(i) / spans);
      for (int i = 0; i <= p; ++i) l.knots[a].push_back(1.0);
    }
  }
  constexpr std::int64_t kMaxControlPoints = std::int64_t(1) << 24;
  if (std::int64_t(l.count[0]) * l.count[1] * l.count[2] > kMaxControlPoints)
    invalid("a lattice of " + std::to_string(l.count[0]) + "x" + std::to_string(l.count[1]) + "x" + std::to_string(l.count[2]) +
            " control points is above the limit of 2^24 (256^3)");
  // Knots are checked before the embedding uses the domain.
  l.control_points.assign(std::size_t(3 * l.control_point_count()), 0.0);
  if (spec.world_to_parameter) {
    l.world_to_parameter = *spec.world_to_parameter;
  } else {
    for (int a = 0; a < 3; ++a)
      if (!std::isfinite(box_min[a]) || !std::isfinite(box_max[a]) || box_max[a] < box_min[a])
        invalid("the mesh's bounding box is empty or not finite");
    if (!(spec.padding >= 0) || !std::isfinite(spec.padding)) invalid("padding must be a finite number >= 0");
    double side = 0;
    for (int a = 0; a < 3; ++a) side = std::max(side, box_max[a] - box_min[a]);
    if (side == 0) side = 1;
    const double pad = spec.padding * side;
    l.world_to_parameter.fill(0.0);
    for (int a = 0; a < 3; ++a) {
      // A flat side gets the largest side's extent, so that the map stays invertible.
      double lo = box_min[a] - pad, hi = box_max[a] + pad;
      if (hi - lo <= 1e-12 * side) {
        const double mid = 0.5 * (box_min[a] + box_max[a]);
        lo = mid - 0.5 * side;
        hi = mid + 0.5 * side;
      }
      const double k_lo = l.knots[a].empty() ? 0 : l.knots[a][std::min<std::size_t>(l.degree[a], l.knots[a].size() - 1)];
      const double k_hi = l.knots[a].empty() ? 1 : l.knots[a][std::min<std::size_t>(l.count[a], l.knots[a].size() - 1)];
      const double scale = (k_hi - k_lo) / (hi - lo);
      l.world_to_parameter[4 * a + a] = scale;
      l.world_to_parameter[4 * a + 3] = k_lo - lo * scale;
    }
  }
  // Validate with placeholder control points first (the knots decide everything else), then place them.
  validate_lattice(l);
  l.control_points = rest_control_points(l);
  return l;
}

void deform_points(const Lattice& lattice, std::span<const double> points, std::span<double> out, std::span<double> jacobians) {
  if (out.size() < points.size()) throw Error(ErrorKind::InvalidArgument, "deform_points: output too small");
  const auto arrays = ffd::make_lattice_arrays<double>(lattice, lattice.control_points);
  const auto& L = arrays.view;
  const std::int64_t n = std::int64_t(points.size() / 3);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const double* x = points.data() + 3 * i;
    double q[3];
    ffd::affine_apply(L.to_param, x, q);
    bool inside = true;
    for (int a = 0; a < 3; ++a) inside = inside && q[a] >= L.domain_lo[a] && q[a] <= L.domain_hi[a];
    double jw[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    if (!inside) {
      for (int d = 0; d < 3; ++d) out[3 * i + d] = x[d];
    } else {
      int span[3];
      for (int a = 0; a < 3; ++a) span[a] = ffd::find_span(L.knots + L.knot_offset[a], L.degree[a], L.count[a], q[a]);
      double jq[9];
      ffd::volume_point_jacobian(L, span, q, out.data() + 3 * i, jq);
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
          jw[3 * r + c] = jq[3 * r] * L.to_param[c] + jq[3 * r + 1] * L.to_param[4 + c] + jq[3 * r + 2] * L.to_param[8 + c];
    }
    if (jacobians.size() >= std::size_t(9 * (i + 1)))
      for (int k = 0; k < 9; ++k) jacobians[9 * i + k] = jw[k];
  }
}

LatticeSpec parse_lattice_spec(std::string_view text, const std::string& name) {
  const nlohmann::json doc = io::parse_json(text, name);
  auto fail = [&](const std::string& key, const std::string& msg) { throw Error(ErrorKind::Parse, name + ": \"" + key + "\": " + msg); };
  if (!doc.is_object()) throw Error(ErrorKind::Parse, name + ": expected a JSON object");
  LatticeSpec spec;
  for (const auto& item : doc.items()) {
    const std::string& key = item.key();
    const nlohmann::json& v = item.value();
    if (key == "count" || key == "degree") {
      if (!v.is_array() || v.size() != 3) fail(key, "expected three integers");
      for (int a = 0; a < 3; ++a) {
        if (!v[a].is_number_integer() || v[a].get<long long>() < 1 || v[a].get<long long>() > 4096) fail(key, "expected three integers in 1..4096");
        (key == "count" ? spec.count : spec.degree)[a] = int(v[a].get<long long>());
      }
    } else if (key == "padding") {
      if (!v.is_number()) fail(key, "expected a number");
      spec.padding = v.get<double>();
    } else if (key == "knots") {
      if (!v.is_array() || v.size() != 3) fail(key, "expected three knot vectors");
      for (int a = 0; a < 3; ++a) {
        if (!v[a].is_array() || v[a].size() > 8192) fail(key, "expected arrays of numbers");
        for (const auto& k : v[a]) {
          if (!k.is_number()) fail(key, "expected arrays of numbers");
          spec.knots[a].push_back(k.get<double>());
        }
      }
    } else if (key == "world_to_parameter") {
      if (!v.is_array() || v.size() != 12) fail(key, "expected 12 numbers (3x4 row-major)");
      std::array<double, 12> m{};
      for (int i = 0; i < 12; ++i) {
        if (!v[i].is_number()) fail(key, "expected 12 numbers (3x4 row-major)");
        m[i] = v[i].get<double>();
      }
      spec.world_to_parameter = m;
    } else {
      fail(key, "unknown key (expected count, degree, padding, knots, world_to_parameter)");
    }
  }
  return spec;
}

LatticeSpec read_lattice_spec(const std::string& path) {
  return parse_lattice_spec(io::read_text_file(path, "lattice", 64ull << 20), path);
}

// ------------------------------------------------------------------------------------------------ edits

LatticeEdits parse_lattice_edits(std::string_view text, const std::string& name) {
  const nlohmann::json doc = io::parse_json(text, name);
  auto fail = [&](const std::string& where, const std::string& msg) -> void {
    throw Error(ErrorKind::Parse, name + ": " + where + ": " + msg);
  };
  auto triple = [&](const nlohmann::json& v, const std::string& where) {
    std::array<double, 3> out{};
    if (!v.is_array() || v.size() != 3) fail(where, "expected an array of 3 numbers");
    for (int k = 0; k < 3; ++k) {
      if (!v[k].is_number()) fail(where, "expected an array of 3 numbers");
      out[k] = v[k].get<double>();
      if (!std::isfinite(out[k])) fail(where, "value is not finite");
    }
    return out;
  };
  if (!doc.is_object()) fail("top level", "expected an object with \"moves\" and/or \"targets\"");
  for (const auto& item : doc.items())
    if (item.key() != "moves" && item.key() != "targets") fail("top level", "unknown key \"" + item.key() + "\"");
  LatticeEdits edits;
  if (doc.contains("moves")) {
    const nlohmann::json& moves = doc["moves"];
    if (!moves.is_array()) fail("moves", "expected an array");
    for (std::size_t m = 0; m < moves.size(); ++m) {
      const std::string where = "moves[" + std::to_string(m) + "]";
      const nlohmann::json& e = moves[m];
      if (!e.is_object() || !e.contains("index")) fail(where, "expected {\"index\": [i,j,k], \"position\" or \"displacement\": [x,y,z]}");
      ControlPointMove move;
      const nlohmann::json& idx = e["index"];
      if (!idx.is_array() || idx.size() != 3) fail(where, "index must be [i, j, k]");
      for (int k = 0; k < 3; ++k) {
        if (!idx[k].is_number_integer()) fail(where, "index must be three integers");
        const auto v = idx[k].get<long long>();
        if (v < 0 || v > 1 << 20) fail(where, "index " + std::to_string(v) + " is negative or absurd");
        move.index[k] = int(v);
      }
      const bool pos = e.contains("position"), disp = e.contains("displacement");
      if (pos == disp) fail(where, "give exactly one of \"position\" and \"displacement\"");
      move.is_displacement = disp;
      move.value = triple(disp ? e["displacement"] : e["position"], where);
      edits.moves.push_back(move);
    }
  }
  if (doc.contains("targets")) {
    const nlohmann::json& targets = doc["targets"];
    if (!targets.is_array()) fail("targets", "expected an array");
    constexpr std::size_t kMaxTargets = 10000;
    if (targets.size() > kMaxTargets)
      fail("targets", std::to_string(targets.size()) + " targets: at most " + std::to_string(kMaxTargets) + " are taken");
    for (std::size_t t = 0; t < targets.size(); ++t) {
      const std::string where = "targets[" + std::to_string(t) + "]";
      const nlohmann::json& e = targets[t];
      if (!e.is_object() || !e.contains("point") || !e.contains("target"))
        fail(where, "expected {\"point\": [x,y,z], \"target\": [x,y,z]}");
      edits.targets.push_back({triple(e["point"], where), triple(e["target"], where)});
    }
  }
  return edits;
}

LatticeEdits read_lattice_edits(const std::string& path) {
  return parse_lattice_edits(io::read_text_file(path, "edits", 256ull << 20), path);
}

namespace {
// The (p+1)^3 control points that influence a point and their basis weights.
// The side of the dense least-norm system of direct manipulation (its cost grows with the cube of it).
constexpr int kMaxDirectSystem = 4096;

struct Influence {
  std::vector<std::int64_t> index;
  std::vector<double> weight;
};
Influence influence(const Lattice& l, const ffd::LatticeView<double>& L, const std::array<double, 3>& point, std::size_t which) {
  double q[3];
  ffd::affine_apply(L.to_param, point.data(), q);
  for (int a = 0; a < 3; ++a)
    if (!(q[a] >= L.domain_lo[a] && q[a] <= L.domain_hi[a]))
      throw Error(ErrorKind::InvalidArgument, "targets[" + std::to_string(which) +
                                                  "]: the point lies outside the lattice, which cannot move it");
  int span[3];
  double n[3][4];
  for (int a = 0; a < 3; ++a) {
    span[a] = ffd::find_span(L.knots + L.knot_offset[a], L.degree[a], L.count[a], q[a]);
    ffd::basis_only(L.knots + L.knot_offset[a], span[a], L.degree[a], q[a], n[a]);
  }
  Influence inf;
  for (int c = 0; c <= l.degree[2]; ++c)
    for (int b = 0; b <= l.degree[1]; ++b)
      for (int a = 0; a <= l.degree[0]; ++a) {
        inf.index.push_back(l.linear_index(span[0] - l.degree[0] + a, span[1] - l.degree[1] + b, span[2] - l.degree[2] + c));
        inf.weight.push_back(n[0][a] * n[1][b] * n[2][c]);
      }
  return inf;
}
}  // namespace

void direct_manipulation(Lattice& lattice, std::span<const PointTarget> targets) {
  if (targets.empty()) return;
  validate_lattice(lattice);
  const auto arrays = ffd::make_lattice_arrays<double>(lattice, lattice.control_points);
  const int k = int(targets.size());
  std::vector<Influence> inf;
  Eigen::MatrixXd delta(k, 3);
  for (int a = 0; a < k; ++a) {
    inf.push_back(influence(lattice, arrays.view, targets[a].point, a));
    std::array<double, 3> image{};
    deform_points(lattice, targets[a].point, image);
    for (int d = 0; d < 3; ++d) delta(a, d) = targets[a].target[d] - image[d];
  }
  // The least-norm change of the control points that carries every point onto its target is B^+ delta, B the k
  // rows of basis values over the m control points the targets touch. It is solved in the smaller of the two
  // shapes: B itself (k x m) when the targets outnumber those control points, else the Gram matrix B B^T (k x k),
  // change B^T G^+ delta. Both are dense: their side is bounded before they are made.
  std::map<std::int64_t, int> column;
  for (const auto& f : inf)
    for (const std::int64_t i : f.index) column.emplace(i, 0);
  const int m = int(column.size());
  {
    int c = 0;
    for (auto& [index, at] : column) at = c++;
  }
  if (std::min(k, m) > kMaxDirectSystem)
    throw Error(ErrorKind::LimitReached, "direct manipulation: " + std::to_string(k) + " targets over " + std::to_string(m) +
                                             " control points make a least-norm system of side " +
                                             std::to_string(std::min(k, m)) + ", above the limit of " +
                                             std::to_string(kMaxDirectSystem) + " (fewer targets, or a coarser lattice)");
  Eigen::MatrixXd change(m, 3);
  double residual = 0;
  if (k >= m) {
    Eigen::MatrixXd b = Eigen::MatrixXd::Zero(k, m);
    for (int a = 0; a < k; ++a)
      for (std::size_t i = 0; i < inf[a].index.size(); ++i) b(a, column[inf[a].index[i]]) += inf[a].weight[i];
    const Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(b);
    change = cod.solve(delta);
    residual = (b * change - delta).norm();
  } else {
    // G = B B^T from the targets that share each control point.
    std::vector<std::vector<std::pair<int, double>>> touching(static_cast<std::size_t>(m));
    for (int a = 0; a < k; ++a)
      for (std::size_t i = 0; i < inf[a].index.size(); ++i)
        touching[std::size_t(column[inf[a].index[i]])].push_back({a, inf[a].weight[i]});
    Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(k, k);
    for (const auto& t : touching)
      for (const auto& [a, wa] : t)
        for (const auto& [b, wb] : t) gram(a, b) += wa * wb;
    const Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(gram);
    const Eigen::MatrixXd lambda = cod.solve(delta);
    residual = (gram * lambda - delta).norm();
    change.setZero();
    for (int a = 0; a < k; ++a)
      for (std::size_t i = 0; i < inf[a].index.size(); ++i)
        change.row(column[inf[a].index[i]]) += inf[a].weight[i] * lambda.row(a);
  }
  if (!(residual <= 1e-9 * std::max(1.0, delta.norm())))
    throw Error(ErrorKind::InvalidArgument,
                "direct manipulation: the targets contradict each other (the same point, or points with the same "
                "basis values, asked to go to different places)");
  for (const auto& [index, at] : column)
    for (int d = 0; d < 3; ++d) lattice.control_points[3 * std::size_t(index) + std::size_t(d)] += change(at, d);
}

double apply_lattice_edits(Lattice& lattice, const LatticeEdits& edits) {
  for (std::size_t m = 0; m < edits.moves.size(); ++m) {
    const auto& mv = edits.moves[m];
    for (int a = 0; a < 3; ++a)
      if (mv.index[a] < 0 || mv.index[a] >= lattice.count[a])
        throw Error(ErrorKind::InvalidArgument,
                    "moves[" + std::to_string(m) + "]: index " + std::to_string(mv.index[a]) + " along " + kAxis[a] +
                        " is outside 0.." + std::to_string(lattice.count[a] - 1));
    double* p = lattice.control_points.data() + 3 * lattice.linear_index(mv.index[0], mv.index[1], mv.index[2]);
    for (int d = 0; d < 3; ++d) p[d] = mv.is_displacement ? p[d] + mv.value[d] : mv.value[d];
  }
  direct_manipulation(lattice, edits.targets);
  for (const double c : lattice.control_points)
    if (!std::isfinite(c))
      throw Error(ErrorKind::InvalidArgument, "the edits send control points beyond the range of numbers (not finite)");
  double worst = 0;
  for (const auto& t : edits.targets) {
    std::array<double, 3> image{};
    deform_points(lattice, t.point, image);
    for (int d = 0; d < 3; ++d) worst = std::max(worst, std::abs(image[d] - t.target[d]));
  }
  return worst;
}

FfdMethod parse_ffd_method(const std::string& name) {
  if (name == "point") return FfdMethod::Point;
  if (name == "accurate") return FfdMethod::Accurate;
  if (name == "uus") return FfdMethod::Upsampled;
  throw Error(ErrorKind::InvalidArgument, "unknown FFD method '" + name + "' (expected point, accurate or uus)");
}

const char* ffd_method_name(FfdMethod m) {
  switch (m) {
    case FfdMethod::Point: return "point";
    case FfdMethod::Accurate: return "accurate";
    case FfdMethod::Upsampled: return "uus";
  }
  return "?";
}

}  // namespace parasurf
