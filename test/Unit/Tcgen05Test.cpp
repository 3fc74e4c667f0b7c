//===- Tcgen05Test.cpp - tcgen05 descriptors and the #tile.mma layouts ------===//
//
// The bit fields of the tcgen05.mma descriptors (PTX ISA, "tcgen05 shared
// memory descriptor", "Instruction descriptor") and the thread/register ->
// element maps of the #tile.mma layouts: pure arithmetic, checked without
// MLIR or a GPU.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/Tcgen05Descriptors.h"
#include "kiln/Dialect/Tile/IR/Layout.h"

#include <gtest/gtest.h>

#include <vector>

using namespace kiln;

namespace {
uint64_t bits(uint64_t value, unsigned lo, unsigned count) {
  return (value >> lo) & ((uint64_t(1) << count) - 1);
}

TEST(Tcgen05Descriptors, SharedMemoryKMajorSwizzled128) {
  uint64_t fields = tcgen05::kKMajorSwizzled128Fields;
  EXPECT_EQ(bits(fields, 0, 14), 0u);          // start address: added per box
  EXPECT_EQ(bits(fields, 14, 2), 0u);          // reserved
  EXPECT_EQ(bits(fields, 16, 14), 1u);         // leading byte offset: unused, 1
  EXPECT_EQ(bits(fields, 30, 2), 0u);          // reserved
  EXPECT_EQ(bits(fields, 32, 14), 1024u >> 4); // stride byte offset: 8 rows of 128 B
  EXPECT_EQ(bits(fields, 46, 3), 0b001u);      // fixed constant
  EXPECT_EQ(bits(fields, 49, 3), 0u);          // base offset: 1024-byte aligned slots
  EXPECT_EQ(bits(fields, 52, 1), 0u);          // leading dimension mode: relative
  EXPECT_EQ(bits(fields, 53, 8), 0u);          // fixed zeros
  EXPECT_EQ(bits(fields, 61, 3), 2u);          // 128-byte swizzle
  EXPECT_EQ(fields, 0x4000404000010000ull);
}

TEST(Tcgen05Descriptors, SharedMemoryMnMajorSwizzled128) {
  // A staged [K = 128, N = 128] bf16 B: two 64-column chunks of N, 128 rows
  // of 128 bytes each, 16 KiB apart.
  uint64_t fields = tcgen05::mnMajorSwizzled128Fields(128 * 128);
  EXPECT_EQ(bits(fields, 0, 14), 0u);
  EXPECT_EQ(bits(fields, 16, 14), (128u * 128) >> 4); // leading: between chunks of N
  EXPECT_EQ(bits(fields, 32, 14), 1024u >> 4);        // stride: 8 K rows of 128 B
  EXPECT_EQ(bits(fields, 46, 3), 0b001u);
  EXPECT_EQ(bits(fields, 61, 3), 2u);
}

TEST(Tcgen05Descriptors, SharedMemoryAddress) {
  EXPECT_EQ(tcgen05::smemDescriptorAddress(0x400), 0x40u);
  // 14 bits of address >> 4: the 256 KiB shared window.
  EXPECT_EQ(tcgen05::smemDescriptorAddress(0x3FFF0), 0x3FFFu);
  EXPECT_EQ(tcgen05::smemDescriptorAddress(0x40000), 0u);
  // A K step of 16 bf16 elements is 32 bytes: 2 in the field.
  EXPECT_EQ(tcgen05::smemDescriptorAddress(0x400 + 32) - tcgen05::smemDescriptorAddress(0x400), 2u);
}

TEST(Tcgen05Descriptors, SwizzleModes) {
  EXPECT_EQ(bits(tcgen05::smemDescriptorFields(16, 1024, tcgen05::Swizzle::None), 61, 3), 0u);
  EXPECT_EQ(bits(tcgen05::smemDescriptorFields(16, 512, tcgen05::Swizzle::Bytes64), 61, 3), 4u);
  EXPECT_EQ(bits(tcgen05::smemDescriptorFields(16, 256, tcgen05::Swizzle::Bytes32), 61, 3), 6u);
}

TEST(Tcgen05Descriptors, InstructionF16) {
  uint32_t d = tcgen05::instrDescriptorF16(tcgen05::F16Kind::BF16, 128, 256);
  EXPECT_EQ(bits(d, 0, 2), 0u);  // sparsity selector
  EXPECT_EQ(bits(d, 2, 1), 0u);  // dense
  EXPECT_EQ(bits(d, 3, 1), 0u);  // no saturation
  EXPECT_EQ(bits(d, 4, 2), 1u);  // D: f32
  EXPECT_EQ(bits(d, 6, 1), 0u);  // reserved
  EXPECT_EQ(bits(d, 7, 3), 1u);  // A: bf16
  EXPECT_EQ(bits(d, 10, 3), 1u); // B: bf16
  EXPECT_EQ(bits(d, 13, 2), 0u); // no negation
  EXPECT_EQ(bits(d, 15, 1), 0u); // A K-major
  EXPECT_EQ(bits(d, 16, 1), 0u); // B K-major
  EXPECT_EQ(bits(d, 17, 6), 256u >> 3);
  EXPECT_EQ(bits(d, 23, 1), 0u); // reserved
  EXPECT_EQ(bits(d, 24, 5), 128u >> 4);
  EXPECT_EQ(bits(d, 29, 3), 0u); // reserved, no .ws shift
  EXPECT_EQ(d, 0x08400490u);
  EXPECT_EQ(tcgen05::instrDescriptorF16(tcgen05::F16Kind::F16, 128, 16), 0x08040010u);
  EXPECT_EQ(tcgen05::instrDescriptorF16(tcgen05::F16Kind::BF16, 128, 64), 0x08100490u);
  uint32_t mn = tcgen05::instrDescriptorF16(tcgen05::F16Kind::BF16, 128, 64, /*bMnMajor=*/true);
  EXPECT_EQ(bits(mn, 15, 1), 0u); // A K-major
  EXPECT_EQ(bits(mn, 16, 1), 1u); // B MN-major (transposed)
  EXPECT_EQ(mn, 0x08110490u);
}

/// Every element of the tile is held by exactly one (thread, register).
void expectCovers(const tile::MmaLayout &layout) {
  std::vector<int> seen(layout.m * layout.n, 0);
  for (int64_t t = 0; t < layout.warps * 32; ++t)
    for (int64_t r = 0; r < layout.regsPerThread(); ++r) {
      int64_t index = layout.baseOf(t) + layout.offsetOf(r);
      ASSERT_GE(index, 0);
      ASSERT_LT(index, layout.m * layout.n);
      ++seen[index];
    }
  for (int count : seen)
    ASSERT_EQ(count, 1);
}

TEST(MmaLayout, Version5RowPerThread) {
  tile::MmaLayout layout{128, 256, 8, 5};
  EXPECT_EQ(layout.regsPerThread(), 128);
  EXPECT_EQ(layout.run(), 128);
  // Thread t holds row t mod 128 (TMEM lane t mod 128: warp w reads lanes
  // 32 (w mod 4) ..), warpgroup g the columns 128 g .. 128 g + 127.
  for (int64_t t : {0, 31, 32, 127, 128, 200, 255})
    for (int64_t r : {0, 1, 127}) {
      int64_t index = layout.baseOf(t) + layout.offsetOf(r);
      EXPECT_EQ(index / 256, t % 128);
      EXPECT_EQ(index % 256, (t / 128) * 128 + r);
    }
  expectCovers(layout);
  expectCovers({128, 64, 4, 5});
  expectCovers({128, 16, 16, 5});
}

TEST(MmaLayout, Version3Covers) {
  expectCovers({128, 256, 8, 3});
  expectCovers({64, 64, 4, 3});
  expectCovers({256, 128, 8, 3});
  // Warpgroups along N: [64, N] on 8 and 16 warps, and 2 x 2 warpgroups.
  expectCovers({64, 512, 8, 3, 2});
  expectCovers({64, 128, 16, 3, 4});
  expectCovers({128, 256, 16, 3, 2});
  expectCovers({256, 64, 16, 3, 2});
}

TEST(MmaLayout, Version3WarpgroupsAlongN) {
  // [64, 512] on 8 warps: warpgroup g holds columns 256 g .. 256 g + 255 of
  // every row, its registers a [64, 256] wgmma's; warps w and w + 4 the same
  // rows (version 2's warpsN = 2 registers).
  tile::MmaLayout layout{64, 512, 8, 3, 2};
  tile::MmaLayout v2{64, 512, 8, 2, 2};
  EXPECT_EQ(layout.regsPerThread(), 128);
  for (int64_t t : {0, 5, 31, 32, 127, 128, 161, 255})
    for (int64_t r : {0, 1, 2, 3, 4, 127}) {
      int64_t index = layout.elementOf(t, r);
      EXPECT_EQ(index % 512 / 256, t / 128);
      tile::MmaLayout one{64, 256, 4, 3};
      int64_t own = one.elementOf(t % 128, r);
      EXPECT_EQ(index / 512, own / 256);
      EXPECT_EQ(index % 256, own % 256);
      EXPECT_EQ(index, v2.elementOf(t, r));
    }
  // The row vector's slice: both warpgroups hold every row.
  tile::MmaLayout column{64, 1, 8, 3, 2};
  for (int64_t r = 0; r < column.regsPerThread(); ++r)
    EXPECT_EQ(column.elementOf(3, r), column.elementOf(131, r));
}
} // namespace
