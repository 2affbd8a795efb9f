// Calls f(T{}) with the C++ type of a VoxelType, so that one template serves every sample type.
#pragma once
#include <cstdint>

#include "parasurf/volume.hpp"

namespace parasurf::core {

template <class F>
decltype(auto) visit_voxel_type(VoxelType type, F&& f) {
  switch (type) {
    case VoxelType::UInt8: return f(std::uint8_t{});
    case VoxelType::Int8: return f(std::int8_t{});
    case VoxelType::UInt16: return f(std::uint16_t{});
    case VoxelType::Int16: return f(std::int16_t{});
    case VoxelType::UInt32: return f(std::uint32_t{});
    case VoxelType::Int32: return f(std::int32_t{});
    case VoxelType::Float32: return f(float{});
    case VoxelType::Float64: break;
  }
  return f(double{});
}

}  // namespace parasurf::core
