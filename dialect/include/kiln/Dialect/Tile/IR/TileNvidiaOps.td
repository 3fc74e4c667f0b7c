//===- TileNvidiaOps.td - the tile dialect's NVIDIA protocol ops -*- tablegen -*-===//
//
// The ops the passes create to drive NVIDIA's asynchronous hardware: TMA
// rings and mbarriers (kiln-tile-pipeline-loads), layout conversions and
// warpgroup MMA (kiln-tile-accelerate-dot, sm_90a), warp specialization, and
// Tensor Memory with tcgen05 MMA (sm_100a, sm_103a). A kernel author never
// writes them; the frontend ops are in TileOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_TILE_IR_TILENVIDIAOPS_TD
#define KILN_DIALECT_TILE_IR_TILENVIDIAOPS_TD

include "kiln/Dialect/Tile/IR/TileAttrs.td"
include "kiln/Dialect/Tile/IR/TileDialect.td"
include "kiln/Dialect/Tile/IR/TileTypes.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// TMA rings
//===----------------------------------------------------------------------===//

def Tile_RingAllocOp : Tile_Op<"ring_alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "the shared memory and mbarriers of a TMA ring";
  let description = [{
    ```mlir
    %ring = tile.ring_alloc : !tile.ring<3, tensor<64x128xbf16>>
    ```
    Initializes the ring's barriers (one arrival each: the issuing thread's
    `arrive.expect_tx`); must run in uniform control flow (it ends with a CTA
    barrier).

    With `swizzled` (a ring of gathers, whose rows hold whole 128-byte
    spans) each slot is laid out as a TMA box with the 128-byte swizzle:
    the 128-byte chunks of the rows one after the other (chunk j of every
    row at j * rows * 128 bytes), the 16-byte unit u of row r at
    u ^ (r mod 8). Set by `kiln-tile-accelerate-dot` where a `tile.warp_dot`
    reads the ring's slots in place: the eight rows of each `ldmatrix` then
    fall in distinct banks.

    ```mlir
    %ring = tile.ring_alloc {swizzled} : !tile.ring<2, tensor<32x128xbf16>>
    ```
  }];
  let arguments = (ins UnitAttr:$swizzled);
  let results = (outs Tile_Ring:$ring);
  let assemblyFormat = "attr-dict `:` qualified(type($ring))";
  let hasVerifier = 1;
}

def Tile_RingIssueOp : Tile_Op<"ring_issue", [AttrSizedOperandSegments,
                                              MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "start a TMA, bulk or gather load into a ring slot";
  let description = [{
    ```mlir
    tile.ring_issue %desc[%i, %j] -> %ring[%slot] if %pred
        : !tile.tensordesc<tensor<64x128xbf16>>, !tile.ring<3, tensor<64x128xbf16>>
    tile.ring_issue %ptr count %n -> %ring[%slot] if %pred
        : !tile.ptr<bf16>, !tile.ring<4, tensor<8192xbf16>>
    ```
    After a CTA barrier (every thread is done reading what the slot held),
    one elected thread arms the slot's mbarrier with the bytes it copies and,
    if `pred` holds, issues the copy into the slot. The source is either a
    tensor descriptor with the box coordinates (`cp.async.bulk.tensor` of the
    descriptor's block, the ring's block type) or, for a 1-D ring, a 16-byte
    aligned scalar pointer without coordinates: the contiguous
    `cp.async.bulk` of `tile.bulk_load`, of the whole slot or of its first
    `count` elements (same rules; `tile.ring_wait_load` with the same count
    reads the rest as zero). Runs in uniform control flow.

    ```mlir
    tile.ring_issue %ptrs mask %m : tensor<32x128xi1> -> %ring[%slot] if %pred
        : tensor<32x128x!tile.ptr<bf16>>, !tile.ring<2, tensor<32x128xbf16>>
    ```
    A tensor of pointers (with an optional mask) is a gather (a `tile.load`
    of a pipelined loop): after the CTA barrier every thread copies its own
    elements into the slot (row-major, unswizzled) with `cp.async`, the
    masked-off elements and every element where `pred` is false zero-filled,
    and arrives on the slot's mbarrier once its copies land
    (`cp.async.mbarrier.arrive.noinc`; the ring's barriers expect one arrival
    a thread). Accesses narrower than 4 bytes are plain loads and shared
    stores, then an ordinary arrival.

    With `producer` (the producer warp of a `tile.warp_specialize`, which
    waited for the slot's empty barrier before): no CTA barrier, and the
    lane elected in the executing warp issues; only that one warp may run
    it.

    With `covered` (a gather, set by kiln-tile-pipeline-loads on every
    refill of a loop iteration but its first): no CTA barrier of its own.
    The slot it refills was last read in an earlier iteration, so the
    barrier of the iteration's first refill, which every thread passes
    after those reads, already orders them before this copy.
  }];
  let arguments = (ins AnyTypeOf<[Tile_TensorDesc, Tile_Ptr, Tile_PtrTensor]>:$src,
                       Variadic<I32>:$indices, Optional<I32>:$count,
                       Optional<Tile_BoolTensor>:$mask, Tile_Ring:$ring, I32:$slot, I1:$pred,
                       UnitAttr:$producer, UnitAttr:$covered);
  let assemblyFormat = [{
    $src (`[` $indices^ `]`)? (`count` $count^)? (`mask` $mask^ `:` type($mask))? `->` $ring
    `[` $slot `]` `if` $pred attr-dict `:` qualified(type($src)) `,` qualified(type($ring))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The descriptor's type, or null for a pointer (bulk copy) source.
    ::kiln::tile::TensorDescType getDescType() {
      return ::llvm::dyn_cast<::kiln::tile::TensorDescType>(getSrc().getType());
    }
    /// Whether the source is a scalar pointer (a 1-D cp.async.bulk).
    bool isBulk() { return llvm::isa<::kiln::tile::PtrType>(getSrc().getType()); }
    /// Whether the source is a tensor of pointers (per-thread cp.async).
    bool isGather() { return llvm::isa<::mlir::RankedTensorType>(getSrc().getType()); }
  }];
}

def Tile_RingWaitLoadOp : Tile_Op<"ring_wait_load", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "wait for a ring slot's TMA or bulk load and read it into registers";
  let description = [{
    ```mlir
    %t = tile.ring_wait_load %ring[%slot], %phase
        : !tile.ring<3, tensor<64x128xbf16>> -> tensor<64x128xbf16>
    %r = tile.ring_wait_load %ring[%slot], %phase count %n
        : !tile.ring<4, tensor<8192xbf16>> -> tensor<8192xbf16>
    ```
    Waits until the slot's mbarrier completes the phase of parity `phase`
    (the slot's fill count modulo 2), then reads the box. With `count` (a
    1-D ring filled by bulk copies of `count` elements) the lanes at or past
    `count` (unsigned) read as zero. The result has the block's shape and
    element type in any layout: the slot is read as its user needs it (a
    column vector in the slice of an mma.sync accumulator, `#tile.slice<dim
    = 0, ...>`).

    With `again` it reads the slot without waiting: the fill an earlier
    `tile.ring_wait_load` of the same slot and phase waited for, and that no
    refill has replaced since (a second load of the same addresses in a
    pipelined loop's iteration).
  }];
  let arguments = (ins Tile_Ring:$ring, I32:$slot, I32:$phase, Optional<I32>:$count,
                       UnitAttr:$again);
  let results = (outs RankedTensorOf<[Tile_Float, Tile_Int]>:$result);
  let assemblyFormat = [{
    $ring `[` $slot `]` `,` $phase (`count` $count^)? attr-dict `:` qualified(type($ring))
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_RingWaitOp : Tile_Op<"ring_wait", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "wait for a ring slot's TMA load";
  let description = [{
    ```mlir
    tile.ring_wait %ring[%slot], %phase : !tile.ring<3, tensor<128x64xbf16>>
    ```
    Waits until the slot's mbarrier completes the phase of parity `phase`; the
    slot is then read in place (by `tile.warpgroup_dot`).

    With `issuer` only warp 0 waits, the warp whose elected lane issues the
    `tile.tcgen05_dot` that reads the slot (the consumers of a warp-specialized
    loop on sm_100a/sm_103a, see kiln-tile-accelerate-dot); the other threads
    go on at once. Their lanes meet at the dot's `elect.sync` every iteration,
    which keeps them within one phase of the slot's barrier.

    ```mlir
    tile.ring_wait %ring[%slot], %phase {issuer} : !tile.ring<3, tensor<128x64xbf16>>
    ```
  }];
  let arguments = (ins Tile_Ring:$ring, I32:$slot, I32:$phase, UnitAttr:$issuer);
  let assemblyFormat = "$ring `[` $slot `]` `,` $phase attr-dict `:` qualified(type($ring))";
}

def Tile_RingReleaseOp : Tile_Op<"ring_release", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "end of a drained ring: its shared memory free for other buffers";
  let description = [{
    ```mlir
    tile.ring_release %ring : !tile.ring<3, tensor<64x128xbf16>>
    ```
    After the loop of a ring (kiln-tile-pipeline-loads), where no copy into it
    is in flight (every issued slot was waited for) and every asynchronous
    reader of its slots was waited for (the dot's final `wgmma.wait_group 0`
    comes before it): a CTA barrier, thread 0 invalidates the slots'
    mbarriers (`mbarrier.inval`), and a second CTA barrier. The ring's bytes
    are then live only up to it, so kiln-allocate-shared-memory may give them
    to the buffers after it (an epilogue's layout conversion). Must run in
    uniform control flow.
  }];
  let arguments = (ins Tile_Ring:$ring);
  let assemblyFormat = "$ring attr-dict `:` qualified(type($ring))";
}

//===----------------------------------------------------------------------===//
// Layouts and warpgroup MMA
//===----------------------------------------------------------------------===//

def Tile_ConvertLayoutOp : Tile_Op<"convert_layout", [Pure, SameOperandsAndResultShape,
                                                      SameOperandsAndResultElementType]> {
  let summary = "move a tile to another distributed layout";
  let description = [{
    ```mlir
    %b = tile.convert_layout %a : tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
                                  -> tensor<128x256xf32>
    ```
    Same elements, another assignment of elements to threads (the result's
    encoding; none is the kernel's blocked layout). Lowers to a round trip
    through shared memory: every thread writes its registers, `bar.sync`,
    every thread reads its result registers, `bar.sync`. Converting a splat
    constant folds; a conversion of a conversion converts once.
  }];
  let arguments = (ins Tile_Tensor:$src);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
}

def Tile_StageOp : Tile_Op<"stage", [MemoryEffects<[MemAlloc, MemWrite]>]> {
  let summary = "write a register tile to shared memory once, for the tensor cores to read";
  let description = [{
    ```mlir
    %s = tile.stage %q : tensor<128x128xbf16> -> !tile.smem<tensor<128x128xbf16>>
    ```
    Stores the tile (blocked layout, or a `#tile.mma` accumulator's: each
    thread stores the elements it holds) to a shared buffer of its own in the
    layout of `!tile.smem` (K-major, 128-byte swizzle), then
    `fence.proxy.async.shared::cta` and a CTA barrier: every warpgroup's
    wgmma may then read it (and any warp's ldmatrix). Created by
    `kiln-tile-accelerate-dot` for the A operand of dots (wgmma, tcgen05,
    mma.sync) in a loop that the loop does not compute
    (attention's q), right after the tile's definition, so the loop reads it
    without storing it again; and, where a wgmma's warpgroups split N, for an
    A the loop computes from such an accumulator (attention's p, whose
    columns the warpgroups hold apart), right before the dot. The buffer is
    live from the stores to the CTA barrier after its last reader (every
    wgmma that read it waited for).
    Must run in uniform control flow.
  }];
  let arguments = (ins RankedTensorOf<[BF16, F16]>:$src);
  let results = (outs Tile_Smem:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def Tile_WarpGroupDotOp : Tile_Op<"warpgroup_dot", [AllTypesMatch<["acc", "result"]>,
                                                    MemoryEffects<[MemRead]>]> {
  let summary = "an asynchronous wgmma of a ring slot into an accumulator";
  let description = [{
    ```mlir
    %d = tile.warpgroup_dot %ra[%sa], %rb[%sb], %acc
        : !tile.ring<3, tensor<128x64xbf16>>, !tile.ring<3, tensor<256x64xbf16>>,
          tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
    ```
    `d = a * transpose(b) + acc` with `a` the [M, K] box of slot `sa` and `b`
    the [N, K] box of slot `sb`, both K-major with the 128-byte TMA swizzle
    (K * element size a multiple of 128 bytes: K = 64 for bf16/f16, 128 for
    FP8 e4m3/e5m2, which may be mixed, or a multiple: a wide box, its 128-byte
    chunks of K one after the other, M * 128 and N * 128 bytes apart; see
    `!tile.tensordesc`). A box of rank above 2 is the matrix [rows, inner]
    it holds, its rows the product of the outer dimensions. Created by `kiln-tile-accelerate-dot`
    (sm_90a) from a `tile.dot` whose B is a ring load. Lowers to
    `wgmma.fence`, one `wgmma.mma_async.m64nNk16` per 64-row slab of the
    warpgroup and 32 bytes of K (k16 for 16-bit, k32 for FP8; shared-memory
    descriptors: 128-byte swizzle, stride 1024 bytes per 8 rows; a step into
    the next chunk of K moves the start address by the chunk's bytes),
    `wgmma.commit_group`.
    The result is not ready until a `tile.warpgroup_dot_wait` covers it, and
    the slots (and a staged `a`) must not be overwritten before.

    `a` may instead be (bf16/f16, B of the same type) a tile staged in shared
    memory by `tile.stage` (`!tile.smem`, K-major like a box), or a register
    tile in the accumulator's `#tile.mma` encoding (K a multiple of 16),
    read from registers as `tile.warpgroup_dot_staged` reads it (attention's
    p·v: p, the softmax of an mma tile, narrowed to bf16 in place):

    ```mlir
    %d = tile.warpgroup_dot %q, %rk[%s], %acc
        : !tile.smem<tensor<128x128xbf16>>, !tile.ring<2, tensor<1x1x128x128xbf16>>,
          tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>>
    %o = tile.warpgroup_dot %p, %rv[%s], %acc {bMnMajor}
        : tensor<128x128xbf16, #tile.mma<version = 3, numWarps = 8>>,
          !tile.ring<2, tensor<1x1x128x128xbf16>>,
          tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>>
    ```

    With `bMnMajor` (bf16/f16 only: wgmma transposes only 16-bit operands) `b`
    is the [K, N] box of slot `sb`, N-major: `d = a * b + acc`. The box is
    written by TMA with the 128-byte swizzle, N a multiple of 64 (N * 2 a
    multiple of 128 bytes): per 64 columns of N one chunk of K rows of 128
    bytes, one swizzle atom per 8 rows, the chunks K * 128 bytes apart (a
    wide box for N = 128 or 256). Its descriptor: leading byte offset K * 128
    (the stride between 64-column chunks along N; unused with one chunk),
    stride byte offset 1024 (8 K rows), 128-byte swizzle;
    the transpose-B immediate (`imm-trans-b` = 1) set; a k16 step advances the
    start address by 16 rows (2048 bytes).

    ```mlir
    %d = tile.warpgroup_dot %ra[%sa], %rb[%sb], %acc {bMnMajor}
        : !tile.ring<3, tensor<128x64xbf16>>, !tile.ring<3, tensor<64x64xbf16>>,
          tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>
    ```

    With `maxNumImpreciseAcc = N` (FP8 boxes; a power of two, 32 <= N <= K;
    see `tile.dot`) the op is synchronous: per chunk of N elements of K,
    `wgmma.fence`, the chunk's k32 wgmmas per slab into fresh registers (the
    first with scale-d = 0, so the chunk starts from zero),
    `wgmma.commit_group`, `wgmma.wait_group.sync.aligned 0`, and one f32
    `add` per accumulator register into `acc`. The result is then ready (a
    following `tile.warpgroup_dot_wait` has nothing left to wait for).
  }];
  // The optional slot last: the result type is inferred from `acc` by its
  // operand index.
  let arguments = (ins AnyTypeOf<[Tile_Ring, Tile_Smem, RankedTensorOf<[BF16, F16]>]>:$a,
                       Tile_Ring:$b, I32:$bSlot, RankedTensorOf<[F32]>:$acc,
                       Optional<I32>:$aSlot,
                       OptionalAttr<I32Attr>:$maxNumImpreciseAcc, UnitAttr:$bMnMajor);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $a (`[` $aSlot^ `]`)? `,` $b `[` $bSlot `]` `,` $acc attr-dict `:` type($a) `,`
    qualified(type($b)) `,` type($acc)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The accumulator's encoding.
    MmaEncodingAttr getEncoding() {
      return ::llvm::cast<MmaEncodingAttr>(getAcc().getType().getEncoding());
    }
    /// The [M, K] matrix `a` holds (a box's last two dimensions).
    ::mlir::RankedTensorType getAMatrix();
    /// The [N, K] (or, with bMnMajor, [K, N]) matrix of `b`'s box.
    ::mlir::RankedTensorType getBMatrix();
    /// The ring `a` is a slot of, or null.
    RingType getARing() { return ::llvm::dyn_cast<RingType>(getA().getType()); }
  }];
}

def Tile_WarpGroupTurnOp : Tile_Op<"warpgroup_turn", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "two consumer warpgroups take turns on the tensor cores";
  let description = [{
    ```mlir
    tile.warpgroup_turn "start"
    scf.for ... {
      tile.warpgroup_turn "wait"
      %d = tile.warpgroup_dot ...
      tile.warpgroup_turn "pass"
      %r = tile.warpgroup_dot_wait %d {pending = 0 : i32} ...
    }
    tile.warpgroup_turn "end"
    ```
    FA3's ping-pong for the two consumer warpgroups (w = 0, 1; threads 0-255)
    of a warp-specialized loop: each issues its wgmmas only in its turn, so
    the tensor cores run one warpgroup's dots while the other computes its
    softmax, where left alone both would issue at once and then both wait.
    Named barriers 2 and 3 (256 threads: one warpgroup syncs, the other
    arrives): "wait" is `bar.sync 2 + w, 256`, "pass" `bar.arrive 3 - w, 256`
    (the other's turn); "start" lets warpgroup 0 go first (warpgroup 1
    arrives at barrier 2) and "end", after the loop, takes that extra arrival
    back (warpgroup 0 syncs on barrier 2 once more), so both barriers end
    where they began. Each warpgroup runs as many waits as passes, in
    uniform control flow. Created by `kiln-tile-accelerate-dot` (sm_90a)
    around the dots that read a ring slot in place in such a loop.
  }];
  let arguments = (ins StrAttr:$step);
  let assemblyFormat = "$step attr-dict";
  let hasVerifier = 1;
}

def Tile_WarpGroupDotStagedOp : Tile_Op<"warpgroup_dot_staged",
                                         [AllTypesMatch<["acc", "result"]>]> {
  let summary = "a wgmma of two register tiles staged in shared memory";
  let description = [{
    ```mlir
    %d = tile.warpgroup_dot_staged %a, %b, %acc
        : tensor<128x128xbf16> * tensor<128x64xbf16>
          -> tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>
    ```
    `d = a * b + acc` for `a` [M, K] and `b` [K, N] in registers (blocked
    layout), bf16 or f16 of one type, K and N multiples of 64, N up to 256,
    M a multiple of 64 a warpgroup. Created by `kiln-tile-accelerate-dot`
    (sm_90a) from a `tile.dot` whose operands are not ring slots. Lowers to:
    the operands stored to two shared scratch buffers in the layouts wgmma
    reads with the 128-byte swizzle, `fence.proxy.async.shared::cta`,
    `bar.sync`, then as `tile.warpgroup_dot`, `wgmma.wait_group 0` (the
    result is ready) and `bar.sync` (every warpgroup is done reading the
    buffers, which other ops' scratch may then reuse).
    `a` is K-major: 64-column chunks of M rows of 128 bytes, chunk j at
    j * M * 128 bytes. `b` is N-major (the transpose-B immediate): 64-column
    chunks of K rows of 128 bytes, the leading byte offset K * 128 between
    them. In either, the 16-byte unit u of row r lies at unit u ^ (r mod 8).

    With `a` in the accumulator's `#tile.mma` encoding (K a multiple of 16),
    A is read from registers (`wgmma.mma_async ... {a0..a3}, b-desc`): the
    registers 8c .. 8c + 7 of each 64-row slab of `a` hold, in the order of
    the accumulator fragment (PTX ISA, "wgmma register fragments",
    m64nNk16), exactly the A fragment of the k16 step c (rows l/4 and
    l/4 + 8 of the warp's 16, columns 16c + 2 (l mod 4) + {0, 1} and
    + 8), packed in pairs into the four .b32 registers, the lower column in
    the low half. Only `b` is staged. This is attention's p·v with p, the
    softmax of an mma tile, converted to bf16 in place.

    With `a` a `!tile.smem` tile (staged once by `tile.stage`), A is read
    where it is; only `b` is staged.
  }];
  let arguments = (ins AnyTypeOf<[RankedTensorOf<[BF16, F16]>, Tile_Smem]>:$a,
                       RankedTensorOf<[BF16, F16]>:$b,
                       RankedTensorOf<[F32]>:$acc);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` type($a) `*` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The accumulator's encoding.
    MmaEncodingAttr getEncoding() {
      return ::llvm::cast<MmaEncodingAttr>(getAcc().getType().getEncoding());
    }
    /// The [M, K] tile `a` holds (in registers, or staged).
    ::mlir::RankedTensorType getATile();
  }];
}

def Tile_WarpDotOp : Tile_Op<"warp_dot", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "an mma.sync dot into an accumulator held in registers";
  let description = [{
    ```mlir
    %d = tile.warp_dot %a, %b, %acc {bKMajor}
        : tensor<16x128xbf16> * tensor<32x128xbf16>
          -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
    ```
    `d = a * b + acc` for `a` [M, K] and `b` [K, N] of bf16 or f16 (one
    type), the f32 accumulator in the `#tile.mma` encoding of version 2,
    whose warp tiling (warpsN) says which 16 x 8 tiles each warp computes.
    With `bKMajor`, `b` is the [N, K] tile whose transpose is the operand
    (`dot(a, w.T)` with the `tile.trans` folded in). M and N are powers of
    two, N a multiple of 8 warpsN, K a multiple of 16. Created by
    `kiln-tile-accelerate-dot` from every `tile.dot` that neither wgmma nor
    tcgen05 takes; the accumulator stays in registers across the loop that
    carries it.

    `b` may instead be the slot `bSlot` of a ring whose slots are 128-byte
    swizzled boxes (a TMA ring with the 128-byte swizzle, or a `swizzled`
    gather ring), read in place by `ldmatrix` after a `tile.ring_wait` of the
    slot: its 2-D box is the [N, K] matrix with `bKMajor`, else [K, N], its
    rows whole 128-byte spans.

    ```mlir
    %s = tile.warp_dot %q, %keys[%slot], %acc {bKMajor}
        : !tile.smem<tensor<16x128xbf16>> * !tile.ring<2, tensor<32x128xbf16>>
          -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
    ```

    With `a` in the accumulator's encoding of warpsN = 1, A is read from its
    registers: the registers 8c .. 8c + 7 of each 16-row block hold the A
    fragment of k16 step c (PTX ISA, "Matrix Fragments for mma.m16n8k16"),
    packed in pairs, the lower column in the low half (attention's p·v).
    An operand in any other layout (blocked, or an mma encoding) is staged.
    With `a` a `!tile.smem` tile (staged once by `tile.stage`: K-major with
    the 128-byte swizzle), A's ldmatrix reads it where it is, each lane's
    16-byte unit u of row r at u ^ (r mod 8): no bank conflicts.

    Lowering: the register operands (any layout) stored to shared scratch
    buffers, row-major, rows padded by 16 bytes, then `bar.sync` (none where
    no operand is stored); per k16 step in
    ascending order, for each warp's 16-row blocks
    `ldmatrix.sync.aligned.m8n8.x4.shared.b16` (A) and for its 8-column
    tiles `ldmatrix...x4` (two tiles) or `x2` (one), `.trans` unless
    `bKMajor`, then `mma.sync.aligned.m16n8k16.row.col.f32.<type>.<type>.f32`
    on the accumulator registers; a closing `bar.sync` frees the scratch
    (where there is one).
    Each 16 x 8 tile runs the k16 steps in order from `acc`, as `tile.dot`
    defines. Rows past M wrap (M < 16 per warp): the warps and lanes that
    hold copies compute them alike. Must run in uniform control flow.
  }];
  // The optional slot last: the result type is inferred from `acc` by its
  // operand index.
  let arguments = (ins AnyTypeOf<[RankedTensorOf<[BF16, F16]>, Tile_Smem]>:$a,
                       AnyTypeOf<[RankedTensorOf<[BF16, F16]>, Tile_Ring]>:$b,
                       RankedTensorOf<[F32]>:$acc, Optional<I32>:$bSlot,
                       UnitAttr:$bKMajor);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $a `,` $b (`[` $bSlot^ `]`)? `,` $acc attr-dict `:` type($a) `*` type($b) `->`
    type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The accumulator's encoding.
    MmaEncodingAttr getEncoding() {
      return ::llvm::cast<MmaEncodingAttr>(getAcc().getType().getEncoding());
    }
    /// The [M, K] tile `a` holds (in registers, or staged).
    ::mlir::RankedTensorType getATile();
    /// The tile `b` holds: its registers, or its ring's box.
    ::mlir::RankedTensorType getBTile();
    /// The [K, N] operand `b` stands for.
    ::mlir::RankedTensorType getBMatrix();
    /// The ring `b` is a slot of, or null.
    RingType getBRing() { return ::llvm::dyn_cast<RingType>(getB().getType()); }
  }];
}

def Tile_WarpGroupDotWaitOp : Tile_Op<"warpgroup_dot_wait",
                                      [AllTypesMatch<["src", "result"]>,
                                       MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "wait until at most `pending` warpgroup dots are in flight";
  let description = [{
    ```mlir
    %r = tile.warpgroup_dot_wait %d {pending = 1 : i32} : tensor<128x256xf32, #tile.mma<...>>
    ```
    `wgmma.wait_group.sync.aligned pending`; the result is `src`, ready once
    the dots before the last `pending` ones are. Passing the accumulator
    through the wait keeps its readers after it.
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$src, I32Attr:$pending);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$src attr-dict `:` type($src)";
}

//===----------------------------------------------------------------------===//
// mbarriers, Tensor Memory and tcgen05 MMA (sm_100a, sm_103a)
//===----------------------------------------------------------------------===//

def Tile_MBarrierAllocOp : Tile_Op<"mbarrier_alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "an array of mbarriers in shared memory, initialized";
  let description = [{
    ```mlir
    %done = tile.mbarrier_alloc : !tile.mbarriers<2>
    ```
    Thread 0 initializes every barrier with an arrival count of 1
    (`mbarrier.init.shared.b64`), then `fence.mbarrier_init.release.cluster`
    and `bar.sync`: must run in uniform control flow. Each barrier starts in
    phase 0, so a wait for parity 1 returns at once (the "previous" phase is
    complete).

    With `per_warp` the arrival count is the kernel's warps (its
    `tile.threads_per_block` / 32: the consumer warps of a
    `tile.warp_specialize`), one `tile.mbarrier_arrive` per warp a phase.
  }];
  let arguments = (ins UnitAttr:$per_warp);
  let results = (outs Tile_MBarriers:$barriers);
  let assemblyFormat = "attr-dict `:` qualified(type($barriers))";
}

def Tile_MBarrierArriveOp : Tile_Op<"mbarrier_arrive", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "arrive on one mbarrier of an array";
  let description = [{
    ```mlir
    tile.mbarrier_arrive %empty[%i] if %pred : !tile.mbarriers<3>
    ```
    If `pred` holds, every executing warp arrives once on barrier `index`
    (i32, below the array's count): `bar.warp.sync` (the warp's earlier reads
    of what the barrier guards, a ring slot, are done), then lane 0's
    `mbarrier.arrive.shared::cta.b64` with release semantics at CTA scope.
    One arrival per warp: the array is allocated `per_warp` (the consumer
    warps of a `tile.warp_specialize` releasing a ring slot).
  }];
  let arguments = (ins Tile_MBarriers:$barriers, I32:$index, I1:$pred);
  let assemblyFormat = [{
    $barriers `[` $index `]` `if` $pred attr-dict `:` qualified(type($barriers))
  }];
}

def Tile_WarpSpecializeOp : Tile_Op<"warp_specialize", [RecursiveMemoryEffects, SingleBlock,
                                                         NoTerminator]> {
  let summary = "split the program into consumer warps and one producer warpgroup";
  let description = [{
    ```mlir
    tile.warp_specialize consumer {
      // the kernel's num_warps warps: the K loop waiting on full ring slots,
      // the dots, the epilogue; every CTA barrier among these threads only
    } producer {
      // one added warpgroup: one warp waits for empty slots and issues TMA
    }
    ```
    Made by `kiln-tile-warp-specialize` (sm_90a, sm_100a, sm_103a). The
    program runs with the kernel's warps plus one producer warpgroup (4
    warps), the last one: the consumer threads keep their ids, so every
    layout's index math is unchanged, and the kernel is launched with
    `tile.threads_per_block` + 128 threads (`nvvm.reqntid`). Lowers to

      if (tid < consumers) { setmaxnreg.inc.sync.aligned.u32 C; consumer }
      else { setmaxnreg.dec.sync.aligned.u32 40;
             if (tid < consumers + 32) producer }

    with C the most registers that fit 64K beside 40 per producer thread (232
    for 8 consumer warps, at most 240). Every `bar.sync` of the consumer
    region becomes the named barrier `bar.sync 1, consumers`: the producer
    warps do not take part (three exit at once, the fourth after its last
    issue). Barrier initialization (`tile.ring_alloc`, `tile.mbarrier_alloc`)
    must come before the op, where every thread runs it. The consumer threads
    must be whole warpgroups; the producer region must not hold tiles
    (tensors), only scalars, waits and issues.
  }];
  let regions = (region SizedRegion<1>:$consumer, SizedRegion<1>:$producer);
  let assemblyFormat = "`consumer` $consumer `producer` $producer attr-dict";
  let hasRegionVerifier = 1;
}

def Tile_BarrierOp : Tile_Op<"barrier", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "a barrier of the program's threads";
  let description = [{
    ```mlir
    tile.barrier
    ```
    `bar.sync 0`: every thread of the program waits for the others (and its
    earlier shared-memory accesses are ordered before their later ones). In
    the consumer region of a `tile.warp_specialize` it is the consumers'
    named barrier `bar.sync 1, consumers`. Must run in uniform control flow.
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_MBarrierWaitOp : Tile_Op<"mbarrier_wait", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "wait for a phase of one mbarrier of an array";
  let description = [{
    ```mlir
    tile.mbarrier_wait %done[%i], %parity : !tile.mbarriers<2>
    ```
    Every thread spins on `mbarrier.try_wait.parity.shared::cta.b64` until
    barrier `index` (i32, below the array's count) has completed the phase of
    parity `parity` (i32, 0 or 1), i.e. until its current phase has the other
    parity. The caller must know that the barrier is at most one phase ahead
    of the one waited for: parities cannot tell phases two apart.
  }];
  let arguments = (ins Tile_MBarriers:$barriers, I32:$index, I32:$parity);
  let assemblyFormat = [{
    $barriers `[` $index `]` `,` $parity attr-dict `:` qualified(type($barriers))
  }];
}

def Tile_TMemAllocOp : Tile_Op<"tmem_alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "allocate an f32 accumulator in Tensor Memory";
  let description = [{
    ```mlir
    %acc = tile.tmem_alloc : !tile.tmem<tensor<128x256xf32>>
    ```
    Warp 0 allocates the type's columns (a power of two, at least 32) with the
    warp-collective `tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
    [addr], ncols`, which writes the TMEM address to a 4-byte shared-memory
    word; then `tcgen05.fence::before_thread_sync`, `bar.sync`,
    `tcgen05.fence::after_thread_sync` and every thread reads the address
    (`ld.shared.b32`). Must run in uniform control flow. The allocation
    blocks until the SM has the columns free. The contents are undefined until
    a `tile.tcgen05_dot` writes them. Pair it with one `tile.tmem_dealloc`; a
    kernel allocates once (the dealloc gives up the permit to allocate).
  }];
  let results = (outs Tile_TMem:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

def Tile_TMemDeallocOp : Tile_Op<"tmem_dealloc", [MemoryEffects<[MemFree]>]> {
  let summary = "free a Tensor Memory accumulator and the permit to allocate";
  let description = [{
    ```mlir
    tile.tmem_dealloc %acc : !tile.tmem<tensor<128x256xf32>>
    ```
    `tcgen05.fence::before_thread_sync`, `bar.sync` (every thread's reads of
    the accumulator are complete: `tile.tmem_load` waits for them), then warp 0:
    `tcgen05.fence::after_thread_sync`,
    `tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, ncols` and
    `tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned`: the block
    allocates no Tensor Memory after it. Must run in uniform control flow,
    after every `tile.tcgen05_dot` into the accumulator has completed (a
    block must free its Tensor Memory before it exits).
  }];
  let arguments = (ins Tile_TMem:$tmem);
  let assemblyFormat = "$tmem attr-dict `:` qualified(type($tmem))";
}

def Tile_TMemLoadOp : Tile_Op<"tmem_load", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "read a Tensor Memory accumulator into registers";
  let description = [{
    ```mlir
    %r = tile.tmem_load %acc : !tile.tmem<tensor<128x256xf32>>
        -> tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>>
    ```
    The result is in the version 5 `#tile.mma` layout: thread t reads TMEM
    lane t mod 128 (a warp may only reach the 32 lanes of its quarter) and
    warpgroup g the columns g * N/G .. (g + 1) * N/G - 1, with
    `tcgen05.fence::after_thread_sync`, `tcgen05.ld.sync.aligned.32x32b.xC.b32`
    (C up to 32 columns per instruction) and `tcgen05.wait::ld.sync.aligned`.
    The dots that wrote the accumulator must be complete (a
    `tile.mbarrier_wait` on their commit); `numWarps` must be the kernel's.
  }];
  let arguments = (ins Tile_TMem:$tmem);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$tmem attr-dict `:` qualified(type($tmem)) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_Tcgen05DotOp : Tile_Op<"tcgen05_dot", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "an asynchronous tcgen05.mma of two ring slots into a TMEM accumulator";
  let description = [{
    ```mlir
    tile.tcgen05_dot %ra[%sa], %rb[%sb], %acc, %accumulate -> %done[%i]
        : !tile.ring<3, tensor<128x64xbf16>>, !tile.ring<3, tensor<256x64xbf16>>,
          !tile.tmem<tensor<128x256xf32>>, !tile.mbarriers<2>
    ```
    `acc = a * transpose(b) + (accumulate ? acc : 0)` with `a` the [128, K]
    box of slot `sa` and `b` the [N, K] box of slot `sb`, both bf16 or both
    f16, K-major with the 128-byte TMA swizzle (K * 2 a multiple of 128
    bytes: K = 64, or a wide box's 128-byte chunks of K, 128 * 128 and N * 128
    bytes apart; see `!tile.tensordesc`), N a
    multiple of 16 from 16 to 256. Created by `kiln-tile-accelerate-dot`
    (sm_100a, sm_103a) from a `tile.dot` of ring loads in a pipelined loop.

    One elected thread of warp 0 issues, after
    `tcgen05.fence::after_thread_sync`, one
    `tcgen05.mma.cta_group::1.kind::f16 [acc], adesc, bdesc, idesc, p` per 16
    columns of K, then `tcgen05.commit.cta_group::1.mbarrier::arrive::one
    .shared::cluster.b64 [done[i]]`: the barrier completes a phase once these
    MMAs (and every earlier one of the thread) are done. `p`
    (enable-input-d) is `accumulate` for the first K step and true after it.
    The shared-memory descriptors (PTX ISA, "tcgen05 shared memory
    descriptor") have the start address >> 4 in bits 0-13, leading byte
    offset 1 (unused for swizzled K-major boxes), stride byte offset
    1024 >> 4 (8 rows of 128 bytes) in bits 32-45, the fixed 0b001 in bits
    46-48, base offset 0 (slots are 1024-byte aligned) and swizzle mode 2
    (128-byte) in bits 61-63; a K step of 16 elements adds 32 bytes to the
    start address, a step into the next chunk of K the chunk's bytes. The instruction descriptor is dense, D f32 (bits 4-5 = 1),
    A and B f16 (0) or bf16 (1) in bits 7-9 and 10-12, both K-major (bits 15,
    16 = 0), N >> 3 in bits 17-22 and M >> 4 in bits 24-28.

    The slots may be refilled, and the accumulator read, only after a
    `tile.mbarrier_wait` on `done[i]` for the phase this commit completes.
    In the consumers of a warp-specialized loop `done` is the EMPTY barrier
    array and `i` the slot the dot reads: the producer warp's wait for it
    is what orders the refill after the MMAs.
  }];
  let arguments = (ins Tile_Ring:$a, I32:$aSlot, Tile_Ring:$b, I32:$bSlot, Tile_TMem:$acc,
                       I1:$accumulate, Tile_MBarriers:$barriers, I32:$barrier);
  let assemblyFormat = [{
    $a `[` $aSlot `]` `,` $b `[` $bSlot `]` `,` $acc `,` $accumulate `->` $barriers `[` $barrier `]`
    attr-dict `:` qualified(type($a)) `,` qualified(type($b)) `,` qualified(type($acc)) `,`
    qualified(type($barriers))
  }];
  let hasVerifier = 1;
}

def Tile_Tcgen05DotStagedOp : Tile_Op<"tcgen05_dot_staged",
                                       [AllTypesMatch<["acc", "result"]>]> {
  let summary = "a tcgen05.mma of two register tiles staged in shared memory, waited for";
  let description = [{
    ```mlir
    %d = tile.tcgen05_dot_staged %a, %b, %acc, %tmem
        : tensor<128x128xbf16> * tensor<128x64xbf16>
          -> tensor<128x64xf32, #tile.mma<version = 5, numWarps = 8>>,
          !tile.tmem<tensor<128x128xf32>>
    ```
    `d = a * b + acc` for `a` [128, K] and `b` [K, N] in registers (any
    layout: each thread stores what it holds), bf16 or f16 of one type, K and
    N multiples of 64, N up to 256 and at most the columns of `tmem`, the
    accumulator in the version 5 `#tile.mma` layout. Created by
    `kiln-tile-accelerate-dot` (sm_100a, sm_103a) from a `tile.dot` that is
    not the K-loop dot of a pipelined GEMM (attention's q kᵀ and p·v); the
    dots of a kernel share `tmem` (allocated once; a dot writes its first N
    columns).

    Lowers to: the operands stored to shared scratch in the layouts of
    `tile.warpgroup_dot_staged` (`a` K-major, `b` MN-major; with `a` a
    `!tile.smem` tile staged by `tile.stage`, only `b`),
    `fence.proxy.async.shared::cta`, `bar.sync`; one elected thread of warp 0
    issues `tcgen05.fence::after_thread_sync`, one `tcgen05.mma.cta_group::1
    .kind::f16` per 16 columns of K (enable-input-d false on the first: the
    MMA starts from zero) and `tcgen05.commit` to an mbarrier of the op's own
    (initialized at the kernel's start, its phase parity kept by each thread
    as a TMA load's is); every thread waits for the phase, then as
    `tile.tmem_load`, adds the loaded registers to `acc`, then
    `tcgen05.fence::before_thread_sync` and `bar.sync`: every thread's reads
    of the columns are done before another dot's MMAs overwrite them, and the
    scratch is free again. The B descriptor is
    MN-major (instruction descriptor bit 16): leading byte offset K * 128
    (between 64-column chunks of N), stride byte offset 1024; a k16 step adds
    2048 bytes. Must run in uniform control flow.

    With `b` a slot (`bSlot`) of a 128-byte swizzled ring, B is read where
    TMA put it (attention's k and v in the key loop's ring): the box's
    [N, K] matrix K-major (the descriptor and K steps of `tile.tcgen05_dot`,
    chunks of K N * 128 bytes apart), or with `bMnMajor` its [K, N] matrix
    MN-major (as a staged B: a wide box's 64-column chunks of N are K * 128
    bytes apart). The slot must be waited for (`tile.ring_wait`) before; it
    is free again when the op returns (the MMAs are complete).
  }];
  let arguments = (ins AnyTypeOf<[RankedTensorOf<[BF16, F16]>, Tile_Smem]>:$a,
                       AnyTypeOf<[RankedTensorOf<[BF16, F16]>, Tile_Ring]>:$b,
                       RankedTensorOf<[F32]>:$acc,
                       Tile_TMem:$tmem,
                       // Last: the inferred result type is the operand at acc's index.
                       Optional<I32>:$bSlot,
                       UnitAttr:$bMnMajor);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $a `,` $b (`[` $bSlot^ `]`)? `,` $acc `,` $tmem attr-dict `:` type($a) `*` type($b) `->`
    type($result) `,` qualified(type($tmem))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The [M, K] tile `a` holds (in registers, or staged).
    ::mlir::RankedTensorType getATile();
    /// The matrix of `b`: the [K, N] register tile, or the matrix of the
    /// ring's box, [N, K] (K-major) or, with bMnMajor, [K, N].
    ::mlir::RankedTensorType getBMatrix();
    /// The ring `b` is a slot of, or null.
    RingType getBRing() { return ::llvm::dyn_cast<RingType>(getB().getType()); }
  }];
}

#endif // KILN_DIALECT_TILE_IR_TILENVIDIAOPS_TD
