//===- ScanOps.cpp - tile.scan ----------------------------------------------===//
//
// In the blocked layout (Layout.h) the element index e of a thread's register
// is a bit field: the register's low bits (the run), the thread id (lanes,
// then warps), the register's high bits (the run number). A scan axis is a
// contiguous range [lo, hi) of e's bits, so the position along the axis splits,
// from its least significant bits up, over
//   run bits     (registers of one run: scanned in the thread, in order),
//   lane bits    (shfl.sync.up, Kogge-Stone, combining where lanePos >= offset),
//   warp bits    (warp totals through a shared buffer, one barrier; the
//                lines swizzled: no bank conflicts),
//   run-number bits ("chunks": registers holding whole later segments of the
//                line; each chunk is carried the totals of the earlier ones).
// Any of these may be empty, so one algorithm covers every axis of every tile:
// a line that lies in one thread, in one warp, across warps, or (for a leading
// axis) across the run numbers of every thread.
//
// The combination is associative but need not be commutative: the partial of
// earlier positions is always the first argument.
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

namespace {
/// A partial combination that may be absent: statically (`value` null) or per
/// thread (`valid`, an i1; null means present).
struct Partial {
  Value value;
  Value valid;
};

/// One segment of a line in one thread: the run of a chunk after phase 1.
struct Segment {
  int64_t group;
  int64_t chunk;
  SmallVector<int64_t> regs; ///< registers in axis order
  SmallVector<Value> local;  ///< inclusive scan of the run
  Partial laneExclusive;     ///< the combination of earlier lanes of the warp
  Value warpTotal;           ///< the combination of the warp's part of the segment
};

/// Extracts the bits of `value` under the contiguous `mask`.
int64_t extractBits(int64_t value, int64_t mask) {
  return mask ? (value & mask) >> llvm::countr_zero(uint64_t(mask)) : 0;
}

struct ScanLowering : TileOpConversion<tile::ScanOp> {
  using TileOpConversion::TileOpConversion;

  /// `a` (the earlier) combined with `b`.
  Value combine(ConversionPatternRewriter &rewriter, tile::ScanOp op, Value a, Value b) const {
    return inlineCombine(rewriter, op.getCombine(), a, b);
  }

  /// `a` then `b`, either of which may be absent.
  Partial combine(ConversionPatternRewriter &rewriter, tile::ScanOp op, Partial a,
                  Partial b) const {
    if (!a.value)
      return b;
    if (!b.value)
      return a;
    Location loc = op.getLoc();
    Value both = combine(rewriter, op, a.value, b.value);
    auto select = [&](Value cond, Value t, Value f) {
      return LLVM::SelectOp::create(rewriter, loc, cond, t, f).getResult();
    };
    if (!a.valid && !b.valid)
      return {both, Value()};
    if (!b.valid)
      return {select(a.valid, both, b.value), Value()};
    if (!a.valid)
      return {select(b.valid, both, a.value), Value()};
    return {select(a.valid, select(b.valid, both, a.value), b.value),
            LLVM::OrOp::create(rewriter, loc, a.valid, b.valid)};
  }

  LogicalResult matchAndRewrite(tile::ScanOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = llvm::cast<RankedTensorType>(op.getSrc().getType());
    Type element = srcType.getElementType();
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() > 64)
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    tile::BlockedLayout layout = tileConverter.getLayout(srcType);
    int64_t runBits = llvm::Log2_64(layout.vec);
    int64_t totalBits = llvm::Log2_64(layout.numel);
    // Thread bits that index elements (the others replicate a small tile).
    int64_t threadBits = std::min<int64_t>(llvm::Log2_64(layout.threads), totalBits - runBits);
    int64_t laneBits = std::min<int64_t>(5, threadBits);

    int64_t axis = op.getAxis();
    int64_t lo, hi; // captured by the lambdas below (no structured binding in C++17)
    std::tie(lo, hi) = axisElementBits(srcType, axis);
    auto inAxis = [&](int64_t elementBit) { return elementBit >= lo && elementBit < hi; };

    SmallVector<Value> regs = unpackTile(rewriter, loc, adaptor.getSrc());
    int64_t regBits = llvm::Log2_64(regs.size());
    int64_t runMask = 0, chunkMask = 0; // register bits along the axis
    for (int64_t b = 0; b < regBits; ++b) {
      int64_t elementBit = b < runBits ? b : b + threadBits;
      if (inAxis(elementBit))
        (b < runBits ? runMask : chunkMask) |= int64_t(1) << b;
    }
    // Thread bits along the axis: lanes [laneLo, laneLo + laneCount), warps
    // [warpLo, warpLo + warpCount) (thread-id bit positions).
    int64_t laneLo = 0, laneCount = 0, warpLo = 0, warpCount = 0;
    for (int64_t tb = 0; tb < threadBits; ++tb) {
      if (!inAxis(runBits + tb))
        continue;
      if (tb < laneBits) {
        laneLo = laneCount++ ? laneLo : tb;
      } else {
        warpLo = warpCount++ ? warpLo : tb;
      }
    }
    int64_t numChunks = int64_t(1) << llvm::popcount(uint64_t(chunkMask));
    int64_t warpsAlongAxis = int64_t(1) << warpCount;

    auto i32 = [&](int64_t v) { return createI32Constant(rewriter, loc, v); };
    auto uge = [&](Value a, int64_t b) {
      return LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::uge, a, i32(b)).getResult();
    };
    auto bitField = [&](Value v, int64_t shift, int64_t count) {
      return LLVM::AndOp::create(rewriter, loc, LLVM::LShrOp::create(rewriter, loc, v, i32(shift)),
                                 i32((int64_t(1) << count) - 1))
          .getResult();
    };
    Value tid = createThreadId(rewriter, loc);
    Value lanePos = laneCount ? bitField(tid, laneLo, laneCount) : Value();
    Value warpPos = warpCount ? bitField(tid, warpLo, warpCount) : Value();

    // The segments: one per (group of registers off the axis, chunk), each
    // with its registers in axis order.
    SmallVector<Segment> segments;
    llvm::SmallDenseMap<std::pair<int64_t, int64_t>, int64_t> segmentOf;
    for (int64_t r = 0; r < int64_t(regs.size()); ++r) {
      int64_t group = r & ~(runMask | chunkMask);
      int64_t chunk = extractBits(r, chunkMask);
      auto [it, inserted] = segmentOf.try_emplace({group, chunk}, int64_t(segments.size()));
      if (inserted)
        segments.push_back({group, chunk, {}, {}, {}, {}});
      Segment &segment = segments[it->second];
      int64_t k = extractBits(r, runMask);
      if (int64_t(segment.regs.size()) <= k)
        segment.regs.resize(k + 1, -1);
      segment.regs[k] = r;
    }

    // Phase 1, per segment: the run in the thread, then across the lanes.
    Value laneId = LLVM::AndOp::create(rewriter, loc, tid, i32(31));
    Value lastLane = laneCount && (warpCount || numChunks > 1)
                         ? LLVM::OrOp::create(rewriter, loc, laneId,
                                              i32(((int64_t(1) << laneCount) - 1) << laneLo))
                         : Value();
    for (Segment &segment : segments) {
      for (int64_t r : segment.regs)
        segment.local.push_back(
            segment.local.empty() ? regs[r] : combine(rewriter, op, segment.local.back(), regs[r]));
      Value total = segment.local.back();
      if (!laneCount) {
        segment.warpTotal = total;
        continue;
      }
      // Kogge-Stone: after the step of offset d a lane holds the combination
      // of the 2d lanes up to itself (fewer at the start of the line).
      for (int64_t step = 0; step < laneCount; ++step) {
        int64_t offset = int64_t(1) << step;
        Value earlier =
            createShuffle(rewriter, loc, total, offset << laneLo, NVVM::ShflKind::up, 0);
        total = LLVM::SelectOp::create(rewriter, loc, uge(lanePos, offset),
                                       combine(rewriter, op, earlier, total), total);
      }
      segment.laneExclusive = {
          createShuffle(rewriter, loc, total, int64_t(1) << laneLo, NVVM::ShflKind::up, 0),
          uge(lanePos, 1)};
      // The total of the warp's part, for later warps and chunks (none when the
      // line lies in this warp's lanes).
      if (warpCount || numChunks > 1)
        segment.warpTotal =
            createShuffle(rewriter, loc, total, lastLane, NVVM::ShflKind::idx, 0x1f);
    }

    // Across warps: every warp's totals go to [chunk][warp along the axis][line]
    // (the lines swizzled so that the lanes touch consecutive words:
    // createLineSwizzle).
    Type llvmElement = getTypeConverter()->convertType(element);
    bool isBool = llvmElement.isInteger(1);
    Type stored = isBool ? rewriter.getI8Type() : llvmElement;
    Value buffer;
    SmallVector<Value> lineBase; // per segment: its slot for warp 0
    int64_t numLines = srcType.getNumElements() / srcType.getDimSize(axis);
    if (warpCount) {
      buffer = createSharedBuffer(rewriter, op, "__kiln_scan_smem", stored,
                                  numLines * numChunks * warpsAlongAxis, /*alignment=*/16,
                                  /*scratch=*/true);
      ElementIndices indices = getElementIndices(rewriter, loc, layout);
      for (Segment &segment : segments) {
        Value e = LLVM::AddOp::create(rewriter, loc, indices.base,
                                      i32(indices.offsets[segment.regs.front()]));
        // The line: e without its axis bits.
        Value low = LLVM::AndOp::create(rewriter, loc, e, i32((int64_t(1) << lo) - 1));
        Value high = LLVM::ShlOp::create(rewriter, loc,
                                         LLVM::LShrOp::create(rewriter, loc, e, i32(hi)), i32(lo));
        Value line = LLVM::OrOp::create(rewriter, loc, high, low);
        lineBase.push_back(LLVM::AddOp::create(
            rewriter, loc,
            createLineSwizzle(rewriter, loc, line, std::min<int64_t>(lo, runBits), numLines),
            i32(segment.chunk * warpsAlongAxis * numLines)));
      }
    }
    auto slot = [&](Value index) {
      return LLVM::GEPOp::create(rewriter, loc, buffer.getType(), stored, buffer,
                                 ArrayRef<LLVM::GEPArg>{index});
    };
    if (warpCount) {
      // The lanes of a line in a warp hold one total (shfl.idx): same-value stores.
      Value warpOffset = LLVM::MulOp::create(rewriter, loc, warpPos, i32(numLines));
      for (auto [segment, base] : llvm::zip(segments, lineBase)) {
        Value value = segment.warpTotal;
        if (isBool)
          value = LLVM::ZExtOp::create(rewriter, loc, stored, value);
        LLVM::StoreOp::create(rewriter, loc, value,
                              slot(LLVM::AddOp::create(rewriter, loc, base, warpOffset)));
      }
      NVVM::BarrierOp::create(rewriter, loc);
    }

    // Phase 2: prefix = earlier chunks, earlier warps, earlier lanes; applied
    // to every element of the run.
    SmallVector<Value> results(regs.size());
    llvm::SmallDenseMap<int64_t, Partial> carry; // per group: earlier chunks
    for (auto [index, segment] : llvm::enumerate(segments)) {
      Partial warpPrefix, chunkTotal;
      if (warpCount) {
        Value base = lineBase[index];
        for (int64_t w = 0; w < warpsAlongAxis; ++w) {
          bool needForTotal = segment.chunk + 1 < numChunks;
          if (w + 1 == warpsAlongAxis && !needForTotal)
            break;
          Value v = LLVM::LoadOp::create(
              rewriter, loc, stored,
              slot(LLVM::AddOp::create(rewriter, loc, base, i32(w * numLines))));
          if (isBool)
            v = LLVM::TruncOp::create(rewriter, loc, llvmElement, v);
          if (w + 1 < warpsAlongAxis)
            warpPrefix =
                combine(rewriter, op, warpPrefix,
                        Partial{v, LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::ult,
                                                        i32(w), warpPos)});
          if (needForTotal)
            chunkTotal = combine(rewriter, op, chunkTotal, Partial{v, Value()});
        }
      } else {
        chunkTotal = {segment.warpTotal, Value()};
      }
      Partial &earlier = carry[segment.group];
      Partial prefix =
          combine(rewriter, op, combine(rewriter, op, earlier, warpPrefix), segment.laneExclusive);
      for (auto [r, local] : llvm::zip(segment.regs, segment.local))
        results[r] = combine(rewriter, op, prefix, Partial{local, Value()}).value;
      if (segment.chunk + 1 < numChunks)
        earlier = combine(rewriter, op, earlier, chunkTotal);
    }
    if (warpCount)
      NVVM::BarrierOp::create(rewriter, loc);
    rewriter.replaceOp(op, packTile(rewriter, loc, adaptor.getSrc().getType(), results));
    return success();
  }
};
} // namespace

void kiln::populateTileScanOpsToNVVMPatterns(TileTypeConverter &converter,
                                             RewritePatternSet &patterns) {
  patterns.add<ScanLowering>(converter);
}
