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
#include <string>

namespace kiln::tile {

class LoadOp;

/// Why indexSlice rejected a value: where the offending op (or loop-carried
/// argument) is, and what is wrong with it, for a diagnostic.
struct SliceFailure {
  mlir::Location loc;
  std::string reason;
};

/// The ops of `loop`'s body that `values` depend on, in program order, if they
/// can be recomputed for another iteration: pure region-free ops, and scalar
/// loads of memory the kernel does not write (isReadOnlyScalarLoad; a
/// block-table entry), or with `tiles` also loads of tiles (a block of
/// block-table entries, for a gather every thread issues). std::nullopt
/// otherwise, and `why` (when given) says what stops it.
std::optional<llvm::SmallVector<mlir::Operation *>> indexSlice(mlir::scf::ForOp loop,
                                                               mlir::ValueRange values,
                                                               SliceFailure *why = nullptr,
                                                               bool tiles = false);

/// Whether `load`, in the body of `loop`, may be executed for another
/// iteration of `loop` than its own (up to num_stages - 1 ahead, or by a
/// producer warpgroup running ahead of the consumers) and read the same
/// value. The rule:
///   - a plain (not ordered, not polling) load of one integer or float scalar;
///   - its pointer derives (tile.addptr and pure pointer ops) from one pointer
///     argument of the kernel;
///   - no tile.store, tile.atomic_rmw, tile.atomic_cas or tile.desc_store of
///     the kernel writes through a pointer (descriptor) deriving from that
///     argument, and every one of them writes through a pointer (descriptor)
///     deriving from kernel arguments only (not int_to_ptr, not a pointer read
///     from memory); distinct pointer arguments are assumed not to overlap
///     where the kernel writes;
///   - the loop body orders nothing against other agents' writes: no
///     tile.pdl_wait, tile.fence, ordered load or store, or atomic.
/// Then the memory it reads is the same for every iteration. Otherwise fails
/// with the reason in `why` (when given). With `tiles`, a load of a tile of
/// integers or floats qualifies as a scalar does.
mlir::LogicalResult isReadOnlyScalarLoad(mlir::scf::ForOp loop, LoadOp load,
                                         SliceFailure *why = nullptr, bool tiles = false);

} // namespace kiln::tile

#endif // KILN_LIB_TRANSFORMS_LOOPSLICE_H
