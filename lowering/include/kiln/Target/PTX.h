//===- PTX.h - LLVM IR, PTX and cubin emission -----------------*- C++ -*-===//

#ifndef KILN_TARGET_PTX_H
#define KILN_TARGET_PTX_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace kiln {

/// The architectures kiln emits code for: sm_90a, sm_100a, sm_103a.
llvm::ArrayRef<llvm::StringRef> getSupportedArchs();
bool isSupportedArch(llvm::StringRef arch);

/// Translates a module in the LLVM + NVVM dialects to LLVM IR for `arch`, links
/// the libdevice functions it calls and optimizes it (O3).
llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(mlir::ModuleOp module, llvm::StringRef arch, llvm::LLVMContext &context);

/// LLVM IR -> PTX text through LLVM's NVPTX backend.
llvm::Expected<std::string> emitPTX(llvm::Module &module, llvm::StringRef arch);

/// Both of the above.
llvm::Expected<std::string> translateToPTX(mlir::ModuleOp module, llvm::StringRef arch);

/// What the assembler says about one compiled image.
struct CubinInfo {
  std::string tool; ///< "nvJitLink" or "ptxas"
  std::string log;  ///< the assembler's info log (registers, spills)
};

/// PTX -> cubin for `arch`: in process through nvJitLink (opened at run time),
/// or through the `ptxas` executable when nvJitLink is unavailable or
/// KILN_USE_PTXAS=1.
llvm::Expected<std::string> compilePTXToCubin(llvm::StringRef ptx, llvm::StringRef arch,
                                              CubinInfo *info = nullptr);

/// Where the CUDA toolkit is: $CUDA_HOME, else /usr/local/cuda.
std::string getCudaHome();

/// The PTX ISA version of the PTX kiln emits (its `.version`), e.g. "8.8".
llvm::StringRef getPTXISAVersion();

/// The libdevice bitcode kiln links when a kernel calls libdevice: $KILN_LIBDEVICE, else the
/// CUDA toolkit's nvvm/libdevice/libdevice.10.bc (the path, whether or not it exists).
std::string getLibdevicePath();

/// What assembles PTX into cubins on this machine (nothing is loaded until asked).
struct AssemblerInfo {
  std::string nvJitLinkVersion; ///< "13.0"; empty when nvJitLink does not load
  std::string nvJitLinkError;   ///< why it does not load
  std::string ptxas;            ///< the ptxas executable; empty when there is none
};
AssemblerInfo getAssemblerInfo();

} // namespace kiln

#endif // KILN_TARGET_PTX_H
