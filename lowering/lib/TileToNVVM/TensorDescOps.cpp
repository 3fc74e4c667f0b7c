//===- TensorDescOps.cpp - TMA loads and stores through descriptors ---------===//
//
// tile.desc_load / tile.desc_store become one cp.async.bulk.tensor each,
// issued by an elected thread of warp 0, with the box staged in a 128-byte
// aligned shared-memory buffer of the op's own:
//
//   load:  bar.sync (the buffer's earlier readers are done)
//          issuer: mbarrier.arrive.expect_tx [bar], box bytes
//                  cp.async.bulk.tensor.Nd.shared::cta.global...complete_tx [buf], [desc, {c}],
//                  [bar]
//          all:    mbarrier.try_wait.parity [bar], phase; phase ^= 1
//          all:    ld.shared of the elements each thread holds
//   store: bar.sync; all: st.shared; fence.proxy.async.shared::cta; bar.sync
//          issuer: cp.async.bulk.tensor.Nd.global.shared::cta [desc, {c}], [buf]
//                  cp.async.bulk.commit_group; cp.async.bulk.wait_group.read 0
//
// Each load's mbarrier is initialized once at kernel entry (thread 0,
// fence.mbarrier_init, bar.sync); its phase parity lives in a per-thread
// alloca that LLVM promotes to a register (a loop-carried value in loops).
// TMA coordinates are innermost first: the op's indices, reversed.
//
// A wide box (128-byte swizzle, inner row of W > 128 bytes; the host encodes
// the box of one 128-byte chunk) is W / 128 copies each way, chunk c at inner
// coordinate + c * (128 / element bytes) and at buffer + c * rows * 128; a
// load's expect_tx still counts the whole box. The registers address the
// chunked layout (BoxAccess).
//
// tile.bulk_load (no descriptor) follows the load protocol with 1-D copies:
// the issuer arms the barrier with the tile's bytes and issues
// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes per
// 64 KiB chunk, all completing on the one barrier. With a runtime count the
// bytes are min(count, N) * sizeof(T), each chunk is issued only below them
// and the reads select zero for the accesses at or past the count. A
// tile.ring_issue with a pointer source issues the same copies into a slot.
// A `producer` ring_issue (the issuing warp of a tile.warp_specialize, after
// its wait for the slot's empty barrier) has no bar.sync and elects its lane
// in its own warp. tile.mbarrier_alloc {per_warp} expects one arrival per
// warp of the layout, tile.mbarrier_arrive being a bar.warp.sync and lane 0's
// mbarrier.arrive in each warp. A tile.ring_wait {issuer} (the consumers of a
// warp-specialized tcgen05 loop) waits in warp 0 only (tid < 32); tile.barrier
// is bar.sync 0 (the consumers' named barrier inside tile.warp_specialize).
//
//===----------------------------------------------------------------------===//

#include "PatternUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <variant>

using namespace mlir;
using namespace kiln;

namespace {
/// TMA's coordinates: innermost dimension first.
SmallVector<Value> tmaCoordinates(ValueRange indices) {
  return SmallVector<Value>(llvm::reverse(indices));
}

/// The 128-byte column chunks of a box in shared memory (one unless the box
/// is wide: see tile::getNumBoxChunks).
struct BoxChunks {
  BoxChunks(RankedTensorType box, unsigned swizzle)
      : count(tile::getNumBoxChunks(box, swizzle)),
        elements(128 / std::max<int64_t>(1, box.getElementTypeBitWidth() / 8)),
        bytes(box.getNumElements() / box.getShape().back() * 128) {}

  /// The TMA copies of the box at `coordinates` (innermost first) to or from
  /// `buffer`: `copy(chunk buffer, chunk coordinates)` once per chunk.
  void forEach(OpBuilder &b, Location loc, Value buffer, ArrayRef<Value> coordinates,
               function_ref<void(Value, ValueRange)> copy) const {
    for (int64_t c = 0; c < count; ++c) {
      if (c == 0) {
        copy(buffer, coordinates);
        continue;
      }
      SmallVector<Value> at(coordinates);
      at.front() = LLVM::AddOp::create(b, loc, at.front(), createI32Constant(b, loc, c * elements));
      Value chunk = LLVM::GEPOp::create(b, loc, buffer.getType(), b.getI8Type(), buffer,
                                        ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(c * bytes)});
      copy(chunk, at);
    }
  }

  int64_t count;    ///< chunks
  int64_t elements; ///< elements of a chunk's row
  int64_t bytes;    ///< bytes of a chunk: the box's rows of 128 bytes
};

/// After a CTA barrier (the buffer's readers are done), one elected thread
/// (and only if `predicate`, when given) arms `barrier` with the box's bytes
/// and copies the box of `descType` at `indices` of `desc` into `buffer` (a
/// wide box chunk by chunk). A `producer` (the one warp of a
/// tile.warp_specialize that issues; it waited for the slot's empty barrier)
/// needs no CTA barrier and elects its own lane.
void issueLoad(OpBuilder &b, Location loc, Value desc, tile::TensorDescType descType,
               ValueRange indices, Value buffer, Value barrier, Value predicate,
               bool producer = false) {
  int64_t bytes = descType.getBoxBytes();
  BoxChunks chunks(descType.getBlockType(), descType.getSwizzle());
  Value issuer;
  if (producer) {
    issuer = NVVM::ElectSyncOp::create(b, loc, b.getI1Type(), Value());
  } else {
    NVVM::BarrierOp::create(b, loc);
    issuer = createIssuer(b, loc);
  }
  if (predicate)
    issuer = LLVM::AndOp::create(b, loc, issuer, predicate);
  SmallVector<Value> coordinates = tmaCoordinates(indices);
  scf::IfOp::create(b, loc, issuer, [&](OpBuilder &ib, Location l) {
    NVVM::MBarrierArriveExpectTxOp::create(ib, l, Type(), barrier, createI32Constant(ib, l, bytes),
                                           NVVM::MemScopeKind::CTA, /*relaxed=*/false, Value());
    chunks.forEach(ib, l, buffer, coordinates, [&](Value to, ValueRange at) {
      NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
          ib, l, to, desc, at, barrier, ValueRange(), Value(), Value(), NVVM::TMALoadMode::TILE,
          /*isCTAOnly=*/true, NVVM::CTAGroupKindAttr(), Value());
    });
    scf::YieldOp::create(ib, l);
  });
}

/// Moves the registers of a tile (any layout) to or from the row-major box at
/// `buffer`, up to 16 bytes per ld/st.shared, in the box's swizzled layout
/// (boxElementAddress; an access of at most 16 bytes stays in one chunk).
struct BoxAccess {
  BoxAccess(OpBuilder &b, Location loc, Value buffer, Type element,
            const TileTypeConverter &converter, RankedTensorType type, unsigned swizzle)
      : buffer(buffer), element(element), swizzle(swizzle),
        chunks(tile::getNumBoxChunks(type, swizzle)),
        rows(type.getNumElements() / type.getShape().back()),
        indices(getElementIndices(b, loc, converter, type)),
        access(b.getContext(), element, getAccessWidth(converter, type)) {}

  Value address(OpBuilder &b, Location loc, size_t reg) const {
    Value index =
        LLVM::AddOp::create(b, loc, indices.base, createI32Constant(b, loc, indices.offsets[reg]));
    return boxElementAddress(b, loc, buffer, element, index, chunks, rows, swizzle);
  }

  /// The thread's elements. With `count` (i32, a 1-D box whose count spans
  /// whole 16-byte units, so an access of up to 16 bytes is either all below
  /// it or all at or past it), the accesses at or past `count` (unsigned)
  /// read as zero: one compare and select per access.
  SmallVector<Value> read(OpBuilder &b, Location loc, Value count = Value()) const {
    SmallVector<Value> values;
    Value zero;
    if (count)
      zero = LLVM::ZeroOp::create(b, loc, access.accessType);
    for (size_t r = 0; r < indices.offsets.size(); r += access.vec) {
      Value loaded =
          LLVM::LoadOp::create(b, loc, access.accessType, address(b, loc, r), access.alignment);
      if (count) {
        Value index = LLVM::AddOp::create(b, loc, indices.base,
                                          createI32Constant(b, loc, indices.offsets[r]));
        Value inside = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, index, count);
        loaded = LLVM::SelectOp::create(b, loc, inside, loaded, zero);
      }
      llvm::append_range(values, access.split(b, loc, loaded));
    }
    return values;
  }

  void write(OpBuilder &b, Location loc, ArrayRef<Value> values) const {
    for (size_t r = 0; r < indices.offsets.size(); r += access.vec)
      LLVM::StoreOp::create(b, loc, access.join(b, loc, values.slice(r, access.vec)),
                            address(b, loc, r), access.alignment);
  }

  Value buffer;
  Type element;
  unsigned swizzle;
  int64_t chunks; ///< 128-byte column chunks (1 unless a wide box)
  int64_t rows;   ///< the box's rows (the product of its outer dimensions)
  ElementIndices indices;
  VectorAccess access;
};

/// A box's buffer: its TMA copy is waited for by the op that issues it (a
/// load's mbarrier wait before its reads, a store's wait_group.read after its
/// copy), so it is `tile.drained`.
Value createBoxBuffer(OpBuilder &b, Operation *op, tile::TensorDescType desc, Type element) {
  // A swizzled box repeats its pattern every 1024 bytes of shared address.
  Value buffer =
      createSharedBuffer(b, op, "__kiln_tma_box", element, desc.getBlockType().getNumElements(),
                         /*alignment=*/desc.getSwizzle() ? 1024 : 128);
  markDrained(op, buffer);
  return buffer;
}

struct DescLoadLowering : TileOpConversion<tile::DescLoadOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::DescLoadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto desc = op.getDesc().getType();
    Type element = getTypeConverter()->convertType(op.getType().getElementType());
    PhasedBarrier barrier = createPhasedBarrier(rewriter, op, "__kiln_tma_mbarrier");
    Value buffer = createBoxBuffer(rewriter, op, desc, element);

    issueLoad(rewriter, loc, adaptor.getDesc(), desc, adaptor.getIndices(), buffer,
              barrier.address, Value());
    waitAndFlipPhase(rewriter, loc, barrier, tileConverter);

    BoxAccess box(rewriter, loc, buffer, element, tileConverter, op.getType(), desc.getSwizzle());
    rewriter.replaceOp(op, packTile(rewriter, loc, getTypeConverter()->convertType(op.getType()),
                                    box.read(rewriter, loc)));
    return success();
  }
};

/// Bytes of one cp.async.bulk of a tile.bulk_load: a larger tile is several
/// copies, all counted on its one mbarrier.
constexpr int64_t kBulkCopyChunkBytes = int64_t(1) << 16;

/// After a CTA barrier (the buffer's readers are done), one elected thread
/// (and only if `predicate`, when given) arms `barrier` with the bytes it
/// copies and issues the cp.async.bulk copies of the contiguous range at
/// `src` (`!llvm.ptr<1>`) into `buffer`: the whole `tile` or, with `count`
/// (i32), its first min(count, N) elements (count taken as unsigned; the
/// chunks at or past the byte count are skipped, the last one is partial).
void issueBulkLoad(OpBuilder &b, Location loc, Value src, Value count, RankedTensorType tile,
                   Value buffer, Value barrier, Value predicate) {
  int64_t elementBytes = tile.getElementTypeBitWidth() / 8;
  int64_t tileBytes = tile.getNumElements() * elementBytes;
  NVVM::BarrierOp::create(b, loc);
  Value issuer = createIssuer(b, loc);
  if (predicate)
    issuer = LLVM::AndOp::create(b, loc, issuer, predicate);
  scf::IfOp::create(b, loc, issuer, [&](OpBuilder &ib, Location l) {
    Value bytes = createI32Constant(ib, l, tileBytes);
    if (count) {
      Value clamped =
          LLVM::UMinOp::create(ib, l, count, createI32Constant(ib, l, tile.getNumElements()));
      bytes = LLVM::MulOp::create(ib, l, clamped, createI32Constant(ib, l, elementBytes));
    }
    NVVM::MBarrierArriveExpectTxOp::create(ib, l, Type(), barrier, bytes, NVVM::MemScopeKind::CTA,
                                           /*relaxed=*/false, Value());
    // A CTA's own shared::cta address is a valid shared::cluster address.
    Value dst = LLVM::AddrSpaceCastOp::create(
        ib, l, LLVM::LLVMPointerType::get(ib.getContext(), /*addressSpace=*/7), buffer);
    for (int64_t offset = 0; offset < tileBytes; offset += kBulkCopyChunkBytes) {
      int64_t chunk = std::min(kBulkCopyChunkBytes, tileBytes - offset);
      Value start = count ? createI32Constant(ib, l, offset) : Value();
      auto copy = [&](OpBuilder &cb, Location cl) {
        auto at = [&](Value base) -> Value {
          if (!offset)
            return base;
          return LLVM::GEPOp::create(cb, cl, base.getType(), cb.getI8Type(), base,
                                     ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
        };
        Value to = at(dst), from = at(src);
        Value size = createI32Constant(cb, cl, chunk);
        if (count) // the part of the chunk below the byte count
          size = LLVM::UMinOp::create(cb, cl, LLVM::SubOp::create(cb, cl, bytes, start), size);
        NVVM::CpAsyncBulkGlobalToSharedClusterOp::create(cb, cl, to, from, barrier, size,
                                                         /*multicastMask=*/Value(),
                                                         /*l2CacheHint=*/Value());
      };
      if (!count) {
        copy(ib, l);
        continue;
      }
      // A chunk at or past the byte count is not issued (nor a copy of 0 bytes).
      Value any = LLVM::ICmpOp::create(ib, l, LLVM::ICmpPredicate::ugt, bytes, start);
      scf::IfOp::create(ib, l, any, [&](OpBuilder &cb, Location cl) {
        copy(cb, cl);
        scf::YieldOp::create(cb, cl);
      });
    }
    scf::YieldOp::create(ib, l);
  });
}

struct BulkLoadLowering : TileOpConversion<tile::BulkLoadOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::BulkLoadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = getTypeConverter()->convertType(op.getType().getElementType());
    PhasedBarrier barrier = createPhasedBarrier(rewriter, op, "__kiln_tma_mbarrier");
    Value buffer = createSharedBuffer(rewriter, op, "__kiln_bulk_buffer", element,
                                      op.getType().getNumElements(), /*alignment=*/128);
    issueBulkLoad(rewriter, loc, adaptor.getPtr(), adaptor.getCount(), op.getType(), buffer,
                  barrier.address, Value());
    waitAndFlipPhase(rewriter, loc, barrier, tileConverter);

    BoxAccess box(rewriter, loc, buffer, element, tileConverter, op.getType(), /*swizzle=*/0);
    rewriter.replaceOp(op, packTile(rewriter, loc, getTypeConverter()->convertType(op.getType()),
                                    box.read(rewriter, loc, adaptor.getCount())));
    return success();
  }
};

struct DescStoreLowering : TileOpConversion<tile::DescStoreOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::DescStoreOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto desc = op.getDesc().getType();
    auto valueType = op.getValue().getType();
    Type element = getTypeConverter()->convertType(valueType.getElementType());
    Value buffer = createBoxBuffer(rewriter, op, desc, element);

    // The issuer of the previous store from this buffer waited for its reads.
    NVVM::BarrierOp::create(rewriter, loc);
    BoxAccess box(rewriter, loc, buffer, element, tileConverter, valueType, desc.getSwizzle());
    box.write(rewriter, loc, unpackTile(rewriter, loc, adaptor.getValue()));
    // The generic-proxy writes become visible to the async proxy.
    NVVM::FenceProxyOp::create(
        rewriter, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(getContext(), NVVM::SharedSpace::shared_cta));
    NVVM::BarrierOp::create(rewriter, loc);
    Value issuer = createIssuer(rewriter, loc);
    SmallVector<Value> coordinates = tmaCoordinates(adaptor.getIndices());
    BoxChunks chunks(desc.getBlockType(), desc.getSwizzle());
    scf::IfOp::create(rewriter, loc, issuer, [&](OpBuilder &b, Location l) {
      chunks.forEach(b, l, buffer, coordinates, [&](Value from, ValueRange at) {
        NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(b, l, adaptor.getDesc(), from, at,
                                                           Value(), NVVM::TMAStoreMode::TILE,
                                                           Value());
      });
      NVVM::CpAsyncBulkCommitGroupOp::create(b, l);
      NVVM::CpAsyncBulkWaitGroupOp::create(b, l, /*group=*/0, b.getUnitAttr());
      scf::YieldOp::create(b, l);
    });
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

namespace {
/// The mbarrier of slot `slot` (an int or an i32 value) of `ring` at `base`
/// (RingType::getBarriersOffset).
Value slotBarrier(OpBuilder &b, Location loc, tile::RingType ring, Value base,
                  std::variant<int64_t, Value> slot) {
  Value index = std::holds_alternative<Value>(slot)
                    ? std::get<Value>(slot)
                    : createI32Constant(b, loc, std::get<int64_t>(slot));
  Value barriers = LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base,
                                       ArrayRef<LLVM::GEPArg>{int32_t(ring.getBarriersOffset())});
  return mbarrierAddress(b, loc, barriers, index);
}

/// Thread 0 initializes `count` mbarriers from `base` (8 bytes each) with
/// `arrivals` arrivals each; fence.mbarrier_init; bar.sync.
void initBarriers(OpBuilder &b, Location loc, Value base, unsigned count, int64_t arrivals = 1) {
  Value isThread0 = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, createThreadId(b, loc),
                                         createI32Constant(b, loc, 0));
  Value expected = createI32Constant(b, loc, arrivals);
  for (unsigned s = 0; s < count; ++s)
    NVVM::MBarrierInitOp::create(
        b, loc, mbarrierAddress(b, loc, base, createI32Constant(b, loc, s)), expected, isThread0);
  NVVM::FenceMbarrierInitOp::create(b, loc);
  NVVM::BarrierOp::create(b, loc);
}

/// Whether gathers fill `ring` (a tensor of pointers: every thread copies).
bool isGatherRing(Value ring) {
  return llvm::any_of(ring.getUsers(), [](Operation *user) {
    auto issue = llvm::dyn_cast<tile::RingIssueOp>(user);
    return issue && issue.isGather();
  });
}

/// A ring's shared memory: the slots, then `stages` mbarriers (8 bytes each,
/// RingType::getTotalBytes); thread 0 initializes the barriers, for one
/// arrival each (the issuing thread's), or one a thread for a gather ring.
struct RingAllocLowering : TileOpConversion<tile::RingAllocOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::RingAllocOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    tile::RingType ring = op.getType();
    Value base = createSharedBuffer(rewriter, op, "__kiln_tma_ring", rewriter.getI8Type(),
                                    ring.getTotalBytes(), /*alignment=*/1024);
    Value barriers = LLVM::GEPOp::create(rewriter, loc, base.getType(), rewriter.getI8Type(), base,
                                         ArrayRef<LLVM::GEPArg>{int32_t(ring.getBarriersOffset())});
    initBarriers(rewriter, loc, barriers, ring.getStages(),
                 isGatherRing(op.getResult()) ? tileConverter.getThreadsPerBlock() : 1);
    rewriter.replaceOp(op, base);
    return success();
  }
};

/// bar.sync; thread 0 invalidates the slots' mbarriers; bar.sync.
struct RingReleaseLowering : TileOpConversion<tile::RingReleaseOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::RingReleaseOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NVVM::BarrierOp::create(rewriter, loc);
    Value isThread0 =
        LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, createThreadId(rewriter, loc),
                             createI32Constant(rewriter, loc, 0));
    unsigned stages = op.getRing().getType().getStages();
    scf::IfOp::create(rewriter, loc, isThread0, [&](OpBuilder &b, Location l) {
      for (unsigned s = 0; s < stages; ++s)
        NVVM::MBarrierInvalOp::create(
            b, l, slotBarrier(b, l, op.getRing().getType(), adaptor.getRing(), s));
      scf::YieldOp::create(b, l);
    });
    NVVM::BarrierOp::create(rewriter, loc);
    markDrained(op, adaptor.getRing());
    rewriter.eraseOp(op);
    return success();
  }
};

/// After a CTA barrier (the slot's readers are done; none where `covered`: an
/// earlier refill's barrier did that), every thread copies its
/// elements of the tile of pointers `ptrs` (under `masks`, when given, and
/// `predicate`; the rest zero-filled) into `slot` (row-major, or a box with
/// the 128-byte `swizzle`: boxElementAddress), `vec` of them
/// an access: `cp.async` (4, 8 or 16 bytes; `.cg` for 16), then
/// `cp.async.mbarrier.arrive.noinc` on `barrier` (its arrival once the
/// thread's copies land). Narrower accesses load and store through
/// registers, then arrive. A replicated tile's duplicates copy nothing.
void issueGather(OpBuilder &b, Location loc, const TileTypeConverter &converter,
                 RankedTensorType block, ArrayRef<Value> ptrs, ArrayRef<Value> masks, int64_t vec,
                 Value slot, Value barrier, Value predicate, unsigned swizzle, bool covered) {
  Type element = converter.convertType(block.getElementType());
  VectorAccess access(b.getContext(), element, vec);
  int64_t bytes = access.vec * (block.getElementTypeBitWidth() / 8);
  bool async = bytes == 4 || bytes == 8 || bytes == 16;
  ElementIndices indices = getElementIndices(b, loc, converter, block);
  tile::BlockedLayout layout = converter.getLayout(block);
  int64_t chunks = tile::getNumBoxChunks(block, swizzle),
          rows = block.getNumElements() / block.getShape().back();
  if (!covered)
    NVVM::BarrierOp::create(b, loc);
  auto copies = [&](OpBuilder &cb, Location cl) {
    for (size_t r = 0; r < ptrs.size(); r += access.vec) {
      Value copy = masks.empty() ? predicate : LLVM::AndOp::create(cb, cl, predicate, masks[r]);
      Value index =
          LLVM::AddOp::create(cb, cl, indices.base, createI32Constant(cb, cl, indices.offsets[r]));
      Value to = boxElementAddress(cb, cl, slot, element, index, chunks, rows, swizzle);
      if (async) {
        // Bytes past the source size (all of them where the copy is off) are zeros.
        Value size = LLVM::SelectOp::create(cb, cl, copy, createI32Constant(cb, cl, bytes),
                                            createI32Constant(cb, cl, 0));
        NVVM::CpAsyncOp::create(
            cb, cl, to, ptrs[r], static_cast<uint32_t>(bytes),
            bytes == 16 ? NVVM::LoadCacheModifierKind::CG : NVVM::LoadCacheModifierKind::CA, size);
        continue;
      }
      auto ifOp = scf::IfOp::create(
          cb, cl, copy,
          [&](OpBuilder &tb, Location l) {
            scf::YieldOp::create(
                tb, l,
                LLVM::LoadOp::create(tb, l, access.accessType, ptrs[r], access.alignment)
                    .getResult());
          },
          [&](OpBuilder &eb, Location l) {
            scf::YieldOp::create(eb, l, LLVM::ZeroOp::create(eb, l, access.accessType).getResult());
          });
      LLVM::StoreOp::create(cb, cl, ifOp.getResult(0), to, access.alignment);
    }
  };
  // A replicated tile's duplicates write nothing (a zero-fill of theirs would race with
  // the owner's copy of the same bytes); every thread arrives.
  if (layout.isReplicated()) {
    scf::IfOp::create(b, loc, createIsOwner(b, loc, layout), [&](OpBuilder &ib, Location l) {
      copies(ib, l);
      scf::YieldOp::create(ib, l);
    });
  } else {
    copies(b, loc);
  }
  if (async)
    NVVM::CpAsyncMBarrierArriveOp::create(b, loc, barrier, /*noinc=*/true);
  else
    NVVM::MBarrierArriveOp::create(b, loc, Type(), barrier, Value());
}

struct RingIssueLowering : TileOpConversion<tile::RingIssueOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::RingIssueOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    tile::RingType ring = op.getRing().getType();
    Value slot = ringSlotAddress(rewriter, loc, ring, adaptor.getRing(), adaptor.getSlot());
    Value barrier =
        slotBarrier(rewriter, loc, op.getRing().getType(), adaptor.getRing(), adaptor.getSlot());
    if (op.isGather()) {
      SmallVector<Value> ptrs = unpackTile(rewriter, loc, adaptor.getSrc());
      SmallVector<Value> masks;
      if (adaptor.getMask())
        masks = unpackTile(rewriter, loc, adaptor.getMask());
      int64_t vec = getRequestedVec(op);
      if (ptrs.size() % vec != 0)
        return rewriter.notifyMatchFailure(op, "vector width does not divide the registers");
      issueGather(rewriter, loc, tileConverter, ring.getBlockType(), ptrs, masks, vec, slot,
                  barrier, adaptor.getPred(), tile::getRingSwizzle(op.getRing()), op.getCovered());
      rewriter.eraseOp(op);
      return success();
    }
    if (op.isBulk())
      issueBulkLoad(rewriter, loc, adaptor.getSrc(), adaptor.getCount(), ring.getBlockType(), slot,
                    barrier, adaptor.getPred());
    else
      issueLoad(rewriter, loc, adaptor.getSrc(), op.getDescType(), adaptor.getIndices(), slot,
                barrier, adaptor.getPred(), op.getProducer());
    rewriter.eraseOp(op);
    return success();
  }
};

struct RingWaitLoadLowering : TileOpConversion<tile::RingWaitLoadOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::RingWaitLoadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    tile::RingType ring = op.getRing().getType();
    if (!op.getAgain()) // `again`: the slot's fill was waited for
      waitParity(
          rewriter, loc,
          slotBarrier(rewriter, loc, op.getRing().getType(), adaptor.getRing(), adaptor.getSlot()),
          adaptor.getPhase(), tileConverter);
    Type element = getTypeConverter()->convertType(op.getType().getElementType());
    BoxAccess box(rewriter, loc,
                  ringSlotAddress(rewriter, loc, ring, adaptor.getRing(), adaptor.getSlot()),
                  element, tileConverter, op.getType(), tile::getRingSwizzle(op.getRing()));
    rewriter.replaceOp(op, packTile(rewriter, loc, getTypeConverter()->convertType(op.getType()),
                                    box.read(rewriter, loc, adaptor.getCount())));
    return success();
  }
};
} // namespace

namespace {
struct RingWaitLowering : TileOpConversion<tile::RingWaitOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::RingWaitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value barrier =
        slotBarrier(rewriter, loc, op.getRing().getType(), adaptor.getRing(), adaptor.getSlot());
    if (!op.getIssuer()) {
      waitParity(rewriter, loc, barrier, adaptor.getPhase(), tileConverter);
      rewriter.eraseOp(op);
      return success();
    }
    // `issuer`: warp 0 alone, the warp of the tcgen05 MMAs' elected lane.
    Value warp0 =
        LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::ult, createThreadId(rewriter, loc),
                             createI32Constant(rewriter, loc, 32));
    scf::IfOp::create(rewriter, loc, warp0, [&](OpBuilder &b, Location l) {
      waitParity(b, l, barrier, adaptor.getPhase(), tileConverter);
      scf::YieldOp::create(b, l);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// bar.sync 0 (the consumers' named barrier once replaceConsumerBarriers runs).
struct BarrierLowering : TileOpConversion<tile::BarrierOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::BarrierOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    NVVM::BarrierOp::create(rewriter, op.getLoc());
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

namespace {
/// `count` 8-byte mbarriers in an 8-byte aligned shared array, one arrival each
/// (`per_warp`: one per warp of the kernel's layout).
struct MBarrierAllocLowering : TileOpConversion<tile::MBarrierAllocOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::MBarrierAllocOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    unsigned count = op.getType().getCount();
    Value base = createSharedBuffer(rewriter, op, "__kiln_mbarrier", rewriter.getI64Type(), count,
                                    /*alignment=*/8);
    initBarriers(rewriter, op.getLoc(), base, count,
                 op.getPerWarp() ? tileConverter.getThreadsPerBlock() / 32 : 1);
    rewriter.replaceOp(op, base);
    return success();
  }
};

/// if (pred) { bar.warp.sync; if (lane == 0) mbarrier.arrive.shared::cta.b64 }
/// (release, CTA scope): one arrival per warp, after all its lanes' earlier
/// accesses (the warp barrier orders them before lane 0's release).
struct MBarrierArriveLowering : TileOpConversion<tile::MBarrierArriveOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::MBarrierArriveOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value barrier = mbarrierAddress(rewriter, loc, adaptor.getBarriers(), adaptor.getIndex());
    scf::IfOp::create(rewriter, loc, adaptor.getPred(), [&](OpBuilder &b, Location l) {
      NVVM::SyncWarpOp::create(b, l, createI32Constant(b, l, -1));
      Value lane = NVVM::LaneIdOp::create(b, l, b.getI32Type());
      Value first =
          LLVM::ICmpOp::create(b, l, LLVM::ICmpPredicate::eq, lane, createI32Constant(b, l, 0));
      scf::IfOp::create(b, l, first, [&](OpBuilder &ib, Location il) {
        NVVM::MBarrierArriveOp::create(ib, il, Type(), barrier, Value());
        scf::YieldOp::create(ib, il);
      });
      scf::YieldOp::create(b, l);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct MBarrierWaitLowering : TileOpConversion<tile::MBarrierWaitOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(tile::MBarrierWaitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    waitParity(rewriter, op.getLoc(),
               mbarrierAddress(rewriter, op.getLoc(), adaptor.getBarriers(), adaptor.getIndex()),
               adaptor.getParity(), tileConverter);
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void kiln::populateTileTensorDescOpsToNVVMPatterns(TileTypeConverter &converter,
                                                   RewritePatternSet &patterns) {
  patterns.add<DescLoadLowering, DescStoreLowering, BulkLoadLowering, RingAllocLowering,
               RingReleaseLowering, RingIssueLowering, RingWaitLoadLowering, RingWaitLowering, BarrierLowering,
               MBarrierAllocLowering, MBarrierArriveLowering, MBarrierWaitLowering>(converter);
}
