//===- TileTypes.h - tile dialect types -------------------------*- C++ -*-===//

#ifndef KILN_DIALECT_TILE_IR_TILETYPES_H
#define KILN_DIALECT_TILE_IR_TILETYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "kiln/Dialect/Tile/IR/TileTypes.h.inc"

namespace kiln::tile {

/// The pointee of a pointer, or the tile of pointees of a tile of pointers.
mlir::Type getPointeeType(mlir::Type ptrLike);

/// `i1`, or a tile of `i1` with the shape of `type` when it is a tile.
mlir::Type getI1SameShape(mlir::Type type);

} // namespace kiln::tile

#endif // KILN_DIALECT_TILE_IR_TILETYPES_H
