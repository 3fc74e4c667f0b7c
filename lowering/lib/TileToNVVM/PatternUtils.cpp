//===- PatternUtils.cpp - shared code of the tile -> NVVM patterns --------===//
//
// The helpers PatternUtils.h declares: tiles as registers, inline PTX,
// shuffles, element indices, vector accesses, shared buffers, rings and
// mbarriers, the warp-specialized register split.
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "kiln/Conversion/TileToNVVM.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

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
    vector =
        LLVM::InsertElementOp::create(b, loc, vector, elements[i], createI32Constant(b, loc, i));
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
                                       const TileTypeConverter &converter, RankedTensorType type) {
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
  if (mma->version == 2) {
    // row = (16 wM + lane / 4) mod m, col = wN * Nw + 2 (lane mod 4), with
    // warp = tid / 32 = wN * WM + wM.
    Value warp = LLVM::LShrOp::create(b, loc, tid, c(5));
    Value wM = LLVM::AndOp::create(b, loc, warp, c(mma->warpsM() - 1));
    Value row =
        LLVM::AndOp::create(b, loc,
                            LLVM::AddOp::create(b, loc, LLVM::ShlOp::create(b, loc, wM, c(4)),
                                                LLVM::LShrOp::create(b, loc, lane, c(2))),
                            c(mma->m - 1));
    if (mma->n == 1) {
      indices.base = row;
      return indices;
    }
    Value wN = LLVM::AndOp::create(
        b, loc, LLVM::LShrOp::create(b, loc, warp, c(llvm::Log2_64(mma->warpsM()))),
        c(mma->warpsN - 1));
    indices.base = LLVM::AddOp::create(
        b, loc,
        LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, row, c(mma->n)),
                            LLVM::MulOp::create(b, loc, wN, c(mma->columnsPerWarp()))),
        LLVM::ShlOp::create(b, loc, LLVM::AndOp::create(b, loc, lane, c(3)), c(1)));
    return indices;
  }
  // Version 3: warpgroup g = tid / 128 at (gM, gN) = (g mod GM, g / GM);
  // row = 64 gM + 16 (tid / 32 mod 4) + lane / 4, col = gN * Ng + 2 (lane mod 4)
  // (gM = g and gN = 0 where warpsN = 1).
  Value group = LLVM::LShrOp::create(b, loc, tid, c(7));
  Value slab =
      mma->warpsN > 1 ? LLVM::AndOp::create(b, loc, group, c(mma->warpgroupsM() - 1)) : group;
  Value row = LLVM::AddOp::create(
      b, loc,
      LLVM::AddOp::create(
          b, loc, LLVM::MulOp::create(b, loc, slab, c(64)),
          LLVM::MulOp::create(
              b, loc, LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, tid, c(5)), c(3)),
              c(16))),
      LLVM::LShrOp::create(b, loc, lane, c(2)));
  if (mma->n == 1) {
    indices.base = row;
    return indices;
  }
  indices.base = LLVM::AddOp::create(
      b, loc, LLVM::MulOp::create(b, loc, row, c(mma->n)),
      LLVM::ShlOp::create(b, loc, LLVM::AndOp::create(b, loc, lane, c(3)), c(1)));
  if (mma->warpsN > 1) {
    Value column = LLVM::AndOp::create(
        b, loc, LLVM::LShrOp::create(b, loc, group, c(llvm::Log2_64(mma->warpgroupsM()))),
        c(mma->warpsN - 1));
    indices.base = LLVM::AddOp::create(
        b, loc, indices.base, LLVM::MulOp::create(b, loc, column, c(mma->columnsPerWarp())));
  }
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

std::optional<SmallVector<int64_t>> kiln::findRegisterSources(
    int64_t threads, int64_t toRegs, llvm::function_ref<int64_t(int64_t, int64_t)> toElement,
    ArrayRef<int64_t> fromRegs, llvm::function_ref<int64_t(int64_t, int64_t)> fromElement) {
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

Value kiln::copyRegisters(OpBuilder &b, Location loc, const TileTypeConverter &converter, Value src,
                          RankedTensorType srcType, RankedTensorType dstType,
                          function_ref<int64_t(int64_t)> sourceIndex) {
  auto srcRegs = llvm::to_vector(llvm::seq<int64_t>(0, converter.getRegsPerThread(srcType)));
  std::optional<SmallVector<int64_t>> sources = findRegisterSources(
      converter.getThreadsPerBlock(), converter.getRegsPerThread(dstType),
      [&](int64_t t, int64_t r) { return sourceIndex(converter.getElementOf(dstType, t, r)); },
      srcRegs, [&](int64_t t, int64_t r) { return converter.getElementOf(srcType, t, r); });
  if (!sources)
    return Value();
  SmallVector<Value> srcValues = unpackTile(b, loc, src);
  SmallVector<Value> results;
  for (int64_t r : *sources)
    results.push_back(srcValues[r]);
  return packTile(b, loc, converter.convertType(dstType), results);
}

void kiln::forEachPaddedAccess(
    OpBuilder &b, Location loc, const TileTypeConverter &converter, RankedTensorType type,
    Value buffer, Type element, int64_t pad,
    llvm::function_ref<void(const VectorAccess &, int64_t, Value)> access) {
  int64_t cols = type.getShape().back();
  ElementIndices indices = getElementIndices(b, loc, converter, type);
  VectorAccess vector(b.getContext(), element, getAccessWidth(converter, type));
  for (size_t r = 0; r < indices.offsets.size(); r += vector.vec) {
    Value index =
        LLVM::AddOp::create(b, loc, indices.base, createI32Constant(b, loc, indices.offsets[r]));
    Value row = LLVM::LShrOp::create(b, loc, index, createI32Constant(b, loc, llvm::Log2_64(cols)));
    index = LLVM::AddOp::create(b, loc, index,
                                LLVM::MulOp::create(b, loc, row, createI32Constant(b, loc, pad)));
    Value ptr = LLVM::GEPOp::create(b, loc, buffer.getType(), element, buffer,
                                    ArrayRef<LLVM::GEPArg>{index});
    access(vector, r, ptr);
  }
}

void kiln::storePadded(OpBuilder &b, Location loc, const TileTypeConverter &converter,
                       RankedTensorType type, Value buffer, Type element, int64_t pad,
                       ArrayRef<Value> regs) {
  forEachPaddedAccess(b, loc, converter, type, buffer, element, pad,
                      [&](const VectorAccess &vector, int64_t r, Value ptr) {
                        LLVM::StoreOp::create(b, loc,
                                              vector.join(b, loc, regs.slice(r, vector.vec)), ptr,
                                              std::min<unsigned>(vector.alignment, 16));
                      });
}

SmallVector<Value> kiln::packRegisterA(OpBuilder &b, Location loc, Type element,
                                       ArrayRef<Value> regs) {
  auto pairType = VectorType::get({2}, element);
  SmallVector<Value> words;
  for (size_t r = 0; r < regs.size(); r += 2) {
    Value pair = LLVM::PoisonOp::create(b, loc, pairType);
    for (int64_t i = 0; i < 2; ++i)
      pair = LLVM::InsertElementOp::create(b, loc, pair, regs[r + i], createI32Constant(b, loc, i));
    words.push_back(LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair));
  }
  return words;
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

int64_t kiln::getRequestedVec(Operation *op) {
  if (auto vec = op->getAttrOfType<IntegerAttr>("vec"))
    return std::max<int64_t>(1, vec.getInt());
  return 1;
}

Value kiln::createIsOwner(OpBuilder &b, Location loc, const tile::BlockedLayout &layout) {
  if (!layout.isReplicated())
    return LLVM::ConstantOp::create(b, loc, b.getI1Type(), b.getBoolAttr(true));
  return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, createThreadId(b, loc),
                              createI32Constant(b, loc, layout.runs()));
}

Value kiln::createSharedBuffer(OpBuilder &b, Operation *user, StringRef prefix, Type element,
                               int64_t count, unsigned alignment, bool scratch) {
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
    auto global = LLVM::GlobalOp::create(b, loc, LLVM::LLVMArrayType::get(element, count),
                                         /*isConstant=*/false, LLVM::Linkage::Internal, name,
                                         Attribute(), alignment, /*addrSpace=*/3);
    if (scratch)
      global->setAttr(tile::TileDialect::getScratchAttrName(), b.getUnitAttr());
  }
  return LLVM::AddressOfOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), name);
}

void kiln::markDrained(Operation *op, Value address) {
  auto of = address.getDefiningOp<LLVM::AddressOfOp>();
  SymbolTable::lookupSymbolIn(op->getParentOfType<ModuleOp>(), of.getGlobalName())
      ->setAttr(tile::TileDialect::getDrainedAttrName(), UnitAttr::get(op->getContext()));
}

/// The byte offset in a swizzled box of the byte at the row-major byte
/// offset `offset` (i32): see boxElementAddress.
static Value swizzledBoxOffset(OpBuilder &b, Location loc, Value offset, int64_t chunks,
                               int64_t rows, unsigned swizzle) {
  auto c = [&](int64_t v) { return createI32Constant(b, loc, v); };
  if (chunks > 1) {
    // Row r, byte b of W = chunks * 128 (a power of two: the box's inner
    // dimension is one).
    int64_t rowBytes = chunks * 128;
    Value row = LLVM::LShrOp::create(b, loc, offset, c(llvm::Log2_64(rowBytes)));
    Value col = LLVM::AndOp::create(b, loc, offset, c(rowBytes - 1));
    Value chunk = LLVM::LShrOp::create(b, loc, col, c(7));
    offset = LLVM::AddOp::create(
        b, loc,
        LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, chunk, c(rows * 128)),
                            LLVM::ShlOp::create(b, loc, row, c(7))),
        LLVM::AndOp::create(b, loc, col, c(127)));
  }
  Value row =
      LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, offset, c(7)), c(swizzle / 16 - 1));
  return LLVM::XOrOp::create(b, loc, offset, LLVM::ShlOp::create(b, loc, row, c(4)));
}

Value kiln::boxElementAddress(OpBuilder &b, Location loc, Value buffer, Type element, Value index,
                              int64_t chunks, int64_t rows, unsigned swizzle) {
  if (!swizzle)
    return LLVM::GEPOp::create(b, loc, buffer.getType(), element, buffer,
                               ArrayRef<LLVM::GEPArg>{index});
  Value offset = LLVM::MulOp::create(
      b, loc, index, createI32Constant(b, loc, element.getIntOrFloatBitWidth() / 8));
  return LLVM::GEPOp::create(
      b, loc, buffer.getType(), b.getI8Type(), buffer,
      ArrayRef<LLVM::GEPArg>{swizzledBoxOffset(b, loc, offset, chunks, rows, swizzle)});
}

Value kiln::ringSlotAddress(OpBuilder &b, Location loc, tile::RingType ring, Value base,
                            Value slot) {
  Value offset = LLVM::MulOp::create(b, loc, slot, createI32Constant(b, loc, ring.getSlotBytes()));
  return LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base,
                             ArrayRef<LLVM::GEPArg>{offset});
}

Value kiln::mbarrierAddress(OpBuilder &b, Location loc, Value base, Value index) {
  Value offset = LLVM::MulOp::create(b, loc, index, createI32Constant(b, loc, 8));
  return LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base,
                             ArrayRef<LLVM::GEPArg>{offset});
}

int64_t kiln::getConsumerRegisters(int64_t consumerThreads) {
  // The pool: every thread starts with the registers the program's threads
  // may hold (65536 of them; 255 at most a thread, allocated by 8).
  int64_t threads = consumerThreads + kProducerThreads;
  int64_t start = std::min<int64_t>(255, (int64_t(1) << 16) / threads) / 8 * 8;
  int64_t fit = threads * start - kProducerThreads * kProducerRegisters;
  return std::min<int64_t>(kMaxConsumerRegisters, fit / consumerThreads / 8 * 8);
}

void kiln::markFeature(Operation *op, StringRef feature) {
  assert(llvm::is_contained(tile::TileDialect::getKernelFeatures(), feature) &&
         "not a kernel feature");
  op->setAttr(kFeatureMark, StringAttr::get(op->getContext(), feature));
}

PhasedBarrier kiln::createPhasedBarrier(OpBuilder &b, Operation *op, StringRef prefix) {
  Location loc = op->getLoc();
  auto func = op->getParentOfType<FunctionOpInterface>();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&func.getFunctionBody().front());
  PhasedBarrier barrier;
  barrier.address = createSharedBuffer(b, op, prefix, b.getI64Type(), 1,
                                       /*alignment=*/8);
  Value zero = createI32Constant(b, loc, 0), one = createI32Constant(b, loc, 1);
  barrier.phase = LLVM::AllocaOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()),
                                         b.getI32Type(), one, /*alignment=*/4);
  LLVM::StoreOp::create(b, loc, zero, barrier.phase);
  Value isThread0 =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, createThreadId(b, loc), zero);
  NVVM::MBarrierInitOp::create(b, loc, barrier.address, one, isThread0);
  NVVM::FenceMbarrierInitOp::create(b, loc);
  NVVM::BarrierOp::create(b, loc);
  return barrier;
}

namespace {
/// What a bounded wait prints when it gives up: vprintf and the format string
/// (with the kernel's name and the op's source line), declared in the module.
struct HangReport {
  LLVM::LLVMFuncOp vprintf;
  LLVM::GlobalOp format;
};
} // namespace

/// Declares the report of the wait at `loc`, at the builder's (attached)
/// insertion point.
static HangReport declareHangReport(OpBuilder &b, Location loc) {
  Operation *at = b.getInsertionBlock()->getParentOp();
  auto module = at->getParentOfType<ModuleOp>();
  StringRef kernel = "?";
  if (auto func = llvm::dyn_cast<FunctionOpInterface>(at))
    kernel = func.getName();
  else if (auto parent = at->getParentOfType<FunctionOpInterface>())
    kernel = parent.getName();
  std::string where = "unknown location";
  if (auto fileLoc = llvm::dyn_cast<FileLineColLoc>(loc))
    where = (fileLoc.getFilename().getValue() + ":" + Twine(fileLoc.getLine())).str();
  // The format string as a constant global, NUL-terminated.
  std::string text = ("kiln: kernel '" + kernel + "' (" + where +
                      "): mbarrier wait gave up: barrier at shared 0x%x, parity %u, block "
                      "(%u, %u, %u), thread %u\n")
                         .str();
  text.push_back('\0');
  std::string name = ("__kiln_hang_" + Twine(llvm::hash_value(text))).str();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto format = module.lookupSymbol<LLVM::GlobalOp>(name);
  if (!format)
    format = LLVM::GlobalOp::create(b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), text.size()),
                                    /*isConstant=*/true, LLVM::Linkage::Internal, name,
                                    b.getStringAttr(text));
  auto vprintf = module.lookupSymbol<LLVM::LLVMFuncOp>("vprintf");
  if (!vprintf) {
    auto ptr = LLVM::LLVMPointerType::get(b.getContext());
    vprintf = LLVM::LLVMFuncOp::create(b, loc, "vprintf",
                                       LLVM::LLVMFunctionType::get(b.getI32Type(), {ptr, ptr}));
  }
  return {vprintf, format};
}

/// Prints `report` for the wait on `address` (the barrier's shared address)
/// for `parity`, with the block and the thread, then traps.
static void reportHangAndTrap(OpBuilder &b, Location loc, HangReport report, Value address,
                              Value parity) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  Value formatPtr = LLVM::AddressOfOp::create(b, loc, ptr, report.format.getSymName());
  // The arguments: a struct of six i32 on the stack.
  Type i32 = b.getI32Type();
  SmallVector<Value> args{address,
                          parity,
                          NVVM::BlockIdXOp::create(b, loc, i32),
                          NVVM::BlockIdYOp::create(b, loc, i32),
                          NVVM::BlockIdZOp::create(b, loc, i32),
                          createThreadId(b, loc)};
  auto structType = LLVM::LLVMStructType::getLiteral(b.getContext(), SmallVector<Type>(6, i32));
  Value buffer = LLVM::AllocaOp::create(b, loc, ptr, structType, createI32Constant(b, loc, 1));
  for (auto [i, v] : llvm::enumerate(args)) {
    Value field =
        LLVM::GEPOp::create(b, loc, ptr, structType, buffer, ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
    LLVM::StoreOp::create(b, loc, v, field);
  }
  LLVM::CallOp::create(b, loc, report.vprintf, ValueRange{formatPtr, buffer});
  createInlinePTX(b, loc, Type(), ValueRange{}, "trap;", "", /*sideEffects=*/true);
}

void kiln::waitParity(OpBuilder &b, Location loc, Value barrier, Value parity,
                      const TileTypeConverter &converter) {
  Value address = LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), barrier);
  if (uint64_t bound = converter.getWaitBound()) {
    HangReport report = declareHangReport(b, loc);
    Type i32 = b.getI32Type();
    Value limit = createI32Constant(b, loc, int32_t(std::min<uint64_t>(bound, INT32_MAX)));
    auto loop = scf::WhileOp::create(
        b, loc, TypeRange{i32}, ValueRange{createI32Constant(b, loc, 0)},
        [&](OpBuilder &bb, Location l, ValueRange tries) {
          Value passed = createInlinePTX(bb, l, i32, ValueRange{address, parity},
                                         "{\n.reg .pred p;\n"
                                         "mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n"
                                         "selp.u32 $0, 1, 0, p;\n}",
                                         "=r,r,r,~{memory}", /*sideEffects=*/true, "mbarrier");
          Value spent = LLVM::ICmpOp::create(bb, l, LLVM::ICmpPredicate::uge, tries[0], limit);
          scf::IfOp::create(bb, l, spent, [&](OpBuilder &ib, Location il) {
            reportHangAndTrap(ib, il, report, address, parity);
            scf::YieldOp::create(ib, il);
          });
          Value waiting = LLVM::ICmpOp::create(bb, l, LLVM::ICmpPredicate::eq, passed,
                                               createI32Constant(bb, l, 0));
          Value next = LLVM::AddOp::create(bb, l, tries[0], createI32Constant(bb, l, 1));
          scf::ConditionOp::create(bb, l, waiting, ValueRange{next});
        },
        [&](OpBuilder &bb, Location l, ValueRange tries) { scf::YieldOp::create(bb, l, tries); });
    (void)loop;
    return;
  }
  // The NVVM op takes the parity as an immediate; in a loop it is a register.
  static constexpr const char *kWait = "{\n"
                                       ".reg .pred p;\n"
                                       "kiln_tma_wait:\n"
                                       "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
                                       "@!p bra kiln_tma_wait;\n"
                                       "}";
  createInlinePTX(b, loc, Type(), ValueRange{address, parity}, kWait, "r,r,~{memory}",
                  /*sideEffects=*/true, "mbarrier");
}

void kiln::waitAndFlipPhase(OpBuilder &b, Location loc, const PhasedBarrier &barrier,
                            const TileTypeConverter &converter) {
  Value parity = LLVM::LoadOp::create(b, loc, b.getI32Type(), barrier.phase);
  waitParity(b, loc, barrier.address, parity, converter);
  Value flipped = LLVM::XOrOp::create(b, loc, parity, createI32Constant(b, loc, 1));
  LLVM::StoreOp::create(b, loc, flipped, barrier.phase);
}

void kiln::storeSwizzled128(OpBuilder &b, Location loc, const TileTypeConverter &converter,
                            RankedTensorType type, Value buffer, ArrayRef<Value> regs) {
  auto c = [&](int64_t v) { return createI32Constant(b, loc, v); };
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  Type element = regs.front().getType();
  ElementIndices indices = getElementIndices(b, loc, converter, type);
  VectorAccess access(b.getContext(), element, getAccessWidth(converter, type));
  for (size_t r = 0; r < indices.offsets.size(); r += access.vec) {
    Value index = LLVM::AddOp::create(b, loc, indices.base, c(indices.offsets[r]));
    Value row = LLVM::LShrOp::create(b, loc, index, c(llvm::Log2_64(cols)));
    Value col = LLVM::AndOp::create(b, loc, index, c(cols - 1));
    // chunk * rows * 128 + row * 128 + ((col mod 64) * 2 ^ (row mod 8) * 16)
    Value chunk = LLVM::LShrOp::create(b, loc, col, c(6));
    Value offset = LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, chunk, c(rows * 128)),
                                       LLVM::ShlOp::create(b, loc, row, c(7)));
    Value inRow = LLVM::ShlOp::create(b, loc, LLVM::AndOp::create(b, loc, col, c(63)), c(1));
    Value phase = LLVM::ShlOp::create(b, loc, LLVM::AndOp::create(b, loc, row, c(7)), c(4));
    offset = LLVM::AddOp::create(b, loc, offset, LLVM::XOrOp::create(b, loc, inRow, phase));
    Value ptr = LLVM::GEPOp::create(b, loc, buffer.getType(), b.getI8Type(), buffer,
                                    ArrayRef<LLVM::GEPArg>{offset});
    LLVM::StoreOp::create(b, loc, access.join(b, loc, regs.slice(r, access.vec)), ptr,
                          std::min<unsigned>(access.alignment, 16));
  }
}

void kiln::publishToAsyncProxy(OpBuilder &b, Location loc) {
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
  NVVM::BarrierOp::create(b, loc);
}

Value kiln::createLineSwizzle(OpBuilder &b, Location loc, Value index, int64_t runBits,
                              int64_t count) {
  if (!llvm::isPowerOf2_64(count) || runBits <= 0 || runBits >= int64_t(llvm::Log2_64(count)))
    return index;
  int64_t logCount = llvm::Log2_64(count);
  auto i32 = [&](int64_t v) { return createI32Constant(b, loc, v); };
  Value high = LLVM::LShrOp::create(b, loc, index, i32(runBits));
  Value run = LLVM::AndOp::create(b, loc, index, i32((int64_t(1) << runBits) - 1));
  return LLVM::OrOp::create(b, loc, high,
                            LLVM::ShlOp::create(b, loc, run, i32(logCount - runBits)));
}
