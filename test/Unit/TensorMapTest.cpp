//===- TensorMapTest.cpp - TMA descriptor validation (no GPU) -------------===//

#include "kiln/Runtime/TensorMap.h"
#include "kiln/Runtime/Error.h"

#include <gtest/gtest.h>

using namespace kiln;

namespace {
/// A valid bf16 [rows, cols] row-major tile map: box 64 x 128, 128-byte swizzle.
TensorMapSpec bf16Matrix(uint64_t rows = 4096, uint64_t cols = 1024) {
  TensorMapSpec s;
  s.address = 0x7f0000000000;
  s.dtype = DType::BF16;
  s.shape = {cols, rows};
  s.strides = {cols * 2};
  s.box = {64, 128};
  s.swizzle = TensorMapSwizzle::B128;
  return s;
}
} // namespace

TEST(TensorMapTest, ValidSpecs) {
  EXPECT_EQ(validateTensorMap(bf16Matrix()), "");
  TensorMapSpec s = bf16Matrix();
  s.swizzle = TensorMapSwizzle::None;
  s.box = {256, 256}; // 512-byte rows are fine without a swizzle
  EXPECT_EQ(validateTensorMap(s), "");
  TensorMapSpec v; // rank 1
  v.address = 0x1000;
  v.dtype = DType::F32;
  v.shape = {1 << 20};
  v.box = {256};
  v.swizzle = TensorMapSwizzle::None;
  EXPECT_EQ(validateTensorMap(v), "");
}

TEST(TensorMapTest, EveryRule) {
  auto why = [](auto mutate) {
    TensorMapSpec s = bf16Matrix();
    mutate(s);
    return validateTensorMap(s);
  };
  EXPECT_EQ(why([](TensorMapSpec &s) { s.address += 8; }),
            "global address must be 16-byte aligned, got 0x7f0000000008");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.strides = {2056}; }),
            "stride of dimension 1 must be a multiple of 16 bytes, got 2056");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.strides = {uint64_t(1) << 40}; }),
            "stride of dimension 1 must be < 2^40 bytes, got 1099511627776");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.strides = {1024}; }),
            "stride of dimension 1 (1024 bytes) is smaller than the 2048 bytes of the dimensions "
            "of smaller stride (overlapping elements)");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.box = {64, 512}; }),
            "box dimension 1 must be in [1, 256], got 512");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.box = {0, 128}; }),
            "box dimension 0 must be in [1, 256], got 0");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.box = {4, 128}; }),
            "the inner box row (4 x 2 B = 8 B) must be a multiple of 16 bytes");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.box = {128, 128}; }),
            "the inner box row (256 B) must be at most the 128-byte swizzle span");
  EXPECT_EQ(why([](TensorMapSpec &s) {
              s.swizzle = TensorMapSwizzle::B32;
              s.box = {32, 8};
            }),
            "the inner box row (64 B) must be at most the 32-byte swizzle span");
  // A box larger than the tensor is fine: the copy zero-fills (loads) or clips (stores).
  EXPECT_EQ(why([](TensorMapSpec &s) {
              s.shape = {1024, 64};
              s.box = {64, 128};
            }),
            "");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.shape = {}; }), "rank must be 1 to 5, got 0");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.shape = {1, 1, 1, 1, 1, 1}; }),
            "rank must be 1 to 5, got 6");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.strides = {}; }),
            "expected 1 byte strides (dimensions 1..1), got 0");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.box = {64}; }), "expected 2 box dimensions, got 1");
  EXPECT_EQ(why([](TensorMapSpec &s) { s.shape = {0, 4096}; }),
            "dimension 0 must be in [1, 2^32], got 0");
  EXPECT_EQ(why([](TensorMapSpec &s) {
              s.dtype = DType::I32;
              s.strides = {4096};
              s.box = {32, 128};
              s.oobNaN = true;
            }),
            "NaN out-of-bounds fill needs a float dtype, got i32");
}

TEST(TensorMapTest, StridesInAnyOrder) {
  // bf16 [B, H, T, D] = [2, 8, 4096, 128] over [B, T, H, D] storage: dims (D, T, H, B), the
  // T stride (H * D * 2 bytes) larger than H's (D * 2).
  TensorMapSpec s;
  s.address = 0x7f0000000000;
  s.dtype = DType::BF16;
  s.shape = {128, 4096, 8, 2};
  s.strides = {8 * 128 * 2, 128 * 2, 4096 * 8 * 128 * 2};
  s.box = {64, 64, 1, 1};
  s.swizzle = TensorMapSwizzle::B128;
  EXPECT_EQ(validateTensorMap(s), "");
  // Broadcast heads (stride 0 over 8 of them) put two elements at one address.
  s.strides = {8 * 128 * 2, 0, 4096 * 8 * 128 * 2};
  EXPECT_EQ(validateTensorMap(s), "stride of dimension 2 (0 bytes) is smaller than the 256 "
                                  "bytes of the dimensions of smaller stride (overlapping "
                                  "elements)");
  // So do heads one row apart while the tokens are the heads' whole span apart: H's stride
  // (256) covers D, but T's (1024) is less than the 8 heads' 2048 bytes.
  s.strides = {1024, 256, 4096 * 8 * 128 * 2};
  EXPECT_EQ(validateTensorMap(s), "stride of dimension 1 (1024 bytes) is smaller than the 2048 "
                                  "bytes of the dimensions of smaller stride (overlapping "
                                  "elements)");
  // A dimension of size 1 has no step: any stride.
  s.shape = {128, 4096, 1, 2};
  s.strides = {256, 16, 4096 * 256};
  EXPECT_EQ(validateTensorMap(s), "");
}

TEST(TensorMapTest, ElementTypes) {
  EXPECT_EQ(tensorMapDataType(DType::BF16), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(tensorMapDataType(DType::F16), CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(tensorMapDataType(DType::F32), CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_EQ(tensorMapDataType(DType::F8E4M3), CU_TENSOR_MAP_DATA_TYPE_UINT8);
  EXPECT_EQ(tensorMapDataType(DType::I8), CU_TENSOR_MAP_DATA_TYPE_UINT8);
  EXPECT_EQ(tensorMapDataType(DType::I32), CU_TENSOR_MAP_DATA_TYPE_INT32);
  EXPECT_EQ(tensorMapDataType(DType::I64), CU_TENSOR_MAP_DATA_TYPE_INT64);
  EXPECT_EQ(swizzleSpanBytes(TensorMapSwizzle::B64), 64u);
}

TEST(TensorMapTest, EncodeRejectsBeforeTheDriver) {
  TensorMapSpec s = bf16Matrix();
  s.address += 4;
  try {
    encodeTensorMap(s);
    FAIL() << "expected kiln::Error";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "kiln: tensor map bf16[1024, 4096] strides [2048] box [64, 128] swizzle 128B at "
              "0x7f0000000004: global address must be 16-byte aligned, got 0x7f0000000004");
  }
  // Specs order strictly (the cache key).
  TensorMapSpec a = bf16Matrix(), b = bf16Matrix();
  b.box = {64, 64};
  EXPECT_TRUE(a < b || b < a);
  EXPECT_FALSE(a < a);
}
