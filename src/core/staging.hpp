// Pinned staging for copies between pageable host memory (a caller's arrays, std::vectors) and a GPU. The driver
// stages a pageable copy through its own small buffer on one thread, far below the link's rate; here two pinned
// chunks take turns instead, the copy engine filling or draining one while the host's cores empty or fill the
// other. CUDA builds only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace parasurf::core {

// Large enough that the copy engine's per-copy cost is small beside the bytes, small enough to pin once.
constexpr std::size_t kStagingChunkBytes = std::size_t(32) << 20;
// Below this a copy goes straight: the driver's own copy is as fast.
constexpr std::size_t kMinStagedBytes = std::size_t(4) << 20;

// A pair of pinned chunks for one device. They outlive their users (pinning anew for each job costs more than
// staging gains on mid-size copies), so a process pins them once per device and user at a time; they are never
// freed (the runtime may be gone when static objects die).
struct StagingPair {
  int device = -1;
  void* host[2] = {nullptr, nullptr};
  explicit operator bool() const { return host[0] != nullptr; }
};
// The device's spare pair, or a new one pinned for it; an empty pair where pinning fails (a locked-memory limit),
// and the caller copies straight.
StagingPair take_staging(int device);
void give_back_staging(const StagingPair& pair);
bool spare_staging(int device);

// Whether a copy of `bytes` should be staged, for a user that holds a pair already or not: from kMinStagedBytes;
// while the process has pinned none, one copy below 256 MiB goes straight (a one-shot run: pinning would cost more
// than it gains) and the next pins them (a process that moves such arrays again and again).
bool staging_pays(int device, std::size_t bytes, bool holding_pair);

// Whether `host` is pageable (neither pinned nor device memory).
bool pageable(const void* host);

struct HostCopy {
  void* host;
  const void* device;
  std::size_t bytes;
};
// Device arrays into pageable host memory through `pair`, after the work queued on `stream`; returns when the
// bytes are home. The host's side is split over `threads` threads.
void download_staged(const StagingPair& pair, const std::vector<HostCopy>& copies, cudaStream_t stream, int threads);

}  // namespace parasurf::core
