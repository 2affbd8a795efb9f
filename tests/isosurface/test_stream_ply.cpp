// Meshes written part by part (write_isosurface_ply) against the in-memory run written by write_mesh: the same file,
// byte for byte, on random fields cut into many parts, with several levels, scalars and labels, and on integer
// volumes at integer levels (samples on the level).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "parasurf/error.hpp"
#include "parasurf/io.hpp"
#include "parasurf/isosurface.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A random sum of blobs on a grid of random spacing far from the origin, its samples in [0, 1] about.
struct Blobs {
  VolumeGeometry g;
  std::vector<float> field, scalars;
  std::vector<std::uint16_t> labels;
  explicit Blobs(std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(0, 1);
    g.dims = {31 + std::int64_t(rng() % 10), 27 + std::int64_t(rng() % 10), 40 + std::int64_t(rng() % 20)};
    g.spacing = {0.5 + u(rng), 0.5 + u(rng), 0.5 + u(rng)};
    g.origin = {1e4 * u(rng), -1e4 * u(rng), 5e3};
    double c[6][4];
    for (auto& b : c) b[0] = u(rng), b[1] = u(rng), b[2] = u(rng), b[3] = 0.1 + 0.15 * u(rng);
    const std::size_t n = std::size_t(g.voxel_count());
    field.resize(n), scalars.resize(n), labels.resize(n);
    for (std::int64_t k = 0; k < g.dims[2]; ++k)
      for (std::int64_t j = 0; j < g.dims[1]; ++j)
        for (std::int64_t i = 0; i < g.dims[0]; ++i) {
          const double x = double(i) / double(g.dims[0]), y = double(j) / double(g.dims[1]), z = double(k) / double(g.dims[2]);
          double f = 0;
          for (const auto& b : c)
            f += std::exp(-((x - b[0]) * (x - b[0]) + (y - b[1]) * (y - b[1]) + (z - b[2]) * (z - b[2])) / (b[3] * b[3]));
          const std::size_t at = std::size_t((k * g.dims[1] + j) * g.dims[0] + i);
          field[at] = float(f);
          scalars[at] = float(3 * x - y + 0.5 * z);
          labels[at] = std::uint16_t(1 + (i / 5 + k / 7) % 3);
        }
  }
};

struct Files {
  std::string memory = test::temp_path("memory.ply"), streamed = test::temp_path("parts.ply");
  ~Files() {
    std::remove(memory.c_str());
    std::remove(streamed.c_str());
  }
};

TEST(StreamedMesh, PartByPartEqualsTheInMemoryFile) {
  const std::uint64_t seed = test::run_seed() + 61;
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  Files f;
  for (int round = 0; round < 4; ++round) {
    const Blobs b(rng);
    MemoryVolume volume(b.g, b.field, "blobs");
    MemoryVolume scalars(b.g, b.scalars, "scalars");
    MemoryVolume labels(b.g, VoxelType::UInt16, b.labels.data(), "labels");
    IsosurfaceOptions o;
    o.device = Device::Cpu;
    // The levels fall between the samples' float values (a sample equal to a level takes the in-memory path).
    if (round == 0) o.levels = {0.55};
    if (round == 1) o.levels = {0.3, 0.61, 0.9};
    if (round == 2) o.scalars = &scalars, o.labels = &labels, o.levels = {0.45, 0.7};
    if (round == 3) o.labels = &labels, o.normals = false, o.levels = {0.5};  // (one level, labels: groups per label)
    SCOPED_TRACE("round " + std::to_string(round));
    IsosurfaceReport rep;
    const TriangleMesh m = extract_isosurface(volume, o, &rep);
    ASSERT_GT(m.triangle_count(), 100);
    write_mesh(f.memory, m, MeshFormat::Ply);
    // Parts of a few KiB of mesh: many seams.
    const StreamedIsosurfaceReport s = write_isosurface_ply(volume, o, f.streamed, 4096);
    if (!s.streamed) {  // a crossing that rounding put on a sample, twice: the whole-mesh weld, in memory
      EXPECT_FALSE(s.why.empty());
    } else {
      EXPECT_GE(s.parts, 4);
      EXPECT_GT(s.spilled_bytes, 0u);
    }
    std::printf("  round %d: %lld triangles, %s\n", round, (long long)m.triangle_count(),
                s.streamed ? ("streamed in " + std::to_string(s.parts) + " parts").c_str() : s.why.c_str());
    EXPECT_EQ(s.run.triangles, m.triangle_count());
    const std::string a = read_file(f.memory), c = read_file(f.streamed);
    ASSERT_EQ(a.size(), c.size());
    EXPECT_TRUE(a == c) << "the streamed file differs from the in-memory one";
  }
}

// Samples equal to the level (an integer volume at an integer level, as CT thresholds meet them): with the classic
// table the CPU settles their ties cell by cell, so the parts are written as they come while every vertex on a sample
// is one plain fan; where the level set pinches there, the split takes the whole mesh and the run is made in memory.
// The file is the same either way.
TEST(StreamedMesh, TiesArePartByPartUnlessTheLevelSetPinches) {
  const std::uint64_t seed = test::run_seed() + 62;
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  Files f;
  int streamed = 0;
  for (int round = 0; round < 6; ++round) {
    const Blobs b(rng);
    std::vector<std::uint8_t> bytes(b.field.size());
    for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = std::uint8_t(std::min(255.0f, 100 * b.field[k]));
    MemoryVolume volume(b.g, VoxelType::UInt8, bytes.data(), "quantised");
    IsosurfaceOptions o;
    o.device = Device::Cpu;
    o.levels = {double(30 + 10 * round)};
    IsosurfaceReport rep;
    const TriangleMesh m = extract_isosurface(volume, o, &rep);
    write_mesh(f.memory, m, MeshFormat::Ply);
    const StreamedIsosurfaceReport s = write_isosurface_ply(volume, o, f.streamed, 4096);
    std::printf("  level %g: %lld triangles, %lld vertices split at pinches, %s\n", o.levels[0],
                (long long)m.triangle_count(), (long long)rep.pinched_vertices_split,
                s.streamed ? ("streamed in " + std::to_string(s.parts) + " parts").c_str() : s.why.c_str());
    if (rep.pinched_vertices_split > 0) EXPECT_FALSE(s.streamed);  // (a pinch at the border may also take memory)
    if (s.streamed) {
      ++streamed;
      EXPECT_GE(s.parts, 4);
    } else {
      EXPECT_TRUE(s.why.find("pinch") != std::string::npos || s.why.find("rounding") != std::string::npos) << s.why;
    }
    EXPECT_TRUE(read_file(f.memory) == read_file(f.streamed)) << "level " << o.levels[0];
  }
  EXPECT_GE(streamed, 2);
  // A double cone whose apex is a sample on the level: two sheets meet there, the split takes the whole mesh.
  VolumeGeometry g;
  g.dims = {21, 21, 21};
  std::vector<std::int16_t> cone(std::size_t(g.voxel_count()));
  for (std::int64_t k = 0; k < 21; ++k)
    for (std::int64_t j = 0; j < 21; ++j)
      for (std::int64_t i = 0; i < 21; ++i)
        cone[std::size_t((k * 21 + j) * 21 + i)] = std::int16_t((i - 10) * (i - 10) + (j - 10) * (j - 10) - (k - 10) * (k - 10));
  MemoryVolume apex(g, VoxelType::Int16, cone.data(), "cone");
  IsosurfaceOptions o;
  o.device = Device::Cpu;
  o.levels = {0};
  IsosurfaceReport rep;
  write_mesh(f.memory, extract_isosurface(apex, o, &rep), MeshFormat::Ply);
  EXPECT_GT(rep.pinched_vertices_split, 0);
  const StreamedIsosurfaceReport s = write_isosurface_ply(apex, o, f.streamed, 4096);
  EXPECT_FALSE(s.streamed);
  EXPECT_NE(s.why.find("pinch"), std::string::npos) << s.why;
  EXPECT_TRUE(read_file(f.memory) == read_file(f.streamed));
  // Other tables leave the ties to the whole-mesh pass: in memory.
  o.topology = CaseTopology::Mc33;
  write_mesh(f.memory, extract_isosurface(apex, o), MeshFormat::Ply);
  const StreamedIsosurfaceReport t = write_isosurface_ply(apex, o, f.streamed, 4096);
  EXPECT_FALSE(t.streamed);
  EXPECT_TRUE(read_file(f.memory) == read_file(f.streamed));
  // Between the integers: no ties, streamed.
  o.topology = CaseTopology::Classic;
  o.levels = {0.5};
  write_mesh(f.memory, extract_isosurface(apex, o), MeshFormat::Ply);
  const StreamedIsosurfaceReport u = write_isosurface_ply(apex, o, f.streamed, 4096);
  EXPECT_TRUE(u.streamed) << u.why;
  EXPECT_TRUE(read_file(f.memory) == read_file(f.streamed));
}

// A 256^3 integer volume at one of its values with the default device: where auto takes the GPU (whose engine
// leaves ties to a pass over the whole mesh), the streamed run starts again on the CPU instead of holding the mesh;
// either way the file is the CPU's in-memory one.
TEST(StreamedMesh, TiesStreamWhateverDeviceAutoTakes) {
  VolumeGeometry g;
  g.dims = {256, 256, 256};
  std::vector<std::uint8_t> v(std::size_t(g.voxel_count()));
  for (std::int64_t k = 0; k < 256; ++k)
    for (std::int64_t j = 0; j < 256; ++j)
      for (std::int64_t i = 0; i < 256; ++i) {
        const double r = std::sqrt(double((i - 127) * (i - 127) + (j - 120) * (j - 120) + (k - 131) * (k - 131)));
        v[std::size_t((k * 256 + j) * 256 + i)] = std::uint8_t(std::max(0.0, 200 - r));
      }
  MemoryVolume volume(g, VoxelType::UInt8, v.data(), "ball");
  IsosurfaceOptions o;
  o.levels = {120};
  o.device = Device::Cpu;
  Files f;
  write_mesh(f.memory, extract_isosurface(volume, o), MeshFormat::Ply);
  o.device = Device::Auto;
  const StreamedIsosurfaceReport s = write_isosurface_ply(volume, o, f.streamed, 1 << 20);
  std::printf("  %s; %s\n", s.run.device.c_str(), s.run.device_choice.c_str());
  EXPECT_TRUE(s.streamed) << s.why;
  EXPECT_GE(s.parts, 2);
  EXPECT_TRUE(read_file(f.memory) == read_file(f.streamed));
}

// An analytic field sampled on a grid is zero up to its rounding at many samples: crossings next to such a sample
// land on it, and the whole mesh welds those that coincide. Part by part, each part waits for the next one and the
// two are welded together, so that groups on a seam between parts are welded too (fails with seams sent to memory:
// gyroid 64). The file is the in-memory run's.
TEST(StreamedMesh, CrossingsRoundedOntoASampleAreWeldedPartByPart) {
  Files f;
  std::int64_t streamed_with_welds = 0;
  for (const std::int64_t n : {64, 96, 150, 200}) {
    SCOPED_TRACE("gyroid " + std::to_string(n));
    const auto volume = synthetic_field("gyroid", {n, n, n});
    IsosurfaceOptions o;
    o.device = Device::Cpu;
    IsosurfaceReport rep;
    write_mesh(f.memory, extract_isosurface(*volume, o, &rep), MeshFormat::Ply);
    const StreamedIsosurfaceReport s = write_isosurface_ply(*volume, o, f.streamed, std::uint64_t(2) << 20);
    std::printf("  gyroid %lld: %lld welded in memory; %s\n", (long long)n, (long long)rep.rounded_ties_welded,
                s.streamed ? ("streamed in " + std::to_string(s.parts) + " parts, " +
                              std::to_string(s.run.rounded_ties_welded) + " welded").c_str()
                           : s.why.c_str());
    EXPECT_TRUE(s.streamed) << s.why;
    EXPECT_GE(s.parts, 3);
    EXPECT_EQ(s.run.rounded_ties_welded, rep.rounded_ties_welded);
    EXPECT_EQ(s.run.degenerate_removed, rep.degenerate_removed);
    EXPECT_EQ(s.run.duplicates_removed, rep.duplicates_removed);
    if (rep.rounded_ties_welded > 0) ++streamed_with_welds;
    EXPECT_EQ(s.run.triangles, rep.triangles);
    EXPECT_TRUE(read_file(f.memory) == read_file(f.streamed)) << "the streamed file differs from the in-memory one";
  }
  EXPECT_EQ(streamed_with_welds, 4) << "every size welds crossings";
}

TEST(StreamedMesh, ExcludedLabelsAreRefusedAndNothingIsWritten) {
  std::mt19937_64 rng(test::run_seed() + 63);
  const Blobs b(rng);
  MemoryVolume volume(b.g, b.field, "blobs");
  MemoryVolume labels(b.g, VoxelType::UInt16, b.labels.data(), "labels");
  IsosurfaceOptions o;
  o.labels = &labels;
  o.exclude_labels = {2};
  Files f;
  EXPECT_THROW(write_isosurface_ply(volume, o, f.streamed, 4096), Error);
  EXPECT_FALSE(std::filesystem::exists(f.streamed));
}

}  // namespace
}  // namespace parasurf
