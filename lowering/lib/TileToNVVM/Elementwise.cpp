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
    int64_t regs = tileConverter.getRegsPerThread(resultType);

    SmallVector<SmallVector<Value>> elements;
    for (auto [original, converted] : llvm::zip(op->getOperands(), operands)) {
      if (llvm::isa<RankedTensorType>(original.getType()))
        elements.push_back(unpackTile(rewriter, loc, converted));
      else
        elements.push_back(SmallVector<Value>(regs, converted));
      if (int64_t(elements.back().size()) != regs)
        return rewriter.notifyMatchFailure(op, "operands of different layouts");
    }
    // The scalar ops keep the original element types; where the LLVM type
    // differs (f8 is i8 in LLVM), casts bridge until their own patterns run.
    auto bridge = [&](Value value, Type type) -> Value {
      if (value.getType() == type)
        return value;
      return UnrealizedConversionCastOp::create(rewriter, loc, type, value).getResult(0);
    };
    Type scalarType = resultType.getElementType();
    Type llvmScalarType = getTypeConverter()->convertType(scalarType);
    SmallVector<Value> results;
    for (int64_t r = 0; r < regs; ++r) {
      // Registers with the same operands (a value constant along a run) share
      // one computation.
      if (Value same = findEarlierRegister(elements, r, results)) {
        results.push_back(same);
        continue;
      }
      OperationState state(loc, op->getName());
      for (auto [original, operand] : llvm::zip(op->getOperands(), elements))
        state.addOperands(bridge(operand[r], getElementTypeOrSelf(original.getType())));
      state.addTypes(scalarType);
      state.addAttributes(op->getAttrs());
      results.push_back(bridge(rewriter.create(state)->getResult(0), llvmScalarType));
    }
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(resultType), results));
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
    Value value =
        LLVM::ConstantOp::create(rewriter, op.getLoc(), element, splat.getSplatValue<Attribute>());
    int64_t regs = tileConverter.getRegsPerThread(type);
    rewriter.replaceOp(op, packTile(rewriter, op.getLoc(), getTypeConverter()->convertType(type),
                                    SmallVector<Value>(regs, value)));
    return success();
  }
};
/// Whether the math op `op` is on f32 and allows approximate functions (`afn`).
template <typename MathOp>
bool isApproximateF32(MathOp op) {
  return op.getType().isF32() &&
         arith::bitEnumContainsAll(op.getFastmath(), arith::FastMathFlags::afn);
}

/// f32 `math.tanh` with `afn` -> libdevice's `__nv_fast_tanhf` (one
/// `tanh.approx.f32`); MLIR's libdevice patterns know only the accurate
/// `__nv_tanhf`.
struct ApproxTanhLowering : ConvertOpToLLVMPattern<math::TanhOp> {
  ApproxTanhLowering(TileTypeConverter &converter)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/20) {}

  LogicalResult matchAndRewrite(math::TanhOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!isApproximateF32(op))
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
/// f32 `math.exp2` with `afn` -> `ex2.approx.ftz.f32`: one MUFU.EX2, where
/// libdevice's `__nv_exp2f` (`ex2.approx.f32`, subnormal results kept) costs
/// a compare and two multiplies around it (the softmax of attention runs one
/// a score). Subnormal results flush to zero, as CUDA's fast-math `exp2f`.
struct ApproxExp2Lowering : ConvertOpToLLVMPattern<math::Exp2Op> {
  ApproxExp2Lowering(TileTypeConverter &converter)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/20) {}

  LogicalResult matchAndRewrite(math::Exp2Op op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!isApproximateF32(op))
      return rewriter.notifyMatchFailure(op, "not an approximate f32 exp2");
    rewriter.replaceOp(op, createInlinePTX(rewriter, op.getLoc(), rewriter.getF32Type(),
                                           ValueRange{adaptor.getOperand()},
                                           "ex2.approx.ftz.f32 $0, $1;", "=f,f",
                                           /*sideEffects=*/false));
    return success();
  }
};
bool isFP8(Type type) { return llvm::isa<Float8E4M3FNType, Float8E5M2Type>(type); }

/// Scalar float -> f8 (e4m3 / e5m2), round to nearest even, saturating to the
/// finite range (cvt.rn.satfinite.e4m3x2.f32; the value in the low byte).
struct TruncFToFP8Lowering : ConvertOpToLLVMPattern<arith::TruncFOp> {
  TruncFToFP8Lowering(TileTypeConverter &converter)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/20) {}

  LogicalResult matchAndRewrite(arith::TruncFOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Type target = op.getType();
    if (!isFP8(target))
      return rewriter.notifyMatchFailure(op, "not a conversion to f8");
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    Value x = adaptor.getIn();
    if (!x.getType().isF32())
      x = LLVM::FPExtOp::create(rewriter, loc, f32, x);
    Value zero = LLVM::ConstantOp::create(rewriter, loc, f32, rewriter.getF32FloatAttr(0.0f));
    Value packed = NVVM::ConvertF32x2ToF8x2Op::create(
        rewriter, loc, rewriter.getI16Type(), zero, x,
        NVVM::FPRoundingModeAttr::get(getContext(), NVVM::FPRoundingMode::RN),
        NVVM::SaturationModeAttr::get(getContext(), NVVM::SaturationMode::SATFINITE),
        rewriter.getBoolAttr(false), TypeAttr::get(target));
    rewriter.replaceOpWithNewOp<LLVM::TruncOp>(op, rewriter.getI8Type(), packed);
    return success();
  }
};

/// A tile's f32 -> f8 (e4m3 / e5m2) two registers at a time: one
/// cvt.rn.satfinite.e4m3x2.f32 gives both bytes (register r in the low byte),
/// where the scalar pattern would convert each register with a zero partner.
struct TileTruncFToFP8Pairs : TileOpConversion<arith::TruncFOp> {
  TileTruncFToFP8Pairs(TileTypeConverter &converter)
      : TileOpConversion(converter, kTileElementwiseBenefit + 1) {}

  LogicalResult matchAndRewrite(arith::TruncFOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto resultType = llvm::dyn_cast<RankedTensorType>(op.getType());
    auto srcType = llvm::dyn_cast<RankedTensorType>(op.getIn().getType());
    if (!resultType || !isFP8(resultType.getElementType()) || !srcType ||
        !srcType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not a tile conversion from f32 to f8");
    Location loc = op.getLoc();
    SmallVector<Value> x = unpackTile(rewriter, loc, adaptor.getIn());
    if (x.size() % 2)
      return rewriter.notifyMatchFailure(op, "odd number of registers");
    auto bytePair = VectorType::get({2}, rewriter.getI8Type());
    SmallVector<Value> results;
    for (size_t r = 0; r < x.size(); r += 2) {
      Value packed = NVVM::ConvertF32x2ToF8x2Op::create(
          rewriter, loc, rewriter.getI16Type(), x[r + 1], x[r],
          NVVM::FPRoundingModeAttr::get(getContext(), NVVM::FPRoundingMode::RN),
          NVVM::SaturationModeAttr::get(getContext(), NVVM::SaturationMode::SATFINITE),
          rewriter.getBoolAttr(false), TypeAttr::get(resultType.getElementType()));
      Value bytes = LLVM::BitcastOp::create(rewriter, loc, bytePair, packed);
      for (int64_t i = 0; i < 2; ++i)
        results.push_back(LLVM::ExtractElementOp::create(rewriter, loc, bytes,
                                                         createI32Constant(rewriter, loc, i)));
    }
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(resultType), results));
    return success();
  }
};

/// Scalar f8 -> wider float: exact through cvt.rn.f16x2.e4m3x2 (then f16 ->
/// the target; bf16 through f32, which holds the value exactly).
struct ExtFFromFP8Lowering : ConvertOpToLLVMPattern<arith::ExtFOp> {
  ExtFFromFP8Lowering(TileTypeConverter &converter)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/20) {}

  LogicalResult matchAndRewrite(arith::ExtFOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Type source = op.getIn().getType();
    if (!isFP8(source))
      return rewriter.notifyMatchFailure(op, "not a conversion from f8");
    Location loc = op.getLoc();
    Type i8 = rewriter.getI8Type();
    auto pairType = VectorType::get({2}, i8);
    Value pair = LLVM::ZeroOp::create(rewriter, loc, pairType);
    pair = LLVM::InsertElementOp::create(rewriter, loc, pair, adaptor.getIn(),
                                         createI32Constant(rewriter, loc, 0));
    auto halfPair = VectorType::get({2}, rewriter.getF16Type());
    Value halves = NVVM::ConvertF8x2ToF16x2Op::create(
        rewriter, loc, halfPair, pair, rewriter.getBoolAttr(false), TypeAttr::get(source));
    Value half =
        LLVM::ExtractElementOp::create(rewriter, loc, halves, createI32Constant(rewriter, loc, 0));
    Type target = getTypeConverter()->convertType(op.getType());
    if (target.isF16())
      rewriter.replaceOp(op, half);
    else if (target.isBF16())
      rewriter.replaceOpWithNewOp<LLVM::FPTruncOp>(
          op, target, LLVM::FPExtOp::create(rewriter, loc, rewriter.getF32Type(), half));
    else
      rewriter.replaceOpWithNewOp<LLVM::FPExtOp>(op, target, half);
    return success();
  }
};
} // namespace

void kiln::populateTileElementwiseToNVVMPatterns(TileTypeConverter &converter,
                                                 RewritePatternSet &patterns) {
  patterns.add<ElementwiseOnTiles>(converter, patterns.getContext());
  patterns.add<TileConstantLowering, ApproxTanhLowering, ApproxExp2Lowering, TruncFToFP8Lowering,
               TileTruncFToFP8Pairs, ExtFFromFP8Lowering>(converter);
}
