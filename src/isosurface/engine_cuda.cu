// CUDA slab engine: uploads a slab, runs classify → segment scan (CUB) → generate, and downloads the mesh tail.
// Work arrays grow to the largest slab and are reused; every call is checked.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/device_buffer.hpp"
#include "core/memory.hpp"
#include "core/staging.hpp"
#include "isosurface/cuda_classify.cuh"
#include "isosurface/cuda_count.cuh"
#include "isosurface/cuda_generate.cuh"
#include "isosurface/cuda_near.cuh"
#include "core/voxel_dispatch.hpp"
#include "isosurface/engine.hpp"
#include "isosurface/field_value.hpp"
#include "isosurface/mc_tables.hpp"
#include "parasurf/device.hpp"

namespace parasurf::iso {

namespace {

__global__ void fill_field_kernel(float* out, int which, long long nx, long long ny, long long z0, long long n, double ox, double oy,
                                  double oz, double sx, double sy, double sz) {
  const long long at = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (at >= n) return;
  const long long i = at % nx, j = (at / nx) % ny, k = z0 + at / (nx * ny);
  out[at] = float(field_value(which, field_coordinate(ox, sx, i), field_coordinate(oy, sy, j), field_coordinate(oz, sz, k)));
}

// One half of a group's packed counts (cuda_segments.cuh: vertices low, triangles high), widened for a 64-bit sum.
struct HalfOf {
  int shift;
  __host__ __device__ std::uint64_t operator()(std::uint64_t c) const { return c >> shift & 0xffffffffull; }
};

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class CudaEngine final : public SlabEngine {
 public:
  explicit CudaEngine(int device) : device_(device), link_(device) {
    PS_CUDA(cudaSetDevice(device), "selecting the CUDA device");
    cudaDeviceProp p{};
    PS_CUDA(cudaGetDeviceProperties(&p, device), "reading device properties");
    name_ = std::string("cuda ") + std::to_string(device) + " (" + p.name + ")";
    multiprocessors_ = p.multiProcessorCount;
    dependent_launch_ = p.major >= 9;
    const auto& t = mc::case_tables();
    table_.ensure(t.entries.size() * sizeof(mc::CaseEntry), "allocating the case table");
    PS_CUDA(cudaMemcpy(table_.ptr, t.entries.data(), t.entries.size() * sizeof(mc::CaseEntry), cudaMemcpyHostToDevice),
            "uploading the case table");
    classic_triangles_.ensure(256, "allocating the triangle count table");
    PS_CUDA(cudaMemcpy(classic_triangles_.ptr, t.classic_triangles, 256, cudaMemcpyHostToDevice),
            "uploading the triangle count table");
    ambiguous_.ensure(256, "allocating the ambiguity table");
    PS_CUDA(cudaMemcpy(ambiguous_.ptr, t.ambiguous_faces, 256, cudaMemcpyHostToDevice), "uploading the ambiguity table");
    counters_.ensure(kCounters * sizeof(unsigned long long), "allocating counters");
    // The classification is timed by events (when asked) and the totals come home into mapped pinned memory: a host
    // synchronisation between the passes, and a copy through the driver's pageable staging, each cost microseconds
    // per slab.
    PS_CUDA(cudaEventCreate(&classify_start_), "creating timing events");
    PS_CUDA(cudaEventCreate(&classify_end_), "creating timing events");
    PS_CUDA(cudaEventCreate(&totals_end_), "creating timing events");
    PS_CUDA(cudaEventCreate(&generated_), "creating timing events");
    PS_CUDA(cudaStreamCreateWithFlags(&triangle_stream_, cudaStreamNonBlocking), "creating the triangle stream");
    PS_CUDA(cudaEventCreateWithFlags(&scanned_, cudaEventDisableTiming), "creating stream events");
    PS_CUDA(cudaEventCreateWithFlags(&triangles_done_, cudaEventDisableTiming), "creating stream events");
    PS_CUDA(cudaHostAlloc(&totals_host_, sizeof(cuda::SlabTotals), cudaHostAllocMapped), "allocating the slab totals");
    PS_CUDA(cudaHostGetDevicePointer(&totals_home_, totals_host_, 0), "mapping the slab totals");
  }
  std::string name() const override { return name_; }
  StageSeconds seconds() const override { return seconds_; }
  void time_stages(bool on) override { time_stages_ = on; }
  bool point_vertices() const override { return point_vertices_; }
  bool wrote_direct() const override { return direct_; }
  bool near_sample_vertices(std::vector<std::uint32_t>& ids) override {
    if (!near_listed_) return false;
    ids = near_host_;
    return true;
  }
  bool tie_vertices() const override { return tie_vertices_; }
  // Per segment of 32 points: two words of bits, a word of offsets, a share of its group's counts, its point and
  // centre planes, and its place and planes in the vertex pass's list (five words), over the points it holds in a
  // row of nx.
  double work_bytes_per_point(std::int64_t nx) const override {
    const double segments = double((nx + cuda::kSegmentPoints - 1) / cuda::kSegmentPoints);
    return std::max(2.0, 45.0 * segments / double(std::max<std::int64_t>(nx, 1)));
  }

  void reset(std::uint64_t keep_bytes) override {
    PS_CUDA(cudaSetDevice(device_), "selecting the CUDA device");
    // The same host address may hold other samples in the next run (a caller's array written again).
    uploaded_ = nullptr;
    uploaded_bytes_ = 0;
    uploaded_field_ = -1;
    uploaded_z0_ = -1;
    staged_ = {};
    labels_key_ = {};
    scalars_key_ = {};
    seconds_ = {};
    counts_ = {};
    tie_total_ = vertex_segments_listed_ = 0;
    generated_ahead_ = false;
    level_samples_seen_ = true;
    point_vertices_ = false;
    tie_vertices_ = true;
    time_stages_ = true;
    for (auto& [slot, h] : held_) spare_held_.push_back(std::move(h));
    held_.clear();
    link_.give_back_chunks();  // other jobs may stage through them meanwhile
    std::uint64_t held = 0;
    for (const core::DeviceBuffer* b : arrays()) held += b->bytes;
    for (const auto& h : spare_held_)
      held += h->positions.bytes + h->normals.bytes + h->values.bytes + h->triangles.bytes + h->labels.bytes;
    if (held <= keep_bytes) return;
    for (core::DeviceBuffer* b : arrays()) b->release();
    spare_held_.clear();
  }

  SlabCounts count(const SlabTask& task) override {
    PS_CUDA(cudaSetDevice(device_), "selecting the CUDA device");  // the calling thread may have another
    return core::visit_voxel_type(task.type, [&](auto tag) { return count_t<decltype(tag)>(task); });
  }
  void generate(const SlabTask& task, const MeshTail& out, std::vector<std::uint64_t>& ties) override {
    PS_CUDA(cudaSetDevice(device_), "selecting the CUDA device");
    core::visit_voxel_type(task.type, [&](auto tag) { generate_t<decltype(tag)>(task, out, ties); });
  }
  // The mesh goes into device arrays of the slot's own (copies within the device), reused from fetched slots.
  bool hold(const SlabTask& task, std::size_t slot, std::vector<std::uint64_t>& ties) override {
    PS_CUDA(cudaSetDevice(device_), "selecting the CUDA device");
    const std::size_t nv = counts_.vertices, nt = counts_.triangles;
    std::unique_ptr<HeldMesh> h;
    if (!spare_held_.empty()) {
      h = std::move(spare_held_.back());
      spare_held_.pop_back();
    } else {
      h = std::make_unique<HeldMesh>();
    }
    // What the slot needs beyond what it has, with a quarter of the free memory left for the slabs to come.
    auto more = [](const core::DeviceBuffer& b, std::size_t bytes) { return bytes > b.bytes ? bytes : 0; };
    const std::size_t need = more(h->positions, nv * 12) + (task.normals ? more(h->normals, nv * 12) : 0) +
                             (task.vertex_values() ? more(h->values, nv * 4) : 0) + more(h->triangles, nt * 12) +
                             (task.labels ? more(h->labels, nt * 4) : 0);
    if (need > 0 && need > cuda_engine_free_memory(device_) / 4 * 3) {
      spare_held_.push_back(std::move(h));
      return false;
    }
    h->positions.ensure(std::max<std::size_t>(1, nv * 12), "allocating a held slab's vertices");
    if (task.normals) h->normals.ensure(std::max<std::size_t>(1, nv * 12), "allocating a held slab's normals");
    if (task.vertex_values()) h->values.ensure(std::max<std::size_t>(1, nv * 4), "allocating a held slab's vertex values");
    h->triangles.ensure(std::max<std::size_t>(1, nt * 12), "allocating a held slab's triangles");
    if (task.labels) h->labels.ensure(std::max<std::size_t>(1, nt * 4), "allocating a held slab's triangle labels");
    MeshTail on_device;
    on_device.positions = h->positions.as<float>();
    on_device.normals = task.normals ? h->normals.as<float>() : nullptr;
    on_device.values = task.vertex_values() ? h->values.as<float>() : nullptr;
    on_device.triangles = h->triangles.as<std::uint32_t>();
    on_device.face_labels = task.labels ? h->labels.as<std::int32_t>() : nullptr;
    h->vertices = nv;
    h->triangle_count = nt;
    h->normals_held = task.normals;
    h->values_held = task.vertex_values();
    h->labels_held = task.labels;
    const double download_before = seconds_.download;
    generate(task, on_device, ties);
    seconds_.download = download_before;  // within the device; fetch() times the way home
    held_[slot] = std::move(h);
    return true;
  }
  void fetch(std::size_t slot, const MeshTail& out, std::uint32_t vertex_shift) override {
    PS_CUDA(cudaSetDevice(device_), "selecting the CUDA device");
    auto it = held_.find(slot);
    if (it == held_.end()) throw Error(ErrorKind::InvalidArgument, "CUDA isosurface engine: no slab held in slot " + std::to_string(slot));
    HeldMesh& h = *it->second;
    const auto t0 = Clock::now();
    const std::uint64_t ids = 3 * std::uint64_t(h.triangle_count);
    if (vertex_shift != 0 && ids > 0) {
      cuda::shift_ids_kernel<<<unsigned((ids + 255) / 256), 256>>>(h.triangles.as<std::uint32_t>(), ids, vertex_shift);
      PS_CUDA_LAUNCH("moving a held slab's vertex ids");
    }
    const std::size_t nv = h.vertices, nt = h.triangle_count;
    link_.download({{out.positions, h.positions.ptr, nv * 12},
                   {h.normals_held ? out.normals : nullptr, h.normals.ptr, nv * 12},
                   {h.values_held ? out.values : nullptr, h.values.ptr, nv * 4},
                   {out.triangles, h.triangles.ptr, nt * 12},
                   {h.labels_held ? out.face_labels : nullptr, h.labels.ptr, nt * 4}},
                   "downloading the mesh");
    seconds_.download += since(t0);
    spare_held_.push_back(std::move(it->second));
    held_.erase(it);
  }

 private:
  cuda::RowGrid grid(const SlabTask& t) const {
    const std::int64_t flag_z1 = std::min(t.z1 + 1, t.dims[2]), cell_z1 = std::min(t.z1, t.dims[2] - 1);
    const std::int64_t mask_z1 = std::min(t.z1 + 2, t.dims[2]);
    const std::int64_t segments = (t.dims[0] + cuda::kSegmentPoints - 1) / cuda::kSegmentPoints;
    return {t.dims[0],
            t.dims[1],
            t.z0,
            (flag_z1 - t.z0) * t.dims[1],
            (cell_z1 - t.z0) * t.dims[1],
            (mask_z1 - t.z0) * t.dims[1],
            segments,
            core::FastDivisor(segments),
            core::FastDivisor(t.dims[1])};
  }

  // Which samples a device buffer holds.
  struct SampleKey {
    const void* host = nullptr;
    std::size_t bytes = 0;
    std::int64_t z0 = -1;
    int field = -1;
    bool operator==(const SampleKey&) const = default;
  };
  static SampleKey key_of(const SlabTask& t) {
    const std::size_t bytes = std::size_t(t.data_z1 - t.data_z0) * std::size_t(t.dims[0] * t.dims[1]) *
                              voxel_bytes(t.type);
    return {t.data, bytes, t.data_z0, t.field};
  }

 public:
  void stage(const SlabTask& task) override {
    PS_CUDA(cudaSetDevice(device_), "selecting the CUDA device");
    if (staged_.host && staged_ == key_of(task)) {  // uploaded ahead: the buffers trade places
      std::swap(data_.ptr, staging_.ptr);
      std::swap(data_.bytes, staging_.bytes);
      uploaded_field_ = task.field;
      uploaded_ = task.data;
      uploaded_bytes_ = staged_.bytes;
      uploaded_z0_ = task.data_z0;
    }
    staged_ = {};
    core::visit_voxel_type(task.type, [&](auto tag) { device_values<decltype(tag)>(task); });
  }
  // Runs on the driver's prefetch thread: a stream of its own that does not wait for the kernels of the slab in
  // flight (the legacy default stream would), into the buffer that is not in use.
  void prefetch(const SlabTask& next) override {
    if (next.field >= 0 || !next.data) return;
    PS_CUDA(cudaSetDevice(device_), "selecting the CUDA device");
    const SampleKey key = key_of(next);
    if (!copy_stream_) PS_CUDA(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking), "creating the upload stream");
    staging_.ensure(key.bytes, "allocating the next slab's samples");
    PS_CUDA(cudaMemcpyAsync(staging_.ptr, next.data, key.bytes, cudaMemcpyHostToDevice, copy_stream_),
            "uploading the next slab's samples");
    PS_CUDA(cudaStreamSynchronize(copy_stream_), "uploading the next slab's samples");
    staged_ = key;
  }
  ~CudaEngine() override {
    cudaSetDevice(device_);  // the releasing thread may have another (MPI ranks release it on a helper thread)
    if (copy_stream_) cudaStreamDestroy(copy_stream_);
    if (classify_start_) cudaEventDestroy(classify_start_);
    if (classify_end_) cudaEventDestroy(classify_end_);
    if (totals_end_) cudaEventDestroy(totals_end_);
    if (generated_) cudaEventDestroy(generated_);
    if (triangle_stream_) cudaStreamDestroy(triangle_stream_);
    if (scanned_) cudaEventDestroy(scanned_);
    if (triangles_done_) cudaEventDestroy(triangles_done_);
    if (totals_host_) cudaFreeHost(totals_host_);
  }

 private:
  template <class T>
  mc::SlabValues<T> device_values(const SlabTask& t) {
    const std::size_t bytes = std::size_t(t.data_z1 - t.data_z0) * std::size_t(t.dims[0] * t.dims[1]) * sizeof(T);
    if (t.device_samples) {  // a caller's array on this device: read where it lies
      uploaded_ = nullptr;
      uploaded_bytes_ = 0;
      upload_extra(t.labels, t, labels_, labels_key_, "allocating the slab labels", "uploading the slab labels");
      upload_extra(t.scalars, t, scalars_, scalars_key_, "allocating the slab scalars", "uploading the slab scalars");
      return {static_cast<const T*>(t.data), t.dims[0], t.dims[1], t.dims[2], t.data_z0};
    }
    if (t.data != uploaded_ || bytes != uploaded_bytes_ || t.data_z0 != uploaded_z0_ || t.field != uploaded_field_) {
      const auto t0 = Clock::now();
      data_.ensure(bytes, "allocating the slab samples");
      if (t.field >= 0) {
        // A built-in field: its samples computed here, nothing crosses the bus.
        const long long n = (long long)(t.data_z1 - t.data_z0) * t.dims[0] * t.dims[1];
        fill_field_kernel<<<unsigned((n + 255) / 256), 256>>>(reinterpret_cast<float*>(data_.ptr), t.field, t.dims[0], t.dims[1],
                                                               t.data_z0, n, t.origin[0], t.origin[1], t.origin[2], t.spacing[0],
                                                               t.spacing[1], t.spacing[2]);
        PS_CUDA_LAUNCH("computing the field's samples");
      } else {
        link_.upload(data_.ptr, t.data, bytes, "uploading the slab samples");
      }
      uploaded_field_ = t.field;
      uploaded_ = t.data;
      uploaded_bytes_ = bytes;
      uploaded_z0_ = t.data_z0;
      seconds_.upload += since(t0);
    }
    upload_extra(t.labels, t, labels_, labels_key_, "allocating the slab labels", "uploading the slab labels");
    upload_extra(t.scalars, t, scalars_, scalars_key_, "allocating the slab scalars", "uploading the slab scalars");
    return {data_.as<T>(), t.dims[0], t.dims[1], t.dims[2], t.data_z0};
  }

  // Labels (int32) or scalars (float) on the same slices as the samples, uploaded once per slab.
  struct UploadKey {
    const void* host = nullptr;
    std::int64_t z0 = -1, z1 = -1;
  };
  void upload_extra(const void* host, const SlabTask& t, core::DeviceBuffer& buf, UploadKey& key,
                    const char* allocating, const char* uploading) {
    if (!host || (key.host == host && key.z0 == t.data_z0 && key.z1 == t.data_z1)) return;
    const auto t0 = Clock::now();
    const std::size_t bytes = std::size_t(t.data_z1 - t.data_z0) * std::size_t(t.dims[0] * t.dims[1]) * 4;
    buf.ensure(bytes, allocating);
    PS_CUDA(cudaMemcpy(buf.ptr, host, bytes, cudaMemcpyHostToDevice), uploading);
    key = {host, t.data_z0, t.data_z1};
    seconds_.upload += since(t0);
  }

  template <class T>
  SlabCounts count_t(const SlabTask& task) {
    using R = typename mc::RealOf<T>::type;
    const auto s = device_values<T>(task);
    const auto t0 = Clock::now();
    if (time_stages_) PS_CUDA(cudaEventRecord(classify_start_), "timing the classification");
    const auto g = grid(task);
    const std::size_t rows = std::size_t(g.flag_rows), segments = rows * std::size_t(g.segments);
    const std::size_t groups = (segments + cuda::kGroupSegments - 1) / cuda::kGroupSegments;
    ensure_work_arrays(g, task.tunnels);
    const bool next_centres = task.tunnels && task.z1 + 1 < task.dims[2] && task.dims[1] > 1;
    if (next_centres) {
      next_centres_.ensure(std::size_t((g.ny - 1) * g.segments) * 4, "allocating the next slab's centre vertices");
      cuda::next_slab_centers_kernel<T><<<blocks_for(std::size_t((g.ny - 1) * g.segments)), cuda::kSegmentThreads>>>(
          s, g, R(task.level), lookup(task), task.keep_degenerate, task.ties, task.z1, next_centres_.as<std::uint32_t>());
      PS_CUDA_LAUNCH("counting the next slab's centre vertices");
    }
    // All the counters, the generation's too: a generation always follows its count, and a clear between the
    // passes would wait on the host's round trip for the totals.
    PS_CUDA(cudaMemset(counters_.ptr, 0, kCounters * sizeof(unsigned long long)), "clearing counters");
    if (rows > 0) {
      const std::int64_t slices = g.mask_rows / g.ny;
      const std::int64_t tiles_y = (g.ny + cuda::kFlagTileY - 1) / cuda::kFlagTileY;
      const std::int64_t tiles_z = (slices + cuda::kFlagSlices - 1) / cuda::kFlagSlices;
      if (tiles_y > 65535 || tiles_z > 65535)  // the grid's y and z limits
        throw Error(ErrorKind::LimitReached,
                    "the CUDA isosurface engine takes at most " + std::to_string(65535 * cuda::kFlagTileY) +
                        " samples along y and " + std::to_string(65535 * cuda::kFlagSlices) +
                        " slices per slab; this slab has " + std::to_string(g.ny) + " and " +
                        std::to_string(slices) + " (use --device cpu)");
      // 1- and 2-byte samples in rows of whole 16-byte runs load as vectors (a sample a lane moves too few bytes);
      // wider ones a sample a lane, which is faster for float32.
      constexpr std::int64_t run = 16 / sizeof(T);
      constexpr bool kRunTypes = cuda::kWordCompareType<T>;
      const bool runs = kRunTypes && g.nx % run == 0 && reinterpret_cast<std::uintptr_t>(s.data) % 16 == 0;
      const std::int64_t warp_points = runs ? 32 * run : cuda::kClassifyPoints;
      const dim3 tiles(unsigned((g.nx + warp_points - 1) / warp_points), unsigned(tiles_y), unsigned(tiles_z));
      auto* classify = cuda::classify_kernel<T>;
      if constexpr (kRunTypes) classify = runs ? cuda::classify_runs_kernel<T> : classify;
      classify<<<tiles, dim3(32, cuda::kFlagTileY)>>>(s, g, R(task.level), task.ties, segment_inside_.as<std::uint32_t>(),
                                                      segment_on_level_.as<std::uint32_t>());
      PS_CUDA_LAUNCH("classifying points");
      launch_after_previous(
          cuda::flags_kernel<T>, blocks_for(segments), cuda::kSegmentThreads, 0,
          "flagging points and counting triangles", s, g, R(task.level), segment_inside_.as<std::uint32_t>(),
          segment_on_level_.as<std::uint32_t>(), level_samples(), lookup(task), task.keep_degenerate,
          point_planes_.as<std::uint32_t>(), task.tunnels ? centre_planes_.as<std::uint32_t>() : nullptr,
          segment_local_.as<std::uint32_t>(), group_counts_.as<std::uint64_t>(),
          next_centres ? next_centres_.as<std::uint32_t>() : nullptr, next_centres ? task.z1 : -1,
          counters_.as<unsigned long long>(), vertex_segments_.as<std::uint32_t>(), listed_planes_.as<uint4>(),
          task.tunnels ? listed_centres_.as<std::uint32_t>() : nullptr, counters_.as<unsigned long long>() + 3,
          classic_triangles_.as<std::uint8_t>());
    }
    if (time_stages_) PS_CUDA(cudaEventRecord(classify_end_), "timing the classification");
    check_slab_fits_32_bits(groups);
    scan(group_counts_.as<std::uint64_t>(), group_bases_.as<std::uint64_t>(), groups);
    const std::int64_t owned = std::int64_t((task.z1 - task.z0) * task.dims[1]) * g.segments;
    cuda::SlabTotals totals{};
    generated_ahead_ = false;
    direct_ = false;
    bool common_ahead = false;
    float generate_ms = 0;
    if (rows > 0) {
      totals_.ensure(sizeof(cuda::SlabTotals), "allocating the slab totals");
      // The mesh is written before the totals come home when the arrays already hold a slab like the last one (or
      // what prepare() expected), which saves the host's round trip between the passes; into the caller's arrays
      // when the task brings some (they are the result: nothing is copied after).
      direct_ = takes_direct(task);
      const bool ahead = direct_ ? point_marks_.bytes > 0 && vertex_list_.bytes > 0 : positions_.bytes > 0 && triangles_.bytes > 0;
      launch_after_previous(cuda::totals_kernel, 1, 1, 0, "gathering the slab totals", segment_scan(segments), owned,
                            counters_.as<unsigned long long>(), ahead ? capacity(task) : cuda::MeshCapacity{},
                            totals_.as<cuda::SlabTotals>(), totals_home_);
      if (time_stages_) PS_CUDA(cudaEventRecord(totals_end_), "timing the scan");
      if (ahead) {
        // The common triangle body alone, unless the last slab held samples on the level.
        common_ahead = !level_samples_seen_;
        launch_generation<T>(task, true, true, std::size_t(capacity(task).vertices), segments, common_ahead);
        if (time_stages_) PS_CUDA(cudaEventRecord(generated_), "timing the generation");
      }
      // The totals kernel wrote them home: the stream's end (the generation's too, when it went ahead) makes them
      // visible, without a copy after the kernels.
      PS_CUDA(cudaStreamSynchronize(0), "reading totals");
      totals = *totals_host_;
      level_samples_seen_ = totals.level_samples != 0;
      // (A guess of no samples on the level that proved wrong left the triangles unwritten: generate() makes them.)
      generated_ahead_ = ahead && totals.fits != 0 && !(common_ahead && level_samples_seen_);
      direct_ = direct_ && generated_ahead_;
      if (generated_ahead_ && time_stages_)
        PS_CUDA(cudaEventElapsedTime(&generate_ms, totals_end_, generated_), "timing the generation");
    }
    tie_total_ = totals.ties;
    vertex_segments_listed_ = totals.vertex_segments;
    if (time_stages_) {
      PS_CUDA(cudaEventSynchronize(classify_end_), "classifying the slab");
      float classify_ms = 0;
      PS_CUDA(cudaEventElapsedTime(&classify_ms, classify_start_, classify_end_), "timing the classification");
      seconds_.classify += classify_ms * 1e-3;
      seconds_.generate += generate_ms * 1e-3;
      seconds_.scan += std::max(0.0, since(t0) - (classify_ms + generate_ms) * 1e-3);
    }
    counts_ = {totals.vertices, totals.triangles};
    return counts_;
  }

  // Whether the task's own arrays take the mesh (SlabTask::direct): each one it writes given, no labels or scalars.
  static bool takes_direct(const SlabTask& task) {
    const DirectMesh& d = task.direct;
    return d.positions && d.triangles && (!task.normals || d.normals) && (!task.ranges || d.values) && !task.labels &&
           !task.scalars;
  }
  // What the mesh arrays hold now, for the task's outputs (point marks are written whenever the mesh is made ahead):
  // the caller's arrays when this count writes into them.
  cuda::MeshCapacity capacity(const SlabTask& task) const {
    if (direct_) {
      const unsigned long long v = std::min<unsigned long long>(task.direct.vertex_room, point_marks_.bytes);
      return {v, vertex_list_.bytes / 8, task.direct.triangle_room, ties_.bytes / 8};
    }
    unsigned long long v = std::min<unsigned long long>(positions_.bytes / 12, point_marks_.bytes);
    if (task.normals) v = std::min<unsigned long long>(v, normals_.bytes / 12);
    if (task.vertex_values()) v = std::min<unsigned long long>(v, values_.bytes / 4);
    unsigned long long t = triangles_.bytes / 12;
    if (task.labels) t = std::min<unsigned long long>(t, face_labels_.bytes / 4);
    return {v, vertex_list_.bytes / 8, t, ties_.bytes / 8};
  }

  // The scan adds vertex and triangle counts in the two halves of one word, which holds only while a slab has fewer
  // than 2^32 of each (the mesh's indices are 32-bit anyway). Slabs too small to reach that are not checked; larger
  // ones are summed in 64 bits first, so that a hostile volume meets an error instead of a carry.
  void check_slab_fits_32_bits(std::size_t groups) {
    constexpr std::uint64_t kGroupPoints = std::uint64_t(cuda::kGroupSegments) * cuda::kSegmentPoints;
    constexpr std::uint64_t kMaxVertices = kGroupPoints * 5;  // five slots a point
    constexpr std::uint64_t kMaxTriangles = kGroupPoints * mc::kMaxTriangles;
    constexpr std::uint64_t kLimit = 0xffffffffull;
    if (groups == 0 || std::uint64_t(groups) * std::max(kMaxVertices, kMaxTriangles) <= kLimit) return;
    std::uint64_t sums[2] = {};
    sum_halves(groups);
    PS_CUDA(cudaMemcpy(sums, totals_.ptr, sizeof sums, cudaMemcpyDeviceToHost), "reading the slab sums");
    if (sums[0] > kLimit || sums[1] > kLimit)
      throw Error(ErrorKind::LimitReached, "an isosurface slab has " + std::to_string(sums[0]) + " vertices and " +
                                               std::to_string(sums[1]) +
                                               " triangles; the mesh's 32-bit indices allow at most 4294967295");
  }
  // The classification's and the scan's arrays for a slab of grid g.
  void ensure_work_arrays(const cuda::RowGrid& g, bool tunnels) {
    const std::size_t rows = std::size_t(g.flag_rows), segments = rows * std::size_t(g.segments);
    const std::size_t mask_segments = std::size_t(g.mask_rows * g.segments);
    point_planes_.ensure(segments * 4, "allocating point planes");
    listed_planes_.ensure(segments * sizeof(uint4), "allocating the vertex segment list");
    if (tunnels) {
      centre_planes_.ensure(segments * 4, "allocating centre planes");
      listed_centres_.ensure(segments * 4, "allocating the vertex segment list");
    }
    segment_inside_.ensure(mask_segments * 4, "allocating segment bits");
    segment_on_level_.ensure(mask_segments * 4, "allocating segment bits");
    const std::size_t groups = (segments + cuda::kGroupSegments - 1) / cuda::kGroupSegments;
    segment_local_.ensure(segments * 4, "allocating segment offsets");
    // Segments are listed, and pass 2b finds corner rows, by 32-bit index: 2^32 segments would hold 137 G points,
    // far more than a GPU holds.
    if (mask_segments > 0xffffffffull)
      throw Error(ErrorKind::LimitReached, "a CUDA isosurface slab has " + std::to_string(mask_segments) +
                                               " row segments of 32 points; at most 4294967295 fit");
    vertex_segments_.ensure(segments * 4, "allocating the vertex segment list");
    group_counts_.ensure(groups * 8, "allocating segment counts");
    group_bases_.ensure(groups * 8, "allocating segment offsets");
  }

 public:
  void prepare(const SlabTask& t, std::uint64_t expected_triangles) override {
    PS_CUDA(cudaSetDevice(device_), "selecting the CUDA device");
    data_.ensure(std::size_t(t.data_z1 - t.data_z0) * std::size_t(t.dims[0] * t.dims[1]) * voxel_bytes(t.type),
                 "allocating the slab samples");
    ensure_work_arrays(grid(t), t.tunnels);
    load_kernels(t.type);
    // About one vertex for two triangles (the vertex list holds 8 bytes a vertex).
    const std::size_t nt = std::size_t(expected_triangles), nv = nt / 2;
    if (nt == 0) return;
    reserve_mesh(t, nv, nt, nt / 64);  // ties are rare but for integers
  }

 private:
  // The vertex and triangle halves of the first `groups` group counts, summed in 64 bits into totals_[0] and [1].
  void sum_halves(std::size_t groups) {
    totals_.ensure(2 * sizeof(std::uint64_t), "allocating the slab totals");
    for (int half = 0; half < 2; ++half) {
      const auto in = thrust::make_transform_iterator(group_counts_.as<std::uint64_t>(), HalfOf{32 * half});
      auto* out = totals_.as<std::uint64_t>() + half;
      std::size_t temp = 0;
      PS_CUDA(cub::DeviceReduce::Sum(nullptr, temp, in, out, groups), "sizing the slab sum");
      scan_temp_.ensure(temp, "allocating the slab sum");
      PS_CUDA(cub::DeviceReduce::Sum(scan_temp_.ptr, temp, in, out, groups), "summing the slab counts");
    }
  }
  // Lazy loading (the CUDA default) loads a kernel, and its module first, at the first launch, which would land inside
  // the first slab's time. Asking for the attributes of every kernel a slab of this type may launch loads them now;
  // CUB's scan and sum kernels load by running them on one word. Once per device and voxel type in a process.
  void load_kernels(VoxelType type) {
    static std::mutex mutex;
    static std::set<std::pair<int, VoxelType>> loaded;
    std::lock_guard<std::mutex> lock(mutex);
    if (loaded.count({device_, type})) return;
    cudaFuncAttributes a{};
    auto load = [&](const void* kernel) { PS_CUDA(cudaFuncGetAttributes(&a, kernel), "loading the isosurface kernels"); };
    load(reinterpret_cast<const void*>(fill_field_kernel));
    load(reinterpret_cast<const void*>(cuda::totals_kernel));
    load(reinterpret_cast<const void*>(cuda::vertex_list_kernel));
    load(reinterpret_cast<const void*>(cuda::clear_used_marks_kernel));
    load(reinterpret_cast<const void*>(cuda::any_mark_kernel));
    core::visit_voxel_type(type, [&](auto tag) {
      using T = decltype(tag);
      load(reinterpret_cast<const void*>(cuda::classify_kernel<T>));
      if constexpr (cuda::kWordCompareType<T>) load(reinterpret_cast<const void*>(cuda::classify_runs_kernel<T>));
      load(reinterpret_cast<const void*>(cuda::flags_kernel<T>));
      load(reinterpret_cast<const void*>(cuda::next_slab_centers_kernel<T>));
      load(reinterpret_cast<const void*>(cuda::vertex_compute_kernel<T>));
      load(reinterpret_cast<const void*>(cuda::triangle_kernel<T>));
      load(reinterpret_cast<const void*>(cuda::triangle_common_kernel<T>));
    });
    if (group_counts_.ptr) {  // (always: a slab has at least one row)
      PS_CUDA(cudaMemset(group_counts_.ptr, 0, sizeof(std::uint64_t)), "loading the scan kernels");
      scan(group_counts_.as<std::uint64_t>(), group_bases_.as<std::uint64_t>(), 1);
      sum_halves(1);
      PS_CUDA(cudaDeviceSynchronize(), "loading the isosurface kernels");
    }
    loaded.insert({device_, type});
  }
  // Whether some vertex on a sample equal to the level is used by none of the slab's triangles (which are still on
  // the device), from the vertex pass's point marks, reusing the point-vertex counter for the answer.
  bool point_vertex_unused(const std::uint32_t* triangles, std::uint64_t vertex_base, std::size_t nv, std::size_t nt) {
    auto* marks = point_marks_.as<std::uint8_t>();
    unsigned long long* any = counters_.as<unsigned long long>() + 2;
    PS_CUDA(cudaMemset(any, 0, sizeof(unsigned long long)), "clearing the point-vertex flag");
    if (nt > 0) {
      cuda::clear_used_marks_kernel<<<unsigned((3 * nt + 255) / 256), 256>>>(triangles, 3 * nt,
                                                                             std::uint32_t(vertex_base), nv, marks);
      PS_CUDA_LAUNCH("clearing used point vertices");
    }
    cuda::any_mark_kernel<<<unsigned((nv + 255) / 256), 256>>>(marks, nv, any);
    PS_CUDA_LAUNCH("looking for unused point vertices");
    unsigned long long result = 0;
    PS_CUDA(cudaMemcpy(&result, any, sizeof result, cudaMemcpyDeviceToHost), "reading the unused point-vertex flag");
    return result != 0;
  }
  // Launches `kernel` on `stream` so that it may start while the kernel before it drains: it waits for that kernel's
  // writes itself (cuda::wait_for_previous_kernel). Small slabs are chains of short dependent kernels, whose launch
  // gaps this hides.
  template <class... Params, class... Args>
  void launch_after_previous(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream, const char* what,
                             Args... args) {
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.stream = stream;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = dependent_launch_ ? 1 : 0;
    PS_CUDA(cudaLaunchKernelEx(&config, kernel, Params(args)...), what);
  }
  static unsigned blocks_for(std::size_t threads) {
    return unsigned((threads + cuda::kSegmentThreads - 1) / cuda::kSegmentThreads);
  }
  cuda::SegmentScan segment_scan(std::size_t segments) const {
    return {segment_local_.as<std::uint32_t>(), group_counts_.as<std::uint64_t>(), group_bases_.as<std::uint64_t>(),
            std::int64_t(segments)};
  }
  void scan(const std::uint64_t* in, std::uint64_t* out, std::size_t n) {
    if (n == 0) return;
    std::size_t temp = 0;
    PS_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp, in, out, n), "sizing the segment scan");
    scan_temp_.ensure(temp, "allocating the row scan");
    PS_CUDA(cub::DeviceScan::ExclusiveSum(scan_temp_.ptr, temp, in, out, n), "scanning segments");
  }

  // The generation's kernels for the slab just counted. They read the counts from the device totals, so that they
  // may run before the host has them: their grids cover at most `vertex_bound` vertices and `listed_bound` listed
  // segments (loops take any beyond one wave), and they write nothing unless the totals say that the arrays fit.
  template <class T>
  void launch_generation(const SlabTask& task, bool marks, bool triangles,
                         std::size_t vertex_bound, std::size_t listed_bound, bool common_triangles) {
    using R = typename mc::RealOf<T>::type;
    const auto s = device_values<T>(task);
    const auto g = grid(task);
    const auto* totals = totals_.as<cuda::SlabTotals>();
    const std::int64_t owned_rows = (task.z1 - task.z0) * task.dims[1];
    const auto scanned = segment_scan(std::size_t(g.flag_rows * g.segments));
    const bool side = triangles && g.cell_rows > 0;
    if (side) {
      PS_CUDA(cudaEventRecord(scanned_, 0), "ordering the triangle pass");
      PS_CUDA(cudaStreamWaitEvent(triangle_stream_, scanned_, 0), "ordering the triangle pass");
      // Warps of more segments where that still leaves kTriangleWaves waves of them (pass 2b's comment).
      const std::size_t cell_segments = std::size_t(g.cell_rows * g.segments);
      auto* triangle_pass = common_triangles ? cuda::triangle_common_kernel<T> : cuda::triangle_kernel<T>;
      const std::size_t resident = resident_warps(reinterpret_cast<const void*>(triangle_pass));
      int lane_segments = 1;
      while (lane_segments < cuda::kMaxLaneSegments &&
             cell_segments / (2 * 32 * std::size_t(lane_segments)) >= kTriangleWaves * resident)
        lane_segments *= 2;
      const unsigned triangle_blocks = blocks_for((cell_segments + lane_segments - 1) / lane_segments);
      triangle_pass<<<triangle_blocks, cuda::kSegmentThreads, 0, triangle_stream_>>>(
          s, g, R(task.level), segment_inside_.as<std::uint32_t>(), segment_on_level_.as<std::uint32_t>(),
          level_samples(), point_planes_.as<std::uint32_t>(),
          task.tunnels ? centre_planes_.as<std::uint32_t>() : nullptr, lookup(task), task.keep_degenerate, task.flip,
          scanned, task.vertex_base,
          task.labels ? labels_.as<std::int32_t>() : nullptr,
          mesh_triangles(task), task.labels ? face_labels_.as<std::int32_t>() : nullptr,
          counters_.as<unsigned long long>() + 1, ties_.as<std::uint64_t>(), totals, lane_segments);
      PS_CUDA_LAUNCH("writing triangles");
      PS_CUDA(cudaEventRecord(triangles_done_, triangle_stream_), "ordering the triangle pass");
    }
    if (vertex_bound > 0 && listed_bound > 0 && owned_rows > 0) {
      // Up to a warp a listed segment (the listing spreads short lists), at most one wave.
      constexpr std::size_t kWarps = cuda::kSegmentThreads / 32;
      const std::size_t listed_blocks = (listed_bound + kWarps - 1) / kWarps;
      launch_after_previous(cuda::vertex_list_kernel,
                            wave_blocks(reinterpret_cast<const void*>(cuda::vertex_list_kernel), listed_blocks),
                            cuda::kSegmentThreads, 0, "listing vertices", vertex_segments_.as<std::uint32_t>(),
                            listed_planes_.as<uint4>(), task.tunnels ? listed_centres_.as<std::uint32_t>() : nullptr,
                            totals, owned_rows * g.segments, scanned, vertex_list_.as<std::uint64_t>());
      launch_after_previous(
          cuda::vertex_compute_kernel<T>,
          wave_blocks(reinterpret_cast<const void*>(cuda::vertex_compute_kernel<T>), (vertex_bound + 255) / 256), 256,
          0, "writing vertices", s, g, R(task.interpolation_level()), task.map, vertex_list_.as<std::uint64_t>(), totals,
          mesh_positions(task), task.normals ? mesh_normals(task) : nullptr,
          task.scalars ? scalars_.as<float>() : nullptr, task.scalars ? mesh_values(task) : nullptr,
          counters_.as<unsigned long long>() + 2, marks ? point_marks_.as<std::uint8_t>() : nullptr);
      if (task.ranges)
        launch_after_previous(
            cuda::vertex_range_kernel<T>,
            wave_blocks(reinterpret_cast<const void*>(cuda::vertex_range_kernel<T>), (vertex_bound + 255) / 256), 256,
            0, "writing vertex values", s, g, task.range_level, vertex_list_.as<std::uint64_t>(), totals,
            mesh_values(task));
    }
    if (side) PS_CUDA(cudaStreamWaitEvent(0, triangles_done_, 0), "joining the triangle pass");
  }
  // The arrays the generation writes: the caller's when this count writes into them (direct_), else the engine's.
  float* mesh_positions(const SlabTask& t) const { return direct_ ? t.direct.positions : positions_.as<float>(); }
  float* mesh_normals(const SlabTask& t) const { return direct_ ? t.direct.normals : normals_.as<float>(); }
  float* mesh_values(const SlabTask& t) const { return direct_ ? t.direct.values : values_.as<float>(); }
  std::uint32_t* mesh_triangles(const SlabTask& t) const { return direct_ ? t.direct.triangles : triangles_.as<std::uint32_t>(); }
  static constexpr std::size_t kTriangleWaves = 4;
  // A grid of `needed` blocks, or one wave of resident blocks where that is fewer (the kernel loops over the rest).
  unsigned wave_blocks(const void* kernel, std::size_t needed) {
    return unsigned(std::max<std::size_t>(1, std::min(needed, wave(kernel))));
  }
  std::size_t resident_warps(const void* kernel) { return wave(kernel) * (cuda::kSegmentThreads / 32); }
  // Blocks of 256 threads of a kernel that the device holds at once.
  std::size_t wave(const void* kernel) {
    auto it = wave_.find(kernel);
    if (it == wave_.end()) {
      cudaFuncAttributes a{};
      PS_CUDA(cudaFuncGetAttributes(&a, kernel), "sizing a generation pass");
      int per_multiprocessor = 0;
      PS_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel,
                                                            std::min(a.maxThreadsPerBlock, 256), 0),
              "sizing a generation pass");
      it = wave_.emplace(kernel, std::size_t(std::max(1, per_multiprocessor)) * std::size_t(multiprocessors_)).first;
    }
    return it->second;
  }
  // Grows a mesh array to `bytes` with an eighth to spare, so that the next slab's mesh is likely to be made ahead.
  static void reserve(core::DeviceBuffer& buffer, std::size_t bytes, const char* what) {
    if (bytes > buffer.bytes) buffer.ensure(bytes + bytes / 8, what);
  }
  // Every mesh array the task writes, for `nv` vertices, `nt` triangles and `ties` tie candidates. (The point marks
  // grow whether or not the task asks for them: a mesh made ahead always has its marks.)
  void reserve_mesh(const SlabTask& t, std::size_t nv, std::size_t nt, std::size_t ties) {
    reserve(positions_, std::max<std::size_t>(1, nv * 12), "allocating vertices");
    if (t.normals) reserve(normals_, std::max<std::size_t>(1, nv * 12), "allocating normals");
    if (t.vertex_values()) reserve(values_, std::max<std::size_t>(1, nv * 4), "allocating vertex values");
    reserve(point_marks_, std::max<std::size_t>(1, nv), "allocating point-vertex marks");
    reserve(vertex_list_, nv * 8, "allocating the vertex list");
    reserve(triangles_, std::max<std::size_t>(1, nt * 12), "allocating triangles");
    if (t.labels) reserve(face_labels_, std::max<std::size_t>(1, nt * 4), "allocating triangle labels");
    reserve(ties_, std::max<std::size_t>(8, ties * 8), "allocating tie candidates");
  }

  template <class T>
  void generate_t(const SlabTask& task, const MeshTail& out, std::vector<std::uint64_t>& ties) {
    const auto t0 = Clock::now();
    const std::size_t nv = counts_.vertices, nt = counts_.triangles;
    const std::int64_t owned_rows = (task.z1 - task.z0) * task.dims[1];
    unsigned long long* points = counters_.as<unsigned long long>() + 2;
    if (!generated_ahead_) {
      reserve_mesh(task, nv, nt, tie_total_);
      // A mesh bound for the host is checked for unused vertices on samples equal to the level (below).
      const bool marks = out.positions && nv > 0 && owned_rows > 0;
      if (nv > 0 || nt > 0) {
        // Not made ahead: the totals kernel found the arrays too small (fits = 0), or the slab held samples on the
        // level after all. The arrays hold the slab now.
        PS_CUDA(cudaMemsetAsync(&totals_.as<cuda::SlabTotals>()->fits, 1, 1), "sizing the mesh");
        launch_generation<T>(task, marks, nt > 0, nv, std::size_t(vertex_segments_listed_), !level_samples_seen_);
      }
    }
    // A mesh made ahead is complete: count() waited for the stream that made it, and a second wait costs a slab time.
    if (!generated_ahead_) PS_CUDA(cudaDeviceSynchronize(), "generating the mesh");
    // The vertices the weld after the run must test, listed before the download (which waits for the kernel).
    near_listed_ = task.near_probe.active;
    const std::uint64_t near_capacity = std::max<std::uint64_t>(4096, nv / 8);
    unsigned long long* near_count = counters_.as<unsigned long long>() + 5;
    if (near_listed_ && nv > 0) {
      near_ids_.ensure(near_capacity * 4, "allocating the list of vertices near samples");
      cuda::near_sample_kernel<<<unsigned((nv + 255) / 256), 256>>>(mesh_positions(task), nv, task.near_probe,
                                                                    near_ids_.as<std::uint32_t>(), near_count,
                                                                    near_capacity);
      PS_CUDA_LAUNCH("listing the vertices near samples");
    }
    seconds_.generate += since(t0);
    const auto t1 = Clock::now();
    // (A held slab's tail lies on the device, hold(): copied straight.)
    // Arrays the mesh was written into directly are skipped (no destination).
    const auto to = [](void* host, const void* from) { return host == from ? nullptr : host; };
    link_.download({{to(out.positions, mesh_positions(task)), mesh_positions(task), nv * 12},
                   {task.normals ? to(out.normals, mesh_normals(task)) : nullptr, mesh_normals(task), nv * 12},
                   {to(out.triangles, mesh_triangles(task)), mesh_triangles(task), nt * 12},
                   {task.vertex_values() ? to(out.values, mesh_values(task)) : nullptr, mesh_values(task), nv * 4},
                   {task.labels ? out.face_labels : nullptr, face_labels_.ptr, nt * 4}},
                   "downloading the mesh");
    // Only a mesh bound for the host asks (a resident one is left as it is).
    point_vertices_ = true;
    tie_vertices_ = level_samples_seen_;  // the count pass saw samples on the level in this slab
    // The point-vertex flag and the count of vertices near samples, in one read (counters 2 to 5).
    unsigned long long read[4] = {0, 0, 0, 0};
    if (out.positions || (near_listed_ && nv > 0))
      PS_CUDA(cudaMemcpy(read, points, sizeof read, cudaMemcpyDeviceToHost), "reading the generation's counters");
    if (out.positions) {
      unsigned long long any = read[0];
      if (any != 0 && nv > 0 && owned_rows > 0) any = point_vertex_unused(mesh_triangles(task), task.vertex_base, nv, nt);
      point_vertices_ = any != 0;
    }
    near_host_.clear();
    if (near_listed_ && read[3] > near_capacity) near_listed_ = false;
    if (near_listed_ && read[3] > 0) {
      near_host_.resize(std::size_t(read[3]));
      PS_CUDA(cudaMemcpy(near_host_.data(), near_ids_.ptr, near_host_.size() * 4, cudaMemcpyDeviceToHost),
              "downloading the vertices near samples");
      std::sort(near_host_.begin(), near_host_.end());
    }
    if (tie_total_ > 0) {
      const std::size_t base = ties.size();
      ties.resize(base + tie_total_);
      PS_CUDA(cudaMemcpy(ties.data() + base, ties_.ptr, tie_total_ * 8, cudaMemcpyDeviceToHost), "downloading ties");
    }
    seconds_.download += since(t1);
  }

  // A slab's mesh kept on the device by hold() until fetch().
  struct HeldMesh {
    core::DeviceBuffer positions, normals, values, triangles, labels;
    std::size_t vertices = 0, triangle_count = 0;
    bool normals_held = false, values_held = false, labels_held = false;
  };
  std::map<std::size_t, std::unique_ptr<HeldMesh>> held_;
  std::vector<std::unique_ptr<HeldMesh>> spare_held_;
  int device_;
  std::string name_;
  StageSeconds seconds_;
  SlabCounts counts_;
  unsigned long long tie_total_ = 0, vertex_segments_listed_ = 0;
  bool generated_ahead_ = false;  // count() made the mesh too
  bool level_samples_seen_ = true;
  bool direct_ = false;  // the last count wrote its mesh into the task's own arrays (SlabTask::direct)  // whether the last slab counted held samples on the level (unknown at first)
  std::map<const void*, std::size_t> wave_;  // resident blocks of a kernel on the device
  // ties (count, list), point vertices, segments listed for the vertex pass, whether a sample lies on the level,
  // vertices near samples
  static constexpr int kCounters = 6;
  unsigned long long* level_samples() { return counters_.as<unsigned long long>() + 4; }
  int multiprocessors_ = 1;
  bool dependent_launch_ = false;  // programmatic dependent launch (compute capability 9.0 on)
  bool time_stages_ = true;
  bool point_vertices_ = false;
  bool tie_vertices_ = true;
  bool near_listed_ = false;               // the last generation listed its vertices near samples
  std::vector<std::uint32_t> near_host_;   // those vertices, ascending
  core::DeviceBuffer near_ids_;
  cudaStream_t copy_stream_ = nullptr;
  core::StagedLink link_;  // samples from and meshes into pageable host memory, through pinned chunks
  cudaEvent_t classify_start_ = nullptr, classify_end_ = nullptr, totals_end_ = nullptr, generated_ = nullptr;
  // The triangle pass runs on a stream of its own, beside the vertex passes: all of them only read the flags and
  // the scan, and each is bound by latency at partial occupancy, so they overlap a little.
  cudaStream_t triangle_stream_ = nullptr;
  cudaEvent_t scanned_ = nullptr, triangles_done_ = nullptr;
  cuda::SlabTotals* totals_host_ = nullptr;  // mapped: the totals kernel writes it through totals_home_
  cuda::SlabTotals* totals_home_ = nullptr;
  core::DeviceBuffer staging_;  // the next slab's samples, uploaded ahead
  SampleKey staged_;
  const void* uploaded_ = nullptr;
  std::size_t uploaded_bytes_ = 0;
  int uploaded_field_ = -1;
  std::int64_t uploaded_z0_ = -1;
  // The tables of a task's topology; the MC33 tunnel tables are uploaded on first use.
  mc::CaseLookup lookup(const SlabTask& task) {
    mc::CaseLookup l;
    l.entries = table_.as<mc::CaseEntry>();
    if (task.decider) l.case_flags = ambiguous_.as<std::uint8_t>();
    if (task.tunnels) {
      if (!tunnel_entries_.ptr) {
        const auto& t = mc::tunnel_tables();
        tunnel_flags_.ensure(256, "allocating the tunnel table");
        PS_CUDA(cudaMemcpy(tunnel_flags_.ptr, t.case_flags, 256, cudaMemcpyHostToDevice), "uploading the tunnel table");
        tunnel_block_.ensure(t.block.size() * sizeof(std::uint16_t), "allocating the tunnel table");
        PS_CUDA(cudaMemcpy(tunnel_block_.ptr, t.block.data(), t.block.size() * sizeof(std::uint16_t),
                           cudaMemcpyHostToDevice), "uploading the tunnel table");
        tunnel_entries_.ensure(t.entries.size() * sizeof(mc::CaseEntry), "allocating the tunnel table");
        PS_CUDA(cudaMemcpy(tunnel_entries_.ptr, t.entries.data(), t.entries.size() * sizeof(mc::CaseEntry),
                           cudaMemcpyHostToDevice), "uploading the tunnel table");
      }
      l.case_flags = tunnel_flags_.as<std::uint8_t>();
      l.tunnel_block = tunnel_block_.as<std::uint16_t>();
      l.tunnel_entries = tunnel_entries_.as<mc::CaseEntry>();
    }
    return l;
  }

  // The arrays sized by the slabs (not the tables and counters, made once), for reset().
  std::vector<core::DeviceBuffer*> arrays() {
    return {&totals_, &vertex_list_, &data_, &staging_, &point_planes_, &centre_planes_, &listed_planes_,
            &listed_centres_, &vertex_segments_, &segment_inside_, &segment_on_level_, &segment_local_, &group_counts_,
            &group_bases_, &next_centres_, &scan_temp_, &positions_, &normals_, &triangles_, &ties_, &labels_,
            &scalars_, &values_, &face_labels_, &point_marks_, &near_ids_};
  }
  core::DeviceBuffer totals_, vertex_list_, table_, classic_triangles_, ambiguous_, tunnel_flags_, tunnel_block_, tunnel_entries_,
      counters_, data_, point_planes_, centre_planes_, listed_planes_, listed_centres_, vertex_segments_, segment_inside_, segment_on_level_, segment_local_, group_counts_, group_bases_,
      next_centres_,
      scan_temp_, positions_, normals_, triangles_, ties_, labels_, scalars_,
      values_, face_labels_, point_marks_;
  UploadKey labels_key_, scalars_key_;
};

}  // namespace

std::unique_ptr<SlabEngine> make_cuda_engine(int device) { return std::make_unique<CudaEngine>(device); }

namespace {
std::mutex& kept_mutex() {
  static std::mutex m;
  return m;
}
// Never destroyed: at exit the CUDA runtime may be gone before static destructors run.
std::map<int, std::unique_ptr<SlabEngine>>& kept_engines() {
  static auto* kept = new std::map<int, std::unique_ptr<SlabEngine>>();
  return *kept;
}
}  // namespace

std::unique_ptr<SlabEngine> take_cuda_engine(int device) {
  {
    const std::lock_guard<std::mutex> lock(kept_mutex());
    auto it = kept_engines().find(device);
    if (it != kept_engines().end() && it->second) return std::move(it->second);
  }
  return make_cuda_engine(device);
}

void keep_cuda_engine(int device, std::unique_ptr<SlabEngine> engine) {
  if (!engine) return;
  {
    const std::lock_guard<std::mutex> lock(kept_mutex());
    if (kept_engines()[device]) return;  // (freed below, outside the lock)
  }
  std::size_t free_bytes = 0, total = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  try {
    engine->reset(std::min<std::uint64_t>(std::uint64_t(1) << 30, total / 8));
  } catch (const Error&) {
    return;  // a device in error keeps nothing
  }
  const std::lock_guard<std::mutex> lock(kept_mutex());
  auto& slot = kept_engines()[device];
  if (!slot) slot = std::move(engine);
}

void* cuda_engine_pinned_alloc(std::size_t bytes) {
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();  // a refusal is not sticky: fall back to ordinary memory
    return nullptr;
  }
  return p;
}
void cuda_engine_pinned_free(void* p) { cudaFreeHost(p); }

std::uint64_t cuda_engine_free_memory(int device) {
  std::size_t free_bytes = 0, total = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return 0;
  return free_bytes;
}

}  // namespace parasurf::iso
