// pybind11 bindings of parasurf: numpy in, numpy out; the GIL is released while the library computes; library
// errors become Python exceptions (ValueError for bad arguments and input, RuntimeError otherwise).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <functional>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>

#include "arrays.hpp"

#include "parasurf/bezier.hpp"
#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"
#include "parasurf/isosurface.hpp"
#include "parasurf/patches.hpp"
#include "parasurf/solver.hpp"
#include "parasurf/tessellate.hpp"
#include "parasurf/volume.hpp"

namespace py = pybind11;
using namespace parasurf;

namespace {

template <class T>
py::array_t<T> matrix(std::int64_t rows, std::int64_t cols) {
  return py::array_t<T>(std::vector<py::ssize_t>{py::ssize_t(rows), py::ssize_t(cols)});
}

// A mesh's arrays handed to numpy as they are (the library's vectors become the arrays' memory): verts (V, 3)
// float32, faces (F, 3) int32 (the uint32 indices' bits: meshes hold fewer than 2^31 vertices), normals (V, 3)
// float32 (zeros where the mesh has none).
py::tuple mesh_arrays(TriangleMesh&& m) {
  const std::int64_t nv = m.vertex_count(), nf = m.triangle_count();
  if (nv >= (std::int64_t(1) << 31))
    throw Error(ErrorKind::LimitReached, "the mesh has " + std::to_string(nv) + " vertices: int32 face indices hold fewer than 2^31");
  if (m.normals.size() != m.positions.size()) m.normals.assign(m.positions.size(), 0.0f);
  return py::make_tuple(python::array_out(Buffer::adopt(std::move(m.positions)), {nv, 3}, "float32"),
                        python::array_out(Buffer::adopt(std::move(m.triangles)), {nf, 3}, "int32"),
                        python::array_out(Buffer::adopt(std::move(m.normals)), {nv, 3}, "float32"));
}


// A progress hook for the library: the caller's callback, and Ctrl-C, between slabs (the GIL taken for both).
// Without a callback the GIL is taken at most every 20 ms from the call's start, so that a short call never waits
// for it. The callback is held through a shared pointer: the library copies and drops its options on threads that
// do not hold the GIL, where a Python reference count must not be touched.
std::function<void(double)> progress_hook(py::object callback) {
  const bool given = !callback.is_none();
  const std::shared_ptr<py::object> held(new py::object(std::move(callback)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
  const auto now_ms = [] {
    return std::int64_t(std::chrono::steady_clock::now().time_since_epoch() / std::chrono::milliseconds(1));
  };
  const auto last = std::make_shared<std::atomic<std::int64_t>>(now_ms());
  return [held, last, given, now_ms](double fraction) {
    if (!given) {
      std::int64_t before = last->load(std::memory_order_relaxed);
      const std::int64_t now = now_ms();
      if (now - before < 20 || !last->compare_exchange_strong(before, now)) return;
    }
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (given) (*held)(fraction);
  };
}

// Ctrl-C during a solve. The solver polls `stop` before each level from whichever thread runs it (applications run
// many solves at once, inside parallel loops, where nothing may throw): the poll takes the GIL at most every 20 ms,
// and the first to see the signal keeps Python's exception and makes every solve stop; the call then raises it.
class Interrupt {
 public:
  Interrupt() = default;
  Interrupt(const Interrupt&) = delete;
  Interrupt& operator=(const Interrupt&) = delete;
  ~Interrupt() {
    if (type_ || value_ || traceback_) {
      py::gil_scoped_acquire gil;
      Py_XDECREF(type_), Py_XDECREF(value_), Py_XDECREF(traceback_);
    }
  }
  std::function<bool()> poll() {
    return [this] { return check(); };
  }
  // With the GIL held, after the native call.
  void raise_if_stopped() {
    if (!stopped_) return;
    PyErr_Restore(type_, value_, traceback_);
    type_ = value_ = traceback_ = nullptr;
    throw py::error_already_set();
  }

 private:
  bool check() {
    if (stopped_.load(std::memory_order_relaxed)) return true;
    const long long now = std::chrono::steady_clock::now().time_since_epoch() / std::chrono::milliseconds(1);
    long long last = last_.load(std::memory_order_relaxed);
    if (now - last < 20 || !last_.compare_exchange_strong(last, now)) return false;
    py::gil_scoped_acquire gil;
    if (!stopped_ && PyErr_CheckSignals() != 0) {
      PyErr_Fetch(&type_, &value_, &traceback_);
      stopped_ = true;
    }
    return stopped_.load();
  }
  std::atomic<bool> stopped_{false};
  std::atomic<long long> last_{0};
  PyObject *type_ = nullptr, *value_ = nullptr, *traceback_ = nullptr;
};

// scikit-image's marching_cubes on any array the module takes, results where the samples lie.
py::tuple marching_cubes_array_py(py::handle volume, py::object level, std::array<double, 3> spacing, const std::string& direction,
                                  std::int64_t step, bool allow_degenerate, const std::string& method, py::handle mask,
                                  const std::string& device, int threads, py::object progress) {
  python::ArrayIn in = python::array_in(volume, "volume");
  python::ArrayIn mk;
  ArrayIsosurfaceOptions o;
  if (!mask.is_none()) {
    mk = python::array_in(mask, "mask");
    if (voxel_bytes(mk.view.type) != 1) throw Error(ErrorKind::InvalidArgument, "mask must be a bool array");
    o.mask = &mk.view;
  }
  if (!level.is_none()) {
    o.level = level.cast<double>();
    // (the C++ call takes NaN for no level: the middle of the data range)
    if (!std::isfinite(o.level)) throw Error(ErrorKind::InvalidArgument, "the iso level must be a finite number");
  }
  o.spacing = spacing;
  o.direction = parse_gradient_direction(direction);
  o.step = step;
  o.allow_degenerate = allow_degenerate;
  o.topology = method == "lewiner" ? CaseTopology::Mc33 : CaseTopology::Classic;
  o.device = parse_device(device);
  o.threads = threads;
  o.progress = progress_hook(progress);
  ArrayMesh r;
  {
    py::gil_scoped_release release;
    r = marching_cubes_array(in.view, o);
  }
  const std::int64_t nv = r.vertices, nf = r.triangles;
  return py::make_tuple(python::array_out(r.verts, {nv, 3}, "float32"), python::array_out(r.faces, {nf, 3}, "int32"),
                        python::array_out(r.normals, {nv, 3}, "float32"), python::array_out(r.values, {nv}, "float32"),
                        r.device);
}

// One field of samples (points, normals, a derivative) in host memory: one (3, count) block from the library's result
// pool, as a C++ caller's arrays come (pages a freed result left resident: a fresh numpy array faulted in every page
// of a large grid, a quarter of a 2000² call on two cores), returned as a `shape` view of it with `strides` in
// elements (no copy).
template <class T>
py::object pooled_field(std::array<T*, 3>& to, std::int64_t count, const std::vector<std::int64_t>& shape,
                        const std::vector<std::int64_t>& strides) {
  const Buffer b = Buffer::adopt(HostVector<T>(3 * std::size_t(count)));
  for (int c = 0; c < 3; ++c) to[std::size_t(c)] = static_cast<T*>(b.data) + c * count;
  return python::array_out(b, shape, sizeof(T) == 4 ? "float32" : "float64", strides);
}

// The samples' degenerate flags, from the same pool.
py::object pooled_flags(std::uint8_t*& to, const std::vector<std::int64_t>& shape) {
  std::size_t count = 1;
  for (const std::int64_t n : shape) count *= std::size_t(n);
  const Buffer b = Buffer::adopt(HostVector<std::uint8_t>(count));
  to = static_cast<std::uint8_t*>(b.data);
  return python::array_out(b, shape, "bool");
}

// One evaluator per precision for the process: its tables and device buffers are kept between calls.
template <class T>
std::pair<SurfaceEvaluator<T>&, std::unique_lock<std::mutex>> kept_evaluator() {
  static std::mutex guard;
  // Never destroyed: at exit the CUDA runtime may be gone before static destructors run.
  static auto* evaluator = new SurfaceEvaluator<T>();
  return {*evaluator, std::unique_lock<std::mutex>(guard)};
}

// A Bézier surface on a grid or at (u, v) pairs, written by the library straight into the arrays returned: each
// field is one (3, count) block, returned as a (rows, cols, 3) or (count, 3) view of it (no copy).
// What the evaluate functions return: points and unit normals, derivatives when asked.
EvalRequest sample_request(bool derivatives, bool second) {
  EvalRequest req;
  req.normals = true;
  req.first_derivatives = derivatives;
  req.second_derivatives = second;
  return req;
}

py::dict evaluate_surface(py::array_t<double, py::array::c_style | py::array::forcecast> points,
                          std::optional<py::array_t<double, py::array::c_style | py::array::forcecast>> weights,
                          std::optional<py::array_t<double, py::array::c_style | py::array::forcecast>> uv, std::int64_t rows,
                          std::int64_t cols, bool derivatives, bool second, const std::string& precision, const std::string& device,
                          int threads, int gpu) {
  if (points.ndim() != 3 || points.shape(2) != 3)
    throw Error(ErrorKind::InvalidArgument, "control points must have shape (m+1, n+1, 3)");
  BezierSurface s;
  s.degree_u = int(points.shape(0)) - 1;
  s.degree_v = int(points.shape(1)) - 1;
  s.points.assign(points.data(), points.data() + points.size());
  if (weights) {
    if (weights->ndim() != 2 || weights->shape(0) != points.shape(0) || weights->shape(1) != points.shape(1))
      throw Error(ErrorKind::InvalidArgument, "weights must have shape (m+1, n+1)");
    s.weights.assign(weights->data(), weights->data() + weights->size());
  }
  validate(s);
  if (uv && (uv->ndim() != 2 || uv->shape(1) != 2)) throw Error(ErrorKind::InvalidArgument, "uv must have shape (N, 2)");
  if (!uv && (rows < 2 || cols < 2 || rows > kMaxGridSide || cols > kMaxGridSide))
    throw Error(ErrorKind::InvalidArgument, "grid resolution " + std::to_string(rows) + "x" + std::to_string(cols) +
                                                " is outside 2.." + std::to_string(kMaxGridSide) + " per direction");
  const std::int64_t count = uv ? uv->shape(0) : rows * cols;
  const EvalRequest req = sample_request(derivatives, second);
  EvalOptions o;
  o.device = parse_device(device);
  o.threads = threads;
  if (gpu >= 0) {
    // Results written into device memory come from the CUDA evaluator alone, which runs on the first GPU.
    if (o.device == Device::Cpu || o.device == Device::Hybrid)
      throw Error(ErrorKind::InvalidArgument, "the control points lie on a GPU: device must be 'auto' or 'cuda' (results stay there)");
    if (gpu != 0)
      throw Error(ErrorKind::InvalidArgument, "evaluate_surface runs on GPU 0; the control points lie on GPU " + std::to_string(gpu));
    o.device = Device::Cuda;
  }
  auto run = [&](auto tag) {
    using T = decltype(tag);
    if (gpu < 0) check_host_memory(sample_bytes(count, req, sizeof(T)), "evaluate_surface: the samples");
    py::dict out;
    SampleSpans<T> spans;
    spans.count = count;
    std::vector<std::int64_t> shape = uv ? std::vector<std::int64_t>{count, 3} : std::vector<std::int64_t>{rows, cols, 3};
    std::vector<std::int64_t> strides = uv ? std::vector<std::int64_t>{1, count} : std::vector<std::int64_t>{cols, 1, count};
    auto field = [&](std::array<T*, 3>& to, const char* name) {
      if (gpu >= 0) {  // the caller's arrays are on a GPU: the samples stay there
        const Buffer b = Buffer::cuda(gpu, 3 * std::size_t(count) * sizeof(T));
        for (int c = 0; c < 3; ++c) to[std::size_t(c)] = static_cast<T*>(b.data) + c * count;
        out[name] = python::array_out(b, shape, sizeof(T) == 4 ? "float32" : "float64", strides);
        return;
      }
      out[name] = pooled_field(to, count, shape, strides);
    };
    field(spans.position, "points");
    field(spans.normal, "normals");
    if (derivatives) field(spans.du, "du"), field(spans.dv, "dv");
    if (second) field(spans.duu, "duu"), field(spans.duv, "duv"), field(spans.dvv, "dvv");
    std::vector<std::int64_t> flag_shape(shape.begin(), shape.end() - 1);
    if (gpu >= 0) {
      const Buffer b = Buffer::cuda(gpu, std::size_t(count));
      spans.degenerate = static_cast<std::uint8_t*>(b.data);
      out["degenerate"] = python::array_out(b, flag_shape, "bool");
    } else {
      out["degenerate"] = pooled_flags(spans.degenerate, flag_shape);
    }
    {
      py::gil_scoped_release release;
      auto [ev, lock] = kept_evaluator<T>();
      ev.set_options(o);
      if (uv) ev.evaluate_points_into(s, std::span<const double>(uv->data(), std::size_t(uv->size())), req, spans);
      else ev.evaluate_grid_into(s, {rows, cols}, req, spans);
    }
    return out;
  };
  if (precision != "float" && precision != "double")
    throw Error(ErrorKind::InvalidArgument, "precision must be 'float' or 'double'");
  return precision == "float" ? run(float{}) : run(double{});
}

// A B-spline or NURBS surface given as (points (nu, nv, 3), weights (nu, nv) or None, degree (p, q) or [], knots
// (knots_u, knots_v) or []), as the Python wrapper passes it.
BSplineSurface bspline_arg(const py::handle& t, const std::string& which);

py::tuple tessellate_model(std::optional<std::string> path, int resolution, double tolerance, const std::string& device,
                           py::object progress, py::object surfaces) {
  std::optional<PatchModel> given;
  if (!surfaces.is_none()) {
    if (path) throw Error(ErrorKind::InvalidArgument, "give either a path or surfaces, not both");
    PatchModel model;
    model.name = "surfaces";
    int k = 0;
    for (const py::handle t : surfaces) {
      const std::string which = "surface " + std::to_string(k);
      model.groups.push_back(PatchGroup{k % 8, which});
      append_bezier_patches(bspline_arg(t, which), model, k);
      ++k;
    }
    if (k == 0) throw Error(ErrorKind::InvalidArgument, "surfaces is empty");
    given = std::move(model);
  }
  TessellationOptions o;
  o.progress = progress_hook(progress);
  o.resolution = resolution;
  o.tolerance = tolerance;
  o.device = parse_device(device);
  TriangleMesh m;
  {
    py::gil_scoped_release release;
    const PatchModel model = given ? std::move(*given) : path ? read_patch_model(*path) : utah_teapot();
    m = to_triangle_mesh(tessellate(model, o));
  }
  return mesh_arrays(std::move(m));
}

PolygonMesh polygon_mesh(py::array_t<double, py::array::c_style | py::array::forcecast> vertices, py::object faces) {
  if (vertices.ndim() != 2 || vertices.shape(1) != 3) throw Error(ErrorKind::InvalidArgument, "vertices must have shape (V, 3)");
  PolygonMesh m;
  m.positions.assign(vertices.data(), vertices.data() + vertices.size());
  const std::int64_t nv = vertices.shape(0);
  auto add = [&](const std::vector<std::int64_t>& f) {
    std::vector<std::uint32_t> c;
    for (auto i : f) {
      if (i < 0 || i >= nv) throw Error(ErrorKind::InvalidArgument, "face index " + std::to_string(i) + " is outside 0.." + std::to_string(nv - 1));
      c.push_back(std::uint32_t(i));
    }
    if (c.size() < 3) throw Error(ErrorKind::InvalidArgument, "a face needs at least 3 corners");
    m.add_face(c);
  };
  if (py::isinstance<py::array>(faces)) {
    auto a = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(faces);
    if (!a || a.ndim() != 2) throw Error(ErrorKind::InvalidArgument, "faces must have shape (F, k) or be a list of index lists");
    for (py::ssize_t f = 0; f < a.shape(0); ++f) add(std::vector<std::int64_t>(a.data() + f * a.shape(1), a.data() + (f + 1) * a.shape(1)));
  } else {
    for (auto f : faces) add(f.cast<std::vector<std::int64_t>>());
  }
  return m;
}

}  // namespace

namespace {
using CArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

BSplineCurve2 curve_arg(const CArray& p, int degree, const std::vector<double>& knots, const char* which) {
  if (p.ndim() != 2 || p.shape(1) != 2) throw Error(ErrorKind::InvalidArgument, std::string(which) + ": control points must have shape (n, 2)");
  BSplineCurve2 c;
  for (py::ssize_t i = 0; i < p.shape(0); ++i) c.points.push_back({p.data()[2 * i], p.data()[2 * i + 1]});
  c.degree = degree >= 0 ? degree : int(c.points.size()) - 1;
  c.knots = knots;
  if (c.knots.empty()) c.knots = bezier_knots(c.degree);  // a Bézier curve: the clamped B-spline of one span
  return c;
}

BSplineSurface surface_arg(const CArray& p, std::vector<int> degree, std::vector<std::vector<double>> knots, const char* which) {
  if (p.ndim() != 3 || p.shape(2) != 3) throw Error(ErrorKind::InvalidArgument, std::string(which) + ": control points must have shape (nu, nv, 3)");
  BSplineSurface s;
  s.count_u = int(p.shape(0));
  s.count_v = int(p.shape(1));
  s.degree_u = degree.size() == 2 ? degree[0] : s.count_u - 1;
  s.degree_v = degree.size() == 2 ? degree[1] : s.count_v - 1;
  s.points.assign(p.data(), p.data() + p.size());
  if (knots.size() == 2) {
    s.knots_u = knots[0];
    s.knots_v = knots[1];
  } else {  // clamped uniform (a Bézier surface when the count is degree + 1)
    auto clamped = [](int p, int n) {
      std::vector<double> k(std::size_t(n + p + 1), 0.0);
      for (int i = 0; i <= p; ++i) k[std::size_t(n + i)] = 1.0;
      for (int i = p + 1; i < n; ++i) k[std::size_t(i)] = double(i - p) / double(n - p);
      return k;
    };
    if (s.degree_u < 1 || s.degree_v < 1 || s.degree_u >= s.count_u || s.degree_v >= s.count_v)
      throw Error(ErrorKind::InvalidArgument, std::string(which) + ": degree " + std::to_string(s.degree_u) + "x" +
                                                  std::to_string(s.degree_v) + " needs more than that many control points per direction");
    s.knots_u = clamped(s.degree_u, s.count_u);
    s.knots_v = clamped(s.degree_v, s.count_v);
  }
  return s;
}

BSplineSurface bspline_arg(const py::handle& t, const std::string& which) {
  const py::tuple args = py::reinterpret_borrow<py::object>(t).cast<py::tuple>();
  if (args.size() != 4) throw Error(ErrorKind::InvalidArgument, which + ": expected (points, weights, degree, knots)");
  const CArray points = args[0].cast<CArray>();
  BSplineSurface s = surface_arg(points, args[2].cast<std::vector<int>>(), args[3].cast<std::vector<std::vector<double>>>(),
                                 which.c_str());
  if (!args[1].is_none()) {
    const CArray w = args[1].cast<CArray>();
    if (w.ndim() != 2 || w.shape(0) != points.shape(0) || w.shape(1) != points.shape(1))
      throw Error(ErrorKind::InvalidArgument, which + ": weights must have shape (nu, nv)");
    s.weights.assign(w.data(), w.data() + w.size());
  }
  validate(s, which);
  return s;
}

// A B-spline or NURBS surface at (u, v) pairs of its knot domain, into arrays the caller gets without a copy.
py::dict evaluate_bspline_surface(py::handle surface, CArray uv, bool derivatives, bool second, const std::string& precision,
                                  const std::string& device, int threads) {
  const BSplineSurface s = bspline_arg(surface, "surface");
  if (uv.ndim() != 2 || uv.shape(1) != 2) throw Error(ErrorKind::InvalidArgument, "uv must have shape (N, 2)");
  const std::int64_t count = uv.shape(0);
  const EvalRequest req = sample_request(derivatives, second);
  EvalOptions o;
  o.device = parse_device(device);
  o.threads = threads;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    check_host_memory(sample_bytes(count, req, sizeof(T)), "evaluate_bspline_surface: the samples");
    py::dict out;
    SampleSpans<T> spans;
    spans.count = count;
    auto field = [&](std::array<T*, 3>& to, const char* name) { out[name] = pooled_field(to, count, {count, 3}, {1, count}); };
    field(spans.position, "points");
    field(spans.normal, "normals");
    if (derivatives) field(spans.du, "du"), field(spans.dv, "dv");
    if (second) field(spans.duu, "duu"), field(spans.duv, "duv"), field(spans.dvv, "dvv");
    out["degenerate"] = pooled_flags(spans.degenerate, {count});
    {
      py::gil_scoped_release release;
      evaluate_bspline_points_into<T>(s, std::span<const double>(uv.data(), std::size_t(uv.size())), req, spans, o);
    }
    return out;
  };
  if (precision != "float" && precision != "double")
    throw Error(ErrorKind::InvalidArgument, "precision must be 'float' or 'double'");
  return precision == "float" ? run(float{}) : run(double{});
}

// (k, N) array of fixed-size rows.
template <std::size_t N>
py::array_t<double> rows(const std::vector<std::array<double, N>>& v) {
  auto a = matrix<double>(py::ssize_t(v.size()), py::ssize_t(N));
  for (std::size_t i = 0; i < v.size(); ++i)
    for (std::size_t j = 0; j < N; ++j) a.mutable_data()[N * i + j] = v[i][j];
  return a;
}

// Traced curves (bisectors, intersection curves) as dicts of their points, parameters and whether they close.
template <class Curve>
py::list curve_list(const std::vector<Curve>& curves) {
  py::list out;
  for (const Curve& c : curves) {
    py::dict d;
    d["points"] = rows(c.points);
    d["params"] = rows(c.params);
    d["closed"] = c.closed;
    out.append(d);
  }
  return out;
}

// A curve intersection as the Python functions return it. What every pair's dict shares (its keys, the dtypes, the
// "complete" status) is made once per batch (`keys`), not once per pair.
struct CurveResultKeys {
  py::str params{"params"}, points{"points"}, tangent{"tangent"}, overlaps{"overlaps"}, status{"status"};
  py::str complete{"complete"};
  py::dtype f64 = py::dtype::of<double>(), boolean = py::dtype::of<bool>();
};
// A fresh C-ordered array of `dt` from numpy's C API: pybind11's constructor builds shape and stride vectors on the
// heap for each array, and a list of dicts makes four arrays per pair.
py::array fresh_array(const py::dtype& dt, py::ssize_t rows, py::ssize_t cols = -1) {
  const auto& api = py::detail::npy_api::get();
  Py_intptr_t shape[2] = {rows, cols};
  PyObject* descr = dt.ptr();
  Py_INCREF(descr);  // (taken by the call)
  PyObject* a = api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, cols < 0 ? 1 : 2, shape, nullptr, nullptr, 0, nullptr);
  if (!a) throw py::error_already_set();
  return py::reinterpret_steal<py::array>(a);
}
py::dict curve_result(const CurveIntersectionResult& r, const CurveResultKeys& keys = {}) {
  const py::ssize_t k = py::ssize_t(r.points.size());
  py::array params = fresh_array(keys.f64, k, 2), points = fresh_array(keys.f64, k, 2), tangent = fresh_array(keys.boolean, k);
  double *pp = static_cast<double*>(params.mutable_data()), *pt = static_cast<double*>(points.mutable_data());
  bool* tg = static_cast<bool*>(tangent.mutable_data());
  for (py::ssize_t i = 0; i < k; ++i) {
    const auto& x = r.points[std::size_t(i)];
    pp[2 * i] = x.s, pp[2 * i + 1] = x.t;
    pt[2 * i] = x.point[0], pt[2 * i + 1] = x.point[1];
    tg[i] = x.tangent;
  }
  py::array overlaps = fresh_array(keys.f64, py::ssize_t(r.overlaps.size()), 4);
  double* o4 = static_cast<double*>(overlaps.mutable_data());
  for (const CurveOverlap& v : r.overlaps) *o4++ = v.s0, *o4++ = v.s1, *o4++ = v.t0, *o4++ = v.t1;
  py::dict out;
  out[keys.params] = params;
  out[keys.points] = points;
  out[keys.tangent] = tangent;
  out[keys.overlaps] = overlaps;
  if (r.status == "complete") out[keys.status] = keys.complete;
  else out[keys.status] = r.status;
  return out;
}

BezierCurve2 curve_arg(const py::array_t<double, py::array::c_style | py::array::forcecast>& p) {
  if (p.ndim() != 2 || p.shape(1) != 2) throw Error(ErrorKind::InvalidArgument, "curve control points must have shape (n, 2)");
  BezierCurve2 c;
  for (py::ssize_t i = 0; i < p.shape(0); ++i) c.points.push_back({p.data()[2 * i], p.data()[2 * i + 1]});
  return c;
}

// The patches a solver application works on: control nets given as (m+1, n+1, 3) arrays, or the tensor-product
// patches of a model file (None: the Utah teapot).
std::vector<BezierSurface> solver_patches(const py::object& path, const std::vector<CArray>& nets) {
  std::vector<BezierSurface> patches;
  if (!nets.empty()) {
    for (std::size_t i = 0; i < nets.size(); ++i) {
      const CArray& a = nets[i];
      if (a.ndim() != 3 || a.shape(2) != 3 || a.shape(0) < 2 || a.shape(1) < 2)
        throw Error(ErrorKind::InvalidArgument,
                    "patch " + std::to_string(i) + ": control points must have shape (m+1, n+1, 3) with m, n >= 1");
      BezierSurface b;
      b.degree_u = int(a.shape(0)) - 1;
      b.degree_v = int(a.shape(1)) - 1;
      b.points.assign(a.data(), a.data() + a.size());
      patches.push_back(std::move(b));
    }
  } else {
    const PatchModel model = path.is_none() ? utah_teapot() : read_patch_model(path.cast<std::string>());
    for (std::int64_t i = 0; i < std::int64_t(model.patches.size()); ++i)
      if (model.patches[std::size_t(i)].kind == PatchKind::Tensor) patches.push_back(patch_surface(model, i));
    if (patches.empty()) throw Error(ErrorKind::InvalidArgument, "the model has no tensor-product patches");
  }
  return patches;
}

// A solve's limits from Python (max_seconds, max_cells): None keeps the library's default.
using Limits = std::pair<std::optional<double>, std::optional<std::int64_t>>;
void set_limits(SolverOptions& o, const Limits& limits) {
  if (const auto& s = limits.first) {
    if (!(*s > 0)) throw Error(ErrorKind::InvalidArgument, "max_seconds must be positive (got " + std::to_string(*s) + ")");
    o.max_seconds = *s;
  }
  if (const auto& c = limits.second) {
    if (*c < 1) throw Error(ErrorKind::InvalidArgument, "max_cells must be at least 1 (got " + std::to_string(*c) + ")");
    o.max_nodes = *c;
  }
}

SolverOptions solver_options(const std::string& device, int threads, double tolerance = 1e-7) {
  SolverOptions o;
  o.device = parse_device(device);
  o.threads = threads;
  o.tolerance = tolerance;
  return o;
}

// The engines alone, for bench/python and the tests: the same work as the Python functions, in C++.
void bind_timings(py::module_& m) {
  m.def(
      "_engine_seconds",
      [](py::handle volume, double level, const std::string& device, int repeats, int threads, bool api) {
        // The engine alone on the same samples: the slab extractor on a host array (C order), or the GPU's mesh
        // without values on a CUDA array. With api, the C++ call that makes everything the Python function returns
        // (marching_cubes_array, values included): the Python function's cost over it is the binding's alone.
        // The best of `repeats` runs.
        python::ArrayIn in = python::array_in(volume, "volume");
        const ArrayView3 v = in.view;
        double best = 1e300;
        for (int r = 0; r < repeats; ++r) {
          py::gil_scoped_release release;
          const auto t0 = std::chrono::steady_clock::now();
          if (api) {
            ArrayIsosurfaceOptions o;
            o.level = level;
            o.device = parse_device(device);
            o.threads = threads;
            marching_cubes_array(v, o);
          } else if (v.space == MemorySpace::Cuda) {
            ArrayIsosurfaceOptions o;
            o.level = level;
            o.values = false;
            o.device = Device::Cuda;
            marching_cubes_array(v, o);
          } else {
            if (!v.c_contiguous()) throw Error(ErrorKind::InvalidArgument, "the engine's timing takes C-ordered arrays");
            VolumeGeometry g;
            g.dims = {v.shape[2], v.shape[1], v.shape[0]};
            MemoryVolume source(g, v.type, v.data, "array");
            IsosurfaceOptions o;
            o.levels = {level};
            o.topology = CaseTopology::Mc33;
            o.keep_degenerate = true;
            o.device = parse_device(device);
            o.threads = threads;
            extract_isosurface(source, o);
          }
          best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return best;
      },
      py::arg("volume"), py::arg("level"), py::arg("device"), py::arg("repeats") = 5, py::arg("threads") = 0,
      py::arg("api") = false);
  // The engines alone, for bench/python: the same work as the Python function, in C++, best of `repeats`.
  auto best_of = [](int repeats, const std::function<void()>& f) {
    double best = 1e300;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  m.def(
      "_engine_seconds_surface",
      [best_of](py::array_t<double, py::array::c_style | py::array::forcecast> points, std::int64_t rows, std::int64_t cols,
                bool derivatives, const std::string& precision, const std::string& device, int repeats) {
        BezierSurface s;
        s.degree_u = int(points.shape(0)) - 1;
        s.degree_v = int(points.shape(1)) - 1;
        s.points.assign(points.data(), points.data() + points.size());
        EvalRequest req;
        req.normals = true;
        req.first_derivatives = derivatives;
        EvalOptions o;
        o.device = parse_device(device);
        py::gil_scoped_release release;
        auto run = [&](auto tag) {
          using T = decltype(tag);
          // As a C++ caller gets it: fresh output arrays each call, from an evaluator kept between calls.
          auto [ev, lock] = kept_evaluator<T>();
          ev.set_options(o);
          ev.evaluate_grid(s, {rows, cols}, req);  // warm (tables, device buffers)
          return best_of(repeats, [&] { ev.evaluate_grid(s, {rows, cols}, req); });
        };
        return precision == "float" ? run(float{}) : run(double{});
      },
      py::arg("points"), py::arg("rows"), py::arg("cols"), py::arg("derivatives"), py::arg("precision"), py::arg("device"),
      py::arg("repeats") = 5);
  m.def(
      "_engine_seconds_tessellate",
      [best_of](int resolution, const std::string& device, int repeats) {
        TessellationOptions o;
        o.resolution = resolution;
        o.device = parse_device(device);
        const PatchModel model = utah_teapot();
        py::gil_scoped_release release;
        to_triangle_mesh(tessellate(model, o));
        return best_of(repeats, [&] { to_triangle_mesh(tessellate(model, o)); });
      },
      py::arg("resolution"), py::arg("device"), py::arg("repeats") = 5);
  // The solver functions' C++ calls on the same inputs (the inputs converted once, outside the timing).
  m.def(
      "_engine_seconds_curve_pairs",
      [best_of](const std::vector<std::pair<py::array_t<double, py::array::c_style | py::array::forcecast>,
                                            py::array_t<double, py::array::c_style | py::array::forcecast>>>& pairs,
                const std::string& device, int repeats) {
        std::vector<std::pair<BezierCurve2, BezierCurve2>> cs;
        cs.reserve(pairs.size());
        for (const auto& [a, b] : pairs) cs.emplace_back(curve_arg(a), curve_arg(b));
        const SolverOptions o = solver_options(device, 0);
        py::gil_scoped_release release;
        return best_of(repeats, [&] { intersect_curve_pairs(cs, o); });
      },
      py::arg("pairs"), py::arg("device"), py::arg("repeats") = 5);
  m.def(
      "_engine_seconds_rays",
      [best_of](CArray origins, CArray directions, const std::string& device, int repeats) {
        const std::vector<BezierSurface> patches = solver_patches(py::none(), {});
        std::vector<std::array<double, 3>> o(std::size_t(origins.shape(0))), d(o.size());
        std::copy_n(origins.data(), 3 * o.size(), o.data()->data());
        std::copy_n(directions.data(), 3 * d.size(), d.data()->data());
        const SolverOptions opt = solver_options(device, 0);
        py::gil_scoped_release release;
        return best_of(repeats, [&] { intersect_rays(patches, o, d, opt, 0.0); });
      },
      py::arg("origins"), py::arg("directions"), py::arg("device"), py::arg("repeats") = 5);
  m.def(
      "_engine_seconds_ffd",
      [best_of](py::array_t<double, py::array::c_style | py::array::forcecast> vertices, py::object faces, const Lattice& lattice,
                const std::string& method, int level, const std::string& device, int repeats) {
        const PolygonMesh mesh = polygon_mesh(vertices, faces);
        FfdOptions o;
        o.method = parse_ffd_method(method);
        o.level = level;
        o.device = parse_device(device);
        py::gil_scoped_release release;
        auto once = [&] {
          FfdSession<double> s(mesh, lattice, o);
          s.update(lattice.control_points);
          s.mesh();
        };
        once();
        return best_of(repeats, once);
      },
      py::arg("vertices"), py::arg("faces"), py::arg("lattice"), py::arg("method"), py::arg("level"), py::arg("device"),
      py::arg("repeats") = 5);
  m.def(
      "_view",
      [](py::handle obj) {
        const python::ArrayIn in = python::array_in(obj, "array");
        const auto& v = in.view;
        return py::make_tuple(reinterpret_cast<std::uintptr_t>(v.data), py::make_tuple(v.shape[0], v.shape[1], v.shape[2]),
                              py::make_tuple(v.strides[0], v.strides[1], v.strides[2]),
                              v.space == MemorySpace::Cuda ? "cuda" : "cpu", v.device, voxel_type_name(v.type));
      },
      "How the module sees an array: (address, shape, strides in bytes, 'cpu'|'cuda', device, sample type), no copy");
}

// Marching cubes, surface evaluation, tessellation and the device queries.
void bind_capabilities(py::module_& m) {
  m.def("marching_cubes", &marching_cubes_array_py, py::arg("volume"), py::arg("level"), py::arg("spacing"),
        py::arg("gradient_direction"), py::arg("step_size"), py::arg("allow_degenerate"), py::arg("method"), py::arg("mask"),
        py::arg("device"), py::arg("threads"), py::arg("progress"));
  m.def("evaluate_surface", &evaluate_surface, py::arg("points"), py::arg("weights"), py::arg("uv"), py::arg("rows"),
        py::arg("cols"), py::arg("derivatives"), py::arg("second_derivatives"), py::arg("precision"), py::arg("device"),
        py::arg("threads"), py::arg("gpu") = -1);
  m.def("tessellate", &tessellate_model, py::arg("path"), py::arg("resolution"), py::arg("tolerance"), py::arg("device"),
        py::arg("progress") = py::none(), py::arg("surfaces") = py::none());
  m.def("evaluate_bspline_surface", &evaluate_bspline_surface, py::arg("surface"), py::arg("uv"), py::arg("derivatives"),
        py::arg("second_derivatives"), py::arg("precision"), py::arg("device"), py::arg("threads"));
  m.def("cuda_available", &cuda_available, "Whether a CUDA device that this build can run is present");
  m.def("cuda_fallback_warning", &cuda_fallback_warning,
        "Why device='auto' runs on the CPU although a GPU is visible (its architecture is not in this build); '' when not");
  m.attr("__version__") = PARASURF_VERSION;
}

// Volumes read and meshes written.
void bind_files(py::module_& m) {
  m.def(
      "read_volume",
      [](const std::string& path) {
        auto source = open_volume(path);
        const VolumeGeometry g = source->geometry();
        py::array_t<float> a(std::vector<py::ssize_t>{py::ssize_t(g.dims[2]), py::ssize_t(g.dims[1]), py::ssize_t(g.dims[0])});
        float* samples = a.mutable_data();  // numpy's pointer is taken while the GIL is held
        {
          py::gil_scoped_release release;
          read_volume_float(*source, samples);
        }
        py::dict info;
        info["spacing"] = py::make_tuple(g.spacing[2], g.spacing[1], g.spacing[0]);
        info["origin"] = py::make_tuple(g.origin[2], g.origin[1], g.origin[0]);
        info["type"] = voxel_type_name(source->type());
        // Index (z, y, x, 1) of the returned array to world (x, y, z), in RAS when the file names its frame.
        const std::array<double, 9> j = g.jacobian();
        const double flip = g.frame == WorldFrame::Lps ? -1.0 : 1.0;
        py::array_t<double> affine({py::ssize_t(4), py::ssize_t(4)});
        double* m = affine.mutable_data();
        for (int r = 0; r < 4; ++r)
          for (int c = 0; c < 4; ++c) m[4 * r + c] = r == 3 ? (c == 3 ? 1.0 : 0.0) : 0.0;
        for (int r = 0; r < 3; ++r) {
          const double s = r < 2 ? flip : 1.0;
          for (int c = 0; c < 3; ++c) m[4 * r + c] = s * j[std::size_t(3 * r + (2 - c))];
          m[4 * r + 3] = s * g.origin[std::size_t(r)];
        }
        info["affine"] = affine;
        info["frame"] = g.frame == WorldFrame::Unspecified ? "unspecified" : "RAS";
        return py::make_tuple(a, info);
      },
      py::arg("path"));
  m.def(
      "write_mesh",
      [](const std::string& path, py::array_t<float, py::array::c_style | py::array::forcecast> vertices,
         py::array_t<std::int64_t, py::array::c_style | py::array::forcecast> faces, std::optional<py::array_t<float, py::array::c_style | py::array::forcecast>> normals,
         std::optional<py::array_t<float, py::array::c_style | py::array::forcecast>> values,
         std::optional<py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>> groups, std::vector<std::string> group_names,
         const std::string& format_name) {
        const MeshFormat format = choose_mesh_format(path, format_name);
        if (vertices.ndim() != 2 || vertices.shape(1) != 3) throw Error(ErrorKind::InvalidArgument, "vertices must have shape (V, 3)");
        if (faces.ndim() != 2 || faces.shape(1) != 3) throw Error(ErrorKind::InvalidArgument, "faces must have shape (F, 3)");
        const py::ssize_t nv = vertices.shape(0), nf = faces.shape(0);
        if (nv > py::ssize_t(UINT32_MAX)) throw Error(ErrorKind::InvalidArgument, "more than 2^32 vertices");
        TriangleMesh mesh;
        mesh.positions.assign(vertices.data(), vertices.data() + 3 * nv);
        mesh.triangles.resize(std::size_t(3 * nf));
        for (py::ssize_t k = 0; k < 3 * nf; ++k) {
          const std::int64_t v = faces.data()[k];
          if (v < 0 || v >= nv)
            throw Error(ErrorKind::InvalidArgument, "face " + std::to_string(k / 3) + " refers to vertex " + std::to_string(v) +
                                                        " of " + std::to_string(nv));
          mesh.triangles[std::size_t(k)] = std::uint32_t(v);
        }
        auto per = [](const auto& a, py::ssize_t n, py::ssize_t width, const char* what) {
          if (a.size() != n * width)
            throw Error(ErrorKind::InvalidArgument, std::string(what) + " must have " + std::to_string(n) + " rows");
        };
        if (normals) {
          per(*normals, nv, 3, "normals");
          mesh.normals.assign(normals->data(), normals->data() + 3 * nv);
        }
        if (values) {
          per(*values, nv, 1, "values");
          mesh.vertex_values.assign(values->data(), values->data() + nv);
        }
        if (groups) {
          per(*groups, nf, 1, "groups");
          mesh.face_groups.assign(groups->data(), groups->data() + nf);
        }
        mesh.group_names = std::move(group_names);
        check_finite(mesh, "write_mesh");
        py::gil_scoped_release release;
        write_mesh(path, mesh, format);
      },
      py::arg("path"), py::arg("vertices"), py::arg("faces"), py::arg("normals") = py::none(), py::arg("values") = py::none(),
      py::arg("groups") = py::none(), py::arg("group_names") = std::vector<std::string>{}, py::arg("format") = std::string());
}

// A solve from Python: the call's limits set, Ctrl-C polled while `solve(options)` runs without the GIL, and
// Python's exception raised once it returns.
template <class F>
auto solve_interruptibly(SolverOptions options, const Limits& limits, F&& solve) {
  set_limits(options, limits);
  Interrupt interrupt;
  options.stop = interrupt.poll();
  std::optional<decltype(solve(std::as_const(options)))> r;
  {
    py::gil_scoped_release release;
    r.emplace(solve(std::as_const(options)));
  }
  interrupt.raise_if_stopped();
  return std::move(*r);
}

// The curves of a list of pairs (a, b), one after the other, as intersect_curves_packed takes them: points (M, 2)
// float64 and two counts per pair. Arrays already float64, (k, 2) and in C order are copied from their memory; other
// curves (lists, other dtypes or layouts) go through numpy's conversion, as np.asarray(c, float64) does.
py::tuple pack_curve_pairs(const py::handle& pairs) {
  const auto fast = [](const py::handle& h, const char* what) {
    PyObject* f = PySequence_Fast(h.ptr(), what);
    if (!f) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(f);
  };
  const py::object seq = fast(pairs, "pairs must be a sequence of (a, b) curve pairs");
  const py::ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  std::vector<py::array> curves;
  curves.reserve(std::size_t(2 * n));
  py::array_t<std::int64_t> counts(2 * n);
  std::int64_t* count = counts.mutable_data();
  py::ssize_t total = 0;
  const auto& api = py::detail::npy_api::get();
  for (py::ssize_t i = 0; i < n; ++i) {
    const py::object pair = fast(PySequence_Fast_GET_ITEM(seq.ptr(), i), "a pair must be two curves (a, b)");
    if (PySequence_Fast_GET_SIZE(pair.ptr()) != 2)
      throw Error(ErrorKind::InvalidArgument, "pair " + std::to_string(i) + " is not two curves (a, b)");
    for (py::ssize_t side = 0; side < 2; ++side) {
      PyObject* c = PySequence_Fast_GET_ITEM(pair.ptr(), side);
      const auto* proxy = py::detail::array_proxy(c);
      bool in_place = api.PyArray_Check_(c) && (proxy->flags & api.NPY_ARRAY_C_CONTIGUOUS_);
      if (in_place) {  // float64 in the machine's byte order
        const auto* descr = py::detail::array_descriptor_proxy(proxy->descr);
        const char native = std::endian::native == std::endian::little ? '<' : '>';
        in_place = descr->type_num == api.NPY_DOUBLE_ && (descr->byteorder == '=' || descr->byteorder == native);
      }
      // (py::array's default constructor makes an empty numpy array: not one per curve)
      py::array a = in_place ? py::reinterpret_borrow<py::array>(c)
                             : py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(c);
      if (!a || a.ndim() != 2 || a.shape(1) != 2)
        throw Error(ErrorKind::InvalidArgument,
                    "curve control points must have shape (n, 2) (pair " + std::to_string(i) + ")");
      count[2 * i + side] = a.shape(0);
      total += a.shape(0);
      curves.push_back(std::move(a));
    }
  }
  auto points = matrix<double>(total, 2);
  double* at = points.mutable_data();
  for (const py::array& a : curves) {
    std::memcpy(at, a.data(), std::size_t(a.shape(0)) * 2 * sizeof(double));
    at += 2 * a.shape(0);
  }
  return py::make_tuple(points, counts);
}

// The subdivision solver's curve applications.
void bind_solver(py::module_& m) {
  m.def("_pack_curve_pairs", &pack_curve_pairs, py::arg("pairs"));
  m.def(
      "intersect_curves",
      [](py::array_t<double, py::array::c_style | py::array::forcecast> a, py::array_t<double, py::array::c_style | py::array::forcecast> b,
         double tolerance, int threads, const Limits& limits) {
        const BezierCurve2 ca = curve_arg(a), cb = curve_arg(b);
        SolverOptions o;
        o.tolerance = tolerance;
        o.threads = threads;
        const CurveIntersectionResult r = solve_interruptibly(o, limits,
            [&](const SolverOptions& options) { return intersect_curves(ca, cb, options); });
        return curve_result(r);
      },
      py::arg("a"), py::arg("b"), py::arg("tolerance"), py::arg("threads"), py::arg("limits"));
  m.def(
      "intersect_curves_packed",
      [](CArray points, py::array_t<std::int64_t, py::array::c_style | py::array::forcecast> counts, double tolerance,
         const std::string& device, int threads, const Limits& limits, bool flat) -> py::object {
        // The pairs' curves one after the other: counts[2i], counts[2i + 1] control points of pair i's curves.
        if (points.ndim() != 2 || points.shape(1) != 2)
          throw Error(ErrorKind::InvalidArgument, "curve control points must have shape (n, 2)");
        if (counts.ndim() != 1 || counts.shape(0) % 2 != 0)
          throw Error(ErrorKind::InvalidArgument, "intersect_curves_packed: two counts per pair");
        const std::size_t n = std::size_t(counts.shape(0) / 2);
        // (M, 2) float64 in C order: the layout of std::array<double, 2>, taken where it lies.
        const std::span<const std::array<double, 2>> xy(reinterpret_cast<const std::array<double, 2>*>(points.data()),
                                                        std::size_t(points.shape(0)));
        const std::span<const std::int64_t> count(counts.data(), std::size_t(counts.shape(0)));
        const std::vector<CurveIntersectionResult> r =
            solve_interruptibly(solver_options(device, threads, tolerance), limits,
                                [&](const SolverOptions& options) { return intersect_curve_pairs(xy, count, options); });
        if (!flat) {
          py::list out(r.size());
          const CurveResultKeys keys;
          for (std::size_t i = 0; i < r.size(); ++i) out[i] = curve_result(r[i], keys);
          return std::move(out);
        }
        // One set of arrays for the whole batch: row q of params/points/tangent belongs to pair pair[q], row q of
        // overlaps to overlap_pair[q], in the pairs' order.
        py::ssize_t k = 0, j = 0;
        for (const auto& x : r) k += py::ssize_t(x.points.size()), j += py::ssize_t(x.overlaps.size());
        auto params = matrix<double>(k, 2), xy_out = matrix<double>(k, 2), overlaps = matrix<double>(j, 4);
        py::array_t<bool> tangent(k), complete{py::ssize_t(n)};
        py::array_t<std::int64_t> pair(k), overlap_pair(j);
        double *pp = params.mutable_data(), *po = xy_out.mutable_data(), *pv = overlaps.mutable_data();
        bool *pt = tangent.mutable_data(), *pc = complete.mutable_data();
        std::int64_t *pi = pair.mutable_data(), *pj = overlap_pair.mutable_data();
        std::string status = "complete";
        for (std::size_t i = 0; i < n; ++i) {
          for (const CurveIntersection& c : r[i].points) {
            *pp++ = c.s, *pp++ = c.t, *po++ = c.point[0], *po++ = c.point[1];
            *pt++ = c.tangent, *pi++ = std::int64_t(i);
          }
          for (const CurveOverlap& v : r[i].overlaps) *pv++ = v.s0, *pv++ = v.s1, *pv++ = v.t0, *pv++ = v.t1, *pj++ = std::int64_t(i);
          pc[i] = r[i].status == "complete";
          if (!pc[i] && status == "complete") status = r[i].status;
        }
        py::dict out;
        out["pair"] = pair;
        out["params"] = params;
        out["points"] = xy_out;
        out["tangent"] = tangent;
        out["overlap_pair"] = overlap_pair;
        out["overlaps"] = overlaps;
        out["complete"] = complete;
        out["status"] = status;
        return std::move(out);
      },
      py::arg("points"), py::arg("counts"), py::arg("tolerance"), py::arg("device"), py::arg("threads"), py::arg("limits"), py::arg("flat"));
  m.def(
      "patch_nets",
      [](const py::object& path) {
        const PatchModel model = path.is_none() ? utah_teapot() : read_patch_model(path.cast<std::string>());
        py::list out;
        for (std::int64_t i = 0; i < std::int64_t(model.patches.size()); ++i) {
          if (model.patches[std::size_t(i)].kind != PatchKind::Tensor) continue;
          const BezierSurface b = patch_surface(model, i);
          py::array_t<double> a({py::ssize_t(b.degree_u + 1), py::ssize_t(b.degree_v + 1), py::ssize_t(3)});
          std::copy(b.points.begin(), b.points.end(), a.mutable_data());
          py::dict d;
          d["points"] = a;
          if (b.rational()) {
            py::array_t<double> w({py::ssize_t(b.degree_u + 1), py::ssize_t(b.degree_v + 1)});
            std::copy(b.weights.begin(), b.weights.end(), w.mutable_data());
            d["weights"] = w;
          } else {
            d["weights"] = py::none();
          }
          d["index"] = i;
          out.append(d);
        }
        return out;
      },
      py::arg("path"));
  m.def(
      "closest_points",
      [](CArray queries, const py::object& path, const std::vector<CArray>& nets, const std::string& device, int threads, const Limits& limits) {
        if (queries.ndim() != 2 || queries.shape(1) != 3)
          throw Error(ErrorKind::InvalidArgument, "queries must have shape (n, 3)");
        const std::vector<BezierSurface> patches = solver_patches(path, nets);
        std::vector<std::array<double, 3>> q(std::size_t(queries.shape(0)));
        std::copy_n(queries.data(), 3 * q.size(), q.data()->data());
        const ClosestPointsResult r = solve_interruptibly(solver_options(device, threads), limits,
            [&](const SolverOptions& options) { return closest_points(patches, q, options); });
        const auto n = py::ssize_t(r.points.size());
        py::array_t<double> points({n, py::ssize_t(3)}), uv({n, py::ssize_t(2)}), distance(n);
        py::array_t<std::int64_t> patch(n);
        double *pp = points.mutable_data(), *pu = uv.mutable_data(), *pd = distance.mutable_data();
        std::int64_t* pi = patch.mutable_data();
        for (py::ssize_t i = 0; i < n; ++i) {
          const ClosestPoint& c = r.points[std::size_t(i)];
          for (int k = 0; k < 3; ++k) pp[3 * i + k] = c.point[std::size_t(k)];
          pu[2 * i] = c.u, pu[2 * i + 1] = c.v;
          pd[i] = c.distance;
          pi[i] = c.patch;
        }
        py::dict out;
        out["points"] = points;
        out["distance"] = distance;
        out["patch"] = patch;
        out["uv"] = uv;
        out["systems"] = r.systems;
        out["status"] = r.status;
        return out;
      },
      py::arg("queries"), py::arg("path"), py::arg("nets"), py::arg("device"), py::arg("threads"), py::arg("limits"));
  m.def(
      "intersect_rays",
      [](CArray origins, CArray directions, const py::object& path, const std::vector<CArray>& nets, double t_min,
         const std::string& device, int threads, const Limits& limits) {
        for (const CArray* a : {&origins, &directions})
          if (a->ndim() != 2 || a->shape(1) != 3) throw Error(ErrorKind::InvalidArgument, "origins and directions must have shape (n, 3)");
        if (origins.shape(0) != directions.shape(0))
          throw Error(ErrorKind::InvalidArgument, "rays: " + std::to_string(origins.shape(0)) + " origins but " +
                                                      std::to_string(directions.shape(0)) + " directions");
        const std::vector<BezierSurface> patches = solver_patches(path, nets);
        std::vector<std::array<double, 3>> o(std::size_t(origins.shape(0))), d(o.size());
        std::copy_n(origins.data(), 3 * o.size(), o.data()->data());
        std::copy_n(directions.data(), 3 * d.size(), d.data()->data());
        const RayHitsResult r = solve_interruptibly(solver_options(device, threads), limits,
            [&](const SolverOptions& options) { return intersect_rays(patches, o, d, options, t_min); });
        const auto n = py::ssize_t(r.hits.size());
        py::array_t<double> points({n, py::ssize_t(3)}), uv({n, py::ssize_t(2)}), t(n);
        py::array_t<std::int64_t> patch(n);
        py::array_t<bool> hit(n);
        double *pp = points.mutable_data(), *pu = uv.mutable_data(), *pt = t.mutable_data();
        std::int64_t* pi = patch.mutable_data();
        bool* ph = hit.mutable_data();
        for (py::ssize_t i = 0; i < n; ++i) {
          const RayHit& h = r.hits[std::size_t(i)];
          const bool yes = h.patch >= 0;
          for (int k = 0; k < 3; ++k) pp[3 * i + k] = yes ? h.point[std::size_t(k)] : NAN;
          pu[2 * i] = yes ? h.u : NAN, pu[2 * i + 1] = yes ? h.v : NAN;
          pt[i] = yes ? h.t : INFINITY;
          pi[i] = h.patch;
          ph[i] = yes;
        }
        py::dict out;
        out["hit"] = hit;
        out["t"] = t;
        out["points"] = points;
        out["patch"] = patch;
        out["uv"] = uv;
        out["systems"] = r.systems;
        out["status"] = r.status;
        return out;
      },
      py::arg("origins"), py::arg("directions"), py::arg("path"), py::arg("nets"), py::arg("t_min"), py::arg("device"),
      py::arg("threads"), py::arg("limits"));
  m.def(
      "ray_traps",
      [](std::vector<py::array_t<double, py::array::c_style | py::array::forcecast>> curves, double tolerance, int threads, const Limits& limits) {
        std::vector<BezierCurve2> cs;
        for (const auto& p : curves) {
          if (p.ndim() != 2 || p.shape(1) != 2) throw Error(ErrorKind::InvalidArgument, "curve control points must have shape (n, 2)");
          BezierCurve2 c;
          for (py::ssize_t i = 0; i < p.shape(0); ++i) c.points.push_back({p.data()[2 * i], p.data()[2 * i + 1]});
          cs.push_back(std::move(c));
        }
        SolverOptions o;
        o.tolerance = tolerance;
        o.threads = threads;
        const RayTrapResult r = solve_interruptibly(o, limits,
            [&](const SolverOptions& options) { return ray_traps(cs, options); });
        const py::ssize_t k = py::ssize_t(cs.size()), n = py::ssize_t(r.traps.size());
        py::array_t<double> params(std::vector<py::ssize_t>{n, k}), points(std::vector<py::ssize_t>{n, k, 2});
        for (py::ssize_t i = 0; i < n; ++i)
          for (py::ssize_t j = 0; j < k; ++j) {
            params.mutable_data()[i * k + j] = r.traps[i].t[j];
            points.mutable_data()[(i * k + j) * 2] = r.traps[i].points[j][0];
            points.mutable_data()[(i * k + j) * 2 + 1] = r.traps[i].points[j][1];
          }
        py::dict out;
        out["params"] = params;
        out["points"] = points;
        out["status"] = r.status;
        return out;
      },
      py::arg("curves"), py::arg("tolerance"), py::arg("threads"), py::arg("limits"));

  m.def(
      "hausdorff_distance",
      [](CArray a, int da, std::vector<double> ka, CArray b, int db, std::vector<double> kb, const std::string& device, int threads, const Limits& limits) {
        const BSplineCurve2 ca = curve_arg(a, da, ka, "curve a"), cb = curve_arg(b, db, kb, "curve b");
        const HausdorffResult r = solve_interruptibly(solver_options(device, threads), limits,
            [&](const SolverOptions& options) { return hausdorff_distance(ca, cb, options); });
        auto pair = [](const HausdorffPair& p) {
          py::dict d;
          d["distance"] = p.distance;
          d["t"] = p.t;
          d["r"] = p.r;
          d["from"] = py::make_tuple(p.from[0], p.from[1]);
          d["to"] = py::make_tuple(p.to[0], p.to[1]);
          return d;
        };
        py::dict out;
        out["distance"] = r.distance;
        out["a_to_b"] = pair(r.a_to_b);
        out["b_to_a"] = pair(r.b_to_a);
        out["candidates"] = r.candidates;
        out["status"] = r.status;
        return out;
      },
      py::arg("a"), py::arg("degree_a"), py::arg("knots_a"), py::arg("b"), py::arg("degree_b"), py::arg("knots_b"), py::arg("device"),
      py::arg("threads"), py::arg("limits"));
  m.def(
      "curve_bisector",
      [](CArray a, int da, std::vector<double> ka, CArray b, int db, std::vector<double> kb, double resolution, const std::string& device,
         int threads, const Limits& limits) {
        const BSplineCurve2 ca = curve_arg(a, da, ka, "curve a"), cb = curve_arg(b, db, kb, "curve b");
        const CurveBisectorResult r = solve_interruptibly(solver_options(device, threads), limits,
            [&](const SolverOptions& options) { return curve_bisector(ca, cb, resolution, options); });
        py::dict out;
        out["curves"] = curve_list(r.curves);
        out["status"] = r.status;
        return out;
      },
      py::arg("a"), py::arg("degree_a"), py::arg("knots_a"), py::arg("b"), py::arg("degree_b"), py::arg("knots_b"), py::arg("resolution"),
      py::arg("device"), py::arg("threads"), py::arg("limits"));
}

// The solver's surface applications.
void bind_surface_solver(py::module_& m) {
  m.def(
      "intersect_surfaces",
      [](CArray a, std::vector<int> da, std::vector<std::vector<double>> ka, CArray b, std::vector<int> db, std::vector<std::vector<double>> kb,
         double resolution, const std::string& device, int threads, const Limits& limits) {
        const BSplineSurface sa = surface_arg(a, da, ka, "surface a"), sb = surface_arg(b, db, kb, "surface b");
        const SurfaceIntersectionResult r = solve_interruptibly(solver_options(device, threads), limits,
            [&](const SolverOptions& options) { return intersect_surfaces(sa, sb, resolution, options); });
        py::dict out;
        out["curves"] = curve_list(r.curves);
        std::vector<std::array<double, 8>> boxes;
        for (const auto& v : r.overlaps)
          boxes.push_back({v.lo[0], v.hi[0], v.lo[1], v.hi[1], v.lo[2], v.hi[2], v.lo[3], v.hi[3]});
        out["overlaps"] = rows(boxes);
        out["status"] = r.status;
        return out;
      },
      py::arg("a"), py::arg("degree_a"), py::arg("knots_a"), py::arg("b"), py::arg("degree_b"), py::arg("knots_b"), py::arg("resolution"),
      py::arg("device"), py::arg("threads"), py::arg("limits"));
  m.def(
      "contact_points",
      [](CArray a, std::vector<int> da, std::vector<std::vector<double>> ka, CArray b, std::vector<int> db, std::vector<std::vector<double>> kb,
         CArray motion, int motion_degree, std::vector<double> motion_knots, const std::string& device, int threads, const Limits& limits) {
        const BSplineSurface sa = surface_arg(a, da, ka, "moving surface"), sb = surface_arg(b, db, kb, "fixed surface");
        if (motion.ndim() != 2 || motion.shape(1) != 4) throw Error(ErrorKind::InvalidArgument, "motion: control points must have shape (n, 4): scale, tx, ty, tz");
        Motion m;
        m.degree = motion_degree;
        m.knots = motion_knots;
        for (py::ssize_t i = 0; i < motion.shape(0); ++i)
          m.points.push_back({motion.data()[4 * i], motion.data()[4 * i + 1], motion.data()[4 * i + 2], motion.data()[4 * i + 3]});
        const ContactResult r = solve_interruptibly(solver_options(device, threads), limits,
            [&](const SolverOptions& options) { return contact_points(sa, sb, m, options); });
        const py::ssize_t k = py::ssize_t(r.contacts.size());
        auto params = matrix<double>(k, 5), points = matrix<double>(k, 3);
        for (py::ssize_t i = 0; i < k; ++i) {
          const auto& c = r.contacts[i];
          const double v[5] = {c.u1, c.v1, c.u2, c.v2, c.t};
          for (int j = 0; j < 5; ++j) params.mutable_data()[5 * i + j] = v[j];
          for (int j = 0; j < 3; ++j) points.mutable_data()[3 * i + j] = c.point[j];
        }
        std::vector<std::array<double, 10>> regions;
        for (const auto& g : r.regions)
          regions.push_back({g.t0, g.t1, g.lo[0], g.hi[0], g.lo[1], g.hi[1], g.lo[2], g.hi[2], g.lo[3], g.hi[3]});
        py::dict out;
        out["params"] = params;
        out["points"] = points;
        out["regions"] = rows(regions);
        out["status"] = r.status;
        return out;
      },
      py::arg("a"), py::arg("degree_a"), py::arg("knots_a"), py::arg("b"), py::arg("degree_b"), py::arg("knots_b"), py::arg("motion"),
      py::arg("motion_degree"), py::arg("motion_knots"), py::arg("device"), py::arg("threads"), py::arg("limits"));
  m.def(
      "surface_bisector",
      [](CArray a, std::vector<int> da, std::vector<std::vector<double>> ka, CArray b, std::vector<int> db, std::vector<std::vector<double>> kb,
         double resolution, const std::string& device, int threads, const Limits& limits) {
        const BSplineSurface sa = surface_arg(a, da, ka, "surface a"), sb = surface_arg(b, db, kb, "surface b");
        const SurfaceBisectorResult r = solve_interruptibly(solver_options(device, threads), limits,
            [&](const SolverOptions& options) { return surface_bisector(sa, sb, resolution, options); });
        const py::ssize_t k = py::ssize_t(r.samples.size());
        auto params = matrix<double>(k, 4), points = matrix<double>(k, 3);
        for (py::ssize_t i = 0; i < k; ++i) {
          const auto& b = r.samples[i];
          const double v[4] = {b.u, b.v, b.s, b.t};
          for (int j = 0; j < 4; ++j) params.mutable_data()[4 * i + j] = v[j];
          for (int j = 0; j < 3; ++j) points.mutable_data()[3 * i + j] = b.point[j];
        }
        std::vector<std::array<double, 8>> boxes;
        for (const auto& v : r.overlaps)
          boxes.push_back({v.lo[0], v.hi[0], v.lo[1], v.hi[1], v.lo[2], v.hi[2], v.lo[3], v.hi[3]});
        py::dict out;
        out["params"] = params;
        out["points"] = points;
        out["overlaps"] = rows(boxes);
        out["status"] = r.status;
        return out;
      },
      py::arg("a"), py::arg("degree_a"), py::arg("knots_a"), py::arg("b"), py::arg("degree_b"), py::arg("knots_b"), py::arg("resolution"),
      py::arg("device"), py::arg("threads"), py::arg("limits"));
}

// Free-form deformation: lattices and deformed meshes.
void bind_ffd(py::module_& m) {
  py::class_<Lattice>(m, "Lattice", "A trivariate B-spline volume embedding world space (see parasurf.lattice)")
      .def_property_readonly("count", [](const Lattice& l) { return l.count; })
      .def_property_readonly("degree", [](const Lattice& l) { return l.degree; })
      .def_property_readonly("knots", [](const Lattice& l) { return l.knots; })
      .def_property_readonly("world_to_parameter", [](const Lattice& l) { return l.world_to_parameter; })
      .def_property_readonly(
          "control_points",
          [](py::object self) {
            Lattice& l = self.cast<Lattice&>();
            // (n0, n1, n2, 3) view of the lattice's own storage: edits in numpy are edits of the lattice.
            const py::ssize_t d = sizeof(double);
            return py::array_t<double>({py::ssize_t(l.count[0]), py::ssize_t(l.count[1]), py::ssize_t(l.count[2]), py::ssize_t(3)},
                                       {3 * d, 3 * d * l.count[0], 3 * d * l.count[0] * l.count[1], d}, l.control_points.data(), self);
          },
          "(n0, n1, n2, 3) control points, a writable view: point [i, j, k] moves the lattice")
      .def("rest_control_points",
           [](const Lattice& l) {
             const auto r = rest_control_points(l);
             py::array_t<double> a({py::ssize_t(l.count[0]), py::ssize_t(l.count[1]), py::ssize_t(l.count[2]), py::ssize_t(3)},
                                   {py::ssize_t(24), py::ssize_t(24) * l.count[0], py::ssize_t(24) * l.count[0] * l.count[1], py::ssize_t(8)});
             std::memcpy(a.mutable_data(), r.data(), r.size() * sizeof(double));
             return a;
           },
           "(n0, n1, n2, 3) control points of the undeformed lattice")
      .def("deform_points",
           [](const Lattice& l, py::array_t<double, py::array::c_style | py::array::forcecast> p) {
             if (p.ndim() != 2 || p.shape(1) != 3) throw Error(ErrorKind::InvalidArgument, "points must have shape (N, 3)");
             auto out = matrix<double>(p.shape(0), 3);
             deform_points(l, std::span<const double>(p.data(), p.size()), std::span<double>(out.mutable_data(), out.size()));
             return out;
           },
           py::arg("points"), "Images of (N, 3) world points under the lattice's current control points")
      .def("move_points",
           [](Lattice& l, py::array_t<double, py::array::c_style | py::array::forcecast> points,
              py::array_t<double, py::array::c_style | py::array::forcecast> targets) {
             if (points.ndim() != 2 || points.shape(1) != 3 || targets.ndim() != 2 || targets.shape(1) != 3 ||
                 targets.shape(0) != points.shape(0))
               throw Error(ErrorKind::InvalidArgument, "points and targets must both have shape (K, 3)");
             std::vector<PointTarget> t(std::size_t(points.shape(0)));
             for (std::size_t k = 0; k < t.size(); ++k)
               for (int c = 0; c < 3; ++c) t[k].point[c] = points.data()[3 * k + c], t[k].target[c] = targets.data()[3 * k + c];
             direct_manipulation(l, t);
           },
           py::arg("points"), py::arg("targets"),
           "Direct manipulation: the least-norm control-point change that carries each point's image to its target");

  m.def(
      "make_lattice",
      [](py::array_t<double, py::array::c_style | py::array::forcecast> vertices, std::array<int, 3> count,
         std::array<int, 3> degree, double padding, std::optional<std::array<std::vector<double>, 3>> knots,
         std::optional<std::array<double, 12>> world_to_parameter) {
        if (vertices.ndim() != 2 || vertices.shape(1) != 3 || vertices.shape(0) == 0)
          throw Error(ErrorKind::InvalidArgument, "vertices must have shape (V, 3), V > 0");
        std::array<double, 3> lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
        for (py::ssize_t v = 0; v < vertices.shape(0); ++v)
          for (int c = 0; c < 3; ++c) lo[c] = std::min(lo[c], vertices.data()[3 * v + c]), hi[c] = std::max(hi[c], vertices.data()[3 * v + c]);
        LatticeSpec spec;
        spec.count = count;
        spec.degree = degree;
        spec.padding = padding;
        if (knots) spec.knots = *knots;
        spec.world_to_parameter = world_to_parameter;
        return make_lattice(spec, lo, hi);
      },
      py::arg("vertices"), py::arg("count"), py::arg("degree"), py::arg("padding"), py::arg("knots"), py::arg("world_to_parameter"));

  m.def(
      "ffd",
      [](py::array_t<double, py::array::c_style | py::array::forcecast> vertices, py::object faces, const Lattice& lattice,
         const std::string& method, int level, const std::string& device, const std::string& precision, bool allow_non_manifold,
         int gpu) {
        const PolygonMesh mesh = polygon_mesh(vertices, faces);
        FfdOptions o;
        o.method = parse_ffd_method(method);
        o.level = level;
        o.device = parse_device(device);
        o.allow_non_manifold = allow_non_manifold;
        if (precision != "float" && precision != "double") throw Error(ErrorKind::InvalidArgument, "precision must be 'float' or 'double'");
        if (gpu >= 0) {
          // The vertices lie on a GPU: the mesh is made there and stays there (the FFD engine runs on the first GPU).
          if (o.device == Device::Cpu || o.device == Device::Hybrid)
            throw Error(ErrorKind::InvalidArgument, "the vertices lie on a GPU: device must be 'auto' or 'cuda' (results stay there)");
          if (gpu != 0) throw Error(ErrorKind::InvalidArgument, "ffd runs on GPU 0; the vertices lie on GPU " + std::to_string(gpu));
          o.device = Device::Cuda;
        }
        auto run = [&](auto tag) -> py::tuple {
          using T = decltype(tag);
          if (gpu < 0) {
            TriangleMesh out;
            {
              py::gil_scoped_release release;
              FfdSession<T> s(mesh, lattice, o);
              s.update(lattice.control_points);
              out = s.mesh();
            }
            return mesh_arrays(std::move(out));
          }
          std::optional<FfdSession<T>> s;
          {
            py::gil_scoped_release release;
            s.emplace(mesh, lattice, o);
            s->update(lattice.control_points);
          }
          const std::int64_t nv = s->report().output_vertices, nf = s->report().output_triangles;
          if (nv >= (std::int64_t(1) << 31))
            throw Error(ErrorKind::LimitReached, "the mesh has " + std::to_string(nv) + " vertices: int32 face indices hold fewer than 2^31");
          const Buffer p = Buffer::cuda(s->gpu(), std::max<std::size_t>(1, std::size_t(3 * nv) * sizeof(float)));
          const Buffer n = Buffer::cuda(s->gpu(), std::max<std::size_t>(1, std::size_t(3 * nv) * sizeof(float)));
          const Buffer t = Buffer::cuda(s->gpu(), std::max<std::size_t>(1, std::size_t(3 * nf) * sizeof(std::uint32_t)));
          {
            py::gil_scoped_release release;
            s->write_mesh(static_cast<float*>(p.data), static_cast<float*>(n.data), static_cast<std::uint32_t*>(t.data),
                          MemorySpace::Cuda);
          }
          return py::make_tuple(python::array_out(p, {nv, 3}, "float32"), python::array_out(t, {nf, 3}, "int32"),
                                python::array_out(n, {nv, 3}, "float32"));
        };
        return precision == "float" ? run(float{}) : run(double{});
      },
      py::arg("vertices"), py::arg("faces"), py::arg("lattice"), py::arg("method"), py::arg("level"), py::arg("device"),
      py::arg("precision"), py::arg("allow_non_manifold"), py::arg("gpu") = -1);
}

}  // namespace

PYBIND11_MODULE(_parasurf, m) {
  m.doc() = "parasurf: fast parametric and volumetric geometry on CPUs and NVIDIA GPUs (C++ core)";
  // The package refuses a NumPy this pybind11 cannot read (pybind11 before 2.12 under NumPy 2).
  m.attr("_pybind11_version") = py::make_tuple(PYBIND11_VERSION_MAJOR, PYBIND11_VERSION_MINOR, PYBIND11_VERSION_PATCH);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::InvalidArgument || e.kind() == ErrorKind::Parse) PyErr_SetString(PyExc_ValueError, e.what());
      else if (e.kind() == ErrorKind::OutOfMemory) PyErr_SetString(PyExc_MemoryError, e.what());
      else if (e.kind() == ErrorKind::Io) PyErr_SetString(PyExc_OSError, e.what());
      else PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  python::register_device_array(m);
  bind_timings(m);
  bind_capabilities(m);
  bind_files(m);
  bind_solver(m);
  bind_surface_solver(m);
  bind_ffd(m);
}
