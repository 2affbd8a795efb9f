// FFD conformance: identity, accurate FFD against double point FFD of its own subdivided input, exact normals,
// watertightness, direct manipulation, reconstruction of the volume, bad input. Every backend, fresh random input.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <filesystem>
#include <random>

#ifdef PARASURF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "ffd/auto_device.hpp"
#include "ffd/ffd_kernels.hpp"
#include "ffd/lattice_view.hpp"
#include "ffd/prepare.hpp"
#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"
#include "parasurf/patches.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

// A closed UV sphere of planar convex faces: triangles at the poles, isosceles-trapezoid quads between.
PolygonMesh sphere_mesh(int rings, int sectors, double radius = 1.0, std::array<double, 3> c = {0.1, -0.2, 0.3}) {
  PolygonMesh m;
  const double pi = 3.14159265358979323846;
  m.positions.insert(m.positions.end(), {c[0], c[1], c[2] + radius});
  for (int r = 1; r < rings; ++r)
    for (int s = 0; s < sectors; ++s) {
      const double th = pi * r / rings, ph = 2 * pi * s / sectors;
      m.positions.insert(m.positions.end(), {c[0] + radius * std::sin(th) * std::cos(ph), c[1] + radius * std::sin(th) * std::sin(ph),
                                             c[2] + radius * std::cos(th)});
    }
  m.positions.insert(m.positions.end(), {c[0], c[1], c[2] - radius});
  const std::uint32_t south = std::uint32_t(m.vertex_count() - 1);
  auto ring = [&](int r, int s) { return std::uint32_t(1 + (r - 1) * sectors + (s % sectors)); };
  for (int s = 0; s < sectors; ++s) {
    const std::uint32_t t[3] = {0, ring(1, s), ring(1, s + 1)};
    m.add_face(t);
  }
  for (int r = 1; r + 1 < rings; ++r)
    for (int s = 0; s < sectors; ++s) {
      const std::uint32_t q[4] = {ring(r, s), ring(r + 1, s), ring(r + 1, s + 1), ring(r, s + 1)};
      m.add_face(q);
    }
  for (int s = 0; s < sectors; ++s) {
    const std::uint32_t t[3] = {south, ring(rings - 1, s + 1), ring(rings - 1, s)};
    m.add_face(t);
  }
  return m;
}

std::array<double, 3> box_min(const PolygonMesh& m) {
  std::array<double, 3> b{1e300, 1e300, 1e300};
  for (std::int64_t v = 0; v < m.vertex_count(); ++v)
    for (int d = 0; d < 3; ++d) b[d] = std::min(b[d], m.positions[3 * v + d]);
  return b;
}
std::array<double, 3> box_max(const PolygonMesh& m) {
  std::array<double, 3> b{-1e300, -1e300, -1e300};
  for (std::int64_t v = 0; v < m.vertex_count(); ++v)
    for (int d = 0; d < 3; ++d) b[d] = std::max(b[d], m.positions[3 * v + d]);
  return b;
}

// A random lattice over the mesh: random degrees and counts (or the given ones), control points moved at random.
// With `cut`, every axis has at least two knot spans, so the uniform axes put a knot through the mesh's middle.
Lattice random_lattice(const PolygonMesh& mesh, std::mt19937_64& rng, double amplitude, bool random_layout,
                       bool cut = false) {
  LatticeSpec spec;
  if (random_layout) {
    for (int a = 0; a < 3; ++a) {
      spec.degree[a] = 1 + int(rng() % 3);
      spec.count[a] = spec.degree[a] + 1 + int(rng() % 4);
      if (cut && spec.count[a] == spec.degree[a] + 1) ++spec.count[a];
    }
    // One axis with a non-uniform clamped knot vector.
    const int a = int(rng() % 3);
    const int p = spec.degree[a], n = spec.count[a];
    std::vector<double> inner;
    std::uniform_real_distribution<double> u(0.05, 0.95);
    for (int i = 0; i < n - p - 1; ++i) inner.push_back(u(rng));
    std::sort(inner.begin(), inner.end());
    for (int i = 0; i <= p; ++i) spec.knots[a].push_back(0.0);
    for (double k : inner) spec.knots[a].push_back(k);
    for (int i = 0; i <= p; ++i) spec.knots[a].push_back(1.0);
  }
  spec.padding = 0.1;
  Lattice l = make_lattice(spec, box_min(mesh), box_max(mesh));
  std::normal_distribution<double> g(0.0, amplitude);
  for (double& v : l.control_points) v += g(rng);
  return l;
}

std::vector<float> as_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// Independent reference: the Cox-de Boor recursion in long double, value and derivative of N_{i,p}(u).
long double cox_de_boor(const std::vector<double>& k, int i, int p, long double u, int count) {
  if (p == 0) {
    // Half-open spans, except that the domain's last span also owns its right end.
    const bool last = i == count - 1 || k[i + 1] == k[count];
    return (u >= k[i] && u < k[i + 1]) || (last && u == k[i + 1] && k[i] < k[i + 1]) ? 1.0L : 0.0L;
  }
  long double a = 0, b = 0;
  if (k[i + p] != k[i]) a = (u - k[i]) / ((long double)k[i + p] - k[i]) * cox_de_boor(k, i, p - 1, u, count);
  if (k[i + p + 1] != k[i + 1]) b = ((long double)k[i + p + 1] - u) / ((long double)k[i + p + 1] - k[i + 1]) * cox_de_boor(k, i + 1, p - 1, u, count);
  return a + b;
}

TEST(Ffd, VolumeMatchesTheCoxDeBoorReference) {
  std::mt19937_64 rng(test::run_seed() + 8);
  const PolygonMesh mesh = sphere_mesh(4, 6);
  for (int trial = 0; trial < 4; ++trial) {
    const Lattice l = random_lattice(mesh, rng, 0.1, true);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    double worst = 0, worst_jacobian = 0;
    int jacobian_checked = 0;
    for (int k = 0; k < 50; ++k) {
      std::array<double, 3> x{u(rng), u(rng), u(rng)}, got{};
      deform_points(l, x, got);
      long double q[3];
      for (int r = 0; r < 3; ++r)
        q[r] = (long double)l.world_to_parameter[4 * r] * x[0] + (long double)l.world_to_parameter[4 * r + 1] * x[1] +
               (long double)l.world_to_parameter[4 * r + 2] * x[2] + l.world_to_parameter[4 * r + 3];
      bool inside = true;
      for (int a = 0; a < 3; ++a) inside = inside && q[a] >= l.knots[a][l.degree[a]] && q[a] <= l.knots[a][l.count[a]];
      long double want[3] = {x[0], x[1], x[2]};
      if (inside) {
        want[0] = want[1] = want[2] = 0;
        for (int kk = 0; kk < l.count[2]; ++kk)
          for (int j = 0; j < l.count[1]; ++j)
            for (int i = 0; i < l.count[0]; ++i) {
              const long double w = cox_de_boor(l.knots[0], i, l.degree[0], q[0], l.count[0]) *
                                    cox_de_boor(l.knots[1], j, l.degree[1], q[1], l.count[1]) *
                                    cox_de_boor(l.knots[2], kk, l.degree[2], q[2], l.count[2]);
              for (int d = 0; d < 3; ++d) want[d] += w * l.control_points[3 * l.linear_index(i, j, kk) + d];
            }
      }
      for (int d = 0; d < 3; ++d) worst = std::max(worst, double(std::abs(got[d] - want[d])));
      // Jacobian against central differences of the positions, where the stencil stays within one knot span on
      // every axis (across a knot or the lattice's edge the map is only C0 or jumps, and a difference means nothing).
      const double h = 1e-5;
      bool smooth = true;
      for (int a = 0; a < 3; ++a) {
        const long double reach = h * (std::abs(l.world_to_parameter[4 * a]) + std::abs(l.world_to_parameter[4 * a + 1]) +
                                       std::abs(l.world_to_parameter[4 * a + 2]));
        for (double knot : l.knots[a]) smooth = smooth && std::abs(q[a] - knot) > 2 * reach;
      }
      if (!smooth) continue;
      ++jacobian_checked;
      std::array<double, 9> jac{};
      std::array<double, 3> tmp{};
      deform_points(l, x, tmp, jac);
      for (int c = 0; c < 3; ++c) {
        std::array<double, 3> xp = x, xm = x, fp{}, fm{};
        xp[c] += h;
        xm[c] -= h;
        deform_points(l, xp, fp);
        deform_points(l, xm, fm);
        for (int r = 0; r < 3; ++r) worst_jacobian = std::max(worst_jacobian, std::abs((fp[r] - fm[r]) / (2 * h) - jac[3 * r + c]));
      }
    }
    EXPECT_LE(worst, 1e-12) << "trial " << trial;
    EXPECT_LE(worst_jacobian, 1e-5) << "trial " << trial;
    EXPECT_GE(jacobian_checked, 40) << "trial " << trial << ": too few points away from knots to check the Jacobian";
  }
}

TEST(Ffd, IdentityLatticeLeavesEveryVertex) {
  const PolygonMesh mesh = sphere_mesh(7, 11);
  std::mt19937_64 rng(test::run_seed());
  const Lattice lattice = random_lattice(mesh, rng, 0.0, true);
  for (Device device : test::devices())
    for (FfdMethod method : {FfdMethod::Point, FfdMethod::Upsampled, FfdMethod::Accurate}) {
      SCOPED_TRACE(std::string(device_name(device)) + " " + ffd_method_name(method));
      FfdOptions o;
      o.method = method;
      o.level = 3;
      o.device = device;
      FfdSession<double> session(mesh, lattice, o);
      session.update(lattice.control_points);
      std::vector<double> p, n;
      session.download(p, n);
      const auto& rest = session.rest_positions();
      ASSERT_EQ(p.size(), rest.size());
      double worst = 0;
      for (std::size_t i = 0; i < p.size(); ++i) worst = std::max(worst, std::abs(p[i] - rest[i]));
      EXPECT_LE(worst, 1e-12);
    }
}

// Accurate FFD vertex = point FFD (double, CPU) of where that vertex sits on the undeformed input; its normal =
// cof(J) n normalised inside a face.
template <class T>
void check_accurate_against_point(Device device, const PolygonMesh& mesh, const Lattice& lattice, int level, double tol_pos,
                                  double tol_normal) {
  FfdOptions o;
  o.method = FfdMethod::Accurate;
  o.level = level;
  o.device = device;
  FfdSession<T> session(mesh, lattice, o);
  session.update(lattice.control_points);
  std::vector<T> p, n;
  session.download(p, n);
  const auto& rest = session.rest_positions();
  const auto& face_normal = session.rest_face_normals();
  std::vector<double> expect(rest.size()), jac(3 * rest.size());
  deform_points(lattice, rest, expect, jac);
  double worst = 0, worst_normal = 0, scale = 0;
  std::int64_t interior = 0;
  for (std::size_t v = 0; v < rest.size() / 3; ++v) {
    for (int d = 0; d < 3; ++d) {
      worst = std::max(worst, std::abs(double(p[3 * v + d]) - expect[3 * v + d]));
      scale = std::max(scale, std::abs(expect[3 * v + d]));
    }
    const double* fn = face_normal.data() + 3 * v;
    if (fn[0] == 0 && fn[1] == 0 && fn[2] == 0) continue;
    ++interior;
    const double* j = jac.data() + 9 * v;
    const Eigen::Matrix3d J = Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(j);
    const Eigen::Vector3d cof_n = (J.determinant() * J.inverse().transpose()) * Eigen::Vector3d(fn[0], fn[1], fn[2]);
    const Eigen::Vector3d want = cof_n.normalized();
    for (int d = 0; d < 3; ++d) worst_normal = std::max(worst_normal, std::abs(double(n[3 * v + d]) - want[d]));
  }
  EXPECT_GT(interior, 0);
  EXPECT_LE(worst, tol_pos * std::max(1.0, scale)) << "positions, level " << level;
  EXPECT_LE(worst_normal, tol_normal) << "normals, level " << level;
  std::printf("  [%s %s] accurate FFD m=%d: %lld pieces, %lld surfaces (max degree %dx%d), %lld vertices; max |x - point FFD| = %.3g, "
              "max |n - cof(J)n| = %.3g\n",
              device_name(device), sizeof(T) == 8 ? "double" : "float", level, (long long)session.report().pieces,
              (long long)session.report().surfaces, session.report().max_degree_s, session.report().max_degree_t,
              (long long)session.report().output_vertices, worst, worst_normal);
}

TEST(Ffd, AccurateEqualsPointFfdOfTheSubdividedInput) {
  std::mt19937_64 rng(test::run_seed() + 1);
  const PolygonMesh sphere = sphere_mesh(9, 13);
  for (int trial = 0; trial < 3; ++trial) {
    const Lattice lattice = random_lattice(sphere, rng, 0.08, trial > 0);
    const int level = 3 + int(rng() % 5);  // m >= 3: some vertices lie inside a single surface
    for (Device device : test::devices()) {
      SCOPED_TRACE(std::string(device_name(device)) + " trial " + std::to_string(trial));
      check_accurate_against_point<double>(device, sphere, lattice, level, 1e-10, 1e-8);
      // Float normals: P_s x P_t sums float terms of the control net's size; where a surface's tangents are ~30x
      // shorter than its net's spread (seen on pieces of degree 5-6), cancellation leaves up to a few 1e-4 (3.3e-4
      // worst of 1000 seeds, most runs under 5e-6); a normal computed wrongly is off by 1e-2 or more.
      // Float positions: a piece's value sums ~100 float terms of the net's size (a bound of 2e-6 per unit of size was
      // exceeded once, at seed 2655578749486147661: 3.4e-6 for size 1.3); a piece composed wrongly is off by 1e-3+.
      check_accurate_against_point<float>(device, sphere, lattice, level, 6e-6, 1e-3);
    }
  }
}

TEST(Ffd, PointAndUpsampledFollowTheVolume) {
  std::mt19937_64 rng(test::run_seed() + 2);
  const PolygonMesh mesh = sphere_mesh(6, 9);
  const Lattice lattice = random_lattice(mesh, rng, 0.1, true);
  for (Device device : test::devices())
    for (FfdMethod method : {FfdMethod::Point, FfdMethod::Upsampled}) {
      FfdOptions o;
      o.method = method;
      o.level = 4;
      o.device = device;
      FfdSession<double> session(mesh, lattice, o);
      session.update(lattice.control_points);
      std::vector<double> p, n, expect(session.rest_positions().size());
      session.download(p, n);
      deform_points(lattice, session.rest_positions(), expect);
      double worst = 0;
      for (std::size_t i = 0; i < p.size(); ++i) worst = std::max(worst, std::abs(p[i] - expect[i]));
      EXPECT_LE(worst, 1e-12) << device_name(device) << " " << ffd_method_name(method);
      for (std::size_t v = 0; v < n.size() / 3; ++v)
        ASSERT_NEAR(n[3 * v] * n[3 * v] + n[3 * v + 1] * n[3 * v + 1] + n[3 * v + 2] * n[3 * v + 2], 1.0, 1e-9)
            << device_name(device) << " " << ffd_method_name(method) << " vertex " << v << " of " << n.size() / 3
            << " at " << p[3 * v] << " " << p[3 * v + 1] << " " << p[3 * v + 2] << ", rest normal "
            << session.rest_face_normals()[3 * v] << " " << session.rest_face_normals()[3 * v + 1] << " "
            << session.rest_face_normals()[3 * v + 2];
    }
}

void expect_watertight(const PolygonMesh& mesh, const Lattice& lattice, int level, Device device) {
  const auto before = mesh_topology(mesh);
  ASSERT_TRUE(before.closed_manifold());
  FfdOptions o;
  o.level = level;
  o.device = device;
  FfdSession<double> session(mesh, lattice, o);
  session.update(lattice.control_points);
  const TriangleMesh out = session.mesh();
  const auto after = mesh_topology(out);
  EXPECT_EQ(after.boundary_edges, 0) << device_name(device);
  EXPECT_EQ(after.non_manifold_edges, 0) << device_name(device);
  EXPECT_EQ(after.euler_characteristic, before.euler_characteristic);
  // Every vertex is used and no triangle is degenerate (positions distinct).
  std::vector<char> used(std::size_t(out.vertex_count()), 0);
  for (auto v : out.triangles) used[v] = 1;
  EXPECT_EQ(std::count(used.begin(), used.end(), 0), 0);
}

TEST(Ffd, WatertightInWatertightOut) {
  std::mt19937_64 rng(test::run_seed() + 3);
  const PolygonMesh sphere = sphere_mesh(8, 12);
  const Lattice lattice = random_lattice(sphere, rng, 0.1, true);
  for (Device device : test::devices()) expect_watertight(sphere, lattice, 1 + int(rng() % 5), device);
  const std::string spot = test::shared_data("meshes/spot.obj");
  if (spot.empty()) {
    std::printf("[  SKIPPED ] spot.obj not found (shared data absent)\n");
    return;
  }
  const PolygonMesh mesh = read_polygon_mesh(spot);
  const Lattice l = random_lattice(mesh, rng, 0.05, false);
  for (Device device : test::devices()) expect_watertight(mesh, l, 3, device);
}

// The faces are clipped on several threads, each a run of faces: any number of threads gives the one-thread
// preparation, point for point and record for record.
TEST(Ffd, PreparationIsTheSameOnAnyNumberOfThreads) {
  std::mt19937_64 rng(test::run_seed() + 9);
  const PolygonMesh mesh = sphere_mesh(23, 31);
  const Lattice lattice = random_lattice(mesh, rng, 0.1, true, true);
  FfdReport one_report;
  const ffd::Prepared one = ffd::prepare_accurate(mesh, lattice, 3, 1, one_report);
  ASSERT_GT(one_report.pieces, std::int64_t(mesh.face_count())) << "the lattice cuts faces";
  for (int threads : {2, 3, 7}) {
    FfdReport report;
    const ffd::Prepared p = ffd::prepare_accurate(mesh, lattice, 3, threads, report);
    EXPECT_EQ(p.triangles, one.triangles) << threads << " threads";
    EXPECT_EQ(p.rest_positions, one.rest_positions) << threads << " threads";
    EXPECT_EQ(p.record_offsets, one.record_offsets) << threads << " threads";
    ASSERT_EQ(p.records.size(), one.records.size()) << threads << " threads";
    for (std::size_t i = 0; i < p.records.size(); ++i)
      ASSERT_TRUE(p.records[i].surface == one.records[i].surface && p.records[i].s == one.records[i].s &&
                  p.records[i].t == one.records[i].t)
          << threads << " threads, record " << i;
    EXPECT_EQ(report.pieces, one_report.pieces);
  }
}

TEST(Ffd, ReconstructedControlPointsReproduceTheVolume) {
  std::mt19937_64 rng(test::run_seed() + 4);
  const PolygonMesh mesh = sphere_mesh(5, 7);
  const Lattice lattice = random_lattice(mesh, rng, 0.1, true);
  FfdReport report;
  const ffd::Prepared prep = ffd::prepare_accurate(mesh, lattice, 2, 2, report);
  const auto arrays = ffd::make_lattice_arrays<double>(lattice, lattice.control_points);
  const auto table = ffd::chebyshev_inverse_table();
  std::vector<double> samples(3 * prep.control_points), absolute(3 * prep.control_points), controls(3 * prep.control_points);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double worst = 0;
  for (const auto& s : prep.surfaces) {
    for (int i = 0; i <= s.degree_s; ++i)
      for (int j = 0; j <= s.degree_t; ++j)
        ffd::surface_sample(arrays.view, s, i, j, samples.data() + 3 * (s.control_offset + i * (s.degree_t + 1) + j));
    ffd::surface_controls(table.data(), s, samples.data(), absolute.data());
    ffd::encode_relative(absolute.data() + 3 * s.control_offset, (s.degree_s + 1) * (s.degree_t + 1), controls.data() + 3 * s.control_offset);
    for (int k = 0; k < 8; ++k) {
      const double ss = u(rng), tt = u(rng);
      double p[3], n[3], q[3], want[3];
      ffd::surface_point(s, controls.data(), ss, tt, p, n);
      for (int d = 0; d < 3; ++d) q[d] = s.origin[d] + ss * s.axis_s[d] + tt * s.axis_t[d];
      if (s.span[0] < 0) ffd::affine_apply(arrays.view.to_world, q, want);
      else ffd::volume_point(arrays.view, s.span, q, want);
      for (int d = 0; d < 3; ++d) worst = std::max(worst, std::abs(p[d] - want[d]));
    }
  }
  EXPECT_LE(worst, 1e-9);
  std::printf("  %zu surfaces, max |Bezier - volume| at random points = %.3g\n", prep.surfaces.size(), worst);
}

TEST(Ffd, DirectManipulationReachesTargetsWithTheLeastNormChange) {
  std::mt19937_64 rng(test::run_seed() + 5);
  const PolygonMesh mesh = sphere_mesh(5, 7);
  Lattice lattice = random_lattice(mesh, rng, 0.02, true);
  const std::vector<double> before = lattice.control_points;
  std::uniform_real_distribution<double> u(-0.6, 0.6), d(-0.2, 0.2);
  std::vector<PointTarget> targets;
  const int k = 1 + int(rng() % 4);
  for (int i = 0; i < k; ++i) {
    PointTarget t;
    for (int a = 0; a < 3; ++a) t.point[a] = u(rng);
    std::array<double, 3> image{};
    deform_points(lattice, t.point, image);
    for (int a = 0; a < 3; ++a) t.target[a] = image[a] + d(rng);
    targets.push_back(t);
  }
  direct_manipulation(lattice, targets);
  for (const auto& t : targets) {
    std::array<double, 3> image{};
    deform_points(lattice, t.point, image);
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(image[a], t.target[a], 1e-9);
  }
  // Least norm: the change equals the pseudo-inverse solution of the full k x N basis system.
  const std::int64_t n = lattice.control_point_count();
  Eigen::MatrixXd basis = Eigen::MatrixXd::Zero(k, n);
  Lattice probe = lattice;
  for (std::int64_t c = 0; c < n; ++c) {
    std::fill(probe.control_points.begin(), probe.control_points.end(), 0.0);
    probe.control_points[3 * c] = 1.0;  // x of R is the basis function of control point c
    const auto arrays = ffd::make_lattice_arrays<double>(probe, probe.control_points);
    for (int i = 0; i < k; ++i) {
      double q[3], out[3];
      int span[3];
      ffd::affine_apply(arrays.view.to_param, targets[i].point.data(), q);
      for (int a = 0; a < 3; ++a) span[a] = ffd::find_span(arrays.view.knots + arrays.view.knot_offset[a], arrays.view.degree[a], arrays.view.count[a], q[a]);
      ffd::volume_point(arrays.view, span, q, out);
      basis(i, c) = out[0];
    }
  }
  Eigen::MatrixXd rhs(k, 3);
  Lattice original = lattice;
  original.control_points = before;
  for (int i = 0; i < k; ++i) {
    std::array<double, 3> image{};
    deform_points(original, targets[i].point, image);
    for (int a = 0; a < 3; ++a) rhs(i, a) = targets[i].target[a] - image[a];
  }
  const Eigen::MatrixXd least = basis.completeOrthogonalDecomposition().solve(rhs);
  double worst = 0;
  for (std::int64_t c = 0; c < n; ++c)
    for (int a = 0; a < 3; ++a) worst = std::max(worst, std::abs(lattice.control_points[3 * c + a] - before[3 * c + a] - least(c, a)));
  EXPECT_LE(worst, 1e-9);
}

TEST(Ffd, EditsFileMovesAndTargets) {
  const PolygonMesh mesh = sphere_mesh(5, 7);
  LatticeSpec spec;
  spec.count = {4, 5, 6};
  Lattice l = make_lattice(spec, box_min(mesh), box_max(mesh));
  const auto rest = l.control_points;
  const LatticeEdits e = parse_lattice_edits(
      R"({"moves": [{"index": [1,2,3], "displacement": [0.5, 0, 0]}, {"index": [0,0,0], "position": [9, 8, 7]}],
          "targets": [{"point": [0.1, 0.1, 0.1], "target": [0.2, 0.1, 0.1]}]})",
      "e.json");
  ASSERT_EQ(e.moves.size(), 2u);
  EXPECT_LE(apply_lattice_edits(l, e), 1e-9);
  EXPECT_EQ(l.control_points[0], 9.0);
  EXPECT_NE(l.control_points[3 * l.linear_index(1, 2, 3)], rest[3 * l.linear_index(1, 2, 3)]);
  LatticeEdits bad;
  bad.moves.push_back({{4, 0, 0}, {0, 0, 0}, false});
  EXPECT_THROW(apply_lattice_edits(l, bad), Error);
  for (const char* text : {"[1]", "{\"moves\": [{\"index\": [1,2]}]}", "{\"moves\": [{\"index\": [1,2,3]}]}",
                           "{\"moves\": [{\"index\": [1,2,3], \"position\": [1, 2, \"x\"]}]}", "{\"other\": 1}", "{",
                           "{\"targets\": [{\"point\": [0,0,0]}]}"})
    EXPECT_THROW(parse_lattice_edits(text, "bad.json"), Error) << text;
}

TEST(Ffd, BadLatticesAndMeshesAreRefused) {
  const PolygonMesh mesh = sphere_mesh(4, 6);
  const auto lo = box_min(mesh), hi = box_max(mesh);
  LatticeSpec s;
  s.degree = {4, 3, 3};
  EXPECT_THROW(make_lattice(s, lo, hi), Error);
  s = {};
  s.count = {3, 9, 9};  // cubic needs 4
  EXPECT_THROW(make_lattice(s, lo, hi), Error);
  s = {};
  s.count = {5, 5, 5};
  s.knots[0] = {0, 0, 0, 0, 0.6, 0.4, 1, 1, 1, 1};  // decreasing
  s.knots[0].resize(9);
  EXPECT_THROW(make_lattice(s, lo, hi), Error);
  s.knots[0] = {0, 0, 0, 0, 0.6, 0.4, 1, 1, 1};
  EXPECT_THROW(make_lattice(s, lo, hi), Error);
  s = {};
  Lattice l = make_lattice(s, lo, hi);
  FfdOptions o;
  o.level = 0;
  EXPECT_THROW(FfdSession<double>(mesh, l, o), Error);
  // Non-manifold: a third face on an edge of the sphere's first triangle.
  PolygonMesh nm = mesh;
  nm.positions.insert(nm.positions.end(), {5, 5, 5});
  const std::uint32_t extra[3] = {nm.face_indices[0], nm.face_indices[1], std::uint32_t(nm.vertex_count() - 1)};
  nm.add_face(extra);
  o.level = 2;
  EXPECT_THROW(FfdSession<double>(nm, l, o), Error);
  o.allow_non_manifold = true;
  EXPECT_NO_THROW(FfdSession<double>(nm, l, o));
  FfdSession<double> ok(mesh, l, o);
  std::vector<double> cps = l.control_points;
  cps[5] = std::nan("");
  EXPECT_THROW(ok.update(cps), Error);
  cps.pop_back();
  EXPECT_THROW(ok.update(cps), Error);
}

// The exact patches load back through the patch reader, and each equals point FFD of its rest triangle.
TEST(Ffd, ExactPatchesLoadBackAndMatchTheVolume) {
  std::mt19937_64 rng(test::run_seed() + 7);
  const PolygonMesh mesh = sphere_mesh(5, 8);
  const Lattice lattice = random_lattice(mesh, rng, 0.08, true);
  FfdOptions o;
  o.level = 2;
  o.device = Device::Cpu;
  FfdSession<float> session(mesh, lattice, o);  // the patches are exact (double) whatever the session's precision
  session.update(lattice.control_points);
  const std::string stem = (std::filesystem::temp_directory_path() / ("ffd-patches-" + std::to_string(rng()))).string();
  FfdReport report;
  const ffd::Prepared prep = ffd::prepare_accurate(mesh, lattice, 2, 2, report);  // same order as the files
  // The trimmed form (control nets + trimming polygons) and the triangular form load back to the same patches.
  session.write_bezier_patches(stem + ".json");
  const PatchModel trimmed = read_patch_model(stem + ".json");
  session.write_bezier_patches(stem + ".bv");
  const PatchModel model = read_patch_model(stem + ".bv");
  std::filesystem::remove(stem + ".json");
  std::filesystem::remove(stem + ".bv");
  ASSERT_EQ(model.patches.size(), prep.piece_triangles.size());
  ASSERT_GT(trimmed.patches.size(), 0u);
  {
    // Both forms fan the same pieces (perhaps from other corners): the corners of every trimmed patch, which are
    // surface points, are corners of the triangular form's patches.
    auto corners = [](const PatchModel& m) {
      std::vector<std::array<double, 3>> c;
      for (const Patch& p : m.patches) {
        const int n = p.degree_u, last_row0 = n, top = (n + 1) * (n + 2) / 2 - 1;
        for (int idx : {0, last_row0, top}) {
          const double* q = m.points.data() + 4 * (p.offset + idx);
          c.push_back({q[0], q[1], q[2]});
        }
      }
      return c;
    };
    const auto tc = corners(trimmed), bc = corners(model);
    double worst_corner = 0;
    for (const auto& a : tc) {
      double best = 1e300;
      for (const auto& b : bc) best = std::min(best, std::max({std::abs(a[0] - b[0]), std::abs(a[1] - b[1]), std::abs(a[2] - b[2])}));
      worst_corner = std::max(worst_corner, best);
    }
    EXPECT_LE(worst_corner, 1e-12);
    for (const Patch& p : trimmed.patches) {
      ASSERT_EQ(p.kind, PatchKind::Triangle);
      ASSERT_LE(p.degree_u, 9);
    }
  }
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double worst = 0;
  int max_degree = 0;
  for (std::size_t k = 0; k < model.patches.size(); ++k) {
    const Patch& p = model.patches[k];
    ASSERT_EQ(p.kind, PatchKind::Triangle);
    const int n = p.degree_u;
    max_degree = std::max(max_degree, n);
    ASSERT_GE(n, 1);
    ASSERT_LE(n, 9);
    const double s = u(rng), t = (1 - s) * u(rng), w = 1 - s - t;
    // de Casteljau on the kind-3 layout: rows j from the bottom, point i in row j; weight s^i t^j w^l.
    auto idx = [](int i, int j, int d) { return j * (d + 1) - j * (j - 1) / 2 + i; };
    std::vector<std::array<double, 3>> b;
    for (int c = 0; c < (n + 1) * (n + 2) / 2; ++c) {
      const double* q = model.points.data() + 4 * (p.offset + c);
      b.push_back({q[0], q[1], q[2]});
    }
    for (int d = n; d > 0; --d) {
      std::vector<std::array<double, 3>> next;
      for (int j = 0; j < d; ++j)
        for (int i = 0; i + j < d; ++i) {
          std::array<double, 3> v{};
          for (int c = 0; c < 3; ++c) v[c] = s * b[idx(i + 1, j, d)][c] + t * b[idx(i, j + 1, d)][c] + w * b[idx(i, j, d)][c];
          next.push_back(v);
        }
      b = next;
    }
    const auto& pt = prep.piece_triangles[k];
    std::array<double, 3> rest{}, want{};
    for (int c = 0; c < 3; ++c) rest[c] = s * pt.rest[0][c] + t * pt.rest[1][c] + w * pt.rest[2][c];
    deform_points(lattice, rest, want);
    for (int c = 0; c < 3; ++c) worst = std::max(worst, std::abs(b[0][c] - want[c]));
  }
  EXPECT_LE(worst, 1e-9);
  std::printf("  %zu triangular patches (degree up to %d): max |patch - point FFD| = %.3g\n", model.patches.size(), max_degree, worst);
}

TEST(Ffd, NonConvexFacesAreTriangulated) {
  // An L-shaped prism: two non-convex hexagonal caps and six quads, closed. The cut planes of the lattice below
  // pass exactly through the reflex corner and along two of its edges.
  PolygonMesh m;
  const double pts[6][2] = {{0, 0}, {2, 0}, {2, 1}, {1, 1}, {1, 2}, {0, 2}};
  for (double z : {0.0, 1.0})
    for (auto& p : pts) m.positions.insert(m.positions.end(), {p[0], p[1], z});
  const std::uint32_t bottom[6] = {5, 4, 3, 2, 1, 0}, top[6] = {6, 7, 8, 9, 10, 11};
  m.add_face(bottom);
  m.add_face(top);
  for (std::uint32_t i = 0; i < 6; ++i) {
    const std::uint32_t q[4] = {i, (i + 1) % 6, 6 + (i + 1) % 6, 6 + i};
    m.add_face(q);
  }
  std::mt19937_64 rng(test::run_seed() + 6);
  LatticeSpec spec;
  spec.count = {5, 5, 4};
  Lattice l = make_lattice(spec, box_min(m), box_max(m));
  for (double& v : l.control_points) v += std::uniform_real_distribution<double>(-0.05, 0.05)(rng);
  for (Device device : test::devices()) {
    check_accurate_against_point<double>(device, m, l, 3, 1e-10, 1e-8);
    expect_watertight(m, l, 2, device);
  }
}

// write_mesh gives mesh()'s arrays, to the bit: into host memory on every backend, and into GPU memory from a
// session on the GPU, which writes them there itself (float and double sessions, accurate and point FFD). A CPU
// session refuses GPU memory.
TEST(Ffd, MeshWrittenWhereTheCallerSaysIsTheSameMesh) {
  std::mt19937_64 rng(test::run_seed() + 9);
  const PolygonMesh sphere = sphere_mesh(7, 11);
  const Lattice lattice = random_lattice(sphere, rng, 0.08, true);
  auto check = [&](auto tag, Device device, FfdMethod method) {
    using T = decltype(tag);
    SCOPED_TRACE(std::string(device_name(device)) + (sizeof(T) == 4 ? " float " : " double ") + ffd_method_name(method));
    FfdOptions o;
    o.device = device;
    o.method = method;
    o.level = 3;
    FfdSession<T> s(sphere, lattice, o);
    EXPECT_THROW(s.write_mesh(nullptr, nullptr, nullptr, MemorySpace::Host), Error);  // before the first update
    s.update(lattice.control_points);
    const TriangleMesh mesh = s.mesh();
    struct {
      std::vector<float> positions, normals;
      std::vector<std::uint32_t> triangles;
    } m{{mesh.positions.begin(), mesh.positions.end()}, {mesh.normals.begin(), mesh.normals.end()},
        {mesh.triangles.begin(), mesh.triangles.end()}};
    ASSERT_EQ(std::int64_t(m.positions.size()), 3 * s.report().output_vertices);
    ASSERT_EQ(std::int64_t(m.triangles.size()), 3 * s.report().output_triangles);
    std::vector<float> p(m.positions.size()), n(m.normals.size());
    std::vector<std::uint32_t> t(m.triangles.size());
    s.write_mesh(p.data(), n.data(), t.data(), MemorySpace::Host);
    EXPECT_EQ(p, m.positions);
    EXPECT_EQ(n, m.normals);
    EXPECT_EQ(t, m.triangles);
    if (device == Device::Cpu) {
      EXPECT_EQ(s.gpu(), -1);
      EXPECT_THROW(s.write_mesh(p.data(), n.data(), t.data(), MemorySpace::Cuda), Error);
      return;
    }
#ifdef PARASURF_HAVE_CUDA
    ASSERT_GE(s.gpu(), 0);
    const Buffer dp = Buffer::cuda(s.gpu(), p.size() * 4), dn = Buffer::cuda(s.gpu(), n.size() * 4),
                 dt = Buffer::cuda(s.gpu(), t.size() * 4);
    s.write_mesh(static_cast<float*>(dp.data), static_cast<float*>(dn.data), static_cast<std::uint32_t*>(dt.data), MemorySpace::Cuda);
    std::vector<float> hp(p.size()), hn(n.size());
    std::vector<std::uint32_t> ht(t.size());
    ASSERT_EQ(cudaMemcpy(hp.data(), dp.data, dp.bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(hn.data(), dn.data, dn.bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(ht.data(), dt.data, dt.bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(hp, m.positions);
    EXPECT_EQ(hn, m.normals);
    EXPECT_EQ(ht, m.triangles);
#endif
  };
  for (Device device : test::devices())
    for (FfdMethod method : {FfdMethod::Accurate, FfdMethod::Point}) {
      check(float{}, device, method);
      check(double{}, device, method);
    }
}

// auto's rule for a session: the GPU at once where its first update, start included, beats a CPU update; the CPU
// with a move where only the GPU's later updates do (the move comes once the CPU has spent the start); the CPU alone
// where the GPU is not faster per update either.
TEST(FfdAuto, TheGpuAtOnceLaterOrNever) {
  const ffd::AutoPlan at_once = ffd::plan_for(10e-3, 1e-3, 5e-3);
  EXPECT_EQ(at_once.device, Device::Cuda);
  EXPECT_EQ(at_once.move_after_seconds, 0);
  const ffd::AutoPlan later = ffd::plan_for(10e-3, 1e-3, 0.3);
  EXPECT_EQ(later.device, Device::Cpu);
  EXPECT_DOUBLE_EQ(later.move_after_seconds, 0.3);
  EXPECT_NE(later.why.find("moves to cuda"), std::string::npos) << later.why;
  const ffd::AutoPlan never = ffd::plan_for(1e-3, 2e-3, 0);
  EXPECT_EQ(never.device, Device::Cpu);
  EXPECT_EQ(never.move_after_seconds, 0);
  // The estimates themselves: a larger mesh costs more on either side, and the CPU more than the GPU per update.
  ffd::AutoJob small, large;
  small.vertices = 1000, large.vertices = 10000000;
  small.surfaces = 100, large.surfaces = 1000000;
  const core::DeviceEstimate a = ffd::estimate_update(small), b = ffd::estimate_update(large);
  EXPECT_LT(a.cpu_seconds, b.cpu_seconds);
  EXPECT_LT(a.cuda_seconds, b.cuda_seconds);
  EXPECT_GT(b.cpu_seconds, b.cuda_seconds);
}

// On a machine with a GPU: a small session stays on the CPU; a large one runs on the GPU, at once or (where this
// process has not started the GPU) once its CPU updates have cost the start, and gives the CPU's mesh after the move.
TEST(FfdAuto, SmallSessionsStayOnTheCpuLargeOnesMove) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  std::mt19937_64 rng(test::run_seed() + 17);
  const PolygonMesh tiny = sphere_mesh(4, 6);
  const Lattice small_lattice = random_lattice(tiny, rng, 0.05, false);
  FfdOptions o;
  o.method = FfdMethod::Point;
  FfdSession<float> small(tiny, small_lattice, o);
  for (int i = 0; i < 5; ++i) small.update(small_lattice.control_points);
  EXPECT_EQ(small.report().device, Device::Cpu) << small.report().device_choice;

  const PolygonMesh mesh = sphere_mesh(60, 90);
  const Lattice lattice = random_lattice(mesh, rng, 0.05, false);
  o.method = FfdMethod::Accurate;
  o.level = 8;
  FfdSession<float> session(mesh, lattice, o);
  o.device = Device::Cpu;
  FfdSession<float> cpu(mesh, lattice, o);
  cpu.update(lattice.control_points);
  std::vector<float> want, want_n, got, got_n;
  cpu.download(want, want_n);
  std::printf("%s\n", session.report().device_choice.c_str());
  for (int i = 0; i < 400 && session.report().device == Device::Cpu; ++i) session.update(lattice.control_points);
  ASSERT_EQ(session.report().device, Device::Cuda) << session.report().device_choice;
  session.update(lattice.control_points);
  session.download(got, got_n);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, double(std::abs(got[i] - want[i])));
  EXPECT_LT(worst, 1e-4) << session.report().device_choice;
}

}  // namespace
}  // namespace parasurf
