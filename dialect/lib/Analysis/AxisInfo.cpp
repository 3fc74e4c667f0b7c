//===- AxisInfo.cpp - contiguity/divisibility/constancy analysis ------------===//

#include "kiln/Dialect/Tile/Analysis/AxisInfo.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <numeric>

using namespace mlir;
using namespace kiln::tile;

int64_t kiln::tile::highestPowerOf2Divisor(int64_t value) {
  if (value == 0)
    return AxisInfo::kMaxDivisibility;
  int64_t d = value & -value;
  return std::min<int64_t>(d < 0 ? -d : d, AxisInfo::kMaxDivisibility);
}

/// Size of the last dimension of `type` (1 for scalars).
static int64_t lastDimSize(Type type) {
  if (auto tensor = llvm::dyn_cast<RankedTensorType>(type))
    return tensor.getRank() == 0 ? 1 : tensor.getShape().back();
  return 1;
}

/// Info of a value that is the same everywhere (a scalar, a splat).
static AxisInfo uniform(Type type, int64_t divisibility) {
  return {1, divisibility, lastDimSize(type)};
}

static int64_t gcd(int64_t a, int64_t b) { return std::gcd(a, b); }

/// Bytes a step of one element moves a value of `type`: the pointee's size for
/// pointers (tiles of them), 1 for integers.
static int64_t pointeeBytes(Type type) {
  if (auto ptr = llvm::dyn_cast<PtrType>(mlir::getElementTypeOrSelf(type)))
    return std::max<int64_t>(1, ptr.getPointeeType().getIntOrFloatBitWidth() / 8);
  return 1;
}

/// Divisibility of `info`'s value at the start of every aligned run of
/// `runLength` elements (a power of two). `info.divisibility` holds only at the
/// starts of its own contiguous runs: inside such a run the value at offset k
/// is start + k * step, so where a shorter run begins only gcd(divisibility,
/// runLength * step) is known (step: 1, or the pointee size for pointers).
static int64_t divisibilityAt(const AxisInfo &info, int64_t runLength, int64_t step = 1) {
  if (info.contiguity <= runLength)
    return info.divisibility;
  return gcd(info.divisibility, std::min(runLength * step, AxisInfo::kMaxDivisibility));
}

AxisInfoAnalysis::AxisInfoAnalysis(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments()) {
    int64_t divisibility = 1;
    if (auto attr = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                       TileDialect::getDivisibilityAttrName()))
      divisibility = attr.getInt();
    infos[arg] = uniform(arg.getType(), divisibility);
  }
  func.walk([&](Operation *op) { visit(op); });
}

AxisInfo AxisInfoAnalysis::get(Value value) const {
  auto it = infos.find(value);
  if (it != infos.end())
    return it->second;
  // The induction variable of an scf.for is lb + k * step for some k >= 0.
  if (auto arg = llvm::dyn_cast<BlockArgument>(value))
    if (auto loop = llvm::dyn_cast_or_null<scf::ForOp>(arg.getOwner()->getParentOp()))
      if (arg == loop.getInductionVar())
        return uniform(arg.getType(), gcd(get(loop.getLowerBound()).divisibility,
                                          get(loop.getStep()).divisibility));
  return AxisInfo();
}

void AxisInfoAnalysis::visit(Operation *op) {
  if (op->getNumResults() != 1)
    return;
  Value result = op->getResult(0);
  Type type = result.getType();
  auto operand = [&](unsigned i) { return get(op->getOperand(i)); };

  std::optional<AxisInfo> info =
      llvm::TypeSwitch<Operation *, std::optional<AxisInfo>>(op)
          .Case<arith::ConstantOp>([&](arith::ConstantOp c) -> std::optional<AxisInfo> {
            APInt value;
            if (matchPattern(c.getResult(), m_ConstantInt(&value)))
              return uniform(type, highestPowerOf2Divisor(value.getSExtValue()));
            return std::nullopt;
          })
          .Case<ProgramIdOp, NumProgramsOp>([&](auto) { return uniform(type, 1); })
          .Case<MakeRangeOp>([&](MakeRangeOp r) -> std::optional<AxisInfo> {
            return AxisInfo{lastDimSize(type), highestPowerOf2Divisor(r.getStart()), 1};
          })
          .Case<IotaOp>([&](IotaOp iota) -> std::optional<AxisInfo> {
            auto tensor = llvm::cast<RankedTensorType>(type);
            int64_t start = highestPowerOf2Divisor(iota.getStartAttr().getInt());
            if (int64_t(iota.getDim()) == tensor.getRank() - 1) // consecutive, like make_range
              return AxisInfo{lastDimSize(type), start, 1};
            // Constant along the last dimension; rows differ by one.
            return AxisInfo{1, tensor.getDimSize(iota.getDim()) == 1 ? start : 1,
                            lastDimSize(type)};
          })
          .Case<SplatOp>([&](auto) { return uniform(type, operand(0).divisibility); })
          .Case<ExpandDimsOp>([&](ExpandDimsOp e) -> std::optional<AxisInfo> {
            auto srcType = llvm::cast<RankedTensorType>(e.getSrc().getType());
            if (int64_t(e.getAxis()) == srcType.getRank()) // new unit last dimension
              return AxisInfo{1, divisibilityAt(operand(0), 1), 1};
            return operand(0);
          })
          .Case<BroadcastOp>([&](BroadcastOp b) -> std::optional<AxisInfo> {
            if (lastDimSize(b.getSrc().getType()) == 1 && lastDimSize(type) != 1)
              return uniform(type, operand(0).divisibility);
            return operand(0);
          })
          .Case<arith::AddIOp, AddPtrOp>([&](Operation *) -> std::optional<AxisInfo> {
            AxisInfo a = operand(0), b = operand(1);
            int64_t scale = pointeeBytes(type);
            int64_t contiguity =
                std::max(gcd(a.contiguity, b.constancy), gcd(b.contiguity, a.constancy));
            int64_t divB =
                std::min(divisibilityAt(b, contiguity) * scale, AxisInfo::kMaxDivisibility);
            return AxisInfo{contiguity, gcd(divisibilityAt(a, contiguity, scale), divB),
                            gcd(a.constancy, b.constancy)};
          })
          .Case<arith::SubIOp>([&](auto) -> std::optional<AxisInfo> {
            AxisInfo a = operand(0), b = operand(1);
            int64_t contiguity = gcd(a.contiguity, b.constancy);
            return AxisInfo{contiguity,
                            gcd(divisibilityAt(a, contiguity), divisibilityAt(b, contiguity)),
                            gcd(a.constancy, b.constancy)};
          })
          .Case<arith::MulIOp>([&](auto) -> std::optional<AxisInfo> {
            AxisInfo a = operand(0), b = operand(1);
            int64_t contiguity = 1;
            if (matchPattern(op->getOperand(1), m_One()))
              contiguity = a.contiguity;
            else if (matchPattern(op->getOperand(0), m_One()))
              contiguity = b.contiguity;
            // [0, 1, 2, ...] * s is a multiple of s, not of the range's start.
            return AxisInfo{contiguity,
                            std::min(divisibilityAt(a, contiguity) * divisibilityAt(b, contiguity),
                                     AxisInfo::kMaxDivisibility),
                            gcd(a.constancy, b.constancy)};
          })
          .Case<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp, arith::IndexCastOp>(
              [&](auto) { return operand(0); })
          .Case<arith::CmpIOp>([&](arith::CmpIOp cmp) -> std::optional<AxisInfo> {
            AxisInfo a = operand(0), b = operand(1);
            int64_t constancy = gcd(a.constancy, b.constancy);
            int64_t size = lastDimSize(type);
            // A run of consecutive values aligned to g cannot straddle a
            // bound that is a multiple of g: x < B and x >= B (also written
            // B > x, B <= x) split between B - 1 and B, which lies between such
            // runs. x <= B, x > B split between B and B + 1, inside a run.
            using P = arith::CmpIPredicate;
            P pred = cmp.getPredicate();
            bool boundOnRight =
                pred == P::slt || pred == P::ult || pred == P::sge || pred == P::uge;
            bool boundOnLeft = pred == P::sgt || pred == P::ugt || pred == P::sle || pred == P::ule;
            if (boundOnRight && b.constancy == size)
              constancy =
                  std::max(constancy, gcd(a.contiguity, gcd(a.divisibility, b.divisibility)));
            if (boundOnLeft && a.constancy == size)
              constancy =
                  std::max(constancy, gcd(b.contiguity, gcd(b.divisibility, a.divisibility)));
            return AxisInfo{1, 1, constancy};
          })
          .Case<arith::AndIOp, arith::OrIOp>([&](auto) -> std::optional<AxisInfo> {
            AxisInfo a = operand(0), b = operand(1);
            return AxisInfo{1, 1, gcd(a.constancy, b.constancy)};
          })
          .Case<arith::SelectOp>([&](arith::SelectOp) -> std::optional<AxisInfo> {
            // Either side, chosen per run of equal conditions: what both sides
            // have on such runs (a pointer chosen between two aligned rows
            // stays aligned, so its loads stay vectors).
            AxisInfo c = operand(0), a = operand(1), b = operand(2);
            int64_t constancy = gcd(c.constancy, gcd(a.constancy, b.constancy));
            int64_t contiguity = gcd(c.constancy, gcd(a.contiguity, b.contiguity));
            int64_t scale = pointeeBytes(type);
            return AxisInfo{
                contiguity,
                gcd(divisibilityAt(a, contiguity, scale), divisibilityAt(b, contiguity, scale)),
                constancy};
          })
          .Case<IntToPtrOp>([&](IntToPtrOp op) { return uniform(type, op.getDivisibility()); })
          .Case<LoadOp>([&](LoadOp load) -> std::optional<AxisInfo> {
            // Equal addresses (under equal masks) load equal values.
            if (!llvm::isa<RankedTensorType>(type))
              return std::nullopt;
            int64_t constancy = get(load.getPtr()).constancy;
            if (load.getMask())
              constancy = gcd(constancy, get(load.getMask()).constancy);
            if (load.getOther())
              constancy = gcd(constancy, get(load.getOther()).constancy);
            return AxisInfo{1, 1, constancy};
          })
          .Default([&](Operation *op) -> std::optional<AxisInfo> {
            // Any other elementwise arith/math op (division, select, shifts,
            // casts, ...) is constant where all its operands are.
            if (!llvm::isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) ||
                !op->hasTrait<OpTrait::Elementwise>() || !isMemoryEffectFree(op) ||
                !llvm::isa<RankedTensorType>(type))
              return std::nullopt;
            int64_t constancy = lastDimSize(type);
            for (Value v : op->getOperands())
              constancy = gcd(constancy, get(v).constancy);
            return AxisInfo{1, 1, constancy};
          });
  if (info)
    infos[result] = *info;
}
