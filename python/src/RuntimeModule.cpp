//===- RuntimeModule.cpp - kiln._runtime: the runtime's Python binding ----===//
//
// A thin pybind11 layer over kiln_runtime: bundles (read, write, describe),
// kernels (launch, JIT construction from images) and the device arch. JSON
// metadata crosses the boundary as plain Python dicts and lists. kiln::Error
// becomes kiln._runtime.KilnError (a RuntimeError). This module never needs a
// GPU to import or to handle bundles.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/Bundle.h"
#include "kiln/Runtime/Kernel.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>

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

/// Converts one Python value to the KernelArg that parameter `p` expects.
kiln::KernelArg toArg(const kiln::KernelEntry &entry, size_t index, py::handle h) {
  const kiln::ParamInfo &p = entry.params[index];
  const std::string what = "kernel '" + entry.name + "': argument '" + p.name + "' (param " +
                           std::to_string(index) + ")";
  const std::string expected = p.kind == kiln::ParamKind::Pointer
                                   ? "ptr<" + std::string(kiln::dtypeName(p.dtype)) + ">"
                                   : std::string(kiln::dtypeName(p.dtype));
  const bool isBool = py::isinstance<py::bool_>(h);
  const bool isInt = !isBool && (py::isinstance<py::int_>(h) || (!py::isinstance<py::float_>(h) &&
                                                                 py::hasattr(h, "__index__")));
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

std::array<unsigned, 3> toGrid(py::handle grid, const std::string &kernel) {
  std::vector<long long> dims;
  if (py::isinstance<py::int_>(grid)) {
    dims.push_back(grid.cast<long long>());
  } else if (py::isinstance<py::tuple>(grid) || py::isinstance<py::list>(grid)) {
    for (auto d : grid) {
      if (!py::isinstance<py::int_>(d) && !py::hasattr(d, "__index__"))
        throw kiln::Error("kernel '" + kernel + "': grid dimensions must be integers, got " +
                          typeNameOf(d));
      dims.push_back(py::reinterpret_steal<py::object>(PyNumber_Index(d.ptr())).cast<long long>());
    }
  } else {
    throw kiln::Error("kernel '" + kernel + "': grid must be a tuple of 1 to 3 integers, got " +
                      typeNameOf(grid));
  }
  if (dims.empty() || dims.size() > 3)
    throw kiln::Error("kernel '" + kernel + "': grid must have 1 to 3 dimensions, got " +
                      std::to_string(dims.size()));
  std::array<unsigned, 3> out = {1, 1, 1};
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] > UINT_MAX)
      throw kiln::Error("kernel '" + kernel + "': grid dimension " + std::to_string(i) + " = " +
                        std::to_string(dims[i]) + " is out of range");
    out[i] = static_cast<unsigned>(dims[i]);
  }
  return out;
}

void launch(const kiln::Kernel &k, py::handle grid, py::sequence args, uintptr_t stream) {
  const kiln::KernelEntry &entry = k.entry();
  const size_t n = py::len(args);
  if (n != entry.params.size()) // reuse the standard count message
    kiln::checkArgs(entry, std::vector<kiln::KernelArg>(n, kiln::KernelArg::i1(false)));
  std::vector<kiln::KernelArg> converted;
  converted.reserve(n);
  for (size_t i = 0; i < n; ++i)
    converted.push_back(toArg(entry, i, args[i]));
  std::array<unsigned, 3> g = toGrid(grid, entry.name);
  py::gil_scoped_release release;
  k.launch(reinterpret_cast<CUstream>(stream), g, converted);
}

} // namespace

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "kiln runtime: kernel bundles and launching on the CUDA Driver API";
  m.attr("FORMAT_VERSION") = kiln::kBundleFormatVersion;
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
          "load", [](const kiln::Kernel &k) {
            py::gil_scoped_release release;
            k.load();
          },
          "Load the module for the current CUDA context (launch does this on first use).")
      .def("launch", &launch, py::arg("grid"), py::arg("args"), py::arg("stream") = 0,
           "Launch with a grid of 1-3 ints and args already matched to the params (ints for "
           "pointers). A zero grid dimension launches nothing.")
      .def("__repr__", [](const kiln::Kernel &k) {
        return "<kiln Kernel '" + k.name() + "' {" + k.entry().describeConstexprs() + "}>";
      });

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
              imgs.push_back({t[0].cast<std::string>(), t[1].cast<std::string>(),
                              t[2].cast<std::string>()});
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
  m.def("driver_available", &kiln::driverAvailable,
        "True if libcuda.so.1 loads and initializes on this machine.");
  m.def(
      "arch_for_compute_capability",
      [](int major, int minor) { return kiln::archForComputeCapability(major, minor); },
      py::arg("major"), py::arg("minor"));
}
