//===- TileOps.cpp - tile dialect operations --------------------------------===//

#include "kiln/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <tuple>

using namespace mlir;
using namespace kiln::tile;

#include "kiln/Dialect/Tile/IR/TileEnums.cpp.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/Tile/IR/TileOps.cpp.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/Tile/IR/TileNvidiaOps.cpp.inc"

//===----------------------------------------------------------------------===//
// MakeRangeOp
//===----------------------------------------------------------------------===//

LogicalResult MakeRangeOp::verify() {
  auto type = getResult().getType();
  if (type.getRank() != 1)
    return emitOpError() << "expected a 1-D result, got rank " << type.getRank();
  int64_t start = getStart(), end = getEnd();
  if (end <= start)
    return emitOpError() << "expected end > start, got start = " << start << ", end = " << end;
  if (end - start != type.getDimSize(0))
    return emitOpError() << "expected end - start (" << end - start
                         << ") to equal the result size (" << type.getDimSize(0) << ")";
  if (!llvm::isPowerOf2_64(end - start))
    return emitOpError() << "expected a power-of-two size, got " << end - start;
  return success();
}

//===----------------------------------------------------------------------===//
// IotaOp
//===----------------------------------------------------------------------===//

LogicalResult IotaOp::verify() {
  auto type = getResult().getType();
  if (type.getRank() == 0)
    return emitOpError() << "expected a result of rank >= 1, got " << type;
  int64_t dim = getDimAttr().getInt(); // signed: getDim() is unsigned
  if (dim < 0 || dim >= type.getRank())
    return emitOpError() << "expected dim in [0, " << type.getRank() << "), got " << dim;
  for (auto [i, size] : llvm::enumerate(type.getShape()))
    if (ShapedType::isDynamic(size) || size < 1 || !llvm::isPowerOf2_64(size))
      return emitOpError() << "expected power-of-two dimensions, got " << type;
  int64_t last = int64_t(getStartAttr().getInt()) + type.getDimSize(dim) - 1;
  if (last > std::numeric_limits<int32_t>::max())
    return emitOpError() << "expected start + size - 1 to fit in i32, got " << last;
  return success();
}

OpFoldResult IotaOp::fold(FoldAdaptor) {
  auto type = getResult().getType();
  int64_t dim = getDimAttr().getInt();
  if (dim < 0 || dim >= type.getRank() || type.getDimSize(dim) != 1)
    return {};
  return SplatElementsAttr::get(type, getStartAttr());
}

//===----------------------------------------------------------------------===//
// SplatOp
//===----------------------------------------------------------------------===//

OpFoldResult SplatOp::fold(FoldAdaptor adaptor) {
  Attribute value = adaptor.getSrc();
  if (!value || !llvm::isa<IntegerAttr, FloatAttr>(value))
    return {};
  return SplatElementsAttr::get(getType(), value);
}

//===----------------------------------------------------------------------===//
// ExpandDimsOp
//===----------------------------------------------------------------------===//

LogicalResult ExpandDimsOp::verify() {
  auto srcType = llvm::cast<RankedTensorType>(getSrc().getType());
  auto resultType = llvm::cast<RankedTensorType>(getResult().getType());
  int64_t axis = getAxisAttr().getInt(); // signed: getAxis() is unsigned
  if (axis < 0 || axis > srcType.getRank())
    return emitOpError() << "expected axis in [0, " << srcType.getRank() << "], got " << axis;
  SmallVector<int64_t> expected(srcType.getShape());
  expected.insert(expected.begin() + axis, 1);
  if (resultType.getShape() != ArrayRef<int64_t>(expected) ||
      resultType.getElementType() != srcType.getElementType())
    return emitOpError() << "expected result type "
                         << RankedTensorType::get(expected, srcType.getElementType()) << ", got "
                         << resultType;
  return success();
}

namespace {
/// A shape op of a splat is a splat of the result's shape: expand_dims,
/// broadcast, trans and reshape.
template <typename ShapeOp>
struct ShapeOfSplat : OpRewritePattern<ShapeOp> {
  using OpRewritePattern<ShapeOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ShapeOp op, PatternRewriter &rewriter) const override {
    auto splat = op.getSrc().template getDefiningOp<SplatOp>();
    if (!splat)
      return rewriter.notifyMatchFailure(op, "source is not a splat");
    rewriter.replaceOpWithNewOp<SplatOp>(op, op.getType(), splat.getSrc());
    return success();
  }
};
} // namespace

void ExpandDimsOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<ShapeOfSplat<ExpandDimsOp>>(context);
}

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  auto srcType = llvm::cast<RankedTensorType>(getSrc().getType());
  auto resultType = llvm::cast<RankedTensorType>(getResult().getType());
  if (srcType.getElementType() != resultType.getElementType())
    return emitOpError() << "expected the element type to be kept, got " << srcType.getElementType()
                         << " -> " << resultType.getElementType();
  if (srcType.getRank() != resultType.getRank())
    return emitOpError() << "expected equal ranks, got " << srcType.getRank() << " -> "
                         << resultType.getRank();
  for (auto [i, src, dst] : llvm::enumerate(srcType.getShape(), resultType.getShape()))
    if (src != 1 && src != dst)
      return emitOpError() << "dimension " << i << " of size " << src << " cannot be broadcast to "
                           << dst;
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  if (auto splat = llvm::dyn_cast_if_present<SplatElementsAttr>(adaptor.getSrc()))
    return splat.resizeSplat(getType());
  return {};
}

namespace {

/// broadcast(broadcast(x)) -> broadcast(x).
struct BroadcastBroadcast : OpRewritePattern<BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getSrc().getDefiningOp<BroadcastOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "source is not a broadcast");
    rewriter.replaceOpWithNewOp<BroadcastOp>(op, op.getType(), inner.getSrc());
    return success();
  }
};
} // namespace

void BroadcastOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<ShapeOfSplat<BroadcastOp>, BroadcastBroadcast>(context);
}

//===----------------------------------------------------------------------===//
// TransOp
//===----------------------------------------------------------------------===//

/// The shape of `src` with its dimensions in `order` (result dim k = src dim order[k]).
static RankedTensorType getTransposedType(RankedTensorType src, ArrayRef<int64_t> order) {
  SmallVector<int64_t> shape;
  for (int64_t d : order)
    shape.push_back(src.getDimSize(d));
  return src.clone(shape);
}

void TransOp::build(OpBuilder &builder, OperationState &state, Value src, ArrayRef<int64_t> order) {
  auto type = llvm::cast<RankedTensorType>(src.getType());
  build(builder, state, getTransposedType(type, order), src, builder.getDenseI64ArrayAttr(order));
}

LogicalResult TransOp::verify() {
  auto srcType = llvm::cast<RankedTensorType>(getSrc().getType());
  auto resultType = llvm::cast<RankedTensorType>(getResult().getType());
  int64_t rank = srcType.getRank();
  ArrayRef<int64_t> order = getOrder();
  if (rank < 2)
    return emitOpError() << "expected a tile of rank >= 2, got " << srcType;
  if (static_cast<int64_t>(order.size()) != rank)
    return emitOpError() << "expected an order of " << rank << " dimensions (the rank), got "
                         << order.size();
  SmallVector<bool> seen(rank, false);
  for (int64_t d : order) {
    if (d < 0 || d >= rank)
      return emitOpError() << "expected order entries in [0, " << rank << "), got " << d;
    if (seen[d])
      return emitOpError() << "expected a permutation, got dimension " << d << " twice";
    seen[d] = true;
  }
  RankedTensorType expected = getTransposedType(srcType, order);
  if (resultType != expected)
    return emitOpError() << "expected result type " << expected << ", got " << resultType;
  return success();
}

static bool isIdentityOrder(ArrayRef<int64_t> order) {
  for (auto [k, d] : llvm::enumerate(order))
    if (d != static_cast<int64_t>(k))
      return false;
  return true;
}

OpFoldResult TransOp::fold(FoldAdaptor adaptor) {
  if (isIdentityOrder(getOrder()))
    return getSrc();
  if (auto splat = llvm::dyn_cast_if_present<SplatElementsAttr>(adaptor.getSrc()))
    return splat.resizeSplat(getType());
  // trans(trans(x)): result dim k is the inner result's dim order[k], which is
  // x's dim innerOrder[order[k]].
  if (auto inner = getSrc().getDefiningOp<TransOp>()) {
    ArrayRef<int64_t> innerOrder = inner.getOrder();
    SmallVector<int64_t> composed;
    for (int64_t d : getOrder())
      composed.push_back(innerOrder[d]);
    if (isIdentityOrder(composed))
      return inner.getSrc();
    setOrder(composed);
    getSrcMutable().assign(inner.getSrc());
    return getResult();
  }
  return {};
}

void TransOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<ShapeOfSplat<TransOp>>(context);
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto srcType = llvm::cast<RankedTensorType>(getSrc().getType());
  auto resultType = llvm::cast<RankedTensorType>(getResult().getType());
  if (srcType.getElementType() != resultType.getElementType())
    return emitOpError() << "expected the element type to be kept, got " << srcType.getElementType()
                         << " -> " << resultType.getElementType();
  if (srcType.getNumElements() != resultType.getNumElements())
    return emitOpError() << "expected " << srcType.getNumElements()
                         << " elements (as the source), got " << resultType.getNumElements();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  if (auto splat = llvm::dyn_cast_if_present<SplatElementsAttr>(adaptor.getSrc()))
    return splat.resizeSplat(getType());
  // reshape(reshape(x)) -> reshape(x) (x itself where the types match).
  if (auto inner = getSrc().getDefiningOp<ReshapeOp>()) {
    if (inner.getSrc().getType() == getType())
      return inner.getSrc();
    getSrcMutable().assign(inner.getSrc());
    return getResult();
  }
  return {};
}

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<ShapeOfSplat<ReshapeOp>>(context);
}

//===----------------------------------------------------------------------===//
// JoinOp / SplitOp
//===----------------------------------------------------------------------===//

/// `type` with a trailing dimension of 2.
static RankedTensorType getJoinedType(RankedTensorType type) {
  SmallVector<int64_t> shape(type.getShape());
  shape.push_back(2);
  return type.clone(shape);
}

void JoinOp::build(OpBuilder &builder, OperationState &state, Value lhs, Value rhs) {
  build(builder, state, getJoinedType(llvm::cast<RankedTensorType>(lhs.getType())), lhs, rhs);
}

LogicalResult JoinOp::verify() {
  auto expected = getJoinedType(llvm::cast<RankedTensorType>(getLhs().getType()));
  if (getType() != expected)
    return emitOpError() << "expected result type " << expected << ", got " << getType();
  return success();
}

OpFoldResult JoinOp::fold(FoldAdaptor) {
  // join(split(x)) -> x.
  auto split = getLhs().getDefiningOp<SplitOp>();
  if (split && getLhs() == split.getLhs() && getRhs() == split.getRhs())
    return split.getSrc();
  return {};
}

void SplitOp::build(OpBuilder &builder, OperationState &state, Value src) {
  auto type = llvm::cast<RankedTensorType>(src.getType());
  auto half = type.clone(type.getShape().drop_back());
  build(builder, state, half, half, src);
}

LogicalResult SplitOp::verify() {
  auto srcType = llvm::cast<RankedTensorType>(getSrc().getType());
  if (srcType.getRank() < 2 || srcType.getShape().back() != 2)
    return emitOpError() << "expected a tile of rank >= 2 whose last dimension is 2, got "
                         << srcType;
  auto expected = srcType.clone(srcType.getShape().drop_back());
  if (getLhs().getType() != expected)
    return emitOpError() << "expected result type " << expected << ", got " << getLhs().getType();
  return success();
}

LogicalResult SplitOp::fold(FoldAdaptor, SmallVectorImpl<OpFoldResult> &results) {
  // split(join(a, b)) -> a, b.
  auto join = getSrc().getDefiningOp<JoinOp>();
  if (!join)
    return failure();
  results.push_back(join.getLhs());
  results.push_back(join.getRhs());
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

/// The type of reducing `src` along `axis` (a scalar for 1-D tiles).
static Type getReducedType(RankedTensorType src, int64_t axis) {
  if (src.getRank() == 1)
    return src.getElementType();
  SmallVector<int64_t> shape(src.getShape());
  shape.erase(shape.begin() + axis);
  // An encoded tile reduces into the slice of its encoding along the axis.
  Attribute encoding = src.getEncoding();
  if (encoding)
    encoding = SliceEncodingAttr::get(src.getContext(), axis, encoding);
  return RankedTensorType::get(shape, src.getElementType(), encoding);
}

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                         ValueRange operands, DictionaryAttr attributes,
                                         OpaqueProperties properties, RegionRange regions,
                                         SmallVectorImpl<Type> &inferredReturnTypes) {
  ReduceOp::Adaptor adaptor(operands, attributes, properties, regions);
  int64_t axis = adaptor.getAxis();
  // One result per source (none without sources: the verifier reports it).
  for (Value operand : adaptor.getSrcs()) {
    auto src = llvm::dyn_cast<RankedTensorType>(operand.getType());
    if (!src || axis < 0 || axis >= src.getRank())
      return failure();
    inferredReturnTypes.push_back(adaptor.getBroadcast() ? Type(src) : getReducedType(src, axis));
  }
  return success();
}

/// Reductions and scans: `axis` (read signed: the attribute is a signless i32
/// and getAxis() would report -1 as 4294967295) names a dimension of a tile
/// that does not hold pointers.
static LogicalResult verifyAxisOp(Operation *op, Value src, IntegerAttr axisAttr, StringRef verb) {
  auto tile = llvm::cast<RankedTensorType>(src.getType());
  int64_t axis = axisAttr.getInt();
  if (axis < 0 || axis >= tile.getRank())
    return op->emitOpError() << "expected axis in [0, " << tile.getRank() << "), got " << axis;
  if (llvm::isa<PtrType>(tile.getElementType()))
    return op->emitOpError() << "cannot " << verb << " a tile of pointers";
  return success();
}

/// The combine region takes two elements of `src` and returns one
/// (`ReturnOpTy`: tile.reduce.return or tile.scan.return).
template <typename ReturnOpTy>
static LogicalResult verifyCombineRegion(Operation *op, Value src, Region &combine) {
  Type element = llvm::cast<RankedTensorType>(src.getType()).getElementType();
  Block &block = combine.front();
  if (block.getNumArguments() != 2 || block.getArgument(0).getType() != element ||
      block.getArgument(1).getType() != element)
    return op->emitOpError() << "expected the combine region to take two " << element
                             << " arguments";
  auto ret = llvm::dyn_cast<ReturnOpTy>(block.getTerminator());
  if (!ret || ret->getNumOperands() != 1 || ret->getOperand(0).getType() != element)
    return op->emitOpError() << "expected the combine region to return one " << element;
  return success();
}

LogicalResult ReduceOp::verify() {
  if (getSrcs().empty())
    return emitOpError() << "expected at least one source tile";
  auto first = llvm::cast<RankedTensorType>(getSrc().getType());
  for (auto [i, src] : llvm::enumerate(getSrcs())) {
    auto type = llvm::cast<RankedTensorType>(src.getType());
    if (type.getShape() != first.getShape())
      return emitOpError() << "expected every source to have the shape of source #0 (" << first
                           << "), got " << type << " for source #" << i;
    if (failed(verifyAxisOp(*this, src, getAxisAttr(), "reduce")))
      return failure();
  }
  if (getBroadcast() && getSrcs().size() != 1)
    return emitOpError() << "expected one source with `broadcast`, got " << getSrcs().size();
  // The one reduction of an encoded tile: the rows of a wgmma or mma.sync
  // accumulator, into its slice.
  if (Attribute encoding = first.getEncoding()) {
    auto mma = llvm::dyn_cast<MmaEncodingAttr>(encoding);
    bool rows = mma && (mma.getVersion() == 3 || mma.getVersion() == 2);
    if (!rows || first.getRank() != 2 || getAxisAttr().getInt() != 1)
      return emitOpError() << "expected a tile in the blocked layout, or a 2-D tile in the "
                              "#tile.mma encoding of version 2 or 3 reduced along axis 1, got "
                           << first << " along axis " << getAxisAttr().getInt();
  }
  return success();
}

LogicalResult ReduceOp::verifyRegions() {
  if (getSrcs().size() == 1)
    return verifyCombineRegion<ReduceReturnOp>(*this, getSrc(), getCombine());
  // N sources: (acc_0, ..., acc_{N-1}, new_0, ..., new_{N-1}) -> N values.
  SmallVector<Type> elements;
  for (Value src : getSrcs())
    elements.push_back(llvm::cast<RankedTensorType>(src.getType()).getElementType());
  auto describe = [](InFlightDiagnostic &diag, TypeRange types) -> InFlightDiagnostic & {
    diag << "(";
    llvm::interleaveComma(types, diag);
    return diag << ")";
  };
  size_t n = elements.size();
  Block &block = getCombine().front();
  bool argumentsMatch = block.getNumArguments() == 2 * n;
  for (size_t i = 0; argumentsMatch && i < 2 * n; ++i)
    argumentsMatch = block.getArgument(i).getType() == elements[i % n];
  if (!argumentsMatch) {
    InFlightDiagnostic diag = emitOpError() << "expected the combine region to take " << 2 * n
                                            << " arguments, twice ";
    describe(diag, elements) << ", got ";
    return describe(diag, block.getArgumentTypes());
  }
  auto ret = llvm::dyn_cast<ReduceReturnOp>(block.getTerminator());
  if (!ret || TypeRange(ret.getResult()) != TypeRange(elements)) {
    InFlightDiagnostic diag = emitOpError()
                              << "expected the combine region to return " << n << " values ";
    describe(diag, elements) << ", got ";
    return describe(diag, ret ? TypeRange(ret.getResult()) : TypeRange());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ScanOp
//===----------------------------------------------------------------------===//

LogicalResult ScanOp::verify() { return verifyAxisOp(*this, getSrc(), getAxisAttr(), "scan"); }

LogicalResult ScanOp::verifyRegions() {
  return verifyCombineRegion<ScanReturnOp>(*this, getSrc(), getCombine());
}

//===----------------------------------------------------------------------===//
// AddPtrOp
//===----------------------------------------------------------------------===//

LogicalResult AddPtrOp::verify() {
  auto ptrTensor = llvm::dyn_cast<RankedTensorType>(getPtr().getType());
  auto offTensor = llvm::dyn_cast<RankedTensorType>(getOffset().getType());
  if (!ptrTensor != !offTensor)
    return emitOpError() << "expected pointer and offset both scalars or both tiles, got "
                         << getPtr().getType() << " and " << getOffset().getType();
  if (ptrTensor && ptrTensor.getShape() != offTensor.getShape())
    return emitOpError() << "expected the offset shape to match the pointer shape, got "
                         << offTensor << " for " << ptrTensor;
  Type offElt = mlir::getElementTypeOrSelf(getOffset().getType());
  if (!offElt.isInteger(32) && !offElt.isInteger(64))
    return emitOpError() << "expected i32 or i64 offsets, got " << offElt;
  return success();
}

OpFoldResult AddPtrOp::fold(FoldAdaptor adaptor) {
  if (matchPattern(adaptor.getOffset(), m_Zero()))
    return getPtr();
  return {};
}

//===----------------------------------------------------------------------===//
// LoadOp / StoreOp
//===----------------------------------------------------------------------===//

void LoadOp::build(OpBuilder &builder, OperationState &state, Value ptr, Value mask, Value other) {
  build(builder, state, getPointeeType(ptr.getType()), ptr, mask, other, IntegerAttr(),
        MemSemanticAttr(), MemScopeAttr(), CacheModifierAttr(), EvictionPolicyAttr(),
        IntegerAttr());
}

LogicalResult IntToPtrOp::verify() {
  int64_t divisibility = getDivisibility();
  if (divisibility <= 0 || !llvm::isPowerOf2_64(divisibility))
    return emitOpError() << "expected a power-of-two divisibility, got " << divisibility;
  return success();
}

/// An ordered access names both its semantics and its scope, has one of the
/// semantics `allowed`, and moves 16 to 64 bits per element.
static LogicalResult verifyOrdering(Operation *op, std::optional<MemSemantic> sem,
                                    std::optional<MemScope> scope, Type element,
                                    MemSemantic allowed) {
  if (sem.has_value() != scope.has_value())
    return op->emitOpError() << "expected both 'sem' and 'scope', or neither";
  if (!sem)
    return success();
  if (*sem != MemSemantic::Relaxed && *sem != allowed)
    return op->emitOpError() << "expected 'relaxed' or '" << stringifyMemSemantic(allowed)
                             << "' ordering, got '" << stringifyMemSemantic(*sem) << "'";
  unsigned bits = element.getIntOrFloatBitWidth();
  if (bits != 16 && bits != 32 && bits != 64)
    return op->emitOpError() << "expected 16-, 32- or 64-bit elements for an ordered access, got "
                             << element;
  return success();
}

/// Cache hints apply to plain (unordered) accesses, and a load or a store takes
/// only its own cache operators (`allowed`).
static LogicalResult verifyCacheHints(Operation *op, std::optional<MemSemantic> sem,
                                      std::optional<CacheModifier> cache,
                                      std::optional<EvictionPolicy> evict,
                                      ArrayRef<CacheModifier> allowed, StringRef access) {
  if (sem && (cache || evict))
    return op->emitOpError() << "expected no cache modifier or eviction policy on an ordered "
                                "access, got '"
                             << stringifyMemSemantic(*sem) << "' with '"
                             << (cache ? stringifyCacheModifier(*cache)
                                       : stringifyEvictionPolicy(*evict))
                             << "'";
  if (cache && !llvm::is_contained(allowed, *cache)) {
    InFlightDiagnostic diag = op->emitOpError() << "expected a " << access << " cache modifier (";
    llvm::interleave(
        allowed, diag, [&](CacheModifier c) { diag << "'" << stringifyCacheModifier(c) << "'"; },
        ", ");
    return diag << "), got '" << stringifyCacheModifier(*cache) << "'";
  }
  return success();
}

LogicalResult LoadOp::verify() {
  if (getOther() && !getMask())
    return emitOpError() << "'other' requires a mask";
  if (failed(verifyCacheHints(*this, getSem(), getCache(), getEvict(),
                              {CacheModifier::CA, CacheModifier::CG, CacheModifier::CV}, "load")))
    return failure();
  if (std::optional<int64_t> poll = getPollNs()) {
    if (!getSem())
      return emitOpError() << "expected an ordered load ('sem' and 'scope') to poll";
    if (*poll <= 0)
      return emitOpError() << "expected a positive 'poll_ns', got " << *poll;
  }
  return verifyOrdering(*this, getSem(), getScope(), getElementTypeOrSelf(getType()),
                        MemSemantic::Acquire);
}

LogicalResult StoreOp::verify() {
  if (failed(verifyCacheHints(
          *this, getSem(), getCache(), getEvict(),
          {CacheModifier::WB, CacheModifier::CG, CacheModifier::CS, CacheModifier::WT}, "store")))
    return failure();
  return verifyOrdering(*this, getSem(), getScope(), getElementTypeOrSelf(getValue().getType()),
                        MemSemantic::Release);
}

LogicalResult FenceOp::verify() {
  if (getSem() == MemSemantic::Relaxed)
    return emitOpError() << "expected acquire, release or acq_rel ordering (a relaxed fence "
                            "orders nothing)";
  return success();
}

//===----------------------------------------------------------------------===//
// Cluster ops
//===----------------------------------------------------------------------===//

std::optional<std::array<int64_t, 3>> kiln::tile::getClusterDims(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent; parent = parent->getParentOp()) {
    auto dims = parent->getAttrOfType<DenseI32ArrayAttr>(TileDialect::getClusterDimsAttrName());
    if (!dims)
      continue;
    if (dims.size() != 3)
      return std::nullopt; // the attribute's verifier reports it
    return std::array<int64_t, 3>{dims[0], dims[1], dims[2]};
  }
  return std::nullopt;
}

static IntegerAttr clusterI32(Operation *op, int64_t value) {
  return IntegerAttr::get(IntegerType::get(op->getContext(), 32), value);
}

OpFoldResult ClusterCtaIdOp::fold(FoldAdaptor) {
  auto dims = getClusterDims(*this);
  if (dims && (*dims)[static_cast<int>(getAxis())] == 1)
    return clusterI32(*this, 0);
  return {};
}

OpFoldResult ClusterCtaRankOp::fold(FoldAdaptor) {
  auto dims = getClusterDims(*this);
  if (dims && (*dims)[0] * (*dims)[1] * (*dims)[2] == 1)
    return clusterI32(*this, 0);
  return {};
}

OpFoldResult ClusterSizeOp::fold(FoldAdaptor) {
  if (auto dims = getClusterDims(*this))
    return clusterI32(*this, (*dims)[0] * (*dims)[1] * (*dims)[2]);
  return {};
}

LogicalResult ClusterLoadOp::verify() {
  APInt rank;
  auto dims = getClusterDims(*this);
  if (!dims || !matchPattern(getRank(), m_ConstantInt(&rank)))
    return success();
  int64_t size = (*dims)[0] * (*dims)[1] * (*dims)[2];
  if (rank.getSExtValue() < 0 || rank.getSExtValue() >= size)
    return emitOpError() << "expected a rank in [0, " << size << ") (the kernel's cluster of "
                         << (*dims)[0] << "x" << (*dims)[1] << "x" << (*dims)[2] << "), got "
                         << rank.getSExtValue();
  return success();
}

LogicalResult ClusterGatherOp::verify() {
  auto srcType = llvm::cast<RankedTensorType>(getSrc().getType());
  auto resultType = llvm::cast<RankedTensorType>(getResult().getType());
  auto dims = getClusterDims(*this);
  int64_t size = dims ? (*dims)[0] * (*dims)[1] * (*dims)[2] : 1;
  if (!llvm::isPowerOf2_64(size))
    return emitOpError() << "expected a cluster of a power-of-two size, got " << (*dims)[0] << "x"
                         << (*dims)[1] << "x" << (*dims)[2] << " (" << size << " blocks)";
  SmallVector<int64_t> expected{size};
  llvm::append_range(expected, srcType.getShape());
  if (resultType.getShape() != ArrayRef<int64_t>(expected) ||
      resultType.getElementType() != srcType.getElementType())
    return emitOpError() << "expected result type "
                         << RankedTensorType::get(expected, srcType.getElementType())
                         << " (the cluster size " << size << ", then the source's shape), got "
                         << resultType;
  return success();
}

//===----------------------------------------------------------------------===//
// ClusterSumOp
//===----------------------------------------------------------------------===//

LogicalResult ClusterSumOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                             ValueRange operands, DictionaryAttr attributes,
                                             OpaqueProperties properties, RegionRange regions,
                                             SmallVectorImpl<Type> &inferredReturnTypes) {
  llvm::append_range(inferredReturnTypes, operands.getTypes());
  return success();
}

LogicalResult ClusterSumOp::verify() {
  if (getSrcs().empty())
    return emitOpError() << "expected at least one tile";
  return success();
}

//===----------------------------------------------------------------------===//
// DotOp
//===----------------------------------------------------------------------===//

/// `maxNumImpreciseAcc` (when set): FP8 operands, a power of two from 32 (the K
/// of one FP8 MMA instruction) up to the dot's K.
static LogicalResult verifyMaxNumImpreciseAcc(Operation *op, IntegerAttr attr, Type element,
                                              int64_t k) {
  if (!attr)
    return success();
  if (!llvm::isa<Float8E4M3FNType, Float8E5M2Type>(element))
    return op->emitOpError() << "expected FP8 operands with maxNumImpreciseAcc, got " << element;
  int64_t n = attr.getInt();
  if (n < 32 || !llvm::isPowerOf2_64(n))
    return op->emitOpError() << "expected maxNumImpreciseAcc to be a power of two >= 32 (the K "
                                "of one FP8 MMA), got "
                             << n;
  if (n > k)
    return op->emitOpError() << "expected maxNumImpreciseAcc <= K = " << k << ", got " << n;
  return success();
}

LogicalResult DotOp::verify() {
  auto aType = getA().getType(), bType = getB().getType();
  auto accType = getAcc().getType();
  if (aType.getRank() != 2 || bType.getRank() != 2 || accType.getRank() != 2)
    return emitOpError() << "expected 2-D a, b and acc, got " << aType << ", " << bType << " and "
                         << accType;
  if (aType.getElementType() != bType.getElementType())
    return emitOpError() << "expected a and b of one element type, got " << aType.getElementType()
                         << " and " << bType.getElementType();
  int64_t m = aType.getDimSize(0), k = aType.getDimSize(1), n = bType.getDimSize(1);
  if (aType.getElementTypeBitWidth() == 8 && k < 32)
    return emitOpError() << "expected K >= 32 for FP8 operands, got " << k;
  if (bType.getDimSize(0) != k)
    return emitOpError() << "expected b to have K = " << k << " rows (the columns of a), got "
                         << bType.getDimSize(0);
  if (accType.getShape() != ArrayRef<int64_t>{m, n})
    return emitOpError() << "expected acc of shape " << m << "x" << n << ", got " << accType;
  for (auto [name, size, least] :
       {std::tuple<StringRef, int64_t, int64_t>{"M", m, 1}, {"N", n, 8}, {"K", k, 16}})
    if (size < least || !llvm::isPowerOf2_64(size))
      return emitOpError() << "expected " << name << " to be a power of two >= " << least
                           << ", got " << size;
  return verifyMaxNumImpreciseAcc(*this, getMaxNumImpreciseAccAttr(), aType.getElementType(), k);
}

//===----------------------------------------------------------------------===//
// DescLoadOp / DescStoreOp
//===----------------------------------------------------------------------===//

/// The box coordinates match the descriptor's rank and `tile` its block type.
static LogicalResult verifyDescAccess(Operation *op, TensorDescType desc, size_t numIndices,
                                      Type tile, StringRef what) {
  if (numIndices != static_cast<size_t>(desc.getBlockType().getRank()))
    return op->emitOpError() << "expected " << desc.getBlockType().getRank()
                             << " box coordinates (the descriptor's rank), got " << numIndices;
  // The tile may carry a layout encoding; the box is its shape and element type.
  auto tensor = llvm::cast<RankedTensorType>(tile);
  if (tensor.getShape() != desc.getBlockType().getShape() ||
      tensor.getElementType() != desc.getBlockType().getElementType())
    return op->emitOpError() << "expected the " << what << " to be the descriptor's block type "
                             << desc.getBlockType() << ", got " << tile;
  return success();
}

LogicalResult DescLoadOp::verify() {
  return verifyDescAccess(*this, getDesc().getType(), getIndices().size(), getType(), "result");
}

LogicalResult DescStoreOp::verify() {
  return verifyDescAccess(*this, getDesc().getType(), getIndices().size(), getValue().getType(),
                          "stored value");
}

/// The checks of a bulk copy of at most `type`'s elements from a pointer to
/// `pointee`, `count` of them when given (the copy's byte count must be a
/// multiple of 16, which a constant count shows here).
static LogicalResult verifyBulkCopy(Operation *op, RankedTensorType type, Type pointee, Value count,
                                    StringRef what) {
  if (type.getRank() != 1)
    return op->emitOpError() << "expected a 1-D " << what << ", got " << type;
  if (type.getElementType() != pointee)
    return op->emitOpError() << "expected the " << what << "'s element type to be the pointee type "
                             << pointee << ", got " << type.getElementType();
  if (type.getElementType().isInteger(1))
    return op->emitOpError() << "expected a numeric element type, got i1 (bulk-load the bytes "
                                "as i8)";
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  int64_t bytes = type.getNumElements() * elementBytes;
  if (bytes % 16)
    return op->emitOpError() << "expected a multiple of 16 bytes, got " << bytes << " ("
                             << type.getNumElements() << " x " << type.getElementType() << ")";
  if (bytes >= BulkLoadOp::kMaxBytes)
    return op->emitOpError() << "expected fewer than " << BulkLoadOp::kMaxBytes
                             << " bytes (one mbarrier phase counts at most 2^20 - 1), got "
                             << bytes;
  APInt constant;
  if (count && matchPattern(count, m_ConstantInt(&constant))) {
    int64_t n = constant.getSExtValue();
    if (n < 0 || n > type.getNumElements())
      return op->emitOpError() << "expected a count in [0, " << type.getNumElements() << "], got "
                               << n;
    if ((n * elementBytes) % 16)
      return op->emitOpError() << "expected the count to span a multiple of 16 bytes, got " << n
                               << " x " << type.getElementType() << " (" << n * elementBytes
                               << " bytes)";
  }
  return success();
}

unsigned kiln::tile::getRingSwizzle(Value ring) {
  if (auto alloc = ring.getDefiningOp<RingAllocOp>(); alloc && alloc.getSwizzled())
    return 128;
  std::optional<unsigned> swizzle;
  for (Operation *user : ring.getUsers())
    if (auto issue = llvm::dyn_cast<RingIssueOp>(user); issue && issue.getDescType()) {
      if (swizzle && *swizzle != issue.getDescType().getSwizzle())
        return 0;
      swizzle = issue.getDescType().getSwizzle();
    }
  return swizzle.value_or(0);
}

bool kiln::tile::isTmaSwizzled128(Value ring) {
  bool any = false;
  for (Operation *user : ring.getUsers())
    if (auto issue = llvm::dyn_cast<RingIssueOp>(user)) {
      if (!issue.getDescType() || issue.getDescType().getSwizzle() != 128)
        return false;
      any = true;
    }
  return any;
}

LogicalResult RingAllocOp::verify() {
  RankedTensorType block = getType().getBlockType();
  int64_t innerBytes =
      block.getRank() < 2 ? 0 : block.getShape().back() * block.getElementTypeBitWidth() / 8;
  if (getSwizzled() && (innerBytes % 128 != 0 || !llvm::isPowerOf2_64(innerBytes)))
    return emitOpError() << "expected a `swizzled` ring's block to have rows of a power of two "
                            "128-byte spans, got "
                         << block;
  return success();
}

LogicalResult RingIssueOp::verify() {
  RingType ring = getRing().getType();
  if (getMask() && !isGather())
    return emitOpError() << "expected a mask only with a tensor of pointers";
  if (getCovered() && !isGather())
    return emitOpError() << "expected `covered` only on a gather";
  if (auto alloc = getRing().getDefiningOp<RingAllocOp>();
      alloc && alloc.getSwizzled() && !isGather())
    return emitOpError() << "expected only gathers into a `swizzled` ring";
  if (TensorDescType desc = getDescType()) {
    if (getCount())
      return emitOpError() << "expected no count with a descriptor source (the box is whole)";
    return verifyDescAccess(*this, desc, getIndices().size(), ring.getBlockType(), "ring's block");
  }
  if (!getIndices().empty())
    return emitOpError() << "expected no coordinates with a pointer source, got "
                         << getIndices().size();
  if (isGather()) {
    auto ptrs = llvm::cast<RankedTensorType>(getSrc().getType());
    RankedTensorType block = ring.getBlockType();
    if (getCount() || getProducer())
      return emitOpError() << "expected neither a count nor `producer` with a gather";
    if (ptrs.getShape() != block.getShape() ||
        getPointeeType(ptrs.getElementType()) != block.getElementType())
      return emitOpError() << "expected pointers to the ring's block " << block << ", got " << ptrs;
    if (getMask() &&
        llvm::cast<RankedTensorType>(getMask().getType()).getShape() != block.getShape())
      return emitOpError() << "expected the mask's shape to be the ring's block shape";
    return success();
  }
  return verifyBulkCopy(*this, ring.getBlockType(), getPointeeType(getSrc().getType()), getCount(),
                        "ring's block");
}

LogicalResult RingWaitLoadOp::verify() {
  // The slot may be read in another layout than the one it was filled in.
  RankedTensorType block = getRing().getType().getBlockType();
  if (getType().getShape() != block.getShape() ||
      getType().getElementType() != block.getElementType())
    return emitOpError() << "expected the result to be the ring's block type " << block
                         << " (in any layout), got " << getType();
  if (getCount() && getType().getRank() != 1)
    return emitOpError() << "expected a 1-D ring with a count, got " << getType();
  if (getCount() && getAgain())
    return emitOpError() << "expected no count with `again`";
  return success();
}

//===----------------------------------------------------------------------===//
// BulkLoadOp
//===----------------------------------------------------------------------===//

LogicalResult BulkLoadOp::verify() {
  return verifyBulkCopy(*this, getType(), getPointeeType(getPtr().getType()), getCount(), "result");
}

/// Whether `mask` is a constant whose every element is `value`.
static bool isConstantMask(Value mask, bool value) {
  if (!mask)
    return false;
  return value ? matchPattern(mask, m_One()) : matchPattern(mask, m_Zero());
}

namespace {
/// A load under an all-true mask needs neither the mask nor `other`; under an
/// all-false mask it is `other`.
struct FoldConstantLoadMask : OpRewritePattern<LoadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LoadOp op, PatternRewriter &rewriter) const override {
    if (isConstantMask(op.getMask(), true)) {
      rewriter.replaceOpWithNewOp<LoadOp>(op, op.getType(), op.getPtr(), Value(), Value(),
                                          op.getVecAttr(), op.getSemAttr(), op.getScopeAttr(),
                                          op.getCacheAttr(), op.getEvictAttr(), op.getPollNsAttr());
      return success();
    }
    if (isConstantMask(op.getMask(), false) && op.getOther()) {
      rewriter.replaceOp(op, op.getOther());
      return success();
    }
    return rewriter.notifyMatchFailure(op, "mask is not a uniform constant");
  }
};

/// A store under an all-true mask needs no mask; under an all-false mask it
/// does nothing.
struct FoldConstantStoreMask : OpRewritePattern<StoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(StoreOp op, PatternRewriter &rewriter) const override {
    if (isConstantMask(op.getMask(), true)) {
      rewriter.replaceOpWithNewOp<StoreOp>(op, op.getPtr(), op.getValue(), Value(), op.getVecAttr(),
                                           op.getSemAttr(), op.getScopeAttr(), op.getCacheAttr(),
                                           op.getEvictAttr());
      return success();
    }
    if (isConstantMask(op.getMask(), false)) {
      rewriter.eraseOp(op);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "mask is not a uniform constant");
  }
};
} // namespace

void LoadOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<FoldConstantLoadMask>(context);
}

void StoreOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<FoldConstantStoreMask>(context);
}

//===----------------------------------------------------------------------===//
// Atomics
//===----------------------------------------------------------------------===//

LogicalResult AtomicRMWOp::verify() {
  Type element = getElementTypeOrSelf(getVal().getType());
  bool isFloat = llvm::isa<FloatType>(element);
  if (getKind() == AtomicRMWKind::FAdd) {
    if (!element.isF32() && !element.isF64() && !element.isF16() && !element.isBF16())
      return emitOpError() << "expected f16, bf16, f32 or f64 for fadd, got " << element;
    return success();
  }
  if (isFloat && getKind() != AtomicRMWKind::Xchg)
    return emitOpError() << "expected an integer element for '" << stringifyAtomicRMWKind(getKind())
                         << "', got " << element << " (floats support fadd and xchg)";
  unsigned width = element.getIntOrFloatBitWidth();
  if (width != 32 && width != 64)
    return emitOpError() << "expected a 32- or 64-bit element, got " << element;
  return success();
}

LogicalResult AtomicCASOp::verify() {
  Type element = getElementTypeOrSelf(getVal().getType());
  if (!element.isInteger(32) && !element.isInteger(64))
    return emitOpError() << "expected i32 or i64 elements, got " << element;
  return success();
}

//===----------------------------------------------------------------------===//
// Layouts and warpgroup MMA
//===----------------------------------------------------------------------===//

OpFoldResult ConvertLayoutOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  if (auto splat = llvm::dyn_cast_if_present<SplatElementsAttr>(adaptor.getSrc()))
    return splat.resizeSplat(getType());
  if (auto inner = getSrc().getDefiningOp<ConvertLayoutOp>()) {
    if (inner.getSrc().getType() == getType())
      return inner.getSrc();
    getSrcMutable().assign(inner.getSrc());
    return getResult();
  }
  return {};
}

/// The matrix a box of rank 2 or more holds in shared memory: [rows, inner],
/// its rows the product of the outer dimensions.
static RankedTensorType boxMatrix(RankedTensorType box) {
  if (box.getRank() < 2)
    return {};
  int64_t rows = 1;
  for (int64_t d : box.getShape().drop_back())
    rows *= d;
  return RankedTensorType::get({rows, box.getShape().back()}, box.getElementType());
}

RankedTensorType WarpGroupDotOp::getAMatrix() {
  Type type = getA().getType();
  if (auto ring = llvm::dyn_cast<RingType>(type))
    return boxMatrix(ring.getBlockType());
  if (auto staged = llvm::dyn_cast<SmemType>(type))
    return staged.getTileType();
  return llvm::cast<RankedTensorType>(type);
}

RankedTensorType WarpGroupDotOp::getBMatrix() { return boxMatrix(getB().getType().getBlockType()); }

LogicalResult WarpGroupDotOp::verify() {
  auto accType = getAcc().getType();
  auto mma = llvm::dyn_cast_if_present<MmaEncodingAttr>(accType.getEncoding());
  if (!mma || mma.getVersion() != 3)
    return emitOpError() << "expected an accumulator with the #tile.mma encoding of version 3, "
                            "got "
                         << accType;
  bool ringA = bool(getARing());
  if (ringA != bool(getASlot()))
    return emitOpError() << "expected a slot exactly when `a` is a ring";
  auto registerType = llvm::dyn_cast<RankedTensorType>(getA().getType());
  bool registerA = bool(registerType);
  if (registerA && registerType.getEncoding() != mma)
    return emitOpError() << "expected a register `a` in the accumulator's encoding, got "
                         << registerType;
  RankedTensorType aBox = getAMatrix(), bBox = getBMatrix();
  if (!aBox || !bBox || accType.getRank() != 2)
    return emitOpError() << "expected boxes of rank 2 or more and a 2-D accumulator";
  Type element = aBox.getElementType(), bElement = bBox.getElementType();
  bool fp8 = llvm::isa<Float8E4M3FNType, Float8E5M2Type>(element) &&
             llvm::isa<Float8E4M3FNType, Float8E5M2Type>(bElement);
  if (!fp8 && (element != bElement || !(element.isBF16() || element.isF16())))
    return emitOpError() << "expected bf16 or f16 boxes of one element type, or FP8 boxes, got "
                         << element << " and " << bElement;
  if (fp8 && !ringA)
    return emitOpError() << "expected a ring slot `a` with FP8 boxes";
  bool mnMajor = getBMnMajor();
  int64_t m = aBox.getDimSize(0), k = aBox.getDimSize(1);
  int64_t n = bBox.getDimSize(mnMajor ? 1 : 0);
  if (bBox.getDimSize(mnMajor ? 0 : 1) != k || accType.getDimSize(0) != m ||
      accType.getDimSize(1) != n)
    return emitOpError() << "expected a [M, K] box, a " << (mnMajor ? "[K, N]" : "[N, K]")
                         << " box and a [M, N] accumulator, got " << aBox << ", " << bBox << " and "
                         << accType;
  // Rows of whole 128-byte swizzle spans: one box, or a wide box's chunks
  // (registers: whole k16 steps).
  if (registerA ? k % 16 != 0 : k * aBox.getElementTypeBitWidth() / 8 % 128 != 0)
    return emitOpError() << "expected K a multiple of "
                         << (registerA ? 16 : 1024 / aBox.getElementTypeBitWidth())
                         << (registerA ? " (whole k16 steps)"
                                       : " (whole 128-byte swizzle spans per row)")
                         << ", got " << k;
  if (mnMajor && fp8)
    return emitOpError() << "expected bf16 or f16 boxes with bMnMajor (wgmma transposes only "
                            "16-bit operands), got "
                         << element;
  MmaEncodingAttr encoding = getEncoding();
  unsigned warpsN = encoding.getWarpsN(), warpgroupsM = encoding.getNumWarps() / 4 / warpsN;
  if (registerA && warpsN != 1)
    return emitOpError() << "expected `a` staged or a ring slot where warpgroups split N (a "
                            "warpgroup's registers hold only its own columns), got "
                         << registerType;
  if (mnMajor && n % (64 * warpsN) != 0)
    return emitOpError() << "expected N a multiple of " << 64 * warpsN
                         << " with bMnMajor (whole 128-byte swizzle spans per row of the [K, N] "
                            "box, a warpgroup's columns each), got "
                         << n;
  if (!mnMajor && k * bBox.getElementTypeBitWidth() / 8 % 128 != 0)
    return emitOpError() << "expected K a multiple of " << 1024 / bBox.getElementTypeBitWidth()
                         << " (whole 128-byte swizzle spans per row of the [N, K] box), got " << k;
  if (m % (64 * warpgroupsM) != 0 || n % (8 * warpsN) != 0 || n > 256 * warpsN)
    return emitOpError() << "expected M a multiple of " << 64 * warpgroupsM
                         << " and N a multiple of " << 8 * warpsN << " up to " << 256 * warpsN
                         << ", got " << accType;
  return verifyMaxNumImpreciseAcc(*this, getMaxNumImpreciseAccAttr(), element, k);
}

LogicalResult WarpGroupTurnOp::verify() {
  StringRef step = getStep();
  if (step != "start" && step != "wait" && step != "pass" && step != "end")
    return emitOpError() << "expected the step \"start\", \"wait\", \"pass\" or \"end\", got \""
                         << getStep() << "\"";
  return success();
}

LogicalResult StageOp::verify() {
  auto type = getSrc().getType();
  if (type.getEncoding() && !llvm::isa<MmaEncodingAttr>(type.getEncoding()))
    return emitOpError() << "expected a tile in the blocked layout or a #tile.mma encoding, got "
                         << type;
  auto staged = RankedTensorType::get(type.getShape(), type.getElementType());
  if (getResult().getType().getTileType() != staged)
    return emitOpError() << "expected the result to stage " << staged << ", got "
                         << getResult().getType();
  return success();
}

/// The [M, K] tile a staged dot's `a` holds: in registers, or staged.
static RankedTensorType stagedATile(Value a) {
  if (auto staged = llvm::dyn_cast<SmemType>(a.getType()))
    return staged.getTileType();
  return llvm::cast<RankedTensorType>(a.getType());
}

/// What the staged dots (wgmma's, tcgen05's) check alike: an accumulator in
/// the `#tile.mma` encoding of `version`, 2-D [M, K] * [K, N] -> [M, N]
/// operands of one element type. Returns the encoding, null on an error.
static MmaEncodingAttr verifyStagedDot(Operation *op, RankedTensorType aType,
                                       RankedTensorType bType, RankedTensorType accType,
                                       unsigned version) {
  auto mma = llvm::dyn_cast_if_present<MmaEncodingAttr>(accType.getEncoding());
  if (!mma || mma.getVersion() != version) {
    op->emitOpError() << "expected an accumulator with the #tile.mma encoding of version "
                      << version << ", got " << accType;
    return nullptr;
  }
  if (aType.getRank() != 2 || bType.getRank() != 2 || accType.getRank() != 2) {
    op->emitOpError() << "expected 2-D operands and accumulator";
    return nullptr;
  }
  if (aType.getElementType() != bType.getElementType()) {
    op->emitOpError() << "expected operands of one element type, got " << aType.getElementType()
                      << " and " << bType.getElementType();
    return nullptr;
  }
  if (bType.getDimSize(0) != aType.getDimSize(1) || accType.getDimSize(0) != aType.getDimSize(0) ||
      accType.getDimSize(1) != bType.getDimSize(1)) {
    op->emitOpError() << "expected [M, K] * [K, N] -> [M, N], got " << aType << " * " << bType
                      << " -> " << accType;
    return nullptr;
  }
  return mma;
}

RankedTensorType WarpGroupDotStagedOp::getATile() { return stagedATile(getA()); }

LogicalResult WarpGroupDotStagedOp::verify() {
  auto aType = getATile(), bType = getB().getType(), accType = getAcc().getType();
  MmaEncodingAttr mma = verifyStagedDot(*this, aType, bType, accType, /*version=*/3);
  if (!mma)
    return failure();
  int64_t m = aType.getDimSize(0), k = aType.getDimSize(1), n = bType.getDimSize(1);
  unsigned warpsN = mma.getWarpsN(), warpgroupsM = mma.getNumWarps() / 4 / warpsN;
  // A in the accumulator's encoding is read from registers, k16 at a time.
  bool registerA = bool(aType.getEncoding());
  if (registerA && (aType.getEncoding() != mma || warpsN != 1))
    return emitOpError() << "expected `a` in the blocked layout or in the accumulator's "
                            "encoding of warpsN = 1 (A from registers), got "
                         << aType;
  int64_t kMultiple = registerA ? 16 : 64;
  if (m % (64 * warpgroupsM) != 0 || k % kMultiple != 0 || n % (64 * warpsN) != 0 ||
      n > 256 * warpsN)
    return emitOpError() << "expected M a multiple of " << 64 * warpgroupsM << ", K a multiple of "
                         << kMultiple << " and N a multiple of " << 64 * warpsN << " up to "
                         << 256 * warpsN << ", got " << m << ", " << k << " and " << n;
  return success();
}

RankedTensorType WarpDotOp::getATile() { return stagedATile(getA()); }

RankedTensorType WarpDotOp::getBTile() {
  if (RingType ring = getBRing())
    return ring.getBlockType();
  return llvm::cast<RankedTensorType>(getB().getType());
}

RankedTensorType WarpDotOp::getBMatrix() {
  auto type = getBTile();
  if (!getBKMajor() || type.getRank() != 2)
    return type;
  return RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, type.getElementType(),
                               getBRing() ? Attribute() : type.getEncoding());
}

LogicalResult WarpDotOp::verify() {
  auto aType = getATile(), bType = getBMatrix(), accType = getAcc().getType();
  if (bool(getBRing()) != bool(getBSlot()))
    return emitOpError() << "expected a slot exactly when `b` is a ring";
  // An 8-bit float slot: its codes converted to `a`'s type in the B
  // fragments' registers.
  if (RingType ring = getBRing(); ring && ring.getBlockType().getElementTypeBitWidth() == 8) {
    Type element = aType.getElementType();
    if (!(element.isBF16() || element.isF16()) || !getBKMajor() ||
        !llvm::isa<SmemType>(getA().getType()))
      return emitOpError() << "expected an 8-bit float slot `b` only with `bKMajor` and a "
                              "staged 16-bit `a`";
    bType = bType.clone(element);
  }
  if (RingType ring = getBRing()) {
    // Read in place: a 2-D box of 128-byte swizzled rows.
    RankedTensorType box = ring.getBlockType();
    if (box.getRank() != 2 || box.getShape().back() * box.getElementTypeBitWidth() / 8 % 128 != 0)
      return emitOpError() << "expected a ring of 2-D boxes with rows of whole 128-byte spans, got "
                           << ring;
    if (getB().getDefiningOp<RingAllocOp>() && getRingSwizzle(getB()) != 128)
      return emitOpError() << "expected a ring of 128-byte swizzled boxes (TMA with the 128-byte "
                              "swizzle, or a `swizzled` gather ring)";
  }
  MmaEncodingAttr mma = verifyStagedDot(*this, aType, bType, accType, /*version=*/2);
  if (!mma)
    return failure();
  int64_t m = aType.getDimSize(0), k = aType.getDimSize(1), n = bType.getDimSize(1);
  if (!llvm::isPowerOf2_64(m) || !llvm::isPowerOf2_64(n) || k % 16 != 0 ||
      n % (8 * mma.getWarpsN()) != 0)
    return emitOpError() << "expected M and N powers of two, N a multiple of "
                         << 8 * mma.getWarpsN() << " and K a multiple of 16, got " << m << ", " << n
                         << " and " << k;
  return success();
}

//===----------------------------------------------------------------------===//
// Tensor Memory and tcgen05 MMA
//===----------------------------------------------------------------------===//

LogicalResult TMemLoadOp::verify() {
  RankedTensorType accType = getTmem().getType().getAccType();
  auto resultType = getResult().getType();
  if (resultType.getShape() != accType.getShape())
    return emitOpError() << "expected the result to have the accumulator's shape " << accType
                         << ", got " << resultType;
  auto mma = llvm::dyn_cast_if_present<MmaEncodingAttr>(resultType.getEncoding());
  if (!mma || mma.getVersion() != 5)
    return emitOpError() << "expected the result in the #tile.mma encoding of version 5, got "
                         << resultType;
  return success();
}

RankedTensorType Tcgen05DotStagedOp::getATile() { return stagedATile(getA()); }

RankedTensorType Tcgen05DotStagedOp::getBMatrix() {
  if (RingType ring = getBRing())
    return boxMatrix(ring.getBlockType());
  return llvm::cast<RankedTensorType>(getB().getType());
}

LogicalResult Tcgen05DotStagedOp::verify() {
  auto aType = getATile(), bType = getBMatrix(), accType = getAcc().getType();
  if (bool(getBRing()) != bool(getBSlot()))
    return emitOpError() << "expected a slot exactly when `b` is a ring";
  if (getBMnMajor() && !getBRing())
    return emitOpError() << "expected `bMnMajor` only with a ring `b`";
  if (!bType || bType.getRank() != 2)
    return emitOpError() << "expected `b` of a 2-D matrix";
  // A K-major ring B is the [N, K] matrix of its box.
  if (getBRing() && !getBMnMajor())
    bType =
        RankedTensorType::get({bType.getDimSize(1), bType.getDimSize(0)}, bType.getElementType());
  if (!verifyStagedDot(*this, aType, bType, accType, /*version=*/5))
    return failure();
  int64_t m = aType.getDimSize(0), k = aType.getDimSize(1), n = bType.getDimSize(1);
  if (m != 128 || k % 64 != 0 || n % 64 != 0 || n > 256)
    return emitOpError() << "expected M = 128, K a multiple of 64 and N a multiple of 64 up to "
                            "256, got "
                         << m << ", " << k << " and " << n;
  RankedTensorType tmemType = getTmem().getType().getAccType();
  if (tmemType.getDimSize(0) != m || tmemType.getDimSize(1) < n)
    return emitOpError() << "expected Tensor Memory of " << m << " lanes and at least " << n
                         << " columns, got " << tmemType;
  return success();
}

LogicalResult Tcgen05DotOp::verify() {
  auto aBox = getA().getType().getBlockType(), bBox = getB().getType().getBlockType();
  RankedTensorType accType = getAcc().getType().getAccType();
  if (aBox.getRank() != 2 || bBox.getRank() != 2)
    return emitOpError() << "expected 2-D boxes, got " << aBox << " and " << bBox;
  Type element = aBox.getElementType();
  if (element != bBox.getElementType() || !(element.isBF16() || element.isF16()))
    return emitOpError() << "expected bf16 or f16 boxes of one element type, got "
                         << aBox.getElementType() << " and " << bBox.getElementType();
  int64_t m = aBox.getDimSize(0), k = aBox.getDimSize(1), n = bBox.getDimSize(0);
  if (bBox.getDimSize(1) != k || accType.getDimSize(0) != m || accType.getDimSize(1) != n)
    return emitOpError() << "expected a [M, K] box, a [N, K] box and a [M, N] accumulator, got "
                         << aBox << ", " << bBox << " and " << accType;
  if (k * 2 % 128 != 0)
    return emitOpError() << "expected K a multiple of 64 (whole 128-byte swizzle spans per row), "
                            "got "
                         << k;
  if (n < 16 || n > 256 || n % 16 != 0)
    return emitOpError() << "expected N a multiple of 16 from 16 to 256 (tcgen05.mma with "
                            "M = 128), got "
                         << n;
  return success();
}

//===----------------------------------------------------------------------===//
// WarpSpecializeOp
//===----------------------------------------------------------------------===//

LogicalResult WarpSpecializeOp::verifyRegions() {
  if ((*this)->getParentOfType<WarpSpecializeOp>())
    return emitOpError() << "expected no enclosing tile.warp_specialize";
  // The producer warps have no place in the consumers' layouts.
  WalkResult tiles = getProducer().walk([&](Operation *op) {
    auto isTile = [](Type type) { return llvm::isa<RankedTensorType>(type); };
    if (llvm::any_of(op->getResultTypes(), isTile) || llvm::any_of(op->getOperandTypes(), isTile)) {
      op->emitOpError() << "expected no tiles in the producer region of a tile.warp_specialize";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(tiles.wasInterrupted());
}
