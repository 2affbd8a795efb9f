// Built-in scalar fields computed slice by slice, so that volumes of any size never exist whole in memory.
#include <cmath>
#include <numbers>

#include "parasurf/error.hpp"
#include "parasurf/device.hpp"
#include "parasurf/volume.hpp"
#include "isosurface/field_value.hpp"

namespace parasurf {

namespace {

struct FieldSpec {
  const char* name;
  double lo, hi;  // the cube [lo, hi]³ the samples cover
  double level;
};

constexpr FieldSpec kFields[] = {
    {"sphere", -1, 1, 0}, {"torus", -1, 1, 0}, {"gyroid", -1, 1, 0}, {"tangle", -3, 3, 0.5}};

const FieldSpec& spec(const std::string& name) {
  for (const auto& f : kFields)
    if (name == f.name) return f;
  throw Error(ErrorKind::InvalidArgument, "unknown field '" + name + "' (sphere, torus, gyroid, tangle)");
}

class FieldVolume final : public VolumeSource {
 public:
  FieldVolume(int which, const FieldSpec& s, std::array<std::int64_t, 3> dims) : which_(which), name_(s.name) {
    for (int a = 0; a < 3; ++a) {
      if (dims[a] < 2 || dims[a] > (std::int64_t(1) << 21))
        throw Error(ErrorKind::InvalidArgument,
                    std::string("field '") + s.name + "': size " + std::to_string(dims[a]) + " is not 2..2097152");
      geometry_.dims[a] = dims[a];
      geometry_.spacing[a] = (s.hi - s.lo) / double(dims[a] - 1);
      geometry_.origin[a] = s.lo;
    }
  }
  const VolumeGeometry& geometry() const override { return geometry_; }
  VoxelType type() const override { return VoxelType::Float32; }
  std::string name() const override { return "field " + name_; }
  bool is_generator() const override { return true; }
  int builtin_field() const override { return which_; }
  void read_slices(std::int64_t z0, std::int64_t z1, void* out) override {
    const auto& g = geometry_;
    const std::int64_t nx = g.dims[0], ny = g.dims[1];
    float* dst = static_cast<float*>(out);
#pragma omp parallel for collapse(2) schedule(static) num_threads(cpu_thread_count(0))
    for (std::int64_t k = z0; k < z1; ++k)
      for (std::int64_t j = 0; j < ny; ++j) {
        const double z = iso::field_coordinate(g.origin[2], g.spacing[2], k), y = iso::field_coordinate(g.origin[1], g.spacing[1], j);
        float* row = dst + ((k - z0) * ny + j) * nx;
        for (std::int64_t i = 0; i < nx; ++i) row[i] = float(iso::field_value(which_, iso::field_coordinate(g.origin[0], g.spacing[0], i), y, z));
      }
  }

 private:
  int which_;
  std::string name_;
  VolumeGeometry geometry_;
};

}  // namespace

std::unique_ptr<VolumeSource> synthetic_field(const std::string& name, std::array<std::int64_t, 3> dims) {
  const auto& s = spec(name);
  return std::make_unique<FieldVolume>(int(&s - kFields), s, dims);
}

const std::vector<std::string>& synthetic_field_names() {
  static const std::vector<std::string> names = {"sphere", "torus", "gyroid", "tangle"};
  return names;
}

double synthetic_field_level(const std::string& name) { return spec(name).level; }

double synthetic_field_value(const std::string& name, double x, double y, double z) {
  const auto& s = spec(name);
  return iso::field_value(int(&s - kFields), x, y, z);
}

}  // namespace parasurf
