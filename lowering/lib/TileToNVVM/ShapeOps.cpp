//===- ShapeOps.cpp - splat, expand_dims, broadcast, trans, reshape, join --===//

#include "PatternUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Moving elements between threads through shared memory
//===----------------------------------------------------------------------===//

namespace {
/// Most bytes of elements the exchange buffer holds for one op; larger tiles
/// move in slabs.
constexpr int64_t kExchangeBufferBytes = 16 * 1024;
/// The module's one exchange buffer.
constexpr llvm::StringLiteral kExchangeBufferName = "__kiln_shape_smem";

/// Where the element at a row-major index goes in an exchange buffer: bit `i`
/// of the index moves to bit `targets[i]` of the position (nowhere for -1),
/// and the bits of `constant` (none of them a target) are set. For power-of-two
/// dimensions a permutation of the dimensions, or a new minor dimension, is
/// such a map. The map of a sum of indices with disjoint bits is the sum of
/// their maps (less one constant), which splits a position into a part that
/// depends on the thread only and a compile-time constant per register.
struct IndexMap {
  llvm::SmallVector<int64_t> targets;
  int64_t constant = 0;

  static IndexMap identity(int64_t bits) {
    IndexMap map;
    for (int64_t i = 0; i < bits; ++i)
      map.targets.push_back(i);
    return map;
  }
  bool isIdentity() const {
    for (auto [i, target] : llvm::enumerate(targets))
      if (target != static_cast<int64_t>(i))
        return false;
    return constant == 0;
  }
  int64_t apply(int64_t index) const {
    int64_t position = constant;
    for (auto [i, target] : llvm::enumerate(targets))
      if (target >= 0 && ((index >> i) & 1))
        position |= int64_t(1) << target;
    return position;
  }
  /// This map followed by `then` (bits `then` drops are dropped).
  IndexMap compose(const IndexMap &then) const {
    IndexMap composed;
    for (int64_t target : targets)
      composed.targets.push_back(target < 0 ? -1 : then.targets[target]);
    composed.constant = then.apply(constant);
    return composed;
  }
  /// The moved bits of `index`, whose bits outside [lo, hi) are zero (without
  /// the constant): a mask and a shift per run of bits that move together.
  Value applyToBits(OpBuilder &b, Location loc, Value index, int64_t lo, int64_t hi) const {
    Value position;
    for (int64_t i = lo; i < hi;) {
      int64_t j = i + 1;
      while (j < hi && targets[i] >= 0 && targets[j] == targets[i] + (j - i))
        ++j;
      if (targets[i] < 0) {
        i = j;
        continue;
      }
      Value field = index;
      if (i > lo || j < hi)
        field = LLVM::AndOp::create(b, loc, field,
                                    createI32Constant(b, loc, ((int64_t(1) << (j - i)) - 1) << i));
      if (targets[i] > i)
        field = LLVM::ShlOp::create(b, loc, field, createI32Constant(b, loc, targets[i] - i));
      else if (targets[i] < i)
        field = LLVM::LShrOp::create(b, loc, field, createI32Constant(b, loc, i - targets[i]));
      position = position ? LLVM::OrOp::create(b, loc, position, field).getResult() : field;
      i = j;
    }
    return position ? position : createI32Constant(b, loc, 0);
  }
};

/// A tile that stores its registers into the buffer, at `map` of their index.
struct ExchangeWriter {
  tile::BlockedLayout layout;
  IndexMap map;
  SmallVector<Value> values;
};

/// A tile whose registers load the buffer at `map` of their index.
struct ExchangeReader {
  tile::BlockedLayout layout;
  IndexMap map;
};

/// Bytes of one element in shared memory (i1 is stored as i8).
int64_t storedBytes(Type element) {
  if (llvm::isa<LLVM::LLVMPointerType>(element))
    return 8;
  return std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
}

/// What decides bit `bit` of the positions a side reaches: 0 the register (or
/// nothing: a constant), 1 the warp, 2 the lane; -1 where no index bit maps there.
SmallVector<int64_t> classifyPositionBits(const tile::BlockedLayout &layout, const IndexMap &map,
                                          int64_t positionBits) {
  SmallVector<int64_t> kinds(positionBits, -1);
  int64_t lo = llvm::Log2_64(layout.vec);
  int64_t hi = llvm::Log2_64(std::min(layout.numel, layout.threads * layout.vec));
  for (auto [i, target] : llvm::enumerate(map.targets)) {
    int64_t bit = static_cast<int64_t>(i);
    if (target >= 0)
      kinds[target] = bit < lo || bit >= hi ? 0 : (bit < lo + 5 ? 2 : 1);
  }
  for (int64_t bit = 0; bit < positionBits; ++bit)
    if ((map.constant >> bit) & 1)
      kinds[bit] = 0;
  return kinds;
}

/// The address of the module's exchange buffer, grown to at least `bytes`.
/// Every exchange of a kernel uses it in turn: each one ends with a barrier
/// after its last load, so the next one may overwrite it.
Value getExchangeBuffer(ConversionPatternRewriter &rewriter, Operation *op, int64_t bytes) {
  Location loc = op->getLoc();
  auto module = op->getParentOfType<ModuleOp>();
  auto type = LLVM::LLVMArrayType::get(rewriter.getI8Type(), bytes);
  if (auto global = module.lookupSymbol<LLVM::GlobalOp>(kExchangeBufferName)) {
    if (llvm::cast<LLVM::LLVMArrayType>(global.getGlobalType()).getNumElements() < uint64_t(bytes))
      rewriter.modifyOpInPlace(global, [&] { global.setGlobalType(type); });
  } else {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    LLVM::GlobalOp::create(rewriter, loc, type, /*isConstant=*/false, LLVM::Linkage::Internal,
                           kExchangeBufferName, Attribute(), /*alignment=*/16, /*addrSpace=*/3);
  }
  return LLVM::AddressOfOp::create(rewriter, loc, LLVM::LLVMPointerType::get(op->getContext(), 3),
                                   kExchangeBufferName);
}

/// Moves elements between threads through one shared-memory buffer of
/// positions [0, 2^`positionBits`): each writer stores its registers (one copy
/// of a replicated tile), a `bar.sync`, each reader loads its registers, a
/// `bar.sync` (the buffer may be written again, by a later op or iteration). With
/// `rowLength` > 1 the buffer pads each row of that many positions by one
/// element. A buffer of more than kExchangeBufferBytes moves in slabs, one
/// barrier pair each: the slab number is made of the position bits that the
/// registers decide on both sides where there are such bits, else of bits
/// that a warp decides (a warp-uniform predicate), lanes last; where the
/// thread takes part in the slab number a store is predicated (scf.if) and a
/// load selected. Returns each reader's registers.
SmallVector<SmallVector<Value>> exchangeThroughSharedMemory(ConversionPatternRewriter &rewriter,
                                                            Operation *op, Type element,
                                                            int64_t positionBits, int64_t rowLength,
                                                            ArrayRef<ExchangeWriter> writers,
                                                            ArrayRef<ExchangeReader> readers) {
  Location loc = op->getLoc();
  bool isBool = element.isInteger(1);
  Type stored = isBool ? rewriter.getI8Type() : element;
  int64_t numPositions = int64_t(1) << positionBits;
  int64_t slabElems = std::min<int64_t>(
      numPositions, llvm::bit_floor(uint64_t(kExchangeBufferBytes / storedBytes(stored))));
  int64_t localBits = llvm::Log2_64(slabElems);

  // The position bits that pick the slab: the best kinds on both sides first,
  // high bits first among equals (the rows of the buffer stay whole).
  SmallVector<int64_t> writerKinds(positionBits, 0), readerKinds(positionBits, 0);
  for (const ExchangeWriter &writer : writers)
    for (auto [bit, kind] :
         llvm::enumerate(classifyPositionBits(writer.layout, writer.map, positionBits)))
      writerKinds[bit] = std::max(writerKinds[bit], kind);
  for (const ExchangeReader &reader : readers)
    for (auto [bit, kind] :
         llvm::enumerate(classifyPositionBits(reader.layout, reader.map, positionBits)))
      readerKinds[bit] = std::max(readerKinds[bit], kind);
  SmallVector<int64_t> candidates;
  for (int64_t bit = positionBits - 1; bit >= 0; --bit)
    candidates.push_back(bit);
  auto cost = [&](int64_t bit) {
    int64_t w = writerKinds[bit], r = readerKinds[bit];
    return std::make_tuple(std::max(w, r), w + r, r);
  };
  llvm::stable_sort(candidates, [&](int64_t a, int64_t b) { return cost(a) < cost(b); });
  SmallVector<int64_t> slabBits(candidates.begin(),
                                candidates.begin() + (positionBits - localBits));
  llvm::sort(slabBits);
  // Position -> in-slab index (the other bits, in order) and -> slab number.
  IndexMap toLocal, toSlab;
  for (int64_t bit = 0; bit < positionBits; ++bit) {
    const int64_t *slabBit = llvm::find(slabBits, bit);
    bool picks = slabBit != slabBits.end();
    toSlab.targets.push_back(picks ? slabBit - slabBits.begin() : -1);
    toLocal.targets.push_back(
        picks ? -1 : bit - llvm::count_if(slabBits, [&](int64_t s) { return s < bit; }));
  }
  int64_t rowShift = -1;
  if (rowLength > 1) {
    int64_t rowBits = llvm::Log2_64(rowLength);
    rowShift = rowBits - llvm::count_if(slabBits, [&](int64_t s) { return s < rowBits; });
    if (rowShift <= 0 || rowShift >= localBits)
      rowShift = -1;
  }
  auto padded = [&](int64_t local) { return rowShift < 0 ? local : local + (local >> rowShift); };
  Value buffer = getExchangeBuffer(rewriter, op, (padded(slabElems - 1) + 1) * storedBytes(stored));

  // A side's positions: per thread, the padded in-slab index and the slab
  // number of its thread bits; per register, constants.
  struct Side {
    Value baseLocal, baseSlab, owner;
    int64_t threadSlabMask = 0;
    SmallVector<int64_t> offsetSlab, offsetLocal;
  };
  auto prepare = [&](const tile::BlockedLayout &layout, const IndexMap &map, bool isWriter) {
    Side side;
    ElementIndices indices = getElementIndices(rewriter, loc, layout);
    int64_t lo = llvm::Log2_64(layout.vec);
    int64_t hi = llvm::Log2_64(std::min(layout.numel, layout.threads * layout.vec));
    IndexMap local = map.compose(toLocal), slab = map.compose(toSlab);
    int64_t threadLocalBits = 0;
    for (int64_t i = lo; i < hi; ++i) {
      if (local.targets[i] >= 0)
        threadLocalBits |= int64_t(1) << local.targets[i];
      if (slab.targets[i] >= 0)
        side.threadSlabMask |= int64_t(1) << slab.targets[i];
    }
    Value base = local.applyToBits(rewriter, loc, indices.base, lo, hi);
    if (rowShift >= 0 && (threadLocalBits >> rowShift) != 0)
      base = LLVM::AddOp::create(
          rewriter, loc, base,
          LLVM::LShrOp::create(rewriter, loc, base, createI32Constant(rewriter, loc, rowShift)));
    side.baseLocal = base;
    if (side.threadSlabMask)
      side.baseSlab = slab.applyToBits(rewriter, loc, indices.base, lo, hi);
    if (isWriter && layout.isReplicated())
      side.owner = createIsOwner(rewriter, loc, layout);
    for (int64_t offset : indices.offsets) {
      side.offsetSlab.push_back(slab.apply(offset));
      side.offsetLocal.push_back(padded(local.apply(offset)));
    }
    return side;
  };
  SmallVector<Side> writerSides, readerSides;
  for (const ExchangeWriter &writer : writers)
    writerSides.push_back(prepare(writer.layout, writer.map, /*isWriter=*/true));
  for (const ExchangeReader &reader : readers)
    readerSides.push_back(prepare(reader.layout, reader.map, /*isWriter=*/false));

  auto elementPtr = [&](OpBuilder &b, const Side &side, int64_t r) {
    Value index =
        LLVM::AddOp::create(b, loc, side.baseLocal, createI32Constant(b, loc, side.offsetLocal[r]));
    return LLVM::GEPOp::create(b, loc, buffer.getType(), stored, buffer,
                               ArrayRef<LLVM::GEPArg>{index});
  };
  // inSlab: whether register r of `side` is in slab `slab` for some thread;
  // slabMatch: for which threads, where that depends on the thread (else null).
  auto inSlab = [&](const Side &side, int64_t r, int64_t slab) {
    return (side.offsetSlab[r] & ~side.threadSlabMask) == (slab & ~side.threadSlabMask);
  };
  auto slabMatch = [&](const Side &side, int64_t slab) -> Value {
    if (!side.threadSlabMask)
      return Value();
    return LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, side.baseSlab,
                                createI32Constant(rewriter, loc, slab & side.threadSlabMask));
  };

  SmallVector<SmallVector<Value>> results;
  for (const ExchangeReader &reader : readers)
    results.emplace_back(reader.layout.regsPerThread());
  for (int64_t slab = 0, numSlabs = numPositions / slabElems; slab < numSlabs; ++slab) {
    for (auto [writer, side] : llvm::zip(writers, writerSides)) {
      Value predicate = side.owner;
      if (Value match = slabMatch(side, slab))
        predicate =
            predicate ? LLVM::AndOp::create(rewriter, loc, predicate, match).getResult() : match;
      auto stores = [&](OpBuilder &b) {
        for (auto [r, value] : llvm::enumerate(writer.values)) {
          if (!inSlab(side, r, slab))
            continue;
          Value toStore = isBool ? LLVM::ZExtOp::create(b, loc, stored, value) : value;
          LLVM::StoreOp::create(b, loc, toStore, elementPtr(b, side, r));
        }
      };
      if (!predicate) {
        stores(rewriter);
        continue;
      }
      scf::IfOp::create(rewriter, loc, predicate, [&](OpBuilder &b, Location l) {
        stores(b);
        scf::YieldOp::create(b, l);
      });
    }
    NVVM::BarrierOp::create(rewriter, loc);
    for (auto [side, values] : llvm::zip(readerSides, results)) {
      Value match = slabMatch(side, slab);
      for (auto [r, value] : llvm::enumerate(values)) {
        if (!inSlab(side, r, slab))
          continue;
        Value loaded = LLVM::LoadOp::create(rewriter, loc, stored, elementPtr(rewriter, side, r));
        if (isBool)
          loaded = LLVM::TruncOp::create(rewriter, loc, element, loaded);
        if (match)
          loaded = LLVM::SelectOp::create(
              rewriter, loc, match, loaded,
              value ? value : LLVM::PoisonOp::create(rewriter, loc, element).getResult());
        value = loaded;
      }
    }
    NVVM::BarrierOp::create(rewriter, loc);
  }
  return results;
}
} // namespace

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {
struct SplatLowering : TileOpConversion<tile::SplatOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::SplatOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    int64_t regs = tileConverter.getRegsPerThread(op.getType());
    SmallVector<Value> values(regs, adaptor.getSrc());
    rewriter.replaceOp(
        op, packTile(rewriter, op.getLoc(), getTypeConverter()->convertType(op.getType()), values));
    return success();
  }
};

/// Inserting a unit dimension keeps the row-major order, hence the layout.
struct ExpandDimsLowering : TileOpConversion<tile::ExpandDimsOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::ExpandDimsOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getSrc());
    return success();
  }
};

/// Where every thread already holds the source elements it repeats (the
/// broadcast dimensions lie in its registers, or the source is replicated, as
/// the [M, 1] `#tile.mma` row vector is for [M, N] in that encoding),
/// registers are copied. Otherwise the source goes to a shared-memory buffer;
/// after a barrier each thread reads, for each element it holds, the source
/// element it repeats.
struct BroadcastLowering : TileOpConversion<tile::BroadcastOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::BroadcastOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = llvm::cast<RankedTensorType>(op.getSrc().getType());
    auto dstType = llvm::cast<RankedTensorType>(op.getType());
    Type element = getTypeConverter()->convertType(dstType.getElementType());
    bool isBool = element.isInteger(1);
    Type stored = isBool ? rewriter.getI8Type() : element;

    ArrayRef<int64_t> dstShape = dstType.getShape(), srcShape = srcType.getShape();
    // The source index of a destination index (row-major, power-of-two dims).
    auto sourceIndex = [&](int64_t linear) {
      int64_t index = 0, dstShift = 0, srcStride = 1;
      for (int64_t d = dstType.getRank() - 1; d >= 0; --d) {
        if (srcShape[d] != 1)
          index += ((linear >> dstShift) & (dstShape[d] - 1)) * srcStride;
        dstShift += llvm::Log2_64(dstShape[d]);
        srcStride *= srcShape[d];
      }
      return index;
    };
    if (Value copied = copyRegisters(rewriter, loc, tileConverter, adaptor.getSrc(), srcType,
                                     dstType, sourceIndex)) {
      rewriter.replaceOp(op, copied);
      return success();
    }

    // A shared-memory buffer of the source for this broadcast.
    Value buffer = createSharedBuffer(rewriter, op, "__kiln_broadcast_smem", stored,
                                      srcType.getNumElements(), /*alignment=*/16,
                                      /*scratch=*/true);

    auto elementPtr = [&](Value index) {
      return LLVM::GEPOp::create(rewriter, loc, buffer.getType(), stored, buffer,
                                 ArrayRef<LLVM::GEPArg>{index});
    };

    // Write the source (copies of a replicated element write the same value).
    ElementIndices srcIndices = getElementIndices(rewriter, loc, tileConverter, srcType);
    SmallVector<Value> srcValues = unpackTile(rewriter, loc, adaptor.getSrc());
    for (auto [value, offset] : llvm::zip(srcValues, srcIndices.offsets)) {
      Value index = LLVM::AddOp::create(rewriter, loc, srcIndices.base,
                                        createI32Constant(rewriter, loc, offset));
      Value toStore = isBool ? LLVM::ZExtOp::create(rewriter, loc, stored, value) : value;
      LLVM::StoreOp::create(rewriter, loc, toStore, elementPtr(index));
    }
    NVVM::BarrierOp::create(rewriter, loc);

    // Read, for each destination element, its source element.
    ElementIndices dstIndices = getElementIndices(rewriter, loc, tileConverter, dstType);
    SmallVector<Value> results;
    for (int64_t offset : dstIndices.offsets) {
      Value linear = LLVM::AddOp::create(rewriter, loc, dstIndices.base,
                                         createI32Constant(rewriter, loc, offset));
      Value srcLinear = createI32Constant(rewriter, loc, 0);
      int64_t dstShift = 0, srcStride = 1;
      for (int64_t d = dstType.getRank() - 1; d >= 0; --d) {
        if (srcShape[d] != 1) {
          Value index = LLVM::LShrOp::create(rewriter, loc, linear,
                                             createI32Constant(rewriter, loc, dstShift));
          index = LLVM::AndOp::create(rewriter, loc, index,
                                      createI32Constant(rewriter, loc, dstShape[d] - 1));
          index = LLVM::MulOp::create(rewriter, loc, index,
                                      createI32Constant(rewriter, loc, srcStride));
          srcLinear = LLVM::AddOp::create(rewriter, loc, srcLinear, index);
        }
        dstShift += llvm::Log2_64(dstShape[d]);
        srcStride *= srcShape[d];
      }
      Value value = LLVM::LoadOp::create(rewriter, loc, stored, elementPtr(srcLinear));
      results.push_back(isBool ? LLVM::TruncOp::create(rewriter, loc, element, value) : value);
    }
    // The buffer may be written again (by a later program iteration).
    NVVM::BarrierOp::create(rewriter, loc);
    rewriter.replaceOp(op,
                       packTile(rewriter, loc, getTypeConverter()->convertType(dstType), results));
    return success();
  }
};

/// Each thread stores its elements at their row-major index in the result
/// (the source index with its bit fields permuted) and loads the result's
/// elements at their own index. A permutation that keeps the row-major order
/// (it moves only unit dimensions) moves nothing.
struct TransLowering : TileOpConversion<tile::TransOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::TransOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto srcType = llvm::cast<RankedTensorType>(op.getSrc().getType());
    auto dstType = llvm::cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> order = op.getOrder();
    int64_t bits = llvm::Log2_64(srcType.getNumElements());
    IndexMap map;
    map.targets.resize(bits);
    for (auto [k, d] : llvm::enumerate(order)) {
      auto [srcLo, srcHi] = axisElementBits(srcType, d);
      int64_t dstLo = axisElementBits(dstType, k).first;
      for (int64_t i = srcLo; i < srcHi; ++i)
        map.targets[i] = dstLo + (i - srcLo);
    }
    if (map.isIdentity()) {
      rewriter.replaceOp(op, adaptor.getSrc());
      return success();
    }
    // Where the last dimension moves, consecutive source elements of a thread
    // land a result row apart: pad the rows (of 8 or more elements).
    int64_t rank = dstType.getRank(), rowLength = dstType.getDimSize(rank - 1);
    if (order.back() == rank - 1 || rowLength < 8)
      rowLength = 0;
    Type element = getTypeConverter()->convertType(dstType.getElementType());
    ExchangeWriter writer{tileConverter.getLayout(srcType), map,
                          unpackTile(rewriter, op.getLoc(), adaptor.getSrc())};
    ExchangeReader reader{tileConverter.getLayout(dstType), IndexMap::identity(bits)};
    SmallVector<SmallVector<Value>> results =
        exchangeThroughSharedMemory(rewriter, op, element, bits, rowLength, writer, reader);
    rewriter.replaceOp(op, packTile(rewriter, op.getLoc(), getTypeConverter()->convertType(dstType),
                                    results.front()));
    return success();
  }
};

/// The layout depends on the number of elements only: a thread holds the same
/// row-major indices in any shape.
struct ReshapeLowering : TileOpConversion<tile::ReshapeOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::ReshapeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getSrc());
    return success();
  }
};

/// Operand element i goes to position 2i (lhs) or 2i + 1 (rhs) of the result.
IndexMap interleaveMap(int64_t bits, int64_t which) {
  IndexMap map;
  for (int64_t i = 0; i < bits; ++i)
    map.targets.push_back(i + 1);
  map.constant = which;
  return map;
}

/// Both operands store at their interleaved index; the result loads its own.
struct JoinLowering : TileOpConversion<tile::JoinOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::JoinOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = llvm::cast<RankedTensorType>(op.getLhs().getType());
    auto dstType = llvm::cast<RankedTensorType>(op.getType());
    int64_t bits = llvm::Log2_64(srcType.getNumElements());
    tile::BlockedLayout srcLayout = tileConverter.getLayout(srcType);
    SmallVector<ExchangeWriter> writers{
        {srcLayout, interleaveMap(bits, 0), unpackTile(rewriter, loc, adaptor.getLhs())},
        {srcLayout, interleaveMap(bits, 1), unpackTile(rewriter, loc, adaptor.getRhs())}};
    ExchangeReader reader{tileConverter.getLayout(dstType), IndexMap::identity(bits + 1)};
    Type element = getTypeConverter()->convertType(dstType.getElementType());
    SmallVector<SmallVector<Value>> results = exchangeThroughSharedMemory(
        rewriter, op, element, bits + 1, /*rowLength=*/0, writers, reader);
    rewriter.replaceOp(
        op, packTile(rewriter, loc, getTypeConverter()->convertType(dstType), results.front()));
    return success();
  }
};

/// The source stores at its own index; each result loads its interleaved one.
struct SplitLowering : TileOpConversion<tile::SplitOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::SplitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = llvm::cast<RankedTensorType>(op.getSrc().getType());
    auto dstType = llvm::cast<RankedTensorType>(op.getLhs().getType());
    int64_t bits = llvm::Log2_64(dstType.getNumElements());
    ExchangeWriter writer{tileConverter.getLayout(srcType), IndexMap::identity(bits + 1),
                          unpackTile(rewriter, loc, adaptor.getSrc())};
    tile::BlockedLayout dstLayout = tileConverter.getLayout(dstType);
    SmallVector<ExchangeReader> readers{{dstLayout, interleaveMap(bits, 0)},
                                        {dstLayout, interleaveMap(bits, 1)}};
    Type element = getTypeConverter()->convertType(dstType.getElementType());
    SmallVector<SmallVector<Value>> results = exchangeThroughSharedMemory(
        rewriter, op, element, bits + 1, /*rowLength=*/0, writer, readers);
    Type converted = getTypeConverter()->convertType(dstType);
    SmallVector<Value> halves{packTile(rewriter, loc, converted, results[0]),
                              packTile(rewriter, loc, converted, results[1])};
    rewriter.replaceOp(op, halves);
    return success();
  }
};
} // namespace

void kiln::populateTileShapeOpsToNVVMPatterns(TileTypeConverter &converter,
                                              RewritePatternSet &patterns) {
  patterns.add<SplatLowering, ExpandDimsLowering, BroadcastLowering, TransLowering, ReshapeLowering,
               JoinLowering, SplitLowering>(converter);
}
