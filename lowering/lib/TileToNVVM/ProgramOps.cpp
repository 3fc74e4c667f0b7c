//===- ProgramOps.cpp - program ids and index ranges ------------------------===//

#include "PatternUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

namespace {
using ProgramIdLowering =
    AxisRegisterLowering<tile::ProgramIdOp, NVVM::BlockIdXOp, NVVM::BlockIdYOp, NVVM::BlockIdZOp>;
using NumProgramsLowering =
    AxisRegisterLowering<tile::NumProgramsOp, NVVM::GridDimXOp, NVVM::GridDimYOp, NVVM::GridDimZOp>;

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
/// Each thread computes, for each element it holds, the coordinate along
/// `dim` from the row-major index `base + offset` (base = the thread's run
/// start, a multiple of the run length `vec`): with `shift` = log2 of the
/// product of the inner dimensions and `period` = size_dim << shift, the
/// coordinate is ((index mod period) >> shift). Split offset = hi + lo
/// (lo < vec): base + hi is a multiple of vec, so adding lo carries into
/// neither the shift nor the mask, and
///   coordinate = (((base + hi mod period) >> shift) & (size - 1)) + (lo >> shift)
/// -- one value per distinct (hi mod period) shared by the run's elements
/// (consecutive values along the last dimension); a constant where the run
/// covers whole periods (vec >= period, so base mod period = 0).
/// In a `#tile.mma` layout (or its slice) no field of an element's index
/// carries into the next (MmaLayout: a register's offset adds within the
/// row and the column of the thread's base), so the coordinate is the
/// base's plus the offset's: one value a thread, a constant a register.
struct IotaLowering : TileOpConversion<tile::IotaOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::IotaOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getType();
    int64_t dim = op.getDim(), start = op.getStartAttr().getInt();
    int64_t shift = 0;
    for (int64_t d = dim + 1; d < type.getRank(); ++d)
      shift += llvm::Log2_64(type.getDimSize(d));
    int64_t size = type.getDimSize(dim);
    Type converted = getTypeConverter()->convertType(type);
    if (tileConverter.getMmaLayout(type)) {
      ElementIndices indices = getElementIndices(rewriter, loc, tileConverter, type);
      Value coordinate = indices.base;
      if (shift)
        coordinate = LLVM::LShrOp::create(rewriter, loc, coordinate,
                                          createI32Constant(rewriter, loc, shift));
      coordinate = LLVM::AndOp::create(rewriter, loc, coordinate,
                                       createI32Constant(rewriter, loc, size - 1));
      SmallVector<Value> results;
      for (int64_t offset : indices.offsets) {
        int64_t add = start + ((offset >> shift) & (size - 1));
        results.push_back(add ? LLVM::AddOp::create(rewriter, loc, coordinate,
                                                    createI32Constant(rewriter, loc, add))
                              : coordinate);
      }
      rewriter.replaceOp(op, packTile(rewriter, loc, converted, results));
      return success();
    }
    auto layout = tileConverter.getLayout(type);
    int64_t period = size << shift, vec = layout.vec;

    ElementIndices indices = getElementIndices(rewriter, loc, layout);
    llvm::DenseMap<int64_t, Value> runCoordinates; // hi mod period -> masked coordinate
    llvm::DenseMap<int64_t, Value> values;         // (hi mod period) * vec + lo -> value
    SmallVector<Value> results;
    for (int64_t offset : indices.offsets) {
      int64_t hi = (offset - offset % vec) % period, lo = offset % vec;
      if (vec >= period) {
        results.push_back(createI32Constant(rewriter, loc, start + ((offset % period) >> shift)));
        continue;
      }
      Value &value = values[hi * vec + (lo >> shift)];
      if (!value) {
        Value &coordinate = runCoordinates[hi];
        if (!coordinate) {
          coordinate = indices.base;
          if (hi)
            coordinate = LLVM::AddOp::create(rewriter, loc, coordinate,
                                             createI32Constant(rewriter, loc, hi));
          if (shift)
            coordinate = LLVM::LShrOp::create(rewriter, loc, coordinate,
                                              createI32Constant(rewriter, loc, shift));
          coordinate = LLVM::AndOp::create(rewriter, loc, coordinate,
                                           createI32Constant(rewriter, loc, size - 1));
        }
        value = coordinate;
        if (int64_t add = start + (lo >> shift))
          value = LLVM::AddOp::create(rewriter, loc, value, createI32Constant(rewriter, loc, add));
      }
      results.push_back(value);
    }
    rewriter.replaceOp(op, packTile(rewriter, loc, converted, results));
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
  patterns.add<MakeRangeLowering, IotaLowering>(converter);
  patterns.add<GridDepControlLowering<tile::PdlWaitOp, NVVM::GridDepActionKind::wait>,
               GridDepControlLowering<tile::PdlLaunchDependentsOp,
                                      NVVM::GridDepActionKind::launch_dependents>>(converter);
}
