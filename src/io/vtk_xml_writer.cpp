// VTK XML meshes: PolyData (.vtp) and UnstructuredGrid (.vtu) of triangles, binary arrays appended raw after the
// XML (header_type UInt64), as ParaView, PyVista, VTK and meshio read them. Point data: Normals, value; cell data:
// group, label, outer_label, colour (RGB bytes).
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/mesh_formats.hpp"
#include "parasurf/error.hpp"

namespace parasurf::io {
namespace {

struct Array {
  std::string xml_head;  // the DataArray element up to its offset attribute
  std::uint64_t bytes = 0;
  std::size_t element_bytes = 0;
  std::int64_t elements = 0;
  // Writes elements [a, b) into out; the flag asks for 64-bit indices.
  void (*pack)(const TriangleMesh&, std::int64_t, std::int64_t, bool, char*) = nullptr;
};

// Elements [a, b) of a mesh array stored as `Width` values per element, copied as they are.
template <auto Member, std::size_t Width>
void copy_elements(const TriangleMesh& mesh, std::int64_t a, std::int64_t b, bool, char* out) {
  const auto& values = mesh.*Member;
  constexpr std::size_t bytes = Width * sizeof(values[0]);
  std::memcpy(out, &values[Width * std::size_t(a)], std::size_t(b - a) * bytes);
}

template <class T>
void put(char*& p, T v) {
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}

}  // namespace

void write_vtk_xml(const std::string& path, const TriangleMesh& m, bool unstructured) {
  const std::int64_t nv = m.vertex_count(), nf = m.triangle_count();
  const bool wide = nv > std::numeric_limits<std::int32_t>::max();  // connectivity as Int64 beyond Int32
  const char* index_type = wide ? "Int64" : "Int32";
  const std::size_t index_bytes = wide ? 8 : 4;
  const bool normals = !m.normals.empty(), values = m.vertex_values.size() == std::size_t(nv);
  const bool groups = !m.face_groups.empty(), colors = groups && !m.group_colors.empty();
  const bool labels = m.face_labels.size() == std::size_t(nf), outer = m.face_outer_labels.size() == std::size_t(nf);

  auto array = [](std::string head, std::int64_t n, std::size_t eb, auto pack) {
    Array a;
    a.xml_head = std::move(head);
    a.elements = n;
    a.element_bytes = eb;
    a.bytes = std::uint64_t(n) * eb;
    a.pack = pack;
    return a;
  };
  std::vector<Array> point_data, cell_data, points, cells;
  if (normals)
    point_data.push_back(array(R"(<DataArray type="Float32" Name="Normals" NumberOfComponents="3")", nv, 12,
                               copy_elements<&TriangleMesh::normals, 3>));
  if (values)
    point_data.push_back(array(R"(<DataArray type="Float32" Name="value")", nv, 4,
                               copy_elements<&TriangleMesh::vertex_values, 1>));
  if (groups)
    cell_data.push_back(array(R"(<DataArray type="Int32" Name="group")", nf, 4,
                              copy_elements<&TriangleMesh::face_groups, 1>));
  if (labels)
    cell_data.push_back(array(R"(<DataArray type="Int32" Name="label")", nf, 4,
                              copy_elements<&TriangleMesh::face_labels, 1>));
  if (outer)
    cell_data.push_back(array(R"(<DataArray type="Int32" Name="outer_label")", nf, 4,
                              copy_elements<&TriangleMesh::face_outer_labels, 1>));
  if (colors)
    cell_data.push_back(array(R"(<DataArray type="UInt8" Name="colour" NumberOfComponents="3")", nf, 3,
                              [](const TriangleMesh& mesh, std::int64_t a, std::int64_t b, bool, char* out) {
                                for (std::int64_t t = a; t < b; ++t) {
                                  const int g = mesh.face_groups[std::size_t(t)];
                                  const float* c = group_colour(mesh, g);
                                  for (int k = 0; k < 3; ++k) *out++ = char(colour_byte(c[k]));
                                }
                              }));
  points.push_back(array(R"(<DataArray type="Float32" Name="Points" NumberOfComponents="3")", nv, 12,
                         copy_elements<&TriangleMesh::positions, 3>));
  cells.push_back(array(std::string(R"(<DataArray type=")") + index_type + R"(" Name="connectivity")", nf,
                        3 * index_bytes, [](const TriangleMesh& mesh, std::int64_t a, std::int64_t b, bool w, char* out) {
                          for (std::int64_t k = 3 * a; k < 3 * b; ++k) {
                            if (w) put(out, std::int64_t(mesh.triangles[std::size_t(k)]));
                            else put(out, std::int32_t(mesh.triangles[std::size_t(k)]));
                          }
                        }));
  // Offsets count indices, so they outgrow Int32 at a third of the triangles that connectivity does: always Int64.
  cells.push_back(array(R"(<DataArray type="Int64" Name="offsets")", nf, 8,
                        [](const TriangleMesh&, std::int64_t a, std::int64_t b, bool, char* out) {
                          for (std::int64_t t = a; t < b; ++t) put(out, std::int64_t(3 * (t + 1)));
                        }));
  if (unstructured)
    cells.push_back(array(R"(<DataArray type="UInt8" Name="types")", nf, 1,
                          [](const TriangleMesh&, std::int64_t a, std::int64_t b, bool, char* out) {
                            std::memset(out, 5, std::size_t(b - a));  // VTK_TRIANGLE
                          }));

  // The XML, with each array's offset into the appended block (each array: a UInt64 byte count, then its bytes).
  std::uint64_t offset = 0;
  std::string xml = "<?xml version=\"1.0\"?>\n<!-- written by parasurf";
  for (std::size_t g = 0; g < m.group_names.size(); ++g) xml += "; group " + std::to_string(g) + " " + m.group_names[g];
  xml += " -->\n";
  const char* kind = unstructured ? "UnstructuredGrid" : "PolyData";
  xml += std::string("<VTKFile type=\"") + kind +
         "\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n  <" + kind + ">\n";
  xml += "    <Piece NumberOfPoints=\"" + std::to_string(nv) + "\" ";
  xml += unstructured ? "NumberOfCells=\"" + std::to_string(nf) + "\">\n"
                      : "NumberOfVerts=\"0\" NumberOfLines=\"0\" NumberOfStrips=\"0\" NumberOfPolys=\"" +
                            std::to_string(nf) + "\">\n";
  auto section = [&](const char* name, const std::vector<Array>& arrays, const std::string& attributes = "") {
    xml += std::string("      <") + name + attributes + ">\n";
    for (const Array& a : arrays) {
      xml += "        " + a.xml_head + " format=\"appended\" offset=\"" + std::to_string(offset) + "\"/>\n";
      offset += 8 + a.bytes;
    }
    xml += std::string("      </") + name + ">\n";
  };
  section("PointData", point_data, normals ? " Normals=\"Normals\"" : "");
  section("CellData", cell_data);
  section("Points", points);
  section(unstructured ? "Cells" : "Polys", cells);
  xml += "    </Piece>\n  </" + std::string(kind) + ">\n  <AppendedData encoding=\"raw\">\n   _";

  AtomicFile f(path);
  f.write(xml);
  std::vector<char> buf;
  constexpr std::int64_t kBatch = 1 << 16;
  for (const auto* group : {&point_data, &cell_data, &points, &cells})
    for (const Array& a : *group) {
      f.write(&a.bytes, 8);
      for (std::int64_t e0 = 0; e0 < a.elements; e0 += kBatch) {
        const std::int64_t e1 = std::min(a.elements, e0 + kBatch);
        buf.resize(std::size_t(e1 - e0) * a.element_bytes);
        a.pack(m, e0, e1, wide, buf.data());
        f.write(buf.data(), buf.size());
      }
    }
  f.write("\n  </AppendedData>\n</VTKFile>\n");
  f.commit();
}

}  // namespace parasurf::io
