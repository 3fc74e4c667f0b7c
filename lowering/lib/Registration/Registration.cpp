//===- Registration.cpp - register kiln dialects and passes ----------------===//

#include "kiln/Registration.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Tile/IR/TileDialect.h"
#include "kiln/Dialect/Tile/Transforms/Passes.h"
#include "kiln/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

void kiln::registerKilnDialects(mlir::DialectRegistry &registry) {
  registry.insert<tile::TileDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect, mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect, mlir::ub::UBDialect>();
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
}

void kiln::registerKilnPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::registerCanonicalizerPass();
    mlir::registerCSEPass();
    mlir::registerSCFToControlFlowPass();
    mlir::registerReconcileUnrealizedCastsPass();
    mlir::registerConvertControlFlowToLLVMPass();
    mlir::registerArithToLLVMConversionPass();
    mlir::registerConvertNVVMToLLVMPass();
    tile::registerTilePasses();
    registerKilnConversionPasses();
    registerKilnPipelines();
  });
}

void kiln::registerKilnDialectsAndPasses(mlir::DialectRegistry &registry) {
  registerKilnDialects(registry);
  registerKilnPasses();
}
