//===- PatternUtils.h - shared code of the tile -> NVVM patterns -*- C++ -*-===//

#ifndef KILN_LIB_TILETONVVM_PATTERNUTILS_H
#define KILN_LIB_TILETONVVM_PATTERNUTILS_H

#include "kiln/Conversion/TileToNVVM.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace kiln {

/// The elements a thread holds: one value, or the members of the struct.
llvm::SmallVector<mlir::Value> unpackTile(mlir::OpBuilder &b, mlir::Location loc,
                                          mlir::Value value);
/// The struct of `values` (or the single value when `type` is not a struct).
mlir::Value packTile(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                     mlir::ValueRange values);

mlir::Value createI32Constant(mlir::OpBuilder &b, mlir::Location loc, int64_t value);
/// `%tid.x`.
mlir::Value createThreadId(mlir::OpBuilder &b, mlir::Location loc);

/// For each register of a thread, the row-major index of the element it holds:
/// `base + offsets[r]` with `base` depending on the thread only.
struct ElementIndices {
  mlir::Value base;
  llvm::SmallVector<int64_t> offsets;
};
ElementIndices getElementIndices(mlir::OpBuilder &b, mlir::Location loc,
                                 const tile::BlockedLayout &layout);

/// The i1 "this thread holds the first copy of its elements" (true where the
/// layout is not replicated).
mlir::Value createIsOwner(mlir::OpBuilder &b, mlir::Location loc,
                          const tile::BlockedLayout &layout);

/// A fresh module-level shared-memory array (`<prefix>_<n>`) of `count`
/// elements of `element`, 16-byte aligned; returns its address (`!llvm.ptr<3>`).
mlir::Value createSharedBuffer(mlir::OpBuilder &b, mlir::Operation *user,
                               llvm::StringRef prefix, mlir::Type element, int64_t count);

/// For per-register operand lists `operands[i][r]`: the result of the first
/// earlier register whose operands are all the same values as register `r`'s
/// (`results[r']`), or null. Lets a pattern compute a value once per thread
/// where it is constant along a run.
mlir::Value findEarlierRegister(llvm::ArrayRef<llvm::SmallVector<mlir::Value>> operands,
                                int64_t r, llvm::ArrayRef<mlir::Value> results);

/// Base of the patterns that need the layout.
template <typename SourceOp>
class TileOpConversion : public mlir::ConvertOpToLLVMPattern<SourceOp> {
public:
  TileOpConversion(TileTypeConverter &converter, mlir::PatternBenefit benefit = 1)
      : mlir::ConvertOpToLLVMPattern<SourceOp>(converter, benefit), tileConverter(converter) {}

protected:
  const TileTypeConverter &tileConverter;
};

} // namespace kiln

#endif // KILN_LIB_TILETONVVM_PATTERNUTILS_H
