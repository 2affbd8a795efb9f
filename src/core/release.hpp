// Batches of small heap objects made on many threads are freed on many threads: freeing 10^5 of them on one
// thread, into the arenas of the threads that made them, took as long as some of the work that used them.
#pragma once
#include <cstdint>
#include <vector>

namespace parasurf::core {

template <class T>
void release_in_parallel(std::vector<T>& items, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && items.size() > 1024)
  for (std::int64_t i = 0; i < std::int64_t(items.size()); ++i) items[std::size_t(i)] = T{};
  items.clear();
  items.shrink_to_fit();
}

}  // namespace parasurf::core
