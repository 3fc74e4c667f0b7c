//===- IREmitter.h - kiln._C: the tile-dialect emitter ----------*- C++ -*-===//
//
// The builder the Python frontend (kiln.compiler.semantic, its only caller)
// drives to emit tile-dialect kernels: mlir::OpBuilder with a current source
// location, one method per construct. The frontend owns type checking and
// user-facing errors; the checks here only keep malformed requests from
// reaching MLIR builders that would assert, and report them as ValueError.
// IRBuilder.cpp binds it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PYTHON_IREMITTER_H
#define KILN_PYTHON_IREMITTER_H

#include "IRBuilder.h"

#include "kiln/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::python {

using mlir::Block;
using mlir::Location;
using mlir::MLIRContext;
using mlir::OpBuilder;
using mlir::Operation;
using mlir::Type;
using mlir::UnknownLoc;
using mlir::Value;
namespace arith = mlir::arith;
namespace func = mlir::func;
namespace scf = mlir::scf;

/// The IR of a type or a value as text (for messages and __str__).
std::string toString(Type type);
std::string toString(Value value);

/// Emits tile-dialect IR at its insertion point, each op at the current
/// location (`setLoc`, the user's line).
class Builder {
public:
  explicit Builder(std::shared_ptr<Context> context)
      : context(std::move(context)), builder(&this->context->get()),
        loc(UnknownLoc::get(&this->context->get())) {}

  MLIRContext *ctx() { return &context->get(); }

  // --- locations ---------------------------------------------------------
  void setLoc(const std::string &file, unsigned line, unsigned col);
  void setUnknownLoc() { loc = UnknownLoc::get(ctx()); }
  std::string getLoc();

  // --- types -------------------------------------------------------------
  Type intType(unsigned width);
  Type floatType(const std::string &name);
  Type ptrType(Type pointee);
  Type tensorDescType(Type block, unsigned swizzle);
  Type tensorType(const std::vector<int64_t> &shape, Type element);

  // --- module and kernel -------------------------------------------------
  std::shared_ptr<Module> createModule();

  std::vector<Value> createKernel(Module &module, const std::string &name,
                                  const std::vector<Type> &argTypes,
                                  const std::vector<int64_t> &divisibility, int numWarps,
                                  const std::vector<int32_t> &cluster, int maxnreg);

  void ret() { func::ReturnOp::create(builder, loc); }

  // --- constants ---------------------------------------------------------
  Value intConstant(Type type, int64_t value);

  Value floatConstant(Type type, double value);

  // --- tile ops ----------------------------------------------------------
  static tile::ProgramAxis axisOf(int axis);
  Value programId(int axis);
  Value numPrograms(int axis);
  Value makeRange(int32_t start, int32_t end);
  Value splat(Value src, const std::vector<int64_t> &shape);
  Value expandDims(Value src, int axis);
  Value broadcast(Value src, const std::vector<int64_t> &shape);
  /// Result dimension k is source dimension order[k].
  Value trans(Value src, const std::vector<int64_t> &order);
  /// The same elements in row-major order, in another shape.
  Value reshape(Value src, const std::vector<int64_t> &shape);
  /// result[..., 0] = lhs, result[..., 1] = rhs.
  Value join(Value lhs, Value rhs);
  /// (src[..., 0], src[..., 1]).
  std::pair<Value, Value> split(Value src);
  Value addptr(Value ptr, Value offset);
  /// A scalar pointer of type `ptrType` at the i64 `address`, aligned to
  /// `divisibility` bytes.
  Value intToPtr(Value address, Type ptrType, int64_t divisibility);
  /// `sem`/`scope` ("" for a plain access) make the access ordered; `cache`
  /// ("ca", "cg", ...) and `evict` ("evict_first", ...) are cache hints ("" for
  /// none); `pollNs` (0 for none) polls each element until it is non-zero. The
  /// op's verifier checks which combinations are valid.
  Value load(Value ptr, std::optional<Value> mask, std::optional<Value> other,
             const std::string &sem, const std::string &scopeName, const std::string &cache,
             const std::string &evict, int64_t pollNs);
  void store(Value ptr, Value value, std::optional<Value> mask, const std::string &sem,
             const std::string &scopeName, const std::string &cache, const std::string &evict);
  template <typename OpTy>
  void setOrdering(OpTy op, const std::string &sem, const std::string &scopeName);
  template <typename OpTy>
  void setCacheHints(OpTy op, const std::string &cache, const std::string &evict);
  void fence(const std::string &sem, const std::string &scopeName);
  void fenceProxyAsync(const std::string &spaceName);

  /// The kernel being built: the function around the insertion point.
  func::FuncOp getKernel(const std::string &what);

  /// Marks the kernel being built with tile.min_programs_per_sm.
  void setMinProgramsPerSM(int32_t programs);

  /// Marks the kernel being built with tile.pdl.
  void markPdl(const std::string &what);

  /// tile.bulk_load of a `size`-element tile from the scalar pointer `ptr`,
  /// copying only `count` (i32) elements when given.
  Value bulkLoad(Value ptr, int64_t size, std::optional<Value> count);

  Value descLoad(Value desc, const std::vector<Value> &indices);
  void descStore(Value desc, const std::vector<Value> &indices, Value value);

  // --- arith / math ------------------------------------------------------
  /// Marks a float op "afn" (approximate functions): transcendentals become the GPU's
  /// approximate hardware paths, division a reciprocal approximation.
  static Value approximate(Value v, bool approx);

  /// Adds `flags` to the fast-math flags of the float op defining `v`.
  static void addFastMath(Value v, arith::FastMathFlags flags);

  /// With fp contraction on (the kernel's `fp_fusion`), a float add, sub or mul
  /// may fuse with its neighbours into an fma (one rounding instead of two).
  Value contractible(Value v);
  void setFPContract(bool on) { fpContract = on; }

  Value binary(const std::string &name, Value lhs, Value rhs, bool approx);

  Value binaryImpl(const std::string &name, Value lhs, Value rhs);

  Value unary(const std::string &name, Value x, bool approx);

  Value unaryImpl(const std::string &name, Value x);

  Value fma(Value a, Value b, Value c);

  /// tile.dot: acc + a @ b (the semantic layer checked the shapes and types;
  /// the op's verifier checks them again), with maxNumImpreciseAcc when given.
  Value dot(Value a, Value b, Value acc, std::optional<int64_t> maxNumImpreciseAcc);

  Value select(Value cond, Value a, Value b);

  Value cmpi(const std::string &pred, Value lhs, Value rhs);

  Value cmpf(const std::string &pred, Value lhs, Value rhs);

  Value cast(const std::string &kind, Value x, Type to);

  // --- atomics -----------------------------------------------------------
  static tile::MemSemantic semantic(const std::string &sem);
  static tile::MemScope scope(const std::string &scope);

  Value atomicRMW(const std::string &kind, const std::string &sem, const std::string &scopeName,
                  Value ptr, Value val, std::optional<Value> mask);

  Value atomicCAS(const std::string &sem, const std::string &scopeName, Value ptr, Value cmp,
                  Value val);

  // --- programmatic dependent launch --------------------------------------
  /// The griddepcontrol ops; the kernel that holds them is launched with PDL
  /// (tile.pdl).
  void pdlWait();
  void pdlLaunchDependents();

  // --- thread-block clusters ----------------------------------------------
  Value clusterId(int axis);
  Value numClusters(int axis);
  Value clusterCtaId(int axis);
  Value clusterCtaRank();
  Value clusterSize() { return tile::ClusterSizeOp::create(builder, loc, builder.getI32Type()); }
  void barrier() { tile::BarrierOp::create(builder, loc); }
  void clusterBarrier() { tile::ClusterBarrierOp::create(builder, loc); }
  Value clusterLoad(Value src, Value rank);
  /// tile.cluster_gather of `src` over a cluster of `size` blocks: [size, src shape...].
  Value clusterGather(Value src, int64_t size);

  /// tile.cluster_sum of the tiles `srcs` (one op, one exchange): their sums.
  std::vector<Value> clusterSum(const std::vector<Value> &srcs);

  // --- reductions --------------------------------------------------------
  /// tile.reduce of `src` along `axis` whose combine region applies the binary
  /// op `combine` (a name accepted by `binary`).
  Value reduce(Value src, int axis, const std::string &combine);

  /// tile.reduce of the tiles `srcs` (one shape) together along `axis`. `combine`
  /// is a Python callable that, with the insertion point in the combine region,
  /// takes the list of its 2N arguments (the N accumulated values, then the N
  /// new ones) and returns the N combined values (the frontend inlines a
  /// @kiln.jit function there). Returns the N results.
  std::vector<Value> reduceCombine(std::vector<Value> srcs, int axis,
                                   const pybind11::object &combine);

  /// tile.scan of `src` along `axis`. `combine` is the name of a binary op
  /// (as for `reduce`) or a Python callable that, with the insertion point in
  /// the combine region, takes its two arguments and returns the combined
  /// value (the frontend inlines a @kiln.jit function there).
  Value scan(Value src, int axis, const pybind11::object &combine);

  // --- structured control flow ---------------------------------------------
  /// scf.for from `lower` to `upper` by `step` (same integer type) carrying
  /// `inits`; the insertion point moves into the body. Returns the op.
  Operation *forBegin(Value lower, Value upper, Value step, std::vector<Value> inits);
  /// Marks a loop for kiln-tile-pipeline-loads.
  void forSetNumStages(Operation *op, int64_t stages);
  /// Marks a loop for kiln-tile-warp-specialize.
  void forSetWarpSpecialize(Operation *op);
  Value forInductionVar(Operation *op) { return llvm::cast<scf::ForOp>(op).getInductionVar(); }
  std::vector<Value> forIterArgs(Operation *op);
  /// Ends the body with `scf.yield values` and moves after the loop; returns its results.
  std::vector<Value> forEnd(Operation *op, std::vector<Value> values);

  /// scf.if on a scalar i1 with both regions, no results yet (ifEnd adds them);
  /// the insertion point moves into the then-region.
  Operation *ifBegin(Value cond);
  void ifThen(Operation *op);
  void ifElse(Operation *op);
  /// Yields `thenValues`/`elseValues` (same types) and replaces the op by one
  /// with those results; moves after it and returns the results.
  std::vector<Value> ifEnd(Operation *op, std::vector<Value> thenValues,
                           std::vector<Value> elseValues);

  /// A detached block to emit into speculatively (to learn the types a loop
  /// body produces); `discardScratch` drops it and restores the insertion point.
  void beginScratch();
  void discardScratch();

private:
  std::vector<OpBuilder::InsertPoint> scratchSaved;
  std::vector<std::unique_ptr<Block>> scratchBlocks;

  std::shared_ptr<Context> context;
  OpBuilder builder;
  Location loc;
  /// Float add/sub/mul are created contractible (see `contractible`).
  bool fpContract = false;
};

} // namespace kiln::python

#endif // KILN_PYTHON_IREMITTER_H
