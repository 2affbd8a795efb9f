// The DLPack exchange structures (DLPack 0.8 ABI, unversioned capsules named "dltensor"): the layout every
// framework (PyTorch, CuPy, JAX, NumPy >= 1.22) shares, declared here so that the module needs no extra package.
#pragma once
#include <cstdint>

namespace parasurf::dlpack {

enum DeviceType : std::int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3, kCUDAManaged = 13 };
enum TypeCode : std::uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBool = 6 };

struct Device {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct Tensor {
  void* data;
  Device device;
  std::int32_t ndim;
  DataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; null: C order
  std::uint64_t byte_offset;
};
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

}  // namespace parasurf::dlpack
