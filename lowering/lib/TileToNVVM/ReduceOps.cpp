//===- ReduceOps.cpp - tile.reduce ------------------------------------------===//
//
// In the blocked layout every index is a bit field: element e of a tile holds
// its register's low bits (the run), then the thread id, then the register's
// high bits (the run number); a dimension of the (power-of-two) shape is a
// contiguous range of e's bits. Reducing an axis therefore means combining
//  1. the registers whose axis bits differ (within the thread),
//  2. the lanes whose axis bits differ (shfl.sync.bfly on those lane bits;
//     redux.sync where all 32 lanes and a 32-bit integer add/min/max/and/or/
//     xor),
//  3. the warps whose axis bits differ: each warp's partial goes to a shared
//     buffer [warp along the axis][result element] (the result elements
//     swizzled so that the lanes touch consecutive words: createLineSwizzle);
//     after a barrier every thread reads and combines what its result
//     registers need. This last step also puts the results into the result's
//     own layout.
// With `broadcast` the result is in the source's layout: each register takes
// its line's value, and step 3 is needed only when warps lie along the axis;
// so is it for a scalar result (every thread holds the total).
// With N sources (same shape, hence the same layout) every step runs on the N
// values of a register in lockstep: the combine region takes and returns N, a
// butterfly round shuffles N values, and step 3 uses ONE buffer holding the N
// [warp][result element] arrays between one pair of barriers.
//
// The rows of a wgmma accumulator (`#tile.mma` version 3, axis 1) need no
// shared memory: a thread holds 2 rows of each of its 64-row slabs, N / 4
// registers each, and the 4 lanes of a quad hold the rest of those rows.
// Each row's registers combine pairwise in the thread, then the quad's
// partials over lane bits 0 and 1 (shfl.sync.bfly 1, 2); the result is the
// `#tile.slice` of the encoding (register 2 r + h: row h of slab r), or with
// `broadcast` each register of the source takes its row's value. The mma.sync
// accumulator (version 2) is the same where each warp holds whole rows
// (warpsN = 1); with warpsN > 1 the quads' partials then meet in a shared
// buffer [warp along N][row] (one barrier), and every thread combines its
// rows' partials in warp order (a second barrier frees the buffer).
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"
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
  int64_t elementBitOfRegisterBit(int64_t b) const { return b < runBits ? b : b + threadBits; }
};

/// The redux.sync kind of each source where `op` combines every one of its N
/// sources by itself with one 32-bit integer add, min, max, and, or or xor of
/// its two arguments (the combine region's result i = op(arg i, arg N + i));
/// none otherwise.
std::optional<SmallVector<NVVM::ReduxKind>> reduxKinds(tile::ReduceOp op, ArrayRef<Type> elements) {
  Block &body = op.getCombine().front();
  int64_t n = elements.size();
  auto ret = llvm::cast<tile::ReduceReturnOp>(body.getTerminator());
  SmallVector<NVVM::ReduxKind> kinds;
  for (auto [i, result] : llvm::enumerate(ret->getOperands())) {
    if (!elements[i].isInteger(32))
      return std::nullopt;
    Operation *def = result.getDefiningOp();
    if (!def || def->getBlock() != &body || def->getNumOperands() != 2)
      return std::nullopt;
    Value a = body.getArgument(i), b = body.getArgument(n + i);
    if (!((def->getOperand(0) == a && def->getOperand(1) == b) ||
          (def->getOperand(0) == b && def->getOperand(1) == a)))
      return std::nullopt;
    std::optional<NVVM::ReduxKind> kind =
        llvm::TypeSwitch<Operation *, std::optional<NVVM::ReduxKind>>(def)
            .Case([](arith::AddIOp) { return NVVM::ReduxKind::ADD; })
            .Case([](arith::AndIOp) { return NVVM::ReduxKind::AND; })
            .Case([](arith::OrIOp) { return NVVM::ReduxKind::OR; })
            .Case([](arith::XOrIOp) { return NVVM::ReduxKind::XOR; })
            .Case([](arith::MaxSIOp) { return NVVM::ReduxKind::MAX; })
            .Case([](arith::MinSIOp) { return NVVM::ReduxKind::MIN; })
            .Case([](arith::MaxUIOp) { return NVVM::ReduxKind::UMAX; })
            .Case([](arith::MinUIOp) { return NVVM::ReduxKind::UMIN; })
            .Default([](Operation *) { return std::nullopt; });
    if (!kind)
      return std::nullopt;
    kinds.push_back(*kind);
  }
  return kinds;
}

struct ReduceLowering : TileOpConversion<tile::ReduceOp> {
  using TileOpConversion::TileOpConversion;

  /// The region on the N accumulated and the N new values.
  SmallVector<Value> combine(ConversionPatternRewriter &rewriter, tile::ReduceOp op, ValueRange a,
                             ValueRange b) const {
    return inlineCombine(rewriter, op.getCombine(), a, b);
  }

  /// The rows of a version 3 or 2 `#tile.mma` tile along axis 1: in the
  /// thread, then across the quad of lanes that shares a row; for version 2
  /// with warpsN > 1 the warps that split a row then combine through shared
  /// memory (combineAcrossWarps).
  LogicalResult reduceMmaRows(tile::ReduceOp op, OpAdaptor adaptor, const tile::MmaLayout &mma,
                              ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    // regs[i][r]: register r of source i.
    SmallVector<SmallVector<Value>> regs;
    for (Value src : adaptor.getSrcs())
      regs.push_back(unpackTile(rewriter, loc, src));
    auto regsAt = [&](int64_t r) {
      return llvm::map_to_vector(regs, [&](ArrayRef<Value> source) { return source[r]; });
    };
    // Register q of a slab holds row q / 2 mod 2 of it: rows[2 rep + h] lists
    // the registers of row h of slab rep.
    int64_t slabRegs = mma.regsPerSlab();
    SmallVector<SmallVector<SmallVector<Value>>> rows(2 * mma.reps());
    for (int64_t r = 0, e = mma.regsPerThread(); r < e; ++r)
      rows[2 * (r / slabRegs) + r % slabRegs / 2 % 2].push_back(regsAt(r));
    SmallVector<SmallVector<Value>> partials;
    for (SmallVector<SmallVector<Value>> &row : rows) {
      // Pairwise: independent combines, a chain of log2 of them.
      while (row.size() > 1) {
        SmallVector<SmallVector<Value>> next;
        for (size_t i = 0; i < row.size(); i += 2)
          next.push_back(i + 1 < row.size() ? combine(rewriter, op, row[i], row[i + 1]) : row[i]);
        row = std::move(next);
      }
      SmallVector<Value> partial = row.front();
      for (int64_t laneMask : {1, 2}) {
        SmallVector<Value> shuffled;
        for (Value value : partial)
          shuffled.push_back(
              createShuffle(rewriter, loc, value, laneMask, NVVM::ShflKind::bfly, 0x1f));
        partial = combine(rewriter, op, partial, shuffled);
      }
      partials.push_back(partial);
    }
    if (mma.warpsN > 1)
      combineAcrossWarps(op, mma, partials, rewriter);
    SmallVector<Value> replacements;
    for (int64_t i = 0, n = op.getSrcs().size(); i < n; ++i) {
      SmallVector<Value> values;
      if (op.getBroadcast()) {
        for (int64_t r = 0, e = mma.regsPerThread(); r < e; ++r)
          values.push_back(partials[2 * (r / slabRegs) + r % slabRegs / 2 % 2][i]);
      } else {
        for (SmallVector<Value> &partial : partials)
          values.push_back(partial[i]);
      }
      replacements.push_back(packTile(
          rewriter, loc, getTypeConverter()->convertType(op->getResult(i).getType()), values));
    }
    rewriter.replaceOp(op, replacements);
    return success();
  }

  /// warpsN = WN > 1 (version 2: warps along N; version 3: warpgroups):
  /// `partials[2 rep + h]` (the quad's combined values of the thread's row of
  /// block rep, half h) covers the warp's columns only. The first lane of each quad stores them at
  /// [wN, row] of a buffer per source, bar.sync, and every thread combines
  /// the WN partials of each of its rows in the order wN = 0, 1, ... (the
  /// same values in the same order in every warp: copies stay equal), then
  /// bar.sync (the buffer is scratch).
  void combineAcrossWarps(tile::ReduceOp op, const tile::MmaLayout &mma,
                          SmallVector<SmallVector<Value>> &partials,
                          ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    auto c = [&](int64_t v) { return createI32Constant(rewriter, loc, v); };
    int64_t m = mma.m;
    Value tid = createThreadId(rewriter, loc);
    Value lane = LLVM::AndOp::create(rewriter, loc, tid, c(31));
    Value warp = LLVM::AndOp::create(rewriter, loc, LLVM::LShrOp::create(rewriter, loc, tid, c(5)),
                                     c(mma.warps - 1));
    Value wN = LLVM::LShrOp::create(rewriter, loc, warp, c(llvm::Log2_64(mma.warpsM())));
    // The thread's row of partial r: register r of the [M, 1] column.
    ElementIndices rows = getElementIndices(
        rewriter, loc, tileConverter,
        RankedTensorType::get({m, 1}, rewriter.getF32Type(),
                              llvm::cast<RankedTensorType>(op.getSrc().getType()).getEncoding()));
    Value leader = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq,
                                        LLVM::AndOp::create(rewriter, loc, lane, c(3)), c(0));
    SmallVector<Value> buffers;
    for (auto [i, src] : llvm::enumerate(op.getSrcs())) {
      Type element = getTypeConverter()->convertType(
          llvm::cast<RankedTensorType>(src.getType()).getElementType());
      buffers.push_back(createSharedBuffer(rewriter, op, "__kiln_reduce_rows_smem", element,
                                           mma.warpsN * m, /*alignment=*/16, /*scratch=*/true));
    }
    auto address = [&](size_t source, Value index) {
      Type element = getTypeConverter()->convertType(
          llvm::cast<RankedTensorType>(op.getSrcs()[source].getType()).getElementType());
      return LLVM::GEPOp::create(rewriter, loc, buffers[source].getType(), element, buffers[source],
                                 ArrayRef<LLVM::GEPArg>{index});
    };
    SmallVector<Value> rowIndex;
    for (size_t r = 0; r < partials.size(); ++r)
      rowIndex.push_back(
          LLVM::AddOp::create(rewriter, loc, rows.base, c(rows.offsets[r])).getResult());
    Value own = LLVM::MulOp::create(rewriter, loc, wN, c(m));
    scf::IfOp::create(rewriter, loc, leader, [&](OpBuilder &b, Location l) {
      for (size_t r = 0; r < partials.size(); ++r)
        for (size_t i = 0; i < buffers.size(); ++i)
          LLVM::StoreOp::create(b, l, partials[r][i],
                                address(i, LLVM::AddOp::create(b, l, own, rowIndex[r])));
      scf::YieldOp::create(b, l);
    });
    NVVM::BarrierOp::create(rewriter, loc);
    for (size_t r = 0; r < partials.size(); ++r) {
      SmallVector<Value> combined;
      for (int64_t j = 0; j < mma.warpsN; ++j) {
        Value index = LLVM::AddOp::create(rewriter, loc, rowIndex[r], c(j * m));
        SmallVector<Value> loaded;
        for (size_t i = 0; i < buffers.size(); ++i) {
          Type element = getTypeConverter()->convertType(
              llvm::cast<RankedTensorType>(op.getSrcs()[i].getType()).getElementType());
          loaded.push_back(LLVM::LoadOp::create(rewriter, loc, element, address(i, index)));
        }
        combined = j == 0 ? loaded : combine(rewriter, op, combined, loaded);
      }
      partials[r] = combined;
    }
    NVVM::BarrierOp::create(rewriter, loc);
  }

  LogicalResult matchAndRewrite(tile::ReduceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    // All sources have the source #0's shape, hence its blocked layout: register
    // r holds the same element of every source, and they move in lockstep.
    auto srcType = llvm::cast<RankedTensorType>(op.getSrc().getType());
    int64_t numSrcs = op.getSrcs().size();
    SmallVector<Type> elements;
    for (Value src : op.getSrcs()) {
      auto type = llvm::cast<RankedTensorType>(src.getType());
      Type element = type.getElementType();
      if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() > 64)
        return rewriter.notifyMatchFailure(op, "unsupported element type");
      if (type.getEncoding() != srcType.getEncoding())
        return rewriter.notifyMatchFailure(op, "sources in different layouts");
      elements.push_back(element);
    }
    if (std::optional<tile::MmaLayout> mma = tileConverter.getMmaLayout(srcType)) {
      bool rows = mma->version == 3 || mma->version == 2;
      if (!rows || op.getAxis() != 1 || srcType.getRank() != 2 || mma->n < 8)
        return rewriter.notifyMatchFailure(op, "not the rows of an mma accumulator");
      return reduceMmaRows(op, adaptor, *mma, rewriter);
    }
    auto layout = tileConverter.getLayout(srcType);
    BitMap bits(layout);
    int64_t axis = op.getAxis();
    int64_t lo, hi; // captured by the lambdas below (no structured binding in C++17)
    std::tie(lo, hi) = axisElementBits(srcType, axis);
    auto inAxis = [&](int64_t elementBit) { return elementBit >= lo && elementBit < hi; };

    // 1. Within the thread: combine registers that differ only in axis bits.
    // regs[i][r]: register r of source i.
    SmallVector<SmallVector<Value>> regs;
    for (Value src : adaptor.getSrcs())
      regs.push_back(unpackTile(rewriter, loc, src));
    int64_t numRegs = regs.front().size();
    auto regsAt = [&](int64_t r) {
      return llvm::map_to_vector(regs, [&](ArrayRef<Value> source) { return source[r]; });
    };
    int64_t regBits = llvm::Log2_64(numRegs);
    int64_t axisRegMask = 0;
    for (int64_t b = 0; b < regBits; ++b)
      if (inAxis(bits.elementBitOfRegisterBit(b)))
        axisRegMask |= int64_t(1) << b;
    // partials[r] (the N sources' values) for every r with its axis register
    // bits clear.
    llvm::SmallDenseMap<int64_t, SmallVector<Value>> partials;
    SmallVector<int64_t> groups;
    for (int64_t r = 0; r < numRegs; ++r) {
      int64_t group = r & ~axisRegMask;
      auto it = partials.find(group);
      if (it == partials.end()) {
        partials[group] = regsAt(r);
        groups.push_back(group);
      } else {
        it->second = combine(rewriter, op, it->second, regsAt(r));
      }
    }

    // 2. Across lanes: butterfly over the lane bits inside the axis, the N
    // sources shuffled in each round; over all 32 lanes, 32-bit integer
    // add / min / max / and / or / xor is one redux.sync a value instead (every
    // lane gets the result, as after the butterfly).
    int64_t laneBits = std::min<int64_t>(5, bits.threadBits);
    bool wholeWarp = laneBits == 5;
    for (int64_t tb = 0; tb < laneBits; ++tb)
      wholeWarp = wholeWarp && inAxis(bits.runBits + tb);
    std::optional<SmallVector<NVVM::ReduxKind>> redux =
        wholeWarp ? reduxKinds(op, elements) : std::nullopt;
    if (redux) {
      Value all = createI32Constant(rewriter, loc, -1);
      for (int64_t group : groups)
        for (auto [value, kind] : llvm::zip(partials[group], *redux))
          value = NVVM::ReduxOp::create(rewriter, loc, value.getType(), value, kind, all);
    }
    for (int64_t tb = 0; tb < laneBits && !redux; ++tb) {
      if (!inAxis(bits.runBits + tb))
        continue;
      for (int64_t group : groups) {
        SmallVector<Value> shuffled;
        for (Value value : partials[group])
          shuffled.push_back(
              createShuffle(rewriter, loc, value, int64_t(1) << tb, NVVM::ShflKind::bfly, 0x1f));
        partials[group] = combine(rewriter, op, partials[group], shuffled);
      }
    }

    // 3. Across warps, through shared memory: [source][warp along the
    // axis][result element].
    int64_t warpAxisLo = -1, warpAxisCount = 0;
    for (int64_t tb = laneBits; tb < bits.threadBits; ++tb)
      if (inAxis(bits.runBits + tb)) {
        if (warpAxisLo < 0)
          warpAxisLo = tb;
        ++warpAxisCount;
      }
    int64_t warpsAlongAxis = int64_t(1) << warpAxisCount;
    int64_t numResults = srcType.getNumElements() / srcType.getDimSize(axis);

    // `broadcast` (one source): register r of the result is its group's
    // partial. Lanes along the axis already hold the same value after the
    // butterfly, so when no warps lie along the axis nothing goes through
    // shared memory.
    auto broadcastResult = [&](llvm::SmallDenseMap<int64_t, SmallVector<Value>> &lines) {
      SmallVector<Value> values;
      for (int64_t r = 0; r < numRegs; ++r)
        values.push_back(lines[r & ~axisRegMask].front());
      return packTile(rewriter, loc, getTypeConverter()->convertType(op->getResult(0).getType()),
                      values);
    };
    if (op.getBroadcast() && warpsAlongAxis == 1) {
      rewriter.replaceOp(op, broadcastResult(partials));
      return success();
    }
    // Scalars within one warp: every thread holds the totals already.
    if (!llvm::isa<RankedTensorType>(op->getResult(0).getType()) && warpsAlongAxis == 1) {
      rewriter.replaceOp(op, partials[groups.front()]);
      return success();
    }

    // Within one warp, where each thread's partials are the results its own
    // registers hold (the kept dimensions map to the same threads and
    // registers in both layouts): no shared memory either.
    auto resultType = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (resultType && !op.getBroadcast() && warpsAlongAxis == 1) {
      tile::BlockedLayout out = tileConverter.getLayout(resultType);
      auto resultIndex = [&](int64_t e) {
        return ((e >> hi) << lo) | (e & ((int64_t(1) << lo) - 1));
      };
      if (std::optional<SmallVector<int64_t>> sources = findRegisterSources(
              out.threads, out.regsPerThread(),
              [&](int64_t t, int64_t r) { return out.elementOf(t, r); }, groups,
              [&](int64_t t, int64_t r) { return resultIndex(layout.elementOf(t, r)); })) {
        SmallVector<Value> replacements;
        for (int64_t i = 0; i < numSrcs; ++i) {
          SmallVector<Value> values;
          for (int64_t group : *sources)
            values.push_back(partials[group][i]);
          replacements.push_back(packTile(
              rewriter, loc, getTypeConverter()->convertType(op->getResult(i).getType()), values));
        }
        rewriter.replaceOp(op, replacements);
        return success();
      }
    }

    // One buffer for all sources: with N > 1, an i8 array holding source i's
    // [warp][result element] array at byteOffsets[i] (16-byte aligned), so
    // that one pair of barriers serves them all.
    SmallVector<Type> llvmElements, stored;
    SmallVector<bool> isBool;
    for (Type element : elements) {
      Type llvmElement = getTypeConverter()->convertType(element);
      llvmElements.push_back(llvmElement);
      isBool.push_back(llvmElement.isInteger(1));
      stored.push_back(isBool.back() ? rewriter.getI8Type() : llvmElement);
    }
    int64_t slotsPerSource = numResults * warpsAlongAxis;
    SmallVector<Value> arrays;
    if (numSrcs == 1) {
      arrays.push_back(createSharedBuffer(rewriter, op, "__kiln_reduce_smem", stored.front(),
                                          slotsPerSource,
                                          /*alignment=*/16, /*scratch=*/true));
    } else {
      SmallVector<int64_t> byteOffsets;
      int64_t bytes = 0;
      for (Type type : stored) {
        byteOffsets.push_back(bytes);
        bytes += llvm::alignTo(slotsPerSource * (type.getIntOrFloatBitWidth() / 8), 16);
      }
      Value buffer = createSharedBuffer(rewriter, op, "__kiln_reduce_smem", rewriter.getI8Type(),
                                        bytes, /*alignment=*/16, /*scratch=*/true);
      for (int64_t offset : byteOffsets)
        arrays.push_back(
            offset == 0 ? buffer
                        : LLVM::GEPOp::create(rewriter, loc, buffer.getType(), rewriter.getI8Type(),
                                              buffer, ArrayRef<LLVM::GEPArg>{int32_t(offset)}));
    }
    auto slot = [&](int64_t i, Value index) {
      return LLVM::GEPOp::create(rewriter, loc, arrays[i].getType(), stored[i], arrays[i],
                                 ArrayRef<LLVM::GEPArg>{index});
    };
    auto i32 = [&](int64_t v) { return createI32Constant(rewriter, loc, v); };

    // A result's slot in its warp's array (createLineSwizzle: the run bits of
    // the thread's registers below the axis rotated to the top).
    auto line = [&](Value resultIndex) {
      return createLineSwizzle(rewriter, loc, resultIndex, std::min<int64_t>(lo, bits.runBits),
                               numResults);
    };

    // The element index of each partial (its axis bits are zero after step 1
    // for register bits; thread axis bits are cleared below).
    ElementIndices indices = getElementIndices(rewriter, loc, layout);
    Value tid = createThreadId(rewriter, loc);
    Value warpAlongAxis = i32(0);
    if (warpAxisCount)
      warpAlongAxis = LLVM::AndOp::create(rewriter, loc,
                                          LLVM::LShrOp::create(rewriter, loc, tid, i32(warpAxisLo)),
                                          i32(warpsAlongAxis - 1));
    Value warpOffset = LLVM::MulOp::create(rewriter, loc, warpAlongAxis, i32(numResults));
    llvm::SmallDenseMap<int64_t, Value> resultIndexOfGroup;
    for (int64_t group : groups) {
      Value e = LLVM::AddOp::create(rewriter, loc, indices.base, i32(indices.offsets[group]));
      // result index = e without its axis bits
      Value low = LLVM::AndOp::create(rewriter, loc, e, i32((int64_t(1) << lo) - 1));
      Value high = LLVM::ShlOp::create(rewriter, loc,
                                       LLVM::LShrOp::create(rewriter, loc, e, i32(hi)), i32(lo));
      Value result = LLVM::OrOp::create(rewriter, loc, high, low);
      resultIndexOfGroup[group] = result;
      Value index = LLVM::AddOp::create(rewriter, loc, line(result), warpOffset);
      for (int64_t i = 0; i < numSrcs; ++i) {
        Value value = partials[group][i];
        if (isBool[i])
          value = LLVM::ZExtOp::create(rewriter, loc, stored[i], value);
        LLVM::StoreOp::create(rewriter, loc, value, slot(i, index));
      }
    }
    NVVM::BarrierOp::create(rewriter, loc);

    // Read back in the result's layout, combining the warps along the axis.
    auto readResult = [&](Value resultIndex) {
      Value base = line(resultIndex);
      SmallVector<Value> acc;
      for (int64_t w = 0; w < warpsAlongAxis; ++w) {
        Value index = LLVM::AddOp::create(rewriter, loc, base, i32(w * numResults));
        SmallVector<Value> values;
        for (int64_t i = 0; i < numSrcs; ++i) {
          Value v = LLVM::LoadOp::create(rewriter, loc, stored[i], slot(i, index));
          if (isBool[i])
            v = LLVM::TruncOp::create(rewriter, loc, llvmElements[i], v);
          values.push_back(v);
        }
        acc = acc.empty() ? values : combine(rewriter, op, acc, values);
      }
      return acc;
    };
    SmallVector<Value> replacements;
    if (op.getBroadcast()) {
      llvm::SmallDenseMap<int64_t, SmallVector<Value>> lines;
      for (int64_t group : groups)
        lines[group] = readResult(resultIndexOfGroup[group]);
      replacements.push_back(broadcastResult(lines));
    } else if (resultType) {
      ElementIndices out = getElementIndices(rewriter, loc, tileConverter.getLayout(resultType));
      // values[i]: the registers of result i.
      SmallVector<SmallVector<Value>> values(numSrcs);
      for (int64_t offset : out.offsets) {
        SmallVector<Value> read =
            readResult(LLVM::AddOp::create(rewriter, loc, out.base, i32(offset)));
        for (int64_t i = 0; i < numSrcs; ++i)
          values[i].push_back(read[i]);
      }
      for (int64_t i = 0; i < numSrcs; ++i)
        replacements.push_back(packTile(
            rewriter, loc, getTypeConverter()->convertType(op->getResult(i).getType()), values[i]));
    } else {
      replacements = readResult(i32(0));
    }
    NVVM::BarrierOp::create(rewriter, loc);
    rewriter.replaceOp(op, replacements);
    return success();
  }
};
} // namespace

void kiln::populateTileReduceOpsToNVVMPatterns(TileTypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<ReduceLowering>(converter);
}
