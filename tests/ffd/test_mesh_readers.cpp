// Polygon mesh readers: the same cube in every format gives the same closed mesh; bad files give messages.
#include <gtest/gtest.h>

#include <cstdio>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

const double kCube[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};
const int kQuads[6][4] = {{0, 3, 2, 1}, {4, 5, 6, 7}, {0, 1, 5, 4}, {1, 2, 6, 5}, {2, 3, 7, 6}, {3, 0, 4, 7}};

std::string cube_obj() {
  std::string s = "# cube\no cube\n";
  for (auto& v : kCube) s += "v " + std::to_string(v[0]) + " " + std::to_string(v[1]) + " " + std::to_string(v[2]) + "\n";
  s += "vn 0 0 1\n";
  for (auto& q : kQuads) {  // mixed corner syntaxes and a negative index
    s += "f " + std::to_string(q[0] + 1) + "//1 " + std::to_string(q[1] + 1) + "/1 " + std::to_string(q[2] + 1) + " " +
         std::to_string(q[3] - 8) + "\n";
  }
  return s;
}

std::string cube_off() {
  std::string s = "OFF\n# comment\n8 6 12\n";
  for (auto& v : kCube) s += std::to_string(v[0]) + " " + std::to_string(v[1]) + " " + std::to_string(v[2]) + "\n";
  for (auto& q : kQuads) s += "4 " + std::to_string(q[0]) + " " + std::to_string(q[1]) + " " + std::to_string(q[2]) + " " + std::to_string(q[3]) + "\n";
  return s;
}

template <class V>
void put(std::string& s, V v, bool big) {
  char b[sizeof(V)];
  std::memcpy(b, &v, sizeof(V));
  if (big) std::reverse(b, b + sizeof(V));
  s.append(b, sizeof(V));
}

// Face q's colour (red, green, blue) when the cube's faces carry one.
int face_colour(int q, int channel) { return channel == 0 ? 40 * q + 5 : channel == 1 ? 250 - q : 3 * q; }

std::string cube_ply(const std::string& format, bool colours = false) {
  std::string s = "ply\nformat " + format + " 1.0\ncomment test\nelement vertex 8\nproperty float y\nproperty double x\n"
                  "property uchar flag\nproperty float z\nelement face 6\nproperty list uchar int vertex_indices\n";
  // (blue first: the columns are found by name)
  s += colours ? "property uchar blue\nproperty uchar red\nproperty uchar green\nend_header\n" : "end_header\n";
  const bool big = format == "binary_big_endian";
  for (auto& v : kCube) {
    if (format == "ascii") s += std::to_string(v[1]) + " " + std::to_string(v[0]) + " 7 " + std::to_string(v[2]) + "\n";
    else put(s, float(v[1]), big), put(s, double(v[0]), big), put(s, std::uint8_t(7), big), put(s, float(v[2]), big);
  }
  for (int f = 0; f < 6; ++f) {
    const int* q = kQuads[f];
    const int rgb_order[3] = {2, 0, 1};
    if (format == "ascii") {
      s += "4 " + std::to_string(q[0]) + " " + std::to_string(q[1]) + " " + std::to_string(q[2]) + " " + std::to_string(q[3]);
      if (colours)
        for (int c : rgb_order) s += " " + std::to_string(face_colour(f, c));
      s += "\n";
    } else {
      put(s, std::uint8_t(4), big);
      for (int c = 0; c < 4; ++c) put(s, std::int32_t(q[c]), big);
      if (colours)
        for (int c : rgb_order) put(s, std::uint8_t(face_colour(f, c)), big);
    }
  }
  return s;
}

std::string cube_stl(bool binary) {
  std::string s;
  if (binary) {
    s.assign(80, ' ');
    put(s, std::uint32_t(12), false);
  } else {
    s = "solid cube\n";
  }
  for (auto& q : kQuads)
    for (int t = 0; t < 2; ++t) {
      const int c[3] = {q[0], q[1 + t], q[2 + t]};
      if (binary) {
        for (int k = 0; k < 3; ++k) put(s, 0.0f, false);
        for (int k = 0; k < 3; ++k)
          for (int d = 0; d < 3; ++d) put(s, float(kCube[c[k]][d]), false);
        put(s, std::uint16_t(0), false);
      } else {
        s += "facet normal 0 0 0\n outer loop\n";
        for (int k = 0; k < 3; ++k)
          s += "  vertex " + std::to_string(kCube[c[k]][0]) + " " + std::to_string(kCube[c[k]][1]) + " " + std::to_string(kCube[c[k]][2]) + "\n";
        s += " endloop\nendfacet\n";
      }
    }
  if (!binary) s += "endsolid cube\n";
  return s;
}

void expect_cube(const PolygonMesh& m, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(m.vertex_count(), 8);
  double lo = 1e9, hi = -1e9;
  for (double v : m.positions) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_EQ(lo, 0.0);
  EXPECT_EQ(hi, 1.0);
  const auto topo = mesh_topology(m);
  EXPECT_TRUE(topo.closed_manifold()) << topo.boundary_edges << " boundary, " << topo.non_manifold_edges << " non-manifold";
  EXPECT_EQ(topo.euler_characteristic, 2);
}

TEST(MeshReaders, TheSameCubeInEveryFormat) {
  MeshReadReport r;
  expect_cube(parse_polygon_mesh(cube_obj(), "cube.obj", &r), "obj");
  EXPECT_EQ(r.format, "obj");
  expect_cube(parse_polygon_mesh(cube_off(), "cube.off", &r), "off");
  for (const char* f : {"ascii", "binary_little_endian", "binary_big_endian"}) {
    const auto m = parse_polygon_mesh(cube_ply(f), "cube.ply", &r);
    expect_cube(m, f);
    EXPECT_EQ(m.positions[3 * 6 + 0], 1.0);  // x came second in the file, y first: reordered
    EXPECT_EQ(m.positions[3 * 6 + 1], 1.0);
    EXPECT_EQ(m.positions[3 * 3 + 1], 1.0);
    EXPECT_EQ(m.positions[3 * 3 + 0], 0.0);
  }
  for (bool binary : {false, true}) {
    const auto m = parse_polygon_mesh(cube_stl(binary), "cube.STL", &r);
    expect_cube(m, binary ? "stl binary" : "stl ascii");
    EXPECT_EQ(r.welded_vertices, 36 - 8);
    EXPECT_EQ(m.face_count(), 12);
  }
}

TEST(MeshReaders, PlyFaceColoursAreReadByName) {
  for (const char* f : {"ascii", "binary_little_endian", "binary_big_endian"}) {
    SCOPED_TRACE(f);
    const auto m = parse_polygon_mesh(cube_ply(f, true), "cube.ply");
    expect_cube(m, f);
    ASSERT_EQ(m.face_colors.size(), std::size_t(3 * m.face_count()));
    ASSERT_EQ(m.face_count(), 6);
    for (int q = 0; q < 6; ++q)
      for (int c = 0; c < 3; ++c) EXPECT_EQ(int(m.face_colors[std::size_t(3 * q + c)]), face_colour(q, c)) << q << " " << c;
    EXPECT_TRUE(parse_polygon_mesh(cube_ply(f), "cube.ply").face_colors.empty());  // no colour columns
  }
}

TEST(MeshReaders, DegenerateFacesAreSkippedAndCounted) {
  std::string s = cube_off();
  s.replace(s.find("8 6 12"), 6, "8 9 12");
  s += "3 0 0 1\n3 0 1 2\n";                                  // repeated corner; then a valid extra face
  s += "3 0 1 0\n";                                            // repeated corner
  MeshReadReport r;
  const auto m = parse_polygon_mesh(s, "d.off", &r);
  EXPECT_EQ(r.degenerate_skipped, 2);
  EXPECT_EQ(m.face_count(), 7);
  // Three collinear corners: no area.
  const std::string collinear = "v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 1 0\nf 1 2 3\nf 1 2 4\n";
  const auto c = parse_polygon_mesh(collinear, "c.obj", &r);
  EXPECT_EQ(r.degenerate_skipped, 1);
  EXPECT_EQ(c.face_count(), 1);
  // The same far from the origin and at other scales: collinear corners whose coordinates are not exact in binary
  // (0.1 steps) still have no area, while a thin but real triangle stays.
  for (const double offset : {0.0, 1e4, -3.7e6})
    for (const double scale : {1e-3, 1.0, 1e3}) {
      char text[512];
      std::snprintf(text, sizeof text, "v %.17g %.17g %.17g\nv %.17g %.17g %.17g\nv %.17g %.17g %.17g\nv %.17g %.17g %.17g\n"
                    "f 1 2 3\nf 1 2 4\n",
                    offset, offset, offset, offset + 0.1 * scale, offset + 0.2 * scale, offset + 0.3 * scale,
                    offset + 0.3 * scale, offset + 0.6 * scale, offset + 0.9 * scale, offset + 0.1 * scale,
                    offset + 0.2 * scale, offset + 0.3 * scale + 1e-3 * scale);
      const auto far = parse_polygon_mesh(text, "far.obj", &r);
      EXPECT_EQ(r.degenerate_skipped, 1) << "offset " << offset << " scale " << scale;
      EXPECT_EQ(far.face_count(), 1) << "offset " << offset << " scale " << scale;
    }
}

void expect_parse_error(const std::string& text, const std::string& name, const std::string& needle) {
  try {
    parse_polygon_mesh(text, name);
    ADD_FAILURE() << name << ": no error for input containing " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

TEST(MeshReaders, BadFilesNameTheProblem) {
  expect_parse_error("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", "a.obj", "outside");
  expect_parse_error("v 0 0 0\nv 1 0 x\n", "b.obj", "not a number");
  expect_parse_error("v 0 0 0\nv 1 0 0\nv nan 1 0\nf 1 2 3\n", "c.obj", "not finite");
  expect_parse_error("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", "d.obj", "index 0");
  expect_parse_error("OFF\n99999999999 1 0\n", "e.off", "impossible");
  expect_parse_error("OFF\n3 1 0\n0 0 0\n1 0 0\n", "f.off", "ends after");
  expect_parse_error("ply\nformat binary_little_endian 1.0\nelement vertex 1000000\nproperty float x\nproperty float y\n"
                     "property float z\nend_header\n",
                     "g.ply", "impossible");
  expect_parse_error("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n0\n", "h.ply", "lacks x, y or z");
  expect_parse_error("not stl at all, and not 84 + 50 n bytes long either................................................", "i.stl", "neither");
  expect_parse_error("", "j.obj", "no faces");
  EXPECT_THROW(parse_polygon_mesh("x", "k.xyz"), Error);
}

TEST(MeshReaders, SharedDataMeshes) {
  struct Case { const char* file; std::int64_t faces; };
  for (const Case c : {Case{"meshes/spot.obj", 5856}, Case{"meshes/stanford-bunny.obj", 69451}, Case{"meshes/fandisk.obj", 12946},
                       Case{"meshes/decimated-knight.off", 1000}}) {
    const std::string path = test::shared_data(c.file);
    if (path.empty()) {
      std::printf("[  SKIPPED ] %s not found (shared data absent)\n", c.file);
      continue;
    }
    MeshReadReport r;
    const auto m = read_polygon_mesh(path, &r);
    EXPECT_EQ(m.face_count() + r.degenerate_skipped, c.faces) << c.file;
  }
  const std::string spot = test::shared_data("meshes/spot.obj");
  if (!spot.empty()) {
    const auto topo = mesh_topology(read_polygon_mesh(spot));
    EXPECT_TRUE(topo.closed_manifold());
    EXPECT_EQ(topo.euler_characteristic, 2);
  }
}

}  // namespace
}  // namespace parasurf
