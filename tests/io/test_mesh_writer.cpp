// Mesh files as other tools read them: the glTF JSON parses and its views and accessors fit the buffer; the PLY
// header declares exactly the bytes that follow.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "parasurf/io.hpp"

namespace parasurf {
namespace {

TriangleMesh two_group_mesh(bool normals, bool values, bool labels) {
  TriangleMesh m;
  m.positions = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
  if (normals) m.normals = {0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0};
  m.triangles = {0, 1, 2, 0, 2, 3, 1, 4, 2};
  m.face_groups = {1, 0, 1};
  m.group_names = {"label 4", "label \"9\""};
  if (values) m.vertex_values = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f};
  if (labels) {
    m.face_labels = {9, 4, 9};
    m.face_outer_labels = {0, 0, 4};
    m.group_colors = {1, 0, 0, 0, 0.5f, 1};
  }
  return m;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(MeshWriter, GlbJsonParsesAndEveryAccessorFits) {
  const auto dir = std::filesystem::temp_directory_path();
  for (int variant = 0; variant < 8; ++variant) {
    const bool normals = variant & 1, values = variant & 2, labels = variant & 4;
    const TriangleMesh m = two_group_mesh(normals, values, labels);
    const std::string path = (dir / ("parasurf_writer_" + std::to_string(variant) + ".glb")).string();
    write_mesh(path, m);
    const std::string bytes = slurp(path);
    std::filesystem::remove(path);
    ASSERT_GE(bytes.size(), 28u);
    std::uint32_t head[5];
    std::memcpy(head, bytes.data(), 20);
    EXPECT_EQ(head[0], 0x46546C67u);
    EXPECT_EQ(head[2], bytes.size());
    const nlohmann::json j = nlohmann::json::parse(bytes.substr(20, head[3]));  // throws on malformed JSON
    std::uint32_t bin_len = 0;
    std::memcpy(&bin_len, bytes.data() + 20 + head[3], 4);
    ASSERT_EQ(j["buffers"][0]["byteLength"].get<std::uint32_t>(), bin_len);
    for (const auto& v : j["bufferViews"])
      EXPECT_LE(v["byteOffset"].get<std::uint64_t>() + v["byteLength"].get<std::uint64_t>(), bin_len);
    for (const auto& a : j["accessors"]) {
      const auto view = a["bufferView"].get<std::size_t>();
      ASSERT_LT(view, j["bufferViews"].size());
      const std::uint64_t width = a["type"] == "VEC3" ? 12 : 4;
      EXPECT_LE(a["count"].get<std::uint64_t>() * width, j["bufferViews"][view]["byteLength"].get<std::uint64_t>());
    }
    const auto& prims = j["meshes"][0]["primitives"];
    ASSERT_EQ(prims.size(), 2u) << "one primitive per group";
    std::uint64_t indices = 0;
    const char* bin = bytes.data() + 20 + head[3] + 8;
    auto data_of = [&](const nlohmann::json& accessor) {
      return bin + j["bufferViews"][accessor["bufferView"].get<std::size_t>()]["byteOffset"].get<std::size_t>();
    };
    int group = 0;
    for (const auto& p : prims) {
      const auto& acc = j["accessors"][p["indices"].get<std::size_t>()];
      EXPECT_EQ(acc["componentType"], 5125);
      EXPECT_EQ(acc["type"], "SCALAR");
      indices += acc["count"].get<std::uint64_t>();
      EXPECT_EQ(p["attributes"].contains("NORMAL"), normals);
      EXPECT_EQ(p["attributes"].contains("_VALUE"), values);
      // The primitive holds the vertices its triangles use, no others (group 0: one triangle; group 1: two
      // sharing an edge), and its triangles are the group's, corner for corner.
      const auto& position = j["accessors"][p["attributes"]["POSITION"].get<std::size_t>()];
      const std::uint64_t count = position["count"].get<std::uint64_t>();
      EXPECT_EQ(count, group == 0 ? 3u : 4u);
      if (values) EXPECT_EQ(j["accessors"][p["attributes"]["_VALUE"].get<std::size_t>()]["count"], count);
      std::vector<std::uint32_t> idx(acc["count"].get<std::size_t>());
      std::memcpy(idx.data(), data_of(acc), idx.size() * 4);
      std::vector<float> pos(count * 3);
      std::memcpy(pos.data(), data_of(position), pos.size() * 4);
      std::size_t corner = 0;
      for (std::int64_t t = 0; t < m.triangle_count(); ++t) {
        if (m.face_groups[std::size_t(t)] != group) continue;
        for (int c = 0; c < 3; ++c, ++corner) {
          ASSERT_LT(idx[corner], count);
          for (int d = 0; d < 3; ++d)
            EXPECT_EQ(pos[3 * idx[corner] + std::size_t(d)], m.positions[3 * m.triangles[3 * std::size_t(t) + std::size_t(c)] + std::size_t(d)]);
        }
      }
      EXPECT_EQ(corner, idx.size());
      ++group;
    }
    EXPECT_EQ(indices, 9u);
    if (labels) {
      const auto& c = j["materials"][0]["pbrMetallicRoughness"]["baseColorFactor"];
      EXPECT_EQ(c[0].get<double>(), 1.0) << "group 0 carries its own colour";
    }
  }
}

TEST(MeshWriter, PlyHeaderDeclaresTheBytesThatFollow) {
  const auto dir = std::filesystem::temp_directory_path();
  const TriangleMesh m = two_group_mesh(true, true, true);
  const std::string path = (dir / "parasurf_writer.ply").string();
  write_mesh(path, m);
  const std::string bytes = slurp(path);
  std::filesystem::remove(path);
  const auto end = bytes.find("end_header\n");
  ASSERT_NE(end, std::string::npos);
  const std::string header = bytes.substr(0, end);
  for (const char* p : {"property float value", "property int group", "property int label", "property int outer_label",
                        "property uchar red"})
    EXPECT_NE(header.find(p), std::string::npos) << p;
  const std::size_t vertex = 6 * 4 + 4, face = 1 + 12 + 3 * 4 + 3;
  EXPECT_EQ(bytes.size() - (end + 11), 5 * vertex + 3 * face);
  // The second face: group 0, label 4, outer 0, colour (1, 0, 0).
  const char* f1 = bytes.data() + end + 11 + 5 * vertex + face;
  std::int32_t ints[3];
  std::memcpy(ints, f1 + 13, 12);
  EXPECT_EQ(ints[0], 0);
  EXPECT_EQ(ints[1], 4);
  EXPECT_EQ(ints[2], 0);
  EXPECT_EQ(std::uint8_t(f1[25]), 255);
  EXPECT_EQ(std::uint8_t(f1[26]), 0);
}

}  // namespace
}  // namespace parasurf
