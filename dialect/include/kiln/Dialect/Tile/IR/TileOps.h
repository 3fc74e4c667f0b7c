//===- TileOps.h - tile dialect operations ----------------------*- C++ -*-===//

#ifndef KILN_DIALECT_TILE_IR_TILEOPS_H
#define KILN_DIALECT_TILE_IR_TILEOPS_H

#include "kiln/Dialect/Tile/IR/TileDialect.h"
#include "kiln/Dialect/Tile/IR/TileTypes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <array>
#include <optional>

#include "kiln/Dialect/Tile/IR/TileEnums.h.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/Tile/IR/TileOps.h.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/Tile/IR/TileNvidiaOps.h.inc"

namespace kiln::tile {
/// The cluster shape (`tile.cluster_dims`) of the kernel holding `op`, or
/// nullopt when that kernel has none.
std::optional<std::array<int64_t, 3>> getClusterDims(mlir::Operation *op);

/// The byte swizzle of the boxes in the slots of `ring` (a `tile.ring_alloc`
/// result): 128 for a `swizzled` gather ring, else the swizzle of the
/// descriptor of every `tile.ring_issue` into it (TMA); 0 where it has no
/// TMA issue, or issues of different swizzles.
unsigned getRingSwizzle(mlir::Value ring);

/// Whether `ring`'s boxes come through TMA descriptors only, all with the
/// 128-byte swizzle (what wgmma's and tcgen05's descriptors read).
bool isTmaSwizzled128(mlir::Value ring);
} // namespace kiln::tile

#endif // KILN_DIALECT_TILE_IR_TILEOPS_H
