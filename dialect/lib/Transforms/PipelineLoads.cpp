//===- PipelineLoads.cpp - rings for descriptor and bulk loads in loops ----===//
//
// scf.for { %t = tile.desc_load %d[f(iv)] ... }   with tile.num_stages = N
//   ->
// %ring = tile.ring_alloc
// tile.ring_issue %d[f(lb + k*step)] -> %ring[k] if lb + k*step < ub   (k < N-1)
// scf.for ... iter_args(%it = 0) {
//   %t = tile.ring_wait_load %ring[%it mod N], (%it / N) mod 2
//   tile.ring_issue %d[f(iv + (N-1)*step)] -> %ring[(%it + N-1) mod N] if ... < ub
//   ...
//   scf.yield ..., %it + 1
// }
// tile.ring_release %ring                (not after a warp-specialized loop)
//
// A tile.bulk_load %p(iv) [count %n(iv)] becomes the same ring with a pointer
// source: tile.ring_issue %p(lb + k*step) [count %n(...)] -> %ring[k] ..., and
// tile.ring_wait_load ... [count %n] in place of the load (the count of the
// current iteration, so the lanes past it read as zero). Its refill of slot
// (%it + N-1) mod N, the slot read in the previous iteration, comes before the
// wait for slot %it mod N (registers: the current row is not live across it).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Dialect/Tile/Transforms/Passes.h"

#include "LoopSlice.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln::tile {
#define GEN_PASS_DEF_TILEPIPELINELOADS
#include "kiln/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace kiln::tile

using namespace mlir;
using namespace kiln::tile;

namespace {

/// `indices` recomputed with the induction variable replaced by `iv`.
SmallVector<Value> indicesAt(OpBuilder &b, scf::ForOp loop, ArrayRef<Operation *> slice,
                             ValueRange indices, Value iv) {
  IRMapping map;
  map.map(loop.getInductionVar(), iv);
  for (Operation *op : slice)
    b.clone(*op, map);
  SmallVector<Value> out;
  for (Value v : indices)
    out.push_back(map.lookupOrDefault(v));
  return out;
}

Value constantLike(OpBuilder &b, Location loc, Type type, int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
}

/// A load of the loop that becomes a ring: a tile.desc_load (the descriptor
/// and coordinates) or a tile.bulk_load (the pointer and optional count).
struct PipelinedLoad {
  Operation *load;
  SmallVector<Operation *> slice;

  RankedTensorType getBlockType() {
    return llvm::cast<RankedTensorType>(load->getResult(0).getType());
  }
  /// The values that depend on the iteration: coordinates, or pointer and count.
  SmallVector<Value> getIterationValues() {
    if (auto desc = llvm::dyn_cast<DescLoadOp>(load))
      return SmallVector<Value>(desc.getIndices());
    auto bulk = llvm::cast<BulkLoadOp>(load);
    SmallVector<Value> values{bulk.getPtr()};
    if (bulk.getCount())
      values.push_back(bulk.getCount());
    return values;
  }
  /// The count of the loop body's own iteration (null without one).
  Value getCount() {
    if (auto bulk = llvm::dyn_cast<BulkLoadOp>(load))
      return bulk.getCount();
    return Value();
  }
  /// Issues the load of the iteration whose values (getIterationValues()
  /// recomputed) are `values` into `slot` of `ring`.
  void issue(OpBuilder &b, Location loc, ArrayRef<Value> values, Value ring, Value slot,
             Value pred) {
    if (auto desc = llvm::dyn_cast<DescLoadOp>(load)) {
      RingIssueOp::create(b, loc, desc.getDesc(), values, Value(), ring, slot, pred);
      return;
    }
    Value count = values.size() > 1 ? values[1] : Value();
    RingIssueOp::create(b, loc, values[0], ValueRange(), count, ring, slot, pred);
  }
};

struct TilePipelineLoadsPass : kiln::tile::impl::TilePipelineLoadsBase<TilePipelineLoadsPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kNumStages))
        loops.push_back(loop);
    });
    // Rings share the block's shared memory with the boxes of the kernel's
    // other descriptor accesses and bulk loads (each has its own buffer).
    budget = kiln::tile::kMaxSharedBytes;
    getOperation().walk([&](Operation *op) {
      auto parent = op->getParentOfType<scf::ForOp>();
      bool pipelined = parent && parent->hasAttr(kNumStages);
      if (auto load = llvm::dyn_cast<DescLoadOp>(op); load && !pipelined)
        budget -= load.getDesc().getType().getBoxBytes();
      else if (auto store = llvm::dyn_cast<DescStoreOp>(op))
        budget -= store.getDesc().getType().getBoxBytes();
      else if (auto bulk = llvm::dyn_cast<BulkLoadOp>(op); bulk && !pipelined)
        budget -= bulk.getBytes() + 128;
      else if (auto ring = llvm::dyn_cast<RingAllocOp>(op)) // kiln-tile-warp-specialize's
        budget -= ring.getType().getTotalBytes() + 1024;
    });
    for (scf::ForOp loop : loops)
      if (failed(pipeline(loop)))
        return signalPassFailure();
  }

  static constexpr llvm::StringLiteral kNumStages = TileDialect::getNumStagesAttrName();
  int64_t budget = 0;

  LogicalResult pipeline(scf::ForOp loop) {
    auto stagesAttr = loop->getAttrOfType<IntegerAttr>(kNumStages);
    loop->removeAttr(kNumStages);
    if (!stagesAttr || stagesAttr.getInt() < 1)
      return loop.emitError() << "expected tile.num_stages to be a positive integer";
    int64_t stages = stagesAttr.getInt();
    if (stages < 2)
      return success();

    SmallVector<PipelinedLoad> loads;
    for (Operation &op : *loop.getBody()) {
      if (!llvm::isa<DescLoadOp, BulkLoadOp>(op))
        continue;
      PipelinedLoad load{&op, {}};
      std::optional<SmallVector<Operation *>> slice = indexSlice(loop, load.getIterationValues());
      if (!slice)
        continue;
      load.slice = std::move(*slice);
      loads.push_back(std::move(load));
    }
    if (loads.empty())
      return success();
    // Fewer stages where the rings would not fit the static shared memory.
    // Slots of whole KiB are 1024-byte aligned (RingType::getSlotsOffset).
    auto ringsBytes = [&](int64_t n) {
      int64_t total = 0;
      for (PipelinedLoad &p : loads)
        total += RingType::get(loop.getContext(), static_cast<unsigned>(n), p.getBlockType())
                     .getTotalBytes() +
                 1024;
      return total;
    };
    while (stages >= 2 && ringsBytes(stages) > budget)
      --stages;
    if (stages < 2)
      return success();

    Location loc = loop.getLoc();
    IRRewriter b(loop.getContext());
    b.setInsertionPoint(loop);
    Type ivType = loop.getInductionVar().getType();
    Value lb = loop.getLowerBound(), ub = loop.getUpperBound(), step = loop.getStep();
    SmallVector<Value> rings;
    for (PipelinedLoad &p : loads) {
      // The ring's block: the box, without the tile's layout encoding.
      RankedTensorType tile = p.getBlockType();
      auto box = RankedTensorType::get(tile.getShape(), tile.getElementType());
      rings.push_back(RingAllocOp::create(
          b, loc, RingType::get(loop.getContext(), static_cast<unsigned>(stages), box)));
    }
    // Prologue: the loads of iterations 0 .. stages-2.
    for (int64_t k = 0; k + 1 < stages; ++k) {
      Value iv = arith::AddIOp::create(
          b, loc, lb, arith::MulIOp::create(b, loc, step, constantLike(b, loc, ivType, k)));
      Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, iv, ub);
      for (auto [p, ring] : llvm::zip(loads, rings)) {
        SmallVector<Value> idx = indicesAt(b, loop, p.slice, p.getIterationValues(), iv);
        p.issue(b, p.load->getLoc(), idx, ring, constantLike(b, loc, b.getI32Type(), k), inRange);
      }
    }

    // The iteration counter, carried.
    Value zero = constantLike(b, loc, b.getI32Type(), 0);
    auto newLoop = llvm::cast<scf::ForOp>(*loop.replaceWithAdditionalYields(
        b, ValueRange{zero}, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &yb, Location yloc, ArrayRef<BlockArgument> newArgs) {
          Value one = constantLike(yb, yloc, yb.getI32Type(), 1);
          return SmallVector<Value>{arith::AddIOp::create(yb, yloc, newArgs.front(), one)};
        }));
    Value it = newLoop.getRegionIterArgs().back();
    Value iv = newLoop.getInductionVar();
    b.setInsertionPoint(newLoop); // the old loop (the insertion point) is gone
    Value n = constantLike(b, loc, b.getI32Type(), stages);
    for (auto [p, ring] : llvm::zip(loads, rings)) {
      Location lloc = p.load->getLoc();
      b.setInsertionPoint(p.load);
      // The load `stages - 1` iterations ahead, into the slot read last iteration.
      auto issueAhead = [&] {
        Value ahead = arith::AddIOp::create(
            b, lloc, iv,
            arith::MulIOp::create(b, lloc, step, constantLike(b, lloc, ivType, stages - 1)));
        Value inRange = arith::CmpIOp::create(b, lloc, arith::CmpIPredicate::slt, ahead,
                                              newLoop.getUpperBound());
        SmallVector<Value> idx = indicesAt(b, newLoop, p.slice, p.getIterationValues(), ahead);
        Value nextSlot = arith::RemUIOp::create(
            b, lloc,
            arith::AddIOp::create(b, lloc, it, constantLike(b, lloc, b.getI32Type(), stages - 1)),
            n);
        p.issue(b, lloc, idx, ring, nextSlot, inRange);
      };
      // A bulk row's refill goes BEFORE the wait for the current slot (another slot):
      // the row being read is then not live in registers across the issue's address
      // arithmetic, and the copy starts earlier. Descriptor loads keep the refill after
      // the wait, where kiln-tile-accelerate-dot expects it.
      bool issueFirst = llvm::isa<BulkLoadOp>(p.load);
      if (issueFirst)
        issueAhead();
      Value slot = arith::RemUIOp::create(b, lloc, it, n);
      Value phase = arith::AndIOp::create(b, lloc, arith::DivUIOp::create(b, lloc, it, n),
                                          constantLike(b, lloc, b.getI32Type(), 1));
      auto wait =
          RingWaitLoadOp::create(b, lloc, p.getBlockType(), ring, slot, phase, p.getCount());
      if (!issueFirst)
        issueAhead();
      b.replaceOp(p.load, wait.getResult());
      ++numPipelined;
    }
    // Drained after the loop: every issued slot was waited for in it. Released
    // there, so that the buffers after the loop may take the rings' bytes. A
    // warp-specialized loop's producer warps do not reach code after it.
    if (!newLoop->hasAttr(TileDialect::getWarpSpecializeAttrName())) {
      b.setInsertionPointAfter(newLoop);
      for (Value ring : rings)
        RingReleaseOp::create(b, loc, ring);
    }
    return success();
  }
};
} // namespace
