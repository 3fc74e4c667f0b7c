//===- TileToNVVM.cpp - tile dialect to LLVM + NVVM -------------------------===//
//
// The pass, the type converter, the helpers every pattern shares, and the
// kernel (func.func -> llvm.func) patterns.
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Conversion/TileToNVVM.h"
#include "kiln/Dialect/Tile/Analysis/AxisInfo.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/MathExtras.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTTILETONVVM
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Type converter and helpers
//===----------------------------------------------------------------------===//

TileTypeConverter::TileTypeConverter(MLIRContext *context, int64_t threadsPerBlock,
                                     int64_t elemsPerThread)
    : LLVMTypeConverter(context), threadsPerBlock(threadsPerBlock),
      elemsPerThread(elemsPerThread) {
  addConversion([context](tile::PtrType) -> Type {
    return LLVM::LLVMPointerType::get(context, /*addressSpace=*/1);
  });
  // A TMA ring is the address of its shared memory.
  addConversion([context](tile::RingType) -> Type {
    return LLVM::LLVMPointerType::get(context, /*addressSpace=*/3);
  });
  // So is an mbarrier array.
  addConversion([context](tile::MBarriersType) -> Type {
    return LLVM::LLVMPointerType::get(context, /*addressSpace=*/3);
  });
  // A Tensor Memory accumulator is its 32-bit TMEM address.
  addConversion([context](tile::TMemType) -> Type {
    return LLVM::LLVMPointerType::get(context, /*addressSpace=*/6);
  });
  // A descriptor parameter is the address of the by-value CUtensorMap.
  addConversion([context](tile::TensorDescType) -> Type {
    return LLVM::LLVMPointerType::get(context);
  });
  addConversion([this, context](RankedTensorType type) -> std::optional<Type> {
    Type element = convertType(type.getElementType());
    if (!element)
      return std::nullopt;
    int64_t regs = getRegsPerThread(type);
    return LLVM::LLVMStructType::getLiteral(context, SmallVector<Type>(regs, element));
  });
}

std::optional<tile::MmaLayout> TileTypeConverter::getMmaLayout(RankedTensorType type) const {
  auto mma = llvm::dyn_cast_if_present<tile::MmaEncodingAttr>(type.getEncoding());
  if (!mma)
    return std::nullopt;
  return tile::MmaLayout{type.getDimSize(0), type.getDimSize(1), mma.getNumWarps(),
                         mma.getVersion()};
}

int64_t TileTypeConverter::getRegsPerThread(RankedTensorType type) const {
  if (std::optional<tile::MmaLayout> mma = getMmaLayout(type))
    return mma->regsPerThread();
  return getLayout(type).regsPerThread();
}

SmallVector<Value> kiln::unpackTile(OpBuilder &b, Location loc, Value value) {
  auto structType = llvm::dyn_cast<LLVM::LLVMStructType>(value.getType());
  if (!structType)
    return {value};
  SmallVector<Value> elements;
  for (int64_t i = 0, e = structType.getBody().size(); i < e; ++i)
    elements.push_back(LLVM::ExtractValueOp::create(b, loc, value, ArrayRef<int64_t>{i}));
  return elements;
}

Value kiln::packTile(OpBuilder &b, Location loc, Type type, ValueRange values) {
  if (!llvm::isa<LLVM::LLVMStructType>(type)) {
    assert(values.size() == 1 && "a scalar packs one value");
    return values.front();
  }
  Value result = LLVM::PoisonOp::create(b, loc, type);
  for (auto [i, value] : llvm::enumerate(values))
    result = LLVM::InsertValueOp::create(b, loc, result, value, ArrayRef<int64_t>{int64_t(i)});
  return result;
}

VectorAccess::VectorAccess(MLIRContext *context, Type element, int64_t requested)
    : element(element) {
  int64_t bytes = std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
  vec = element.isInteger(1) ? 1 : requested;
  int64_t total = vec * bytes;
  alignment = total;
  valueType = vec == 1 ? element : VectorType::get({vec}, element);
  if (vec == 1)
    accessType = element;
  else if (total % 4 == 0)
    accessType = total == 4 ? Type(IntegerType::get(context, 32))
                            : Type(VectorType::get({total / 4}, IntegerType::get(context, 32)));
  else
    accessType = IntegerType::get(context, total * 8);
}

SmallVector<Value> VectorAccess::split(OpBuilder &b, Location loc, Value loaded) const {
  if (vec == 1)
    return {loaded};
  Value vector = LLVM::BitcastOp::create(b, loc, valueType, loaded);
  SmallVector<Value> elements;
  for (int64_t i = 0; i < vec; ++i)
    elements.push_back(
        LLVM::ExtractElementOp::create(b, loc, vector, createI32Constant(b, loc, i)));
  return elements;
}

/// The 16-bit value whose byte `index` `element` is (an extractelement of a
/// bitcast i16 -> vector<2xi8>, as f8 conversions produce two at a time).
static Value byteOf16Bits(Value element, int64_t index) {
  // Through unpackTile's extractvalue of packTile's insertvalue chain.
  if (auto unpacked = element.getDefiningOp<LLVM::ExtractValueOp>()) {
    auto insert = unpacked.getContainer().getDefiningOp<LLVM::InsertValueOp>();
    while (insert && insert.getPosition() != unpacked.getPosition())
      insert = insert.getContainer().getDefiningOp<LLVM::InsertValueOp>();
    if (insert)
      element = insert.getValue();
  }
  auto extract = element.getDefiningOp<LLVM::ExtractElementOp>();
  APInt position;
  if (!extract || !matchPattern(extract.getPosition(), m_ConstantInt(&position)) ||
      position.getSExtValue() != index)
    return {};
  auto bitcast = extract.getVector().getDefiningOp<LLVM::BitcastOp>();
  if (!bitcast || !bitcast.getArg().getType().isInteger(16))
    return {};
  return bitcast.getArg();
}

Value VectorAccess::join(OpBuilder &b, Location loc, ArrayRef<Value> elements) const {
  if (vec == 1)
    return elements.front();
  // Bytes that come in pairs from one 16-bit value join as 16-bit lanes (LLVM
  // would otherwise split and repack them byte by byte).
  if (element.isInteger(8) && vec % 2 == 0) {
    SmallVector<Value> halves;
    for (int64_t i = 0; i < vec; i += 2) {
      Value lo = byteOf16Bits(elements[i], 0);
      if (!lo || byteOf16Bits(elements[i + 1], 1) != lo)
        break;
      halves.push_back(lo);
    }
    if (int64_t(halves.size()) * 2 == vec) {
      Value vector = LLVM::PoisonOp::create(b, loc, VectorType::get({vec / 2}, b.getI16Type()));
      for (auto [i, half] : llvm::enumerate(halves))
        vector = LLVM::InsertElementOp::create(b, loc, vector, half,
                                               createI32Constant(b, loc, int64_t(i)));
      return LLVM::BitcastOp::create(b, loc, accessType, vector);
    }
  }
  Value vector = LLVM::PoisonOp::create(b, loc, valueType);
  for (int64_t i = 0; i < vec; ++i)
    vector = LLVM::InsertElementOp::create(b, loc, vector, elements[i],
                                           createI32Constant(b, loc, i));
  return LLVM::BitcastOp::create(b, loc, accessType, vector);
}

Value kiln::createI32Constant(OpBuilder &b, Location loc, int64_t value) {
  return LLVM::ConstantOp::create(b, loc, b.getI32Type(), b.getI32IntegerAttr(value));
}

Value kiln::createInlinePTX(OpBuilder &b, Location loc, Type result, ValueRange operands,
                            StringRef ptx, StringRef constraints, bool sideEffects,
                            StringRef feature) {
  auto op = LLVM::InlineAsmOp::create(
      b, loc, result ? TypeRange(result) : TypeRange(), operands, b.getStringAttr(ptx),
      b.getStringAttr(constraints), sideEffects ? b.getUnitAttr() : UnitAttr(), UnitAttr(),
      LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
  if (!feature.empty())
    markFeature(op, feature);
  return result ? op.getResult(0) : Value();
}

Value kiln::inlineCombine(OpBuilder &b, Region &combine, Value lhs, Value rhs) {
  return inlineCombine(b, combine, ValueRange(lhs), ValueRange(rhs)).front();
}

SmallVector<Value> kiln::inlineCombine(OpBuilder &b, Region &combine, ValueRange lhs,
                                       ValueRange rhs) {
  Block &block = combine.front();
  IRMapping mapping;
  mapping.map(block.getArguments().take_front(lhs.size()), lhs);
  mapping.map(block.getArguments().drop_front(lhs.size()), rhs);
  for (Operation &inner : block.without_terminator())
    b.clone(inner, mapping);
  return llvm::map_to_vector(block.getTerminator()->getOperands(),
                             [&](Value v) { return mapping.lookupOrDefault(v); });
}

std::pair<int64_t, int64_t> kiln::axisElementBits(RankedTensorType type, int64_t axis) {
  int64_t lo = 0;
  for (int64_t d = type.getRank() - 1; d > axis; --d)
    lo += llvm::Log2_64(type.getDimSize(d));
  return {lo, lo + llvm::Log2_64(type.getDimSize(axis))};
}

Value kiln::createThreadId(OpBuilder &b, Location loc) {
  return NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
}

Value kiln::createIssuer(OpBuilder &b, Location loc) {
  Value elected = NVVM::ElectSyncOp::create(b, loc, b.getI1Type(), Value());
  Value warp0 = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, createThreadId(b, loc),
                                     createI32Constant(b, loc, 32));
  return LLVM::AndOp::create(b, loc, elected, warp0);
}

/// The shuffle with the lane operand made by `makeLaneArg` (after the member
/// mask, so that a constant lane argument sits between the mask and the clamp).
static Value createShuffleImpl(OpBuilder &b, Location loc, Value value,
                               llvm::function_ref<Value()> makeLaneArg, NVVM::ShflKind kind,
                               int64_t clamp) {
  Type type = value.getType();
  unsigned bits = type.getIntOrFloatBitWidth();
  Type i32 = b.getI32Type();
  Value mask = createI32Constant(b, loc, -1);
  Value laneArg = makeLaneArg();
  Value clampValue = createI32Constant(b, loc, clamp);
  auto shfl = [&](Value word) {
    return NVVM::ShflOp::create(b, loc, i32, mask, word, laneArg, clampValue,
                                NVVM::ShflKindAttr::get(b.getContext(), kind), UnitAttr())
        .getResult();
  };
  Type intType = b.getIntegerType(bits);
  Value asInt = type.isInteger() ? value : LLVM::BitcastOp::create(b, loc, intType, value);
  Value result;
  if (bits <= 32) {
    Value word = bits == 32 ? asInt : LLVM::ZExtOp::create(b, loc, i32, asInt);
    Value shuffled = shfl(word);
    result = bits == 32 ? shuffled : LLVM::TruncOp::create(b, loc, intType, shuffled);
  } else {
    Type i64 = b.getI64Type();
    auto c32 = [&] { return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(32)); };
    Value lo = LLVM::TruncOp::create(b, loc, i32, asInt);
    Value hi = LLVM::TruncOp::create(b, loc, i32, LLVM::LShrOp::create(b, loc, asInt, c32()));
    Value loS = LLVM::ZExtOp::create(b, loc, i64, shfl(lo));
    Value hiS = LLVM::ZExtOp::create(b, loc, i64, shfl(hi));
    result = LLVM::OrOp::create(b, loc, loS, LLVM::ShlOp::create(b, loc, hiS, c32()));
  }
  return type.isInteger() ? result : LLVM::BitcastOp::create(b, loc, type, result);
}

Value kiln::createShuffle(OpBuilder &b, Location loc, Value value, Value laneArg,
                          NVVM::ShflKind kind, int64_t clamp) {
  return createShuffleImpl(b, loc, value, [&] { return laneArg; }, kind, clamp);
}

Value kiln::createShuffle(OpBuilder &b, Location loc, Value value, int64_t laneArg,
                          NVVM::ShflKind kind, int64_t clamp) {
  return createShuffleImpl(
      b, loc, value, [&] { return createI32Constant(b, loc, laneArg); }, kind, clamp);
}

ElementIndices kiln::getElementIndices(OpBuilder &b, Location loc,
                                       const tile::BlockedLayout &layout) {
  ElementIndices indices;
  Value tid = createThreadId(b, loc);
  if (layout.isReplicated())
    tid = LLVM::AndOp::create(b, loc, tid, createI32Constant(b, loc, layout.runs() - 1));
  indices.base = LLVM::MulOp::create(b, loc, tid, createI32Constant(b, loc, layout.vec));
  for (int64_t reg = 0, e = layout.regsPerThread(); reg < e; ++reg)
    indices.offsets.push_back(layout.elementOf(0, reg));
  return indices;
}

ElementIndices kiln::getElementIndices(OpBuilder &b, Location loc,
                                       const TileTypeConverter &converter,
                                       RankedTensorType type) {
  std::optional<tile::MmaLayout> mma = converter.getMmaLayout(type);
  if (!mma)
    return getElementIndices(b, loc, converter.getLayout(type));
  // MmaLayout::baseOf with the thread id in registers.
  auto c = [&](int64_t v) { return createI32Constant(b, loc, v); };
  Value tid = createThreadId(b, loc);
  ElementIndices indices;
  for (int64_t reg = 0, e = mma->regsPerThread(); reg < e; ++reg)
    indices.offsets.push_back(mma->offsetOf(reg));
  if (mma->version == 5) {
    indices.base = LLVM::AddOp::create(
        b, loc, LLVM::MulOp::create(b, loc, LLVM::AndOp::create(b, loc, tid, c(127)), c(mma->n)),
        LLVM::MulOp::create(b, loc, LLVM::LShrOp::create(b, loc, tid, c(7)),
                            c(mma->columnsPerThread())));
    return indices;
  }
  Value lane = LLVM::AndOp::create(b, loc, tid, c(31));
  Value row = LLVM::AddOp::create(
      b, loc,
      LLVM::AddOp::create(
          b, loc, LLVM::MulOp::create(b, loc, LLVM::LShrOp::create(b, loc, tid, c(7)), c(64)),
          LLVM::MulOp::create(
              b, loc, LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, tid, c(5)), c(3)),
              c(16))),
      LLVM::LShrOp::create(b, loc, lane, c(2)));
  indices.base = LLVM::AddOp::create(
      b, loc, LLVM::MulOp::create(b, loc, row, c(mma->n)),
      LLVM::ShlOp::create(b, loc, LLVM::AndOp::create(b, loc, lane, c(3)), c(1)));
  return indices;
}

int64_t kiln::getAccessWidth(const TileTypeConverter &converter, RankedTensorType type) {
  int64_t bytes = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  std::optional<tile::MmaLayout> mma = converter.getMmaLayout(type);
  int64_t layoutRun = mma ? mma->run() : converter.getLayout(type).vec;
  return std::min({layoutRun, type.getShape().back(), 16 / bytes});
}

/// The member a register holds: through `extractvalue` of a struct built by
/// packTile (a chain of `insertvalue`), the inserted value.
static Value resolveRegister(Value value) {
  auto extract = value.getDefiningOp<LLVM::ExtractValueOp>();
  if (!extract || extract.getPosition().size() != 1)
    return value;
  int64_t position = extract.getPosition()[0];
  for (auto insert = extract.getContainer().getDefiningOp<LLVM::InsertValueOp>(); insert;
       insert = insert.getContainer().getDefiningOp<LLVM::InsertValueOp>())
    if (insert.getPosition() == ArrayRef<int64_t>{position})
      return insert.getValue();
  return value;
}

std::optional<SmallVector<int64_t>>
kiln::findRegisterSources(int64_t threads, int64_t toRegs,
                          llvm::function_ref<int64_t(int64_t, int64_t)> toElement,
                          ArrayRef<int64_t> fromRegs,
                          llvm::function_ref<int64_t(int64_t, int64_t)> fromElement) {
  SmallVector<int64_t> sources(toRegs, -1);
  llvm::SmallDenseMap<int64_t, int64_t> regOfElement;
  for (int64_t t = 0; t < threads; ++t) {
    regOfElement.clear();
    for (int64_t reg : fromRegs)
      regOfElement.try_emplace(fromElement(t, reg), reg);
    for (int64_t r = 0; r < toRegs; ++r) {
      auto it = regOfElement.find(toElement(t, r));
      if (it == regOfElement.end())
        return std::nullopt;
      if (t == 0)
        sources[r] = it->second;
      else if (sources[r] != it->second && fromElement(t, sources[r]) != toElement(t, r))
        return std::nullopt; // the same register must serve every thread
    }
  }
  return sources;
}

Value kiln::findEarlierRegister(ArrayRef<SmallVector<Value>> operands, int64_t r,
                                ArrayRef<Value> results) {
  for (int64_t earlier = 0; earlier < r; ++earlier)
    if (llvm::all_of(operands, [&](const SmallVector<Value> &values) {
          return resolveRegister(values[earlier]) == resolveRegister(values[r]);
        }))
      return results[earlier];
  return Value();
}

Value kiln::createIsOwner(OpBuilder &b, Location loc, const tile::BlockedLayout &layout) {
  if (!layout.isReplicated())
    return LLVM::ConstantOp::create(b, loc, b.getI1Type(), b.getBoolAttr(true));
  return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, createThreadId(b, loc),
                              createI32Constant(b, loc, layout.runs()));
}

Value kiln::createSharedBuffer(OpBuilder &b, Operation *user, StringRef prefix, Type element,
                               int64_t count, unsigned alignment) {
  Location loc = user->getLoc();
  auto module = user->getParentOfType<ModuleOp>();
  std::string name;
  for (unsigned i = 0;; ++i) {
    name = (prefix + "_" + Twine(i)).str();
    if (!SymbolTable::lookupSymbolIn(module, name))
      break;
  }
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    LLVM::GlobalOp::create(b, loc, LLVM::LLVMArrayType::get(element, count),
                           /*isConstant=*/false, LLVM::Linkage::Internal, name, Attribute(),
                           alignment, /*addrSpace=*/3);
  }
  return LLVM::AddressOfOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), name);
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

namespace {
/// func.func with tile.kernel -> llvm.func with nvvm.kernel,
/// nvvm.reqntid = threads per block, for tile.cluster_dims nvvm.cluster_dim
/// (.explicitcluster + .reqnctapercluster), for tile.maxnreg nvvm.maxnreg
/// (.maxnreg) and for tile.min_programs_per_sm nvvm.minctasm (.minnctapersm).
struct KernelFuncLowering : TileOpConversion<func::FuncOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(func::FuncOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!op->hasAttr(tile::TileDialect::getKernelAttrName()))
      return rewriter.notifyMatchFailure(op, "not a tile kernel");
    FunctionType type = op.getFunctionType();
    TypeConverter::SignatureConversion signature(type.getNumInputs());
    SmallVector<Type> argTypes;
    for (auto [i, argType] : llvm::enumerate(type.getInputs())) {
      Type converted = getTypeConverter()->convertType(argType);
      if (!converted)
        return rewriter.notifyMatchFailure(op, "unsupported kernel argument type");
      signature.addInputs(i, converted);
      argTypes.push_back(converted);
    }
    auto llvmType =
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(op.getContext()), argTypes);
    auto func = LLVM::LLVMFuncOp::create(rewriter, op.getLoc(), op.getName(), llvmType,
                                         LLVM::Linkage::External, /*dsoLocal=*/false,
                                         LLVM::CConv::PTX_Kernel);
    func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), rewriter.getUnitAttr());
    // A warp-specialized kernel runs its producer warpgroup after the
    // layout's threads: the launch's real thread count.
    int64_t threads = tileConverter.getThreadsPerBlock();
    bool specialized =
        op->walk([](tile::WarpSpecializeOp) { return WalkResult::interrupt(); })
            .wasInterrupted();
    if (specialized)
      threads += kProducerThreads;
    func->setAttr(NVVM::NVVMDialect::getReqntidAttrName(),
                  rewriter.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
    if (auto cluster = op->getAttrOfType<DenseI32ArrayAttr>(
            tile::TileDialect::getClusterDimsAttrName()))
      func->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(), cluster);
    if (auto regs = op->getAttrOfType<IntegerAttr>(tile::TileDialect::getMaxnregAttrName()))
      func->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(), regs);
    // .minnctapersm: ptxas fits the registers to that many blocks an SM.
    if (auto programs = op->getAttrOfType<IntegerAttr>(
            tile::TileDialect::getMinProgramsPerSMAttrName()))
      func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), programs);
    // setmaxnreg moves registers within the pool the program starts with:
    // with .minnctapersm 1 ptxas starts a warp-specialized kernel with all the
    // registers its threads may hold (up to what setmaxnreg asks for); with
    // .reqntid alone it may start with what the code outside needs.
    else if (specialized)
      func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), rewriter.getI32IntegerAttr(1));
    // Descriptors are 128-byte CUtensorMaps passed by value; TMA reads them
    // in place (`__grid_constant__`: the parameter's address, cvta.param).
    for (auto [i, argType] : llvm::enumerate(type.getInputs())) {
      if (!llvm::isa<tile::TensorDescType>(argType))
        continue;
      func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(LLVM::LLVMArrayType::get(rewriter.getI8Type(), 128)));
      func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(), rewriter.getI64IntegerAttr(64));
      func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(), rewriter.getUnitAttr());
    }
    rewriter.inlineRegionBefore(op.getBody(), func.getBody(), func.end());
    if (failed(rewriter.convertRegionTypes(&func.getBody(), *getTypeConverter(), &signature)))
      return rewriter.notifyMatchFailure(op, "cannot convert the kernel's block arguments");
    rewriter.eraseOp(op);
    return success();
  }
};

struct ReturnLowering : ConvertOpToLLVMPattern<func::ReturnOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult matchAndRewrite(func::ReturnOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (op.getNumOperands() != 0)
      return rewriter.notifyMatchFailure(op, "a tile kernel returns nothing");
    rewriter.replaceOpWithNewOp<LLVM::ReturnOp>(op, ValueRange());
    return success();
  }
};
} // namespace

void kiln::populateTileToNVVMConversionPatterns(TileTypeConverter &converter,
                                                RewritePatternSet &patterns) {
  patterns.add<KernelFuncLowering>(converter);
  patterns.add<ReturnLowering>(converter);
  populateTileProgramOpsToNVVMPatterns(converter, patterns);
  populateTileClusterOpsToNVVMPatterns(converter, patterns);
  populateTileShapeOpsToNVVMPatterns(converter, patterns);
  populateTileMemoryOpsToNVVMPatterns(converter, patterns);
  populateTileTensorDescOpsToNVVMPatterns(converter, patterns);
  populateTileDotOpsToNVVMPatterns(converter, patterns);
  populateTileWarpGroupDotOpsToNVVMPatterns(converter, patterns);
  populateTileTcgen05OpsToNVVMPatterns(converter, patterns);
  populateTileWarpSpecializeOpsToNVVMPatterns(converter, patterns);
  populateTileReduceOpsToNVVMPatterns(converter, patterns);
  populateTileScanOpsToNVVMPatterns(converter, patterns);
  populateTileAtomicOpsToNVVMPatterns(converter, patterns);
  populateTileElementwiseToNVVMPatterns(converter, patterns);
  arith::populateArithToLLVMConversionPatterns(converter, patterns);
  // Float math becomes libdevice calls (`__nv_*`, linked at PTX emission; the
  // `afn` forms their fast variants); what libdevice lacks maps to LLVM
  // intrinsics.
  populateLibDeviceConversionPatterns(converter, patterns, /*benefit=*/10);
  populateMathToLLVMConversionPatterns(converter, patterns);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
/// Whether `arch` has the instructions `op` lowers to (wgmma: sm_90a;
/// tcgen05 and Tensor Memory: sm_100a, sm_103a; setmaxnreg: all three);
/// `required` names the archs that do.
bool archSupports(Operation *op, StringRef arch, StringRef &required) {
  if (llvm::isa<tile::WarpGroupDotOp, tile::WarpGroupDotWaitOp>(op)) {
    required = "sm_90a";
    return arch == "sm_90a";
  }
  if (llvm::isa<tile::WarpSpecializeOp>(op)) {
    required = "sm_90a, sm_100a or sm_103a";
    return arch == "sm_90a" || arch == "sm_100a" || arch == "sm_103a";
  }
  if (llvm::isa<tile::Tcgen05DotOp, tile::TMemAllocOp, tile::TMemDeallocOp, tile::TMemLoadOp>(
          op)) {
    required = "sm_100a or sm_103a";
    return arch == "sm_100a" || arch == "sm_103a";
  }
  return true;
}

/// cp.async.bulk needs a 16-byte aligned source and a multiple of 16 bytes:
/// every bulk copy's pointer (tile.bulk_load, tile.ring_issue from a pointer)
/// must be proved 16-byte aligned by the axis analysis (seeded by the kernel's
/// `tile.divisibility`), and its runtime count, if any, a multiple of
/// 16 / sizeof(T) elements.
LogicalResult checkBulkLoadAlignment(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    std::optional<tile::AxisInfoAnalysis> analysis;
    auto check = [&](Operation *op, Value ptr, Value count, RankedTensorType tile) {
      if (!analysis)
        analysis.emplace(func);
      int64_t divisibility = analysis->get(ptr).divisibility;
      if (divisibility % 16 != 0) {
        op->emitOpError() << "needs a 16-byte aligned pointer for cp.async.bulk, but it is only "
                             "known to be "
                          << divisibility
                          << "-byte aligned (give its kernel argument tile.divisibility = 16 "
                             "and offset it by multiples of 16 bytes)";
        return WalkResult::interrupt();
      }
      if (!count)
        return WalkResult::advance();
      int64_t elementBytes = tile.getElementTypeBitWidth() / 8;
      int64_t countDivisibility = analysis->get(count).divisibility;
      if ((countDivisibility * elementBytes) % 16 != 0) {
        op->emitOpError() << "needs a count of whole 16-byte units for cp.async.bulk (a multiple "
                             "of "
                          << 16 / elementBytes << " " << tile.getElementType()
                          << " elements), but it is only known to be a multiple of "
                          << countDivisibility
                          << " (give its kernel argument tile.divisibility = 16 or round it)";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    };
    WalkResult misaligned = func.walk([&](Operation *op) {
      if (auto load = llvm::dyn_cast<tile::BulkLoadOp>(op))
        return check(op, load.getPtr(), load.getCount(), load.getType());
      if (auto issue = llvm::dyn_cast<tile::RingIssueOp>(op); issue && issue.isBulk())
        return check(op, issue.getSrc(), issue.getCount(),
                     issue.getRing().getType().getBlockType());
      return WalkResult::advance();
    });
    if (misaligned.wasInterrupted())
      return failure();
  }
  return success();
}

struct ConvertTileToNVVMPass : kiln::impl::ConvertTileToNVVMBase<ConvertTileToNVVMPass> {
  using ConvertTileToNVVMBase::ConvertTileToNVVMBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();

    if (!arch.empty()) {
      WalkResult wrongArch = module.walk([&](Operation *op) {
        StringRef required;
        if (archSupports(op, arch, required))
          return WalkResult::advance();
        op->emitOpError() << "needs " << required << ", not " << arch;
        return WalkResult::interrupt();
      });
      if (wrongArch.wasInterrupted())
        return signalPassFailure();
    }

    // The one layout of this module's kernels.
    std::optional<std::pair<int64_t, int64_t>> layout;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func->hasAttr(tile::TileDialect::getKernelAttrName()))
        continue;
      auto threads =
          func->getAttrOfType<IntegerAttr>(tile::TileDialect::getThreadsPerBlockAttrName());
      auto elems =
          func->getAttrOfType<IntegerAttr>(tile::TileDialect::getElemsPerThreadAttrName());
      if (!threads || !elems) {
        func.emitError() << "kernel has no layout: run kiln-tile-assign-layout first";
        return signalPassFailure();
      }
      std::pair<int64_t, int64_t> current{threads.getInt(), elems.getInt()};
      if (layout && *layout != current) {
        func.emitError() << "all kernels of a module must share one layout; this one has "
                         << current.first << " threads x " << current.second
                         << " elements, an earlier one " << layout->first << " x "
                         << layout->second;
        return signalPassFailure();
      }
      layout = current;
    }
    if (!layout)
      layout = {128, 1};

    // Checked up front: a pattern that fails lets arith's own constant
    // lowering build an invalid llvm.mlir.constant of a struct instead.
    WalkResult nonSplat = module.walk([](arith::ConstantOp op) {
      if (llvm::isa<RankedTensorType>(op.getType()) &&
          !llvm::isa<SplatElementsAttr>(op.getValue())) {
        op.emitOpError() << "only splat constants are supported on tiles";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (nonSplat.wasInterrupted())
      return signalPassFailure();

    if (failed(checkBulkLoadAlignment(module)))
      return signalPassFailure();

    // setmaxnreg works on whole warpgroups: the consumers must be some.
    // The split's register counts assume one program an SM with the
    // registers its threads allow: no cap of the kernel's own.
    WalkResult badSplit = module.walk([&](tile::WarpSpecializeOp op) {
      if (layout->first % 128 != 0 || layout->first + kProducerThreads > 1024) {
        op.emitOpError() << "expected whole warpgroups of consumers (num_warps a multiple of 4, "
                            "at most 28), got "
                         << layout->first / 32 << " warps";
        return WalkResult::interrupt();
      }
      auto func = op->getParentOfType<func::FuncOp>();
      auto programs =
          func->getAttrOfType<IntegerAttr>(tile::TileDialect::getMinProgramsPerSMAttrName());
      if (func->hasAttr(tile::TileDialect::getMaxnregAttrName()) ||
          (programs && programs.getInt() > 1)) {
        op.emitOpError() << "expected no maxnreg and no min_programs_per_sm above 1 on a "
                            "warp-specialized kernel: setmaxnreg sets each warpgroup's registers "
                            "from all that one program's threads may hold";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (badSplit.wasInterrupted())
      return signalPassFailure();

    TileTypeConverter converter(context, layout->first, layout->second);
    WalkResult tooLarge = module.walk([&](tile::DotOp op) {
      return failed(checkDotSharedMemory(op, converter)) ? WalkResult::interrupt()
                                                         : WalkResult::advance();
    });
    if (tooLarge.wasInterrupted())
      return signalPassFailure();
    deferClusterWaits(module);
    RewritePatternSet patterns(context);
    populateTileToNVVMConversionPatterns(converter, patterns);

    LLVMConversionTarget target(*context);
    target.addLegalDialect<NVVM::NVVMDialect>();
    // scf.for/if/while (the kernel's loops and branches, and the scf.if of masked
    // accesses) stay scf ops over converted types; convert-scf-to-cf takes them.
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns, target);
    target.addIllegalDialect<tile::TileDialect, arith::ArithDialect, math::MathDialect,
                             func::FuncDialect>();
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    replaceConsumerBarriers(module);
    recordKernelFacts(module);
  }
};
} // namespace
