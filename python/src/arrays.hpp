// Arrays from Python without copies: numpy (buffer protocol), DLPack (__dlpack__) and the CUDA array interface in;
// library buffers out as numpy arrays (host) or DeviceArray objects that speak DLPack and the CUDA array interface.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "parasurf/array.hpp"

namespace parasurf::python {

namespace py = pybind11;

// A caller's 3-D array seen in place; `keep` holds whatever keeps the memory alive for the call (a DLPack tensor).
struct ArrayIn {
  ArrayView3 view;
  std::string dtype;  // numpy's name, for messages
  std::shared_ptr<void> keep;
};

// Reads `obj` (numpy array, DLPack or CUDA-array-interface object) as a 3-D array of a sample type the library
// takes (bool reads as uint8). Waits for the producer's stream where it names one. Raises ValueError naming `what`
// for other shapes or types.
ArrayIn array_in(py::handle obj, const char* what);

// A library buffer as an array of `shape` and numpy `dtype` ("float32", "int32", "bool", ...): a numpy array on the
// host (the buffer its base, no copy), a DeviceArray on a GPU. `strides` in elements (empty: C order), `offset` in
// elements from the buffer's start.
py::object array_out(const Buffer& buffer, std::vector<std::int64_t> shape, const std::string& dtype,
                     std::vector<std::int64_t> strides = {}, std::int64_t offset = 0);

void register_device_array(py::module_& m);

}  // namespace parasurf::python
