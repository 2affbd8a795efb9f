// Pinned staging for host <-> device copies (see staging.hpp).
#include "core/staging.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "core/cuda_check.hpp"
#include "core/memory.hpp"
#include "core/scratch.hpp"
#include "parasurf/device.hpp"

namespace parasurf::core {
namespace {

std::mutex& spare_mutex() {
  static std::mutex m;
  return m;
}
std::vector<StagingRing>& spares() {
  static auto* rings = new std::vector<StagingRing>;  // leaked on purpose, as the buffers are
  return *rings;
}
std::atomic<int> mid_size_copies{0};

}  // namespace

bool spare_staging(int device) {
  std::lock_guard<std::mutex> lock(spare_mutex());
  return std::any_of(spares().begin(), spares().end(), [&](const StagingRing& r) { return r.device == device; });
}

StagingRing take_staging(int device) {
  {
    std::lock_guard<std::mutex> lock(spare_mutex());
    for (auto it = spares().begin(); it != spares().end(); ++it)
      if (it->device == device) {
        const StagingRing r = *it;
        spares().erase(it);
        return r;
      }
  }
  StagingRing r;
  r.device = device;
  for (int b = 0; b < kStagingBuffers; ++b)
    if (cudaHostAlloc(&r.host[b], kStagingBufferBytes, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();  // not sticky: the straight copy still works
      for (int q = 0; q < b; ++q) cudaFreeHost(r.host[q]);
      return {};
    }
  return r;
}

void give_back_staging(const StagingRing& ring) {
  if (!ring) return;
  std::lock_guard<std::mutex> lock(spare_mutex());
  spares().push_back(ring);
}

bool staging_pays(int device, std::size_t bytes, bool holding_ring) {
  constexpr std::size_t first_staged_from = std::size_t(256) << 20;
  if (bytes < kMinStagedBytes) return false;
  if (!holding_ring && bytes < first_staged_from && !spare_staging(device) && mid_size_copies++ < 1) return false;
  return true;
}

bool pageable(const void* host) {
  cudaPointerAttributes where{};
  const bool known = cudaPointerGetAttributes(&where, host) == cudaSuccess;
  cudaGetLastError();  // (older drivers report a pageable pointer as an error)
  return !known || where.type == cudaMemoryTypeUnregistered;
}

namespace {

bool pin_block(void* p, std::size_t bytes) {
  // Portable: pinned for every device's context, as a several-GPU run's slabs land in one mesh.
  if (cudaHostRegister(p, bytes, cudaHostRegisterPortable) == cudaSuccess) return true;
  cudaGetLastError();  // not sticky: the block is copied through staging instead
  return false;
}
void unpin_block(void* p) {
  cudaHostUnregister(p);
  cudaGetLastError();
}
// Whether a pageable destination is a block of the result pool that a job repeated by this process keeps landing
// in: then it is pinned (once) and the copy goes straight (core/scratch.hpp). PARASURF_PIN_RESULTS=0 keeps every
// result pageable, for hosts where page-locked memory is scarce.
bool lands_pinned(const void* host, std::size_t bytes) {
  static const bool enabled = [] {
    const char* text = std::getenv("PARASURF_PIN_RESULTS");
    return !(text && std::string(text) == "0");
  }();
  return enabled && pinned_for_device_copy(host, bytes, pin_block, unpin_block);
}

// Pieces of at most a buffer, brought home in turn through the ring: the copy engine fills the buffers ahead while
// the host's threads empty the oldest. `landed` holds one event per buffer.
void bring_home(const StagingRing& ring, const std::vector<HostCopy>& pieces, cudaStream_t stream,
                const cudaEvent_t* landed, int threads, const char* what) {
  constexpr std::size_t n = kStagingBuffers;
  auto bring = [&](std::size_t p) {
    PS_CUDA(cudaMemcpyAsync(ring.host[p % n], pieces[p].device, pieces[p].bytes, cudaMemcpyDeviceToHost, stream), what);
    PS_CUDA(cudaEventRecord(landed[p % n], stream), what);
  };
  for (std::size_t p = 0; p + 1 < n && p < pieces.size(); ++p) bring(p);
  for (std::size_t p = 0; p < pieces.size(); ++p) {
    if (p + n - 1 < pieces.size()) bring(p + n - 1);  // into the buffer emptied in the last round
    PS_CUDA(cudaEventSynchronize(landed[p % n]), what);
    parallel_copy(pieces[p].host, ring.host[p % n], pieces[p].bytes, threads);
  }
}

// The pieces of a staged transfer of `total` bytes: about a quarter of it, so that what nothing overlaps (the first
// piece's fill on the way up, the last one's emptying on the way home) is short; at least 2 MiB, where each piece's
// fixed costs (a copy, an event, waking the threads) would add up; at most a buffer.
std::size_t piece_bytes(std::size_t total) {
  return std::clamp<std::size_t>((total / 4 + 4095) & ~std::size_t(4095), std::size_t(2) << 20, kStagingBufferBytes);
}

std::vector<HostCopy> chunk_pieces(const std::vector<HostCopy>& copies) {
  std::size_t total = 0;
  for (const HostCopy& c : copies) total += c.bytes;
  const std::size_t piece = piece_bytes(total);
  std::vector<HostCopy> pieces;
  for (const HostCopy& c : copies)
    for (std::size_t at = 0; at < c.bytes; at += piece)
      pieces.push_back(
          {static_cast<char*>(c.host) + at, static_cast<const char*>(c.device) + at, std::min(piece, c.bytes - at)});
  return pieces;
}

// The host's threads each link may use to fill or empty its buffers: links on several GPUs copy at once.
std::atomic<int> links_copying{0};
struct CopyingShare {
  CopyingShare() { ++links_copying; }
  ~CopyingShare() { --links_copying; }
  int threads() const { return std::max(1, cpu_thread_count(0) / std::max(1, links_copying.load())); }
};

}  // namespace

void download_staged(const StagingRing& ring, const std::vector<HostCopy>& copies, cudaStream_t stream, int threads) {
  const std::vector<HostCopy> pieces = chunk_pieces(copies);
  if (pieces.empty()) return;
  cudaEvent_t landed[kStagingBuffers] = {};
  struct Events {
    cudaEvent_t* e;
    ~Events() {
      for (int b = 0; b < kStagingBuffers; ++b)
        if (e[b]) cudaEventDestroy(e[b]);
    }
  } owned{landed};
  for (int b = 0; b < kStagingBuffers; ++b)
    PS_CUDA(cudaEventCreateWithFlags(&landed[b], cudaEventDisableTiming), "creating a staging event");
  try {
    bring_home(ring, pieces, stream, landed, threads, "copying results to the host");
  } catch (...) {
    cudaStreamSynchronize(stream);  // no copy may still be landing in the buffers when they go back
    cudaGetLastError();
    throw;
  }
}

void copy_home(int device, const std::vector<HostCopy>& copies, cudaStream_t stream, int threads, const char* what) {
  std::size_t total = 0, pageable_bytes = 0;
  for (const auto& c : copies) total += c.bytes;
  std::vector<char> staged_copy(copies.size(), 0);
  if (total >= kMinStagedBytes)
    for (std::size_t i = 0; i < copies.size(); ++i)
      if (copies[i].bytes && pageable(copies[i].host) && !lands_pinned(copies[i].host, copies[i].bytes))
        staged_copy[i] = 1, pageable_bytes += copies[i].bytes;
  StagingRing ring;
  if (pageable_bytes > 0 && staging_pays(device, pageable_bytes, false)) ring = take_staging(device);
  struct GiveBack {
    StagingRing r;
    ~GiveBack() { give_back_staging(r); }
  } give_back{ring};
  std::vector<HostCopy> staged;
  for (std::size_t i = 0; i < copies.size(); ++i)
    if (ring && staged_copy[i])
      staged.push_back(copies[i]);
    else if (copies[i].bytes)
      PS_CUDA(cudaMemcpyAsync(copies[i].host, copies[i].device, copies[i].bytes, cudaMemcpyDefault, stream), what);
  // The straight copies are queued ahead of the staged ones on the same stream: one wait covers both.
  if (!staged.empty()) download_staged(ring, staged, stream, threads);
  PS_CUDA(cudaStreamSynchronize(stream), what);
}

StagedLink::~StagedLink() {
  cudaSetDevice(device_);  // the releasing thread may have another
  if (stream_) {
    cudaStreamSynchronize(stream_);  // the buffers go back to the spares with no copy in flight
    cudaStreamDestroy(stream_);
  }
  for (auto& e : chunk_done_)
    if (e) cudaEventDestroy(e);
  if (work_done_) cudaEventDestroy(work_done_);
  give_back_staging(ring_);
}

void StagedLink::give_back_chunks() {
  if (!ring_) return;
  if (stream_) PS_CUDA(cudaStreamSynchronize(stream_), "finishing the staged copies");
  give_back_staging(ring_);
  ring_ = {};
}

bool StagedLink::chunks_for(std::size_t bytes) { return staging_pays(device_, bytes, bool(ring_)) && ring_ready(); }

bool StagedLink::ring_ready() {
  if (!stream_) {
    PS_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating the staging stream");
    for (int b = 0; b < kStagingBuffers; ++b)
      PS_CUDA(cudaEventCreateWithFlags(&chunk_done_[b], cudaEventDisableTiming), "creating a staging event");
    PS_CUDA(cudaEventCreateWithFlags(&work_done_, cudaEventDisableTiming), "creating a staging event");
  }
  if (!ring_) ring_ = take_staging(device_);
  return bool(ring_);
}

bool StagedLink::bounce_home(const std::vector<HostCopy>& copies, const char* what) {
  // 256-byte offsets in the buffer, as the device's own allocations are aligned.
  const auto slot = [](std::size_t bytes) { return (bytes + 255) & ~std::size_t(255); };
  std::vector<char> bounced(copies.size(), 0);
  std::size_t room = 0;
  for (std::size_t i = 0; i < copies.size(); ++i)
    if (copies[i].host && copies[i].bytes > 0 && pageable(copies[i].host))
      bounced[i] = 1, room += slot(copies[i].bytes);
  if (room == 0 || room > kStagingBufferBytes || !ring_ready()) return false;
  for (std::size_t i = 0; i < copies.size(); ++i)  // pinned or device destinations: straight
    if (!bounced[i] && copies[i].host && copies[i].bytes > 0)
      PS_CUDA(cudaMemcpy(copies[i].host, copies[i].device, copies[i].bytes, cudaMemcpyDefault), what);
  PS_CUDA(cudaEventRecord(work_done_, cudaStreamLegacy), what);
  PS_CUDA(cudaStreamWaitEvent(stream_, work_done_, 0), what);
  auto* buffer = static_cast<char*>(ring_.host[0]);
  for (std::size_t i = 0, at = 0; i < copies.size(); ++i)
    if (bounced[i]) {
      PS_CUDA(cudaMemcpyAsync(buffer + at, copies[i].device, copies[i].bytes, cudaMemcpyDeviceToHost, stream_), what);
      at += slot(copies[i].bytes);
    }
  PS_CUDA(cudaStreamSynchronize(stream_), what);
  const CopyingShare share;
  for (std::size_t i = 0, at = 0; i < copies.size(); ++i)
    if (bounced[i]) {
      parallel_copy(copies[i].host, buffer + at, copies[i].bytes, share.threads());
      at += slot(copies[i].bytes);
    }
  return true;
}

void StagedLink::upload(void* device, const void* host, std::size_t bytes, const char* what) {
  if (!pageable(host) || !chunks_for(bytes)) {
    PS_CUDA(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), what);
    return;
  }
  // The staging stream does not wait for the default stream by itself.
  PS_CUDA(cudaDeviceSynchronize(), what);
  const CopyingShare share;
  const std::size_t piece = piece_bytes(bytes);
  for (std::size_t at = 0, k = 0; at < bytes; at += piece, ++k) {
    const std::size_t b = k % kStagingBuffers, n = std::min(piece, bytes - at);
    PS_CUDA(cudaEventSynchronize(chunk_done_[b]), what);  // its last piece has left
    parallel_copy(ring_.host[b], static_cast<const char*>(host) + at, n, share.threads());
    PS_CUDA(cudaMemcpyAsync(static_cast<char*>(device) + at, ring_.host[b], n, cudaMemcpyHostToDevice, stream_), what);
    PS_CUDA(cudaEventRecord(chunk_done_[b], stream_), what);
  }
  PS_CUDA(cudaStreamSynchronize(stream_), what);
}

void StagedLink::download(const std::vector<HostCopy>& copies, const char* what) {
  std::size_t total = 0;
  for (const HostCopy& c : copies) total += c.host ? c.bytes : 0;
  if (total >= kMinBouncedBytes && total < kMinStagedBytes) {
    small_downloads_ = std::min(small_downloads_ + 1, 2);
    if ((ring_ || small_downloads_ >= 2) && bounce_home(copies, what)) return;
  }
  // Which arrays are pageable, asked only where chunks could serve (each query costs a visible share of a small run).
  std::vector<char> staged(copies.size(), 0);
  std::size_t staged_bytes = 0;
  if (total >= kMinStagedBytes)
    for (std::size_t i = 0; i < copies.size(); ++i) {
      staged[i] = copies[i].host && copies[i].bytes > 0 && pageable(copies[i].host) &&
                  !lands_pinned(copies[i].host, copies[i].bytes);
      staged_bytes += staged[i] ? copies[i].bytes : 0;
    }
  const bool chunks = staged_bytes > 0 && chunks_for(staged_bytes);
  std::vector<HostCopy> through;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    if (!copies[i].host || copies[i].bytes == 0) continue;
    if (chunks && staged[i])
      through.push_back(copies[i]);
    else
      PS_CUDA(cudaMemcpy(copies[i].host, copies[i].device, copies[i].bytes, cudaMemcpyDefault), what);
  }
  if (through.empty()) return;
  PS_CUDA(cudaEventRecord(work_done_, cudaStreamLegacy), what);
  PS_CUDA(cudaStreamWaitEvent(stream_, work_done_, 0), what);
  const CopyingShare share;
  bring_home(ring_, chunk_pieces(through), stream_, chunk_done_, share.threads(), what);
}

}  // namespace parasurf::core
