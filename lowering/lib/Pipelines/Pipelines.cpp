//===- Pipelines.cpp - kiln's named pass pipelines --------------------------===//

#include "kiln/Pipelines/Pipelines.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kiln::buildTileToLLVMPipeline(OpPassManager &pm, const TileToLLVMOptions &options) {
  // First: canonicalization may rebuild a loop without its tile.num_stages.
  tile::TileWarpSpecializeOptions specializeOptions;
  specializeOptions.arch = options.arch;
  pm.addNestedPass<func::FuncOp>(tile::createTileWarpSpecialize(specializeOptions));
  pm.addNestedPass<func::FuncOp>(tile::createTilePipelineLoads());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  tile::TileAssignLayoutOptions layoutOptions;
  layoutOptions.numWarps = options.numWarps;
  pm.addNestedPass<func::FuncOp>(tile::createTileAssignLayout(layoutOptions));
  tile::TileAccelerateDotOptions dotOptions;
  dotOptions.arch = options.arch;
  dotOptions.splitN = options.splitN;
  pm.addNestedPass<func::FuncOp>(tile::createTileAccelerateDot(dotOptions));
  // A key loop's masked iterations apart from the others, as two loops.
  pm.addNestedPass<func::FuncOp>(tile::createTileSplitLoops());
  // The async protocol as the passes above left it: every ring slot and
  // mbarrier used in order (kiln-tile-verify-async).
  pm.addNestedPass<func::FuncOp>(tile::createTileVerifyAsync());
  // Index arithmetic instead of shared memory for cheap broadcasts; the
  // copies leave duplicates and dead originals behind.
  pm.addNestedPass<func::FuncOp>(tile::createTileRematerializeBroadcasts());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(tile::createTileVectorizeAccess());
  pm.addPass(createDeferClusterWaits());
  ConvertTileToNVVMOptions nvvmOptions;
  nvvmOptions.arch = options.arch;
  nvvmOptions.waitBound = options.waitBound;
  pm.addPass(createConvertTileToNVVM(nvvmOptions));
  pm.addPass(createAllocateSharedMemory());
  pm.addPass(createSCFToControlFlowPass());
  // scf-to-cf compares and increments loop counters with arith ops.
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

namespace {
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<int> numWarps{*this, "num-warps",
                       llvm::cl::desc("warps per program where a kernel carries none"),
                       llvm::cl::init(4)};
  Option<std::string> arch{*this, "arch",
                           llvm::cl::desc("target arch (sm_90a, sm_100a, sm_103a); empty: "
                                          "no arch-specific instructions (no wgmma, no tcgen05)"),
                           llvm::cl::init("")};
};
} // namespace

void kiln::registerKilnPipelines() {
  PassPipelineRegistration<PipelineOptions>("kiln-tile-to-llvm",
                                            "Lower tile kernels to the LLVM and NVVM dialects",
                                            [](OpPassManager &pm, const PipelineOptions &options) {
                                              TileToLLVMOptions o;
                                              o.numWarps = options.numWarps;
                                              o.arch = options.arch;
                                              buildTileToLLVMPipeline(pm, o);
                                            });
}
