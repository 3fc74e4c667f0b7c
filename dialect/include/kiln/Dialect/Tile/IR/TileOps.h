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
} // namespace kiln::tile

#endif // KILN_DIALECT_TILE_IR_TILEOPS_H
