//===- TileDialect.cpp - tile dialect ---------------------------------------===//

#include "kiln/Dialect/Tile/IR/TileDialect.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Dialect/Tile/IR/TileTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln::tile;

#include "kiln/Dialect/Tile/IR/TileDialect.cpp.inc"

void TileDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/Tile/IR/TileOps.cpp.inc"
      ,
#define GET_OP_LIST
#include "kiln/Dialect/Tile/IR/TileNvidiaOps.cpp.inc"
      >();
}

Operation *TileDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                            Location loc) {
  return arith::ConstantOp::materialize(builder, value, type, loc);
}

ArrayRef<StringLiteral> TileDialect::getKernelFeatures() {
  static const StringLiteral features[] = {"elect",       "mbarrier", "pdl", "setmaxnreg",
                                           "sys_atomics", "tcgen05",  "tma", "wgmma"};
  return features;
}

static LogicalResult verifyPowerOfTwoI32(Operation *op, NamedAttribute attr, int64_t maxValue) {
  auto intAttr = llvm::dyn_cast<IntegerAttr>(attr.getValue());
  if (!intAttr || !intAttr.getType().isInteger(32))
    return op->emitOpError() << "expected '" << attr.getName().getValue()
                             << "' to be an i32 attribute, got " << attr.getValue();
  int64_t value = intAttr.getInt();
  if (value < 1 || value > maxValue || !llvm::isPowerOf2_64(value))
    return op->emitOpError() << "expected '" << attr.getName().getValue()
                             << "' to be a power of two in [1, " << maxValue << "], got " << value;
  return success();
}

LogicalResult TileDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == getKernelAttrName()) {
    if (!llvm::isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "expected 'tile.kernel' to be a unit attribute";
    if (!llvm::isa<func::FuncOp>(op))
      return op->emitOpError() << "'tile.kernel' applies to func.func only";
    auto func = llvm::cast<func::FuncOp>(op);
    if (func.getFunctionType().getNumResults() != 0)
      return op->emitOpError() << "a tile kernel returns nothing, got "
                               << func.getFunctionType().getNumResults() << " results";
    for (Type type : func.getFunctionType().getInputs())
      if (!llvm::isa<PtrType, TensorDescType, IntegerType, FloatType>(type))
        return op->emitOpError()
               << "a tile kernel takes scalars, pointers and tensor descriptors, got " << type;
    return success();
  }
  if (name == getNumWarpsAttrName())
    return verifyPowerOfTwoI32(op, attr, 32);
  if (name == getMaxnregAttrName()) {
    auto regs = llvm::dyn_cast<IntegerAttr>(attr.getValue());
    if (!regs || !regs.getType().isInteger(32))
      return op->emitOpError() << "expected 'tile.maxnreg' to be an i32 attribute, got "
                               << attr.getValue();
    if (!llvm::isa<func::FuncOp>(op))
      return op->emitOpError() << "'tile.maxnreg' applies to func.func only";
    if (regs.getInt() < kMinMaxnreg || regs.getInt() > kMaxMaxnreg)
      return op->emitOpError() << "expected 'tile.maxnreg' in [" << kMinMaxnreg << ", "
                               << kMaxMaxnreg << "] (registers a thread), got " << regs.getInt();
    return success();
  }
  if (name == getClusterDimsAttrName()) {
    auto dims = llvm::dyn_cast<DenseI32ArrayAttr>(attr.getValue());
    if (!dims || dims.size() != 3)
      return op->emitOpError() << "expected 'tile.cluster_dims' to be an array<i32> of 3 "
                                  "entries, got "
                               << attr.getValue();
    if (!llvm::isa<func::FuncOp>(op))
      return op->emitOpError() << "'tile.cluster_dims' applies to func.func only";
    int64_t size = 1;
    for (int32_t d : dims.asArrayRef()) {
      if (d < 1)
        return op->emitOpError() << "expected positive 'tile.cluster_dims', got "
                                 << attr.getValue();
      size *= d;
    }
    if (size > kMaxClusterSize)
      return op->emitOpError() << "expected at most " << kMaxClusterSize
                               << " blocks per cluster (the non-portable cluster size), got "
                               << size;
    return success();
  }
  if (name == getThreadsPerBlockAttrName())
    return verifyPowerOfTwoI32(op, attr, 1024);
  if (name == getElemsPerThreadAttrName())
    return verifyPowerOfTwoI32(op, attr, 1 << 16);
  if (name == getSharedBytesAttrName()) {
    auto bytes = llvm::dyn_cast<IntegerAttr>(attr.getValue());
    if (!bytes || bytes.getInt() < 0 || bytes.getInt() > kMaxSharedBytes)
      return op->emitOpError() << "expected 'tile.shared_bytes' to be an integer in [0, "
                               << kMaxSharedBytes << "]";
    return success();
  }
  if (name == getSharedPlanAttrName()) {
    auto plan = llvm::dyn_cast<ArrayAttr>(attr.getValue());
    if (!plan || !llvm::all_of(plan, llvm::IsaPred<StringAttr>))
      return op->emitOpError() << "expected 'tile.shared_plan' to be an array of strings, got "
                               << attr.getValue();
    for (auto entry : plan.getAsValueRange<StringAttr>()) {
      SmallVector<StringRef> fields;
      entry.split(fields, ' ');
      if (fields.size() != 4 || !fields[3].contains('-'))
        return op->emitOpError() << "expected each 'tile.shared_plan' entry to be \"name bytes "
                                    "offset first-last\", got \""
                                 << entry << "\"";
    }
    return success();
  }
  if (name == getDotsAttrName()) {
    auto dots = llvm::dyn_cast<ArrayAttr>(attr.getValue());
    if (!dots || !llvm::all_of(dots, llvm::IsaPred<StringAttr>))
      return op->emitOpError() << "expected 'tile.dots' to be an array of strings, got "
                               << attr.getValue();
    if (!llvm::isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'tile.dots' applies to functions only";
    for (auto entry : dots.getAsValueRange<StringAttr>()) {
      auto [line, unit] = entry.split(' ');
      unsigned number;
      if (line.getAsInteger(10, number) ||
          !llvm::any_of(
              ArrayRef<StringRef>{"wgmma", "wgmma staged", "tcgen05", "tcgen05 staged", "mma.sync"},
              [&](StringRef known) {
                return unit == known || unit.starts_with(known.str() + " ");
              }))
        return op->emitOpError() << "expected each 'tile.dots' entry to be \"line unit[ reason]\" "
                                    "(unit wgmma, wgmma staged, tcgen05, tcgen05 staged or "
                                    "mma.sync), got \""
                                 << entry << "\"";
    }
    return success();
  }
  if (name == getPdlAttrName()) {
    if (!llvm::isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "expected 'tile.pdl' to be a unit attribute";
    if (!llvm::isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'tile.pdl' applies to functions only";
    return success();
  }
  if (name == getFeaturesAttrName()) {
    auto features = llvm::dyn_cast<ArrayAttr>(attr.getValue());
    if (!features || !llvm::all_of(features, llvm::IsaPred<StringAttr>))
      return op->emitOpError() << "expected 'tile.features' to be an array of strings, got "
                               << attr.getValue();
    if (!llvm::isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'tile.features' applies to functions only";
    ArrayRef<StringLiteral> known = getKernelFeatures();
    StringRef previous;
    for (auto feature : features.getAsValueRange<StringAttr>()) {
      if (!llvm::is_contained(known, feature))
        return op->emitOpError() << "unknown feature '" << feature << "' in 'tile.features' ("
                                 << "expected one of " << llvm::join(known, ", ") << ")";
      if (!previous.empty() && feature <= previous)
        return op->emitOpError() << "expected 'tile.features' sorted and unique, got '" << feature
                                 << "' after '" << previous << "'";
      previous = feature;
    }
    return success();
  }
  if (name == getRegisterSplitAttrName()) {
    auto split = llvm::dyn_cast<DenseI32ArrayAttr>(attr.getValue());
    if (!split || split.size() != 3)
      return op->emitOpError() << "expected 'tile.register_split' to be an array<i32> of 3 "
                                  "entries (consumer threads, consumer registers, producer "
                                  "registers), got "
                               << attr.getValue();
    if (!llvm::isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'tile.register_split' applies to functions only";
    int32_t threads = split[0];
    if (threads < 128 || threads % 128 != 0)
      return op->emitOpError() << "expected whole warpgroups of consumer threads in "
                                  "'tile.register_split', got "
                               << threads;
    for (int32_t registers : split.asArrayRef().drop_front())
      if (registers < 24 || registers > 256 || registers % 8 != 0)
        return op->emitOpError() << "expected 'tile.register_split' registers to be a multiple "
                                    "of 8 in [24, 256] (setmaxnreg), got "
                                 << registers;
    return success();
  }
  if (name == getMinProgramsPerSMAttrName()) {
    auto programs = llvm::dyn_cast<IntegerAttr>(attr.getValue());
    if (!llvm::isa<func::FuncOp>(op))
      return op->emitOpError() << "'tile.min_programs_per_sm' applies to func.func only";
    if (!programs || !programs.getType().isInteger(32) || programs.getInt() < 1 ||
        programs.getInt() > 32)
      return op->emitOpError()
             << "expected 'tile.min_programs_per_sm' to be an i32 in [1, 32], got "
             << attr.getValue();
    return success();
  }
  if (name == getDrainedAttrName()) {
    if (op->getName().getStringRef() != "llvm.mlir.global")
      return op->emitOpError() << "'tile.drained' applies to llvm.mlir.global only";
    if (!llvm::isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "expected 'tile.drained' to be a unit attribute";
    return success();
  }
  if (name == getScratchAttrName()) {
    if (op->getName().getStringRef() != "llvm.mlir.global")
      return op->emitOpError() << "'tile.scratch' applies to llvm.mlir.global only";
    if (!llvm::isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "expected 'tile.scratch' to be a unit attribute";
    return success();
  }
  if (name == getNumStagesAttrName()) {
    auto stages = llvm::dyn_cast<IntegerAttr>(attr.getValue());
    if (op->getName().getStringRef() != "scf.for")
      return op->emitOpError() << "'tile.num_stages' applies to scf.for only";
    if (!stages || stages.getInt() < 1 || stages.getInt() > 16)
      return op->emitOpError() << "expected 'tile.num_stages' to be an integer in [1, 16]";
    return success();
  }
  if (name == getWarpSpecializeAttrName()) {
    if (op->getName().getStringRef() != "scf.for")
      return op->emitOpError() << "'tile.warp_specialize' applies to scf.for only";
    if (!llvm::isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "expected 'tile.warp_specialize' to be a unit attribute";
    return success();
  }
  if (name == getConsumerThreadsAttrName()) {
    auto threads = llvm::dyn_cast<IntegerAttr>(attr.getValue());
    if (op->getName().getStringRef() != "scf.if")
      return op->emitOpError() << "'tile.consumer_threads' applies to scf.if only";
    if (!threads || threads.getInt() < 128 || threads.getInt() % 128 != 0)
      return op->emitOpError()
             << "expected 'tile.consumer_threads' to be a positive multiple of 128";
    return success();
  }
  return op->emitOpError() << "unknown tile attribute '" << name << "'";
}

LogicalResult TileDialect::verifyRegionArgAttribute(Operation *op, unsigned regionIndex,
                                                    unsigned argIndex, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name != getDivisibilityAttrName())
    return op->emitOpError() << "unknown tile argument attribute '" << name << "'";
  Type argType = op->getRegion(regionIndex).getArgument(argIndex).getType();
  if (!llvm::isa<PtrType, IntegerType>(argType))
    return op->emitOpError() << "'tile.divisibility' applies to integer and pointer arguments, "
                             << "got " << argType;
  return verifyPowerOfTwoI32(op, attr, int64_t(1) << 30);
}
