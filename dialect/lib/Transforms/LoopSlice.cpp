//===- LoopSlice.cpp - the per-iteration slices of loop values -------------===//

#include "LoopSlice.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

/// The ops of `loop`'s body that `values` depend on, in program order, if they
/// are all pure and region-free (then they can be recomputed for another
/// iteration); std::nullopt otherwise.
std::optional<SmallVector<Operation *>> kiln::tile::indexSlice(scf::ForOp loop, ValueRange values) {
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> worklist(values.begin(), values.end());
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || !loop.getBody()->findAncestorOpInBlock(*def)) {
      if (auto arg = llvm::dyn_cast<BlockArgument>(v);
          arg && arg.getOwner() == loop.getBody() && arg != loop.getInductionVar())
        return std::nullopt; // a loop-carried value: not a function of the
                             // iteration
      continue;
    }
    if (def->getBlock() != loop.getBody() || def->getNumRegions() != 0 || !isMemoryEffectFree(def))
      return std::nullopt;
    if (slice.insert(def))
      llvm::append_range(worklist, def->getOperands());
  }
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}
