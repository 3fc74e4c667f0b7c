//===- DeferClusterWaits.cpp - overlap a cluster barrier's wait -----------===//
//
// kiln-defer-cluster-waits: the wait of the barrier that ends a cluster
// exchange moves down to the next op that needs it, so that its latency
// overlaps the arithmetic after the exchange (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_DEFERCLUSTERWAITS
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {
bool isClusterOp(Operation *op) {
  return llvm::isa<tile::ClusterLoadOp, tile::ClusterGatherOp, tile::ClusterSumOp,
                   tile::ClusterBarrierOp>(op);
}

struct DeferClusterWaitsPass : kiln::impl::DeferClusterWaitsBase<DeferClusterWaitsPass> {
  void runOnOperation() override {
    getOperation().walk([&](Operation *exchange) {
      if (!llvm::isa<tile::ClusterLoadOp, tile::ClusterGatherOp, tile::ClusterSumOp>(exchange))
        return;
      // The first later op of the block that is or holds a cluster op, or the
      // terminator: every thread reaches it (cluster ops are in uniform
      // control flow), and the wait must come before the next arrive.
      Operation *next = exchange->getNextNode();
      for (; next; next = next->getNextNode()) {
        if (next->hasTrait<OpTrait::IsTerminator>() || isClusterOp(next))
          break;
        if (next->walk([&](Operation *inner) {
                  return isClusterOp(inner) ? WalkResult::interrupt() : WalkResult::advance();
                })
                .wasInterrupted())
          break;
      }
      if (!next)
        return;
      OpBuilder b(next);
      NVVM::ClusterWaitOp::create(b, exchange->getLoc(), b.getUnitAttr());
      exchange->setAttr(kClusterWaitDeferredAttr, b.getUnitAttr());
    });
  }
};
} // namespace
