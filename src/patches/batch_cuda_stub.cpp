// CPU-only build: the CUDA patch backend reports itself unavailable.
#include "parasurf/error.hpp"
#include "patches/assemble.hpp"
#include "patches/batch.hpp"

namespace parasurf::patches::cuda {

bool available() { return false; }

template <class T>
BatchTiming evaluate(const HostBatch<T>&, PatchStrategy, const SampleViews<T>&, bool, const OnDevice<T>&) {
  throw Error(ErrorKind::Device, "this build of parasurf has no CUDA backend");
}
template BatchTiming evaluate<float>(const HostBatch<float>&, PatchStrategy, const SampleViews<float>&, bool,
                                     const OnDevice<float>&);
template BatchTiming evaluate<double>(const HostBatch<double>&, PatchStrategy, const SampleViews<double>&, bool,
                                      const OnDevice<double>&);

template <class T> AssemblyOutcome assemble(const AssemblyPlan&, const SampleViews<T>&, PatchMesh&) {
  throw Error(ErrorKind::Device, "this build of parasurf has no CUDA backend");
}
template <class T> void download(const SampleViews<T>&, const SampleViews<T>&, std::int64_t) {
  throw Error(ErrorKind::Device, "this build of parasurf has no CUDA backend");
}
template void download<float>(const SampleViews<float>&, const SampleViews<float>&, std::int64_t);
template void download<double>(const SampleViews<double>&, const SampleViews<double>&, std::int64_t);
template AssemblyOutcome assemble<float>(const AssemblyPlan&, const SampleViews<float>&, PatchMesh&);
template AssemblyOutcome assemble<double>(const AssemblyPlan&, const SampleViews<double>&, PatchMesh&);

}  // namespace parasurf::patches::cuda
