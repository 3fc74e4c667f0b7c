//===- AtomicOps.cpp - tile.atomic_rmw, tile.atomic_cas ---------------------===//
//
// One atomic per element with the op's ordering and scope. Compare-and-swap is
// an LLVM cmpxchg (syncscope "block" = .cta, "device" = .gpu, none = .sys).
// Read-modify-write ops are inline PTX `atom.<sem>.<scope>.global.<op>.<type>`
// (emitAtomicRMWPTX, the one place with inline PTX): LLVM 22's NVPTX backend
// drops the ordering and the scope of an `atomicrmw` (it emits a plain, relaxed
// `atom.global`), which would silently weaken acquire/release and sys-scope
// atomics. Each element is applied once:
// replicated tiles act from their owning threads only; a scalar atomic runs on
// thread 0 and its old value reaches the block through shared memory.
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kiln;

namespace {
LLVM::AtomicOrdering getOrdering(tile::MemSemantic sem) {
  switch (sem) {
  case tile::MemSemantic::Relaxed:
    return LLVM::AtomicOrdering::monotonic;
  case tile::MemSemantic::Acquire:
    return LLVM::AtomicOrdering::acquire;
  case tile::MemSemantic::Release:
    return LLVM::AtomicOrdering::release;
  case tile::MemSemantic::AcqRel:
    return LLVM::AtomicOrdering::acq_rel;
  }
  llvm_unreachable("unknown memory semantic");
}

StringRef getSyncScope(tile::MemScope scope) {
  switch (scope) {
  case tile::MemScope::Cta:
    return "block";
  case tile::MemScope::Gpu:
    return "device";
  case tile::MemScope::Sys:
    return "";
  }
  llvm_unreachable("unknown memory scope");
}

/// `atom.<sem>.<scope>.global.<op>.<type> $0, [$1], $2;` and its constraints.
std::pair<std::string, std::string> getAtomicRMWPTX(tile::AtomicRMWKind kind, tile::MemSemantic sem,
                                                    tile::MemScope scope, Type type) {
  unsigned bits = type.getIntOrFloatBitWidth();
  std::string b = std::to_string(bits);
  std::string op;
  switch (kind) {
  case tile::AtomicRMWKind::Add:
    op = "add.u" + b;
    break;
  case tile::AtomicRMWKind::FAdd:
    op = type.isF16() ? "add.noftz.f16" : type.isBF16() ? "add.noftz.bf16" : "add.f" + b;
    break;
  case tile::AtomicRMWKind::Max:
    op = "max.s" + b;
    break;
  case tile::AtomicRMWKind::Min:
    op = "min.s" + b;
    break;
  case tile::AtomicRMWKind::UMax:
    op = "max.u" + b;
    break;
  case tile::AtomicRMWKind::UMin:
    op = "min.u" + b;
    break;
  case tile::AtomicRMWKind::And:
    op = "and.b" + b;
    break;
  case tile::AtomicRMWKind::Or:
    op = "or.b" + b;
    break;
  case tile::AtomicRMWKind::Xor:
    op = "xor.b" + b;
    break;
  case tile::AtomicRMWKind::Xchg:
    op = "exch.b" + b;
    break;
  }
  std::string asmString = ("atom." + tile::stringifyMemSemantic(sem) + "." +
                           tile::stringifyMemScope(scope) + ".global." + op + " $0, [$1], $2;")
                              .str();
  std::string reg = bits == 16   ? "h"
                    : bits == 64 ? (type.isF64() ? "d" : "l")
                                 : (type.isF32() ? "f" : "r");
  return {asmString, "=" + reg + ",l," + reg + ",~{memory}"};
}

/// Runs `atomic` for each element where its predicate holds (the owner and the
/// mask), yielding the old values; shares a scalar atomic's result.
template <typename SourceOp>
struct AtomicLoweringBase : TileOpConversion<SourceOp> {
  using TileOpConversion<SourceOp>::TileOpConversion;

  LogicalResult lower(SourceOp op, Value ptrs, Value mask, ConversionPatternRewriter &rewriter,
                      function_ref<Value(OpBuilder &, Location, int64_t)> atomic) const {
    Location loc = op.getLoc();
    Type resultType = this->getTypeConverter()->convertType(op.getType());
    Type element = this->getTypeConverter()->convertType(getElementTypeOrSelf(op.getType()));
    SmallVector<Value> ptrValues = unpackTile(rewriter, loc, ptrs);
    SmallVector<Value> masks;
    if (mask)
      masks = unpackTile(rewriter, loc, mask);
    bool scalar = !llvm::isa<RankedTensorType>(op.getPtr().getType());
    Value owner;
    if (scalar)
      owner =
          LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq,
                               createThreadId(rewriter, loc), createI32Constant(rewriter, loc, 0));
    else if (auto layout =
                 this->tileConverter.getLayout(llvm::cast<RankedTensorType>(op.getPtr().getType()));
             layout.isReplicated())
      owner = createIsOwner(rewriter, loc, layout);

    SmallVector<Value> results;
    for (int64_t r = 0, e = ptrValues.size(); r < e; ++r) {
      Value predicate = owner;
      if (!masks.empty())
        predicate = predicate ? LLVM::AndOp::create(rewriter, loc, predicate, masks[r]).getResult()
                              : masks[r];
      if (!predicate) {
        results.push_back(atomic(rewriter, loc, r));
        continue;
      }
      auto ifOp = scf::IfOp::create(
          rewriter, loc, predicate,
          [&](OpBuilder &b, Location l) { scf::YieldOp::create(b, l, atomic(b, l, r)); },
          [&](OpBuilder &b, Location l) {
            scf::YieldOp::create(b, l, LLVM::ZeroOp::create(b, l, element).getResult());
          });
      results.push_back(ifOp.getResult(0));
    }
    if (scalar) {
      // Thread 0 acted; every thread gets its old value.
      Value buffer = createSharedBuffer(rewriter, op, "__kiln_atomic_smem", element, 1);
      auto isFirst =
          LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq,
                               createThreadId(rewriter, loc), createI32Constant(rewriter, loc, 0));
      scf::IfOp::create(rewriter, loc, isFirst, [&](OpBuilder &b, Location l) {
        LLVM::StoreOp::create(b, l, results.front(), buffer);
        scf::YieldOp::create(b, l);
      });
      NVVM::BarrierOp::create(rewriter, loc);
      Value shared = LLVM::LoadOp::create(rewriter, loc, element, buffer);
      NVVM::BarrierOp::create(rewriter, loc);
      rewriter.replaceOp(op, shared);
      return success();
    }
    rewriter.replaceOp(op, packTile(rewriter, loc, resultType, results));
    return success();
  }
};

struct AtomicRMWLowering : AtomicLoweringBase<tile::AtomicRMWOp> {
  using AtomicLoweringBase::AtomicLoweringBase;

  LogicalResult matchAndRewrite(tile::AtomicRMWOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> values = unpackTile(rewriter, op.getLoc(), adaptor.getVal());
    SmallVector<Value> ptrs = unpackTile(rewriter, op.getLoc(), adaptor.getPtr());
    return lower(op, adaptor.getPtr(), adaptor.getMask(), rewriter,
                 [&](OpBuilder &b, Location l, int64_t r) -> Value {
                   Type type = values[r].getType();
                   auto [asmString, constraints] =
                       getAtomicRMWPTX(op.getKind(), op.getSem(), op.getScope(), type);
                   bool system = op.getScope() == tile::MemScope::Sys;
                   return createInlinePTX(b, l, type, ValueRange{ptrs[r], values[r]}, asmString,
                                          constraints, /*sideEffects=*/true,
                                          system ? "sys_atomics" : "");
                 });
  }
};

struct AtomicCASLowering : AtomicLoweringBase<tile::AtomicCASOp> {
  using AtomicLoweringBase::AtomicLoweringBase;

  LogicalResult matchAndRewrite(tile::AtomicCASOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> cmps = unpackTile(rewriter, op.getLoc(), adaptor.getCmp());
    SmallVector<Value> values = unpackTile(rewriter, op.getLoc(), adaptor.getVal());
    SmallVector<Value> ptrs = unpackTile(rewriter, op.getLoc(), adaptor.getPtr());
    LLVM::AtomicOrdering success = getOrdering(op.getSem());
    // A failed compare only reads: it may not release.
    LLVM::AtomicOrdering failure =
        success == LLVM::AtomicOrdering::release   ? LLVM::AtomicOrdering::monotonic
        : success == LLVM::AtomicOrdering::acq_rel ? LLVM::AtomicOrdering::acquire
                                                   : success;
    return lower(
        op, adaptor.getPtr(), Value(), rewriter, [&](OpBuilder &b, Location l, int64_t r) -> Value {
          auto cas = LLVM::AtomicCmpXchgOp::create(b, l, ptrs[r], cmps[r], values[r], success,
                                                   failure, getSyncScope(op.getScope()));
          return LLVM::ExtractValueOp::create(b, l, cas, ArrayRef<int64_t>{0});
        });
  }
};
} // namespace

void kiln::populateTileAtomicOpsToNVVMPatterns(TileTypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<AtomicRMWLowering, AtomicCASLowering>(converter);
}
