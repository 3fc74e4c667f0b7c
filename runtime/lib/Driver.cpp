//===- Driver.cpp - Loading libcuda and the error funnel ------------------===//

#include "Driver.h"

#include "kiln/Runtime/Error.h"
#include "kiln/Runtime/Kernel.h"

#include <dlfcn.h>

#include <memory>
#include <mutex>

namespace kiln::detail {

namespace {
/// cuGetProcAddress_v2 (CUDA 12.0+).
using GetProcAddressFn = CUresult (*)(const char *, void **, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult *);
/// The ABI version whose entry points we ask for: the signatures used here
/// are those of CUDA 12.0, so any 12.x or 13.x driver serves them.
constexpr int kDriverApiVersion = 12000;

struct LoadResult {
  std::unique_ptr<Driver> driver;
  std::string error;
};

LoadResult load() {
  LoadResult r;
  void *lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = ::dlerror();
    r.error = std::string("cannot load the CUDA driver (libcuda.so.1): ") +
              (why ? why : "unknown error") + "; a GPU and its driver are needed to launch kernels";
    return r;
  }
  auto getProc = reinterpret_cast<GetProcAddressFn>(::dlsym(lib, "cuGetProcAddress_v2"));
  if (!getProc) {
    r.error = "the CUDA driver is too old: libcuda.so.1 has no cuGetProcAddress_v2 (CUDA 12.0+ "
              "needed)";
    return r;
  }
  auto d = std::make_unique<Driver>();
  bool ok = true;
  auto resolve = [&](const char *symbol, auto &fn) {
    if (!ok)
      return;
    void *p = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult res = getProc(symbol, &p, kDriverApiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (res != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !p) {
      ok = false;
      r.error = std::string("the CUDA driver lacks ") + symbol + " (cuGetProcAddress status " +
                std::to_string(static_cast<int>(status)) + ", result " +
                std::to_string(static_cast<int>(res)) + ")";
      return;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  resolve("cuInit", d->cuInit);
  resolve("cuGetErrorName", d->cuGetErrorName);
  resolve("cuGetErrorString", d->cuGetErrorString);
  resolve("cuDeviceGet", d->cuDeviceGet);
  resolve("cuDeviceGetCount", d->cuDeviceGetCount);
  resolve("cuDeviceGetAttribute", d->cuDeviceGetAttribute);
  resolve("cuDeviceGetName", d->cuDeviceGetName);
  resolve("cuCtxGetCurrent", d->cuCtxGetCurrent);
  resolve("cuCtxSetCurrent", d->cuCtxSetCurrent);
  resolve("cuCtxGetDevice", d->cuCtxGetDevice);
  resolve("cuDevicePrimaryCtxRetain", d->cuDevicePrimaryCtxRetain);
  resolve("cuDeviceGetUuid", d->cuDeviceGetUuid);
  resolve("cuDeviceGetPCIBusId", d->cuDeviceGetPCIBusId);
  resolve("cuDeviceCanAccessPeer", d->cuDeviceCanAccessPeer);
  resolve("cuCtxPushCurrent", d->cuCtxPushCurrent);
  resolve("cuCtxPopCurrent", d->cuCtxPopCurrent);
  resolve("cuCtxSynchronize", d->cuCtxSynchronize);
  resolve("cuMemAlloc", d->cuMemAlloc);
  resolve("cuMemFree", d->cuMemFree);
  resolve("cuMemsetD8Async", d->cuMemsetD8Async);
  resolve("cuMemcpyHtoD", d->cuMemcpyHtoD);
  resolve("cuIpcGetMemHandle", d->cuIpcGetMemHandle);
  resolve("cuIpcOpenMemHandle", d->cuIpcOpenMemHandle);
  resolve("cuIpcCloseMemHandle", d->cuIpcCloseMemHandle);
  resolve("cuModuleLoadData", d->cuModuleLoadData);
  resolve("cuModuleUnload", d->cuModuleUnload);
  resolve("cuModuleGetFunction", d->cuModuleGetFunction);
  resolve("cuFuncSetAttribute", d->cuFuncSetAttribute);
  resolve("cuLaunchKernelEx", d->cuLaunchKernelEx);
  resolve("cuLaunchKernel", d->cuLaunchKernel);
  resolve("cuTensorMapEncodeTiled", d->cuTensorMapEncodeTiled);
  if (!ok)
    return r;
  CUresult res = d->cuInit(0);
  if (res != CUDA_SUCCESS) {
    try {
      d->check(res, "cuInit");
    } catch (const Error &e) {
      r.error = e.what();
    }
    return r;
  }
  // The library stays loaded for the life of the process.
  r.driver = std::move(d);
  return r;
}

const LoadResult &loaded() {
  static const LoadResult result = load();
  return result;
}
} // namespace

const Driver &Driver::get() {
  const LoadResult &r = loaded();
  if (!r.driver)
    throw Error(r.error);
  return *r.driver;
}

const Driver *Driver::tryGet() { return loaded().driver.get(); }

void Driver::check(CUresult result, const char *call, const std::string &kernel,
                   const std::string &arch) const {
  if (result == CUDA_SUCCESS)
    return;
  const char *name = nullptr;
  const char *desc = nullptr;
  if (!cuGetErrorName || cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = nullptr;
  if (!cuGetErrorString || cuGetErrorString(result, &desc) != CUDA_SUCCESS || !desc)
    desc = nullptr;
  std::string msg = std::string(call) + " failed";
  if (!kernel.empty())
    msg += " for kernel '" + kernel + "'" + (arch.empty() ? "" : " (" + arch + ")");
  msg += ": ";
  msg += name ? name : "CUDA error " + std::to_string(static_cast<int>(result));
  if (desc)
    msg += std::string(": ") + desc;
  throw Error(msg);
}

CUcontext Driver::currentOrPrimaryContext() const {
  CUcontext ctx = nullptr;
  if (CUresult r = cuCtxGetCurrent(&ctx); r != CUDA_SUCCESS) // the launch path: no strings
    check(r, "cuCtxGetCurrent");
  if (ctx)
    return ctx;
  // Retain device 0's primary context once for the process and make it current
  // on this thread (the same thing the CUDA runtime does lazily).
  static std::mutex mutex;
  static CUcontext primary = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!primary) {
    CUdevice dev = 0;
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&primary, dev), "cuDevicePrimaryCtxRetain");
  }
  check(cuCtxSetCurrent(primary), "cuCtxSetCurrent");
  return primary;
}

} // namespace kiln::detail

namespace kiln {

bool driverAvailable() { return detail::Driver::tryGet() != nullptr; }

DeviceInfo deviceInfo(std::optional<int> ordinal) {
  const detail::Driver &d = detail::Driver::get();
  CUdevice dev = 0;
  if (ordinal) {
    d.check(d.cuDeviceGet(&dev, *ordinal), "cuDeviceGet");
  } else {
    CUcontext ctx = nullptr;
    d.check(d.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
    if (ctx)
      d.check(d.cuCtxGetDevice(&dev), "cuCtxGetDevice");
    else
      d.check(d.cuDeviceGet(&dev, 0), "cuDeviceGet");
  }
  DeviceInfo info;
  info.ordinal = static_cast<int>(dev);
  d.check(d.cuDeviceGetAttribute(&info.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
          "cuDeviceGetAttribute");
  d.check(d.cuDeviceGetAttribute(&info.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
          "cuDeviceGetAttribute");
  char name[256] = {0};
  d.check(d.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  info.name = name;
  info.arch = archForComputeCapability(info.major, info.minor);
  return info;
}

} // namespace kiln
