// What the MPI runs share: this process's rank and the world's size, checked calls, and the gathers they use.
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

#include "parasurf/distributed.hpp"
#include "parasurf/error.hpp"

namespace parasurf::cli::mpi {

inline int g_rank = 0, g_size = 1;

inline void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(ErrorKind::Io, std::string("MPI error while ") + what + ": " + std::string(msg, std::size_t(len)));
  }
}

// Every rank's `mine`, concatenated in rank order, on every rank (`root` >= 0: on that rank only).
template <class T> std::vector<T> all_gather(const std::vector<T>& mine, MPI_Datatype type, const char* what, int root = -1) {
  const int n = int(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(g_size)), displs(static_cast<std::size_t>(g_size));
  check(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD), what);
  int total = 0;
  for (int r = 0; r < g_size; ++r) displs[std::size_t(r)] = total, total += counts[std::size_t(r)];
  std::vector<T> all(static_cast<std::size_t>(root < 0 || root == g_rank ? total : 0));
  if (root < 0)
    check(MPI_Allgatherv(mine.data(), n, type, all.data(), counts.data(), displs.data(), type, MPI_COMM_WORLD), what);
  else
    check(MPI_Gatherv(mine.data(), n, type, all.data(), counts.data(), displs.data(), type, root, MPI_COMM_WORLD), what);
  return all;
}

// `v` as `root` has it, on every rank.
template <class T> void broadcast(std::vector<T>& v, MPI_Datatype type, const char* what, int root = 0) {
  unsigned long long n = v.size();
  check(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, root, MPI_COMM_WORLD), what);
  v.resize(std::size_t(n));
  if (n) check(MPI_Bcast(v.data(), int(n), type, root, MPI_COMM_WORLD), what);
}

// Splits the vertices where the level set pinches at a sample as one process does, on a mesh spread over the ranks
// (mpi_pinches.cpp). Level L's part holds vertices v_base[L] + [0, own_v[L]) and triangles t_base[L] + ...; this
// rank's points start at plane zb. The new vertices come last (the last rank's last level grows): own_v, total_v and
// all_v follow.
void split_pinches_across_ranks(std::vector<distributed::IsosurfacePart>& parts, const IsosurfaceOptions& o, const VolumeGeometry& g,
                                std::int64_t zb, std::vector<std::uint64_t>& own_v, const std::vector<std::uint64_t>& v_base,
                                std::vector<std::uint64_t>& total_v, const std::vector<std::uint64_t>& t_base,
                                std::uint64_t& all_v, IsosurfaceReport& rep);

}  // namespace parasurf::cli::mpi
