// Device welding and assembly of a tessellation (assemble.hpp). The steps of the host's assemble(), each a kernel
// or a CUB scan, over samples that stay on the device; buffers are sized from the plan before the first kernel, so
// that the host waits once, at the end (twice more where closed components are oriented):
//  1. seam contributions (every side sample of every patch) counted per seam vertex, scanned, placed as (vertex,
//     sample) keys and radix sorted, so that each vertex's first contribution gives the position as on the host;
//  2. greedy normal clusters per seam vertex by the crease angle; extra clusters (creases) numbered by a scan in
//     vertex order, after the vertices, as the host's serial numbering does;
//  3. interior vertices from their patch alone;
//  4. triangles counted per patch (by formula for plain patches), scanned, written per cell (plain patches, and
//     the others' cells through a block scan), with the zero-area flag;
//  5. outward orientation of closed components from per-patch sums that the host adds up per component;
//  6. zero-area triangles compacted away in order, and the mesh copied to host memory.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <initializer_list>

#include "core/cuda_check.hpp"
#include "core/memory.hpp"
#include "patches/assemble.hpp"

namespace parasurf::patches::cuda {

using ull = unsigned long long;

namespace {

// Stream-ordered allocation from the device's memory pool: an assembly takes some thirty buffers, and plain
// cudaMalloc / cudaFree (which synchronises the device) for each cost more than a small model's whole assembly.
struct DeviceBuffer {
  cudaStream_t stream;
  void* ptr = nullptr;
  std::size_t bytes = 0;
  explicit DeviceBuffer(cudaStream_t s) : stream(s) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr) cudaFreeAsync(ptr, stream);
  }
  void ensure(std::size_t n, const char* what) {
    if (n <= bytes) return;
    if (ptr) PS_CUDA(cudaFreeAsync(ptr, stream), what);
    ptr = nullptr;
    bytes = 0;
    PS_CUDA(cudaMallocAsync(&ptr, n, stream), what);
    bytes = n;
  }
  template <class T> T* as() const { return static_cast<T*>(ptr); }
};

// Memory the pool keeps between assemblies (beyond it, freed memory goes back to the device at synchronisation).
constexpr std::uint64_t kPoolKeep = 256ull << 20;

constexpr int kMaxClusters = 8;  // normal clusters per seam vertex; more falls back to the host
constexpr int kThreads = 256;
constexpr int kPatchThreads = 128;
constexpr int kGeneralThreads = 512;  // the other patches: fewer rounds of the block scan on large patches

struct DevicePlan {
  PlanView v;
  const std::uint8_t* plain;
  const std::int32_t* group;
  const std::int32_t* component;
  std::int64_t np;
};

struct Flags {
  int overflow;      // a seam vertex with more normal clusters than kMaxClusters
  int miscounted;    // a patch wrote another number of triangles than it counted
  ull creases;       // seam vertices with more than one normal cluster
};

struct TriangleOut {
  std::uint32_t* vertex;
  std::uint32_t* normal;
  std::int32_t* group;
  std::int32_t* patch;
  std::uint8_t* keep;  // null: keep every triangle
};

// Rounded double arithmetic without contraction: the same expression the host writes, evaluated term by term.
__device__ inline double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline double add(double a, double b) { return __dadd_rn(a, b); }
__device__ inline double sub(double a, double b) { return __dsub_rn(a, b); }
__device__ inline double length3(const double* a) { return sqrt(add(add(mul(a[0], a[0]), mul(a[1], a[1])), mul(a[2], a[2]))); }

unsigned blocks_for(std::int64_t n, int per_block) { return unsigned(std::max<std::int64_t>(1, (n + per_block - 1) / per_block)); }

// ---------------------------------------------------------------- seam vertices
// Every side sample (s, k) of the warp's patch, the lanes taking turns (a side's last sample is the next side's first).
template <class F> __device__ void for_side_samples(const DevicePlan& d, std::int64_t p, int lane, F&& f) {
  const int sides = d.v.triangle(p) ? 3 : 4;
  for (int s = 0; s < sides; ++s) {
    const int factor = side_factor(d.v, p, s);
    for (int k = lane; k < factor; k += 32) f(s, k);
  }
}

__global__ void seam_count_kernel(DevicePlan d, ull* count) {
  const std::int64_t p = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (p >= d.np) return;
  for_side_samples(d, p, int(threadIdx.x & 31), [&](int s, int k) { atomicAdd(&count[side_vertex(d.v, p, s, k)], 1ull); });
}

// Each contribution as the key (vertex, sample), the vertex above sample_bits, in its vertex's range in any order.
__global__ void seam_fill_kernel(DevicePlan d, ull* cursor, ull* key, int sample_bits) {
  const std::int64_t p = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (p >= d.np) return;
  for_side_samples(d, p, int(threadIdx.x & 31), [&](int s, int k) {
    const std::int64_t v = side_vertex(d.v, p, s, k);
    const ull at = atomicAdd(&cursor[v], 1ull);
    key[at] = (ull(v) << sample_bits) | ull(side_sample(d.v, p, s, k));
  });
}

// The sorted contributions: k's sample is its key's low bits.
struct SeamKeys {
  const ull* key;
  ull sample_mask;
  __device__ std::int64_t sample(ull k) const { return std::int64_t(key[k] & sample_mask); }
};

template <class T> __device__ inline void sample_normal(const SampleViews<T>& st, std::int64_t s, double* n) {
  for (int c = 0; c < 3; ++c) n[c] = double(st.nrm[c][s]);
}

// Takes the position from the vertex's first contribution (they are sorted by sample) and assigns the normal
// clusters greedily in that order (a contribution joins the first cluster within the crease angle of its sum).
template <class T>
__global__ void seam_cluster_kernel(SampleViews<T> st, const ull* first, SeamKeys seam, std::uint8_t* cluster_of,
                                    ull* extra, double* positions, double cos_crease, std::int64_t seam_vertices,
                                    int* overflow, ull* crease_vertices) {
  const std::int64_t v = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= seam_vertices) return;
  const ull a = first[v], b = first[v + 1];
  extra[v] = 0;
  if (a == b) {
    for (int c = 0; c < 3; ++c) positions[v * 3 + c] = 0.0;
    return;
  }
  const std::int64_t first_sample = seam.sample(a);
  for (int c = 0; c < 3; ++c) positions[v * 3 + c] = double(st.pos[c][first_sample]);
  double sums[kMaxClusters][3];
  int clusters = 0;
  for (ull k = a; k < b; ++k) {
    double n[3];
    sample_normal(st, seam.sample(k), n);
    const bool zero = n[0] == 0 && n[1] == 0 && n[2] == 0;
    int hit = -1;
    for (int c = 0; c < clusters && hit < 0; ++c) {
      const double len = length3(sums[c]);
      const double dot = add(add(mul(sums[c][0], n[0]), mul(sums[c][1], n[1])), mul(sums[c][2], n[2]));
      if (zero || len == 0 || dot >= mul(cos_crease, len)) hit = c;
    }
    if (hit < 0) {
      if (clusters == kMaxClusters) {
        atomicExch(overflow, 1);
        return;
      }
      hit = clusters++;
      sums[hit][0] = sums[hit][1] = sums[hit][2] = 0.0;
    }
    for (int c = 0; c < 3; ++c) sums[hit][c] = add(sums[hit][c], n[c]);
    cluster_of[k] = std::uint8_t(hit);
  }
  extra[v] = ull(clusters - 1);
  if (clusters > 1) atomicAdd(crease_vertices, 1ull);
}

// Unit normal of each cluster, summed in contribution order as the clustering summed it; cluster 0 is the vertex's
// own slot, cluster c > 0 the slot after the vertices that the scan of extra clusters gave it.
template <class T>
__global__ void seam_normal_kernel(SampleViews<T> st, const ull* first, SeamKeys seam,
                                   const std::uint8_t* cluster_of, const ull* crease_first, double* normals,
                                   std::uint32_t* slot_of_sample, std::int64_t seam_vertices, std::int64_t vertices) {
  const std::int64_t v = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= seam_vertices) return;
  const ull a = first[v], b = first[v + 1];
  if (a == b) {
    for (int c = 0; c < 3; ++c) normals[v * 3 + c] = 0.0;
    return;
  }
  const int clusters = 1 + int(crease_first[v + 1] - crease_first[v]);
  for (int cl = 0; cl < clusters; ++cl) {
    const std::int64_t slot = cl == 0 ? v : vertices + std::int64_t(crease_first[v]) + cl - 1;
    double sum[3] = {0.0, 0.0, 0.0};
    for (ull k = a; k < b; ++k) {
      if (cluster_of[k] != cl) continue;
      const std::int64_t sample = seam.sample(k);
      double n[3];
      sample_normal(st, sample, n);
      for (int c = 0; c < 3; ++c) sum[c] = add(sum[c], n[c]);
      slot_of_sample[sample] = std::uint32_t(slot);
    }
    const double len = length3(sum);
    for (int c = 0; c < 3; ++c) normals[slot * 3 + c] = len > 0 ? sum[c] / len : 0.0;
  }
}

// ---------------------------------------------------------------- interior vertices
template <class T> __device__ inline void put_vertex(const SampleViews<T>& st, const PlanRef& r, double* positions, double* normals) {
  for (int c = 0; c < 3; ++c) {
    positions[r.vertex * 3 + c] = double(st.pos[c][r.sample]);
    normals[r.vertex * 3 + c] = double(st.nrm[c][r.sample]);
  }
}

// The per-patch kernels below take patch blockIdx.x, shared by gridDim.y blocks (patch_grid): a model of a few
// patches would otherwise leave most of the GPU idle while each block walks its patch.
__device__ inline int patch_thread() { return int(blockIdx.y * blockDim.x + threadIdx.x); }
__device__ inline int patch_stride() { return int(gridDim.y * blockDim.x); }

template <class T> __global__ void interior_kernel(DevicePlan d, SampleViews<T> st, double* positions, double* normals) {
  const std::int64_t p = blockIdx.x;
  if (d.v.triangle(p)) {
    const int n = d.v.nu[p];
    for (int b = 1 + patch_thread(); b < n; b += patch_stride())
      for (int a = 1; a + b < n; ++a) put_vertex(st, lattice_ref(d.v, p, a, b), positions, normals);
    return;
  }
  const int nu = d.v.nu[p], nv = d.v.nv[p];
  const int inner = (nu - 1) * (nv - 1);
  for (int k = patch_thread(); k < inner; k += patch_stride())
    put_vertex(st, grid_ref(d.v, p, 1 + k / (nv - 1), 1 + k % (nv - 1)), positions, normals);
}

// ---------------------------------------------------------------- triangles
__global__ void plain_count_kernel(DevicePlan d, ull* count) {
  const std::int64_t p = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p < d.np && d.plain[p]) count[p] = 2ull * ull(d.v.nu[p]) * ull(d.v.nv[p]);
}

// The other patches, one block a patch: the kept triangles of the cells summed over the block, plus a zipped
// patch's border strips or a triangular patch's lattice walked by one thread.
__global__ void __launch_bounds__(kGeneralThreads) general_count_kernel(DevicePlan d, const std::int32_t* list, ull* count) {
  using Reduce = cub::BlockReduce<int, kGeneralThreads>;
  __shared__ typename Reduce::TempStorage reduce_temp;
  const std::int64_t p = list[blockIdx.x];
  int mine = 0;
  auto tally = [&](const PlanRef& a, const PlanRef& b, const PlanRef& c) {
    mine += take_triangle(d.v, p, a, b, c, [](const PlanRef&, const PlanRef&, const PlanRef&) {});
  };
  if (!d.v.triangle(p)) {
    int i0, i1, j0, j1;
    cell_range(d.v, p, i0, i1, j0, j1);
    const int columns = max(j1 - j0, 0), cells = max(i1 - i0, 0) * columns;
    for (int cell = int(threadIdx.x); cell < cells; cell += kGeneralThreads)
      cell_triangles(d.v, p, i0 + cell / columns, j0 + cell % columns, tally);
  }
  if (threadIdx.x == 0) {
    if (d.v.triangle(p)) triangulate_patch(d.v, p, [&](const PlanRef&, const PlanRef&, const PlanRef&) { ++mine; });
    else if (d.v.zipper[p]) zipped_sides(d.v, p, tally);
  }
  const int total = Reduce(reduce_temp).Sum(mine);
  if (threadIdx.x == 0) count[p] = ull(total);
}

__device__ inline std::uint32_t normal_slot(const std::uint32_t* slot_of_sample, const PlanRef& r) {
  const std::uint32_t slot = slot_of_sample[r.sample];
  return slot != 0xffffffffu ? slot : std::uint32_t(r.vertex);
}

__device__ inline bool zero_area(const double* positions, std::uint32_t ia, std::uint32_t ib, std::uint32_t ic) {
  const double* a = positions + std::size_t(ia) * 3;
  const double* b = positions + std::size_t(ib) * 3;
  const double* c = positions + std::size_t(ic) * 3;
  const double e1[3] = {sub(b[0], a[0]), sub(b[1], a[1]), sub(b[2], a[2])};
  const double e2[3] = {sub(c[0], a[0]), sub(c[1], a[1]), sub(c[2], a[2])};
  return sub(mul(e1[1], e2[2]), mul(e1[2], e2[1])) == 0 && sub(mul(e1[2], e2[0]), mul(e1[0], e2[2])) == 0 &&
         sub(mul(e1[0], e2[1]), mul(e1[1], e2[0])) == 0;
}

__device__ inline void write_triangle(const DevicePlan& d, const TriangleOut& out, const std::uint32_t* slot_of_sample,
                                      const double* positions, std::int64_t p, ull t, const PlanRef& a, const PlanRef& b,
                                      const PlanRef& c) {
  const PlanRef* refs[3] = {&a, &b, &c};
  for (int k = 0; k < 3; ++k) {
    out.vertex[t * 3 + k] = std::uint32_t(refs[k]->vertex);
    out.normal[t * 3 + k] = normal_slot(slot_of_sample, *refs[k]);
  }
  out.group[t] = d.group[p];
  out.patch[t] = std::int32_t(p);
  if (out.keep) out.keep[t] = !zero_area(positions, std::uint32_t(a.vertex), std::uint32_t(b.vertex), std::uint32_t(c.vertex));
}

// Plain patches: one thread per cell, its two triangles where the host's row-by-row walk puts them.
__global__ void plain_triangles_kernel(DevicePlan d, const ull* tri_first, const std::uint32_t* slot_of_sample,
                                       const double* positions, TriangleOut out) {
  const std::int64_t p = blockIdx.x;
  if (!d.plain[p]) return;
  const int nu = d.v.nu[p], nv = d.v.nv[p];
  const bool flip = d.v.flipped(p);
  const ull base = tri_first[p];
  for (int cell = patch_thread(); cell < nu * nv; cell += patch_stride()) {
    const int i = cell / nv, j = cell % nv;
    const PlanRef a0 = grid_ref(d.v, p, i, j), a1 = grid_ref(d.v, p, i + 1, j);
    const PlanRef b0 = grid_ref(d.v, p, i, j + 1), b1 = grid_ref(d.v, p, i + 1, j + 1);
    const ull t = base + 2ull * ull(cell);
    if (flip) {
      write_triangle(d, out, slot_of_sample, positions, p, t, a0, b0, a1);
      write_triangle(d, out, slot_of_sample, positions, p, t + 1, a1, b0, b1);
    } else {
      write_triangle(d, out, slot_of_sample, positions, p, t, a0, a1, b0);
      write_triangle(d, out, slot_of_sample, positions, p, t + 1, a1, b1, b0);
    }
  }
}

// The other patches (collapsed or repeated edges, zipped sides, triangles), one block a patch: the cells in chunks
// of the block, each cell's kept triangles (0 to 2) placed by a block scan in the walk's row-by-row order; then
// a zipped patch's border strips, and a triangular patch's lattice, by one thread (short walks).
__global__ void __launch_bounds__(kGeneralThreads)
    general_triangles_kernel(DevicePlan d, const std::int32_t* list, const ull* tri_first, ull room,
                             const std::uint32_t* slot_of_sample, const double* positions, TriangleOut out, int* miscounted) {
  using Scan = cub::BlockScan<int, kGeneralThreads>;
  __shared__ typename Scan::TempStorage scan_temp;
  __shared__ ull cursor;
  const std::int64_t p = list[blockIdx.x];
  const ull end = min(tri_first[p + 1], room);
  if (threadIdx.x == 0) cursor = tri_first[p];
  __syncthreads();
  auto put = [&](ull& t, const PlanRef& a, const PlanRef& b, const PlanRef& c) {
    if (t >= end) {  // more than counted (or than the room): never overwrite the next patch's triangles
      atomicExch(miscounted, 1);
      return;
    }
    write_triangle(d, out, slot_of_sample, positions, p, t++, a, b, c);
  };
  if (!d.v.triangle(p)) {
    int i0, i1, j0, j1;
    cell_range(d.v, p, i0, i1, j0, j1);
    const int columns = max(j1 - j0, 0), cells = max(i1 - i0, 0) * columns;
    for (int chunk = 0; chunk < cells; chunk += kGeneralThreads) {
      const int cell = chunk + int(threadIdx.x);
      int kept = 0;
      auto count = [&](const PlanRef& a, const PlanRef& b, const PlanRef& c) {
        kept += take_triangle(d.v, p, a, b, c, [](const PlanRef&, const PlanRef&, const PlanRef&) {});
      };
      if (cell < cells) cell_triangles(d.v, p, i0 + cell / columns, j0 + cell % columns, count);
      int before = 0, total = 0;
      Scan(scan_temp).ExclusiveSum(kept, before, total);
      ull t = cursor + ull(before);
      if (cell < cells)
        cell_triangles(d.v, p, i0 + cell / columns, j0 + cell % columns, [&](const PlanRef& a, const PlanRef& b, const PlanRef& c) {
          take_triangle(d.v, p, a, b, c, [&](const PlanRef& x, const PlanRef& y, const PlanRef& z) { put(t, x, y, z); });
        });
      __syncthreads();  // every thread has read the cursor and the scan's storage
      if (threadIdx.x == 0) cursor += ull(total);
      __syncthreads();
    }
  }
  if (threadIdx.x != 0) return;
  ull t = cursor;
  auto emit = [&](const PlanRef& a, const PlanRef& b, const PlanRef& c) { put(t, a, b, c); };
  if (d.v.triangle(p)) triangulate_patch(d.v, p, emit);
  else if (d.v.zipper[p]) zipped_sides(d.v, p, [&](const PlanRef& a, const PlanRef& b, const PlanRef& c) { take_triangle(d.v, p, a, b, c, emit); });
  if (t != end) atomicExch(miscounted, 1);
}

// ---------------------------------------------------------------- orientation
// Per patch: the sum of its kept triangles' first corners and their count (the component's centre).
__global__ void patch_centre_kernel(DevicePlan d, const ull* tri_first, TriangleOut out, const double* positions,
                                    double* sums) {
  const std::int64_t p = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= d.np) return;
  double s[4] = {0, 0, 0, 0};
  for (ull t = tri_first[p]; t < tri_first[p + 1]; ++t) {
    if (out.keep && !out.keep[t]) continue;
    const double* a = positions + std::size_t(out.vertex[t * 3]) * 3;
    for (int c = 0; c < 3; ++c) s[c] = add(s[c], a[c]);
    s[3] += 1;
  }
  for (int c = 0; c < 4; ++c) sums[p * 4 + c] = s[c];
}

// Per patch of a closed component: six times the signed volume its kept triangles span with the centre.
__global__ void patch_volume_kernel(DevicePlan d, const ull* tri_first, TriangleOut out, const double* positions,
                                    const double* centre, const std::uint8_t* closed, double* volume) {
  const std::int64_t p = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= d.np) return;
  const std::int32_t comp = d.component[p];
  double sum = 0;
  if (closed[comp])
    for (ull t = tri_first[p]; t < tri_first[p + 1]; ++t) {
      if (out.keep && !out.keep[t]) continue;
      double q[3][3];
      for (int v = 0; v < 3; ++v)
        for (int c = 0; c < 3; ++c) q[v][c] = sub(positions[std::size_t(out.vertex[t * 3 + v]) * 3 + c], centre[comp * 3 + c]);
      sum += q[0][0] * (q[1][1] * q[2][2] - q[1][2] * q[2][1]) - q[0][1] * (q[1][0] * q[2][2] - q[1][2] * q[2][0]) +
             q[0][2] * (q[1][0] * q[2][1] - q[1][1] * q[2][0]);
    }
  volume[p] = sum;
}

__global__ void flip_kernel(DevicePlan d, TriangleOut out, const ull* triangles, const std::uint8_t* flip, std::uint8_t* flip_slot) {
  const ull t = ull(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= *triangles || !flip[d.component[out.patch[t]]]) return;
  const std::uint32_t v = out.vertex[t * 3 + 1], n = out.normal[t * 3 + 1];
  out.vertex[t * 3 + 1] = out.vertex[t * 3 + 2], out.vertex[t * 3 + 2] = v;
  out.normal[t * 3 + 1] = out.normal[t * 3 + 2], out.normal[t * 3 + 2] = n;
  if (out.keep && !out.keep[t]) return;  // a dropped triangle turns no normal
  for (int k = 0; k < 3; ++k) flip_slot[out.normal[t * 3 + k]] = 1;
}

__global__ void negate_kernel(double* normals, const std::uint8_t* flip_slot, std::int64_t slots) {
  const std::int64_t s = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= slots || !flip_slot[s]) return;
  for (int c = 0; c < 3; ++c) normals[s * 3 + c] = -normals[s * 3 + c];
}

// ---------------------------------------------------------------- compaction
// Over the room of the triangles; nothing to do where every triangle made was kept.
__global__ void compact_kernel(TriangleOut in, const ull* kept_before, ull room, const ull* made, const ull* kept,
                               TriangleOut out) {
  const ull t = ull(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= room || *kept == *made || !in.keep[t]) return;
  const ull w = kept_before[t];
  for (int k = 0; k < 3; ++k) {
    out.vertex[w * 3 + k] = in.vertex[t * 3 + k];
    out.normal[w * 3 + k] = in.normal[t * 3 + k];
  }
  out.group[w] = in.group[t];
  out.patch[w] = in.patch[t];
}

struct Read {
  void* to;
  const void* from;
  std::size_t bytes;
};

struct ToCount {
  __host__ __device__ ull operator()(std::uint8_t x) const { return ull(x); }
};

// Exclusive sum of n values into out (n entries), through CUB; temp grows as needed.
template <class In> void exclusive_sum(In in, ull* out, std::int64_t n, DeviceBuffer& temp, cudaStream_t s, const char* what) {
  std::size_t bytes = 0;
  PS_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n, s), what);
  temp.ensure(std::max<std::size_t>(bytes, 16), what);
  PS_CUDA(cub::DeviceScan::ExclusiveSum(temp.ptr, bytes, in, out, n, s), what);
}

template <class X> void upload(DeviceBuffer& buf, const X* src, std::int64_t n, cudaStream_t s, const char* what) {
  const std::size_t bytes = std::size_t(n) * sizeof(X);
  buf.ensure(std::max<std::size_t>(bytes, 16), what);
  if (bytes) PS_CUDA(cudaMemcpyAsync(buf.ptr, src, bytes, cudaMemcpyHostToDevice, s), what);
}


// Patches across blockIdx.x and, when there are fewer patches than a GPU holds blocks at once, several blocks a
// patch across blockIdx.y: up to one per kPatchThreads cells of the largest patch (a block beyond a smaller patch's
// cells does nothing).
dim3 patch_grid(const PlanView& h, std::int64_t np) {
  constexpr std::int64_t kBlocksWanted = 2048;
  if (np <= 0 || np >= kBlocksWanted) return dim3(unsigned(std::max<std::int64_t>(np, 1)), 1);
  std::int64_t cells = 1;
  for (std::int64_t p = 0; p < np; ++p)
    cells = std::max(cells, std::max<std::int64_t>(h.nu[p] + 1, 1) * std::max<std::int64_t>(h.nv[p] + 1, 1));
  const std::int64_t per = std::min<std::int64_t>({(kBlocksWanted + np - 1) / np, (cells + kPatchThreads - 1) / kPatchThreads,
                                                   65535});
  return dim3(unsigned(np), unsigned(std::max<std::int64_t>(per, 1)));
}

struct StreamGuard {
  cudaStream_t s = nullptr;
  ~StreamGuard() {
    if (s) cudaStreamDestroy(s);
  }
};

}  // namespace

template <class T>
AssemblyOutcome assemble(const AssemblyPlan& plan, const SampleViews<T>& st, PatchMesh& mesh) {
  using Clock = std::chrono::steady_clock;
  AssemblyOutcome outcome;
  const auto t0 = Clock::now();
  const std::int64_t np = plan.patches, ne = plan.edges, seam = plan.seam_vertices, nverts = plan.vertices;
  const PlanView& h = plan.view;

  // Sizes from the plan alone: the seam contributions exactly, the triangles bounded by what the walk offers. Every
  // buffer is sized, and the memory checked, before the first kernel; the host then waits for the device only at
  // the end (and for the orientation's sums, on models with closed components).
  std::vector<std::int32_t> general;  // the patches that are not plain
  std::int64_t contributions = 0, tri_bound = 0;
  for (std::int64_t p = 0; p < np; ++p) {
    if (!plan.plain[p]) general.push_back(std::int32_t(p));
    for (int s = 0; s < (h.triangle(p) ? 3 : 4); ++s) contributions += side_factor(h, p, s);
    tri_bound += triangles_offered(h, p);
  }
  // seam contributions are sorted by one key, the vertex above the sample
  const int sample_bits = std::max(1, int(std::bit_width(std::uint64_t(std::max<std::int64_t>(plan.samples, 1)))));
  const int key_bits = sample_bits + int(std::bit_width(std::uint64_t(std::max<std::int64_t>(seam, 1))));
  if (key_bits > 64) {
    outcome.why_not = "seam sort keys of " + std::to_string(key_bits) + " bits (at most 64)";
    return outcome;
  }
  const std::int64_t slot_bound = nverts + contributions;  // normal slots: a crease cluster per contribution at most
  const std::uint64_t tri_bytes = std::uint64_t(tri_bound) * (3 * 4 + 3 * 4 + 4 + 4 + 1) + 8;
  const std::uint64_t need = std::uint64_t(contributions) * (8 + 8 + 1) + std::uint64_t(seam + 1) * 8 * 3 +
                             std::uint64_t(plan.samples) * 4 + std::uint64_t(nverts) * 24 + std::uint64_t(slot_bound) * 25 +
                             tri_bytes + (plan.keep_degenerate ? 0 : std::uint64_t(tri_bound) * (8 + 3 * 4 + 3 * 4 + 4 + 4)) +
                             (64u << 20);
  std::size_t free_bytes = 0, total_bytes = 0;
  PS_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "querying device memory");
  if (need > free_bytes) {
    outcome.why_not = "device assembly needs " + std::to_string(need >> 20) + " MiB, " + std::to_string(free_bytes >> 20) +
                      " MiB are free";
    return outcome;
  }

  StreamGuard guard;
  PS_CUDA(cudaStreamCreateWithFlags(&guard.s, cudaStreamNonBlocking), "creating the assembly stream");
  const cudaStream_t s = guard.s;
  {
    int device = 0;
    cudaMemPool_t pool = nullptr;
    PS_CUDA(cudaGetDevice(&device), "finding the device");
    PS_CUDA(cudaDeviceGetDefaultMemPool(&pool, device), "finding the device's memory pool");
    std::uint64_t keep = kPoolKeep;
    PS_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "configuring the memory pool");
  }

  // the plan on the device, in one upload, staged in one host block, sized first, filled by all threads on large
  // models
  struct Piece {
    const void* src;
    std::size_t bytes, at;
  };
  std::vector<Piece> pieces;
  std::size_t staged_bytes = 0;
  auto stage = [&](const void* src, std::int64_t n, std::size_t size) {
    const std::size_t at = (staged_bytes + 15) & ~std::size_t(15);
    pieces.push_back({src, std::size_t(std::max<std::int64_t>(n, 0)) * size, at});
    staged_bytes = at + pieces.back().bytes;
    return at;
  };
  const std::size_t o_tri = stage(h.is_triangle, np, 1), o_flip = stage(h.is_flipped, np, 1), o_zip = stage(h.zipper, np, 1);
  const std::size_t o_nu = stage(h.nu, np, 4), o_nv = stage(h.nv, np, 4), o_first = stage(h.first, np + 1, 8);
  const std::size_t o_xfirst = stage(h.extra_first, np, 32), o_ibase = stage(h.interior_base, np, 8);
  const std::size_t o_sides = stage(h.sides, np, sizeof(std::array<SideRef, 4>)), o_factor = stage(h.edge_factor, ne, 4);
  const std::size_t o_ebase = stage(h.edge_vertex_base, ne, 8), o_ecorner = stage(h.edge_corners, ne, 8);
  const std::size_t o_ecollapse = stage(h.edge_collapse, ne, 1), o_plain = stage(plan.plain, np, 1);
  const std::size_t o_group = stage(plan.group, np, 4), o_comp = stage(plan.component, np, 4);
  const std::size_t o_general = stage(general.data(), std::int64_t(general.size()), 4);
  std::vector<unsigned char> staged;
  core::resize_for_overwrite(staged, std::max<std::size_t>(staged_bytes, 16));
#pragma omp parallel for schedule(dynamic, 1) if (staged_bytes > (std::size_t(1) << 20))
  for (std::size_t k = 0; k < pieces.size(); ++k)
    if (pieces[k].bytes) std::memcpy(staged.data() + pieces[k].at, pieces[k].src, pieces[k].bytes);
  DeviceBuffer d_plan{s};
  d_plan.ensure(staged.size(), "uploading the plan");
  PS_CUDA(cudaMemcpyAsync(d_plan.ptr, staged.data(), staged.size(), cudaMemcpyHostToDevice, s), "uploading the plan");
  auto lap = [&, last = t0](int phase) mutable {
    const auto now = Clock::now();
    outcome.phase_seconds[phase] = std::chrono::duration<double>(now - last).count();
    last = now;
  };
  lap(0);
  auto at = [&](std::size_t offset) { return static_cast<unsigned char*>(d_plan.ptr) + offset; };
  DevicePlan d{};
  d.v.is_triangle = at(o_tri);
  d.v.is_flipped = at(o_flip);
  d.v.zipper = at(o_zip);
  d.v.nu = reinterpret_cast<const int*>(at(o_nu));
  d.v.nv = reinterpret_cast<const int*>(at(o_nv));
  d.v.first = reinterpret_cast<const std::int64_t*>(at(o_first));
  d.v.extra_first = reinterpret_cast<const std::array<std::int64_t, 4>*>(at(o_xfirst));
  d.v.interior_base = reinterpret_cast<const std::int64_t*>(at(o_ibase));
  d.v.sides = reinterpret_cast<const std::array<SideRef, 4>*>(at(o_sides));
  d.v.edge_factor = reinterpret_cast<const int*>(at(o_factor));
  d.v.edge_vertex_base = reinterpret_cast<const std::int64_t*>(at(o_ebase));
  d.v.edge_corners = reinterpret_cast<const std::array<std::int32_t, 2>*>(at(o_ecorner));
  d.v.edge_collapse = at(o_ecollapse);
  d.plain = at(o_plain);
  d.group = reinterpret_cast<const std::int32_t*>(at(o_group));
  d.component = reinterpret_cast<const std::int32_t*>(at(o_comp));
  d.np = np;
  const auto* d_general = reinterpret_cast<const std::int32_t*>(at(o_general));

  // counts (seam contributions per vertex, triangles per patch) and their offsets, on the device
  DeviceBuffer d_seam_count{s}, d_seam_first{s}, d_tri_count{s}, d_tri_first{s}, d_temp{s}, d_flags{s};
  d_seam_count.ensure(std::size_t(seam + 1) * sizeof(ull), "allocating seam counts");
  PS_CUDA(cudaMemsetAsync(d_seam_count.ptr, 0, std::size_t(seam + 1) * sizeof(ull), s), "clearing seam counts");
  d_tri_count.ensure(std::size_t(np + 1) * sizeof(ull), "allocating triangle counts");
  PS_CUDA(cudaMemsetAsync(d_tri_count.ptr, 0, std::size_t(np + 1) * sizeof(ull), s), "clearing triangle counts");
  d_flags.ensure(sizeof(Flags), "allocating flags");
  PS_CUDA(cudaMemsetAsync(d_flags.ptr, 0, sizeof(Flags), s), "clearing flags");
  int* d_overflow = &d_flags.as<Flags>()->overflow;
  int* d_miscounted = &d_flags.as<Flags>()->miscounted;
  ull* d_creases = &d_flags.as<Flags>()->creases;
  if (np > 0) {
    seam_count_kernel<<<blocks_for(np * 32, kThreads), kThreads, 0, s>>>(d, d_seam_count.as<ull>());
    PS_CUDA_LAUNCH("launching the seam count kernel");
    plain_count_kernel<<<blocks_for(np, kThreads), kThreads, 0, s>>>(d, d_tri_count.as<ull>());
    PS_CUDA_LAUNCH("launching the triangle count kernel");
  }
  if (!general.empty()) {
    general_count_kernel<<<unsigned(general.size()), kGeneralThreads, 0, s>>>(d, d_general, d_tri_count.as<ull>());
    PS_CUDA_LAUNCH("launching the triangle count kernel");
  }
  d_seam_first.ensure(std::size_t(seam + 1) * sizeof(ull), "allocating seam offsets");
  exclusive_sum(d_seam_count.as<ull>(), d_seam_first.as<ull>(), seam + 1, d_temp, s, "scanning seam counts");
  d_tri_first.ensure(std::size_t(np + 1) * sizeof(ull), "allocating triangle offsets");
  exclusive_sum(d_tri_count.as<ull>(), d_tri_first.as<ull>(), np + 1, d_temp, s, "scanning triangle counts");
  const ull* d_nt = d_tri_first.as<ull>() + np;  // the triangles made: known on the device only

  // 1-2. seam vertices: placed, sorted, clustered, numbered
  DeviceBuffer d_cursor{s}, d_seam_placed{s}, d_seam_key{s}, d_cluster{s}, d_crease_first{s}, d_positions{s}, d_slot{s};
  DeviceBuffer& d_extra = d_seam_count;  // the counts are scanned: their room holds the extra clusters
  d_cursor.ensure(std::size_t(seam + 1) * sizeof(ull), "allocating seam cursors");
  PS_CUDA(cudaMemcpyAsync(d_cursor.ptr, d_seam_first.ptr, std::size_t(seam + 1) * sizeof(ull), cudaMemcpyDeviceToDevice, s),
          "copying seam offsets");
  d_seam_placed.ensure(std::size_t(std::max<std::int64_t>(contributions, 1)) * 8, "allocating seam contributions");
  d_seam_key.ensure(std::size_t(std::max<std::int64_t>(contributions, 1)) * 8, "allocating seam contributions");
  d_cluster.ensure(std::size_t(std::max<std::int64_t>(contributions, 1)), "allocating seam clusters");
  d_positions.ensure(std::size_t(std::max<std::int64_t>(nverts, 1)) * 24, "allocating mesh positions");
  if (np > 0) {
    seam_fill_kernel<<<blocks_for(np * 32, kThreads), kThreads, 0, s>>>(d, d_cursor.as<ull>(), d_seam_placed.as<ull>(),
                                                                         sample_bits);
    PS_CUDA_LAUNCH("launching the seam fill kernel");
  }
  // Atomics placed each vertex's contributions in any order: one radix sort of (vertex, sample) keys puts them in
  // sample order, as the host has them (a segmented sort would wait on the host to partition its segments).
  if (contributions > 0) {
    std::size_t bytes = 0;
    PS_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, bytes, d_seam_placed.as<ull>(), d_seam_key.as<ull>(), contributions, 0,
                                           key_bits, s),
            "sizing the seam sort");
    d_temp.ensure(std::max<std::size_t>(bytes, 16), "sorting seam contributions");
    PS_CUDA(cub::DeviceRadixSort::SortKeys(d_temp.ptr, bytes, d_seam_placed.as<ull>(), d_seam_key.as<ull>(), contributions, 0,
                                           key_bits, s),
            "sorting seam contributions");
  }
  const SeamKeys keys{d_seam_key.as<ull>(), (sample_bits == 64 ? ~0ull : (1ull << sample_bits) - 1)};
  PS_CUDA(cudaMemsetAsync(d_extra.ptr, 0, std::size_t(seam + 1) * sizeof(ull), s), "clearing crease counts");
  if (seam > 0) {
    seam_cluster_kernel<T><<<blocks_for(seam, kThreads), kThreads, 0, s>>>(
        st, d_seam_first.as<ull>(), keys, d_cluster.as<std::uint8_t>(), d_extra.as<ull>(), d_positions.as<double>(),
        plan.cos_crease, seam, d_overflow, d_creases);
    PS_CUDA_LAUNCH("launching the seam cluster kernel");
  }
  d_crease_first.ensure(std::size_t(seam + 1) * sizeof(ull), "allocating crease offsets");
  exclusive_sum(d_extra.as<ull>(), d_crease_first.as<ull>(), seam + 1, d_temp, s, "scanning crease clusters");
  DeviceBuffer d_normals{s};
  d_normals.ensure(std::size_t(std::max<std::int64_t>(slot_bound, 1)) * 24, "allocating mesh normals");
  d_slot.ensure(std::size_t(std::max<std::int64_t>(plan.samples, 1)) * 4, "allocating the normal slot of each sample");
  PS_CUDA(cudaMemsetAsync(d_slot.ptr, 0xff, std::size_t(plan.samples) * 4, s), "clearing normal slots");
  if (seam > 0) {
    seam_normal_kernel<T><<<blocks_for(seam, kThreads), kThreads, 0, s>>>(
        st, d_seam_first.as<ull>(), keys, d_cluster.as<std::uint8_t>(), d_crease_first.as<ull>(), d_normals.as<double>(),
        d_slot.as<std::uint32_t>(), seam, nverts);
    PS_CUDA_LAUNCH("launching the seam normal kernel");
  }
  lap(1);

  // 3. interior vertices
  const dim3 per_patch = patch_grid(plan.view, np);
  if (np > 0) {
    interior_kernel<T><<<per_patch, kPatchThreads, 0, s>>>(d, st, d_positions.as<double>(), d_normals.as<double>());
    PS_CUDA_LAUNCH("launching the interior vertex kernel");
  }

  // 4. triangles, in room for the bound
  DeviceBuffer d_tv{s}, d_tn{s}, d_tg{s}, d_tp{s}, d_keep{s};
  d_tv.ensure(std::size_t(std::max<std::int64_t>(tri_bound, 1)) * 12, "allocating triangles");
  d_tn.ensure(std::size_t(std::max<std::int64_t>(tri_bound, 1)) * 12, "allocating triangle normals");
  d_tg.ensure(std::size_t(std::max<std::int64_t>(tri_bound, 1)) * 4, "allocating face groups");
  d_tp.ensure(std::size_t(std::max<std::int64_t>(tri_bound, 1)) * 4, "allocating face patches");
  if (!plan.keep_degenerate) {
    d_keep.ensure(std::size_t(tri_bound) + 8, "allocating triangle flags");
    PS_CUDA(cudaMemsetAsync(d_keep.ptr, 0, std::size_t(tri_bound) + 8, s), "clearing triangle flags");
  }
  TriangleOut tri{d_tv.as<std::uint32_t>(), d_tn.as<std::uint32_t>(), d_tg.as<std::int32_t>(), d_tp.as<std::int32_t>(),
                  plan.keep_degenerate ? nullptr : d_keep.as<std::uint8_t>()};
  if (np > 0) {
    plain_triangles_kernel<<<per_patch, kPatchThreads, 0, s>>>(d, d_tri_first.as<ull>(), d_slot.as<std::uint32_t>(),
                                                                   d_positions.as<double>(), tri);
    PS_CUDA_LAUNCH("launching the plain triangle kernel");
  }
  if (!general.empty()) {
    general_triangles_kernel<<<unsigned(general.size()), kGeneralThreads, 0, s>>>(
        d, d_general, d_tri_first.as<ull>(), ull(tri_bound), d_slot.as<std::uint32_t>(), d_positions.as<double>(), tri,
        d_miscounted);
    PS_CUDA_LAUNCH("launching the triangle kernel");
  }
  // The kept triangles are scanned over the bound's room (flags past the triangles made stay 0; flips leave them as
  // they are).
  const bool compacting = !plan.keep_degenerate && tri_bound > 0;
  DeviceBuffer d_kept_before{s};
  if (compacting) {
    d_kept_before.ensure(std::size_t(tri_bound + 1) * sizeof(ull), "allocating triangle offsets");
    auto counts = thrust::make_transform_iterator(d_keep.as<std::uint8_t>(), ToCount{});
    exclusive_sum(counts, d_kept_before.as<ull>(), tri_bound + 1, d_temp, s, "scanning kept triangles");
  }
  const ull* d_kept = compacting ? d_kept_before.as<ull>() + tri_bound : nullptr;
  bool counts_checked = false;
  // One host wait; the first also checks the triangle counts (the orientation's kernels read the triangles).
  auto read_back = [&](std::initializer_list<Read> reads, const char* what) {
    int miscounted = 0;
    if (!counts_checked)
      PS_CUDA(cudaMemcpyAsync(&miscounted, d_miscounted, sizeof miscounted, cudaMemcpyDeviceToHost, s), "reading the count flag");
    for (const Read& r : reads)
      if (r.bytes) PS_CUDA(cudaMemcpyAsync(r.to, r.from, r.bytes, cudaMemcpyDeviceToHost, s), what);
    PS_CUDA(cudaStreamSynchronize(s), what);
    if (!counts_checked && miscounted)
      throw Error(ErrorKind::InvalidArgument,
                  "internal error in tessellation: a patch made another number of triangles than it was counted for");
    counts_checked = true;
  };

  // 5. closed components face outward
  const auto nc = std::int64_t(plan.component_closed.size());
  const bool any_closed = plan.orient && std::find(plan.component_closed.begin(), plan.component_closed.end(), 1) !=
                                             plan.component_closed.end();
  if (any_closed && np > 0) {
    DeviceBuffer d_sums{s}, d_centre{s}, d_closed{s}, d_volume{s}, d_cflip{s}, d_flip_slot{s};
    d_sums.ensure(std::size_t(np) * 32, "allocating patch sums");
    patch_centre_kernel<<<blocks_for(np, kThreads), kThreads, 0, s>>>(d, d_tri_first.as<ull>(), tri,
                                                                       d_positions.as<double>(), d_sums.as<double>());
    PS_CUDA_LAUNCH("launching the patch centre kernel");
    std::vector<double> sums(static_cast<std::size_t>(np) * 4);
    read_back({{sums.data(), d_sums.ptr, sums.size() * 8}}, "reading patch sums");
    std::vector<double> centre(std::size_t(nc) * 3, 0.0), count(std::size_t(nc), 0.0);
    for (std::int64_t p = 0; p < np; ++p) {
      const auto c = std::size_t(plan.component[p]);
      for (int k = 0; k < 3; ++k) centre[c * 3 + k] += sums[std::size_t(p) * 4 + k];
      count[c] += sums[std::size_t(p) * 4 + 3];
    }
    for (std::size_t c = 0; c < std::size_t(nc); ++c)
      for (int k = 0; k < 3; ++k) centre[c * 3 + k] /= std::max(count[c], 1.0);
    upload(d_centre, centre.data(), nc * 3, s, "uploading component centres");
    upload(d_closed, plan.component_closed.data(), nc, s, "uploading closed components");
    d_volume.ensure(std::size_t(np) * 8, "allocating patch volumes");
    patch_volume_kernel<<<blocks_for(np, kThreads), kThreads, 0, s>>>(d, d_tri_first.as<ull>(), tri, d_positions.as<double>(),
                                                                       d_centre.as<double>(), d_closed.as<std::uint8_t>(),
                                                                       d_volume.as<double>());
    PS_CUDA_LAUNCH("launching the patch volume kernel");
    std::vector<double> volume(static_cast<std::size_t>(np));
    read_back({{volume.data(), d_volume.ptr, volume.size() * 8}}, "reading patch volumes");
    outcome.component_volume.assign(std::size_t(nc), 0.0);
    for (std::int64_t p = 0; p < np; ++p) outcome.component_volume[std::size_t(plan.component[p])] += volume[std::size_t(p)];
    std::vector<std::uint8_t> flip(std::size_t(nc), 0);
    bool any = false;
    for (std::size_t c = 0; c < std::size_t(nc); ++c) {
      flip[c] = plan.component_closed[c] && outcome.component_volume[c] < 0;
      any = any || flip[c];
    }
    if (any && tri_bound > 0) {
      upload(d_cflip, flip.data(), nc, s, "uploading component flips");
      d_flip_slot.ensure(std::size_t(slot_bound) + 8, "allocating normal flips");
      PS_CUDA(cudaMemsetAsync(d_flip_slot.ptr, 0, std::size_t(slot_bound) + 8, s), "clearing normal flips");
      flip_kernel<<<blocks_for(tri_bound, kThreads), kThreads, 0, s>>>(d, tri, d_nt, d_cflip.as<std::uint8_t>(),
                                                                        d_flip_slot.as<std::uint8_t>());
      PS_CUDA_LAUNCH("launching the flip kernel");
      negate_kernel<<<blocks_for(slot_bound, kThreads), kThreads, 0, s>>>(d_normals.as<double>(),
                                                                           d_flip_slot.as<std::uint8_t>(), slot_bound);
      PS_CUDA_LAUNCH("launching the normal flip kernel");
    }
  }

  // 6. zero-area triangles out, in order, where there are any (the kernel compares the two totals on the device)
  DeviceBuffer c_tv{s}, c_tn{s}, c_tg{s}, c_tp{s};
  TriangleOut compacted{};
  if (compacting) {
    c_tv.ensure(std::size_t(tri_bound) * 12, "allocating triangles");
    c_tn.ensure(std::size_t(tri_bound) * 12, "allocating triangle normals");
    c_tg.ensure(std::size_t(tri_bound) * 4, "allocating face groups");
    c_tp.ensure(std::size_t(tri_bound) * 4, "allocating face patches");
    compacted = {c_tv.as<std::uint32_t>(), c_tn.as<std::uint32_t>(), c_tg.as<std::int32_t>(), c_tp.as<std::int32_t>(), nullptr};
    compact_kernel<<<blocks_for(tri_bound, kThreads), kThreads, 0, s>>>(tri, d_kept_before.as<ull>(), ull(tri_bound), d_nt,
                                                                         d_kept, compacted);
    PS_CUDA_LAUNCH("launching the compaction kernel");
  }
  lap(2);

  // the one wait: flags and totals
  Flags flags{};
  ull totals[3] = {0, 0, 0};  // triangles made, kept, extra normal clusters
  read_back({{&flags, d_flags.ptr, sizeof flags},
             {&totals[0], d_nt, sizeof(ull)},
             {&totals[1], d_kept, d_kept ? sizeof(ull) : 0},
             {&totals[2], d_crease_first.as<ull>() + seam, sizeof(ull)}},
            "assembling the mesh on the device");
  lap(3);
  const auto t1 = Clock::now();
  outcome.seconds_device = std::chrono::duration<double>(t1 - t0).count();
  if (flags.overflow) {
    outcome.why_not = "a seam vertex has more than " + std::to_string(kMaxClusters) + " normal clusters";
    return outcome;
  }
  if (flags.miscounted || totals[0] > ull(tri_bound))
    throw Error(ErrorKind::InvalidArgument,
                "internal error in tessellation: a patch made another number of triangles than it was counted for");
  outcome.crease_vertices = std::int64_t(flags.creases);
  const auto nt = std::int64_t(totals[0]);
  const std::int64_t kept = compacting ? std::int64_t(totals[1]) : nt;
  const std::int64_t slots = nverts + std::int64_t(totals[2]);
  if (compacting && kept < nt) tri = compacted;

  // the mesh to host memory
  core::resize_for_overwrite(mesh.positions, std::size_t(nverts) * 3);
  core::resize_for_overwrite(mesh.normals, std::size_t(slots) * 3);
  core::resize_for_overwrite(mesh.triangles, std::size_t(kept) * 3);
  core::resize_for_overwrite(mesh.triangle_normals, std::size_t(kept) * 3);
  core::resize_for_overwrite(mesh.face_group, std::size_t(kept));
  core::resize_for_overwrite(mesh.face_patch, std::size_t(kept));
  const auto t2 = Clock::now();
  auto down = [&](void* to, const void* from, std::size_t bytes) {
    if (bytes) PS_CUDA(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, s), "copying the mesh to the host");
  };
  down(mesh.positions.data(), d_positions.ptr, mesh.positions.size() * 8);
  down(mesh.normals.data(), d_normals.ptr, mesh.normals.size() * 8);
  down(mesh.triangles.data(), tri.vertex, mesh.triangles.size() * 4);
  down(mesh.triangle_normals.data(), tri.normal, mesh.triangle_normals.size() * 4);
  down(mesh.face_group.data(), tri.group, mesh.face_group.size() * 4);
  down(mesh.face_patch.data(), tri.patch, mesh.face_patch.size() * 4);
  PS_CUDA(cudaStreamSynchronize(s), "copying the mesh to the host");
  outcome.seconds_download = std::chrono::duration<double>(Clock::now() - t2).count();
  outcome.done = true;
  return outcome;
}

template <class T> void download(const SampleViews<T>& device_samples, const SampleViews<T>& host, std::int64_t n) {
  for (int c = 0; c < 3; ++c) {
    PS_CUDA(cudaMemcpy(host.pos[c], device_samples.pos[c], std::size_t(n) * sizeof(T), cudaMemcpyDeviceToHost),
            "copying patch samples to the host");
    PS_CUDA(cudaMemcpy(host.nrm[c], device_samples.nrm[c], std::size_t(n) * sizeof(T), cudaMemcpyDeviceToHost),
            "copying patch samples to the host");
  }
}

template void download<float>(const SampleViews<float>&, const SampleViews<float>&, std::int64_t);
template void download<double>(const SampleViews<double>&, const SampleViews<double>&, std::int64_t);
template AssemblyOutcome assemble<float>(const AssemblyPlan&, const SampleViews<float>&, PatchMesh&);
template AssemblyOutcome assemble<double>(const AssemblyPlan&, const SampleViews<double>&, PatchMesh&);

}  // namespace parasurf::patches::cuda
