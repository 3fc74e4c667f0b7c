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

/// The 64-bit tcgen05 shared memory descriptor of the K-major,
/// 128-byte-swizzled box at the shared address `address` (i32).
Value createSmemDescriptor(OpBuilder &b, Location loc, Value address) {
  Type i64 = b.getI64Type();
  Value start = LLVM::AndOp::create(
      b, loc, LLVM::LShrOp::create(b, loc, address, createI32Constant(b, loc, 4)),
      createI32Constant(b, loc, 0x3FFF));
  return LLVM::OrOp::create(
      b, loc, LLVM::ZExtOp::create(b, loc, i64, start),
      LLVM::ConstantOp::create(b, loc, i64,
                               b.getI64IntegerAttr(int64_t(tcgen05::kKMajorSwizzled128Fields))));
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

struct TMemLoadLowering : TileOpConversion<tile::TMemLoadOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::TMemLoadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    tile::MmaLayout layout = *tileConverter.getMmaLayout(op.getType());
    if (layout.warps * 32 != tileConverter.getThreadsPerBlock())
      return op.emitOpError() << "expected the result layout's " << layout.warps
                              << " warps to be the kernel's "
                              << tileConverter.getThreadsPerBlock() / 32;
    auto c = [&](int64_t v) { return createI32Constant(rewriter, loc, v); };
    // Lane 32 (warp mod 4) of this warp's quarter of TMEM, in bits 31-16; the
    // warpgroup's first column in bits 15-0.
    Value tid = createThreadId(rewriter, loc);
    Value quarter =
        LLVM::AndOp::create(rewriter, loc, LLVM::LShrOp::create(rewriter, loc, tid, c(5)), c(3));
    Value lane = LLVM::ShlOp::create(rewriter, loc, quarter, c(5 + 16));
    Value column =
        LLVM::MulOp::create(rewriter, loc, LLVM::LShrOp::create(rewriter, loc, tid, c(7)),
                            c(layout.columnsPerThread()));
    Value base = LLVM::AddOp::create(rewriter, loc, createI32(rewriter, loc, adaptor.getTmem()),
                                     LLVM::OrOp::create(rewriter, loc, lane, column));

    NVVM::Tcgen05FenceOp::create(rewriter, loc, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
    Type i32 = rewriter.getI32Type(), f32 = rewriter.getF32Type();
    auto shape =
        NVVM::Tcgen05LdStShapeAttr::get(getContext(), NVVM::Tcgen05LdStShape::SHAPE_32X32B);
    SmallVector<Value> regs;
    for (int64_t first = 0, total = layout.columnsPerThread(); first < total;) {
      int64_t count = int64_t(1) << llvm::Log2_64(std::min<int64_t>(32, total - first));
      Value address =
          createTmemPtr(rewriter, loc, LLVM::AddOp::create(rewriter, loc, base, c(first)));
      Type type = count == 1 ? i32 : Type(VectorType::get({count}, i32));
      Value loaded =
          NVVM::Tcgen05LdOp::create(rewriter, loc, type, UnitAttr(), shape, address, Value());
      for (int64_t i = 0; i < count; ++i) {
        Value word = count == 1
                         ? loaded
                         : LLVM::ExtractElementOp::create(rewriter, loc, loaded, c(i)).getResult();
        regs.push_back(LLVM::BitcastOp::create(rewriter, loc, f32, word));
      }
      first += count;
    }
    NVVM::Tcgen05WaitOp::create(rewriter, loc, NVVM::Tcgen05WaitKind::LOAD);
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(op.getType()), regs));
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
    auto sharedAddress = [&](Value ptr) {
      return LLVM::PtrToIntOp::create(rewriter, loc, rewriter.getI32Type(), ptr).getResult();
    };
    Value aDescriptor = createSmemDescriptor(
        rewriter, loc,
        sharedAddress(ringSlotAddress(rewriter, loc, aRing, adaptor.getA(), adaptor.getASlot())));
    Value bDescriptor = createSmemDescriptor(
        rewriter, loc,
        sharedAddress(ringSlotAddress(rewriter, loc, bRing, adaptor.getB(), adaptor.getBSlot())));
    auto kind = aRing.getBlockType().getElementType().isBF16() ? tcgen05::F16Kind::BF16
                                                               : tcgen05::F16Kind::F16;
    Value idesc = createI32Constant(
        rewriter, loc,
        tcgen05::instrDescriptorF16(kind, accType.getDimSize(0), accType.getDimSize(1)));
    Value barrier = mbarrierAddress(rewriter, loc, adaptor.getBarriers(), adaptor.getBarrier());
    Value tmem = adaptor.getAcc(), accumulate = adaptor.getAccumulate();
    Type i64 = rewriter.getI64Type();

    // tcgen05.commit tracks the MMAs of the thread that issued them: one
    // thread does both.
    scf::IfOp::create(rewriter, loc, createIssuer(rewriter, loc), [&](OpBuilder &b, Location l) {
      NVVM::Tcgen05FenceOp::create(b, l, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
      Value enable = accumulate;
      for (int64_t kk = 0; kk < k; kk += 16) {
        Value a = aDescriptor, bk = bDescriptor;
        if (kk) {
          // 16 elements of 2 bytes: 32 bytes, 2 in the start address field
          // (which counts 16 bytes), within a 64-element chunk of K; one
          // constant when both operands step alike.
          auto stepOf = [&](int64_t chunkBytes) {
            return (kk / 64 * chunkBytes + kk % 64 * 2) / 16;
          };
          int64_t aStep = stepOf(aChunkBytes), bStep = stepOf(bChunkBytes);
          Value aOffset = LLVM::ConstantOp::create(b, l, i64, b.getI64IntegerAttr(aStep));
          Value bOffset =
              aStep == bStep
                  ? aOffset
                  : LLVM::ConstantOp::create(b, l, i64, b.getI64IntegerAttr(bStep)).getResult();
          a = LLVM::AddOp::create(b, l, aDescriptor, aOffset);
          bk = LLVM::AddOp::create(b, l, bDescriptor, bOffset);
          enable = LLVM::ConstantOp::create(b, l, b.getI1Type(), b.getBoolAttr(true));
        }
        NVVM::Tcgen05MMAOp::create(b, l, NVVM::Tcgen05MMAKind::F16, NVVM::CTAGroupKind::CTA_1,
                                   NVVM::Tcgen05MMACollectorOp::DISCARD, /*aShift=*/false, tmem, a,
                                   bk, idesc, enable, /*scaleInputD=*/Value(),
                                   /*disableOutputLane=*/Value());
      }
      NVVM::Tcgen05CommitOp::create(b, l, barrier, /*multicastMask=*/Value());
      scf::YieldOp::create(b, l);
    });
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void kiln::populateTileTcgen05OpsToNVVMPatterns(TileTypeConverter &converter,
                                                RewritePatternSet &patterns) {
  patterns.add<TMemAllocLowering, TMemDeallocLowering, TMemLoadLowering, Tcgen05DotLowering>(
      converter);
}
