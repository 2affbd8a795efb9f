// Triangle mesh writers (binary PLY, OBJ, glTF binary, STL; VTK XML in vtk_xml_writer.cpp), always through a
// temporary file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <charconv>
#include <cstring>
#include <vector>
#include <string>

#include "core/memory.hpp"
#include "io/atomic_file.hpp"
#include "io/mesh_formats.hpp"
#include "parasurf/distributed.hpp"
#include "parasurf/error.hpp"
#include "parasurf/io.hpp"

namespace parasurf {

template <class T>
TriangleMesh grid_mesh(const SurfaceSamples<T>& s, std::int64_t rows, std::int64_t cols) {
  if (rows * cols != s.count || s.position[0].empty())
    throw Error(ErrorKind::InvalidArgument, "grid_mesh needs positions of a rows x cols grid");
  if (rows * cols > std::int64_t(UINT32_MAX))
    throw Error(ErrorKind::InvalidArgument, "grid of " + std::to_string(rows * cols) +
                                                " vertices exceeds the 2^32 vertex indices of the mesh writer");
  const std::uint64_t bytes = std::uint64_t(rows * cols) * 24 + std::uint64_t((rows - 1) * (cols - 1)) * 24;
  core::check_host_allocation(bytes, "the mesh of a " + std::to_string(rows) + "x" + std::to_string(cols) + " grid");
  TriangleMesh mesh;
  mesh.positions.resize(std::size_t(s.count) * 3);
  for (std::int64_t k = 0; k < s.count; ++k)
    for (int c = 0; c < 3; ++c) mesh.positions[3 * k + c] = float(s.position[c][k]);
  if (!s.normal[0].empty()) {
    mesh.normals.resize(std::size_t(s.count) * 3);
    for (std::int64_t k = 0; k < s.count; ++k)
      for (int c = 0; c < 3; ++c) mesh.normals[3 * k + c] = float(s.normal[c][k]);
  }
  mesh.triangles.reserve(std::size_t((rows - 1) * (cols - 1)) * 6);
  // (u,v) -> Su x Sv orientation: triangles (i,j) (i+1,j) (i,j+1) are counter-clockwise seen from the normal
  for (std::int64_t i = 0; i + 1 < rows; ++i)
    for (std::int64_t j = 0; j + 1 < cols; ++j) {
      const auto a = std::uint32_t(i * cols + j), b = std::uint32_t((i + 1) * cols + j);
      const auto c = std::uint32_t(i * cols + j + 1), d = std::uint32_t((i + 1) * cols + j + 1);
      mesh.triangles.insert(mesh.triangles.end(), {a, b, c, c, b, d});
    }
  return mesh;
}
template TriangleMesh grid_mesh<float>(const SurfaceSamples<float>&, std::int64_t, std::int64_t);
template TriangleMesh grid_mesh<double>(const SurfaceSamples<double>&, std::int64_t, std::int64_t);

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

using io::group_colour;

void write_ply(const std::string& path, const TriangleMesh& m) {
  const distributed::PlyLayout layout = distributed::PlyLayout::of(m);
  io::AtomicFile f(path);
  f.write(layout.header(std::uint64_t(m.vertex_count()), std::uint64_t(m.triangle_count()), m.group_names));
  std::vector<char> buf;
  constexpr std::int64_t kBatch = 1 << 16;
  for (std::int64_t v0 = 0; v0 < m.vertex_count(); v0 += kBatch) {
    const std::int64_t v1 = std::min<std::int64_t>(m.vertex_count(), v0 + kBatch);
    buf.resize(std::size_t(v1 - v0) * layout.vertex_bytes());
    layout.pack_vertices(m, v0, v1, buf.data());
    f.write(buf.data(), buf.size());
  }
  for (std::int64_t t0 = 0; t0 < m.triangle_count(); t0 += kBatch) {
    const std::int64_t t1 = std::min<std::int64_t>(m.triangle_count(), t0 + kBatch);
    buf.resize(std::size_t(t1 - t0) * layout.face_bytes());
    layout.pack_faces(m, t0, t1, 0, buf.data());
    f.write(buf.data(), buf.size());
  }
  f.commit();
}

// The text PLY: the same properties in the same order, numbers written shortest-exact (they read back bit for bit).
void write_ply_ascii(const std::string& path, const TriangleMesh& m) {
  distributed::PlyLayout layout = distributed::PlyLayout::of(m);
  layout.ascii = true;
  io::AtomicFile f(path);
  f.write(layout.header(std::uint64_t(m.vertex_count()), std::uint64_t(m.triangle_count()), m.group_names));
  std::string out;
  char num[64];
  auto put = [&](auto x, char after) {
    const auto r = std::to_chars(num, num + sizeof num, x);
    out.append(num, r.ptr);
    out += after;
  };
  auto flush = [&](bool always) {
    if (always || out.size() > (1 << 20)) {
      f.write(out);
      out.clear();
    }
  };
  for (std::int64_t v = 0; v < m.vertex_count(); ++v) {
    const std::size_t i = 3 * std::size_t(v);
    put(m.positions[i], ' '), put(m.positions[i + 1], ' ');
    put(m.positions[i + 2], layout.normals || layout.values ? ' ' : '\n');
    if (layout.normals) put(m.normals[i], ' '), put(m.normals[i + 1], ' '), put(m.normals[i + 2], layout.values ? ' ' : '\n');
    if (layout.values) put(m.vertex_values[std::size_t(v)], '\n');
    flush(false);
  }
  for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
    const std::size_t i = 3 * std::size_t(t);
    out += "3 ";
    put(m.triangles[i], ' '), put(m.triangles[i + 1], ' ');
    std::string tail;
    if (layout.groups) tail += ' ' + std::to_string(m.face_groups[std::size_t(t)]);
    if (layout.labels) tail += ' ' + std::to_string(m.face_labels[std::size_t(t)]);
    if (layout.outer_labels) tail += ' ' + std::to_string(m.face_outer_labels[std::size_t(t)]);
    if (layout.colors) {
      const float* c = group_colour(m, m.face_groups[std::size_t(t)]);
      for (int q = 0; q < 3; ++q) tail += ' ' + std::to_string(int(io::colour_byte(c[q])));
    }
    put(m.triangles[i + 2], tail.empty() ? '\n' : ' ');
    if (!tail.empty()) out.append(tail, 1, std::string::npos), out += '\n';
    flush(false);
  }
  flush(true);
  f.commit();
}

void write_obj(const std::string& path, const TriangleMesh& m) {
  const bool has_n = !m.normals.empty();
  io::AtomicFile f(path);
  f.write("# written by parasurf\n");
  std::string out;
  char line[160];
  auto flush = [&] {
    f.write(out);
    out.clear();
  };
  for (std::int64_t v = 0; v < m.vertex_count(); ++v) {
    std::snprintf(line, sizeof line, "v %.9g %.9g %.9g\n", m.positions[3 * v], m.positions[3 * v + 1],
                  m.positions[3 * v + 2]);
    out += line;
    if (has_n) {
      std::snprintf(line, sizeof line, "vn %.9g %.9g %.9g\n", m.normals[3 * v], m.normals[3 * v + 1],
                    m.normals[3 * v + 2]);
      out += line;
    }
    if (out.size() > (1 << 20)) flush();
  }
  int group = INT32_MIN;
  for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
    if (!m.face_groups.empty() && m.face_groups[t] != group) {
      group = m.face_groups[t];
      const std::string name = group >= 0 && group < int(m.group_names.size()) ? m.group_names[group]
                                                                             : "group" + std::to_string(group);
      out += "g " + name + "\n";
    }
    const auto a = m.triangles[3 * t] + 1ull, b = m.triangles[3 * t + 1] + 1ull, c = m.triangles[3 * t + 2] + 1ull;
    if (has_n) std::snprintf(line, sizeof line, "f %llu//%llu %llu//%llu %llu//%llu\n", a, a, b, b, c, c);
    else std::snprintf(line, sizeof line, "f %llu %llu %llu\n", a, b, c);
    out += line;
    if (out.size() > (1 << 20)) flush();
  }
  flush();
  f.commit();
}

// glTF 2.0 binary: one mesh whose primitives are the groups, each with its own material colour and its own vertex
// arrays holding only the vertices its triangles use (glTF readers take a primitive's accessors whole), in one
// buffer: per primitive its positions, normals, values, then its indices.
void write_glb(const std::string& path, const TriangleMesh& m) {
  const std::int64_t nv = m.vertex_count(), nf = m.triangle_count();
  const bool has_n = !m.normals.empty(), has_v = m.vertex_values.size() == std::size_t(nv);
  // faces ordered by group (stable)
  std::vector<std::int64_t> order(static_cast<std::size_t>(nf));
  for (std::int64_t t = 0; t < nf; ++t) order[std::size_t(t)] = t;
  auto group_of = [&](std::int64_t t) { return m.face_groups.empty() ? -1 : m.face_groups[std::size_t(t)]; };
  std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) { return group_of(x) < group_of(y); });
  auto num = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", x);
    return std::string(buf);
  };
  std::string bin, views, accessors, prims, materials;
  int view_count = 0;
  // A buffer view of `bytes` appended to the buffer and its accessor; returns the accessor's index.
  auto add = [&](const void* data, std::size_t bytes, int target, int component, std::size_t count, const char* type,
                 const std::string& extra = "") {
    const std::size_t at = bin.size();
    bin.append(static_cast<const char*>(data), bytes);
    while (bin.size() % 4) bin.push_back('\0');
    views += std::string(view_count ? "," : "") + "{\"buffer\":0,\"byteOffset\":" + std::to_string(at) +
             ",\"byteLength\":" + std::to_string(bytes) + ",\"target\":" + std::to_string(target) + "}";
    accessors += std::string(view_count ? "," : "") + "{\"bufferView\":" + std::to_string(view_count) +
                 ",\"componentType\":" + std::to_string(component) + ",\"count\":" + std::to_string(count) +
                 ",\"type\":\"" + type + "\"" + extra + "}";
    return view_count++;
  };
  std::vector<std::uint32_t> local(static_cast<std::size_t>(nv), UINT32_MAX);  // vertex -> its index in the primitive
  std::vector<std::int64_t> used;
  std::vector<float> pos, nrm, val;
  std::vector<std::uint32_t> idx;
  int prim = 0;
  for (std::size_t a = 0; a < order.size();) {
    std::size_t b = a;
    while (b < order.size() && group_of(order[b]) == group_of(order[a])) ++b;
    const int g = group_of(order[a]);
    used.clear();
    idx.clear();
    for (std::size_t k = a; k < b; ++k)
      for (int c = 0; c < 3; ++c) {
        const std::uint32_t v = m.triangles[3 * std::size_t(order[k]) + std::size_t(c)];
        if (local[v] == UINT32_MAX) local[v] = std::uint32_t(used.size()), used.push_back(v);
        idx.push_back(local[v]);
      }
    pos.clear();
    nrm.clear();
    val.clear();
    float lo[3] = {HUGE_VALF, HUGE_VALF, HUGE_VALF}, hi[3] = {-HUGE_VALF, -HUGE_VALF, -HUGE_VALF};
    for (std::int64_t v : used) {
      for (int c = 0; c < 3; ++c) {
        const float x = m.positions[3 * std::size_t(v) + std::size_t(c)];
        pos.push_back(x);
        lo[c] = std::min(lo[c], x);
        hi[c] = std::max(hi[c], x);
        if (has_n) nrm.push_back(m.normals[3 * std::size_t(v) + std::size_t(c)]);
      }
      if (has_v) val.push_back(m.vertex_values[std::size_t(v)]);
      local[std::size_t(v)] = UINT32_MAX;  // ready for the next primitive
    }
    const std::string bounds = ",\"min\":[" + num(lo[0]) + "," + num(lo[1]) + "," + num(lo[2]) + "],\"max\":[" +
                               num(hi[0]) + "," + num(hi[1]) + "," + num(hi[2]) + "]";
    std::string attributes = "\"POSITION\":" + std::to_string(add(pos.data(), pos.size() * 4, 34962, 5126, used.size(), "VEC3", bounds));
    if (has_n) attributes += ",\"NORMAL\":" + std::to_string(add(nrm.data(), nrm.size() * 4, 34962, 5126, used.size(), "VEC3"));
    if (has_v) attributes += ",\"_VALUE\":" + std::to_string(add(val.data(), val.size() * 4, 34962, 5126, used.size(), "SCALAR"));
    const int indices = add(idx.data(), idx.size() * 4, 34963, 5125, idx.size(), "SCALAR");
    if (prim) {
      prims += ",";
      materials += ",";
    }
    prims += "{\"attributes\":{" + attributes + "},\"indices\":" + std::to_string(indices) + ",\"material\":" +
             std::to_string(prim) + ",\"mode\":4}";
    const float* col = group_colour(m, g);
    std::string name = g >= 0 && g < int(m.group_names.size()) ? m.group_names[std::size_t(g)] : (g < 0 ? "surface" : "group" + std::to_string(g));
    std::string safe;
    for (char ch : name)
      if (ch != '"' && ch != '\\' && static_cast<unsigned char>(ch) >= 32) safe += ch;
    materials += "{\"name\":\"" + safe + "\",\"doubleSided\":true,\"pbrMetallicRoughness\":{\"baseColorFactor\":[" +
                 num(col[0]) + "," + num(col[1]) + "," + num(col[2]) + ",1],\"metallicFactor\":0.1,\"roughnessFactor\":0.6}}";
    ++prim;
    a = b;
  }
  std::string json = "{\"asset\":{\"version\":\"2.0\",\"generator\":\"parasurf\"},\"scene\":0,\"scenes\":[{\"nodes\":[0]}],"
                     "\"nodes\":[{\"mesh\":0}],\"meshes\":[{\"primitives\":[" + prims + "]}],\"materials\":[" + materials +
                     "],\"buffers\":[{\"byteLength\":" + std::to_string(bin.size()) + "}],\"bufferViews\":[" + views +
                     "],\"accessors\":[" + accessors + "]}";
  while (json.size() % 4) json.push_back(' ');
  const std::uint64_t total = 12 + 8 + json.size() + 8 + bin.size();
  if (total > UINT32_MAX) throw Error(ErrorKind::InvalidArgument, "mesh too large for one glTF binary file (4 GiB)");
  auto u32 = [](std::uint32_t x) { return std::string(reinterpret_cast<const char*>(&x), 4); };
  io::AtomicFile f(path);
  f.write(u32(0x46546C67) + u32(2) + u32(std::uint32_t(total)));
  f.write(u32(std::uint32_t(json.size())) + u32(0x4E4F534A));
  f.write(json);
  f.write(u32(std::uint32_t(bin.size())) + u32(0x004E4942));
  f.write(bin);
  f.commit();
}

// Binary STL: facet normals from the winding, positions repeated per triangle (STL has no sharing).
void write_stl(const std::string& path, const TriangleMesh& m) {
  if (m.triangle_count() > std::int64_t(UINT32_MAX))
    throw Error(ErrorKind::LimitReached, "'" + path + "': STL holds at most 4294967295 triangles");
  io::AtomicFile f(path);
  char header[80] = {};
  std::snprintf(header, sizeof header, "binary STL written by parasurf");
  f.write(header, 80);
  const std::uint32_t n = std::uint32_t(m.triangle_count());
  f.write(&n, 4);
  std::vector<char> buf;
  constexpr std::int64_t kBatch = 1 << 16;
  for (std::int64_t t0 = 0; t0 < m.triangle_count(); t0 += kBatch) {
    const std::int64_t t1 = std::min<std::int64_t>(m.triangle_count(), t0 + kBatch);
    buf.assign(std::size_t(t1 - t0) * 50, 0);
    for (std::int64_t t = t0; t < t1; ++t) {
      char* p = buf.data() + std::size_t(t - t0) * 50;
      const float* v[3];
      for (int c = 0; c < 3; ++c) v[c] = &m.positions[3 * std::size_t(m.triangles[3 * t + c])];
      const float e1[3] = {v[1][0] - v[0][0], v[1][1] - v[0][1], v[1][2] - v[0][2]};
      const float e2[3] = {v[2][0] - v[0][0], v[2][1] - v[0][1], v[2][2] - v[0][2]};
      float nrm[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
      const float len = std::sqrt(nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2]);
      for (float& x : nrm) x = len > 0 ? x / len : 0.0f;
      std::memcpy(p, nrm, 12);
      for (int c = 0; c < 3; ++c) std::memcpy(p + 12 + 12 * c, v[c], 12);
    }
    f.write(buf.data(), buf.size());
  }
  f.commit();
}

}  // namespace

void check_finite(const TriangleMesh& mesh, const std::string& source) {
  std::int64_t bad = 0;
  const std::int64_t n = mesh.vertex_count();
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (std::int64_t v = 0; v < n; ++v)
    bad += !(std::isfinite(mesh.positions[3 * std::size_t(v)]) && std::isfinite(mesh.positions[3 * std::size_t(v) + 1]) &&
             std::isfinite(mesh.positions[3 * std::size_t(v) + 2]));
  if (bad > 0)
    throw Error(ErrorKind::InvalidArgument,
                source + ": " + std::to_string(bad) + " of the result's " + std::to_string(n) +
                    " vertices are not finite (coordinates beyond the float range, about 3.4e38, or not numbers)");
}

void write_mesh(const std::string& path, const TriangleMesh& mesh, MeshFormat format) {
  switch (format) {
    case MeshFormat::Ply: return write_ply(path, mesh);
    case MeshFormat::PlyAscii: return write_ply_ascii(path, mesh);
    case MeshFormat::Obj: return write_obj(path, mesh);
    case MeshFormat::Glb: return write_glb(path, mesh);
    case MeshFormat::Stl: return write_stl(path, mesh);
    case MeshFormat::Vtp: return io::write_vtk_xml(path, mesh, false);
    case MeshFormat::Vtu: return io::write_vtk_xml(path, mesh, true);
  }
  throw Error(ErrorKind::InvalidArgument, "unknown mesh format");
}

void write_mesh(const std::string& path, const TriangleMesh& mesh) {
  write_mesh(path, mesh, choose_mesh_format(path, ""));
}

namespace {

struct FormatName {
  MeshFormat format;
  const char* name;
  const char* extension;
};
constexpr FormatName kFormats[] = {{MeshFormat::Ply, "ply", ".ply"},      {MeshFormat::PlyAscii, "ply-ascii", ".ply"},
                                   {MeshFormat::Obj, "obj", ".obj"},      {MeshFormat::Glb, "glb", ".glb"},
                                   {MeshFormat::Stl, "stl", ".stl"},      {MeshFormat::Vtp, "vtp", ".vtp"},
                                   {MeshFormat::Vtu, "vtu", ".vtu"}};

const char* extension_of(MeshFormat format) {
  for (const auto& f : kFormats)
    if (f.format == format) return f.extension;
  return "";
}

// Standard output and open descriptors: streams whose names say nothing of a format.
bool is_descriptor(const std::string& path) {
  return path == "-" || path == "/dev/stdout" || path == "/dev/stderr" || path.starts_with("/dev/fd/") ||
         path.starts_with("/proc/self/fd/");
}

}  // namespace

bool mesh_format_of(const std::string& path, MeshFormat& format) {
  for (const auto& f : kFormats)
    if (path.size() > std::strlen(f.extension) && ends_with(path, f.extension)) {
      format = f.format;
      return true;
    }
  return false;
}

bool is_mesh_output(const std::string& path) {
  MeshFormat f;
  return mesh_format_of(path, f);
}

const char* mesh_format_name(MeshFormat format) {
  for (const auto& f : kFormats)
    if (f.format == format) return f.name;
  return "?";
}

std::string mesh_output_formats() {
  return "use .ply, .obj, .glb, .stl, .vtp or .vtu, or name the format: ply, ply-ascii, obj, glb, stl, vtp, vtu";
}

MeshFormat choose_mesh_format(const std::string& path, const std::string& requested) {
  MeshFormat by_path{};
  const bool known = mesh_format_of(path, by_path);
  if (requested.empty()) {
    if (known) return by_path;
    if (is_descriptor(path)) return MeshFormat::Ply;
    throw Error(ErrorKind::InvalidArgument, "cannot tell the mesh format of '" + path + "' (" + mesh_output_formats() + ")");
  }
  for (const auto& f : kFormats)
    if (requested == f.name) {
      if (known && std::strcmp(f.extension, extension_of(by_path)) != 0)
        throw Error(ErrorKind::InvalidArgument, "'" + path + "' names the " + mesh_format_name(by_path) +
                                                    " format, not " + requested + " (rename the file or leave the format out)");
      return f.format;
    }
  throw Error(ErrorKind::InvalidArgument, "unknown mesh format '" + requested + "' (" + mesh_output_formats() + ")");
}

namespace distributed {

PlyLayout PlyLayout::of(const TriangleMesh& m) {
  PlyLayout l;
  l.normals = !m.normals.empty();
  l.values = m.vertex_values.size() == std::size_t(m.vertex_count());
  l.groups = !m.face_groups.empty();
  l.colors = l.groups && !m.group_colors.empty();
  l.labels = m.face_labels.size() == std::size_t(m.triangle_count());
  l.outer_labels = m.face_outer_labels.size() == std::size_t(m.triangle_count());
  return l;
}

std::string PlyLayout::header(std::uint64_t vertices, std::uint64_t faces, const std::vector<std::string>& group_names) const {
  std::string h = ascii ? "ply\nformat ascii 1.0\ncomment written by parasurf\n"
                        : "ply\nformat binary_little_endian 1.0\ncomment written by parasurf\n";
  h += "element vertex " + std::to_string(vertices) + "\n";
  h += "property float x\nproperty float y\nproperty float z\n";
  if (normals) h += "property float nx\nproperty float ny\nproperty float nz\n";
  if (values) h += "property float value\n";
  h += "element face " + std::to_string(faces) + "\n";
  h += "property list uchar uint vertex_indices\n";
  if (groups) h += "property int group\n";
  if (labels) h += "property int label\n";
  if (outer_labels) h += "property int outer_label\n";
  if (colors) h += "property uchar red\nproperty uchar green\nproperty uchar blue\n";
  for (std::size_t g = 0; g < group_names.size(); ++g) h += "comment group " + std::to_string(g) + " " + group_names[g] + "\n";
  h += "end_header\n";
  return h;
}

void PlyLayout::pack_vertices(const TriangleMesh& m, std::int64_t v0, std::int64_t v1, char* out) const {
  const std::size_t stride = vertex_bytes();
  for (std::int64_t v = v0; v < v1; ++v) {
    char* p = out + std::size_t(v - v0) * stride;
    std::memcpy(p, &m.positions[3 * std::size_t(v)], 12);
    if (normals) std::memcpy(p + 12, &m.normals[3 * std::size_t(v)], 12);
    if (values) std::memcpy(p + (normals ? 24 : 12), &m.vertex_values[std::size_t(v)], 4);
  }
}

void PlyLayout::pack_faces(const TriangleMesh& m, std::int64_t t0, std::int64_t t1, std::uint32_t index_shift, char* out) const {
  const std::size_t stride = face_bytes();
  for (std::int64_t t = t0; t < t1; ++t) {
    char* p = out + std::size_t(t - t0) * stride;
    p[0] = 3;
    for (int k = 0; k < 3; ++k) {
      const std::uint32_t index = m.triangles[3 * std::size_t(t) + std::size_t(k)] + index_shift;
      std::memcpy(p + 1 + 4 * k, &index, 4);
    }
    p += 13;
    if (groups) std::memcpy(p, &m.face_groups[std::size_t(t)], 4), p += 4;
    if (labels) std::memcpy(p, &m.face_labels[std::size_t(t)], 4), p += 4;
    if (outer_labels) std::memcpy(p, &m.face_outer_labels[std::size_t(t)], 4), p += 4;
    if (colors) {
      const float* c = group_colour(m, m.face_groups[std::size_t(t)]);
      for (int q = 0; q < 3; ++q) p[q] = char(io::colour_byte(c[q]));
    }
  }
}

}  // namespace distributed

}  // namespace parasurf
