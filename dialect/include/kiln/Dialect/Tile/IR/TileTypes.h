//===- TileTypes.h - tile dialect types -------------------------*- C++ -*-===//

#ifndef KILN_DIALECT_TILE_IR_TILETYPES_H
#define KILN_DIALECT_TILE_IR_TILETYPES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TensorEncoding.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "kiln/Dialect/Tile/IR/TileTypes.h.inc"
#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Tile/IR/TileAttrs.h.inc"

namespace kiln::tile {

/// The pointee of a pointer, or the tile of pointees of a tile of pointers.
mlir::Type getPointeeType(mlir::Type ptrLike);

/// `i1`, or a tile of `i1` with the shape of `type` when it is a tile.
mlir::Type getI1SameShape(mlir::Type type);

/// The 128-byte column chunks a TMA box of `box` with `swizzle` has in shared
/// memory: inner row bytes / 128 when the swizzle is 128 bytes and the row is
/// wider (a wide box: the chunks one after the other, each the box's rows of
/// 128 bytes), else 1.
int64_t getNumBoxChunks(mlir::RankedTensorType box, unsigned swizzle);

/// Shared memory one block may use on every supported arch (sm_90a, sm_100a,
/// sm_103a: 227 KiB); past the 48 KiB of static shared memory it is dynamic.
constexpr int64_t kMaxSharedBytes = 227 * 1024;
constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;
/// Blocks per thread-block cluster that every supported arch launches: 8 is
/// the portable size; sm_90 and sm_100 also launch 16 with the non-portable
/// opt-in, which the runtime makes for such kernels.
constexpr int64_t kMaxClusterSize = 16;
/// The register caps a kernel may ask for (`tile.maxnreg`): ptxas allocates
/// at least 24 registers a thread, and a thread addresses at most 255.
constexpr int64_t kMinMaxnreg = 24;
constexpr int64_t kMaxMaxnreg = 255;

} // namespace kiln::tile

#endif // KILN_DIALECT_TILE_IR_TILETYPES_H
