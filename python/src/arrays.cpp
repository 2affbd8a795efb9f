// Arrays in and out of the module without copies (see arrays.hpp). DLPack: https://dmlc.github.io/dlpack/latest/
// (consumer and producer rules of the Python specification); CUDA array interface: numba's version 3.
#include "arrays.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "dlpack_abi.hpp"
#include "parasurf/error.hpp"

namespace parasurf::python {

namespace {

struct TypeName {
  VoxelType type;
  const char* numpy;
};

// numpy kind letter and item size -> sample type; bool reads as uint8.
bool type_of(char kind, int bytes, VoxelType& t) {
  if (kind == 'f' && bytes == 4) t = VoxelType::Float32;
  else if (kind == 'f' && bytes == 8) t = VoxelType::Float64;
  else if ((kind == 'u' || kind == 'b') && bytes == 1) t = VoxelType::UInt8;
  else if (kind == 'i' && bytes == 1) t = VoxelType::Int8;
  else if (kind == 'u' && bytes == 2) t = VoxelType::UInt16;
  else if (kind == 'i' && bytes == 2) t = VoxelType::Int16;
  else if (kind == 'u' && bytes == 4) t = VoxelType::UInt32;
  else if (kind == 'i' && bytes == 4) t = VoxelType::Int32;
  else return false;
  return true;
}

[[noreturn]] void bad_dtype(const char* what, const std::string& dtype) {
  throw Error(ErrorKind::InvalidArgument, std::string(what) + ": dtype " + dtype +
                                              " is not supported (float32, float64, bool or an integer type up to 32 bits)");
}

void check_3d(const char* what, std::int64_t ndim) {
  if (ndim != 3) throw Error(ErrorKind::InvalidArgument, "Input volume should be a 3D numpy array.");
  (void)what;
}

// Rejects views whose extent overflows (absurd strides from as_strided) before any element is read.
void check_extent(const char* what, const ArrayView3& v) {
  const std::int64_t e = std::int64_t(voxel_bytes(v.type));
  __int128 span = e;
  for (int a = 0; a < 3; ++a) {
    if (v.shape[a] < 0) throw Error(ErrorKind::InvalidArgument, std::string(what) + ": negative shape");
    if (v.shape[a] == 0) return;
    const __int128 reach = __int128(v.shape[a] - 1) * (v.strides[a] < 0 ? -__int128(v.strides[a]) : __int128(v.strides[a]));
    span += reach;
  }
  if (span > (__int128(1) << 62))
    throw Error(ErrorKind::InvalidArgument, std::string(what) + ": the array's strides reach beyond 2^62 bytes");
}

ArrayIn from_numpy(const py::array& a, const char* what) {
  ArrayIn in;
  in.dtype = py::str(static_cast<py::handle>(a.dtype())).cast<std::string>();
  check_3d(what, a.ndim());
  if (!type_of(a.dtype().kind(), int(a.itemsize()), in.view.type)) bad_dtype(what, in.dtype);
  in.view.data = a.data();
  for (int d = 0; d < 3; ++d) in.view.shape[d] = a.shape(d), in.view.strides[d] = a.strides(d);
  in.keep = std::make_shared<py::object>(a);
  return in;
}

// The object's __cuda_array_interface__ dict, or None where it has none (a torch CPU tensor's property raises
// AttributeError). Read once: PyTorch builds the dict anew on every access, which costs as much as a small
// extraction's launch.
py::object cuda_interface(py::handle obj, const char* what) {
  PyObject* cai = PyObject_GetAttrString(obj.ptr(), "__cuda_array_interface__");
  if (!cai) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    return py::none();
  }
  py::object out = py::reinterpret_steal<py::object>(cai);
  if (!py::isinstance<py::dict>(out)) throw Error(ErrorKind::InvalidArgument, std::string(what) + ": __cuda_array_interface__ is not a dict");
  return out;
}

ArrayIn from_cuda_interface(py::handle obj, const py::dict& cai, const char* what) {
  ArrayIn in;
  const auto shape = cai["shape"].cast<std::vector<std::int64_t>>();
  check_3d(what, std::int64_t(shape.size()));
  const std::string typestr = cai["typestr"].cast<std::string>();
  in.dtype = typestr;
  if (typestr.size() < 3 || typestr[0] == '>' || !type_of(typestr[1], std::stoi(typestr.substr(2)), in.view.type)) bad_dtype(what, typestr);
  const auto data = cai["data"].cast<py::tuple>();
  in.view.data = reinterpret_cast<const void*>(data[0].cast<std::uintptr_t>());
  for (int d = 0; d < 3; ++d) in.view.shape[d] = shape[std::size_t(d)];
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    const auto st = cai["strides"].cast<std::vector<std::int64_t>>();
    for (int d = 0; d < 3; ++d) in.view.strides[d] = st[std::size_t(d)];
  } else {
    in.view.strides = ArrayView3::c_strides(in.view.shape, in.view.type);
  }
  in.view.space = MemorySpace::Cuda;
  const int dev = in.view.data ? cuda_device_of(in.view.data) : 0;
  if (dev < 0 && in.view.data)
    throw Error(ErrorKind::InvalidArgument, std::string(what) + ": __cuda_array_interface__ points at memory CUDA does not know");
  in.view.device = std::max(dev, 0);
  if (cai.contains("stream") && !cai["stream"].is_none()) cuda_wait_stream(in.view.device, cai["stream"].cast<std::uintptr_t>());
  in.keep = std::make_shared<py::object>(py::reinterpret_borrow<py::object>(obj));
  return in;
}

ArrayIn from_dlpack(py::handle obj, const char* what) {
  const auto dev = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
  const bool cuda = dev.first == dlpack::kCUDA || dev.first == dlpack::kCUDAManaged;
  if (!cuda && dev.first != dlpack::kCPU && dev.first != dlpack::kCUDAHost)
    throw Error(ErrorKind::InvalidArgument, std::string(what) + ": DLPack device type " + std::to_string(dev.first) +
                                                " is not supported (CPU and CUDA are)");
  // CUDA: the producer orders its work before the legacy default stream (1), which the host then waits for.
  py::object capsule = cuda ? obj.attr("__dlpack__")(py::arg("stream") = 1) : obj.attr("__dlpack__")();
  PyObject* cap = capsule.ptr();
  if (!PyCapsule_IsValid(cap, "dltensor"))
    throw Error(ErrorKind::InvalidArgument, std::string(what) + ": __dlpack__ did not return a DLPack capsule");
  auto* managed = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
  PyCapsule_SetName(cap, "used_dltensor");
  ArrayIn in;
  in.keep = std::shared_ptr<void>(managed, [](void* p) {
    auto* m = static_cast<dlpack::ManagedTensor*>(p);
    if (m->deleter) m->deleter(m);
  });
  const dlpack::Tensor& t = managed->dl_tensor;
  check_3d(what, t.ndim);
  const char kind = t.dtype.code == dlpack::kFloat ? 'f' : t.dtype.code == dlpack::kInt ? 'i' : t.dtype.code == dlpack::kUInt ? 'u'
                  : t.dtype.code == dlpack::kBool ? 'b' : '?';
  in.dtype = std::string(1, kind) + std::to_string(t.dtype.bits);
  if (t.dtype.lanes != 1 || t.dtype.bits % 8 != 0 || !type_of(kind, t.dtype.bits / 8, in.view.type)) bad_dtype(what, in.dtype);
  in.view.data = static_cast<const char*>(t.data) + t.byte_offset;
  for (int d = 0; d < 3; ++d) in.view.shape[d] = t.shape[d];
  if (t.strides) {
    for (int d = 0; d < 3; ++d) in.view.strides[d] = t.strides[d] * std::int64_t(t.dtype.bits / 8);
  } else {
    in.view.strides = ArrayView3::c_strides(in.view.shape, in.view.type);
  }
  if (cuda) {
    in.view.space = MemorySpace::Cuda;
    in.view.device = t.device.device_id;
    cuda_wait_stream(in.view.device, 1);
  }
  return in;
}

// A result array on a GPU: DLPack and the CUDA array interface over a library buffer.
struct DeviceArray {
  Buffer buffer;
  std::vector<std::int64_t> shape;
  std::string dtype;                  // numpy name
  std::vector<std::int64_t> strides;  // elements; empty: C order
  std::int64_t offset = 0;            // elements from the buffer's start
  std::size_t item() const { return std::size_t(dl_type_bits(dtype) / 8); }
  static int dl_type_bits(const std::string& dtype) { return dtype == "float64" ? 64 : dtype == "bool" ? 8 : 32; }
  void* data() const { return static_cast<char*>(buffer.data) + offset * std::int64_t(item()); }
};

std::pair<std::uint8_t, int> dl_type(const std::string& dtype) {
  if (dtype == "float32") return {dlpack::kFloat, 32};
  if (dtype == "int32") return {dlpack::kInt, 32};
  if (dtype == "uint32") return {dlpack::kUInt, 32};
  if (dtype == "float64") return {dlpack::kFloat, 64};
  if (dtype == "bool") return {dlpack::kBool, 8};
  throw Error(ErrorKind::InvalidArgument, "no DLPack type for " + dtype);
}
std::string typestr(const std::string& dtype) {
  if (dtype == "bool") return "|b1";
  const auto [code, bits] = dl_type(dtype);
  return std::string("<") + (code == dlpack::kFloat ? 'f' : code == dlpack::kInt ? 'i' : 'u') + std::to_string(bits / 8);
}

struct Exported {
  dlpack::ManagedTensor tensor;
  std::vector<std::int64_t> shape, strides;
  Buffer buffer;
};

py::capsule to_dlpack(const DeviceArray& a) {
  auto* e = new Exported{};
  e->shape = a.shape;
  e->strides = a.strides;
  e->buffer = a.buffer;
  const auto [code, bits] = dl_type(a.dtype);
  dlpack::Tensor& t = e->tensor.dl_tensor;
  t.data = a.data();
  t.device = {a.buffer.space == MemorySpace::Cuda ? dlpack::kCUDA : dlpack::kCPU, a.buffer.device};
  t.ndim = std::int32_t(e->shape.size());
  t.dtype = {code, std::uint8_t(bits), 1};
  t.shape = e->shape.data();
  t.strides = e->strides.empty() ? nullptr : e->strides.data();
  t.byte_offset = 0;
  e->tensor.manager_ctx = e;
  e->tensor.deleter = [](dlpack::ManagedTensor* m) { delete static_cast<Exported*>(m->manager_ctx); };
  // A capsule nobody consumed frees the tensor itself; a consumer renames it and calls the deleter when done.
  PyObject* cap = PyCapsule_New(&e->tensor, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      m->deleter(m);
    }
  });
  if (!cap) {
    delete e;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

}  // namespace

ArrayIn array_in(py::handle obj, const char* what) {
  ArrayIn in;
  if (py::isinstance<py::array>(obj)) {
    in = from_numpy(py::reinterpret_borrow<py::array>(obj), what);
  } else if (py::object cai = cuda_interface(obj, what); !cai.is_none()) {
    in = from_cuda_interface(obj, cai, what);
  } else if (py::hasattr(obj, "__dlpack__") && py::hasattr(obj, "__dlpack_device__")) {
    in = from_dlpack(obj, what);
  } else {
    throw Error(ErrorKind::InvalidArgument, "Input volume should be a 3D numpy array.");
  }
  check_extent(what, in.view);
  return in;
}

py::object array_out(const Buffer& buffer, std::vector<std::int64_t> shape, const std::string& dtype,
                     std::vector<std::int64_t> strides, std::int64_t offset) {
  if (buffer.space == MemorySpace::Cuda)
    return py::cast(DeviceArray{buffer, std::move(shape), dtype, std::move(strides), offset});
  // The numpy array's base owns the library's buffer.
  auto* held = new Buffer(buffer);
  py::capsule owner(held, [](void* p) { delete static_cast<Buffer*>(p); });
  const py::dtype dt(dtype);
  std::vector<py::ssize_t> s(shape.begin(), shape.end()), st;
  for (auto x : strides) st.push_back(py::ssize_t(x) * dt.itemsize());
  return py::array(dt, s, st, static_cast<char*>(held->data) + offset * dt.itemsize(), owner);
}

void register_device_array(py::module_& m) {
  py::class_<DeviceArray>(m, "DeviceArray",
                          "A result on a GPU: hand it to torch.from_dlpack, cupy.from_dlpack or anything that takes "
                          "DLPack or the CUDA array interface (no copy). Its memory lives as long as any of them.")
      .def_property_readonly("shape", [](const DeviceArray& a) { return py::tuple(py::cast(a.shape)); })
      .def_property_readonly("dtype", [](const DeviceArray& a) { return a.dtype; })
      .def_property_readonly("device", [](const DeviceArray& a) { return a.buffer.device; })
      .def_property_readonly("data_ptr", [](const DeviceArray& a) { return reinterpret_cast<std::uintptr_t>(a.data()); })
      .def("__dlpack__",
           [](const DeviceArray& a, py::object stream, py::object max_version, py::object dl_device, py::object copy) {
             // The library finished its work before returning the array: any consumer stream may read it at once.
             (void)stream, (void)max_version, (void)dl_device, (void)copy;
             return to_dlpack(a);
           },
           py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none())
      .def("__dlpack_device__",
           [](const DeviceArray& a) { return py::make_tuple(int(dlpack::kCUDA), a.buffer.device); })
      .def_property_readonly("__cuda_array_interface__",
                             [](const DeviceArray& a) {
                               py::dict d;
                               d["shape"] = py::tuple(py::cast(a.shape));
                               d["typestr"] = typestr(a.dtype);
                               d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(a.data()), false);
                               if (a.strides.empty()) {
                                 d["strides"] = py::none();
                               } else {
                                 py::list st;
                                 for (auto x : a.strides) st.append(x * std::int64_t(a.item()));
                                 d["strides"] = py::tuple(st);
                               }
                               d["version"] = 3;
                               d["stream"] = py::none();
                               return d;
                             })
      .def("__repr__", [](const DeviceArray& a) {
        std::string s = "DeviceArray(shape=(";
        for (std::size_t i = 0; i < a.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(a.shape[i]);
        return s + (a.shape.size() == 1 ? ",)" : ")") + ", dtype=" + a.dtype + ", device=cuda:" + std::to_string(a.buffer.device) + ")";
      });
}

}  // namespace parasurf::python
