// Control-net parser: valid files, every malformed case with file:line, round trip, and a mutation fuzz.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "parasurf/error.hpp"
#include "parasurf/io.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

TEST(ControlNet, ParsesBezierAndRational) {
  const auto s = parse_control_net("# net\nbezier 1 2\n0 0 0\n0 1 0  # comment\n0 2 0\n1 0 1\n1 1 1\n1 2 1\n", "a.txt");
  EXPECT_EQ(s.degree_u, 1);
  EXPECT_EQ(s.degree_v, 2);
  EXPECT_FALSE(s.rational());
  EXPECT_DOUBLE_EQ(s.points[3 * 4 + 1], 1.0);
  const auto r = parse_control_net("rational 1 1\n0 0 0 1\n0 1 0 2\n1 0 0 0.5\n1 1 1 1\n");
  EXPECT_TRUE(r.rational());
  EXPECT_DOUBLE_EQ(r.weights[1], 2.0);
}

TEST(ControlNet, MalformedInputsNameFileLineAndProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "n.txt:1: empty file"},
      {"surface 1 1\n", "n.txt:1: expected 'bezier' or 'rational'"},
      {"bezier 1\n", "header needs two degrees"},
      {"bezier 0 1\n", "n.txt:1: degree 0 is outside 1..32"},
      {"bezier 33 1\n", "degree 33 is outside 1..32"},
      {"bezier 1.5 1\n", "degree '1.5' is not an integer"},
      {"bezier 1 1\n0 0 0\n0 1 0\n1 0 0\n", "n.txt:4: truncated"},
      {"bezier 1 1\n0 0 0\n0 1 0\n1 0 0\n1 1 1\n7\n", "n.txt:6: unexpected extra value '7'"},
      {"bezier 1 1\n0 0 0\n0 x 0\n1 0 0\n1 1 1\n", "n.txt:3: coordinate 'x' is not a number"},
      {"bezier 1 1\n0 0 0\n0 nan 0\n1 0 0\n1 1 1\n", "n.txt:3: coordinate 'nan' is not finite"},
      {"bezier 1 1\n0 0 0\n0 1 0\n1 0 inf\n1 1 1\n", "n.txt:4: coordinate 'inf' is not finite"},
      {"bezier 1 1\n0 0 0\n0 1 0\n1 0 1e999\n1 1 1\n", "is not finite"},
      {"rational 1 1\n0 0 0 1\n0 1 0 0\n1 0 0 1\n1 1 1 1\n", "n.txt:3: weight 0 must be > 0"},
  };
  for (const auto& [text, needle] : cases) {
    try {
      parse_control_net(text, "n.txt");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Parse);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "got: " << e.what();
    }
  }
}

TEST(ControlNet, RoundTripAndMissingFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("parasurf_io_" + std::to_string(test::run_seed()));
  std::filesystem::create_directories(dir);
  const BezierSurface s = make_random_surface(4, 6, test::run_seed(), true);
  write_control_net((dir / "net.txt").string(), s);
  const BezierSurface r = read_control_net((dir / "net.txt").string());
  EXPECT_EQ(r.points, s.points);
  EXPECT_EQ(r.weights, s.weights);
  EXPECT_THROW(read_control_net((dir / "absent.txt").string()), Error);
  std::filesystem::remove_all(dir);
}

TEST(MeshWriter, FailureLeavesNoPartialFile) {
  TriangleMesh mesh;
  mesh.positions = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  mesh.triangles = {0, 1, 2};
  const auto dir = std::filesystem::temp_directory_path() / ("parasurf_mesh_" + std::to_string(test::run_seed()));
  std::filesystem::create_directories(dir);
  write_mesh((dir / "a.ply").string(), mesh);
  write_mesh((dir / "a.obj").string(), mesh);
  EXPECT_GT(std::filesystem::file_size(dir / "a.ply"), 100u);
  EXPECT_THROW(write_mesh((dir / "missing" / "b.ply").string(), mesh), Error);
  EXPECT_THROW(write_mesh((dir / "c.stl3").string(), mesh), Error);
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().string().find(".partial"), std::string::npos);
  }
  EXPECT_EQ(files, 2u);
  std::filesystem::remove_all(dir);
}

TEST(ControlNet, MutatedInputsNeverCrash) {
  // A deterministic in-suite fuzz (the libFuzzer target tests/fuzz/fuzz_control_net.cpp goes further).
  std::mt19937_64 rng(test::run_seed());
  const std::string seed_text = "rational 2 1\n0 0 0 1\n0 1 0 2\n1 0 0 0.5\n1 1 1 1\n2 0 0 1\n2 1 1 3\n";
  const std::string alphabet = "0123456789.-+eEnaif x\n#bezrtol";
  int accepted = 0;
  for (int it = 0; it < 20000; ++it) {
    std::string t = seed_text;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t pos = rng() % (t.size() + 1);
      switch (rng() % 3) {
        case 0: t.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
        case 1: if (pos < t.size()) t.erase(pos, 1); break;
        default: if (pos < t.size()) t[pos] = alphabet[rng() % alphabet.size()];
      }
    }
    try {
      const auto s = parse_control_net(t, "fuzz");
      validate(s);  // anything accepted must be a valid surface
      ++accepted;
    } catch (const Error&) {
    }
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace parasurf
