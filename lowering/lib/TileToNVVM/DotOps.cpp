//===- DotOps.cpp - tile.dot on mma.sync ------------------------------------===//
//
// A self-contained lowering of tile.dot to mma.sync.aligned.m16n8k16 (every
// arch): the operands and the accumulator keep the blocked layout outside the
// op; inside it they move through shared memory:
//  1. every thread stores its registers of `a` [M, K] and `b` [K, N] to
//     row-major buffers whose rows are padded by 16 bytes (the 8 row addresses
//     of one ldmatrix then fall in distinct banks);
//  2. the accumulator goes through an f32 buffer of `slabRows` rows at a time
//     (all M rows when they fit in the 48 KiB of static shared memory): each
//     thread stores its `acc` registers of the slab, bar.sync, each warp takes
//     the slab's 16x8 output tiles warp, warp + warps, ... and for each tile
//     reads its accumulator fragment, runs K / 16 steps of ldmatrix.x4 (A),
//     ldmatrix.x2.trans (B) and mma.sync, and writes the fragment back;
//     bar.sync, every thread reads its result registers of the slab, bar.sync.
// A slab is a multiple of threads * vec elements, so which registers of a
// thread fall in it is known at compile time (ElementIndices::offsets).
// M below 16 (a power of two: GQA decode's few query heads a KV head) runs on
// the same m16n8k16 tiles: the buffers of `a` and of the accumulator slab have
// 16 rows, the rows past M zeroed in shared memory (never loaded from or
// stored to global memory), and the results of those rows are dropped.
//
//===----------------------------------------------------------------------===//

#include "ConversionSteps.h"
#include "PatternUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"

#include <array>

using namespace mlir;
using namespace kiln;

namespace {
/// The shared-memory plan of one tile.dot.
struct DotPlan {
  static constexpr int64_t kSharedLimit = 48 * 1024; ///< static shared memory per block
  /// Row padding: the 8 rows one ldmatrix reads (16 bytes each) and the 8
  /// rows of the f32x2 accumulator accesses (32 bytes per 4 lanes) fall in
  /// distinct banks.
  static constexpr int64_t kOperandPadBytes = 16, kAccPadBytes = 32;

  int64_t m, n, k;
  int64_t mPadded;      ///< rows of the a buffer and at least of a slab: max(m, 16)
  int64_t operandBytes; ///< bytes of one a/b element
  int64_t minSlabRows;  ///< the smallest slab the blocked layout allows
  int64_t slabRows;     ///< accumulator rows per pass (0: none fits)

  int64_t aStride() const { return k + kOperandPadBytes / operandBytes; }
  int64_t bStride() const { return n + kOperandPadBytes / operandBytes; }
  int64_t cStride() const { return n + kAccPadBytes / 4; }
  int64_t operandsBytes() const { return (mPadded * aStride() + k * bStride()) * operandBytes; }
  int64_t slabBytes(int64_t rows) const { return std::max<int64_t>(rows, 16) * cStride() * 4; }
};

/// The largest accumulator slab (power-of-two rows, at least 16, all M rows or
/// a multiple of the blocked layout's threads * vec elements) that fits beside
/// the operands.
DotPlan planDot(tile::DotOp op, const TileTypeConverter &converter) {
  auto aType = op.getA().getType();
  DotPlan plan;
  plan.m = aType.getDimSize(0);
  plan.mPadded = std::max<int64_t>(plan.m, 16);
  plan.k = aType.getDimSize(1);
  plan.n = op.getB().getType().getDimSize(1);
  plan.operandBytes = aType.getElementTypeBitWidth() / 8;
  tile::BlockedLayout layout = converter.getLayout(op.getAcc().getType());
  plan.minSlabRows = std::min(plan.m, std::max<int64_t>(16, layout.threads * layout.vec / plan.n));
  plan.slabRows = 0;
  for (int64_t rows = plan.m; rows >= plan.minSlabRows; rows /= 2)
    if (plan.operandsBytes() + plan.slabBytes(rows) <= DotPlan::kSharedLimit) {
      plan.slabRows = rows;
      break;
    }
  return plan;
}

/// Element `index` of a row-major [rows, 2^log2Cols] tile in a buffer whose
/// rows are `stride` elements apart.
Value paddedIndex(OpBuilder &b, Location loc, Value index, int64_t log2Cols, int64_t stride) {
  int64_t cols = int64_t(1) << log2Cols;
  if (stride == cols)
    return index;
  Value row = LLVM::LShrOp::create(b, loc, index, createI32Constant(b, loc, log2Cols));
  Value pad = LLVM::MulOp::create(b, loc, row, createI32Constant(b, loc, stride - cols));
  return LLVM::AddOp::create(b, loc, index, pad);
}

/// Moves the registers of a blocked [rows, cols] tile whose elements lie in
/// [first, first + count) to or from a padded row-major buffer (element e at
/// (e - first) / cols * stride + e % cols), in accesses of up to 16 bytes that
/// stay within a row.
class BlockedBufferAccess {
public:
  BlockedBufferAccess(OpBuilder &b, Location loc, Value buffer, Type element,
                      const tile::BlockedLayout &layout, int64_t cols, int64_t stride)
      : b(b), loc(loc), buffer(buffer), element(element), layout(layout),
        log2Cols(llvm::Log2_64(cols)), stride(stride),
        access(b.getContext(), element,
               std::min({layout.vec, 16 / int64_t(element.getIntOrFloatBitWidth() / 8), cols})),
        indices(getElementIndices(b, loc, layout)) {}

  void store(ArrayRef<Value> regs, int64_t first, int64_t count) {
    for (int64_t r = 0, e = regs.size(); r < e; r += access.vec)
      if (Value ptr = pointer(r, first, count))
        LLVM::StoreOp::create(b, loc, access.join(b, loc, regs.slice(r, access.vec)), ptr,
                              access.alignment);
  }

  void load(MutableArrayRef<Value> regs, int64_t first, int64_t count) {
    for (int64_t r = 0, e = regs.size(); r < e; r += access.vec) {
      Value ptr = pointer(r, first, count);
      if (!ptr)
        continue;
      Value loaded = LLVM::LoadOp::create(b, loc, access.accessType, ptr, access.alignment);
      for (auto [i, value] : llvm::enumerate(access.split(b, loc, loaded)))
        regs[r + i] = value;
    }
  }

private:
  /// The address of register `r`'s element, or null when it is outside the range.
  Value pointer(int64_t r, int64_t first, int64_t count) {
    int64_t offset = indices.offsets[r];
    // A replicated tile lies in one range; otherwise the range is a multiple
    // of threads * vec and the thread's base never moves an element across it.
    if (!layout.isReplicated() && (offset < first || offset >= first + count))
      return Value();
    Value index =
        LLVM::AddOp::create(b, loc, indices.base, createI32Constant(b, loc, offset - first));
    index = paddedIndex(b, loc, index, log2Cols, stride);
    return LLVM::GEPOp::create(b, loc, buffer.getType(), element, buffer,
                               ArrayRef<LLVM::GEPArg>{index});
  }

  OpBuilder &b;
  Location loc;
  Value buffer;
  Type element;
  tile::BlockedLayout layout;
  int64_t log2Cols, stride;
  VectorAccess access;
  ElementIndices indices;
};

struct DotLowering : TileOpConversion<tile::DotOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::DotOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = getContext();
    DotPlan plan = planDot(op, tileConverter);
    if (!plan.slabRows)
      return rewriter.notifyMatchFailure(op, "does not fit in shared memory");
    auto aType = op.getA().getType(), bType = op.getB().getType();
    auto accType = op.getAcc().getType();
    Type operandElement = getTypeConverter()->convertType(aType.getElementType());
    Type f32 = rewriter.getF32Type(), i32 = rewriter.getI32Type();
    auto c = [&](int64_t v) { return createI32Constant(rewriter, loc, v); };

    // 1. The operands to shared memory.
    // Scratch: the last slab's results are read before the final bar.sync.
    Value aBuffer =
        createSharedBuffer(rewriter, op, "__kiln_dot_a_smem", operandElement,
                           plan.mPadded * plan.aStride(), /*alignment=*/16, /*scratch=*/true);
    Value bBuffer = createSharedBuffer(rewriter, op, "__kiln_dot_b_smem", operandElement,
                                       plan.k * plan.bStride(), /*alignment=*/16, /*scratch=*/true);
    int64_t slabBufferRows = std::max<int64_t>(plan.slabRows, 16);
    Value cBuffer = createSharedBuffer(rewriter, op, "__kiln_dot_acc_smem", f32,
                                       slabBufferRows * plan.cStride(), /*alignment=*/16,
                                       /*scratch=*/true);
    BlockedBufferAccess(rewriter, loc, aBuffer, operandElement, tileConverter.getLayout(aType),
                        plan.k, plan.aStride())
        .store(unpackTile(rewriter, loc, adaptor.getA()), 0, aType.getNumElements());
    BlockedBufferAccess(rewriter, loc, bBuffer, operandElement, tileConverter.getLayout(bType),
                        plan.n, plan.bStride())
        .store(unpackTile(rewriter, loc, adaptor.getB()), 0, bType.getNumElements());
    bool zeroAcc = matchPattern(op.getAcc(), m_PosZeroFloat());
    // M < 16: the rows past M of a (and of the accumulator, which the tiles
    // read unless it is zero) hold zeros, 16-byte stores spread over the threads.
    Value tid = createThreadId(rewriter, loc);
    auto zeroRows = [&](Value buffer, Type element, int64_t from, int64_t to, int64_t stride) {
      int64_t perStore = 16 / (element.getIntOrFloatBitWidth() / 8);
      int64_t threads = tileConverter.getThreadsPerBlock();
      Type vector = VectorType::get({4}, i32);
      Value zero = LLVM::ZeroOp::create(rewriter, loc, vector);
      for (int64_t start = from * stride; start < to * stride; start += threads * perStore) {
        Value index = LLVM::AddOp::create(rewriter, loc, c(start),
                                          LLVM::MulOp::create(rewriter, loc, tid, c(perStore)));
        Value inside =
            LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::ult, index, c(to * stride));
        scf::IfOp::create(rewriter, loc, inside, [&](OpBuilder &b, Location l) {
          Value ptr = LLVM::GEPOp::create(b, l, buffer.getType(), element, buffer,
                                          ArrayRef<LLVM::GEPArg>{index});
          LLVM::StoreOp::create(b, l, zero, ptr, 16);
          scf::YieldOp::create(b, l);
        });
      }
    };
    if (plan.m < 16) {
      zeroRows(aBuffer, operandElement, plan.m, 16, plan.aStride());
      if (!zeroAcc)
        zeroRows(cBuffer, f32, plan.m, 16, plan.cStride());
    }

    // The lane's parts of the fragment addresses (PTX ISA, mma.m16n8k16):
    // ldmatrix.x4 of A reads rows lane % 16, columns 8 * (lane / 16); the
    // x2.trans of B rows lane % 16; the accumulator c0, c1 sit at row
    // lane / 4, columns 2 * (lane % 4) + {0, 1}, and c2, c3 8 rows below.
    Value lane = LLVM::AndOp::create(rewriter, loc, tid, c(31));
    Value warp = LLVM::LShrOp::create(rewriter, loc, tid, c(5));
    Value lane16 = LLVM::AndOp::create(rewriter, loc, lane, c(15));
    Value aLane = LLVM::AddOp::create(
        rewriter, loc, LLVM::MulOp::create(rewriter, loc, lane16, c(plan.aStride())),
        LLVM::ShlOp::create(rewriter, loc, LLVM::LShrOp::create(rewriter, loc, lane, c(4)), c(3)));
    Value bLane = LLVM::MulOp::create(rewriter, loc, lane16, c(plan.bStride()));
    Value cLane = LLVM::AddOp::create(
        rewriter, loc,
        LLVM::MulOp::create(rewriter, loc, LLVM::LShrOp::create(rewriter, loc, lane, c(2)),
                            c(plan.cStride())),
        LLVM::ShlOp::create(rewriter, loc, LLVM::AndOp::create(rewriter, loc, lane, c(3)), c(1)));

    bool bf16 = aType.getElementType().isBF16();
    auto ptxType = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    Type pair = bf16 ? Type(i32) : Type(VectorType::get({2}, rewriter.getF16Type()));
    Type f32x2 = VectorType::get({2}, f32);
    Type fragmentType = LLVM::LLVMStructType::getLiteral(context, {f32, f32, f32, f32});
    auto ldmatrix = [&](OpBuilder &b, Value ptr, int64_t num, NVVM::MMALayout layout) {
      Type i32s = LLVM::LLVMStructType::getLiteral(context, SmallVector<Type>(num, i32));
      Value loaded = NVVM::LdMatrixOp::create(b, loc, i32s, ptr, num, layout,
                                              NVVM::LdStMatrixShapeAttr::get(context, 8, 8),
                                              NVVM::LdStMatrixEltType::B16);
      SmallVector<Value> regs;
      for (Value reg : unpackTile(b, loc, loaded))
        regs.push_back(bf16 ? reg : LLVM::BitcastOp::create(b, loc, pair, reg).getResult());
      return regs;
    };

    tile::BlockedLayout accLayout = tileConverter.getLayout(accType);
    BlockedBufferAccess accAccess(rewriter, loc, cBuffer, f32, accLayout, plan.n, plan.cStride());
    SmallVector<Value> accRegs;
    if (!zeroAcc)
      accRegs = unpackTile(rewriter, loc, adaptor.getAcc());
    SmallVector<Value> results(accLayout.regsPerThread());

    int64_t warps = tileConverter.getThreadsPerBlock() / 32;
    int64_t tilesN = plan.n / 8;
    int64_t tiles = slabBufferRows / 16 * tilesN;
    int64_t slabElements = plan.slabRows * plan.n;
    for (int64_t first = 0; first < accType.getNumElements(); first += slabElements) {
      // 2. The slab's accumulator in, then the warps' tiles.
      if (!zeroAcc)
        accAccess.store(accRegs, first, slabElements);
      if (first == 0 || !zeroAcc)
        NVVM::BarrierOp::create(rewriter, loc);
      auto mmaTiles = [&](OpBuilder &b, Location) {
        auto c = [&](int64_t v) { return createI32Constant(b, loc, v); };
        auto shared = [&](Value buffer, Type element, Value index) {
          return LLVM::GEPOp::create(b, loc, buffer.getType(), element, buffer,
                                     ArrayRef<LLVM::GEPArg>{index});
        };
        for (int64_t t0 = 0; t0 < tiles; t0 += warps) {
          Value t = LLVM::AddOp::create(b, loc, warp, c(t0));
          Value tileRow = LLVM::ShlOp::create(
              b, loc, LLVM::LShrOp::create(b, loc, t, c(llvm::Log2_64(tilesN))), c(4));
          Value tileCol =
              LLVM::ShlOp::create(b, loc, LLVM::AndOp::create(b, loc, t, c(tilesN - 1)), c(3));
          // c0, c1 at cIndex, c2, c3 at cIndex + 8 rows (slab-relative).
          Value cIndex = LLVM::AddOp::create(
              b, loc,
              LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, tileRow, c(plan.cStride())),
                                  tileCol),
              cLane);
          std::array<Value, 2> cIndices = {
              cIndex, LLVM::AddOp::create(b, loc, cIndex, c(8 * plan.cStride()))};
          SmallVector<Value> acc;
          if (zeroAcc)
            acc.assign(4, LLVM::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(0.0f)));
          else
            for (Value index : cIndices) {
              Value v = LLVM::LoadOp::create(b, loc, f32x2, shared(cBuffer, f32, index), 8);
              for (int64_t i = 0; i < 2; ++i)
                acc.push_back(LLVM::ExtractElementOp::create(b, loc, v, c(i)));
            }
          // Rows of a: the slab's first row + the tile's.
          Value aRow =
              LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, tileRow, c(plan.aStride())),
                                  c(first / plan.n * plan.aStride()));
          Value aBase = LLVM::AddOp::create(b, loc, aRow, aLane);
          Value bBase = LLVM::AddOp::create(b, loc, bLane, tileCol);
          for (int64_t kk = 0; kk < plan.k; kk += 16) {
            SmallVector<Value> aFrag = ldmatrix(
                b, shared(aBuffer, operandElement, LLVM::AddOp::create(b, loc, aBase, c(kk))), 4,
                NVVM::MMALayout::row);
            SmallVector<Value> bFrag =
                ldmatrix(b,
                         shared(bBuffer, operandElement,
                                LLVM::AddOp::create(b, loc, bBase, c(kk * plan.bStride()))),
                         2, NVVM::MMALayout::col);
            Value d = NVVM::MmaOp::create(
                b, loc, fragmentType, aFrag, bFrag, acc, ArrayRef<int64_t>{16, 8, 16}, std::nullopt,
                std::nullopt, std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
                std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
            acc = unpackTile(b, loc, d);
          }
          for (auto [i, index] : llvm::enumerate(cIndices)) {
            Value v = LLVM::PoisonOp::create(b, loc, f32x2);
            for (int64_t j = 0; j < 2; ++j)
              v = LLVM::InsertElementOp::create(b, loc, v, acc[2 * i + j], c(j));
            LLVM::StoreOp::create(b, loc, v, shared(cBuffer, f32, index), 8);
          }
        }
      };
      if (tiles >= warps) {
        mmaTiles(rewriter, loc);
      } else {
        // Fewer tiles than warps: the others skip (a warp-uniform branch).
        Value active =
            LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::ult, warp, c(tiles));
        scf::IfOp::create(rewriter, loc, active, [&](OpBuilder &b, Location l) {
          mmaTiles(b, l);
          scf::YieldOp::create(b, l);
        });
      }
      // 3. The slab's results in the blocked layout; the buffers are written
      // again by the next slab or a later dot.
      NVVM::BarrierOp::create(rewriter, loc);
      accAccess.load(results, first, slabElements);
      NVVM::BarrierOp::create(rewriter, loc);
    }
    rewriter.replaceOp(op,
                       packTile(rewriter, loc, getTypeConverter()->convertType(accType), results));
    return success();
  }
};
} // namespace

LogicalResult kiln::checkDotSharedMemory(tile::DotOp op, const TileTypeConverter &converter) {
  DotPlan plan = planDot(op, converter);
  if (plan.slabRows)
    return success();
  int64_t rows = plan.minSlabRows;
  return op.emitOpError() << "needs " << plan.operandsBytes() + plan.slabBytes(rows)
                          << " bytes of shared memory (a and b: " << plan.operandsBytes() << ", a "
                          << rows << "-row accumulator slab: " << plan.slabBytes(rows)
                          << "), more than the " << DotPlan::kSharedLimit
                          << " of static shared memory; use smaller tiles";
}

void kiln::populateTileDotOpsToNVVMPatterns(TileTypeConverter &converter,
                                            RewritePatternSet &patterns) {
  patterns.add<DotLowering>(converter);
}
