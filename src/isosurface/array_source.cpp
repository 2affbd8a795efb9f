// Caller arrays as volumes: the stepped, strided view read slice by slice without a copy of the whole array.
#include <algorithm>
#include <cstring>

#include "isosurface/array_mesh.hpp"
#include "isosurface/engine.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

std::array<std::int64_t, 3> ArrayView3::c_strides(std::array<std::int64_t, 3> shape, VoxelType type) {
  const auto e = std::int64_t(voxel_bytes(type));
  return {shape[1] * shape[2] * e, shape[2] * e, e};
}

bool ArrayView3::c_contiguous() const {
  const auto c = c_strides(shape, type);
  for (int a = 0; a < 3; ++a)
    if (shape[a] > 1 && strides[a] != c[a]) return false;
  return true;
}

ArrayView3 ArrayView3::stepped(std::int64_t step) const {
  ArrayView3 v = *this;
  for (int a = 0; a < 3; ++a) {
    v.shape[a] = (shape[a] + step - 1) / step;
    v.strides[a] = strides[a] * step;
  }
  return v;
}

namespace iso {

namespace {

class StridedVolume final : public VolumeSource {
 public:
  StridedVolume(const ArrayView3& v, const VolumeGeometry& g, int threads)
      : view_(v), geometry_(g), threads_(cpu_engine_threads(threads, g.voxel_count())) {}
  const VolumeGeometry& geometry() const override { return geometry_; }
  VoxelType type() const override { return view_.type; }
  std::string name() const override { return "array"; }
  void read_slices(std::int64_t z0, std::int64_t z1, void* out) override {
    const std::int64_t ny = view_.shape[1], nx = view_.shape[2];
    const std::size_t e = voxel_bytes(view_.type);
    const char* base = static_cast<const char*>(view_.data);
    char* to = static_cast<char*>(out);
    const bool rows = view_.strides[2] == std::int64_t(e);
    const std::int64_t count = (z1 - z0) * ny;
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (std::int64_t r = 0; r < count; ++r) {
      const std::int64_t z = z0 + r / ny, y = r % ny;
      const char* from = base + z * view_.strides[0] + y * view_.strides[1];
      char* row = to + std::size_t(r) * std::size_t(nx) * e;
      if (rows) {
        std::memcpy(row, from, std::size_t(nx) * e);
      } else {
        for (std::int64_t x = 0; x < nx; ++x) std::memcpy(row + std::size_t(x) * e, from + x * view_.strides[2], e);
      }
    }
  }

 private:
  ArrayView3 view_;
  VolumeGeometry geometry_;
  int threads_;
};

}  // namespace

std::unique_ptr<VolumeSource> strided_source(const ArrayView3& view, const VolumeGeometry& geometry, int threads) {
  return std::make_unique<StridedVolume>(view, geometry, threads);
}

VolumeGeometry array_order_geometry(const ArrayView3& view, std::array<double, 3> spacing) {
  VolumeGeometry g;
  g.dims = {view.shape[2], view.shape[1], view.shape[0]};
  g.spacing = {spacing[2], spacing[1], spacing[0]};
  g.direction = {0, 0, 1, 0, 1, 0, 1, 0, 0};
  return g;
}

IsosurfaceOptions array_order_options(const ArrayIsosurfaceOptions& o) {
  IsosurfaceOptions io;
  io.direction = o.direction == GradientDirection::Descent ? GradientDirection::Ascent : GradientDirection::Descent;
  io.normals_down = true;
  io.topology = o.topology;
  io.keep_degenerate = o.allow_degenerate;
  io.ties_outside = o.ties_outside;
  return io;
}

}  // namespace iso

}  // namespace parasurf
