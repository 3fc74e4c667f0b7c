//===- kilnc.cpp - the kiln compiler driver --------------------------------===//
//
// kilnc input.mlir -emit=tile|nvvm|llvm|ptx|cubin --arch=sm_90a [-o out]
//
// tile: the parsed and verified tile IR; nvvm: after the kiln-tile-to-llvm
// pipeline (LLVM + NVVM dialects); llvm: LLVM IR with libdevice linked and
// optimized; ptx: NVPTX assembly; cubin: the assembled image (nvJitLink, or
// ptxas as a fallback).
//
//===----------------------------------------------------------------------===//

#include "kiln/Pipelines/Pipelines.h"
#include "kiln/Registration.h"
#include "kiln/Target/PTX.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace {
enum class Stage { Tile, NVVM, LLVM, PTX, Cubin };
} // namespace

static cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input .mlir>"), cl::init("-"));
static cl::opt<std::string> outputFilename("o", cl::desc("output file"), cl::init("-"));
static cl::opt<Stage>
    emit("emit", cl::desc("the stage to emit"), cl::init(Stage::PTX),
         cl::values(clEnumValN(Stage::Tile, "tile", "verified tile IR"),
                    clEnumValN(Stage::NVVM, "nvvm", "LLVM + NVVM dialects"),
                    clEnumValN(Stage::LLVM, "llvm", "LLVM IR (libdevice linked, optimized)"),
                    clEnumValN(Stage::PTX, "ptx", "PTX assembly"),
                    clEnumValN(Stage::Cubin, "cubin", "assembled cubin")));
static cl::opt<std::string> arch("arch", cl::desc("target: sm_90a, sm_100a or sm_103a"),
                                 cl::init("sm_90a"));
static cl::opt<int> numWarps("num-warps", cl::desc("warps for kernels without tile.num_warps"),
                             cl::init(4));
static cl::opt<uint64_t>
    waitBound("wait-bound",
              cl::desc("debug: an mbarrier wait reports the hang and traps after this many "
                       "tries (0: none)"),
              cl::init(0));
static cl::opt<bool>
    splitN("split-n",
           cl::desc("sm_90a: dots of fewer 64-row slabs than warpgroups on "
                    "wgmma, the warpgroups splitting N (kiln-tile-accelerate-dot)"),
           cl::init(kiln::TileToLLVMOptions().splitN));

static int fail(const Twine &message) {
  WithColor::error(errs(), "kilnc") << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "kiln compiler driver\n");
  if (!kiln::isSupportedArch(arch))
    return fail("unsupported --arch '" + arch + "' (supported: sm_90a, sm_100a, sm_103a)");

  mlir::DialectRegistry registry;
  kiln::registerKilnDialectsAndPasses(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string errorMessage;
  auto input = mlir::openInputFile(inputFilename, &errorMessage);
  if (!input)
    return fail(errorMessage);
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), SMLoc());
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  auto output = mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output)
    return fail(errorMessage);

  if (emit == Stage::Tile) {
    module->print(output->os());
    output->keep();
    return 0;
  }

  mlir::PassManager pm(&context);
  kiln::TileToLLVMOptions options;
  options.numWarps = numWarps;
  options.arch = arch;
  options.waitBound = waitBound;
  options.splitN = splitN;
  kiln::buildTileToLLVMPipeline(pm, options);
  if (mlir::failed(pm.run(*module)))
    return 1;
  if (emit == Stage::NVVM) {
    module->print(output->os());
    output->keep();
    return 0;
  }

  LLVMContext llvmContext;
  auto llvmModule = kiln::translateToLLVMIR(*module, arch, llvmContext);
  if (!llvmModule)
    return fail(toString(llvmModule.takeError()));
  if (emit == Stage::LLVM) {
    (*llvmModule)->print(output->os(), nullptr);
    output->keep();
    return 0;
  }
  auto ptx = kiln::emitPTX(**llvmModule, arch);
  if (!ptx)
    return fail(toString(ptx.takeError()));
  if (emit == Stage::PTX) {
    output->os() << *ptx;
    output->keep();
    return 0;
  }
  auto cubin = kiln::compilePTXToCubin(*ptx, arch);
  if (!cubin)
    return fail(toString(cubin.takeError()));
  output->os() << *cubin;
  output->keep();
  return 0;
}
