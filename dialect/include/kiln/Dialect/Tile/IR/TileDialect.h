//===- TileDialect.h - tile dialect -----------------------------*- C++ -*-===//

#ifndef KILN_DIALECT_TILE_IR_TILEDIALECT_H
#define KILN_DIALECT_TILE_IR_TILEDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"

#include "kiln/Dialect/Tile/IR/TileDialect.h.inc"

#endif // KILN_DIALECT_TILE_IR_TILEDIALECT_H
