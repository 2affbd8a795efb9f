// Without a CUDA toolkit the FFD sessions run on the CPU only.
#include "ffd/ffd_backend.hpp"
#include "parasurf/error.hpp"

namespace parasurf::ffd {
template <class T>
std::unique_ptr<CudaSession<T>> make_cuda_session(const SessionData<T>&) {
  throw Error(ErrorKind::Device, "this build has no CUDA backend (configure with a CUDA toolkit)");
}
template std::unique_ptr<CudaSession<float>> make_cuda_session(const SessionData<float>&);
template std::unique_ptr<CudaSession<double>> make_cuda_session(const SessionData<double>&);
}  // namespace parasurf::ffd
