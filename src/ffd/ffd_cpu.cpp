// CPU backend of the per-edit FFD work: OpenMP loops over the shared kernels.
#include "ffd/ffd_backend.hpp"

namespace parasurf::ffd {

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
  // Samples at the Chebyshev points, then the two small products, surface by surface, in double.
#pragma omp parallel for schedule(dynamic, 256) num_threads(data.threads)
  for (std::int64_t s = 0; s < ns; ++s) {
    SurfaceRecord<double> rec = data.surfaces[s];
    const int count = (rec.degree_s + 1) * (rec.degree_t + 1);
    double f[3 * (kMaxPieceDegree + 1) * (kMaxPieceDegree + 1)], q[3 * (kMaxPieceDegree + 1) * (kMaxPieceDegree + 1)];
    const std::int64_t offset = rec.control_offset;
    rec.control_offset = 0;  // local arrays
    for (int i = 0; i <= rec.degree_s; ++i)
      for (int j = 0; j <= rec.degree_t; ++j) surface_sample(X, rec, i, j, f + 3 * (i * (rec.degree_t + 1) + j));
    surface_controls(data.inverse_table.data(), rec, f, q);
    encode_relative(q, count, controls.data() + 3 * offset);
  }
#pragma omp parallel for schedule(static) num_threads(data.threads)
  for (std::int64_t v = 0; v < nv; ++v)
    accurate_vertex(data.surfaces.data(), controls.data(), data.records.data(), data.record_offsets.data(), v,
                    positions.data() + 3 * v, normals.data() + 3 * v);
}

template void update_cpu<float>(const SessionData<float>&, const float*, const double*, std::vector<float>&,
                                 std::vector<float>&, std::vector<float>&);
template void update_cpu<double>(const SessionData<double>&, const double*, const double*, std::vector<double>&,
                                  std::vector<double>&, std::vector<double>&);

}  // namespace parasurf::ffd
