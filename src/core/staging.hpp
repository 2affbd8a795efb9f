// Pinned staging for copies between pageable host memory (a caller's arrays, std::vectors) and a GPU. The driver
// stages a pageable copy through its own small buffer on one thread, far below the link's rate; here a ring of
// pinned buffers takes turns instead, the copy engine filling or draining some while the host's cores empty or fill
// the others. CUDA builds only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace parasurf::core {

// A ring of four 8 MiB buffers: with two, a copy engine that finished a piece waited for the host's threads to hand
// over the next one (the link then ran at 60-70 % of its pinned rate on a 64 MiB copy, against 75-90 % with four);
// pieces much smaller than a few MiB cost more in waits and thread wake-ups than their overlap gains.
constexpr int kStagingBuffers = 4;
constexpr std::size_t kStagingBufferBytes = std::size_t(8) << 20;
// Below this a copy goes straight: the driver's own copy is as fast.
constexpr std::size_t kMinStagedBytes = std::size_t(4) << 20;
// A link's downloads from this size up to kMinStagedBytes (all arrays together) come home through one pinned buffer
// from its second such download on (StagedLink::download): the driver's pageable copies of such sizes run far
// below the link (an H100 host: 2 MiB home in 471 us against 103 us through a pinned buffer emptied by the cores, a
// 64^3 mesh's four arrays in 168 against 112 us). Uploads of such sizes gain little that way (1 MiB: 64 against
// 66 us) and go straight.
constexpr std::size_t kMinBouncedBytes = std::size_t(64) << 10;

// The pinned ring of one device. It outlives its users (pinning anew for each job costs more than staging gains on
// mid-size copies), so a process pins one per device and user at a time; rings are never freed (the runtime may be
// gone when static objects die).
struct StagingRing {
  int device = -1;
  void* host[kStagingBuffers] = {};
  explicit operator bool() const { return host[0] != nullptr; }
};
// The device's spare ring, or a new one pinned for it; an empty ring where pinning fails (a locked-memory limit),
// and the caller copies straight.
StagingRing take_staging(int device);
void give_back_staging(const StagingRing& ring);
bool spare_staging(int device);

// Whether a copy of `bytes` should be staged, for a user that holds a ring already or not: from kMinStagedBytes;
// while the process has pinned none, one copy below 256 MiB goes straight (a one-shot run: pinning would cost more
// than it gains) and the next pins them (a process that moves such arrays again and again).
bool staging_pays(int device, std::size_t bytes, bool holding_ring);

// Whether `host` is pageable (neither pinned nor device memory).
bool pageable(const void* host);

struct HostCopy {
  void* host;
  const void* device;
  std::size_t bytes;
};
// Device arrays into pageable host memory through `ring`, after the work queued on `stream`; returns when the
// bytes are home. The host's side is split over `threads` threads.
void download_staged(const StagingRing& ring, const std::vector<HostCopy>& copies, cudaStream_t stream, int threads);

// Device arrays into host memory after the work queued on `stream` (on `device`); returns when every byte is home.
// Pageable destinations, kMinStagedBytes and more in all, come through a pinned ring emptied by `threads` threads
// where staging pays (the driver's own pageable copy runs on one thread, far below the link); pinned or device
// destinations and small copies go straight. Entries with no bytes are skipped. The one way every capability
// brings results home from a job's stream.
void copy_home(int device, const std::vector<HostCopy>& copies, cudaStream_t stream, int threads, const char* what);

// One device's link for a job that copies again and again (an isosurface engine's slabs): a stream of its own and a
// ring borrowed on the first staged copy, given back when the link goes. Pageable copies from kMinStagedBytes go
// through the ring (when staging_pays), the host's side split over this process's cores, shared among the links
// copying at once (one per GPU of a several-GPU run); pinned or device memory and small copies go straight.
class StagedLink {
 public:
  explicit StagedLink(int device) : device_(device) {}
  ~StagedLink();
  StagedLink(const StagedLink&) = delete;
  StagedLink& operator=(const StagedLink&) = delete;

  // Host to device, once the device has finished all its work (the destination may still be read by it); returns
  // when the bytes are there. `what` names the copy in errors.
  void upload(void* device, const void* host, std::size_t bytes, const char* what);
  // Device to host after the work queued on the legacy default stream; returns when every byte is home. Entries
  // with no host pointer or no bytes are skipped. Small pageable downloads come through the ring's first buffer
  // (kMinBouncedBytes).
  void download(const std::vector<HostCopy>& copies, const char* what);
  // Gives the pinned ring back to the process's spares, no copy being in flight (an engine kept idle between runs
  // holds none); the next staged copy takes one again.
  void give_back_chunks();

 private:
  bool chunks_for(std::size_t bytes);
  bool ring_ready();  // the stream, events and ring made or taken; false where pinning failed
  // The pageable arrays of `copies` (kMinBouncedBytes.. in all) home through the ring's first buffer, the rest
  // straight; false (nothing copied) where they do not fit it or no ring can be had.
  bool bounce_home(const std::vector<HostCopy>& copies, const char* what);
  int device_;
  int small_downloads_ = 0;
  cudaStream_t stream_ = nullptr;
  StagingRing ring_;
  cudaEvent_t chunk_done_[kStagingBuffers] = {};  // a buffer's piece has left (uploads) or arrived (downloads)
  cudaEvent_t work_done_ = nullptr;               // the kernels before a staged download are done
};

}  // namespace parasurf::core
