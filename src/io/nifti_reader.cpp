// NIfTI-1 and NIfTI-2 volumes (.nii, .nii.gz, .hdr/.img pairs): the header's size, type, scaling and orientation
// (sform, else qform, else the voxel sizes alone); the samples are read slab by slab as the other readers' are.
// Format facts: NIfTI-1 (nifti1.h, NIfTI DFWG 2004), NIfTI-2 (2011).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>

#include "io/byte_stream.hpp"
#include "io/volume_data.hpp"
#include "parasurf/error.hpp"

namespace parasurf::io {

namespace {

// A header field of type T at byte `at`, in the machine's byte order.
template <class T>
T get(const unsigned char* h, std::size_t at, bool swap) {
  T v;
  std::memcpy(&v, h + at, sizeof(T));
  if (swap) {
    auto* p = reinterpret_cast<unsigned char*>(&v);
    std::reverse(p, p + sizeof(T));
  }
  return v;
}

VoxelType nifti_type(const std::string& path, int code) {
  switch (code) {
    case 2:
      return VoxelType::UInt8;
    case 4:
      return VoxelType::Int16;
    case 8:
      return VoxelType::Int32;
    case 16:
      return VoxelType::Float32;
    case 64:
      return VoxelType::Float64;
    case 256:
      return VoxelType::Int8;
    case 512:
      return VoxelType::UInt16;
    case 768:
      return VoxelType::UInt32;
    default:
      parse_fail(path, "unsupported NIfTI datatype " + std::to_string(code) +
                           " (supported: uint8, int8, uint16, int16, uint32, int32, float32, float64)");
  }
}

// Orientation: sform when set, else qform (quaternion, qfac in pixdim[0]), else scaling only (NIfTI "method 1").
void nifti_orientation(VolumeGeometry& g, int qform, int sform, const double quat[3], const double qoff[3], double qfac,
                       const double srow[12]) {
  if (sform > 0) {
    for (int c = 0; c < 3; ++c) {
      const double n = std::sqrt(srow[c] * srow[c] + srow[4 + c] * srow[4 + c] + srow[8 + c] * srow[8 + c]);
      g.spacing[c] = n > 0 ? n : 1;
      for (int r = 0; r < 3; ++r) g.direction[r * 3 + c] = n > 0 ? srow[r * 4 + c] / n : (r == c);
    }
    g.origin = {srow[3], srow[7], srow[11]};
    g.frame = WorldFrame::Ras;
  } else if (qform > 0) {
    const double b = quat[0], c = quat[1], d = quat[2];
    const double a = std::sqrt(std::max(0.0, 1.0 - (b * b + c * c + d * d)));
    const double R[9] = {a * a + b * b - c * c - d * d, 2 * (b * c - a * d),           2 * (b * d + a * c),
                         2 * (b * c + a * d),           a * a + c * c - b * b - d * d, 2 * (c * d - a * b),
                         2 * (b * d - a * c),           2 * (c * d + a * b),           a * a + d * d - c * c - b * b};
    for (int i = 0; i < 9; ++i) g.direction[i] = R[i];
    if (qfac < 0)
      for (int r = 0; r < 3; ++r) g.direction[r * 3 + 2] = -g.direction[r * 3 + 2];
    g.origin = {qoff[0], qoff[1], qoff[2]};
    g.frame = WorldFrame::Ras;
  }
}

}  // namespace

std::unique_ptr<VolumeSource> open_nifti(const std::string& path) {
  const bool gz = ends_with(path, ".gz");
  std::string data_path = path;
  if (ends_with(path, ".hdr") || ends_with(path, ".hdr.gz")) {
    data_path = path.substr(0, path.size() - (gz ? 6 : 3)) + (gz ? "img.gz" : "img");
  }
  unsigned char h[540] = {};
  const std::uint64_t size = gz ? 540 : std::min<std::uint64_t>(540, file_size(path));
  if (size < 348) parse_fail(path, "too short for a NIfTI header (" + std::to_string(size) + " bytes)");
  {
    std::unique_ptr<io::ByteStream> s;
    if (gz)
      s = std::make_unique<io::InflateStream>(path, 0);
    else
      s = std::make_unique<io::PlainStream>(path, 0);
    try {
      s->read_at(0, h, 348);
    } catch (const Error&) {
      parse_fail(path, "too short for a NIfTI header");
    }
    if (get<std::int32_t>(h, 0, false) == 540 || get<std::int32_t>(h, 0, true) == 540) {
      try {
        s->read_at(0, h, 540);
      } catch (const Error&) {
        parse_fail(path, "too short for a NIfTI-2 header");
      }
    }
  }
  const std::int32_t s0 = get<std::int32_t>(h, 0, false);
  bool swap = false;
  int version = 0;
  if (s0 == 348)
    version = 1;
  else if (s0 == 540)
    version = 2;
  else if (get<std::int32_t>(h, 0, true) == 348)
    version = 1, swap = true;
  else if (get<std::int32_t>(h, 0, true) == 540)
    version = 2, swap = true;
  else
    parse_fail(path, "not a NIfTI file (sizeof_hdr is " + std::to_string(s0) + ", expected 348 or 540)");

  VolumeGeometry g;
  std::int64_t dim[8];
  double pixdim[8], quat[3], qoff[3], srow[12], slope, inter;
  int datatype, qform, sform;
  std::uint64_t vox_offset;
  if (version == 1) {
    if (std::memcmp(h + 344, "n+1", 4) != 0 && std::memcmp(h + 344, "ni1", 4) != 0)
      parse_fail(path, "NIfTI-1 magic is not 'n+1' or 'ni1'");
    for (int i = 0; i < 8; ++i) dim[i] = get<std::int16_t>(h, 40 + 2 * i, swap);
    datatype = get<std::int16_t>(h, 70, swap);
    for (int i = 0; i < 8; ++i) pixdim[i] = get<float>(h, 76 + 4 * i, swap);
    const double vo = get<float>(h, 108, swap);
    if (!(vo >= 0) || vo > 1e12) parse_fail(path, "vox_offset " + std::to_string(vo) + " is not a byte offset");
    vox_offset = std::uint64_t(vo);
    slope = get<float>(h, 112, swap);
    inter = get<float>(h, 116, swap);
    qform = get<std::int16_t>(h, 252, swap);
    sform = get<std::int16_t>(h, 254, swap);
    for (int i = 0; i < 3; ++i) quat[i] = get<float>(h, 256 + 4 * i, swap), qoff[i] = get<float>(h, 268 + 4 * i, swap);
    for (int i = 0; i < 12; ++i) srow[i] = get<float>(h, 280 + 4 * i, swap);
  } else {
    if (std::memcmp(h + 4, "n+2", 4) != 0 && std::memcmp(h + 4, "ni2", 4) != 0)
      parse_fail(path, "NIfTI-2 magic is not 'n+2' or 'ni2'");
    datatype = get<std::int16_t>(h, 12, swap);
    for (int i = 0; i < 8; ++i) dim[i] = get<std::int64_t>(h, 16 + 8 * i, swap);
    for (int i = 0; i < 8; ++i) pixdim[i] = get<double>(h, 104 + 8 * i, swap);
    const std::int64_t vo = get<std::int64_t>(h, 168, swap);
    if (vo < 0) parse_fail(path, "vox_offset " + std::to_string(vo) + " is negative");
    vox_offset = std::uint64_t(vo);
    slope = get<double>(h, 176, swap);
    inter = get<double>(h, 184, swap);
    qform = get<std::int32_t>(h, 344, swap);
    sform = get<std::int32_t>(h, 348, swap);
    for (int i = 0; i < 3; ++i)
      quat[i] = get<double>(h, 352 + 8 * i, swap), qoff[i] = get<double>(h, 376 + 8 * i, swap);
    for (int i = 0; i < 12; ++i) srow[i] = get<double>(h, 400 + 8 * i, swap);
  }
  if (dim[0] < 1 || dim[0] > 7) parse_fail(path, "dim[0] = " + std::to_string(dim[0]) + " is not 1..7");
  for (int i = 4; i <= dim[0]; ++i)
    if (dim[i] != 1)
      parse_fail(path, "unsupported dimension count: " + std::to_string(dim[0]) + " dimensions with dim[" +
                           std::to_string(i) + "] = " + std::to_string(dim[i]) + " (a 3-D volume is needed)");
  for (int a = 0; a < 3; ++a) g.dims[a] = a < dim[0] ? dim[a + 1] : 1;
  for (int a = 0; a < 3; ++a) g.spacing[a] = a < dim[0] && pixdim[a + 1] != 0 ? std::fabs(pixdim[a + 1]) : 1.0;
  nifti_orientation(g, qform, sform, quat, qoff, pixdim[0] < 0 ? -1.0 : 1.0, srow);
  const VoxelType type = nifti_type(path, datatype);
  if (data_path == path && vox_offset < std::uint64_t(version == 1 ? 348 : 540))
    parse_fail(path, "vox_offset " + std::to_string(vox_offset) + " lies inside the header");
  const bool data_gz = ends_with(data_path, ".gz");
  const std::uint64_t at = data_path == path ? vox_offset : 0;
  const bool big = swap != (std::endian::native == std::endian::big);
  return data_gz ? open_data(path, data_path, 0, Encoding::Deflate, g, type, big, at, slope, inter)
                 : open_data(path, data_path, at, Encoding::Raw, g, type, big, 0, slope, inter);
}

}  // namespace parasurf::io
