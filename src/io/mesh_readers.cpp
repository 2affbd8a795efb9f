// Polygon mesh readers: Wavefront OBJ, PLY (ASCII and binary), OFF and STL (ASCII and binary).
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "io/number_text.hpp"
#include "io/text_cursor.hpp"
#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"

namespace parasurf {

void PolygonMesh::add_face(std::span<const std::uint32_t> corners) {
  face_indices.insert(face_indices.end(), corners.begin(), corners.end());
  face_offsets.push_back(std::int64_t(face_indices.size()));
}

namespace {

constexpr std::uint64_t kMaxMeshFileBytes = 8ull << 30;

[[noreturn]] void fail(const std::string& name, const std::string& where, const std::string& msg) {
  throw Error(ErrorKind::Parse, name + (where.empty() ? "" : ":" + where) + ": " + msg);
}

// Splits text into lines and each line into whitespace-separated fields, without allocation per field.
class LineReader {
 public:
  LineReader(std::string_view text, std::string name) : text_(text), name_(std::move(name)) {}
  bool next_line() {
    if (pos_ >= text_.size()) return false;
    const std::size_t end = std::min(text_.find('\n', pos_), text_.size());
    line_ = text_.substr(pos_, end - pos_);
    if (!line_.empty() && line_.back() == '\r') line_.remove_suffix(1);
    pos_ = end + 1;
    ++line_number_;
    field_pos_ = 0;
    return true;
  }
  std::string_view field() {
    while (field_pos_ < line_.size() && is_space(line_[field_pos_])) ++field_pos_;
    const std::size_t start = field_pos_;
    while (field_pos_ < line_.size() && !is_space(line_[field_pos_])) ++field_pos_;
    return line_.substr(start, field_pos_ - start);
  }
  std::size_t offset() const { return pos_; }
  std::string_view line() const { return line_; }
  std::string where() const { return std::to_string(line_number_); }
  [[noreturn]] void fail_here(const std::string& msg) const { fail(name_, where(), msg); }
  double number(std::string_view f, const char* what) const {
    double v = 0;
    if (f.empty()) fail_here(std::string("expected ") + what);
    if (!io::parse_number(f, v)) fail_here(std::string(what) + " '" + std::string(f) + "' is not a number");
    return v;
  }
  long long integer(std::string_view f, const char* what) const {
    long long v = 0;
    if (f.empty()) fail_here(std::string("expected ") + what);
    if (!io::parse_number(f, v)) fail_here(std::string(what) + " '" + std::string(f) + "' is not an integer");
    return v;
  }

 private:
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
  std::string_view text_, line_;
  std::string name_;
  std::size_t pos_ = 0, field_pos_ = 0;
  long long line_number_ = 0;
};

std::string lower_extension(const std::string& name) {
  std::string ext = std::filesystem::path(name).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

// Corners of one face that the readers take: splitting a polygon into triangles costs the square of its corners.
constexpr long long kMaxFaceCorners = 4096;

// Faces with a repeated corner or no area are dropped (counted); corners out of range were refused before.
bool add_checked_face(PolygonMesh& mesh, std::vector<std::uint32_t>& corners, MeshReadReport& report) {
  ++report.faces_read;
  bool repeated = corners.size() < 3;
  if (corners.size() > 16) {
    std::vector<std::uint32_t> sorted = corners;
    std::sort(sorted.begin(), sorted.end());
    repeated = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
  } else {
    for (std::size_t i = 0; i < corners.size() && !repeated; ++i)
      for (std::size_t j = i + 1; j < corners.size(); ++j)
        if (corners[i] == corners[j]) {
          repeated = true;
          break;
        }
  }
  if (!repeated) {
    // Twice the vector area (Newell's normal, from the first corner so that a face far from the origin loses no
    // digits), against what rounding the corners' coordinates can make of a face with none (relative to their
    // magnitude) and against the squared perimeter (a sliver): degenerate alike at any scale and any distance
    // from the origin.
    double n[3] = {0, 0, 0}, perimeter = 0, magnitude = 0;
    const double* p = mesh.positions.data();
    const double* o = p + 3 * std::size_t(corners[0]);
    for (std::size_t i = 0; i < corners.size(); ++i) {
      const double* a = p + 3 * std::size_t(corners[i]);
      const double* b = p + 3 * std::size_t(corners[(i + 1) % corners.size()]);
      const double u[3] = {a[0] - o[0], a[1] - o[1], a[2] - o[2]}, v[3] = {b[0] - o[0], b[1] - o[1], b[2] - o[2]};
      n[0] += u[1] * v[2] - u[2] * v[1];
      n[1] += u[2] * v[0] - u[0] * v[2];
      n[2] += u[0] * v[1] - u[1] * v[0];
      perimeter += std::sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
      magnitude = std::max({magnitude, std::abs(a[0]), std::abs(a[1]), std::abs(a[2])});
    }
    const double area2 = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    constexpr double kEps = std::numeric_limits<double>::epsilon();
    // (Corners that are not numbers are reported by the finiteness check, not skipped here.)
    if (std::isfinite(area2) && std::isfinite(magnitude) &&
        !(area2 > 1e-12 * perimeter * perimeter && area2 > 32 * kEps * magnitude * perimeter))
      repeated = true;
  }
  if (repeated) {
    ++report.degenerate_skipped;
    return false;
  }
  mesh.add_face(corners);
  return true;
}

// A face whose corner is not finite cannot be deformed or drawn: refused with the face and the vertex.
void check_finite(const PolygonMesh& mesh, const std::string& name) {
  for (std::int64_t f = 0; f < mesh.face_count(); ++f)
    for (std::int64_t c = mesh.face_offsets[f]; c < mesh.face_offsets[f + 1]; ++c) {
      const std::uint32_t v = mesh.face_indices[c];
      for (int k = 0; k < 3; ++k)
        if (!std::isfinite(mesh.positions[3 * std::size_t(v) + k]))
          fail(name, "", "face " + std::to_string(f) + " uses vertex " + std::to_string(v) +
                             ", whose coordinates are not finite (NaN or infinity)");
    }
}

std::uint32_t checked_index(long long index, std::int64_t vertex_count, const LineReader& in) {
  if (index < 0 || index >= vertex_count)
    in.fail_here("vertex index " + std::to_string(index) + " is outside 0.." + std::to_string(vertex_count - 1));
  return std::uint32_t(index);
}

void parse_obj(std::string_view text, const std::string& name, PolygonMesh& mesh, MeshReadReport& report) {
  report.format = "obj";
  LineReader in(text, name);
  std::vector<std::uint32_t> corners;
  while (in.next_line()) {
    const std::string_view key = in.field();
    if (key == "v") {
      for (int k = 0; k < 3; ++k) mesh.positions.push_back(in.number(in.field(), "vertex coordinate"));
      if (mesh.positions.size() / 3 > std::numeric_limits<std::uint32_t>::max())
        in.fail_here("more than 2^32 vertices");
    } else if (key == "f") {
      corners.clear();
      for (std::string_view f = in.field(); !f.empty(); f = in.field()) {
        const std::string_view index_text = f.substr(0, f.find('/'));
        long long i = in.integer(index_text, "face index");
        const std::int64_t nv = mesh.vertex_count();
        if (i == 0) in.fail_here("face index 0 (OBJ indices start at 1)");
        i = i < 0 ? nv + i : i - 1;  // negative: relative to the last vertex read
        corners.push_back(checked_index(i, nv, in));
        if (std::ssize(corners) > kMaxFaceCorners)
          in.fail_here("face with more than " + std::to_string(kMaxFaceCorners) + " corners");
      }
      if (corners.size() < 3) in.fail_here("face with fewer than 3 corners");
      add_checked_face(mesh, corners, report);
    }
    // vt, vn, g, o, s, usemtl, mtllib, l, p and unknown statements carry nothing a deformation needs.
  }
}

void parse_off(std::string_view text, const std::string& name, PolygonMesh& mesh, MeshReadReport& report) {
  report.format = "off";
  LineReader in(text, name);
  // Fields of the next non-empty, non-comment line.
  auto next_content_line = [&]() {
    while (in.next_line()) {
      const std::string_view l = in.line();
      const std::size_t first = l.find_first_not_of(" \t\f\v");
      if (first != std::string_view::npos && l[first] != '#') return true;
    }
    return false;
  };
  if (!next_content_line()) fail(name, "", "empty file");
  std::string_view head = in.field();
  if (head.size() < 3 || head.substr(head.size() - 3) != "OFF" || head.find_first_not_of("CNST") < head.size() - 3)
    in.fail_here("expected an OFF header (OFF, COFF, NOFF, ...), got '" + std::string(head) + "'");
  std::string_view first = in.field();
  if (first.empty()) {
    if (!next_content_line()) fail(name, "", "missing vertex and face counts");
    first = in.field();
  }
  const long long nv = in.integer(first, "vertex count");
  const long long nf = in.integer(in.field(), "face count");
  // Each vertex and face needs at least a few bytes: counts beyond that are hostile or corrupt.
  const long long most = (long long)(text.size() / 2) + 1;
  if (nv < 0 || nv > most || nv > std::numeric_limits<std::uint32_t>::max())
    in.fail_here("vertex count " + std::to_string(nv) + " is impossible for a file of " +
                 std::to_string(text.size()) + " bytes");
  if (nf < 0 || nf > most)
    in.fail_here("face count " + std::to_string(nf) + " is impossible for a file of " + std::to_string(text.size()) +
                 " bytes");
  mesh.positions.reserve(std::size_t(3 * nv));
  for (long long v = 0; v < nv; ++v) {
    if (!next_content_line()) fail(name, "", "file ends after " + std::to_string(v) + " of " + std::to_string(nv) + " vertices");
    for (int k = 0; k < 3; ++k) mesh.positions.push_back(in.number(in.field(), "vertex coordinate"));
  }
  std::vector<std::uint32_t> corners;
  for (long long f = 0; f < nf; ++f) {
    if (!next_content_line()) fail(name, "", "file ends after " + std::to_string(f) + " of " + std::to_string(nf) + " faces");
    const long long n = in.integer(in.field(), "corner count");
    if (n < 3 || n > kMaxFaceCorners)
      in.fail_here("face corner count " + std::to_string(n) + " is outside 3.." + std::to_string(kMaxFaceCorners));
    corners.clear();
    for (long long c = 0; c < n; ++c) corners.push_back(checked_index(in.integer(in.field(), "face index"), nv, in));
    add_checked_face(mesh, corners, report);
  }
}

// ---------------------------------------------------------------- PLY

enum class PlyType { Int8, Uint8, Int16, Uint16, Int32, Uint32, Float32, Float64 };

int ply_size(PlyType t) {
  switch (t) {
    case PlyType::Int8: case PlyType::Uint8: return 1;
    case PlyType::Int16: case PlyType::Uint16: return 2;
    case PlyType::Int32: case PlyType::Uint32: case PlyType::Float32: return 4;
    case PlyType::Float64: return 8;
  }
  return 0;
}

std::optional<PlyType> ply_type(std::string_view s) {
  if (s == "char" || s == "int8") return PlyType::Int8;
  if (s == "uchar" || s == "uint8") return PlyType::Uint8;
  if (s == "short" || s == "int16") return PlyType::Int16;
  if (s == "ushort" || s == "uint16") return PlyType::Uint16;
  if (s == "int" || s == "int32") return PlyType::Int32;
  if (s == "uint" || s == "uint32") return PlyType::Uint32;
  if (s == "float" || s == "float32") return PlyType::Float32;
  if (s == "double" || s == "float64") return PlyType::Float64;
  return std::nullopt;
}

struct PlyProperty {
  std::string name;
  PlyType type = PlyType::Float32;
  bool is_list = false;
  PlyType count_type = PlyType::Uint8;
};
struct PlyElement {
  std::string name;
  long long count = 0;
  std::vector<PlyProperty> properties;
};

// Binary scalar reader with bounds checks; big-endian data is swapped.
class BinaryCursor {
 public:
  BinaryCursor(std::string_view data, std::size_t pos, bool big_endian, std::string name)
      : data_(data), pos_(pos), big_(big_endian), name_(std::move(name)) {}
  double read(PlyType t) {
    const int n = ply_size(t);
    if (pos_ + n > data_.size())
      fail(name_, "", "binary data ends early at byte " + std::to_string(pos_) + " (the header promised more)");
    unsigned char b[8];
    std::memcpy(b, data_.data() + pos_, n);
    pos_ += n;
    if (big_) std::reverse(b, b + n);
    switch (t) {
      case PlyType::Int8: return double(std::int8_t(b[0]));
      case PlyType::Uint8: return double(b[0]);
      case PlyType::Int16: { std::int16_t v; std::memcpy(&v, b, 2); return v; }
      case PlyType::Uint16: { std::uint16_t v; std::memcpy(&v, b, 2); return v; }
      case PlyType::Int32: { std::int32_t v; std::memcpy(&v, b, 4); return v; }
      case PlyType::Uint32: { std::uint32_t v; std::memcpy(&v, b, 4); return v; }
      case PlyType::Float32: { float v; std::memcpy(&v, b, 4); return v; }
      case PlyType::Float64: { double v; std::memcpy(&v, b, 8); return v; }
    }
    return 0;
  }
  std::size_t pos() const { return pos_; }
  std::size_t remaining() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  std::size_t pos_;
  bool big_;
  std::string name_;
};

enum class PlyEncoding { Ascii, Little, Big };

struct PlyHeader {
  PlyEncoding encoding = PlyEncoding::Ascii;
  std::vector<PlyElement> elements;
  std::size_t body = 0;  // offset of the first record
};

// The header, up to end_header: format, elements (counts bounded by the file's size) and their properties.
PlyHeader read_ply_header(std::string_view text, const std::string& name) {
  LineReader in(text, name);
  if (!in.next_line() || in.field() != "ply") fail(name, "1", "not a PLY file (first line is not 'ply')");
  PlyHeader h;
  bool have_format = false;
  bool ended = false;
  while (!ended && in.next_line()) {
    const std::string_view key = in.field();
    if (key == "format") {
      const std::string_view f = in.field();
      if (f == "ascii") h.encoding = PlyEncoding::Ascii;
      else if (f == "binary_little_endian") h.encoding = PlyEncoding::Little;
      else if (f == "binary_big_endian") h.encoding = PlyEncoding::Big;
      else in.fail_here("unknown PLY format '" + std::string(f) + "'");
      have_format = true;
    } else if (key == "element") {
      PlyElement e;
      e.name = std::string(in.field());
      e.count = in.integer(in.field(), "element count");
      if (e.count < 0 || std::uint64_t(e.count) > text.size())
        in.fail_here("element '" + e.name + "' count " + std::to_string(e.count) + " is impossible for a file of " +
                     std::to_string(text.size()) + " bytes");
      h.elements.push_back(std::move(e));
    } else if (key == "property") {
      if (h.elements.empty()) in.fail_here("property before any element");
      PlyProperty p;
      std::string_view t = in.field();
      if (t == "list") {
        p.is_list = true;
        const auto ct = ply_type(in.field());
        if (!ct || *ct == PlyType::Float32 || *ct == PlyType::Float64) in.fail_here("bad list count type");
        p.count_type = *ct;
        t = in.field();
      }
      const auto vt = ply_type(t);
      if (!vt) in.fail_here("unknown property type '" + std::string(t) + "'");
      p.type = *vt;
      p.name = std::string(in.field());
      h.elements.back().properties.push_back(std::move(p));
    } else if (key == "end_header") {
      ended = true;
    } else if (key != "comment" && key != "obj_info" && !key.empty()) {
      in.fail_here("unknown header line '" + std::string(key) + "'");
    }
  }
  if (!ended) fail(name, "", "no end_header");
  if (!have_format) fail(name, "", "no format line");
  h.body = in.offset();
  return h;
}

// Where the columns parasurf reads lie: the vertex element's x, y, z and the face element's uchar red, green, blue
// (as parasurf and most tools write them).
struct PlyColumns {
  const PlyElement* vertex_el = nullptr;
  const PlyElement* face_el = nullptr;
  int xyz[3] = {-1, -1, -1};
  int rgb[3] = {-1, -1, -1};
  bool have_rgb() const { return rgb[0] >= 0 && rgb[1] >= 0 && rgb[2] >= 0; }
};

PlyColumns ply_columns(const PlyHeader& h, const std::string& name) {
  PlyColumns cols;
  const PlyElement*& vertex_el = cols.vertex_el;
  const PlyElement*& face_el = cols.face_el;
  int* const xyz = cols.xyz;
  int* const rgb = cols.rgb;
  for (const auto& e : h.elements)
    if (e.name == "vertex") vertex_el = &e;
  if (!vertex_el) fail(name, "", "no 'vertex' element");
  for (int k = 0; k < int(vertex_el->properties.size()); ++k) {
    const auto& p = vertex_el->properties[k];
    if (p.is_list) continue;
    if (p.name == "x") xyz[0] = k;
    if (p.name == "y") xyz[1] = k;
    if (p.name == "z") xyz[2] = k;
  }
  if (xyz[0] < 0 || xyz[1] < 0 || xyz[2] < 0) fail(name, "", "the vertex element lacks x, y or z");
  if (vertex_el->count > std::numeric_limits<std::uint32_t>::max()) fail(name, "", "more than 2^32 vertices");
  for (const auto& e : h.elements) {
    if (&e == vertex_el) break;
    if (e.name == "face") fail(name, "", "the face element comes before the vertex element (not supported)");
  }
  // Face colours (uchar red green blue), as parasurf and most tools write them.
  for (const auto& e : h.elements)
    if (e.name == "face") face_el = &e;
  if (face_el)
    for (int k = 0; k < int(face_el->properties.size()); ++k) {
      const auto& p = face_el->properties[k];
      if (p.is_list || p.type != PlyType::Uint8) continue;
      if (p.name == "red") rgb[0] = k;
      if (p.name == "green") rgb[1] = k;
      if (p.name == "blue") rgb[2] = k;
    }

  return cols;
}

// What parasurf keeps of one record, whichever the encoding: its position (vertex element), its colour (face
// element) and whether it added a face.
struct PlyRow {
  double xyz[3] = {0, 0, 0};
  double rgb[3] = {0, 0, 0};
  bool face_added = false;
  // Scalar property k of element e.
  void scalar(const PlyColumns& cols, const PlyElement& e, int k, double v) {
    for (int a = 0; a < 3; ++a) {
      if (cols.xyz[a] == k) xyz[a] = v;
      if (&e == cols.face_el && cols.rgb[a] == k) rgb[a] = v;
    }
  }
  void finish(const PlyColumns& cols, const PlyElement& e, PolygonMesh& mesh) const {
    if (&e == cols.vertex_el) mesh.positions.insert(mesh.positions.end(), xyz, xyz + 3);
    if (face_added && cols.have_rgb())
      for (int a = 0; a < 3; ++a) mesh.face_colors.push_back(std::uint8_t(std::clamp(rgb[a], 0.0, 255.0)));
  }
};

// The records of an ASCII body, line by line (blank lines skipped).
void read_ply_ascii(std::string_view text, const std::string& name, const PlyHeader& h, const PlyColumns& cols,
                    PolygonMesh& mesh, MeshReadReport& report) {
  std::vector<std::uint32_t> corners;
  LineReader body_in(text.substr(std::min(h.body, text.size())), name);
  for (const auto& e : h.elements) {
    for (long long r = 0; r < e.count; ++r) {
      if (!body_in.next_line()) fail(name, "", "file ends inside element '" + e.name + "'");
      if (body_in.line().find_first_not_of(" \t") == std::string_view::npos) { --r; continue; }
      PlyRow row;
      for (int k = 0; k < int(e.properties.size()); ++k) {
        const auto& p = e.properties[k];
        if (!p.is_list) {
          row.scalar(cols, e, k, body_in.number(body_in.field(), "property value"));
          continue;
        }
        const long long n = body_in.integer(body_in.field(), "list count");
        if (n < 0 || n > 65536) body_in.fail_here("list count " + std::to_string(n) + " is outside 0..65536");
        const bool is_face = e.name == "face" && (p.name == "vertex_indices" || p.name == "vertex_index");
        if (is_face && n > kMaxFaceCorners)
          body_in.fail_here("face of " + std::to_string(n) + " corners: at most " + std::to_string(kMaxFaceCorners));
        corners.clear();
        for (long long c = 0; c < n; ++c) {
          const std::string_view f = body_in.field();
          if (is_face) corners.push_back(checked_index(body_in.integer(f, "face index"), cols.vertex_el->count, body_in));
          else body_in.number(f, "list value");
        }
        if (is_face) {
          if (n < 3) body_in.fail_here("face with fewer than 3 corners");
          row.face_added = add_checked_face(mesh, corners, report);
        }
      }
      row.finish(cols, e, mesh);
    }
  }
}

// The records of a binary body; every count is bounded by the bytes left before it is read.
void read_ply_binary(std::string_view text, const std::string& name, const PlyHeader& h, const PlyColumns& cols,
                     PolygonMesh& mesh, MeshReadReport& report) {
  std::vector<std::uint32_t> corners;
  BinaryCursor cur(text, h.body, h.encoding == PlyEncoding::Big, name);
  for (const auto& e : h.elements) {
    // The smallest possible row already bounds the count by the bytes left.
    std::size_t min_row = 0;
    for (const auto& p : e.properties) min_row += p.is_list ? ply_size(p.count_type) : ply_size(p.type);
    if (min_row > 0 && std::uint64_t(e.count) > cur.remaining() / min_row)
      fail(name, "", "element '" + e.name + "' count " + std::to_string(e.count) + " needs more bytes than the file has");
    if (&e == cols.vertex_el) mesh.positions.reserve(std::size_t(3 * e.count));
    for (long long r = 0; r < e.count; ++r) {
      PlyRow row;
      for (int k = 0; k < int(e.properties.size()); ++k) {
        const auto& p = e.properties[k];
        if (!p.is_list) {
          row.scalar(cols, e, k, cur.read(p.type));
          continue;
        }
        const double nd = cur.read(p.count_type);
        if (nd < 0 || nd > 65536)
          fail(name, "", "list count " + std::to_string(nd) + " at byte " + std::to_string(cur.pos()) + " is outside 0..65536");
        const long long n = (long long)nd;
        const bool is_face = e.name == "face" && (p.name == "vertex_indices" || p.name == "vertex_index");
        if (is_face && n > kMaxFaceCorners)
          fail(name, "", "face " + std::to_string(r) + " has " + std::to_string(n) + " corners: at most " +
                             std::to_string(kMaxFaceCorners));
        corners.clear();
        for (long long c = 0; c < n; ++c) {
          const double iv = cur.read(p.type);
          if (!is_face) continue;
          if (!(iv >= 0 && iv < double(cols.vertex_el->count)) || iv != std::floor(iv))
            fail(name, "", "face " + std::to_string(r) + " uses vertex index " + std::to_string(iv) + ", outside 0.." +
                               std::to_string(cols.vertex_el->count - 1));
          corners.push_back(std::uint32_t(iv));
        }
        if (is_face) {
          if (n < 3) fail(name, "", "face " + std::to_string(r) + " has fewer than 3 corners");
          row.face_added = add_checked_face(mesh, corners, report);
        }
      }
      row.finish(cols, e, mesh);
    }
  }
}

void parse_ply(std::string_view text, const std::string& name, PolygonMesh& mesh, MeshReadReport& report) {
  const PlyHeader h = read_ply_header(text, name);
  report.format = h.encoding == PlyEncoding::Ascii ? "ply-ascii" : "ply-binary";
  const PlyColumns cols = ply_columns(h, name);
  if (h.encoding == PlyEncoding::Ascii)
    read_ply_ascii(text, name, h, cols, mesh, report);
  else
    read_ply_binary(text, name, h, cols, mesh, report);
  // Colours only when every kept face has one.
  if (mesh.face_colors.size() != std::size_t(3 * mesh.face_count())) mesh.face_colors.clear();
}

// ---------------------------------------------------------------- STL

struct PositionKey {
  std::uint64_t bits[3];
  bool operator==(const PositionKey& o) const { return bits[0] == o.bits[0] && bits[1] == o.bits[1] && bits[2] == o.bits[2]; }
};
struct PositionHash {
  std::size_t operator()(const PositionKey& k) const {
    std::uint64_t h = 1469598103934665603ull;
    for (auto b : k.bits) h = (h ^ b) * 1099511628211ull, h ^= h >> 29;
    return std::size_t(h);
  }
};

// STL stores each triangle's corners by value: shared vertices are recovered by exact position.
class Welder {
 public:
  explicit Welder(PolygonMesh& mesh) : mesh_(mesh) {}
  std::uint32_t vertex(const double p[3]) {
    PositionKey key;
    for (int k = 0; k < 3; ++k) key.bits[k] = std::bit_cast<std::uint64_t>(p[k] + 0.0);  // -0 and +0 alike
    const auto [it, inserted] = map_.try_emplace(key, std::uint32_t(mesh_.vertex_count()));
    if (inserted) mesh_.positions.insert(mesh_.positions.end(), p, p + 3);
    return it->second;
  }
  std::int64_t corners = 0;

 private:
  PolygonMesh& mesh_;
  std::unordered_map<PositionKey, std::uint32_t, PositionHash> map_;
};

void parse_stl(std::string_view text, const std::string& name, PolygonMesh& mesh, MeshReadReport& report) {
  Welder welder(mesh);
  std::vector<std::uint32_t> corners(3);
  std::uint32_t binary_count = 0;
  if (text.size() >= 84) std::memcpy(&binary_count, text.data() + 80, 4);
  const bool binary = text.size() >= 84 && text.size() == 84 + 50ull * binary_count;
  if (binary) {
    report.format = "stl-binary";
    for (std::uint32_t t = 0; t < binary_count; ++t) {
      const char* rec = text.data() + 84 + 50ull * t;
      for (int c = 0; c < 3; ++c) {
        float xyz[3];
        std::memcpy(xyz, rec + 12 + 12 * c, 12);
        const double p[3] = {xyz[0], xyz[1], xyz[2]};
        if (!std::isfinite(p[0]) || !std::isfinite(p[1]) || !std::isfinite(p[2]))
          fail(name, "", "triangle " + std::to_string(t) + " has a corner that is not finite (NaN or infinity)");
        corners[c] = welder.vertex(p);
      }
      add_checked_face(mesh, corners, report);
    }
  } else {
    if (text.substr(0, 5) != "solid")
      fail(name, "", "neither ASCII STL (no 'solid') nor binary STL (size " + std::to_string(text.size()) +
                         " is not 84 + 50 x " + std::to_string(binary_count) + ")");
    report.format = "stl-ascii";
    LineReader in(text, name);
    int corner = 0;
    while (in.next_line()) {
      const std::string_view key = in.field();
      if (key == "vertex") {
        if (corner >= 3) in.fail_here("facet with more than 3 vertices");
        double p[3];
        for (int k = 0; k < 3; ++k) p[k] = in.number(in.field(), "vertex coordinate");
        if (!std::isfinite(p[0]) || !std::isfinite(p[1]) || !std::isfinite(p[2]))
          in.fail_here("vertex coordinates are not finite (NaN or infinity)");
        corners[corner++] = welder.vertex(p);
      } else if (key == "endloop") {
        if (corner != 3) in.fail_here("facet with " + std::to_string(corner) + " vertices (STL facets have 3)");
        add_checked_face(mesh, corners, report);
        corner = 0;
      }
    }
  }
  report.welded_vertices = 3 * report.faces_read - mesh.vertex_count();
}

}  // namespace

PolygonMesh parse_polygon_mesh(std::string_view bytes, const std::string& name, MeshReadReport* report_out) {
  MeshReadReport report;
  PolygonMesh mesh;
  const std::string ext = lower_extension(name);
  if (ext == ".obj") parse_obj(bytes, name, mesh, report);
  else if (ext == ".off") parse_off(bytes, name, mesh, report);
  else if (ext == ".ply") parse_ply(bytes, name, mesh, report);
  else if (ext == ".stl") parse_stl(bytes, name, mesh, report);
  else
    throw Error(ErrorKind::InvalidArgument,
                "'" + name + "': unknown mesh format '" + ext + "' (expected .obj, .ply, .off or .stl)");
  check_finite(mesh, name);
  if (mesh.face_count() == 0)
    fail(name, "", report.degenerate_skipped ? "every face is degenerate (" + std::to_string(report.degenerate_skipped) + " skipped)"
                                             : std::string("no faces"));
  if (report_out) *report_out = report;
  return mesh;
}

PolygonMesh read_polygon_mesh(const std::string& path, MeshReadReport* report) {
  const std::string text = io::read_text_file(path, "mesh", kMaxMeshFileBytes);
  return parse_polygon_mesh(text, path, report);
}

// ---------------------------------------------------------------- topology

namespace {
template <class FaceLoop>
MeshTopologyReport topology_of(std::int64_t vertex_count, std::int64_t face_count, FaceLoop&& for_each_face) {
  // Directed half-edges, sorted: an undirected edge used once is a boundary, twice in opposite directions is
  // manifold, anything else is not.
  std::vector<std::pair<std::uint64_t, std::uint8_t>> halves;  // (min << 32 | max, direction)
  std::vector<char> used(std::size_t(vertex_count), 0);
  for_each_face([&](const std::uint32_t* c, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t a = c[i], b = c[(i + 1) % n];
      used[a] = 1;
      halves.emplace_back((std::uint64_t(std::min(a, b)) << 32) | std::max(a, b), a < b ? 0 : 1);
    }
  });
  std::sort(halves.begin(), halves.end());
  MeshTopologyReport r;
  for (std::size_t i = 0; i < halves.size();) {
    std::size_t j = i;
    while (j < halves.size() && halves[j].first == halves[i].first) ++j;
    ++r.edges;
    if (j - i == 1) ++r.boundary_edges;
    else if (j - i > 2 || halves[i].second == halves[i + 1].second) ++r.non_manifold_edges;
    i = j;
  }
  std::int64_t v = 0;
  for (char u : used) v += u;
  r.euler_characteristic = v - r.edges + face_count;
  return r;
}
}  // namespace

MeshTopologyReport mesh_topology(const PolygonMesh& mesh) {
  return topology_of(mesh.vertex_count(), mesh.face_count(), [&](auto&& f) {
    for (std::int64_t i = 0; i < mesh.face_count(); ++i)
      f(mesh.face_indices.data() + mesh.face_offsets[i], std::size_t(mesh.face_offsets[i + 1] - mesh.face_offsets[i]));
  });
}

MeshTopologyReport mesh_topology(const TriangleMesh& mesh) {
  return topology_of(mesh.vertex_count(), mesh.triangle_count(), [&](auto&& f) {
    for (std::int64_t i = 0; i < mesh.triangle_count(); ++i) f(mesh.triangles.data() + 3 * i, 3);
  });
}

}  // namespace parasurf
