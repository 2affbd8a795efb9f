// The kernels of the device assembly (assemble_cuda.cu runs them, in the steps listed there): seam contributions and
// normal clusters, interior vertices, triangles, orientation sums, compaction. Included by assemble_cuda.cu alone.
#pragma once
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "core/cuda_check.hpp"
#include "patches/assemble.hpp"
#include "patches/assemble_math.hpp"

namespace parasurf::patches::cuda {

using ull = unsigned long long;

namespace {

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

// Rounded double arithmetic without contraction, shared with the host's assembly (assemble_math.hpp).
using math::add;
using math::mul;

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

// Each contribution as the key (vertex, sample), the vertex above sample_bits, in its vertex's range in any order:
// the vertex's count, counted down, gives the places.
__global__ void seam_fill_kernel(DevicePlan d, const ull* first, ull* count, ull* key, int sample_bits) {
  const std::int64_t p = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (p >= d.np) return;
  for_side_samples(d, p, int(threadIdx.x & 31), [&](int s, int k) {
    const std::int64_t v = side_vertex(d.v, p, s, k);
    const ull at = first[v] + atomicAdd(&count[v], ~0ull) - 1;  // adding 2^64 - 1 subtracts one
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

// Walks the contributions [a, b) of the thread's seam vertex in order: f(k, sample, normal, tag[k]) until it returns
// false. Every thread of the warp calls it (live or not). Most vertices have a few contributions, walked by their
// thread; from kStagedFrom on (the poles: hundreds), the warp loads them 32 at a time into shared memory for that
// thread, which would otherwise wait on two dependent loads per contribution.
constexpr int kStagedFrom = 17;

// A staged chunk's hook, called by the whole warp before the owner walks the chunk: how many of its first
// contributions it took itself (none here).
struct TakesNone {
  __device__ int operator()(int, ull, int, const std::int64_t*, const double (*)[3]) const { return 0; }
};

template <class T, class F, class Hook = TakesNone>
__device__ void walk_contributions(const SampleViews<T>& st, const SeamKeys& seam, const std::uint8_t* tag, bool live,
                                   ull a, ull b, F&& f, Hook&& hook = {}) {
  __shared__ double staged_normal[kThreads / 32][32][3];
  __shared__ std::int64_t staged_sample[kThreads / 32][32];
  __shared__ std::uint8_t staged_tag[kThreads / 32][32];
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  const bool many = live && b - a >= ull(kStagedFrom);
  if (live && !many)
    for (ull k = a; k < b; ++k) {
      const std::int64_t sample = seam.sample(k);
      double n[3];
      sample_normal(st, sample, n);
      if (!f(k, sample, n, tag ? tag[k] : std::uint8_t(0))) break;
    }
  for (unsigned todo = __ballot_sync(~0u, many); todo != 0; todo &= todo - 1) {
    const int owner = __ffs(todo) - 1;
    const ull oa = __shfl_sync(~0u, a, owner), ob = __shfl_sync(~0u, b, owner);
    bool going = true;
    for (ull chunk = oa; chunk < ob; chunk += 32) {
      const ull k = chunk + ull(lane);
      if (k < ob) {
        const std::int64_t sample = seam.sample(k);
        staged_sample[warp][lane] = sample;
        sample_normal(st, sample, staged_normal[warp][lane]);
        staged_tag[warp][lane] = tag ? tag[k] : std::uint8_t(0);
      }
      __syncwarp();
      const int count = int(min(ull(32), ob - chunk));
      const int taken = __shfl_sync(~0u, int(going), owner) ? hook(owner, chunk, count, staged_sample[warp], staged_normal[warp]) : 0;
      if (lane == owner)
        for (int j = taken; going && j < count; ++j)
          going = f(chunk + ull(j), staged_sample[warp][j], staged_normal[warp][j], staged_tag[warp][j]);
      __syncwarp();
    }
  }
}

// Takes the position from the vertex's first contribution (they are sorted by sample) and assigns the normal
// clusters greedily in that order (a contribution joins the first cluster within the crease angle of its sum).
// Cluster 0, which nearly every contribution joins, keeps its sum in registers and is tested alone first: the
// poles walk hundreds of contributions one after another.
template <class T>
__global__ void __launch_bounds__(kThreads)
    seam_cluster_kernel(SampleViews<T> st, const ull* first, SeamKeys seam, std::uint8_t* cluster_of, ull* extra,
                        double* positions, math::CreaseTest crease, std::int64_t seam_vertices, int* overflow,
                        ull* crease_vertices) {
  const std::int64_t v = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool live = v < seam_vertices;
  const ull a = live ? first[v] : 0, b = live ? first[v + 1] : 0;
  if (live) {
    extra[v] = 0;
    if (a == b)
      for (int c = 0; c < 3; ++c) positions[v * 3 + c] = 0.0;
  }
  double sum0[3] = {0.0, 0.0, 0.0};
  double sums[kMaxClusters][3];  // clusters 1 and up (creases): rare
  int clusters = 0;
  bool overflowed = false;
  // A pole's chunk of 32, speculatively: the owner sums the normals in order as if every one joined cluster 0,
  // then the lanes test them against those prefix sums at once. The leading run that joins is taken as the serial
  // walk would take it (the same sums in the same order); the owner walks the rest of the chunk one by one.
  __shared__ double prefix[kThreads / 32][33][3];
  auto speculate = [&](int owner, ull chunk, int count, const std::int64_t* samples, const double (*normals)[3]) {
    const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
    if (lane == owner) {
      double s[3] = {sum0[0], sum0[1], sum0[2]};
      for (int j = 0; j < count; ++j)
        for (int c = 0; c < 3; ++c) prefix[warp][j][c] = s[c], s[c] = add(s[c], normals[j][c]);
      for (int c = 0; c < 3; ++c) prefix[warp][count][c] = s[c];
    }
    __syncwarp();
    bool fails = false;  // an empty sum (the first contribution) joins: cluster 0 is then made for it
    if (lane < count) {
      const double* n = normals[lane];
      fails = !crease.joins(prefix[warp][lane], n);
    }
    const unsigned failed = __ballot_sync(~0u, fails);
    const int taken = failed ? __ffs(failed) - 1 : count;
    const std::int64_t owner_v = __shfl_sync(~0u, v, owner);
    const ull owner_a = __shfl_sync(~0u, a, owner);
    if (lane < taken) {
      cluster_of[chunk + ull(lane)] = 0;
      if (chunk + ull(lane) == owner_a)
        for (int c = 0; c < 3; ++c) positions[owner_v * 3 + c] = double(st.pos[c][samples[lane]]);
    }
    if (lane == owner && taken > 0) {
      for (int c = 0; c < 3; ++c) sum0[c] = prefix[warp][taken][c];
      clusters = max(clusters, 1);
    }
    __syncwarp();  // the prefix sums are read before the next chunk's
    return taken;
  };
  walk_contributions(st, seam, nullptr, live, a, b, [&](ull k, std::int64_t sample, const double* n, std::uint8_t) {
    if (k == a)
      for (int c = 0; c < 3; ++c) positions[v * 3 + c] = double(st.pos[c][sample]);
    int hit = clusters > 0 && crease.joins(sum0, n) ? 0 : -1;
    for (int c = 1; c < clusters && hit < 0; ++c)
      if (crease.joins(sums[c], n)) hit = c;
    if (hit < 0) {
      if (clusters == kMaxClusters) {
        atomicExch(overflow, 1);
        overflowed = true;
        return false;
      }
      hit = clusters++;
      if (hit > 0) sums[hit][0] = sums[hit][1] = sums[hit][2] = 0.0;
    }
    if (hit == 0)
      for (int c = 0; c < 3; ++c) sum0[c] = add(sum0[c], n[c]);
    else
      for (int c = 0; c < 3; ++c) sums[hit][c] = add(sums[hit][c], n[c]);
    cluster_of[k] = std::uint8_t(hit);
    return true;
  }, speculate);
  if (!live || a == b || overflowed) return;
  extra[v] = ull(clusters - 1);
  if (clusters > 1) atomicAdd(crease_vertices, 1ull);
}

// Unit normal of each cluster, its contributions summed in order as the clustering summed them; cluster 0 is the
// vertex's own slot, cluster c > 0 the slot after the vertices that the scan of extra clusters gave it.
template <class T>
__global__ void __launch_bounds__(kThreads)
    seam_normal_kernel(SampleViews<T> st, const ull* first, SeamKeys seam, const std::uint8_t* cluster_of,
                       const ull* crease_first, double* normals, std::uint32_t* slot_of_sample, std::int64_t seam_vertices,
                       std::int64_t vertices) {
  const std::int64_t v = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool live = v < seam_vertices;
  const ull a = live ? first[v] : 0, b = live ? first[v + 1] : 0;
  const int clusters = live && a < b ? 1 + int(crease_first[v + 1] - crease_first[v]) : 0;
  const std::int64_t extra_base = live ? vertices + std::int64_t(crease_first[v]) - 1 : 0;
  double sum0[3] = {0.0, 0.0, 0.0};  // cluster 0 in registers, as in the clustering
  double sum[kMaxClusters][3];
  for (int cl = 1; cl < clusters; ++cl) sum[cl][0] = sum[cl][1] = sum[cl][2] = 0.0;
  walk_contributions(st, seam, cluster_of, live, a, b, [&](ull, std::int64_t sample, const double* n, std::uint8_t cl) {
    if (cl >= clusters) return true;  // left by a clustering that overflowed: the host assembles instead
    if (cl == 0) {
      for (int c = 0; c < 3; ++c) sum0[c] = add(sum0[c], n[c]);
      slot_of_sample[sample] = std::uint32_t(v);
    } else {
      for (int c = 0; c < 3; ++c) sum[cl][c] = add(sum[cl][c], n[c]);
      slot_of_sample[sample] = std::uint32_t(extra_base + cl);
    }
    return true;
  });
  if (!live) return;
  if (a == b)
    for (int c = 0; c < 3; ++c) normals[v * 3 + c] = 0.0;
  for (int cl = 0; cl < clusters; ++cl) {
    double s[3];
    for (int c = 0; c < 3; ++c) s[c] = cl == 0 ? sum0[c] : sum[cl][c];
    const std::int64_t slot = cl == 0 ? v : extra_base + cl;
    math::unit3(s, normals + slot * 3);
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

// The other patches (collapsed or repeated edges, zipped sides, triangles) by chunks of kGeneralThreads cells, one
// block a (patch, chunk): the kept triangles of each chunk, added to the patch's count; block (p, 0) also counts a
// zipped patch's border strips or a triangular patch's lattice (one thread: short walks).
__device__ inline int general_cells(const DevicePlan& d, std::int64_t p, int& i0, int& j0, int& columns) {
  int i1, j1;
  cell_range(d.v, p, i0, i1, j0, j1);
  columns = max(j1 - j0, 0);
  return d.v.triangle(p) ? 0 : max(i1 - i0, 0) * columns;
}

__global__ void __launch_bounds__(kGeneralThreads)
    general_count_kernel(DevicePlan d, const std::int32_t* list, int chunks, ull* chunk_count, ull* count) {
  using Reduce = cub::BlockReduce<int, kGeneralThreads>;
  __shared__ typename Reduce::TempStorage reduce_temp;
  const std::int64_t p = list[blockIdx.x];
  int i0, j0, columns;
  const int cells = general_cells(d, p, i0, j0, columns);
  for (int chunk = int(blockIdx.y); chunk < chunks; chunk += int(gridDim.y)) {
    const int cell = chunk * kGeneralThreads + int(threadIdx.x);
    int mine = 0, walk = 0;
    auto tally = [&](int& n) {
      return [&](const PlanRef& a, const PlanRef& b, const PlanRef& c) {
        n += take_triangle(d.v, p, a, b, c, [](const PlanRef&, const PlanRef&, const PlanRef&) {});
      };
    };
    if (cell < cells) cell_triangles(d.v, p, i0 + cell / columns, j0 + cell % columns, tally(mine));
    const int total = Reduce(reduce_temp).Sum(mine);
    __syncthreads();  // the reduction's storage is used again in the next chunk
    if (threadIdx.x != 0) continue;
    if (chunk == 0) {
      if (d.v.triangle(p)) triangulate_patch(d.v, p, [&](const PlanRef&, const PlanRef&, const PlanRef&) { ++walk; });
      else if (d.v.zipper[p]) zipped_sides(d.v, p, tally(walk));
    }
    chunk_count[std::size_t(blockIdx.x) * chunks + chunk] = ull(total);
    if (total + walk > 0) atomicAdd(&count[p], ull(total + walk));
  }
}

__device__ inline std::uint32_t normal_slot(const std::uint32_t* slot_of_sample, const PlanRef& r) {
  const std::uint32_t slot = slot_of_sample[r.sample];
  return slot != 0xffffffffu ? slot : std::uint32_t(r.vertex);
}

__device__ inline bool zero_area(const double* positions, std::uint32_t ia, std::uint32_t ib, std::uint32_t ic) {
  return math::zero_area(positions + std::size_t(ia) * 3, positions + std::size_t(ib) * 3, positions + std::size_t(ic) * 3);
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

// The other patches, one block a (patch, chunk) as they were counted: a chunk's kept triangles (0 to 2 a cell) placed
// by a block scan in the walk's row-by-row order, after the chunks before it (chunk_first, scanned over all chunks);
// then, by block (p, 0), a zipped patch's border strips or a triangular patch's lattice.
__global__ void __launch_bounds__(kGeneralThreads)
    general_triangles_kernel(DevicePlan d, const std::int32_t* list, int chunks, const ull* chunk_first,
                             const ull* tri_first, ull room, const std::uint32_t* slot_of_sample, const double* positions,
                             TriangleOut out, int* miscounted) {
  using Scan = cub::BlockScan<int, kGeneralThreads>;
  __shared__ typename Scan::TempStorage scan_temp;
  const std::int64_t p = list[blockIdx.x];
  const ull* firsts = chunk_first + std::size_t(blockIdx.x) * chunks;
  const ull base = tri_first[p] - firsts[0];
  const ull end = min(tri_first[p + 1], room);
  auto put = [&](ull& t, const PlanRef& a, const PlanRef& b, const PlanRef& c) {
    if (t >= end) {  // more than counted (or than the room): never overwrite the next patch's triangles
      atomicExch(miscounted, 1);
      return;
    }
    write_triangle(d, out, slot_of_sample, positions, p, t++, a, b, c);
  };
  int i0, j0, columns;
  const int cells = general_cells(d, p, i0, j0, columns);
  for (int chunk = int(blockIdx.y); chunk < chunks; chunk += int(gridDim.y)) {
    if (chunk * kGeneralThreads >= cells) break;
    const int cell = chunk * kGeneralThreads + int(threadIdx.x);
    int kept = 0;
    auto count = [&](const PlanRef& a, const PlanRef& b, const PlanRef& c) {
      kept += take_triangle(d.v, p, a, b, c, [](const PlanRef&, const PlanRef&, const PlanRef&) {});
    };
    if (cell < cells) cell_triangles(d.v, p, i0 + cell / columns, j0 + cell % columns, count);
    int before = 0;
    Scan(scan_temp).ExclusiveSum(kept, before);
    __syncthreads();  // the scan's storage is used again in the next chunk
    ull t = base + firsts[chunk] + ull(before);
    if (cell < cells)
      cell_triangles(d.v, p, i0 + cell / columns, j0 + cell % columns, [&](const PlanRef& a, const PlanRef& b, const PlanRef& c) {
        take_triangle(d.v, p, a, b, c, [&](const PlanRef& x, const PlanRef& y, const PlanRef& z) { put(t, x, y, z); });
      });
  }
  if (blockIdx.y != 0 || threadIdx.x != 0) return;
  ull t = base + firsts[chunks];
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
    math::add_centre_term(s, positions + std::size_t(out.vertex[t * 3]) * 3);
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
      const double* corner = positions;
      sum = math::add_volume_term(sum, corner + std::size_t(out.vertex[t * 3]) * 3, corner + std::size_t(out.vertex[t * 3 + 1]) * 3,
                                  corner + std::size_t(out.vertex[t * 3 + 2]) * 3, centre + comp * 3);
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
  if (t >= room || t >= *made || *kept == *made || !in.keep[t]) return;
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

// Triangle t's keep flag as a count, 0 past the triangles made (the flags' room is the bound, not cleared).
struct KeptFlag {
  const std::uint8_t* keep;
  const ull* made;
  __host__ __device__ ull operator()(std::int64_t t) const { return ull(t) < *made ? ull(keep[t]) : 0ull; }
};

}  // namespace

}  // namespace parasurf::patches::cuda
