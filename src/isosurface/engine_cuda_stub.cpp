// Without a CUDA toolkit the isosurface engine has only its CPU backend.
#include "isosurface/engine.hpp"
#include "isosurface/nets_core.hpp"
#include "parasurf/error.hpp"

namespace parasurf::iso {

std::unique_ptr<SlabEngine> make_cuda_engine(int) {
  throw Error(ErrorKind::Device, "this build has no CUDA backend (configure with a CUDA toolkit)");
}
bool cuda_engine_built() { return false; }
std::uint64_t cuda_free_memory(int) { return 0; }
void* pinned_host_alloc(std::size_t) { return nullptr; }
void pinned_host_free(void*) {}

}  // namespace parasurf::iso

namespace parasurf::nets {
void core_cuda(const Grid&, const Params&, int, Core&) {
  throw Error(ErrorKind::Device, "this build has no CUDA backend (configure with a CUDA toolkit)");
}
}  // namespace parasurf::nets
