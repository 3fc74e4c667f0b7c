//===- LayoutTest.cpp - the mma.sync accumulator layout -------------------===//
//
// `tile::MmaLayout` version 2 (`#tile.mma<version = 2, numWarps, warpsN>`):
// the register-to-element map of the mma.sync m16n8k16 C fragment tiled over
// the warps, checked against the PTX ISA's fragment formula, against version
// 3 where the two coincide, and for coverage (each element held by the same
// number of (thread, register) pairs: once, or as often as rows wrap).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Tile/IR/Layout.h"

#include <gtest/gtest.h>

#include <vector>

using namespace kiln;

namespace {

tile::MmaLayout v2(int64_t m, int64_t n, int64_t warps, int64_t warpsN) {
  return {m, n, warps, 2, warpsN};
}

/// Every element of the tile is held by exactly `copies` (thread, register)
/// pairs.
void expectCovers(const tile::MmaLayout &layout, int copies = 1) {
  std::vector<int> seen(layout.m * layout.n, 0);
  for (int64_t t = 0; t < layout.warps * 32; ++t)
    for (int64_t r = 0; r < layout.regsPerThread(); ++r) {
      int64_t index = layout.elementOf(t, r);
      ASSERT_GE(index, 0);
      ASSERT_LT(index, layout.m * layout.n);
      ++seen[index];
    }
  for (int count : seen)
    ASSERT_EQ(count, copies);
}

TEST(MmaLayoutV2, FragmentFormula) {
  // PTX ISA, "Matrix Fragments for mma.m16n8k16", C/D: register i of lane l
  // holds row l/4 + 8 (i/2), column 2 (l mod 4) + i mod 2 of its 16x8 tile.
  for (auto [m, n, warps, warpsN] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{32, 64, 4, 2},
                                     {16, 64, 4, 4},
                                     {64, 16, 4, 1},
                                     {128, 32, 8, 2}}) {
    tile::MmaLayout layout = v2(m, n, warps, warpsN);
    int64_t wm = warps / warpsN, nw = n / warpsN;
    ASSERT_EQ(layout.regsPerThread(), (m / (16 * wm)) * nw / 2);
    for (int64_t t = 0; t < warps * 32; ++t)
      for (int64_t reg = 0; reg < layout.regsPerThread(); ++reg) {
        int64_t warp = t / 32, lane = t % 32;
        int64_t rm = reg / (nw / 2), q = reg % (nw / 2);
        int64_t j = q / 4, h = q / 2 % 2, e = q % 2;
        int64_t row = 16 * (wm * rm + warp % wm) + lane / 4 + 8 * h;
        int64_t col = (warp / wm) * nw + 8 * j + 2 * (lane % 4) + e;
        ASSERT_EQ(layout.elementOf(t, reg), row * n + col) << m << "x" << n << " t " << t;
      }
    expectCovers(layout);
  }
}

TEST(MmaLayoutV2, SameRegistersAsVersion3) {
  // All warps along M: the wgmma accumulator's registers, slab by slab.
  for (auto [m, n, warps] : {std::tuple<int64_t, int64_t, int64_t>{64, 64, 4},
                             {128, 256, 8},
                             {256, 32, 4},
                             {128, 1, 8}}) {
    tile::MmaLayout three{m, n, warps, 3};
    tile::MmaLayout two = v2(m, n, warps, 1);
    ASSERT_EQ(two.regsPerThread(), three.regsPerThread());
    ASSERT_EQ(two.run(), three.run());
    for (int64_t t = 0; t < warps * 32; ++t)
      for (int64_t reg = 0; reg < two.regsPerThread(); ++reg)
        ASSERT_EQ(two.elementOf(t, reg), three.elementOf(t, reg)) << m << "x" << n;
  }
}

TEST(MmaLayoutV2, Covers) {
  expectCovers(v2(16, 8, 1, 1));
  expectCovers(v2(16, 32, 4, 4));
  expectCovers(v2(32, 32, 4, 2));
  expectCovers(v2(64, 128, 4, 1));
  expectCovers(v2(128, 64, 8, 2));
  expectCovers(v2(64, 256, 16, 4));
}

TEST(MmaLayoutV2, RowsWrap) {
  // Fewer rows than the warps along M cover: the extra warps hold copies.
  expectCovers(v2(16, 32, 8, 4), 2);
  expectCovers(v2(32, 64, 8, 1), 4);
  // M <= 8: both halves of a block hold row g mod M (and lanes g, g + M, ...
  // the same rows).
  expectCovers(v2(8, 32, 4, 4), 2);
  expectCovers(v2(4, 8, 1, 1), 4);
  expectCovers(v2(1, 16, 2, 2), 16);
  tile::MmaLayout small = v2(8, 8, 1, 1);
  for (int64_t t = 0; t < 32; ++t) {
    EXPECT_EQ(small.elementOf(t, 0), small.elementOf(t, 2));
    EXPECT_EQ(small.elementOf(t, 0) / 8, t / 4);
  }
}

TEST(MmaLayoutV2, RowVector) {
  // N = 1 (a slice's rows): registers 2 rM + h hold rows 16 (WM rM + wM) + g
  // + 8h, the same in every warp of a row group.
  tile::MmaLayout rows = v2(64, 1, 8, 2);
  EXPECT_EQ(rows.regsPerThread(), 2 * 64 / (16 * 4));
  for (int64_t t = 0; t < 8 * 32; ++t)
    for (int64_t reg = 0; reg < rows.regsPerThread(); ++reg) {
      int64_t wm = t / 32 % 4, g = t % 32 / 4;
      EXPECT_EQ(rows.elementOf(t, reg), 16 * (4 * (reg / 2) + wm) + g + 8 * (reg % 2));
    }
  expectCovers(rows, 4 * 2); // the 4 lanes of a quad, the 2 warps of a row group
}

} // namespace
