//===- DotOps.cpp - tile.warp_dot on mma.sync -------------------------------===//
//
// tile.warp_dot -> mma.sync.aligned.m16n8k16 (every arch) on an accumulator
// in the registers of `#tile.mma` version 2: warp w at (wM, wN) = (w mod WM,
// w / WM) holds the C fragments of its 16-row blocks rM (rows
// 16 (WM rM + wM) + ..., wrapping mod M) and of its n-tiles j (columns
// wN Nw + 8j + ...), in registers rM Nw/2 + 4j .. + 3 (Layout.h).
//  1. The register operands (any layout) go to shared scratch buffers,
//     row-major with rows padded by 16 bytes (the 8 row addresses of one
//     ldmatrix fall in distinct bank groups): `a` [M, K] (unless it is staged
//     once already, `!tile.smem`, or read from registers), `b` [K, N], or with
//     `bKMajor` the [N, K] tile itself (unless it is a ring slot, a 128-byte
//     swizzled box read where it is); then bar.sync, if anything was stored.
//  2. Per k16 step in ascending order: the B fragments of the warp's n-tiles
//     (ldmatrix.x4 for two, x2 for one; .trans from [K, N] rows, plain from
//     [N, K] rows), then per 16-row block the A fragment (ldmatrix.x4 of rows
//     lane mod 16, columns 8 (lane / 16); or four words of `a`'s registers
//     when `a` is in the accumulator's encoding) and one mma.sync per n-tile.
//     Each 16 x 8 tile thus accumulates its k16 steps in order from `acc`.
//  3. bar.sync (where step 1 stored): the scratch is free for the next op.
//
//===----------------------------------------------------------------------===//

#include "ConversionSteps.h"
#include "PatternUtils.h"

#include "llvm/Support/MathExtras.h"

#include <array>

using namespace mlir;
using namespace kiln;

namespace {
/// Row padding of the staged operands, in bytes.
constexpr int64_t kPadBytes = 16;

struct WarpDotLowering : TileOpConversion<tile::WarpDotOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::WarpDotOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = getContext();
    auto aType = op.getATile(), bType = op.getBTile();
    auto accType = op.getAcc().getType();
    tile::MmaLayout layout = *tileConverter.getMmaLayout(accType);
    int64_t m = aType.getDimSize(0), k = aType.getDimSize(1), n = accType.getDimSize(1);
    bool bKMajor = op.getBKMajor();
    // A in the accumulator's encoding with whole rows a warp is its registers.
    bool registerA = aType.getEncoding() == accType.getEncoding() && layout.warpsN == 1;
    // A staged once (`!tile.smem`: K-major, the 128-byte swizzle) is read there.
    bool stagedA = llvm::isa<tile::SmemType>(op.getA().getType());
    // B a ring slot (a 128-byte swizzled box) is read there.
    tile::RingType bRing = op.getBRing();
    if (bRing && tile::getRingSwizzle(op.getB()) != 128)
      return rewriter.notifyMatchFailure(op, "B's ring slots are not 128-byte swizzled boxes");
    Type element = getTypeConverter()->convertType(aType.getElementType());
    // B's 8-bit float codes (a slot), widened to A's type in the fragments.
    bool codesB = bRing && bType.getElementTypeBitWidth() == 8;
    if (codesB && !(op.getBKMajor() && stagedA))
      return rewriter.notifyMatchFailure(op, "8-bit codes need bKMajor and a staged A");
    Type bElement = codesB ? Type(rewriter.getI8Type()) : element;
    int64_t elementBytes = aType.getElementTypeBitWidth() / 8;
    int64_t pad = kPadBytes / elementBytes;
    // The operands' rows in elements: padded when staged, the box's own.
    int64_t aStride = k + pad, bStride = bRing ? bType.getDimSize(1) : (bKMajor ? k : n) + pad;
    Type f32 = rewriter.getF32Type(), i32 = rewriter.getI32Type();
    auto c = [&](int64_t v) { return createI32Constant(rewriter, loc, v); };
    auto shared = [&](Value buffer, Value index) {
      return LLVM::GEPOp::create(rewriter, loc, buffer.getType(), element, buffer,
                                 ArrayRef<LLVM::GEPArg>{index});
    };

    // 1. The register operands to shared memory.
    Value aBuffer = stagedA ? adaptor.getA() : Value(), bBuffer;
    bool storesA = !registerA && !stagedA;
    if (storesA) {
      aBuffer = createSharedBuffer(rewriter, op, "__kiln_dot_a_smem", element, m * aStride,
                                   /*alignment=*/16, /*scratch=*/true);
      storePadded(rewriter, loc, tileConverter, aType, aBuffer, element, pad,
                  unpackTile(rewriter, loc, adaptor.getA()));
    }
    if (bRing) {
      bBuffer = ringSlotAddress(rewriter, loc, bRing, adaptor.getB(), adaptor.getBSlot());
    } else {
      bBuffer = createSharedBuffer(rewriter, op, "__kiln_dot_b_smem", element,
                                   bType.getDimSize(0) * bStride, /*alignment=*/16,
                                   /*scratch=*/true);
      storePadded(rewriter, loc, tileConverter, bType, bBuffer, element, pad,
                  unpackTile(rewriter, loc, adaptor.getB()));
    }
    bool scratch = storesA || !bRing;
    if (scratch)
      NVVM::BarrierOp::create(rewriter, loc);
    // B's element `index` (of rows of bStride elements): in the padded
    // scratch, or in the slot's swizzled box.
    auto bAddress = [&](Value index) -> Value {
      if (!bRing)
        return shared(bBuffer, index);
      return boxElementAddress(rewriter, loc, bBuffer, bElement, index,
                               tile::getNumBoxChunks(bType, 128), bType.getDimSize(0), 128);
    };

    // The lane's parts of the fragment addresses (PTX ISA, ldmatrix and the
    // mma.m16n8k16 fragments): A rows lane mod 16, columns 8 (lane / 16);
    // a K-major B's x4 rows (n) lane mod 8 + 8 (lane / 16), columns (k)
    // 8 (lane / 8 mod 2); an MN-major B's rows (k) lane mod 16, columns (n)
    // 8 (lane / 16).
    Value tid = createThreadId(rewriter, loc);
    Value lane = LLVM::AndOp::create(rewriter, loc, tid, c(31));
    Value warp = LLVM::AndOp::create(rewriter, loc, LLVM::LShrOp::create(rewriter, loc, tid, c(5)),
                                     c(layout.warps - 1));
    int64_t warpsM = layout.warpsM(), columns = layout.columnsPerWarp();
    Value wM = LLVM::AndOp::create(rewriter, loc, warp, c(warpsM - 1));
    Value wN = LLVM::LShrOp::create(rewriter, loc, warp, c(llvm::Log2_64(warpsM)));
    Value lane16 = LLVM::AndOp::create(rewriter, loc, lane, c(15));
    Value half =
        LLVM::ShlOp::create(rewriter, loc, LLVM::LShrOp::create(rewriter, loc, lane, c(4)), c(3));
    // The warp's first column.
    Value column0 = LLVM::MulOp::create(rewriter, loc, wN, c(columns));
    Value bLane;
    if (bKMajor) {
      Value row =
          LLVM::AddOp::create(rewriter, loc, LLVM::AndOp::create(rewriter, loc, lane, c(7)), half);
      row = LLVM::AddOp::create(rewriter, loc, row, column0);
      Value col = LLVM::ShlOp::create(
          rewriter, loc,
          LLVM::AndOp::create(rewriter, loc, LLVM::LShrOp::create(rewriter, loc, lane, c(3)), c(1)),
          c(3));
      bLane = LLVM::AddOp::create(rewriter, loc,
                                  LLVM::MulOp::create(rewriter, loc, row, c(bStride)), col);
    } else {
      bLane =
          LLVM::AddOp::create(rewriter, loc, LLVM::MulOp::create(rewriter, loc, lane16, c(bStride)),
                              LLVM::AddOp::create(rewriter, loc, half, column0));
    }
    // A's row of each 16-row block, wrapped into the tile: its element in
    // the padded buffer; staged, the row's byte offset (rows of 128 bytes).
    int64_t reps = layout.reps();
    SmallVector<Value> aLanes;
    if (!registerA)
      for (int64_t rM = 0; rM < reps; ++rM) {
        Value row =
            LLVM::AddOp::create(rewriter, loc, LLVM::ShlOp::create(rewriter, loc, wM, c(4)),
                                LLVM::AddOp::create(rewriter, loc, lane16, c(16 * warpsM * rM)));
        row = LLVM::AndOp::create(rewriter, loc, row, c(m - 1));
        aLanes.push_back(
            stagedA ? LLVM::ShlOp::create(rewriter, loc, row, c(7)).getResult()
                    : LLVM::AddOp::create(rewriter, loc,
                                          LLVM::MulOp::create(rewriter, loc, row, c(aStride)), half)
                          .getResult());
      }
    // Staged: the lane's 16-byte unit (kk mod 64) / 8 + lane / 16 of its row,
    // swizzled by the row's phase (lane mod 8: M is a multiple of 8), in the
    // 64-column chunk kk / 64 of M rows.
    auto stagedAddress = [&](Value rowBytes, int64_t kk) {
      Value unit = LLVM::AddOp::create(
          rewriter, loc, LLVM::LShrOp::create(rewriter, loc, lane, c(4)), c(kk % 64 / 8));
      Value phase = LLVM::AndOp::create(rewriter, loc, lane, c(7));
      Value inRow =
          LLVM::ShlOp::create(rewriter, loc, LLVM::XOrOp::create(rewriter, loc, unit, phase), c(4));
      Value offset = LLVM::AddOp::create(
          rewriter, loc, LLVM::AddOp::create(rewriter, loc, rowBytes, inRow), c(kk / 64 * m * 128));
      return LLVM::GEPOp::create(rewriter, loc, aBuffer.getType(), rewriter.getI8Type(), aBuffer,
                                 ArrayRef<LLVM::GEPArg>{offset});
    };

    bool bf16 = aType.getElementType().isBF16();
    auto ptxType = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    Type pair = bf16 ? Type(i32) : Type(VectorType::get({2}, rewriter.getF16Type()));
    auto asPair = [&](Value word) -> Value {
      return bf16 ? word : LLVM::BitcastOp::create(rewriter, loc, pair, word).getResult();
    };
    Type fragmentType = LLVM::LLVMStructType::getLiteral(context, {f32, f32, f32, f32});
    auto ldmatrix = [&](Value ptr, int64_t num, NVVM::MMALayout mmaLayout) {
      Type i32s = LLVM::LLVMStructType::getLiteral(context, SmallVector<Type>(num, i32));
      Value loaded = NVVM::LdMatrixOp::create(rewriter, loc, i32s, ptr, num, mmaLayout,
                                              NVVM::LdStMatrixShapeAttr::get(context, 8, 8),
                                              NVVM::LdStMatrixEltType::B16);
      return llvm::map_to_vector(unpackTile(rewriter, loc, loaded), asPair);
    };

    // Codes: one ldmatrix (b16) 8 x 8 matrix is an n-tile's k16 step, 8
    // rows of 16 codes; lane l holds codes 4 (l mod 4) .. + 3 of row l / 4,
    // which widen to the B fragment's two words. So the fragment's k slots
    // 2c, 2c + 1, 2c + 8, 2c + 9 stand for the step's k 4c .. 4c + 3, and A is
    // read in the same order: 8 bytes of each of the lane's rows g, g + 8
    // at k 4c (in place of ldmatrix), a0 | a2 and a1 | a3.
    int64_t tilesN = columns / 8;
    Type i8 = rewriter.getI8Type();
    Type codeType = bRing ? bType.getElementType() : Type();
    auto widen = [&](Value word) -> std::array<Value, 2> {
      Value bytes = LLVM::BitcastOp::create(rewriter, loc, VectorType::get({4}, i8), word);
      std::array<Value, 2> out;
      for (int64_t h = 0; h < 2; ++h) {
        Value codes = LLVM::ShuffleVectorOp::create(
            rewriter, loc, bytes, bytes, ArrayRef<int32_t>{int32_t(2 * h), int32_t(2 * h + 1)});
        Value halves = NVVM::ConvertF8x2ToF16x2Op::create(
            rewriter, loc, VectorType::get({2}, rewriter.getF16Type()), codes,
            rewriter.getBoolAttr(false), TypeAttr::get(codeType));
        if (bf16) {
          Value wide = LLVM::FPExtOp::create(rewriter, loc, VectorType::get({2}, f32), halves);
          Value narrow = LLVM::FPTruncOp::create(
              rewriter, loc, VectorType::get({2}, rewriter.getBF16Type()), wide);
          out[h] = LLVM::BitcastOp::create(rewriter, loc, i32, narrow);
        } else {
          out[h] = halves;
        }
      }
      return out;
    };
    auto codeFragments = [&](int64_t kk) {
      SmallVector<Value> frags;
      for (int64_t j0 = 0; j0 < tilesN; j0 += 4) {
        int64_t num = std::min<int64_t>(tilesN - j0, 4);
        Value row = LLVM::AddOp::create(
            rewriter, loc, column0,
            LLVM::AddOp::create(rewriter, loc, c(8 * j0),
                                LLVM::AndOp::create(rewriter, loc, lane, c(8 * num - 1))));
        Value index = LLVM::AddOp::create(
            rewriter, loc, LLVM::MulOp::create(rewriter, loc, row, c(bStride)), c(kk));
        Type words =
            num == 1 ? i32
                     : Type(LLVM::LLVMStructType::getLiteral(context, SmallVector<Type>(num, i32)));
        Value loaded = NVVM::LdMatrixOp::create(
            rewriter, loc, words, bAddress(index), num, NVVM::MMALayout::row,
            NVVM::LdStMatrixShapeAttr::get(context, 8, 8), NVVM::LdStMatrixEltType::B16);
        SmallVector<Value> loadedWords =
            num == 1 ? SmallVector<Value>{loaded} : unpackTile(rewriter, loc, loaded);
        for (Value word : loadedWords)
          llvm::append_range(frags, widen(word));
      }
      return frags;
    };
    auto codeOrderA = [&](int64_t rM, int64_t kk) {
      Value g = LLVM::LShrOp::create(rewriter, loc, lane, c(2));
      Value quad = LLVM::AndOp::create(rewriter, loc, lane, c(3));
      std::array<Value, 2> halves;
      for (int64_t h = 0; h < 2; ++h) {
        Value row =
            LLVM::AddOp::create(rewriter, loc, LLVM::ShlOp::create(rewriter, loc, wM, c(4)),
                                LLVM::AddOp::create(rewriter, loc, g, c(16 * warpsM * rM + 8 * h)));
        row = LLVM::AndOp::create(rewriter, loc, row, c(m - 1));
        // Byte 2 (kk mod 64 + 4 quad) of the row: 16-byte unit kk mod 64 / 8
        // + quad / 2, at 8 (quad mod 2) in it; the unit swizzled by row mod 8.
        Value unit = LLVM::AddOp::create(
            rewriter, loc, LLVM::LShrOp::create(rewriter, loc, quad, c(1)), c(kk % 64 / 8));
        unit =
            LLVM::XOrOp::create(rewriter, loc, unit, LLVM::AndOp::create(rewriter, loc, row, c(7)));
        Value offset = LLVM::AddOp::create(
            rewriter, loc,
            LLVM::AddOp::create(rewriter, loc, LLVM::ShlOp::create(rewriter, loc, row, c(7)),
                                LLVM::ShlOp::create(rewriter, loc, unit, c(4))),
            LLVM::AddOp::create(rewriter, loc,
                                LLVM::ShlOp::create(rewriter, loc,
                                                    LLVM::AndOp::create(rewriter, loc, quad, c(1)),
                                                    c(3)),
                                c(kk / 64 * m * 128)));
        Value ptr = LLVM::GEPOp::create(rewriter, loc, aBuffer.getType(), i8, aBuffer,
                                        ArrayRef<LLVM::GEPArg>{offset});
        halves[h] = LLVM::LoadOp::create(rewriter, loc, VectorType::get({2}, i32), ptr,
                                         /*alignment=*/8);
      }
      auto word = [&](int64_t h, int64_t i) {
        return asPair(LLVM::ExtractElementOp::create(rewriter, loc, halves[h], c(i)));
      };
      return SmallVector<Value>{word(0, 0), word(1, 0), word(0, 1), word(1, 1)};
    };

    SmallVector<Value> acc = unpackTile(rewriter, loc, adaptor.getAcc());
    SmallVector<Value> aWords;
    if (registerA)
      aWords = packRegisterA(rewriter, loc, element, unpackTile(rewriter, loc, adaptor.getA()));
    auto bLayout = bKMajor ? NVVM::MMALayout::row : NVVM::MMALayout::col;
    for (int64_t kk = 0; kk < k; kk += 16) {
      // 2. The B fragments of the warp's n-tiles: two words each.
      SmallVector<Value> bFrags;
      if (codesB)
        bFrags = codeFragments(kk);
      for (int64_t j = 0; j < tilesN && !codesB; j += 2) {
        int64_t offset = bKMajor ? 8 * j * bStride + kk : kk * bStride + 8 * j;
        llvm::append_range(bFrags,
                           ldmatrix(bAddress(LLVM::AddOp::create(rewriter, loc, bLane, c(offset))),
                                    std::min<int64_t>(tilesN, 2) * 2, bLayout));
      }
      for (int64_t rM = 0; rM < reps; ++rM) {
        SmallVector<Value> aFrag;
        if (registerA) {
          for (int64_t i = 0; i < 4; ++i)
            aFrag.push_back(asPair(aWords[rM * (k / 4) + kk / 4 + i]));
        } else if (codesB) {
          aFrag = codeOrderA(rM, kk);
        } else if (stagedA) {
          aFrag = ldmatrix(stagedAddress(aLanes[rM], kk), 4, NVVM::MMALayout::row);
        } else {
          aFrag = ldmatrix(shared(aBuffer, LLVM::AddOp::create(rewriter, loc, aLanes[rM], c(kk))),
                           4, NVVM::MMALayout::row);
        }
        for (int64_t j = 0; j < tilesN; ++j) {
          MutableArrayRef<Value> c4 =
              MutableArrayRef<Value>(acc).slice(rM * columns / 2 + 4 * j, 4);
          Value d = NVVM::MmaOp::create(
              rewriter, loc, fragmentType, aFrag, ArrayRef<Value>(bFrags).slice(2 * j, 2),
              SmallVector<Value>(c4), ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
              std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
              std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
          llvm::copy(unpackTile(rewriter, loc, d), c4.begin());
        }
      }
    }
    // 3. Every warp is done reading the scratch.
    if (scratch)
      NVVM::BarrierOp::create(rewriter, loc);
    rewriter.replaceOp(op, packTile(rewriter, loc, getTypeConverter()->convertType(accType), acc));
    return success();
  }
};
} // namespace

void kiln::populateTileDotOpsToNVVMPatterns(TileTypeConverter &converter,
                                            RewritePatternSet &patterns) {
  patterns.add<WarpDotLowering>(converter);
}
