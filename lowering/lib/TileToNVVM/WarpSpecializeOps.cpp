//===- WarpSpecializeOps.cpp - consumer warps and a producer warpgroup -----===//
//
// tile.warp_specialize (C consumer threads, the kernel's layout; the program
// runs C + 128 threads, the producer warpgroup last):
//
//   if (tid < C) {
//     setmaxnreg.inc.sync.aligned.u32 R     R = min(240, (T * S - 128 * 40) / C),
//     <consumer region>                     a multiple of 8
//   } else {
//     setmaxnreg.dec.sync.aligned.u32 40
//     if (tid < C + 32) <producer region>   one warp issues; three exit
//   }
//
// The consumers' CTA barriers (bar.sync 0 of layout conversions, reductions,
// TMA store staging) become the named barrier 1 of C threads once the
// conversion is done (replaceConsumerBarriers): the producer warps never
// reach them. setmaxnreg needs whole warpgroups on each side. The kernel
// (T = C + 128 threads, .minnctapersm 1) starts with S = min(255, 65536 / T)
// registers a thread rounded down to 8 (what ptxas gives it): the CTA's pool,
// from which the producers' .dec frees what the consumers' .inc takes.
//
//===----------------------------------------------------------------------===//

#include "ConversionSteps.h"
#include "PatternUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kiln;

namespace {
/// The scf.if of the consumers carries their thread count (for
/// replaceConsumerBarriers, then kiln-allocate-shared-memory).
constexpr llvm::StringLiteral kConsumerThreads = tile::TileDialect::getConsumerThreadsAttrName();

struct WarpSpecializeLowering : TileOpConversion<tile::WarpSpecializeOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::WarpSpecializeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t consumers = tileConverter.getThreadsPerBlock();
    Value tid = createThreadId(rewriter, loc);
    Value isConsumer = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::ult, tid,
                                            createI32Constant(rewriter, loc, consumers));
    auto split = scf::IfOp::create(rewriter, loc, TypeRange(), isConsumer,
                                   /*withElseRegion=*/true);
    split->setAttr(kConsumerThreads, rewriter.getI32IntegerAttr(consumers));
    auto setMaxRegisters = [&](int64_t registers, NVVM::SetMaxRegisterAction action) {
      NVVM::SetMaxRegisterOp::create(
          rewriter, loc, rewriter.getI32IntegerAttr(registers),
          NVVM::SetMaxRegisterActionAttr::get(rewriter.getContext(), action));
    };

    rewriter.setInsertionPointToStart(split.thenBlock());
    setMaxRegisters(getConsumerRegisters(consumers), NVVM::SetMaxRegisterAction::increase);
    rewriter.inlineBlockBefore(&op.getConsumer().front(), split.thenBlock()->getTerminator());

    rewriter.setInsertionPointToStart(split.elseBlock());
    setMaxRegisters(kProducerRegisters, NVVM::SetMaxRegisterAction::decrease);
    Value issues = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::ult, tid,
                                        createI32Constant(rewriter, loc, consumers + 32));
    auto producer = scf::IfOp::create(rewriter, loc, TypeRange(), issues,
                                      /*withElseRegion=*/false);
    rewriter.inlineBlockBefore(&op.getProducer().front(), producer.thenBlock()->getTerminator());
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void kiln::replaceConsumerBarriers(Operation *root) {
  root->walk([](scf::IfOp split) {
    auto threads = split->getAttrOfType<IntegerAttr>(kConsumerThreads);
    if (!threads)
      return;
    SmallVector<NVVM::BarrierOp> barriers;
    split.getThenRegion().walk([&](NVVM::BarrierOp barrier) {
      if (!barrier.getBarrierId() && !barrier.getNumberOfThreads())
        barriers.push_back(barrier);
    });
    for (NVVM::BarrierOp barrier : barriers) {
      OpBuilder b(barrier);
      Location loc = barrier.getLoc();
      auto named =
          NVVM::BarrierOp::create(b, loc, barrier->getResultTypes(), createI32Constant(b, loc, 1),
                                  createI32Constant(b, loc, threads.getInt()),
                                  barrier.getReductionOpAttr(), barrier.getReductionPredicate());
      barrier->replaceAllUsesWith(named);
      barrier->erase();
    }
  });
}

void kiln::populateTileWarpSpecializeOpsToNVVMPatterns(TileTypeConverter &converter,
                                                       RewritePatternSet &patterns) {
  patterns.add<WarpSpecializeLowering>(converter);
}
