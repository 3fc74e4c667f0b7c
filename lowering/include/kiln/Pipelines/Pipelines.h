//===- Pipelines.h - kiln's named pass pipelines ----------------*- C++ -*-===//

#ifndef KILN_PIPELINES_PIPELINES_H
#define KILN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

#include <string>

namespace kiln {

struct TileToLLVMOptions {
  /// Warps per program for kernels that carry no `tile.num_warps`.
  int numWarps = 4;
  /// Target arch (sm_90a, sm_100a, sm_103a); empty: no arch-specific
  /// instructions. wgmma is used on sm_90a only, tcgen05 and Tensor Memory on
  /// sm_100a and sm_103a only.
  std::string arch;
  /// Debug: tries of an mbarrier wait before it reports the hang and traps
  /// (kiln-convert-tile-to-nvvm's `wait-bound`; 0: none).
  uint64_t waitBound = 0;
  /// kiln-tile-accelerate-dot's `split-n`: dots of fewer 64-row slabs than
  /// warpgroups on wgmma, the warpgroups splitting N.
  bool splitN = true;
};

/// The one pipeline from the tile dialect to LLVM + NVVM dialects, ready for
/// translation to LLVM IR (registered as `kiln-tile-to-llvm`):
///   kiln-tile-pipeline-loads, canonicalize, cse, kiln-tile-assign-layout,
///   kiln-tile-accelerate-dot, kiln-tile-split-loops, kiln-tile-verify-async,
///   kiln-tile-rematerialize-broadcasts, canonicalize, cse,
///   kiln-tile-vectorize-access, kiln-defer-cluster-waits, kiln-convert-tile-to-nvvm,
///   kiln-allocate-shared-memory, convert-scf-to-cf, convert-arith-to-llvm, convert-cf-to-llvm,
///   convert-nvvm-to-llvm, canonicalize, cse, reconcile-unrealized-casts.
void buildTileToLLVMPipeline(mlir::OpPassManager &pm, const TileToLLVMOptions &options = {});

/// Registers `kiln-tile-to-llvm` with the global pipeline registry.
void registerKilnPipelines();

} // namespace kiln

#endif // KILN_PIPELINES_PIPELINES_H
