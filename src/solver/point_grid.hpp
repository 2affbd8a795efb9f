// Neighbour search among points of up to 8 coordinates: a sparse grid of cells four times the search radius wide,
// so that the points within the radius (max norm) of any point lie in at most 2^dims cells, not 3^dims, and a query
// straddles a cell face along a given axis only half the time (about 1.5^dims cells visited on average).
#pragma once

#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace parasurf::solver {

class PointGrid {
 public:
  PointGrid(std::size_t dims, double radius) : dims_(dims), radius_(radius), width_(4 * radius) {}

  void insert(const double* p, std::size_t id) {
    long long cell[kMaxDims];
    for (std::size_t d = 0; d < dims_; ++d) cell[d] = (long long)std::floor(p[d] / width_);
    cells_[hash(cell)].push_back(id);
  }

  // Calls visit(id) for every inserted point that may lie within the radius of p (a superset: cells share buckets
  // when their hashes collide, and the cells reach further than the radius); the caller measures the distance.
  template <class Visit>
  void near(const double* p, Visit&& visit) const {
    long long lo[kMaxDims], hi[kMaxDims], cell[kMaxDims];
    for (std::size_t d = 0; d < dims_; ++d) {
      lo[d] = (long long)std::floor((p[d] - radius_) / width_);
      hi[d] = (long long)std::floor((p[d] + radius_) / width_);
    }
    for (std::size_t code = 0; code < (std::size_t(1) << dims_); ++code) {
      bool skip = false;
      for (std::size_t d = 0; d < dims_ && !skip; ++d) {
        const bool upper = (code >> d) & 1;
        skip = upper && hi[d] == lo[d];
        cell[d] = upper ? hi[d] : lo[d];
      }
      if (skip) continue;
      const auto it = cells_.find(hash(cell));
      if (it == cells_.end()) continue;
      for (std::size_t id : it->second) visit(id);
    }
  }

  static constexpr std::size_t kMaxDims = 8;

 private:
  std::uint64_t hash(const long long* cell) const {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the cell's integer coordinates
    for (std::size_t d = 0; d < dims_; ++d) h = (h ^ std::uint64_t(cell[d])) * 1099511628211ull;
    return h;
  }

  std::size_t dims_;
  double radius_, width_;
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> cells_;
};

}  // namespace parasurf::solver
