//===- ClusterOps.cpp - thread-block clusters -------------------------------===//
//
// Cluster ids and ranks (special registers), the cluster barrier and
// distributed shared memory (tile.cluster_load: mapa + ld.shared::cluster).
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

using namespace mlir;
using namespace kiln;

namespace {
using ClusterIdLowering = AxisRegisterLowering<tile::ClusterIdOp, NVVM::ClusterIdXOp,
                                               NVVM::ClusterIdYOp, NVVM::ClusterIdZOp>;
using NumClustersLowering = AxisRegisterLowering<tile::NumClustersOp, NVVM::ClusterDimXOp,
                                                 NVVM::ClusterDimYOp, NVVM::ClusterDimZOp>;
using ClusterCtaIdLowering =
    AxisRegisterLowering<tile::ClusterCtaIdOp, NVVM::BlockInClusterIdXOp,
                         NVVM::BlockInClusterIdYOp, NVVM::BlockInClusterIdZOp>;

/// Reads a scalar cluster register: %cluster_ctarank, %cluster_nctarank.
template <typename SourceOp, typename RegisterOp>
struct ClusterRegisterLowering : ConvertOpToLLVMPattern<SourceOp> {
  using ConvertOpToLLVMPattern<SourceOp>::ConvertOpToLLVMPattern;

  LogicalResult matchAndRewrite(SourceOp op, typename SourceOp::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, RegisterOp::create(rewriter, op.getLoc(), rewriter.getI32Type()));
    return success();
  }
};

/// barrier.cluster.arrive.aligned (release) + barrier.cluster.wait.aligned
/// (acquire): every thread of every block of the cluster.
void createClusterBarrier(OpBuilder &b, Location loc) {
  NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
}

struct ClusterBarrierLowering : ConvertOpToLLVMPattern<tile::ClusterBarrierOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult matchAndRewrite(tile::ClusterBarrierOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    createClusterBarrier(rewriter, op.getLoc());
    rewriter.eraseOp(op);
    return success();
  }
};

/// Each thread stores its elements at their row-major index in a shared
/// buffer of the tile; after a cluster barrier it maps the buffer to block
/// `rank` (mapa.shared::cluster) and loads the same indices from there
/// (ld.shared::cluster): every block runs the same layout, so the thread gets
/// exactly the elements it holds, now those of block `rank`. A second cluster
/// barrier keeps every buffer alive and unchanged until all reads are done.
/// Accesses move up to 16 bytes; i1 elements travel as bytes.
struct ClusterLoadLowering : TileOpConversion<tile::ClusterLoadOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::ClusterLoadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = llvm::cast<RankedTensorType>(op.getType());
    Type element = getTypeConverter()->convertType(type.getElementType());
    bool isBool = element.isInteger(1);
    Type stored = isBool ? rewriter.getI8Type() : element;
    // Bytes for i1: the same access width as i8.
    VectorAccess access(getContext(), stored, getAccessWidth(tileConverter, type));
    ElementIndices indices = getElementIndices(rewriter, loc, tileConverter, type);
    SmallVector<Value> values = unpackTile(rewriter, loc, adaptor.getSrc());
    if (values.size() % access.vec != 0)
      return rewriter.notifyMatchFailure(op, "access width does not divide the registers");

    Value local = createSharedBuffer(rewriter, op, "__kiln_cluster_smem", stored,
                                     type.getNumElements());
    auto elementPtr = [&](Value base, int64_t r) {
      Value index = LLVM::AddOp::create(rewriter, loc, indices.base,
                                        createI32Constant(rewriter, loc, indices.offsets[r]));
      return LLVM::GEPOp::create(rewriter, loc, base.getType(), stored, base,
                                 ArrayRef<LLVM::GEPArg>{index});
    };

    // Publish this block's tile (replicated threads write the same values).
    for (size_t r = 0; r < values.size(); r += access.vec) {
      SmallVector<Value> run(values.begin() + r, values.begin() + r + access.vec);
      if (isBool)
        for (Value &v : run)
          v = LLVM::ZExtOp::create(rewriter, loc, stored, v);
      LLVM::StoreOp::create(rewriter, loc, access.join(rewriter, loc, run),
                            elementPtr(local, r), access.alignment);
    }
    createClusterBarrier(rewriter, loc);

    // Read block `rank`'s copy.
    auto clusterPtr = LLVM::LLVMPointerType::get(getContext(), /*shared::cluster=*/7);
    Value remote = NVVM::MapaOp::create(rewriter, loc, clusterPtr, local, adaptor.getRank());
    SmallVector<Value> results;
    for (size_t r = 0; r < values.size(); r += access.vec) {
      Value loaded = LLVM::LoadOp::create(rewriter, loc, access.accessType,
                                          elementPtr(remote, r), access.alignment);
      for (Value v : access.split(rewriter, loc, loaded))
        results.push_back(isBool ? LLVM::TruncOp::create(rewriter, loc, element, v) : v);
    }
    // No block may leave (its shared memory) or overwrite its buffer while
    // another still reads it.
    createClusterBarrier(rewriter, loc);
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(type), results));
    return success();
  }
};
} // namespace

void kiln::populateTileClusterOpsToNVVMPatterns(TileTypeConverter &converter,
                                                RewritePatternSet &patterns) {
  patterns.add<ClusterIdLowering, NumClustersLowering, ClusterCtaIdLowering>(converter);
  patterns.add<ClusterRegisterLowering<tile::ClusterCtaRankOp, NVVM::ClusterId>,
               ClusterRegisterLowering<tile::ClusterSizeOp, NVVM::ClusterDim>>(converter);
  patterns.add<ClusterBarrierLowering>(converter);
  patterns.add<ClusterLoadLowering>(converter);
}
