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
  std::string asmString =
      ("ld." + tile::stringifyMemSemantic(sem) + "." + tile::stringifyMemScope(scope) +
       ".global.b" + Twine(bits) + " $0, [$1];")
          .str();
  std::string constraints = ("=" + registerClass(bits) + ",l,~{memory}").str();
  Value loaded = createInlinePTX(b, loc, intType, ValueRange{ptr}, asmString, constraints);
  return type == intType ? loaded : LLVM::BitcastOp::create(b, loc, type, loaded).getResult();
}

/// `ld.relaxed.<scope>.global{.v2,.v4}.b<bits>` of one access (`access.vec`
/// elements of 32 or 64 bits, or one element of any width), read again until
/// every element is non-zero or `pollNs` nanoseconds of %globaltimer have
/// passed (then the elements are the ones read last, some zero); between reads
/// a `nanosleep` doubling from 32 to 1024 ns. Returns `access.accessType`.
Value pollingLoad(OpBuilder &b, Location loc, const VectorAccess &access, Value ptr,
                  tile::MemScope scope, int64_t pollNs) {
  int64_t vec = access.vec;
  unsigned bits = access.element.getIntOrFloatBitWidth();
  Type intType = b.getIntegerType(bits);
  std::string width = ("b" + Twine(bits)).str();
  std::string outputs, test;
  for (int64_t i = 0; i < vec; ++i) {
    outputs += (i ? ", $" : "$") + std::to_string(i);
    test += i == 0 ? ("setp.ne." + width + " %p, $0, 0;\n")
                   : ("setp.ne.and." + width + " %p, $" + std::to_string(i) + ", 0, %p;\n");
  }
  if (vec > 1)
    outputs = "{" + outputs + "}";
  std::string ptrOperand = "$" + std::to_string(vec);
  std::string deadlineOperand = "$" + std::to_string(vec + 1);
  std::string asmString = "{\n"
                          ".reg .pred %p;\n"
                          ".reg .u64 %t0, %t;\n"
                          ".reg .u32 %d;\n"
                          "mov.u64 %t0, %globaltimer;\n"
                          "mov.u32 %d, 32;\n"
                          "kiln_poll:\n"
                          "ld.relaxed." +
                          tile::stringifyMemScope(scope).str() + ".global" +
                          (vec > 1 ? ".v" + std::to_string(vec) : std::string()) + "." + width +
                          " " + outputs + ", [" + ptrOperand + "];\n" + test +
                          "@%p bra kiln_poll_done;\n"
                          "mov.u64 %t, %globaltimer;\n"
                          "sub.u64 %t, %t, %t0;\n"
                          "setp.ge.u64 %p, %t, " +
                          deadlineOperand +
                          ";\n"
                          "@%p bra kiln_poll_done;\n"
                          "nanosleep.u32 %d;\n"
                          "shl.b32 %d, %d, 1;\n"
                          "min.u32 %d, %d, 1024;\n"
                          "bra kiln_poll;\n"
                          "kiln_poll_done:\n"
                          "}";
  std::string constraints;
  for (int64_t i = 0; i < vec; ++i)
    constraints += ("=" + registerClass(bits) + ",").str();
  constraints += "l,l,~{memory}";
  Value deadline = LLVM::ConstantOp::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(pollNs));
  if (vec == 1) {
    Value loaded =
        createInlinePTX(b, loc, intType, ValueRange{ptr, deadline}, asmString, constraints);
    return access.accessType == intType
               ? loaded
               : LLVM::BitcastOp::create(b, loc, access.accessType, loaded).getResult();
  }
  SmallVector<Type> fields(vec, intType);
  auto structType = LLVM::LLVMStructType::getLiteral(b.getContext(), fields);
  Value loaded =
      createInlinePTX(b, loc, structType, ValueRange{ptr, deadline}, asmString, constraints);
  Value vector = LLVM::PoisonOp::create(b, loc, VectorType::get({vec}, intType));
  for (int64_t i = 0; i < vec; ++i)
    vector = LLVM::InsertElementOp::create(b, loc, vector,
                                           LLVM::ExtractValueOp::create(b, loc, loaded, i),
                                           createI32Constant(b, loc, i));
  return LLVM::BitcastOp::create(b, loc, access.accessType, vector);
}

/// `st.<sem>.<scope>.global.b<bits>` of one element.
void orderedStore(OpBuilder &b, Location loc, Value value, Value ptr, tile::MemSemantic sem,
                  tile::MemScope scope) {
  unsigned bits = value.getType().getIntOrFloatBitWidth();
  Type intType = b.getIntegerType(bits);
  if (value.getType() != intType)
    value = LLVM::BitcastOp::create(b, loc, intType, value);
  std::string asmString =
      ("st." + tile::stringifyMemSemantic(sem) + "." + tile::stringifyMemScope(scope) +
       ".global.b" + Twine(bits) + " [$0], $1;")
          .str();
  std::string constraints = ("l," + registerClass(bits) + ",~{memory}").str();
  createInlinePTX(b, loc, Type(), ValueRange{ptr, value}, asmString, constraints);
}

/// The cache hints of a plain access (`cache` / `evict` of tile.load and
/// tile.store) and their PTX spelling.
struct CacheHints {
  std::optional<tile::CacheModifier> cache;
  std::optional<tile::EvictionPolicy> evict;

  bool empty() const { return !cache && !evict; }
  /// evict_first / evict_last reach L2 through a `createpolicy` operand
  /// (`.L2::cache_hint`): the `.L2::evict_*` qualifiers of `ld` need 256-bit
  /// accesses (sm_100 and later), the policy works from sm_80 on.
  bool hasL2Policy() const { return evict && *evict != tile::EvictionPolicy::EvictNormal; }
  /// `.cg`, `.L1::evict_first`, `.L2::cache_hint`: PTX does not combine a cache
  /// operator with an L1 eviction priority, so with both the operator and the
  /// L2 policy stay.
  std::string qualifiers() const {
    std::string result;
    if (cache)
      result += ("." + tile::stringifyCacheModifier(*cache)).str();
    else if (evict)
      result += (".L1::" + tile::stringifyEvictionPolicy(*evict)).str();
    if (hasL2Policy())
      result += ".L2::cache_hint";
    return result;
  }
};

/// `createpolicy.fractional.L2::<evict>.b64 $0, 1.0;`: the policy operand of
/// `.L2::cache_hint` accesses, for all their addresses. Pure, so one per op.
Value createL2Policy(OpBuilder &b, Location loc, tile::EvictionPolicy evict) {
  std::string asmString =
      ("createpolicy.fractional.L2::" + tile::stringifyEvictionPolicy(evict) + ".b64 $0, 1.0;")
          .str();
  return createInlinePTX(b, loc, b.getI64Type(), ValueRange(), asmString, "=l",
                         /*sideEffects=*/false);
}

/// The registers the bits of one access (`VectorAccess::accessType`) travel in
/// through inline asm: `count` words of PTX type `.b<bits>`; .b8 values sit in
/// 16-bit registers (booleans are bytes in memory).
struct AsmWords {
  int64_t count;
  unsigned bits;
  Type type; ///< the register's integer type

  explicit AsmWords(Type accessType) {
    auto vector = llvm::dyn_cast<VectorType>(accessType);
    count = vector ? vector.getNumElements() : 1;
    bits = std::max(8u, getElementTypeOrSelf(accessType).getIntOrFloatBitWidth());
    type = IntegerType::get(accessType.getContext(), std::max(16u, bits));
  }
  StringRef constraint() const { return registerClass(type.getIntOrFloatBitWidth()); }
  /// `{$first, ..., $first+count-1}` (or `$first` alone).
  std::string operandList(int64_t first) const {
    std::string list;
    for (int64_t i = 0; i < count; ++i)
      list += (Twine(i ? ", $" : "$") + Twine(first + i)).str();
    return count > 1 ? "{" + list + "}" : list;
  }
  /// The bits of one access -> the words.
  SmallVector<Value> split(OpBuilder &b, Location loc, Value access) const {
    if (count > 1) {
      SmallVector<Value> words;
      for (int64_t i = 0; i < count; ++i)
        words.push_back(
            LLVM::ExtractElementOp::create(b, loc, access, createI32Constant(b, loc, i)));
      return words;
    }
    unsigned width = access.getType().getIntOrFloatBitWidth();
    if (!access.getType().isInteger())
      access = LLVM::BitcastOp::create(b, loc, b.getIntegerType(width), access);
    if (width < type.getIntOrFloatBitWidth())
      access = LLVM::ZExtOp::create(b, loc, type, access);
    return {access};
  }
  /// The words -> the bits of one access of `accessType`.
  Value join(OpBuilder &b, Location loc, Type accessType, ArrayRef<Value> words) const {
    if (count > 1) {
      Value vector = LLVM::PoisonOp::create(b, loc, accessType);
      for (int64_t i = 0; i < count; ++i)
        vector =
            LLVM::InsertElementOp::create(b, loc, vector, words[i], createI32Constant(b, loc, i));
      return vector;
    }
    Value word = words.front();
    unsigned width = accessType.getIntOrFloatBitWidth();
    if (width < type.getIntOrFloatBitWidth())
      word = LLVM::TruncOp::create(b, loc, b.getIntegerType(width), word);
    if (word.getType() != accessType)
      word = LLVM::BitcastOp::create(b, loc, accessType, word);
    return word;
  }
};

/// `ld.global<hints>[.vN].b<bits>` (`op` = "ld") or `st.global...`.
std::string hintedOpcode(StringRef op, const CacheHints &hints, const AsmWords &words) {
  std::string vector = words.count > 1 ? (".v" + Twine(words.count)).str() : "";
  return (op + ".global" + hints.qualifiers() + vector + ".b" + Twine(words.bits)).str();
}

/// The `{ .reg .pred %p; setp.ne.b32 %p, $mask, 0;` that opens a predicated
/// hinted access (the mask travels as an i32; PTX has no i1 asm operands).
std::string openPredicate(int64_t maskOperand) {
  return ("{\n\t.reg .pred %p;\n\tsetp.ne.b32 %p, $" + Twine(maskOperand) + ", 0;\n\t").str();
}

/// One hinted `ld.global<hints>[.vN].b<bits>` of `access`'s bits, as inline
/// PTX. Under `mask` the load is predicated inside the asm, its destinations
/// first set to `fallback` (zero when null): no branch.
Value hintedLoad(OpBuilder &b, Location loc, const VectorAccess &access, Value ptr, Value mask,
                 Value fallback, const CacheHints &hints, Value policy) {
  AsmWords words(access.accessType);
  SmallVector<Value> operands = {ptr};
  std::string constraints;
  for (int64_t i = 0; i < words.count; ++i)
    constraints += ("=" + words.constraint() + ",").str();
  constraints += "l";
  int64_t next = words.count + 1; // the asm operand number of the next input
  std::string asmString;
  if (mask) {
    operands.push_back(LLVM::ZExtOp::create(b, loc, b.getI32Type(), mask));
    constraints += ",r";
    asmString += openPredicate(next++);
    if (fallback)
      llvm::append_range(operands, words.split(b, loc, fallback));
    unsigned movBits = words.type.getIntOrFloatBitWidth();
    for (int64_t i = 0; i < words.count; ++i) {
      std::string source = fallback ? ("$" + Twine(next++)).str() : "0";
      if (fallback)
        constraints += ("," + words.constraint()).str();
      asmString += ("mov.b" + Twine(movBits) + " $" + Twine(i) + ", " + source + ";\n\t").str();
    }
    asmString += "@%p ";
  }
  std::string policyOperand;
  if (policy) {
    operands.push_back(policy);
    constraints += ",l";
    policyOperand = (", $" + Twine(next++)).str();
  }
  asmString += hintedOpcode("ld", hints, words) + " " + words.operandList(0) + ", [$" +
               std::to_string(words.count) + "]" + policyOperand + ";";
  if (mask)
    asmString += "\n\t}";
  constraints += ",~{memory}";
  Type result = words.count > 1 ? Type(LLVM::LLVMStructType::getLiteral(
                                      b.getContext(), SmallVector<Type>(words.count, words.type)))
                                : words.type;
  Value loaded = createInlinePTX(b, loc, result, operands, asmString, constraints);
  SmallVector<Value> loadedWords = unpackTile(b, loc, loaded);
  return words.join(b, loc, access.accessType, loadedWords);
}

/// One hinted `st.global<hints>[.vN].b<bits>` of `bits` (an access's bits),
/// predicated inside the asm by `predicate` when it is not null.
void hintedStore(OpBuilder &b, Location loc, const VectorAccess &access, Value ptr, Value bits,
                 Value predicate, const CacheHints &hints, Value policy) {
  AsmWords words(access.accessType);
  SmallVector<Value> operands = {ptr};
  llvm::append_range(operands, words.split(b, loc, bits));
  std::string constraints = "l";
  for (int64_t i = 0; i < words.count; ++i)
    constraints += ("," + words.constraint()).str();
  int64_t next = words.count + 1;
  std::string asmString;
  if (predicate) {
    operands.push_back(LLVM::ZExtOp::create(b, loc, b.getI32Type(), predicate));
    constraints += ",r";
    asmString += openPredicate(next++) + "@%p ";
  }
  std::string policyOperand;
  if (policy) {
    operands.push_back(policy);
    constraints += ",l";
    policyOperand = (", $" + Twine(next++)).str();
  }
  asmString +=
      hintedOpcode("st", hints, words) + " [$0], " + words.operandList(1) + policyOperand + ";";
  if (predicate)
    asmString += "\n\t}";
  constraints += ",~{memory}";
  createInlinePTX(b, loc, Type(), operands, asmString, constraints);
}

/// `llvm.inttoptr` into the global address space.
struct IntToPtrLowering : TileOpConversion<tile::IntToPtrOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::IntToPtrOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<LLVM::IntToPtrOp>(op, getTypeConverter()->convertType(op.getType()),
                                                  adaptor.getAddress());
    return success();
  }
};

/// `fence.acq_rel.<scope>`.
struct FenceLowering : ConvertOpToLLVMPattern<tile::FenceOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult matchAndRewrite(tile::FenceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    std::string asmString = ("fence.acq_rel." + tile::stringifyMemScope(op.getScope()) + ";").str();
    createInlinePTX(rewriter, op.getLoc(), Type(), ValueRange(), asmString, "~{memory}");
    rewriter.eraseOp(op);
    return success();
  }
};

/// `fence.proxy.async{.global, .shared::cta}`.
struct FenceProxyAsyncLowering : ConvertOpToLLVMPattern<tile::FenceProxyAsyncOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult matchAndRewrite(tile::FenceProxyAsyncOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    StringRef space;
    switch (op.getSpace()) {
    case tile::ProxySpace::Global:
      space = ".global";
      break;
    case tile::ProxySpace::SharedCta:
      space = ".shared::cta";
      break;
    case tile::ProxySpace::All:
      break;
    }
    createInlinePTX(rewriter, op.getLoc(), Type(), ValueRange(),
                    ("fence.proxy.async" + space + ";").str(), "~{memory}");
    rewriter.eraseOp(op);
    return success();
  }
};

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
    CacheHints hints{op.getCache(), op.getEvict()};
    Value policy;
    if (hints.hasL2Policy())
      policy = createL2Policy(rewriter, loc, *hints.evict);
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
      if (Value same = op.getSem()
                           ? Value()
                           : findEarlierRegister(operands, loadedByAccess.size(), loadedByAccess)) {
        loadedByAccess.push_back(same);
        llvm::append_range(results, access.split(rewriter, loc, same));
        continue;
      }
      auto load = [&](OpBuilder &b, Location l) -> Value {
        if (std::optional<int64_t> poll = op.getPollNs())
          return pollingLoad(b, l, access, ptrs[r], *op.getScope(), *poll);
        if (auto sem = op.getSem())
          return orderedLoad(b, l, access.accessType, ptrs[r], *sem, *op.getScope());
        return LLVM::LoadOp::create(b, l, access.accessType, ptrs[r], access.alignment).getResult();
      };
      Value loaded;
      if (!hints.empty()) {
        Value fallback;
        if (!masks.empty() && !others.empty())
          fallback = access.join(rewriter, loc, ArrayRef<Value>(others).slice(r, access.vec));
        loaded = hintedLoad(rewriter, loc, access, ptrs[r], masks.empty() ? Value() : masks[r],
                            fallback, hints, policy);
      } else if (masks.empty()) {
        loaded = load(rewriter, loc);
      } else {
        auto ifOp = scf::IfOp::create(
            rewriter, loc, masks[r],
            [&](OpBuilder &b, Location l) { scf::YieldOp::create(b, l, load(b, l)); },
            [&](OpBuilder &b, Location l) {
              Value fallback =
                  others.empty() ? LLVM::ZeroOp::create(b, l, access.accessType).getResult()
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
      owner =
          LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq,
                               createThreadId(rewriter, loc), createI32Constant(rewriter, loc, 0));
    }

    VectorAccess access(getContext(), element, getRequestedVec(op));
    if (ptrs.size() % access.vec != 0)
      return rewriter.notifyMatchFailure(op, "vector width does not divide the registers");
    CacheHints hints{op.getCache(), op.getEvict()};
    Value policy;
    if (hints.hasL2Policy())
      policy = createL2Policy(rewriter, loc, *hints.evict);
    for (size_t r = 0; r < ptrs.size(); r += access.vec) {
      Value bits = access.join(rewriter, loc, ArrayRef<Value>(values).slice(r, access.vec));
      Value predicate = owner;
      if (!masks.empty())
        predicate = predicate ? LLVM::AndOp::create(rewriter, loc, predicate, masks[r]).getResult()
                              : masks[r];
      auto store = [&](OpBuilder &b, Location l) {
        if (auto sem = op.getSem())
          orderedStore(b, l, bits, ptrs[r], *sem, *op.getScope());
        else
          LLVM::StoreOp::create(b, l, bits, ptrs[r], access.alignment);
      };
      if (!hints.empty()) {
        hintedStore(rewriter, loc, access, ptrs[r], bits, predicate, hints, policy);
        continue;
      }
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
  patterns.add<AddPtrLowering, IntToPtrLowering, LoadLowering, StoreLowering, FenceLowering,
               FenceProxyAsyncLowering>(converter);
}
