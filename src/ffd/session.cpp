// FFD sessions: preprocessing once per mesh and lattice layout, then per-edit updates on the chosen backend.
#include "core/backends.hpp"
#include "core/eigen.hpp"
#include <chrono>
#include <cstdio>
#include <map>

#include "ffd/auto_device.hpp"
#include "ffd/ffd_backend.hpp"
#include "ffd/lattice_view.hpp"
#include "ffd/prepare.hpp"
#include "parasurf/error.hpp"
#include "core/memory.hpp"
#include "io/atomic_file.hpp"
#include "patches/trimmed.hpp"
#include <nlohmann/json.hpp>
#include "parasurf/ffd.hpp"

namespace parasurf {

template <class T>
struct FfdState {
  FfdReport report;
  ffd::Prepared prepared;
  ffd::SessionData<T> data;
  std::unique_ptr<ffd::Backend<T>> backend;  // holds the last update's results
  std::vector<T> control_points;
  std::vector<double> last_control_points;  // for the exact patches, recomputed in double
  bool updated = false;
  // auto: the job it weighed; whether the session moves to the GPU, once its CPU updates have taken move_after
  ffd::AutoJob auto_job;
  bool auto_weighed = false, move_pending = false;
  double move_after_seconds = 0;
  std::int64_t updates = 0;
};

namespace ffd {

template <class T>
std::unique_ptr<Backend<T>> make_backend(Device device, const SessionData<T>& data) {
  if (device != Device::Cuda) return make_cpu_backend(data);
  if constexpr (core::kCudaBuilt)
    return make_cuda_backend(data);
  else
    core::no_cuda_backend("FFD on cuda");
}

}  // namespace ffd

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
template <class T>
std::vector<T> convert(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}
}  // namespace

template <class T>
FfdSession<T>::FfdSession(const PolygonMesh& mesh, const Lattice& lattice, const FfdOptions& options)
    : state_(std::make_unique<FfdState<T>>()) {
  validate_lattice(lattice);
  if (mesh.face_count() == 0) throw Error(ErrorKind::InvalidArgument, "FFD: the mesh has no faces");
  if (options.method != FfdMethod::Point && (options.level < 1 || options.level > 256))
    throw Error(ErrorKind::InvalidArgument, "FFD: level " + std::to_string(options.level) + " is outside 1..256");
  for (double v : mesh.positions)
    if (!std::isfinite(v)) throw Error(ErrorKind::InvalidArgument, "FFD: the mesh has a vertex that is not finite");
  if (options.method != FfdMethod::Point) {
    // The subdivided mesh's size is known before any work: every input triangle becomes at least level² triangles
    // (about half as many vertices), each vertex held with its rest position, deformed position and normal.
    const std::uint64_t input_triangles = std::uint64_t(mesh.face_indices.size()) - 2 * std::uint64_t(mesh.face_count());
    const std::uint64_t least = input_triangles * std::uint64_t(options.level) * std::uint64_t(options.level);
    if (least / 2 >= (std::uint64_t(1) << 32))
      throw Error(ErrorKind::LimitReached, "FFD: subdivisions " + std::to_string(options.level) + " make at least " +
                                               std::to_string(least) + " triangles from " + std::to_string(input_triangles) +
                                               ": beyond the 2^32 vertex indices of a mesh (fewer subdivisions)");
    core::check_host_allocation(least * (12 + (24 + 2 * 3 * sizeof(T)) / 2),
                                "FFD: the mesh with every triangle cut into " + std::to_string(options.level) + "^2 (subdivisions " +
                                    std::to_string(options.level) + ": at least " +
                                    std::to_string(least) + " triangles)");
  }
  if (!options.allow_non_manifold) {
    const MeshTopologyReport topo = mesh_topology(mesh);
    if (topo.non_manifold_edges > 0)
      throw Error(ErrorKind::InvalidArgument,
                  "FFD: the mesh has " + std::to_string(topo.non_manifold_edges) +
                      " non-manifold edges (used by more than two faces or twice in one direction); allow them "
                      "explicitly (--allow-non-manifold) to deform it anyway");
  }
  Device device = options.device;
  if (device == Device::Hybrid) throw Error(ErrorKind::InvalidArgument, "FFD runs on cpu or cuda, not hybrid");
  const bool weigh = device == Device::Auto && core::kCudaBuilt && cuda_available();
  device = weigh ? Device::Cpu : resolve_device(device);  // auto: settled below, once the output's size is known
  FfdReport& report = state_->report;
  report.method = options.method;
  report.input_faces = mesh.face_count();

  const auto t0 = std::chrono::steady_clock::now();
  ffd::Prepared& prep = state_->prepared;
  switch (options.method) {
    case FfdMethod::Point: prep = ffd::prepare_point(mesh, lattice, report); break;
    case FfdMethod::Upsampled: prep = ffd::prepare_upsampled(mesh, lattice, options.level, report); break;
    case FfdMethod::Accurate:
      prep = ffd::prepare_accurate(mesh, lattice, options.level, cpu_thread_count(options.threads), report);
      break;
  }
  if (prep.triangles.empty()) throw Error(ErrorKind::InvalidArgument, "FFD: every face of the mesh is degenerate in the lattice's parameters (no area: "
                                                         "a mesh without area, or a lattice far larger than the mesh)");
  report.output_vertices = std::int64_t(prep.rest_positions.size() / 3);
  report.output_triangles = std::int64_t(prep.triangles.size() / 3);

  ffd::SessionData<T>& d = state_->data;
  d.method = options.method;
  auto arrays = ffd::make_lattice_arrays<T>(lattice, lattice.control_points);
  d.lattice = arrays.view;
  d.knots = std::move(arrays.knots);
  d.lattice.knots = nullptr;
  d.lattice.control_points = nullptr;
  d.control_point_count = lattice.control_point_count();
  d.vertex_count = report.output_vertices;
  d.threads = cpu_thread_count(options.threads);
  if (options.method == FfdMethod::Accurate) {
    d.surfaces = prep.surfaces;
    // The surfaces are sampled in double whatever T.
    auto exact = ffd::make_lattice_arrays<double>(lattice, lattice.control_points);
    d.knots_exact = std::move(exact.knots);
    for (int i = 0; i < 12; ++i) d.to_param_exact[i] = exact.view.to_param[i], d.to_world_exact[i] = exact.view.to_world[i];
    d.records.reserve(prep.records.size());
    for (const auto& r : prep.records) d.records.push_back({T(r.s), T(r.t), r.surface});
    d.record_offsets = prep.record_offsets;
    d.inverse_table = ffd::chebyshev_inverse_table();
    d.sample_count = prep.control_points;
  } else {
    d.rest_positions = convert<T>(prep.rest_positions);
    d.rest_normals = convert<T>(prep.rest_normals);
  }
  if (weigh) {
    ffd::AutoJob& job = state_->auto_job;
    job.method = options.method;
    job.vertices = report.output_vertices;
    job.surfaces = report.surfaces;
    job.doubles = sizeof(T) == 8;
    job.threads = options.threads;
    const ffd::AutoPlan p = ffd::plan(job);
    device = p.device;
    state_->auto_weighed = true;
    state_->move_pending = p.move_after_seconds > 0;
    state_->move_after_seconds = p.move_after_seconds;
    report.device_choice = p.why;
  }
  report.device = device;
  state_->backend = ffd::make_backend<T>(device, d);
  report.preprocess_seconds = seconds_since(t0);
}

template <class T>
FfdSession<T>::~FfdSession() = default;

namespace {
// auto's move of a session from the CPU to the GPU, between updates (each update computes everything from the
// control points, so nothing of the CPU's results is needed). A GPU that cannot take it leaves the session where it is.
template <class T>
void move_to_gpu(FfdState<T>& s) {
  s.move_pending = false;
  s.updated = false;  // the new backend holds no results until the update that follows
  try {
    s.backend = ffd::make_backend<T>(Device::Cuda, s.data);
  } catch (const Error& e) {
    s.report.device_choice += "; stayed on the cpu: " + std::string(e.what());
    return;
  }
  s.report.device = Device::Cuda;
  s.report.device_choice += "; moved to cuda after " + std::to_string(s.updates) + " updates";
}
}  // namespace

template <class T>
void FfdSession<T>::update(std::span<const double> control_points) {
  FfdState<T>& s = *state_;
  if (std::int64_t(control_points.size()) != 3 * s.data.control_point_count)
    throw Error(ErrorKind::InvalidArgument, "FFD update: expected " + std::to_string(3 * s.data.control_point_count) +
                                                " control-point coordinates, got " + std::to_string(control_points.size()));
  for (double v : control_points)
    if (!std::isfinite(v)) throw Error(ErrorKind::InvalidArgument, "FFD update: a control point is not finite");
  if (s.move_pending && s.move_after_seconds <= 0) move_to_gpu(s);
  const auto t0 = std::chrono::steady_clock::now();
  s.control_points.assign(control_points.begin(), control_points.end());
  s.last_control_points.assign(control_points.begin(), control_points.end());
  s.backend->update(s.control_points.data(), s.last_control_points.data());
  s.report.update_seconds = seconds_since(t0);
  s.updated = true;
  ++s.updates;
  // (A session's first update starts the threads and faults the arrays in: not what the next ones cost.)
  if (s.auto_weighed && s.report.device == Device::Cpu && s.updates > 1)
    ffd::learn_cpu_update(s.auto_job, s.report.update_seconds);
  if (s.move_pending) s.move_after_seconds -= s.report.update_seconds;
}

template <class T>
void FfdSession<T>::download(std::vector<T>& positions, std::vector<T>& normals) const {
  const FfdState<T>& s = *state_;
  if (!s.updated) throw Error(ErrorKind::InvalidArgument, "FFD: download before the first update");
  positions.resize(std::size_t(3 * s.data.vertex_count));
  normals.resize(std::size_t(3 * s.data.vertex_count));
  s.backend->download(positions.data(), normals.data());
}

template <class T>
TriangleMesh FfdSession<T>::mesh() const {
  // Fresh arrays, as large as the mesh: faulted in and filled by all threads rather than one.
  TriangleMesh m;
  core::resize_for_overwrite(m.positions, std::size_t(3 * state_->data.vertex_count));
  core::resize_for_overwrite(m.normals, m.positions.size());
  core::resize_for_overwrite(m.triangles, state_->prepared.triangles.size());
  write_mesh(m.positions.data(), m.normals.data(), m.triangles.data(), MemorySpace::Host);
  return m;
}

template <class T>
void FfdSession<T>::write_mesh(float* positions, float* normals, std::uint32_t* triangles, MemorySpace space) const {
  const FfdState<T>& s = *state_;
  if (!s.updated) throw Error(ErrorKind::InvalidArgument, "FFD: write_mesh before the first update");
  const std::vector<std::uint32_t>& tri = s.prepared.triangles;
  if (space == MemorySpace::Cuda) {
    s.backend->write_device(positions, normals, triangles, tri.data(), tri.size());
    return;
  }
  std::vector<T> p, n;
  download(p, n);
#pragma omp parallel for schedule(static) num_threads(s.data.threads) if (p.size() > (std::size_t(1) << 16))
  for (std::int64_t i = 0; i < std::int64_t(p.size()); ++i)
    positions[std::size_t(i)] = float(p[std::size_t(i)]), normals[std::size_t(i)] = float(n[std::size_t(i)]);
  core::parallel_copy(triangles, tri.data(), tri.size() * sizeof(std::uint32_t), s.data.threads);
}

template <class T>
int FfdSession<T>::gpu() const { return state_->backend->gpu(); }

template <class T>
const std::vector<std::uint32_t>& FfdSession<T>::triangles() const { return state_->prepared.triangles; }
template <class T>
const std::vector<double>& FfdSession<T>::rest_positions() const { return state_->prepared.rest_positions; }
template <class T>
const std::vector<double>& FfdSession<T>::rest_face_normals() const { return state_->prepared.rest_normals; }
template <class T>
const FfdReport& FfdSession<T>::report() const { return state_->report; }

template <class T>
void FfdSession<T>::write_bezier_patches(const std::string& path) const {
  const FfdState<T>& st = *state_;
  if (st.report.method != FfdMethod::Accurate)
    throw Error(ErrorKind::InvalidArgument, "exact Bezier patches exist for accurate FFD only");
  if (!st.updated) throw Error(ErrorKind::InvalidArgument, "FFD: write_bezier_patches before the first update");
  // Control points of every surface in double, on the host, from the last edit.
  const ffd::SessionData<T>& d = st.data;
  ffd::LatticeView<double> L = ffd::make_exact_view(d.lattice, d.to_param_exact, d.to_world_exact);
  L.knots = d.knots_exact.data();
  L.control_points = st.last_control_points.data();
  std::vector<double> samples(std::size_t(3 * d.sample_count)), absolute(samples.size());
  for (const auto& rec : d.surfaces) {
    for (int i = 0; i <= rec.degree_s; ++i)
      for (int j = 0; j <= rec.degree_t; ++j)
        ffd::surface_sample(L, rec, i, j, samples.data() + 3 * (rec.control_offset + i * (rec.degree_t + 1) + j));
    ffd::surface_controls(d.inverse_table.data(), rec, samples.data(), absolute.data());
  }
  const auto& surfaces = st.prepared.surfaces;
  auto net = [&](int surface) { return absolute.data() + 3 * surfaces[surface].control_offset; };
  const bool trimmed_json = path.size() > 5 && path.substr(path.size() - 5) == ".json";
  io::AtomicFile file(path);
  if (trimmed_json) {
    // Control net + trimming polygons per surface (docs/formats.md); read_patch_model loads it back.
    std::vector<std::vector<const ffd::Prepared::PiecePolygon*>> by_surface(surfaces.size());
    for (const auto& pp : st.prepared.piece_polygons) by_surface[std::size_t(pp.surface)].push_back(&pp);
    nlohmann::json doc = {{"parasurf_trimmed_bezier", 1}, {"surfaces", nlohmann::json::array()}};
    for (std::size_t k = 0; k < surfaces.size(); ++k) {
      if (by_surface[k].empty()) continue;
      const auto& rec = surfaces[k];
      nlohmann::json points = nlohmann::json::array(), trims = nlohmann::json::array();
      const double* q = net(int(k));
      for (int i = 0; i < (rec.degree_s + 1) * (rec.degree_t + 1); ++i) points.push_back({q[3 * i], q[3 * i + 1], q[3 * i + 2]});
      for (const auto* pp : by_surface[k]) trims.push_back(pp->st);
      doc["surfaces"].push_back({{"degree", {rec.degree_s, rec.degree_t}}, {"total_degree", by_surface[k].front()->total_degree},
                                 {"points", points}, {"trims", trims}});
    }
    file.write(doc.dump() + "\n");
    file.commit();
    return;
  }
  file.write("# parasurf accurate FFD: " + std::to_string(st.prepared.piece_triangles.size()) +
             " triangular Bezier patches (kind 3), the exact deformed surface\n");
  std::string text;
  char buf[96];
  for (const auto& pt : st.prepared.piece_triangles) {
    const auto& rec = surfaces[std::size_t(pt.surface)];
    const int n = pt.total_degree;
    const auto cps = patches::tensor_on_triangle(rec.degree_s, rec.degree_t, net(pt.surface), {pt.st[0][0], pt.st[0][1]},
                                                 {pt.st[1][0], pt.st[1][1]}, {pt.st[2][0], pt.st[2][1]}, n);
    text += "3 " + std::to_string(n) + "\n";
    for (std::size_t r = 0; r < cps.size() / 3; ++r) {
      std::snprintf(buf, sizeof buf, "%.17g %.17g %.17g\n", cps[3 * r], cps[3 * r + 1], cps[3 * r + 2]);
      text += buf;
    }
    if (text.size() > (1u << 20)) file.write(text), text.clear();
  }
  file.write(text);
  file.commit();
}

template class FfdSession<float>;
template class FfdSession<double>;

}  // namespace parasurf
