// Readers and writer of patch-model files: BezierView (.bv), teapot (.bpt), B-spline/NURBS (.json).
// BezierView kinds follow the format's documentation and reference loader (SurfLab, U. Florida); formats are
// summarised in docs/formats.md.
#include <algorithm>
#include <map>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "patches/trimmed.hpp"
#include <sstream>
#include <vector>

#include "io/json_text.hpp"
#include "io/atomic_file.hpp"
#include "io/bspline_json.hpp"
#include "io/number_text.hpp"
#include "io/text_cursor.hpp"
#include "parasurf/error.hpp"
#include "parasurf/patches.hpp"

namespace parasurf {

namespace io {

std::string read_text_file(const std::string& path, const std::string& what, std::uint64_t max_bytes) {
  // Read to the end rather than by the file's size, so that pipes and FIFOs are read too; devices (a link to
  // /dev/zero) are refused, as they may never end.
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (!ec && type != std::filesystem::file_type::regular && type != std::filesystem::file_type::fifo &&
      type != std::filesystem::file_type::socket)
    throw Error(ErrorKind::Io, "cannot read " + what + " '" + path + "': not a regular file or a pipe");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(ErrorKind::Io, "cannot open " + what + " '" + path + "'");
  std::string text;
  std::vector<char> chunk(1 << 16);
  bool failed = false;
  while (true) {
    const std::size_t got = std::fread(chunk.data(), 1, chunk.size(), f);
    text.append(chunk.data(), got);
    if (text.size() > max_bytes) break;
    if (got < chunk.size()) {
      failed = std::ferror(f) != 0;
      break;
    }
  }
  std::fclose(f);
  if (failed) throw Error(ErrorKind::Io, "cannot read " + what + " '" + path + "'");
  if (text.size() > max_bytes)
    throw Error(ErrorKind::Parse, path + ": a " + what + " may have at most " + std::to_string(max_bytes >> 20) +
                                      " MiB; this one is larger");
  return text;
}

}  // namespace io

namespace {

constexpr std::uint64_t kMaxPatchFileBytes = std::uint64_t(2) << 30;
constexpr long long kMaxCount = 1LL << 31;

// Reads `count` points of `dims` numbers into out (appending), homogeneous when dims == 4.
void read_points(io::TextCursor& in, std::int64_t count, int dims, std::vector<double>& out, const char* what) {
  for (std::int64_t k = 0; k < count; ++k) {
    double p[4] = {0, 0, 0, 1};
    for (int c = 0; c < dims; ++c) p[c] = in.number(std::string(what) + " coordinate");
    out.insert(out.end(), p, p + (dims == 4 ? 4 : 3));
  }
}

void append_polynomial(io::TextCursor& in, std::int64_t count, PatchModel& m) {
  for (std::int64_t k = 0; k < count; ++k) {
    const double x = in.number("control point coordinate");
    const double y = in.number("control point coordinate");
    const double z = in.number("control point coordinate");
    m.points.insert(m.points.end(), {x, y, z, 1.0});
  }
}

void append_rational(io::TextCursor& in, std::int64_t count, PatchModel& m) {
  for (std::int64_t k = 0; k < count; ++k) {
    double h[4];
    for (int c = 0; c < 3; ++c) h[c] = in.number("homogeneous coordinate");
    const io::Token wt = in.require("weight");
    h[3] = in.to_number(wt, "weight");
    if (!(h[3] > 0)) in.fail(wt.line, "weight " + std::string(wt.text) + " must be > 0");
    m.points.insert(m.points.end(), h, h + 4);
  }
}

// Guards allocations by the bytes left: each number needs at least two characters.
void check_room(io::TextCursor& in, int line, std::int64_t numbers, std::size_t text_size) {
  if (numbers < 0 || std::uint64_t(numbers) > text_size)
    in.fail(line, "declares " + std::to_string(numbers) + " numbers, more than the file holds");
}

int triangle_count(int d) { return (d + 1) * (d + 2) / 2; }

}  // namespace

PatchModel parse_bezierview(const std::string& text, const std::string& name) {
  io::TextCursor in(text, name);
  PatchModel m;
  m.name = name;
  int group = -1;
  std::map<std::pair<int, std::string>, int> group_ids;
  const int maxd = kMaxBezierDegree;
  while (!in.at_end()) {
    const io::Token head = in.next();
    std::string word(head.text);
    std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (word == "group") {
      // A group line names a group: the same colour and name again mean the same group, not a new one.
      PatchGroup g;
      g.color = int(in.integer("group colour index", -(1LL << 30), 1LL << 30));
      g.name = in.rest_of_line();
      const auto [it, fresh] = group_ids.try_emplace({g.color, g.name}, int(m.groups.size()));
      if (fresh) m.groups.push_back(g);
      group = it->second;
      continue;
    }
    const long long kind = in.to_integer(head, "patch kind", LLONG_MIN, LLONG_MAX);
    Patch p;
    p.group = group;
    p.source_line = head.line;
    p.offset = std::int64_t(m.points.size() / 4);
    switch (kind) {
      case 1: {
        Polyhedron poly;
        poly.group = group;
        const long long nv = in.integer("polyhedron vertex count", 0, kMaxCount);
        const long long nf = in.integer("polyhedron face count", 0, kMaxCount);
        check_room(in, head.line, nv * 3 + nf, text.size());
        poly.vertices.reserve(std::size_t(nv) * 3);
        read_points(in, nv, 3, poly.vertices, "polyhedron vertex");
        poly.face_starts.reserve(std::size_t(nf) + 1);
        poly.face_starts.push_back(0);
        for (long long f = 0; f < nf; ++f) {
          const long long n = in.integer("face vertex count", 3, 1 << 20);
          check_room(in, in.line(), n, text.size());
          for (long long k = 0; k < n; ++k) {
            const io::Token t = in.require("face vertex index");
            if (nv == 0) in.fail(t.line, "face refers to a vertex of a polyhedron without vertices");
            poly.face_indices.push_back(in.to_integer(t, "face vertex index", 0, nv - 1));
          }
          poly.face_starts.push_back(std::int64_t(poly.face_indices.size()));
        }
        m.polyhedra.push_back(std::move(poly));
        continue;
      }
      case 3:
      case 9: {
        p.kind = PatchKind::Triangle;
        p.degree_u = p.degree_v = int(in.integer("triangular patch degree", 1, maxd));
        if (kind == 9) p.normal_degree_u = p.normal_degree_v = int(in.integer("normal patch degree", 1, maxd));
        append_polynomial(in, triangle_count(p.degree_u), m);
        if (kind == 9) {
          p.normal_offset = std::int64_t(m.normal_points.size() / 3);
          read_points(in, triangle_count(p.normal_degree_u), 3, m.normal_points, "normal control point");
        }
        break;
      }
      case 4: {
        p.degree_u = p.degree_v = int(in.integer("patch degree", 1, maxd));
        append_polynomial(in, p.control_point_count(), m);
        break;
      }
      case 5:
      case 8:
      case 10: {
        p.degree_u = int(in.integer("patch degree along u", 1, maxd));
        p.degree_v = int(in.integer("patch degree along v", 1, maxd));
        if (kind == 10) {
          p.normal_degree_u = int(in.integer("normal patch degree along u", 1, maxd));
          p.normal_degree_v = int(in.integer("normal patch degree along v", 1, maxd));
        }
        if (kind == 8) {
          p.rational = true;
          append_rational(in, p.control_point_count(), m);
        } else {
          append_polynomial(in, p.control_point_count(), m);
        }
        if (kind == 10) {
          p.normal_offset = std::int64_t(m.normal_points.size() / 3);
          read_points(in, std::int64_t(p.normal_degree_u + 1) * (p.normal_degree_v + 1), 3, m.normal_points,
                      "normal control point");
        }
        break;
      }
      default:
        in.fail(head.line, "patch kind " + std::string(head.text) +
                               " is not supported (expected 1, 3, 4, 5, 8, 9 or 10, or a 'group' line)");
    }
    m.patches.push_back(p);
  }
  if (m.patches.empty() && m.polyhedra.empty()) in.fail(in.line(), "no patches or polyhedra in the file");
  m.printed_step = in.printed_step();
  return m;
}

PatchModel parse_bpt(const std::string& text, const std::string& name) {
  io::TextCursor in(text, name);
  PatchModel m;
  m.name = name;
  const long long count = in.integer("patch count", 1, kMaxCount);
  check_room(in, 1, count * 3, text.size());
  for (long long k = 0; k < count; ++k) {
    Patch p;
    const io::Token t = in.require("patch degrees 'du dv'");
    p.source_line = t.line;
    p.degree_u = int(in.to_integer(t, "patch degree along u", 1, kMaxBezierDegree));
    p.degree_v = int(in.integer("patch degree along v", 1, kMaxBezierDegree));
    p.offset = std::int64_t(m.points.size() / 4);
    append_polynomial(in, p.control_point_count(), m);
    m.patches.push_back(p);
  }
  if (!in.at_end()) {
    const io::Token extra = in.next();
    in.fail(extra.line, "unexpected '" + std::string(extra.text) + "' after the " + std::to_string(count) +
                            " patches the header announced");
  }
  m.printed_step = in.printed_step();
  return m;
}

BSplineSurface bspline_surface_from_json(const nlohmann::json& s, const std::string& where) {
  try {
    if (!s.is_object()) throw Error(ErrorKind::Parse, where + ": expected an object");
    // (a misspelt key, "weight" for "weights" above all, would change the surface without a word)
    for (const auto& item : s.items())
      if (item.key() != "degree" && item.key() != "knots" && item.key() != "points" && item.key() != "weights")
        throw Error(ErrorKind::Parse, where + ": unknown key \"" + item.key() + "\" (a surface takes \"degree\", \"knots\", " +
                                          "\"points\" and \"weights\")");
    BSplineSurface b;
    auto degree = [&](const nlohmann::json& d) {
      if (!d.is_number_integer() || d.get<long long>() < 1 || d.get<long long>() > kMaxBezierDegree)
        throw Error(ErrorKind::Parse, where + ": a degree must be an integer in 1.." + std::to_string(kMaxBezierDegree));
      return int(d.get<long long>());
    };
    const auto& deg = s.at("degree");
    if (deg.is_array()) {
      if (deg.size() != 2) throw Error(ErrorKind::Parse, where + ": \"degree\" must be p or [p, q]");
      b.degree_u = degree(deg[0]);
      b.degree_v = degree(deg[1]);
    } else {
      b.degree_u = b.degree_v = degree(deg);
    }
    const auto& knots = s.at("knots");
    if (!knots.is_array() || knots.size() != 2)
      throw Error(ErrorKind::Parse, where + ": \"knots\" must be [knots_u, knots_v]");
    b.knots_u = knots[0].get<std::vector<double>>();
    b.knots_v = knots[1].get<std::vector<double>>();
    const auto& pts = s.at("points");
    if (!pts.is_array() || pts.empty()) throw Error(ErrorKind::Parse, where + ": \"points\" must be rows of points");
    b.count_u = int(std::min<std::size_t>(pts.size(), 1 << 20));
    b.count_v = -1;
    for (const auto& row : pts) {
      if (!row.is_array() || row.empty()) throw Error(ErrorKind::Parse, where + ": each row of \"points\" must be an array of [x, y, z]");
      if (b.count_v < 0) b.count_v = int(std::min<std::size_t>(row.size(), 1 << 20));
      if (int(row.size()) != b.count_v)
        throw Error(ErrorKind::Parse, where + ": rows of \"points\" differ in length (" + std::to_string(row.size()) +
                                          " vs " + std::to_string(b.count_v) + ")");
      for (const auto& p : row) {
        if (!p.is_array() || p.size() != 3) throw Error(ErrorKind::Parse, where + ": a control point must be [x, y, z]");
        for (int c = 0; c < 3; ++c) b.points.push_back(p[c].get<double>());
      }
    }
    if (s.contains("weights")) {
      for (const auto& row : s["weights"]) {
        if (!row.is_array()) throw Error(ErrorKind::Parse, where + ": \"weights\" must be rows of numbers");
        for (const auto& w : row) b.weights.push_back(w.get<double>());
      }
      if (b.weights.size() != b.points.size() / 3)
        throw Error(ErrorKind::Parse, where + ": " + std::to_string(b.weights.size()) + " weights for " +
                                          std::to_string(b.points.size() / 3) + " control points");
    }
    validate(b, where);
    return b;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Parse, where + ": " + e.what());
  }
}

namespace {

// The finest decimal step of a JSON text's floating-point numbers, as written (io::decimal_step); 0 when none.
double json_printed_step(const std::string& text) {
  struct Steps : nlohmann::json_sax<nlohmann::json> {
    double finest = HUGE_VAL;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t& s) override {
      const double step = io::decimal_step(s);
      if (step > 0) finest = std::min(finest, step);
      return true;
    }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
  } steps;
  nlohmann::json::sax_parse(text, &steps);
  return std::isfinite(steps.finest) ? steps.finest : 0.0;
}

}  // namespace

PatchModel parse_bspline_json(const std::string& text, const std::string& name) {
  const nlohmann::json doc = io::parse_json(text, name);
  // Trimmed Bézier patches (accurate FFD's exact output) share the .json extension.
  if (doc.is_object() && doc.contains("parasurf_trimmed_bezier")) {
    PatchModel t = patches::parse_trimmed_json(doc, name);
    t.name = name;
    return t;
  }
  PatchModel m;
  m.name = name;
  const nlohmann::json* surfaces = &doc;
  nlohmann::json single = nlohmann::json::array();
  if (doc.is_object() && doc.contains("surfaces")) {
    surfaces = &doc["surfaces"];
  } else {
    single.push_back(doc);
    surfaces = &single;
  }
  if (!surfaces->is_array() || surfaces->empty())
    throw Error(ErrorKind::Parse, name + ": expected a surface object or {\"surfaces\": [...]}");
  std::size_t index = 0;
  for (const auto& s : *surfaces) {
    const std::string where = name + ": surface " + std::to_string(index++);
    try {
      BSplineSurface b = bspline_surface_from_json(s, where);
      append_bezier_patches(b, m, -1);
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorKind::Parse, where + ": " + e.what());
    }
  }
  m.printed_step = json_printed_step(text);
  return m;
}

PatchModel read_patch_model(const std::string& path) {
  const std::string text = io::read_text_file(path, "patch file", kMaxPatchFileBytes);
  auto ends = [&](const char* ext) {
    const std::string e(ext);
    if (path.size() < e.size()) return false;
    std::string tail = path.substr(path.size() - e.size());
    std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return tail == e;
  };
  PatchModel m;
  if (ends(".bv")) m = parse_bezierview(text, path);
  else if (ends(".bpt")) m = parse_bpt(text, path);
  else if (ends(".json")) m = parse_bspline_json(text, path);
  else throw Error(ErrorKind::InvalidArgument, "cannot tell the patch format of '" + path + "' (use .bv, .bpt or .json)");
  validate(m);
  return m;
}

void write_bezierview(const std::string& path, const PatchModel& m) {
  std::ostringstream os;
  os.imbue(std::locale::classic());
  auto num = [](double v) { return io::number_text(v); };
  int group = -1;
  auto put_group = [&](int g) {
    if (g != group && g >= 0) os << "group " << m.groups[g].color << ' ' << m.groups[g].name << '\n';
    group = g;
  };
  for (const auto& poly : m.polyhedra) {
    put_group(poly.group);
    const std::size_t nf = poly.face_starts.empty() ? 0 : poly.face_starts.size() - 1;
    os << "1\n" << poly.vertices.size() / 3 << ' ' << nf << '\n';
    for (std::size_t v = 0; v < poly.vertices.size(); v += 3)
      os << num(poly.vertices[v]) << ' ' << num(poly.vertices[v + 1]) << ' ' << num(poly.vertices[v + 2]) << '\n';
    for (std::size_t f = 0; f < nf; ++f) {
      os << poly.face_starts[f + 1] - poly.face_starts[f];
      for (auto k = poly.face_starts[f]; k < poly.face_starts[f + 1]; ++k) os << ' ' << poly.face_indices[k];
      os << '\n';
    }
  }
  for (const auto& p : m.patches) {
    put_group(p.group);
    const bool pn = p.normal_offset >= 0;
    if (p.kind == PatchKind::Triangle) os << (pn ? "9\n" : "3\n") << p.degree_u;
    else if (pn) os << "10\n" << p.degree_u << ' ' << p.degree_v;
    else os << (p.rational ? "8\n" : "5\n") << p.degree_u << ' ' << p.degree_v;
    if (pn) os << ' ' << p.normal_degree_u;
    if (pn && p.kind == PatchKind::Tensor) os << ' ' << p.normal_degree_v;
    os << '\n';
    for (std::int64_t k = 0; k < p.control_point_count(); ++k) {
      const double* h = &m.points[std::size_t(p.offset + k) * 4];
      os << num(h[0]) << ' ' << num(h[1]) << ' ' << num(h[2]);
      if (p.rational) os << ' ' << num(h[3]);
      os << '\n';
    }
    if (pn) {
      const std::int64_t n = p.kind == PatchKind::Triangle
                                 ? std::int64_t(p.normal_degree_u + 1) * (p.normal_degree_u + 2) / 2
                                 : std::int64_t(p.normal_degree_u + 1) * (p.normal_degree_v + 1);
      for (std::int64_t k = 0; k < n; ++k) {
        const double* q = &m.normal_points[std::size_t(p.normal_offset + k) * 3];
        os << num(q[0]) << ' ' << num(q[1]) << ' ' << num(q[2]) << '\n';
      }
    }
  }
  io::AtomicFile f(path);
  f.write(os.str());
  f.commit();
}

}  // namespace parasurf
