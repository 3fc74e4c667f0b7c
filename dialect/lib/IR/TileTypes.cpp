//===- TileTypes.cpp - tile dialect types -----------------------------------===//

#include "kiln/Dialect/Tile/IR/TileTypes.h"
#include "kiln/Dialect/Tile/IR/TileDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln::tile;

#define GET_TYPEDEF_CLASSES
#include "kiln/Dialect/Tile/IR/TileTypes.cpp.inc"

void TileDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "kiln/Dialect/Tile/IR/TileTypes.cpp.inc"
      >();
}

LogicalResult PtrType::verify(function_ref<InFlightDiagnostic()> emitError, Type pointeeType) {
  if (!llvm::isa<IntegerType, FloatType>(pointeeType))
    return emitError() << "expected the pointee of !tile.ptr to be an integer or float type, got "
                       << pointeeType;
  return success();
}

Type kiln::tile::getPointeeType(Type ptrLike) {
  if (auto tensor = llvm::dyn_cast<RankedTensorType>(ptrLike)) {
    auto ptr = llvm::cast<PtrType>(tensor.getElementType());
    return tensor.clone(ptr.getPointeeType());
  }
  return llvm::cast<PtrType>(ptrLike).getPointeeType();
}

Type kiln::tile::getI1SameShape(Type type) {
  auto i1 = IntegerType::get(type.getContext(), 1);
  if (auto tensor = llvm::dyn_cast<RankedTensorType>(type))
    return tensor.clone(i1);
  return i1;
}

