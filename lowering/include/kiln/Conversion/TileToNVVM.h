//===- TileToNVVM.h - tile dialect to LLVM + NVVM ---------------*- C++ -*-===//

#ifndef KILN_CONVERSION_TILETONVVM_H
#define KILN_CONVERSION_TILETONVVM_H

#include "kiln/Dialect/Tile/IR/Layout.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include <optional>

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace kiln {

/// Converts tile types for one layout: `!tile.ptr<T>` -> `!llvm.ptr<1>`; a tile
/// -> `!llvm.struct` of the elements one thread holds (BlockedLayout).
class TileTypeConverter : public mlir::LLVMTypeConverter {
public:
  TileTypeConverter(mlir::MLIRContext *context, int64_t threadsPerBlock, int64_t elemsPerThread);

  /// The distribution of a tile of this type (no encoding) over the block.
  tile::BlockedLayout getLayout(mlir::RankedTensorType type) const {
    assert(!type.getEncoding() && "a tile with an encoding is not in the blocked layout");
    return tile::BlockedLayout::get(type.getNumElements(), threadsPerBlock, elemsPerThread);
  }
  /// The layout of a `#tile.mma` tile (wgmma or tcgen05.ld) or of its
  /// `#tile.slice` (that of the [M, 1] tile), or std::nullopt for other tiles.
  std::optional<tile::MmaLayout> getMmaLayout(mlir::RankedTensorType type) const;
  /// The row-major index of the element register `reg` of `thread` holds, any
  /// layout.
  int64_t getElementOf(mlir::RankedTensorType type, int64_t thread, int64_t reg) const;
  /// Registers (elements) a thread holds of a tile of this type, any layout.
  int64_t getRegsPerThread(mlir::RankedTensorType type) const;
  int64_t getThreadsPerBlock() const { return threadsPerBlock; }
  /// Tries an mbarrier wait makes before it reports the hang and traps (0:
  /// it waits forever; the `wait-bound` debug option).
  uint64_t getWaitBound() const { return waitBound; }
  void setWaitBound(uint64_t bound) { waitBound = bound; }

private:
  int64_t threadsPerBlock;
  int64_t elemsPerThread;
  uint64_t waitBound = 0;
};

/// Patterns lowering tile ops, elementwise arith/math on tiles, and tile
/// kernels. Split by op family, one pattern per op.
void populateTileProgramOpsToNVVMPatterns(TileTypeConverter &converter,
                                          mlir::RewritePatternSet &patterns);
void populateTileClusterOpsToNVVMPatterns(TileTypeConverter &converter,
                                          mlir::RewritePatternSet &patterns);
void populateTileShapeOpsToNVVMPatterns(TileTypeConverter &converter,
                                        mlir::RewritePatternSet &patterns);
void populateTileMemoryOpsToNVVMPatterns(TileTypeConverter &converter,
                                         mlir::RewritePatternSet &patterns);
void populateTileTensorDescOpsToNVVMPatterns(TileTypeConverter &converter,
                                             mlir::RewritePatternSet &patterns);
void populateTileAtomicOpsToNVVMPatterns(TileTypeConverter &converter,
                                         mlir::RewritePatternSet &patterns);
void populateTileWarpGroupDotOpsToNVVMPatterns(TileTypeConverter &converter,
                                               mlir::RewritePatternSet &patterns);
void populateTileWarpSpecializeOpsToNVVMPatterns(TileTypeConverter &converter,
                                                 mlir::RewritePatternSet &patterns);
void populateTileTcgen05OpsToNVVMPatterns(TileTypeConverter &converter,
                                          mlir::RewritePatternSet &patterns);
void populateTileDotOpsToNVVMPatterns(TileTypeConverter &converter,
                                      mlir::RewritePatternSet &patterns);
void populateTileReduceOpsToNVVMPatterns(TileTypeConverter &converter,
                                         mlir::RewritePatternSet &patterns);
void populateTileScanOpsToNVVMPatterns(TileTypeConverter &converter,
                                       mlir::RewritePatternSet &patterns);
void populateTileElementwiseToNVVMPatterns(TileTypeConverter &converter,
                                           mlir::RewritePatternSet &patterns);
/// All of the above plus arith/math (libdevice) to LLVM.
void populateTileToNVVMConversionPatterns(TileTypeConverter &converter,
                                          mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_CONVERSION_TILETONVVM_H
