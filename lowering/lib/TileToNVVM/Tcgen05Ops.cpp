//===- Tcgen05Ops.cpp - Tensor Memory and tcgen05.mma ------------------------===//
//
// tile.tmem_alloc   -> warp 0: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
//                      [addr], ncols; tcgen05.fence::before_thread_sync; bar.sync;
//                      tcgen05.fence::after_thread_sync; all: ld.shared.b32 of the address.
// tile.tcgen05_dot  -> one elected thread of warp 0: tcgen05.fence::after_thread_sync;
//                      per 16 columns of K one tcgen05.mma.cta_group::1.kind::f16
//                      [tmem], adesc, bdesc, idesc, p (p = accumulate on the first
//                      step, true after it); tcgen05.commit.cta_group::1.mbarrier::
//                      arrive::one.shared::cluster.b64 [barrier].
// tile.tmem_load    -> tcgen05.fence::after_thread_sync; tcgen05.ld.sync.aligned.32x32b.xC.b32
//                      of lane 32 (warp mod 4) + lane, columns of the warpgroup in chunks
//                      of up to 32; tcgen05.wait::ld.sync.aligned.
// tile.tmem_dealloc -> tcgen05.fence::before_thread_sync; bar.sync; warp 0:
//                      tcgen05.fence::after_thread_sync; tcgen05.dealloc.cta_group::1
//                      .sync.aligned.b32 tmem, ncols;
//                      tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned.
//
// A wide box (K * 2 > 128 bytes) holds its 128-byte chunks of K one after the
// other, each its rows of 128 bytes: a K step into the next chunk adds the
// chunk's bytes (128 * 128 for A, N * 128 for B) instead of 32.
//
// The descriptors are built in kiln/Conversion/Tcgen05Descriptors.h. A TMEM
// address holds the lane in bits 31-16 and the column in bits 15-0.
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "kiln/Conversion/Tcgen05Descriptors.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

namespace {
Value createIsWarp0(OpBuilder &b, Location loc) {
  return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, createThreadId(b, loc),
                              createI32Constant(b, loc, 32));
}

/// Orders the tcgen05 operations of every thread before a CTA barrier with
/// those after it (PTX ISA, "tcgen05 memory consistency model").
void createTcgen05ThreadSync(OpBuilder &b, Location loc) {
  NVVM::Tcgen05FenceOp::create(b, loc, NVVM::Tcgen05FenceKind::BEFORE_THREAD_SYNC);
  NVVM::BarrierOp::create(b, loc);
  NVVM::Tcgen05FenceOp::create(b, loc, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
}

Value createI32(OpBuilder &b, Location loc, Value tmem) {
  return LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), tmem);
}

Value createTmemPtr(OpBuilder &b, Location loc, Value address) {
  return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), 6), address);
}

/// The 64-bit tcgen05 shared memory descriptor of the operand at `ptr`
/// (!llvm.ptr<3>) with the other fields `fields` (by default a K-major,
/// 128-byte-swizzled box).
Value createSmemDescriptor(OpBuilder &b, Location loc, Value ptr,
                           uint64_t fields = tcgen05::kKMajorSwizzled128Fields) {
  Type i64 = b.getI64Type();
  Value address = LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), ptr);
  Value start = LLVM::AndOp::create(
      b, loc, LLVM::LShrOp::create(b, loc, address, createI32Constant(b, loc, 4)),
      createI32Constant(b, loc, 0x3FFF));
  return LLVM::OrOp::create(
      b, loc, LLVM::ZExtOp::create(b, loc, i64, start),
      LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(int64_t(fields))));
}

struct TMemAllocLowering : TileOpConversion<tile::TMemAllocOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::TMemAllocOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value slot = createSharedBuffer(rewriter, op, "__kiln_tmem_address", rewriter.getI32Type(), 1,
                                    /*alignment=*/4);
    Value columns = createI32Constant(rewriter, loc, op.getType().getNumColumns());
    // Warp-collective: every lane of warp 0, converged.
    scf::IfOp::create(rewriter, loc, createIsWarp0(rewriter, loc), [&](OpBuilder &b, Location l) {
      NVVM::Tcgen05AllocOp::create(b, l, slot, columns);
      scf::YieldOp::create(b, l);
    });
    createTcgen05ThreadSync(rewriter, loc);
    Value address = LLVM::LoadOp::create(rewriter, loc, rewriter.getI32Type(), slot, 4);
    rewriter.replaceOp(op, createTmemPtr(rewriter, loc, address));
    return success();
  }
};

struct TMemDeallocLowering : TileOpConversion<tile::TMemDeallocOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::TMemDeallocOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value columns = createI32Constant(rewriter, loc, op.getTmem().getType().getNumColumns());
    // Every thread's tcgen05.ld is complete (tile.tmem_load waits for its own).
    NVVM::Tcgen05FenceOp::create(rewriter, loc, NVVM::Tcgen05FenceKind::BEFORE_THREAD_SYNC);
    NVVM::BarrierOp::create(rewriter, loc);
    Value tmem = adaptor.getTmem();
    scf::IfOp::create(rewriter, loc, createIsWarp0(rewriter, loc), [&](OpBuilder &b, Location l) {
      NVVM::Tcgen05FenceOp::create(b, l, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
      NVVM::Tcgen05DeallocOp::create(b, l, tmem, columns);
      NVVM::Tcgen05RelinquishAllocPermitOp::create(b, l);
      scf::YieldOp::create(b, l);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// The registers of the version 5 `#tile.mma` tile `layout` read from the
/// Tensor Memory at `tmem` (lane 0, column 0): tcgen05.fence::after_thread_sync,
/// tcgen05.ld.sync.aligned.32x32b.xC.b32 of lane 32 (warp mod 4) + lane and
/// the warpgroup's columns (C up to 32 a load), tcgen05.wait::ld.
SmallVector<Value> loadAccumulator(OpBuilder &b, Location loc, const tile::MmaLayout &layout,
                                   Value tmem) {
  auto c = [&](int64_t v) { return createI32Constant(b, loc, v); };
  // Lane 32 (warp mod 4) of this warp's quarter of TMEM, in bits 31-16; the
  // warpgroup's first column in bits 15-0.
  Value tid = createThreadId(b, loc);
  Value quarter = LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, tid, c(5)), c(3));
  Value lane = LLVM::ShlOp::create(b, loc, quarter, c(5 + 16));
  Value column = LLVM::MulOp::create(b, loc, LLVM::LShrOp::create(b, loc, tid, c(7)),
                                     c(layout.columnsPerThread()));
  Value base = LLVM::AddOp::create(b, loc, createI32(b, loc, tmem),
                                   LLVM::OrOp::create(b, loc, lane, column));

  NVVM::Tcgen05FenceOp::create(b, loc, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto shape =
      NVVM::Tcgen05LdStShapeAttr::get(b.getContext(), NVVM::Tcgen05LdStShape::SHAPE_32X32B);
  SmallVector<Value> regs;
  for (int64_t first = 0, total = layout.columnsPerThread(); first < total;) {
    int64_t count = int64_t(1) << llvm::Log2_64(std::min<int64_t>(32, total - first));
    Value address = createTmemPtr(b, loc, LLVM::AddOp::create(b, loc, base, c(first)));
    Type type = count == 1 ? i32 : Type(VectorType::get({count}, i32));
    Value loaded = NVVM::Tcgen05LdOp::create(b, loc, type, UnitAttr(), shape, address, Value());
    for (int64_t i = 0; i < count; ++i) {
      Value word =
          count == 1 ? loaded : LLVM::ExtractElementOp::create(b, loc, loaded, c(i)).getResult();
      regs.push_back(LLVM::BitcastOp::create(b, loc, f32, word));
    }
    first += count;
  }
  NVVM::Tcgen05WaitOp::create(b, loc, NVVM::Tcgen05WaitKind::LOAD);
  return regs;
}

/// The advance, in the descriptor address field's 16-byte units, of a K-major
/// 128-byte-swizzled operand at element `kk` of K (2-byte elements): 32 bytes
/// a k16 step within a 64-element chunk of K, `chunkBytes` into the next chunk
/// (a wide box's rows * 128 bytes).
int64_t kMajorStep(int64_t chunkBytes, int64_t kk) {
  return (kk / 64 * chunkBytes + kk % 64 * 2) / 16;
}

/// Issues, in one elected thread of warp 0, the tcgen05.mma steps of an
/// [M, K] x [K, N] product into `tmem` (per 16 columns of K, the operand
/// descriptors advanced by `aStep(kk)` and `bStep(kk)` in the address field's
/// 16-byte units) and the tcgen05.commit to `barrier`. `enable` is
/// enable-input-d of the first step (true after it).
void issueMma(OpBuilder &b, Location loc, Value tmem, Value aDescriptor, Value bDescriptor,
              Value idesc, int64_t k, Value enable, Value barrier,
              llvm::function_ref<int64_t(int64_t)> aStep,
              llvm::function_ref<int64_t(int64_t)> bStep) {
  Type i64 = b.getI64Type();
  // tcgen05.commit tracks the MMAs of the thread that issued them: one thread
  // does both.
  scf::IfOp::create(b, loc, createIssuer(b, loc), [&](OpBuilder &ib, Location l) {
    NVVM::Tcgen05FenceOp::create(ib, l, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
    for (int64_t kk = 0; kk < k; kk += 16) {
      Value a = aDescriptor, bk = bDescriptor, step = enable;
      if (kk) {
        int64_t as = aStep(kk), bs = bStep(kk);
        Value aOffset = LLVM::ConstantOp::create(ib, l, i64, ib.getI64IntegerAttr(as));
        Value bOffset =
            as == bs ? aOffset
                     : LLVM::ConstantOp::create(ib, l, i64, ib.getI64IntegerAttr(bs)).getResult();
        a = LLVM::AddOp::create(ib, l, aDescriptor, aOffset);
        bk = LLVM::AddOp::create(ib, l, bDescriptor, bOffset);
        step = LLVM::ConstantOp::create(ib, l, ib.getI1Type(), ib.getBoolAttr(true));
      }
      NVVM::Tcgen05MMAOp::create(ib, l, NVVM::Tcgen05MMAKind::F16, NVVM::CTAGroupKind::CTA_1,
                                 NVVM::Tcgen05MMACollectorOp::DISCARD, /*aShift=*/false, tmem, a,
                                 bk, idesc, step, /*scaleInputD=*/Value(),
                                 /*disableOutputLane=*/Value());
    }
    NVVM::Tcgen05CommitOp::create(ib, l, barrier, /*multicastMask=*/Value());
    scf::YieldOp::create(ib, l);
  });
}

struct TMemLoadLowering : TileOpConversion<tile::TMemLoadOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::TMemLoadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    tile::MmaLayout layout = *tileConverter.getMmaLayout(op.getType());
    if (layout.warps * 32 != tileConverter.getThreadsPerBlock())
      return op.emitOpError() << "expected the result layout's " << layout.warps
                              << " warps to be the kernel's "
                              << tileConverter.getThreadsPerBlock() / 32;
    SmallVector<Value> regs = loadAccumulator(rewriter, op.getLoc(), layout, adaptor.getTmem());
    rewriter.replaceOp(
        op, packTile(rewriter, op.getLoc(), getTypeConverter()->convertType(op.getType()), regs));
    return success();
  }
};

struct Tcgen05DotLowering : TileOpConversion<tile::Tcgen05DotOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::Tcgen05DotOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    tile::RingType aRing = op.getA().getType(), bRing = op.getB().getType();
    RankedTensorType accType = op.getAcc().getType().getAccType();
    int64_t k = aRing.getBlockType().getDimSize(1);
    // Bytes between the 128-byte chunks of K of a wide box (its rows of 128 bytes).
    int64_t aChunkBytes = aRing.getBlockType().getDimSize(0) * 128;
    int64_t bChunkBytes = bRing.getBlockType().getDimSize(0) * 128;
    Value aDescriptor = createSmemDescriptor(
        rewriter, loc, ringSlotAddress(rewriter, loc, aRing, adaptor.getA(), adaptor.getASlot()));
    Value bDescriptor = createSmemDescriptor(
        rewriter, loc, ringSlotAddress(rewriter, loc, bRing, adaptor.getB(), adaptor.getBSlot()));
    auto kind = aRing.getBlockType().getElementType().isBF16() ? tcgen05::F16Kind::BF16
                                                               : tcgen05::F16Kind::F16;
    Value idesc = createI32Constant(
        rewriter, loc,
        tcgen05::instrDescriptorF16(kind, accType.getDimSize(0), accType.getDimSize(1)));
    Value barrier = mbarrierAddress(rewriter, loc, adaptor.getBarriers(), adaptor.getBarrier());
    issueMma(
        rewriter, loc, adaptor.getAcc(), aDescriptor, bDescriptor, idesc, k,
        adaptor.getAccumulate(), barrier, [&](int64_t kk) { return kMajorStep(aChunkBytes, kk); },
        [&](int64_t kk) { return kMajorStep(bChunkBytes, kk); });
    rewriter.eraseOp(op);
    return success();
  }
};

struct Tcgen05DotStagedLowering : TileOpConversion<tile::Tcgen05DotStagedOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::Tcgen05DotStagedOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto aType = op.getATile(), bType = op.getBMatrix();
    auto accType = op.getAcc().getType();
    tile::MmaLayout layout = *tileConverter.getMmaLayout(accType);
    tile::RingType bRing = op.getBRing();
    // B is MN-major unless it is a K-major ring slot (the [N, K] box).
    bool bMnMajor = !bRing || op.getBMnMajor();
    if (layout.warps * 32 != tileConverter.getThreadsPerBlock())
      return op.emitOpError() << "expected the accumulator layout's " << layout.warps
                              << " warps to be the kernel's "
                              << tileConverter.getThreadsPerBlock() / 32;
    Type element = getTypeConverter()->convertType(aType.getElementType());
    int64_t m = aType.getDimSize(0), k = aType.getDimSize(1), n = accType.getDimSize(1);
    bool stagedA = llvm::isa<tile::SmemType>(op.getA().getType());
    // Scratch: the MMAs are complete (every thread waited for the commit)
    // before the op ends; the next writer of the bytes comes after.
    Value aBuffer = stagedA ? adaptor.getA()
                            : createSharedBuffer(rewriter, op, "__kiln_tcgen05_a_smem", element,
                                                 aType.getNumElements(), /*alignment=*/1024,
                                                 /*scratch=*/true);
    Value bBuffer = bRing
                        ? ringSlotAddress(rewriter, loc, bRing, adaptor.getB(), adaptor.getBSlot())
                        : createSharedBuffer(rewriter, op, "__kiln_tcgen05_b_smem", element,
                                             bType.getNumElements(), /*alignment=*/1024,
                                             /*scratch=*/true);
    if (!stagedA)
      storeSwizzled128(rewriter, loc, tileConverter, aType, aBuffer,
                       unpackTile(rewriter, loc, adaptor.getA()));
    if (!bRing)
      storeSwizzled128(rewriter, loc, tileConverter, bType, bBuffer,
                       unpackTile(rewriter, loc, adaptor.getB()));
    // What the threads stored, visible to the MMAs (a ring slot is, once
    // waited for; the previous dot's closing barrier ordered its TMEM reads).
    if (!stagedA || !bRing)
      publishToAsyncProxy(rewriter, loc);

    Value aDescriptor = createSmemDescriptor(rewriter, loc, aBuffer);
    Value bDescriptor = createSmemDescriptor(rewriter, loc, bBuffer,
                                             bMnMajor ? tcgen05::mnMajorSwizzled128Fields(k * 128)
                                                      : tcgen05::kKMajorSwizzled128Fields);
    auto kind = aType.getElementType().isBF16() ? tcgen05::F16Kind::BF16 : tcgen05::F16Kind::F16;
    Value idesc =
        createI32Constant(rewriter, loc, tcgen05::instrDescriptorF16(kind, m, n, bMnMajor));
    PhasedBarrier done = createPhasedBarrier(rewriter, op, "__kiln_tcgen05_mbarrier");
    // A K-major, its 64-column chunks of K m * 128 bytes apart (a K-major B's
    // n * 128); an MN-major B: a k16 step 16 rows of 128 bytes.
    issueMma(
        rewriter, loc, adaptor.getTmem(), aDescriptor, bDescriptor, idesc, k,
        LLVM::ConstantOp::create(rewriter, loc, rewriter.getI1Type(), rewriter.getBoolAttr(false)),
        done.address, [&](int64_t kk) { return kMajorStep(m * 128, kk); },
        [&](int64_t kk) { return bMnMajor ? kk * 128 / 16 : kMajorStep(n * 128, kk); });
    waitAndFlipPhase(rewriter, loc, done, tileConverter);
    SmallVector<Value> regs = loadAccumulator(rewriter, loc, layout, adaptor.getTmem());
    SmallVector<Value> acc = unpackTile(rewriter, loc, adaptor.getAcc());
    for (auto [r, a] : llvm::zip_equal(regs, acc))
      r = LLVM::FAddOp::create(rewriter, loc, a, r);
    // Every thread's reads of the columns are done before the next dot's
    // MMAs write them, and the scratch is free for the next writer.
    NVVM::Tcgen05FenceOp::create(rewriter, loc, NVVM::Tcgen05FenceKind::BEFORE_THREAD_SYNC);
    NVVM::BarrierOp::create(rewriter, loc);
    rewriter.replaceOp(op, packTile(rewriter, loc, getTypeConverter()->convertType(accType), regs));
    return success();
  }
};
} // namespace

void kiln::populateTileTcgen05OpsToNVVMPatterns(TileTypeConverter &converter,
                                                RewritePatternSet &patterns) {
  patterns.add<TMemAllocLowering, TMemDeallocLowering, TMemLoadLowering, Tcgen05DotLowering,
               Tcgen05DotStagedLowering>(converter);
}
