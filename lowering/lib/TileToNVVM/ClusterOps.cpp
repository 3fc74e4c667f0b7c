//===- ClusterOps.cpp - thread-block clusters -------------------------------===//
//
// Cluster ids and ranks (special registers), the cluster barrier and
// distributed shared memory (tile.cluster_load, tile.cluster_gather,
// tile.cluster_sum: mapa + ld.shared::cluster).
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

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

/// A tile's elements in a shared buffer of their own, and the way back: i1
/// elements travel as bytes, accesses move runs of up to 16 bytes.
struct SharedTileBuffer {
  Type element; ///< converted element type
  Type stored;  ///< element type in shared memory (i8 for i1)
  bool isBool;
  Value local;            ///< this block's buffer (!llvm.ptr<3>)
  ElementIndices indices; ///< where the source's registers are stored

  Value elementPtr(OpBuilder &b, Location loc, Value base, Value index) const {
    return LLVM::GEPOp::create(b, loc, base.getType(), stored, base,
                               ArrayRef<LLVM::GEPArg>{index});
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
      Value index = LLVM::AddOp::create(b, loc, indices.base,
                                        createI32Constant(b, loc, indices.offsets[r]));
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
  buffer.local = createSharedBuffer(rewriter, op, "__kiln_cluster_smem", buffer.stored,
                                    type.getNumElements());
  for (size_t r = 0; r < values.size(); r += access.vec) {
    SmallVector<Value> run(values.begin() + r, values.begin() + r + access.vec);
    if (buffer.isBool)
      for (Value &v : run)
        v = LLVM::ZExtOp::create(rewriter, loc, buffer.stored, v);
    Value index = LLVM::AddOp::create(rewriter, loc, indices.base,
                                      createI32Constant(rewriter, loc, indices.offsets[r]));
    LLVM::StoreOp::create(rewriter, loc, access.join(rewriter, loc, run),
                          buffer.elementPtr(rewriter, loc, buffer.local, index),
                          access.alignment);
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
    // No block may leave (its shared memory) or overwrite its buffer while
    // another still reads it.
    createClusterBarrier(rewriter, loc);
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(type), results));
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
    createClusterBarrier(rewriter, loc);
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(type), results));
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

/// Bytes of the slots a pushed tile.cluster_sum may use (its buffers hold every
/// rank's copy of every source, for the whole kernel).
constexpr int64_t kMaxPushedSumBytes = 16 * 1024;

/// Whether `op` runs at most once per kernel: no loop (or unknown region op)
/// around it, so a barrier of its own is used for one phase only.
bool runsOnce(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent; parent = parent->getParentOp()) {
    if (isa<FunctionOpInterface>(parent))
      return true;
    if (!isa<scf::IfOp>(parent))
      return false;
  }
  return false;
}

/// The mbarrier of a pushed tile.cluster_sum, made ready at the start of the
/// kernel: thread 0 initializes it (one arrival), fence.mbarrier_init, and a
/// relaxed cluster barrier, so that no block pushes into another before its
/// barrier exists (the barriers of every pushed sum of the kernel share the
/// fence and the cluster barrier). At the start of the kernel this barrier
/// overlaps whatever precedes the first load (a programmatic dependent
/// launch's wait).
Value createPushBarrier(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  auto func = op->getParentOfType<FunctionOpInterface>();
  Block &entry = func.getFunctionBody().front();
  OpBuilder::InsertionGuard guard(b);
  // The prologue of another pushed sum: fence.mbarrier_init, then a relaxed
  // cluster arrive (a TMA barrier's fence is followed by bar.sync).
  NVVM::FenceMbarrierInitOp prologue;
  for (auto fence : entry.getOps<NVVM::FenceMbarrierInitOp>())
    if (isa_and_nonnull<NVVM::ClusterArriveRelaxedOp>(fence->getNextNode()))
      prologue = fence;
  if (prologue)
    b.setInsertionPoint(prologue);
  else
    b.setInsertionPointToStart(&entry);
  Value barrier = createSharedBuffer(b, op, "__kiln_cluster_sum_mbarrier", b.getI64Type(), 1,
                                     /*alignment=*/8);
  Value zero = createI32Constant(b, loc, 0);
  Value isThread0 =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, createThreadId(b, loc), zero);
  NVVM::MBarrierInitOp::create(b, loc, barrier, createI32Constant(b, loc, 1), isThread0);
  if (!prologue) {
    NVVM::FenceMbarrierInitOp::create(b, loc);
    NVVM::ClusterArriveRelaxedOp::create(b, loc, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
  }
  return barrier;
}

/// st.async of one run (`words`: i32 or i64 registers) to the shared::cluster
/// address `address` (i64), completing its bytes on the mbarrier at
/// `barrier` (i64, shared::cluster), if `predicate`.
void pushRun(OpBuilder &b, Location loc, Value address, ArrayRef<Value> words, Value barrier,
             Value predicate) {
  bool wide = words.front().getType().isInteger(64);
  std::string ptx = "{\n.reg .pred p;\nsetp.ne.b32 p, $0, 0;\n"
                    "@p st.async.shared::cluster.mbarrier::complete_tx::bytes";
  if (words.size() > 1)
    ptx += ".v" + std::to_string(words.size());
  ptx += wide ? ".b64" : ".b32";
  ptx += " [$1], ";
  std::string constraints = "r,l";
  std::string list;
  for (size_t i = 0; i < words.size(); ++i) {
    list += (i ? ", $" : "$") + std::to_string(i + 2);
    constraints += wide ? ",l" : ",r";
  }
  ptx += words.size() > 1 ? "{" + list + "}" : list;
  ptx += ", [$" + std::to_string(words.size() + 2) + "];\n}";
  constraints += ",l,~{memory}";
  SmallVector<Value> operands{LLVM::ZExtOp::create(b, loc, b.getI32Type(), predicate), address};
  llvm::append_range(operands, words);
  operands.push_back(barrier);
  createInlinePTX(b, loc, Type(), operands, ptx, constraints);
}

/// The (i64) shared::cluster address of `local` (!llvm.ptr<3>) in block `rank`.
Value mapToRank(OpBuilder &b, Location loc, Value local, Value rank) {
  auto clusterPtr = LLVM::LLVMPointerType::get(b.getContext(), /*shared::cluster=*/7);
  Value remote = NVVM::MapaOp::create(b, loc, clusterPtr, local, rank);
  return LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), remote);
}

/// Every source stored like tile.cluster_load's (a buffer each), ONE cluster
/// barrier, then for rank 0, 1, ... each thread maps every buffer to the rank
/// and loads the indices it holds (every block runs the same layout: the same
/// elements, now the rank's), adding them to the sum in rank order; a second
/// cluster barrier, as for cluster_load.
///
/// Where the op runs once per kernel on blocked layouts, the blocks PUSH
/// instead (no cluster barrier at the op, no remote load): each source has a
/// buffer of one slot per rank, and the threads holding the first copies of
/// its runs (split over the replicas, if any, by destination) write them with
/// st.async into slot `own rank` of every block's buffer, each write
/// completing its bytes on that block's mbarrier (armed by its thread 0 with
/// every slot's bytes). A thread then waits for its own block's mbarrier
/// (acquire, cluster scope: the writes are visible) and adds the slots of its
/// elements in rank order from its own shared memory. Every block receives
/// all its bytes before it can leave, and each buffer is written once, so no
/// block waits for the others to finish reading. The barriers of the other
/// form are release/acquire at cluster scope: ptxas makes each release a
/// MEMBAR.GPU.
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
    if (canPush(op, types))
      return push(op, types, values, size, rewriter);
    SmallVector<SharedTileBuffer> buffers;
    for (auto [type, regs] : llvm::zip(types, values))
      buffers.push_back(storeTile(rewriter, op, tileConverter, type, regs));
    createClusterBarrier(rewriter, loc);

    SmallVector<SmallVector<Value>> sums(types.size());
    for (int64_t rank = 0; rank < size; ++rank) {
      Value rankValue = createI32Constant(rewriter, loc, rank);
      for (auto [i, buffer] : llvm::enumerate(buffers)) {
        VectorAccess access(getContext(), buffer.stored,
                            getAccessWidth(tileConverter, types[i]));
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
    // No block may leave (its shared memory) while another still reads it.
    createClusterBarrier(rewriter, loc);
    SmallVector<Value> results;
    for (auto [type, sum] : llvm::zip(types, sums))
      results.push_back(
          packTile(rewriter, loc, getTypeConverter()->convertType(type), sum));
    rewriter.replaceOp(op, results);
    return success();
  }

private:
  /// Runs once, blocked layouts, slots within kMaxPushedSumBytes.
  bool canPush(tile::ClusterSumOp op, ArrayRef<RankedTensorType> types) const {
    if (!runsOnce(op))
      return false;
    int64_t bytes = 0;
    for (RankedTensorType type : types) {
      if (tileConverter.getMmaLayout(type))
        return false;
      bytes += type.getNumElements() * (type.getElementTypeBitWidth() / 8);
    }
    return bytes * clusterSizeAround(op) <= kMaxPushedSumBytes;
  }

  LogicalResult push(tile::ClusterSumOp op, ArrayRef<RankedTensorType> types,
                     ArrayRef<SmallVector<Value>> values, int64_t size,
                     ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    Value barrier = createPushBarrier(rewriter, op);
    Value tid = createThreadId(rewriter, loc);
    Value rank = NVVM::ClusterId::create(rewriter, loc, rewriter.getI32Type());
    Value zero = createI32Constant(rewriter, loc, 0);

    // Thread 0 arms this block's barrier with the bytes of every slot.
    int64_t bytes = 0;
    for (RankedTensorType type : types)
      bytes += size * type.getNumElements() * (type.getElementTypeBitWidth() / 8);
    Value isThread0 = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, tid, zero);
    scf::IfOp::create(rewriter, loc, isThread0, [&](OpBuilder &ib, Location l) {
      NVVM::MBarrierArriveExpectTxOp::create(ib, l, Type(), barrier,
                                             createI32Constant(ib, l, bytes),
                                             NVVM::MemScopeKind::CTA, /*relaxed=*/false, Value());
      scf::YieldOp::create(ib, l);
    });

    SmallVector<Value> buffers;
    SmallVector<ElementIndices> indices;
    for (auto [type, regs] : llvm::zip(types, values)) {
      Type element = getTypeConverter()->convertType(type.getElementType());
      int64_t n = type.getNumElements();
      Value buffer = createSharedBuffer(rewriter, op, "__kiln_cluster_sum", element, size * n);
      buffers.push_back(buffer);
      indices.push_back(getElementIndices(rewriter, loc, tileConverter, type));
      tile::BlockedLayout layout = tileConverter.getLayout(type);
      int64_t copies = layout.isReplicated() ? layout.threads / layout.runs() : 1;
      Value copy = layout.isReplicated()
                       ? LLVM::UDivOp::create(rewriter, loc, tid,
                                              createI32Constant(rewriter, loc, layout.runs()))
                             .getResult()
                       : zero;
      VectorAccess access(getContext(), element, getAccessWidth(tileConverter, type));
      Type word = element.getIntOrFloatBitWidth() == 64 ? rewriter.getI64Type()
                                                        : rewriter.getI32Type();
      // This block's slot in every block's buffer.
      Value slot = LLVM::MulOp::create(rewriter, loc, rank, createI32Constant(rewriter, loc, n));
      int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
      for (int64_t dest = 0; dest < size; ++dest) {
        Value destRank = createI32Constant(rewriter, loc, dest);
        Value pushes = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, copy,
                                            createI32Constant(rewriter, loc, dest % copies));
        Value remote = mapToRank(rewriter, loc, buffer, destRank);
        Value remoteBarrier = mapToRank(rewriter, loc, barrier, destRank);
        for (size_t r = 0; r < regs.size(); r += access.vec) {
          Value index = LLVM::AddOp::create(
              rewriter, loc, slot,
              LLVM::AddOp::create(rewriter, loc, indices.back().base,
                                  createI32Constant(rewriter, loc, indices.back().offsets[r])));
          Value offset = LLVM::MulOp::create(rewriter, loc, index,
                                             createI32Constant(rewriter, loc, elementBytes));
          Value address = LLVM::AddOp::create(
              rewriter, loc, remote,
              LLVM::ZExtOp::create(rewriter, loc, rewriter.getI64Type(), offset));
          SmallVector<Value> words;
          for (int64_t i = 0; i < access.vec; ++i)
            words.push_back(regs[r + i].getType() == word
                                ? regs[r + i]
                                : LLVM::BitcastOp::create(rewriter, loc, word, regs[r + i]));
          pushRun(rewriter, loc, address, words, remoteBarrier, pushes);
        }
      }
    }

    // This block's slots are complete (every block's writes, acquired at
    // cluster scope); the thread adds its elements' slots in rank order.
    static constexpr const char *kWait =
        "{\n"
        ".reg .pred p;\n"
        "kiln_cluster_sum_wait:\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [$0], 0;\n"
        "@!p bra kiln_cluster_sum_wait;\n"
        "}";
    createInlinePTX(rewriter, loc, Type(),
                    ValueRange{LLVM::PtrToIntOp::create(rewriter, loc, rewriter.getI32Type(),
                                                        barrier)},
                    kWait, "r,~{memory}");
    SmallVector<Value> results;
    for (auto [i, type] : llvm::enumerate(types)) {
      Type element = getTypeConverter()->convertType(type.getElementType());
      VectorAccess access(getContext(), element, getAccessWidth(tileConverter, type));
      SharedTileBuffer buffer{element, element, /*isBool=*/false, buffers[i], indices[i]};
      SmallVector<Value> sum;
      for (int64_t src = 0; src < size; ++src) {
        Value slot = createI32Constant(rewriter, loc, src * type.getNumElements());
        SmallVector<Value> loaded;
        for (size_t r = 0; r < values[i].size(); r += access.vec) {
          Value index = LLVM::AddOp::create(
              rewriter, loc, slot,
              LLVM::AddOp::create(rewriter, loc, indices[i].base,
                                  createI32Constant(rewriter, loc, indices[i].offsets[r])));
          buffer.load(rewriter, loc, access, buffers[i], index, loaded);
        }
        if (src == 0) {
          sum = loaded;
          continue;
        }
        for (auto [acc, value] : llvm::zip(sum, loaded))
          acc = llvm::isa<FloatType>(value.getType())
                    ? LLVM::FAddOp::create(rewriter, loc, acc, value).getResult()
                    : LLVM::AddOp::create(rewriter, loc, acc, value).getResult();
      }
      results.push_back(packTile(rewriter, loc, getTypeConverter()->convertType(type), sum));
    }
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
