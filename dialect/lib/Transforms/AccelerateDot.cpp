//===- AccelerateDot.cpp - pipelined ring dots on wgmma ---------------------===//
//
// See Passes.td (kiln-tile-accelerate-dot). The K loop keeps its shape; what
// changes is where the operands are read (the ring slots, in place) and where
// the accumulator lives (the wgmma registers, `#tile.mma`, across iterations).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln::tile {
#define GEN_PASS_DEF_TILEACCELERATEDOT
#include "kiln/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace kiln::tile

using namespace mlir;
using namespace kiln::tile;

namespace {
/// Whether every box issued into `ring` comes through a descriptor with the
/// 128-byte swizzle (the layout the wgmma descriptors describe).
bool isSwizzled128(Value ring) {
  bool any = false;
  for (Operation *user : ring.getUsers())
    if (auto issue = llvm::dyn_cast<RingIssueOp>(user)) {
      if (issue.getDesc().getType().getSwizzle() != 128)
        return false;
      any = true;
    }
  return any;
}

/// The dot's operands, when they are a ring slot [M, K] and the transpose of
/// a ring slot [N, K], each used only there.
struct RingOperands {
  RingWaitLoadOp a, b;
  TransOp bTrans;
};

std::optional<RingOperands> matchRingOperands(DotOp dot) {
  RingOperands ops;
  ops.a = dot.getA().getDefiningOp<RingWaitLoadOp>();
  ops.bTrans = dot.getB().getDefiningOp<TransOp>();
  if (!ops.a || !ops.bTrans || ops.bTrans.getOrder() != ArrayRef<int64_t>{1, 0})
    return std::nullopt;
  ops.b = ops.bTrans.getSrc().getDefiningOp<RingWaitLoadOp>();
  if (!ops.b || !ops.a->hasOneUse() || !ops.b->hasOneUse() || !ops.bTrans->hasOneUse())
    return std::nullopt;
  if (!isSwizzled128(ops.a.getRing()) || !isSwizzled128(ops.b.getRing()))
    return std::nullopt;
  return ops;
}

/// Whether `op` computes each element from the same element of its operands.
bool isElementwise(Operation *op) {
  return llvm::isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) &&
         !llvm::isa<arith::ConstantOp>(op) && op->getNumResults() == 1 &&
         op->getNumRegions() == 0 && llvm::isa<RankedTensorType>(op->getResult(0).getType());
}

/// Moves the conversion `convert` (from #tile.mma to the blocked layout) past
/// its users where that is free: a tile.desc_store stores the source layout;
/// an elementwise op whose other operands are splat constants runs on the
/// source layout when its result is no wider (a narrower conversion later).
void sinkConversion(OpBuilder &b, ConvertLayoutOp convert) {
  SmallVector<ConvertLayoutOp> worklist{convert};
  while (!worklist.empty()) {
    ConvertLayoutOp c = worklist.pop_back_val();
    auto encoding = c.getSrc().getType().getEncoding();
    for (OpOperand &use : llvm::make_early_inc_range(c->getUses())) {
      Operation *user = use.getOwner();
      if (auto store = llvm::dyn_cast<DescStoreOp>(user)) {
        use.set(c.getSrc());
        continue;
      }
      if (!isElementwise(user))
        continue;
      auto resultType = llvm::cast<RankedTensorType>(user->getResult(0).getType());
      if (resultType.getElementTypeBitWidth() >
          c.getType().getElementTypeBitWidth())
        continue;
      bool otherSplats = llvm::all_of(user->getOpOperands(), [&](OpOperand &operand) {
        SplatElementsAttr splat;
        return &operand == &use || matchPattern(operand.get(), m_Constant(&splat));
      });
      if (!otherSplats)
        continue;
      b.setInsertionPoint(user);
      Operation *moved = b.clone(*user);
      for (OpOperand &operand : moved->getOpOperands()) {
        if (operand.getOperandNumber() == use.getOperandNumber()) {
          operand.set(c.getSrc());
          continue;
        }
        auto type = llvm::cast<RankedTensorType>(operand.get().getType());
        operand.set(ConvertLayoutOp::create(
            b, user->getLoc(), RankedTensorType::get(type.getShape(), type.getElementType(),
                                                     encoding),
            operand.get()));
      }
      moved->getResult(0).setType(RankedTensorType::get(
          resultType.getShape(), resultType.getElementType(), encoding));
      auto back = ConvertLayoutOp::create(b, user->getLoc(), resultType, moved->getResult(0));
      user->replaceAllUsesWith(back);
      user->erase();
      worklist.push_back(back);
    }
    if (c->use_empty())
      c->erase();
  }
}

struct TileAccelerateDotPass : kiln::tile::impl::TileAccelerateDotBase<TileAccelerateDotPass> {
  using TileAccelerateDotBase::TileAccelerateDotBase;

  void runOnOperation() override {
    if (arch != "sm_90a")
      return;
    func::FuncOp func = getOperation();
    auto threads = func->getAttrOfType<IntegerAttr>(TileDialect::getThreadsPerBlockAttrName());
    if (!threads || threads.getInt() % 128 != 0)
      return;
    unsigned warps = threads.getInt() / 32;
    SmallVector<DotOp> dots;
    func.walk([&](DotOp dot) { dots.push_back(dot); });
    for (DotOp dot : dots)
      accelerate(dot, warps);
  }

  void accelerate(DotOp dot, unsigned warps) {
    auto loop = llvm::dyn_cast<scf::ForOp>(dot->getParentOp());
    if (!loop)
      return;
    std::optional<RingOperands> operands = matchRingOperands(dot);
    if (!operands)
      return;
    auto accType = dot.getAcc().getType();
    auto aType = dot.getA().getType();
    Type element = aType.getElementType();
    int64_t m = aType.getDimSize(0), k = aType.getDimSize(1), n = accType.getDimSize(1);
    if (!(element.isBF16() || element.isF16()) || accType.getEncoding() ||
        !accType.getElementType().isF32() || k * 2 != 128 || m % (64 * (warps / 4)) != 0 ||
        n % 8 != 0 || n > 256)
      return;
    // The accumulator: an iteration argument that only this dot reads, and
    // the dot's result only yielded in its place.
    auto acc = llvm::dyn_cast<BlockArgument>(dot.getAcc());
    if (!acc || acc.getOwner() != loop.getBody() || !acc.hasOneUse() ||
        !dot->hasOneUse())
      return;
    auto yield = llvm::cast<scf::YieldOp>(loop.getBody()->getTerminator());
    OpOperand &yielded = *dot->getUses().begin();
    unsigned index = acc.getArgNumber() - loop.getNumInductionVars();
    if (yielded.getOwner() != yield || yielded.getOperandNumber() != index)
      return;

    MLIRContext *context = loop.getContext();
    auto mmaType = RankedTensorType::get(accType.getShape(), accType.getElementType(),
                                         MmaEncodingAttr::get(context, 3, warps));
    OpBuilder b(context);
    Location loc = dot.getLoc();

    // The accumulator enters, lives in and leaves the loop in the mma layout.
    b.setInsertionPoint(loop);
    OpOperand &init = loop.getInitsMutable()[index];
    init.set(ConvertLayoutOp::create(b, loc, mmaType, init.get()));
    acc.setType(mmaType);
    Value result = loop.getResult(index);
    result.setType(mmaType);

    // Operands read in place; the dot asynchronous, the previous one waited for.
    b.setInsertionPoint(operands->a);
    RingWaitOp::create(b, operands->a.getLoc(), operands->a.getRing(), operands->a.getSlot(),
                       operands->a.getPhase());
    b.setInsertionPoint(operands->b);
    RingWaitOp::create(b, operands->b.getLoc(), operands->b.getRing(), operands->b.getSlot(),
                       operands->b.getPhase());
    b.setInsertionPoint(dot);
    Value issued = WarpGroupDotOp::create(b, loc, mmaType, operands->a.getRing(),
                                          operands->a.getSlot(), operands->b.getRing(),
                                          operands->b.getSlot(), acc);
    auto wait = WarpGroupDotWaitOp::create(b, loc, issued, /*pending=*/1);
    yielded.set(wait);
    dot->erase();
    operands->bTrans->erase();
    Value rings[] = {operands->a.getRing(), operands->b.getRing()};
    operands->b->erase();
    operands->a->erase();

    // A slot is refilled once the dot that read it is done: after the wait.
    Operation *last = wait;
    for (Operation &op : llvm::make_early_inc_range(*loop.getBody()))
      if (auto issue = llvm::dyn_cast<RingIssueOp>(op);
          issue && llvm::is_contained(rings, issue.getRing()) && issue->isBeforeInBlock(wait)) {
        issue->moveAfter(last);
        last = issue;
      }

    b.setInsertionPointAfter(loop);
    auto done = WarpGroupDotWaitOp::create(b, loc, result, /*pending=*/0);
    auto blocked = ConvertLayoutOp::create(b, loc, accType, done);
    result.replaceAllUsesExcept(blocked, done);
    sinkConversion(b, blocked);
    ++numAccelerated;
  }
};
} // namespace
