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
// In a loop of dots (one with a tile.dot in its body, not warp-specialized), a
// tile.load of a tensor of pointers %p(iv) [mask %m(iv)] (no ordering or cache
// hint, masked-off lanes zero) becomes the same ring filled by a gather:
// tile.ring_issue %p(...) [mask %m(...)] -> %ring[...], every thread copying
// its elements (cp.async), issued before the wait as a bulk load's refill is.
// Every gather refill of an iteration but its first is `covered`: the first's
// CTA barrier already follows every read of the slots the others refill.
// A second load of the same pointers and mask in the iteration reads the slot
// again (tile.ring_wait_load {again}) rather than filling another ring.
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
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln::tile {
#define GEN_PASS_DEF_TILEPIPELINELOADS
#include "kiln/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace kiln::tile

using namespace mlir;
using namespace kiln::tile;

namespace {

/// Recomputes the ops of `slice` (a loop body's, see indexSlice) for the
/// iteration whose induction variable `map` maps the loop's to; ops already
/// mapped (shared with the slice of an earlier load) are not cloned again. A
/// load of the slice (a block-table entry, or a block of them) is masked by `inRange`:
/// the memory it reads may end with the loop's last iteration.
void cloneSlice(OpBuilder &b, ArrayRef<Operation *> slice, IRMapping &map, Value inRange) {
  for (Operation *op : slice) {
    if (map.contains(op))
      continue;
    auto load = llvm::dyn_cast<LoadOp>(op);
    if (!load) {
      b.clone(*op, map);
      continue;
    }
    Location loc = load.getLoc();
    Value mask = inRange;
    if (auto tile = llvm::dyn_cast<RankedTensorType>(load.getType())) // a gather's table block
      mask = SplatOp::create(b, loc, RankedTensorType::get(tile.getShape(), b.getI1Type()), mask);
    if (load.getMask())
      mask = arith::AndIOp::create(b, loc, map.lookupOrDefault(load.getMask()), mask);
    Value other = load.getOther()
                      ? map.lookupOrDefault(load.getOther())
                      : arith::ConstantOp::create(
                            b, loc, llvm::cast<TypedAttr>(b.getZeroAttr(load.getType())));
    auto clone = llvm::cast<LoadOp>(b.clone(*op, map));
    clone.getMaskMutable().assign(mask);
    clone.getOtherMutable().assign(other);
  }
}

SmallVector<Value> lookup(IRMapping &map, ValueRange values) {
  return llvm::map_to_vector(values, [&](Value v) { return map.lookupOrDefault(v); });
}

Value constantLike(OpBuilder &b, Location loc, Type type, int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
}

/// Whether `v` is zero (an integer or float constant or a splat of one).
bool isZero(Value v) {
  if (auto splat = v.getDefiningOp<SplatOp>())
    v = splat.getOperand();
  return matchPattern(v, m_AnyZeroFloat()) || matchPattern(v, m_Zero());
}

/// Whether `load` may become a gather ring: a tile of pointers, a plain load
/// (no ordering, poll or cache hint) whose masked-off lanes are zero.
bool isGatherCandidate(LoadOp load) {
  auto type = llvm::dyn_cast<RankedTensorType>(load.getType());
  if (!type || type.getElementType().isInteger(1) || load.getSem() || load.getPollNs() ||
      load.getCache() || load.getEvict())
    return false;
  return !load.getOther() || isZero(load.getOther());
}

/// Whether `a` and `b` are the same value: one SSA value, or the results of
/// equal side-effect-free ops of equal operands (a mask broadcast once a
/// load before CSE has run).
bool sameValue(Value a, Value b, int depth = 12) {
  if (a == b)
    return true;
  Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
  if (!x || !y || depth == 0 || !isMemoryEffectFree(x) || x->getNumRegions() ||
      llvm::cast<OpResult>(a).getResultNumber() != llvm::cast<OpResult>(b).getResultNumber())
    return false;
  return OperationEquivalence::isEquivalentTo(
      x, y, [&](Value l, Value r) { return success(sameValue(l, r, depth - 1)); },
      /*markEquivalent=*/nullptr, OperationEquivalence::IgnoreLocations);
}

/// A load of the loop that becomes a ring: a tile.desc_load (the descriptor
/// and coordinates), a tile.bulk_load (the pointer and optional count) or a
/// gathering tile.load (the pointers and optional mask).
struct PipelinedLoad {
  Operation *load;
  SmallVector<Operation *> slice;

  RankedTensorType getBlockType() {
    return llvm::cast<RankedTensorType>(load->getResult(0).getType());
  }
  /// The values that depend on the iteration: coordinates, pointer and count,
  /// or pointers and mask.
  SmallVector<Value> getIterationValues() {
    if (auto desc = llvm::dyn_cast<DescLoadOp>(load))
      return SmallVector<Value>(desc.getIndices());
    if (auto gather = llvm::dyn_cast<LoadOp>(load)) {
      SmallVector<Value> values{gather.getPtr()};
      if (gather.getMask())
        values.push_back(gather.getMask());
      return values;
    }
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
  RingIssueOp issue(OpBuilder &b, Location loc, ArrayRef<Value> values, Value ring, Value slot,
                    Value pred) {
    if (auto desc = llvm::dyn_cast<DescLoadOp>(load))
      return RingIssueOp::create(b, loc, desc.getDesc(), values, Value(), Value(), ring, slot,
                                 pred);
    Value second = values.size() > 1 ? values[1] : Value();
    if (llvm::isa<LoadOp>(load))
      return RingIssueOp::create(b, loc, values[0], ValueRange(), Value(), second, ring, slot,
                                 pred);
    return RingIssueOp::create(b, loc, values[0], ValueRange(), second, Value(), ring, slot, pred);
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

    // Gathers are pipelined in loops of dots only (where a synchronous load
    // stalls the tensor cores), run by every thread (not a warp-specialized
    // producer).
    bool gathers =
        !loop->hasAttr(TileDialect::getWarpSpecializeAttrName()) &&
        loop.getBody()->walk([](DotOp) { return WalkResult::interrupt(); }).wasInterrupted();
    SmallVector<PipelinedLoad> loads;
    // Second loads of a gather's pointers and mask: (the load, the first).
    SmallVector<std::pair<LoadOp, Operation *>> repeats;
    for (Operation &op : *loop.getBody()) {
      auto gather = llvm::dyn_cast<LoadOp>(op);
      if (gather && !(gathers && isGatherCandidate(gather)))
        continue;
      if (!gather && !llvm::isa<DescLoadOp, BulkLoadOp>(op))
        continue;
      if (gather) {
        auto first = llvm::find_if(loads, [&](PipelinedLoad &p) {
          auto other = llvm::dyn_cast<LoadOp>(p.load);
          return other && other.getType() == gather.getType() &&
                 sameValue(other.getPtr(), gather.getPtr()) &&
                 !other.getMask() == !gather.getMask() &&
                 (!other.getMask() || sameValue(other.getMask(), gather.getMask()));
        });
        if (first != loads.end()) {
          repeats.emplace_back(gather, first->load);
          continue;
        }
      }
      PipelinedLoad load{&op, {}};
      SliceFailure why{op.getLoc(), ""};
      std::optional<SmallVector<Operation *>> slice =
          indexSlice(loop, load.getIterationValues(), &why, /*tiles=*/bool(gather));
      if (!slice && gather)
        continue; // a gather whose pointers come from the iteration's data stays a load
      if (!slice) {
        // The load stays synchronous: correct, but not what the loop asked for.
        InFlightDiagnostic diag =
            op.emitWarning() << "'" << op.getName() << "' is not pipelined (" << kNumStages << " = "
                             << stages << "): its "
                             << (llvm::isa<DescLoadOp>(op) ? "coordinates" : "pointer or count")
                             << " depend on " << why.reason;
        diag.attachNote(why.loc) << "here";
        continue;
      }
      load.slice = std::move(*slice);
      loads.push_back(std::move(load));
    }
    // A gather whose data another ring's slice reads (a table) stays a load: the
    // slices are recomputed from the loop's own ops.
    llvm::SmallPtrSet<Operation *, 4> sliced;
    for (PipelinedLoad &p : loads)
      for (Operation *op : p.slice)
        if (llvm::isa<LoadOp>(op))
          sliced.insert(op);
    llvm::erase_if(repeats, [&](auto &r) { return sliced.contains(r.second); });
    llvm::erase_if(loads, [&](PipelinedLoad &p) { return sliced.contains(p.load); });
    if (loads.empty())
      return success();
    // Fewer stages where the rings would not fit the static shared memory.
    // Each ring is 1024-byte aligned (its slots of whole KiB on the swizzle's
    // period): up to 1024 bytes of padding before it.
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
    if (stages < 2) {
      loop.emitWarning() << "the loads of the loop are not pipelined (" << kNumStages << " = "
                         << stagesAttr.getInt() << "): their rings need " << ringsBytes(2)
                         << " bytes of shared memory with 2 stages, more than the "
                         << std::max<int64_t>(budget, 0) << " left beside the kernel's other boxes";
      return success();
    }

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
      IRMapping map;
      map.map(loop.getInductionVar(), iv);
      for (auto [p, ring] : llvm::zip(loads, rings)) {
        cloneSlice(b, p.slice, map, inRange);
        p.issue(b, p.load->getLoc(), lookup(map, p.getIterationValues()), ring,
                constantLike(b, loc, b.getI32Type(), k), inRange);
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
    // The iteration `stages - 1` ahead, its bound check and its slice values,
    // computed at the first load that issues (in program order: they dominate
    // the later loads' issues).
    Value aheadInRange;
    IRMapping aheadMap;
    // Whether a gather of this iteration was refilled already: its CTA barrier,
    // after every read of the slots refilled here (all in earlier iterations),
    // covers the later gathers' refills too.
    bool gathered = false;
    for (auto [p, ring] : llvm::zip(loads, rings)) {
      Location lloc = p.load->getLoc();
      b.setInsertionPoint(p.load);
      // The load `stages - 1` iterations ahead, into the slot read last iteration.
      auto issueAhead = [&] {
        if (!aheadInRange) {
          Value ahead = arith::AddIOp::create(
              b, lloc, iv,
              arith::MulIOp::create(b, lloc, step, constantLike(b, lloc, ivType, stages - 1)));
          aheadInRange = arith::CmpIOp::create(b, lloc, arith::CmpIPredicate::slt, ahead,
                                               newLoop.getUpperBound());
          aheadMap.map(iv, ahead);
        }
        Value inRange = aheadInRange;
        cloneSlice(b, p.slice, aheadMap, inRange);
        SmallVector<Value> idx = lookup(aheadMap, p.getIterationValues());
        Value nextSlot = arith::RemUIOp::create(
            b, lloc,
            arith::AddIOp::create(b, lloc, it, constantLike(b, lloc, b.getI32Type(), stages - 1)),
            n);
        RingIssueOp issue = p.issue(b, lloc, idx, ring, nextSlot, inRange);
        if (llvm::isa<LoadOp>(p.load)) {
          issue.setCovered(gathered);
          gathered = true;
        }
      };
      // A bulk row's or a gather's refill goes BEFORE the wait for the current slot
      // (another slot): the row being read is then not live in registers across the
      // issue's address arithmetic, and the copy starts earlier. Descriptor loads keep
      // the refill after the wait, where kiln-tile-accelerate-dot expects it.
      bool issueFirst = llvm::isa<BulkLoadOp, LoadOp>(p.load);
      if (issueFirst)
        issueAhead();
      Value slot = arith::RemUIOp::create(b, lloc, it, n);
      Value phase = arith::AndIOp::create(b, lloc, arith::DivUIOp::create(b, lloc, it, n),
                                          constantLike(b, lloc, b.getI32Type(), 1));
      auto wait = RingWaitLoadOp::create(b, lloc, p.getBlockType(), ring, slot, phase, p.getCount(),
                                         /*again=*/false);
      if (!issueFirst)
        issueAhead();
      for (auto [repeat, first] : repeats) {
        if (first != p.load)
          continue;
        b.setInsertionPoint(repeat);
        auto again = RingWaitLoadOp::create(b, repeat.getLoc(), p.getBlockType(), ring, slot, phase,
                                            Value(), /*again=*/true);
        b.replaceOp(repeat, again.getResult());
        ++numPipelined;
      }
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
