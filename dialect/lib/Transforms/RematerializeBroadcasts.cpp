//===- RematerializeBroadcasts.cpp - recompute cheap broadcast sources ------===//
//
// tile.broadcast goes through shared memory. When its source is an expression
// of splats, constants, ranges and elementwise ops (index arithmetic), this
// pass builds the expression on the broadcast's shape instead, so that each
// thread computes what it holds and no data moves between threads.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Tile/IR/Layout.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace kiln::tile {
#define GEN_PASS_DEF_TILEREMATERIALIZEBROADCASTS
#include "kiln/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace kiln::tile

using namespace mlir;
using namespace kiln::tile;

namespace {
/// Cost of recomputing one element of an op's result (0 for what is free in
/// the blocked layout).
int64_t costOf(Operation *op) {
  if (llvm::isa<arith::ConstantOp, SplatOp, ExpandDimsOp, BroadcastOp>(op))
    return 0;
  if (llvm::isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp, arith::FloorDivSIOp,
                arith::CeilDivSIOp, arith::CeilDivUIOp, arith::DivFOp, arith::RemFOp, LoadOp>(op) ||
      llvm::isa<math::MathDialect>(op->getDialect()))
    return 8;
  return 1;
}

/// An arith or math op computing each element from the same elements of its
/// operands, without memory effects.
bool isPureElementwise(Operation *op) {
  return llvm::isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) &&
         op->getNumResults() == 1 && op->getNumRegions() == 0 &&
         op->hasTrait<OpTrait::Elementwise>() && isMemoryEffectFree(op);
}

struct TileRematerializeBroadcastsPass
    : kiln::tile::impl::TileRematerializeBroadcastsBase<TileRematerializeBroadcastsPass> {
  using TileRematerializeBroadcastsBase::TileRematerializeBroadcastsBase;

  /// Elements a thread holds of a tile with one run per thread (0: loads are
  /// not copied).
  int64_t maxLoadElements = 0;
  /// Whether a value can be recomputed (the values seen so far).
  llvm::DenseMap<Value, bool> recomputable;
  /// Recomputed values: (value, result shape, result dimension of each of its
  /// dimensions) -> value on the result shape.
  std::map<std::tuple<void *, SmallVector<int64_t>, SmallVector<int64_t>>, Value> rebuilt;

  /// Whether `value` can be recomputed; adds the ops it needs to `ops`.
  bool canRecompute(Value value, llvm::SetVector<Operation *> &ops) {
    Operation *op = value.getDefiningOp();
    if (!op || !llvm::isa<RankedTensorType>(value.getType()))
      return false;
    if (ops.contains(op))
      return true;
    auto it = recomputable.find(value);
    if (it != recomputable.end() && !it->second)
      return false;
    bool ok = [&] {
      if (auto constant = llvm::dyn_cast<arith::ConstantOp>(op))
        return llvm::isa<SplatElementsAttr>(constant.getValue());
      if (llvm::isa<SplatOp, MakeRangeOp, IotaOp>(op))
        return true;
      // A reduction along an axis the broadcast restores becomes an all-reduce
      // of the same source (`fitsShape` checks the axis); only of one source
      // (`broadcast` takes one).
      if (auto reduce = llvm::dyn_cast<ReduceOp>(op))
        return !reduce.getBroadcast() && reduce.getSrcs().size() == 1 &&
               llvm::isa<RankedTensorType>(value.getType());
      auto tensorOperands = [&](ValueRange operands) {
        return llvm::all_of(operands, [&](Value operand) {
          return !llvm::isa<RankedTensorType>(operand.getType()) || canRecompute(operand, ops);
        });
      };
      if (llvm::isa<ExpandDimsOp, BroadcastOp, AddPtrOp>(op) || isPureElementwise(op))
        return tensorOperands(op->getOperands());
      if (auto load = llvm::dyn_cast<LoadOp>(op))
        return rematerializeLoads && !load.getSem() &&
               llvm::cast<RankedTensorType>(load.getType()).getNumElements() <= maxLoadElements &&
               tensorOperands(op->getOperands());
      return false;
    }();
    recomputable[value] = ok;
    if (ok)
      ops.insert(op);
    return ok;
  }

  /// Whether every reduction under `value` (recomputable) can be rebuilt on
  /// `shape` with `dims` as in `rebuild`: the broadcast restores exactly the
  /// reduced axis, so the all-reduce of the reduction's source has that shape.
  bool fitsShape(Value value, ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
    Operation *op = value.getDefiningOp();
    if (auto reduce = llvm::dyn_cast<ReduceOp>(op)) {
      if (reduce.getSrcs().size() != 1)
        return false;
      auto srcType = llvm::cast<RankedTensorType>(reduce.getSrc().getType());
      int64_t axis = reduce.getAxis();
      SmallVector<int64_t> expected = llvm::to_vector(llvm::seq<int64_t>(0, srcType.getRank()));
      expected.erase(expected.begin() + axis);
      return srcType.getShape() == shape && ArrayRef<int64_t>(expected) == dims;
    }
    if (auto expand = llvm::dyn_cast<ExpandDimsOp>(op)) {
      SmallVector<int64_t> srcDims(dims);
      srcDims.erase(srcDims.begin() + expand.getAxis());
      return fitsShape(expand.getSrc(), shape, srcDims);
    }
    if (auto broadcast = llvm::dyn_cast<BroadcastOp>(op))
      return fitsShape(broadcast.getSrc(), shape, dims);
    return llvm::all_of(op->getOperands(), [&](Value operand) {
      return !llvm::isa<RankedTensorType>(operand.getType()) || !operand.getDefiningOp() ||
             fitsShape(operand, shape, dims);
    });
  }

  /// `value` (rank k) on the tile shape `shape`, its dimension i being the
  /// result's dimension dims[i] (of the same size, or 1 and broadcast); the
  /// result's other dimensions are broadcast.
  Value rebuild(OpBuilder &b, Value value, ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
    auto key = std::make_tuple(value.getAsOpaquePointer(), SmallVector<int64_t>(shape),
                               SmallVector<int64_t>(dims));
    if (auto it = rebuilt.find(key); it != rebuilt.end())
      return it->second;
    Operation *op = value.getDefiningOp();
    auto srcType = llvm::cast<RankedTensorType>(value.getType());
    auto type = RankedTensorType::get(shape, srcType.getElementType());
    OpBuilder::InsertionGuard guard(b);
    Location loc = op->getLoc();

    auto constant = [&](Attribute element) -> Value {
      b.setInsertionPointAfter(op);
      return arith::ConstantOp::create(b, loc, type, SplatElementsAttr::get(type, element));
    };
    // The value of a range whose dimension d of size `size` lands in result
    // dimension `to`.
    auto range = [&](int64_t start, int64_t size, int64_t to) -> Value {
      if (size == 1)
        return constant(b.getI32IntegerAttr(start));
      b.setInsertionPointAfter(op);
      return IotaOp::create(b, loc, type, b.getI32IntegerAttr(to), b.getI32IntegerAttr(start));
    };

    Value result;
    if (auto c = llvm::dyn_cast<arith::ConstantOp>(op)) {
      result = constant(llvm::cast<SplatElementsAttr>(c.getValue()).getSplatValue<Attribute>());
    } else if (auto splat = llvm::dyn_cast<SplatOp>(op)) {
      b.setInsertionPointAfter(op);
      result = SplatOp::create(b, loc, type, splat.getSrc());
    } else if (auto r = llvm::dyn_cast<MakeRangeOp>(op)) {
      result = range(r.getStart(), srcType.getDimSize(0), dims[0]);
    } else if (auto iota = llvm::dyn_cast<IotaOp>(op)) {
      int64_t d = iota.getDim();
      result = range(iota.getStartAttr().getInt(), srcType.getDimSize(d), dims[d]);
    } else if (auto expand = llvm::dyn_cast<ExpandDimsOp>(op)) {
      SmallVector<int64_t> srcDims(dims);
      srcDims.erase(srcDims.begin() + expand.getAxis());
      result = rebuild(b, expand.getSrc(), shape, srcDims);
    } else if (auto broadcast = llvm::dyn_cast<BroadcastOp>(op)) {
      result = rebuild(b, broadcast.getSrc(), shape, dims);
    } else if (auto reduce = llvm::dyn_cast<ReduceOp>(op)) {
      b.setInsertionPointAfter(op);
      auto all = ReduceOp::create(b, loc, reduce.getSrc(), reduce.getAxisAttr(), b.getUnitAttr());
      IRMapping mapping;
      reduce.getCombine().cloneInto(&all.getCombine(), mapping);
      result = all.getResult().front();
    } else {
      // Elementwise (arith, math, addptr, load): the same op on the new shape.
      IRMapping mapping;
      for (Value operand : op->getOperands())
        if (llvm::isa<RankedTensorType>(operand.getType()))
          mapping.map(operand, rebuild(b, operand, shape, dims));
      b.setInsertionPointAfter(op);
      Operation *clone = b.clone(*op, mapping);
      clone->getResult(0).setType(type);
      result = clone->getResult(0);
    }
    rebuilt[key] = result;
    return result;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto threads = func->getAttrOfType<IntegerAttr>(TileDialect::getThreadsPerBlockAttrName());
    auto elems = func->getAttrOfType<IntegerAttr>(TileDialect::getElemsPerThreadAttrName());
    if (threads && elems)
      maxLoadElements = threads.getInt() * elems.getInt();

    SmallVector<BroadcastOp> broadcasts;
    func.walk([&](BroadcastOp op) { broadcasts.push_back(op); });
    OpBuilder b(func.getContext());
    llvm::SetVector<Operation *> copied;
    for (BroadcastOp broadcast : broadcasts) {
      llvm::SetVector<Operation *> ops;
      auto type = broadcast.getType();
      // A broadcast in an encoding (the rows of a wgmma accumulator) copies
      // registers already.
      if (type.getEncoding())
        continue;
      SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
      bool ok = canRecompute(broadcast.getSrc(), ops) &&
                fitsShape(broadcast.getSrc(), type.getShape(), dims);
      int64_t cost = 0;
      for (Operation *op : ops)
        cost += costOf(op);
      if (!ok || cost > maxCost) {
        ++numKept;
        continue;
      }
      Value value = rebuild(b, broadcast.getSrc(), type.getShape(), dims);
      broadcast.replaceAllUsesWith(value);
      broadcast.erase();
      copied.insert(ops.begin(), ops.end());
      ++numRematerialized;
    }

    // The originals the copies replaced, users first.
    for (Operation *op : llvm::reverse(copied))
      if (op->use_empty() && wouldOpBeTriviallyDead(op))
        op->erase();
  }
};
} // namespace
