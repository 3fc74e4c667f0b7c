//===- ReduceOps.cpp - tile.reduce ------------------------------------------===//
//
// In the blocked layout every index is a bit field: element e of a tile holds
// its register's low bits (the run), then the thread id, then the register's
// high bits (the run number); a dimension of the (power-of-two) shape is a
// contiguous range of e's bits. Reducing an axis therefore means combining
//  1. the registers whose axis bits differ (within the thread),
//  2. the lanes whose axis bits differ (shfl.sync.bfly on those lane bits),
//  3. the warps whose axis bits differ: each warp's partial goes to a shared
//     buffer [result element][warp along the axis]; after a barrier every
//     thread reads and combines what its result registers need. This last step
//     also puts the results into the result's own layout.
// With `broadcast` the result is in the source's layout: each register takes
// its line's value, and step 3 is needed only when warps lie along the axis;
// so is it for a scalar result (every thread holds the total).
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

namespace {
/// Where the bits of the element index come from, for one layout.
struct BitMap {
  int64_t runBits;    ///< e bits [0, runBits) = register bits [0, runBits)
  int64_t threadBits; ///< e bits [runBits, runBits + threadBits) = thread bits
  int64_t totalBits;  ///< log2(numel); the rest are register bits above runBits

  explicit BitMap(const tile::BlockedLayout &layout) {
    runBits = llvm::Log2_64(layout.vec);
    totalBits = llvm::Log2_64(layout.numel);
    threadBits = std::min<int64_t>(llvm::Log2_64(layout.threads), totalBits - runBits);
  }
  /// Register bit -> element bit.
  int64_t elementBitOfRegisterBit(int64_t b) const {
    return b < runBits ? b : b + threadBits;
  }
};

struct ReduceLowering : TileOpConversion<tile::ReduceOp> {
  using TileOpConversion::TileOpConversion;

  Value combine(ConversionPatternRewriter &rewriter, tile::ReduceOp op, Value a, Value b) const {
    return inlineCombine(rewriter, op.getCombine(), a, b);
  }

  LogicalResult matchAndRewrite(tile::ReduceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = llvm::cast<RankedTensorType>(op.getSrc().getType());
    Type element = srcType.getElementType();
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() > 64)
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    auto layout = tileConverter.getLayout(srcType);
    BitMap bits(layout);
    int64_t axis = op.getAxis();
    int64_t lo, hi; // captured by the lambdas below (no structured binding in C++17)
    std::tie(lo, hi) = axisElementBits(srcType, axis);
    auto inAxis = [&](int64_t elementBit) { return elementBit >= lo && elementBit < hi; };

    // 1. Within the thread: combine registers that differ only in axis bits.
    SmallVector<Value> regs = unpackTile(rewriter, loc, adaptor.getSrc());
    int64_t regBits = llvm::Log2_64(regs.size());
    int64_t axisRegMask = 0;
    for (int64_t b = 0; b < regBits; ++b)
      if (inAxis(bits.elementBitOfRegisterBit(b)))
        axisRegMask |= int64_t(1) << b;
    // partials[r] for every r with its axis register bits clear.
    llvm::SmallDenseMap<int64_t, Value> partials;
    SmallVector<int64_t> groups;
    for (int64_t r = 0; r < int64_t(regs.size()); ++r) {
      int64_t group = r & ~axisRegMask;
      auto it = partials.find(group);
      if (it == partials.end()) {
        partials[group] = regs[r];
        groups.push_back(group);
      } else {
        it->second = combine(rewriter, op, it->second, regs[r]);
      }
    }

    // 2. Across lanes: butterfly over the lane bits inside the axis.
    int64_t laneBits = std::min<int64_t>(5, bits.threadBits);
    for (int64_t tb = 0; tb < laneBits; ++tb) {
      if (!inAxis(bits.runBits + tb))
        continue;
      for (int64_t group : groups)
        partials[group] =
            combine(rewriter, op, partials[group],
                    createShuffle(rewriter, loc, partials[group], int64_t(1) << tb,
                                  NVVM::ShflKind::bfly, 0x1f));
    }

    // 3. Across warps, through shared memory: [result element][warp along the axis].
    int64_t warpAxisLo = -1, warpAxisCount = 0;
    for (int64_t tb = laneBits; tb < bits.threadBits; ++tb)
      if (inAxis(bits.runBits + tb)) {
        if (warpAxisLo < 0)
          warpAxisLo = tb;
        ++warpAxisCount;
      }
    int64_t warpsAlongAxis = int64_t(1) << warpAxisCount;
    int64_t numResults = srcType.getNumElements() / srcType.getDimSize(axis);

    // `broadcast`: register r of the result is its group's partial. Lanes along
    // the axis already hold the same value after the butterfly, so when no warps
    // lie along the axis nothing goes through shared memory.
    auto broadcastResult = [&](llvm::SmallDenseMap<int64_t, Value> &lines) {
      SmallVector<Value> values;
      for (int64_t r = 0; r < int64_t(regs.size()); ++r)
        values.push_back(lines[r & ~axisRegMask]);
      return packTile(rewriter, loc, getTypeConverter()->convertType(op.getType()), values);
    };
    if (op.getBroadcast() && warpsAlongAxis == 1) {
      rewriter.replaceOp(op, broadcastResult(partials));
      return success();
    }
    // A scalar within one warp: every thread holds the total already.
    if (!llvm::isa<RankedTensorType>(op.getType()) && warpsAlongAxis == 1) {
      rewriter.replaceOp(op, partials[groups.front()]);
      return success();
    }

    // Within one warp, where each thread's partials are the results its own
    // registers hold (the kept dimensions map to the same threads and
    // registers in both layouts): no shared memory either.
    auto resultType = llvm::dyn_cast<RankedTensorType>(op.getType());
    if (resultType && !op.getBroadcast() && warpsAlongAxis == 1) {
      tile::BlockedLayout out = tileConverter.getLayout(resultType);
      auto resultIndex = [&](int64_t e) {
        return ((e >> hi) << lo) | (e & ((int64_t(1) << lo) - 1));
      };
      if (std::optional<SmallVector<int64_t>> sources = findRegisterSources(
              out.threads, out.regsPerThread(),
              [&](int64_t t, int64_t r) { return out.elementOf(t, r); }, groups,
              [&](int64_t t, int64_t r) { return resultIndex(layout.elementOf(t, r)); })) {
        SmallVector<Value> values;
        for (int64_t group : *sources)
          values.push_back(partials[group]);
        rewriter.replaceOp(
            op, packTile(rewriter, loc, getTypeConverter()->convertType(resultType), values));
        return success();
      }
    }

    Type llvmElement = getTypeConverter()->convertType(element);
    bool isBool = llvmElement.isInteger(1);
    Type stored = isBool ? rewriter.getI8Type() : llvmElement;
    Value buffer = createSharedBuffer(rewriter, op, "__kiln_reduce_smem", stored,
                                      numResults * warpsAlongAxis);
    auto slot = [&](Value index) {
      return LLVM::GEPOp::create(rewriter, loc, buffer.getType(), stored, buffer,
                                 ArrayRef<LLVM::GEPArg>{index});
    };
    auto i32 = [&](int64_t v) { return createI32Constant(rewriter, loc, v); };

    // The element index of each partial (its axis bits are zero after step 1
    // for register bits; thread axis bits are cleared below).
    ElementIndices indices = getElementIndices(rewriter, loc, layout);
    Value tid = createThreadId(rewriter, loc);
    Value warpAlongAxis = i32(0);
    if (warpAxisCount)
      warpAlongAxis = LLVM::AndOp::create(
          rewriter, loc, LLVM::LShrOp::create(rewriter, loc, tid, i32(warpAxisLo)),
          i32(warpsAlongAxis - 1));
    llvm::SmallDenseMap<int64_t, Value> resultIndexOfGroup;
    for (int64_t group : groups) {
      Value e = LLVM::AddOp::create(rewriter, loc, indices.base, i32(indices.offsets[group]));
      // result index = e without its axis bits
      Value low = LLVM::AndOp::create(rewriter, loc, e, i32((int64_t(1) << lo) - 1));
      Value high = LLVM::ShlOp::create(rewriter, loc,
                                       LLVM::LShrOp::create(rewriter, loc, e, i32(hi)), i32(lo));
      Value result = LLVM::OrOp::create(rewriter, loc, high, low);
      resultIndexOfGroup[group] = result;
      Value index = LLVM::AddOp::create(
          rewriter, loc, LLVM::MulOp::create(rewriter, loc, result, i32(warpsAlongAxis)),
          warpAlongAxis);
      Value value = partials[group];
      if (isBool)
        value = LLVM::ZExtOp::create(rewriter, loc, stored, value);
      LLVM::StoreOp::create(rewriter, loc, value, slot(index));
    }
    NVVM::BarrierOp::create(rewriter, loc);

    // Read back in the result's layout, combining the warps along the axis.
    auto readResult = [&](Value resultIndex) {
      Value base = LLVM::MulOp::create(rewriter, loc, resultIndex, i32(warpsAlongAxis));
      Value acc;
      for (int64_t w = 0; w < warpsAlongAxis; ++w) {
        Value v = LLVM::LoadOp::create(
            rewriter, loc, stored, slot(LLVM::AddOp::create(rewriter, loc, base, i32(w))));
        if (isBool)
          v = LLVM::TruncOp::create(rewriter, loc, llvmElement, v);
        acc = acc ? combine(rewriter, op, acc, v) : v;
      }
      return acc;
    };
    Value replacement;
    if (op.getBroadcast()) {
      llvm::SmallDenseMap<int64_t, Value> lines;
      for (int64_t group : groups)
        lines[group] = readResult(resultIndexOfGroup[group]);
      replacement = broadcastResult(lines);
    } else if (resultType) {
      ElementIndices out =
          getElementIndices(rewriter, loc, tileConverter.getLayout(resultType));
      SmallVector<Value> values;
      for (int64_t offset : out.offsets)
        values.push_back(
            readResult(LLVM::AddOp::create(rewriter, loc, out.base, i32(offset))));
      replacement =
          packTile(rewriter, loc, getTypeConverter()->convertType(resultType), values);
    } else {
      replacement = readResult(i32(0));
    }
    NVVM::BarrierOp::create(rewriter, loc);
    rewriter.replaceOp(op, replacement);
    return success();
  }
};
} // namespace

void kiln::populateTileReduceOpsToNVVMPatterns(TileTypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<ReduceLowering>(converter);
}
