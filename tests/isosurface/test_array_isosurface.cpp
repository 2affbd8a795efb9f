// marching_cubes_array (scikit-image's conventions on caller arrays) against the slab extractor it runs on and a
// serial reference of its values and mask, on host arrays of any layout and on CUDA arrays.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#ifdef PARASURF_HAVE_CUDA
#include <cuda_runtime.h>

#include "isosurface/engine.hpp"
#endif

#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

// A smooth random field of a few bumps on an (n0, n1, n2) grid, C order; some samples set exactly on the level.
std::vector<float> bumps(std::array<std::int64_t, 3> n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  struct Bump {
    double c[3], r;
  };
  std::vector<Bump> b(5);
  for (auto& x : b) {
    for (int a = 0; a < 3; ++a) x.c[a] = u(rng) * double(n[a] - 1);
    x.r = 2 + 4 * u(rng);
  }
  std::vector<float> v(std::size_t(n[0] * n[1] * n[2]));
  for (std::int64_t i = 0; i < n[0]; ++i)
    for (std::int64_t j = 0; j < n[1]; ++j)
      for (std::int64_t k = 0; k < n[2]; ++k) {
        double s = 0;
        for (const auto& x : b) {
          const double d2 = (i - x.c[0]) * (i - x.c[0]) + (j - x.c[1]) * (j - x.c[1]) + (k - x.c[2]) * (k - x.c[2]);
          s += std::exp(-d2 / (x.r * x.r));
        }
        v[std::size_t((i * n[1] + j) * n[2] + k)] = float(s);
      }
  return v;
}

ArrayView3 host_view(const void* data, std::array<std::int64_t, 3> shape, VoxelType t = VoxelType::Float32) {
  return {data, t, shape, ArrayView3::c_strides(shape, t), MemorySpace::Host, 0};
}

template <class T>
std::vector<T> host_copy(const Buffer& b) {
  std::vector<T> v(b.bytes / sizeof(T));
  if (b.space == MemorySpace::Host) {
    if (!v.empty()) std::memcpy(v.data(), b.data, b.bytes);
  } else {
#ifdef PARASURF_HAVE_CUDA
    cudaMemcpy(v.data(), b.data, b.bytes, cudaMemcpyDeviceToHost);
#endif
  }
  return v;
}

void expect_same(const ArrayMesh& a, const ArrayMesh& b, const std::string& what) {
  ASSERT_EQ(a.vertices, b.vertices) << what;
  ASSERT_EQ(a.triangles, b.triangles) << what;
  EXPECT_EQ(host_copy<float>(a.verts), host_copy<float>(b.verts)) << what;
  EXPECT_EQ(host_copy<float>(a.normals), host_copy<float>(b.normals)) << what;
  EXPECT_EQ(host_copy<std::uint32_t>(a.faces), host_copy<std::uint32_t>(b.faces)) << what;
  EXPECT_EQ(host_copy<std::uint32_t>(a.values), host_copy<std::uint32_t>(b.values)) << what;  // bits: NaN too
}

// The serial reference: each triangle's cell from its centroid, its corners' level-shifted range, the largest per
// vertex; with a mask, the triangles of masked cells and the vertices only they used removed first.
struct Reference {
  std::vector<float> verts, normals, values;
  std::vector<std::uint32_t> faces;
};
Reference reference(const std::vector<float>& vol, std::array<std::int64_t, 3> n, double level, std::array<double, 3> h,
                    const std::vector<char>* mask, TriangleMesh m) {
  auto cell = [&](std::size_t f, std::int64_t* c) {
    for (int a = 0; a < 3; ++a) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += double(m.positions[3 * std::size_t(m.triangles[3 * f + k]) + a]);
      c[a] = std::clamp<std::int64_t>(std::int64_t(std::floor(s / (3 * h[a]))), 0, n[a] - 2);
    }
  };
  auto at = [&](std::int64_t i, std::int64_t j, std::int64_t k) { return std::size_t((i * n[1] + j) * n[2] + k); };
  Reference r;
  std::vector<std::int64_t> remap(std::size_t(m.vertex_count()), -1);
  std::vector<std::uint32_t> kept;
  for (std::size_t f = 0; f < std::size_t(m.triangle_count()); ++f) {
    std::int64_t c[3];
    cell(f, c);
    if (mask && !(*mask)[at(c[0] + 1, c[1] + 1, c[2] + 1)]) continue;
    kept.push_back(std::uint32_t(f));
  }
  for (auto f : kept)
    for (int k = 0; k < 3; ++k) remap[m.triangles[3 * f + k]] = 0;
  std::int64_t next = 0;
  for (std::size_t v = 0; v < remap.size(); ++v)
    if (remap[v] == 0) {
      remap[v] = next++;
      for (int a = 0; a < 3; ++a) r.verts.push_back(m.positions[3 * v + a]), r.normals.push_back(m.normals[3 * v + a]);
    }
  r.values.assign(std::size_t(next), 0.0f);
  for (auto f : kept) {
    std::int64_t c[3];
    cell(f, c);
    float lo = 0, hi = 0;
    for (int d = 0; d < 8; ++d) {
      const float x = vol[at(c[0] + (d >> 2), c[1] + ((d >> 1) & 1), c[2] + (d & 1))] - float(level);
      lo = std::min(lo, x), hi = std::max(hi, x);
    }
    for (int k = 0; k < 3; ++k) {
      const auto v = std::size_t(remap[m.triangles[3 * f + k]]);
      r.faces.push_back(std::uint32_t(v));
      r.values[v] = std::max(r.values[v], hi - lo);
    }
  }
  return r;
}

// The slab extractor on the same samples as a (x, y, z) volume, seen in array index order: columns reversed.
TriangleMesh extractor_mesh(const std::vector<float>& vol, std::array<std::int64_t, 3> n, double level,
                            std::array<double, 3> spacing, GradientDirection dir) {
  VolumeGeometry g;
  g.dims = {n[2], n[1], n[0]};
  g.spacing = {spacing[2], spacing[1], spacing[0]};
  MemoryVolume source(g, VoxelType::Float32, vol.data());
  IsosurfaceOptions o;
  o.levels = {level};
  o.direction = dir;
  o.topology = CaseTopology::Mc33;
  o.keep_degenerate = true;
  o.ties_outside = true;  // the array path's rule (scikit-image's)
  o.device = Device::Cpu;
  TriangleMesh m = extract_isosurface(source, o);
  for (std::size_t v = 0; v < m.positions.size(); v += 3) {
    std::swap(m.positions[v], m.positions[v + 2]);
    std::swap(m.normals[v], m.normals[v + 2]);
    if (dir == GradientDirection::Ascent)
      for (int a = 0; a < 3; ++a) m.normals[v + a] = -m.normals[v + a];
  }
  return m;
}

TEST(ArrayIsosurface, MatchesTheExtractorAndTheReferenceOnEveryBackend) {
  std::mt19937_64 rng(test::run_seed());
  const std::array<std::int64_t, 3> n{23, 31, 19};
  const std::vector<float> vol = bumps(n, rng);
  const std::array<double, 3> spacing{0.5, 1.25, 2.0};
  std::vector<char> mask(vol.size());
  for (auto& x : mask) x = char(rng() % 4 != 0);
  for (auto dir : {GradientDirection::Descent, GradientDirection::Ascent})
    for (bool masked : {false, true}) {
      const double level = 0.4;
      const Reference ref = reference(vol, n, level, spacing, masked ? &mask : nullptr,
                                      extractor_mesh(vol, n, level, spacing, dir));
      const ArrayView3 mv = host_view(mask.data(), n, VoxelType::UInt8);
      for (Device device : test::devices()) {
        ArrayIsosurfaceOptions o;
        o.level = level;
        o.spacing = spacing;
        o.direction = dir;
        o.mask = masked ? &mv : nullptr;
        o.device = device;
        const ArrayMesh m = marching_cubes_array(host_view(vol.data(), n), o);
        const std::string what = std::string(device_name(device)) + (masked ? " masked" : "") +
                                 (dir == GradientDirection::Ascent ? " ascent" : " descent");
        ASSERT_GT(m.triangles, 100) << what;
        EXPECT_EQ(host_copy<float>(m.verts), ref.verts) << what;
        // Normals to rounding: the extractor normalises (x, y, z), the array path the reversed (z, y, x) order.
        const auto nm = host_copy<float>(m.normals);
        ASSERT_EQ(nm.size(), ref.normals.size()) << what;
        for (std::size_t i = 0; i < nm.size(); ++i) ASSERT_NEAR(nm[i], ref.normals[i], 3e-7f) << what << " at " << i;
        EXPECT_EQ(host_copy<std::uint32_t>(m.faces), ref.faces) << what;
        EXPECT_EQ(host_copy<float>(m.values), ref.values) << what;
      }
    }
}

// The engine's per-vertex values (IsosurfaceOptions::vertex_ranges) read the cells around each vertex, one slice
// beyond its own on either side: slabs of a few slices, with samples on the level and NaN, give the values of one
// slab, on every backend.
TEST(ArrayIsosurface, EngineValuesDoNotDependOnSlabs) {
  std::mt19937_64 rng(test::run_seed());
  const std::array<std::int64_t, 3> n{17, 21, 26};
  std::vector<float> vol = bumps(n, rng);
  for (float& x : vol) x = std::round(x * 16.0f) / 16.0f;  // many samples on the level 0.25
  // A NaN between an inside and an outside sample: the crossings to it give vertices whose cells hold it.
  for (std::size_t t = 0, start = std::size_t(rng() % vol.size()); t < vol.size(); ++t) {
    const std::size_t i = (start + t) % vol.size();
    const std::int64_t k = std::int64_t(i) % n[2];
    if (k > 0 && k + 1 < n[2] && vol[i - 1] > 0.25f && vol[i + 1] < 0.25f) {
      vol[i] = NAN;
      break;
    }
  }
  VolumeGeometry g;
  g.dims = {n[2], n[1], n[0]};
  for (Device device : test::devices()) {
    if (device == Device::Hybrid) continue;
    std::vector<float> whole;
    for (std::int64_t slices : {0, 2, 3, 7}) {
      MemoryVolume v(g, VoxelType::Float32, vol.data(), "bumps");
      IsosurfaceOptions o;
      o.levels = {0.25};
      o.device = device;
      o.vertex_ranges = true;
      o.slab_slices = slices;
      const TriangleMesh m = extract_isosurface(v, o);
      ASSERT_EQ(m.vertex_values.size(), std::size_t(m.vertex_count()));
      ASSERT_GT(m.vertex_count(), 100);
      if (slices == 0) {
        whole.assign(m.vertex_values.begin(), m.vertex_values.end());
        EXPECT_TRUE(std::any_of(whole.begin(), whole.end(), [](float x) { return std::isnan(x); }));
        continue;
      }
      ASSERT_EQ(m.vertex_values.size(), whole.size()) << device_name(device) << ", slabs of " << slices;
      EXPECT_EQ(0, std::memcmp(m.vertex_values.data(), whole.data(), whole.size() * 4))
          << device_name(device) << ", slabs of " << slices;
    }
  }
}

// A vertex's value is NaN when any cell around its edge holds a NaN, whichever of the edge's nine columns holds it and
// at which end; the cells away from it keep finite values. Planes across each axis, so that the vertex lies inside
// the grid (every cell around it present) and its edge runs along that axis.
TEST(ArrayIsosurface, EngineValuesAreNaNWhereACellAroundTheEdgeHoldsOne) {
  const std::int64_t n = 6;
  for (int axis = 0; axis < 3; ++axis)
    for (int end = 0; end < 2; ++end)
      for (int corner = 0; corner < 4; ++corner) {
        std::vector<float> vol(std::size_t(n * n * n));
        for (std::int64_t z = 0; z < n; ++z)
          for (std::int64_t y = 0; y < n; ++y)
            for (std::int64_t x = 0; x < n; ++x) {
              const std::int64_t p[3] = {x, y, z};
              vol[std::size_t((z * n + y) * n + x)] = float(p[axis]) - 2.5f;
            }
        // The NaN: in a corner column of the cells around the edge from (2, 2, 2) along `axis`, at its lower or
        // upper end.
        std::int64_t q[3];
        q[axis] = 2 + end;
        q[(axis + 1) % 3] = corner & 1 ? 3 : 1;
        q[(axis + 2) % 3] = corner & 2 ? 3 : 1;
        vol[std::size_t((q[2] * n + q[1]) * n + q[0])] = NAN;
        VolumeGeometry g;
        g.dims = {n, n, n};
        for (Device device : test::devices()) {
          if (device == Device::Hybrid) continue;
          MemoryVolume v(g, VoxelType::Float32, vol.data(), "planes");
          IsosurfaceOptions o;
          o.levels = {0.0};
          o.device = device;
          o.vertex_ranges = true;
          o.keep_degenerate = true;
          const TriangleMesh m = extract_isosurface(v, o);
          const std::string what = std::string(device_name(device)) + " axis " + std::to_string(axis) + " end " +
                                   std::to_string(end) + " corner " + std::to_string(corner);
          ASSERT_EQ(m.vertex_values.size(), std::size_t(m.vertex_count())) << what;
          int checked = 0;
          for (std::int64_t k = 0; k < m.vertex_count(); ++k) {
            float at[3];
            for (int a = 0; a < 3; ++a) at[a] = m.positions[std::size_t(3 * k + a)];
            if (at[axis] != 2.5f) continue;
            const float b = at[(axis + 1) % 3], c = at[(axis + 2) % 3];
            const float value = m.vertex_values[std::size_t(k)];
            if (b == 2.0f && c == 2.0f) {
              EXPECT_TRUE(std::isnan(value)) << what << ": " << value;
              ++checked;
            }
            // Edges whose cells stay clear of the NaN's sample (two or more columns away from it).
            const float qb = float(q[(axis + 1) % 3]), qc = float(q[(axis + 2) % 3]);
            if (std::fabs(b - qb) >= 2.0f || std::fabs(c - qc) >= 2.0f) {
              EXPECT_EQ(value, 1.0f) << what << " at " << b << ", " << c;
              ++checked;
            }
          }
          EXPECT_GT(checked, 10) << what;
        }
      }
}

TEST(ArrayIsosurface, StridedAndSteppedViewsEqualTheirContiguousCopies) {
  std::mt19937_64 rng(test::run_seed() + 1);
  const std::array<std::int64_t, 3> n{26, 21, 30};
  const std::vector<float> vol = bumps(n, rng);
  for (std::int64_t step : {1, 2, 3}) {
    // The array transposed (axes reversed) as a view of the same memory, against a packed copy of that view.
    const std::array<std::int64_t, 3> tn{n[2], n[1], n[0]};
    ArrayView3 t{vol.data(), VoxelType::Float32, tn, {4, 4 * n[2], 4 * n[2] * n[1]}, MemorySpace::Host, 0};
    const ArrayView3 ts = t.stepped(step);
    std::vector<float> packed(std::size_t(ts.shape[0] * ts.shape[1] * ts.shape[2]));
    for (std::int64_t a = 0; a < ts.shape[0]; ++a)
      for (std::int64_t b = 0; b < ts.shape[1]; ++b)
        for (std::int64_t c = 0; c < ts.shape[2]; ++c)
          packed[std::size_t((a * ts.shape[1] + b) * ts.shape[2] + c)] =
              *reinterpret_cast<const float*>(static_cast<const char*>(ts.data) + a * ts.strides[0] + b * ts.strides[1] + c * ts.strides[2]);
    for (Device device : test::devices()) {
      ArrayIsosurfaceOptions o;
      o.level = 0.35;
      o.spacing = {1.0, 0.75, 1.5};
      o.device = device;
      o.step = step;
      const ArrayMesh strided = marching_cubes_array(t, o);
      o.step = 1;
      o.spacing = {1.0 * double(step), 0.75 * double(step), 1.5 * double(step)};
      const ArrayMesh plain = marching_cubes_array(host_view(packed.data(), ts.shape), o);
      expect_same(strided, plain, std::string(device_name(device)) + " step " + std::to_string(step));
    }
  }
}

// Quantised samples (a template image, 250 values) and a level one unit in the last place below one of them (a
// level picked at a fraction of the range): under scikit-image's rule those samples are inside and no tie, so every
// crossing edge has its own vertex, as scikit-image gives. (The engines classify against the level just above the
// asked one, which those samples equal; taken as ties, spm152 at 30 % of its range had 48,669 vertices too many.)
// The same with ties inside and degenerate triangles kept, the level a sample value. Host arrays on every backend,
// and a CUDA array.
TEST(ArrayIsosurface, SamplesBesideAShiftedLevelAreNoTies) {
  std::mt19937_64 rng(test::run_seed() + 5);
  const std::array<std::int64_t, 3> n{std::int64_t(20 + rng() % 20), std::int64_t(18 + rng() % 20),
                                      std::int64_t(16 + rng() % 20)};
  std::vector<float> vol = bumps(n, rng);
  for (float& x : vol) x = std::round(x * 10.0f) * 0.1f;  // a few values, each taken by many samples
  const float hit = std::round(0.4f * 10.0f) * 0.1f;
  const auto hits = std::count(vol.begin(), vol.end(), hit);
  ASSERT_GT(hits, 20) << "samples at the value the level lies beside";
  // Crossing edges of the grid for an inside test.
  auto crossings = [&](auto&& inside) {
    std::int64_t c = 0;
    auto at = [&](std::int64_t i, std::int64_t j, std::int64_t k) { return vol[std::size_t((i * n[1] + j) * n[2] + k)]; };
    for (std::int64_t i = 0; i < n[0]; ++i)
      for (std::int64_t j = 0; j < n[1]; ++j)
        for (std::int64_t k = 0; k < n[2]; ++k) {
          const bool a = inside(at(i, j, k));
          if (i + 1 < n[0]) c += a != inside(at(i + 1, j, k));
          if (j + 1 < n[1]) c += a != inside(at(i, j + 1, k));
          if (k + 1 < n[2]) c += a != inside(at(i, j, k + 1));
        }
    return c;
  };
  const float below = std::nextafter(hit, -1.0f);
  struct Rule {
    const char* name;
    double level;
    bool ties_outside, keep_degenerate;
    std::int64_t edges;
  };
  const Rule rules[] = {
      {"ties outside, level one step below samples", double(below), true, true, crossings([&](float x) { return x > below; })},
      {"ties inside, degenerate triangles kept, level on samples", double(hit), false, true,
       crossings([&](float x) { return x >= hit; })}};
  std::vector<Device> devs = test::devices();
  for (const Rule& r : rules)
    for (const Device d : devs)
      for (const CaseTopology topology : {CaseTopology::Classic, CaseTopology::Mc33}) {
        ArrayIsosurfaceOptions o;
        o.level = r.level;
        o.ties_outside = r.ties_outside;
        o.allow_degenerate = r.keep_degenerate;
        o.topology = topology;
        o.device = d;
        const ArrayMesh m = marching_cubes_array(host_view(vol.data(), n), o);
        const std::string what = std::string(r.name) + " on " + device_name(d) +
                                 (topology == CaseTopology::Mc33 ? ", lewiner" : ", lorensen");
        // Classic cells have a vertex per crossing edge; MC33 adds centre vertices to some.
        if (topology == CaseTopology::Classic) EXPECT_EQ(m.vertices, r.edges) << what;
        else EXPECT_GE(m.vertices, r.edges) << what;
        const std::vector<std::int32_t> faces = host_copy<std::int32_t>(m.faces);
        std::vector<char> used(std::size_t(m.vertices), 0);
        for (const std::int32_t f : faces) used[std::size_t(f)] = 1;
        EXPECT_EQ(std::count(used.begin(), used.end(), 0), 0) << what << ": every vertex in a triangle";
#ifdef PARASURF_HAVE_CUDA
        if (d == Device::Cuda) {  // the same array on the GPU
          const Buffer dv = Buffer::cuda(0, vol.size() * 4);
          cudaMemcpy(dv.data, vol.data(), dv.bytes, cudaMemcpyHostToDevice);
          ArrayView3 on_gpu = host_view(dv.data, n);
          on_gpu.space = MemorySpace::Cuda;
          const ArrayMesh g = marching_cubes_array(on_gpu, o);
          EXPECT_EQ(g.vertices, m.vertices) << what << ", a CUDA array";
          EXPECT_EQ(host_copy<std::int32_t>(g.faces), faces) << what << ", a CUDA array";
        }
#endif
      }
}

TEST(ArrayIsosurface, LevelsAndShapesAreChecked) {
  std::vector<float> v(4 * 4 * 4, 0.0f);
  v[21] = 1.0f;
  ArrayIsosurfaceOptions o;
  o.device = Device::Cpu;
  o.level = 2.0;  // outside [0, 1]
  EXPECT_THROW(marching_cubes_array(host_view(v.data(), {4, 4, 4}), o), Error);
  o.level = 1.0;  // in range: an empty mesh is an answer... or the tie's collapsed cells
  EXPECT_NO_THROW(marching_cubes_array(host_view(v.data(), {4, 4, 4}), o));
  o.level = std::numeric_limits<double>::quiet_NaN();  // the middle of the range
  const ArrayMesh m = marching_cubes_array(host_view(v.data(), {4, 4, 4}), o);
  EXPECT_GT(m.triangles, 0);
  o.step = 3;  // leaves 2 samples per axis: allowed; 4 leaves one
  EXPECT_NO_THROW(marching_cubes_array(host_view(v.data(), {4, 4, 4}), o));
  o.step = 4;
  EXPECT_THROW(marching_cubes_array(host_view(v.data(), {4, 4, 4}), o), Error);
  o.step = 1;
  EXPECT_THROW(marching_cubes_array(host_view(v.data(), {4, 4, 1}), o), Error);
}

// The resident object (samples up once, meshes left on the GPU) counts what a host run makes, level after level
// (a slider going back and forth), and refuses what it cannot hold.
TEST(ResidentIsosurface, CountsWhatTheHostRunMakesAtEveryLevel) {
  std::mt19937_64 rng(test::run_seed() + 3);
  const std::array<std::int64_t, 3> n{37, 29, 41};
  const std::vector<float> vol = bumps(n, rng);
  ArrayView3 strided = host_view(vol.data(), {n[0], n[1], n[2] / 2});
  strided.strides[2] *= 2;
  EXPECT_THROW(ResidentIsosurface{strided}, Error);
  EXPECT_THROW((ResidentIsosurface{host_view(vol.data(), {n[0], n[1], 1})}), Error);
  if (!cuda_available()) {
    try {
      ResidentIsosurface r(host_view(vol.data(), n));
      ADD_FAILURE() << "made without a GPU";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Device) << e.what();
    }
    GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  }
  ResidentIsosurface resident(host_view(vol.data(), n));
  resident.time_stages(true);
  for (double level : {0.3, 0.55, 0.3, 0.8}) {
    ArrayIsosurfaceOptions o;
    o.level = level;
    o.device = Device::Cpu;
    o.values = false;
    const ArrayMesh host = marching_cubes_array(host_view(vol.data(), n), o);
    const ResidentIsosurface::Counts c = resident.extract(level);
    ASSERT_GT(host.triangles, 100) << "level " << level;
    EXPECT_EQ(c.vertices, host.vertices) << "level " << level;
    EXPECT_EQ(c.triangles, host.triangles) << "level " << level;
  }
  const IsosurfaceProfile p = resident.profile();
  EXPECT_GT(p.seconds_classify + p.seconds_scan + p.seconds_generate, 0.0);
}

#ifdef PARASURF_HAVE_CUDA
// A CUDA array: read in place, the mesh made and left on its GPU, equal to the host array's mesh on the GPU.
TEST(ArrayIsosurface, CudaArraysGiveTheHostArraysMeshOnTheDevice) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  std::mt19937_64 rng(test::run_seed() + 2);
  const std::array<std::int64_t, 3> n{40, 33, 29};
  std::vector<float> vol = bumps(n, rng);
  for (std::size_t i = 0; i < vol.size(); i += 97) vol[i] = 0.3f;  // samples on the level: the tie clean-up
  std::vector<char> mask(vol.size());
  for (auto& x : mask) x = char(rng() % 5 != 0);
  const Buffer dv = Buffer::cuda(0, vol.size() * 4), dm = Buffer::cuda(0, mask.size());
  cudaMemcpy(dv.data, vol.data(), dv.bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(dm.data, mask.data(), dm.bytes, cudaMemcpyHostToDevice);
  for (double level : {0.3, 0.45, std::numeric_limits<double>::quiet_NaN()})
    for (std::int64_t step : {1, 2})
      for (bool masked : {false, true}) {
        ArrayView3 d = host_view(dv.data, n);
        d.space = MemorySpace::Cuda;
        ArrayView3 md = host_view(dm.data, n, VoxelType::UInt8);
        md.space = MemorySpace::Cuda;
        const ArrayView3 mh = host_view(mask.data(), n, VoxelType::UInt8);
        ArrayIsosurfaceOptions o;
        o.level = level;
        o.step = step;
        o.spacing = {0.5, 1.0, 1.5};
        o.device = Device::Cuda;
        o.mask = masked ? &md : nullptr;
        const ArrayMesh on_device = marching_cubes_array(d, o);
        EXPECT_EQ(on_device.verts.space, MemorySpace::Cuda);
        o.mask = masked ? &mh : nullptr;
        const ArrayMesh from_host = marching_cubes_array(host_view(vol.data(), n), o);
        expect_same(on_device, from_host, "level " + std::to_string(level) + " step " + std::to_string(step) +
                                              (masked ? " masked" : ""));
      }
}

// Calls on arrays of one shape: from the second on, the engine writes the mesh straight into result arrays sized
// by the last call's mesh, or copies it into fresh ones where it does not fit them. Each mesh equals the host
// array's, whether it is as large as the last one, larger or smaller, with or without values and normals.
TEST(ArrayIsosurface, RepeatedCudaCallsGiveTheHostArraysMesh) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  const std::uint64_t seed = test::run_seed() + 3;
  std::mt19937_64 rng(seed);
  const std::array<std::int64_t, 3> n{37, 31, 43};  // a shape no other test uses
  const std::vector<float> vol = bumps(n, rng);
  const Buffer dv = Buffer::cuda(0, vol.size() * 4);
  cudaMemcpy(dv.data, vol.data(), dv.bytes, cudaMemcpyHostToDevice);
  ArrayView3 d = host_view(dv.data, n);
  d.space = MemorySpace::Cuda;
  std::uint64_t last = 0;
  int smaller = 0, larger = 0;
  // Lower levels of a sum of bumps enclose more of it: the meshes grow and shrink between calls.
  for (double level : {0.5, 0.5, 0.2, 0.2, 0.7, 0.1, 0.6, 0.6}) {
    for (bool values : {true, false}) {
      ArrayIsosurfaceOptions o;
      o.level = level;
      o.values = values;
      o.device = Device::Cuda;
      const ArrayMesh on_device = marching_cubes_array(d, o);
      const ArrayMesh from_host = marching_cubes_array(host_view(vol.data(), n), o);
      iso::set_direct_array_meshes(false);
      const ArrayMesh copied = marching_cubes_array(d, o);  // (leaves the size of this mesh for the next call)
      iso::set_direct_array_meshes(true);
      const std::string what = "seed " + std::to_string(seed) + " level " + std::to_string(level) +
                               (values ? " with values" : "");
      expect_same(on_device, copied, what + ", copied");
      ASSERT_GT(on_device.triangles, 0) << what;
      EXPECT_EQ(on_device.verts.bytes, std::size_t(on_device.vertices) * 12) << what;
      EXPECT_EQ(on_device.faces.bytes, std::size_t(on_device.triangles) * 12) << what;
      expect_same(on_device, from_host, what);
      if (!values) EXPECT_EQ(on_device.values.bytes, 0u) << what;
      smaller += std::uint64_t(on_device.triangles) < last ? 1 : 0;
      larger += std::uint64_t(on_device.triangles) > last ? 1 : 0;
      last = std::uint64_t(on_device.triangles);
    }
  }
  EXPECT_GT(smaller, 0) << "seed " << seed << ": no mesh smaller than the one before it";
  EXPECT_GT(larger, 1) << "seed " << seed << ": no mesh larger than the one before it";
}
#endif

}  // namespace
}  // namespace parasurf
