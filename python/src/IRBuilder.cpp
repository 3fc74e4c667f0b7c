//===- IRBuilder.cpp - kiln._C: context, module and the binding table -----===//
//
// The context, module and diagnostics of IRBuilder.h, and the Python binding
// table of the IR builder: Context, Module, Type, Value and Builder (the
// emitter, IREmitter.h) with their methods.
//
//===----------------------------------------------------------------------===//

#include "IRBuilder.h"
#include "IREmitter.h"

#include "kiln/Dialect/Tile/IR/TileDialect.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Dialect/Tile/IR/TileTypes.h"
#include "kiln/Registration.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/stl.h>

#include <optional>

namespace py = pybind11;
using namespace mlir;

namespace kiln::python {

//===----------------------------------------------------------------------===//
// Context, diagnostics, module
//===----------------------------------------------------------------------===//

Context::Context() {
  DialectRegistry registry;
  kiln::registerKilnDialectsAndPasses(registry);
  // Parallelism comes from compiling several kernels at once (AOT), one
  // context each; a per-context thread pool would only oversubscribe.
  context = std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  context->allowUnregisteredDialects(false);
  // A diagnostic names its location; the op it is on would print the whole
  // module for one at the module (KILN_DUMP_IR keeps the IR of every stage).
  context->printOpOnDiagnostic(false);
}

DiagnosticCapture::DiagnosticCapture(MLIRContext &context)
    : handler(&context, [this](Diagnostic &diag) {
        llvm::raw_string_ostream os(messages);
        switch (diag.getSeverity()) {
        case DiagnosticSeverity::Error:
          sawError = true;
          os << "error: ";
          break;
        case DiagnosticSeverity::Warning:
          os << "warning: ";
          break;
        case DiagnosticSeverity::Note:
          os << "note: ";
          break;
        case DiagnosticSeverity::Remark:
          os << "remark: ";
          break;
        }
        os << diag.getLocation() << ": " << diag << "\n";
        for (Diagnostic &note : diag.getNotes())
          os << "note: " << note.getLocation() << ": " << note << "\n";
        return success();
      }) {}

void DiagnosticCapture::check(const std::string &what, bool failed) const {
  if (!sawError && !failed)
    return;
  std::string text = what;
  if (!messages.empty())
    text += ":\n" + messages;
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  throw MLIRError(text);
}

void Module::verify() {
  DiagnosticCapture capture(getContext());
  bool failed = mlir::failed(mlir::verify(get()));
  capture.check("the module does not verify", failed);
}

std::string Module::str(bool debugInfo) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (debugInfo)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module->print(os, flags);
  return text;
}

std::shared_ptr<Module> Module::clone() const {
  OwningOpRef<ModuleOp> copy(llvm::cast<ModuleOp>(module->getOperation()->clone()));
  return std::make_shared<Module>(context, std::move(copy));
}

std::shared_ptr<Module> parseModule(std::shared_ptr<Context> context, const std::string &text) {
  DiagnosticCapture capture(context->get());
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context->get());
  capture.check("cannot parse the module", !module);
  return std::make_shared<Module>(std::move(context), std::move(module));
}

//===----------------------------------------------------------------------===//
// The binding table
//===----------------------------------------------------------------------===//

namespace {

std::optional<int64_t> getIntAttr(Module &module, const std::string &symbol,
                                  const std::string &attr) {
  Operation *op = SymbolTable::lookupSymbolIn(module.get(), symbol);
  if (!op)
    return std::nullopt;
  if (auto value = op->getAttrOfType<IntegerAttr>(attr))
    return value.getInt();
  // An array (nvvm.reqntid): the product of its elements.
  if (auto values = op->getAttrOfType<DenseI32ArrayAttr>(attr)) {
    int64_t product = 1;
    for (int32_t v : values.asArrayRef())
      product *= v;
    return product;
  }
  return std::nullopt;
}

/// The string array attribute `attr` of the symbol `symbol` (tile.features).
std::optional<std::vector<std::string>>
getStringArrayAttr(Module &module, const std::string &symbol, const std::string &attr) {
  Operation *op = SymbolTable::lookupSymbolIn(module.get(), symbol);
  if (!op)
    return std::nullopt;
  auto values = op->getAttrOfType<ArrayAttr>(attr);
  if (!values || !llvm::all_of(values, llvm::IsaPred<StringAttr>))
    return std::nullopt;
  std::vector<std::string> strings;
  for (StringRef value : values.getAsValueRange<StringAttr>())
    strings.push_back(value.str());
  return strings;
}

/// The i32 array attribute `attr` of the symbol `symbol` (tile.register_split).
std::optional<std::vector<int32_t>> getIntArrayAttr(Module &module, const std::string &symbol,
                                                    const std::string &attr) {
  Operation *op = SymbolTable::lookupSymbolIn(module.get(), symbol);
  if (!op)
    return std::nullopt;
  auto values = op->getAttrOfType<DenseI32ArrayAttr>(attr);
  if (!values)
    return std::nullopt;
  return std::vector<int32_t>(values.asArrayRef().begin(), values.asArrayRef().end());
}

/// Whether the symbol `symbol` carries the attribute `attr` (tile.pdl).
bool hasAttr(Module &module, const std::string &symbol, const std::string &attr) {
  Operation *op = SymbolTable::lookupSymbolIn(module.get(), symbol);
  return op && op->hasAttr(attr);
}

} // namespace

void populateIRBuilder(py::module_ &m) {
  py::register_exception<MLIRError>(m, "MLIRError", PyExc_RuntimeError);

  py::class_<Context, std::shared_ptr<Context>>(m, "Context",
                                                "An MLIR context with kiln's dialects loaded")
      .def(py::init<>());

  py::class_<Type>(m, "Type")
      .def("__str__", [](Type t) { return toString(t); })
      .def("__repr__", [](Type t) { return "<kiln._C.Type " + toString(t) + ">"; })
      .def("__eq__", [](Type a, Type b) { return a == b; })
      .def("__hash__", [](Type t) { return static_cast<size_t>(hash_value(t)); })
      .def("is_tensor", [](Type t) { return llvm::isa<RankedTensorType>(t); })
      .def("is_ptr", [](Type t) { return llvm::isa<tile::PtrType>(t); })
      .def("is_tensordesc", [](Type t) { return llvm::isa<tile::TensorDescType>(t); })
      .def("is_int", [](Type t) { return llvm::isa<IntegerType>(t); })
      .def("is_float", [](Type t) { return llvm::isa<FloatType>(t); })
      .def_property_readonly("shape",
                             [](Type t) {
                               std::vector<int64_t> shape;
                               if (auto r = llvm::dyn_cast<RankedTensorType>(t))
                                 shape.assign(r.getShape().begin(), r.getShape().end());
                               return shape;
                             })
      .def_property_readonly("element_type", [](Type t) { return getElementTypeOrSelf(t); })
      .def_property_readonly("pointee",
                             [](Type t) -> std::optional<Type> {
                               if (auto p = llvm::dyn_cast<tile::PtrType>(t))
                                 return p.getPointeeType();
                               return std::nullopt;
                             })
      .def_property_readonly("bitwidth", [](Type t) -> unsigned {
        if (t.isIntOrFloat())
          return t.getIntOrFloatBitWidth();
        if (llvm::isa<tile::PtrType>(t))
          return 64;
        return 0;
      });

  py::class_<Value>(m, "Value")
      .def_property_readonly("type", [](Value v) { return v.getType(); })
      .def("__repr__", [](Value v) { return "<kiln._C.Value " + toString(v) + ">"; });

  py::class_<Module, std::shared_ptr<Module>>(m, "Module")
      .def("verify", &Module::verify, "Verifies the module; raises MLIRError on failure")
      .def("str", &Module::str, py::arg("debug_info") = false)
      .def("__str__", [](const Module &mod) { return mod.str(false); })
      .def("clone", &Module::clone)
      .def(
          "get_int_attr",
          [](Module &mod, const std::string &symbol, const std::string &attr) {
            return getIntAttr(mod, symbol, attr);
          },
          "The integer attribute `attr` of the symbol `symbol` (of an i32 array: the product "
          "of its elements), or None")
      .def("get_int_array_attr", &getIntArrayAttr, py::arg("symbol"), py::arg("attr"),
           "The i32 array attribute `attr` of the symbol `symbol` as a list, or None")
      .def("get_string_array_attr", &getStringArrayAttr, py::arg("symbol"), py::arg("attr"),
           "The array-of-strings attribute `attr` of the symbol `symbol` as a list, or None")
      .def("has_attr", &hasAttr, py::arg("symbol"), py::arg("attr"),
           "Whether the symbol `symbol` exists and carries the attribute `attr`");

  m.def("parse_module", &parseModule, py::arg("context"), py::arg("text"));

  // Handles of structured ops under construction (owned by their module).
  py::class_<Operation, std::unique_ptr<Operation, py::nodelete>>(m, "Operation")
      .def("__repr__", [](Operation *op) {
        return "<kiln._C.Operation " + op->getName().getStringRef().str() + ">";
      });

  py::class_<Builder>(m, "Builder")
      .def(py::init<std::shared_ptr<Context>>(), py::keep_alive<1, 2>())
      .def("set_loc", &Builder::setLoc, py::arg("file"), py::arg("line"), py::arg("col"))
      .def("set_fp_contract", &Builder::setFPContract, py::arg("on"))
      .def("set_unknown_loc", &Builder::setUnknownLoc)
      .def("get_loc", &Builder::getLoc)
      .def("int_type", &Builder::intType)
      .def("float_type", &Builder::floatType)
      .def("ptr_type", &Builder::ptrType)
      .def("tensor_type", &Builder::tensorType)
      .def("tensordesc_type", &Builder::tensorDescType)
      .def("create_module", &Builder::createModule)
      .def("create_kernel", &Builder::createKernel, py::arg("module"), py::arg("name"),
           py::arg("arg_types"), py::arg("divisibility"), py::arg("num_warps"),
           py::arg("cluster") = std::vector<int32_t>{1, 1, 1}, py::arg("maxnreg") = 0)
      .def("ret", &Builder::ret)
      .def("int_constant", &Builder::intConstant)
      .def("float_constant", &Builder::floatConstant)
      .def("program_id", &Builder::programId)
      .def("num_programs", &Builder::numPrograms)
      .def("make_range", &Builder::makeRange)
      .def("splat", &Builder::splat)
      .def("expand_dims", &Builder::expandDims)
      .def("broadcast", &Builder::broadcast)
      .def("trans", &Builder::trans)
      .def("reshape", &Builder::reshape)
      .def("join", &Builder::join)
      .def("split", &Builder::split)
      .def("addptr", &Builder::addptr)
      .def("int_to_ptr", &Builder::intToPtr)
      .def("load", &Builder::load, py::arg("ptr"), py::arg("mask") = py::none(),
           py::arg("other") = py::none(), py::arg("sem") = "", py::arg("scope") = "",
           py::arg("cache") = "", py::arg("evict") = "", py::arg("poll_ns") = 0)
      .def("fence", &Builder::fence)
      .def("fence_proxy_async", &Builder::fenceProxyAsync)
      .def("set_min_programs_per_sm", &Builder::setMinProgramsPerSM)
      .def("bulk_load", &Builder::bulkLoad, py::arg("ptr"), py::arg("size"),
           py::arg("count") = py::none())
      .def("desc_load", &Builder::descLoad)
      .def("desc_store", &Builder::descStore)
      .def("store", &Builder::store, py::arg("ptr"), py::arg("value"), py::arg("mask") = py::none(),
           py::arg("sem") = "", py::arg("scope") = "", py::arg("cache") = "", py::arg("evict") = "")
      .def("binary", &Builder::binary, py::arg("name"), py::arg("lhs"), py::arg("rhs"),
           py::arg("approx") = false)
      .def("unary", &Builder::unary, py::arg("name"), py::arg("x"), py::arg("approx") = false)
      .def("fma", &Builder::fma)
      .def("dot", &Builder::dot, py::arg("a"), py::arg("b"), py::arg("acc"),
           py::arg("max_num_imprecise_acc") = py::none())
      .def("select", &Builder::select)
      .def("cmpi", &Builder::cmpi)
      .def("cmpf", &Builder::cmpf)
      .def("cast", &Builder::cast)
      .def("atomic_rmw", &Builder::atomicRMW, py::arg("kind"), py::arg("sem"), py::arg("scope"),
           py::arg("ptr"), py::arg("val"), py::arg("mask") = py::none())
      .def("atomic_cas", &Builder::atomicCAS)
      .def("pdl_wait", &Builder::pdlWait)
      .def("pdl_launch_dependents", &Builder::pdlLaunchDependents)
      .def("cluster_id", &Builder::clusterId)
      .def("num_clusters", &Builder::numClusters)
      .def("cluster_cta_id", &Builder::clusterCtaId)
      .def("cluster_cta_rank", &Builder::clusterCtaRank)
      .def("cluster_size", &Builder::clusterSize)
      .def("barrier", &Builder::barrier)
      .def("cluster_barrier", &Builder::clusterBarrier)
      .def("cluster_load", &Builder::clusterLoad)
      .def("cluster_gather", &Builder::clusterGather)
      .def("cluster_sum", &Builder::clusterSum)
      .def("reduce", &Builder::reduce, py::arg("src"), py::arg("axis"), py::arg("combine"))
      .def("reduce_combine", &Builder::reduceCombine, py::arg("srcs"), py::arg("axis"),
           py::arg("combine"))
      .def("scan", &Builder::scan, py::arg("src"), py::arg("axis"), py::arg("combine"))
      .def("for_begin", &Builder::forBegin, py::return_value_policy::reference)
      .def("for_set_num_stages", &Builder::forSetNumStages)
      .def("for_set_warp_specialize", &Builder::forSetWarpSpecialize)
      .def("for_induction_var", &Builder::forInductionVar)
      .def("for_iter_args", &Builder::forIterArgs)
      .def("for_end", &Builder::forEnd)
      .def("if_begin", &Builder::ifBegin, py::return_value_policy::reference)
      .def("if_then", &Builder::ifThen)
      .def("if_else", &Builder::ifElse)
      .def("if_end", &Builder::ifEnd)
      .def("begin_scratch", &Builder::beginScratch)
      .def("discard_scratch", &Builder::discardScratch);
}

} // namespace kiln::python
