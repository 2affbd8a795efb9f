// libFuzzer target for the volume readers: the first byte picks the format (by file name), the rest is the file.
// Any input must either open and read fully, or throw parasurf::Error; nothing else.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "parasurf/error.hpp"
#include "parasurf/volume.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > (1 << 16)) return 0;
  static const char* names[] = {"f.nii", "f.nii.gz", "f.nrrd", "f.mhd", "f.mha", "f.vtk", "f.vti"};
  static const std::string dir = [] {
    char tmpl[] = "/tmp/parasurf_fuzz_XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  const std::string path = dir + "/" + names[data[0] % 7];
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data + 1, 1, size - 1, f);
    std::fclose(f);
  }
  try {
    auto v = parasurf::open_volume(path);
    const auto& g = v->geometry();
    const std::uint64_t bytes = std::uint64_t(g.voxel_count()) * parasurf::voxel_bytes(v->type());
    if (bytes <= (std::uint64_t(16) << 20)) {
      std::vector<char> buf(bytes);
      v->read_slices(0, g.dims[2], buf.data());
    }
  } catch (const parasurf::Error&) {
  }
  return 0;
}
