//===- IRBuilder.h - kiln._C: context, module and IR builder ----*- C++ -*-===//
//
// The pieces of the compiler extension that the Python frontend drives: a
// context with kiln's dialects loaded, a module that owns its IR, and a
// builder that wraps mlir::OpBuilder with a current source location. Every
// MLIR diagnostic raised while building, verifying or running passes is
// captured and turned into kiln._C.MLIRError (never an abort).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PYTHON_IRBUILDER_H
#define KILN_PYTHON_IRBUILDER_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace kiln::python {

/// Raised (as kiln._C.MLIRError) with the text of the diagnostics MLIR emitted.
struct MLIRError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One MLIRContext with kiln's dialects registered and loaded. Each
/// compilation owns its own context, so that compilations in several threads
/// never share diagnostic handlers or uniquing tables.
class Context {
public:
  Context();
  mlir::MLIRContext &get() { return *context; }

private:
  std::unique_ptr<mlir::MLIRContext> context;
};

/// Collects every diagnostic emitted on a context while alive; `check` throws
/// MLIRError when an error was seen (or when `failed` is set by the caller).
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(mlir::MLIRContext &context);
  bool hasError() const { return sawError; }
  const std::string &text() const { return messages; }
  /// Throws MLIRError("<what>: <diagnostics>") if an error was seen or `failed`.
  void check(const std::string &what, bool failed = false) const;

private:
  std::string messages;
  bool sawError = false;
  mlir::ScopedDiagnosticHandler handler;
};

/// A module and the context it lives in.
class Module {
public:
  Module(std::shared_ptr<Context> context, mlir::OwningOpRef<mlir::ModuleOp> module)
      : context(std::move(context)), module(std::move(module)) {}
  mlir::ModuleOp get() { return *module; }
  mlir::MLIRContext &getContext() { return context->get(); }
  const std::shared_ptr<Context> &getContextPtr() const { return context; }

  /// Verifies the module; throws MLIRError with the diagnostics on failure.
  void verify();
  /// The module as text (`debugInfo` adds `loc(...)`).
  std::string str(bool debugInfo) const;
  /// A deep copy in the same context.
  std::shared_ptr<Module> clone() const;

private:
  std::shared_ptr<Context> context;
  mutable mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Parses a module from text; throws MLIRError with the diagnostics on failure.
std::shared_ptr<Module> parseModule(std::shared_ptr<Context> context, const std::string &text);

/// Registers Context, Module, Type, Value and Builder on `m`.
void populateIRBuilder(pybind11::module_ &m);

} // namespace kiln::python

#endif // KILN_PYTHON_IRBUILDER_H
