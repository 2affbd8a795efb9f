// Volumes: scalar samples on a regular 3-D grid, read slab by slab from files, memory or built-in generators.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace parasurf {

enum class VoxelType { UInt8, Int8, UInt16, Int16, UInt32, Int32, Float32, Float64 };

std::size_t voxel_bytes(VoxelType type);
const char* voxel_type_name(VoxelType type);  // "uint8", "int16", "float32", ...
VoxelType parse_voxel_type(const std::string& name);  // the names above; throws Error(InvalidArgument)

// Index-to-world map: world = origin + direction · diag(spacing) · (i, j, k). x (i) varies fastest in memory.
// The anatomical frame of a file's world coordinates: NIfTI's is RAS (x to the right, y anterior, z superior),
// DICOM's, ITK's and MetaImage's LPS (x to the left, y posterior); NRRD says which in its "space" field. Volumes
// without one (VTK, raw, NIfTI without a transform) are Unspecified.
enum class WorldFrame { Unspecified, Ras, Lps };

struct VolumeGeometry {
  std::array<std::int64_t, 3> dims{0, 0, 0};
  std::array<double, 3> spacing{1, 1, 1};
  std::array<double, 3> origin{0, 0, 0};
  std::array<double, 9> direction{1, 0, 0, 0, 1, 0, 0, 0, 1};  // row-major; column c is the world axis of index c
  WorldFrame frame = WorldFrame::Unspecified;  // what origin and direction are expressed in

  std::int64_t voxel_count() const { return dims[0] * dims[1] * dims[2]; }
  std::int64_t slice_voxels() const { return dims[0] * dims[1]; }
  // Row-major 3x3 J = direction · diag(spacing): world offsets per index step.
  std::array<double, 9> jacobian() const;
  std::array<double, 3> world(double i, double j, double k) const;
};

// Where samples come from. The extractor pulls point slices [z0, z1) in increasing z, so a source never needs to
// hold the whole volume: files are read (and decompressed) as they go, generators compute on the fly.
class VolumeSource {
 public:
  virtual ~VolumeSource() = default;
  virtual const VolumeGeometry& geometry() const = 0;
  virtual VoxelType type() const = 0;
  virtual std::string name() const = 0;  // the file path or the field, for messages
  // Copies slices [z0, z1) (slice_voxels() · (z1 − z0) samples of type()) into out, in the machine's byte order.
  // Throws Error(Io / Parse) when the data is short or corrupt.
  virtual void read_slices(std::int64_t z0, std::int64_t z1, void* out) = 0;
  // The whole volume when it lies in memory (no copy needed), else nullptr.
  virtual const void* resident_data() const { return nullptr; }
  // Asks a source read from a file to keep its samples (as type() gives them) in memory from now on when they take
  // at most max_bytes, so that a second pass over the volume (the data range, then the extraction) does not read and
  // decompress the file again. True when resident_data() now has them.
  virtual bool keep_resident(std::uint64_t max_bytes) {
    (void)max_bytes;
    return resident_data() != nullptr;
  }
  // Fills a float slice for generators; other sources return false.
  virtual bool is_generator() const { return false; }
  // A built-in field's index (engines that can compute its samples where they run do so), or -1.
  virtual int builtin_field() const { return -1; }
};

// Samples that already lie in memory (not owned unless given by vector).
class MemoryVolume final : public VolumeSource {
 public:
  MemoryVolume(VolumeGeometry geometry, VoxelType type, const void* data, std::string name = "array");
  MemoryVolume(VolumeGeometry geometry, std::vector<float> values, std::string name = "array");
  const VolumeGeometry& geometry() const override { return geometry_; }
  VoxelType type() const override { return type_; }
  std::string name() const override { return name_; }
  void read_slices(std::int64_t z0, std::int64_t z1, void* out) override;
  const void* resident_data() const override { return data_; }

 private:
  VolumeGeometry geometry_;
  VoxelType type_;
  const void* data_;
  std::vector<float> owned_;
  std::string name_;
};

// How to read a headerless file (`--dims --type --endian --spacing --origin`).
struct RawVolumeOptions {
  std::array<std::int64_t, 3> dims{0, 0, 0};
  VoxelType type = VoxelType::UInt8;
  bool big_endian = false;
  std::array<double, 3> spacing{1, 1, 1};
  std::array<double, 3> origin{0, 0, 0};
  std::int64_t header_bytes = 0;
};

// Opens NIfTI-1/2 (.nii, .nii.gz, .hdr/.img), NRRD (.nrrd, .nhdr; raw, gzip), MetaImage (.mhd, .mha; raw, zlib),
// VTK legacy STRUCTURED_POINTS (.vtk; binary, ASCII), by extension. Only the header is read here.
// Throws Error(Parse) naming the file, the field and what was expected; Error(Io) when unreadable.
std::unique_ptr<VolumeSource> open_volume(const std::string& path);
std::unique_ptr<VolumeSource> open_raw_volume(const std::string& path, const RawVolumeOptions& options);

// Reads every sample into memory (converted to float32) for callers that want an array.
MemoryVolume load_volume_float(VolumeSource& source);
// The same into `out` (geometry().voxel_count() floats, x fastest): float32 sources are read straight into it.
void read_volume_float(VolumeSource& source, float* out);

// Built-in fields of any size, computed on the fly: "sphere", "torus", "gyroid" (on [−1,1]³, surface at 0) and
// "tangle" ((x⁴−5x²+y⁴−5y²+z⁴−5z²+11.8)·0.2+0.5 on [−3,3]³, surface at 0.5). Values are float32.
std::unique_ptr<VolumeSource> synthetic_field(const std::string& name, std::array<std::int64_t, 3> dims);
const std::vector<std::string>& synthetic_field_names();
// The field's natural iso value (0 for sphere/torus/gyroid, 0.5 for tangle).
double synthetic_field_level(const std::string& name);
// The analytic value at a world point, for tests.
double synthetic_field_value(const std::string& name, double x, double y, double z);

}  // namespace parasurf
