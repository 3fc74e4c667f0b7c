//===- WarpSpecialize.cpp - a producer warpgroup fills the ring ------------===//
//
// See Passes.td (kiln-tile-warp-specialize). A kernel
//
//   <before>
//   scf.for %iv ... { %t = tile.desc_load %d[f(iv)] ... } {tile.num_stages = N,
//                                                          tile.warp_specialize}
//   <after>
//
// becomes
//
//   %ring = tile.ring_alloc                      (one per load)
//   %empty = tile.mbarrier_alloc {per_warp}
//   tile.warp_specialize consumer {
//     <before>
//     scf.for %iv ... iter_args(..., %it = 0) {
//       %t = tile.ring_wait_load %ring[it mod N], (it / N) mod 2
//       tile.mbarrier_arrive %empty[(it + N - 1) mod N] if it != 0
//       ...
//     }
//     <after>
//   } producer {
//     <the scalars the bounds and coordinates need, recomputed>
//     scf.for %iv ... iter_args(%it = 0) {
//       tile.mbarrier_wait %empty[it mod N], ((it / N) mod 2) xor 1
//       tile.ring_issue %d[f(iv)] -> %ring[it mod N] if true {producer}
//     }
//   }
//
// The EMPTY barriers expect one arrival per consumer warp (tile.mbarrier_arrive:
// a warp barrier, then lane 0), so the producer refills slot s only once every
// consumer warp is past its wait for the slot's previous fill; a consumer
// thread thus never waits on a FULL barrier two phases ahead. On sm_90a
// kiln-tile-accelerate-dot moves the release after the wgmma.wait_group that
// leaves only the current wgmma in flight (the previous one read the slot).
//
// sm_100a/sm_103a: the same split. When kiln-tile-accelerate-dot moves the
// dot onto tcgen05 it replaces the per-warp releases with the tcgen05.commit
// of each iteration's MMAs to EMPTY[it mod N] (mbarrier::arrive::one, one
// arrival: the EMPTY barriers lose per_warp), issued by the elected lane of
// warp 0 that issued the MMAs; the commit arrives once those MMAs (the last
// readers of the slot) are done, so the producer's TMA cannot overwrite a
// slot a tensor-core MMA still reads. Only warp 0 then waits for FULL slots
// (tile.ring_wait {issuer}): the other consumer warps no longer gate the
// producer, so a wait of theirs could find a FULL barrier two phases on. After the
// loop a consumer barrier and a wait on the last commit's EMPTY barrier
// precede the Tensor Memory reads. The argument that every parity wait sees
// its barrier at most one phase away is in AccelerateDot.cpp
// (rewriteToSpecializedTcgen05Dot). A dot left on mma.sync keeps this
// pass's per-warp releases, which are right on any arch.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Dialect/Tile/Transforms/Passes.h"
#include "kiln/Support/Arch.h"

#include "LoopSlice.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace kiln::tile {
#define GEN_PASS_DEF_TILEWARPSPECIALIZE
#include "kiln/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace kiln::tile

using namespace mlir;
using namespace kiln::tile;

namespace {

Value constantI32(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
}

bool isTile(Type type) { return llvm::isa<RankedTensorType>(type); }

/// A load of the loop that the producer issues into a ring.
struct SpecializedLoad {
  DescLoadOp load;
  SmallVector<Operation *> slice; ///< the body's ops its coordinates need
  Value ring;
};

struct TileWarpSpecializePass : kiln::tile::impl::TileWarpSpecializeBase<TileWarpSpecializePass> {
  using TileWarpSpecializeBase::TileWarpSpecializeBase;

  static constexpr llvm::StringLiteral kNumStages = TileDialect::getNumStagesAttrName();
  static constexpr llvm::StringLiteral kWarpSpecialize = TileDialect::getWarpSpecializeAttrName();

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<scf::ForOp> loops;
    func.walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kWarpSpecialize))
        loops.push_back(loop);
    });
    if (loops.empty())
      return;
    if (loops.size() > 1) {
      InFlightDiagnostic diag = loops[1].emitError()
                                << "expected one warp-specialized loop per kernel, found "
                                << loops.size();
      diag.attachNote(loops[0].getLoc()) << "the first one";
      return signalPassFailure();
    }
    if (failed(specialize(func, loops.front())))
      return signalPassFailure();
  }

  LogicalResult specialize(func::FuncOp func, scf::ForOp loop) {
    loop->removeAttr(kWarpSpecialize);
    auto stagesAttr = loop->getAttrOfType<IntegerAttr>(kNumStages);
    loop->removeAttr(kNumStages);
    // The same split on both: Hopper's dot is wgmma, Blackwell's tcgen05
    // (kiln-tile-accelerate-dot then turns the releases into tcgen05.commit).
    std::optional<kiln::Arch> target = kiln::Arch::get(arch);
    if (!target || !target->hasSetmaxnreg())
      return loop.emitError() << "warp specialization needs "
                              << kiln::Arch::namesWith(&kiln::Arch::hasSetmaxnreg)
                              << " (setmaxnreg), got "
                              << (arch.empty() ? std::string("no arch") : "'" + arch + "'");
    if (!stagesAttr || stagesAttr.getInt() < 2)
      return loop.emitError() << "expected tile.num_stages >= 2 on a warp-specialized loop";
    if (loop->getParentOp() != func.getOperation())
      return loop.emitError() << "expected the warp-specialized loop at the top level of the "
                                 "kernel, not inside '"
                              << loop->getParentOp()->getName() << "'";
    if (func.getBody().getBlocks().size() != 1)
      return loop.emitError() << "expected a kernel of one block";

    // A coordinate may read a block-table entry (isReadOnlyScalarLoad): the
    // producer reads it again for its own iteration.
    SmallVector<SpecializedLoad> loads;
    SmallVector<std::pair<DescLoadOp, SliceFailure>> rejected;
    for (Operation &op : *loop.getBody()) {
      auto load = llvm::dyn_cast<DescLoadOp>(op);
      if (!load)
        continue;
      SliceFailure why{load.getLoc(), ""};
      std::optional<SmallVector<Operation *>> slice = indexSlice(loop, load.getIndices(), &why);
      if (slice)
        loads.push_back({load, std::move(*slice), Value()});
      else
        rejected.emplace_back(load, std::move(why));
    }
    if (loads.empty()) {
      InFlightDiagnostic diag = loop.emitError()
                                << "expected a descriptor load (desc.load) in the warp-specialized "
                                   "loop whose coordinates are functions of the loop index";
      for (auto &[load, why] : rejected)
        diag.attachNote(load.getLoc()) << "its coordinates depend on " << why.reason;
      return diag;
    }
    for (auto &[load, why] : rejected) {
      InFlightDiagnostic diag = load.emitWarning()
                                << "'" << load->getName()
                                << "' is not issued by the producer warps: its coordinates "
                                   "depend on "
                                << why.reason;
      diag.attachNote(why.loc) << "here";
    }

    // The values outside the loop that the producer needs: they are recomputed
    // in its region (pure scalar ops and scalar loads of the kernel's block) or
    // are arguments.
    llvm::SetVector<Operation *> outside;
    SmallVector<Value> worklist{loop.getLowerBound(), loop.getUpperBound(), loop.getStep()};
    for (SpecializedLoad &l : loads) {
      worklist.push_back(l.load.getDesc());
      llvm::append_range(worklist, l.load.getIndices());
      for (Operation *op : l.slice)
        llvm::append_range(worklist, op->getOperands());
    }
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || loop.getBody()->findAncestorOpInBlock(*def))
        continue; // an argument, or computed per iteration (a slice)
      // A scalar load (varlen attention's sequence start) is read again by
      // the producer: a kernel input it does not write.
      bool scalarLoad = llvm::isa<LoadOp>(def);
      if (def->getNumRegions() != 0 || (!isMemoryEffectFree(def) && !scalarLoad) ||
          llvm::any_of(def->getResultTypes(), isTile) ||
          llvm::any_of(def->getOperandTypes(), isTile)) {
        InFlightDiagnostic diag = loop.emitError()
                                  << "expected the loop bounds and load coordinates of a "
                                     "warp-specialized loop to be pure scalar computations";
        diag.attachNote(def->getLoc())
            << "the producer warps would need '" << def->getName() << "'";
        return diag;
      }
      if (outside.insert(def))
        llvm::append_range(worklist, def->getOperands());
    }
    SmallVector<Operation *> producerOps(outside.begin(), outside.end());
    llvm::sort(producerOps, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });

    // Rings and the empty barriers share the shared memory with the kernel's
    // other boxes (kiln-tile-pipeline-loads counts the same way).
    int64_t budget = kiln::tile::kMaxSharedBytes;
    func.walk([&](Operation *op) {
      if (auto load = llvm::dyn_cast<DescLoadOp>(op);
          load && !llvm::any_of(loads, [&](SpecializedLoad &l) { return l.load == load; }))
        budget -= load.getDesc().getType().getBoxBytes();
      else if (auto store = llvm::dyn_cast<DescStoreOp>(op))
        budget -= store.getDesc().getType().getBoxBytes();
      else if (auto bulk = llvm::dyn_cast<BulkLoadOp>(op))
        budget -= bulk.getBytes() + 128;
    });
    MLIRContext *context = loop.getContext();
    auto ringsBytes = [&](int64_t n) {
      int64_t total = 8 * n;
      for (SpecializedLoad &l : loads)
        total +=
            RingType::get(context, static_cast<unsigned>(n), l.load.getType()).getTotalBytes() +
            1024;
      return total;
    };
    int64_t stages = stagesAttr.getInt();
    while (stages >= 2 && ringsBytes(stages) > budget)
      --stages;
    if (stages < 2)
      return loop.emitError() << "the rings of the warp-specialized loop do not fit the shared "
                                 "memory with 2 stages";

    // Barriers first, where every thread initializes and waits for them.
    Location loc = loop.getLoc();
    Block &entry = func.getBody().front();
    OpBuilder b(context);
    b.setInsertionPointToStart(&entry);
    for (SpecializedLoad &l : loads) {
      RankedTensorType tile = l.load.getType();
      auto box = RankedTensorType::get(tile.getShape(), tile.getElementType());
      l.ring =
          RingAllocOp::create(b, loc, RingType::get(context, static_cast<unsigned>(stages), box));
    }
    auto empty =
        MBarrierAllocOp::create(b, loc, MBarriersType::get(context, static_cast<unsigned>(stages)),
                                /*per_warp=*/true);

    // Everything else of the kernel is the consumers'.
    auto split = WarpSpecializeOp::create(b, loc);
    Block *consumer = b.createBlock(&split.getConsumer());
    Block *producer = b.createBlock(&split.getProducer());
    consumer->getOperations().splice(consumer->end(), entry.getOperations(),
                                     std::next(split->getIterator()),
                                     entry.getTerminator()->getIterator());

    // The producer: the loop again, waiting for empty slots and issuing.
    b.setInsertionPointToStart(producer);
    IRMapping map;
    for (Operation *op : producerOps)
      b.clone(*op, map);
    Value n = constantI32(b, loc, stages), one = constantI32(b, loc, 1);
    scf::ForOp::create(
        b, loc, map.lookupOrDefault(loop.getLowerBound()),
        map.lookupOrDefault(loop.getUpperBound()), map.lookupOrDefault(loop.getStep()),
        ValueRange{constantI32(b, loc, 0)},
        [&](OpBuilder &lb, Location l, Value iv, ValueRange args) {
          Value it = args.front();
          Value slot = arith::RemUIOp::create(lb, l, it, n);
          Value parity = arith::XOrIOp::create(
              lb, l, arith::AndIOp::create(lb, l, arith::DivUIOp::create(lb, l, it, n), one), one);
          MBarrierWaitOp::create(lb, l, empty, slot, parity);
          Value always = arith::ConstantOp::create(lb, l, lb.getBoolAttr(true));
          for (SpecializedLoad &load : loads) {
            IRMapping iteration = map;
            iteration.map(loop.getInductionVar(), iv);
            for (Operation *op : load.slice)
              lb.clone(*op, iteration);
            SmallVector<Value> indices = llvm::map_to_vector(
                load.load.getIndices(), [&](Value v) { return iteration.lookupOrDefault(v); });
            RingIssueOp::create(lb, load.load.getLoc(), map.lookupOrDefault(load.load.getDesc()),
                                indices, Value(), Value(), load.ring, slot, always,
                                /*producer=*/true);
          }
          scf::YieldOp::create(lb, l, ValueRange{arith::AddIOp::create(lb, l, it, one)});
        });

    // The consumers: each load waits for its slot; after the last wait the
    // slot of the previous iteration is released.
    IRRewriter rewriter(context);
    rewriter.setInsertionPoint(loop);
    Value zero = constantI32(rewriter, loc, 0);
    auto newLoop = llvm::cast<scf::ForOp>(*loop.replaceWithAdditionalYields(
        rewriter, ValueRange{zero}, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &yb, Location yloc, ArrayRef<BlockArgument> newArgs) {
          return SmallVector<Value>{
              arith::AddIOp::create(yb, yloc, newArgs.front(), constantI32(yb, yloc, 1))};
        }));
    Value it = newLoop.getRegionIterArgs().back();
    Operation *lastWait = nullptr;
    for (SpecializedLoad &l : loads) {
      Location lloc = l.load.getLoc();
      rewriter.setInsertionPoint(l.load);
      Value cn = constantI32(rewriter, lloc, stages);
      Value slot = arith::RemUIOp::create(rewriter, lloc, it, cn);
      Value phase =
          arith::AndIOp::create(rewriter, lloc, arith::DivUIOp::create(rewriter, lloc, it, cn),
                                constantI32(rewriter, lloc, 1));
      auto wait =
          RingWaitLoadOp::create(rewriter, lloc, l.load.getType(), l.ring, slot, phase, Value(),
                                 /*again=*/false);
      rewriter.replaceOp(l.load, wait.getResult());
      if (!lastWait || lastWait->isBeforeInBlock(wait))
        lastWait = wait;
    }
    rewriter.setInsertionPointAfter(lastWait);
    Value previous = arith::RemUIOp::create(
        rewriter, loc,
        arith::AddIOp::create(rewriter, loc, it, constantI32(rewriter, loc, stages - 1)),
        constantI32(rewriter, loc, stages));
    Value notFirst = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne, it,
                                           constantI32(rewriter, loc, 0));
    MBarrierArriveOp::create(rewriter, loc, empty, previous, notFirst);
    ++numSpecialized;
    return success();
  }
};
} // namespace
