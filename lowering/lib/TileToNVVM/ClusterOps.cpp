//===- ClusterOps.cpp - thread-block clusters -------------------------------===//
//
// Cluster ids and ranks (special registers), the cluster barrier and
// distributed shared memory (tile.cluster_load, tile.cluster_gather,
// tile.cluster_sum: mapa + ld.shared::cluster).
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
    AxisRegisterLowering<tile::ClusterCtaIdOp, NVVM::BlockInClusterIdXOp, NVVM::BlockInClusterIdYOp,
                         NVVM::BlockInClusterIdZOp>;

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

/// The barrier after an exchange's remote reads (no block may leave, or
/// overwrite its buffer, while another still reads it): the arrive (release:
/// the reads are done) and, unless kiln-defer-cluster-waits moved it, the wait.
void createTrailingClusterBarrier(OpBuilder &b, Operation *exchange) {
  Location loc = exchange->getLoc();
  NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
  if (!exchange->hasAttr(kClusterWaitDeferredAttr))
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

/// A tile's elements in a shared buffer of their own, and the way back: i1
/// elements travel as bytes, accesses move runs of up to 16 bytes.
struct SharedTileBuffer {
  Type element; ///< converted element type
  Type stored;  ///< element type in shared memory (i8 for i1)
  bool isBool;
  Value local;            ///< this block's buffer (!llvm.ptr<3>)
  ElementIndices indices; ///< where the source's registers are stored

  Value elementPtr(OpBuilder &b, Location loc, Value base, Value index) const {
    return LLVM::GEPOp::create(b, loc, base.getType(), stored, base, ArrayRef<LLVM::GEPArg>{index});
  }

  /// One `access` of the buffer `base` (a block's, mapped into the cluster) at
  /// element `index`, appended to `results` as register values.
  void load(OpBuilder &b, Location loc, const VectorAccess &access, Value base, Value index,
            SmallVectorImpl<Value> &results) const {
    Value loaded = LLVM::LoadOp::create(b, loc, access.accessType, elementPtr(b, loc, base, index),
                                        access.alignment);
    for (Value v : access.split(b, loc, loaded))
      results.push_back(isBool ? LLVM::TruncOp::create(b, loc, element, v) : v);
  }

  /// The `count` registers this thread stored (runs of `access`), read back
  /// from the copy of block `rank` (mapa.shared::cluster + ld.shared::cluster):
  /// every block runs the same layout, so they are the same elements, the
  /// rank's.
  SmallVector<Value> loadFromRank(OpBuilder &b, Location loc, const VectorAccess &access,
                                  Value rank, size_t count) const {
    auto clusterPtr = LLVM::LLVMPointerType::get(b.getContext(), /*shared::cluster=*/7);
    Value remote = NVVM::MapaOp::create(b, loc, clusterPtr, local, rank);
    SmallVector<Value> results;
    for (size_t r = 0; r < count; r += access.vec) {
      Value index =
          LLVM::AddOp::create(b, loc, indices.base, createI32Constant(b, loc, indices.offsets[r]));
      load(b, loc, access, remote, index, results);
    }
    return results;
  }
};

/// Each thread stores the elements of `src` (a tile of `type`, converted
/// registers `values`) it holds at their row-major index in a fresh shared
/// buffer (replicated threads write the same values).
SharedTileBuffer storeTile(ConversionPatternRewriter &rewriter, Operation *op,
                           const TileTypeConverter &converter, RankedTensorType type,
                           ArrayRef<Value> values) {
  Location loc = op->getLoc();
  SharedTileBuffer buffer;
  buffer.element = converter.convertType(type.getElementType());
  buffer.isBool = buffer.element.isInteger(1);
  buffer.stored = buffer.isBool ? rewriter.getI8Type() : buffer.element;
  VectorAccess access(rewriter.getContext(), buffer.stored, getAccessWidth(converter, type));
  ElementIndices &indices = buffer.indices;
  indices = getElementIndices(rewriter, loc, converter, type);
  buffer.local =
      createSharedBuffer(rewriter, op, "__kiln_cluster_smem", buffer.stored, type.getNumElements());
  for (size_t r = 0; r < values.size(); r += access.vec) {
    SmallVector<Value> run(values.begin() + r, values.begin() + r + access.vec);
    if (buffer.isBool)
      for (Value &v : run)
        v = LLVM::ZExtOp::create(rewriter, loc, buffer.stored, v);
    Value index = LLVM::AddOp::create(rewriter, loc, indices.base,
                                      createI32Constant(rewriter, loc, indices.offsets[r]));
    LLVM::StoreOp::create(rewriter, loc, access.join(rewriter, loc, run),
                          buffer.elementPtr(rewriter, loc, buffer.local, index), access.alignment);
  }
  return buffer;
}

/// storeTile, then a cluster barrier: the buffer of every block of the cluster
/// is complete.
SharedTileBuffer publishTile(ConversionPatternRewriter &rewriter, Operation *op,
                             const TileTypeConverter &converter, RankedTensorType type,
                             ArrayRef<Value> values) {
  SharedTileBuffer buffer = storeTile(rewriter, op, converter, type, values);
  createClusterBarrier(rewriter, op->getLoc());
  return buffer;
}

/// Whether the access width of `type` divides its registers (packed runs).
bool runsDivide(const TileTypeConverter &converter, RankedTensorType type, size_t registers) {
  return registers % getAccessWidth(converter, type) == 0;
}

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
    SmallVector<Value> values = unpackTile(rewriter, loc, adaptor.getSrc());
    if (!runsDivide(tileConverter, type, values.size()))
      return rewriter.notifyMatchFailure(op, "access width does not divide the registers");
    SharedTileBuffer buffer = publishTile(rewriter, op, tileConverter, type, values);

    // Read block `rank`'s copy (the same layout: the same indices).
    VectorAccess access(getContext(), buffer.stored, getAccessWidth(tileConverter, type));
    SmallVector<Value> results =
        buffer.loadFromRank(rewriter, loc, access, adaptor.getRank(), values.size());
    createTrailingClusterBarrier(rewriter, op);
    rewriter.replaceOp(op, packTile(rewriter, loc, getTypeConverter()->convertType(type), results));
    return success();
  }
};

/// Publishes the source tile like tile.cluster_load (one cluster barrier),
/// then each thread reads the elements of the result it holds: the result's
/// row-major index e = rank * N + i (N the source's elements, a power of two)
/// is element i of block `rank`'s buffer. A run of the result's registers
/// (at most the last dimension, so never across two ranks) is one mapa +
/// ld.shared::cluster. A second cluster barrier, as for cluster_load.
struct ClusterGatherLowering : TileOpConversion<tile::ClusterGatherOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::ClusterGatherOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = llvm::cast<RankedTensorType>(op.getSrc().getType());
    auto type = llvm::cast<RankedTensorType>(op.getType());
    int64_t n = srcType.getNumElements();
    if (!llvm::isPowerOf2_64(n))
      return rewriter.notifyMatchFailure(op, "the source's elements are not a power of two");
    SmallVector<Value> values = unpackTile(rewriter, loc, adaptor.getSrc());
    int64_t resultRegisters = tileConverter.getMmaLayout(type)
                                  ? tileConverter.getMmaLayout(type)->regsPerThread()
                                  : tileConverter.getLayout(type).regsPerThread();
    if (!runsDivide(tileConverter, srcType, values.size()) ||
        !runsDivide(tileConverter, type, resultRegisters))
      return rewriter.notifyMatchFailure(op, "access width does not divide the registers");
    SharedTileBuffer buffer = publishTile(rewriter, op, tileConverter, srcType, values);

    VectorAccess access(getContext(), buffer.stored, getAccessWidth(tileConverter, type));
    ElementIndices indices = getElementIndices(rewriter, loc, tileConverter, type);
    auto clusterPtr = LLVM::LLVMPointerType::get(getContext(), /*shared::cluster=*/7);
    Value log2n = createI32Constant(rewriter, loc, llvm::Log2_64(n));
    Value innerMask = createI32Constant(rewriter, loc, n - 1);
    SmallVector<Value> results;
    for (int64_t r = 0; r < resultRegisters; r += access.vec) {
      Value index = LLVM::AddOp::create(rewriter, loc, indices.base,
                                        createI32Constant(rewriter, loc, indices.offsets[r]));
      Value rank = LLVM::LShrOp::create(rewriter, loc, index, log2n);
      Value inner = LLVM::AndOp::create(rewriter, loc, index, innerMask);
      Value remote = NVVM::MapaOp::create(rewriter, loc, clusterPtr, buffer.local, rank);
      buffer.load(rewriter, loc, access, remote, inner, results);
    }
    createTrailingClusterBarrier(rewriter, op);
    rewriter.replaceOp(op, packTile(rewriter, loc, getTypeConverter()->convertType(type), results));
    return success();
  }
};

/// Blocks per cluster of the kernel around `op`: the tile.cluster_dims of its
/// func.func or, once that is converted, the nvvm.cluster_dim of its llvm.func.
int64_t clusterSizeAround(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent; parent = parent->getParentOp())
    for (StringRef name : {StringRef(tile::TileDialect::getClusterDimsAttrName()),
                           StringRef(NVVM::NVVMDialect::getClusterDimAttrName())})
      if (auto dims = parent->getAttrOfType<DenseI32ArrayAttr>(name)) {
        int64_t size = 1;
        for (int32_t d : dims.asArrayRef())
          size *= d;
        return size;
      }
  return 1;
}

/// Every source stored like tile.cluster_load's (a buffer each), ONE cluster
/// barrier, then for rank 0, 1, ... each thread maps every buffer to the rank
/// and loads the indices it holds (every block runs the same layout: the same
/// elements, now the rank's), adding them to the sum in rank order; a second
/// cluster barrier, as for cluster_load.
struct ClusterSumLowering : TileOpConversion<tile::ClusterSumOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::ClusterSumOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t size = clusterSizeAround(op);
    SmallVector<RankedTensorType> types;
    SmallVector<SmallVector<Value>> values;
    for (auto [src, converted] : llvm::zip(op.getSrcs(), adaptor.getSrcs())) {
      types.push_back(llvm::cast<RankedTensorType>(src.getType()));
      values.push_back(unpackTile(rewriter, loc, converted));
      if (!runsDivide(tileConverter, types.back(), values.back().size()))
        return rewriter.notifyMatchFailure(op, "access width does not divide the registers");
    }
    SmallVector<SharedTileBuffer> buffers;
    for (auto [type, regs] : llvm::zip(types, values))
      buffers.push_back(storeTile(rewriter, op, tileConverter, type, regs));
    createClusterBarrier(rewriter, loc);

    SmallVector<SmallVector<Value>> sums(types.size());
    for (int64_t rank = 0; rank < size; ++rank) {
      Value rankValue = createI32Constant(rewriter, loc, rank);
      for (auto [i, buffer] : llvm::enumerate(buffers)) {
        VectorAccess access(getContext(), buffer.stored, getAccessWidth(tileConverter, types[i]));
        SmallVector<Value> loaded =
            buffer.loadFromRank(rewriter, loc, access, rankValue, values[i].size());
        if (rank == 0) {
          sums[i] = loaded;
          continue;
        }
        for (auto [sum, value] : llvm::zip(sums[i], loaded))
          sum = llvm::isa<FloatType>(value.getType())
                    ? LLVM::FAddOp::create(rewriter, loc, sum, value).getResult()
                    : LLVM::AddOp::create(rewriter, loc, sum, value).getResult();
      }
    }
    createTrailingClusterBarrier(rewriter, op);
    SmallVector<Value> results;
    for (auto [type, sum] : llvm::zip(types, sums))
      results.push_back(packTile(rewriter, loc, getTypeConverter()->convertType(type), sum));
    rewriter.replaceOp(op, results);
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
  patterns.add<ClusterLoadLowering, ClusterGatherLowering, ClusterSumLowering>(converter);
}
