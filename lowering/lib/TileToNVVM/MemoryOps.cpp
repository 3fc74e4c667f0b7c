//===- MemoryOps.cpp - pointers, loads and stores ---------------------------===//

#include "PatternUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kiln;

namespace {
struct AddPtrLowering : TileOpConversion<tile::AddPtrOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::AddPtrOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = llvm::cast<tile::PtrType>(getElementTypeOrSelf(op.getType()));
    Type pointee = getTypeConverter()->convertType(ptrType.getPointeeType());
    Type llvmPtr = getTypeConverter()->convertType(ptrType);
    SmallVector<Value> ptrs = unpackTile(rewriter, loc, adaptor.getPtr());
    SmallVector<Value> offsets = unpackTile(rewriter, loc, adaptor.getOffset());
    SmallVector<Value> results;
    SmallVector<SmallVector<Value>> operands = {ptrs, offsets};
    for (auto [r, ptr, offset] : llvm::enumerate(ptrs, offsets)) {
      if (Value same = findEarlierRegister(operands, r, results)) {
        results.push_back(same);
        continue;
      }
      results.push_back(LLVM::GEPOp::create(rewriter, loc, llvmPtr, pointee, ptr,
                                            ArrayRef<LLVM::GEPArg>{offset}));
    }
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(op.getType()), results));
    return success();
  }
};

/// "r" / "h" / "l": the inline-asm register class of a 32/16/64-bit value.
StringRef registerClass(unsigned bits) { return bits == 16 ? "h" : bits == 64 ? "l" : "r"; }

/// `ld.<sem>.<scope>.global.b<bits>` of one element (LLVM's NVPTX backend has no
/// scoped acquire load). Float elements move as their bits.
Value orderedLoad(OpBuilder &b, Location loc, Type type, Value ptr, tile::MemSemantic sem,
                  tile::MemScope scope) {
  unsigned bits = type.getIntOrFloatBitWidth();
  Type intType = b.getIntegerType(bits);
  std::string asmString = ("ld." + tile::stringifyMemSemantic(sem) + "." +
                           tile::stringifyMemScope(scope) + ".global.b" + Twine(bits) +
                           " $0, [$1];")
                              .str();
  std::string constraints = ("=" + registerClass(bits) + ",l,~{memory}").str();
  Value loaded = createInlinePTX(b, loc, intType, ValueRange{ptr}, asmString, constraints);
  return type == intType ? loaded : LLVM::BitcastOp::create(b, loc, type, loaded).getResult();
}

/// `st.<sem>.<scope>.global.b<bits>` of one element.
void orderedStore(OpBuilder &b, Location loc, Value value, Value ptr, tile::MemSemantic sem,
                  tile::MemScope scope) {
  unsigned bits = value.getType().getIntOrFloatBitWidth();
  Type intType = b.getIntegerType(bits);
  if (value.getType() != intType)
    value = LLVM::BitcastOp::create(b, loc, intType, value);
  std::string asmString = ("st." + tile::stringifyMemSemantic(sem) + "." +
                           tile::stringifyMemScope(scope) + ".global.b" + Twine(bits) +
                           " [$0], $1;")
                              .str();
  std::string constraints = ("l," + registerClass(bits) + ",~{memory}").str();
  createInlinePTX(b, loc, Type(), ValueRange{ptr, value}, asmString, constraints);
}

/// `fence.acq_rel.<scope>`.
struct FenceLowering : ConvertOpToLLVMPattern<tile::FenceOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult matchAndRewrite(tile::FenceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    std::string asmString =
        ("fence.acq_rel." + tile::stringifyMemScope(op.getScope()) + ";").str();
    createInlinePTX(rewriter, op.getLoc(), Type(), ValueRange(), asmString, "~{memory}");
    rewriter.eraseOp(op);
    return success();
  }
};

int64_t getRequestedVec(Operation *op) {
  if (auto vec = op->getAttrOfType<IntegerAttr>("vec"))
    return std::max<int64_t>(1, vec.getInt());
  return 1;
}

struct LoadLowering : TileOpConversion<tile::LoadOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::LoadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type resultType = getTypeConverter()->convertType(op.getType());
    Type element = getTypeConverter()->convertType(getElementTypeOrSelf(op.getType()));
    SmallVector<Value> ptrs = unpackTile(rewriter, loc, adaptor.getPtr());
    SmallVector<Value> masks, others;
    if (adaptor.getMask())
      masks = unpackTile(rewriter, loc, adaptor.getMask());
    if (adaptor.getOther())
      others = unpackTile(rewriter, loc, adaptor.getOther());

    VectorAccess access(getContext(), element, getRequestedVec(op));
    if (ptrs.size() % access.vec != 0)
      return rewriter.notifyMatchFailure(op, "vector width does not divide the registers");
    SmallVector<Value> results;
    // Accesses of one vector each: the pointer, the mask, the `other` values.
    SmallVector<SmallVector<Value>> operands(2 + access.vec);
    SmallVector<Value> loadedByAccess;
    for (size_t r = 0; r < ptrs.size(); r += access.vec) {
      operands[0].push_back(ptrs[r]);
      operands[1].push_back(masks.empty() ? Value() : masks[r]);
      for (int64_t i = 0; i < access.vec; ++i)
        operands[2 + i].push_back(others.empty() ? Value() : others[r + i]);
      // The same address under the same mask (a value constant along a run,
      // e.g. a per-row index) is read once; an ordered load is never merged.
      if (Value same = op.getSem() ? Value()
                                   : findEarlierRegister(operands, loadedByAccess.size(),
                                                         loadedByAccess)) {
        loadedByAccess.push_back(same);
        llvm::append_range(results, access.split(rewriter, loc, same));
        continue;
      }
      auto load = [&](OpBuilder &b, Location l) -> Value {
        if (auto sem = op.getSem())
          return orderedLoad(b, l, access.accessType, ptrs[r], *sem, *op.getScope());
        return LLVM::LoadOp::create(b, l, access.accessType, ptrs[r], access.alignment)
            .getResult();
      };
      Value loaded;
      if (masks.empty()) {
        loaded = load(rewriter, loc);
      } else {
        auto ifOp = scf::IfOp::create(
            rewriter, loc, masks[r],
            [&](OpBuilder &b, Location l) { scf::YieldOp::create(b, l, load(b, l)); },
            [&](OpBuilder &b, Location l) {
              Value fallback =
                  others.empty()
                      ? LLVM::ZeroOp::create(b, l, access.accessType).getResult()
                      : access.join(b, l, ArrayRef<Value>(others).slice(r, access.vec));
              scf::YieldOp::create(b, l, fallback);
            });
        loaded = ifOp.getResult(0);
      }
      loadedByAccess.push_back(loaded);
      llvm::append_range(results, access.split(rewriter, loc, loaded));
    }
    rewriter.replaceOp(op, packTile(rewriter, loc, resultType, results));
    return success();
  }
};

struct StoreLowering : TileOpConversion<tile::StoreOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::StoreOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = getTypeConverter()->convertType(getElementTypeOrSelf(op.getValue().getType()));
    SmallVector<Value> ptrs = unpackTile(rewriter, loc, adaptor.getPtr());
    SmallVector<Value> values = unpackTile(rewriter, loc, adaptor.getValue());
    SmallVector<Value> masks;
    if (adaptor.getMask())
      masks = unpackTile(rewriter, loc, adaptor.getMask());

    // Only one copy of each element is written: in a replicated tile the
    // duplicates, for a scalar all threads but thread 0.
    Value owner;
    if (auto tensor = llvm::dyn_cast<RankedTensorType>(op.getPtr().getType())) {
      auto layout = tileConverter.getLayout(tensor);
      if (layout.isReplicated())
        owner = createIsOwner(rewriter, loc, layout);
    } else {
      owner = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq,
                                   createThreadId(rewriter, loc),
                                   createI32Constant(rewriter, loc, 0));
    }

    VectorAccess access(getContext(), element, getRequestedVec(op));
    if (ptrs.size() % access.vec != 0)
      return rewriter.notifyMatchFailure(op, "vector width does not divide the registers");
    for (size_t r = 0; r < ptrs.size(); r += access.vec) {
      Value bits = access.join(rewriter, loc, ArrayRef<Value>(values).slice(r, access.vec));
      Value predicate = owner;
      if (!masks.empty())
        predicate =
            predicate ? LLVM::AndOp::create(rewriter, loc, predicate, masks[r]).getResult()
                      : masks[r];
      auto store = [&](OpBuilder &b, Location l) {
        if (auto sem = op.getSem())
          orderedStore(b, l, bits, ptrs[r], *sem, *op.getScope());
        else
          LLVM::StoreOp::create(b, l, bits, ptrs[r], access.alignment);
      };
      if (!predicate) {
        store(rewriter, loc);
        continue;
      }
      scf::IfOp::create(rewriter, loc, predicate, [&](OpBuilder &b, Location l) {
        store(b, l);
        scf::YieldOp::create(b, l);
      });
    }
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void kiln::populateTileMemoryOpsToNVVMPatterns(TileTypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<AddPtrLowering, LoadLowering, StoreLowering, FenceLowering>(converter);
}
