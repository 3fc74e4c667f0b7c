//===- Registration.h - register kiln dialects and passes ------*- C++ -*-===//

#ifndef KILN_REGISTRATION_H
#define KILN_REGISTRATION_H

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace kiln {

/// Adds the dialects a kiln program may hold at any stage (tile, arith, math,
/// scf, cf, func, llvm, nvvm) and their LLVM IR translations to `registry`.
void registerKilnDialects(mlir::DialectRegistry &registry);

/// Registers kiln's passes and named pipelines with the global registry (for
/// kiln-opt and textual pass pipelines). Idempotent.
void registerKilnPasses();

/// Both of the above; what kiln-opt, kilnc and the Python module call.
void registerKilnDialectsAndPasses(mlir::DialectRegistry &registry);

} // namespace kiln

#endif // KILN_REGISTRATION_H
