// Volume readers: NRRD, MetaImage, VTK legacy STRUCTURED_POINTS and raw files, and the dispatch by extension to
// every reader (NIfTI, VTK XML and DICOM have files of their own).
// Only headers are parsed up front; samples are read slice by slice through a ByteStream (plain or inflated).
// Format facts: NRRD0005 (teem), MetaIO, VTK file formats 4.2.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <new>
#include <sstream>
#include <type_traits>

#include "core/voxel_dispatch.hpp"
#include "io/byte_stream.hpp"
#include "io/number_text.hpp"
#include "io/volume_data.hpp"
#include "parasurf/error.hpp"
#include "parasurf/volume.hpp"

namespace parasurf {

using io::Encoding;
using io::ends_with;
using io::file_size;
using io::open_data;
using io::parse_fail;

std::size_t voxel_bytes(VoxelType t) {
  switch (t) {
    case VoxelType::UInt8:
    case VoxelType::Int8: return 1;
    case VoxelType::UInt16:
    case VoxelType::Int16: return 2;
    case VoxelType::UInt32:
    case VoxelType::Int32:
    case VoxelType::Float32: return 4;
    case VoxelType::Float64: return 8;
  }
  return 1;
}

const char* voxel_type_name(VoxelType t) {
  switch (t) {
    case VoxelType::UInt8: return "uint8";
    case VoxelType::Int8: return "int8";
    case VoxelType::UInt16: return "uint16";
    case VoxelType::Int16: return "int16";
    case VoxelType::UInt32: return "uint32";
    case VoxelType::Int32: return "int32";
    case VoxelType::Float32: return "float32";
    case VoxelType::Float64: return "float64";
  }
  return "?";
}

VoxelType parse_voxel_type(const std::string& name) {
  for (auto t : {VoxelType::UInt8, VoxelType::Int8, VoxelType::UInt16, VoxelType::Int16, VoxelType::UInt32,
                 VoxelType::Int32, VoxelType::Float32, VoxelType::Float64})
    if (name == voxel_type_name(t)) return t;
  if (name == "float") return VoxelType::Float32;
  if (name == "double") return VoxelType::Float64;
  throw Error(ErrorKind::InvalidArgument, "unknown voxel type '" + name +
                                              "' (uint8, int8, uint16, int16, uint32, int32, float32, float64)");
}

std::array<double, 9> VolumeGeometry::jacobian() const {
  std::array<double, 9> j{};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) j[r * 3 + c] = direction[r * 3 + c] * spacing[c];
  return j;
}

std::array<double, 3> VolumeGeometry::world(double i, double j, double k) const {
  const auto m = jacobian();
  return {origin[0] + m[0] * i + m[1] * j + m[2] * k, origin[1] + m[3] * i + m[4] * j + m[5] * k,
          origin[2] + m[6] * i + m[7] * j + m[8] * k};
}

MemoryVolume::MemoryVolume(VolumeGeometry geometry, VoxelType type, const void* data, std::string name)
    : geometry_(geometry), type_(type), data_(data), name_(std::move(name)) {}

MemoryVolume::MemoryVolume(VolumeGeometry geometry, std::vector<float> values, std::string name)
    : geometry_(geometry), type_(VoxelType::Float32), owned_(std::move(values)), name_(std::move(name)) {
  if (std::int64_t(owned_.size()) != geometry_.voxel_count())
    throw Error(ErrorKind::InvalidArgument, name_ + ": " + std::to_string(owned_.size()) + " values for " +
                                                std::to_string(geometry_.voxel_count()) + " voxels");
  data_ = owned_.data();
}

void MemoryVolume::read_slices(std::int64_t z0, std::int64_t z1, void* out) {
  const std::size_t slice = std::size_t(geometry_.slice_voxels()) * voxel_bytes(type_);
  std::memcpy(out, static_cast<const char*>(data_) + std::size_t(z0) * slice, std::size_t(z1 - z0) * slice);
}

void read_volume_float(VolumeSource& source, float* out) {
  const auto& g = source.geometry();
  const std::size_t slice = std::size_t(g.slice_voxels());
  // In parts of about 64 MiB of the source's samples.
  const std::size_t slice_bytes = slice * voxel_bytes(source.type());
  const std::int64_t per = std::int64_t(std::max<std::size_t>(1, (std::size_t(64) << 20) / slice_bytes));
  std::vector<char> part;
  for (std::int64_t z = 0; z < g.dims[2]; z += per) {
    const std::int64_t z1 = std::min(g.dims[2], z + per);
    float* dst = out + std::size_t(z) * slice;
    const std::size_t n = std::size_t(z1 - z) * slice;
    if (source.type() == VoxelType::Float32) {
      source.read_slices(z, z1, dst);
      continue;
    }
    part.resize(n * voxel_bytes(source.type()));
    source.read_slices(z, z1, part.data());
    core::visit_voxel_type(source.type(), [&](auto tag) {
      using T = decltype(tag);
      const T* s = reinterpret_cast<const T*>(part.data());
      for (std::size_t i = 0; i < n; ++i) dst[i] = float(s[i]);
    });
  }
}

MemoryVolume load_volume_float(VolumeSource& source) {
  std::vector<float> values(std::size_t(source.geometry().voxel_count()));
  read_volume_float(source, values.data());
  return MemoryVolume(source.geometry(), std::move(values), source.name());
}

namespace {

constexpr std::int64_t kMaxVoxels = std::int64_t(1) << 46;  // 64 Ti samples: beyond any disk we will meet

}  // namespace

void io::parse_fail(const std::string& path, const std::string& msg) {
  throw Error(ErrorKind::Parse, path + ": " + msg);
}

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::uint64_t io::file_size(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorKind::Io, "cannot open '" + path + "': " + ec.message());
  return n;
}

namespace {

void check_geometry(const std::string& path, VolumeGeometry& g) {
  for (int a = 0; a < 3; ++a)
    if (g.dims[a] < 1) parse_fail(path, "dimension " + std::to_string(a) + " is " + std::to_string(g.dims[a]));
  if (g.dims[0] > kMaxVoxels / g.dims[1] / g.dims[2])
    parse_fail(path, "absurd size " + std::to_string(g.dims[0]) + "x" + std::to_string(g.dims[1]) + "x" +
                         std::to_string(g.dims[2]) + " (limit 2^46 voxels)");
  for (int a = 0; a < 3; ++a) {
    if (!std::isfinite(g.spacing[a]) || g.spacing[a] == 0) parse_fail(path, "spacing must be finite and non-zero");
    if (g.spacing[a] < 0) g.spacing[a] = -g.spacing[a];  // MetaImage/VTK writers sometimes store signs here
    if (!std::isfinite(g.origin[a])) parse_fail(path, "origin must be finite");
  }
  for (double d : g.direction)
    if (!std::isfinite(d)) parse_fail(path, "orientation matrix must be finite");
}

void swap_bytes(void* data, std::size_t count, std::size_t size) {
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < count; ++i, p += size) std::reverse(p, p + size);
}

// Samples of a file read through a ByteStream, or parsed ASCII held in memory; optional linear scaling to float.
class FileVolume final : public VolumeSource {
 public:
  FileVolume(std::string name, VolumeGeometry g, VoxelType stored, bool big_endian, std::unique_ptr<io::ByteStream> s)
      : name_(std::move(name)), geometry_(g), stored_(stored), big_endian_(big_endian), stream_(std::move(s)) {}
  FileVolume(std::string name, VolumeGeometry g, VoxelType stored, std::vector<char> bytes)
      : name_(std::move(name)), geometry_(g), stored_(stored), owned_(std::move(bytes)) {}

  void set_scaling(double slope, double inter) {
    if (slope != 0 && std::isfinite(slope) && std::isfinite(inter) && (slope != 1 || inter != 0)) {
      slope_ = slope;
      inter_ = inter;
      scaled_ = true;
    }
  }
  const VolumeGeometry& geometry() const override { return geometry_; }
  VoxelType type() const override { return scaled_ ? VoxelType::Float32 : stored_; }
  std::string name() const override { return name_; }
  const void* resident_data() const override {
    if (kept_) return kept_.get();
    return owned_.empty() || scaled_ ? nullptr : owned_.data();
  }

  // The samples decoded once into memory, scaled to float32 where the header scales them; the file is closed.
  bool keep_resident(std::uint64_t max_bytes) override {
    if (resident_data()) return true;
    const std::uint64_t voxels = std::uint64_t(geometry_.voxel_count());
    if (voxels * voxel_bytes(type()) > max_bytes) return false;
    // (not a std::vector: its zeroing would be one more pass over the volume; without the memory, the file is read
    // again later as before)
    std::unique_ptr<char[]> all(new (std::nothrow) char[std::size_t(voxels) * voxel_bytes(type())]);
    if (!all) return false;
    // In parts of about 64 MiB, so that the stored samples of a scaled volume are not held whole beside it.
    const std::uint64_t slice = std::uint64_t(geometry_.slice_voxels()) * voxel_bytes(type());
    const std::int64_t per = std::int64_t(std::max<std::uint64_t>(1, (std::uint64_t(64) << 20) / slice));
    for (std::int64_t z = 0; z < geometry_.dims[2]; z += per)
      read_slices(z, std::min(geometry_.dims[2], z + per), all.get() + std::size_t(z) * std::size_t(slice));
    kept_ = std::move(all);
    stream_.reset();
    owned_ = std::vector<char>();
    scratch_ = std::vector<char>();
    return true;
  }

  void read_slices(std::int64_t z0, std::int64_t z1, void* out) override {
    const std::size_t count = std::size_t(geometry_.slice_voxels()) * std::size_t(z1 - z0);
    if (kept_) {  // (as type() gives them: scaled already)
      const std::size_t bytes = voxel_bytes(type());
      std::memcpy(out, kept_.get() + std::size_t(z0) * std::size_t(geometry_.slice_voxels()) * bytes, count * bytes);
      return;
    }
    const std::size_t size = voxel_bytes(stored_);
    const std::uint64_t at = std::uint64_t(z0) * std::uint64_t(geometry_.slice_voxels()) * size;
    void* raw = out;
    if (scaled_) {
      scratch_.resize(count * size);
      raw = scratch_.data();
    }
    if (!owned_.empty()) {
      std::memcpy(raw, owned_.data() + at, count * size);
    } else {
      try {
        stream_->read_at(at, raw, count * size);
      } catch (const Error& e) {
        throw Error(e.kind(), name_ + ": " + e.what());
      }
      if (size > 1 && big_endian_ != (std::endian::native == std::endian::big)) swap_bytes(raw, count, size);
    }
    if (scaled_) convert_scaled(raw, count, static_cast<float*>(out));
  }

 private:
  void convert_scaled(const void* raw, std::size_t n, float* out) const {
    auto go = [&](auto tag) {
      using T = decltype(tag);
      const T* s = static_cast<const T*>(raw);
      for (std::size_t i = 0; i < n; ++i) out[i] = float(double(s[i]) * slope_ + inter_);
    };
    core::visit_voxel_type(stored_, go);
  }

  std::string name_;
  VolumeGeometry geometry_;
  VoxelType stored_;
  bool big_endian_ = false;
  std::unique_ptr<io::ByteStream> stream_;
  std::vector<char> owned_;
  std::vector<char> scratch_;
  std::unique_ptr<char[]> kept_;  // keep_resident's copy
  bool scaled_ = false;
  double slope_ = 1, inter_ = 0;
};

// Opens the data region: checks the size of uncompressed files against the header before any work.
// `offset` is a file byte for raw and ASCII data and for compressed streams; `inflated_skip` skips uncompressed
// bytes inside a compressed stream (a .nii.gz header).
}  // namespace

std::unique_ptr<VolumeSource> io::open_data(const std::string& name, const std::string& data_path, std::uint64_t offset,
                                        Encoding enc, VolumeGeometry g, VoxelType type, bool big_endian,
                                        std::uint64_t inflated_skip, double slope, double inter) {
  check_geometry(name, g);
  if (data_path != name) {  // a header naming its data file: a file that cannot be read is the header's problem
    std::error_code ec;
    if (!std::filesystem::is_regular_file(data_path, ec))
      parse_fail(name, "its data file '" + data_path + "' " + (std::filesystem::exists(data_path, ec) ? "is not a regular file" : "does not exist"));
  }
  const std::uint64_t need = std::uint64_t(g.voxel_count()) * voxel_bytes(type);
  if (enc == Encoding::Raw) {
    const std::uint64_t have = file_size(data_path);
    if (have < offset || have - offset < need)
      parse_fail(name, "data is truncated: the header asks for " + std::to_string(need) + " bytes at byte " +
                           std::to_string(offset) + " of '" + data_path + "' (" + std::to_string(have) +
                           " bytes in the file)");
    auto v = std::make_unique<FileVolume>(name, g, type, big_endian, std::make_unique<io::PlainStream>(data_path, offset));
    v->set_scaling(slope, inter);
    return v;
  }
  if (enc == Encoding::Deflate) {
    auto v = std::make_unique<FileVolume>(name, g, type, big_endian,
                                          std::make_unique<io::InflateStream>(data_path, offset, inflated_skip));
    v->set_scaling(slope, inter);
    return v;
  }
  // ASCII: parse every number now (text volumes are small by nature). Each value takes a character and all but
  // the last a separator, so a header whose count the file cannot hold is refused before anything is allocated.
  const std::uint64_t n_values = std::uint64_t(g.voxel_count());
  const std::uint64_t have = file_size(data_path);
  if (have < offset || have - offset < 2 * n_values - 1)
    parse_fail(name, "ASCII data is truncated: the header asks for " + std::to_string(n_values) +
                         " values, which take at least " + std::to_string(2 * n_values - 1) + " bytes, and '" +
                         data_path + "' holds " + std::to_string(have > offset ? have - offset : 0) +
                         " after the header");
  std::ifstream in(data_path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot open '" + data_path + "'");
  in.seekg(std::streamoff(offset));
  std::vector<char> bytes = io::ascii_samples(name, in, std::size_t(n_values), type);
  auto v = std::make_unique<FileVolume>(name, g, type, std::move(bytes));
  v->set_scaling(slope, inter);
  return v;
}

bool io::ends_with(const std::string& s, const std::string& suffix) {
  const std::string l = lower(s);
  return l.size() >= suffix.size() && l.compare(l.size() - suffix.size(), suffix.size(), suffix) == 0;
}

namespace {

std::string sibling(const std::string& header, const std::string& file) {
  if (!file.empty() && file[0] == '/') return file;
  const auto dir = std::filesystem::path(header).parent_path();
  return dir.empty() ? file : (dir / file).string();
}

// ------------------------------------------------------------------ key/value headers (NRRD, MetaImage)
std::vector<double> numbers(const std::string& path, const std::string& field, const std::string& text) {
  std::vector<double> out;
  std::string t = text;
  for (auto& c : t)
    if (c == '(' || c == ')' || c == ',') c = ' ';
  std::istringstream in(t);
  std::string tok;
  while (in >> tok) {
    char* end = nullptr;
    const double v = std::strtod(tok.c_str(), &end);
    if (end == tok.c_str() || *end != '\0') {
      if (lower(tok) == "none") {
        out.push_back(std::nan(""));
        continue;
      }
      parse_fail(path, field + ": '" + tok + "' is not a number");
    }
    out.push_back(v);
  }
  return out;
}

std::vector<double> exact_numbers(const std::string& path, const std::string& field, const std::string& text,
                                  std::size_t count) {
  auto v = numbers(path, field, text);
  if (v.size() != count)
    parse_fail(path, field + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(count));
  return v;
}

VoxelType nrrd_type(const std::string& path, std::string t) {
  t = lower(trim(t));
  static const std::map<std::string, VoxelType> names = {
      {"uchar", VoxelType::UInt8},           {"unsigned char", VoxelType::UInt8},
      {"uint8", VoxelType::UInt8},           {"uint8_t", VoxelType::UInt8},
      {"signed char", VoxelType::Int8},      {"int8", VoxelType::Int8},
      {"int8_t", VoxelType::Int8},           {"short", VoxelType::Int16},
      {"short int", VoxelType::Int16},       {"signed short", VoxelType::Int16},
      {"signed short int", VoxelType::Int16}, {"int16", VoxelType::Int16},
      {"int16_t", VoxelType::Int16},         {"ushort", VoxelType::UInt16},
      {"unsigned short", VoxelType::UInt16}, {"unsigned short int", VoxelType::UInt16},
      {"uint16", VoxelType::UInt16},         {"uint16_t", VoxelType::UInt16},
      {"int", VoxelType::Int32},             {"signed int", VoxelType::Int32},
      {"int32", VoxelType::Int32},           {"int32_t", VoxelType::Int32},
      {"uint", VoxelType::UInt32},           {"unsigned int", VoxelType::UInt32},
      {"uint32", VoxelType::UInt32},         {"uint32_t", VoxelType::UInt32},
      {"float", VoxelType::Float32},         {"double", VoxelType::Float64}};
  const auto it = names.find(t);
  if (it == names.end()) parse_fail(path, "unsupported NRRD type '" + t + "'");
  return it->second;
}

// The first bytes of a text-headed file, where its header must lie: a header is parsed from memory, so a file
// that never ends a line (a link to /dev/zero) or a header of gigabytes is refused after kMaxHeaderBytes.
constexpr std::size_t kMaxHeaderBytes = std::size_t(1) << 20;
struct HeaderText {
  std::string text;
  bool whole = false;  // the file ended within the limit
};
HeaderText header_text(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(ErrorKind::Io, "cannot open '" + path + "' for reading");
  HeaderText h;
  h.text.resize(kMaxHeaderBytes + 1);
  const std::size_t got = std::fread(h.text.data(), 1, h.text.size(), f);
  std::fclose(f);
  h.whole = got <= kMaxHeaderBytes;
  h.text.resize(std::min(got, kMaxHeaderBytes));
  return h;
}
[[noreturn]] void header_too_long(const std::string& path) {
  parse_fail(path, "the header does not end within its first " + std::to_string(kMaxHeaderBytes >> 20) +
                       " MiB (not a header, or an endless file)");
}

std::unique_ptr<VolumeSource> open_nrrd(const std::string& path) {
  const HeaderText header = header_text(path);
  std::istringstream in(header.text);
  std::string line;
  if (!std::getline(in, line) || line.rfind("NRRD000", 0) != 0) parse_fail(path, "first line is not 'NRRD000X'");
  std::map<std::string, std::string> f;
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;  // the blank line ends the header; attached data follows
    if (line[0] == '#') continue;
    if (line.find(":=") != std::string::npos) continue;  // key/value pairs carry no geometry
    const auto colon = line.find(": ");
    if (colon == std::string::npos)
      parse_fail(path, "line " + std::to_string(lineno) + ": expected 'field: value', got '" + line + "'");
    f[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 2));
    if (lineno > 10000) parse_fail(path, "header longer than 10000 lines");
  }
  if (in.eof() && !header.whole) header_too_long(path);
  const std::uint64_t header_end = in.eof() ? file_size(path) : std::uint64_t(in.tellg());
  auto need = [&](const std::string& k) -> const std::string& {
    const auto it = f.find(k);
    if (it == f.end()) parse_fail(path, "missing required field '" + k + "'");
    return it->second;
  };
  const VoxelType type = nrrd_type(path, need("type"));
  const auto dimension = exact_numbers(path, "dimension", need("dimension"), 1)[0];
  const auto sizes = numbers(path, "sizes", need("sizes"));
  if (dimension != double(sizes.size())) parse_fail(path, "'sizes' does not have 'dimension' values");
  // A leading axis of size 1 (e.g. a scalar "kinds: scalar domain domain domain") is allowed.
  std::size_t first = 0;
  if (sizes.size() == 4 && sizes[0] == 1) first = 1;
  if (sizes.size() - first != 3)
    parse_fail(path, "unsupported dimension count " + std::to_string(sizes.size()) + " (a 3-D volume is needed)");
  VolumeGeometry g;
  for (int a = 0; a < 3; ++a) {
    const double s = sizes[first + a];
    if (!(s >= 1) || s != std::floor(s) || s > 1e12) parse_fail(path, "sizes: bad value " + std::to_string(s));
    g.dims[a] = std::int64_t(s);
  }
  if (f.count("space directions")) {
    // One vector "(x,y,z)" per axis, or "none" for non-spatial axes.
    std::string sd = f["space directions"];
    std::vector<std::array<double, 3>> vecs;
    std::size_t pos = 0;
    while (pos < sd.size()) {
      while (pos < sd.size() && std::isspace(static_cast<unsigned char>(sd[pos]))) ++pos;
      if (pos >= sd.size()) break;
      if (sd.compare(pos, 4, "none") == 0) {
        pos += 4;
        continue;
      }
      const auto close = sd.find(')', pos);
      if (sd[pos] != '(' || close == std::string::npos) parse_fail(path, "space directions: expected '(x,y,z)'");
      const auto v = exact_numbers(path, "space directions vector", sd.substr(pos, close - pos + 1), 3);
      vecs.push_back({v[0], v[1], v[2]});
      pos = close + 1;
    }
    if (vecs.size() != 3) parse_fail(path, "space directions: expected 3 vectors, got " + std::to_string(vecs.size()));
    for (int c = 0; c < 3; ++c) {
      const double n = std::sqrt(vecs[c][0] * vecs[c][0] + vecs[c][1] * vecs[c][1] + vecs[c][2] * vecs[c][2]);
      if (!(n > 0)) parse_fail(path, "space directions: zero vector for axis " + std::to_string(c));
      g.spacing[c] = n;
      for (int r = 0; r < 3; ++r) g.direction[r * 3 + c] = vecs[c][r] / n;
    }
  } else if (f.count("spacings")) {
    const auto s = numbers(path, "spacings", f["spacings"]);
    if (s.size() != sizes.size()) parse_fail(path, "'spacings' does not have 'dimension' values");
    for (int a = 0; a < 3; ++a) g.spacing[a] = std::isfinite(s[first + a]) ? s[first + a] : 1.0;
  }
  if (f.count("space origin")) {
    const auto o = exact_numbers(path, "space origin", f["space origin"], 3);
    g.origin = {o[0], o[1], o[2]};
  }
  if (f.count("space")) {
    const std::string space = lower(f["space"]);
    if (space == "right-anterior-superior" || space == "ras") g.frame = WorldFrame::Ras;
    else if (space == "left-posterior-superior" || space == "lps") g.frame = WorldFrame::Lps;
  }
  const std::string enc = lower(f.count("encoding") ? f["encoding"] : "");
  Encoding e;
  if (enc == "raw") e = Encoding::Raw;
  else if (enc == "gzip" || enc == "gz") e = Encoding::Deflate;
  else if (enc == "ascii" || enc == "text" || enc == "txt") e = Encoding::Ascii;
  else parse_fail(path, "unsupported NRRD encoding '" + enc + "' (raw, gzip, ascii)");
  bool big = std::endian::native == std::endian::big;
  if (voxel_bytes(type) > 1 && e != Encoding::Ascii) {
    const std::string endian = lower(need("endian"));
    if (endian != "little" && endian != "big") parse_fail(path, "endian must be 'little' or 'big'");
    big = endian == "big";
  }
  std::string data_path = path;
  std::uint64_t offset = header_end;
  const std::string df = f.count("data file") ? f["data file"] : f.count("datafile") ? f["datafile"] : "";
  if (!df.empty()) {
    if (df.rfind("LIST", 0) == 0 || df.find(' ') != std::string::npos)
      parse_fail(path, "data file lists and ranges are not supported ('" + df + "')");
    data_path = sibling(path, df);
    offset = 0;
  }
  if (f.count("line skip") && exact_numbers(path, "line skip", f["line skip"], 1)[0] != 0)
    parse_fail(path, "'line skip' is not supported");
  if (f.count("byte skip")) {
    const double bs = exact_numbers(path, "byte skip", f["byte skip"], 1)[0];
    if (bs == -1 && e == Encoding::Raw) {
      check_geometry(path, g);  // sizes bounded before they are multiplied
      const std::uint64_t need_bytes = std::uint64_t(g.voxel_count()) * voxel_bytes(type);
      const std::uint64_t have = file_size(data_path);
      if (have < need_bytes) parse_fail(path, "data is truncated");
      offset = have - need_bytes;
    } else if (bs >= 0 && bs <= 1e15) {
      offset += std::uint64_t(bs);
    } else {
      parse_fail(path, "'byte skip' must be -1 or non-negative");
    }
  }
  return open_data(path, data_path, offset, e, g, type, big);
}

VoxelType meta_type(const std::string& path, const std::string& t) {
  static const std::map<std::string, VoxelType> names = {
      {"MET_UCHAR", VoxelType::UInt8},  {"MET_CHAR", VoxelType::Int8},   {"MET_USHORT", VoxelType::UInt16},
      {"MET_SHORT", VoxelType::Int16},  {"MET_UINT", VoxelType::UInt32}, {"MET_INT", VoxelType::Int32},
      {"MET_FLOAT", VoxelType::Float32}, {"MET_DOUBLE", VoxelType::Float64}};
  const auto it = names.find(t);
  if (it == names.end()) parse_fail(path, "unsupported ElementType '" + t + "'");
  return it->second;
}

bool meta_bool(const std::string& v) {
  const std::string l = lower(v);
  return l == "true" || l == "1" || l == "yes";
}

std::unique_ptr<VolumeSource> open_metaimage(const std::string& path) {
  const HeaderText header = header_text(path);
  std::istringstream in(header.text);
  std::map<std::string, std::string> f;
  std::string line;
  int lineno = 0;
  bool have_data_file = false;
  while (!have_data_file && std::getline(in, line)) {
    ++lineno;
    if (lineno > 1000) parse_fail(path, "header longer than 1000 lines without ElementDataFile");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      parse_fail(path, "line " + std::to_string(lineno) + ": expected 'Key = Value', got '" + line + "'");
    const std::string key = trim(line.substr(0, eq));
    f[key] = trim(line.substr(eq + 1));
    have_data_file = key == "ElementDataFile";  // always the last header field
  }
  if (!have_data_file && !header.whole) header_too_long(path);
  if (!have_data_file) parse_fail(path, "missing ElementDataFile");
  const std::uint64_t header_end = std::uint64_t(in.tellg());
  auto need = [&](const std::string& k) -> const std::string& {
    const auto it = f.find(k);
    if (it == f.end()) parse_fail(path, "missing required field '" + k + "'");
    return it->second;
  };
  const auto ndims = exact_numbers(path, "NDims", need("NDims"), 1)[0];
  // The value goes into the message as text: a huge NDims must not be converted to int.
  if (ndims != 3) parse_fail(path, "unsupported dimension count NDims = " + need("NDims"));
  if (f.count("ElementNumberOfChannels") && exact_numbers(path, "ElementNumberOfChannels", f["ElementNumberOfChannels"], 1)[0] != 1)
    parse_fail(path, "only single-channel images are supported");
  VolumeGeometry g;
  const auto ds = exact_numbers(path, "DimSize", need("DimSize"), 3);
  for (int a = 0; a < 3; ++a) {
    if (!(ds[a] >= 1) || ds[a] != std::floor(ds[a]) || ds[a] > 1e12)
      parse_fail(path, "DimSize: bad value " + std::to_string(ds[a]));
    g.dims[a] = std::int64_t(ds[a]);
  }
  const char* spacing_keys[] = {"ElementSpacing", "ElementSize"};
  for (const char* k : spacing_keys)
    if (f.count(k)) {
      const auto s = exact_numbers(path, k, f[k], 3);
      g.spacing = {s[0], s[1], s[2]};
      break;
    }
  for (const char* k : {"Offset", "Position", "Origin"})
    if (f.count(k)) {
      const auto o = exact_numbers(path, k, f[k], 3);
      g.origin = {o[0], o[1], o[2]};
      break;
    }
  for (const char* k : {"TransformMatrix", "Rotation", "Orientation"})
    if (f.count(k)) {
      // MetaIO writes the direction cosines of axis c as values 3c..3c+2 (ITK reads it transposed into columns).
      const auto m = exact_numbers(path, k, f[k], 9);
      for (int c = 0; c < 3; ++c)
        for (int r = 0; r < 3; ++r) g.direction[r * 3 + c] = m[c * 3 + r];
      break;
    }
  // MetaImage's world is ITK's, LPS.
  g.frame = WorldFrame::Lps;
  const VoxelType type = meta_type(path, need("ElementType"));
  bool big = false;
  for (const char* k : {"BinaryDataByteOrderMSB", "ElementByteOrderMSB"})
    if (f.count(k)) big = meta_bool(f[k]);
  const bool compressed = f.count("CompressedData") && meta_bool(f["CompressedData"]);
  const std::string file = f["ElementDataFile"];
  if (file.rfind("LIST", 0) == 0 || file.find('%') != std::string::npos)
    parse_fail(path, "ElementDataFile lists and patterns are not supported ('" + file + "')");
  std::string data_path = path;
  std::uint64_t offset = header_end;
  if (file != "LOCAL") {
    data_path = sibling(path, file);
    offset = 0;
  }
  if (f.count("HeaderSize")) {
    const double hs = exact_numbers(path, "HeaderSize", f["HeaderSize"], 1)[0];
    if (hs == -1 && !compressed) {
      check_geometry(path, g);  // sizes bounded before they are multiplied
      const std::uint64_t need_bytes = std::uint64_t(g.voxel_count()) * voxel_bytes(type);
      const std::uint64_t have = file_size(data_path);
      if (have < need_bytes) parse_fail(path, "data is truncated");
      offset = have - need_bytes;
    } else if (hs >= 0 && hs <= 1e15) {
      offset += std::uint64_t(hs);
    }
  }
  return open_data(path, data_path, offset, compressed ? Encoding::Deflate : Encoding::Raw, g, type, big);
}

// ------------------------------------------------------------------ VTK legacy
VoxelType vtk_type(const std::string& path, const std::string& t) {
  static const std::map<std::string, VoxelType> names = {
      {"unsigned_char", VoxelType::UInt8}, {"char", VoxelType::Int8},          {"signed_char", VoxelType::Int8},
      {"unsigned_short", VoxelType::UInt16}, {"short", VoxelType::Int16},     {"unsigned_int", VoxelType::UInt32},
      {"int", VoxelType::Int32},           {"float", VoxelType::Float32},      {"double", VoxelType::Float64}};
  const auto it = names.find(lower(t));
  if (it == names.end()) parse_fail(path, "unsupported VTK scalar type '" + t + "'");
  return it->second;
}

std::unique_ptr<VolumeSource> open_vtk(const std::string& path) {
  const HeaderText header = header_text(path);
  std::istringstream in(header.text);
  std::string line;
  if (!std::getline(in, line) || line.rfind("# vtk DataFile", 0) != 0)
    parse_fail(path, "line 1 is not '# vtk DataFile Version x.x'");
  std::getline(in, line);  // title
  std::string mode;
  if (!(in >> mode)) parse_fail(path, "missing ASCII|BINARY");
  mode = lower(mode);
  if (mode != "ascii" && mode != "binary") parse_fail(path, "expected ASCII or BINARY, got '" + mode + "'");
  std::string word;
  if (!(in >> word) || lower(word) != "dataset" || !(in >> word) || lower(word) != "structured_points")
    parse_fail(path, "only 'DATASET STRUCTURED_POINTS' is supported");
  VolumeGeometry g;
  bool have_dims = false;
  VoxelType type = VoxelType::UInt8;
  int guard = 0;
  while (in >> word) {
    if (++guard > 100) parse_fail(path, "no SCALARS found");
    const std::string w = lower(word);
    auto three = [&](auto& arr, const char* what) {
      for (int a = 0; a < 3; ++a) {
        std::string token;
        std::conditional_t<std::is_integral_v<std::decay_t<decltype(arr[a])>>, long long, double> v{};
        if (!(in >> token) || !io::parse_number(token, v)) parse_fail(path, std::string(what) + ": expected 3 numbers");
        arr[a] = v;
      }
    };
    if (w == "dimensions") {
      three(g.dims, "DIMENSIONS");
      have_dims = true;
    } else if (w == "spacing" || w == "aspect_ratio") {
      three(g.spacing, "SPACING");
    } else if (w == "origin") {
      three(g.origin, "ORIGIN");
    } else if (w == "point_data") {
      long long n = 0;
      std::string token;
      if (!(in >> token) || !io::parse_number(token, n)) parse_fail(path, "POINT_DATA: expected a count");
      if (!have_dims) parse_fail(path, "POINT_DATA before DIMENSIONS");
      if (g.dims[0] < 1 || g.dims[1] < 1 || g.dims[2] < 1 || n != g.dims[0] * g.dims[1] * g.dims[2])
        parse_fail(path, "POINT_DATA " + std::to_string(n) + " does not match DIMENSIONS");
    } else if (w == "scalars") {
      std::string name, t;
      if (!(in >> name >> t)) parse_fail(path, "SCALARS: expected a name and a type");
      type = vtk_type(path, t);
      std::getline(in, line);  // optional component count
      if (!trim(line).empty() && trim(line) != "1") parse_fail(path, "SCALARS with several components");
      std::string lut;
      if (!(in >> lut) || lower(lut) != "lookup_table") parse_fail(path, "expected LOOKUP_TABLE after SCALARS");
      if (!std::getline(in, line) && !header.whole) header_too_long(path);
      if (!have_dims) parse_fail(path, "SCALARS before DIMENSIONS");
      if (in.eof()) parse_fail(path, "no data after LOOKUP_TABLE");
      const std::uint64_t offset = std::uint64_t(in.tellg());
      return open_data(path, path, offset, mode == "binary" ? Encoding::Raw : Encoding::Ascii, g, type, true);
    } else if (w == "cell_data" || w == "field" || w == "vectors" || w == "normals") {
      parse_fail(path, "'" + word + "' before the point SCALARS is not supported");
    } else {
      parse_fail(path, "unexpected keyword '" + word + "'");
    }
  }
  parse_fail(path, "no point SCALARS found");
}

}  // namespace

namespace io {
std::vector<char> ascii_samples(const std::string& name, std::istream& in, std::size_t n, VoxelType type) {
  std::vector<char> bytes(n * voxel_bytes(type));
  std::string token;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(in >> token))
      parse_fail(name, "ASCII data ends after " + std::to_string(i) + " of " + std::to_string(n) + " values");
    char* end = nullptr;
    const double v = std::strtod(token.c_str(), &end);
    if (end == token.c_str() || *end != '\0') parse_fail(name, "ASCII value '" + token + "' is not a number");
    core::visit_voxel_type(type, [&](auto tag) {
      using T = decltype(tag);
      // Out-of-range conversions are undefined: refuse values the declared type cannot hold.
      if ((std::isfinite(v) || std::is_integral_v<T>) &&
          !(v >= double(std::numeric_limits<T>::lowest()) && v <= double(std::numeric_limits<T>::max())))
        parse_fail(name, "ASCII value '" + token + "' does not fit the type " + voxel_type_name(type));
      const T t = static_cast<T>(v);
      std::memcpy(bytes.data() + i * sizeof(T), &t, sizeof(T));
    });
  }
  return bytes;
}

void check_volume_geometry(const std::string& name, VolumeGeometry& g) { check_geometry(name, g); }
std::unique_ptr<VolumeSource> raw_volume_data(const std::string& name, const std::string& data_path,
                                              std::uint64_t offset, VolumeGeometry g, VoxelType type, bool big_endian) {
  return open_data(name, data_path, offset, Encoding::Raw, g, type, big_endian);
}
std::unique_ptr<VolumeSource> owned_volume_data(const std::string& name, VolumeGeometry g, VoxelType type,
                                                std::vector<char> bytes) {
  check_geometry(name, g);
  return std::make_unique<FileVolume>(name, g, type, std::move(bytes));
}
}  // namespace io

std::unique_ptr<VolumeSource> open_volume(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error(ErrorKind::Io, "cannot open '" + path + "': no such file");
  if (ends_with(path, ".nii") || ends_with(path, ".nii.gz") || ends_with(path, ".hdr") || ends_with(path, ".hdr.gz"))
    return io::open_nifti(path);
  if (ends_with(path, ".nrrd") || ends_with(path, ".nhdr")) return open_nrrd(path);
  if (ends_with(path, ".mhd") || ends_with(path, ".mha")) return open_metaimage(path);
  if (ends_with(path, ".vtk")) return open_vtk(path);
  if (ends_with(path, ".vti")) return io::open_vti(path);
  if (std::filesystem::is_directory(path) || ends_with(path, ".dcm") || ends_with(path, ".DCM") ||
      ends_with(path, ".dicom") || ends_with(path, ".ima") || ends_with(path, ".IMA"))
    return io::open_dicom_series(path);
  throw Error(ErrorKind::InvalidArgument, "cannot tell the volume format of '" + path +
                                              "' (.nii, .nii.gz, .nrrd, .nhdr, .mhd, .mha, .vtk, .vti, a DICOM folder "
                                              "or .dcm file; raw files need --raw-dims and --raw-type)");
}

std::unique_ptr<VolumeSource> open_raw_volume(const std::string& path, const RawVolumeOptions& o) {
  VolumeGeometry g;
  g.dims = o.dims;
  g.spacing = o.spacing;
  g.origin = o.origin;
  if (o.header_bytes < 0) throw Error(ErrorKind::InvalidArgument, "header bytes must be non-negative");
  const bool gz = ends_with(path, ".gz");
  return open_data(path, path, std::uint64_t(o.header_bytes), gz ? Encoding::Deflate : Encoding::Raw, g, o.type,
                   o.big_endian);
}

}  // namespace parasurf
