//===- ProgramOps.cpp - program ids and index ranges ------------------------===//

#include "PatternUtils.h"

using namespace mlir;
using namespace kiln;

namespace {
/// Reads %ctaid.{x,y,z} or %nctaid.{x,y,z}.
template <typename SourceOp, typename XOp, typename YOp, typename ZOp>
struct GridRegisterLowering : ConvertOpToLLVMPattern<SourceOp> {
  using ConvertOpToLLVMPattern<SourceOp>::ConvertOpToLLVMPattern;

  LogicalResult matchAndRewrite(SourceOp op, typename SourceOp::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Type i32 = rewriter.getI32Type();
    Value value;
    switch (op.getAxis()) {
    case tile::ProgramAxis::X:
      value = XOp::create(rewriter, op.getLoc(), i32);
      break;
    case tile::ProgramAxis::Y:
      value = YOp::create(rewriter, op.getLoc(), i32);
      break;
    case tile::ProgramAxis::Z:
      value = ZOp::create(rewriter, op.getLoc(), i32);
      break;
    }
    rewriter.replaceOp(op, value);
    return success();
  }
};

using ProgramIdLowering =
    GridRegisterLowering<tile::ProgramIdOp, NVVM::BlockIdXOp, NVVM::BlockIdYOp, NVVM::BlockIdZOp>;
using NumProgramsLowering = GridRegisterLowering<tile::NumProgramsOp, NVVM::GridDimXOp,
                                                 NVVM::GridDimYOp, NVVM::GridDimZOp>;

/// Each thread materializes the indices of the elements it holds.
struct MakeRangeLowering : TileOpConversion<tile::MakeRangeOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::MakeRangeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto layout = tileConverter.getLayout(op.getType());
    ElementIndices indices = getElementIndices(rewriter, loc, layout);
    SmallVector<Value> values;
    for (int64_t offset : indices.offsets)
      values.push_back(LLVM::AddOp::create(
          rewriter, loc, indices.base, createI32Constant(rewriter, loc, op.getStart() + offset)));
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(op.getType()), values));
    return success();
  }
};
/// tile.pdl_wait / tile.pdl_launch_dependents -> griddepcontrol.
template <typename SourceOp, NVVM::GridDepActionKind Kind>
struct GridDepControlLowering : ConvertOpToLLVMPattern<SourceOp> {
  using ConvertOpToLLVMPattern<SourceOp>::ConvertOpToLLVMPattern;

  LogicalResult matchAndRewrite(SourceOp op, typename SourceOp::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::GriddepcontrolOp>(
        op, NVVM::GridDepActionKindAttr::get(op.getContext(), Kind));
    return success();
  }
};
} // namespace

void kiln::populateTileProgramOpsToNVVMPatterns(TileTypeConverter &converter,
                                                RewritePatternSet &patterns) {
  patterns.add<ProgramIdLowering, NumProgramsLowering>(converter);
  patterns.add<MakeRangeLowering>(converter);
  patterns.add<GridDepControlLowering<tile::PdlWaitOp, NVVM::GridDepActionKind::wait>,
               GridDepControlLowering<tile::PdlLaunchDependentsOp,
                                      NVVM::GridDepActionKind::launch_dependents>>(converter);
}
