//===- Driver.h - The CUDA driver, opened at run time (private) -*- C++ -*-===//
//
// libcuda.so.1 is opened with dlopen on first use and every entry point is
// resolved through cuGetProcAddress (the CUDA 12+ signature). cuda.h is used
// for types only. All driver calls go through Driver::check, the one error
// funnel: it throws kiln::Error with the call, the CUDA error name and string,
// and the kernel and arch when there is one.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_LIB_DRIVER_H
#define KILN_RUNTIME_LIB_DRIVER_H

#include <cuda.h>

#include <string>

namespace kiln::detail {

struct Driver {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char **) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext *) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice *) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*cuDeviceGetUuid)(CUuuid *, CUdevice) = nullptr;
  CUresult (*cuDeviceGetPCIBusId)(char *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceCanAccessPeer)(int *, CUdevice, CUdevice) = nullptr;
  CUresult (*cuCtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxPopCurrent)(CUcontext *) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*cuIpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr) = nullptr;
  CUresult (*cuIpcOpenMemHandle)(CUdeviceptr *, CUipcMemHandle, unsigned) = nullptr;
  CUresult (*cuIpcCloseMemHandle)(CUdeviceptr) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule *, const void *) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **) = nullptr;
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                     const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                     const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                     CUtensorMapL2promotion, CUtensorMapFloatOOBfill) = nullptr;

  /// The driver, loaded and initialized (cuInit) once. Throws kiln::Error if
  /// libcuda.so.1 cannot be opened, lacks an entry point, or cuInit fails.
  static const Driver &get();
  /// Like get() but returns nullptr instead of throwing.
  static const Driver *tryGet();

  /// Throws kiln::Error unless `result` is CUDA_SUCCESS: "kiln: <call> failed
  /// [for kernel '<kernel>' (<arch>)]: <NAME>: <description>".
  void check(CUresult result, const char *call, const std::string &kernel = "",
             const std::string &arch = "") const;

  /// The current context, or the primary context of device 0 made current.
  CUcontext currentOrPrimaryContext() const;
};

} // namespace kiln::detail

#endif // KILN_RUNTIME_LIB_DRIVER_H
