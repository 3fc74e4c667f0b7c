//===- CApi.h - C handles of the runtime's C++ objects ----------*- C++ -*-===//
//
// For bindings that hand a C++ kernel to code written against the C API
// (kiln.h): the torch operator library of the Python package gets the kernels
// it replays this way from kiln._runtime.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CAPI_H
#define KILN_RUNTIME_CAPI_H

#include "kiln/Runtime/Kernel.h"
#include "kiln/kiln.h"

#include <memory>
#include <optional>

namespace kiln {

/// A new C handle sharing `kernel`; the caller releases it with kiln_kernel_release.
kiln_kernel *toCHandle(std::shared_ptr<Kernel> kernel);

/// The C argument of a converted argument: pointers and scalars (a tensor map
/// has no C form: nullopt).
std::optional<kiln_arg> toCArg(const KernelArg &arg);

} // namespace kiln

#endif // KILN_RUNTIME_CAPI_H
