// Triangle mesh writers (binary PLY, OBJ), always through a temporary file.
#include <cstring>
#include <string>

#include "core/memory.hpp"
#include "io/atomic_file.hpp"
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

void write_ply(const std::string& path, const TriangleMesh& m) {
  const bool has_n = !m.normals.empty();
  std::string header = "ply\nformat binary_little_endian 1.0\ncomment written by parasurf\n";
  header += "element vertex " + std::to_string(m.vertex_count()) + "\n";
  header += "property float x\nproperty float y\nproperty float z\n";
  if (has_n) header += "property float nx\nproperty float ny\nproperty float nz\n";
  header += "element face " + std::to_string(m.triangle_count()) + "\n";
  header += "property list uchar uint vertex_indices\nend_header\n";
  io::AtomicFile f(path);
  f.write(header);
  std::vector<char> buf;
  const std::size_t vstride = has_n ? 24 : 12;
  constexpr std::size_t kBatch = 1 << 16;
  for (std::int64_t v0 = 0; v0 < m.vertex_count(); v0 += kBatch) {
    const std::int64_t v1 = std::min<std::int64_t>(m.vertex_count(), v0 + kBatch);
    buf.resize(std::size_t(v1 - v0) * vstride);
    for (std::int64_t v = v0; v < v1; ++v) {
      char* p = buf.data() + std::size_t(v - v0) * vstride;
      std::memcpy(p, &m.positions[3 * v], 12);
      if (has_n) std::memcpy(p + 12, &m.normals[3 * v], 12);
    }
    f.write(buf.data(), buf.size());
  }
  for (std::int64_t t0 = 0; t0 < m.triangle_count(); t0 += kBatch) {
    const std::int64_t t1 = std::min<std::int64_t>(m.triangle_count(), t0 + kBatch);
    buf.resize(std::size_t(t1 - t0) * 13);
    for (std::int64_t t = t0; t < t1; ++t) {
      char* p = buf.data() + std::size_t(t - t0) * 13;
      p[0] = 3;
      std::memcpy(p + 1, &m.triangles[3 * t], 12);
    }
    f.write(buf.data(), buf.size());
  }
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
  for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
    const auto a = m.triangles[3 * t] + 1ull, b = m.triangles[3 * t + 1] + 1ull, c = m.triangles[3 * t + 2] + 1ull;
    if (has_n) std::snprintf(line, sizeof line, "f %llu//%llu %llu//%llu %llu//%llu\n", a, a, b, b, c, c);
    else std::snprintf(line, sizeof line, "f %llu %llu %llu\n", a, b, c);
    out += line;
    if (out.size() > (1 << 20)) flush();
  }
  flush();
  f.commit();
}

}  // namespace

void write_mesh(const std::string& path, const TriangleMesh& mesh) {
  if (ends_with(path, ".ply")) write_ply(path, mesh);
  else if (ends_with(path, ".obj")) write_obj(path, mesh);
  else throw Error(ErrorKind::InvalidArgument, "cannot tell the mesh format of '" + path + "' (use .ply or .obj)");
}

}  // namespace parasurf
