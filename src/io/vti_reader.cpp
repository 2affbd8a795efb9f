// VTK XML ImageData (.vti): one piece, one single-component point array (the active Scalars, else the first),
// stored ASCII, inline binary (base64) or appended (raw or base64), uncompressed or zlib-compressed in VTK's
// blocks (header UInt32 or UInt64, either byte order). Uncompressed raw appended samples are read slab by slab
// from the file; other encodings are decoded into memory, their size checked before anything is allocated.
// Format: "VTK File Formats", VTK User's Guide, section "XML File Formats".
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "core/voxel_dispatch.hpp"
#include "io/number_text.hpp"
#include "io/volume_data.hpp"
#include "parasurf/error.hpp"

namespace parasurf::io {
namespace {

constexpr std::uint64_t kMaxInlineFile = std::uint64_t(2) << 30;  // XML whose data lies inside the elements
constexpr std::size_t kRootWithin = std::size_t(1) << 16;

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw Error(ErrorKind::Parse, path + ": " + msg);
}

struct Tag {
  std::map<std::string, std::string> attributes;
  std::size_t begin = std::string::npos;  // '<'
  std::size_t content = 0, content_end = 0;  // text between <tag ...> and </tag> (empty for <tag/>)
  bool found() const { return begin != std::string::npos; }
};

// The next element named `name` at or after `from` (and before `limit`), with its attributes and content.
Tag find_tag(const std::string& path, const std::string& xml, const std::string& name, std::size_t from,
             std::size_t limit = std::string::npos) {
  Tag t;
  std::size_t at = from;
  while (true) {
    at = xml.find("<" + name, at);
    if (at == std::string::npos || at >= limit) return t;
    const char next = at + 1 + name.size() < xml.size() ? xml[at + 1 + name.size()] : '\0';
    if (std::isspace(static_cast<unsigned char>(next)) || next == '>' || next == '/') break;
    at += 1;
  }
  t.begin = at;
  std::size_t i = at + 1 + name.size();
  while (true) {
    while (i < xml.size() && std::isspace(static_cast<unsigned char>(xml[i]))) ++i;
    if (i >= xml.size()) fail(path, "<" + name + "> is not closed");
    if (xml[i] == '/' || xml[i] == '>') break;
    const std::size_t eq = xml.find('=', i);
    if (eq == std::string::npos) fail(path, "<" + name + ">: an attribute has no value");
    std::string key = xml.substr(i, eq - i);
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    std::size_t q = eq + 1;
    while (q < xml.size() && std::isspace(static_cast<unsigned char>(xml[q]))) ++q;
    if (q >= xml.size() || (xml[q] != '"' && xml[q] != '\'')) fail(path, "<" + name + ">: attribute " + key + " is not quoted");
    const std::size_t close = xml.find(xml[q], q + 1);
    if (close == std::string::npos) fail(path, "<" + name + ">: attribute " + key + " is not closed");
    t.attributes[key] = xml.substr(q + 1, close - q - 1);
    i = close + 1;
  }
  if (xml[i] == '/') {
    t.content = t.content_end = i;
    return t;
  }
  t.content = i + 1;
  t.content_end = xml.find("</" + name, t.content);
  if (t.content_end == std::string::npos) t.content_end = xml.size();  // appended data follows: read no further
  return t;
}

std::vector<double> numbers(const std::string& path, const std::string& what, const std::string& text, std::size_t n) {
  const std::vector<std::string_view> w = words(text, n + 1);
  std::vector<double> v(w.size());
  for (std::size_t i = 0; i < w.size(); ++i)
    if (!parse_number(w[i], v[i])) fail(path, what + ": '" + std::string(w[i]) + "' is not a number");
  if (v.size() != n) fail(path, what + ": expected " + std::to_string(n) + " numbers, got '" + text + "'");
  for (double d : v)
    if (!std::isfinite(d)) fail(path, what + " must be finite");
  return v;
}

// Base64, tolerant of padding inside the text (VTK encodes a compressed array's header apart from its blocks).
std::vector<unsigned char> base64(const std::string& path, const char* begin, const char* end, std::uint64_t limit) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<unsigned char> out;
  out.reserve(std::size_t(std::min<std::uint64_t>(limit, std::uint64_t(end - begin) / 4 * 3)));
  int quad[4], n = 0, pad = 0;
  for (const char* p = begin; p < end && out.size() < limit; ++p) {
    const char c = *p;
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (c == '=') {
      ++pad;
      quad[n++] = 0;
    } else {
      const int v = value(c);
      if (v < 0) fail(path, std::string("binary data holds '") + c + "', which is not base64");
      if (pad) fail(path, "base64 data continues inside a padded group");
      quad[n++] = v;
    }
    if (n == 4) {
      const unsigned bits = unsigned(quad[0]) << 18 | unsigned(quad[1]) << 12 | unsigned(quad[2]) << 6 | unsigned(quad[3]);
      const unsigned char bytes[3] = {static_cast<unsigned char>(bits >> 16), static_cast<unsigned char>(bits >> 8),
                                      static_cast<unsigned char>(bits)};
      out.insert(out.end(), bytes, bytes + 3 - std::min(pad, 2));
      n = pad = 0;
    }
  }
  return out;
}

struct Layout {
  std::string path;
  bool big_endian = false, compressed = false;
  std::size_t header_bytes = 4;  // UInt32 or UInt64 sizes
  std::uint64_t expected = 0;    // bytes of samples
  std::size_t sample_bytes = 1;
};

std::uint64_t header_word(const Layout& l, const unsigned char* p) {
  std::uint64_t v = 0;
  for (std::size_t b = 0; b < l.header_bytes; ++b) {
    const std::size_t at = l.big_endian ? b : l.header_bytes - 1 - b;
    v = v << 8 | p[at];
  }
  return v;
}

void to_native(const Layout& l, std::vector<char>& bytes) {
  if (l.sample_bytes > 1 && l.big_endian != (std::endian::native == std::endian::big))
    for (std::size_t i = 0; i + l.sample_bytes <= bytes.size(); i += l.sample_bytes)
      std::reverse(bytes.begin() + std::ptrdiff_t(i), bytes.begin() + std::ptrdiff_t(i + l.sample_bytes));
}

// The samples of one array from its encoded bytes (a size word, then the data; or VTK's compression header, then
// the zlib blocks), in the machine's byte order.
std::vector<char> decode(const Layout& l, const unsigned char* p, std::uint64_t have) {
  auto need = [&](std::uint64_t n, const char* what) {
    if (n > have) fail(l.path, std::string("data ends inside ") + what);
  };
  std::vector<char> out;
  if (!l.compressed) {
    need(l.header_bytes, "the array's size");
    const std::uint64_t n = header_word(l, p);
    if (n != l.expected)
      fail(l.path, "the array holds " + std::to_string(n) + " bytes where the extent needs " + std::to_string(l.expected));
    need(l.header_bytes + n, "the array");
    out.assign(reinterpret_cast<const char*>(p + l.header_bytes), reinterpret_cast<const char*>(p + l.header_bytes + n));
  } else {
    need(3 * l.header_bytes, "the compression header");
    const std::uint64_t blocks = header_word(l, p), block = header_word(l, p + l.header_bytes),
                        last = header_word(l, p + 2 * l.header_bytes);
    if (blocks == 0 || block == 0 || last > block || blocks > l.expected / block + 1)
      fail(l.path, "compression header (" + std::to_string(blocks) + " blocks of " + std::to_string(block) +
                       " bytes) does not fit the extent");
    const std::uint64_t total = (blocks - 1) * block + (last ? last : block);
    if (total != l.expected)
      fail(l.path, "compressed array inflates to " + std::to_string(total) + " bytes where the extent needs " +
                       std::to_string(l.expected));
    need((3 + blocks) * l.header_bytes, "the compressed block sizes");
    out.resize(std::size_t(total));
    std::uint64_t in_at = (3 + blocks) * l.header_bytes, out_at = 0;
    for (std::uint64_t b = 0; b < blocks; ++b) {
      const std::uint64_t size = header_word(l, p + (3 + b) * l.header_bytes);
      const std::uint64_t want = b + 1 == blocks && last ? last : block;
      need(in_at + size, "a compressed block");
      uLongf got = uLongf(want);
      if (size > std::numeric_limits<uLong>::max() ||
          uncompress(reinterpret_cast<Bytef*>(out.data() + out_at), &got, p + in_at, uLong(size)) != Z_OK || got != want)
        fail(l.path, "compressed block " + std::to_string(b) + " is corrupt");
      in_at += size;
      out_at += want;
    }
  }
  to_native(l, out);
  return out;
}

VoxelType vti_type(const std::string& path, const std::string& t) {
  static const std::map<std::string, VoxelType> names = {
      {"Int8", VoxelType::Int8},     {"UInt8", VoxelType::UInt8},     {"Int16", VoxelType::Int16},
      {"UInt16", VoxelType::UInt16}, {"Int32", VoxelType::Int32},     {"UInt32", VoxelType::UInt32},
      {"Float32", VoxelType::Float32}, {"Float64", VoxelType::Float64}, {"Char", VoxelType::Int8}};
  const auto it = names.find(t);
  if (it == names.end())
    fail(path, "sample type '" + t + "' is not supported (Int8, UInt8, Int16, UInt16, Int32, UInt32, Float32, Float64)");
  return it->second;
}

}  // namespace

std::unique_ptr<VolumeSource> open_vti(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot open '" + path + "' for reading");
  // The XML up to the appended data (all of it when the data is inline).
  std::string xml;
  std::uint64_t appended_at = std::numeric_limits<std::uint64_t>::max();  // file byte after '_'
  {
    std::vector<char> chunk(1 << 16);
    while (in) {
      in.read(chunk.data(), std::streamsize(chunk.size()));
      const std::size_t old = xml.size();
      xml.append(chunk.data(), std::size_t(in.gcount()));
      const std::size_t tag = xml.find("<AppendedData", old > 16 ? old - 16 : 0);
      if (tag != std::string::npos) {
        const std::size_t underscore = xml.find('_', tag);
        if (underscore == std::string::npos) {
          if (xml.size() - tag > 4096) fail(path, "<AppendedData> has no '_' before its data");
          continue;
        }
        appended_at = underscore + 1;
        break;
      }
      if (xml.size() > kMaxInlineFile)
        fail(path, "XML with inline data beyond 2 GiB (large volumes are written with appended data)");
      // A VTK file names its root element in its first lines: anything else is refused before it is all read.
      if (xml.size() >= kRootWithin && old < kRootWithin && xml.find("<VTKFile") == std::string::npos)
        fail(path, "no <VTKFile> element in the first " + std::to_string(kRootWithin) + " bytes: not a VTK XML file");
    }
  }
  const Tag file = find_tag(path, xml, "VTKFile", 0);
  if (!file.found()) fail(path, "no <VTKFile> element: not a VTK XML file");
  auto attr = [&](const Tag& t, const std::string& key, const std::string& fallback = "") {
    const auto it = t.attributes.find(key);
    return it == t.attributes.end() ? fallback : it->second;
  };
  if (attr(file, "type") != "ImageData")
    fail(path, "VTK XML file of type '" + attr(file, "type") + "'; only ImageData (.vti) holds a volume");
  Layout l;
  l.path = path;
  const std::string order = attr(file, "byte_order", "LittleEndian");
  if (order != "LittleEndian" && order != "BigEndian") fail(path, "byte_order '" + order + "' is unknown");
  l.big_endian = order == "BigEndian";
  const std::string header_type = attr(file, "header_type", "UInt32");
  if (header_type != "UInt32" && header_type != "UInt64") fail(path, "header_type '" + header_type + "' is unknown");
  l.header_bytes = header_type == "UInt64" ? 8 : 4;
  const std::string compressor = attr(file, "compressor");
  if (!compressor.empty() && compressor != "vtkZLibDataCompressor")
    fail(path, "compressor '" + compressor + "' is not supported (uncompressed and vtkZLibDataCompressor are)");
  l.compressed = !compressor.empty();

  const Tag image = find_tag(path, xml, "ImageData", file.content);
  if (!image.found()) fail(path, "no <ImageData> element");
  const std::vector<double> extent = numbers(path, "WholeExtent", attr(image, "WholeExtent"), 6);
  VolumeGeometry g;
  const std::vector<double> origin = numbers(path, "Origin", attr(image, "Origin", "0 0 0"), 3);
  const std::vector<double> spacing = numbers(path, "Spacing", attr(image, "Spacing", "1 1 1"), 3);
  if (!attr(image, "Direction").empty()) {
    const std::vector<double> d = numbers(path, "Direction", attr(image, "Direction"), 9);
    std::copy(d.begin(), d.end(), g.direction.begin());
  }
  for (int a = 0; a < 3; ++a) {
    const double lo = extent[2 * a], hi = extent[2 * a + 1];
    if (lo != std::floor(lo) || hi != std::floor(hi) || std::abs(lo) > 1e15 || std::abs(hi) > 1e15 || hi < lo)
      fail(path, "WholeExtent '" + attr(image, "WholeExtent") + "' is not three ranges of indices");
    g.dims[a] = std::int64_t(hi - lo) + 1;
    g.spacing[a] = spacing[std::size_t(a)];
  }
  // Index 0 of the samples is the extent's first index.
  for (int r = 0; r < 3; ++r) {
    g.origin[r] = origin[std::size_t(r)];
    for (int c = 0; c < 3; ++c) g.origin[r] += g.direction[std::size_t(3 * r + c)] * extent[std::size_t(2 * c)] * spacing[std::size_t(c)];
  }
  check_volume_geometry(path, g);

  const Tag piece = find_tag(path, xml, "Piece", image.content);
  if (!piece.found()) fail(path, "no <Piece> element");
  if (find_tag(path, xml, "Piece", piece.content).found())
    fail(path, "several pieces: only single-piece ImageData is supported (ParaView writes one with 'Save Data')");
  if (!attr(piece, "Extent").empty() && numbers(path, "Piece Extent", attr(piece, "Extent"), 6) != extent)
    fail(path, "the piece's extent differs from WholeExtent");
  const Tag point_data = find_tag(path, xml, "PointData", piece.content);
  if (!point_data.found() || point_data.content == point_data.content_end)
    fail(path, "no point data (volumes of cell data are not supported)");
  const std::string active = attr(point_data, "Scalars");
  Tag array;
  for (std::size_t at = point_data.content;;) {
    const Tag t = find_tag(path, xml, "DataArray", at, point_data.content_end);
    if (!t.found()) break;
    if (!array.found() || (!active.empty() && attr(t, "Name") == active && attr(array, "Name") != active)) array = t;
    at = t.content_end;
  }
  if (!array.found()) fail(path, "<PointData> holds no <DataArray>");
  const std::string name = attr(array, "Name", "(unnamed)");
  const std::string components = attr(array, "NumberOfComponents", "1");
  if (components != "1")
    fail(path, "point array '" + name + "' has " + components + " components; a volume needs one");
  const VoxelType type = vti_type(path, attr(array, "type"));
  l.sample_bytes = voxel_bytes(type);
  l.expected = std::uint64_t(g.voxel_count()) * l.sample_bytes;
  const std::string format = attr(array, "format", "ascii");
  const std::string where = path + " (array '" + name + "')";

  if (format == "ascii") {
    core::check_host_allocation(l.expected, where);
    std::istringstream text(xml.substr(array.content, array.content_end - array.content));
    std::vector<char> bytes = ascii_samples(path, text, std::size_t(g.voxel_count()), type);
    return owned_volume_data(path, g, type, std::move(bytes));
  }
  if (format == "binary") {
    core::check_host_allocation(l.expected, where);
    const std::vector<unsigned char> raw = base64(path, xml.data() + array.content, xml.data() + array.content_end,
                                                  std::numeric_limits<std::uint64_t>::max());
    return owned_volume_data(path, g, type, decode(l, raw.data(), raw.size()));
  }
  if (format != "appended") fail(path, "array format '" + format + "' is unknown (ascii, binary, appended)");
  if (appended_at == std::numeric_limits<std::uint64_t>::max()) fail(path, "appended array but no <AppendedData>");
  const Tag appended = find_tag(path, xml, "AppendedData", file.content);
  const std::string encoding = attr(appended, "encoding", "raw");
  const std::string offset_text = attr(array, "offset", "0");
  char* end = nullptr;
  const unsigned long long offset = std::strtoull(offset_text.c_str(), &end, 10);
  if (offset_text.empty() || *end != '\0' || offset_text[0] == '-') fail(path, "array offset '" + offset_text + "' is not a byte count");
  in.clear();
  in.seekg(0, std::ios::end);
  const std::uint64_t file_bytes = std::uint64_t(in.tellg());
  if (appended_at > file_bytes || offset > file_bytes - appended_at) fail(path, "array offset lies past the end of the file");
  const std::uint64_t start = appended_at + offset;
  if (encoding == "raw" && !l.compressed) {
    // Straight from the file, slab by slab: the size word first.
    unsigned char word[8] = {0};
    in.seekg(std::streamoff(start));
    if (!in.read(reinterpret_cast<char*>(word), std::streamsize(l.header_bytes))) fail(path, "data ends inside the array's size");
    const std::uint64_t n = header_word(l, word);
    if (n != l.expected)
      fail(path, "the array holds " + std::to_string(n) + " bytes where the extent needs " + std::to_string(l.expected));
    return raw_volume_data(path, path, start + l.header_bytes, g, type, l.big_endian);
  }
  if (encoding != "raw" && encoding != "base64") fail(path, "appended encoding '" + encoding + "' is unknown (raw, base64)");
  // Compressed or base64: the array's bytes into memory, bounded by what the rest of the file holds.
  core::check_host_allocation(l.expected + (file_bytes - start), where);
  std::vector<char> rest(std::size_t(file_bytes - start));
  in.seekg(std::streamoff(start));
  in.read(rest.data(), std::streamsize(rest.size()));
  if (encoding == "raw")
    return owned_volume_data(path, g, type, decode(l, reinterpret_cast<const unsigned char*>(rest.data()), rest.size()));
  const char* stop = std::find(rest.data(), rest.data() + rest.size(), '<');
  const std::vector<unsigned char> raw = base64(path, rest.data(), stop, std::numeric_limits<std::uint64_t>::max());
  return owned_volume_data(path, g, type, decode(l, raw.data(), raw.size()));
}

}  // namespace parasurf::io
