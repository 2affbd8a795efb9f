// Device selection shared by every capability.
#include "parasurf/device.hpp"

#include "core/backends.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

Device parse_device(const std::string& name) {
  if (name == "auto") return Device::Auto;
  if (name == "cpu") return Device::Cpu;
  if (name == "cuda") return Device::Cuda;
  if (name == "hybrid") return Device::Hybrid;
  throw Error(ErrorKind::InvalidArgument, "unknown device '" + name + "' (expected auto, cpu, cuda or hybrid)");
}

const char* device_name(Device device) {
  switch (device) {
    case Device::Auto: return "auto";
    case Device::Cpu: return "cpu";
    case Device::Cuda: return "cuda";
    case Device::Hybrid: return "hybrid";
  }
  return "?";
}

bool cuda_available() { return cuda_device_count() > 0 && cuda_device_usable(0); }

Device resolve_device(Device requested) {
  if (requested == Device::Auto) return cuda_available() ? Device::Cuda : Device::Cpu;
  if ((requested == Device::Cuda || requested == Device::Hybrid) && !cuda_available())
    throw Error(ErrorKind::Device, std::string("device '") + device_name(requested) +
                                       "' requested but no CUDA device is usable: " + cuda_unavailable_reason());
  return requested;
}

namespace core {
void no_cuda_backend(const std::string& what) {
  throw Error(ErrorKind::Device, what + ": this build has no CUDA backend (configure with a CUDA toolkit)");
}
}  // namespace core

}  // namespace parasurf
