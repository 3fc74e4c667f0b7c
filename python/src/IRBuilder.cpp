//===- IRBuilder.cpp - kiln._C: context, module and IR builder -----------===//
//
// The builder the Python frontend (kiln.compiler.semantic, its only caller)
// drives to emit tile-dialect kernels. The frontend owns type checking and
// user-facing errors; the checks here only keep malformed requests from
// reaching MLIR builders that would assert, and report them as ValueError.
//
//===----------------------------------------------------------------------===//

#include "IRBuilder.h"

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

//===----------------------------------------------------------------------===//
// Context, diagnostics, module
//===----------------------------------------------------------------------===//

Context::Context() {
  DialectRegistry registry;
  kiln::registerKilnDialectsAndPasses(registry);
  // Parallelism comes from compiling several kernels at once (AOT), one
  // context each; a per-context thread pool would only oversubscribe.
  context = std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  context->allowUnregisteredDialects(false);
}

DiagnosticCapture::DiagnosticCapture(MLIRContext &context)
    : handler(&context, [this](Diagnostic &diag) {
        llvm::raw_string_ostream os(messages);
        switch (diag.getSeverity()) {
        case DiagnosticSeverity::Error:
          sawError = true;
          os << "error: ";
          break;
        case DiagnosticSeverity::Warning:
          os << "warning: ";
          break;
        case DiagnosticSeverity::Note:
          os << "note: ";
          break;
        case DiagnosticSeverity::Remark:
          os << "remark: ";
          break;
        }
        os << diag.getLocation() << ": " << diag << "\n";
        for (Diagnostic &note : diag.getNotes())
          os << "note: " << note.getLocation() << ": " << note << "\n";
        return success();
      }) {}

void DiagnosticCapture::check(const std::string &what, bool failed) const {
  if (!sawError && !failed)
    return;
  std::string text = what;
  if (!messages.empty())
    text += ":\n" + messages;
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  throw MLIRError(text);
}

void Module::verify() {
  DiagnosticCapture capture(getContext());
  bool failed = mlir::failed(mlir::verify(get()));
  capture.check("the module does not verify", failed);
}

std::string Module::str(bool debugInfo) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (debugInfo)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module->print(os, flags);
  return text;
}

std::shared_ptr<Module> Module::clone() const {
  OwningOpRef<ModuleOp> copy(llvm::cast<ModuleOp>(module->getOperation()->clone()));
  return std::make_shared<Module>(context, std::move(copy));
}

std::shared_ptr<Module> parseModule(std::shared_ptr<Context> context, const std::string &text) {
  DiagnosticCapture capture(context->get());
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context->get());
  capture.check("cannot parse the module", !module);
  return std::make_shared<Module>(std::move(context), std::move(module));
}

//===----------------------------------------------------------------------===//
// Builder
//===----------------------------------------------------------------------===//

namespace {

[[noreturn]] void invalid(const std::string &message) { throw py::value_error(message); }

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

Type elementType(Type type) { return getElementTypeOrSelf(type); }

bool isIntLike(Type type) { return llvm::isa<IntegerType>(elementType(type)); }
bool isFloatLike(Type type) { return llvm::isa<FloatType>(elementType(type)); }

/// `type` with the shape of `like` (or scalar if `like` is a scalar).
Type withShapeOf(Type like, Type element) {
  if (auto tensor = llvm::dyn_cast<RankedTensorType>(like))
    return RankedTensorType::get(tensor.getShape(), element);
  return element;
}

class Builder {
public:
  explicit Builder(std::shared_ptr<Context> context)
      : context(std::move(context)), builder(&this->context->get()),
        loc(UnknownLoc::get(&this->context->get())) {}

  MLIRContext *ctx() { return &context->get(); }

  // --- locations ---------------------------------------------------------
  void setLoc(const std::string &file, unsigned line, unsigned col) {
    loc = FileLineColLoc::get(ctx(), file, line, col);
  }
  void setUnknownLoc() { loc = UnknownLoc::get(ctx()); }
  std::string getLoc() {
    std::string s;
    llvm::raw_string_ostream os(s);
    loc.print(os);
    return s;
  }

  // --- types -------------------------------------------------------------
  Type intType(unsigned width) {
    if (width != 1 && width != 8 && width != 16 && width != 32 && width != 64)
      invalid("integer width must be 1, 8, 16, 32 or 64, got " + std::to_string(width));
    return builder.getIntegerType(width);
  }
  Type floatType(const std::string &name) {
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
  Type ptrType(Type pointee) {
    if (!llvm::isa<IntegerType, FloatType>(pointee))
      invalid("a pointer points to a scalar integer or float, got " + toString(pointee));
    return tile::PtrType::get(ctx(), pointee);
  }
  Type tensorDescType(Type block, unsigned swizzle) {
    auto tensor = llvm::dyn_cast<RankedTensorType>(block);
    if (!tensor)
      invalid("a tensor descriptor's block is a tile, got " + toString(block));
    std::string message;
    {
      ScopedDiagnosticHandler handler(ctx(), [&](Diagnostic &d) {
        message = d.str();
        return success();
      });
      if (failed(tile::TensorDescType::verify([&] { return mlir::emitError(loc); }, tensor,
                                              swizzle)))
        invalid(message);
    }
    return tile::TensorDescType::get(ctx(), tensor, swizzle);
  }
  Type tensorType(const std::vector<int64_t> &shape, Type element) {
    if (shape.empty())
      return element;
    for (int64_t d : shape)
      if (d <= 0)
        invalid("tile dimensions must be positive");
    return RankedTensorType::get(shape, element);
  }

  // --- module and kernel -------------------------------------------------
  std::shared_ptr<Module> createModule() {
    OwningOpRef<ModuleOp> module(ModuleOp::create(loc));
    builder.setInsertionPointToEnd(module->getBody());
    return std::make_shared<Module>(context, std::move(module));
  }

  std::vector<Value> createKernel(Module &module, const std::string &name,
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

  void ret() { func::ReturnOp::create(builder, loc); }

  // --- constants ---------------------------------------------------------
  Value intConstant(Type type, int64_t value) {
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

  Value floatConstant(Type type, double value) {
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

  // --- tile ops ----------------------------------------------------------
  static tile::ProgramAxis axisOf(int axis) {
    if (axis < 0 || axis > 2)
      invalid("program axis must be 0, 1 or 2, got " + std::to_string(axis));
    return static_cast<tile::ProgramAxis>(axis);
  }
  Value programId(int axis) {
    return tile::ProgramIdOp::create(builder, loc, builder.getI32Type(), axisOf(axis));
  }
  Value numPrograms(int axis) {
    return tile::NumProgramsOp::create(builder, loc, builder.getI32Type(), axisOf(axis));
  }
  Value makeRange(int32_t start, int32_t end) {
    if (end <= start)
      invalid("make_range needs start < end");
    auto type = RankedTensorType::get({int64_t(end) - start}, builder.getI32Type());
    return tile::MakeRangeOp::create(builder, loc, type, builder.getI32IntegerAttr(start),
                                     builder.getI32IntegerAttr(end));
  }
  Value splat(Value src, const std::vector<int64_t> &shape) {
    if (llvm::isa<RankedTensorType>(src.getType()))
      invalid("splat of a tile");
    return tile::SplatOp::create(builder, loc, tensorType(shape, src.getType()), src);
  }
  Value expandDims(Value src, int axis) {
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
  Value broadcast(Value src, const std::vector<int64_t> &shape) {
    auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
    if (!type)
      invalid("broadcast of a scalar (use splat)");
    return tile::BroadcastOp::create(builder, loc, tensorType(shape, type.getElementType()), src);
  }
  /// Result dimension k is source dimension order[k].
  Value trans(Value src, const std::vector<int64_t> &order) {
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
  /// The same elements in row-major order, in another shape.
  Value reshape(Value src, const std::vector<int64_t> &shape) {
    auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
    if (!type)
      invalid("reshape of a scalar (use splat)");
    auto result = llvm::dyn_cast<RankedTensorType>(tensorType(shape, type.getElementType()));
    if (!result || result.getNumElements() != type.getNumElements())
      invalid("reshape must keep the number of elements, into a tile");
    return tile::ReshapeOp::create(builder, loc, result, src);
  }
  /// result[..., 0] = lhs, result[..., 1] = rhs.
  Value join(Value lhs, Value rhs) {
    if (!llvm::isa<RankedTensorType>(lhs.getType()) || lhs.getType() != rhs.getType())
      invalid("join takes two tiles of one type");
    return tile::JoinOp::create(builder, loc, lhs, rhs);
  }
  /// (src[..., 0], src[..., 1]).
  std::pair<Value, Value> split(Value src) {
    auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
    if (!type || type.getRank() < 2 || type.getShape().back() != 2)
      invalid("split needs a tile of rank >= 2 whose last dimension is 2");
    auto op = tile::SplitOp::create(builder, loc, src);
    return {op.getLhs(), op.getRhs()};
  }
  Value addptr(Value ptr, Value offset) {
    if (!llvm::isa<tile::PtrType>(elementType(ptr.getType())) || !isIntLike(offset.getType()))
      invalid("addptr takes pointers and integer offsets");
    return tile::AddPtrOp::create(builder, loc, ptr.getType(), ptr, offset);
  }
  /// `sem`/`scope` ("" for a plain access) make the access ordered; `cache`
  /// ("ca", "cg", ...) and `evict` ("evict_first", ...) are cache hints ("" for
  /// none). The op's verifier checks which combinations are valid.
  Value load(Value ptr, std::optional<Value> mask, std::optional<Value> other,
             const std::string &sem, const std::string &scopeName, const std::string &cache,
             const std::string &evict) {
    if (!llvm::isa<tile::PtrType>(elementType(ptr.getType())))
      invalid("load from a non-pointer " + toString(ptr.getType()));
    if (other && !mask)
      invalid("load: 'other' needs a mask");
    auto op = tile::LoadOp::create(builder, loc, ptr, mask.value_or(Value()),
                                   other.value_or(Value()));
    setOrdering(op, sem, scopeName);
    setCacheHints(op, cache, evict);
    return op;
  }
  void store(Value ptr, Value value, std::optional<Value> mask, const std::string &sem,
             const std::string &scopeName, const std::string &cache, const std::string &evict) {
    if (!llvm::isa<tile::PtrType>(elementType(ptr.getType())))
      invalid("store to a non-pointer " + toString(ptr.getType()));
    auto op = tile::StoreOp::create(builder, loc, ptr, value, mask.value_or(Value()), IntegerAttr(),
                                    tile::MemSemanticAttr(), tile::MemScopeAttr(),
                                    tile::CacheModifierAttr(), tile::EvictionPolicyAttr());
    setOrdering(op, sem, scopeName);
    setCacheHints(op, cache, evict);
  }
  template <typename OpTy>
  void setOrdering(OpTy op, const std::string &sem, const std::string &scopeName) {
    if (sem.empty())
      return;
    op.setSemAttr(tile::MemSemanticAttr::get(ctx(), semantic(sem)));
    op.setScopeAttr(tile::MemScopeAttr::get(ctx(), scope(scopeName)));
  }
  template <typename OpTy>
  void setCacheHints(OpTy op, const std::string &cache, const std::string &evict) {
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
  void fence(const std::string &sem, const std::string &scopeName) {
    tile::FenceOp::create(builder, loc, semantic(sem), scope(scopeName));
  }

  /// The kernel being built: the function around the insertion point.
  func::FuncOp getKernel(const std::string &what) {
    Operation *parent = builder.getInsertionBlock()->getParentOp();
    auto func = parent->getParentOfType<func::FuncOp>();
    if (auto self = llvm::dyn_cast<func::FuncOp>(parent))
      func = self;
    if (!func)
      invalid(what + " outside a kernel");
    return func;
  }

  /// Marks the kernel being built with tile.min_programs_per_sm.
  void setMinProgramsPerSM(int32_t programs) {
    getKernel("min_programs_per_sm")
        ->setAttr(tile::TileDialect::getMinProgramsPerSMAttrName(),
                  builder.getI32IntegerAttr(programs));
  }

  /// Marks the kernel being built with tile.pdl.
  void markPdl(const std::string &what) {
    getKernel(what)->setAttr(tile::TileDialect::getPdlAttrName(), builder.getUnitAttr());
  }

  /// tile.bulk_load of a `size`-element tile from the scalar pointer `ptr`,
  /// copying only `count` (i32) elements when given.
  Value bulkLoad(Value ptr, int64_t size, std::optional<Value> count) {
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

  Value descLoad(Value desc, const std::vector<Value> &indices) {
    if (!llvm::isa<tile::TensorDescType>(desc.getType()))
      invalid("load through a non-descriptor " + toString(desc.getType()));
    return tile::DescLoadOp::create(builder, loc, desc, indices);
  }
  void descStore(Value desc, const std::vector<Value> &indices, Value value) {
    if (!llvm::isa<tile::TensorDescType>(desc.getType()))
      invalid("store through a non-descriptor " + toString(desc.getType()));
    tile::DescStoreOp::create(builder, loc, desc, indices, value);
  }

  // --- arith / math ------------------------------------------------------
  /// Marks a float op "afn" (approximate functions): transcendentals become the GPU's
  /// approximate hardware paths, division a reciprocal approximation.
  static Value approximate(Value v, bool approx) {
    if (approx)
      addFastMath(v, arith::FastMathFlags::afn);
    return v;
  }

  /// Adds `flags` to the fast-math flags of the float op defining `v`.
  static void addFastMath(Value v, arith::FastMathFlags flags) {
    auto op = llvm::dyn_cast_or_null<arith::ArithFastMathInterface>(v.getDefiningOp());
    if (!op)
      return;
    if (arith::FastMathFlagsAttr old = op.getFastMathFlagsAttr())
      flags = flags | old.getValue();
    op->setAttr("fastmath", arith::FastMathFlagsAttr::get(op->getContext(), flags));
  }

  /// With fp contraction on (the kernel's `fp_fusion`), a float add, sub or mul
  /// may fuse with its neighbours into an fma (one rounding instead of two).
  Value contractible(Value v) {
    if (fpContract)
      addFastMath(v, arith::FastMathFlags::contract);
    return v;
  }
  void setFPContract(bool on) { fpContract = on; }

  Value binary(const std::string &name, Value lhs, Value rhs, bool approx) {
    return approximate(binaryImpl(name, lhs, rhs), approx);
  }

  Value binaryImpl(const std::string &name, Value lhs, Value rhs) {
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

  Value unary(const std::string &name, Value x, bool approx) {
    return approximate(unaryImpl(name, x), approx);
  }

  Value unaryImpl(const std::string &name, Value x) {
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

  Value fma(Value a, Value b, Value c) {
    if (a.getType() != b.getType() || a.getType() != c.getType() || !isFloatLike(a.getType()))
      invalid("fma takes three floats of one type");
    return math::FmaOp::create(builder, loc, a, b, c);
  }

  /// tile.dot: acc + a @ b (the semantic layer checked the shapes and types;
  /// the op's verifier checks them again), with maxNumImpreciseAcc when given.
  Value dot(Value a, Value b, Value acc, std::optional<int64_t> maxNumImpreciseAcc) {
    for (Value v : {a, b, acc})
      if (!llvm::isa<RankedTensorType>(v.getType()))
        invalid("dot takes tiles, got " + toString(v.getType()));
    IntegerAttr bound;
    if (maxNumImpreciseAcc)
      bound = builder.getI32IntegerAttr(*maxNumImpreciseAcc);
    return tile::DotOp::create(builder, loc, acc.getType(), a, b, acc, bound);
  }

  Value select(Value cond, Value a, Value b) {
    if (a.getType() != b.getType())
      invalid("select: operand types differ: " + toString(a.getType()) + " vs " +
              toString(b.getType()));
    if (cond.getType() != withShapeOf(a.getType(), builder.getI1Type()) &&
        cond.getType() != builder.getI1Type())
      invalid("select: condition " + toString(cond.getType()) + " does not match " +
              toString(a.getType()));
    return arith::SelectOp::create(builder, loc, cond, a, b);
  }

  Value cmpi(const std::string &pred, Value lhs, Value rhs) {
    auto p = arith::symbolizeCmpIPredicate(pred);
    if (!p)
      invalid("unknown integer predicate '" + pred + "'");
    if (lhs.getType() != rhs.getType() || !isIntLike(lhs.getType()))
      invalid("cmpi takes two integers of one type");
    return arith::CmpIOp::create(builder, loc, *p, lhs, rhs);
  }

  Value cmpf(const std::string &pred, Value lhs, Value rhs) {
    auto p = arith::symbolizeCmpFPredicate(pred);
    if (!p)
      invalid("unknown float predicate '" + pred + "'");
    if (lhs.getType() != rhs.getType() || !isFloatLike(lhs.getType()))
      invalid("cmpf takes two floats of one type");
    return arith::CmpFOp::create(builder, loc, *p, lhs, rhs);
  }

  Value cast(const std::string &kind, Value x, Type to) {
    Type from = x.getType();
    if (llvm::isa<RankedTensorType>(from) != llvm::isa<RankedTensorType>(to) ||
        (llvm::isa<RankedTensorType>(from) &&
         llvm::cast<RankedTensorType>(from).getShape() != llvm::cast<RankedTensorType>(to).getShape()))
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

  // --- atomics -----------------------------------------------------------
  static tile::MemSemantic semantic(const std::string &sem) {
    if (auto s = tile::symbolizeMemSemantic(sem))
      return *s;
    invalid("unknown memory semantic '" + sem + "' (relaxed, acquire, release, acq_rel)");
  }
  static tile::MemScope scope(const std::string &scope) {
    if (auto s = tile::symbolizeMemScope(scope))
      return *s;
    invalid("unknown memory scope '" + scope + "' (cta, gpu, sys)");
  }

  Value atomicRMW(const std::string &kind, const std::string &sem, const std::string &scopeName,
                  Value ptr, Value val, std::optional<Value> mask) {
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

  Value atomicCAS(const std::string &sem, const std::string &scopeName, Value ptr, Value cmp,
                  Value val) {
    if (!llvm::isa<tile::PtrType>(elementType(ptr.getType())))
      invalid("atomic_cas on a non-pointer " + toString(ptr.getType()));
    return tile::AtomicCASOp::create(builder, loc, tile::getPointeeType(ptr.getType()),
                                     semantic(sem),
                                     scope(scopeName), ptr, cmp, val)
        .getResult();
  }

  // --- programmatic dependent launch --------------------------------------
  /// The griddepcontrol ops; the kernel that holds them is launched with PDL
  /// (tile.pdl).
  void pdlWait() {
    tile::PdlWaitOp::create(builder, loc);
    markPdl("pdl_wait");
  }
  void pdlLaunchDependents() {
    tile::PdlLaunchDependentsOp::create(builder, loc);
    markPdl("pdl_launch_dependents");
  }

  // --- thread-block clusters ----------------------------------------------
  Value clusterId(int axis) {
    return tile::ClusterIdOp::create(builder, loc, builder.getI32Type(), axisOf(axis));
  }
  Value numClusters(int axis) {
    return tile::NumClustersOp::create(builder, loc, builder.getI32Type(), axisOf(axis));
  }
  Value clusterCtaId(int axis) {
    return tile::ClusterCtaIdOp::create(builder, loc, builder.getI32Type(), axisOf(axis));
  }
  Value clusterCtaRank() {
    return tile::ClusterCtaRankOp::create(builder, loc, builder.getI32Type());
  }
  Value clusterSize() { return tile::ClusterSizeOp::create(builder, loc, builder.getI32Type()); }
  void clusterBarrier() { tile::ClusterBarrierOp::create(builder, loc); }
  Value clusterLoad(Value src, Value rank) {
    if (!llvm::isa<RankedTensorType>(src.getType()))
      invalid("cluster_load needs a tile, got " + toString(src.getType()));
    if (!rank.getType().isInteger(32))
      invalid("cluster_load needs an i32 rank, got " + toString(rank.getType()));
    return tile::ClusterLoadOp::create(builder, loc, src.getType(), src, rank);
  }
  /// tile.cluster_gather of `src` over a cluster of `size` blocks: [size, src shape...].
  Value clusterGather(Value src, int64_t size) {
    auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
    if (!type)
      invalid("cluster_gather needs a tile, got " + toString(src.getType()));
    SmallVector<int64_t> shape{size};
    llvm::append_range(shape, type.getShape());
    return tile::ClusterGatherOp::create(
        builder, loc, RankedTensorType::get(shape, type.getElementType()), src);
  }

  /// tile.cluster_sum of the tiles `srcs` (one op, one exchange): their sums.
  std::vector<Value> clusterSum(const std::vector<Value> &srcs) {
    for (Value src : srcs) {
      auto type = llvm::dyn_cast<RankedTensorType>(src.getType());
      Type element = type ? type.getElementType() : Type();
      if (!type || !(element.isF32() || element.isF64() || element.isInteger(32) ||
                     element.isInteger(64)))
        invalid("cluster_sum needs tiles of 32- or 64-bit numbers, got " +
                toString(src.getType()));
    }
    auto op = tile::ClusterSumOp::create(builder, loc, srcs);
    return std::vector<Value>(op.getResults().begin(), op.getResults().end());
  }

  // --- reductions --------------------------------------------------------
  /// tile.reduce of `src` along `axis` whose combine region applies the binary
  /// op `combine` (a name accepted by `binary`).
  Value reduce(Value src, int axis, const std::string &combine) {
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

  /// tile.reduce of the tiles `srcs` (one shape) together along `axis`. `combine`
  /// is a Python callable that, with the insertion point in the combine region,
  /// takes the list of its 2N arguments (the N accumulated values, then the N
  /// new ones) and returns the N combined values (the frontend inlines a
  /// @kiln.jit function there). Returns the N results.
  std::vector<Value> reduceCombine(std::vector<Value> srcs, int axis,
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

  /// tile.scan of `src` along `axis`. `combine` is the name of a binary op
  /// (as for `reduce`) or a Python callable that, with the insertion point in
  /// the combine region, takes its two arguments and returns the combined
  /// value (the frontend inlines a @kiln.jit function there).
  Value scan(Value src, int axis, const py::object &combine) {
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

  // --- structured control flow ---------------------------------------------
  /// scf.for from `lower` to `upper` by `step` (same integer type) carrying
  /// `inits`; the insertion point moves into the body. Returns the op.
  Operation *forBegin(Value lower, Value upper, Value step, std::vector<Value> inits) {
    if (lower.getType() != upper.getType() || lower.getType() != step.getType() ||
        !lower.getType().isSignlessInteger())
      invalid("loop bounds must be integers of one type, got " + toString(lower.getType()) +
              ", " + toString(upper.getType()) + ", " + toString(step.getType()));
    auto op = scf::ForOp::create(builder, loc, lower, upper, step, inits);
    // The body's scf.yield is added by forEnd (the builder adds an empty one
    // only when nothing is carried).
    Block *body = op.getBody();
    if (!body->empty() && body->back().hasTrait<OpTrait::IsTerminator>())
      body->back().erase();
    builder.setInsertionPointToEnd(op.getBody());
    return op.getOperation();
  }
  /// Marks a loop for kiln-tile-pipeline-loads.
  void forSetNumStages(Operation *op, int64_t stages) {
    op->setAttr("tile.num_stages", builder.getI32IntegerAttr(static_cast<int32_t>(stages)));
  }
  /// Marks a loop for kiln-tile-warp-specialize.
  void forSetWarpSpecialize(Operation *op) {
    op->setAttr("tile.warp_specialize", builder.getUnitAttr());
  }
  Value forInductionVar(Operation *op) { return llvm::cast<scf::ForOp>(op).getInductionVar(); }
  std::vector<Value> forIterArgs(Operation *op) {
    auto args = llvm::cast<scf::ForOp>(op).getRegionIterArgs();
    return {args.begin(), args.end()};
  }
  /// Ends the body with `scf.yield values` and moves after the loop; returns its results.
  std::vector<Value> forEnd(Operation *op, std::vector<Value> values) {
    auto forOp = llvm::cast<scf::ForOp>(op);
    if (values.size() != forOp.getNumRegionIterArgs())
      invalid("loop yields " + std::to_string(values.size()) + " values for " +
              std::to_string(forOp.getNumRegionIterArgs()) + " carried variables");
    for (auto [v, arg] : llvm::zip(values, forOp.getRegionIterArgs()))
      if (v.getType() != arg.getType())
        invalid("a loop-carried value changes type in the loop: " + toString(arg.getType()) +
                " -> " + toString(v.getType()));
    builder.setInsertionPointToEnd(forOp.getBody());
    scf::YieldOp::create(builder, loc, values);
    builder.setInsertionPointAfter(forOp);
    return {forOp.getResults().begin(), forOp.getResults().end()};
  }

  /// scf.if on a scalar i1 with both regions, no results yet (ifEnd adds them);
  /// the insertion point moves into the then-region.
  Operation *ifBegin(Value cond) {
    if (!cond.getType().isInteger(1))
      invalid("an `if` condition must be a scalar i1, got " + toString(cond.getType()));
    auto op = scf::IfOp::create(builder, loc, TypeRange(), cond, /*withElseRegion=*/true);
    op.thenBlock()->getTerminator()->erase();
    op.elseBlock()->getTerminator()->erase();
    builder.setInsertionPointToEnd(op.thenBlock());
    return op.getOperation();
  }
  void ifThen(Operation *op) {
    builder.setInsertionPointToEnd(llvm::cast<scf::IfOp>(op).thenBlock());
  }
  void ifElse(Operation *op) {
    builder.setInsertionPointToEnd(llvm::cast<scf::IfOp>(op).elseBlock());
  }
  /// Yields `thenValues`/`elseValues` (same types) and replaces the op by one
  /// with those results; moves after it and returns the results.
  std::vector<Value> ifEnd(Operation *op, std::vector<Value> thenValues,
                           std::vector<Value> elseValues) {
    auto ifOp = llvm::cast<scf::IfOp>(op);
    if (thenValues.size() != elseValues.size())
      invalid("branches yield different numbers of values");
    SmallVector<Type> types;
    for (auto [a, b] : llvm::zip(thenValues, elseValues)) {
      if (a.getType() != b.getType())
        invalid("a variable has different types after the two branches: " +
                toString(a.getType()) + " vs " + toString(b.getType()));
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

  /// A detached block to emit into speculatively (to learn the types a loop
  /// body produces); `discardScratch` drops it and restores the insertion point.
  void beginScratch() {
    scratchSaved.push_back(builder.saveInsertionPoint());
    scratchBlocks.push_back(std::make_unique<Block>());
    builder.setInsertionPointToEnd(scratchBlocks.back().get());
  }
  void discardScratch() {
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

private:
  std::vector<OpBuilder::InsertPoint> scratchSaved;
  std::vector<std::unique_ptr<Block>> scratchBlocks;

  std::shared_ptr<Context> context;
  OpBuilder builder;
  Location loc;
  /// Float add/sub/mul are created contractible (see `contractible`).
  bool fpContract = false;
};

std::optional<int64_t> getIntAttr(Module &module, const std::string &symbol,
                                  const std::string &attr) {
  Operation *op = SymbolTable::lookupSymbolIn(module.get(), symbol);
  if (!op)
    return std::nullopt;
  if (auto value = op->getAttrOfType<IntegerAttr>(attr))
    return value.getInt();
  // An array (nvvm.reqntid): the product of its elements.
  if (auto values = op->getAttrOfType<DenseI32ArrayAttr>(attr)) {
    int64_t product = 1;
    for (int32_t v : values.asArrayRef())
      product *= v;
    return product;
  }
  return std::nullopt;
}

/// The string array attribute `attr` of the symbol `symbol` (tile.features).
std::optional<std::vector<std::string>>
getStringArrayAttr(Module &module, const std::string &symbol, const std::string &attr) {
  Operation *op = SymbolTable::lookupSymbolIn(module.get(), symbol);
  if (!op)
    return std::nullopt;
  auto values = op->getAttrOfType<ArrayAttr>(attr);
  if (!values || !llvm::all_of(values, llvm::IsaPred<StringAttr>))
    return std::nullopt;
  std::vector<std::string> strings;
  for (StringRef value : values.getAsValueRange<StringAttr>())
    strings.push_back(value.str());
  return strings;
}

/// The i32 array attribute `attr` of the symbol `symbol` (tile.register_split).
std::optional<std::vector<int32_t>> getIntArrayAttr(Module &module, const std::string &symbol,
                                                    const std::string &attr) {
  Operation *op = SymbolTable::lookupSymbolIn(module.get(), symbol);
  if (!op)
    return std::nullopt;
  auto values = op->getAttrOfType<DenseI32ArrayAttr>(attr);
  if (!values)
    return std::nullopt;
  return std::vector<int32_t>(values.asArrayRef().begin(), values.asArrayRef().end());
}

/// Whether the symbol `symbol` carries the attribute `attr` (tile.pdl).
bool hasAttr(Module &module, const std::string &symbol, const std::string &attr) {
  Operation *op = SymbolTable::lookupSymbolIn(module.get(), symbol);
  return op && op->hasAttr(attr);
}

} // namespace

void populateIRBuilder(py::module_ &m) {
  py::register_exception<MLIRError>(m, "MLIRError", PyExc_RuntimeError);

  py::class_<Context, std::shared_ptr<Context>>(m, "Context",
                                                "An MLIR context with kiln's dialects loaded")
      .def(py::init<>());

  py::class_<Type>(m, "Type")
      .def("__str__", [](Type t) { return toString(t); })
      .def("__repr__", [](Type t) { return "<kiln._C.Type " + toString(t) + ">"; })
      .def("__eq__", [](Type a, Type b) { return a == b; })
      .def("__hash__", [](Type t) { return static_cast<size_t>(hash_value(t)); })
      .def("is_tensor", [](Type t) { return llvm::isa<RankedTensorType>(t); })
      .def("is_ptr", [](Type t) { return llvm::isa<tile::PtrType>(t); })
      .def("is_tensordesc", [](Type t) { return llvm::isa<tile::TensorDescType>(t); })
      .def("is_int", [](Type t) { return llvm::isa<IntegerType>(t); })
      .def("is_float", [](Type t) { return llvm::isa<FloatType>(t); })
      .def_property_readonly("shape",
                             [](Type t) {
                               std::vector<int64_t> shape;
                               if (auto r = llvm::dyn_cast<RankedTensorType>(t))
                                 shape.assign(r.getShape().begin(), r.getShape().end());
                               return shape;
                             })
      .def_property_readonly("element_type", [](Type t) { return getElementTypeOrSelf(t); })
      .def_property_readonly("pointee",
                             [](Type t) -> std::optional<Type> {
                               if (auto p = llvm::dyn_cast<tile::PtrType>(t))
                                 return p.getPointeeType();
                               return std::nullopt;
                             })
      .def_property_readonly("bitwidth", [](Type t) -> unsigned {
        if (t.isIntOrFloat())
          return t.getIntOrFloatBitWidth();
        if (llvm::isa<tile::PtrType>(t))
          return 64;
        return 0;
      });

  py::class_<Value>(m, "Value")
      .def_property_readonly("type", [](Value v) { return v.getType(); })
      .def("__repr__", [](Value v) { return "<kiln._C.Value " + toString(v) + ">"; });

  py::class_<Module, std::shared_ptr<Module>>(m, "Module")
      .def("verify", &Module::verify, "Verifies the module; raises MLIRError on failure")
      .def("str", &Module::str, py::arg("debug_info") = false)
      .def("__str__", [](const Module &mod) { return mod.str(false); })
      .def("clone", &Module::clone)
      .def(
          "get_int_attr",
          [](Module &mod, const std::string &symbol, const std::string &attr) {
            return getIntAttr(mod, symbol, attr);
          },
          "The integer attribute `attr` of the symbol `symbol` (of an i32 array: the product "
          "of its elements), or None")
      .def("get_int_array_attr", &getIntArrayAttr, py::arg("symbol"), py::arg("attr"),
           "The i32 array attribute `attr` of the symbol `symbol` as a list, or None")
      .def("get_string_array_attr", &getStringArrayAttr, py::arg("symbol"), py::arg("attr"),
           "The array-of-strings attribute `attr` of the symbol `symbol` as a list, or None")
      .def("has_attr", &hasAttr, py::arg("symbol"), py::arg("attr"),
           "Whether the symbol `symbol` exists and carries the attribute `attr`");

  m.def("parse_module", &parseModule, py::arg("context"), py::arg("text"));

  // Handles of structured ops under construction (owned by their module).
  py::class_<Operation, std::unique_ptr<Operation, py::nodelete>>(m, "Operation")
      .def("__repr__", [](Operation *op) {
        return "<kiln._C.Operation " + op->getName().getStringRef().str() + ">";
      });

  py::class_<Builder>(m, "Builder")
      .def(py::init<std::shared_ptr<Context>>(), py::keep_alive<1, 2>())
      .def("set_loc", &Builder::setLoc, py::arg("file"), py::arg("line"), py::arg("col"))
      .def("set_fp_contract", &Builder::setFPContract, py::arg("on"))
      .def("set_unknown_loc", &Builder::setUnknownLoc)
      .def("get_loc", &Builder::getLoc)
      .def("int_type", &Builder::intType)
      .def("float_type", &Builder::floatType)
      .def("ptr_type", &Builder::ptrType)
      .def("tensor_type", &Builder::tensorType)
      .def("tensordesc_type", &Builder::tensorDescType)
      .def("create_module", &Builder::createModule)
      .def("create_kernel", &Builder::createKernel, py::arg("module"), py::arg("name"),
           py::arg("arg_types"), py::arg("divisibility"), py::arg("num_warps"),
           py::arg("cluster") = std::vector<int32_t>{1, 1, 1}, py::arg("maxnreg") = 0)
      .def("ret", &Builder::ret)
      .def("int_constant", &Builder::intConstant)
      .def("float_constant", &Builder::floatConstant)
      .def("program_id", &Builder::programId)
      .def("num_programs", &Builder::numPrograms)
      .def("make_range", &Builder::makeRange)
      .def("splat", &Builder::splat)
      .def("expand_dims", &Builder::expandDims)
      .def("broadcast", &Builder::broadcast)
      .def("trans", &Builder::trans)
      .def("reshape", &Builder::reshape)
      .def("join", &Builder::join)
      .def("split", &Builder::split)
      .def("addptr", &Builder::addptr)
      .def("load", &Builder::load, py::arg("ptr"), py::arg("mask") = py::none(),
           py::arg("other") = py::none(), py::arg("sem") = "", py::arg("scope") = "",
           py::arg("cache") = "", py::arg("evict") = "")
      .def("fence", &Builder::fence)
      .def("set_min_programs_per_sm", &Builder::setMinProgramsPerSM)
      .def("bulk_load", &Builder::bulkLoad, py::arg("ptr"), py::arg("size"),
           py::arg("count") = py::none())
      .def("desc_load", &Builder::descLoad)
      .def("desc_store", &Builder::descStore)
      .def("store", &Builder::store, py::arg("ptr"), py::arg("value"), py::arg("mask") = py::none(),
           py::arg("sem") = "", py::arg("scope") = "", py::arg("cache") = "", py::arg("evict") = "")
      .def("binary", &Builder::binary, py::arg("name"), py::arg("lhs"), py::arg("rhs"),
           py::arg("approx") = false)
      .def("unary", &Builder::unary, py::arg("name"), py::arg("x"), py::arg("approx") = false)
      .def("fma", &Builder::fma)
      .def("dot", &Builder::dot, py::arg("a"), py::arg("b"), py::arg("acc"),
           py::arg("max_num_imprecise_acc") = py::none())
      .def("select", &Builder::select)
      .def("cmpi", &Builder::cmpi)
      .def("cmpf", &Builder::cmpf)
      .def("cast", &Builder::cast)
      .def("atomic_rmw", &Builder::atomicRMW, py::arg("kind"), py::arg("sem"),
           py::arg("scope"), py::arg("ptr"), py::arg("val"), py::arg("mask") = py::none())
      .def("atomic_cas", &Builder::atomicCAS)
      .def("pdl_wait", &Builder::pdlWait)
      .def("pdl_launch_dependents", &Builder::pdlLaunchDependents)
      .def("cluster_id", &Builder::clusterId)
      .def("num_clusters", &Builder::numClusters)
      .def("cluster_cta_id", &Builder::clusterCtaId)
      .def("cluster_cta_rank", &Builder::clusterCtaRank)
      .def("cluster_size", &Builder::clusterSize)
      .def("cluster_barrier", &Builder::clusterBarrier)
      .def("cluster_load", &Builder::clusterLoad)
      .def("cluster_gather", &Builder::clusterGather)
      .def("cluster_sum", &Builder::clusterSum)
      .def("reduce", &Builder::reduce, py::arg("src"), py::arg("axis"), py::arg("combine"))
      .def("reduce_combine", &Builder::reduceCombine, py::arg("srcs"), py::arg("axis"),
           py::arg("combine"))
      .def("scan", &Builder::scan, py::arg("src"), py::arg("axis"), py::arg("combine"))
      .def("for_begin", &Builder::forBegin, py::return_value_policy::reference)
      .def("for_set_num_stages", &Builder::forSetNumStages)
      .def("for_set_warp_specialize", &Builder::forSetWarpSpecialize)
      .def("for_induction_var", &Builder::forInductionVar)
      .def("for_iter_args", &Builder::forIterArgs)
      .def("for_end", &Builder::forEnd)
      .def("if_begin", &Builder::ifBegin, py::return_value_policy::reference)
      .def("if_then", &Builder::ifThen)
      .def("if_else", &Builder::ifElse)
      .def("if_end", &Builder::ifEnd)
      .def("begin_scratch", &Builder::beginScratch)
      .def("discard_scratch", &Builder::discardScratch);
}

} // namespace kiln::python
