// Whether a CUDA build's kernel images run on a device: the build's architecture list (CMAKE_CUDA_ARCHITECTURES,
// e.g. "75-real,80-real,90-real,120") against the device's compute capability, by NVIDIA's compatibility rules:
// a cubin for X.y runs on X.z with z >= y (an arch-specific "a" cubin only on X.y itself); PTX for X.y is compiled
// by the driver for any device of capability X.y or newer.
#pragma once
#include <string>
#include <string_view>

namespace parasurf::core {

enum class ImageMatch {
  Binary,   // a cubin runs as is
  Ptx,      // the driver must compile PTX (it may refuse: too old for the toolkit's PTX)
  None,     // nothing in the build runs on the device
  Unknown,  // the list holds a name such as "native" or "all-major": only a trial launch tells
};

ImageMatch match_cuda_image(std::string_view architectures, int major, int minor);

// "75, 80, 86, 90 (PTX 120)" for messages.
std::string describe_cuda_architectures(std::string_view architectures);

}  // namespace parasurf::core
