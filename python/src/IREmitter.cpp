//===- IREmitter.cpp - kiln._C: the tile-dialect emitter ------------------===//
//
// The methods of Builder (IREmitter.h).
//
//===----------------------------------------------------------------------===//

#include "IREmitter.h"

#include "kiln/Dialect/Tile/IR/TileDialect.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Dialect/Tile/IR/TileTypes.h"
#include "kiln/Registration.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/stl.h>

#include <optional>

namespace py = pybind11;
using namespace mlir;

namespace kiln::python {

std::string toString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

std::string toString(Value value) {
  std::string s;
  llvm::raw_string_ostream os(s);
  value.print(os);
  return s;
}

namespace {

[[noreturn]] void invalid(const std::string &message) { throw py::value_error(message); }

Type elementType(Type type) { return getElementTypeOrSelf(type); }

bool isIntLike(Type type) { return llvm::isa<IntegerType>(elementType(type)); }
bool isFloatLike(Type type) { return llvm::isa<FloatType>(elementType(type)); }

/// `type` with the shape of `like` (or scalar if `like` is a scalar).
Type withShapeOf(Type like, Type element) {
  if (auto tensor = llvm::dyn_cast<RankedTensorType>(like))
    return RankedTensorType::get(tensor.getShape(), element);
  return element;
}

} // namespace

void Builder::setLoc(const std::string &file, unsigned line, unsigned col) {
  loc = FileLineColLoc::get(ctx(), file, line, col);
}

std::string Builder::getLoc() {
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

Type Builder::intType(unsigned width) {
  if (width != 1 && width != 8 && width != 16 && width != 32 && width != 64)
    invalid("integer width must be 1, 8, 16, 32 or 64, got " + std::to_string(width));
  return builder.getIntegerType(width);
}

Type Builder::floatType(const std::string &name) {
  if (name == "f16")
    return builder.getF16Type();
  if (name == "bf16")
    return builder.getBF16Type();
  if (name == "f32")
    return builder.getF32Type();
  if (name == "f64")
    return builder.getF64Type();
  if (name == "f8e4m3")
    return builder.getType<Float8E4M3FNType>();
  if (name == "f8e5m2")
    return builder.getType<Float8E5M2Type>();
  invalid("unknown float type '" + name + "'");
}

Type Builder::ptrType(Type pointee) {
  if (!llvm::isa<IntegerType, FloatType>(pointee))
    invalid("a pointer points to a scalar integer or float, got " + toString(pointee));
  return tile::PtrType::get(ctx(), pointee);
}

Type Builder::tensorDescType(Type block, unsigned swizzle) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(block);
  if (!tensor)
    invalid("a tensor descriptor's block is a tile, got " + toString(block));
  std::string message;
  {
    ScopedDiagnosticHandler handler(ctx(), [&](Diagnostic &d) {
      message = d.str();
      return success();
    });
    if (failed(tile::TensorDescType::verify([&] { return mlir::emitError(loc); }, tensor, swizzle)))
      invalid(message);
  }
  return tile::TensorDescType::get(ctx(), tensor, swizzle);
}

Type Builder::tensorType(const std::vector<int64_t> &shape, Type element) {
  if (shape.empty())
    return element;
  for (int64_t d : shape)
    if (d <= 0)
      invalid("tile dimensions must be positive");
  return RankedTensorType::get(shape, element);
}

std::shared_ptr<Module> Builder::createModule() {
  OwningOpRef<ModuleOp> module(ModuleOp::create(loc));
  builder.setInsertionPointToEnd(module->getBody());
  return std::make_shared<Module>(context, std::move(module));
}

std::vector<Value> Builder::createKernel(Module &module, const std::string &name,
                                         const std::vector<Type> &argTypes,
                                         const std::vector<int64_t> &divisibility, int numWarps,
                                         const std::vector<int32_t> &cluster, int maxnreg) {
  if (divisibility.size() != argTypes.size())
    invalid("one divisibility per argument expected");
  if (cluster.size() != 3)
    invalid("the cluster shape has 3 entries");
  builder.setInsertionPointToEnd(module.get().getBody());
  auto type = builder.getFunctionType(argTypes, {});
  auto func = func::FuncOp::create(builder, loc, name, type);
  func->setAttr(tile::TileDialect::getKernelAttrName(), builder.getUnitAttr());
  func->setAttr(tile::TileDialect::getNumWarpsAttrName(), builder.getI32IntegerAttr(numWarps));
  if (cluster != std::vector<int32_t>{1, 1, 1})
    func->setAttr(tile::TileDialect::getClusterDimsAttrName(),
                  builder.getDenseI32ArrayAttr(cluster));
  if (maxnreg != 0)
    func->setAttr(tile::TileDialect::getMaxnregAttrName(), builder.getI32IntegerAttr(maxnreg));
  for (auto [i, d] : llvm::enumerate(divisibility))
    if (d > 1)
      func.setArgAttr(i, tile::TileDialect::getDivisibilityAttrName(),
                      builder.getI32IntegerAttr(static_cast<int32_t>(d)));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToEnd(entry);
  return std::vector<Value>(entry->args_begin(), entry->args_end());
}

Value Builder::intConstant(Type type, int64_t value) {
  auto element = llvm::dyn_cast<IntegerType>(elementType(type));
  if (!element)
    invalid("integer constant of non-integer type " + toString(type));
  APInt v(64, static_cast<uint64_t>(value), /*isSigned=*/true);
  v = v.sextOrTrunc(element.getWidth());
  TypedAttr attr;
  if (auto tensor = llvm::dyn_cast<RankedTensorType>(type))
    attr = DenseElementsAttr::get(tensor, v);
  else
    attr = IntegerAttr::get(type, v);
  return arith::ConstantOp::create(builder, loc, attr);
}

Value Builder::floatConstant(Type type, double value) {
  auto element = llvm::dyn_cast<FloatType>(elementType(type));
  if (!element)
    invalid("float constant of non-float type " + toString(type));
  APFloat v(value);
  bool losesInfo = false;
  v.convert(element.getFloatSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
  TypedAttr attr;
  if (auto tensor = llvm::dyn_cast<RankedTensorType>(type))
    attr = DenseElementsAttr::get(tensor, v);
  else
    attr = FloatAttr::get(element, v);
  return arith::ConstantOp::create(builder, loc, attr);
}

tile::ProgramAxis Builder::axisOf(int axis) {
  if (axis < 0 || axis > 2)
    invalid("program axis must be 0, 1 or 2, got " + std::to_string(axis));
  return static_cast<tile::ProgramAxis>(axis);
}

Value Builder::programId(int axis) {
  return tile::ProgramIdOp::create(builder, loc, builder.getI32Type(), axisOf(axis));
}

Value Builder::numPrograms(int axis) {
  return tile::NumProgramsOp::create(builder, loc, builder.getI32Type(), axisOf(axis));
}

Value Builder::makeRange(int32_t start, int32_t end) {
  if (end <= start)
    invalid("make_range needs start < end");
  auto type = RankedTensorType::get({int64_t(end) - start}, builder.getI32Type());
  return tile::MakeRangeOp::create(builder, loc, type, builder.getI32IntegerAttr(start),
                                   builder.getI32IntegerAttr(end));
}

Value Builder::splat(Value src, const std::vector<int64_t> &shape) {
  if (llvm::isa<RankedTensorType>(src.getType()))
    invalid("splat of a tile");
  return tile::SplatOp::create(builder, loc, tensorType(shape, src.getType()), src);
}

Value Builder::expandDims(Value src, int axis) {
  auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
  if (!type)
    invalid("expand_dims of a scalar");
  if (axis < 0 || axis > type.getRank())
    invalid("expand_dims axis out of range");
  SmallVector<int64_t> shape(type.getShape());
  shape.insert(shape.begin() + axis, 1);
  auto result = RankedTensorType::get(shape, type.getElementType());
  return tile::ExpandDimsOp::create(builder, loc, result, src, builder.getI32IntegerAttr(axis));
}

Value Builder::broadcast(Value src, const std::vector<int64_t> &shape) {
  auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
  if (!type)
    invalid("broadcast of a scalar (use splat)");
  return tile::BroadcastOp::create(builder, loc, tensorType(shape, type.getElementType()), src);
}

Value Builder::trans(Value src, const std::vector<int64_t> &order) {
  auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
  if (!type || type.getRank() < 2)
    invalid("trans needs a tile of rank >= 2");
  std::vector<bool> seen(type.getRank(), false);
  if (order.size() != seen.size())
    invalid("trans: the order needs one entry per dimension");
  for (int64_t d : order) {
    if (d < 0 || d >= type.getRank() || seen[d])
      invalid("trans: the order is not a permutation of the dimensions");
    seen[d] = true;
  }
  return tile::TransOp::create(builder, loc, src, order);
}

Value Builder::reshape(Value src, const std::vector<int64_t> &shape) {
  auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
  if (!type)
    invalid("reshape of a scalar (use splat)");
  auto result = llvm::dyn_cast<RankedTensorType>(tensorType(shape, type.getElementType()));
  if (!result || result.getNumElements() != type.getNumElements())
    invalid("reshape must keep the number of elements, into a tile");
  return tile::ReshapeOp::create(builder, loc, result, src);
}

Value Builder::join(Value lhs, Value rhs) {
  if (!llvm::isa<RankedTensorType>(lhs.getType()) || lhs.getType() != rhs.getType())
    invalid("join takes two tiles of one type");
  return tile::JoinOp::create(builder, loc, lhs, rhs);
}

std::pair<Value, Value> Builder::split(Value src) {
  auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
  if (!type || type.getRank() < 2 || type.getShape().back() != 2)
    invalid("split needs a tile of rank >= 2 whose last dimension is 2");
  auto op = tile::SplitOp::create(builder, loc, src);
  return {op.getLhs(), op.getRhs()};
}

Value Builder::addptr(Value ptr, Value offset) {
  if (!llvm::isa<tile::PtrType>(elementType(ptr.getType())) || !isIntLike(offset.getType()))
    invalid("addptr takes pointers and integer offsets");
  return tile::AddPtrOp::create(builder, loc, ptr.getType(), ptr, offset);
}

Value Builder::intToPtr(Value address, Type ptrType, int64_t divisibility) {
  if (!address.getType().isInteger(64) || !llvm::isa<tile::PtrType>(ptrType))
    invalid("int_to_ptr takes an i64 scalar and a pointer type");
  return tile::IntToPtrOp::create(builder, loc, ptrType, address,
                                  builder.getI64IntegerAttr(divisibility));
}

Value Builder::load(Value ptr, std::optional<Value> mask, std::optional<Value> other,
                    const std::string &sem, const std::string &scopeName, const std::string &cache,
                    const std::string &evict, int64_t pollNs) {
  if (!llvm::isa<tile::PtrType>(elementType(ptr.getType())))
    invalid("load from a non-pointer " + toString(ptr.getType()));
  if (other && !mask)
    invalid("load: 'other' needs a mask");
  auto op =
      tile::LoadOp::create(builder, loc, ptr, mask.value_or(Value()), other.value_or(Value()));
  setOrdering(op, sem, scopeName);
  setCacheHints(op, cache, evict);
  if (pollNs)
    op.setPollNsAttr(builder.getI64IntegerAttr(pollNs));
  return op;
}

void Builder::store(Value ptr, Value value, std::optional<Value> mask, const std::string &sem,
                    const std::string &scopeName, const std::string &cache,
                    const std::string &evict) {
  if (!llvm::isa<tile::PtrType>(elementType(ptr.getType())))
    invalid("store to a non-pointer " + toString(ptr.getType()));
  auto op = tile::StoreOp::create(builder, loc, ptr, value, mask.value_or(Value()), IntegerAttr(),
                                  tile::MemSemanticAttr(), tile::MemScopeAttr(),
                                  tile::CacheModifierAttr(), tile::EvictionPolicyAttr());
  setOrdering(op, sem, scopeName);
  setCacheHints(op, cache, evict);
}

template <typename OpTy>
void Builder::setOrdering(OpTy op, const std::string &sem, const std::string &scopeName) {
  if (sem.empty())
    return;
  op.setSemAttr(tile::MemSemanticAttr::get(ctx(), semantic(sem)));
  op.setScopeAttr(tile::MemScopeAttr::get(ctx(), scope(scopeName)));
}

template <typename OpTy>
void Builder::setCacheHints(OpTy op, const std::string &cache, const std::string &evict) {
  if (!cache.empty()) {
    auto c = tile::symbolizeCacheModifier(cache);
    if (!c)
      invalid("unknown cache modifier '" + cache + "' (ca, cg, cs, cv, wb, wt)");
    op.setCacheAttr(tile::CacheModifierAttr::get(ctx(), *c));
  }
  if (!evict.empty()) {
    auto e = tile::symbolizeEvictionPolicy(evict);
    if (!e)
      invalid("unknown eviction policy '" + evict + "' (evict_normal, evict_first, evict_last)");
    op.setEvictAttr(tile::EvictionPolicyAttr::get(ctx(), *e));
  }
}

void Builder::fence(const std::string &sem, const std::string &scopeName) {
  tile::FenceOp::create(builder, loc, semantic(sem), scope(scopeName));
}

void Builder::fenceProxyAsync(const std::string &spaceName) {
  auto space = tile::symbolizeProxySpace(spaceName);
  if (!space)
    invalid("unknown proxy fence space '" + spaceName + "' (global, shared_cta, all)");
  tile::FenceProxyAsyncOp::create(builder, loc, *space);
}

func::FuncOp Builder::getKernel(const std::string &what) {
  Operation *parent = builder.getInsertionBlock()->getParentOp();
  auto func = parent->getParentOfType<func::FuncOp>();
  if (auto self = llvm::dyn_cast<func::FuncOp>(parent))
    func = self;
  if (!func)
    invalid(what + " outside a kernel");
  return func;
}

void Builder::setMinProgramsPerSM(int32_t programs) {
  getKernel("min_programs_per_sm")
      ->setAttr(tile::TileDialect::getMinProgramsPerSMAttrName(),
                builder.getI32IntegerAttr(programs));
}

void Builder::markPdl(const std::string &what) {
  getKernel(what)->setAttr(tile::TileDialect::getPdlAttrName(), builder.getUnitAttr());
}

Value Builder::bulkLoad(Value ptr, int64_t size, std::optional<Value> count) {
  auto ptrType = llvm::dyn_cast<tile::PtrType>(ptr.getType());
  if (!ptrType)
    invalid("bulk_load needs a scalar pointer, got " + toString(ptr.getType()));
  if (count && !count->getType().isInteger(32))
    invalid("bulk_load's count must be an i32, got " + toString(count->getType()));
  return tile::BulkLoadOp::create(builder, loc,
                                  RankedTensorType::get({size}, ptrType.getPointeeType()), ptr,
                                  count ? *count : Value())
      .getResult();
}

Value Builder::descLoad(Value desc, const std::vector<Value> &indices) {
  if (!llvm::isa<tile::TensorDescType>(desc.getType()))
    invalid("load through a non-descriptor " + toString(desc.getType()));
  return tile::DescLoadOp::create(builder, loc, desc, indices);
}

void Builder::descStore(Value desc, const std::vector<Value> &indices, Value value) {
  if (!llvm::isa<tile::TensorDescType>(desc.getType()))
    invalid("store through a non-descriptor " + toString(desc.getType()));
  tile::DescStoreOp::create(builder, loc, desc, indices, value);
}

Value Builder::approximate(Value v, bool approx) {
  if (approx)
    addFastMath(v, arith::FastMathFlags::afn);
  return v;
}

void Builder::addFastMath(Value v, arith::FastMathFlags flags) {
  auto op = llvm::dyn_cast_or_null<arith::ArithFastMathInterface>(v.getDefiningOp());
  if (!op)
    return;
  if (arith::FastMathFlagsAttr old = op.getFastMathFlagsAttr())
    flags = flags | old.getValue();
  op->setAttr("fastmath", arith::FastMathFlagsAttr::get(op->getContext(), flags));
}

Value Builder::contractible(Value v) {
  if (fpContract)
    addFastMath(v, arith::FastMathFlags::contract);
  return v;
}

Value Builder::binary(const std::string &name, Value lhs, Value rhs, bool approx) {
  return approximate(binaryImpl(name, lhs, rhs), approx);
}

Value Builder::binaryImpl(const std::string &name, Value lhs, Value rhs) {
  if (lhs.getType() != rhs.getType())
    invalid(name + ": operand types differ: " + toString(lhs.getType()) + " vs " +
            toString(rhs.getType()));
  Type t = lhs.getType();
  bool isInt = isIntLike(t), isFloat = isFloatLike(t);
  auto needInt = [&] {
    if (!isInt)
      invalid(name + " takes integers, got " + toString(t));
  };
  auto needFloat = [&] {
    if (!isFloat)
      invalid(name + " takes floats, got " + toString(t));
  };
#define KILN_INT(NAME, OP)                                                                         \
  if (name == NAME) {                                                                              \
    needInt();                                                                                     \
    return OP::create(builder, loc, lhs, rhs);                                                     \
  }
#define KILN_FLOAT(NAME, OP)                                                                       \
  if (name == NAME) {                                                                              \
    needFloat();                                                                                   \
    return OP::create(builder, loc, lhs, rhs);                                                     \
  }
  KILN_INT("addi", arith::AddIOp)
  KILN_INT("subi", arith::SubIOp)
  KILN_INT("muli", arith::MulIOp)
  KILN_INT("divsi", arith::DivSIOp)
  KILN_INT("divui", arith::DivUIOp)
  KILN_INT("floordivsi", arith::FloorDivSIOp)
  KILN_INT("ceildivsi", arith::CeilDivSIOp)
  KILN_INT("ceildivui", arith::CeilDivUIOp)
  KILN_INT("remsi", arith::RemSIOp)
  KILN_INT("remui", arith::RemUIOp)
  KILN_INT("andi", arith::AndIOp)
  KILN_INT("ori", arith::OrIOp)
  KILN_INT("xori", arith::XOrIOp)
  KILN_INT("shli", arith::ShLIOp)
  KILN_INT("shrsi", arith::ShRSIOp)
  KILN_INT("shrui", arith::ShRUIOp)
  KILN_INT("minsi", arith::MinSIOp)
  KILN_INT("maxsi", arith::MaxSIOp)
  KILN_INT("minui", arith::MinUIOp)
  KILN_INT("maxui", arith::MaxUIOp)
  if (name == "addf") {
    needFloat();
    return contractible(arith::AddFOp::create(builder, loc, lhs, rhs));
  }
  if (name == "subf") {
    needFloat();
    return contractible(arith::SubFOp::create(builder, loc, lhs, rhs));
  }
  if (name == "mulf") {
    needFloat();
    return contractible(arith::MulFOp::create(builder, loc, lhs, rhs));
  }
  KILN_FLOAT("divf", arith::DivFOp)
  KILN_FLOAT("remf", arith::RemFOp)
  KILN_FLOAT("minimumf", arith::MinimumFOp)
  KILN_FLOAT("maximumf", arith::MaximumFOp)
  KILN_FLOAT("minnumf", arith::MinNumFOp)
  KILN_FLOAT("maxnumf", arith::MaxNumFOp)
  KILN_FLOAT("powf", math::PowFOp)
  KILN_FLOAT("atan2", math::Atan2Op)
#undef KILN_INT
#undef KILN_FLOAT
  invalid("unknown binary op '" + name + "'");
}

Value Builder::unary(const std::string &name, Value x, bool approx) {
  return approximate(unaryImpl(name, x), approx);
}

Value Builder::unaryImpl(const std::string &name, Value x) {
  Type t = x.getType();
#define KILN_UN(NAME, OP, PRED, WHAT)                                                              \
  if (name == NAME) {                                                                              \
    if (!PRED(t))                                                                                  \
      invalid(std::string(NAME) + " takes " WHAT ", got " + toString(t));                          \
    return OP::create(builder, loc, x);                                                            \
  }
  KILN_UN("negf", arith::NegFOp, isFloatLike, "floats")
  KILN_UN("exp", math::ExpOp, isFloatLike, "floats")
  KILN_UN("exp2", math::Exp2Op, isFloatLike, "floats")
  KILN_UN("log", math::LogOp, isFloatLike, "floats")
  KILN_UN("log2", math::Log2Op, isFloatLike, "floats")
  KILN_UN("tanh", math::TanhOp, isFloatLike, "floats")
  KILN_UN("sqrt", math::SqrtOp, isFloatLike, "floats")
  KILN_UN("rsqrt", math::RsqrtOp, isFloatLike, "floats")
  KILN_UN("sin", math::SinOp, isFloatLike, "floats")
  KILN_UN("cos", math::CosOp, isFloatLike, "floats")
  KILN_UN("absf", math::AbsFOp, isFloatLike, "floats")
  KILN_UN("erf", math::ErfOp, isFloatLike, "floats")
  KILN_UN("floor", math::FloorOp, isFloatLike, "floats")
  KILN_UN("ceil", math::CeilOp, isFloatLike, "floats")
  KILN_UN("absi", math::AbsIOp, isIntLike, "integers")
#undef KILN_UN
  invalid("unknown unary op '" + name + "'");
}

Value Builder::fma(Value a, Value b, Value c) {
  if (a.getType() != b.getType() || a.getType() != c.getType() || !isFloatLike(a.getType()))
    invalid("fma takes three floats of one type");
  return math::FmaOp::create(builder, loc, a, b, c);
}

Value Builder::dot(Value a, Value b, Value acc, std::optional<int64_t> maxNumImpreciseAcc) {
  for (Value v : {a, b, acc})
    if (!llvm::isa<RankedTensorType>(v.getType()))
      invalid("dot takes tiles, got " + toString(v.getType()));
  IntegerAttr bound;
  if (maxNumImpreciseAcc)
    bound = builder.getI32IntegerAttr(*maxNumImpreciseAcc);
  return tile::DotOp::create(builder, loc, acc.getType(), a, b, acc, bound);
}

Value Builder::select(Value cond, Value a, Value b) {
  if (a.getType() != b.getType())
    invalid("select: operand types differ: " + toString(a.getType()) + " vs " +
            toString(b.getType()));
  if (cond.getType() != withShapeOf(a.getType(), builder.getI1Type()) &&
      cond.getType() != builder.getI1Type())
    invalid("select: condition " + toString(cond.getType()) + " does not match " +
            toString(a.getType()));
  return arith::SelectOp::create(builder, loc, cond, a, b);
}

Value Builder::cmpi(const std::string &pred, Value lhs, Value rhs) {
  auto p = arith::symbolizeCmpIPredicate(pred);
  if (!p)
    invalid("unknown integer predicate '" + pred + "'");
  if (lhs.getType() != rhs.getType() || !isIntLike(lhs.getType()))
    invalid("cmpi takes two integers of one type");
  return arith::CmpIOp::create(builder, loc, *p, lhs, rhs);
}

Value Builder::cmpf(const std::string &pred, Value lhs, Value rhs) {
  auto p = arith::symbolizeCmpFPredicate(pred);
  if (!p)
    invalid("unknown float predicate '" + pred + "'");
  if (lhs.getType() != rhs.getType() || !isFloatLike(lhs.getType()))
    invalid("cmpf takes two floats of one type");
  return arith::CmpFOp::create(builder, loc, *p, lhs, rhs);
}

Value Builder::cast(const std::string &kind, Value x, Type to) {
  Type from = x.getType();
  if (llvm::isa<RankedTensorType>(from) != llvm::isa<RankedTensorType>(to) ||
      (llvm::isa<RankedTensorType>(from) && llvm::cast<RankedTensorType>(from).getShape() !=
                                                llvm::cast<RankedTensorType>(to).getShape()))
    invalid(kind + ": shapes differ: " + toString(from) + " to " + toString(to));
  unsigned fw = elementType(from).isIntOrFloat() ? elementType(from).getIntOrFloatBitWidth() : 0;
  unsigned tw = elementType(to).isIntOrFloat() ? elementType(to).getIntOrFloatBitWidth() : 0;
  auto need = [&](bool ok) {
    if (!ok)
      invalid(kind + " cannot cast " + toString(from) + " to " + toString(to));
  };
  if (kind == "extf") {
    need(isFloatLike(from) && isFloatLike(to) && tw > fw);
    return arith::ExtFOp::create(builder, loc, to, x);
  }
  if (kind == "truncf") {
    need(isFloatLike(from) && isFloatLike(to) && tw < fw);
    return arith::TruncFOp::create(builder, loc, to, x);
  }
  if (kind == "sitofp" || kind == "uitofp") {
    need(isIntLike(from) && isFloatLike(to));
    if (kind == "sitofp")
      return arith::SIToFPOp::create(builder, loc, to, x);
    return arith::UIToFPOp::create(builder, loc, to, x);
  }
  if (kind == "fptosi" || kind == "fptoui") {
    need(isFloatLike(from) && isIntLike(to));
    if (kind == "fptosi")
      return arith::FPToSIOp::create(builder, loc, to, x);
    return arith::FPToUIOp::create(builder, loc, to, x);
  }
  if (kind == "extsi" || kind == "extui") {
    need(isIntLike(from) && isIntLike(to) && tw > fw);
    if (kind == "extsi")
      return arith::ExtSIOp::create(builder, loc, to, x);
    return arith::ExtUIOp::create(builder, loc, to, x);
  }
  if (kind == "trunci") {
    need(isIntLike(from) && isIntLike(to) && tw < fw);
    return arith::TruncIOp::create(builder, loc, to, x);
  }
  if (kind == "bitcast") {
    need(fw != 0 && fw == tw);
    return arith::BitcastOp::create(builder, loc, to, x);
  }
  invalid("unknown cast '" + kind + "'");
}

tile::MemSemantic Builder::semantic(const std::string &sem) {
  if (auto s = tile::symbolizeMemSemantic(sem))
    return *s;
  invalid("unknown memory semantic '" + sem + "' (relaxed, acquire, release, acq_rel)");
}

tile::MemScope Builder::scope(const std::string &scope) {
  if (auto s = tile::symbolizeMemScope(scope))
    return *s;
  invalid("unknown memory scope '" + scope + "' (cta, gpu, sys)");
}

Value Builder::atomicRMW(const std::string &kind, const std::string &sem,
                         const std::string &scopeName, Value ptr, Value val,
                         std::optional<Value> mask) {
  auto k = tile::symbolizeAtomicRMWKind(kind);
  if (!k)
    invalid("unknown atomic kind '" + kind + "'");
  if (!llvm::isa<tile::PtrType>(elementType(ptr.getType())))
    invalid("atomic on a non-pointer " + toString(ptr.getType()));
  return tile::AtomicRMWOp::create(builder, loc, tile::getPointeeType(ptr.getType()), *k,
                                   semantic(sem), scope(scopeName), ptr, val,
                                   mask.value_or(Value()))
      .getResult();
}

Value Builder::atomicCAS(const std::string &sem, const std::string &scopeName, Value ptr, Value cmp,
                         Value val) {
  if (!llvm::isa<tile::PtrType>(elementType(ptr.getType())))
    invalid("atomic_cas on a non-pointer " + toString(ptr.getType()));
  return tile::AtomicCASOp::create(builder, loc, tile::getPointeeType(ptr.getType()), semantic(sem),
                                   scope(scopeName), ptr, cmp, val)
      .getResult();
}

void Builder::pdlWait() {
  tile::PdlWaitOp::create(builder, loc);
  markPdl("pdl_wait");
}

void Builder::pdlLaunchDependents() {
  tile::PdlLaunchDependentsOp::create(builder, loc);
  markPdl("pdl_launch_dependents");
}

Value Builder::clusterId(int axis) {
  return tile::ClusterIdOp::create(builder, loc, builder.getI32Type(), axisOf(axis));
}

Value Builder::numClusters(int axis) {
  return tile::NumClustersOp::create(builder, loc, builder.getI32Type(), axisOf(axis));
}

Value Builder::clusterCtaId(int axis) {
  return tile::ClusterCtaIdOp::create(builder, loc, builder.getI32Type(), axisOf(axis));
}

Value Builder::clusterCtaRank() {
  return tile::ClusterCtaRankOp::create(builder, loc, builder.getI32Type());
}

Value Builder::clusterLoad(Value src, Value rank) {
  if (!llvm::isa<RankedTensorType>(src.getType()))
    invalid("cluster_load needs a tile, got " + toString(src.getType()));
  if (!rank.getType().isInteger(32))
    invalid("cluster_load needs an i32 rank, got " + toString(rank.getType()));
  return tile::ClusterLoadOp::create(builder, loc, src.getType(), src, rank);
}

Value Builder::clusterGather(Value src, int64_t size) {
  auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
  if (!type)
    invalid("cluster_gather needs a tile, got " + toString(src.getType()));
  SmallVector<int64_t> shape{size};
  llvm::append_range(shape, type.getShape());
  return tile::ClusterGatherOp::create(builder, loc,
                                       RankedTensorType::get(shape, type.getElementType()), src);
}

std::vector<Value> Builder::clusterSum(const std::vector<Value> &srcs) {
  for (Value src : srcs) {
    auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
    Type element = type ? type.getElementType() : Type();
    if (!type ||
        !(element.isF32() || element.isF64() || element.isInteger(32) || element.isInteger(64)))
      invalid("cluster_sum needs tiles of 32- or 64-bit numbers, got " + toString(src.getType()));
  }
  auto op = tile::ClusterSumOp::create(builder, loc, srcs);
  return std::vector<Value>(op.getResults().begin(), op.getResults().end());
}

Value Builder::reduce(Value src, int axis, const std::string &combine) {
  auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
  if (!type)
    invalid("reduce needs a tile, got " + toString(src.getType()));
  if (axis < 0 || axis >= type.getRank())
    invalid("reduce axis " + std::to_string(axis) + " out of range for " + toString(type));
  auto op = tile::ReduceOp::create(builder, loc, src, builder.getI32IntegerAttr(axis));
  Block *block = builder.createBlock(&op.getCombine());
  Type element = type.getElementType();
  Value a = block->addArgument(element, loc), b = block->addArgument(element, loc);
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(block);
    tile::ReduceReturnOp::create(builder, loc, binaryImpl(combine, a, b));
  }
  builder.setInsertionPointAfter(op);
  return op.getResult().front();
}

std::vector<Value> Builder::reduceCombine(std::vector<Value> srcs, int axis,
                                          const py::object &combine) {
  if (srcs.empty())
    invalid("reduce needs at least one tile");
  auto type = llvm::dyn_cast<RankedTensorType>(srcs.front().getType());
  SmallVector<Type> elements;
  for (Value src : srcs) {
    auto srcType = llvm::dyn_cast<RankedTensorType>(src.getType());
    if (!srcType)
      invalid("reduce needs tiles, got " + toString(src.getType()));
    if (srcType.getShape() != type.getShape())
      invalid("reduce needs tiles of one shape, got " + toString(type) + " and " +
              toString(srcType));
    elements.push_back(srcType.getElementType());
  }
  if (axis < 0 || axis >= type.getRank())
    invalid("reduce axis " + std::to_string(axis) + " out of range for " + toString(type));
  // Restored on both paths: right after the op, or where it was.
  OpBuilder::InsertionGuard guard(builder);
  auto op = tile::ReduceOp::create(builder, loc, srcs, builder.getI32IntegerAttr(axis));
  Block *block = builder.createBlock(&op.getCombine());
  std::vector<Value> arguments;
  for (int i = 0; i < 2; ++i)
    for (Type element : elements)
      arguments.push_back(block->addArgument(element, loc));
  try {
    auto results = combine(arguments).cast<std::vector<Value>>();
    if (results.size() != elements.size())
      invalid("the reduce's combine function returns " + std::to_string(results.size()) +
              " values, expected " + std::to_string(elements.size()));
    for (auto [result, element] : llvm::zip(results, elements))
      if (result.getType() != element)
        invalid("the reduce's combine function returns " + toString(result.getType()) +
                ", expected " + toString(element));
    tile::ReduceReturnOp::create(builder, loc, results);
  } catch (...) {
    // Leave no half-built op behind (the frontend reports the error).
    op->dropAllReferences();
    op->erase();
    throw;
  }
  return std::vector<Value>(op.getResult().begin(), op.getResult().end());
}

Value Builder::scan(Value src, int axis, const py::object &combine) {
  auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
  if (!type)
    invalid("scan needs a tile, got " + toString(src.getType()));
  if (axis < 0 || axis >= type.getRank())
    invalid("scan axis " + std::to_string(axis) + " out of range for " + toString(type));
  // Restored on both paths: right after the op, or where it was.
  OpBuilder::InsertionGuard guard(builder);
  auto op = tile::ScanOp::create(builder, loc, src, builder.getI32IntegerAttr(axis));
  Block *block = builder.createBlock(&op.getCombine());
  Type element = type.getElementType();
  Value a = block->addArgument(element, loc), b = block->addArgument(element, loc);
  try {
    Value result;
    if (py::isinstance<py::str>(combine)) {
      result = binaryImpl(combine.cast<std::string>(), a, b);
    } else {
      result = combine(a, b).cast<Value>();
      if (result.getType() != element)
        invalid("the scan's combine function returns " + toString(result.getType()) +
                ", expected " + toString(element));
    }
    tile::ScanReturnOp::create(builder, loc, result);
  } catch (...) {
    // Leave no half-built op behind (the frontend reports the error).
    op->dropAllReferences();
    op->erase();
    throw;
  }
  return op.getResult();
}

Operation *Builder::forBegin(Value lower, Value upper, Value step, std::vector<Value> inits) {
  if (lower.getType() != upper.getType() || lower.getType() != step.getType() ||
      !lower.getType().isSignlessInteger())
    invalid("loop bounds must be integers of one type, got " + toString(lower.getType()) + ", " +
            toString(upper.getType()) + ", " + toString(step.getType()));
  auto op = scf::ForOp::create(builder, loc, lower, upper, step, inits);
  // The body's scf.yield is added by forEnd (the builder adds an empty one
  // only when nothing is carried).
  Block *body = op.getBody();
  if (!body->empty() && body->back().hasTrait<OpTrait::IsTerminator>())
    body->back().erase();
  builder.setInsertionPointToEnd(op.getBody());
  return op.getOperation();
}

void Builder::forSetNumStages(Operation *op, int64_t stages) {
  op->setAttr("tile.num_stages", builder.getI32IntegerAttr(static_cast<int32_t>(stages)));
}

void Builder::forSetWarpSpecialize(Operation *op) {
  op->setAttr("tile.warp_specialize", builder.getUnitAttr());
}

std::vector<Value> Builder::forIterArgs(Operation *op) {
  auto args = llvm::cast<scf::ForOp>(op).getRegionIterArgs();
  return {args.begin(), args.end()};
}

std::vector<Value> Builder::forEnd(Operation *op, std::vector<Value> values) {
  auto forOp = llvm::cast<scf::ForOp>(op);
  if (values.size() != forOp.getNumRegionIterArgs())
    invalid("loop yields " + std::to_string(values.size()) + " values for " +
            std::to_string(forOp.getNumRegionIterArgs()) + " carried variables");
  for (auto [v, arg] : llvm::zip(values, forOp.getRegionIterArgs()))
    if (v.getType() != arg.getType())
      invalid("a loop-carried value changes type in the loop: " + toString(arg.getType()) + " -> " +
              toString(v.getType()));
  builder.setInsertionPointToEnd(forOp.getBody());
  scf::YieldOp::create(builder, loc, values);
  builder.setInsertionPointAfter(forOp);
  return {forOp.getResults().begin(), forOp.getResults().end()};
}

Operation *Builder::ifBegin(Value cond) {
  if (!cond.getType().isInteger(1))
    invalid("an `if` condition must be a scalar i1, got " + toString(cond.getType()));
  auto op = scf::IfOp::create(builder, loc, TypeRange(), cond, /*withElseRegion=*/true);
  op.thenBlock()->getTerminator()->erase();
  op.elseBlock()->getTerminator()->erase();
  builder.setInsertionPointToEnd(op.thenBlock());
  return op.getOperation();
}

void Builder::ifThen(Operation *op) {
  builder.setInsertionPointToEnd(llvm::cast<scf::IfOp>(op).thenBlock());
}

void Builder::ifElse(Operation *op) {
  builder.setInsertionPointToEnd(llvm::cast<scf::IfOp>(op).elseBlock());
}

std::vector<Value> Builder::ifEnd(Operation *op, std::vector<Value> thenValues,
                                  std::vector<Value> elseValues) {
  auto ifOp = llvm::cast<scf::IfOp>(op);
  if (thenValues.size() != elseValues.size())
    invalid("branches yield different numbers of values");
  SmallVector<Type> types;
  for (auto [a, b] : llvm::zip(thenValues, elseValues)) {
    if (a.getType() != b.getType())
      invalid("a variable has different types after the two branches: " + toString(a.getType()) +
              " vs " + toString(b.getType()));
    types.push_back(a.getType());
  }
  builder.setInsertionPointToEnd(ifOp.thenBlock());
  scf::YieldOp::create(builder, loc, thenValues);
  builder.setInsertionPointToEnd(ifOp.elseBlock());
  scf::YieldOp::create(builder, loc, elseValues);
  builder.setInsertionPoint(ifOp);
  auto result = scf::IfOp::create(builder, loc, types, ifOp.getCondition(),
                                  /*withElseRegion=*/true);
  result.getThenRegion().takeBody(ifOp.getThenRegion());
  result.getElseRegion().takeBody(ifOp.getElseRegion());
  ifOp.erase();
  builder.setInsertionPointAfter(result);
  return {result.getResults().begin(), result.getResults().end()};
}

void Builder::beginScratch() {
  scratchSaved.push_back(builder.saveInsertionPoint());
  scratchBlocks.push_back(std::make_unique<Block>());
  builder.setInsertionPointToEnd(scratchBlocks.back().get());
}

void Builder::discardScratch() {
  if (scratchBlocks.empty())
    invalid("no scratch block to discard");
  std::unique_ptr<Block> block = std::move(scratchBlocks.back());
  scratchBlocks.pop_back();
  // Drop uses inside the block before destroying it (ops may use each other).
  for (Operation &op : llvm::reverse(*block))
    op.dropAllUses();
  block->dropAllReferences();
  while (!block->empty())
    block->back().erase();
  builder.restoreInsertionPoint(scratchSaved.back());
  scratchSaved.pop_back();
}

} // namespace kiln::python
