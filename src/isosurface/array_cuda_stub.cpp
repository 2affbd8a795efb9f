// Without a CUDA toolkit: no device arrays, no device buffers.
#include "isosurface/array_mesh.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

Buffer Buffer::cuda(int, std::size_t) {
  throw Error(ErrorKind::Device, "this build has no CUDA backend (configure with a CUDA toolkit)");
}
void cuda_wait_stream(int, std::uintptr_t) {}
int cuda_device_of(const void*) { return -1; }

namespace iso {
ArrayMesh marching_cubes_cuda_array(const ArrayView3& volume, const ArrayIsosurfaceOptions&) {
  throw Error(ErrorKind::Device, "a CUDA array (device " + std::to_string(volume.device) +
                                     ") was given but this build has no CUDA backend (configure with a CUDA toolkit)");
}
}  // namespace iso

}  // namespace parasurf
