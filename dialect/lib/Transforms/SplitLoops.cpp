//===- SplitLoops.cpp - split a loop where a branch of its body starts ------===//
//
// See Passes.td (kiln-tile-split-loops).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln::tile {
#define GEN_PASS_DEF_TILESPLITLOOPS
#include "kiln/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace kiln::tile

using namespace mlir;

namespace {
/// A branch of `loop`'s body on `iv >= bound` (`atLeast`) or `iv < bound`.
struct Split {
  arith::CmpIOp condition;
  Value bound;
  bool atLeast;
};

/// The first `scf.if` at the top of `loop`'s body whose condition compares
/// the induction variable with a value defined outside the loop.
std::optional<Split> matchSplit(scf::ForOp loop) {
  Value iv = loop.getInductionVar();
  for (auto ifOp : loop.getBody()->getOps<scf::IfOp>()) {
    auto cmp = ifOp.getCondition().getDefiningOp<arith::CmpIOp>();
    if (!cmp)
      continue;
    Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
    arith::CmpIPredicate predicate = cmp.getPredicate();
    using P = arith::CmpIPredicate;
    if (rhs == iv) { // bound <= iv, bound > iv: iv >= bound, iv < bound
      std::swap(lhs, rhs);
      predicate = predicate == P::sle ? P::sge : predicate == P::sgt ? P::slt : P::eq;
    }
    if (lhs != iv || !loop.isDefinedOutsideOfLoop(rhs))
      continue;
    if (predicate == P::sge)
      return Split{cmp, rhs, true};
    if (predicate == P::slt)
      return Split{cmp, rhs, false};
  }
  return std::nullopt;
}

/// `loop` as two loops, [lb, split) and [split, ub), with the condition of
/// `split` replaced by its value in each.
void splitLoop(RewriterBase &rewriter, scf::ForOp loop, Split split) {
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound(), step = loop.getStep();
  Type type = lb.getType();
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantOp::create(rewriter, loc, type, rewriter.getIntegerAttr(type, value));
  };
  // ceildiv(max(bound - lb, 0), step), step > 0 (scf.for's rule)
  Value distance = arith::MaxSIOp::create(
      rewriter, loc, arith::SubIOp::create(rewriter, loc, split.bound, lb), constant(0));
  Value iterations = arith::DivSIOp::create(
      rewriter, loc,
      arith::AddIOp::create(rewriter, loc, distance,
                            arith::SubIOp::create(rewriter, loc, step, constant(1))),
      step);
  Value at = arith::MinSIOp::create(
      rewriter, loc,
      arith::AddIOp::create(rewriter, loc, lb,
                            arith::MulIOp::create(rewriter, loc, iterations, step)),
      ub);

  // `before` runs the iterations where iv < bound, `loop` the others.
  IRMapping mapping;
  auto before = llvm::cast<scf::ForOp>(rewriter.clone(*loop, mapping));
  before.getUpperBoundMutable().assign(at);
  auto fold = [&](Value condition, bool value) {
    rewriter.setInsertionPointToStart(condition.getParentBlock());
    Value constant = arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(value));
    rewriter.replaceAllUsesWith(condition, constant);
  };
  fold(mapping.lookup(split.condition.getResult()), !split.atLeast);
  fold(split.condition.getResult(), split.atLeast);
  rewriter.modifyOpInPlace(loop, [&] {
    loop.getLowerBoundMutable().assign(at);
    for (auto [init, result] : llvm::zip_equal(loop.getInitsMutable(), before.getResults()))
      init.set(result);
  });
}

struct TileSplitLoopsPass : kiln::tile::impl::TileSplitLoopsBase<TileSplitLoopsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<scf::ForOp, Split>> splits;
    getOperation().walk([&](scf::ForOp loop) {
      if (std::optional<Split> split = matchSplit(loop);
          split && loop.getLowerBound().getType().isSignlessIntOrIndex())
        splits.emplace_back(loop, *split);
    });
    IRRewriter rewriter(&getContext());
    for (auto &[loop, split] : splits) {
      splitLoop(rewriter, loop, split);
      ++numSplit;
    }
  }
};
} // namespace
