// Pinned staging for host <-> device copies (see staging.hpp).
#include "core/staging.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "core/cuda_check.hpp"
#include "core/memory.hpp"

namespace parasurf::core {
namespace {

std::mutex& spare_mutex() {
  static std::mutex m;
  return m;
}
std::vector<StagingPair>& spares() {
  static auto* pairs = new std::vector<StagingPair>;  // leaked on purpose, as the chunks are
  return *pairs;
}
std::atomic<int> mid_size_copies{0};

}  // namespace

bool spare_staging(int device) {
  std::lock_guard<std::mutex> lock(spare_mutex());
  return std::any_of(spares().begin(), spares().end(), [&](const StagingPair& p) { return p.device == device; });
}

StagingPair take_staging(int device) {
  {
    std::lock_guard<std::mutex> lock(spare_mutex());
    for (auto it = spares().begin(); it != spares().end(); ++it)
      if (it->device == device) {
        const StagingPair p = *it;
        spares().erase(it);
        return p;
      }
  }
  StagingPair p;
  p.device = device;
  for (int b = 0; b < 2; ++b)
    if (cudaHostAlloc(&p.host[b], kStagingChunkBytes, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();  // not sticky: the straight copy still works
      if (b == 1) cudaFreeHost(p.host[0]);
      return {};
    }
  return p;
}

void give_back_staging(const StagingPair& pair) {
  if (!pair) return;
  std::lock_guard<std::mutex> lock(spare_mutex());
  spares().push_back(pair);
}

bool staging_pays(int device, std::size_t bytes, bool holding_pair) {
  constexpr std::size_t first_staged_from = std::size_t(256) << 20;
  if (bytes < kMinStagedBytes) return false;
  if (!holding_pair && bytes < first_staged_from && !spare_staging(device) && mid_size_copies++ < 1) return false;
  return true;
}

bool pageable(const void* host) {
  cudaPointerAttributes where{};
  const bool known = cudaPointerGetAttributes(&where, host) == cudaSuccess;
  cudaGetLastError();  // (older drivers report a pageable pointer as an error)
  return !known || where.type == cudaMemoryTypeUnregistered;
}

void download_staged(const StagingPair& pair, const std::vector<HostCopy>& copies, cudaStream_t stream, int threads) {
  std::vector<HostCopy> pieces;  // of at most a chunk
  for (const HostCopy& c : copies)
    for (std::size_t at = 0; at < c.bytes; at += kStagingChunkBytes)
      pieces.push_back({static_cast<char*>(c.host) + at, static_cast<const char*>(c.device) + at,
                        std::min(kStagingChunkBytes, c.bytes - at)});
  if (pieces.empty()) return;
  cudaEvent_t landed[2] = {nullptr, nullptr};
  struct Events {
    cudaEvent_t* e;
    ~Events() {
      for (int b = 0; b < 2; ++b)
        if (e[b]) cudaEventDestroy(e[b]);
    }
  } owned{landed};
  for (int b = 0; b < 2; ++b)
    PS_CUDA(cudaEventCreateWithFlags(&landed[b], cudaEventDisableTiming), "creating a staging event");
  auto bring = [&](std::size_t p) {
    PS_CUDA(cudaMemcpyAsync(pair.host[p & 1], pieces[p].device, pieces[p].bytes, cudaMemcpyDeviceToHost, stream),
            "copying results to the host");
    PS_CUDA(cudaEventRecord(landed[p & 1], stream), "copying results to the host");
  };
  try {
    bring(0);
    for (std::size_t p = 0; p < pieces.size(); ++p) {
      if (p + 1 < pieces.size()) bring(p + 1);  // into the chunk emptied in the last round
      PS_CUDA(cudaEventSynchronize(landed[p & 1]), "copying results to the host");
      parallel_copy(pieces[p].host, pair.host[p & 1], pieces[p].bytes, threads);
    }
  } catch (...) {
    cudaStreamSynchronize(stream);  // no copy may still be landing in the chunks when they go back
    cudaGetLastError();
    throw;
  }
}

}  // namespace parasurf::core
