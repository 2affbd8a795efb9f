// Peer tools measured in the same run as our benchmarks.
#pragma once
#include <cstdint>
#include <string>

namespace parasurf::bench {

struct PeerTiming {
  bool available = false;
  std::string name;      // e.g. "OpenSubdiv 3.5 CpuEvaluator"
  std::string reason;    // why not available
  double seconds = 0;    // median time for `points` evaluations
  std::int64_t points = 0;
};

// OpenSubdiv's CPU evaluator on bicubic B-spline patches of a regular grid mesh of grid x grid quads (about
// (grid-2)^2 regular patches): positions and first derivatives at `points` parametric locations spread over the
// patches, split across `threads` OpenMP threads.
PeerTiming opensubdiv_bicubic(std::int64_t points, int threads, int grid = 34);

}  // namespace parasurf::bench
