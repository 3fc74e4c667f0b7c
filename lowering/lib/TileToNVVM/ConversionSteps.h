//===- ConversionSteps.h - what ConvertTileToNVVM runs around its patterns ===//
//
// The checks the pass runs before applying its patterns and the rewrites it
// runs after, each defined beside the patterns of the ops it concerns.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TILETONVVM_CONVERSIONSTEPS_H
#define KILN_LIB_TILETONVVM_CONVERSIONSTEPS_H

#include "kiln/Conversion/TileToNVVM.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// The elements a thread may hold of one data tile: four registers' worth
/// of the 255 a thread has. The lowering keeps one value an element, and its
/// time grows faster than linearly with them (2048 took minutes); a tile past
/// the registers spills, past four times them it is refused.
constexpr int64_t kMaxElementsPerThread = 1024;

/// Before: fails (with an error at the op) when a data tile (loaded from
/// memory, or floating-point) holds more than kMaxElementsPerThread elements
/// a thread.
mlir::LogicalResult checkRegisterFootprint(mlir::ModuleOp module,
                                           const TileTypeConverter &converter);

/// After: every CTA barrier (`bar.sync 0`) that the consumers of a lowered
/// tile.warp_specialize run becomes the named barrier of their threads
/// (`bar.sync 1, C`; WarpSpecializeOps.cpp).
void replaceConsumerBarriers(mlir::Operation *root);

/// After: records on each kernel what its ops use (`tile.features`,
/// `tile.pdl`, `tile.register_split`) and drops the marks of markFeature
/// (KernelFacts.cpp).
void recordKernelFacts(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_LIB_TILETONVVM_CONVERSIONSTEPS_H
