// Welding and mesh assembly of a tessellation on the device, from samples that never leave it. The host's
// assemble() in tessellate.cpp is the reference: the same vertex numbering (plan_walk.hpp), the same seam-normal
// clustering in sample order, the same triangle order, the same zero-area rule and outward orientation.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "parasurf/tessellate.hpp"
#include "patches/batch.hpp"
#include "patches/plan_walk.hpp"

namespace parasurf::patches {

// The plan in host memory, as PlanView arrays (host pointers; the backend uploads them), plus what assembly reads.
struct AssemblyPlan {
  PlanView view;                          // host pointers
  const std::uint8_t* plain = nullptr;    // per patch: all 2 nu nv grid triangles, none degenerate by topology
  const std::int32_t* group = nullptr;    // per patch
  const std::int32_t* component = nullptr;             // per patch
  std::vector<std::uint8_t> component_closed;          // per component
  std::int64_t patches = 0, edges = 0, seam_vertices = 0, vertices = 0, samples = 0;
  double cos_crease = 1;
  bool keep_degenerate = false, orient = true;
};

struct AssemblyOutcome {
  bool done = false;                      // false: assemble on the host instead (why_not says why)
  std::string why_not;
  std::int64_t crease_vertices = 0;
  std::vector<double> component_volume;   // when orient found a closed component; else empty
  double seconds_device = 0;              // welding and assembly on the device
  // its phases, host wall time: sizes and plan upload; counts and seams launched; vertices, triangles and
  // compaction launched (with the orientation's two waits where it runs); the wait for the device to finish
  double phase_seconds[4] = {0, 0, 0, 0};
  double seconds_download = 0;            // the mesh copied to host memory
};

namespace cuda {
// Assembles into mesh (patch triangles only; polyhedra are the caller's). Returns done = false, with nothing
// written, where the device lacks the memory or a seam vertex has more normal clusters than it holds.
template <class T>
AssemblyOutcome assemble(const AssemblyPlan& plan, const SampleViews<T>& device_samples, PatchMesh& mesh);
// Copies n samples from the device to host arrays (the host assembly's fallback, the hybrid batches).
template <class T> void download(const SampleViews<T>& device_samples, const SampleViews<T>& host, std::int64_t n);
}  // namespace cuda

// The same where this build has CUDA (batch.hpp's `gpu`), Error(Device) without it.
namespace gpu {
template <class T>
AssemblyOutcome assemble(const AssemblyPlan& plan, const SampleViews<T>& device_samples, PatchMesh& mesh);
template <class T> void download(const SampleViews<T>& device_samples, const SampleViews<T>& host, std::int64_t n);
}  // namespace gpu

}  // namespace parasurf::patches
