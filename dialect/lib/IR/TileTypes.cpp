//===- TileTypes.cpp - tile dialect types -----------------------------------===//

#include "kiln/Dialect/Tile/IR/TileTypes.h"
#include "kiln/Dialect/Tile/IR/TileDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln::tile;

#define GET_TYPEDEF_CLASSES
#include "kiln/Dialect/Tile/IR/TileTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Tile/IR/TileAttrs.cpp.inc"

void TileDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kiln/Dialect/Tile/IR/TileAttrs.cpp.inc"
      >();
}

LogicalResult MmaEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      unsigned version, unsigned numWarps, unsigned warpsN) {
  if (version != 2 && version != 3 && version != 5)
    return emitError() << "expected an mma encoding of version 2 (mma.sync), 3 (wgmma) or 5 "
                          "(tcgen05), got "
                       << version;
  if (version == 2) {
    if (numWarps < 1 || numWarps > 32 || !llvm::isPowerOf2_32(numWarps))
      return emitError() << "expected a power of two from 1 to 32 warps, got " << numWarps;
    if (warpsN < 1 || numWarps % warpsN != 0 || !llvm::isPowerOf2_32(warpsN))
      return emitError() << "expected warpsN to be a power of two dividing numWarps (" << numWarps
                         << "), got " << warpsN;
    return success();
  }
  if (numWarps < 4 || numWarps > 16 || !llvm::isPowerOf2_32(numWarps))
    return emitError() << "expected 4, 8 or 16 warps (whole warpgroups), got " << numWarps;
  if (version == 3 && (warpsN < 1 || numWarps / 4 % warpsN != 0 || !llvm::isPowerOf2_32(warpsN)))
    return emitError() << "expected warpsN to be a power of two dividing the " << numWarps / 4
                       << " warpgroups for the version 3 mma encoding, got " << warpsN;
  if (version == 5 && warpsN != 1)
    return emitError() << "expected warpsN = 1 for the version 5 mma encoding, got " << warpsN;
  return success();
}

LogicalResult MmaEncodingAttr::verifyEncoding(ArrayRef<int64_t> shape, Type elementType,
                                              function_ref<InFlightDiagnostic()> emitError) const {
  if (getVersion() == 2) {
    bool column = shape.size() == 2 && shape[1] == 1;
    if (shape.size() != 2 || shape[0] < 1 || !llvm::isPowerOf2_64(shape[0]) ||
        (!column && (shape[1] < 1 || shape[1] % (8 * getWarpsN()) != 0)))
      return emitError() << "expected a [M, N] tile with M a power of two and N 1 or a multiple of "
                         << 8 * getWarpsN() << " for the version 2 mma encoding, got "
                         << RankedTensorType::get(shape, elementType);
    return success();
  }
  // Version 3 shapes are checked by the ops that produce the tiles, but for
  // the columns that warpgroups along N split.
  if (getVersion() == 3) {
    bool column = shape.size() == 2 && shape[1] == 1;
    if (getWarpsN() > 1 && (shape.size() != 2 || (!column && shape[1] % (8 * getWarpsN()) != 0)))
      return emitError() << "expected a [M, N] tile with N 1 or a multiple of " << 8 * getWarpsN()
                         << " for the version 3 mma encoding of warpsN = " << getWarpsN()
                         << ", got " << RankedTensorType::get(shape, elementType);
    return success();
  }
  if (getVersion() != 5)
    return success();
  unsigned warpgroups = getNumWarps() / 4;
  if (shape.size() != 2 || shape[0] != 128 || shape[1] < 1 || shape[1] % warpgroups != 0)
    return emitError() << "expected a [128, N] tile with N a multiple of " << warpgroups
                       << " for the version 5 mma encoding, got "
                       << RankedTensorType::get(shape, elementType);
  return success();
}

LogicalResult SliceEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                        unsigned dim, Attribute parent) {
  auto mma = llvm::dyn_cast<MmaEncodingAttr>(parent);
  if (!mma || (mma.getVersion() != 2 && mma.getVersion() != 3) || dim > 1 ||
      (dim == 0 && mma.getVersion() != 2))
    return emitError() << "expected the slice along dim 1 of a #tile.mma encoding of version 2 or "
                          "3, or along dim 0 of version 2, got dim "
                       << dim << " of " << parent;
  return success();
}

LogicalResult
SliceEncodingAttr::verifyEncoding(ArrayRef<int64_t> shape, Type elementType,
                                  function_ref<InFlightDiagnostic()> emitError) const {
  auto mma = llvm::dyn_cast<MmaEncodingAttr>(getParent());
  if (mma && getDim() == 0) {
    // The columns of the version 2 tile [1, N].
    if (shape.size() != 1 || shape[0] % (8 * mma.getWarpsN()) != 0)
      return emitError() << "expected a 1-D tile of a multiple of " << 8 * mma.getWarpsN()
                         << " columns for the slice along dim 0 of the version 2 mma encoding, got "
                         << RankedTensorType::get(shape, elementType);
    return success();
  }
  if (mma && mma.getVersion() == 2) {
    if (shape.size() != 1 || shape[0] < 1 || !llvm::isPowerOf2_64(shape[0]))
      return emitError() << "expected a 1-D tile of a power-of-two rows for the slice of the "
                            "version 2 mma encoding, got "
                         << RankedTensorType::get(shape, elementType);
    return success();
  }
  int64_t rows = mma ? 64 * (mma.getNumWarps() / 4 / mma.getWarpsN()) : 1;
  if (shape.size() != 1 || shape[0] % rows != 0)
    return emitError() << "expected a 1-D tile of a multiple of " << rows
                       << " rows for the slice of the mma encoding, got "
                       << RankedTensorType::get(shape, elementType);
  return success();
}

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

LogicalResult TensorDescType::verify(function_ref<InFlightDiagnostic()> emitError,
                                     RankedTensorType blockType, unsigned swizzle) {
  Type element = blockType.getElementType();
  if (!llvm::isa<IntegerType, FloatType>(element) || element.isInteger(1))
    return emitError() << "expected a tensor descriptor of integers or floats (not i1), got "
                       << element;
  int64_t rank = blockType.getRank();
  if (rank < 1 || rank > 5)
    return emitError() << "expected a tensor descriptor of rank 1 to 5, got rank " << rank;
  for (int64_t dim : blockType.getShape())
    if (dim < 1 || dim > 256 || !llvm::isPowerOf2_64(dim))
      return emitError() << "expected every box dimension to be a power of two in [1, 256] "
                            "(a TMA box), got "
                         << blockType;
  int64_t innerBytes = blockType.getShape().back() * element.getIntOrFloatBitWidth() / 8;
  if (innerBytes % 16 != 0)
    return emitError() << "expected the box's inner dimension to span a multiple of 16 bytes, "
                          "got "
                       << innerBytes << " bytes (" << blockType << ")";
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return emitError() << "expected a swizzle of 0, 32, 64 or 128 bytes, got " << swizzle;
  // A 128-byte swizzled row wider than the span (a power of two, so a
  // multiple of 128 bytes) is several boxes of 128-byte rows (chunks), each
  // starting on the swizzle's 1024-byte period.
  if (swizzle == 128 && innerBytes > 128) {
    int64_t rows = blockType.getNumElements() / blockType.getShape().back();
    if (rows % 8 != 0)
      return emitError() << "expected a box wider than the 128-byte swizzle span to have a "
                            "multiple of 8 rows (its 128-byte chunks start on the swizzle's "
                            "1024-byte period), got "
                         << rows << " rows (" << blockType << ")";
    return success();
  }
  if (swizzle != 0 && innerBytes > swizzle)
    return emitError() << "expected the box's inner dimension (" << innerBytes
                       << " bytes) to fit the " << swizzle << "-byte swizzle span";
  return success();
}

int64_t TensorDescType::getBoxBytes() const {
  return getBlockType().getNumElements() * getBlockType().getElementType().getIntOrFloatBitWidth() /
         8;
}

int64_t TensorDescType::getNumChunks() const {
  return getNumBoxChunks(getBlockType(), getSwizzle());
}

int64_t kiln::tile::getNumBoxChunks(RankedTensorType box, unsigned swizzle) {
  int64_t innerBytes = box.getShape().back() * box.getElementTypeBitWidth() / 8;
  return swizzle == 128 && innerBytes > 128 ? innerBytes / 128 : 1;
}

LogicalResult RingType::verify(function_ref<InFlightDiagnostic()> emitError, unsigned stages,
                               RankedTensorType blockType) {
  if (stages < 1 || stages > 16)
    return emitError() << "expected 1 to 16 ring stages, got " << stages;
  // A 1-D block may also be the slot of bulk copies (tile.bulk_load in a
  // pipelined loop): any numeric row of whole 16-byte units; other blocks are
  // TMA boxes.
  Type element = blockType.getElementType();
  bool bulkRow = blockType.getRank() == 1 && llvm::isa<IntegerType, FloatType>(element) &&
                 !element.isInteger(1) &&
                 (blockType.getNumElements() * element.getIntOrFloatBitWidth() / 8) % 16 == 0;
  if (!bulkRow && failed(TensorDescType::verify(emitError, blockType, /*swizzle=*/0)))
    return failure();
  int64_t total = RingType::get(blockType.getContext(), stages, blockType).getTotalBytes();
  if (total > kMaxSharedBytes)
    return emitError() << "expected the ring to fit the 227 KiB of shared memory, got " << stages
                       << " stages of " << blockType << " (" << total << " bytes)";
  return success();
}

int64_t RingType::getSlotBytes() const {
  return getBlockType().getNumElements() * getBlockType().getElementType().getIntOrFloatBitWidth() /
         8;
}

int64_t RingType::getBarriersOffset() const {
  return llvm::alignTo(getStages() * getSlotBytes(), 8);
}

int64_t RingType::getTotalBytes() const { return getBarriersOffset() + 8 * getStages(); }

LogicalResult SmemType::verify(function_ref<InFlightDiagnostic()> emitError,
                               RankedTensorType tileType) {
  Type element = tileType.getElementType();
  if (tileType.getRank() != 2 || tileType.getEncoding() || !(element.isBF16() || element.isF16()))
    return emitError() << "expected a 2-D bf16 or f16 tile without encoding, got " << tileType;
  if (tileType.getDimSize(0) % 8 != 0 || tileType.getDimSize(1) % 64 != 0)
    return emitError() << "expected M a multiple of 8 and K a multiple of 64, got " << tileType;
  return success();
}

LogicalResult TMemType::verify(function_ref<InFlightDiagnostic()> emitError,
                               RankedTensorType accType) {
  if (accType.getRank() != 2 || !accType.getElementType().isF32() || accType.getEncoding())
    return emitError() << "expected a 2-D f32 tile without encoding in tensor memory, got "
                       << accType;
  int64_t m = accType.getDimSize(0), n = accType.getDimSize(1);
  if (m != 128)
    return emitError() << "expected M = 128 (one row per TMEM lane), got " << m;
  if (n < 1 || n > 512)
    return emitError() << "expected N in [1, 512] (TMEM columns), got " << n;
  return success();
}

int64_t TMemType::getNumColumns() const {
  return std::max<int64_t>(32, llvm::PowerOf2Ceil(getAccType().getDimSize(1)));
}

LogicalResult MBarriersType::verify(function_ref<InFlightDiagnostic()> emitError, unsigned count) {
  if (count < 1 || count > 16)
    return emitError() << "expected 1 to 16 mbarriers, got " << count;
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
