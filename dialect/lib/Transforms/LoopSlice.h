//===- LoopSlice.h - the per-iteration slices of loop values ----*- C++ -*-===//
//
// Shared by kiln-tile-pipeline-loads and kiln-tile-warp-specialize: which ops
// of a loop body compute a load's coordinates from the induction variable, so
// that they can be recomputed for another iteration.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TRANSFORMS_LOOPSLICE_H
#define KILN_LIB_TRANSFORMS_LOOPSLICE_H

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>

namespace kiln::tile {

/// The ops of `loop`'s body that `values` depend on, in program order, if they
/// are all pure and region-free (then they can be recomputed for another
/// iteration); std::nullopt otherwise.
std::optional<llvm::SmallVector<mlir::Operation *>> indexSlice(mlir::scf::ForOp loop,
                                                               mlir::ValueRange values);

} // namespace kiln::tile

#endif // KILN_LIB_TRANSFORMS_LOOPSLICE_H
