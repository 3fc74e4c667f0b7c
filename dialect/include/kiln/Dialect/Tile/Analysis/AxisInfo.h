//===- AxisInfo.h - contiguity/divisibility/constancy analysis --*- C++ -*-===//
//
// For integer and pointer values (scalars and tiles), facts about the last
// dimension that decide how wide a memory access may be:
//  - contiguity: elements come in aligned runs of this length whose values
//    increase by one (by one element for pointers);
//  - divisibility: the first value of each such run is a multiple of this
//    power of two (bytes for pointers);
//  - constancy: elements come in aligned runs of this length that are equal.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_TILE_ANALYSIS_AXISINFO_H
#define KILN_DIALECT_TILE_ANALYSIS_AXISINFO_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

namespace kiln::tile {

struct AxisInfo {
  /// Largest divisibility tracked (stands for "divisible by anything", e.g. 0).
  static constexpr int64_t kMaxDivisibility = int64_t(1) << 30;

  int64_t contiguity = 1;
  int64_t divisibility = 1;
  int64_t constancy = 1;

  bool operator==(const AxisInfo &other) const {
    return contiguity == other.contiguity && divisibility == other.divisibility &&
           constancy == other.constancy;
  }
};

/// Computes AxisInfo for every integer/pointer value of one function, in a
/// single forward walk (values defined by unknown ops and block arguments get
/// the pessimistic {1, 1, 1}, except an scf.for induction variable, divisible
/// by what divides both its lower bound and its step).
class AxisInfoAnalysis {
public:
  explicit AxisInfoAnalysis(mlir::func::FuncOp func);
  /// The facts for `value` (pessimistic if unknown).
  AxisInfo get(mlir::Value value) const;

private:
  void visit(mlir::Operation *op);
  llvm::DenseMap<mlir::Value, AxisInfo> infos;
};

/// Largest power of two dividing `value` (kMaxDivisibility for 0).
int64_t highestPowerOf2Divisor(int64_t value);

} // namespace kiln::tile

#endif // KILN_DIALECT_TILE_ANALYSIS_AXISINFO_H
