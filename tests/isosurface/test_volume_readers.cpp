// Volume readers: every format written here byte by byte (from the format documents) and read back; orientation;
// bad headers and data; the shared real volumes.
#include <gtest/gtest.h>
#include <zlib.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("parasurf_vol_" + std::to_string(test::run_seed() % 1000000) + "_" +
                                        std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string gzip(const std::string& raw) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, uLong(raw.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = uInt(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string zlib_compress(const std::string& raw) {
  uLongf n = compressBound(uLong(raw.size()));
  std::string out(n, '\0');
  compress(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(raw.data()), uLong(raw.size()));
  out.resize(n);
  return out;
}

template <class T>
std::string bytes_of(const std::vector<T>& v, bool big = false) {
  std::string s(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  if (big != (std::endian::native == std::endian::big))
    for (std::size_t i = 0; i < v.size(); ++i) std::reverse(s.begin() + long(i * sizeof(T)), s.begin() + long((i + 1) * sizeof(T)));
  return s;
}

template <class T>
void put(std::string& h, std::size_t at, T v) {
  std::memcpy(h.data() + at, &v, sizeof(T));
}

// A 5x4x3 int16 ramp with a random offset.
struct Sample {
  std::array<std::int64_t, 3> dims{5, 4, 3};
  std::vector<std::int16_t> values;
  explicit Sample(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const int shift = int(rng() % 100);
    for (int i = 0; i < 60; ++i) values.push_back(std::int16_t(i * 7 - 200 + shift));
  }
};

std::vector<float> read_all(VolumeSource& v) {
  MemoryVolume m = load_volume_float(v);
  const float* p = static_cast<const float*>(m.resident_data());
  return std::vector<float>(p, p + m.geometry().voxel_count());
}

void expect_values(VolumeSource& v, const Sample& s, const std::string& what) {
  EXPECT_EQ(v.geometry().dims, s.dims) << what;
  const auto got = read_all(v);
  ASSERT_EQ(got.size(), s.values.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], float(s.values[i])) << what << " at " << i;
}

std::string nifti1_header(const Sample& s, int qform, int sform) {
  std::string h(352, '\0');
  put<std::int32_t>(h, 0, 348);
  put<std::int16_t>(h, 40, 3);
  for (int a = 0; a < 3; ++a) put<std::int16_t>(h, 42 + 2 * a, std::int16_t(s.dims[a]));
  put<std::int16_t>(h, 48, 1);
  put<std::int16_t>(h, 70, 4);  // int16
  put<std::int16_t>(h, 72, 16);
  put<float>(h, 76, -1.0f);     // qfac
  put<float>(h, 80, 2.0f);
  put<float>(h, 84, 3.0f);
  put<float>(h, 88, 4.0f);
  put<float>(h, 108, 352.0f);
  put<std::int16_t>(h, 252, std::int16_t(qform));
  put<std::int16_t>(h, 254, std::int16_t(sform));
  // qform: a 90° rotation about z (b = c = 0, d = sin 45°), offset (10, 20, 30).
  put<float>(h, 264, float(std::sqrt(0.5)));
  put<float>(h, 268, 10.0f);
  put<float>(h, 272, 20.0f);
  put<float>(h, 276, 30.0f);
  // sform: diag(-2, 3, 4), offset (1, 2, 3).
  const float srow[12] = {-2, 0, 0, 1, 0, 3, 0, 2, 0, 0, 4, 3};
  for (int i = 0; i < 12; ++i) put<float>(h, 280 + 4 * std::size_t(i), srow[i]);
  std::memcpy(h.data() + 344, "n+1", 4);
  return h;
}

TEST(VolumeReaders, Nifti1PlainAndGzipWithQformAndSform) {
  TempDir dir;
  Sample s(test::run_seed());
  const std::string data = bytes_of(s.values);
  write_file(dir / "s.nii", nifti1_header(s, 0, 1) + data);
  auto v = open_volume(dir / "s.nii");
  expect_values(*v, s, "nii sform");
  auto w = v->geometry().world(1, 1, 1);
  EXPECT_NEAR(w[0], -1, 1e-6);
  EXPECT_NEAR(w[1], 5, 1e-6);
  EXPECT_NEAR(w[2], 7, 1e-6);
  write_file(dir / "q.nii.gz", gzip(nifti1_header(s, 1, 0) + data));
  auto q = open_volume(dir / "q.nii.gz");
  expect_values(*q, s, "nii.gz qform");
  // Rotation by 90° about z: index x → world +y, index y → world −x; qfac −1 flips index z.
  w = q->geometry().world(1, 0, 0);
  EXPECT_NEAR(w[0], 10, 1e-5);
  EXPECT_NEAR(w[1], 22, 1e-5);
  w = q->geometry().world(0, 0, 1);
  EXPECT_NEAR(w[2], 26, 1e-5);
}

TEST(VolumeReaders, Nifti2AndScaling) {
  TempDir dir;
  Sample s(test::run_seed() + 1);
  std::string h(544, '\0');
  put<std::int32_t>(h, 0, 540);
  std::memcpy(h.data() + 4, "n+2\0\r\n\032\n", 8);
  put<std::int16_t>(h, 12, 4);
  put<std::int16_t>(h, 14, 16);
  put<std::int64_t>(h, 16, 3);
  for (int a = 0; a < 3; ++a) put<std::int64_t>(h, 24 + 8 * std::size_t(a), s.dims[a]);
  for (int a = 0; a < 3; ++a) put<double>(h, 112 + 8 * std::size_t(a), 0.5 * (a + 1));
  put<std::int64_t>(h, 168, 544);
  put<double>(h, 176, 2.0);  // scl_slope
  put<double>(h, 184, 1.0);  // scl_inter
  write_file(dir / "s2.nii", h + bytes_of(s.values));
  auto v = open_volume(dir / "s2.nii");
  EXPECT_EQ(v->type(), VoxelType::Float32) << "scaled data is read as float";
  const auto got = read_all(*v);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 2.0f * s.values[i] + 1.0f);
  EXPECT_DOUBLE_EQ(v->geometry().spacing[2], 1.5);
}

TEST(VolumeReaders, NrrdEncodingsAndDetachedData) {
  TempDir dir;
  Sample s(test::run_seed() + 2);
  const std::string head = "NRRD0004\n# comment\ntype: short\ndimension: 3\nsizes: 5 4 3\n"
                           "space: left-posterior-superior\nspace directions: (0,2,0) (1,0,0) (0,0,3)\n"
                           "space origin: (1,2,3)\nendian: big\nkey:=value\n";
  write_file(dir / "raw.nrrd", head + "encoding: raw\n\n" + bytes_of(s.values, true));
  auto v = open_volume(dir / "raw.nrrd");
  expect_values(*v, s, "nrrd raw big-endian");
  const auto w = v->geometry().world(1, 1, 1);
  EXPECT_NEAR(w[0], 2, 1e-9);
  EXPECT_NEAR(w[1], 4, 1e-9);
  EXPECT_NEAR(w[2], 6, 1e-9);
  write_file(dir / "gz.nrrd", head + "encoding: gzip\n\n" + gzip(bytes_of(s.values, true)));
  auto g = open_volume(dir / "gz.nrrd");
  expect_values(*g, s, "nrrd gzip");
  std::string ascii;
  for (auto x : s.values) ascii += std::to_string(x) + (ascii.size() % 7 ? " " : "\n");
  write_file(dir / "txt.nrrd", head + "encoding: ascii\n\n" + ascii);
  auto t = open_volume(dir / "txt.nrrd");
  expect_values(*t, s, "nrrd ascii");
  write_file(dir / "d.raw", bytes_of(s.values, true));
  write_file(dir / "d.nhdr", head + "encoding: raw\ndata file: d.raw\n\n");
  auto d = open_volume(dir / "d.nhdr");
  expect_values(*d, s, "nhdr detached");
}

// Slabs of a compressed volume overlap the slab before by a slice, and an engine may go back to the start: every
// order of reads gives the file's samples. The data is split into two gzip members (as bgzip writes files).
TEST(VolumeReaders, CompressedSlicesReadInAnyOrder) {
  TempDir dir;
  std::mt19937_64 rng(test::run_seed() + 7);
  const std::int64_t nx = 33, ny = 17, nz = 29;
  std::vector<std::int16_t> values(std::size_t(nx * ny * nz));
  for (auto& v : values) v = std::int16_t(rng() % 20000) - 10000;
  const std::string head = "NRRD0004\ntype: short\ndimension: 3\nsizes: 33 17 29\nendian: little\nencoding: gzip\n\n";
  const std::string raw = bytes_of(values);
  const std::size_t cut = raw.size() / 3 + 5;  // inside a slice
  write_file(dir / "two.nrrd", head + gzip(raw.substr(0, cut)) + gzip(raw.substr(cut)));
  auto v = open_volume(dir / "two.nrrd");
  const std::int64_t slice = nx * ny;
  std::vector<std::int16_t> got(std::size_t(slice * nz));
  auto read = [&](std::int64_t z0, std::int64_t z1) {
    std::vector<std::int16_t> part(std::size_t(slice * (z1 - z0)));
    v->read_slices(z0, z1, part.data());
    for (std::size_t i = 0; i < part.size(); ++i)
      ASSERT_EQ(part[i], values[std::size_t(z0 * slice) + i]) << "slices " << z0 << ".." << z1 << " at " << i;
  };
  for (int trial = 0; trial < 20; ++trial) {
    const std::int64_t step = 2 + std::int64_t(rng() % 6);
    for (std::int64_t z = 0; z + 1 < nz; z += step - 1) read(z, std::min(nz, z + step));  // overlapping by one
    const std::int64_t a = std::int64_t(rng() % std::uint64_t(nz)), b = a + 1 + std::int64_t(rng() % std::uint64_t(nz - a));
    read(a, b);  // anywhere, backwards included
  }
}

// A compressed or scaled file kept in memory after its first pass (keep_resident) gives the samples the file gives,
// only within the budget; an extraction without a level (the data-range pass, then the mesh) keeps it and makes the
// mesh of the explicit middle level.
TEST(VolumeReaders, KeptFilesGiveTheFilesSamples) {
  TempDir dir;
  std::mt19937_64 rng(test::run_seed() + 11);
  const std::int64_t nx = 21, ny = 18, nz = 23;
  std::vector<std::int16_t> values(std::size_t(nx * ny * nz));
  for (std::int64_t z = 0; z < nz; ++z)
    for (std::int64_t y = 0; y < ny; ++y)
      for (std::int64_t x = 0; x < nx; ++x)  // a blob, and noise so that a lost or shifted slice shows
        values[std::size_t((z * ny + y) * nx + x)] = std::int16_t(
            1000 - 10 * ((x - 10) * (x - 10) + (y - 9) * (y - 9) + (z - 11) * (z - 11)) + std::int64_t(rng() % 7));
  const std::string head = "NRRD0004\ntype: short\ndimension: 3\nsizes: 21 18 23\nendian: little\nencoding: gzip\n\n";
  write_file(dir / "k.nrrd", head + gzip(bytes_of(values)));
  Sample s(test::run_seed() + 12);
  std::string h = nifti1_header(s, 1, 0);
  put<float>(h, 112, 0.5f);   // scl_slope
  put<float>(h, 116, -3.0f);  // scl_inter
  write_file(dir / "k.nii.gz", gzip(h + bytes_of(s.values)));
  for (const char* name : {"k.nrrd", "k.nii.gz"}) {
    const std::vector<float> want = read_all(*open_volume(dir / name));
    auto v = open_volume(dir / name);
    const std::uint64_t bytes = std::uint64_t(v->geometry().voxel_count()) * voxel_bytes(v->type());
    std::vector<char> streamed(bytes);
    v->read_slices(0, v->geometry().dims[2], streamed.data());
    EXPECT_FALSE(v->keep_resident(bytes - 1)) << name << ": over the budget";
    EXPECT_EQ(v->resident_data(), nullptr) << name;
    EXPECT_TRUE(v->keep_resident(bytes)) << name;
    ASSERT_NE(v->resident_data(), nullptr) << name;
    EXPECT_EQ(0, std::memcmp(v->resident_data(), streamed.data(), bytes)) << name;
    EXPECT_EQ(read_all(*v), want) << name << ": kept samples";
    if (std::string(name) == "k.nii.gz")
      for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(want[i], 0.5f * float(s.values[i]) - 3.0f) << i;
  }
  IsosurfaceOptions o;
  o.device = Device::Cpu;
  auto v = open_volume(dir / "k.nrrd");
  IsosurfaceReport rep;
  const TriangleMesh implicit = extract_isosurface(*v, o, &rep);
  EXPECT_NE(v->resident_data(), nullptr) << "the range pass keeps a small file";
  ASSERT_EQ(rep.levels.size(), 1u);
  o.levels = rep.levels;
  const TriangleMesh explicit_level = extract_isosurface(*open_volume(dir / "k.nrrd"), o);
  ASSERT_GT(implicit.triangle_count(), 50);
  EXPECT_EQ(implicit.positions, explicit_level.positions);
  EXPECT_EQ(implicit.triangles, explicit_level.triangles);
}

TEST(VolumeReaders, MetaImageRawZlibAndLocal) {
  TempDir dir;
  Sample s(test::run_seed() + 3);
  const std::string head = "ObjectType = Image\nNDims = 3\nDimSize = 5 4 3\nElementType = MET_SHORT\n"
                           "ElementSpacing = 0.5 0.5 2\nOffset = -1 0 1\nTransformMatrix = 1 0 0 0 1 0 0 0 1\n"
                           "BinaryDataByteOrderMSB = False\n";
  write_file(dir / "a.raw", bytes_of(s.values));
  write_file(dir / "a.mhd", head + "ElementDataFile = a.raw\n");
  auto v = open_volume(dir / "a.mhd");
  expect_values(*v, s, "mhd raw");
  EXPECT_NEAR(v->geometry().world(2, 0, 1)[0], 0.0, 1e-12);
  EXPECT_NEAR(v->geometry().world(2, 0, 1)[2], 3.0, 1e-12);
  write_file(dir / "b.zraw", zlib_compress(bytes_of(s.values)));
  write_file(dir / "b.mhd", head + "CompressedData = True\nElementDataFile = b.zraw\n");
  expect_values(*open_volume(dir / "b.mhd"), s, "mhd zlib");
  write_file(dir / "c.mha", head + "ElementDataFile = LOCAL\n" + bytes_of(s.values));
  expect_values(*open_volume(dir / "c.mha"), s, "mha local");
}

TEST(VolumeReaders, VtkLegacyBinaryAsciiAndRaw) {
  TempDir dir;
  Sample s(test::run_seed() + 4);
  const std::string head = "# vtk DataFile Version 3.0\ntest volume\n";
  const std::string geo = "DATASET STRUCTURED_POINTS\nDIMENSIONS 5 4 3\nSPACING 1 2 3\nORIGIN 0 0 0\nPOINT_DATA 60\n"
                          "SCALARS density short 1\nLOOKUP_TABLE default\n";
  write_file(dir / "b.vtk", head + "BINARY\n" + geo + bytes_of(s.values, true));
  expect_values(*open_volume(dir / "b.vtk"), s, "vtk binary");
  std::string ascii;
  for (auto x : s.values) ascii += std::to_string(x) + "\n";
  write_file(dir / "a.vtk", head + "ASCII\n" + geo + ascii);
  auto a = open_volume(dir / "a.vtk");
  expect_values(*a, s, "vtk ascii");
  EXPECT_DOUBLE_EQ(a->geometry().spacing[1], 2.0);
  write_file(dir / "v.raw", std::string(16, 'h') + bytes_of(s.values, true));
  RawVolumeOptions r;
  r.dims = s.dims;
  r.type = VoxelType::Int16;
  r.big_endian = true;
  r.header_bytes = 16;
  expect_values(*open_raw_volume(dir / "v.raw", r), s, "raw big-endian");
}

void expect_parse_error(const std::string& path, const std::string& needle) {
  try {
    auto v = open_volume(path);
    read_all(*v);
    ADD_FAILURE() << path << ": no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fs::path(path).filename().string()), std::string::npos)
        << "the message names the file: " << e.what();
  }
}

TEST(VolumeReaders, BadInputGivesClearErrors) {
  TempDir dir;
  Sample s(test::run_seed() + 5);
  const std::string data = bytes_of(s.values);
  write_file(dir / "trunc.nii", nifti1_header(s, 0, 0) + data.substr(0, 50));
  expect_parse_error(dir / "trunc.nii", "truncated");
  write_file(dir / "trunc.nii.gz", gzip(nifti1_header(s, 0, 0) + data.substr(0, 50)));
  expect_parse_error(dir / "trunc.nii.gz", "ends early");
  std::string bad_type = nifti1_header(s, 0, 0);
  put<std::int16_t>(bad_type, 70, 32);  // complex64
  write_file(dir / "type.nii", bad_type + data);
  expect_parse_error(dir / "type.nii", "unsupported NIfTI datatype");
  std::string four_d = nifti1_header(s, 0, 0);
  put<std::int16_t>(four_d, 40, 4);
  put<std::int16_t>(four_d, 48, 7);
  write_file(dir / "4d.nii", four_d + data);
  expect_parse_error(dir / "4d.nii", "dimension count");
  write_file(dir / "short.nii", "abc");
  expect_parse_error(dir / "short.nii", "NIfTI");
  std::string huge = nifti1_header(s, 0, 0);
  for (int a = 0; a < 3; ++a) put<std::int16_t>(huge, 42 + 2 * std::size_t(a), 32767);
  write_file(dir / "huge.nii", huge + data);
  expect_parse_error(dir / "huge.nii", "truncated");
  write_file(dir / "m.nrrd", "NRRD0004\ntype: short\ndimension: 3\nsizes: 5 4\nencoding: raw\nendian: little\n\n" + data);
  expect_parse_error(dir / "m.nrrd", "sizes");
  write_file(dir / "e.nrrd", "NRRD0004\ntype: short\ndimension: 3\nsizes: 5 4 3\nencoding: bzip2\nendian: little\n\n");
  expect_parse_error(dir / "e.nrrd", "encoding");
  write_file(dir / "z.mhd", "NDims = 3\nDimSize = 5 4 3\nElementType = MET_SHORT\nCompressedData = True\n"
                            "ElementDataFile = z.zraw\n");
  write_file(dir / "z.zraw", "this is not zlib data at all");
  expect_parse_error(dir / "z.mhd", "corrupt");
  write_file(dir / "t.mhd", "NDims = 3\nDimSize = 5 4 3\nElementType = MET_LONG\nElementDataFile = t.raw\n");
  expect_parse_error(dir / "t.mhd", "ElementType");
  write_file(dir / "p.vtk", "# vtk DataFile Version 3.0\nx\nASCII\nDATASET POLYDATA\n");
  expect_parse_error(dir / "p.vtk", "STRUCTURED_POINTS");
  write_file(dir / "n.vtk", "# vtk DataFile Version 3.0\nx\nASCII\nDATASET STRUCTURED_POINTS\nDIMENSIONS 5 4 3\n"
                            "POINT_DATA 60\nSCALARS d float\nLOOKUP_TABLE default\n1 2 3\n" + std::string(120, ' '));
  expect_parse_error(dir / "n.vtk", "ASCII data ends");
  // A count the file cannot hold (found by the fuzzer: 98 GB asked of a 60-byte file) is refused before allocating.
  write_file(dir / "big.nrrd", "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 24444444444 2\nencoding: ascii\n\n1 2 3\n");
  expect_parse_error(dir / "big.nrrd", "ASCII data is truncated");
  EXPECT_THROW(open_volume(dir / "missing.nii"), Error);
  EXPECT_THROW(open_volume(dir / "file.xyz"), Error);
}

TEST(VolumeReaders, SharedRealVolumesGiveClosedSurfaces) {
  struct Case {
    const char* file;
    std::array<std::int64_t, 3> dims;
    double level;
  };
  const Case cases[] = {{"volumes/HeadMRVolume.mhd", {48, 62, 42}, 80},
                        {"volumes/ironProt.vtk", {68, 68, 68}, 128},
                        {"volumes/MR_Gd.nii.gz", {176, 188, 144}, 60}};
  int found = 0;
  for (const auto& c : cases) {
    const std::string path = test::shared_data(c.file);
    if (path.empty()) continue;
    ++found;
    auto v = open_volume(path);
    EXPECT_EQ(v->geometry().dims, c.dims) << c.file;
    IsosurfaceOptions o;
    o.levels = {c.level};
    o.device = Device::Cpu;
    const TriangleMesh m = extract_isosurface(*v, o);
    EXPECT_GT(m.triangle_count(), 1000) << c.file;
    // Streaming through small slabs gives the same mesh as the whole volume at once.
    o.slab_slices = 5;
    const TriangleMesh s = extract_isosurface(*v, o);
    EXPECT_EQ(s.triangles, m.triangles) << c.file;
    EXPECT_EQ(s.positions, m.positions) << c.file;
  }
  if (!found) GTEST_SKIP() << "shared data volumes/ not found (set PARASURF_DATA)";
}

}  // namespace
}  // namespace parasurf
