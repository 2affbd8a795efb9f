// The heavy part of label-map boundaries, one entry per backend: which cells carry vertices, the quads, the
// neighbour lists and the smoothing, all in index space. The host finishes (world map, triangles, groups).
#pragma once
#include <cstdint>
#include <vector>

#include "isosurface/nets_kernels.hpp"

namespace parasurf::nets {

struct Params {
  int iterations = 0;
  float lambda = 0.5f, mu = 0.0f;  // mu = 0: plain Laplacian steps
  float limit = 0.45f;
  float factor(int step) const { return (step % 2 == 1 && mu != 0.0f) ? mu : lambda; }
};

struct Core {
  std::vector<float> positions;            // 3 per vertex, index space, smoothed
  std::vector<std::uint8_t> junction;      // per vertex
  std::vector<std::uint32_t> quads;        // 4 vertex ids per quad, wound from the larger label to the smaller
  std::vector<std::int32_t> quad_labels;   // (larger, smaller) per quad
  double seconds_faces = 0, seconds_smooth = 0;
};

void core_cpu(const Grid& grid, const Params& params, int threads, Core& out);
// Labels in grid.labels and grid.excluded are host pointers; throws Error(Device) without CUDA.
void core_cuda(const Grid& grid, const Params& params, int device, Core& out);

}  // namespace parasurf::nets
