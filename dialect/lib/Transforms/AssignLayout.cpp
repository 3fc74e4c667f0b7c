//===- AssignLayout.cpp - choose the blocked layout of a kernel -------------===//

#include "kiln/Dialect/Tile/Analysis/AxisInfo.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Dialect/Tile/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

namespace kiln::tile {
#define GEN_PASS_DEF_TILEASSIGNLAYOUT
#include "kiln/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace kiln::tile

using namespace mlir;
using namespace kiln::tile;

namespace {
struct TileAssignLayoutPass : kiln::tile::impl::TileAssignLayoutBase<TileAssignLayoutPass> {
  using TileAssignLayoutBase::TileAssignLayoutBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(TileDialect::getKernelAttrName()))
      return;
    int64_t warps = numWarps;
    if (auto attr = func->getAttrOfType<IntegerAttr>(TileDialect::getNumWarpsAttrName()))
      warps = attr.getInt();
    if (warps < 1 || warps > 32 || !llvm::isPowerOf2_64(warps)) {
      func.emitError() << "expected num_warps to be a power of two in [1, 32], got " << warps;
      return signalPassFailure();
    }

    // The narrowest element moved through memory by a vectorizable access
    // decides the run length: one run of it fills a 16-byte access. Accesses
    // through a tile of pointers count only where consecutive elements are
    // consecutive addresses (AxisInfo contiguity >= 2): a gather moves one
    // element per instruction whatever the run, and a long run of a narrow
    // gathered type (16 uint8 elements a thread) only costs registers and
    // leaves threads without work in small tiles. Without any vectorizable
    // access the narrowest accessed element decides, as before.
    AxisInfoAnalysis axisInfo(func);
    int64_t narrowestBytes = 0, narrowestGatherBytes = 0;
    bool failed = false;
    func.walk([&](Operation *op) {
      for (Type type : op->getResultTypes()) {
        auto tensor = llvm::dyn_cast<RankedTensorType>(type);
        if (tensor && !llvm::isPowerOf2_64(tensor.getNumElements())) {
          op->emitOpError() << "tiles must have a power-of-two number of elements, got " << tensor;
          failed = true;
        }
      }
      Type accessed;
      Value ptr;
      if (auto load = llvm::dyn_cast<LoadOp>(op))
        accessed = load.getType(), ptr = load.getPtr();
      else if (auto store = llvm::dyn_cast<StoreOp>(op))
        accessed = store.getValue().getType(), ptr = store.getPtr();
      else if (auto load = llvm::dyn_cast<DescLoadOp>(op))
        accessed = load.getType();
      else if (auto store = llvm::dyn_cast<DescStoreOp>(op))
        accessed = store.getValue().getType();
      if (!accessed || !llvm::isa<RankedTensorType>(accessed))
        return;
      int64_t bytes =
          std::max<int64_t>(1, mlir::getElementTypeOrSelf(accessed).getIntOrFloatBitWidth() / 8);
      int64_t &narrowest =
          ptr && axisInfo.get(ptr).contiguity < 2 ? narrowestGatherBytes : narrowestBytes;
      narrowest = narrowest ? std::min(narrowest, bytes) : bytes;
    });
    if (failed)
      return signalPassFailure();

    OpBuilder b(func.getContext());
    if (!narrowestBytes)
      narrowestBytes = narrowestGatherBytes;
    int64_t elemsPerThread = narrowestBytes ? 16 / narrowestBytes : 1;
    func->setAttr(TileDialect::getThreadsPerBlockAttrName(), b.getI32IntegerAttr(warps * 32));
    func->setAttr(TileDialect::getElemsPerThreadAttrName(), b.getI32IntegerAttr(elemsPerThread));
  }
};
} // namespace
