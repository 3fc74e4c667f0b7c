//===- Elementwise.cpp - arith and math on tiles ----------------------------===//
//
// An arith or math op on tiles becomes the same op once per element a thread
// holds; those scalar ops are then lowered by the arith/math patterns.
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace kiln;

namespace {
/// Ahead of the scalar arith/math patterns, which must never see a tile.
constexpr unsigned kTileElementwiseBenefit = 100;

struct ElementwiseOnTiles : ConversionPattern {
  ElementwiseOnTiles(TileTypeConverter &converter, MLIRContext *context)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), kTileElementwiseBenefit, context),
        tileConverter(converter) {}

  LogicalResult matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                                ConversionPatternRewriter &rewriter) const override {
    if (!llvm::isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
      return rewriter.notifyMatchFailure(op, "not an arith or math op");
    if (llvm::isa<arith::ConstantOp>(op) || op->getNumResults() != 1 || op->getNumRegions())
      return rewriter.notifyMatchFailure(op, "not an elementwise op");
    auto resultType = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!resultType)
      return rewriter.notifyMatchFailure(op, "scalar op");
    Location loc = op->getLoc();
    int64_t regs = tileConverter.getLayout(resultType).regsPerThread();

    SmallVector<SmallVector<Value>> elements;
    for (auto [original, converted] : llvm::zip(op->getOperands(), operands)) {
      if (llvm::isa<RankedTensorType>(original.getType()))
        elements.push_back(unpackTile(rewriter, loc, converted));
      else
        elements.push_back(SmallVector<Value>(regs, converted));
      if (int64_t(elements.back().size()) != regs)
        return rewriter.notifyMatchFailure(op, "operands of different layouts");
    }
    Type scalarType = resultType.getElementType();
    SmallVector<Value> results;
    for (int64_t r = 0; r < regs; ++r) {
      OperationState state(loc, op->getName());
      for (auto &operand : elements)
        state.addOperands(operand[r]);
      state.addTypes(scalarType);
      state.addAttributes(op->getAttrs());
      results.push_back(rewriter.create(state)->getResult(0));
    }
    rewriter.replaceOp(op, packTile(rewriter, loc,
                                    getTypeConverter()->convertType(resultType), results));
    return success();
  }

  const TileTypeConverter &tileConverter;
};

/// Splat constants: every register holds the value.
struct TileConstantLowering : TileOpConversion<arith::ConstantOp> {
  TileConstantLowering(TileTypeConverter &converter)
      : TileOpConversion(converter, kTileElementwiseBenefit) {}

  LogicalResult matchAndRewrite(arith::ConstantOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = llvm::dyn_cast<RankedTensorType>(op.getType());
    if (!type)
      return rewriter.notifyMatchFailure(op, "scalar constant");
    auto splat = llvm::dyn_cast<SplatElementsAttr>(op.getValue());
    if (!splat) // rejected by the pass before the conversion
      return rewriter.notifyMatchFailure(op, "only splat constants are supported on tiles");
    Type element = getTypeConverter()->convertType(type.getElementType());
    Value value = LLVM::ConstantOp::create(rewriter, op.getLoc(), element,
                                           splat.getSplatValue<Attribute>());
    int64_t regs = tileConverter.getLayout(type).regsPerThread();
    rewriter.replaceOp(op, packTile(rewriter, op.getLoc(), getTypeConverter()->convertType(type),
                                    SmallVector<Value>(regs, value)));
    return success();
  }
};
/// f32 `math.tanh` with `afn` -> libdevice's `__nv_fast_tanhf` (one
/// `tanh.approx.f32`); MLIR's libdevice patterns know only the accurate
/// `__nv_tanhf`.
struct ApproxTanhLowering : ConvertOpToLLVMPattern<math::TanhOp> {
  ApproxTanhLowering(TileTypeConverter &converter)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/20) {}

  LogicalResult matchAndRewrite(math::TanhOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!op.getType().isF32() ||
        !arith::bitEnumContainsAll(op.getFastmath(), arith::FastMathFlags::afn))
      return rewriter.notifyMatchFailure(op, "not an approximate f32 tanh");
    auto module = op->getParentOfType<ModuleOp>();
    constexpr StringLiteral name = "__nv_fast_tanhf";
    Type f32 = rewriter.getF32Type();
    auto func = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
    if (!func) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      func = LLVM::LLVMFuncOp::create(rewriter, op.getLoc(), name,
                                      LLVM::LLVMFunctionType::get(f32, {f32}));
    }
    rewriter.replaceOpWithNewOp<LLVM::CallOp>(op, func, ValueRange{adaptor.getOperand()});
    return success();
  }
};
} // namespace

void kiln::populateTileElementwiseToNVVMPatterns(TileTypeConverter &converter,
                                                 RewritePatternSet &patterns) {
  patterns.add<ElementwiseOnTiles>(converter, patterns.getContext());
  patterns.add<TileConstantLowering, ApproxTanhLowering>(converter);
}
