// marching_cubes_array: scikit-image's marching_cubes on a caller's array (Lewiner et al. 2003 conventions), run by
// the slab engines, with its values and mask computed after them where the mesh lies.
#include <algorithm>
#include <cmath>

#include "core/backends.hpp"
#include "isosurface/engine.hpp"
#include "isosurface/array_mesh.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

namespace {

void check(const ArrayView3& volume, const ArrayIsosurfaceOptions& o) {
  for (int a = 0; a < 3; ++a)
    if (volume.shape[a] < 2) throw Error(ErrorKind::InvalidArgument, "Input array must be at least 2x2x2.");
  if (o.step < 1) throw Error(ErrorKind::InvalidArgument, "step_size must be at least one.");
  for (int a = 0; a < 3; ++a)
    if ((volume.shape[a] + o.step - 1) / o.step < 2)
      throw Error(ErrorKind::InvalidArgument, "step_size " + std::to_string(o.step) + " leaves fewer than 2 samples along axis " +
                                                  std::to_string(a) + " (size " + std::to_string(volume.shape[a]) + ")");
  for (double s : o.spacing)
    if (!(std::isfinite(s) && s > 0)) throw Error(ErrorKind::InvalidArgument, "spacing must be finite and positive");
  if (!std::isnan(o.level) && !std::isfinite(o.level))
    throw Error(ErrorKind::InvalidArgument, "the iso level must be a finite number");
  if (o.mask) {
    if (o.mask->shape != volume.shape) throw Error(ErrorKind::InvalidArgument, "volume and mask must have the same shape.");
    if (o.mask->space != volume.space || (volume.space == MemorySpace::Cuda && o.mask->device != volume.device))
      throw Error(ErrorKind::InvalidArgument, "volume and mask must lie in the same memory (host or the same GPU)");
  }
}

}  // namespace

ArrayMesh marching_cubes_array(const ArrayView3& volume, const ArrayIsosurfaceOptions& o) {
  check(volume, o);
  if (volume.space == MemorySpace::Cuda) {
    if constexpr (core::kCudaBuilt) return iso::marching_cubes_cuda_array(volume, o);
    else core::no_cuda_backend("a CUDA array (device " + std::to_string(volume.device) + ")");
  }
  const ArrayView3 v = volume.stepped(o.step);
  std::array<double, 3> cell;
  for (int a = 0; a < 3; ++a) cell[a] = o.spacing[a] * double(o.step);
  const VolumeGeometry g = iso::array_order_geometry(v, cell);
  std::unique_ptr<VolumeSource> source;
  if (v.c_contiguous()) source = std::make_unique<MemoryVolume>(g, v.type, v.data, "array");
  else source = iso::strided_source(v, g, o.threads);

  IsosurfaceOptions io = iso::array_order_options(o);
  if (!std::isnan(o.level)) io.levels = {o.level};
  io.device = o.device;
  io.threads = o.threads;
  // The engine writes the values with the vertices (of the cells around each vertex's edge); where a mask drops
  // triangles, the values of the vertices next to them come from the triangles kept.
  io.vertex_ranges = o.values;
  io.progress = o.progress;
  IsosurfaceReport report;
  TriangleMesh mesh = extract_isosurface(*source, io, &report);
  const double level = report.levels.empty() ? o.level : report.levels[0];

  ArrayMesh out;
  out.device = report.device;
  HostVector<float> values;
  if (mesh.triangle_count() > 0 && o.mask) {
    iso::finish_array_mesh(v, o.mask->stepped(o.step), level, cell, mesh, o.values ? &values : nullptr, o.threads);
  } else if (o.values) {
    values = std::move(mesh.vertex_values);
  }
  if (mesh.triangle_count() == 0) mesh = TriangleMesh{};
  if (mesh.vertex_count() >= (std::int64_t(1) << 31))
    throw Error(ErrorKind::LimitReached, "the mesh has " + std::to_string(mesh.vertex_count()) +
                                             " vertices: int32 face indices hold fewer than 2^31");
  out.vertices = mesh.vertex_count();
  out.triangles = mesh.triangle_count();
  out.verts = Buffer::adopt(std::move(mesh.positions));
  out.normals = Buffer::adopt(std::move(mesh.normals));
  out.faces = Buffer::adopt(std::move(mesh.triangles));
  out.values = Buffer::adopt(std::move(values));
  return out;
}

struct ResidentIsosurface::Impl {
  std::unique_ptr<iso::SlabEngine> engine;
  iso::SlabTask task;
  std::vector<std::uint64_t> ties;
};

ResidentIsosurface::ResidentIsosurface(const ArrayView3& volume, CaseTopology topology, bool normals)
    : impl_(std::make_unique<Impl>()) {
  if (volume.space != MemorySpace::Host || !volume.c_contiguous())
    throw Error(ErrorKind::InvalidArgument, "ResidentIsosurface takes a C-contiguous host array");
  for (int a = 0; a < 3; ++a)
    if (volume.shape[a] < 2) throw Error(ErrorKind::InvalidArgument, "ResidentIsosurface: every dimension must be at least 2");
  if (!cuda_available()) throw Error(ErrorKind::Device, "ResidentIsosurface needs a usable CUDA GPU");
  impl_->engine = iso::make_engine(Device::Cuda, 0, 0);
  iso::SlabTask& t = impl_->task;
  t.type = volume.type;
  t.data = volume.data;
  t.dims = {volume.shape[2], volume.shape[1], volume.shape[0]};
  t.data_z0 = 0;
  t.data_z1 = t.z1 = t.dims[2];
  t.normals = normals;
  t.decider = topology != CaseTopology::Classic;
  t.tunnels = topology == CaseTopology::Mc33;
  for (int i = 0; i < 9; ++i) t.map.jacobian[i] = t.map.normal_matrix[i] = (i % 4 == 0) ? 1.0f : 0.0f;
  impl_->engine->time_stages(false);
}

ResidentIsosurface::~ResidentIsosurface() = default;
ResidentIsosurface::ResidentIsosurface(ResidentIsosurface&&) noexcept = default;
ResidentIsosurface& ResidentIsosurface::operator=(ResidentIsosurface&&) noexcept = default;

ResidentIsosurface::Counts ResidentIsosurface::extract(double level) {
  if (!std::isfinite(level)) throw Error(ErrorKind::InvalidArgument, "the iso level must be a finite number");
  impl_->task.level = level;
  impl_->ties.clear();
  const iso::MeshTail none;  // no host arrays: the mesh stays in the engine's device buffers
  const iso::SlabCounts c = impl_->engine->count(impl_->task);  // the first call uploads; later ones find it there
  impl_->engine->generate(impl_->task, none, impl_->ties);
  return {std::int64_t(c.vertices), std::int64_t(c.triangles)};
}

void ResidentIsosurface::time_stages(bool on) { impl_->engine->time_stages(on); }

IsosurfaceProfile ResidentIsosurface::profile() const {
  const iso::StageSeconds s = impl_->engine->seconds();
  IsosurfaceProfile p;
  p.seconds_classify = s.classify, p.seconds_scan = s.scan, p.seconds_generate = s.generate;
  p.seconds_upload = s.upload, p.seconds_download = s.download, p.seconds_copy = s.upload + s.download;
  return p;
}

}  // namespace parasurf
