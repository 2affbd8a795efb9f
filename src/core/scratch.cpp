// Process-wide pool of scratch blocks (see scratch.hpp).
#include "core/scratch.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "core/memory.hpp"
#include "parasurf/error.hpp"

namespace parasurf::core {

namespace {

constexpr std::size_t kHuge = std::size_t(2) << 20;

struct FreeBlock {
  std::uint8_t* data;
  std::size_t bytes;
  std::uint64_t returned;  // when it came back (a count of returns)
};

struct Pool {
  std::mutex guard;
  std::vector<FreeBlock> free;  // blocks no engine or result holds, smallest first
  std::uint64_t retained = 0;
  std::uint64_t returns = 0;
};

Pool& pool() {
  static auto* p = new Pool();  // never destroyed: engines in static objects may release after exit begins
  return *p;
}

// Every block the pool has mapped, lent or free, by address: what device copies have landed in it and whether it is
// pinned (pinned_for_device_copy). Its own lock, as blocks are mapped and unmapped outside the pool's.
enum class Pin : std::uint8_t { No, Pinning, Pinned, Failed };
struct Mapped {
  std::size_t bytes;
  std::uint64_t landed = 0;  // bytes device copies have written into it, over all its lendings
  Pin pin = Pin::No;
  UnpinFunction unpin = nullptr;
};
struct Registry {
  std::mutex guard;
  std::map<std::uintptr_t, Mapped> blocks;
  std::uint64_t pinned = 0;
};
Registry& registry() {
  static auto* r = new Registry();  // never destroyed, as the pool
  return *r;
}
// The block holding all of [at, at + bytes), or end(); the registry's lock held.
std::map<std::uintptr_t, Mapped>::iterator block_holding(Registry& r, std::uintptr_t at, std::size_t bytes) {
  auto it = r.blocks.upper_bound(at);
  if (it == r.blocks.begin()) return r.blocks.end();
  --it;
  const std::size_t size = it->second.bytes;
  return bytes <= size && at - it->first <= size - bytes ? it : r.blocks.end();
}
void note_mapped(std::uint8_t* p, std::size_t bytes) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.guard);
  try {
    r.blocks.emplace(reinterpret_cast<std::uintptr_t>(p), Mapped{bytes});
  } catch (const std::bad_alloc&) {  // unlisted: never pinned
  }
}

void unmap(std::uint8_t* p, std::size_t bytes) {
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.guard);
    auto it = r.blocks.find(reinterpret_cast<std::uintptr_t>(p));
    if (it != r.blocks.end()) {
      // Unpinned before the pages go: the driver must not keep a mapping of memory the system reuses.
      if (it->second.pin == Pin::Pinned && it->second.unpin) it->second.unpin(p), r.pinned -= it->second.bytes;
      r.blocks.erase(it);
    }
  }
#ifdef __linux__
  munmap(p, bytes);
#else
  ::operator delete[](p, std::align_val_t(kHuge));
  (void)bytes;
#endif
}

std::uint8_t* map(std::size_t bytes, const char* what) {
#ifdef __linux__
  // Over-map by 2 MiB and trim, so that the block starts on a huge-page boundary and every page of it can be huge.
  void* raw = mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    throw Error(ErrorKind::OutOfMemory, std::string(what) + ": the system refused " + format_bytes(bytes) +
                                            " of work memory (available: " + format_bytes(available_host_memory()) +
                                            ")");
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHuge - 1) & ~std::uintptr_t(kHuge - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t tail = start + bytes + kHuge - (aligned + bytes);
  if (tail) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
  note_mapped(reinterpret_cast<std::uint8_t*>(aligned), bytes);
  return reinterpret_cast<std::uint8_t*>(aligned);
#else
  try {
    auto* block = static_cast<std::uint8_t*>(::operator new[](bytes, std::align_val_t(kHuge)));
    note_mapped(block, bytes);
    return block;
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::OutOfMemory,
                std::string(what) + ": no memory for " + format_bytes(bytes) + " of work memory");
  }
#endif
}

}  // namespace

ScratchBlock::ScratchBlock(ScratchBlock&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

ScratchBlock& ScratchBlock::operator=(ScratchBlock&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

ScratchBlock::~ScratchBlock() { release(); }

void give_scratch(std::uint8_t* data, std::size_t bytes) noexcept {
  Pool& p = pool();
  std::vector<FreeBlock> drop;
  {
    std::lock_guard<std::mutex> lock(p.guard);
    try {
      p.free.push_back({data, bytes, ++p.returns});
      p.retained += bytes;
    } catch (const std::bad_alloc&) {
      unmap(data, bytes);  // no room to list it: straight back to the system
    }
    std::sort(p.free.begin(), p.free.end(), [](const FreeBlock& a, const FreeBlock& b) { return a.bytes < b.bytes; });
    // Over the limit: the blocks that came back longest ago go to the system first. A caller repeating one job then
    // finds its own blocks again; dropping the largest first kept an earlier job's smaller blocks while a job with
    // large results (a 2000² grid of doubles) faulted in every page of them on every call.
    while (p.retained > kScratchRetained && !p.free.empty()) {
      const auto oldest = std::min_element(
          p.free.begin(), p.free.end(), [](const FreeBlock& a, const FreeBlock& b) { return a.returned < b.returned; });
      try {
        drop.push_back(*oldest);
      } catch (const std::bad_alloc&) {
        unmap(oldest->data, oldest->bytes);
      }
      p.retained -= oldest->bytes;
      p.free.erase(oldest);
    }
  }
  for (const FreeBlock& b : drop) unmap(b.data, b.bytes);
}

std::uint8_t* take_scratch(std::size_t n, std::size_t& bytes, std::size_t largest, const char* what) {
  const std::size_t want = (std::max<std::size_t>(n, 1) + kHuge - 1) & ~(kHuge - 1);
  Pool& p = pool();
  {
    std::lock_guard<std::mutex> lock(p.guard);
    // The smallest free block that is large enough (the list is sorted by size), of those the one given back last:
    // a caller repeating a job then takes its own blocks again, which copies into them fill often enough to pin.
    auto it = std::find_if(p.free.begin(), p.free.end(), [&](const FreeBlock& b) { return b.bytes >= want; });
    for (auto same = it; same != p.free.end() && same->bytes == it->bytes; ++same)
      if (same->returned > it->returned) it = same;
    if (it != p.free.end() && it->bytes <= std::max(want, largest)) {
      std::uint8_t* data = it->data;
      bytes = it->bytes;
      p.retained -= it->bytes;
      p.free.erase(it);
      return data;
    }
  }
  bytes = want;
  return map(want, what);
}

void ScratchBlock::release() {
  if (!data_) return;
  give_scratch(data_, bytes_);
  data_ = nullptr, bytes_ = 0;
}

void ScratchBlock::reserve(std::size_t n, bool fault_in, const char* what) {
  if (n > bytes_) {
    release();
    data_ = take_scratch(n, bytes_, std::size_t(-1), what);
    // A block from the pool is resident already (prefault's residency check makes this cheap); a fresh one is
    // faulted in by all threads.
    if (fault_in) prefault(data_, n);
  }
}

bool pinned_for_device_copy(const void* p, std::size_t bytes, PinFunction pin, UnpinFunction unpin) {
  Registry& r = registry();
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::uintptr_t base = 0;
  std::size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(r.guard);
    const auto it = block_holding(r, at, bytes);
    if (it == r.blocks.end()) return false;
    Mapped& b = it->second;
    if (b.pin == Pin::Pinned) return true;
    if (b.pin != Pin::No) return false;  // failed before, or another thread is pinning it
    b.landed += bytes;
    if (b.landed < kPinAfterFills * std::uint64_t(b.bytes)) return false;
    b.pin = Pin::Pinning;  // the block is lent (a copy is landing in it), so it stays mapped meanwhile
    base = it->first, size = b.bytes;
  }
  // Outside the lock: pinning a large block takes a while, and other threads map and unmap blocks meanwhile.
  const bool ok = pin(reinterpret_cast<void*>(base), size);
  std::lock_guard<std::mutex> lock(r.guard);
  Mapped& b = r.blocks.at(base);
  b.pin = ok ? Pin::Pinned : Pin::Failed;
  if (ok) b.unpin = unpin, r.pinned += size;
  return ok;
}

std::uint64_t scratch_pinned_bytes() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.guard);
  return r.pinned;
}

bool scratch_pinned(const void* p) {
  Registry& r = registry();
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<std::mutex> lock(r.guard);
  const auto it = block_holding(r, at, 1);
  return it != r.blocks.end() && it->second.pin == Pin::Pinned;
}

std::uint64_t scratch_retained_bytes() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.guard);
  return p.retained;
}

}  // namespace parasurf::core
