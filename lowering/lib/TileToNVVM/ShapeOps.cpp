//===- ShapeOps.cpp - splat, expand_dims, broadcast -------------------------===//

#include "PatternUtils.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

namespace {
struct SplatLowering : TileOpConversion<tile::SplatOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::SplatOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    int64_t regs = tileConverter.getLayout(op.getType()).regsPerThread();
    SmallVector<Value> values(regs, adaptor.getSrc());
    rewriter.replaceOp(op, packTile(rewriter, op.getLoc(),
                                    getTypeConverter()->convertType(op.getType()), values));
    return success();
  }
};

/// Inserting a unit dimension keeps the row-major order, hence the layout.
struct ExpandDimsLowering : TileOpConversion<tile::ExpandDimsOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::ExpandDimsOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getSrc());
    return success();
  }
};

/// The source goes to a shared-memory buffer; after a barrier each thread
/// reads, for each element it holds, the source element it repeats.
struct BroadcastLowering : TileOpConversion<tile::BroadcastOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::BroadcastOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = llvm::cast<RankedTensorType>(op.getSrc().getType());
    auto dstType = llvm::cast<RankedTensorType>(op.getType());
    Type element = getTypeConverter()->convertType(dstType.getElementType());
    bool isBool = element.isInteger(1);
    Type stored = isBool ? rewriter.getI8Type() : element;

    // A shared-memory buffer of the source for this broadcast.
    Value buffer = createSharedBuffer(rewriter, op, "__kiln_broadcast_smem", stored,
                                      srcType.getNumElements());

    auto elementPtr = [&](Value index) {
      return LLVM::GEPOp::create(rewriter, loc, buffer.getType(), stored, buffer,
                                 ArrayRef<LLVM::GEPArg>{index});
    };

    // Write the source.
    ElementIndices srcIndices =
        getElementIndices(rewriter, loc, tileConverter.getLayout(srcType));
    SmallVector<Value> srcValues = unpackTile(rewriter, loc, adaptor.getSrc());
    for (auto [value, offset] : llvm::zip(srcValues, srcIndices.offsets)) {
      Value index = LLVM::AddOp::create(rewriter, loc, srcIndices.base,
                                        createI32Constant(rewriter, loc, offset));
      Value toStore = isBool ? LLVM::ZExtOp::create(rewriter, loc, stored, value) : value;
      LLVM::StoreOp::create(rewriter, loc, toStore, elementPtr(index));
    }
    NVVM::BarrierOp::create(rewriter, loc);

    // Read, for each destination element, its source element.
    ElementIndices dstIndices =
        getElementIndices(rewriter, loc, tileConverter.getLayout(dstType));
    ArrayRef<int64_t> dstShape = dstType.getShape(), srcShape = srcType.getShape();
    SmallVector<Value> results;
    for (int64_t offset : dstIndices.offsets) {
      Value linear = LLVM::AddOp::create(rewriter, loc, dstIndices.base,
                                         createI32Constant(rewriter, loc, offset));
      Value srcLinear = createI32Constant(rewriter, loc, 0);
      int64_t dstShift = 0, srcStride = 1;
      for (int64_t d = dstType.getRank() - 1; d >= 0; --d) {
        if (srcShape[d] != 1) {
          Value index = LLVM::LShrOp::create(rewriter, loc, linear,
                                             createI32Constant(rewriter, loc, dstShift));
          index = LLVM::AndOp::create(rewriter, loc, index,
                                      createI32Constant(rewriter, loc, dstShape[d] - 1));
          index = LLVM::MulOp::create(rewriter, loc, index,
                                      createI32Constant(rewriter, loc, srcStride));
          srcLinear = LLVM::AddOp::create(rewriter, loc, srcLinear, index);
        }
        dstShift += llvm::Log2_64(dstShape[d]);
        srcStride *= srcShape[d];
      }
      Value value = LLVM::LoadOp::create(rewriter, loc, stored, elementPtr(srcLinear));
      results.push_back(isBool ? LLVM::TruncOp::create(rewriter, loc, element, value) : value);
    }
    // The buffer may be written again (by a later program iteration).
    NVVM::BarrierOp::create(rewriter, loc);
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(dstType), results));
    return success();
  }
};
} // namespace

void kiln::populateTileShapeOpsToNVVMPatterns(TileTypeConverter &converter,
                                              RewritePatternSet &patterns) {
  patterns.add<SplatLowering, ExpandDimsLowering, BroadcastLowering>(converter);
}
