// The systems of a batch grouped by shape (the same number of variables, equations and inequalities, with the same
// degrees): the GPU engines traverse the systems of one shape together, packed in blocks of one size.
#include <algorithm>
#include <cstdint>

#include "parasurf/device.hpp"
#include "solver/engine.hpp"

namespace parasurf::solver {

const BernsteinPoly& batch_poly(const Batch& b, std::size_t i, int p) {
  const auto& eq = b.equations[i];
  return std::size_t(p) < eq.size() ? eq[std::size_t(p)] : b.inequalities(i)[std::size_t(p) - eq.size()];
}

int batch_polys(const Batch& b, std::size_t i) { return int(b.equations[i].size() + b.inequalities(i).size()); }

namespace {

bool same_shape(const Batch& b, std::size_t i, std::size_t j) {
  if (b.equations[i].size() != b.equations[j].size() || batch_polys(b, i) != batch_polys(b, j) ||
      b.variables[i] != b.variables[j])
    return false;
  for (int p = 0; p < batch_polys(b, i); ++p)
    if (batch_poly(b, i, p).degree != batch_poly(b, j, p).degree) return false;
  return true;
}

// A system's shape as one number (FNV-1a over its counts and degrees): equal shapes give equal keys.
std::uint64_t shape_key(const Batch& b, std::size_t i) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t x) { h = (h ^ x) * 1099511628211ull; };
  const int polys = batch_polys(b, i);
  mix(std::uint64_t(b.variables[i])), mix(b.equations[i].size()), mix(std::uint64_t(polys));
  for (int p = 0; p < polys; ++p) {
    const auto& degree = batch_poly(b, i, p).degree;
    mix(degree.size());
    for (int d : degree) mix(std::uint64_t(d));
  }
  return h;
}

}  // namespace

// Comparing each system with the groups one by one chased every system's polynomials on one thread (milliseconds
// for 10^4 systems, more than the GPU's traversal); keys are made on all threads and compared as numbers. A member
// whose shape differs from its group's first (two shapes with one key) sends the batch through the exact
// comparison, one system after another.
std::vector<std::vector<std::size_t>> shape_groups(const Batch& b, int threads) {
  const std::size_t count = b.variables.size();
  std::vector<std::uint64_t> key(count);
#pragma omp parallel for schedule(static) num_threads(threads) if (count > 1024)
  for (std::int64_t i = 0; i < std::int64_t(count); ++i) key[std::size_t(i)] = shape_key(b, std::size_t(i));
  std::vector<std::vector<std::size_t>> groups;
  std::vector<std::uint64_t> group_key;
  std::vector<std::uint32_t> group_of(count);
  std::size_t last = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (groups.empty() || key[i] != group_key[last]) {
      last = std::size_t(std::find(group_key.begin(), group_key.end(), key[i]) - group_key.begin());
      if (last == groups.size()) groups.emplace_back(), group_key.push_back(key[i]);
    }
    groups[last].push_back(i);
    group_of[i] = std::uint32_t(last);
  }
  bool mixed = false;
#pragma omp parallel for schedule(static) reduction(|| : mixed) num_threads(threads) if (count > 1024)
  for (std::int64_t i = 0; i < std::int64_t(count); ++i)
    mixed = mixed || !same_shape(b, groups[group_of[std::size_t(i)]][0], std::size_t(i));
  if (!mixed) return groups;
  groups.clear();
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t g = 0;
    while (g < groups.size() && !same_shape(b, groups[g][0], i)) ++g;
    if (g == groups.size()) groups.emplace_back();
    groups[g].push_back(i);
  }
  return groups;
}

}  // namespace parasurf::solver
