//===- AccelerateDot.cpp - pipelined ring dots on wgmma or tcgen05 ----------===//
//
// See Passes.td (kiln-tile-accelerate-dot). The K loop keeps its shape; what
// changes is where the operands are read (the ring slots, in place) and where
// the accumulator lives: the wgmma registers (`#tile.mma` version 3) across
// iterations on sm_90a, Tensor Memory on sm_100a/sm_103a.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Tile/IR/Layout.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Dialect/Tile/Transforms/Passes.h"
#include "kiln/Support/Arch.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace kiln::tile {
#define GEN_PASS_DEF_TILEACCELERATEDOT
#include "kiln/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace kiln::tile

using namespace mlir;
using namespace kiln::tile;

namespace {
/// The dot's operands, when they are a ring slot [M, K] and either the
/// transpose of a ring slot [N, K] (K-major B) or a ring slot [K, N] itself
/// (MN-major B: `bTrans` null), each used only there.
struct RingOperands {
  RingWaitLoadOp a, b;
  TransOp bTrans;
  bool bMnMajor() const { return !bTrans; }
};

std::optional<RingOperands> matchRingOperands(DotOp dot) {
  RingOperands ops;
  ops.a = dot.getA().getDefiningOp<RingWaitLoadOp>();
  if (!ops.a || !ops.a->hasOneUse())
    return std::nullopt;
  ops.b = dot.getB().getDefiningOp<RingWaitLoadOp>();
  if (!ops.b) {
    ops.bTrans = dot.getB().getDefiningOp<TransOp>();
    if (!ops.bTrans || ops.bTrans.getOrder() != ArrayRef<int64_t>{1, 0} || !ops.bTrans->hasOneUse())
      return std::nullopt;
    ops.b = ops.bTrans.getSrc().getDefiningOp<RingWaitLoadOp>();
  }
  if (!ops.b || !ops.b->hasOneUse())
    return std::nullopt;
  if (!isTmaSwizzled128(ops.a.getRing()) || !isTmaSwizzled128(ops.b.getRing()))
    return std::nullopt;
  return ops;
}

/// Whether `op` computes each element from the same element of its operands.
bool isElementwise(Operation *op) {
  return llvm::isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) &&
         !llvm::isa<arith::ConstantOp>(op) && op->getNumResults() == 1 &&
         op->getNumRegions() == 0 && llvm::isa<RankedTensorType>(op->getResult(0).getType());
}

/// `value` in the layout of `type` (same shape and element type): the source
/// of a conversion from that layout, or a new conversion.
Value convertTo(OpBuilder &b, Location loc, Value value, RankedTensorType type) {
  if (auto convert = value.getDefiningOp<ConvertLayoutOp>();
      convert && convert.getSrc().getType() == type)
    return convert.getSrc();
  return ConvertLayoutOp::create(b, loc, type, value);
}

/// Whether `value` is a tile iteration argument (in the blocked layout) whose
/// next value the loop computes from `op`'s result: carried in `op`'s new
/// layout, its conversion in the loop goes away (see carryConverted).
bool isCarriedThrough(Value value, Operation *op) {
  auto arg = llvm::dyn_cast<BlockArgument>(value);
  auto loop = arg ? llvm::dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()) : scf::ForOp();
  auto type = arg ? llvm::dyn_cast<RankedTensorType>(arg.getType()) : RankedTensorType();
  if (!loop || !type || type.getEncoding() || arg.getArgNumber() < loop.getNumInductionVars())
    return false;
  Value next = loop.getYieldedValues()[arg.getArgNumber() - loop.getNumInductionVars()];
  Operation *producer = next.getDefiningOp();
  if (!producer)
    return false;
  if (producer == op)
    return true;
  llvm::SetVector<Operation *> slice;
  getForwardSlice(op, &slice);
  return slice.contains(producer);
}

/// Carries iteration argument `index` of `loop`, whose yielded value is a
/// conversion of a value of `type` to the blocked layout, in `type`: the
/// initial value converted before the loop, the yield given the value
/// itself, the argument's conversions into `type` replaced by it (the
/// others read a conversion back at the top of the body), the result's uses
/// a conversion after the loop. The new conversions are queued on
/// `worklist`.
void carryConverted(OpBuilder &b, scf::ForOp loop, unsigned index, RankedTensorType type,
                    SmallVectorImpl<ConvertLayoutOp> &worklist) {
  Location loc = loop.getLoc();
  BlockArgument arg = loop.getRegionIterArgs()[index];
  auto blocked = llvm::cast<RankedTensorType>(arg.getType());
  OpOperand &yielded = loop.getYieldedValuesMutable().value()[index];
  auto converted = yielded.get().getDefiningOp<ConvertLayoutOp>();
  b.setInsertionPoint(loop);
  OpOperand &init = loop.getInitsMutable()[index];
  init.set(convertTo(b, loc, init.get(), type));
  yielded.set(converted.getSrc());
  arg.setType(type);
  SmallVector<OpOperand *> uses =
      llvm::map_to_vector(arg.getUses(), [](OpOperand &use) { return &use; });
  ConvertLayoutOp back;
  for (OpOperand *use : uses) {
    if (auto into = llvm::dyn_cast<ConvertLayoutOp>(use->getOwner());
        into && into.getType() == type) {
      into.replaceAllUsesWith(arg);
      into->erase();
      continue;
    }
    if (!back) {
      b.setInsertionPointToStart(loop.getBody());
      back = ConvertLayoutOp::create(b, loc, blocked, arg);
      worklist.push_back(back);
    }
    use->set(back);
  }
  Value result = loop.getResult(index);
  result.setType(type);
  if (result.use_empty())
    return;
  b.setInsertionPointAfter(loop);
  auto after = ConvertLayoutOp::create(b, loc, blocked, result);
  result.replaceAllUsesExcept(after, after);
  worklist.push_back(after);
}

/// Yields result `index` of `ifOp`, which a branch yields as a conversion of a
/// value of `type` to the blocked layout, in `type`: each branch yields its
/// value in `type` (the source of a conversion from it, or a new conversion),
/// the result's uses read a conversion after the if, queued on `worklist`.
void yieldConverted(OpBuilder &b, scf::IfOp ifOp, unsigned index, RankedTensorType type,
                    SmallVectorImpl<ConvertLayoutOp> &worklist) {
  Value result = ifOp.getResult(index);
  if (result.getType() == type)
    return; // the other branch's conversion moved it already
  for (Region *region : {&ifOp.getThenRegion(), &ifOp.getElseRegion()}) {
    Operation *yield = region->front().getTerminator();
    OpOperand &yielded = yield->getOpOperand(index);
    b.setInsertionPoint(yield);
    yielded.set(convertTo(b, yield->getLoc(), yielded.get(), type));
  }
  Type blocked = result.getType();
  result.setType(type);
  if (result.use_empty())
    return;
  b.setInsertionPointAfter(ifOp);
  auto after = ConvertLayoutOp::create(b, ifOp.getLoc(), blocked, result);
  result.replaceAllUsesExcept(after, after);
  worklist.push_back(after);
}

/// Whether `value` is a tile computed from ranges, splats and splat constants
/// by pure elementwise ops, expand_dims and broadcasts (index arithmetic, a
/// mask) in at most `budget` distinct ops (`seen`: a value two ops read, a
/// mask's key index, counts once): rebuilt in another layout for less than
/// moving it there costs.
bool isRebuildable(Value value, int64_t &budget, llvm::SmallPtrSetImpl<void *> &seen) {
  if (!seen.insert(value.getAsOpaquePointer()).second)
    return true;
  Operation *op = value.getDefiningOp();
  auto type = llvm::dyn_cast<RankedTensorType>(value.getType());
  if (!op || !type || type.getEncoding() || budget-- <= 0)
    return false;
  SplatElementsAttr splat;
  if (matchPattern(value, m_Constant(&splat)) || llvm::isa<SplatOp, MakeRangeOp, IotaOp>(op))
    return true;
  if (!llvm::isa<ExpandDimsOp, BroadcastOp>(op) && !(isElementwise(op) && isMemoryEffectFree(op)))
    return false;
  return llvm::all_of(op->getOperands(), [&](Value operand) {
    return !llvm::isa<RankedTensorType>(operand.getType()) || isRebuildable(operand, budget, seen);
  });
}
bool isRebuildable(Value value) {
  int64_t budget = 16;
  llvm::SmallPtrSet<void *, 16> seen;
  return isRebuildable(value, budget, seen);
}

/// `value` (isRebuildable) built at the insertion point on the shape and in
/// the encoding of `type`, its dimension i being `type`'s dimension dims[i]
/// (of the same size, or 1 and broadcast): ranges become `tile.iota`s.
Value rebuildIn(OpBuilder &b, Value value, RankedTensorType type, ArrayRef<int64_t> dims) {
  Operation *op = value.getDefiningOp();
  Location loc = op->getLoc();
  auto source = llvm::cast<RankedTensorType>(value.getType());
  auto result = type.clone(source.getElementType());
  auto splatOf = [&](Attribute element) -> Value {
    return arith::ConstantOp::create(b, loc, result, SplatElementsAttr::get(result, element));
  };
  // The coordinate along source dimension d, plus start.
  auto iota = [&](int64_t start, int64_t d) -> Value {
    if (source.getDimSize(d) == 1)
      return splatOf(b.getI32IntegerAttr(start));
    return IotaOp::create(b, loc, result, b.getI32IntegerAttr(dims[d]), b.getI32IntegerAttr(start));
  };
  SplatElementsAttr splat;
  if (matchPattern(value, m_Constant(&splat)))
    return splatOf(splat.getSplatValue<Attribute>());
  if (auto s = llvm::dyn_cast<SplatOp>(op))
    return SplatOp::create(b, loc, result, s.getSrc());
  if (auto range = llvm::dyn_cast<MakeRangeOp>(op))
    return iota(range.getStart(), 0);
  if (auto other = llvm::dyn_cast<IotaOp>(op))
    return iota(other.getStartAttr().getInt(), other.getDim());
  if (auto expand = llvm::dyn_cast<ExpandDimsOp>(op)) {
    SmallVector<int64_t> sourceDims(dims);
    sourceDims.erase(sourceDims.begin() + expand.getAxis());
    return rebuildIn(b, expand.getSrc(), type, sourceDims);
  }
  if (auto broadcast = llvm::dyn_cast<BroadcastOp>(op))
    return rebuildIn(b, broadcast.getSrc(), type, dims);
  IRMapping mapping;
  for (Value operand : op->getOperands())
    if (llvm::isa<RankedTensorType>(operand.getType()))
      mapping.map(operand, rebuildIn(b, operand, type, dims));
  Operation *clone = b.clone(*op, mapping);
  clone->getResult(0).setType(result);
  return clone->getResult(0);
}

/// Whether `value` is a row or column vector broadcast in the blocked layout
/// (a [1, N] or [M, 1] tile broadcast to [M, N]: a bias, a per-row scale) that
/// the same broadcast can give in `encoding` with each thread holding at most
/// half as many distinct vector elements as it holds tile elements: the
/// vector's N elements (or M) cross into the encoding instead of the M x N
/// tile leaving it. (A `#tile.mma` version 5 row of 128 columns a thread
/// would double the accumulator's registers; there the tile moves.)
bool isVectorBroadcast(Value value, Attribute encoding) {
  auto broadcast = value.getDefiningOp<BroadcastOp>();
  auto mma = llvm::dyn_cast<MmaEncodingAttr>(encoding);
  if (!broadcast || !mma || broadcast.getType().getEncoding() ||
      broadcast.getSrc().getType().getEncoding() || broadcast.getType().getRank() != 2)
    return false;
  ArrayRef<int64_t> shape = broadcast.getSrc().getType().getShape();
  if ((shape[0] == 1) == (shape[1] == 1))
    return false;
  ArrayRef<int64_t> dst = broadcast.getType().getShape();
  MmaLayout layout{dst[0], dst[1], mma.getNumWarps(), mma.getVersion(), mma.getWarpsN()};
  llvm::SmallDenseSet<int64_t> held;
  for (int64_t reg = 0, e = layout.regsPerThread(); reg < e; ++reg) {
    int64_t element = layout.elementOf(0, reg);
    held.insert(shape[0] == 1 ? element % dst[1] : element / dst[1]);
  }
  return 2 * static_cast<int64_t>(held.size()) <= layout.regsPerThread();
}

/// Moves the conversion `convert` (from an encoding to the blocked layout)
/// past its users where that is free, so that what is computed from an
/// accumulator stays where the accumulator is and only what must leave it
/// moves (a narrower conversion later, or none):
///  - a tile.desc_store stores the source layout;
///  - an elementwise op whose result is no wider than its operands (or the
///    widening of a value narrowed in the layout: the low part of a two-part
///    split, x - f32(bf16(x))), and whose other operands
///    are conversions from the same layout, splat constants, `tile.splat`s,
///    iteration arguments the loop computes from this op (they will be
///    carried in the layout, see below), index arithmetic rebuilt in the
///    layout (isRebuildable: a causal mask), or a row or column vector's
///    broadcast made in the layout (isVectorBroadcast: a bias), runs in the
///    source layout;
///  - `tile.cluster_sum` of tiles all converted from the layout adds them
///    in it (each thread its own elements: any layout);
///  - `tile.reduce` of the rows of a `#tile.mma` tile of version 3 or 2 (axis 1)
///    runs on it and gives its `#tile.slice`; `tile.expand_dims` of that
///    slice (axis 1) gives the [M, 1] mma tile, whose `tile.broadcast` to
///    [M, N] stays in the mma encoding;
///  - a value yielded by an scf.for is carried in the source layout: the
///    initial value converted into it before the loop, the iteration
///    argument's conversions into it dropped, the loop's result converted
///    back after it; one yielded by an scf.if is yielded in it by both
///    branches (a masked iteration's scores).
/// Attention's softmax and its rescaled accumulator thus stay in the wgmma
/// registers across the loop, the running max and sum in the slice.
void sinkConversion(OpBuilder &b, ConvertLayoutOp convert) {
  SmallVector<ConvertLayoutOp> worklist{convert}, visited;
  // `user`, its operands replaced by `operands` and its results given
  // `types`; its old results' uses get conversions back, queued.
  auto move = [&](Operation *user, ArrayRef<Value> operands, ArrayRef<Type> types) {
    b.setInsertionPoint(user);
    Operation *moved = b.clone(*user);
    moved->setOperands(operands);
    for (auto [result, type] : llvm::zip_equal(moved->getResults(), types))
      result.setType(type);
    for (auto [old, now] : llvm::zip_equal(user->getResults(), moved->getResults())) {
      auto back = ConvertLayoutOp::create(b, user->getLoc(), old.getType(), now);
      old.replaceAllUsesWith(back.getResult());
      worklist.push_back(back);
    }
    user->erase();
  };
  while (!worklist.empty()) {
    ConvertLayoutOp c = worklist.pop_back_val();
    visited.push_back(c);
    RankedTensorType source = c.getSrc().getType();
    auto encoding = source.getEncoding();
    auto mma = llvm::dyn_cast<MmaEncodingAttr>(encoding);
    bool rows = mma && (mma.getVersion() == 3 || mma.getVersion() == 2);
    // The sources of `srcs` when every one is a conversion from `encoding`,
    // else none.
    auto convertedSources = [&](ValueRange srcs) {
      SmallVector<Value> sources;
      for (Value src : srcs) {
        auto other = src.getDefiningOp<ConvertLayoutOp>();
        if (!other || other.getSrc().getType().getEncoding() != encoding)
          return SmallVector<Value>();
        sources.push_back(other.getSrc());
      }
      return sources;
    };
    // Each user once (an op may read `c` twice: acc * acc), collected before
    // any is replaced.
    llvm::SetVector<Operation *> users(c->user_begin(), c->user_end());
    for (Operation *user : users) {
      if (llvm::isa<DescStoreOp>(user)) {
        user->replaceUsesOfWith(c, c.getSrc());
        continue;
      }
      if (auto yield = llvm::dyn_cast<scf::YieldOp>(user)) {
        auto loop = llvm::dyn_cast<scf::ForOp>(yield->getParentOp());
        auto ifOp = llvm::dyn_cast<scf::IfOp>(yield->getParentOp());
        for (OpOperand &operand : yield->getOpOperands()) {
          if (operand.get() != c.getResult())
            continue;
          if (loop)
            carryConverted(b, loop, operand.getOperandNumber(), source, worklist);
          else if (ifOp)
            yieldConverted(b, ifOp, operand.getOperandNumber(), source, worklist);
        }
        continue;
      }
      if (auto reduce = llvm::dyn_cast<ReduceOp>(user)) {
        SmallVector<Value> sources = convertedSources(reduce.getSrcs());
        if (!rows || source.getRank() != 2 || reduce.getAxis() != 1 || sources.empty())
          continue;
        SmallVector<Type> types;
        for (Value src : sources) {
          auto type = llvm::cast<RankedTensorType>(src.getType());
          types.push_back(reduce.getBroadcast()
                              ? Type(type)
                              : RankedTensorType::get({type.getDimSize(0)}, type.getElementType(),
                                                      SliceEncodingAttr::get(b.getContext(), 1,
                                                                             encoding)));
        }
        move(user, sources, types);
        continue;
      }
      if (auto sum = llvm::dyn_cast<ClusterSumOp>(user)) {
        // Each thread adds the elements it holds, in whatever layout.
        if (SmallVector<Value> sources = convertedSources(sum.getSrcs()); !sources.empty())
          move(user, sources, llvm::to_vector(ValueRange(sources).getTypes()));
        continue;
      }
      if (auto expand = llvm::dyn_cast<ExpandDimsOp>(user)) {
        auto slice = llvm::dyn_cast<SliceEncodingAttr>(encoding);
        if (!slice || expand.getAxis() != 1)
          continue;
        move(user, {c.getSrc()}, {expand.getType().cloneWithEncoding(slice.getParent())});
        continue;
      }
      if (auto broadcast = llvm::dyn_cast<BroadcastOp>(user)) {
        auto type = llvm::cast<RankedTensorType>(broadcast.getType());
        if (!rows || source.getRank() != 2 || source.getDimSize(1) != 1 ||
            type.getDimSize(1) % (8 * mma.getWarpsN()) != 0)
          continue;
        move(user, {c.getSrc()}, {type.cloneWithEncoding(encoding)});
        continue;
      }
      if (!isElementwise(user))
        continue;
      // No wider than its widest operand (a select of f32 values on an i1
      // mask is as wide as they are).
      auto resultType = llvm::cast<RankedTensorType>(user->getResult(0).getType());
      unsigned widest = 0;
      for (Value operand : user->getOperands())
        if (auto type = llvm::dyn_cast<RankedTensorType>(operand.getType()))
          widest = std::max(widest, type.getElementTypeBitWidth());
      // The source (in the encoding) of an operand converted from it, or null.
      auto convertedFrom = [&](Value v) -> Value {
        auto other = v.getDefiningOp<ConvertLayoutOp>();
        if (!other || other.getSrc().getType().getEncoding() != encoding)
          return {};
        return other.getSrc();
      };
      // Wider is moved only as the widening of a value narrowed in the layout
      // (x - f32(bf16(x)), the low part of a two-part split): the value it
      // narrowed is there already.
      Value widened = llvm::isa<arith::ExtFOp>(user) ? convertedFrom(user->getOperand(0)) : Value();
      if (resultType.getElementTypeBitWidth() > widest &&
          !(widened && widened.getDefiningOp<arith::TruncFOp>()))
        continue;
      bool movable = llvm::all_of(user->getOpOperands(), [&](OpOperand &operand) {
        SplatElementsAttr splat;
        return convertedFrom(operand.get()) || matchPattern(operand.get(), m_Constant(&splat)) ||
               operand.get().getDefiningOp<SplatOp>() || isCarriedThrough(operand.get(), user) ||
               isRebuildable(operand.get()) || isVectorBroadcast(operand.get(), encoding);
      });
      if (!movable)
        continue;
      // The splats in the source layout first, then the op on them: each
      // operand is defined before its use.
      b.setInsertionPoint(user);
      SmallVector<Value> operands;
      for (OpOperand &operand : user->getOpOperands()) {
        if (Value source = convertedFrom(operand.get())) {
          operands.push_back(source);
          continue;
        }
        auto type =
            llvm::cast<RankedTensorType>(operand.get().getType()).cloneWithEncoding(encoding);
        if (auto splat = operand.get().getDefiningOp<SplatOp>()) {
          operands.push_back(SplatOp::create(b, user->getLoc(), type, splat.getSrc()));
          continue;
        }
        if (isRebuildable(operand.get())) {
          operands.push_back(rebuildIn(b, operand.get(), type,
                                       llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()))));
          continue;
        }
        if (isVectorBroadcast(operand.get(), encoding)) {
          auto broadcast = operand.get().getDefiningOp<BroadcastOp>();
          operands.push_back(BroadcastOp::create(b, broadcast.getLoc(), type, broadcast.getSrc()));
          continue;
        }
        operands.push_back(ConvertLayoutOp::create(b, user->getLoc(), type, operand.get()));
      }
      move(user, operands, {resultType.cloneWithEncoding(encoding)});
    }
  }
  // A conversion is dead once all its users moved, which may be after its turn
  // (an op reading two conversions moves on the second one's).
  for (ConvertLayoutOp c : visited)
    if (c->use_empty())
      c->erase();
}

/// The accumulator of a dot in a loop that carries it: an iteration
/// argument that only the dot reads, the dot's result only yielded in its
/// place.
struct CarriedAccumulator {
  scf::ForOp loop;
  BlockArgument acc;
  OpOperand *yielded;
  unsigned index; ///< of the iteration argument among the loop's results
};

std::optional<CarriedAccumulator> matchCarriedAccumulator(DotOp dot) {
  auto loop = llvm::dyn_cast<scf::ForOp>(dot->getParentOp());
  auto acc = llvm::dyn_cast<BlockArgument>(dot.getAcc());
  if (!loop || !acc || acc.getOwner() != loop.getBody() || !acc.hasOneUse() || !dot->hasOneUse())
    return std::nullopt;
  auto yield = llvm::cast<scf::YieldOp>(loop.getBody()->getTerminator());
  OpOperand &yielded = *dot->getUses().begin();
  unsigned index = acc.getArgNumber() - loop.getNumInductionVars();
  if (yielded.getOwner() != yield || yielded.getOperandNumber() != index)
    return std::nullopt;
  return CarriedAccumulator{loop, acc, &yielded, index};
}

/// The carried accumulator enters, lives in and leaves the loop in
/// `mmaType`.
void carryInMmaLayout(OpBuilder &b, Location loc, CarriedAccumulator carried,
                      RankedTensorType mmaType) {
  b.setInsertionPoint(carried.loop);
  OpOperand &init = carried.loop.getInitsMutable()[carried.index];
  init.set(ConvertLayoutOp::create(b, loc, mmaType, init.get()));
  carried.acc.setType(mmaType);
  carried.loop.getResult(carried.index).setType(mmaType);
}

/// The wgmma accumulator encoding of an [m, *] dot on `warps` warps: its
/// warpgroups along M as far as m's 64-row slabs go, the others along N (a
/// [64, N] dot on 8 warps: two warpgroups of N / 2 columns each, reading the
/// same A rows). m a multiple of 64.
MmaEncodingAttr wgmmaEncoding(MLIRContext *context, int64_t m, unsigned warps) {
  unsigned warpgroups = warps / 4, alongM = 1;
  while (alongM < warpgroups && m % (128 * alongM) == 0)
    alongM *= 2;
  return MmaEncodingAttr::get(context, 3, warps, warpgroups / alongM);
}

/// Whether wgmma takes an [m, *] dot on `warps` warps: M a multiple of 64
/// a warpgroup, or of 64 with `splitN` (the warpgroups past its slabs
/// splitting N).
bool wgmmaTakesRows(int64_t m, unsigned warps, bool splitN) {
  return splitN ? m % 64 == 0 : m % (64 * (warps / 4)) == 0;
}

/// Why a staged dot does not take `dot`, or "" where it does. Both take
/// bf16/f16 operands, an f32 accumulator in the blocked layout, K and N
/// multiples of 64, N at most 256. sm_90a's wgmma (`tcgen05` false:
/// tile.warpgroup_dot_staged) takes M a multiple of 64 a warpgroup of
/// `warps` (with `splitN`, of 64: the warpgroups past M's 64-row slabs
/// splitting N, wgmmaEncoding, each's columns a multiple of 64);
/// sm_100a/sm_103a's tcgen05 (tile.tcgen05_dot_staged) M = 128
/// (Tensor Memory's lanes), outside a tile.warp_specialize (the Tensor
/// Memory is allocated at the kernel's start, by every thread).
std::string stagedDotMismatch(DotOp dot, unsigned warps, bool tcgen05, bool splitN = false) {
  auto aType = dot.getA().getType(), accType = dot.getAcc().getType();
  Type element = aType.getElementType();
  int64_t m = aType.getDimSize(0), k = aType.getDimSize(1), n = accType.getDimSize(1);
  StringRef unit = tcgen05 ? "tcgen05" : "wgmma";
  std::string reason;
  llvm::raw_string_ostream os(reason);
  if (!element.isBF16() && !element.isF16())
    os << unit << " runs this form with bf16 or f16 operands only, not " << element;
  else if (accType.getEncoding() || !accType.getElementType().isF32())
    os << "the accumulator is not an f32 tile of the blocked layout";
  else if (tcgen05 && (m != 128 || k % 64 != 0 || n % 64 != 0 || n > 256))
    os << "M = " << m << ", K = " << k << ", N = " << n
       << ": tcgen05 here takes M = 128 (Tensor Memory's lanes), K and N multiples of 64, "
          "N <= 256";
  else if (tcgen05 && dot->getParentOfType<WarpSpecializeOp>())
    os << "tcgen05 runs a warp-specialized loop's dot only as a pipelined GEMM's";
  else if (!tcgen05 && !wgmmaTakesRows(m, warps, splitN))
    os << "M = " << m << " is not a multiple of 64 rows a warpgroup (" << warps / 4
       << " warpgroups)";
  else if (unsigned warpsN = wgmmaEncoding(dot.getContext(), m, warps).getWarpsN();
           !tcgen05 && (k % 64 != 0 || n % (64 * warpsN) != 0 || n > 256 * warpsN))
    os << "K = " << k << ", N = " << n << ": wgmma here takes K and N multiples of 64, N <= 256"
       << (warpsN > 1 ? " a warpgroup (" + std::to_string(warpsN) +
                            " warpgroups split N: " + std::to_string(n / warpsN) + " columns each)"
                      : std::string());
  return reason;
}

/// "line unit[ reason]" for each dot of `func`, in program order: the unit
/// that runs it (wgmma, wgmma staged, tcgen05, tcgen05 staged, mma.sync)
/// and, for mma.sync,
/// why not the target's tensor-core MMA (`fallbacks`). The line is the first
/// file location of the dot (the `kl.dot` call, also inside an inlined
/// helper).
ArrayAttr reportDots(func::FuncOp func, const llvm::DenseMap<Operation *, std::string> &fallbacks) {
  MLIRContext *context = func.getContext();
  SmallVector<Attribute> entries;
  func.walk([&](Operation *op) {
    std::string unit;
    if (llvm::isa<WarpGroupDotOp>(op))
      unit = "wgmma";
    else if (llvm::isa<WarpGroupDotStagedOp>(op))
      unit = "wgmma staged";
    else if (llvm::isa<Tcgen05DotOp>(op))
      unit = "tcgen05";
    else if (llvm::isa<Tcgen05DotStagedOp>(op))
      unit = "tcgen05 staged";
    else if (llvm::isa<WarpDotOp>(op)) {
      unit = "mma.sync";
      if (auto it = fallbacks.find(op); it != fallbacks.end())
        unit += " " + it->second;
    } else {
      return;
    }
    int64_t line = 0;
    op->getLoc()->walk([&](Location loc) {
      if (auto file = llvm::dyn_cast<FileLineColLoc>(loc)) {
        line = file.getLine();
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    entries.push_back(StringAttr::get(context, std::to_string(line) + " " + unit));
  });
  return ArrayAttr::get(context, entries);
}

/// A dot whose B is a ring slot read in place and whose A is not: attention's
/// q kᵀ (q loaded before the key loop) and p·v (p in registers).
struct SlotBDot {
  RingWaitLoadOp b;
  SmallVector<Operation *, 2> bViews; ///< the reshape and transpose, dot side last
  bool bMnMajor = false;
};

/// Whether every use of `value` is the B of a tile.dot, directly or through
/// an optional reshape and then an optional [1, 0] transpose (a view that
/// several dots may share: CSE merges the `w.T` of two dots).
static bool onlyDotBs(Value value, bool reshapeAllowed = true) {
  return llvm::all_of(value.getUses(), [&](OpOperand &use) {
    Operation *user = use.getOwner();
    if (auto reshape = llvm::dyn_cast<ReshapeOp>(user))
      return reshapeAllowed && onlyDotBs(reshape.getResult(), /*reshapeAllowed=*/false);
    if (auto trans = llvm::dyn_cast<TransOp>(user))
      return trans.getOrder() == ArrayRef<int64_t>{1, 0} &&
             llvm::all_of(trans->getUses(), [](OpOperand &t) {
               auto dot = llvm::dyn_cast<DotOp>(t.getOwner());
               return dot && &t == &dot.getBMutable();
             });
    auto dot = llvm::dyn_cast<DotOp>(user);
    return dot && &use == &dot.getBMutable();
  });
}

/// Whether every use of `load` is the B of a tile.dot (``onlyDotBs``): a slot
/// that several dots read in place (MLA's latent columns, the keys of q kᵀ and
/// the values of p·v; a recurrence's factors, each read by two dots).
bool onlyFeedsDotBs(RingWaitLoadOp load) { return onlyDotBs(load.getResult()); }

/// Erases the views of a slot (`bViews`, dot side last) that no dot reads any
/// more, and then the load if it is unused: after a rewrite of one of its
/// readers.
static void eraseUnusedViews(ArrayRef<Operation *> views, RingWaitLoadOp load) {
  for (Operation *view : llvm::reverse(views))
    if (view->use_empty())
      view->erase();
  if (load->use_empty())
    load->erase();
}

/// Waits for `load`'s slot in its place, once for all the dots that read the
/// slot in place (the wait of an earlier one's rewrite is just before the
/// load; the last rewrite erases the load).
void waitInPlaceOf(OpBuilder &b, RingWaitLoadOp load) {
  auto earlier = llvm::dyn_cast_or_null<RingWaitOp>(load->getPrevNode());
  if (!earlier || earlier.getRing() != load.getRing() || earlier.getSlot() != load.getSlot() ||
      earlier.getPhase() != load.getPhase()) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(load);
    RingWaitOp::create(b, load.getLoc(), load.getRing(), load.getSlot(), load.getPhase());
  }
}

/// The ring load a dot's B comes from, as the matrix of its box:
/// `tile.ring_wait_load` of a 128-byte swizzled ring, then an optional
/// reshape to [rows, inner] (a box of rank above 2), then (K-major: the [N, K] box
/// transposed) an optional transpose (views other dots' Bs may share), the
/// load used by dot Bs only (``onlyFeedsDotBs``). bf16/f16; a K-major box's K or an
/// MN-major box's N of whole 128-byte rows.
std::optional<SlotBDot> matchSlotB(DotOp dot) {
  SlotBDot match;
  Value b = dot.getB();
  if (auto trans = b.getDefiningOp<TransOp>();
      trans && trans.getOrder() == ArrayRef<int64_t>{1, 0}) {
    match.bViews.push_back(trans);
    b = trans.getSrc();
  } else {
    match.bMnMajor = true;
  }
  if (auto reshape = b.getDefiningOp<ReshapeOp>()) {
    match.bViews.push_back(reshape);
    b = reshape.getSrc();
  }
  match.b = b.getDefiningOp<RingWaitLoadOp>();
  if (!match.b || !onlyFeedsDotBs(match.b) || match.b.getCount() ||
      !isTmaSwizzled128(match.b.getRing()))
    return std::nullopt;
  // A box of rank above 2 holds the matrix [rows, inner] (rows: the product
  // of its outer dimensions), which the reshape must view it as.
  auto box = match.b.getType();
  auto matrix = llvm::cast<RankedTensorType>(
      (match.bViews.empty() ? Value(dot.getB()) : match.bViews.back()->getResult(0)).getType());
  if (box.getRank() != 2 &&
      (matrix.getRank() != 2 || matrix.getDimSize(1) != box.getShape().back()))
    return std::nullopt;
  Type element = box.getElementType();
  // The row of 128-byte swizzle spans: K of a K-major box, N of an MN-major.
  if (!(element.isBF16() || element.isF16()) || box.getShape().back() * 2 % 128 != 0)
    return std::nullopt;
  std::reverse(match.bViews.begin(), match.bViews.end());
  return match;
}

/// Whether `value` is computed outside the scf.for that holds `op`, in a
/// block whose ops every thread of the program runs (the kernel's body, or
/// the consumer region of a tile.warp_specialize at its top level): a dot
/// operand the loop does not compute, which `tile.stage` may write to shared
/// memory once after its definition.
bool isStageableInvariant(Value value, Operation *op) {
  auto loop = op->getParentOfType<scf::ForOp>();
  Block *block = value.getParentBlock();
  if (!loop || loop->getBlock() != block)
    return false;
  Operation *parent = block->getParentOp();
  return llvm::isa<func::FuncOp>(parent) ||
         (llvm::isa<WarpSpecializeOp>(parent) && llvm::isa<func::FuncOp>(parent->getParentOp()) &&
          block->getParent() == &llvm::cast<WarpSpecializeOp>(parent).getConsumer());
}

/// A tile.dot in the K loop of a pipelined GEMM: its operands are ring slots
/// (`operands`), its accumulator an iteration argument of `loop` that only
/// the dot reads, and its result only yielded in the accumulator's place.
struct PipelinedDot {
  DotOp dot;
  scf::ForOp loop;
  RingOperands operands;
  BlockArgument acc;
  OpOperand *yielded;
  unsigned index; ///< of the iteration argument among the loop's results
  int64_t m = 0, n = 0;
  bool fp8 = false;
};

/// The match both archs share: bf16/f16 [M, K] and [N, K] boxes with K a
/// multiple of 64, or FP8 ones with K a multiple of 128 (rows of whole
/// 128-byte swizzle spans: one, or the chunks of a wide box) of 128-byte
/// swizzled rings, an f32 accumulator in the blocked layout. An MN-major B
/// ([K, N] box, not transposed) matches for bf16/f16 only (wgmma's
/// transpose-B bit exists for 16-bit types only) with N a multiple of 64 (N =
/// 128 or 256: a wide box, its 64-column chunks the descriptor's leading
/// byte offset apart). The caller checks what each arch's MMA takes beyond
/// that (tcgen05: bf16/f16, K-major B).
std::optional<PipelinedDot> matchPipelinedDot(DotOp dot) {
  auto loop = llvm::dyn_cast<scf::ForOp>(dot->getParentOp());
  if (!loop)
    return std::nullopt;
  std::optional<RingOperands> operands = matchRingOperands(dot);
  if (!operands)
    return std::nullopt;
  auto accType = dot.getAcc().getType();
  auto aType = dot.getA().getType();
  Type element = aType.getElementType();
  bool fp8 = llvm::isa<Float8E4M3FNType, Float8E5M2Type>(element);
  if (!(element.isBF16() || element.isF16() || fp8) || accType.getEncoding() ||
      !accType.getElementType().isF32() ||
      aType.getDimSize(1) * aType.getElementTypeBitWidth() / 8 % 128 != 0)
    return std::nullopt;
  if (operands->bMnMajor() &&
      (fp8 || dot.getB().getType().getDimSize(1) * aType.getElementTypeBitWidth() / 8 % 128 != 0))
    return std::nullopt;
  std::optional<CarriedAccumulator> carried = matchCarriedAccumulator(dot);
  if (!carried)
    return std::nullopt;
  PipelinedDot match{dot, loop, *operands, carried->acc, carried->yielded, carried->index};
  match.m = aType.getDimSize(0);
  match.n = accType.getDimSize(1);
  match.fp8 = fp8;
  return match;
}

/// Waits (in place of the ring loads) for the slots the dot reads in place;
/// with `issuer` only warp 0 waits (a warp-specialized tcgen05 loop).
void waitForSlots(OpBuilder &b, const RingOperands &operands, bool issuer = false) {
  for (RingWaitLoadOp load : {operands.a, operands.b}) {
    b.setInsertionPoint(load);
    auto wait =
        RingWaitOp::create(b, load.getLoc(), load.getRing(), load.getSlot(), load.getPhase());
    if (issuer)
      wait.setIssuer(true);
  }
}

/// Erases the dot and its operands' ring loads; returns the rings.
SmallVector<Value, 2> eraseDot(PipelinedDot &p) {
  SmallVector<Value, 2> rings{p.operands.a.getRing(), p.operands.b.getRing()};
  p.dot->erase();
  if (p.operands.bTrans)
    p.operands.bTrans->erase();
  p.operands.b->erase();
  p.operands.a->erase();
  return rings;
}

/// A slot is refilled once the dot that read it is done: the loop's issues
/// into `rings` move after `wait`, in their order.
void moveRefillsAfter(scf::ForOp loop, ArrayRef<Value> rings, Operation *wait) {
  Operation *last = wait;
  for (Operation &op : llvm::make_early_inc_range(*loop.getBody()))
    if (auto issue = llvm::dyn_cast<RingIssueOp>(op);
        issue && llvm::is_contained(rings, issue.getRing()) && issue->isBeforeInBlock(wait)) {
      issue->moveAfter(last);
      last = issue;
    }
}

/// A warp-specialized loop releases its slots to the producer
/// (`tile.mbarrier_arrive` on the empty barriers) once the dot that read them
/// in place is done: the releases move after `wait`, in their order.
void moveReleasesAfter(scf::ForOp loop, Operation *wait) {
  Operation *last = wait;
  for (Operation &op : llvm::make_early_inc_range(*loop.getBody()))
    if (auto release = llvm::dyn_cast<MBarrierArriveOp>(op);
        release && release->isBeforeInBlock(wait)) {
      release->moveAfter(last);
      last = release;
    }
}

/// Whether the loop refills a slot of the dot's rings (`tile.ring_issue`).
bool refills(scf::ForOp loop, RingOperands operands) {
  return llvm::any_of(loop.getBody()->getOps<RingIssueOp>(), [&](RingIssueOp issue) {
    return issue.getRing() == operands.a.getRing() || issue.getRing() == operands.b.getRing();
  });
}

/// Waits until the first `dots` (i32) tcgen05 dots are complete. Dot j
/// commits to barrier j mod 2, completing its phase j / 2; so the wait for
/// dot dots - 1 is barrier (dots + 1) mod 2, parity ((dots + 1) / 2 mod 2)
/// xor 1. With dots = 0 that is barrier 1 with parity 1, which a fresh
/// barrier passes at once. Each barrier is waited for in every phase before
/// it is committed to again, so it is never two phases ahead of a wait.
MBarrierWaitOp waitForDots(OpBuilder &b, Location loc, Value barriers, Value dots) {
  Value one = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(1));
  Value after = arith::AddIOp::create(b, loc, dots, one);
  Value index = arith::AndIOp::create(b, loc, after, one);
  Value half = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, after, one), one);
  Value parity = arith::XOrIOp::create(b, loc, half, one);
  return MBarrierWaitOp::create(b, loc, barriers, index, parity);
}

/// The release of the consumer loop of kiln-tile-warp-specialize, when `loop`
/// is one (at the top level of the consumer region of a tile.warp_specialize
/// at the top level of `func`): its one `tile.mbarrier_arrive`, on EMPTY
/// barriers allocated `per_warp`, one a slot of both of the dot's rings. Null
/// otherwise, and when the loop reads another ring (its slots share the EMPTY
/// barriers, whose per-warp releases keep every reader of that ring in step
/// with the producer; a commit would not).
MBarrierArriveOp matchRelease(func::FuncOp func, scf::ForOp loop, RingOperands operands) {
  auto split = llvm::dyn_cast<WarpSpecializeOp>(loop->getParentOp());
  if (!split || split->getParentOp() != func || loop->getParentRegion() != &split.getConsumer())
    return nullptr;
  bool otherReads = false;
  loop.getBody()->walk([&](Operation *op) {
    if (llvm::isa<RingWaitLoadOp, RingWaitOp>(op) && op != operands.a && op != operands.b)
      otherReads = true;
  });
  if (otherReads)
    return nullptr;
  auto releases = loop.getBody()->getOps<MBarrierArriveOp>();
  if (!llvm::hasSingleElement(releases))
    return nullptr;
  MBarrierArriveOp release = *releases.begin();
  auto empty = release.getBarriers().getDefiningOp<MBarrierAllocOp>();
  unsigned stages = empty ? empty.getType().getCount() : 0;
  if (!empty || !empty.getPerWarp() || operands.a.getRing().getType().getStages() != stages ||
      operands.b.getRing().getType().getStages() != stages)
    return nullptr;
  return release;
}

/// After a warp-specialized tcgen05 loop of `dots` (i32) dots, dot j having
/// committed to EMPTY[j mod N] (`barriers`, N of them): waits for the last
/// one, EMPTY[(dots + N - 1) mod N] with parity (((dots + N - 1) / N) mod 2)
/// xor 1. For dots >= 1 that is the phase (dots - 1) / N, the one the last
/// commit completes; for dots = 0, barrier N - 1 with parity 1, which a
/// fresh barrier passes at once (the producer's first waits, the same way).
MBarrierWaitOp waitForLastSlot(OpBuilder &b, Location loc, Value barriers, Value dots) {
  unsigned count = llvm::cast<MBarriersType>(barriers.getType()).getCount();
  auto c = [&](int64_t v) { return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v)); };
  Value last = arith::AddIOp::create(b, loc, dots, c(count - 1));
  Value index = arith::RemUIOp::create(b, loc, last, c(count));
  Value phase = arith::AndIOp::create(b, loc, arith::DivUIOp::create(b, loc, last, c(count)), c(1));
  Value parity = arith::XOrIOp::create(b, loc, phase, c(1));
  return MBarrierWaitOp::create(b, loc, barriers, index, parity);
}

/// After a tcgen05 loop of `dots` (i32) dots, all complete: the accumulator
/// read from Tensor Memory (`loadedType`; zero when the loop ran no
/// iteration), Tensor Memory freed, and the loop result's `uses` given the
/// value in the accumulator's layout (`accType`).
void readAccumulator(OpBuilder &b, Location loc, RankedTensorType loadedType,
                     RankedTensorType accType, Value tmem, Value dots, ArrayRef<OpOperand *> uses) {
  Value loaded = TMemLoadOp::create(b, loc, loadedType, tmem);
  Value ran = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, dots,
                                    arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0)));
  Value zeros = arith::ConstantOp::create(
      b, loc, loadedType, DenseElementsAttr::get(loadedType, b.getF32FloatAttr(0.0f)));
  Value value = arith::SelectOp::create(b, loc, ran, loaded, zeros);
  TMemDeallocOp::create(b, loc, tmem);
  auto blocked = ConvertLayoutOp::create(b, loc, accType, value);
  for (OpOperand *use : uses)
    use->set(blocked);
  sinkConversion(b, blocked);
}

struct TileAccelerateDotPass : kiln::tile::impl::TileAccelerateDotBase<TileAccelerateDotPass> {
  using TileAccelerateDotBase::TileAccelerateDotBase;

  /// The `tile.stage` of each tile staged so far (see registerOrStagedA).
  llvm::DenseMap<Value, Value> stagedTiles;
  /// The bytes of the tiles staged once for mma.sync dots (stageOnce), and
  /// their bound.
  int64_t warpStagedBytes = 0;
  static constexpr int64_t kWarpStagedBytes = 32 * 1024;
  /// Why each dot left on mma.sync is not on the target's tensor-core MMA.
  llvm::DenseMap<Operation *, std::string> fallbacks;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    stagedTiles.clear();
    warpStagedBytes = 0;
    fallbacks.clear();
    accelerateDots(func);
    rewriteToWarpDots(func);
    foldMmaOperandConversions(func);
    readSlotColumnsInMmaLayout(func);
    alternateWarpgroups(func);
    deferWarpGroupWaits(func);
    hoistRingReleases(func);
    if (ArrayAttr dots = reportDots(func, fallbacks);
        !dots.empty() && func->hasAttr(TileDialect::getKernelAttrName()))
      func->setAttr(TileDialect::getDotsAttrName(), dots);
  }

  /// A 1-D ring slot read (`tile.ring_wait_load`) whose every use is a
  /// column vector broadcast over an mma.sync accumulator's rows
  /// (`tile.expand_dims` along 0, then `tile.broadcast` into one version 2
  /// encoding: MLA's FP8 scales of each key, `s * scale[None, :]`) is read in
  /// the slice of that encoding along dim 0: each thread reads the columns it
  /// holds from the slot, and the broadcasts copy registers, where a vector
  /// in the blocked layout would go through a shared buffer between two
  /// barriers per broadcast.
  static void readSlotColumnsInMmaLayout(func::FuncOp func) {
    SmallVector<RingWaitLoadOp> loads;
    func.walk([&](RingWaitLoadOp load) {
      if (load.getType().getRank() == 1 && !load.getType().getEncoding())
        loads.push_back(load);
    });
    for (RingWaitLoadOp load : loads) {
      // The rewrites leave unused broadcasts behind (canonicalize would
      // erase them later): they are no uses.
      for (Operation *user : load->getUsers())
        for (Operation *use : llvm::make_early_inc_range(user->getUsers()))
          if (llvm::isa<BroadcastOp>(use) && use->use_empty())
            use->erase();
      MmaEncodingAttr encoding = columnsEncoding(load);
      RankedTensorType type = load.getType();
      if (!encoding || type.getDimSize(0) % (8 * encoding.getWarpsN()) != 0)
        continue;
      load.getResult().setType(
          RankedTensorType::get(type.getShape(), type.getElementType(),
                                SliceEncodingAttr::get(func.getContext(), 0, encoding)));
      for (Operation *user : load->getUsers())
        user->getResult(0).setType(
            llvm::cast<RankedTensorType>(user->getResult(0).getType()).cloneWithEncoding(encoding));
    }
  }

  /// The version 2 mma encoding that every use of `load` broadcasts it into as
  /// columns (`tile.expand_dims` along 0, then `tile.broadcast`), or null.
  static MmaEncodingAttr columnsEncoding(RingWaitLoadOp load) {
    MmaEncodingAttr encoding;
    for (Operation *user : load->getUsers()) {
      auto expand = llvm::dyn_cast<ExpandDimsOp>(user);
      if (!expand || expand.getAxis() != 0)
        return {};
      for (Operation *use : expand->getUsers()) {
        auto broadcast = llvm::dyn_cast<BroadcastOp>(use);
        auto mma =
            broadcast
                ? llvm::dyn_cast_if_present<MmaEncodingAttr>(broadcast.getType().getEncoding())
                : MmaEncodingAttr();
        if (!mma || mma.getVersion() != 2 || (encoding && mma != encoding))
          return {};
        encoding = mma;
      }
    }
    return encoding;
  }

  /// FA3's ping-pong: in the consumer loop of a tile.warp_specialize with two
  /// consumer warpgroups, the dots that read a ring slot in place (A staged or
  /// in registers: attention's q kᵀ and p·v, each waited for at once) are
  /// issued in turns (tile.warpgroup_turn "wait" before, "pass" after each),
  /// the first turn warpgroup 0's ("start" before the loop, "end" after it).
  /// The warpgroups own rows of their own, so one's softmax then runs while
  /// the other's dots hold the tensor cores (not where they split the dots'
  /// columns instead).
  void alternateWarpgroups(func::FuncOp func) {
    auto threads = func->getAttrOfType<IntegerAttr>(TileDialect::getThreadsPerBlockAttrName());
    if (!threads || threads.getInt() != 256)
      return;
    func.walk([&](WarpSpecializeOp split) {
      for (auto loop : split.getConsumer().getOps<scf::ForOp>()) {
        SmallVector<WarpGroupDotOp> dots;
        for (auto dot : loop.getBody()->getOps<WarpGroupDotOp>())
          if (!dot.getARing() && !dot.getMaxNumImpreciseAcc())
            dots.push_back(dot);
        // Warpgroups that split a dot's columns share its rows: nothing to
        // alternate.
        if (dots.empty() || llvm::any_of(dots, [](WarpGroupDotOp dot) {
              return dot.getEncoding().getWarpsN() > 1;
            }))
          continue;
        OpBuilder b(loop);
        Location loc = loop.getLoc();
        WarpGroupTurnOp::create(b, loc, "start");
        for (WarpGroupDotOp dot : dots) {
          b.setInsertionPoint(dot);
          WarpGroupTurnOp::create(b, dot.getLoc(), "wait");
          b.setInsertionPointAfter(dot);
          WarpGroupTurnOp::create(b, dot.getLoc(), "pass");
        }
        b.setInsertionPointAfter(loop);
        WarpGroupTurnOp::create(b, loc, "end");
      }
    });
  }

  /// The element type of a warpgroup dot's operands (its k per wgmma).
  static Type operandElementType(WarpGroupDotOp dot) { return dot.getBMatrix().getElementType(); }

  /// Each wait for none in flight (`pending = 0`) after a warpgroup dot that
  /// reads a slot or staged operands in place, moved down to its first
  /// reader: past the side-effect-free ops that do not read it and the
  /// warpgroup dots that do not either (those issued back to back, the
  /// tensor cores kept busy, then `pending` = the dots passed: wgmma groups
  /// complete in order). Where that reader is the accumulator of the next
  /// dot of the same wgmma shape (a chain `s = dot(q1, k1.T, dot(q0, k0.T))`,
  /// MLA's three score dots), the wait goes: wgmmas of one shape on one
  /// accumulator are ordered without one, and the last dot's wait covers all.
  /// Stops at any other op with side effects (a ring wait, refill or
  /// release, a stage, a turn of the ping-pong), so nothing that writes what
  /// a dot reads comes before its wait.
  void deferWarpGroupWaits(func::FuncOp func) {
    SmallVector<WarpGroupDotWaitOp> waits;
    func.walk([&](WarpGroupDotWaitOp wait) {
      auto dot = wait.getSrc().getDefiningOp<WarpGroupDotOp>();
      if (wait.getPending() == 0 && dot && !dot.getMaxNumImpreciseAcc())
        waits.push_back(wait);
    });
    for (WarpGroupDotWaitOp wait : waits) {
      auto dot = wait.getSrc().getDefiningOp<WarpGroupDotOp>();
      // The conversions the rewrites left unused go first (canonicalize
      // would erase them later): they are no readers.
      for (Operation *user : llvm::make_early_inc_range(wait->getUsers()))
        if (isa<ConvertLayoutOp>(user) && user->use_empty())
          user->erase();
      unsigned passed = 0;
      Operation *stop = wait->getNextNode();
      for (; !stop->hasTrait<OpTrait::IsTerminator>(); stop = stop->getNextNode()) {
        bool reads =
            llvm::any_of(wait->getUsers(), [&](Operation *user) { return stop->isAncestor(user); });
        auto next = dyn_cast<WarpGroupDotOp>(stop);
        if (next && !next.getMaxNumImpreciseAcc() && reads && wait->hasOneUse() &&
            next.getAcc() == wait.getResult() && next.getType() == dot.getType() &&
            operandElementType(next) == operandElementType(dot)) {
          next.getAccMutable().assign(dot.getResult());
          wait->erase();
          wait = nullptr;
          break;
        }
        if (reads || !(next ? !next.getMaxNumImpreciseAcc() : isMemoryEffectFree(stop)))
          break;
        if (next)
          ++passed;
      }
      if (!wait || stop == wait->getNextNode())
        continue;
      wait->moveBefore(stop);
      wait.setPending(passed);
    }
  }

  /// Moves each tile.ring_release up past the layout conversions and the
  /// side-effect-free ops that the rewrites above put after its loop (the
  /// accumulator's way out of the MMA layout), to just after the last op that
  /// may still wait for or touch the ring (the dot's final wait): the
  /// conversions' buffers may then take the ring's bytes.
  void hoistRingReleases(func::FuncOp func) {
    SmallVector<RingReleaseOp> releases;
    func.walk([&](RingReleaseOp op) { releases.push_back(op); });
    for (RingReleaseOp release : releases) {
      Operation *after = release->getPrevNode();
      while (after && (isa<ConvertLayoutOp>(after) || isMemoryEffectFree(after)))
        after = after->getPrevNode();
      if (after && after != release->getPrevNode())
        release->moveAfter(after);
    }
  }

  void accelerateDots(func::FuncOp func) {
    SmallVector<DotOp> dots;
    func.walk([&](DotOp dot) { dots.push_back(dot); });
    // Each dot left on mma.sync says why (reportDots).
    auto fallback = [&](DotOp dot, const Twine &reason) { fallbacks[dot] = reason.str(); };
    std::optional<kiln::Arch> target = kiln::Arch::get(arch);
    bool hopper = target && target->hasWgmma();
    bool blackwell = target && target->hasTcgen05();
    auto threads = func->getAttrOfType<IntegerAttr>(TileDialect::getThreadsPerBlockAttrName());
    // Whole warpgroups, at most the 16 warps of a #tile.mma encoding.
    std::string unusable;
    if (!hopper && !blackwell)
      unusable = "the target (" + (arch.empty() ? std::string("none") : arch) +
                 ") has neither wgmma nor tcgen05";
    else if (!threads || threads.getInt() % 128 != 0 || threads.getInt() > 512)
      unusable = "the kernel's warps are not 1 to 4 whole warpgroups";
    if (!unusable.empty()) {
      for (DotOp dot : dots)
        fallback(dot, unusable);
      return;
    }
    unsigned warps = threads.getInt() / 32;
    bool tcgen05Taken = false;
    SmallVector<DotOp> stagedTcgen05;
    // sm_90a: dots of B in a ring slot whose A is computed in their loop but
    // not yet in the wgmma registers (resolveSlotBWaiting).
    SmallVector<std::pair<DotOp, SlotBDot>> slotBWaiting;
    for (DotOp dot : dots) {
      std::optional<PipelinedDot> match = matchPipelinedDot(dot);
      if (match && match->operands.bMnMajor() && !mnMajorB) {
        fallback(dot, "its B is an MN-major ring slot and the mn-major-b option is off");
        continue;
      }
      if (!match) {
        if (!hopper) {
          if (std::string mismatch = stagedDotMismatch(dot, warps, /*tcgen05=*/true);
              mismatch.empty())
            stagedTcgen05.push_back(dot);
          else
            fallback(dot, mismatch);
          continue;
        }
        if (std::optional<SlotBDot> slotB = matchSlotB(dot);
            slotB && slotBShapeFits(dot, *slotB, warps, splitN)) {
          if (slotBAReady(dot, warps))
            rewriteToSlotBWarpGroupDot(dot, *slotB, warps);
          else if (slotBAInLoop(dot))
            slotBWaiting.push_back({dot, *slotB});
          else
            stageOrFallback(dot, warps, fallback);
        } else {
          stageOrFallback(dot, warps, fallback);
        }
        continue;
      }
      if (hopper) {
        if (match->m % (64 * (warps / 4)) != 0 || match->n % 8 != 0 || match->n > 256) {
          fallback(dot, "M = " + Twine(match->m) + ", N = " + Twine(match->n) +
                            ": wgmma takes M a multiple of 64 a warpgroup, N a multiple of 8 "
                            "up to 256");
          continue;
        }
        rewriteToWarpGroupDot(*match, warps);
        continue;
      }
      // Tensor Memory is allocated once per kernel (its dealloc gives up the
      // permit to allocate) and the commit barriers start fresh: one loop at
      // the kernel's top level, whose accumulator starts at zero (the first
      // MMA does not read TMEM). The CTA barrier of a refill in the loop keeps
      // every thread within one iteration of the others, so none waits on a
      // commit barrier that is two phases ahead.
      // kind::f16 only: FP8 (kind::f8f6f4) stays on mma.sync; so does an
      // MN-major B (Tcgen05DotOp describes K-major boxes only). Wide boxes
      // of K > 64 (K-major chunks) are read in place like 64-wide ones.
      // A warp-specialized loop (the consumers'; the producer refills) is at
      // the top level of the consumer region, which is the kernel's.
      MBarrierArriveOp release = matchRelease(func, match->loop, match->operands);
      if (tcgen05Taken) {
        fallback(dot, "Tensor Memory goes to one tcgen05 loop a kernel, taken by an earlier dot");
        continue;
      }
      if (match->fp8 || match->operands.bMnMajor()) {
        fallback(dot, match->fp8 ? "tcgen05 runs bf16/f16 here, not FP8"
                                 : "tcgen05 reads a K-major B here, not an MN-major one");
        continue;
      }
      if (match->m != 128 || match->n % 16 != 0 || match->n < 16 || match->n > 256) {
        fallback(dot, "M = " + Twine(match->m) + ", N = " + Twine(match->n) +
                          ": tcgen05 here takes M = 128 and N a multiple of 16 up to 256");
        continue;
      }
      if (!matchPattern(match->loop.getInitsMutable()[match->index].get(), m_AnyZeroFloat())) {
        fallback(dot, "its accumulator does not start at zero");
        continue;
      }
      if (release ? refills(match->loop, match->operands)
                  : match->loop->getParentOp() != func || !refills(match->loop, match->operands)) {
        fallback(dot, "its loop is not a pipelined loop at the kernel's top level that refills "
                      "the dot's rings");
        continue;
      }
      rewriteToTcgen05Dot(*match, warps, release);
      tcgen05Taken = true;
    }
    resolveSlotBWaiting(func, slotBWaiting, warps, fallback);
    if (stagedTcgen05.empty())
      return;
    if (tcgen05Taken) {
      for (DotOp dot : stagedTcgen05)
        fallback(dot, "Tensor Memory goes to the kernel's pipelined tcgen05 loop");
      return;
    }
    rewriteToStagedTcgen05Dots(func, stagedTcgen05, warps);
  }

  /// sm_100a/sm_103a, the dots that are not a pipelined GEMM's ring-slot dot
  /// (attention's q kᵀ and p·v): tile.tcgen05_dot_staged each, the
  /// accumulator in the registers of the version 5 `#tile.mma` layout (across
  /// the loop that carries it), A staged once where the dot's loop does not
  /// compute it, B read in its ring slot where it is one. They share one Tensor Memory allocation
  /// of the widest dot's columns, made at the kernel's start and freed before its return (each dot
  /// is waited for before the next writes the columns).
  void rewriteToStagedTcgen05Dots(func::FuncOp func, ArrayRef<DotOp> dots, unsigned warps) {
    MLIRContext *context = func.getContext();
    int64_t columns = 0;
    for (DotOp dot : dots)
      columns = std::max(columns, dot.getAcc().getType().getDimSize(1));
    Block &entry = func.getBody().front();
    Location loc = func.getLoc();
    auto b = OpBuilder::atBlockBegin(&entry);
    auto tmemType =
        TMemType::get(context, RankedTensorType::get({128, columns}, Float32Type::get(context)));
    Value tmem = TMemAllocOp::create(b, loc, tmemType);
    b.setInsertionPoint(entry.getTerminator());
    TMemDeallocOp::create(b, loc, tmem);
    for (DotOp dot : dots) {
      auto accType = dot.getAcc().getType();
      auto mmaType = RankedTensorType::get(accType.getShape(), accType.getElementType(),
                                           MmaEncodingAttr::get(context, 5, warps));
      b.setInsertionPoint(dot);
      Value a = registerOrStagedA(b, dot, mmaType);
      // A B in a 128-byte swizzled ring slot (attention's k and v) is read
      // there: the slot waited for in place of its load.
      std::optional<SlotBDot> slotB = matchSlotB(dot);
      if (slotB && slotB->b.getType().getElementType() != dot.getA().getType().getElementType())
        slotB.reset();
      if (slotB)
        waitInPlaceOf(b, slotB->b);
      replaceInMmaLayout(b, dot, mmaType, [&](Value acc) -> Value {
        if (slotB)
          return Tcgen05DotStagedOp::create(b, dot.getLoc(), mmaType, a, slotB->b.getRing(), acc,
                                            tmem, slotB->b.getSlot(), slotB->bMnMajor);
        return Tcgen05DotStagedOp::create(b, dot.getLoc(), mmaType, a, dot.getB(), acc, tmem,
                                          /*bSlot=*/Value(), /*bMnMajor=*/false);
      });
      if (slotB)
        eraseUnusedViews(slotB->bViews, slotB->b);
    }
  }

  /// sm_90a: the accumulator lives in wgmma registers across the loop.
  void rewriteToWarpGroupDot(PipelinedDot &p, unsigned warps) {
    auto accType = p.dot.getAcc().getType();
    MLIRContext *context = p.loop.getContext();
    auto mmaType = RankedTensorType::get(accType.getShape(), accType.getElementType(),
                                         MmaEncodingAttr::get(context, 3, warps));
    OpBuilder b(context);
    Location loc = p.dot.getLoc();

    carryInMmaLayout(b, loc, {p.loop, p.acc, p.yielded, p.index}, mmaType);
    Value result = p.loop.getResult(p.index);

    // Operands read in place; the dot asynchronous, the previous one waited
    // for. A dot with maxNumImpreciseAcc waits for its own chunks and adds
    // them to the accumulator in f32: nothing is left in flight after it.
    waitForSlots(b, p.operands);
    b.setInsertionPoint(p.dot);
    IntegerAttr maxNumImpreciseAcc = p.dot.getMaxNumImpreciseAccAttr();
    Value issued = WarpGroupDotOp::create(b, loc, mmaType, p.operands.a.getRing(),
                                          p.operands.b.getRing(), p.operands.b.getSlot(), p.acc,
                                          p.operands.a.getSlot(), maxNumImpreciseAcc,
                                          /*bMnMajor=*/p.operands.bMnMajor());
    auto wait = WarpGroupDotWaitOp::create(b, loc, issued,
                                           /*pending=*/maxNumImpreciseAcc ? 0 : 1);
    p.yielded->set(wait);
    moveRefillsAfter(p.loop, eraseDot(p), wait);
    moveReleasesAfter(p.loop, wait);

    b.setInsertionPointAfter(p.loop);
    auto done = WarpGroupDotWaitOp::create(b, loc, result, /*pending=*/0);
    auto blocked = ConvertLayoutOp::create(b, loc, accType, done);
    result.replaceAllUsesExcept(blocked, done);
    sinkConversion(b, blocked);
    ++numAccelerated;
  }

  /// The dot's A where the wgmma reads it: a conversion's source in the
  /// accumulator's encoding (`mmaType` of warpsN = 1; from registers, K a
  /// multiple of 16); where its warpgroups split N, such a source (any mma
  /// encoding, K a multiple of 64) staged by `tile.stage` right after its
  /// definition, each warpgroup storing the columns it holds (one stage for
  /// the dots that read it: attention's p, two value dots); when the dot's loop
  /// does not compute it, the tile staged once by `tile.stage` after its
  /// definition (one stage per tile: the dots of several loops share it); or
  /// the register tile itself.
  Value registerOrStagedA(OpBuilder &b, DotOp dot, RankedTensorType mmaType) {
    Value a = dot.getA();
    auto encoding = llvm::cast<MmaEncodingAttr>(mmaType.getEncoding());
    auto convert = a.getDefiningOp<ConvertLayoutOp>();
    Attribute from = convert ? convert.getSrc().getType().getEncoding() : Attribute();
    if (convert && from == encoding && encoding.getWarpsN() == 1 &&
        dot.getA().getType().getDimSize(1) % 16 == 0)
      return convert.getSrc();
    if (convert && encoding.getWarpsN() > 1 && llvm::isa_and_present<MmaEncodingAttr>(from) &&
        dot.getA().getType().getDimSize(1) % 64 == 0) {
      Value source = convert.getSrc();
      Value &staged = stagedTiles[source];
      if (!staged) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointAfterValue(source);
        staged = StageOp::create(b, dot.getLoc(),
                                 SmemType::get(b.getContext(), dot.getA().getType()), source);
      }
      return staged;
    }
    auto type = dot.getA().getType();
    if (type.getDimSize(0) % 64 != 0)
      return a;
    return stageOnce(b, dot);
  }

  /// The dot's A staged once by `tile.stage` after its definition where the
  /// dot's loop does not compute it and it is a blocked tile of whole
  /// swizzle rows (K a multiple of 64, M of 8); one stage per tile: the dots
  /// of several loops share it. Else A itself. With `budget` (mma.sync, whose
  /// dots would stage A in scratch the next op reuses), only while the
  /// kernel's tiles staged so far for mma.sync stay within kWarpStagedBytes:
  /// a staged tile is live across the whole loop, and a pipelined kernel's
  /// rings need those bytes (MLA's 64-row q on Blackwell would not fit).
  Value stageOnce(OpBuilder &b, DotOp dot, bool budget = false) {
    Value a = dot.getA();
    auto type = dot.getA().getType();
    if (type.getEncoding() || !isStageableInvariant(a, dot) || type.getDimSize(0) % 8 != 0 ||
        type.getDimSize(1) % 64 != 0)
      return a;
    int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    if (budget && !stagedTiles.count(a)) {
      if (warpStagedBytes + bytes > kWarpStagedBytes)
        return a;
      warpStagedBytes += bytes;
    }
    Value &staged = stagedTiles[a];
    if (!staged) {
      OpBuilder::InsertionGuard guard(b);
      if (Operation *def = a.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(a.getParentBlock());
      staged = StageOp::create(b, a.getLoc(), SmemType::get(b.getContext(), type), a);
    }
    return staged;
  }

  /// Whether wgmma takes a dot of B `slotB` in place, its A aside: bf16/f16
  /// operands of one type, an f32 accumulator in the blocked layout, M a
  /// multiple of 64 a warpgroup (of 64 with `splitN`), N a multiple of 8 up
  /// to 256 (of 64 for an MN-major B) a warpgroup along N (wgmmaEncoding), K
  /// a multiple of 64 for a K-major B.
  static bool slotBShapeFits(DotOp dot, SlotBDot slotB, unsigned warps, bool splitN) {
    auto aType = dot.getA().getType(), accType = dot.getAcc().getType();
    int64_t m = aType.getDimSize(0), k = aType.getDimSize(1), n = accType.getDimSize(1);
    if (!wgmmaTakesRows(m, warps, splitN))
      return false;
    int64_t warpsN = wgmmaEncoding(dot.getContext(), m, warps).getWarpsN();
    return aType.getElementType() == slotB.b.getType().getElementType() && !accType.getEncoding() &&
           accType.getElementType().isF32() && n % (8 * warpsN) == 0 && n <= 256 * warpsN &&
           (!slotB.bMnMajor || n % (64 * warpsN) == 0) && (slotB.bMnMajor || k % 64 == 0);
  }

  /// Whether such a dot's A can be wgmma's: converted from a tile in an mma
  /// encoding (read from those registers, K a multiple of 16: attention's p;
  /// where the warpgroups split N, staged from them, K a multiple of 64),
  /// or computed before the dot's loop (staged once, M and K multiples of 64:
  /// attention's q).
  static bool slotBAReady(DotOp dot, unsigned warps) {
    auto aType = dot.getA().getType();
    if (auto convert = dot.getA().getDefiningOp<ConvertLayoutOp>();
        convert && llvm::isa_and_present<MmaEncodingAttr>(convert.getSrc().getType().getEncoding()))
      return aType.getDimSize(1) %
                 (wgmmaEncoding(dot.getContext(), aType.getDimSize(0), warps).getWarpsN() > 1
                      ? 64
                      : 16) ==
             0;
    return isStageableInvariant(dot.getA(), dot) && aType.getDimSize(0) % 64 == 0 &&
           aType.getDimSize(1) % 64 == 0;
  }

  /// Whether such a dot's A is computed in the dot's loop: it may reach the
  /// wgmma registers once another dot of the loop is rewritten (a state the
  /// loop carries from a later dot's result, a value computed from an earlier
  /// dot's).
  static bool slotBAInLoop(DotOp dot) {
    auto loop = dot->getParentOfType<scf::ForOp>();
    return loop && loop->isAncestor(dot.getA().getParentBlock()->getParentOp());
  }

  /// The dot staged on wgmma where it takes that form, else left to mma.sync
  /// with the reason.
  void stageOrFallback(DotOp dot, unsigned warps,
                       llvm::function_ref<void(DotOp, const Twine &)> fallback) {
    if (std::string mismatch = stagedDotMismatch(dot, warps, /*tcgen05=*/false, splitN);
        mismatch.empty())
      rewriteToStagedWarpGroupDot(dot, warps);
    else
      fallback(dot, mismatch);
  }

  /// The waiting slot-B dots of `waiting` (program order): each whose A has
  /// reached the wgmma registers is rewritten to read its slot in place, in
  /// turn, since each rewrite sinks its result's conversion and may bring
  /// another's A there (a loop's state h, carried from the last dot of the
  /// body, becomes the first dots' A: a recurrence's chain of dots). When none
  /// is ready, one A computed from what the loop carries is converted into
  /// the registers (below), else the first dot is staged, which may unblock
  /// the rest (its result is the others' operand).
  void resolveSlotBWaiting(func::FuncOp func, SmallVectorImpl<std::pair<DotOp, SlotBDot>> &waiting,
                           unsigned warps,
                           llvm::function_ref<void(DotOp, const Twine &)> fallback) {
    bool forced = false;
    while (!waiting.empty()) {
      auto *ready =
          llvm::find_if(waiting, [&](auto &entry) { return slotBAReady(entry.first, warps); });
      if (ready != waiting.end()) {
        auto [dot, slotB] = *ready;
        waiting.erase(ready);
        rewriteToSlotBWarpGroupDot(dot, slotB, warps);
        continue;
      }
      // None can go. A dot whose A the loop computes from a value it carries
      // (a recurrence's state, carried out of a later waiting dot) gets that A
      // converted into the wgmma registers, for every reader of it; the
      // rewrites then carry the state in those registers, the A is computed
      // there, and the conversions fold away (resinkConversions). Else the
      // first dot is staged (an A loaded in the loop is staged better than
      // converted).
      auto *carried = llvm::find_if(waiting, [&](std::pair<DotOp, SlotBDot> &entry) {
        RankedTensorType aType = entry.first.getA().getType();
        return aType.getDimSize(1) % 16 == 0 &&
               wgmmaEncoding(entry.first.getContext(), aType.getDimSize(0), warps).getWarpsN() ==
                   1 &&
               computedFromCarried(entry.first.getA(), entry.first->getParentOfType<scf::ForOp>());
      });
      if (carried == waiting.end()) {
        DotOp first = waiting.front().first;
        waiting.erase(waiting.begin());
        stageOrFallback(first, warps, fallback);
        continue;
      }
      DotOp dot = carried->first;
      auto a = dot.getA();
      RankedTensorType aType = a.getType();
      OpBuilder b(dot);
      b.setInsertionPointAfterValue(a);
      auto into = ConvertLayoutOp::create(
          b, dot.getLoc(),
          RankedTensorType::get(aType.getShape(), aType.getElementType(),
                                wgmmaEncoding(dot.getContext(), aType.getDimSize(0), warps)),
          a);
      auto back = ConvertLayoutOp::create(b, dot.getLoc(), aType, into);
      a.replaceAllUsesExcept(back, into);
      forced = true;
    }
    if (forced)
      resinkConversions(func);
  }

  /// Whether `value` is computed in `loop`'s body, by elementwise ops and
  /// layout conversions, from a value the loop carries (its iteration
  /// arguments).
  static bool computedFromCarried(Value value, scf::ForOp loop) {
    if (!loop)
      return false;
    SmallVector<Value> stack{value};
    llvm::SmallPtrSet<Value, 8> seen;
    while (!stack.empty()) {
      Value v = stack.pop_back_val();
      if (!seen.insert(v).second || seen.size() > 16)
        continue;
      if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
        if (arg.getOwner() == loop.getBody() && arg.getArgNumber() > 0)
          return true;
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != loop.getBody() ||
          !(isElementwise(def) || llvm::isa<ConvertLayoutOp>(def)))
        continue;
      for (Value operand : def->getOperands())
        if (llvm::isa<RankedTensorType>(operand.getType()))
          stack.push_back(operand);
    }
    return false;
  }

  /// After a forced conversion: each round trip between two layouts (the
  /// forced conversion of a value that has since reached the mma layout) is
  /// dropped, and the conversions out of mma layouts are sunk again, so that
  /// what is computed from them (a two-part split's low part) follows.
  void resinkConversions(func::FuncOp func) {
    func.walk([](ConvertLayoutOp c) {
      if (auto inner = c.getSrc().getDefiningOp<ConvertLayoutOp>();
          inner && inner.getSrc().getType() == c.getType())
        c.replaceAllUsesWith(inner.getSrc());
    });
    SmallVector<ConvertLayoutOp> fromMma;
    func.walk([&](ConvertLayoutOp c) {
      if (c->use_empty())
        c->erase();
      else if (llvm::isa_and_present<MmaEncodingAttr>(c.getSrc().getType().getEncoding()))
        fromMma.push_back(c);
    });
    OpBuilder b(func.getContext());
    // Each sink erases only conversions of its own (the one it sinks and
    // those it makes): the others of the list stay valid.
    for (ConvertLayoutOp c : fromMma)
      sinkConversion(b, c);
  }

  /// sm_90a, a dot of B `slotB` (a ring slot): tile.warpgroup_dot reading
  /// the slot in place (tile.ring_wait in place of the load) and A from
  /// registers or staged once, waited for at once (`wgmma.wait_group 0`), so
  /// the slot is free again when the loop's next refill or release comes;
  /// the accumulator in the wgmma registers (across the loop that carries
  /// it). No CTA barrier: the warpgroups of a warp-specialized loop run
  /// apart, one's softmax beside the other's MMAs.
  void rewriteToSlotBWarpGroupDot(DotOp dot, SlotBDot slotB, unsigned warps) {
    auto accType = dot.getAcc().getType();
    auto mmaType =
        RankedTensorType::get(accType.getShape(), accType.getElementType(),
                              wgmmaEncoding(dot.getContext(), accType.getDimSize(0), warps));
    OpBuilder b(dot);
    Location loc = dot.getLoc();
    Value a = registerOrStagedA(b, dot, mmaType);
    RingWaitLoadOp load = slotB.b;
    waitInPlaceOf(b, load);
    replaceInMmaLayout(b, dot, mmaType, [&](Value acc) -> Value {
      Value issued = WarpGroupDotOp::create(b, loc, mmaType, a, load.getRing(), load.getSlot(), acc,
                                            /*aSlot=*/Value(), /*maxNumImpreciseAcc=*/nullptr,
                                            /*bMnMajor=*/slotB.bMnMajor);
      return WarpGroupDotWaitOp::create(b, loc, issued, /*pending=*/0);
    });
    eraseUnusedViews(slotB.bViews, load);
  }

  /// Every dot that neither wgmma nor tcgen05 took (all of them on a target
  /// with neither): tile.warp_dot, its accumulator in the registers of the
  /// `#tile.mma` version 2 layout (warpsNOf: the warp tiling) across the
  /// loop that carries it, as replaceInMmaLayout does. mma.sync has no FP8
  /// form here: FP8 operands become bf16, which holds every e4m3 and e5m2
  /// value exactly (the products and the f32 sums are unchanged); it
  /// accumulates every k16 step in f32, so a bound on imprecise accumulation
  /// holds already. A transposed B (`w.T`) is read K-major from the tile
  /// itself; an A the dot's loop does not compute is staged once (stageOnce:
  /// attention's q); an A converted from a tile in an mma encoding (attention's p)
  /// is read from its registers where that is the accumulator's encoding of
  /// warpsN = 1, else staged from them (no conversion). The kernel's
  /// warps are its threads / 32; a function without them keeps its dots.
  void rewriteToWarpDots(func::FuncOp func) {
    auto threads = func->getAttrOfType<IntegerAttr>(TileDialect::getThreadsPerBlockAttrName());
    if (!threads || threads.getInt() < 32 || threads.getInt() > 1024 ||
        !llvm::isPowerOf2_64(threads.getInt()))
      return;
    unsigned warps = threads.getInt() / 32;
    SmallVector<DotOp> dots;
    func.walk([&](DotOp dot) { dots.push_back(dot); });
    for (DotOp dot : dots) {
      OpBuilder b(dot);
      Location loc = dot.getLoc();
      for (OpOperand *operand : {&dot.getAMutable(), &dot.getBMutable()}) {
        auto type = llvm::cast<RankedTensorType>(operand->get().getType());
        if (type.getElementTypeBitWidth() == 8)
          operand->set(arith::ExtFOp::create(b, loc, type.clone(b.getBF16Type()), operand->get()));
      }
      auto accType = dot.getAcc().getType();
      auto encoding = chainedEncoding(dot);
      if (!encoding)
        encoding = MmaEncodingAttr::get(dot.getContext(), 2, warps, warpsNOf(dot, warps));
      auto mmaType = RankedTensorType::get(accType.getShape(), accType.getElementType(), encoding);
      // An A converted from an mma encoding is read from (warpsN = 1, the
      // accumulator's) or staged from the registers it was converted from;
      // one the loop does not compute is staged once.
      Value a = stageOnce(b, dot, /*budget=*/true);
      if (auto convert = a.getDefiningOp<ConvertLayoutOp>();
          convert &&
          llvm::isa_and_present<MmaEncodingAttr>(convert.getSrc().getType().getEncoding()))
        a = convert.getSrc();
      Value bTile = dot.getB();
      auto trans = bTile.getDefiningOp<TransOp>();
      bool bKMajor = trans && trans.getOrder() == ArrayRef<int64_t>{1, 0} &&
                     !trans.getSrc().getType().getEncoding();
      if (bKMajor)
        bTile = trans.getSrc();
      RingWaitLoadOp slot = inPlaceSlot(bTile, dot);
      // A K-major B widened from an 8-bit float slot (FP8 keys' codes, exact
      // in bf16) with a staged A: the codes read in place and converted in
      // the B fragments' registers, no staging of the widened tile.
      arith::ExtFOp widened;
      if (!slot && bKMajor && llvm::isa<SmemType>(a.getType()))
        if ((widened = bTile.getDefiningOp<arith::ExtFOp>()))
          if ((slot = inPlaceSlot(widened.getIn(), dot, /*codes=*/true)))
            bTile = widened.getIn();
      std::string reason = fallbacks.lookup(dot);
      Operation *warpDot = nullptr;
      replaceInMmaLayout(b, dot, mmaType, [&](Value acc) -> Value {
        auto op = slot ? WarpDotOp::create(b, loc, mmaType, a, slot.getRing(), acc, slot.getSlot(),
                                           bKMajor)
                       : WarpDotOp::create(b, loc, mmaType, a, bTile, acc, Value(), bKMajor);
        warpDot = op;
        return op;
      });
      if (!reason.empty())
        fallbacks[warpDot] = reason;
      if (bKMajor && trans->use_empty())
        trans->erase();
      if (widened && widened->use_empty())
        widened->erase();
      if (!slot)
        continue;
      // A gather ring's slots become swizzled boxes; the last reader of the
      // load in place waits for the slot where the load did.
      if (!isTmaSwizzled128(slot.getRing()))
        slot.getRing().getDefiningOp<RingAllocOp>().setSwizzled(true);
      if (slot->use_empty()) {
        if (!slot.getAgain())
          waitInPlaceOf(b, slot);
        slot->erase();
      }
    }
  }

  /// A tile.warp_dot stores its register operands to shared memory from any
  /// layout (DotOps.cpp): an A or B converted from a #tile.mma tile of
  /// version 2 (a dot's result, what is computed from it sunk into its
  /// layout, e.g. narrowed to bf16) is taken from that tile, so one dot's
  /// result reaches the next through one staging, not a conversion through
  /// shared memory and then the staging. rewriteToWarpDots folds the
  /// conversions it finds; the ones sinkConversion makes after a dot that
  /// reads them was rewritten (a loop's carried result feeding its own next
  /// dot, a result feeding B) are folded here, over the finished dots.
  static void foldMmaOperandConversions(func::FuncOp func) {
    func.walk([](WarpDotOp dot) {
      for (OpOperand *operand : {&dot.getAMutable(), &dot.getBMutable()}) {
        auto convert = operand->get().getDefiningOp<ConvertLayoutOp>();
        auto mma = convert ? llvm::dyn_cast_if_present<MmaEncodingAttr>(
                                 convert.getSrc().getType().getEncoding())
                           : MmaEncodingAttr();
        if (!mma || mma.getVersion() != 2)
          continue;
        operand->set(convert.getSrc());
        if (convert->use_empty())
          convert->erase();
      }
    });
  }

  /// The ring load `b` (a dot's B, a K-major B's transpose taken off) whose
  /// slot a tile.warp_dot reads in place: a 2-D box of the dot's bf16/f16
  /// with rows of a power of two 128-byte spans, in a ring of gathers (made
  /// `swizzled` then) or of TMA boxes with the 128-byte swizzle, whole (no
  /// count), and no refill of the ring between the load and the dot. Null
  /// otherwise.
  static RingWaitLoadOp inPlaceSlot(Value b, DotOp dot, bool codes = false) {
    auto load = b.getDefiningOp<RingWaitLoadOp>();
    if (!load || load.getCount() || load->getBlock() != dot->getBlock())
      return {};
    RankedTensorType box = load.getType();
    Type element = box.getElementType();
    Type aElement = dot.getA().getType().getElementType();
    int64_t innerBytes =
        box.getRank() == 2 ? box.getDimSize(1) * box.getElementTypeBitWidth() / 8 : 0;
    // `codes`: 8-bit floats that the dot widens to A's 16-bit type.
    bool typed = codes ? llvm::isa<FloatType>(element) && element.getIntOrFloatBitWidth() == 8 &&
                             (aElement.isBF16() || aElement.isF16())
                       : (element.isBF16() || element.isF16()) && element == aElement;
    if (!typed || innerBytes % 128 != 0 || !llvm::isPowerOf2_64(innerBytes))
      return {};
    Value ring = load.getRing();
    auto alloc = ring.getDefiningOp<RingAllocOp>();
    bool gathers = alloc && llvm::all_of(ring.getUsers(), [](Operation *user) {
                     auto issue = llvm::dyn_cast<RingIssueOp>(user);
                     return !issue || issue.isGather();
                   });
    if (!gathers && !isTmaSwizzled128(ring))
      return {};
    for (Operation *op = load->getNextNode(); op != dot; op = op->getNextNode()) {
      bool refill =
          op->walk([&](RingIssueOp issue) {
              return issue.getRing() == ring ? WalkResult::interrupt() : WalkResult::advance();
            }).wasInterrupted();
      if (refill)
        return {};
    }
    return load;
  }

  /// The encoding of the version 2 tile that the dot's A was converted from
  /// (attention's p, from the scores' dot) where the accumulator can take it
  /// (N a multiple of 8 warpsN): the chain then shares one warp tiling, so
  /// the row vectors of the scores' softmax (alpha, scaling the accumulator)
  /// are in the accumulator's rows, with no conversion of it. Null otherwise.
  static MmaEncodingAttr chainedEncoding(DotOp dot) {
    auto convert = dot.getA().getDefiningOp<ConvertLayoutOp>();
    if (!convert)
      return {};
    auto mma = llvm::dyn_cast_if_present<MmaEncodingAttr>(convert.getSrc().getType().getEncoding());
    if (!mma || mma.getVersion() != 2 ||
        dot.getAcc().getType().getDimSize(1) % (8 * mma.getWarpsN()) != 0)
      return {};
    return mma;
  }

  /// The warps along N of a version 2 accumulator [M, N] on `warps` warps.
  /// Where the result feeds another dot's A or a row reduction (flash
  /// attention's s), or M has 16 rows for every warp, the warps go along M
  /// first (warpsN = 1 keeps whole rows in each warp: the reduction and the
  /// next dot's A then stay in registers; Triton's warpsPerTileV2 does the
  /// same for chained dots). Otherwise the warps split the 16 x 8 tiles so
  /// that each warp's rows and columns balance, as Triton's does. Warps left
  /// over along M hold copies of rows (M < 16 warpsM).
  static unsigned warpsNOf(DotOp dot, unsigned warps) {
    int64_t m = dot.getA().getType().getDimSize(0), n = dot.getAcc().getType().getDimSize(1);
    int64_t warpsM = 1, warpsN = 1;
    if (m >= 16 * int64_t(warps) || feedsRows(dot)) {
      warpsM = std::min<int64_t>(warps, std::max<int64_t>(1, m / 16));
      return std::min<int64_t>(warps / warpsM, n / 8);
    }
    while (warpsM * warpsN < warps) {
      bool alongM = m / (16 * warpsM) >= n / (16 * warpsN);
      if ((alongM && warpsM < m / 16) || warpsN >= n / 8)
        warpsM *= 2;
      else
        warpsN *= 2;
    }
    return warpsN;
  }

  /// Whether the result of `dot` reaches, through elementwise ops, another
  /// dot's A or a row reduction.
  static bool feedsRows(DotOp dot) {
    SmallVector<Value> worklist{dot.getResult()};
    llvm::SmallPtrSet<Operation *, 16> seen;
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      for (OpOperand &use : value.getUses()) {
        Operation *user = use.getOwner();
        if (!seen.insert(user).second)
          continue;
        if (auto next = llvm::dyn_cast<DotOp>(user); next && use.getOperandNumber() == 0)
          return true;
        if (auto reduce = llvm::dyn_cast<ReduceOp>(user); reduce && reduce.getAxis() == 1)
          return true;
        if (isElementwise(user) || llvm::isa<ConvertLayoutOp>(user))
          worklist.push_back(user->getResult(0));
      }
    }
    return false;
  }

  /// Replaces `dot` by the value `issue` builds from the accumulator in
  /// `mmaType` (at the dot): carried in that layout across the loop that
  /// carries it (converted back after the loop), else converted in and out
  /// around the dot; what is computed from the result then follows it into
  /// the layout (sinkConversion).
  void replaceInMmaLayout(OpBuilder &b, DotOp dot, RankedTensorType mmaType,
                          llvm::function_ref<Value(Value acc)> issue) {
    auto accType = dot.getAcc().getType();
    Location loc = dot.getLoc();
    std::optional<CarriedAccumulator> carried = matchCarriedAccumulator(dot);
    ConvertLayoutOp blocked;
    if (carried) {
      carryInMmaLayout(b, loc, *carried, mmaType);
      b.setInsertionPoint(dot);
      carried->yielded->set(issue(carried->acc));
      Value result = carried->loop.getResult(carried->index);
      b.setInsertionPointAfter(carried->loop);
      blocked = ConvertLayoutOp::create(b, loc, accType, result);
      result.replaceAllUsesExcept(blocked, blocked);
    } else {
      b.setInsertionPoint(dot);
      Value done = issue(convertTo(b, loc, dot.getAcc(), mmaType));
      blocked = ConvertLayoutOp::create(b, loc, accType, done);
      dot.replaceAllUsesWith(blocked.getResult());
    }
    dot->erase();
    sinkConversion(b, blocked);
    ++numAccelerated;
  }

  /// sm_90a, a dot of register tiles: tile.warpgroup_dot_staged, its
  /// accumulator in the wgmma registers (across the loop that carries it).
  void rewriteToStagedWarpGroupDot(DotOp dot, unsigned warps) {
    auto accType = dot.getAcc().getType();
    auto mmaType =
        RankedTensorType::get(accType.getShape(), accType.getElementType(),
                              wgmmaEncoding(dot.getContext(), accType.getDimSize(0), warps));
    OpBuilder b(dot);
    Location loc = dot.getLoc();
    // An A converted from a tile in the accumulator's encoding (attention's
    // p, the softmax of an mma tile, narrowed to bf16 in place) is read from
    // its registers; an A the dot's loop does not compute (attention's q) is
    // staged once.
    Value a = registerOrStagedA(b, dot, mmaType);
    replaceInMmaLayout(b, dot, mmaType, [&](Value acc) -> Value {
      return WarpGroupDotStagedOp::create(b, loc, mmaType, a, dot.getB(), acc);
    });
  }

  /// sm_100a/sm_103a: the accumulator lives in Tensor Memory; the loop
  /// carries, in its place, the number of dots issued. Unspecialized: dot n
  /// commits to barrier n mod 2, dot n - 1 is waited for before its slots are
  /// refilled.
  ///
  /// With `release`, the consumers of a warp-specialized loop. The The producer
  /// (kiln-tile-warp-specialize) fills slot s = it mod N of the rings for
  /// iteration it after waiting for EMPTY[s] with parity ((it / N) mod 2) xor
  /// 1 (fill q = it / N of the slot waits for the completion of EMPTY[s]'s
  /// phase q - 1; the first N fills pass on fresh barriers). Here:
  ///
  ///   scf.for ... iter_args(%n = 0, ..., %it = 0) {
  ///     tile.ring_wait %ra[s], (it / N) mod 2 {issuer}     warp 0 only
  ///     tile.ring_wait %rb[s], (it / N) mod 2 {issuer}
  ///     tile.tcgen05_dot %ra[s], %rb[s], %tmem, n != 0 -> %empty[s]
  ///   }
  ///   tile.barrier
  ///   tile.mbarrier_wait %empty[(n + N - 1) mod N], (((n + N - 1) / N) mod 2) xor 1
  ///   tile.tmem_load ... (as the unspecialized form)
  ///
  /// with EMPTY of one arrival a phase: the tcgen05.commit of dot it (its
  /// issuer's MMAs, those of every earlier dot included), so phase q of
  /// EMPTY[s] completes when the MMAs of iteration q N + s, the last readers
  /// of fill q of slot s, are done; only then may the producer overwrite it.
  /// Why every parity wait sees its barrier at most one phase away (c: the
  /// phases a barrier has completed; a wait for phase q, parity q mod 2,
  /// is right when q <= c <= q + 1):
  ///  - producer, EMPTY[s] at fill q (waits for phase q - 1): c >= q - 1, it
  ///    waited for q - 2 before; c <= q, as phase q needs the commit of
  ///    iteration q N + s, after warp 0 waited for this very fill.
  ///  - warp 0, FULL[s] at iteration q N + s (phase q): c >= q, it waited for
  ///    q - 1 before; c <= q + 1, as fill q + 1 waits for EMPTY[s]'s phase q,
  ///    the commit of this iteration, issued after the dot's elect.sync,
  ///    which every lane of warp 0 reaches only past this wait (elect.sync
  ///    is warp-synchronous: the 32 lanes stay within one iteration).
  ///  - every consumer thread after the loop, EMPTY[L] (L = (n - 1) mod N,
  ///    phase P = (n - 1) / N, n >= 1): c <= P + 1, n commits in all; c >= P
  ///    once warp 0 is past its last FULL wait (fill P of slot L landed, so
  ///    the producer had seen phase P - 1 complete), which the tile.barrier
  ///    (the consumers' named barrier) makes true for every thread. Without
  ///    it a thread of warps 1..7, which skip the loop's waits, could see
  ///    c = P - 1 and pass on the parity alone.
  /// The other consumer warps never wait in the loop: they cannot fall
  /// behind a barrier's phases. The EMPTY wait (acquire) after the MMAs'
  /// completion, then tile.tmem_load's tcgen05.fence::after_thread_sync,
  /// orders the TMEM reads after the MMAs as in the unspecialized form.
  void rewriteToTcgen05Dot(PipelinedDot &p, unsigned warps, MBarrierArriveOp release) {
    auto accType = p.dot.getAcc().getType();
    MLIRContext *context = p.loop.getContext();
    auto loadedType = RankedTensorType::get(accType.getShape(), accType.getElementType(),
                                            MmaEncodingAttr::get(context, 5, warps));
    OpBuilder b(context);
    Location loc = p.dot.getLoc();
    Value result = p.loop.getResult(p.index);
    SmallVector<OpOperand *> uses =
        llvm::map_to_vector(result.getUses(), [](OpOperand &use) { return &use; });
    Value barriers;
    if (release) {
      barriers = release.getBarriers();
      // One arrival a phase: the commit.
      barriers.getDefiningOp<MBarrierAllocOp>().setPerWarp(false);
      release->erase();
    }

    b.setInsertionPoint(p.loop);
    if (!release)
      barriers = MBarrierAllocOp::create(b, loc, MBarriersType::get(context, 2));
    Value tmem = TMemAllocOp::create(b, loc, TMemType::get(context, accType));
    Type i32 = b.getI32Type();
    p.loop.getInitsMutable()[p.index].set(
        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0)));
    p.acc.setType(i32);
    result.setType(i32);

    // Dot n: from zero when n = 0, committed to barrier n mod 2 or, with
    // `release`, to the EMPTY barrier of its slot (both rings' slot:
    // kiln-tile-warp-specialize gives every ring of the loop the slot it mod N).
    waitForSlots(b, p.operands, /*issuer=*/bool(release));
    b.setInsertionPoint(p.dot);
    Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
    Value one = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(1));
    Value accumulate = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, p.acc, zero);
    Value barrier =
        release ? p.operands.a.getSlot() : arith::AndIOp::create(b, loc, p.acc, one).getResult();
    Tcgen05DotOp::create(b, loc, p.operands.a.getRing(), p.operands.a.getSlot(),
                         p.operands.b.getRing(), p.operands.b.getSlot(), tmem, accumulate, barriers,
                         barrier);
    if (release) {
      p.yielded->set(arith::AddIOp::create(b, loc, p.acc, one));
      eraseDot(p);
    } else {
      Operation *wait = waitForDots(b, loc, barriers, p.acc);
      p.yielded->set(arith::AddIOp::create(b, loc, p.acc, one));
      moveRefillsAfter(p.loop, eraseDot(p), wait);
    }

    // After the loop: the last dot waited for (with `release`, every consumer
    // thread past warp 0's last wait first), the accumulator read (zero when
    // the loop ran no iteration), Tensor Memory freed.
    b.setInsertionPointAfter(p.loop);
    if (release) {
      BarrierOp::create(b, loc);
      waitForLastSlot(b, loc, barriers, result);
    } else {
      waitForDots(b, loc, barriers, result);
    }
    readAccumulator(b, loc, loadedType, accType, tmem, result, uses);
    ++numAccelerated;
  }
};
} // namespace
