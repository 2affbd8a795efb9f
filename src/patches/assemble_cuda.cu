// Device welding and assembly of a tessellation (assemble.hpp). The steps of the host's assemble(), each a kernel
// or a CUB scan, over samples that stay on the device; buffers are sized from the plan before the first kernel, so
// that the host waits once, at the end (twice more where closed components are oriented):
//  1. seam contributions (every side sample of every patch) counted per seam vertex, scanned, placed as (vertex,
//     sample) keys and radix sorted, so that each vertex's first contribution gives the position as on the host;
//  2. greedy normal clusters per seam vertex by the crease angle; extra clusters (creases) numbered by a scan in
//     vertex order, after the vertices, as the host's serial numbering does;
//  3. interior vertices from their patch alone;
//  4. triangles counted per patch (by formula for plain patches, by chunks of cells for the others), scanned,
//     written per cell (plain patches, and the others' chunks through a block scan), with the zero-area flag;
//  5. outward orientation of closed components from per-patch sums that the host adds up per component;
//  6. zero-area triangles compacted away in order, and the mesh copied to host memory.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/memory.hpp"
#include "core/staging.hpp"
#include "parasurf/device.hpp"
#include "patches/assemble.hpp"
#include "patches/assemble_kernels.cuh"

namespace parasurf::patches::cuda {

using ull = unsigned long long;

namespace {

// Stream-ordered allocation from the device's memory pool: plain cudaMalloc / cudaFree (which synchronises the
// device) cost more than a small model's whole assembly.
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

// Memory the pool keeps between assemblies; beyond it, freed memory goes back to the device at synchronisation and
// the next assembly maps it again, at a cost in the host's time that grows with the bytes. A
// quarter of the device by default, or PARASURF_ASSEMBLY_POOL_KEEP_MB. The driver gives what the pool keeps back to
// plain allocations that need it (test DeviceMemory.PoolKeptForAssembliesYieldsToPlainAllocations).
std::uint64_t pool_keep_bytes(std::uint64_t device_bytes) {
  const char* text = std::getenv("PARASURF_ASSEMBLY_POOL_KEEP_MB");
  char* end = nullptr;
  const long long value = text && *text ? std::strtoll(text, &end, 10) : -1;
  return end && *end == 0 && value >= 0 ? std::uint64_t(value) << 20 : device_bytes / 4;
}


// CUB's scratch for an exclusive sum of n values, and the sum itself (temp sized by the first).
template <class In> std::size_t scan_bytes(In in, ull* out, std::int64_t n, const char* what) {
  std::size_t bytes = 0;
  if (n > 0) PS_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n, cudaStream_t(nullptr)), what);
  return bytes;
}
template <class In>
void exclusive_sum(In in, ull* out, std::int64_t n, void* temp, std::size_t temp_bytes, cudaStream_t s, const char* what) {
  if (n > 0) PS_CUDA(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, n, s), what);
}

// Triangles up to which the compacted copy's room is taken ahead of the counts (default 2^22, 117 MB); the
// environment variable PARASURF_COMPACT_AHEAD_TRIANGLES sets it (the tests take both paths).
std::int64_t compact_ahead_limit() {
  const char* text = std::getenv("PARASURF_COMPACT_AHEAD_TRIANGLES");
  if (!text || !*text) return std::int64_t(1) << 22;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  return end && *end == 0 && value >= 0 ? std::int64_t(value) : std::int64_t(1) << 22;
}

// An assembly's device buffers carved from one stream-ordered allocation: each cudaMallocAsync costs the host a few
// microseconds, and a small model's whole assembly is a few hundred.
class Arena {
 public:
  template <class X> void want(X*& ptr, std::int64_t count) {
    wants_.push_back({reinterpret_cast<void**>(&ptr), bytes_});
    bytes_ += (std::size_t(std::max<std::int64_t>(count, 1)) * sizeof(X) + 255) & ~std::size_t(255);
  }
  std::size_t bytes() const { return bytes_; }
  void carve(DeviceBuffer& buf, const char* what) {
    buf.ensure(std::max<std::size_t>(bytes_, 256), what);
    for (const auto& w : wants_) *w.ptr = static_cast<unsigned char*>(buf.ptr) + w.offset;
  }

 private:
  struct Want {
    void** ptr;
    std::size_t offset;
  };
  std::vector<Want> wants_;
  std::size_t bytes_ = 0;
};

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


// Per host thread, kept between assemblies: a stream (creating one costs microseconds) and a pinned block for the
// plan's upload (from pageable memory the copy is staged by the driver and waits).
struct ThreadResources {
  cudaStream_t stream = nullptr;
  void* pinned = nullptr;
  std::size_t pinned_bytes = 0;
  ~ThreadResources() {
    if (pinned) cudaFreeHost(pinned);
    if (stream) cudaStreamDestroy(stream);
  }
  cudaStream_t get_stream() {
    if (!stream) PS_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating the assembly stream");
    return stream;
  }
  // Room for bytes, or null above the size worth keeping pinned (the caller stages in pageable memory).
  unsigned char* staging(std::size_t bytes) {
    constexpr std::size_t kKeepPinned = std::size_t(16) << 20;
    if (bytes > kKeepPinned) return nullptr;
    if (bytes > pinned_bytes) {
      if (pinned) PS_CUDA(cudaFreeHost(pinned), "freeing the plan's staging block");
      pinned = nullptr;
      pinned_bytes = 0;
      const std::size_t want = std::max(bytes, std::size_t(1) << 20);
      PS_CUDA(cudaMallocHost(&pinned, want), "allocating the plan's staging block");
      pinned_bytes = want;
    }
    return static_cast<unsigned char*>(pinned);
  }
};
thread_local ThreadResources thread_resources;

}  // namespace

// One function (its steps numbered inside): every step launches on one stream into device arrays carved from two
// allocations sized before the first kernel, so that the host waits only at the end; split, each step would take
// the whole set of arrays and offsets as arguments.
template <class T>
AssemblyOutcome assemble(const AssemblyPlan& plan, const SampleViews<T>& st, PatchMesh& mesh) {
  using Clock = std::chrono::steady_clock;
  AssemblyOutcome outcome;
  const auto t0 = Clock::now();
  const std::int64_t np = plan.patches, ne = plan.edges, seam = plan.seam_vertices, nverts = plan.vertices;
  const PlanView& h = plan.view;

  // Sizes from the plan alone: the seam contributions exactly, the triangles bounded by what the walk offers, the
  // other patches' chunks. Every buffer is carved, and the memory checked, before the first kernel; the host then
  // waits for the device only at the end (and for the orientation's sums, on models with closed components).
  std::vector<std::int32_t> general;  // the patches that are not plain
  std::int64_t contributions = 0, tri_bound = 0, chunks = 1;
  for (std::int64_t p = 0; p < np; ++p) {
    for (int s = 0; s < (h.triangle(p) ? 3 : 4); ++s) contributions += side_factor(h, p, s);
    tri_bound += triangles_offered(h, p);
    if (plan.plain[p]) continue;
    general.push_back(std::int32_t(p));
    if (h.triangle(p)) continue;
    int i0, i1, j0, j1;
    cell_range(h, p, i0, i1, j0, j1);
    const std::int64_t cells = std::int64_t(std::max(i1 - i0, 0)) * std::max(j1 - j0, 0);
    chunks = std::max(chunks, (cells + kGeneralThreads - 1) / kGeneralThreads);
  }
  const auto ng = std::int64_t(general.size());
  // seam contributions are sorted by one key, the vertex above the sample
  const int sample_bits = std::max(1, int(std::bit_width(std::uint64_t(std::max<std::int64_t>(plan.samples, 1)))));
  const int key_bits = sample_bits + int(std::bit_width(std::uint64_t(std::max<std::int64_t>(seam, 1))));
  if (key_bits > 64) {
    outcome.why_not = "seam sort keys of " + std::to_string(key_bits) + " bits (at most 64)";
    return outcome;
  }
  const std::int64_t slot_bound = nverts + contributions;  // normal slots: a crease cluster per contribution at most
  const bool compacting = !plan.keep_degenerate && tri_bound > 0;
  // the compacted triangles' room, held ahead (no host wait) up to a size; beyond it, taken once the totals show a
  // dropped triangle
  const bool compact_ahead = compacting && tri_bound <= compact_ahead_limit();

  // Two allocations: the triangles' (most of the memory) is taken once the first kernels are queued, so that the
  // device works while the host maps its pages.
  Arena arena, late;
  ull *seam_count = nullptr, *seam_first = nullptr, *tri_count = nullptr, *tri_first = nullptr, *chunk_count = nullptr,
      *chunk_first = nullptr, *seam_placed = nullptr, *seam_key = nullptr, *crease_first = nullptr, *kept_before = nullptr;
  Flags* flags_d = nullptr;
  std::uint8_t *cluster = nullptr, *keep = nullptr;
  double *positions = nullptr, *normals = nullptr;
  std::uint32_t *slot = nullptr, *tv = nullptr, *tn = nullptr, *cv = nullptr, *cn = nullptr;
  std::int32_t *tg = nullptr, *tp = nullptr, *cg = nullptr, *cp = nullptr;
  unsigned char* temp = nullptr;
  // cleared together: the counts and the flags
  arena.want(seam_count, seam + 1);
  arena.want(tri_count, np + 1);
  arena.want(flags_d, 1);
  const std::size_t cleared_bytes = arena.bytes();
  arena.want(seam_first, seam + 1);
  arena.want(tri_first, np + 1);
  arena.want(chunk_count, ng * chunks + 1);
  arena.want(chunk_first, ng * chunks + 1);
  arena.want(seam_placed, contributions);
  arena.want(seam_key, contributions);
  arena.want(cluster, contributions);
  arena.want(crease_first, seam + 1);
  arena.want(positions, nverts * 3);
  arena.want(normals, slot_bound * 3);
  arena.want(slot, plan.samples);
  late.want(tv, tri_bound * 3);
  late.want(tn, tri_bound * 3);
  late.want(tg, tri_bound);
  late.want(tp, tri_bound);
  if (!plan.keep_degenerate) late.want(keep, tri_bound + 8);
  if (compacting) late.want(kept_before, tri_bound + 1);
  if (compact_ahead) {
    late.want(cv, tri_bound * 3);
    late.want(cn, tri_bound * 3);
    late.want(cg, tri_bound);
    late.want(cp, tri_bound);
  }
  // CUB's scratch, the largest of its five calls (sizing reads no device memory)
  std::size_t temp_bytes = std::max({scan_bytes(seam_count, seam_first, seam + 1, "sizing a scan"),
                                     scan_bytes(tri_count, tri_first, np + 1, "sizing a scan"),
                                     scan_bytes(chunk_count, chunk_first, ng * chunks + 1, "sizing a scan")});
  const ull* d_nt_sizing = nullptr;
  auto kept_flags = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), KeptFlag{keep, d_nt_sizing});
  if (compacting) temp_bytes = std::max(temp_bytes, scan_bytes(kept_flags, kept_before, tri_bound + 1, "sizing a scan"));
  if (contributions > 0) {
    std::size_t bytes = 0;
    PS_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, bytes, seam_placed, seam_key, contributions, 0, key_bits, cudaStream_t(nullptr)),
            "sizing the seam sort");
    temp_bytes = std::max(temp_bytes, bytes);
  }
  arena.want(temp, std::int64_t(temp_bytes));
  const bool any_closed = plan.orient && np > 0 &&
                          std::find(plan.component_closed.begin(), plan.component_closed.end(), 1) != plan.component_closed.end();
  const std::uint64_t need = arena.bytes() + late.bytes() + (any_closed ? std::uint64_t(np) * 40 + std::uint64_t(slot_bound) + 4096 : 0) +
                             (compacting && !compact_ahead ? std::uint64_t(tri_bound) * 32 : 0) + (64u << 20);
  std::size_t free_bytes = 0, total_bytes = 0;
  PS_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "querying device memory");
  int device = 0;
  cudaMemPool_t pool = nullptr;
  PS_CUDA(cudaGetDevice(&device), "finding the device");
  PS_CUDA(cudaDeviceGetDefaultMemPool(&pool, device), "finding the device's memory pool");
  {
    std::uint64_t reserved = 0, used = 0;  // what the pool kept from earlier assemblies is free for this one
    PS_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved), "querying the memory pool");
    PS_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), "querying the memory pool");
    if (reserved > used) free_bytes += std::size_t(reserved - used);
  }
  if (need > free_bytes) {
    outcome.why_not = "device assembly needs " + std::to_string(need >> 20) + " MiB, " + std::to_string(free_bytes >> 20) +
                      " MiB are free";
    return outcome;
  }

  const cudaStream_t s = thread_resources.get_stream();
  PS_CUDA(cudaStreamSynchronize(s), "waiting for an earlier assembly");  // its upload may still read the staging block
  {
    std::uint64_t keep_bytes = pool_keep_bytes(total_bytes);
    PS_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_bytes), "configuring the memory pool");
  }
  DeviceBuffer d_arena{s};
  arena.carve(d_arena, "allocating the assembly's buffers");
  const ull* d_nt = tri_first + np;  // the triangles made: known on the device only

  // the plan on the device, in one upload, staged in one host block (pinned unless large), sized first, filled by
  // all threads on large models
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
  const std::size_t o_general = stage(general.data(), ng, 4);
  staged_bytes = std::max<std::size_t>(staged_bytes, 16);
  std::vector<unsigned char> pageable;
  unsigned char* staged = thread_resources.staging(staged_bytes);
  if (!staged) {
    core::resize_for_overwrite(pageable, staged_bytes);
    staged = pageable.data();
  }
#pragma omp parallel for schedule(dynamic, 1) if (staged_bytes > (std::size_t(1) << 20))
  for (std::size_t k = 0; k < pieces.size(); ++k)
    if (pieces[k].bytes) std::memcpy(staged + pieces[k].at, pieces[k].src, pieces[k].bytes);
  DeviceBuffer d_plan{s};
  d_plan.ensure(staged_bytes, "uploading the plan");
  PS_CUDA(cudaMemcpyAsync(d_plan.ptr, staged, staged_bytes, cudaMemcpyHostToDevice, s), "uploading the plan");
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

  // counts (seam contributions per vertex, triangles per patch and per chunk of the other patches) and their offsets
  PS_CUDA(cudaMemsetAsync(seam_count, 0, cleared_bytes, s), "clearing counts");
  int* d_overflow = &flags_d->overflow;
  int* d_miscounted = &flags_d->miscounted;
  ull* d_creases = &flags_d->creases;
  const dim3 general_grid(unsigned(std::max<std::int64_t>(ng, 1)), unsigned(std::min<std::int64_t>(chunks, 65535)));
  if (np > 0) {
    seam_count_kernel<<<blocks_for(np * 32, kThreads), kThreads, 0, s>>>(d, seam_count);
    PS_CUDA_LAUNCH("launching the seam count kernel");
    plain_count_kernel<<<blocks_for(np, kThreads), kThreads, 0, s>>>(d, tri_count);
    PS_CUDA_LAUNCH("launching the triangle count kernel");
  }
  if (ng > 0) {
    general_count_kernel<<<general_grid, kGeneralThreads, 0, s>>>(d, d_general, int(chunks), chunk_count, tri_count);
    PS_CUDA_LAUNCH("launching the triangle count kernel");
  }
  exclusive_sum(seam_count, seam_first, seam + 1, temp, temp_bytes, s, "scanning seam counts");
  exclusive_sum(tri_count, tri_first, np + 1, temp, temp_bytes, s, "scanning triangle counts");
  if (ng > 0) exclusive_sum(chunk_count, chunk_first, ng * chunks + 1, temp, temp_bytes, s, "scanning chunk counts");

  // 1-2. seam vertices: placed (each vertex's count counting down), sorted, clustered, numbered
  if (np > 0) {
    seam_fill_kernel<<<blocks_for(np * 32, kThreads), kThreads, 0, s>>>(d, seam_first, seam_count, seam_placed, sample_bits);
    PS_CUDA_LAUNCH("launching the seam fill kernel");
  }
  // Atomics placed each vertex's contributions in any order: one radix sort of (vertex, sample) keys puts them in
  // sample order, as the host has them (a segmented sort would wait on the host to partition its segments).
  if (contributions > 0)
    PS_CUDA(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, seam_placed, seam_key, contributions, 0, key_bits, s),
            "sorting seam contributions");
  const SeamKeys keys{seam_key, (sample_bits == 64 ? ~0ull : (1ull << sample_bits) - 1)};
  ull* extra = seam_count;  // counted down to zero by the fill: its room holds the extra clusters
  if (seam > 0) {
    seam_cluster_kernel<T><<<blocks_for(seam, kThreads), kThreads, 0, s>>>(st, seam_first, keys, cluster, extra, positions,
                                                                            math::CreaseTest(plan.cos_crease), seam, d_overflow, d_creases);
    PS_CUDA_LAUNCH("launching the seam cluster kernel");
  }
  exclusive_sum(extra, crease_first, seam + 1, temp, temp_bytes, s, "scanning crease clusters");
  PS_CUDA(cudaMemsetAsync(slot, 0xff, std::size_t(plan.samples) * 4, s), "clearing normal slots");
  if (seam > 0) {
    seam_normal_kernel<T><<<blocks_for(seam, kThreads), kThreads, 0, s>>>(st, seam_first, keys, cluster, crease_first,
                                                                           normals, slot, seam, nverts);
    PS_CUDA_LAUNCH("launching the seam normal kernel");
  }
  lap(1);

  DeviceBuffer d_late{s};
  late.carve(d_late, "allocating the assembly's triangles");
  const ull* d_kept = compacting ? kept_before + tri_bound : nullptr;

  // 3. interior vertices
  const dim3 per_patch = patch_grid(plan.view, np);
  if (np > 0) {
    interior_kernel<T><<<per_patch, kPatchThreads, 0, s>>>(d, st, positions, normals);
    PS_CUDA_LAUNCH("launching the interior vertex kernel");
  }

  // 4. triangles, in room for the bound
  TriangleOut tri{tv, tn, tg, tp, plan.keep_degenerate ? nullptr : keep};
  if (np > 0) {
    plain_triangles_kernel<<<per_patch, kPatchThreads, 0, s>>>(d, tri_first, slot, positions, tri);
    PS_CUDA_LAUNCH("launching the plain triangle kernel");
  }
  if (ng > 0) {
    general_triangles_kernel<<<general_grid, kGeneralThreads, 0, s>>>(d, d_general, int(chunks), chunk_first, tri_first,
                                                                      ull(tri_bound), slot, positions, tri, d_miscounted);
    PS_CUDA_LAUNCH("launching the triangle kernel");
  }
  // the kept triangles scanned over the bound's room (flags past the triangles made count 0; flips leave them)
  if (compacting)
    exclusive_sum(thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), KeptFlag{keep, d_nt}),
                  kept_before, tri_bound + 1, temp, temp_bytes, s, "scanning kept triangles");
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
  if (any_closed) {
    DeviceBuffer d_sums{s}, d_centre{s}, d_closed{s}, d_volume{s}, d_cflip{s}, d_flip_slot{s};
    d_sums.ensure(std::size_t(np) * 32, "allocating patch sums");
    patch_centre_kernel<<<blocks_for(np, kThreads), kThreads, 0, s>>>(d, tri_first, tri, positions, d_sums.as<double>());
    PS_CUDA_LAUNCH("launching the patch centre kernel");
    std::vector<double> sums(static_cast<std::size_t>(np) * 4);
    read_back({{sums.data(), d_sums.ptr, sums.size() * 8}}, "reading patch sums");
    const std::vector<double> centre = math::component_centres(np, plan.component, sums.data(), std::size_t(nc));
    upload(d_centre, centre.data(), nc * 3, s, "uploading component centres");
    upload(d_closed, plan.component_closed.data(), nc, s, "uploading closed components");
    d_volume.ensure(std::size_t(np) * 8, "allocating patch volumes");
    patch_volume_kernel<<<blocks_for(np, kThreads), kThreads, 0, s>>>(d, tri_first, tri, positions, d_centre.as<double>(),
                                                                       d_closed.as<std::uint8_t>(), d_volume.as<double>());
    PS_CUDA_LAUNCH("launching the patch volume kernel");
    std::vector<double> volume(static_cast<std::size_t>(np));
    read_back({{volume.data(), d_volume.ptr, volume.size() * 8}}, "reading patch volumes");
    outcome.component_volume.assign(std::size_t(nc), 0.0);
    for (std::int64_t p = 0; p < np; ++p) {
      double& v = outcome.component_volume[std::size_t(plan.component[p])];
      v = math::add(v, volume[std::size_t(p)]);
    }
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
      negate_kernel<<<blocks_for(slot_bound, kThreads), kThreads, 0, s>>>(normals, d_flip_slot.as<std::uint8_t>(), slot_bound);
      PS_CUDA_LAUNCH("launching the normal flip kernel");
    }
  }

  // 6. zero-area triangles out, in order, where there are any (the kernel compares the two totals on the device)
  TriangleOut compacted{cv, cn, cg, cp, nullptr};
  auto compact = [&](ull room) {
    compact_kernel<<<blocks_for(std::int64_t(room), kThreads), kThreads, 0, s>>>(tri, kept_before, room, d_nt, d_kept,
                                                                                compacted);
    PS_CUDA_LAUNCH("launching the compaction kernel");
  };
  if (compact_ahead) compact(ull(tri_bound));
  lap(2);

  // the one wait: flags and totals
  Flags flags{};
  ull totals[3] = {0, 0, 0};  // triangles made, kept, extra normal clusters
  read_back({{&flags, flags_d, sizeof flags},
             {&totals[0], d_nt, sizeof(ull)},
             {&totals[1], d_kept, d_kept ? sizeof(ull) : 0},
             {&totals[2], crease_first + seam, sizeof(ull)}},
            "assembling the mesh on the device");
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
  DeviceBuffer c_tv{s}, c_tn{s}, c_tg{s}, c_tp{s};
  if (compacting && kept < nt) {
    if (!compact_ahead) {
      c_tv.ensure(std::size_t(kept) * 12 + 16, "allocating triangles");
      c_tn.ensure(std::size_t(kept) * 12 + 16, "allocating triangle normals");
      c_tg.ensure(std::size_t(kept) * 4 + 16, "allocating face groups");
      c_tp.ensure(std::size_t(kept) * 4 + 16, "allocating face patches");
      compacted = {c_tv.as<std::uint32_t>(), c_tn.as<std::uint32_t>(), c_tg.as<std::int32_t>(), c_tp.as<std::int32_t>(), nullptr};
      compact(ull(nt));
      PS_CUDA(cudaStreamSynchronize(s), "compacting triangles");
    }
    tri = compacted;
  }
  lap(3);
  const auto t1 = Clock::now();
  outcome.seconds_device = std::chrono::duration<double>(t1 - t0).count();

  // the mesh to host memory
  core::resize_for_overwrite(mesh.positions, std::size_t(nverts) * 3);
  core::resize_for_overwrite(mesh.normals, std::size_t(slots) * 3);
  core::resize_for_overwrite(mesh.triangles, std::size_t(kept) * 3);
  core::resize_for_overwrite(mesh.triangle_normals, std::size_t(kept) * 3);
  core::resize_for_overwrite(mesh.face_group, std::size_t(kept));
  core::resize_for_overwrite(mesh.face_patch, std::size_t(kept));
  const auto t2 = Clock::now();
  // Pageable and freshly allocated: the mesh comes through pinned chunks emptied (and its pages faulted in) by all
  // cores.
  core::copy_home(device,
                  {{mesh.positions.data(), positions, mesh.positions.size() * 8},
                   {mesh.normals.data(), normals, mesh.normals.size() * 8},
                   {mesh.triangles.data(), tri.vertex, mesh.triangles.size() * 4},
                   {mesh.triangle_normals.data(), tri.normal, mesh.triangle_normals.size() * 4},
                   {mesh.face_group.data(), tri.group, mesh.face_group.size() * 4},
                   {mesh.face_patch.data(), tri.patch, mesh.face_patch.size() * 4}},
                  s, cpu_thread_count(0), "copying the mesh to the host");
  outcome.seconds_download = std::chrono::duration<double>(Clock::now() - t2).count();
  outcome.done = true;
  return outcome;
}

template <class T> void download(const SampleViews<T>& device_samples, const SampleViews<T>& host, std::int64_t n) {
  std::vector<core::HostCopy> copies;
  for (int c = 0; c < 3; ++c) {
    copies.push_back({host.pos[c], device_samples.pos[c], std::size_t(n) * sizeof(T)});
    copies.push_back({host.nrm[c], device_samples.nrm[c], std::size_t(n) * sizeof(T)});
  }
  int device = 0;
  PS_CUDA(cudaGetDevice(&device), "copying patch samples to the host");
  // After the work on the legacy default stream, as the samples were made.
  core::copy_home(device, copies, nullptr, cpu_thread_count(0), "copying patch samples to the host");
}

template void download<float>(const SampleViews<float>&, const SampleViews<float>&, std::int64_t);
template void download<double>(const SampleViews<double>&, const SampleViews<double>&, std::int64_t);
template AssemblyOutcome assemble<float>(const AssemblyPlan&, const SampleViews<float>&, PatchMesh&);
template AssemblyOutcome assemble<double>(const AssemblyPlan&, const SampleViews<double>&, PatchMesh&);

}  // namespace parasurf::patches::cuda
