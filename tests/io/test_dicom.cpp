// DICOM series: slices written by GDCM in a shuffled order, oblique, rescaled, compressed, mixed with other series
// and files, read back as one volume (samples, spacing from the positions, LPS geometry) or refused with the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"
#include "parasurf/volume.hpp"
#include "support.hpp"

#ifdef PARASURF_HAVE_GDCM
#include <gdcmAttribute.h>
#include <gdcmImageChangeTransferSyntax.h>
#include <gdcmImageWriter.h>
#include <gdcmReader.h>
#include <gdcmTrace.h>
#include <gdcmWriter.h>
#endif

namespace fs = std::filesystem;
using namespace parasurf;

#ifndef PARASURF_HAVE_GDCM

TEST(Dicom, SeriesNeedGdcm) { GTEST_SKIP() << "this build has no DICOM support (libgdcm-dev was not found)"; }

#else

namespace {

struct Dir {
  fs::path path;
  explicit Dir(const std::string& tag) {
    path = fs::temp_directory_path() / ("parasurf_dicom_" + tag + "_" + std::to_string(test::run_seed() % 1000000));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

struct Stack {
  int cols = 13, rows = 9, slices = 7;
  double col_spacing = 0.6, row_spacing = 0.9, dz = 1.25;
  std::array<double, 3> origin{-40.5, 12.25, 100.0};
  std::array<double, 6> cosines{};
  double slope = 1, intercept = 0;
  std::string series = "1.2.826.0.1.3680043.2.1125.1";
  std::array<double, 3> normal() const {
    const double* r = cosines.data();
    const double* c = cosines.data() + 3;
    return {r[1] * c[2] - r[2] * c[1], r[2] * c[0] - r[0] * c[2], r[0] * c[1] - r[1] * c[0]};
  }
  std::int16_t stored(int i, int j, int k) const { return std::int16_t((i * 7 + j * 3 + k * 11) % 200 - 50); }
};

// An oblique orientation: the rows turned about z, the columns tilted out of the axial plane.
std::array<double, 6> oblique(double a, double b) {
  return {std::cos(a), std::sin(a), 0, -std::sin(a) * std::cos(b), std::cos(a) * std::cos(b), std::sin(b)};
}

void write_slice(const fs::path& file, const Stack& s, int k, bool rle) {
  gdcm::Trace::SetWarning(false);  // the writer notes the tags it fills in
  gdcm::ImageWriter w;
  gdcm::Image& im = w.GetImage();
  im.SetNumberOfDimensions(2);
  im.SetDimension(0, unsigned(s.cols));
  im.SetDimension(1, unsigned(s.rows));
  im.SetPixelFormat(gdcm::PixelFormat::INT16);
  im.SetPhotometricInterpretation(gdcm::PhotometricInterpretation::MONOCHROME2);
  const double spacing[3] = {s.col_spacing, s.row_spacing, 1.0};
  im.SetSpacing(spacing);
  const auto n = s.normal();
  const double origin[3] = {s.origin[0] + k * s.dz * n[0], s.origin[1] + k * s.dz * n[1], s.origin[2] + k * s.dz * n[2]};
  im.SetOrigin(origin);
  im.SetDirectionCosines(s.cosines.data());
  im.SetSlope(s.slope);
  im.SetIntercept(s.intercept);
  std::vector<std::int16_t> px(std::size_t(s.cols * s.rows));
  for (int j = 0; j < s.rows; ++j)
    for (int i = 0; i < s.cols; ++i) px[std::size_t(j * s.cols + i)] = s.stored(i, j, k);
  gdcm::DataElement data(gdcm::Tag(0x7fe0, 0x0010));
  data.SetByteValue(reinterpret_cast<const char*>(px.data()), std::uint32_t(px.size() * sizeof(std::int16_t)));
  im.SetDataElement(data);
  im.SetTransferSyntax(gdcm::TransferSyntax::ExplicitVRLittleEndian);
  gdcm::DataSet& ds = w.GetFile().GetDataSet();
  gdcm::Attribute<0x0008, 0x0016> sop{"1.2.840.10008.5.1.4.1.1.2"};  // CT Image Storage: it has the rescale
  ds.Replace(sop.GetAsDataElement());
  gdcm::Attribute<0x0020, 0x000e> series{s.series.c_str()};
  ds.Replace(series.GetAsDataElement());
  if (rle) {
    gdcm::ImageChangeTransferSyntax change;
    change.SetTransferSyntax(gdcm::TransferSyntax::RLELossless);
    change.SetInput(im);
    ASSERT_TRUE(change.Change());
    w.SetImage(change.GetOutput());
  }
  w.SetFileName(file.string().c_str());
  ASSERT_TRUE(w.Write()) << file;
  // A 2-D image keeps two origin components in GDCM: the position's third is written here, as a scanner does.
  gdcm::Reader r;
  r.SetFileName(file.string().c_str());
  ASSERT_TRUE(r.Read()) << file;
  gdcm::Attribute<0x0020, 0x0032> position{{origin[0], origin[1], origin[2]}};
  r.GetFile().GetDataSet().Replace(position.GetAsDataElement());
  gdcm::Writer again;
  again.SetFile(r.GetFile());
  again.SetFileName(file.string().c_str());
  ASSERT_TRUE(again.Write()) << file;
}

// Files named so that their order on disk is not the slices' order.
void write_stack(const fs::path& dir, const Stack& s, std::mt19937_64& rng, bool rle = false, const std::string& prefix = "im") {
  std::vector<int> order(std::size_t(s.slices));
  for (int k = 0; k < s.slices; ++k) order[std::size_t(k)] = k;
  std::shuffle(order.begin(), order.end(), rng);
  for (int n = 0; n < s.slices; ++n) write_slice(dir / (prefix + std::to_string(n) + ".dcm"), s, order[std::size_t(n)], rle);
}

void expect_stack(VolumeSource& v, const Stack& s, bool rescaled) {
  const VolumeGeometry& g = v.geometry();
  ASSERT_EQ(g.dims[0], s.cols);
  ASSERT_EQ(g.dims[1], s.rows);
  ASSERT_EQ(g.dims[2], s.slices);
  EXPECT_NEAR(g.spacing[0], s.col_spacing, 1e-9);
  EXPECT_NEAR(g.spacing[1], s.row_spacing, 1e-9);
  EXPECT_NEAR(g.spacing[2], s.dz, 1e-6);
  EXPECT_EQ(g.frame, WorldFrame::Lps);
  const auto n = s.normal();
  for (int a = 0; a < 3; ++a) {
    EXPECT_NEAR(g.origin[std::size_t(a)], s.origin[std::size_t(a)], 1e-5);
    EXPECT_NEAR(g.direction[std::size_t(3 * a + 0)], s.cosines[std::size_t(a)], 1e-6) << "row direction";
    EXPECT_NEAR(g.direction[std::size_t(3 * a + 1)], s.cosines[std::size_t(3 + a)], 1e-6) << "column direction";
    EXPECT_NEAR(g.direction[std::size_t(3 * a + 2)], n[std::size_t(a)], 1e-6) << "slice normal";
  }
  ASSERT_EQ(v.type(), rescaled ? VoxelType::Float32 : VoxelType::Int16);
  std::vector<char> bytes(std::size_t(g.voxel_count()) * voxel_bytes(v.type()));
  v.read_slices(0, g.dims[2], bytes.data());
  for (int k = 0; k < s.slices; ++k)
    for (int j = 0; j < s.rows; ++j)
      for (int i = 0; i < s.cols; ++i) {
        const std::size_t at = std::size_t((k * s.rows + j) * s.cols + i);
        if (rescaled) {
          float f;
          std::memcpy(&f, bytes.data() + at * 4, 4);
          ASSERT_EQ(f, float(s.stored(i, j, k) * s.slope + s.intercept)) << i << " " << j << " " << k;
        } else {
          std::int16_t x;
          std::memcpy(&x, bytes.data() + at * 2, 2);
          ASSERT_EQ(x, s.stored(i, j, k)) << i << " " << j << " " << k;
        }
      }
}

}  // namespace

TEST(Dicom, ShuffledObliqueRescaledSeriesReadsAsOneVolume) {
  std::mt19937_64 rng(test::run_seed() ^ 0xd1c0);
  std::uniform_real_distribution<double> angle(-0.6, 0.6);
  for (bool rescaled : {false, true})
    for (bool rle : {false, true}) {
      Dir dir("plain");
      Stack s;
      s.cosines = oblique(angle(rng), angle(rng));
      if (rescaled) s.slope = 0.5, s.intercept = -1024;
      write_stack(dir.path, s, rng, rle);
      std::ofstream(dir.path / "notes.txt") << "not an image\n";  // skipped, as viewers skip it
      auto v = open_volume(dir.path.string());
      SCOPED_TRACE(std::string(rescaled ? "rescaled" : "stored") + (rle ? ", RLE" : ""));
      expect_stack(*v, s, rescaled);
      // Naming one file of the series reads the same volume.
      auto one = open_volume((dir.path / "im3.dcm").string());
      expect_stack(*one, s, rescaled);
      // PARASURF_KEEP_DICOM=folder keeps the last series written, to try the CLI or Python on it.
      if (const char* keep = std::getenv("PARASURF_KEEP_DICOM")) {
        fs::remove_all(keep);
        fs::copy(dir.path, keep);
      }
    }
}

TEST(Dicom, PixelSpacingIsRowsThenColumnsInTheFile) {
  std::mt19937_64 rng(test::run_seed() ^ 0x5ac1);
  Dir dir("spacing");
  Stack s;
  s.cosines = oblique(0, 0);
  write_slice(dir.path / "a.dcm", s, 0, false);
  gdcm::Reader r;
  r.SetFileName((dir.path / "a.dcm").string().c_str());
  ASSERT_TRUE(r.Read());
  gdcm::Attribute<0x0028, 0x0030> ps;
  ps.Set(r.GetFile().GetDataSet());
  // DICOM stores the spacing between rows first: the reader's x spacing (along a row) is the second value.
  EXPECT_NEAR(ps.GetValue(0), s.row_spacing, 1e-9);
  EXPECT_NEAR(ps.GetValue(1), s.col_spacing, 1e-9);
  auto v = open_volume((dir.path / "a.dcm").string());
  EXPECT_NEAR(v->geometry().spacing[0], s.col_spacing, 1e-9);
  EXPECT_NEAR(v->geometry().spacing[1], s.row_spacing, 1e-9);
}

TEST(Dicom, SeveralSeriesGapsAndEmptyFoldersAreRefusedNamingTheFile) {
  std::mt19937_64 rng(test::run_seed() ^ 0x9a95);
  {
    Dir dir("two");
    Stack a, b;
    a.cosines = b.cosines = oblique(0.1, 0.2);
    b.series = "1.2.826.0.1.3680043.2.1125.2";
    b.slices = 4;
    write_stack(dir.path, a, rng, false, "a");
    write_stack(dir.path, b, rng, false, "b");
    try {
      open_volume(dir.path.string());
      ADD_FAILURE() << "two series in one folder must be refused";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("2 series"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(b.series), std::string::npos) << e.what();
    }
    auto v = open_volume((dir.path / "b2.dcm").string());  // one file names its series
    expect_stack(*v, b, false);
  }
  {
    Dir dir("gap");
    Stack s;
    s.cosines = oblique(0.3, -0.2);
    write_stack(dir.path, s, rng);
    // Remove a middle slice: the file after the gap is named.
    bool removed = false;
    for (const auto& e : fs::directory_iterator(dir.path)) {
      gdcm::Reader r;
      r.SetFileName(e.path().string().c_str());
      ASSERT_TRUE(r.Read());
      gdcm::Attribute<0x0020, 0x0032> pos;
      pos.Set(r.GetFile().GetDataSet());
      const auto n = s.normal();
      const double along = (pos.GetValue(0) - s.origin[0]) * n[0] + (pos.GetValue(1) - s.origin[1]) * n[1] +
                           (pos.GetValue(2) - s.origin[2]) * n[2];
      if (std::abs(along - 3 * s.dz) < 1e-3) {
        fs::remove(e.path());
        removed = true;
        break;
      }
    }
    ASSERT_TRUE(removed);
    try {
      open_volume(dir.path.string());
      ADD_FAILURE() << "a missing slice must be refused";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("missing slice"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(".dcm"), std::string::npos) << e.what();
    }
  }
  {
    Dir dir("empty");
    std::ofstream(dir.path / "readme.txt") << "nothing here\n";
    EXPECT_THROW(open_volume(dir.path.string()), Error);
  }
}

TEST(Dicom, IsosurfaceOfASeriesLiesInPatientSpace) {
  std::mt19937_64 rng(test::run_seed() ^ 0x150);
  Dir dir("iso");
  Stack s;
  s.cosines = oblique(0.4, 0.25);
  s.slope = 0.5, s.intercept = -10;
  write_stack(dir.path, s, rng);
  auto v = open_volume(dir.path.string());
  IsosurfaceOptions o;
  o.levels = {10.0};
  o.device = Device::Cpu;
  const TriangleMesh m = extract_isosurface(*v, o);
  ASSERT_GT(m.triangle_count(), 0);
  // Every vertex lies inside the stack's box in patient space: its coordinates along the three directions.
  const auto n = s.normal();
  for (std::size_t p = 0; p + 2 < m.positions.size(); p += 3) {
    const double d[3] = {m.positions[p] - s.origin[0], m.positions[p + 1] - s.origin[1], m.positions[p + 2] - s.origin[2]};
    const double x = d[0] * s.cosines[0] + d[1] * s.cosines[1] + d[2] * s.cosines[2];
    const double y = d[0] * s.cosines[3] + d[1] * s.cosines[4] + d[2] * s.cosines[5];
    const double z = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
    ASSERT_GE(x, -1e-3);
    ASSERT_LE(x, (s.cols - 1) * s.col_spacing + 1e-3);
    ASSERT_GE(y, -1e-3);
    ASSERT_LE(y, (s.rows - 1) * s.row_spacing + 1e-3);
    ASSERT_GE(z, -1e-3);
    ASSERT_LE(z, (s.slices - 1) * s.dz + 1e-3);
  }
}

#endif
