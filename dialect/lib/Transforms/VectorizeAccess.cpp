//===- VectorizeAccess.cpp - vector width of memory accesses ----------------===//

#include "kiln/Dialect/Tile/Analysis/AxisInfo.h"
#include "kiln/Dialect/Tile/IR/Layout.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Dialect/Tile/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

namespace kiln::tile {
#define GEN_PASS_DEF_TILEVECTORIZEACCESS
#include "kiln/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace kiln::tile

using namespace mlir;
using namespace kiln::tile;

namespace {
/// Whether a poll may read its elements as vectors: `ld.relaxed` of `.v2` /
/// `.v4` of 32- or 64-bit elements (narrower ones are polled one at a time).
bool pollsVectors(LoadOp load) {
  Type element = getElementTypeOrSelf(load.getResult().getType());
  return element.getIntOrFloatBitWidth() >= 32;
}

struct TileVectorizeAccessPass
    : kiln::tile::impl::TileVectorizeAccessBase<TileVectorizeAccessPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(TileDialect::getKernelAttrName()))
      return;
    auto threads = func->getAttrOfType<IntegerAttr>(TileDialect::getThreadsPerBlockAttrName());
    auto elems = func->getAttrOfType<IntegerAttr>(TileDialect::getElemsPerThreadAttrName());
    if (!threads || !elems) {
      func.emitError() << "kiln-tile-vectorize-access needs the layout attributes of "
                          "kiln-tile-assign-layout";
      return signalPassFailure();
    }
    AxisInfoAnalysis analysis(func);
    OpBuilder b(func.getContext());

    auto widthFor = [&](Value ptr, Value mask) -> int64_t {
      auto tensor = llvm::dyn_cast<RankedTensorType>(ptr.getType());
      if (!tensor)
        return 1;
      auto ptrType = llvm::cast<PtrType>(tensor.getElementType());
      int64_t eltBytes = std::max<int64_t>(1, ptrType.getPointeeType().getIntOrFloatBitWidth() / 8);
      auto layout = BlockedLayout::get(tensor.getNumElements(), threads.getInt(), elems.getInt());
      AxisInfo info = analysis.get(ptr);
      int64_t width = std::min<int64_t>({layout.vec, info.contiguity,
                                         std::max<int64_t>(1, info.divisibility / eltBytes),
                                         std::max<int64_t>(1, 16 / eltBytes)});
      if (mask)
        width = std::min(width, analysis.get(mask).constancy);
      return int64_t(1) << llvm::Log2_64(std::max<int64_t>(width, 1));
    };

    func.walk([&](Operation *op) {
      int64_t width;
      // Ordered accesses move one element each (ld.acquire / st.release),
      // except polls of 32- or 64-bit elements: each vector is read again
      // until all its elements are non-zero.
      if (auto load = llvm::dyn_cast<LoadOp>(op))
        width = load.getPollNs() && pollsVectors(load) ? widthFor(load.getPtr(), load.getMask())
                : load.getSem()                        ? 1
                                                       : widthFor(load.getPtr(), load.getMask());
      else if (auto store = llvm::dyn_cast<StoreOp>(op))
        width = store.getSem() ? 1 : widthFor(store.getPtr(), store.getMask());
      else if (auto issue = llvm::dyn_cast<RingIssueOp>(op); issue && issue.isGather())
        width = widthFor(issue.getSrc(), issue.getMask()); // the gather's cp.async
      else
        return;
      ++numAccesses;
      if (width > 1)
        ++numVectorized;
      op->setAttr("vec", b.getI32IntegerAttr(width));
    });
  }
};
} // namespace
