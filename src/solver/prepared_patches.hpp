// What the solver's applications on a patch set (closest points, rays) derive from each patch, kept for the next
// call on the same patches: a caller that asks one query or one ray at a time (snapping, picking) otherwise
// prepares the whole model on every call, which costs a millisecond for the 32-patch teapot against microseconds
// for the query itself. Patch sets are recognised by their contents (degrees and control points, compared exactly),
// a few of them at a time, the least recently used dropped first.
#pragma once
#include <algorithm>
#include <cstring>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "core/region_errors.hpp"
#include "parasurf/bezier.hpp"

namespace parasurf::solver {

template <class Prepared>
class PreparedPatches {
 public:
  using Set = std::vector<Prepared>;

  // The prepared patches of `patches`, from the cache or made by prepare(patch) for each (on `threads` threads from
  // 8 patches on: a model has few patches, each tens of microseconds of work, and waking threads for fewer costs
  // more; outside the cache's lock).
  std::shared_ptr<const Set> get(const std::vector<BezierSurface>& patches, int threads,
                                 const std::function<Prepared(const BezierSurface&)>& prepare) {
    std::vector<double> key = key_of(patches);
    if (!key.empty()) {
      std::lock_guard<std::mutex> lock(guard_);
      for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->key.size() == key.size() && std::memcmp(it->key.data(), key.data(), key.size() * sizeof(double)) == 0) {
          entries_.splice(entries_.begin(), entries_, it);  // the most recently used first
          return entries_.front().set;
        }
    }
    auto made = std::make_shared<Set>(patches.size());
    core::RegionErrors errors;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (patches.size() >= 8)
    for (std::size_t p = 0; p < patches.size(); ++p) errors.capture([&] { (*made)[p] = prepare(patches[p]); });
    errors.rethrow();
    std::shared_ptr<const Set> set = std::move(made);
    if (key.empty()) return set;  // too large to keep
    std::lock_guard<std::mutex> lock(guard_);
    entries_.push_front({std::move(key), set});
    if (entries_.size() > kEntries) entries_.pop_back();
    return set;
  }

 private:
  static constexpr std::size_t kEntries = 4;
  // Doubles of control points: models up to about 1,300 bicubic patches are kept (a large model's preparation is
  // shared by its large batches anyway, and the cache should not hold hundreds of megabytes).
  static constexpr std::size_t kLargestKey = std::size_t(1) << 16;

  // Every patch's degrees and control points (and weights), one after the other; empty beyond kLargestKey.
  static std::vector<double> key_of(const std::vector<BezierSurface>& patches) {
    std::size_t size = 0;
    for (const BezierSurface& s : patches) size += 3 + s.points.size() + s.weights.size();
    if (size > kLargestKey) return {};
    std::vector<double> key;
    key.reserve(size);
    for (const BezierSurface& s : patches) {
      key.push_back(double(s.degree_u));
      key.push_back(double(s.degree_v));
      key.push_back(double(s.weights.size()));
      key.insert(key.end(), s.points.begin(), s.points.end());
      key.insert(key.end(), s.weights.begin(), s.weights.end());
    }
    return key;
  }

  struct Entry {
    std::vector<double> key;
    std::shared_ptr<const Set> set;
  };
  std::mutex guard_;
  std::list<Entry> entries_;
};

}  // namespace parasurf::solver
