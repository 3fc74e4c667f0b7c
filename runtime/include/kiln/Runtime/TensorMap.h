//===- TensorMap.h - Host-side TMA descriptors (CUtensorMap) ----*- C++ -*-===//
//
// A TMA kernel takes a CUtensorMap (128 bytes, by value, __grid_constant__)
// per tensor it copies. The runtime builds it on the host with
// cuTensorMapEncodeTiled (through the dlopen'ed driver) after checking the
// rules the driver would otherwise reject with a bare CUDA_ERROR_INVALID_VALUE,
// and caches it per (address, dtype, shape, strides, box, swizzle). All
// descriptor encoding lives in this file's implementation (STYLE.md #11).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_TENSORMAP_H
#define KILN_RUNTIME_TENSORMAP_H

#include "kiln/Runtime/Metadata.h"

#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

enum class TensorMapSwizzle : uint8_t { None, B32, B64, B128 };

/// Bytes of the swizzle pattern's span: 16 for None (no constraint beyond
/// the 16-byte rule), 32, 64, 128.
unsigned swizzleSpanBytes(TensorMapSwizzle swizzle);

/// One tiled TMA descriptor. Dimensions are innermost first (as the driver
/// wants them): shape[0] is the contiguous dimension.
struct TensorMapSpec {
  uint64_t address = 0;
  DType dtype = DType::BF16;
  /// Elements per dimension, innermost first; rank 1 to 5.
  std::vector<uint64_t> shape;
  /// Byte strides of dimensions 1..rank-1 (dimension 0 is contiguous).
  std::vector<uint64_t> strides;
  /// Elements per dimension of the box one copy moves, innermost first.
  std::vector<uint32_t> box;
  TensorMapSwizzle swizzle = TensorMapSwizzle::B128;
  /// Fill out-of-bounds elements with NaN instead of zero (floats only).
  bool oobNaN = false;

  /// "bf16[4096, 1024] strides [2048] box [64, 128] swizzle 128B at 0x..."
  std::string describe() const;
  bool operator<(const TensorMapSpec &o) const;
};

/// The driver's element type for `dtype` (integers and fp8 are copied by
/// width: i8/u8/i1/f8 -> UINT8, i16/u16 -> UINT16, u32 -> UINT32, ...).
CUtensorMapDataType tensorMapDataType(DType dtype);

/// Checks `spec` against the rules of cuTensorMapEncodeTiled (tiled mode, no
/// interleave): rank 1-5; global address 16-byte aligned; every dimension in
/// [1, 2^32]; strides multiples of 16 and < 2^40, each at least the extent of
/// the dimension below; box dims in [1, 256] (a box may overhang the tensor);
/// the inner box row (box[0] * element size) a multiple of 16 bytes and, with a
/// swizzle, at most the swizzle span; NaN fill only for floats. Returns "" if
/// valid, else what is wrong ("expected X, got Y"). Pure: needs no GPU.
std::string validateTensorMap(const TensorMapSpec &spec);

/// Encodes `spec` (validated first). Throws kiln::Error naming the problem,
/// or the driver's error.
CUtensorMap encodeTensorMap(const TensorMapSpec &spec);

/// Encoded descriptors by spec. Thread-safe; entries live as long as the
/// cache (the address is part of the key: a freed and reused buffer with the
/// same geometry gives the same, still correct, descriptor).
class TensorMapCache {
public:
  const CUtensorMap &get(const TensorMapSpec &spec);
  size_t size() const;
  void clear();

private:
  mutable std::mutex mutex_;
  std::map<TensorMapSpec, CUtensorMap> maps_;
};

} // namespace kiln

#endif // KILN_RUNTIME_TENSORMAP_H
