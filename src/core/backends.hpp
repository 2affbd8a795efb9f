// Whether this build has the CUDA backends, known when the library compiles, so that each capability names its
// CUDA backend at its one dispatch point only where it exists: in a build without CUDA those entry points are
// declared but neither defined nor referenced (a function used only in a discarded `if constexpr` branch needs no
// definition), and asking for them reports the build. Only the library's own sources may use kCudaBuilt: the
// definition that sets it is private to the library target.
#pragma once

#include <string>

namespace parasurf::core {

#ifdef PARASURF_HAVE_CUDA
inline constexpr bool kCudaBuilt = true;
#else
inline constexpr bool kCudaBuilt = false;
#endif

// Throws Error(Device) naming what was asked and that this build has no CUDA backend.
[[noreturn]] void no_cuda_backend(const std::string& what);

}  // namespace parasurf::core
