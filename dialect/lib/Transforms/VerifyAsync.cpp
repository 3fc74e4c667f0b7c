//===- VerifyAsync.cpp - check a kernel's mbarrier and TMA protocol ---------===//
//
// See Passes.td (kiln-tile-verify-async). The check runs the kernel's scalar
// control flow (scf.for / scf.if over arith on integers) with sample values
// for its integer arguments and program ids, and feeds the async operations
// it meets to a model of the protocol: ring slots with their fill and wait
// counts, mbarriers with their completed phases, the MMAs that may still read
// a slot. A warp-specialized kernel runs as two threads, the producer first
// whenever it can run (the schedule that finds an early refill), the consumer
// when the producer blocks. Anything the model cannot evaluate (a slot index
// computed from loaded data, a while loop) leaves the kernel unchecked.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"

#include <deque>
#include <optional>

namespace kiln::tile {
#define GEN_PASS_DEF_TILEVERIFYASYNC
#include "kiln/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace kiln::tile

using namespace mlir;
using namespace kiln::tile;

namespace {

/// The most ops the model runs for one argument sample (more leaves the
/// sample unchecked): a bound on the compile time the check takes.
constexpr int64_t kMaxSteps = int64_t(1) << 20;

/// Whether `op` or an op nested in it takes part in the async protocol.
bool hasAsyncOps(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return isa<RingIssueOp, RingWaitLoadOp, RingWaitOp, RingReleaseOp, WarpGroupDotOp,
                   WarpGroupDotWaitOp, Tcgen05DotOp, Tcgen05DotStagedOp, MBarrierArriveOp,
                   MBarrierWaitOp>(nested)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// One async event of a thread, in program order, with the scalars it needs.
struct Event {
  enum Kind {
    Issue,       ///< tile.ring_issue into (ring, slot); pred; elements copied
    RingWait,    ///< tile.ring_wait(_load) of (ring, slot) with parity
    WgmmaDot,    ///< tile.warpgroup_dot reading one or two slots
    WgmmaWait,   ///< tile.warpgroup_dot_wait {pending}
    Tcgen05Dot,  ///< tile.tcgen05_dot reading two slots, committing to a barrier
    SlotRead,    ///< a synchronous read of a slot in place (tile.warp_dot's B)
    Arrive,      ///< tile.mbarrier_arrive on (barriers, index) if pred
    BarrierWait, ///< tile.mbarrier_wait on (barriers, index) with parity
    Release,     ///< tile.ring_release of a ring
  } kind;
  Operation *op;
  Value ring, ring2, barriers; ///< the ring(s) / barrier array the event names
  int64_t slot = 0, slot2 = 0, index = 0, parity = 0, pending = 0, count = -1;
  bool pred = true;
  bool again = false; ///< a tile.ring_wait_load {again}: a second read of a fill
};

/// A thread's events, or the reason the model could not produce them.
struct Trace {
  std::vector<Event> events;
  std::optional<std::string> unknown;
};

/// Runs a region's scalar control flow with known integer values and records
/// its async events.
class Tracer {
public:
  explicit Tracer(llvm::DenseMap<Value, int64_t> values) : values(std::move(values)) {}

  Trace run(Region &region) {
    Trace trace;
    out = &trace;
    if (failed(runBlock(region.front())))
      trace.events.clear();
    return trace;
  }

  /// The trace of one region of `ws`: the ops of `body` before `ws` (what
  /// every thread runs; their events, if any, recorded with the consumer's),
  /// then the region.
  Trace runSpecialized(Block &body, WarpSpecializeOp ws, Region &region) {
    Trace trace;
    out = &trace;
    bool consumer = &region == &ws.getConsumer();
    for (Operation &op : body.without_terminator()) {
      if (&op == ws.getOperation())
        break;
      size_t before = trace.events.size();
      if (failed(runOp(&op))) {
        trace.events.clear();
        return trace;
      }
      if (!consumer)
        trace.events.resize(before);
    }
    if (failed(runBlock(region.front())))
      trace.events.clear();
    return trace;
  }

private:
  llvm::DenseMap<Value, int64_t> values;
  Trace *out = nullptr;
  int64_t steps = 0;

  LogicalResult unknown(Operation *op, StringRef what) {
    if (!out->unknown)
      out->unknown = (what + " at " + op->getName().getStringRef()).str();
    return failure();
  }

  std::optional<int64_t> get(Value v) {
    auto it = values.find(v);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  }

  /// Wraps `v` to the width of `type` (i1 is 0 or 1), sign-extended.
  static int64_t wrap(Type type, int64_t v) {
    unsigned width = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
    if (width >= 64)
      return v;
    if (width == 1)
      return v & 1;
    uint64_t mask = (uint64_t(1) << width) - 1;
    uint64_t u = uint64_t(v) & mask;
    return (u >> (width - 1)) ? int64_t(u | ~mask) : int64_t(u);
  }
  static uint64_t unsignedOf(Type type, int64_t v) {
    unsigned width = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
    return width >= 64 ? uint64_t(v) : uint64_t(v) & ((uint64_t(1) << width) - 1);
  }

  /// Evaluates an integer arith op whose operands are known; otherwise
  /// leaves its result unknown (only an async op's operand makes that fatal).
  void evalArith(Operation *op) {
    if (op->getNumResults() != 1 || !op->getResult(0).getType().isIntOrIndex())
      return;
    Type type = op->getResult(0).getType();
    if (auto c = llvm::dyn_cast<arith::ConstantOp>(op)) {
      if (auto attr = llvm::dyn_cast<IntegerAttr>(c.getValue()))
        values[c.getResult()] = wrap(type, attr.getValue().getSExtValue());
      return;
    }
    SmallVector<int64_t> in;
    for (Value v : op->getOperands()) {
      std::optional<int64_t> x = get(v);
      if (!x)
        return;
      in.push_back(*x);
    }
    Type inType = op->getNumOperands() ? op->getOperand(0).getType() : type;
    auto u = [&](int i) { return unsignedOf(inType, in[i]); };
    std::optional<int64_t> r;
    if (isa<arith::AddIOp>(op))
      r = in[0] + in[1];
    else if (isa<arith::SubIOp>(op))
      r = in[0] - in[1];
    else if (isa<arith::MulIOp>(op))
      r = in[0] * in[1];
    else if (isa<arith::DivUIOp>(op) && u(1))
      r = int64_t(u(0) / u(1));
    else if (isa<arith::DivSIOp>(op) && in[1])
      r = in[0] / in[1];
    else if (isa<arith::RemUIOp>(op) && u(1))
      r = int64_t(u(0) % u(1));
    else if (isa<arith::RemSIOp>(op) && in[1])
      r = in[0] % in[1];
    else if (isa<arith::CeilDivSIOp>(op) && in[1])
      r = (in[0] + in[1] - (in[1] > 0 ? 1 : -1)) / in[1];
    else if (isa<arith::FloorDivSIOp>(op) && in[1])
      r = in[0] / in[1] - ((in[0] % in[1] != 0) && ((in[0] < 0) != (in[1] < 0)));
    else if (isa<arith::AndIOp>(op))
      r = in[0] & in[1];
    else if (isa<arith::OrIOp>(op))
      r = in[0] | in[1];
    else if (isa<arith::XOrIOp>(op))
      r = in[0] ^ in[1];
    else if (isa<arith::ShLIOp>(op) && u(1) < 64)
      r = int64_t(uint64_t(in[0]) << u(1));
    else if (isa<arith::ShRUIOp>(op) && u(1) < 64)
      r = int64_t(u(0) >> u(1));
    else if (isa<arith::ShRSIOp>(op) && u(1) < 64)
      r = in[0] >> u(1);
    else if (isa<arith::MinSIOp>(op))
      r = std::min(in[0], in[1]);
    else if (isa<arith::MaxSIOp>(op))
      r = std::max(in[0], in[1]);
    else if (isa<arith::MinUIOp>(op))
      r = int64_t(std::min(u(0), u(1)));
    else if (isa<arith::MaxUIOp>(op))
      r = int64_t(std::max(u(0), u(1)));
    else if (isa<arith::ExtUIOp>(op))
      r = int64_t(u(0));
    else if (isa<arith::ExtSIOp, arith::TruncIOp, arith::IndexCastOp>(op))
      r = in[0];
    else if (isa<arith::IndexCastUIOp>(op))
      r = int64_t(u(0));
    else if (auto s = llvm::dyn_cast<arith::SelectOp>(op))
      r = in[0] ? in[1] : in[2];
    else if (auto cmp = llvm::dyn_cast<arith::CmpIOp>(op)) {
      using P = arith::CmpIPredicate;
      switch (cmp.getPredicate()) {
      case P::eq:
        r = in[0] == in[1];
        break;
      case P::ne:
        r = in[0] != in[1];
        break;
      case P::slt:
        r = in[0] < in[1];
        break;
      case P::sle:
        r = in[0] <= in[1];
        break;
      case P::sgt:
        r = in[0] > in[1];
        break;
      case P::sge:
        r = in[0] >= in[1];
        break;
      case P::ult:
        r = u(0) < u(1);
        break;
      case P::ule:
        r = u(0) <= u(1);
        break;
      case P::ugt:
        r = u(0) > u(1);
        break;
      case P::uge:
        r = u(0) >= u(1);
        break;
      }
    }
    if (r)
      values[op->getResult(0)] = wrap(type, *r);
  }

  /// Binds `x` to `v`'s value. A slot index, parity or predicate passed in
  /// as a kernel argument is the caller's protocol, not the kernel's: left
  /// unknown (loop bounds and counts may come from arguments).
  LogicalResult need(Operation *op, Value v, int64_t &x, StringRef what, bool argumentOk = false) {
    if (auto arg = llvm::dyn_cast<BlockArgument>(v);
        !argumentOk && arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()))
      return unknown(op, (what + " is a kernel argument").str());
    std::optional<int64_t> k = get(v);
    if (!k)
      return unknown(op, (what + " not computable from the kernel's integer arguments").str());
    x = *k;
    return success();
  }

  LogicalResult runBlock(Block &block) {
    for (Operation &op : block.without_terminator())
      if (failed(runOp(&op)))
        return failure();
    return success();
  }

  /// Runs `region` (one block) with its arguments bound to `args` and binds
  /// the values its scf.yield yields (known or not) to `results`.
  LogicalResult runYielding(Region &region, ArrayRef<std::optional<int64_t>> args,
                            SmallVectorImpl<std::optional<int64_t>> &results) {
    Block &block = region.front();
    for (auto [arg, v] : llvm::zip(block.getArguments(), args)) {
      if (v)
        values[arg] = *v;
      else
        values.erase(arg);
    }
    if (failed(runBlock(block)))
      return failure();
    results.clear();
    for (Value v : block.getTerminator()->getOperands())
      results.push_back(get(v));
    return success();
  }

  LogicalResult runOp(Operation *op) {
    if (++steps > kMaxSteps)
      return unknown(op, "more ops than the model runs");
    if (isa<arith::ArithDialect>(op->getDialect())) {
      evalArith(op);
      return success();
    }
    if (auto loop = llvm::dyn_cast<scf::ForOp>(op)) {
      int64_t lb, ub, step;
      if (failed(need(op, loop.getLowerBound(), lb, "a loop bound", true)) ||
          failed(need(op, loop.getUpperBound(), ub, "a loop bound", true)) ||
          failed(need(op, loop.getStep(), step, "a loop step", true)))
        return failure();
      if (step <= 0)
        return unknown(op, "a loop step that is not positive");

      SmallVector<std::optional<int64_t>> carried;
      for (Value v : loop.getInitArgs())
        carried.push_back(get(v));
      for (int64_t iv = lb; iv < ub; iv += step) {
        SmallVector<std::optional<int64_t>> args{iv};
        args.append(carried);
        if (failed(runYielding(loop.getRegion(), args, carried)))
          return failure();
      }
      for (auto [res, v] : llvm::zip(loop.getResults(), carried))
        if (v)
          values[res] = *v;
      return success();
    }
    if (auto branch = llvm::dyn_cast<scf::IfOp>(op)) {
      // A branch without async ops matters only through its results: the
      // model need not know which way it goes (a data-dependent branch).
      if (!hasAsyncOps(op)) {
        for (Value res : branch.getResults())
          values.erase(res);
        return success();
      }
      int64_t cond;
      if (failed(need(op, branch.getCondition(), cond, "a branch condition", true)))
        return failure();
      Region &taken = cond ? branch.getThenRegion() : branch.getElseRegion();
      if (taken.empty())
        return success();
      SmallVector<std::optional<int64_t>> results;
      if (failed(runYielding(taken, {}, results)))
        return failure();
      for (auto [res, v] : llvm::zip(branch.getResults(), results))
        if (v)
          values[res] = *v;
      return success();
    }
    if (isa<scf::WhileOp, WarpSpecializeOp>(op))
      return unknown(op, "a region the model does not run");
    if (auto p = llvm::dyn_cast<ProgramIdOp>(op)) {
      values[p.getResult()] = 0;
      return success();
    }
    if (auto n = llvm::dyn_cast<NumProgramsOp>(op)) {
      values[n.getResult()] = 1;
      return success();
    }
    Event e{Event::Issue, op, {}, {}, {}};
    if (auto issue = llvm::dyn_cast<RingIssueOp>(op)) {
      int64_t pred;
      e.ring = issue.getRing();
      if (failed(need(op, issue.getSlot(), e.slot, "the slot")) ||
          failed(need(op, issue.getPred(), pred, "the predicate")))
        return failure();
      e.pred = pred != 0;
      if (issue.getCount()) {
        if (failed(need(op, issue.getCount(), e.count, "the count", true)))
          return failure();
        e.count = int64_t(uint32_t(e.count)); // an unsigned element count
      }
    } else if (auto wait = llvm::dyn_cast<RingWaitLoadOp>(op)) {
      e = {Event::RingWait, op, wait.getRing(), {}, {}};
      e.again = wait.getAgain();
      if (failed(need(op, wait.getSlot(), e.slot, "the slot")) ||
          failed(need(op, wait.getPhase(), e.parity, "the phase")))
        return failure();
      if (wait.getCount()) {
        if (failed(need(op, wait.getCount(), e.count, "the count", true)))
          return failure();
        e.count = int64_t(uint32_t(e.count)); // an unsigned element count
      }
    } else if (auto release = llvm::dyn_cast<RingReleaseOp>(op)) {
      e = {Event::Release, op, release.getRing(), {}, {}};
    } else if (auto wait = llvm::dyn_cast<RingWaitOp>(op)) {
      e = {Event::RingWait, op, wait.getRing(), {}, {}};
      if (failed(need(op, wait.getSlot(), e.slot, "the slot")) ||
          failed(need(op, wait.getPhase(), e.parity, "the phase")))
        return failure();
    } else if (auto dot = llvm::dyn_cast<WarpGroupDotOp>(op)) {
      // An `a` staged or in registers is no slot (a null ring).
      e = {Event::WgmmaDot, op, dot.getARing() ? dot.getA() : Value(), dot.getB(), {}};
      if ((dot.getASlot() && failed(need(op, dot.getASlot(), e.slot, "the slot"))) ||
          failed(need(op, dot.getBSlot(), e.slot2, "the slot")))
        return failure();
      // With maxNumImpreciseAcc the op waits for its own wgmmas.
      if (dot.getMaxNumImpreciseAcc()) {
        out->events.push_back(e);
        e = {Event::WgmmaWait, op, {}, {}, {}};
      }
    } else if (auto wait = llvm::dyn_cast<WarpGroupDotWaitOp>(op)) {
      e = {Event::WgmmaWait, op, {}, {}, {}};
      e.pending = wait.getPending();
    } else if (auto dot = llvm::dyn_cast<Tcgen05DotOp>(op)) {
      e = {Event::Tcgen05Dot, op, dot.getA(), dot.getB(), dot.getBarriers()};
      if (failed(need(op, dot.getASlot(), e.slot, "the slot")) ||
          failed(need(op, dot.getBSlot(), e.slot2, "the slot")) ||
          failed(need(op, dot.getBarrier(), e.index, "the barrier index")))
        return failure();
    } else if (auto dot = llvm::dyn_cast<WarpDotOp>(op)) {
      if (!dot.getBRing())
        return success(); // operands in registers or staged
      e = {Event::SlotRead, op, dot.getB(), {}, {}};
      if (failed(need(op, dot.getBSlot(), e.slot, "the slot")))
        return failure();
    } else if (auto dot = llvm::dyn_cast<Tcgen05DotStagedOp>(op)) {
      if (!dot.getBRing())
        return success(); // staged operands only
      // Reads its B slot and is complete when it returns: a read retired at
      // once, as a wgmma followed by a wait for none in flight.
      e = {Event::WgmmaDot, op, Value(), dot.getB(), {}};
      if (failed(need(op, dot.getBSlot(), e.slot2, "the slot")))
        return failure();
      out->events.push_back(e);
      e = {Event::WgmmaWait, op, {}, {}, {}};
    } else if (auto arrive = llvm::dyn_cast<MBarrierArriveOp>(op)) {
      int64_t pred;
      e = {Event::Arrive, op, {}, {}, arrive.getBarriers()};
      if (failed(need(op, arrive.getIndex(), e.index, "the barrier index")) ||
          failed(need(op, arrive.getPred(), pred, "the predicate")))
        return failure();
      e.pred = pred != 0;
    } else if (auto wait = llvm::dyn_cast<MBarrierWaitOp>(op)) {
      e = {Event::BarrierWait, op, {}, {}, wait.getBarriers()};
      if (failed(need(op, wait.getIndex(), e.index, "the barrier index")) ||
          failed(need(op, wait.getParity(), e.parity, "the parity")))
        return failure();
    } else {
      return success(); // no async effect
    }
    out->events.push_back(e);
    return success();
  }
};

/// The slot or barrier an event names: its array (a ring or an mbarrier
/// array) and index.
using Key = std::pair<void *, int64_t>;
Key keyOf(Value array, int64_t index) { return {array.getAsOpaquePointer(), index}; }

/// Erases the entries of `map` whose key (`keyOf(entry)`) satisfies `pred`
/// (DenseMap's erase keeps the other iterators valid).
template <typename Map, typename Pred, typename KeyOf>
void eraseIf(Map &map, Pred pred, KeyOf keyOf) {
  for (auto it = map.begin(), end = map.end(); it != end;) {
    auto cur = it++;
    if (pred(keyOf(*cur)))
      map.erase(cur);
  }
}

/// The protocol model: ring slots, mbarriers and in-flight MMAs, shared by
/// the kernel's threads.
///
/// What a thread knows is free: `consumed[slot]`, the fills of the slot whose
/// readers are done (its waits, less one while an MMA may still read the
/// slot in place). A thread learns the consumer's count through an mbarrier:
/// an arrival (or a tcgen05 commit, which arrives once its MMAs are done)
/// completes a phase carrying the arriving thread's counts, and a wait that
/// observes the phase takes them. A refill of a slot needs every earlier
/// fill known consumed by the issuing thread.
class Model {
public:
  using Counts = llvm::DenseMap<Key, int64_t>;

  struct Error {
    Operation *op = nullptr;
    std::string message;
    Operation *noteOp = nullptr;
    std::string note;
  };
  std::optional<Error> error;

  enum class Step { Done, Blocked, Failed };

  explicit Model(unsigned threads) : known(threads) {}

  /// Applies thread `t`'s event `e`; Blocked leaves the state unchanged.
  Step apply(const Event &e, unsigned t) {
    switch (e.kind) {
    case Event::Issue:
      return issue(e, t);
    case Event::RingWait: {
      Key k = keyOf(e.ring, e.slot);
      if (e.again) {
        // A second read of the fill the slot's last wait waited for.
        int64_t fill = waits[k] - 1;
        if (fill < 0 || e.parity != (fill & 1))
          return fail(e.op, "reads slot " + Twine(e.slot) + " again with parity " +
                                Twine(e.parity) + " but no wait of that fill came before");
        if (fills[k] > waits[k])
          return fail(e.op, "reads slot " + Twine(e.slot) + " again after its refill", lastIssue[k],
                      "the refill");
        return Step::Done;
      }
      int64_t fill = waits[k]; // the n-th wait of a slot waits for its fill n
      if (e.parity != (fill & 1))
        return fail(e.op, "waits for fill " + Twine(fill) + " of slot " + Twine(e.slot) +
                              " with parity " + Twine(e.parity) + "; that fill's parity is " +
                              Twine(fill & 1));
      if (fills[k] <= fill)
        return Step::Blocked;
      if (e.count >= 0) {
        // A reader of `count` elements reads the rest as zero: it must read
        // what the fill copied, neither more (stale bytes) nor less.
        auto ring = llvm::cast<RingType>(e.ring.getType());
        int64_t numel = ring.getBlockType().getNumElements();
        int64_t reads = std::min(e.count, numel), wrote = copied.lookup({k, fill});
        unsigned bytes = ring.getBlockType().getElementTypeBitWidth() / 8;
        if (reads != wrote && wrote != 0)
          return fail(e.op,
                      "reads " + Twine(reads * bytes) + " bytes of slot " + Twine(e.slot) +
                          ", whose fill copied " + Twine(wrote * bytes) +
                          " (the bytes its barrier expected)",
                      lastIssue[k], "the fill");
      }
      ++waits[k];
      return Step::Done;
    }
    case Event::WgmmaDot:
    case Event::Tcgen05Dot: {
      for (Key k : {keyOf(e.ring, e.slot), keyOf(e.ring2, e.slot2)})
        if (k.first && (waits[k] == 0 || waits[k] != fills[k]))
          return fail(e.op, "reads slot " + Twine(k.second) +
                                " of a ring before waiting for the fill it holds");
      Reader r{e.op, keyOf(e.ring, e.slot), keyOf(e.ring2, e.slot2), nullptr, 0};
      if (e.kind == Event::Tcgen05Dot) {
        // The commit arrives once this MMA and every earlier one are done.
        Key b = keyOf(e.barriers, e.index);
        r.barrier = e.barriers.getAsOpaquePointer();
        r.phase = completed[b];
        Counts done = consumedBy(t);
        readers.push_back(r);
        for (const Reader &other : readers)
          if (other.barrier) // tcgen05 MMAs complete in order
            for (Key k : {other.a, other.b})
              done[k] = std::max(done[k], waits[k]);
        readers.pop_back();
        complete(b, std::move(done));
      }
      readers.push_back(r);
      return Step::Done;
    }
    case Event::SlotRead: {
      Key k = keyOf(e.ring, e.slot);
      if (waits[k] == 0 || waits[k] != fills[k])
        return fail(e.op, "reads slot " + Twine(e.slot) +
                              " of a ring before waiting for the fill it holds");
      return Step::Done;
    }
    case Event::WgmmaWait: {
      int64_t inFlight = llvm::count_if(readers, [](const Reader &r) { return !r.barrier; });
      llvm::erase_if(readers,
                     [&](const Reader &r) { return !r.barrier && inFlight-- > e.pending; });
      return Step::Done;
    }
    case Event::Release: {
      // The ring's bytes go to other buffers: no copy into it in flight, no
      // MMA still reading it.
      void *ring = e.ring.getAsOpaquePointer();
      for (auto &[k, op] : lastCopy)
        if (k.first == ring && waits[k] <= lastCopyFill[k])
          return fail(e.op,
                      "releases the ring before the copy into slot " + Twine(k.second) +
                          " is waited for",
                      op, "the copy");
      for (const Reader &r : readers)
        if (r.a.first == ring || r.b.first == ring)
          return fail(e.op, "releases the ring while an MMA that reads it may still run", r.op,
                      "the MMA");
      // Its barriers are invalidated: a later tile.ring_alloc of the same ring
      // (the loop around the ring's loop) starts from fresh ones.
      auto ofRing = [&](Key k) { return k.first == ring; };
      auto firstKey = [](const auto &kv) { return kv.first; };
      for (Counts *c : {&fills, &waits, &lastCopyFill})
        eraseIf(*c, ofRing, firstKey);
      for (Counts &c : known)
        eraseIf(c, ofRing, firstKey);
      eraseIf(copied, ofRing, [](const auto &kv) { return kv.first.first; });
      eraseIf(lastIssue, ofRing, firstKey);
      eraseIf(lastCopy, ofRing, firstKey);
      return Step::Done;
    }
    case Event::Arrive:
      if (e.pred)
        complete(keyOf(e.barriers, e.index), consumedBy(t));
      return Step::Done;
    case Event::BarrierWait: {
      Key b = keyOf(e.barriers, e.index);
      int64_t c = completed[b];
      if ((c & 1) == e.parity)
        return Step::Blocked; // the current phase has the waited parity
      if (c > 0) {
        // Observes phase c - 1 (and so every earlier one): its counts, and
        // the tcgen05 MMAs whose commits completed it are done.
        for (auto &[k, n] : snapshots[b][c - 1])
          known[t][k] = std::max(known[t][k], n);
        llvm::erase_if(readers,
                       [&](const Reader &r) { return r.barrier == b.first && r.phase <= c - 1; });
      }
      return Step::Done;
    }
    }
    return Step::Done;
  }

  /// At the kernel's end: every copy issued has been waited for.
  Step finish() {
    for (auto &[k, op] : lastCopy)
      if (waits[k] <= lastCopyFill[k])
        return fail(op, "the kernel can end before this copy into slot " + Twine(k.second) +
                            " is waited for");
    return Step::Done;
  }

  Step fail(Operation *op, const Twine &message, Operation *noteOp = nullptr,
            const Twine &note = "") {
    error = Error{op, message.str(), noteOp, note.str()};
    return Step::Failed;
  }

private:
  struct Reader {
    Operation *op;
    Key a, b;
    void *barrier; ///< tcgen05: the barrier array its commit arrives on
    int64_t phase; ///< tcgen05: the phase its commit completes
  };

  /// The fills of each slot thread `t` knows consumed: its own (waits, less
  /// the slots an in-flight MMA reads) and those it learnt.
  Counts consumedBy(unsigned t) {
    Counts c = known[t];
    for (auto &[k, n] : waits) {
      int64_t done = n;
      for (const Reader &r : readers)
        if (r.a == k || r.b == k)
          done = std::min(done, n - 1);
      if (t == 0) // the consumer (or the only thread) waits for the slots
        c[k] = std::max(c[k], done);
    }
    return c;
  }

  void complete(Key barrier, Counts counts) {
    snapshots[barrier].push_back(std::move(counts));
    ++completed[barrier];
  }

  Step issue(const Event &e, unsigned t) {
    auto ring = llvm::cast<RingType>(e.ring.getType());
    RankedTensorType block = ring.getBlockType();
    if (e.slot < 0 || e.slot >= int64_t(ring.getStages()))
      return fail(e.op, "issues into slot " + Twine(e.slot) + " of a ring of " +
                            Twine(ring.getStages()) + " slots");
    Key k = keyOf(e.ring, e.slot);
    int64_t free = consumedBy(t).lookup(k);
    if (free < fills[k]) {
      for (const Reader &r : readers)
        if (r.a == k || r.b == k)
          return fail(e.op,
                      "refills slot " + Twine(e.slot) + " while an MMA that reads it may still run",
                      r.op, "the MMA");
      if (known.size() == 1 || waits[k] < fills[k])
        return fail(e.op,
                    "refills slot " + Twine(e.slot) + " before fill " + Twine(fills[k] - 1) +
                        " was waited for",
                    lastIssue[k], "the previous fill");
      return fail(e.op, "refills slot " + Twine(e.slot) +
                            " before any wait of this thread observes its release (fill " +
                            Twine(fills[k] - 1) + " consumed)");
    }
    if (e.pred) {
      lastCopy[k] = e.op;
      lastCopyFill[k] = fills[k];
    }
    // The bytes the fill's barrier expects: the box, or min(count, slot)
    // elements of a bulk copy (none where the predicate is off).
    int64_t numel = block.getNumElements();
    copied[{k, fills[k]}] = !e.pred ? 0 : e.count >= 0 ? std::min(e.count, numel) : numel;
    lastIssue[k] = e.op;
    ++fills[k];
    return Step::Done;
  }

  Counts fills, waits, completed, lastCopyFill;
  /// The elements each fill (slot, fill number) copied.
  llvm::DenseMap<std::pair<Key, int64_t>, int64_t> copied;
  llvm::DenseMap<Key, Operation *> lastIssue, lastCopy;
  llvm::DenseMap<Key, std::vector<Counts>> snapshots;
  std::vector<Counts> known;
  std::vector<Reader> readers;
};

/// Runs the threads' traces against one model: the producer (the last
/// thread) whenever it can go on, the consumer when it blocks.
std::optional<Model::Error> simulate(ArrayRef<Trace> threads) {
  Model model(threads.size());
  std::vector<size_t> pc(threads.size(), 0);
  while (true) {
    bool progress = false, all = true;
    for (unsigned t = threads.size(); t-- > 0;) {
      const std::vector<Event> &events = threads[t].events;
      while (pc[t] < events.size()) {
        Model::Step step = model.apply(events[pc[t]], t);
        if (step == Model::Step::Failed)
          return model.error;
        if (step == Model::Step::Blocked)
          break;
        ++pc[t];
        progress = true;
      }
      all &= pc[t] == events.size();
    }
    if (all)
      break;
    if (!progress) {
      for (unsigned t = 0; t < threads.size(); ++t)
        if (pc[t] < threads[t].events.size()) {
          const Event &e = threads[t].events[pc[t]];
          model.fail(e.op, "waits forever: no thread completes the phase it waits for"
                           " (a missing arrive or issue, or a wrong parity)");
          return model.error;
        }
    }
  }
  if (model.finish() == Model::Step::Failed)
    return model.error;
  return std::nullopt;
}

struct TileVerifyAsync : public kiln::tile::impl::TileVerifyAsyncBase<TileVerifyAsync> {
  using TileVerifyAsyncBase::TileVerifyAsyncBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    bool async = false;
    func.walk([&](Operation *op) {
      if (isa<RingIssueOp, MBarrierWaitOp, MBarrierArriveOp, Tcgen05DotOp>(op))
        async = true;
    });
    if (!async)
      return;
    // The kernel's threads: the function body, or the two regions of its
    // tile.warp_specialize (run after what comes before it).
    WarpSpecializeOp ws;
    func.walk([&](WarpSpecializeOp op) { ws = op; });
    bool checked = false;
    for (int64_t sample : {0, 1, 3, 17, 257, 1100}) {
      llvm::DenseMap<Value, int64_t> args;
      for (BlockArgument arg : func.getArguments()) {
        if (!arg.getType().isIntOrIndex())
          continue;
        // A multiple of the divisibility the argument promises.
        int64_t d = 1;
        if (auto attr = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "tile.divisibility"))
          d = std::max<int64_t>(1, attr.getInt());
        args[arg] = arg.getType().isInteger(1) ? 1 : (sample + d - 1) / d * d;
      }
      SmallVector<Trace> threads;
      if (!ws) {
        threads.push_back(Tracer(args).run(func.getBody()));
      } else {
        if (ws->getParentOp() != func.getOperation()) {
          ++numUnchecked;
          return;
        }
        for (Region *r : {&ws.getConsumer(), &ws.getProducer()})
          threads.push_back(Tracer(args).runSpecialized(func.getBody().front(), ws, *r));
      }
      if (auto it = llvm::find_if(threads, [](const Trace &t) { return t.unknown.has_value(); });
          it != threads.end()) {
        ++numUnchecked;
        if (reportUnchecked)
          func.emitRemark() << "async protocol not checked with the kernel's integer arguments = "
                            << sample << ": " << *it->unknown;
        continue;
      }
      checked = true;
      if (std::optional<Model::Error> err = simulate(threads)) {
        InFlightDiagnostic diag = err->op->emitError()
                                  << "async protocol: " << err->message
                                  << " (with the kernel's integer arguments = " << sample << ")";
        if (err->noteOp)
          diag.attachNote(err->noteOp->getLoc()) << err->note;
        return signalPassFailure();
      }
    }
    if (checked)
      ++numChecked;
  }
};

} // namespace
