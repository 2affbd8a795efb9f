// CPU-only build: the CUDA patch backend reports itself unavailable.
#include "parasurf/error.hpp"
#include "patches/batch.hpp"

namespace parasurf::patches::cuda {

bool available() { return false; }

template <class T>
BatchTiming evaluate(const HostBatch<T>&, PatchStrategy, const SampleViews<T>&, bool) {
  throw Error(ErrorKind::Device, "this build of parasurf has no CUDA backend");
}
template BatchTiming evaluate<float>(const HostBatch<float>&, PatchStrategy, const SampleViews<float>&, bool);
template BatchTiming evaluate<double>(const HostBatch<double>&, PatchStrategy, const SampleViews<double>&, bool);

}  // namespace parasurf::patches::cuda
