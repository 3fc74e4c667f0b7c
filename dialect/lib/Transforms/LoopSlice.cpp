//===- LoopSlice.cpp - the per-iteration slices of loop values -------------===//

#include "LoopSlice.h"

#include "kiln/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace kiln::tile;

namespace {

bool isPointerLike(Type type) {
  if (auto tile = llvm::dyn_cast<RankedTensorType>(type))
    type = tile.getElementType();
  return llvm::isa<PtrType, TensorDescType>(type);
}

/// Adds to `roots` the arguments of `func` that `ptr` (a pointer, a tile of
/// pointers or a descriptor) derives from, through pure ops (tile.addptr,
/// tile.splat, tile.broadcast, arith.select, ...), scf.if results and
/// scf.for's loop-carried values. Fails where a part of it has another origin:
/// a pure op without pointer operands (tile.int_to_ptr), a pointer read from
/// memory, the block argument of another region.
LogicalResult getPointerRoots(Value ptr, func::FuncOp func, llvm::SmallPtrSetImpl<Value> &roots) {
  llvm::SmallPtrSet<Value, 16> seen;
  SmallVector<Value> worklist{ptr};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (owner == func.getOperation()) {
        roots.insert(arg);
        continue;
      }
      auto loop = llvm::dyn_cast_or_null<scf::ForOp>(owner);
      if (!loop || arg == loop.getInductionVar())
        return failure();
      worklist.push_back(loop.getTiedLoopInit(arg)->get());
      worklist.push_back(loop.getTiedLoopYieldedValue(arg)->get());
      continue;
    }
    Operation *def = v.getDefiningOp();
    unsigned index = llvm::cast<OpResult>(v).getResultNumber();
    if (auto loop = llvm::dyn_cast<scf::ForOp>(def)) {
      BlockArgument arg = loop.getRegionIterArgs()[index];
      worklist.push_back(loop.getTiedLoopInit(arg)->get());
      worklist.push_back(loop.getTiedLoopYieldedValue(arg)->get());
      continue;
    }
    if (auto branch = llvm::dyn_cast<scf::IfOp>(def)) {
      worklist.push_back(branch.thenYield().getOperand(index));
      if (!branch.getElseRegion().empty())
        worklist.push_back(branch.elseYield().getOperand(index));
      continue;
    }
    if (def->getNumRegions() != 0 || !isMemoryEffectFree(def))
      return failure();
    size_t before = worklist.size();
    for (Value operand : def->getOperands())
      if (isPointerLike(operand.getType()))
        worklist.push_back(operand);
    if (worklist.size() == before)
      return failure();
  }
  return success();
}

/// The pointer (or descriptor) an op writes global memory through, or null
/// when it writes none.
Value getWrittenPointer(Operation *op) {
  if (auto store = llvm::dyn_cast<StoreOp>(op))
    return store.getPtr();
  if (auto rmw = llvm::dyn_cast<AtomicRMWOp>(op))
    return rmw.getPtr();
  if (auto cas = llvm::dyn_cast<AtomicCASOp>(op))
    return cas.getPtr();
  if (auto store = llvm::dyn_cast<DescStoreOp>(op))
    return store.getDesc();
  return Value();
}

/// Whether `op` may order this thread's later reads after another agent's
/// writes (another kernel, the host): then a read cannot move above it.
bool isSynchronizing(Operation *op) {
  if (auto load = llvm::dyn_cast<LoadOp>(op))
    return load.getSem().has_value() || load.getPollNs().has_value();
  if (auto store = llvm::dyn_cast<StoreOp>(op))
    return store.getSem().has_value();
  return llvm::isa<PdlWaitOp, FenceOp, AtomicRMWOp, AtomicCASOp>(op);
}

} // namespace

LogicalResult kiln::tile::isReadOnlyScalarLoad(scf::ForOp loop, LoadOp load, SliceFailure *why,
                                               bool tiles) {
  auto explain = [&](Location loc, const Twine &reason) {
    if (why)
      *why = SliceFailure{loc, reason.str()};
  };
  auto fail = [&](Location loc, const Twine &reason) {
    explain(loc, reason);
    return failure();
  };
  if (!tiles && !llvm::isa<PtrType>(load.getPtr().getType()))
    return fail(load.getLoc(), "'tile.load' of a tile, not of a scalar");
  if (!llvm::isa<IntegerType, FloatType>(getElementTypeOrSelf(load.getType())))
    return fail(load.getLoc(), "'tile.load' of a pointer");
  if (load.getSem() || load.getPollNs())
    return fail(load.getLoc(), "an ordered 'tile.load'");
  auto func = loop->getParentOfType<func::FuncOp>();
  llvm::SmallPtrSet<Value, 4> roots;
  if (!func || failed(getPointerRoots(load.getPtr(), func, roots)) || roots.size() != 1)
    return fail(load.getLoc(),
                "'tile.load' of a pointer that does not derive from one kernel argument");
  Value root = *roots.begin();
  // Nothing in the kernel writes the memory the load reads.
  WalkResult written = func.walk([&](Operation *op) {
    Value ptr = getWrittenPointer(op);
    if (!ptr)
      return WalkResult::advance();
    llvm::SmallPtrSet<Value, 4> written;
    if (failed(getPointerRoots(ptr, func, written))) {
      explain(op->getLoc(), "'tile.load' of memory that '" + op->getName().getStringRef() +
                                "' may write (its pointer does not derive from kernel arguments)");
      return WalkResult::interrupt();
    }
    if (written.contains(root)) {
      explain(op->getLoc(), "'tile.load' of memory that '" + op->getName().getStringRef() +
                                "' writes (the same kernel argument)");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (written.wasInterrupted())
    return failure();
  // Nor does the loop wait for another agent's writes: the read may move up
  // to num_stages - 1 iterations ahead.
  WalkResult ordered = loop.getBody()->walk([&](Operation *op) {
    if (!isSynchronizing(op))
      return WalkResult::advance();
    explain(op->getLoc(), "'tile.load' that cannot move across '" + op->getName().getStringRef() +
                              "' of the loop (it orders memory)");
    return WalkResult::interrupt();
  });
  return failure(ordered.wasInterrupted());
}

std::optional<SmallVector<Operation *>> kiln::tile::indexSlice(scf::ForOp loop, ValueRange values,
                                                               SliceFailure *why, bool tiles) {
  auto fail = [&](Location loc, const Twine &reason) -> std::optional<SmallVector<Operation *>> {
    if (why)
      *why = SliceFailure{loc, reason.str()};
    return std::nullopt;
  };
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> worklist(values.begin(), values.end());
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || !loop.getBody()->findAncestorOpInBlock(*def)) {
      if (auto arg = llvm::dyn_cast<BlockArgument>(v);
          arg && arg.getOwner() == loop.getBody() && arg != loop.getInductionVar())
        return fail(arg.getLoc(), "a value the loop carries (not a function of the iteration)");
      continue;
    }
    if (slice.contains(def))
      continue;
    StringRef name = def->getName().getStringRef();
    if (def->getBlock() != loop.getBody() || def->getNumRegions() != 0)
      return fail(def->getLoc(), "'" + name + "', an op with regions");
    if (auto load = llvm::dyn_cast<LoadOp>(def)) {
      if (failed(isReadOnlyScalarLoad(loop, load, why, tiles)))
        return std::nullopt;
    } else if (!isMemoryEffectFree(def)) {
      return fail(def->getLoc(), "'" + name + "', which has memory effects");
    }
    slice.insert(def);
    llvm::append_range(worklist, def->getOperands());
  }
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}
