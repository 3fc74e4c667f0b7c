//===- RuntimeModule.cpp - kiln._runtime: the runtime's Python binding ----===//
//
// A thin pybind11 layer over kiln_runtime: bundles (read, write, describe),
// kernels (launch, JIT construction from images), the device arch and
// symmetric workspaces (kiln.distributed builds on them). JSON
// metadata crosses the boundary as plain Python dicts and lists. kiln::Error
// becomes kiln._runtime.KilnError (a RuntimeError). This module never needs a
// GPU to import or to handle bundles.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/Bundle.h"
#include "kiln/Runtime/CApi.h"
#include "kiln/Runtime/Distributed.h"
#include "kiln/Runtime/Kernel.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>
#include <cmath>
#include <new>
#include <optional>
#include <unordered_map>

namespace py = pybind11;
using nlohmann::json;

namespace {

py::object toPy(const json &j) {
  switch (j.type()) {
  case json::value_t::null:
    return py::none();
  case json::value_t::boolean:
    return py::bool_(j.get<bool>());
  case json::value_t::number_integer:
    return py::int_(j.get<int64_t>());
  case json::value_t::number_unsigned:
    return py::int_(j.get<uint64_t>());
  case json::value_t::number_float:
    return py::float_(j.get<double>());
  case json::value_t::string:
    return py::str(j.get_ref<const std::string &>());
  case json::value_t::array: {
    py::list l;
    for (const json &e : j)
      l.append(toPy(e));
    return std::move(l);
  }
  case json::value_t::object: {
    py::dict d;
    for (auto it = j.begin(); it != j.end(); ++it)
      d[py::str(it.key())] = toPy(it.value());
    return std::move(d);
  }
  default:
    return py::none();
  }
}

json fromPy(py::handle h, const std::string &path = "metadata") {
  if (h.is_none())
    return nullptr;
  if (py::isinstance<py::bool_>(h))
    return h.cast<bool>();
  if (py::isinstance<py::int_>(h)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (!overflow)
      return v;
    if (overflow > 0) {
      unsigned long long u = PyLong_AsUnsignedLongLong(h.ptr());
      if (!PyErr_Occurred())
        return u;
      PyErr_Clear();
    }
    throw kiln::Error(path + ": integer " + py::str(h).cast<std::string>() +
                      " does not fit in 64 bits");
  }
  if (py::isinstance<py::float_>(h))
    return h.cast<double>();
  if (py::isinstance<py::str>(h))
    return h.cast<std::string>();
  if (py::isinstance<py::dict>(h)) {
    json o = json::object();
    for (auto item : h.cast<py::dict>()) {
      if (!py::isinstance<py::str>(item.first))
        throw kiln::Error(path + ": dict keys must be strings, got " +
                          py::str(py::type::of(item.first).attr("__name__")).cast<std::string>());
      std::string key = item.first.cast<std::string>();
      o[key] = fromPy(item.second, path + "." + key);
    }
    return o;
  }
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    json a = json::array();
    size_t i = 0;
    for (auto e : h)
      a.push_back(fromPy(e, path + "[" + std::to_string(i++) + "]"));
    return a;
  }
  // numpy scalars and the like.
  if (py::hasattr(h, "__index__"))
    return fromPy(py::reinterpret_steal<py::object>(PyNumber_Index(h.ptr())), path);
  if (py::hasattr(h, "__float__"))
    return py::float_(py::reinterpret_borrow<py::object>(h)).cast<double>();
  throw kiln::Error(path + ": cannot store a value of type " +
                    py::str(py::type::of(h).attr("__name__")).cast<std::string>() + " in JSON");
}

std::string typeNameOf(py::handle h) {
  return py::str(py::type::of(h).attr("__name__")).cast<std::string>();
}

/// "kernel 'k': argument 'x' (param 0)" -- built only when a message needs it.
std::string argWhat(const kiln::KernelEntry &entry, size_t index) {
  return "kernel '" + entry.name + "': argument '" + entry.params[index].name + "' (param " +
         std::to_string(index) + ")";
}

std::string paramExpected(const kiln::ParamInfo &p) { return p.describeType(); }

/// A TensorMap argument from kiln.runtime.marshal_args: (128 bytes, dtype name,
/// box outermost first, swizzle). The bytes object must outlive the launch
/// (the caller's argument list holds it).
kiln::KernelArg toTensorMapArg(const std::string &what, const kiln::ParamInfo &p, py::handle h) {
  if (!py::isinstance<py::tuple>(h) || py::len(h) != 4 ||
      !py::isinstance<py::bytes>(h[py::int_(0)]))
    throw kiln::Error(what + " expects " + p.describeType() + " (a kiln.TensorDescriptor), got " +
                      typeNameOf(h));
  py::tuple t = py::reinterpret_borrow<py::tuple>(h);
  char *data = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(t[0].ptr(), &data, &size) != 0 || size != 128) {
    PyErr_Clear();
    throw kiln::Error(what + ": a CUtensorMap is 128 bytes, got " + std::to_string(size));
  }
  auto dtype = kiln::parseDType(t[1].cast<std::string>());
  if (!dtype)
    throw kiln::Error(what + ": unknown dtype '" + t[1].cast<std::string>() + "'");
  return kiln::KernelArg::tensorMap(data, *dtype, t[2].cast<std::vector<uint32_t>>(),
                                    t[3].cast<unsigned>());
}

/// Converts one Python value to the KernelArg that parameter `p` expects. The
/// common cases (exact int, exact float) build no strings.
kiln::KernelArg toArg(const kiln::KernelEntry &entry, size_t index, py::handle h) {
  const kiln::ParamInfo &p = entry.params[index];
  PyObject *o = h.ptr();
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (!overflow) {
      if (p.kind == kiln::ParamKind::Pointer) {
        if (v >= 0)
          return kiln::KernelArg::pointer(static_cast<uint64_t>(v));
      } else if (p.dtype == kiln::DType::I32 && v >= INT32_MIN && v <= INT32_MAX) {
        return kiln::KernelArg::i32(static_cast<int32_t>(v));
      } else if (p.dtype == kiln::DType::I64) {
        return kiln::KernelArg::i64(v);
      }
    }
  } else if (PyFloat_CheckExact(o) && p.kind == kiln::ParamKind::Scalar &&
             p.dtype == kiln::DType::F32) {
    double v = PyFloat_AS_DOUBLE(o);
    if (!std::isfinite(v) || std::fabs(v) <= 3.4028234663852886e38)
      return kiln::KernelArg::f32(static_cast<float>(v));
  }

  const std::string what = argWhat(entry, index);
  const std::string expected = paramExpected(p);
  if (p.kind == kiln::ParamKind::TensorMap)
    return toTensorMapArg(what, p, h);
  const bool isBool = py::isinstance<py::bool_>(h);
  const bool isInt = !isBool && (py::isinstance<py::int_>(h) ||
                                 (!py::isinstance<py::float_>(h) && py::hasattr(h, "__index__")));
  if (p.kind == kiln::ParamKind::Pointer) {
    if (!isInt)
      throw kiln::Error(what + " expects " + expected + " as an integer device address, got " +
                        typeNameOf(h));
    py::object idx = py::reinterpret_steal<py::object>(PyNumber_Index(h.ptr()));
    unsigned long long addr = PyLong_AsUnsignedLongLong(idx.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      throw kiln::Error(what + ": pointer value " + py::str(h).cast<std::string>() +
                        " is not a 64-bit address");
    }
    return kiln::KernelArg::pointer(static_cast<uint64_t>(addr));
  }
  if (isBool) {
    if (p.dtype == kiln::DType::I1 || kiln::isSignedIntDType(p.dtype) ||
        kiln::isUnsignedIntDType(p.dtype))
      return kiln::KernelArg::fromInteger(p.dtype, h.cast<bool>() ? 1 : 0, what);
    throw kiln::Error(what + " expects " + expected + ", got bool");
  }
  if (isInt) {
    py::object idx = py::reinterpret_steal<py::object>(PyNumber_Index(h.ptr()));
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
    if (!overflow)
      return kiln::KernelArg::fromInteger(p.dtype, v, what);
    if (overflow > 0) {
      unsigned long long u = PyLong_AsUnsignedLongLong(idx.ptr());
      if (!PyErr_Occurred())
        return kiln::KernelArg::fromUnsigned(p.dtype, u, what);
      PyErr_Clear();
    }
    throw kiln::Error(what + ": value " + py::str(h).cast<std::string>() + " is out of range for " +
                      expected);
  }
  if (py::isinstance<py::float_>(h) || py::hasattr(h, "__float__"))
    return kiln::KernelArg::fromFloat(p.dtype, py::float_(py::reinterpret_borrow<py::object>(h)),
                                      what);
  throw kiln::Error(what + " expects " + expected + ", got " + typeNameOf(h));
}

/// The spec of a tiled TMA copy from the binding's arguments (dimensions innermost
/// first, swizzle in bytes).
kiln::TensorMapSpec tensorMapSpec(uint64_t address, const std::string &dtype,
                                  std::vector<uint64_t> shape, std::vector<uint64_t> strides,
                                  std::vector<uint32_t> box, unsigned swizzle) {
  kiln::TensorMapSpec spec;
  spec.address = address;
  auto d = kiln::parseDType(dtype);
  if (!d)
    throw kiln::Error("tensor map: unknown dtype '" + dtype + "'");
  spec.dtype = *d;
  spec.shape = std::move(shape);
  spec.strides = std::move(strides);
  spec.box = std::move(box);
  switch (swizzle) {
  case 0:
    spec.swizzle = kiln::TensorMapSwizzle::None;
    break;
  case 32:
    spec.swizzle = kiln::TensorMapSwizzle::B32;
    break;
  case 64:
    spec.swizzle = kiln::TensorMapSwizzle::B64;
    break;
  case 128:
    spec.swizzle = kiln::TensorMapSwizzle::B128;
    break;
  default:
    throw kiln::Error("tensor map: swizzle must be 0, 32, 64 or 128 bytes, got " +
                      std::to_string(swizzle));
  }
  return spec;
}

[[noreturn]] void badGrid(const std::string &kernel, const std::string &what) {
  throw kiln::Error("kernel '" + kernel + "': " + what);
}

/// A grid of 1 to 3 ints (or one int) as three dimensions within kiln::kMaxGridDims;
/// kiln::Error with the host rules' messages (kiln.host.normalize_grid) otherwise.
std::array<unsigned, 3> toGrid(py::handle grid, const std::string &kernel) {
  std::array<unsigned, 3> out = {1, 1, 1};
  PyObject *g = grid.ptr();
  // Fast path: a tuple of small exact ints.
  if (PyTuple_CheckExact(g) && PyTuple_GET_SIZE(g) >= 1 && PyTuple_GET_SIZE(g) <= 3) {
    bool ok = true;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(g) && ok; ++i) {
      PyObject *d = PyTuple_GET_ITEM(g, i);
      if (!PyLong_CheckExact(d)) {
        ok = false;
        break;
      }
      long long v = PyLong_AsLongLong(d);
      if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        ok = false;
        break;
      }
      if (v < 0 || v > static_cast<long long>(kiln::kMaxGridDims[i]))
        ok = false;
      else
        out[i] = static_cast<unsigned>(v);
    }
    if (ok)
      return out;
    out = {1, 1, 1};
  }
  std::vector<py::object> dims;
  if (py::isinstance<py::int_>(grid) ||
      (!py::isinstance<py::tuple>(grid) && !py::isinstance<py::list>(grid) &&
       py::hasattr(grid, "__index__"))) {
    dims.push_back(py::reinterpret_borrow<py::object>(grid));
  } else if (py::isinstance<py::tuple>(grid) || py::isinstance<py::list>(grid)) {
    for (auto d : grid)
      dims.push_back(py::reinterpret_borrow<py::object>(d));
  } else {
    badGrid(kernel, "grid must be 1 to 3 ints, got " + py::repr(grid).cast<std::string>());
  }
  if (dims.empty() || dims.size() > 3)
    badGrid(kernel, "grid must have 1 to 3 dimensions, got " + std::to_string(dims.size()));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!py::hasattr(dims[i], "__index__"))
      badGrid(kernel, "grid must be 1 to 3 ints, got " + py::repr(grid).cast<std::string>());
    py::object idx = py::reinterpret_steal<py::object>(PyNumber_Index(dims[i].ptr()));
    if (!idx)
      throw py::error_already_set();
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
    if (overflow || v < 0 || v > static_cast<long long>(kiln::kMaxGridDims[i]))
      throw kiln::Error(
          kiln::gridDimError(kernel, static_cast<unsigned>(i), py::str(idx).cast<std::string>()));
    out[i] = static_cast<unsigned>(v);
  }
  return out;
}

/// Most arguments converted on the stack; more spill to the heap.
constexpr size_t kStackArgs = 32;

/// Small-buffer array of KernelArgs (KernelArg has no default constructor).
class ArgBuffer {
public:
  explicit ArgBuffer(size_t n) {
    if (n > kStackArgs)
      heap_.reserve(n);
  }
  void push(const kiln::KernelArg &a) {
    if (heap_.capacity())
      heap_.push_back(a);
    else
      new (&stack_[size_ * sizeof(kiln::KernelArg)]) kiln::KernelArg(a);
    ++size_;
  }
  const kiln::KernelArg *data() const {
    return heap_.capacity() ? heap_.data() : reinterpret_cast<const kiln::KernelArg *>(stack_);
  }
  size_t size() const { return size_; }

private:
  alignas(kiln::KernelArg) unsigned char stack_[kStackArgs * sizeof(kiln::KernelArg)];
  std::vector<kiln::KernelArg> heap_;
  size_t size_ = 0;
};

void countError(const kiln::KernelEntry &entry, size_t n) {
  // Reuse the standard count message.
  kiln::checkArgs(entry, std::vector<kiln::KernelArg>(n, kiln::KernelArg::i1(false)));
}

void launch(const kiln::Kernel &k, py::handle grid, py::handle args, uintptr_t stream) {
  const kiln::KernelEntry &entry = k.entry();
  PyObject *seq = args.ptr();
  const bool fast = PyTuple_CheckExact(seq) || PyList_CheckExact(seq);
  const size_t n = fast ? static_cast<size_t>(PySequence_Fast_GET_SIZE(seq)) : py::len(args);
  if (n != entry.params.size())
    countError(entry, n);
  ArgBuffer converted(n);
  if (fast) {
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (size_t i = 0; i < n; ++i)
      converted.push(toArg(entry, i, items[i]));
  } else {
    py::sequence s = py::reinterpret_borrow<py::sequence>(args);
    for (size_t i = 0; i < n; ++i)
      converted.push(toArg(entry, i, s[i]));
  }
  std::array<unsigned, 3> g = toGrid(grid, entry.name);
  py::gil_scoped_release release;
  k.launch(reinterpret_cast<CUstream>(stream), g, converted.data(), converted.size());
}

//===----------------------------------------------------------------------===//
// Tensors: the direct path from torch tensors (no Python-side marshalling)
//===----------------------------------------------------------------------===//

/// What the binding knows about Python types seen in pointer slots.
struct TensorTypes {
  /// type -> is a torch tensor type (has data_ptr/dtype/get_device).
  std::unordered_map<PyTypeObject *, bool> isTensor;
  /// torch dtype object -> kiln dtype (absent: no kiln dtype).
  std::unordered_map<PyObject *, std::optional<kiln::DType>> dtypes;
  PyObject *getRawStream = nullptr; // torch._C._cuda_getCurrentRawStream
  PyObject *getDevice = nullptr;    // torch._C._cuda_getDevice
  PyObject *strDataPtr = nullptr, *strDtype = nullptr, *strGetDevice = nullptr;
};

TensorTypes &tensorTypes() {
  static TensorTypes *t = [] {
    auto *tt = new TensorTypes(); // lives for the process (holds interned strings)
    tt->strDataPtr = PyUnicode_InternFromString("data_ptr");
    tt->strDtype = PyUnicode_InternFromString("dtype");
    tt->strGetDevice = PyUnicode_InternFromString("get_device");
    return tt;
  }();
  return *t;
}

bool isTorchTensor(PyObject *o) {
  TensorTypes &tt = tensorTypes();
  PyTypeObject *type = Py_TYPE(o);
  auto it = tt.isTensor.find(type);
  if (it != tt.isTensor.end())
    return it->second;
  bool is = false;
  for (PyObject *mro = type->tp_mro; mro && PyTuple_Check(mro);) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro) && !is; ++i) {
      auto *base = reinterpret_cast<PyTypeObject *>(PyTuple_GET_ITEM(mro, i));
      is = std::string(base->tp_name) == "torch._C.TensorBase" ||
           std::string(base->tp_name) == "torch._C._TensorBase";
    }
    break;
  }
  if (!is) { // other spellings: any torch type with data_ptr/dtype/get_device
    py::handle t(reinterpret_cast<PyObject *>(type));
    py::object mod = py::getattr(t, "__module__", py::none());
    is = !mod.is_none() && py::str(mod).cast<std::string>().rfind("torch", 0) == 0 &&
         py::hasattr(t, "data_ptr") && py::hasattr(t, "dtype") && py::hasattr(t, "get_device");
  }
  tt.isTensor[type] = is;
  return is;
}

std::optional<kiln::DType> torchDType(PyObject *dtypeObj) {
  TensorTypes &tt = tensorTypes();
  auto it = tt.dtypes.find(dtypeObj);
  if (it != tt.dtypes.end())
    return it->second;
  static const std::pair<const char *, kiln::DType> names[] = {
      {"torch.bool", kiln::DType::I1},           {"torch.int8", kiln::DType::I8},
      {"torch.int16", kiln::DType::I16},         {"torch.int32", kiln::DType::I32},
      {"torch.int64", kiln::DType::I64},         {"torch.uint8", kiln::DType::U8},
      {"torch.uint16", kiln::DType::U16},        {"torch.uint32", kiln::DType::U32},
      {"torch.uint64", kiln::DType::U64},        {"torch.float16", kiln::DType::F16},
      {"torch.bfloat16", kiln::DType::BF16},     {"torch.float32", kiln::DType::F32},
      {"torch.float64", kiln::DType::F64},       {"torch.float8_e4m3fn", kiln::DType::F8E4M3},
      {"torch.float8_e5m2", kiln::DType::F8E5M2}};
  std::string name = py::str(dtypeObj).cast<std::string>();
  std::optional<kiln::DType> d;
  for (const auto &[n, dt] : names)
    if (name == n)
      d = dt;
  Py_INCREF(dtypeObj); // dtype objects are process-wide singletons; keep the key alive
  tt.dtypes[dtypeObj] = d;
  return d;
}

/// A torch tensor's (address, kiln dtype, device index); false if not a CUDA
/// tensor with a kiln dtype. Sets no Python error.
bool tensorFacts(PyObject *o, uint64_t &address, std::optional<kiln::DType> &dtype, long &device) {
  TensorTypes &tt = tensorTypes();
  PyObject *dt = PyObject_GetAttr(o, tt.strDtype);
  if (!dt) {
    PyErr_Clear();
    return false;
  }
  dtype = torchDType(dt);
  Py_DECREF(dt);
  PyObject *dev = PyObject_CallMethodNoArgs(o, tt.strGetDevice);
  if (!dev) {
    PyErr_Clear();
    return false;
  }
  device = PyLong_AsLong(dev);
  Py_DECREF(dev);
  if (device < 0) {
    PyErr_Clear();
    return false;
  }
  PyObject *ptr = PyObject_CallMethodNoArgs(o, tt.strDataPtr);
  if (!ptr) {
    PyErr_Clear();
    return false;
  }
  address = PyLong_AsUnsignedLongLong(ptr);
  Py_DECREF(ptr);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

/// A function of torch._C (cached in `slot`), or null if torch is unusable. Sets no error.
PyObject *torchCFunction(PyObject *&slot, const char *name) {
  if (!slot) {
    PyObject *mod = PyImport_ImportModule("torch._C");
    if (!mod) {
      PyErr_Clear();
      return nullptr;
    }
    slot = PyObject_GetAttrString(mod, name);
    Py_DECREF(mod);
    if (!slot)
      PyErr_Clear();
  }
  return slot;
}

/// torch's current raw stream on `device`, or false if torch is unusable.
bool torchCurrentStream(long device, uintptr_t &stream) {
  PyObject *fn = torchCFunction(tensorTypes().getRawStream, "_cuda_getCurrentRawStream");
  if (!fn)
    return false;
  PyObject *dev = PyLong_FromLong(device);
  PyObject *r = PyObject_CallOneArg(fn, dev);
  Py_DECREF(dev);
  if (!r) {
    PyErr_Clear();
    return false;
  }
  stream = static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(r));
  Py_DECREF(r);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

/// Whether torch's current CUDA device is `device` (false if torch is unusable): the kernel
/// launches in the current context, so the tensors must live there.
bool torchCurrentDeviceIs(long device) {
  PyObject *fn = torchCFunction(tensorTypes().getDevice, "_cuda_getDevice");
  if (!fn)
    return false;
  PyObject *r = PyObject_CallNoArgs(fn);
  if (!r) {
    PyErr_Clear();
    return false;
  }
  long current = PyLong_AsLong(r);
  Py_DECREF(r);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return current == device;
}

//===----------------------------------------------------------------------===//
// The direct launch path, shared by Kernel.try_launch (bundles) and Dispatcher
// (the JIT): each argument's facts are read once, packed once, and launched by one
// function. Anything unusual returns false without launching or raising; the caller then
// runs kiln.host.marshal_args and Kernel.launch, which explain the problem or handle it.
//===----------------------------------------------------------------------===//

/// What the direct path knows of one argument.
struct ArgFacts {
  enum Kind : uint8_t { Other, Tensor, Int, Float, Bool };
  Kind kind = Other;
  std::optional<kiln::DType> dtype; // Tensor
  long device = -1;                 // Tensor
  uint64_t address = 0;             // Tensor
};

/// The facts of one argument: a torch CUDA tensor of a kiln dtype, an exact int, an exact
/// float, a bool; Other for everything else (CUDA arrays, descriptors, CPU tensors, numpy
/// scalars, int subclasses), which only the checked path takes.
ArgFacts readFacts(PyObject *o) {
  ArgFacts f;
  if (PyBool_Check(o))
    f.kind = ArgFacts::Bool;
  else if (PyLong_CheckExact(o))
    f.kind = ArgFacts::Int;
  else if (PyFloat_CheckExact(o))
    f.kind = ArgFacts::Float;
  else if (isTorchTensor(o) && tensorFacts(o, f.address, f.dtype, f.device) && f.dtype)
    f.kind = ArgFacts::Tensor;
  return f;
}

/// Facts for a few arguments on the stack, more on the heap.
class FactBuffer {
public:
  explicit FactBuffer(size_t n) {
    if (n > kStackArgs)
      heap_.resize(n);
  }
  ArgFacts &operator[](size_t i) { return heap_.empty() ? stack_[i] : heap_[i]; }
  const ArgFacts *data() const { return heap_.empty() ? stack_ : heap_.data(); }

private:
  ArgFacts stack_[kStackArgs];
  std::vector<ArgFacts> heap_;
};

/// Packs `n` arguments for `entry`'s parameters from their facts: tensors (dtype and
/// alignment checked) and int addresses for pointers, numbers for scalars. False when one
/// does not fit or the tensors are on several devices; `device` is theirs (-1: none).
bool packArgs(const kiln::KernelEntry &entry, PyObject **items, const ArgFacts *facts, size_t n,
              ArgBuffer &out, long &device) {
  device = -1;
  for (size_t i = 0; i < n; ++i) {
    const kiln::ParamInfo &p = entry.params[i];
    const ArgFacts &f = facts[i];
    if (f.kind == ArgFacts::Other || p.kind == kiln::ParamKind::TensorMap)
      return false;
    if (f.kind == ArgFacts::Tensor) {
      if (p.kind != kiln::ParamKind::Pointer || *f.dtype != p.dtype ||
          (device >= 0 && f.device != device) ||
          (p.divisibility > 1 && f.address % p.divisibility != 0))
        return false;
      device = f.device;
      out.push(kiln::KernelArg::pointer(f.address));
      continue;
    }
    try {
      out.push(toArg(entry, i, items[i]));
    } catch (const kiln::Error &) {
      return false;
    }
  }
  return true;
}

/// The stream of a direct launch: None is torch's current stream on the tensors' `device`
/// (0, the legacy default stream, without tensors); an int is the handle; an object with an
/// int `cuda_stream` (torch.cuda.Stream) gives it. False for anything else.
bool directStream(py::handle stream, long device, uintptr_t &s) {
  PyObject *o = stream.ptr();
  if (o == Py_None) {
    s = 0;
    return device < 0 || torchCurrentStream(device, s);
  }
  py::object handle;
  if (!PyLong_CheckExact(o)) {
    PyObject *attr = PyObject_GetAttrString(o, "cuda_stream");
    if (!attr) {
      PyErr_Clear();
      return false;
    }
    handle = py::reinterpret_steal<py::object>(attr);
    o = attr;
    if (!PyLong_CheckExact(o))
      return false;
  }
  s = static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(o));
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

/// The end of both direct paths: the grid (kiln::kMaxGridDims and the cluster shape), the
/// device (the tensors' must be torch's current one), the stream, then Kernel::launch.
bool launchPacked(const kiln::Kernel &k, py::handle grid, const ArgBuffer &args, long device,
                  py::handle stream) {
  const kiln::KernelEntry &entry = k.entry();
  std::array<unsigned, 3> g;
  try {
    g = toGrid(grid, entry.name);
  } catch (const kiln::Error &) {
    return false;
  } catch (const py::error_already_set &) {
    return false;
  }
  if (g[0] && g[1] && g[2])
    for (int i = 0; i < 3; ++i)
      if (g[i] % entry.cluster[i] != 0)
        return false;
  if (device >= 0 && !torchCurrentDeviceIs(device))
    return false;
  uintptr_t s = 0;
  if (!directStream(stream, device, s))
    return false;
  if (!kiln::argsFit(entry, args.data(), args.size()))
    return false;
  py::gil_scoped_release release;
  k.launch(reinterpret_cast<CUstream>(s), g, args.data(), args.size());
  return true;
}

/// The direct launch from user arguments: torch CUDA tensors or int addresses
/// for pointers, Python numbers for scalars; `stream` an int, a torch.cuda.Stream, or None
/// for torch's current stream of the tensors' device (0 without tensors).
/// Returns false without launching when something needs the checking path
/// (another array type, a dtype or alignment mismatch, tensors on several
/// devices or not on the current one, a value or grid out of range): the caller then runs
/// kiln.host.marshal_args, which explains the problem or handles the type.
bool tryLaunch(const kiln::Kernel &k, py::handle grid, py::handle args, py::handle stream) {
  const kiln::KernelEntry &entry = k.entry();
  PyObject *seq = args.ptr();
  if (!PyTuple_CheckExact(seq) && !PyList_CheckExact(seq))
    return false;
  const size_t n = static_cast<size_t>(PySequence_Fast_GET_SIZE(seq));
  if (n != entry.params.size())
    return false;
  PyObject **items = PySequence_Fast_ITEMS(seq);
  FactBuffer facts(n);
  for (size_t i = 0; i < n; ++i) {
    facts[i] = readFacts(items[i]);
    if (facts[i].kind == ArgFacts::Other)
      return false;
  }
  ArgBuffer converted(n);
  long device = -1;
  if (!packArgs(entry, items, facts.data(), n, converted, device))
    return false;
  return launchPacked(k, grid, converted, device, stream);
}

/// The JIT's launch cache of one kernel and one set of constexprs and launch options: the
/// specialization facts of the runtime arguments -> the compiled kernel. The facts are
/// kiln.host.args' rules, computed here without Python: per argument, a tensor's dtype,
/// device and 16-byte alignment; an int's type by value (i32, i64, u64), divisibility by 16
/// and value 1; a float; a bool (an argument in do_not_specialize keeps only its type).
/// Arguments of other kinds are not cached (launch() returns false; the JIT's checked path
/// runs every time).
class Dispatcher {
public:
  explicit Dispatcher(std::vector<bool> specialize) : specialize_(std::move(specialize)) {}

  /// Appends the key of `n` arguments (facts read into `facts`) to `key`; false when one
  /// is not of a kind the cache takes.
  bool buildKey(PyObject **items, size_t n, ArgFacts *facts, std::string &key) const {
    if (n != specialize_.size())
      return false;
    for (size_t i = 0; i < n; ++i) {
      ArgFacts &f = facts[i] = readFacts(items[i]);
      const bool spec = specialize_[i];
      switch (f.kind) {
      case ArgFacts::Tensor:
        if (f.device < 0 || f.device > 0xffff)
          return false;
        key += 'T';
        key += static_cast<char>(*f.dtype);
        key += static_cast<char>(f.device & 0xff);
        key += static_cast<char>(f.device >> 8);
        key += spec ? (f.address % 16 == 0 ? 'd' : '-') : 'x';
        break;
      case ArgFacts::Int: {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(items[i], &overflow);
        unsigned long long u = 0;
        char cls;
        if (!overflow) {
          cls = (v >= INT32_MIN && v <= INT32_MAX) ? '4' : '8';
          u = static_cast<unsigned long long>(v);
        } else if (overflow > 0) {
          u = PyLong_AsUnsignedLongLong(items[i]);
          if (PyErr_Occurred()) {
            PyErr_Clear();
            return false; // beyond 64 bits: the checked path raises
          }
          cls = 'u';
        } else {
          return false;
        }
        key += 'I';
        key += cls;
        // Divisibility of the value (u: its two's complement bits, as the value itself).
        key += !spec ? 'x' : (u % 16 == 0 ? 'd' : (!overflow && v == 1 ? '1' : '-'));
        break;
      }
      case ArgFacts::Float:
        key += 'F';
        break;
      case ArgFacts::Bool:
        key += 'B';
        break;
      default:
        return false;
      }
    }
    return true;
  }

  /// Launches the cached kernel for these arguments; false (launching nothing) on a miss
  /// or when anything needs the checked path.
  bool launch(py::handle grid, py::handle args, py::handle stream) const {
    PyObject *seq = args.ptr();
    if (!PyTuple_CheckExact(seq))
      return false;
    const size_t n = static_cast<size_t>(PyTuple_GET_SIZE(seq));
    PyObject **items = PySequence_Fast_ITEMS(seq);
    FactBuffer facts(n);
    std::string key;
    key.reserve(5 * n);
    if (!buildKey(items, n, &facts[0], key))
      return false;
    auto it = kernels_.find(key);
    if (it == kernels_.end())
      return false;
    std::shared_ptr<kiln::Kernel> k = it->second;
    const kiln::KernelEntry &entry = k->entry();
    if (n != entry.params.size())
      return false;
    ArgBuffer converted(n);
    long device = -1;
    if (!packArgs(entry, items, facts.data(), n, converted, device))
      return false;
    return launchPacked(*k, grid, converted, device, stream);
  }

  /// The key of these arguments (bytes), or None when they are not cacheable.
  py::object key(py::handle args) const {
    py::tuple t = py::tuple(py::reinterpret_borrow<py::object>(args));
    const size_t n = t.size();
    FactBuffer facts(n);
    std::string key;
    if (!buildKey(PySequence_Fast_ITEMS(t.ptr()), n, &facts[0], key))
      return py::none();
    return py::bytes(key);
  }

  /// Caches `kernel` for arguments like these; false when they are not cacheable.
  bool add(py::handle args, std::shared_ptr<kiln::Kernel> kernel) {
    py::object k = key(args);
    if (k.is_none())
      return false;
    kernels_[k.cast<std::string>()] = std::move(kernel);
    return true;
  }

  size_t size() const { return kernels_.size(); }

private:
  std::vector<bool> specialize_;
  std::unordered_map<std::string, std::shared_ptr<kiln::Kernel>> kernels_;
};

/// Whether `h` is a kiln.TensorDescriptor (the class is looked up once).
bool isTensorDescriptor(py::handle h) {
  static PyObject *cls = // lives for the process
      py::object(py::module_::import("kiln.host.tensor_descriptor").attr("TensorDescriptor"))
          .release()
          .ptr();
  int is = PyObject_IsInstance(h.ptr(), cls);
  if (is < 0)
    throw py::error_already_set();
  return is == 1;
}

/// The ArgSpec of a kiln.TensorDescriptor: what a `tensordesc` kernel is
/// specialized on, as kiln.host.marshal_args passes it at launch (toTensorMapArg):
/// the element dtype, the whole box (outermost dimension first) and the swizzle.
kiln::ArgSpec tensorDescriptorSpec(py::handle desc) {
  std::string name = desc.attr("dtype").cast<std::string>();
  auto dtype = kiln::parseDType(name);
  if (!dtype)
    throw kiln::Error("a TensorDescriptor of unknown dtype '" + name + "'");
  return kiln::ArgSpec::tensorMap(*dtype, desc.attr("block_shape").cast<std::vector<uint32_t>>(),
                                  desc.attr("swizzle").cast<unsigned>());
}

/// ArgSpecs from Python values for specialization selection: torch tensors
/// (dtype and address), objects exposing __cuda_array_interface__ (address),
/// kiln.TensorDescriptors (dtype, box, swizzle), ints, floats and bools;
/// ("ptr", address, dtype-or-None) tuples from callers that know more.
std::vector<kiln::ArgSpec> argSpecs(py::handle args) {
  std::vector<kiln::ArgSpec> out;
  for (py::handle a : args) {
    PyObject *o = a.ptr();
    if (PyBool_Check(o)) {
      out.push_back(kiln::ArgSpec::integer(o == Py_True ? 1 : 0));
    } else if (PyLong_Check(o)) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      out.push_back(kiln::ArgSpec::integer(overflow ? 0 : v));
    } else if (PyFloat_Check(o)) {
      out.push_back(kiln::ArgSpec::floating());
    } else if (isTorchTensor(o)) {
      uint64_t address = 0;
      std::optional<kiln::DType> dtype;
      long dev = -1;
      if (!tensorFacts(o, address, dtype, dev))
        throw kiln::Error("a tensor argument is not a CUDA tensor of a kiln dtype");
      out.push_back(kiln::ArgSpec::pointer(address, dtype));
    } else if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 3) {
      auto t = py::reinterpret_borrow<py::tuple>(a);
      std::optional<kiln::DType> d;
      if (!t[2].is_none())
        d = kiln::parseDType(t[2].cast<std::string>());
      out.push_back(kiln::ArgSpec::pointer(t[1].cast<uint64_t>(), d));
    } else if (isTensorDescriptor(a)) {
      out.push_back(tensorDescriptorSpec(a));
    } else if (py::hasattr(a, "__cuda_array_interface__")) {
      py::dict cai = a.attr("__cuda_array_interface__");
      out.push_back(kiln::ArgSpec::pointer(py::tuple(cai["data"])[0].cast<uint64_t>()));
    } else if (py::hasattr(a, "__index__")) {
      out.push_back(kiln::ArgSpec::integer(
          py::reinterpret_steal<py::object>(PyNumber_Index(o)).cast<long long>()));
    } else if (py::hasattr(a, "__float__")) {
      out.push_back(kiln::ArgSpec::floating());
    } else {
      throw kiln::Error("cannot pick a specialization for an argument of type " + typeNameOf(a));
    }
  }
  return out;
}

} // namespace

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "kiln runtime: kernel bundles and launching on the CUDA Driver API";
  m.attr("FORMAT_VERSION") = kiln::kBundleFormatVersion;
  m.attr("MAX_GRID") =
      py::make_tuple(kiln::kMaxGridDims[0], kiln::kMaxGridDims[1], kiln::kMaxGridDims[2]);
  py::register_exception<kiln::Error>(m, "KilnError", PyExc_RuntimeError);

  py::class_<kiln::Kernel, std::shared_ptr<kiln::Kernel>>(m, "Kernel")
      .def_static(
          "from_images",
          [](py::dict meta, py::dict images) {
            std::map<std::string, std::string> imgs;
            for (auto item : images)
              imgs[item.first.cast<std::string>()] = item.second.cast<std::string>();
            return kiln::Kernel::fromImages(fromPy(meta), imgs);
          },
          py::arg("meta"), py::arg("images"),
          "A kernel from metadata and {arch: cubin bytes} (the JIT path).")
      .def_property_readonly("name", &kiln::Kernel::name)
      .def_property_readonly("meta", [](const kiln::Kernel &k) { return toPy(k.entry().meta); })
      .def_property_readonly("archs", [](const kiln::Kernel &k) { return k.entry().archList(); })
      .def(
          "load",
          [](const kiln::Kernel &k) {
            py::gil_scoped_release release;
            k.load();
          },
          "Load the module for the current CUDA context (launch does this on first use).")
      .def("launch", &launch, py::arg("grid"), py::arg("args"), py::arg("stream") = 0,
           "Launch with a grid of 1-3 ints and args already matched to the params (ints for "
           "pointers). A zero grid dimension launches nothing.")
      .def("try_launch", &tryLaunch, py::arg("grid"), py::arg("args"),
           py::arg("stream") = py::none(),
           "Launch straight from torch CUDA tensors / int addresses and Python numbers; "
           "returns False without launching when the arguments (or the grid, the stream, "
           "the device) need the checking path.")
      .def(
          "c_args",
          [](const kiln::Kernel &k, py::sequence values) {
            const kiln::KernelEntry &entry = k.entry();
            if (py::len(values) != entry.params.size())
              countError(entry, py::len(values));
            py::list out;
            for (size_t i = 0; i < entry.params.size(); ++i) {
              std::optional<kiln_arg> c = kiln::toCArg(toArg(entry, i, values[i]));
              if (!c)
                return py::object(py::none());
              out.append(py::make_tuple(c->is_pointer, c->dtype, c->bits));
            }
            return py::object(out);
          },
          py::arg("values"),
          "The arguments as the C API's kiln_arg fields (is_pointer, dtype, bits), converted "
          "as launch converts them; None if one is a tensor map (it has no C form).")
      .def(
          "c_handle",
          [](std::shared_ptr<kiln::Kernel> k) {
            return reinterpret_cast<uintptr_t>(kiln::toCHandle(std::move(k)));
          },
          "A new kiln_kernel* (kiln.h) sharing this kernel, as an integer; whoever takes it "
          "releases it with the C API's kiln_kernel_release (see c_api()).")
      .def("__repr__", [](const kiln::Kernel &k) {
        return "<kiln Kernel '" + k.name() + "' {" + k.entry().describeConstexprs() + "}>";
      });

  py::class_<Dispatcher>(m, "Dispatcher",
                         "The JIT's launch cache: specialization facts of the runtime "
                         "arguments -> compiled kernel, launched by Kernel.try_launch's path.")
      .def(py::init<std::vector<bool>>(), py::arg("specialize"),
           "`specialize`: per runtime parameter, False for do_not_specialize.")
      .def("launch", &Dispatcher::launch, py::arg("grid"), py::arg("args"),
           py::arg("stream") = py::none(),
           "Launches the kernel cached for these arguments; False (launching nothing) on a "
           "miss or when the arguments need the checked path.")
      .def("add", &Dispatcher::add, py::arg("args"), py::arg("kernel"),
           "Caches `kernel` for arguments like `args`; False if they are not cacheable.")
      .def("key", &Dispatcher::key, py::arg("args"),
           "The cache key of these arguments (bytes), or None if they are not cacheable.")
      .def("__len__", &Dispatcher::size);

  py::class_<kiln::Bundle, std::shared_ptr<kiln::Bundle>>(m, "Bundle")
      .def_static(
          "open",
          [](const std::string &path) {
            py::gil_scoped_release release;
            return kiln::Bundle::open(path);
          },
          py::arg("path"))
      .def_static(
          "from_bytes",
          [](py::bytes b, const std::string &name) {
            return kiln::Bundle::fromBytes(std::string(b), name);
          },
          py::arg("data"), py::arg("name") = "<memory>")
      .def_property_readonly("name", &kiln::Bundle::name)
      .def_property_readonly("compiler_version", &kiln::Bundle::compilerVersion)
      .def_property_readonly("file_size", &kiln::Bundle::fileSize)
      .def_property_readonly("format_version", &kiln::Bundle::formatVersion)
      .def("manifest", [](const kiln::Bundle &b) { return toPy(b.manifest()); })
      .def("kernels",
           [](const kiln::Bundle &b) {
             py::list l;
             for (const kiln::KernelEntry &e : b.kernels())
               l.append(toPy(e.meta));
             return l;
           })
      .def(
          "image_bytes",
          [](const kiln::Bundle &b, size_t kernel, size_t image) {
            const auto &ks = b.kernels();
            if (kernel >= ks.size() || image >= ks[kernel].images.size())
              throw py::index_error("kernel or image index out of range");
            std::string_view v = b.imageBytes(ks[kernel].images[image]);
            return py::bytes(v.data(), v.size());
          },
          py::arg("kernel"), py::arg("image"))
      .def("describe", &kiln::Bundle::describe)
      .def(
          "select",
          [](const kiln::Bundle &b, const std::string &name, py::handle args,
             py::object constexprs) {
            const kiln::KernelEntry &e =
                b.select(name, argSpecs(args), fromPy(constexprs, "constexprs"));
            return b.kernel(e);
          },
          py::arg("name"), py::arg("args"), py::arg("constexprs") = py::none(),
          "The kernel of the specialization of `name` that fits these arguments (tensors, "
          "TensorDescriptors, ints, floats) and constexprs; KilnError listing what the bundle "
          "holds if none fits.")
      .def(
          "kernel",
          [](const kiln::Bundle &b, const std::string &name, py::object constexprs) {
            return b.kernel(name, fromPy(constexprs, "constexprs"));
          },
          py::arg("name"), py::arg("constexprs") = py::none())
      .def("__repr__", [](const kiln::Bundle &b) {
        return "<kiln Bundle '" + b.name() + "' with " + std::to_string(b.kernels().size()) +
               " kernels>";
      });

  py::class_<kiln::BundleWriter>(m, "BundleWriter")
      .def(py::init<std::string>(), py::arg("compiler_version") = "unknown")
      .def(
          "add_kernel",
          [](kiln::BundleWriter &w, py::dict meta, py::list images) {
            std::vector<kiln::Image> imgs;
            for (auto item : images) {
              auto t = item.cast<py::tuple>();
              if (t.size() != 3)
                throw kiln::Error("bundle writer: images must be (arch, kind, bytes) tuples");
              imgs.push_back(
                  {t[0].cast<std::string>(), t[1].cast<std::string>(), t[2].cast<std::string>()});
            }
            w.addKernel(fromPy(meta), std::move(imgs));
          },
          py::arg("meta"), py::arg("images"))
      .def("serialize",
           [](const kiln::BundleWriter &w) {
             std::string s = w.serialize();
             return py::bytes(s);
           })
      .def(
          "write",
          [](const kiln::BundleWriter &w, const std::string &path) {
            py::gil_scoped_release release;
            w.write(path);
          },
          py::arg("path"))
      .def("__len__", &kiln::BundleWriter::numKernels);

  m.def(
      "device_arch",
      [](std::optional<int> device) {
        py::gil_scoped_release release;
        return kiln::deviceArch(device);
      },
      py::arg("device_index") = py::none(),
      "The arch kiln compiles for the given device (default: the current one), e.g. 'sm_90a'.");
  m.def(
      "device_info",
      [](std::optional<int> device) {
        kiln::DeviceInfo info;
        {
          py::gil_scoped_release release;
          info = kiln::deviceInfo(device);
        }
        py::dict d;
        d["ordinal"] = info.ordinal;
        d["major"] = info.major;
        d["minor"] = info.minor;
        d["arch"] = info.arch;
        d["name"] = info.name;
        return d;
      },
      py::arg("device_index") = py::none());
  m.def(
      "encode_tensor_map",
      [](uint64_t address, const std::string &dtype, std::vector<uint64_t> shape,
         std::vector<uint64_t> strides, std::vector<uint32_t> box, unsigned swizzle) {
        kiln::TensorMapSpec spec = tensorMapSpec(address, dtype, std::move(shape),
                                                 std::move(strides), std::move(box), swizzle);
        CUtensorMap map;
        {
          py::gil_scoped_release release;
          map = kiln::encodeTensorMap(spec);
        }
        return py::bytes(reinterpret_cast<const char *>(&map), sizeof(map));
      },
      py::arg("address"), py::arg("dtype"), py::arg("shape"), py::arg("strides"), py::arg("box"),
      py::arg("swizzle"),
      "The 128-byte CUtensorMap of a tiled TMA copy; dimensions innermost first, `strides` "
      "the byte strides of dimensions 1.. (validated first; raises naming the problem).");
  m.def(
      "validate_tensor_map",
      [](uint64_t address, const std::string &dtype, std::vector<uint64_t> shape,
         std::vector<uint64_t> strides, std::vector<uint32_t> box, unsigned swizzle) {
        return kiln::validateTensorMap(tensorMapSpec(address, dtype, std::move(shape),
                                                     std::move(strides), std::move(box), swizzle));
      },
      py::arg("address"), py::arg("dtype"), py::arg("shape"), py::arg("strides"), py::arg("box"),
      py::arg("swizzle"),
      "What cuTensorMapEncodeTiled would reject in this geometry, or '' (needs no GPU).");
  m.def(
      "c_api",
      [] {
        py::dict d;
        d["version"] = KILN_C_API_VERSION;
        d["kiln_kernel_launch"] = reinterpret_cast<uintptr_t>(&kiln_kernel_launch);
        d["kiln_kernel_release"] = reinterpret_cast<uintptr_t>(&kiln_kernel_release);
        d["kiln_last_error"] = reinterpret_cast<uintptr_t>(&kiln_last_error);
        return d;
      },
      "Addresses of the C API functions (kiln.h) in this module, for C code handed kernels "
      "through Kernel.c_handle().");
  py::class_<kiln::SymmetricWorkspace>(
      m, "SymmetricWorkspace",
      "This rank's symmetric workspace (kiln/Runtime/Distributed.h): allocate, publish "
      "exchange_record(), gather every rank's record in rank order, open(records).")
      .def_static(
          "allocate",
          [](size_t bytes, int rank, int world) {
            py::gil_scoped_release release;
            return kiln::SymmetricWorkspace::allocate(bytes, rank, world);
          },
          py::arg("bytes"), py::arg("rank"), py::arg("world"),
          "Allocates `bytes` (rounded up to 256) zero-filled in the current CUDA context, and "
          "the peer table.")
      .def("exchange_record",
           [](const kiln::SymmetricWorkspace &ws) { return py::bytes(ws.exchangeRecord()); })
      .def(
          "open",
          [](kiln::SymmetricWorkspace &ws, std::vector<std::string> records) {
            py::gil_scoped_release release;
            ws.open(records);
          },
          py::arg("records"),
          "Maps the peers' workspaces from every rank's record (list of bytes, in rank order) "
          "and fills the peer table; raises KilnError naming what is wrong.")
      .def(
          "zero",
          [](kiln::SymmetricWorkspace &ws, uintptr_t stream) {
            py::gil_scoped_release release;
            ws.zero(reinterpret_cast<CUstream>(stream));
          },
          py::arg("stream") = 0, "Resets this rank's workspace to zeros on `stream`.")
      .def("peer", &kiln::SymmetricWorkspace::peer, py::arg("rank"),
           "Rank `rank`'s workspace as mapped in this process.")
      .def_property_readonly("local", &kiln::SymmetricWorkspace::local)
      .def_property_readonly("peer_table", &kiln::SymmetricWorkspace::peerTable)
      .def_property_readonly("bytes", &kiln::SymmetricWorkspace::bytes)
      .def_property_readonly("rank", &kiln::SymmetricWorkspace::rank)
      .def_property_readonly("world", &kiln::SymmetricWorkspace::world)
      .def_property_readonly("device", &kiln::SymmetricWorkspace::device)
      .def_property_readonly("is_open", &kiln::SymmetricWorkspace::isOpen);
  m.attr("MAX_WORKSPACE_WORLD") = kiln::kMaxWorkspaceWorld;
  m.attr("FAILED_WORKSPACE_RECORD") = py::bytes(std::string(kiln::kFailedWorkspaceRecord));
  m.def(
      "encode_workspace_record",
      [](int rank, int world, uint64_t bytes, py::bytes deviceUuid, const std::string &pciBusId,
         py::bytes ipcHandle) {
        kiln::WorkspaceRecord r;
        r.rank = rank;
        r.world = world;
        r.bytes = bytes;
        r.pciBusId = pciBusId;
        std::string uuid = deviceUuid, handle = ipcHandle;
        if (uuid.size() != r.deviceUuid.size() || handle.size() != r.ipcHandle.size())
          throw kiln::Error("symmetric workspace: a record takes a 16-byte device UUID and a " +
                            std::to_string(r.ipcHandle.size()) + "-byte IPC handle");
        std::copy(uuid.begin(), uuid.end(), r.deviceUuid.begin());
        std::copy(handle.begin(), handle.end(), r.ipcHandle.begin());
        return py::bytes(kiln::encodeWorkspaceRecord(r));
      },
      py::arg("rank"), py::arg("world"), py::arg("bytes"),
      py::arg("device_uuid") = py::bytes(std::string(16, '\0')), py::arg("pci_bus_id") = "",
      py::arg("ipc_handle") = py::bytes(std::string(CU_IPC_HANDLE_SIZE, '\0')),
      "A workspace record from its fields (needs no GPU; for tests and other transports).");
  m.def(
      "decode_workspace_record",
      [](const std::string &record) {
        kiln::WorkspaceRecord r = kiln::decodeWorkspaceRecord(record);
        py::dict d;
        d["rank"] = r.rank;
        d["world"] = r.world;
        d["bytes"] = r.bytes;
        d["device_uuid"] =
            py::bytes(reinterpret_cast<const char *>(r.deviceUuid.data()), r.deviceUuid.size());
        d["pci_bus_id"] = r.pciBusId;
        d["ipc_handle"] =
            py::bytes(reinterpret_cast<const char *>(r.ipcHandle.data()), r.ipcHandle.size());
        return d;
      },
      py::arg("record"), "The fields of a workspace record, as a dict (needs no GPU).");
  m.def(
      "check_workspace_records",
      [](const std::vector<std::string> &records, int rank, int world) {
        kiln::checkWorkspaceRecords(kiln::decodeWorkspaceRecords(records), rank, world);
      },
      py::arg("records"), py::arg("rank"), py::arg("world"),
      "The checks open() makes of every rank's records that need no GPU; raises KilnError.");
  m.def("driver_available", &kiln::driverAvailable,
        "True if libcuda.so.1 loads and initializes on this machine.");
  m.def(
      "arch_for_compute_capability",
      [](int major, int minor) { return kiln::archForComputeCapability(major, minor); },
      py::arg("major"), py::arg("minor"));
}
