//===- AllocateSharedMemory.cpp - dynamic shared memory past 48 KiB ---------===//
//
// Past 48 KiB the shared buffers of a module move into one dynamic array, at
// offsets chosen so that buffers whose live intervals overlap never overlap in
// memory (first fit, largest first). A buffer's interval runs over the ops of
// the module in program order, from the first to the last use of its address
// (a use inside a loop holds it over the whole loop), and on to the next
// block-wide `bar.sync` of the kernel's body, so that a buffer placed after it
// is written only once every thread is done with this one. In a
// warp-specialized kernel the consumers' named barrier (`bar.sync 1, C` at
// the top of their block) does the same for the buffers only they use. A buffer whose
// address reaches anything but plain loads, stores, atomics and address
// arithmetic (TMA, cp.async, mbarriers, wgmma/tcgen05 descriptors, DSMEM
// `mapa`, inline asm, calls, control flow), or that is used outside one
// kernel function, is live over the whole module.
//
// A scratch buffer (`tile.scratch`: written, read and done with by one op's
// lowering before a CTA barrier it emits, its asynchronous readers waited
// for) is live only from its address to the first CTA barrier after its last
// use in the block of the address, even inside a loop: its contents never
// outlive the op, so the scratch of the ops of one loop body share bytes.
//
// A `tile.drained` buffer, whose asynchronous accesses are all complete at the
// first CTA barrier after the last use of its address, is live from its first
// use to that barrier: a TMA box (its copy waited for by its op), and a ring
// of kiln-tile-pipeline-loads released after its loop (`tile.ring_release`:
// every copy into it and every MMA reading it waited for, then bar.sync,
// `mbarrier.inval` of its barriers, bar.sync), so that an epilogue after the
// loop may take its bytes.
//
// The plan is recorded on every kernel as `tile.shared_plan`, one string a
// buffer, largest first: "name bytes offset first-last" (offset -1 where the
// buffers stay static, side by side; first and last are the smallest and
// largest source line of the ops in the live interval, 0 where none has one).
// The overflow error lists the largest buffers with the same facts.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Tile/IR/TileDialect.h"
#include "kiln/Dialect/Tile/IR/TileTypes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/Support/MathExtras.h"

namespace kiln {
#define GEN_PASS_DEF_ALLOCATESHAREDMEMORY
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
constexpr llvm::StringLiteral kDynamicName = "__kiln_dynamic_smem";
constexpr unsigned kDynamicAlignment = 1024;

/// A closed interval of op positions in program order.
struct Interval {
  int64_t start, end;
  bool overlaps(const Interval &other) const { return start <= other.end && other.start <= end; }
};

struct Buffer {
  LLVM::GlobalOp global;
  int64_t size, align;
  Interval live;
  int64_t offset = -1;
};

/// Region-holding ops that run their region at most once; any other one (a
/// loop, or an op this pass does not know) may repeat it.
bool runsRegionsOnce(Operation *op) {
  return isa<scf::IfOp, scf::IndexSwitchOp, scf::ExecuteRegionOp>(op);
}

/// Ops through which an address flows without leaving the thread's
/// synchronous view of shared memory: their results are derived addresses
/// (or integers of them) to follow.
bool forwardsAddress(Operation *op) {
  return isa<LLVM::GEPOp, LLVM::BitcastOp, LLVM::AddrSpaceCastOp, LLVM::PtrToIntOp,
             LLVM::IntToPtrOp, LLVM::AddOp, LLVM::SubOp, LLVM::MulOp, LLVM::AndOp, LLVM::OrOp,
             LLVM::XOrOp, LLVM::ShlOp, LLVM::LShrOp, LLVM::TruncOp, LLVM::ZExtOp, LLVM::SExtOp,
             LLVM::SelectOp>(op);
}

/// The shared address a plain load, store or atomic accesses; null for any
/// other op.
Value accessedAddress(Operation *op) {
  if (auto load = dyn_cast<LLVM::LoadOp>(op))
    return load.getAddr();
  if (auto store = dyn_cast<LLVM::StoreOp>(op))
    return store.getAddr();
  if (auto rmw = dyn_cast<LLVM::AtomicRMWOp>(op))
    return rmw.getPtr();
  if (auto cmpxchg = dyn_cast<LLVM::AtomicCmpXchgOp>(op))
    return cmpxchg.getPtr();
  return {};
}

/// Numbers the ops of the module in program order and answers the position
/// questions the intervals need.
class ProgramOrder {
public:
  explicit ProgramOrder(ModuleOp module) {
    module.walk<WalkOrder::PreOrder>([&](Operation *op) {
      position[op] = count++;
      ops.push_back(op);
    });
    // In pre-order an op's nested ops follow it: the last of them is the last
    // op before the next op that is not nested in it.
    module.walk([&](Operation *op) {
      int64_t last = position[op];
      for (Region &region : op->getRegions())
        for (Block &block : region)
          if (!block.empty())
            last = std::max(last, lastNested[&block.back()]);
      lastNested[op] = last;
    });
    module.walk([&](LLVM::LLVMFuncOp func) {
      extent[func] = {position[func], lastNested[func]};
      // Only a bar.sync of every thread, unconditionally at the top of the
      // body, separates two buffers in time; within the consumer block of a
      // warp-specialized kernel, which only its threads run, their named
      // barrier at the top of that block does.
      if (!func.getBody().hasOneBlock())
        return;
      Block &body = func.getBody().front();
      for (auto barrier : body.getOps<NVVM::BarrierOp>())
        if (!barrier.getNumberOfThreads())
          barriers[&body].push_back(position[barrier]);
      for (auto split : body.getOps<scf::IfOp>()) {
        if (!split->hasAttr(kiln::tile::TileDialect::getConsumerThreadsAttrName()))
          continue;
        Block *consumers = split.thenBlock();
        consumerBlocks[func].push_back(consumers);
        for (auto barrier : consumers->getOps<NVVM::BarrierOp>())
          barriers[consumers].push_back(position[barrier]);
      }
    });
  }

  /// Whether `barrier` separates in time the buffers of the ops of its
  /// block: a CTA barrier, or the consumers' named barrier in (a block
  /// nested in) their block.
  bool separates(NVVM::BarrierOp barrier) const {
    if (!barrier.getNumberOfThreads())
      return true;
    for (Operation *parent = barrier->getParentOp(); parent; parent = parent->getParentOp())
      if (auto split = dyn_cast<scf::IfOp>(parent);
          split && split->hasAttr(kiln::tile::TileDialect::getConsumerThreadsAttrName()))
        return split.getThenRegion().isAncestor(barrier->getParentRegion());
    return false;
  }

  int64_t size() const { return count; }
  int64_t positionOf(Operation *op) const { return position.lookup(op); }
  Operation *opAt(int64_t pos) const { return ops[pos]; }

  /// The positions over which `op` runs: a loop around it repeats it.
  Interval span(Operation *op, LLVM::LLVMFuncOp func) const {
    Interval span{position.lookup(op), position.lookup(op)};
    for (Operation *parent = op->getParentOp(); parent && parent != func.getOperation();
         parent = parent->getParentOp()) {
      if (runsRegionsOnce(parent))
        continue;
      span = {std::min(span.start, position.lookup(parent)),
              std::max(span.end, lastNested.lookup(parent))};
    }
    return span;
  }

  /// The first barrier after `live` that separates it from what follows:
  /// the consumers' barrier when `live` lies in their block, then a CTA
  /// barrier of `func`'s body; else `func`'s last op.
  int64_t nextBarrier(LLVM::LLVMFuncOp func, Interval live) const {
    SmallVector<Block *, 2> blocks;
    for (Block *consumers : consumerBlocks.lookup(func)) {
      Operation *split = consumers->getParentOp();
      if (position.lookup(split) < live.start && live.end <= lastNested.lookup(split))
        blocks.push_back(consumers);
    }
    blocks.push_back(&func.getBody().front());
    for (Block *block : blocks) {
      auto it = barriers.find(block);
      if (it != barriers.end())
        for (int64_t barrier : it->second)
          if (barrier > live.end)
            return barrier;
    }
    return extent.lookup(func).end;
  }

private:
  int64_t count = 0;
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> position;
  /// The position of the last op nested in an op (its own where none is).
  llvm::DenseMap<Operation *, int64_t> lastNested;
  llvm::DenseMap<Operation *, Interval> extent;
  llvm::DenseMap<Block *, SmallVector<int64_t>> barriers;
  llvm::DenseMap<Operation *, SmallVector<Block *, 1>> consumerBlocks;
};

/// The live interval of `global`, or the whole module where its uses cannot
/// be bounded. The asynchronous uses of a `tile.drained` buffer (TMA copies,
/// mbarriers, MMA descriptors derived from its address) count like its loads
/// and stores: they are complete at the CTA barrier after its last use.
Interval liveInterval(LLVM::GlobalOp global, ModuleOp module, const ProgramOrder &order) {
  bool drained = global->hasAttr(kiln::tile::TileDialect::getDrainedAttrName());
  Interval whole{0, order.size() - 1};
  SmallVector<Value> worklist;
  llvm::DenseSet<Value> seen;
  LLVM::LLVMFuncOp func;
  bool escapes = false;
  module.walk([&](LLVM::AddressOfOp op) {
    if (op.getGlobalName() != global.getSymName())
      return;
    auto parent = op->getParentOfType<LLVM::LLVMFuncOp>();
    if (!parent || (func && parent != func))
      escapes = true;
    func = parent;
    worklist.push_back(op.getResult());
  });
  // A device function runs inside some kernel's interval, unknown here.
  if (worklist.empty() || escapes || !func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) ||
      !func.getBody().hasOneBlock())
    return whole;

  std::optional<Interval> live;
  auto extend = [&](Operation *op) {
    Interval span = order.span(op, func);
    live = live ? Interval{std::min(live->start, span.start), std::max(live->end, span.end)} : span;
  };
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      // Into the cluster's window (other blocks' reads): not this block's.
      if (isa<LLVM::AddrSpaceCastOp>(user)) {
        auto to = dyn_cast<LLVM::LLVMPointerType>(user->getResult(0).getType());
        if (!to || (to.getAddressSpace() != 0 && to.getAddressSpace() != 3))
          return whole;
      }
      if (forwardsAddress(user)) {
        llvm::append_range(worklist, user->getResults());
        continue;
      }
      if (accessedAddress(user) != use.get()) {
        if (!drained)
          return whole; // asynchronous hardware, an escape, or control flow
        llvm::append_range(worklist, user->getResults());
      }
      extend(user);
    }
  }
  if (!live)
    return whole;
  return {live->start, order.nextBarrier(func, *live)};
}

/// The interval of a scratch buffer (see the file header): from its one
/// address to the first CTA barrier after the last use in the address's
/// block; none if a use lies outside that block or no barrier follows.
std::optional<Interval> scratchInterval(LLVM::GlobalOp global, ModuleOp module,
                                        const ProgramOrder &order) {
  SmallVector<LLVM::AddressOfOp> addresses;
  module.walk([&](LLVM::AddressOfOp op) {
    if (op.getGlobalName() == global.getSymName())
      addresses.push_back(op);
  });
  if (addresses.size() != 1)
    return std::nullopt;
  Block *block = addresses.front()->getBlock();
  Operation *last = addresses.front();
  SmallVector<Value> worklist{addresses.front().getResult()};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (Operation *user : value.getUsers()) {
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor)
        return std::nullopt;
      if (last->isBeforeInBlock(ancestor))
        last = ancestor;
      if (forwardsAddress(user))
        llvm::append_range(worklist, user->getResults());
    }
  }
  for (Operation *op = last->getNextNode(); op; op = op->getNextNode())
    if (auto barrier = dyn_cast<NVVM::BarrierOp>(op); barrier && order.separates(barrier))
      return Interval{order.positionOf(addresses.front()), order.positionOf(op)};
  return std::nullopt;
}

/// Places each buffer, largest first, at the lowest offset at its alignment
/// clear of every placed buffer live at the same time; returns the bytes used.
int64_t assignOffsets(MutableArrayRef<Buffer> buffers) {
  SmallVector<Buffer *> order = llvm::map_to_vector(buffers, [](Buffer &b) { return &b; });
  llvm::stable_sort(order, [](Buffer *a, Buffer *b) { return a->size > b->size; });
  int64_t total = 0;
  SmallVector<Buffer *> placed;
  for (Buffer *buffer : order) {
    SmallVector<Buffer *> clashing;
    for (Buffer *other : placed)
      if (other->live.overlaps(buffer->live))
        clashing.push_back(other);
    llvm::sort(clashing, [](Buffer *a, Buffer *b) { return a->offset < b->offset; });
    int64_t offset = 0;
    for (Buffer *other : clashing) {
      if (other->offset + other->size <= offset)
        continue;
      if (offset + buffer->size <= other->offset)
        break;
      offset = llvm::alignTo(other->offset + other->size, buffer->align);
    }
    buffer->offset = offset;
    total = std::max(total, offset + buffer->size);
    placed.push_back(buffer);
  }
  return total;
}

/// The line of the first file location inside `loc` in `file` (any file where
/// `file` is empty), 0 if none: a helper inlined into a kernel keeps the
/// kernel's call site in its location.
int64_t lineOf(Location loc, StringRef file = {}) {
  int64_t line = 0;
  loc->walk([&](Location inner) {
    auto at = dyn_cast<FileLineColLoc>(inner);
    if (!at || (!file.empty() && at.getFilename() != file))
      return WalkResult::advance();
    line = at.getLine();
    return WalkResult::interrupt();
  });
  return line;
}

/// The first and last line, in the file of the buffer's statement, of the ops
/// in `live` (0, 0 if none has one).
std::pair<int64_t, int64_t> linesOf(Buffer &buffer, Interval live, const ProgramOrder &order) {
  StringRef file;
  buffer.global->getLoc()->walk([&](Location inner) {
    if (auto at = dyn_cast<FileLineColLoc>(inner))
      file = at.getFilename();
    return file.empty() ? WalkResult::advance() : WalkResult::interrupt();
  });
  int64_t first = 0, last = 0;
  for (int64_t pos = live.start; pos <= live.end; ++pos) {
    Operation *op = order.opAt(pos);
    if (isa<ModuleOp>(op))
      continue;
    int64_t line = lineOf(op->getLoc(), file);
    if (!line)
      continue;
    first = first ? std::min(first, line) : line;
    last = std::max(last, line);
  }
  return {first, last};
}

/// "name bytes offset first-line-last-line" of a placed buffer (file header).
std::string describe(Buffer &buffer, const ProgramOrder &order) {
  auto [first, last] = linesOf(buffer, buffer.live, order);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << buffer.global.getSymName() << " " << buffer.size << " " << buffer.offset << " " << first
     << "-" << last;
  return text;
}

/// The buffers, largest first (module order among equal sizes).
SmallVector<Buffer *> bySize(MutableArrayRef<Buffer> buffers) {
  SmallVector<Buffer *> sorted = llvm::map_to_vector(buffers, [](Buffer &b) { return &b; });
  llvm::stable_sort(sorted, [](Buffer *a, Buffer *b) { return a->size > b->size; });
  return sorted;
}

/// Records the plan on every kernel of the module (`tile.shared_plan`).
void recordPlan(ModuleOp module, MutableArrayRef<Buffer> buffers, const ProgramOrder &order) {
  Builder b(module.getContext());
  SmallVector<Attribute> plan;
  for (Buffer *buffer : bySize(buffers))
    plan.push_back(b.getStringAttr(describe(*buffer, order)));
  for (auto func : module.getOps<LLVM::LLVMFuncOp>())
    if (func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
      func->setAttr(kiln::tile::TileDialect::getSharedPlanAttrName(), b.getArrayAttr(plan));
}

struct AllocateSharedMemoryPass : kiln::impl::AllocateSharedMemoryBase<AllocateSharedMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    DataLayout layout(module);
    SmallVector<Buffer> buffers;
    int64_t separate = 0;
    for (auto global : module.getOps<LLVM::GlobalOp>()) {
      if (global.getAddrSpace() != 3 || global.getName() == kDynamicName)
        continue;
      int64_t size = layout.getTypeSize(global.getGlobalType()).getFixedValue();
      int64_t align = std::max<int64_t>(1, global.getAlignment().value_or(1));
      separate = llvm::alignTo(separate, align) + size;
      buffers.push_back({global, size, align, Interval{0, 0}});
    }
    if (buffers.empty())
      return;
    StringRef scratch = kiln::tile::TileDialect::getScratchAttrName();
    ProgramOrder order(module);
    for (Buffer &buffer : buffers) {
      std::optional<Interval> live;
      if (buffer.global->hasAttr(scratch))
        live = scratchInterval(buffer.global, module, order);
      buffer.live = live ? *live : liveInterval(buffer.global, module, order);
    }
    // What fits in static shared memory side by side stays as it is.
    if (separate <= kiln::tile::kMaxStaticSharedBytes) {
      recordPlan(module, buffers, order);
      for (Buffer &buffer : buffers)
        buffer.global->removeAttr(scratch);
      return;
    }
    int64_t total = assignOffsets(buffers);
    numSharedBytesReused += separate - total > 0 ? separate - total : 0;
    if (total > kiln::tile::kMaxSharedBytes) {
      // At the statement of the buffer that reaches the top, listing the
      // buffers live beside it (what the kernel holds there), lowest first.
      Buffer *top = &*llvm::max_element(buffers, [](const Buffer &a, const Buffer &b) {
        return a.offset + a.size < b.offset + b.size;
      });
      SmallVector<Buffer *> beside;
      for (Buffer &buffer : buffers)
        if (buffer.live.overlaps(top->live))
          beside.push_back(&buffer);
      llvm::stable_sort(beside, [](Buffer *a, Buffer *b) { return a->offset < b->offset; });
      InFlightDiagnostic diag = mlir::emitError(top->global.getLoc())
                                << "the kernel needs " << total
                                << " bytes of shared memory, more than the "
                                << kiln::tile::kMaxSharedBytes << " a block may use";
      constexpr size_t kListed = 6;
      for (Buffer *buffer : ArrayRef<Buffer *>(beside).take_front(kListed)) {
        auto [first, last] = linesOf(*buffer, buffer->live, order);
        diag.attachNote(buffer->global.getLoc())
            << buffer->global.getSymName() << ": " << buffer->size << " bytes at offset "
            << buffer->offset << ", live from line " << first << " to line " << last;
      }
      if (beside.size() > kListed)
        diag.attachNote(module.getLoc()) << "and " << beside.size() - kListed << " more";
      return signalPassFailure();
    }
    recordPlan(module, buffers, order);

    OpBuilder b(module.getContext());
    b.setInsertionPointToStart(module.getBody());
    Type i8 = b.getI8Type();
    LLVM::GlobalOp::create(b, module.getLoc(), LLVM::LLVMArrayType::get(i8, 0),
                           /*isConstant=*/false, LLVM::Linkage::External, kDynamicName, Attribute(),
                           kDynamicAlignment, /*addrSpace=*/3);
    llvm::DenseMap<StringRef, int64_t> offsets;
    for (Buffer &buffer : buffers)
      offsets[buffer.global.getSymName()] = buffer.offset;
    module.walk([&](LLVM::AddressOfOp op) {
      auto it = offsets.find(op.getGlobalName());
      if (it == offsets.end())
        return;
      b.setInsertionPoint(op);
      Value base = LLVM::AddressOfOp::create(b, op.getLoc(), op.getType(), kDynamicName);
      Value address = LLVM::GEPOp::create(b, op.getLoc(), op.getType(), i8, base,
                                          ArrayRef<LLVM::GEPArg>{int32_t(it->second)});
      op.replaceAllUsesWith(address);
      op.erase();
    });
    for (Buffer &buffer : buffers)
      buffer.global.erase();
    for (auto func : module.getOps<LLVM::LLVMFuncOp>())
      if (func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
        func->setAttr(kiln::tile::TileDialect::getSharedBytesAttrName(),
                      b.getI32IntegerAttr(int32_t(total)));
  }
};
} // namespace
