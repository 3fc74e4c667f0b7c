//===- CApi.cpp - The C API (kiln.h) over the C++ runtime -----------------===//
//
// Handles own shared_ptrs; every entry point catches everything and reports it
// through a thread-local message.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln.h"

#include "kiln/Runtime/Bundle.h"
#include "kiln/Runtime/CApi.h"
#include "kiln/Runtime/Kernel.h"

#include <string>

struct kiln_bundle {
  std::shared_ptr<kiln::Bundle> bundle;
};
struct kiln_kernel {
  std::shared_ptr<kiln::Kernel> kernel;
};

namespace {
thread_local std::string lastError;

template <typename F>
kiln_status guarded(F &&f) {
  try {
    lastError.clear();
    f();
    return KILN_OK;
  } catch (const std::exception &e) {
    lastError = e.what();
  } catch (...) {
    lastError = "kiln: unknown error";
  }
  return KILN_ERROR;
}

kiln_status invalid(const char *what) {
  lastError = std::string("kiln: ") + what;
  return KILN_INVALID_ARGUMENT;
}

static_assert(KILN_F8E5M2 == static_cast<int>(kiln::DType::F8E5M2), "kiln_dtype mirrors DType");
} // namespace

kiln_kernel *kiln::toCHandle(std::shared_ptr<Kernel> kernel) {
  return new kiln_kernel{std::move(kernel)};
}

std::optional<kiln_arg> kiln::toCArg(const KernelArg &arg) {
  if (arg.kind() == ParamKind::TensorMap)
    return std::nullopt;
  kiln_arg c{};
  c.is_pointer = arg.isPointer();
  c.dtype = arg.isPointer() ? 0 : static_cast<uint8_t>(arg.dtype());
  c.bits = arg.raw();
  return c;
}

extern "C" {

const char *kiln_last_error(void) { return lastError.c_str(); }

kiln_status kiln_bundle_open(const char *path, kiln_bundle **out) {
  if (!path || !out)
    return invalid("kiln_bundle_open: path and out must not be NULL");
  *out = nullptr;
  return guarded([&] { *out = new kiln_bundle{kiln::Bundle::open(path)}; });
}

kiln_status kiln_bundle_open_memory(const void *data, size_t size, kiln_bundle **out) {
  if (!data || !out)
    return invalid("kiln_bundle_open_memory: data and out must not be NULL");
  *out = nullptr;
  return guarded([&] {
    *out = new kiln_bundle{
        kiln::Bundle::fromBytes(std::string(static_cast<const char *>(data), size))};
  });
}

void kiln_bundle_close(kiln_bundle *bundle) { delete bundle; }

size_t kiln_bundle_num_kernels(const kiln_bundle *bundle) {
  return bundle ? bundle->bundle->kernels().size() : 0;
}

const char *kiln_bundle_kernel_name(const kiln_bundle *bundle, size_t index) {
  if (!bundle || index >= bundle->bundle->kernels().size())
    return nullptr;
  return bundle->bundle->kernels()[index].name.c_str();
}

kiln_status kiln_bundle_find_kernel(const kiln_bundle *bundle, const char *name,
                                    const char *constexprsJson, kiln_kernel **out) {
  if (!bundle || !name || !out)
    return invalid("kiln_bundle_find_kernel: bundle, name and out must not be NULL");
  *out = nullptr;
  return guarded([&] {
    nlohmann::json constexprs = nullptr;
    if (constexprsJson) {
      try {
        constexprs = nlohmann::json::parse(constexprsJson);
      } catch (const nlohmann::json::exception &e) {
        throw kiln::Error(std::string("constexprs are not valid JSON: ") + e.what());
      }
      if (!constexprs.is_object() && !constexprs.is_null())
        throw kiln::Error("constexprs must be a JSON object, got " + constexprs.dump());
    }
    *out = new kiln_kernel{bundle->bundle->kernel(name, constexprs)};
  });
}

void kiln_kernel_release(kiln_kernel *kernel) { delete kernel; }

size_t kiln_kernel_num_params(const kiln_kernel *kernel) {
  return kernel ? kernel->kernel->entry().params.size() : 0;
}

kiln_status kiln_kernel_load(const kiln_kernel *kernel) {
  if (!kernel)
    return invalid("kiln_kernel_load: kernel must not be NULL");
  return guarded([&] { kernel->kernel->load(); });
}

kiln_status kiln_kernel_launch(const kiln_kernel *kernel, void *stream, const unsigned grid[3],
                               const kiln_arg *args, size_t numArgs) {
  if (!kernel || !grid || (numArgs && !args))
    return invalid("kiln_kernel_launch: kernel, grid and args must not be NULL");
  return guarded([&] {
    constexpr size_t kMax = 64;
    if (numArgs > kMax)
      throw kiln::Error("kernel '" + kernel->kernel->name() + "': too many arguments (" +
                        std::to_string(numArgs) + ")");
    alignas(kiln::KernelArg) unsigned char storage[kMax * sizeof(kiln::KernelArg)];
    auto *converted = reinterpret_cast<kiln::KernelArg *>(storage);
    for (size_t i = 0; i < numArgs; ++i) {
      if (!args[i].is_pointer && args[i].dtype > KILN_F8E5M2)
        throw kiln::Error("kernel '" + kernel->kernel->name() + "': argument " + std::to_string(i) +
                          " has an unknown dtype " + std::to_string(args[i].dtype));
      new (&converted[i]) kiln::KernelArg(
          args[i].is_pointer
              ? kiln::KernelArg::pointer(args[i].bits)
              : kiln::KernelArg::bits(static_cast<kiln::DType>(args[i].dtype), args[i].bits));
    }
    kernel->kernel->launch(static_cast<CUstream>(stream), {grid[0], grid[1], grid[2]}, converted,
                           numArgs);
  });
}

} // extern "C"
