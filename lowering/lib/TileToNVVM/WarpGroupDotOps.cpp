//===- WarpGroupDotOps.cpp - wgmma and layout conversions -------------------===//
//
// tile.warpgroup_dot -> wgmma.fence; per 64-row slab of the warpgroup and per
// 32 bytes of K one wgmma.mma_async.m64nNk16 (k32 for FP8) on two shared-memory matrix
// descriptors; wgmma.commit_group. The descriptors (PTX ISA, "matrix
// descriptor") describe K-major boxes written by TMA with the 128-byte
// swizzle: start address >> 4 in bits 0-13, leading byte offset 1 (unused for
// swizzled K-major layouts), stride byte offset 1024 >> 4 (8 rows of 128
// bytes) in bits 32-45, layout type 1 (128-byte swizzle) in bits 62-63; a K
// step adds 32 bytes to the start address.
//
// A wide K-major box (K * element bytes > 128: several 128-byte chunks of K,
// one after the other, each the box's rows of 128 bytes) is stepped into its
// next chunk by the chunk's bytes (M * 128 for A, N * 128 for B).
//
// An MN-major B (`bMnMajor`: the [K, N] box of bf16/f16, N a multiple of 64)
// has the canonical MN-major 128-byte-swizzle layout: 64 elements of N
// contiguous (one swizzle row), 8 K rows per 1024-byte atom, the 64-column
// chunks of N K * 128 bytes apart (a wide box for N > 64). Its descriptor:
// leading byte offset = the stride between 64-element chunks of N (K * 128
// bytes; unused with N = 64), stride byte offset 1024 >> 4 (from 8 K rows to
// the next 8), the
// 128-byte swizzle; a k16 step moves 16 rows: 2048 bytes (128 in the start
// address field), a multiple of the atom, so the swizzle phase is unchanged.
// The wgmma carries the transpose-B immediate (`imm-trans-b` = 1: NVVM's
// layoutB = row).
//
// With maxNumImpreciseAcc = N (FP8) the accumulator is promoted: per chunk of
// N elements of K, wgmma.fence, the chunk's wgmmas per slab into fresh
// registers (the first with scale-d = 0: the chunk starts from zero),
// wgmma.commit_group, wgmma.wait_group 0 and one llvm.fadd per register into
// the f32 accumulator, which the tensor cores never read.
//
// tile.warpgroup_dot_staged with A in the accumulator's encoding: B staged
// as above, A from registers (inline PTX: NVVM's op reads A from shared
// memory only), the k16 step c of a slab taking its registers 8c .. 8c + 7
// as four bf16x2/f16x2 words.
//
// tile.warpgroup_dot_wait -> wgmma.wait_group.sync.aligned as inline PTX
// whose operands are the accumulator registers ("+f"), so nothing reads them
// before the wait.
//
// tile.convert_layout -> every thread stores its registers to a shared buffer
// at their row-major indices (rows padded by 16 bytes), bar.sync, loads its
// result registers, bar.sync.
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

namespace {
/// The 64-bit wgmma descriptor of the 128-byte-swizzled box at the shared
/// address `address` (i32): K-major (`leadingBytes` unused: 16, the field's
/// unit) or MN-major (`leadingBytes` between 64-element chunks of MN).
Value createSwizzled128Descriptor(OpBuilder &b, Location loc, Value address,
                                  uint64_t leadingBytes = 16) {
  Type i64 = b.getI64Type();
  Value start = LLVM::AndOp::create(
      b, loc, LLVM::LShrOp::create(b, loc, address, createI32Constant(b, loc, 4)),
      createI32Constant(b, loc, 0x3FFF));
  uint64_t fixed =
      (((leadingBytes >> 4) & 0x3FFF) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
  return LLVM::OrOp::create(b, loc, LLVM::ZExtOp::create(b, loc, i64, start),
                            LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(fixed)));
}

/// `wgmma.wait_group.sync.aligned pending` as inline PTX that passes `regs`
/// through ("=f" tied to the inputs): their readers stay after the wait.
SmallVector<Value> createWaitGroup(OpBuilder &b, Location loc, ArrayRef<Value> regs,
                                   int64_t pending) {
  SmallVector<std::string> constraints(regs.size(), "=f");
  for (size_t i = 0; i < regs.size(); ++i)
    constraints.push_back(std::to_string(i));
  std::string ptx = "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";";
  Type type = LLVM::LLVMStructType::getLiteral(
      b.getContext(), llvm::map_to_vector(regs, [](Value v) { return v.getType(); }));
  return unpackTile(b, loc,
                    createInlinePTX(b, loc, type, regs, ptx, llvm::join(constraints, ","),
                                    /*sideEffects=*/true, "wgmma"));
}

NVVM::WGMMATypes getWgmmaType(Type element) {
  if (element.isBF16())
    return NVVM::WGMMATypes::bf16;
  if (element.isF16())
    return NVVM::WGMMATypes::f16;
  return llvm::isa<Float8E4M3FNType>(element) ? NVVM::WGMMATypes::e4m3 : NVVM::WGMMATypes::e5m2;
}

/// The operands of one warpgroup dot in shared memory (i32 addresses): `a`
/// [M, K] K-major at this warpgroup's first slab, its 128-byte K chunks
/// `aChunkBytes` apart; `b` [N, K] K-major (chunks `bChunkBytes` apart) or,
/// with `bMnMajor`, [K, N] N-major (64-column chunks of K rows of 128
/// bytes). With `aWords`, A is in registers instead: the .b32 words (pairs
/// of 16-bit elements) of each slab in turn, four a k16 step.
struct WgmmaOperands {
  Value aAddress, bAddress;
  Type aElement, bElement;
  int64_t k;
  int64_t aChunkBytes, bChunkBytes;
  bool bMnMajor;
  SmallVector<Value> aWords = {};
};

/// `wgmma.mma_async.sync.aligned.m64nNk16.f32.<type>.<type>` with A from
/// registers (`a`: four .b32 words) and B from the descriptor `bDescriptor`,
/// accumulating into `slab` (N / 2 f32, tied to the results); inline PTX,
/// as NVVM's op takes A from shared memory only.
Value createRegisterAWgmma(OpBuilder &b, Location loc, Value slab, ArrayRef<Value> a,
                           Value bDescriptor, int64_t n, StringRef type, bool bMnMajor) {
  SmallVector<Value> d = unpackTile(b, loc, slab);
  int64_t regs = d.size();
  // Operands: the N / 2 results, the N / 2 inputs tied to them, the A words,
  // the descriptor, scale-d.
  std::string ptx;
  llvm::raw_string_ostream os(ptx);
  os << "{\n.reg .pred p;\nsetp.ne.b32 p, $" << 2 * regs + 5 << ", 0;\n"
     << "wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << type << "." << type << " {";
  for (int64_t i = 0; i < regs; ++i)
    os << (i ? ", " : "") << "$" << i;
  os << "}, {";
  for (int64_t i = 0; i < 4; ++i)
    os << (i ? ", " : "") << "$" << 2 * regs + i;
  os << "}, $" << 2 * regs + 4 << ", p, 1, 1, " << (bMnMajor ? 1 : 0) << ";\n}";
  SmallVector<std::string> constraints(regs, "=f");
  for (int64_t i = 0; i < regs; ++i)
    constraints.push_back(std::to_string(i));
  constraints.append({"r", "r", "r", "r", "l", "r"});
  SmallVector<Value> operands(d);
  llvm::append_range(operands, a);
  operands.push_back(bDescriptor);
  operands.push_back(createI32Constant(b, loc, 1));
  return createInlinePTX(b, loc, slab.getType(), operands, ptx, llvm::join(constraints, ","),
                         /*sideEffects=*/true, "wgmma");
}

/// The wgmmas of `operands` into the accumulator `acc` (registers of
/// `layout`) as tile.warpgroup_dot describes them; returns the accumulator
/// registers, ready only after a wgmma.wait_group unless
/// `maxNumImpreciseAcc`.
SmallVector<Value> emitWarpGroupDot(ConversionPatternRewriter &rewriter, Location loc,
                                    const tile::MmaLayout &layout, const WgmmaOperands &operands,
                                    SmallVector<Value> regs,
                                    std::optional<uint32_t> maxNumImpreciseAcc) {
  MLIRContext *context = rewriter.getContext();
  auto c = [&](int64_t v) { return createI32Constant(rewriter, loc, v); };
  int64_t k = operands.k;
  bool bMnMajor = operands.bMnMajor;
  // Warpgroups along N (layout.warpsN > 1) each issue the wgmmas of their own
  // Ng = N / warpsN columns: B from its column gN * Ng on, the K-major box's
  // rows (128 bytes each in every chunk of K), the MN-major box's 64-column
  // chunks (k * 128 bytes each).
  int64_t n = layout.columnsPerWarp();
  Value bAddress = operands.bAddress;
  if (layout.warpsN > 1) {
    Value group = LLVM::LShrOp::create(rewriter, loc, createThreadId(rewriter, loc), c(7));
    Value column = LLVM::UDivOp::create(
        rewriter, loc, LLVM::AndOp::create(rewriter, loc, group, c(layout.warpgroups() - 1)),
        c(layout.warpgroupsM()));
    int64_t stride = bMnMajor ? n / 64 * k * 128 : n * 128;
    bAddress = LLVM::AddOp::create(rewriter, loc, bAddress,
                                   LLVM::MulOp::create(rewriter, loc, column, c(stride)));
  }
  // MN-major B: the [K, N] box, K rows of 128 bytes a 64-column chunk.
  Value bDescriptor = bMnMajor ? createSwizzled128Descriptor(rewriter, loc, bAddress,
                                                             /*leadingBytes=*/k * 128)
                               : createSwizzled128Descriptor(rewriter, loc, bAddress);

  auto aWgmmaType = getWgmmaType(operands.aElement);
  auto bWgmmaType = getWgmmaType(operands.bElement);
  int64_t elementBytes = operands.aElement.getIntOrFloatBitWidth() / 8;
  // One wgmma reads 32 bytes of K: k16 of 16-bit, k32 of FP8 elements.
  int64_t kPerStep = 32 / elementBytes;
  int64_t kPerChunk = 128 / elementBytes;
  Type f32 = rewriter.getF32Type(), i64 = rewriter.getI64Type();
  int64_t regsPerSlab = n / 2;
  Type slabType = LLVM::LLVMStructType::getLiteral(context, SmallVector<Type>(regsPerSlab, f32));
  auto shape = NVVM::MMAShapeAttr::get(context, 64, n, kPerStep);
  // A K-major operand steps kk elements along its rows (into the next
  // 128-byte chunk past the first), an MN-major one kk rows of 128 bytes.
  auto kStep = [&](Value descriptor, int64_t kk, int64_t chunkBytes, bool mnMajor = false) {
    if (kk == 0)
      return descriptor;
    // The start address field counts 16 bytes.
    int64_t bytes =
        mnMajor ? kk * 128 : kk / kPerChunk * chunkBytes + kk % kPerChunk * elementBytes;
    return LLVM::AddOp::create(
               rewriter, loc, descriptor,
               LLVM::ConstantOp::create(rewriter, loc, i64, rewriter.getI64IntegerAttr(bytes / 16)))
        .getResult();
  };
  auto bLayout = bMnMajor ? NVVM::MMALayout::row : NVVM::MMALayout::col;

  // The wgmmas of K elements [kBegin, kEnd) for every slab, each slab's
  // chain starting from its registers in `regs` (from zero when `fromZero`:
  // scale-d = 0 on the first step); returns the chains' registers.
  auto issue = [&](ArrayRef<Value> regs, int64_t kBegin, int64_t kEnd, bool fromZero) {
    SmallVector<Value> results;
    for (int64_t rep = 0; rep < layout.reps(); ++rep) {
      Value slab = packTile(rewriter, loc, slabType, regs.slice(rep * regsPerSlab, regsPerSlab));
      if (!operands.aWords.empty()) {
        // A from registers: words 4 c .. 4 c + 3 of the slab for step c.
        int64_t slabWords = k / 4;
        for (int64_t kk = kBegin; kk < kEnd; kk += kPerStep)
          slab = createRegisterAWgmma(
              rewriter, loc, slab,
              ArrayRef<Value>(operands.aWords).slice(rep * slabWords + kk / kPerStep * 4, 4),
              kStep(bDescriptor, kk, operands.bChunkBytes, bMnMajor), n, stringifyEnum(aWgmmaType),
              bMnMajor);
        llvm::append_range(results, unpackTile(rewriter, loc, slab));
        continue;
      }
      Value slabAddress = LLVM::AddOp::create(rewriter, loc, operands.aAddress,
                                              c(rep * layout.warpgroupsM() * 64 * 128));
      Value aDescriptor = createSwizzled128Descriptor(rewriter, loc, slabAddress);
      for (int64_t kk = kBegin; kk < kEnd; kk += kPerStep) {
        auto scaleOut =
            fromZero && kk == kBegin ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one;
        slab = NVVM::WgmmaMmaAsyncOp::create(
            rewriter, loc, slabType, slab, kStep(aDescriptor, kk, operands.aChunkBytes),
            kStep(bDescriptor, kk, operands.bChunkBytes, bMnMajor), shape, aWgmmaType, bWgmmaType,
            NVVM::WGMMATypes::f32, scaleOut, NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
            NVVM::MMALayout::row, bLayout, NVVM::MMAIntOverflowAttr());
      }
      llvm::append_range(results, unpackTile(rewriter, loc, slab));
    }
    return results;
  };

  if (!maxNumImpreciseAcc) {
    NVVM::WgmmaFenceAlignedOp::create(rewriter, loc);
    SmallVector<Value> results = issue(regs, 0, k, /*fromZero=*/false);
    NVVM::WgmmaGroupSyncAlignedOp::create(rewriter, loc);
    return results;
  }

  // Promotion: each chunk of K accumulates from zero on the tensor cores
  // (its input registers are not read; zeros keep them defined), is waited
  // for and added to the accumulator in f32. The fence before each chunk
  // orders the previous chunk's register reads (the adds) before the
  // wgmmas that may reuse those registers.
  Value zero = LLVM::ConstantOp::create(rewriter, loc, f32, rewriter.getF32FloatAttr(0.0f));
  SmallVector<Value> zeros(regs.size(), zero);
  for (int64_t kBegin = 0; kBegin < k; kBegin += *maxNumImpreciseAcc) {
    NVVM::WgmmaFenceAlignedOp::create(rewriter, loc);
    SmallVector<Value> partial =
        issue(zeros, kBegin, kBegin + *maxNumImpreciseAcc, /*fromZero=*/true);
    NVVM::WgmmaGroupSyncAlignedOp::create(rewriter, loc);
    partial = createWaitGroup(rewriter, loc, partial, /*pending=*/0);
    for (auto [acc, part] : llvm::zip_equal(regs, partial))
      acc = LLVM::FAddOp::create(rewriter, loc, acc, part);
  }
  return regs;
}

/// This warpgroup's first 64-row slab of an [M, K] K-major operand at
/// `address` (64 rows of 128 bytes a slab): slab g mod GM of warpgroup g, GM
/// the warpgroups along M of `layout` (those along N read the same rows).
Value warpgroupSlab(OpBuilder &b, Location loc, Value address, const tile::MmaLayout &layout) {
  auto c = [&](int64_t v) { return createI32Constant(b, loc, v); };
  Value warpgroup = LLVM::LShrOp::create(b, loc, createThreadId(b, loc), c(7));
  Value slab = LLVM::AndOp::create(b, loc, warpgroup, c(layout.warpgroupsM() - 1));
  return LLVM::AddOp::create(b, loc, address, LLVM::MulOp::create(b, loc, slab, c(64 * 128)));
}

Value sharedAddress(OpBuilder &b, Location loc, Value ptr) {
  return LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), ptr);
}

struct WarpGroupDotLowering : TileOpConversion<tile::WarpGroupDotOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::WarpGroupDotOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    tile::MmaLayout layout = *tileConverter.getMmaLayout(op.getAcc().getType());
    tile::RingType bRing = op.getB().getType();
    Value bAddress = sharedAddress(
        rewriter, loc, ringSlotAddress(rewriter, loc, bRing, adaptor.getB(), adaptor.getBSlot()));
    // A wide K-major box holds its 128-byte chunks of K one after the other,
    // each its rows of 128 bytes (M * 128 bytes for A, N * 128 for a K-major
    // B); an MN-major B's chunks of N are its descriptor's leading byte
    // offset. A staged A is laid out as a K-major box.
    RankedTensorType aBox = op.getAMatrix(), bBox = op.getBMatrix();
    WgmmaOperands operands{Value(),
                           bAddress,
                           aBox.getElementType(),
                           bBox.getElementType(),
                           aBox.getDimSize(1),
                           /*aChunkBytes=*/aBox.getDimSize(0) * 128,
                           /*bChunkBytes=*/op.getBMnMajor() ? 0 : bBox.getDimSize(0) * 128,
                           op.getBMnMajor()};
    if (tile::RingType aRing = op.getARing())
      operands.aAddress = warpgroupSlab(
          rewriter, loc,
          sharedAddress(rewriter, loc,
                        ringSlotAddress(rewriter, loc, aRing, adaptor.getA(), adaptor.getASlot())),
          layout);
    else if (llvm::isa<tile::SmemType>(op.getA().getType()))
      operands.aAddress =
          warpgroupSlab(rewriter, loc, sharedAddress(rewriter, loc, adaptor.getA()), layout);
    else
      operands.aWords =
          packRegisterA(rewriter, loc, getTypeConverter()->convertType(aBox.getElementType()),
                        unpackTile(rewriter, loc, adaptor.getA()));
    SmallVector<Value> regs =
        emitWarpGroupDot(rewriter, loc, layout, operands,
                         unpackTile(rewriter, loc, adaptor.getAcc()), op.getMaxNumImpreciseAcc());
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(op.getAcc().getType()), regs));
    return success();
  }
};

struct StageLowering : TileOpConversion<tile::StageOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::StageOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getSrc().getType();
    // Its readers are wgmmas, each waited for before the CTA barrier after
    // the last of them, or ldmatrix (synchronous): drained there.
    Value buffer = createSharedBuffer(rewriter, op, "__kiln_staged",
                                      getTypeConverter()->convertType(type.getElementType()),
                                      type.getNumElements(), /*alignment=*/1024);
    markDrained(op, buffer);
    storeSwizzled128(rewriter, loc, tileConverter, type, buffer,
                     unpackTile(rewriter, loc, adaptor.getSrc()));
    publishToAsyncProxy(rewriter, loc);
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

struct WarpGroupDotStagedLowering : TileOpConversion<tile::WarpGroupDotStagedOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::WarpGroupDotStagedOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto aType = op.getATile(), bType = op.getB().getType();
    auto accType = op.getAcc().getType();
    tile::MmaLayout layout = *tileConverter.getMmaLayout(accType);
    Type element = getTypeConverter()->convertType(aType.getElementType());
    // A in the accumulator's encoding is read from registers; a staged A
    // where it is.
    bool registerA = bool(aType.getEncoding());
    bool stagedA = llvm::isa<tile::SmemType>(op.getA().getType());
    // 128-byte swizzle patterns repeat every 1024 bytes of shared address.
    // Scratch: every warpgroup's wgmmas are waited for before the final
    // bar.sync, after which another op (or this one, in the next iteration)
    // may write the bytes.
    Value aBuffer = stagedA ? adaptor.getA() : Value();
    if (!registerA && !stagedA)
      aBuffer = createSharedBuffer(rewriter, op, "__kiln_wgmma_a_smem", element,
                                   aType.getNumElements(), /*alignment=*/1024,
                                   /*scratch=*/true);
    Value bBuffer = createSharedBuffer(rewriter, op, "__kiln_wgmma_b_smem", element,
                                       bType.getNumElements(), /*alignment=*/1024,
                                       /*scratch=*/true);
    // The stores become visible to the async proxy, then to every warpgroup.
    if (!registerA && !stagedA)
      storeSwizzled128(rewriter, loc, tileConverter, aType, aBuffer,
                       unpackTile(rewriter, loc, adaptor.getA()));
    storeSwizzled128(rewriter, loc, tileConverter, bType, bBuffer,
                     unpackTile(rewriter, loc, adaptor.getB()));
    publishToAsyncProxy(rewriter, loc);
    int64_t m = aType.getDimSize(0), k = aType.getDimSize(1);
    Value aSlab = registerA
                      ? Value()
                      : warpgroupSlab(rewriter, loc, sharedAddress(rewriter, loc, aBuffer), layout);
    WgmmaOperands operands{aSlab,
                           sharedAddress(rewriter, loc, bBuffer),
                           aType.getElementType(),
                           bType.getElementType(),
                           k,
                           /*aChunkBytes=*/m * 128,
                           /*bChunkBytes=*/0,
                           /*bMnMajor=*/true};
    if (registerA)
      operands.aWords =
          packRegisterA(rewriter, loc, element, unpackTile(rewriter, loc, adaptor.getA()));
    SmallVector<Value> regs = emitWarpGroupDot(rewriter, loc, layout, operands,
                                               unpackTile(rewriter, loc, adaptor.getAcc()),
                                               /*maxNumImpreciseAcc=*/std::nullopt);
    regs = createWaitGroup(rewriter, loc, regs, /*pending=*/0);
    NVVM::BarrierOp::create(rewriter, loc);
    rewriter.replaceOp(op, packTile(rewriter, loc, getTypeConverter()->convertType(accType), regs));
    return success();
  }
};

struct WarpGroupDotWaitLowering : TileOpConversion<tile::WarpGroupDotWaitOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::WarpGroupDotWaitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Value> regs = createWaitGroup(
        rewriter, loc, unpackTile(rewriter, loc, adaptor.getSrc()), op.getPending());
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(op.getType()), regs));
    return success();
  }
};

/// tile.warpgroup_turn -> named barriers 2 and 3 of the two consumer
/// warpgroups (w = tid / 128), as inline PTX: "wait" bar.sync 2 + w, 256;
/// "pass" bar.arrive 3 - w, 256; "start" warpgroup 1 arrives at barrier 2;
/// "end" warpgroup 0 syncs on barrier 2.
struct WarpGroupTurnLowering : TileOpConversion<tile::WarpGroupTurnOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::WarpGroupTurnOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value warpgroup = LLVM::LShrOp::create(rewriter, loc, createThreadId(rewriter, loc),
                                           createI32Constant(rewriter, loc, 7));
    StringRef step = op.getStep();
    std::string ptx;
    if (step == "wait")
      ptx = "{\n.reg .b32 b;\nadd.u32 b, $0, 2;\nbar.sync b, 256;\n}";
    else if (step == "pass")
      ptx = "{\n.reg .b32 b;\nsub.u32 b, 3, $0;\nbar.arrive b, 256;\n}";
    else if (step == "start")
      ptx = "{\n.reg .pred p;\nsetp.eq.u32 p, $0, 1;\n@p bar.arrive 2, 256;\n}";
    else
      ptx = "{\n.reg .pred p;\nsetp.eq.u32 p, $0, 0;\n@p bar.sync 2, 256;\n}";
    createInlinePTX(rewriter, loc, Type(), ValueRange{warpgroup}, ptx, "r");
    rewriter.eraseOp(op);
    return success();
  }
};

struct ConvertLayoutLowering : TileOpConversion<tile::ConvertLayoutOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::ConvertLayoutOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = op.getSrc().getType(), dstType = op.getType();
    // Where every thread already holds the elements it needs (e.g. version 3
    // and version 2 of warpsN = 1, the same registers): a register copy.
    if (Value copied = copyRegisters(rewriter, loc, tileConverter, adaptor.getSrc(), srcType,
                                     dstType, [](int64_t index) { return index; })) {
      rewriter.replaceOp(op, copied);
      return success();
    }
    Type element = getTypeConverter()->convertType(srcType.getElementType());
    int64_t bytes = std::max<int64_t>(1, srcType.getElementTypeBitWidth() / 8);
    int64_t cols = srcType.getShape().back();
    int64_t pad = std::max<int64_t>(1, 16 / bytes);
    int64_t rows = srcType.getNumElements() / cols;
    Value buffer = createSharedBuffer(rewriter, op, "__kiln_convert_smem", element,
                                      rows * (cols + pad), /*alignment=*/16, /*scratch=*/true);
    // Element e at e + (e / cols) * pad: rows start in different banks.
    storePadded(rewriter, loc, tileConverter, srcType, buffer, element, pad,
                unpackTile(rewriter, loc, adaptor.getSrc()));
    NVVM::BarrierOp::create(rewriter, loc);
    SmallVector<Value> dst;
    forEachPaddedAccess(rewriter, loc, tileConverter, dstType, buffer, element, pad,
                        [&](const VectorAccess &vector, int64_t, Value ptr) {
                          Value loaded =
                              LLVM::LoadOp::create(rewriter, loc, vector.accessType, ptr,
                                                   std::min<unsigned>(vector.alignment, 16));
                          llvm::append_range(dst, vector.split(rewriter, loc, loaded));
                        });
    // The buffer is written again if the conversion runs in a loop.
    NVVM::BarrierOp::create(rewriter, loc);
    rewriter.replaceOp(op, packTile(rewriter, loc, getTypeConverter()->convertType(dstType), dst));
    return success();
  }
};
} // namespace

void kiln::populateTileWarpGroupDotOpsToNVVMPatterns(TileTypeConverter &converter,
                                                     RewritePatternSet &patterns) {
  patterns.add<StageLowering, WarpGroupDotLowering, WarpGroupDotStagedLowering,
               WarpGroupDotWaitLowering, WarpGroupTurnLowering, ConvertLayoutLowering>(converter);
}
