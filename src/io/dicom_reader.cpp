// DICOM series: a folder of single-frame grey-level images (CT, MR, PET...) as one volume, through GDCM (Debian's
// libgdcm-dev). The headers of every file are read first (up to the pixel data): the series, the image geometry and
// the rescale. Slices are ordered along the normal of the image plane (ImagePositionPatient projected on
// ImageOrientationPatient's row × column), as ITK and dcm2niix do; their spacing comes from those positions, not
// from SliceThickness. Pixel data is decoded slice by slice when the extractor asks for it, in any transfer syntax
// GDCM decodes (uncompressed, RLE, JPEG lossless and lossy, JPEG-LS, JPEG 2000 where its codecs are built).
// Standard: DICOM PS3.3 C.7.6.2 (Image Plane Module), C.11.1 (Modality LUT: Rescale Slope and Intercept).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "core/memory.hpp"
#include "io/volume_data.hpp"
#include "parasurf/error.hpp"

#ifdef PARASURF_HAVE_GDCM
#include <gdcmAttribute.h>
#include <gdcmImage.h>
#include <gdcmImageHelper.h>
#include <gdcmImageReader.h>
#include <gdcmReader.h>
#include <gdcmTrace.h>

#include <mutex>
#endif

namespace parasurf::io {

bool dicom_supported() {
#ifdef PARASURF_HAVE_GDCM
  return true;
#else
  return false;
#endif
}

#ifndef PARASURF_HAVE_GDCM

std::unique_ptr<VolumeSource> open_dicom_series(const std::string& path) {
  throw Error(ErrorKind::InvalidArgument, path + ": DICOM series need a build with GDCM (install libgdcm-dev and "
                                                 "configure again)");
}

#else

namespace {

constexpr std::size_t kMaxFiles = 100000;  // a folder with more is not one series a viewer would load either

[[noreturn]] void fail(const std::string& path, const std::string& msg) { throw Error(ErrorKind::Parse, path + ": " + msg); }

// GDCM writes its warnings and errors to stderr; the library never prints (what goes wrong reaches the caller as an
// Error naming the file). GDCM's switch is process-wide.
void quiet_gdcm() {
  static std::once_flag once;
  std::call_once(once, [] {
    gdcm::Trace::SetDebug(false);
    gdcm::Trace::SetWarning(false);
    gdcm::Trace::SetError(false);
  });
}

struct Slice {
  std::string file;
  double position = 0;  // along the normal
  std::array<double, 3> origin{};
  double slope = 1, intercept = 0;
};

struct Series {
  std::string uid;
  std::vector<Slice> slices;
  unsigned columns = 0, rows = 0;
  std::array<double, 6> cosines{};
  std::array<double, 2> pixel{};  // column spacing (x), row spacing (y)
  gdcm::PixelFormat format;
};

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

VoxelType stored_type(const std::string& file, const gdcm::PixelFormat& f) {
  if (f.GetSamplesPerPixel() != 1)
    fail(file, "has " + std::to_string(f.GetSamplesPerPixel()) + " samples per pixel (colour); grey-level images only");
  const bool sign = f.GetPixelRepresentation() == 1;
  switch (f.GetBitsAllocated()) {
    case 8: return sign ? VoxelType::Int8 : VoxelType::UInt8;
    case 16: return sign ? VoxelType::Int16 : VoxelType::UInt16;
    case 32: return sign ? VoxelType::Int32 : VoxelType::UInt32;
    default: fail(file, "Bits Allocated " + std::to_string(f.GetBitsAllocated()) + " is not supported (8, 16, 32)");
  }
}

class DicomVolume final : public VolumeSource {
 public:
  DicomVolume(std::string name, VolumeGeometry g, VoxelType stored, bool rescaled, std::vector<Slice> slices,
              unsigned bits_stored)
      : name_(std::move(name)), geometry_(g), stored_(stored), rescaled_(rescaled), slices_(std::move(slices)),
        bits_stored_(bits_stored) {}
  const VolumeGeometry& geometry() const override { return geometry_; }
  VoxelType type() const override { return rescaled_ ? VoxelType::Float32 : stored_; }
  std::string name() const override { return name_; }

  void read_slices(std::int64_t z0, std::int64_t z1, void* out) override {
    const std::size_t n = std::size_t(geometry_.slice_voxels()), bytes = n * voxel_bytes(stored_);
    core::check_host_allocation(bytes, name_ + ": one slice");
    std::vector<char> raw(bytes);
    for (std::int64_t z = z0; z < z1; ++z) {
      const Slice& s = slices_[std::size_t(z)];
      gdcm::ImageReader reader;
      reader.SetFileName(s.file.c_str());
      if (!reader.Read()) throw Error(ErrorKind::Io, s.file + ": cannot read the DICOM image");
      const gdcm::Image& image = reader.GetImage();
      const char* syntax = image.GetTransferSyntax().GetString();
      if (image.GetBufferLength() != bytes)
        fail(s.file, "pixel data of " + std::to_string(image.GetBufferLength()) + " bytes, " + std::to_string(bytes) +
                         " expected");
      if (!image.GetBuffer(raw.data()))
        fail(s.file, std::string("cannot decode its pixel data (transfer syntax ") + (syntax ? syntax : "?") +
                         "; this GDCM build decodes uncompressed, RLE, JPEG, JPEG-LS and JPEG 2000 where its codecs "
                         "are present)");
      char* dst = static_cast<char*>(out) + std::size_t(z - z0) * n * voxel_bytes(type());
      convert(raw.data(), n, s, dst);
    }
  }

 private:
  // Samples beyond Bits Stored hold overlay bits or garbage: masked off (unsigned) or sign-extended (signed), then
  // the modality rescale where the series has one.
  template <class T> void convert_t(const char* raw, std::size_t n, const Slice& s, char* dst) const {
    using U = std::make_unsigned_t<T>;
    const unsigned bits = sizeof(T) * 8;
    const bool trim = bits_stored_ > 0 && bits_stored_ < bits;
    const U mask = trim ? U((U(1) << bits_stored_) - 1) : U(~U(0));
    const U sign = trim ? U(U(1) << (bits_stored_ - 1)) : U(0);
    for (std::size_t i = 0; i < n; ++i) {
      U u;
      std::memcpy(&u, raw + i * sizeof(T), sizeof(T));
      if (trim) {
        u &= mask;
        if (std::is_signed_v<T> && (u & sign)) u |= U(~mask);
      }
      T v;
      std::memcpy(&v, &u, sizeof(T));
      if (rescaled_) {
        const float f = float(double(v) * s.slope + s.intercept);
        std::memcpy(dst + i * sizeof(float), &f, sizeof(float));
      } else {
        std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
      }
    }
  }
  void convert(const char* raw, std::size_t n, const Slice& s, char* dst) const {
    switch (stored_) {
      case VoxelType::UInt8: return convert_t<std::uint8_t>(raw, n, s, dst);
      case VoxelType::Int8: return convert_t<std::int8_t>(raw, n, s, dst);
      case VoxelType::UInt16: return convert_t<std::uint16_t>(raw, n, s, dst);
      case VoxelType::Int16: return convert_t<std::int16_t>(raw, n, s, dst);
      case VoxelType::UInt32: return convert_t<std::uint32_t>(raw, n, s, dst);
      case VoxelType::Int32: return convert_t<std::int32_t>(raw, n, s, dst);
      default: fail(name_, "unexpected sample type");
    }
  }

  std::string name_;
  VolumeGeometry geometry_;
  VoxelType stored_;
  bool rescaled_;
  std::vector<Slice> slices_;
  unsigned bits_stored_;
};

}  // namespace

std::unique_ptr<VolumeSource> open_dicom_series(const std::string& path) {
  namespace fs = std::filesystem;
  quiet_gdcm();
  // A folder: its series (there must be one); a file: the series it belongs to, from the files beside it.
  const bool folder = fs::is_directory(path);
  const fs::path dir = folder ? fs::path(path) : fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  std::vector<std::string> files;
  try {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;  // links to folders, pipes and devices are not slices
      files.push_back(e.path().string());
      if (files.size() > kMaxFiles)
        fail(path, "more than " + std::to_string(kMaxFiles) + " files; point at a folder that holds one series");
    }
  } catch (const fs::filesystem_error& e) {
    throw Error(ErrorKind::Io, dir.string() + ": cannot list the folder (" + e.code().message() + ")");
  }
  std::sort(files.begin(), files.end());
  std::string wanted;  // the series of the file named, if a file was named
  std::map<std::string, Series> series;
  std::size_t skipped = 0;
  for (const auto& file : files) {
    gdcm::Reader reader;
    reader.SetFileName(file.c_str());
    // Headers only: the pixel data is read when its slice is asked for.
    if (!reader.ReadUpToTag(gdcm::Tag(0x7fe0, 0x0010))) {
      ++skipped;  // not DICOM (a DICOMDIR's neighbours, notes, thumbnails)
      continue;
    }
    const gdcm::File& f = reader.GetFile();
    const gdcm::DataSet& ds = f.GetDataSet();
    if (!ds.FindDataElement(gdcm::Tag(0x0028, 0x0010)) || !ds.FindDataElement(gdcm::Tag(0x0020, 0x0032))) {
      ++skipped;  // no image, or no position: a report, a DICOMDIR, a localiser without geometry
      continue;
    }
    gdcm::Attribute<0x0020, 0x000e> uid_at;
    uid_at.Set(ds);
    const std::string uid = trimmed(uid_at.GetValue());
    if (!folder && fs::equivalent(fs::path(file), fs::path(path))) wanted = uid;
    const std::vector<unsigned> dims = gdcm::ImageHelper::GetDimensionsValue(f);
    if (dims.size() >= 3 && dims[2] > 1)
      fail(file, "holds " + std::to_string(dims[2]) + " frames; multi-frame (enhanced) DICOM is not supported");
    const std::vector<double> cos = gdcm::ImageHelper::GetDirectionCosinesValue(f);
    const std::vector<double> origin = gdcm::ImageHelper::GetOriginValue(f);
    const std::vector<double> spacing = gdcm::ImageHelper::GetSpacingValue(f);
    const std::vector<double> rescale = gdcm::ImageHelper::GetRescaleInterceptSlopeValue(f);
    if (dims.size() < 2 || cos.size() < 6 || origin.size() < 3 || spacing.size() < 2 || rescale.size() < 2)
      fail(file, "incomplete image geometry (rows, columns, position, orientation, pixel spacing)");
    Series& s = series[uid];
    Slice slice;
    slice.file = file;
    slice.origin = {origin[0], origin[1], origin[2]};
    slice.intercept = rescale[0];
    slice.slope = rescale[1];
    if (s.slices.empty()) {
      s.uid = uid;
      s.columns = dims[0], s.rows = dims[1];
      std::copy_n(cos.begin(), 6, s.cosines.begin());
      s.pixel = {spacing[0], spacing[1]};
      s.format = gdcm::ImageHelper::GetPixelFormatValue(f);
    } else {
      if (dims[0] != s.columns || dims[1] != s.rows)
        fail(file, std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + " pixels where the series' other images have " +
                       std::to_string(s.columns) + "x" + std::to_string(s.rows));
      for (int c = 0; c < 6; ++c)
        if (std::abs(cos[std::size_t(c)] - s.cosines[std::size_t(c)]) > 1e-4)
          fail(file, "image orientation differs from the series' other images (a localiser or a tilted stack)");
      const gdcm::PixelFormat pf = gdcm::ImageHelper::GetPixelFormatValue(f);
      if (pf.GetBitsAllocated() != s.format.GetBitsAllocated() ||
          pf.GetPixelRepresentation() != s.format.GetPixelRepresentation())
        fail(file, "sample type differs from the series' other images");
    }
    s.slices.push_back(std::move(slice));
  }
  if (series.empty())
    fail(path, "no DICOM images with a position and orientation" +
                   (skipped ? " (" + std::to_string(skipped) + " files that are not such images skipped)" : std::string()));
  std::string pick = wanted;
  if (pick.empty()) {
    if (series.size() > 1) {
      std::string list;
      for (const auto& [uid, s] : series) list += "\n  " + uid + " (" + std::to_string(s.slices.size()) + " images)";
      fail(path, "holds " + std::to_string(series.size()) + " series; name one file of the series wanted:" + list);
    }
    pick = series.begin()->first;
  }
  Series& s = series.at(pick);
  const VoxelType stored = stored_type(s.slices.front().file, s.format);
  // The slice normal: row direction × column direction.
  const double* r = s.cosines.data();
  const double* c = s.cosines.data() + 3;
  const std::array<double, 3> normal{r[1] * c[2] - r[2] * c[1], r[2] * c[0] - r[0] * c[2], r[0] * c[1] - r[1] * c[0]};
  const double norm = std::sqrt(normal[0] * normal[0] + normal[1] * normal[1] + normal[2] * normal[2]);
  if (!(norm > 0.5)) fail(s.slices.front().file, "Image Orientation (Patient) does not hold two unit directions");
  for (auto& sl : s.slices)
    sl.position = (sl.origin[0] * normal[0] + sl.origin[1] * normal[1] + sl.origin[2] * normal[2]) / norm;
  std::sort(s.slices.begin(), s.slices.end(), [](const Slice& a, const Slice& b) { return a.position < b.position; });
  const std::size_t n = s.slices.size();
  double dz = 1;
  if (n > 1) {
    dz = (s.slices.back().position - s.slices.front().position) / double(n - 1);
    if (!(dz > 0)) fail(path, "every image of the series lies at the same position (a time series or several echoes)");
    for (std::size_t k = 1; k < n; ++k) {
      const double gap = s.slices[k].position - s.slices[k - 1].position;
      if (std::abs(gap - dz) > 0.01 * dz + 1e-4)
        fail(s.slices[k].file, "lies " + std::to_string(gap) + " mm from the image before it where the series' spacing is " +
                                   std::to_string(dz) + " mm (a missing slice, a duplicate or a series of several stacks)");
    }
  }
  bool rescaled = false;
  for (const auto& sl : s.slices) rescaled = rescaled || sl.slope != 1 || sl.intercept != 0;
  VolumeGeometry g;
  g.dims = {std::int64_t(s.columns), std::int64_t(s.rows), std::int64_t(n)};
  g.spacing = {s.pixel[0], s.pixel[1], dz};
  g.origin = s.slices.front().origin;
  for (int a = 0; a < 3; ++a) {
    g.direction[std::size_t(3 * a + 0)] = r[a];
    g.direction[std::size_t(3 * a + 1)] = c[a];
    g.direction[std::size_t(3 * a + 2)] = normal[std::size_t(a)] / norm;
  }
  g.frame = WorldFrame::Lps;
  const std::string name = folder ? path : dir.string() + " (series of " + path + ")";
  check_volume_geometry(name, g);
  return std::make_unique<DicomVolume>(name, g, stored, rescaled, std::move(s.slices), s.format.GetBitsStored());
}

#endif

}  // namespace parasurf::io
