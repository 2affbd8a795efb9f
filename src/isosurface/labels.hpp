// Label volumes as int32: any sample type, checked to hold integers in the int32 range.
#pragma once
#include <cstdint>
#include <vector>

#include "parasurf/volume.hpp"

namespace parasurf::iso {

// Slices [z0, z1) of a label volume into out; `raw` is scratch for streamed sources. Throws
// Error(InvalidArgument) naming the volume and slice of a sample that is not an integer in the int32 range.
void read_labels(VolumeSource& labels, std::int64_t z0, std::int64_t z1, std::int32_t* out, std::vector<char>& raw);

}  // namespace parasurf::iso
