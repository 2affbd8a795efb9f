// CPU backend of the per-edit FFD work: OpenMP loops over the shared kernels.
#include "ffd/ffd_backend.hpp"

#include <cstring>

namespace parasurf::ffd {

namespace {

// Deforms into positions/normals (V x 3 each); controls is scratch of sample_count x 3.
template <class T>
void update_cpu(const SessionData<T>& data, const T* control_points, const double* control_points_exact,
                std::vector<T>& controls, std::vector<T>& positions, std::vector<T>& normals) {
  LatticeView<T> L = data.lattice;
  L.knots = data.knots.data();
  L.control_points = control_points;
  const std::int64_t nv = data.vertex_count;
  positions.resize(std::size_t(3 * nv));
  normals.resize(std::size_t(3 * nv));
  if (data.method != FfdMethod::Accurate) {
#pragma omp parallel for schedule(static) num_threads(data.threads)
    for (std::int64_t v = 0; v < nv; ++v)
      deform_point_with_normal(L, data.rest_positions.data() + 3 * v, data.rest_normals.data() + 3 * v,
                               positions.data() + 3 * v, normals.data() + 3 * v);
    return;
  }
  LatticeView<double> X = make_exact_view(data.lattice, data.to_param_exact, data.to_world_exact);
  X.knots = data.knots_exact.data();
  X.control_points = control_points_exact;
  controls.resize(std::size_t(3 * data.sample_count));
  const std::int64_t ns = std::int64_t(data.surfaces.size());
  // The Chebyshev nodes of every degree once, rather than two cosines for every sample.
  double node[kMaxPieceDegree + 1][kMaxPieceDegree + 1];
  for (int n = 0; n <= kMaxPieceDegree; ++n)
    for (int i = 0; i <= n; ++i) node[n][i] = chebyshev_node<double>(i, n);
  // Samples at the Chebyshev points, then the two small products, surface by surface, in double.
#pragma omp parallel for schedule(dynamic, 256) num_threads(data.threads)
  for (std::int64_t s = 0; s < ns; ++s) {
    SurfaceRecord<double> rec = data.surfaces[s];
    const int count = (rec.degree_s + 1) * (rec.degree_t + 1);
    double f[3 * (kMaxPieceDegree + 1) * (kMaxPieceDegree + 1)], q[3 * (kMaxPieceDegree + 1) * (kMaxPieceDegree + 1)];
    const std::int64_t offset = rec.control_offset;
    rec.control_offset = 0;  // local arrays
    for (int i = 0; i <= rec.degree_s; ++i)
      for (int j = 0; j <= rec.degree_t; ++j)
        surface_sample_at(X, rec, node[rec.degree_s][i], node[rec.degree_t][j], f + 3 * (i * (rec.degree_t + 1) + j));
    surface_controls(data.inverse_table.data(), rec, f, q);
    encode_relative(q, count, controls.data() + 3 * offset);
  }
#pragma omp parallel for schedule(static) num_threads(data.threads)
  for (std::int64_t v = 0; v < nv; ++v)
    accurate_vertex(data.surfaces.data(), controls.data(), data.records.data(), data.record_offsets.data(), v,
                    positions.data() + 3 * v, normals.data() + 3 * v);
}

template <class T>
class CpuBackend final : public Backend<T> {
 public:
  explicit CpuBackend(const SessionData<T>& data) : data_(data) {}
  void update(const T* control_points, const double* control_points_exact) override {
    update_cpu(data_, control_points, control_points_exact, controls_, positions_, normals_);
  }
  void download(T* positions, T* normals) const override {
    if (positions_.empty()) return;
    std::memcpy(positions, positions_.data(), positions_.size() * sizeof(T));
    std::memcpy(normals, normals_.data(), normals_.size() * sizeof(T));
  }

 private:
  const SessionData<T>& data_;
  std::vector<T> controls_, positions_, normals_;
};

}  // namespace

template <class T>
std::unique_ptr<Backend<T>> make_cpu_backend(const SessionData<T>& data) {
  return std::make_unique<CpuBackend<T>>(data);
}
template std::unique_ptr<Backend<float>> make_cpu_backend(const SessionData<float>&);
template std::unique_ptr<Backend<double>> make_cpu_backend(const SessionData<double>&);

}  // namespace parasurf::ffd
