//===- TensorMap.cpp - Validating, encoding and caching CUtensorMaps ------===//

#include "kiln/Runtime/TensorMap.h"
#include "kiln/Runtime/Error.h"

#include "Driver.h"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <vector>

namespace kiln {

unsigned swizzleSpanBytes(TensorMapSwizzle swizzle) {
  switch (swizzle) {
  case TensorMapSwizzle::None:
    return 16;
  case TensorMapSwizzle::B32:
    return 32;
  case TensorMapSwizzle::B64:
    return 64;
  case TensorMapSwizzle::B128:
    return 128;
  }
  return 16;
}

CUtensorMapDataType tensorMapDataType(DType dtype) {
  switch (dtype) {
  case DType::I1:
  case DType::I8:
  case DType::U8:
  case DType::F8E4M3:
  case DType::F8E5M2:
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  case DType::I16:
  case DType::U16:
    return CU_TENSOR_MAP_DATA_TYPE_UINT16;
  case DType::U32:
    return CU_TENSOR_MAP_DATA_TYPE_UINT32;
  case DType::I32:
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case DType::U64:
    return CU_TENSOR_MAP_DATA_TYPE_UINT64;
  case DType::I64:
    return CU_TENSOR_MAP_DATA_TYPE_INT64;
  case DType::F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case DType::BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case DType::F32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case DType::F64:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

namespace {
template <typename T>
std::string list(const std::vector<T> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
} // namespace

std::string TensorMapSpec::describe() const {
  char addr[32];
  std::snprintf(addr, sizeof(addr), "0x%llx", static_cast<unsigned long long>(address));
  static const char *swz[] = {"none", "32B", "64B", "128B"};
  return std::string(dtypeName(dtype)) + list(shape) + " strides " + list(strides) + " box " +
         list(box) + " swizzle " + swz[static_cast<int>(swizzle)] + " at " + addr;
}

bool TensorMapSpec::operator<(const TensorMapSpec &o) const {
  return std::tie(address, dtype, shape, strides, box, swizzle, oobNaN) <
         std::tie(o.address, o.dtype, o.shape, o.strides, o.box, o.swizzle, o.oobNaN);
}

std::string validateTensorMap(const TensorMapSpec &s) {
  const size_t rank = s.shape.size();
  const uint64_t elem = dtypeBytes(s.dtype);
  if (rank < 1 || rank > 5)
    return "rank must be 1 to 5, got " + std::to_string(rank);
  if (s.strides.size() != rank - 1)
    return "expected " + std::to_string(rank - 1) + " byte strides (dimensions 1.." +
           std::to_string(rank - 1) + "), got " + std::to_string(s.strides.size());
  if (s.box.size() != rank)
    return "expected " + std::to_string(rank) + " box dimensions, got " +
           std::to_string(s.box.size());
  if (s.address % 16 != 0) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(s.address));
    return std::string("global address must be 16-byte aligned, got ") + buf;
  }
  for (size_t i = 0; i < rank; ++i)
    if (s.shape[i] == 0 || s.shape[i] > (uint64_t(1) << 32))
      return "dimension " + std::to_string(i) + " must be in [1, 2^32], got " +
             std::to_string(s.shape[i]);
  for (size_t i = 0; i + 1 < rank; ++i) {
    const uint64_t st = s.strides[i];
    if (st % 16 != 0)
      return "stride of dimension " + std::to_string(i + 1) +
             " must be a multiple of 16 bytes, got " + std::to_string(st);
    if (st >= (uint64_t(1) << 40))
      return "stride of dimension " + std::to_string(i + 1) + " must be < 2^40 bytes, got " +
             std::to_string(st);
  }
  // No two elements at one address. The dimensions need not be in stride order (a transposed
  // view such as [B, H, T, D] over [B, T, H, D] storage is a valid map), so each stride is
  // checked against the bytes spanned by the dimensions of smaller stride; dimensions of
  // size 1 have no step to overlap.
  std::vector<size_t> order;
  for (size_t i = 1; i < rank; ++i)
    if (s.shape[i] > 1)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return s.strides[a - 1] < s.strides[b - 1]; });
  uint64_t extent = s.shape[0] * elem; // bytes spanned by the dimensions of smaller stride
  for (size_t i : order) {
    const uint64_t st = s.strides[i - 1];
    if (st < extent)
      return "stride of dimension " + std::to_string(i) + " (" + std::to_string(st) +
             " bytes) is smaller than the " + std::to_string(extent) +
             " bytes of the dimensions of smaller stride (overlapping elements)";
    extent = st * s.shape[i];
  }
  for (size_t i = 0; i < rank; ++i) {
    if (s.box[i] == 0 || s.box[i] > 256)
      return "box dimension " + std::to_string(i) + " must be in [1, 256], got " +
             std::to_string(s.box[i]);
  }
  const uint64_t inner = uint64_t(s.box[0]) * elem;
  if (inner % 16 != 0)
    return "the inner box row (" + std::to_string(s.box[0]) + " x " + std::to_string(elem) +
           " B = " + std::to_string(inner) + " B) must be a multiple of 16 bytes";
  if (s.swizzle != TensorMapSwizzle::None && inner > swizzleSpanBytes(s.swizzle))
    return "the inner box row (" + std::to_string(inner) + " B) must be at most the " +
           std::to_string(swizzleSpanBytes(s.swizzle)) + "-byte swizzle span";
  if (s.oobNaN && !isFloatDType(s.dtype))
    return "NaN out-of-bounds fill needs a float dtype, got " + std::string(dtypeName(s.dtype));
  return "";
}

CUtensorMap encodeTensorMap(const TensorMapSpec &s) {
  if (std::string why = validateTensorMap(s); !why.empty())
    throw Error("tensor map " + s.describe() + ": " + why);
  const detail::Driver &d = detail::Driver::get();
  const size_t rank = s.shape.size();
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], elemStrides[5];
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = s.shape[i];
    box[i] = s.box[i];
    elemStrides[i] = 1;
  }
  for (size_t i = 0; i + 1 < rank; ++i)
    strides[i] = s.strides[i];
  static const CUtensorMapSwizzle swz[] = {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                           CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B};
  CUtensorMap map;
  d.check(d.cuTensorMapEncodeTiled(&map, tensorMapDataType(s.dtype), static_cast<cuuint32_t>(rank),
                                   reinterpret_cast<void *>(static_cast<uintptr_t>(s.address)),
                                   dims, strides, box, elemStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   swz[static_cast<int>(s.swizzle)],
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                   s.oobNaN ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                            : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          ("cuTensorMapEncodeTiled(" + s.describe() + ")").c_str());
  return map;
}

const CUtensorMap &TensorMapCache::get(const TensorMapSpec &spec) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = maps_.find(spec);
  if (it != maps_.end())
    return it->second;
  CUtensorMap map = encodeTensorMap(spec);
  return maps_.emplace(spec, map).first->second;
}

size_t TensorMapCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return maps_.size();
}

void TensorMapCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  maps_.clear();
}

} // namespace kiln
