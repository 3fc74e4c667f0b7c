//===- TileOps.td - tile dialect operations ----------------*- tablegen -*-===//
//
// The ops a kernel is written in (what the frontend emits). The ops passes
// create for NVIDIA's asynchronous hardware are in TileNvidiaOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_TILE_IR_TILEOPS_TD
#define KILN_DIALECT_TILE_IR_TILEOPS_TD

include "kiln/Dialect/Tile/IR/TileAttrs.td"
include "kiln/Dialect/Tile/IR/TileDialect.td"
include "kiln/Dialect/Tile/IR/TileTypes.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Program instance
//===----------------------------------------------------------------------===//

def Tile_ProgramIdOp : Tile_Op<"program_id", [Pure]> {
  let summary = "index of this program instance along a grid axis";
  let description = [{
    ```mlir
    %pid = tile.program_id x : i32
    ```
    Becomes `mov.u32 %r, %ctaid.x` (`nvvm.read.ptx.sreg.ctaid.x`).
  }];
  let arguments = (ins Tile_ProgramAxis:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

def Tile_NumProgramsOp : Tile_Op<"num_programs", [Pure]> {
  let summary = "number of program instances along a grid axis";
  let description = [{
    ```mlir
    %n = tile.num_programs y : i32
    ```
    Becomes `mov.u32 %r, %nctaid.y` (`nvvm.read.ptx.sreg.nctaid.y`).
  }];
  let arguments = (ins Tile_ProgramAxis:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Creating and reshaping tiles
//===----------------------------------------------------------------------===//

def Tile_MakeRangeOp : Tile_Op<"make_range", [Pure]> {
  let summary = "1-D tile of consecutive integers [start, end)";
  let description = [{
    ```mlir
    %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
    ```
    `end - start` must equal the tile's size, a power of two. In the distributed
    form every thread materializes the indices of the elements it owns
    (`thread id * elems_per_thread + constant`).
  }];
  let arguments = (ins I32Attr:$start, I32Attr:$end);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_IotaOp : Tile_Op<"iota", [Pure]> {
  let summary = "coordinate along one dimension of an N-d tile, plus start";
  let description = [{
    ```mlir
    %rows = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<16x512xi32>
    %cols = tile.iota {dim = 1 : i32, start = 64 : i32} : tensor<16x512xi32>
    ```
    The element at coordinate `(i_0, ..., i_{n-1})` is `start + i_dim`: the
    broadcast of a `tile.make_range` along the other dimensions, without moving
    data (`kiln-tile-rematerialize-broadcasts` creates it). Every dimension is a
    power of two, so each thread computes the coordinate of each element it
    holds from its row-major index with a shift and a mask
    (`((tid.x * run + offset) >> log2(inner size)) & (size_dim - 1)`, plus
    `start`); elements of one run share the coordinate unless `dim` is the
    last dimension, where they are consecutive (the contiguity of the last
    dimension that 16-byte accesses need). A unit `dim` folds to the splat of
    `start`. `start + size_dim - 1` must fit in i32.
  }];
  let arguments = (ins I32Attr:$dim, I32Attr:$start);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_SplatOp : Tile_Op<"splat", [Pure,
    TypesMatchWith<"result element type matches the scalar", "result", "src",
                   "::llvm::cast<::mlir::RankedTensorType>($_self).getElementType()">]> {
  let summary = "tile whose every element is the same scalar";
  let description = [{
    ```mlir
    %t = tile.splat %x : f32 -> tensor<64x128xf32>
    ```
    Costs nothing: each thread keeps one copy of the scalar. Splats of constants
    fold to `arith.constant dense<...>`.
  }];
  let arguments = (ins Tile_Scalar:$src);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
}

def Tile_ExpandDimsOp : Tile_Op<"expand_dims", [Pure]> {
  let summary = "insert a unit dimension";
  let description = [{
    ```mlir
    %t = tile.expand_dims %x {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    ```
    The row-major order of the elements does not change, so in the blocked
    layout this is free. `axis` may be 0..rank(src).
  }];
  let arguments = (ins Tile_Tensor:$src, I32Attr:$axis);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tile_BroadcastOp : Tile_Op<"broadcast", [Pure]> {
  let summary = "repeat a tile along its unit dimensions";
  let description = [{
    ```mlir
    %t = tile.broadcast %x : tensor<1x128xf32> -> tensor<64x128xf32>
    ```
    Same rank and element type; every source dimension is 1 or equal to the
    result's. Element movement between threads goes through shared memory
    (a buffer of the source, two `bar.sync`);
    `kiln-tile-rematerialize-broadcasts` first rewrites the broadcasts of
    values that are cheap to recompute (index arithmetic) into ops on the
    result's shape.
  }];
  let arguments = (ins Tile_Tensor:$src);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tile_TransOp : Tile_Op<"trans", [Pure]> {
  let summary = "permute the dimensions of a tile";
  let description = [{
    ```mlir
    %t = tile.trans %x {order = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
    %p = tile.trans %y {order = array<i64: 2, 0, 1>} : tensor<2x4x8xbf16> -> tensor<8x2x4xbf16>
    ```
    Dimension `k` of the result is dimension `order[k]` of the source (as
    Triton's `tl.permute` and numpy's `transpose`): the element at source
    coordinate `c` lands at result coordinate `(c[order[0]], ...,
    c[order[rank-1]])`. `order` is a permutation of `0 .. rank-1`, the rank is
    at least 2 and the element type is kept.

    Elements change threads, so the lowering goes through shared memory: each
    thread stores the elements it holds (one copy of a replicated tile) at
    their row-major index in the result, which for power-of-two dimensions is
    a permutation of the index bits (masks and shifts of the thread's base
    index; the register offsets are permuted at compile time); a `bar.sync`;
    each thread loads its result elements at their own row-major index; a
    second `bar.sync` before the buffer may be written again. Where the last
    dimension moves, the buffer's rows (of 8 or more elements) are padded by
    one element against bank conflicts of the strided stores. A permutation
    that keeps the row-major order (it moves unit dimensions only) moves no
    data. The buffer, one for all the transposes, joins and splits of a
    kernel (they use it in turn), holds at most 16 KiB of elements: a larger
    tile moves in slabs, one barrier pair each, picked by position bits that
    registers decide where possible, else a warp (a warp-uniform branch
    around the stores, or a select of the loads). The identity order and two transposes
    that cancel fold away, two transposes compose, the transpose of a splat
    is a splat.
  }];
  let arguments = (ins Tile_Tensor:$src, DenseI64ArrayAttr:$order);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$src, "::llvm::ArrayRef<int64_t>":$order)>
  ];
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tile_ReshapeOp : Tile_Op<"reshape", [Pure]> {
  let summary = "view a tile in another shape, keeping the row-major order";
  let description = [{
    ```mlir
    %r = tile.reshape %x : tensor<16x64xf32> -> tensor<4x256xf32>
    ```
    The element at row-major index `i` of the source is the element at
    row-major index `i` of the result (numpy's `reshape` in C order): same
    number of elements, same element type. In the blocked layout a thread's
    registers hold the same row-major indices whatever the shape (the layout
    depends on the number of elements only), so this moves no data. Reshapes
    to the source type fold away, two reshapes compose, the reshape of a splat
    is a splat.
  }];
  let arguments = (ins Tile_Tensor:$src);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tile_JoinOp : Tile_Op<"join", [Pure, AllTypesMatch<["lhs", "rhs"]>]> {
  let summary = "interleave two tiles along a new minor dimension of size 2";
  let description = [{
    ```mlir
    %j = tile.join %a, %b : tensor<16x64xf32> -> tensor<16x64x2xf32>
    ```
    `result[..., 0] = lhs`, `result[..., 1] = rhs` (Triton's `tl.join`):
    element `i` of the operands lands at row-major index `2i` and `2i + 1`.
    The operands have one type, the result their shape with a trailing 2.
    Lowered like `tile.trans`: both operands store into a shared-memory
    buffer at their doubled index (plus 1 for `rhs`), a `bar.sync`, each
    thread loads its result elements, a `bar.sync`; slabs of 16 KiB.
    `join(split(x))` folds to `x`.
  }];
  let arguments = (ins Tile_Tensor:$lhs, Tile_Tensor:$rhs);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs)>
  ];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_SplitOp : Tile_Op<"split", [Pure, AllTypesMatch<["lhs", "rhs"]>]> {
  let summary = "split a tile along its minor dimension of size 2";
  let description = [{
    ```mlir
    %lo, %hi = tile.split %x : tensor<16x64x2xf32> -> tensor<16x64xf32>
    ```
    The inverse of `tile.join` (Triton's `tl.split`): `lhs = src[..., 0]`,
    `rhs = src[..., 1]`. The source has rank >= 2 and a last dimension of 2;
    the results have its shape without that dimension. Lowered through
    shared memory: the source is stored at its own index, each result loads
    its elements at the doubled index (plus 1 for `rhs`), between two
    `bar.sync`; slabs of 16 KiB. `split(join(a, b))` folds to `a, b`.
  }];
  let arguments = (ins Tile_Tensor:$src);
  let results = (outs Tile_Tensor:$lhs, Tile_Tensor:$rhs);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($lhs)";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$src)>
  ];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Programmatic dependent launch
//===----------------------------------------------------------------------===//

def Tile_PdlWaitOp : Tile_Op<"pdl_wait", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "wait for the grids this launch depends on (PDL)";
  let description = [{
    ```mlir
    tile.pdl_wait
    ```
    Becomes `griddepcontrol.wait`: blocks until the prerequisite grids have
    completed and their memory is visible. A kernel using it (or
    `tile.pdl_launch_dependents`) is marked `pdl` in its metadata and launched
    with programmatic stream serialization, so it may start while the previous
    kernel in the stream still runs: every read of that kernel's results must
    come after this op. Without a PDL launch it returns at once.
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_PdlLaunchDependentsOp : Tile_Op<"pdl_launch_dependents",
                                         [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "let the next PDL launch in the stream start (PDL)";
  let description = [{
    ```mlir
    tile.pdl_launch_dependents
    ```
    Becomes `griddepcontrol.launch_dependents`: once every program has issued
    it (or exited), the dependent grid may be scheduled; it still waits for this
    grid's completion in its own `tile.pdl_wait`.
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Thread-block clusters
//===----------------------------------------------------------------------===//

def Tile_ClusterIdOp : Tile_Op<"cluster_id", [Pure]> {
  let summary = "index of this program's cluster along a grid axis";
  let description = [{
    ```mlir
    %c = tile.cluster_id x : i32
    ```
    Becomes `mov.u32 %r, %clusterid.x` (`nvvm.read.ptx.sreg.clusterid.x`):
    `program_id(axis) / cluster_dims[axis]`. Without `tile.cluster_dims` on the
    kernel each program is its own cluster and this equals `tile.program_id`.
  }];
  let arguments = (ins Tile_ProgramAxis:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

def Tile_NumClustersOp : Tile_Op<"num_clusters", [Pure]> {
  let summary = "number of clusters along a grid axis";
  let description = [{
    ```mlir
    %n = tile.num_clusters y : i32
    ```
    Becomes `mov.u32 %r, %nclusterid.y` (`nvvm.read.ptx.sreg.nclusterid.y`):
    `num_programs(axis) / cluster_dims[axis]`.
  }];
  let arguments = (ins Tile_ProgramAxis:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

def Tile_ClusterCtaIdOp : Tile_Op<"cluster_cta_id", [Pure]> {
  let summary = "index of this program inside its cluster along a grid axis";
  let description = [{
    ```mlir
    %i = tile.cluster_cta_id x : i32
    ```
    Becomes `mov.u32 %r, %cluster_ctaid.x`
    (`nvvm.read.ptx.sreg.cluster.ctaid.x`): `program_id(axis) mod
    cluster_dims[axis]`. Folds to 0 along an axis where the kernel's
    `tile.cluster_dims` is 1.
  }];
  let arguments = (ins Tile_ProgramAxis:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Tile_ClusterCtaRankOp : Tile_Op<"cluster_cta_rank", [Pure]> {
  let summary = "linear rank of this program inside its cluster";
  let description = [{
    ```mlir
    %r = tile.cluster_cta_rank : i32
    ```
    Becomes `mov.u32 %r, %cluster_ctarank`
    (`nvvm.read.ptx.sreg.cluster.ctarank`): `x + y * cx + z * cx * cy` for the
    cluster coordinates (`tile.cluster_cta_id`) and cluster shape
    `(cx, cy, cz)`; in [0, `tile.cluster_size`). Folds to 0 when the kernel's
    `tile.cluster_dims` is 1x1x1.
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Tile_ClusterSizeOp : Tile_Op<"cluster_size", [Pure]> {
  let summary = "number of programs in this program's cluster";
  let description = [{
    ```mlir
    %n = tile.cluster_size : i32
    ```
    Becomes `mov.u32 %r, %cluster_nctarank`
    (`nvvm.read.ptx.sreg.cluster.nctarank`). Folds to the product of the
    kernel's `tile.cluster_dims` when it has them.
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Tile_ClusterBarrierOp : Tile_Op<"cluster_barrier", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "barrier over every thread of the cluster";
  let description = [{
    ```mlir
    tile.cluster_barrier
    ```
    Becomes `barrier.cluster.arrive.aligned` then `barrier.cluster.wait.aligned`
    (`nvvm.cluster.arrive {aligned}`, `nvvm.cluster.wait {aligned}`): the arrive
    releases and the wait acquires at cluster scope (the defaults of the PTX
    instruction), so every shared- and global-memory write of every block of
    the cluster before the barrier is visible to every block after it. Every
    block of the cluster that has not exited must reach it, in the same order as
    the other cluster barriers (a block that exited no longer counts). It
    implies a block-wide barrier.
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_ClusterLoadOp : Tile_Op<"cluster_load", [MemoryEffects<[MemRead, MemWrite]>,
                                                  AllTypesMatch<["src", "result"]>]> {
  let summary = "the tile `src` of another block of the cluster (distributed shared memory)";
  let description = [{
    ```mlir
    %y = tile.cluster_load %x, %rank : tensor<256xf32>
    ```
    Every block of the cluster publishes its tile `%x` in a shared-memory buffer
    of its own; after a cluster barrier each thread reads, from the buffer of
    block `%rank` (its `tile.cluster_cta_rank`; a uniform i32 that may differ
    between blocks), the elements it holds, and a second cluster barrier keeps
    every buffer alive and unchanged until all blocks have read. The result has
    the type and the layout of `%x`.

    PTX: `st.shared` of the thread's elements, `barrier.cluster.arrive.aligned`
    + `barrier.cluster.wait.aligned`, `mapa.shared::cluster.u32` of the buffer
    to `%rank`, `ld.shared::cluster` (up to 16 bytes per access), and the
    second arrive + wait. i1 elements travel as bytes.

    As a cluster barrier, every block of the cluster must execute it. `%rank`
    out of [0, cluster size) is undefined behaviour; a constant `%rank` is
    checked against the kernel's `tile.cluster_dims`.
  }];
  let arguments = (ins RankedTensorOf<[Tile_Float, Tile_Int]>:$src, I32:$rank);
  let results = (outs RankedTensorOf<[Tile_Float, Tile_Int]>:$result);
  let assemblyFormat = "$src `,` $rank attr-dict `:` type($src)";
  let hasVerifier = 1;
}

def Tile_ClusterGatherOp : Tile_Op<"cluster_gather", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "the tiles `src` of every block of the cluster, stacked in rank order";
  let description = [{
    ```mlir
    %all = tile.cluster_gather %x : tensor<64xf32> -> tensor<8x64xf32>
    ```
    Every block of the cluster publishes its tile `%x` in a shared-memory
    buffer of its own; after ONE cluster barrier each thread reads the elements
    of the result it holds, element `(r, i...)` from the buffer of block `r`
    (its `tile.cluster_cta_rank`) at index `(i...)`, and a second cluster
    barrier keeps every buffer alive and unchanged until all blocks have read.
    The result's shape is `[S, src shape...]` with `S` the cluster size (the
    product of the kernel's `tile.cluster_dims`, 1 without them), and it has its
    own blocked layout. Two cluster barriers in all, whatever `S` (a loop of
    `tile.cluster_load` needs two per rank). A cluster-wide sum is a
    `tile.reduce` of the result along axis 0.

    PTX: `st.shared` of the thread's elements of `%x`,
    `barrier.cluster.arrive.aligned` + `barrier.cluster.wait.aligned`, then per
    run of the result's elements (up to 16 bytes, never across two ranks)
    `mapa.shared::cluster` of the buffer to the run's rank and
    `ld.shared::cluster`, and the second arrive + wait. i1 elements travel as
    bytes.

    As a cluster barrier, every block of the cluster must execute it. `S` must
    be a power of two (tiles have power-of-two dimensions).
  }];
  let arguments = (ins RankedTensorOf<[Tile_Float, Tile_Int]>:$src);
  let results = (outs RankedTensorOf<[Tile_Float, Tile_Int]>:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_ClusterSumOp : Tile_Op<"cluster_sum", [MemoryEffects<[MemRead, MemWrite]>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "the elementwise sums of tiles over every block of the cluster";
  let description = [{
    ```mlir
    %s, %t = tile.cluster_sum %x, %y : tensor<8xf32>, tensor<4x32xi32>
    ```
    Result `i` has the type and layout of `srcs[i]`; its element is the sum of
    that element of `srcs[i]` over the blocks of the cluster, added in rank
    order (rank 0, + rank 1, ...), so every block gets the same bits. Every
    block publishes its tiles in shared memory, ONE cluster barrier, then each
    thread reads the elements it holds from every block's buffers (nothing
    changes layout: no shuffle, no block barrier) and adds them; a second
    cluster barrier keeps the buffers alive until all blocks have read. A tile
    held whole by every thread (up to one run of elements) thus sums in
    registers, where `tile.cluster_gather` + `tile.reduce` would spread the
    ranks over lanes.

    PTX: `st.shared` of the thread's elements of every source,
    `barrier.cluster.arrive.aligned` + `barrier.cluster.wait.aligned`, per rank
    `mapa.shared::cluster` of each buffer and `ld.shared::cluster` of the
    thread's runs (up to 16 bytes), the adds, the second arrive + wait.

    Elements are 32- or 64-bit integers or floats (narrower floats would round
    at every add: convert first). As a cluster barrier, every block of the
    cluster must execute it.
  }];
  let arguments = (ins Variadic<RankedTensorOf<[F32, F64, I32, I64]>>:$srcs);
  let results = (outs Variadic<RankedTensorOf<[F32, F64, I32, I64]>>:$results);
  let assemblyFormat = "$srcs attr-dict `:` type($srcs)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Tile_ReduceOp : Tile_Op<"reduce", [Pure, SingleBlock,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "combine the elements of one or more tiles along one axis";
  let description = [{
    ```mlir
    %sum = tile.reduce %x {axis = 1 : i32} : tensor<64x128xf32> -> tensor<64xf32> {
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      tile.reduce.return %c : f32
    }
    ```
    The region combines two partial results; it must be associative and
    commutative (the order of combination is unspecified). Reducing a 1-D tile
    gives a scalar. In the blocked layout a thread first combines the elements
    it holds, then lanes combine through `shfl.sync.bfly`, then warps through a
    shared-memory buffer, from which every thread reads the results it holds in
    the result's layout.

    With N > 1 sources (tiles of one shape; their element types may differ)
    the op reduces them together and has N results, as Triton's `tt.reduce`:
    the region takes 2N scalars, the N accumulated values and then the N new
    ones, and returns N values. The sources go through every step in lockstep
    (N shuffles per butterfly round) and through ONE shared-memory buffer
    holding the N partial arrays, between one pair of `bar.sync`: two sums of
    one row cost one round trip, not two. A (value, index) pair whose region
    keeps the lower index on ties is an argmax.
    ```mlir
    %s:2 = tile.reduce %x, %i {axis = 0 : i32}
        : tensor<128xf32>, tensor<128xi32> -> f32, i32 {
    ^bb0(%v0: f32, %i0: i32, %v1: f32, %i1: i32):
      ...
      tile.reduce.return %v, %i : f32, i32
    }
    ```

    With `broadcast` (one source only) the result has the source's shape and
    every element holds the combination of its line along `axis` (an
    all-reduce: the reduction broadcast back along the axis). It is in the
    source's layout, so no shared memory is needed when the axis lies within
    the warps' lanes and registers. `kiln-tile-rematerialize-broadcasts` forms
    it from `tile.broadcast(tile.expand_dims(tile.reduce))` chains.
    ```mlir
    %m = tile.reduce %x {axis = 1 : i32, broadcast} : tensor<16x128xf32> -> tensor<16x128xf32> {...}
    ```
  }];
  let arguments = (ins Variadic<Tile_Tensor>:$srcs, I32Attr:$axis, UnitAttr:$broadcast);
  let results = (outs Variadic<Tile_Any>:$result);
  let regions = (region SizedRegion<1>:$combine);
  let assemblyFormat = [{
    $srcs attr-dict `:` type($srcs) `->` type($result) $combine
  }];
  let extraClassDeclaration = [{
    /// The first (for N = 1 the only) source.
    mlir::Value getSrc() { return getSrcs().front(); }
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Tile_ReduceReturnOp : Tile_Op<"reduce.return", [Pure, Terminator, HasParent<"ReduceOp">]> {
  let summary = "the combined values of a tile.reduce region";
  let arguments = (ins Variadic<Tile_Scalar>:$result);
  let assemblyFormat = "$result attr-dict `:` type($result)";
}

def Tile_ScanOp : Tile_Op<"scan", [Pure, SingleBlock, SameOperandsAndResultType]> {
  let summary = "inclusive scan (prefix combination) of a tile along one axis";
  let description = [{
    ```mlir
    %c = tile.scan %x {axis = 1 : i32} : tensor<64x128xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tile.scan.return %s : f32
    }
    ```
    Element `i` of each line along `axis` becomes `x[0] + x[1] + ... + x[i]`
    for the combine region `+`, which must be associative; it need not be
    commutative: the earlier partial is always the first argument (the
    grouping of the combinations is unspecified, so float results may differ
    from a sequential scan by rounding). The result has the type of the source.

    In the blocked layout the position along the axis is a bit field of the
    element index split, from low to high, over the run (registers), the
    lanes, the warps and the run number (registers). The lowering scans each
    thread's run sequentially, scans the run totals over the lanes of the axis
    with `shfl.sync.up` (Kogge-Stone, `log2(lanes along the axis)` steps, a lane
    combines only where its position is at least the offset) and takes its
    exclusive prefix with one more `shfl.sync.up`; with several warps along
    the axis the warp totals (broadcast with `shfl.sync.idx`) go to a shared
    buffer [line][run number][warp] between two `bar.sync`, and each thread
    combines the totals of the earlier warps, then of the earlier run numbers
    (registers carry whole earlier segments of the line), and applies this
    prefix to each of its elements.
  }];
  let arguments = (ins Tile_Tensor:$src, I32Attr:$axis);
  let results = (outs Tile_Tensor:$result);
  let regions = (region SizedRegion<1>:$combine);
  let assemblyFormat = [{
    $src attr-dict `:` type($src) $combine
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Tile_ScanReturnOp : Tile_Op<"scan.return", [Pure, Terminator, HasParent<"ScanOp">]> {
  let summary = "the combined value of a tile.scan region";
  let arguments = (ins Tile_Scalar:$result);
  let assemblyFormat = "$result attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Matrix multiply
//===----------------------------------------------------------------------===//

def Tile_DotOp : Tile_Op<"dot", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "tensor-core matrix multiply-accumulate: acc + a @ b in f32";
  let description = [{
    ```mlir
    %d = tile.dot %a, %b, %acc
        : tensor<64x32xbf16> * tensor<32x128xbf16> -> tensor<64x128xf32>
    ```
    `a` is [M, K], `b` is [K, N] of one element type (f16, bf16 or FP8
    e4m3/e5m2), `acc` and the result [M, N] of f32; the products are exact and
    accumulate in f32 (the order of the additions is unspecified). M, N and K
    are powers of two with M >= 16, N >= 8 and K >= 16 (K >= 32 for FP8).

    `maxNumImpreciseAcc` (FP8 operands only; Triton's `max_num_imprecise_acc`)
    bounds how many products of K a tensor-core accumulator may carry before
    it is added to `acc` with plain f32 adds: a power of two N with
    32 <= N <= K (32 is the K of one FP8 MMA instruction). K splits into K / N
    chunks in order; each chunk accumulates from zero on the tensor cores and
    its sum is then added to the running f32 result. Hopper's FP8 wgmma keeps
    fewer than f32's mantissa bits in its accumulator (about 14), so without
    the attribute a wgmma dot may lose precision over long K; the bound
    applies per `tile.dot` (in a K loop, each iteration's dot starts its own
    chunks and the loop carries the f32 sum). Only the wgmma form
    (`kiln-tile-accelerate-dot`, sm_90a) accumulates imprecisely; `mma.sync`
    (FP8 widened to bf16, f32 accumulation per k16 step) is exact already and
    drops the attribute.

    ```mlir
    %d = tile.dot %a, %b, %acc {maxNumImpreciseAcc = 128 : i32}
        : tensor<128x128xf8E4M3FN> * tensor<128x256xf8E4M3FN> -> tensor<128x256xf32>
    ```

    `kiln-tile-accelerate-dot` rewrites every dot for the target's tensor
    cores: `tile.warpgroup_dot[_staged]` (wgmma, sm_90a),
    `tile.tcgen05_dot[_staged]` (sm_100a, sm_103a), and every other dot, on
    any arch, `tile.warp_dot` (mma.sync, FP8 operands widened to bf16); the
    accumulator lives in registers in a `#tile.mma` encoding.
  }];
  let arguments = (ins RankedTensorOf<[F16, BF16, F8E4M3FN, F8E5M2]>:$a,
                       RankedTensorOf<[F16, BF16, F8E4M3FN, F8E5M2]>:$b,
                       RankedTensorOf<[F32]>:$acc,
                       OptionalAttr<I32Attr>:$maxNumImpreciseAcc);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` type($a) `*` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pointers and memory
//===----------------------------------------------------------------------===//

def Tile_IntToPtrOp : Tile_Op<"int_to_ptr", [Pure]> {
  let summary = "a scalar pointer from its 64-bit address";
  let description = [{
    ```mlir
    %base = tile.int_to_ptr %address {divisibility = 16 : i64} : !tile.ptr<i32>
    ```
    The address of memory the kernel did not receive as a pointer argument:
    another process's allocation mapped into this one (a peer's symmetric
    workspace, read from the peer table). `divisibility` is the byte alignment
    the producer of the address guarantees (a power of two); accesses through
    the pointer vectorize up to it.
  }];
  let arguments = (ins I64:$address, I64Attr:$divisibility);
  let results = (outs Tile_Ptr:$result);
  let assemblyFormat = "$address attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def Tile_AddPtrOp : Tile_Op<"addptr", [Pure, AllTypesMatch<["ptr", "result"]>]> {
  let summary = "advance pointers by element offsets";
  let description = [{
    ```mlir
    %q = tile.addptr %p, %off : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
    %s = tile.addptr %base, %n : !tile.ptr<bf16>, i64
    ```
    The offset counts elements of the pointee type (like C pointer arithmetic)
    and is sign-extended to 64 bits. Lowers to `llvm.getelementptr`.
  }];
  let arguments = (ins Tile_PtrLike:$ptr, Tile_IntLike:$offset);
  let results = (outs Tile_PtrLike:$result);
  let assemblyFormat = "$ptr `,` $offset attr-dict `:` type($ptr) `,` type($offset)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_LoadOp : Tile_Op<"load", [
    AttrSizedOperandSegments, MemoryEffects<[MemRead]>,
    TypesMatchWith<"result is the pointee of ptr", "ptr", "result",
                   "::kiln::tile::getPointeeType($_self)">,
    // Optional operands: compare only those present (an operand count would
    // mistake `other` for the mask when the mask is absent).
    TypesMatchWith<"mask is i1 of the shape of ptr", "ptr", "mask",
                   "::kiln::tile::getI1SameShape($_self)",
                   "(!::llvm::cast<::kiln::tile::LoadOp>(&$_op).getMask()) || std::equal_to<>()">,
    TypesMatchWith<"other is the pointee of ptr", "ptr", "other",
                   "::kiln::tile::getPointeeType($_self)",
                   "(!::llvm::cast<::kiln::tile::LoadOp>(&$_op).getOther()) || std::equal_to<>()">]> {
  let summary = "load a tile (or a scalar) from global memory, optionally masked";
  let description = [{
    ```mlir
    %v = tile.load %ptrs : tensor<128x!tile.ptr<f32>>
    %w = tile.load %ptrs, %mask, %other : tensor<128x!tile.ptr<bf16>>
    ```
    Where `mask` is false nothing is read and the result is `other` (undefined
    if `other` is absent). With `sem` (relaxed or acquire) and `scope` (cta,
    gpu, sys) every element is one `ld.<sem>.<scope>.global` (no vectors): an
    acquire load orders this thread's later accesses after it, at that scope. `vec` (set by `kiln-tile-vectorize-access`) is the
    number of consecutive elements per thread read by one vector access: with
    `vec * sizeof(T) == 16` the load becomes `ld.global.v4.b32`.

    Cache hints (Triton's `cache_modifier` and `eviction_policy`; plain
    accesses only, not with `sem`):
    ```mlir
    %v = tile.load %ptrs, %mask, %other cache cg evict evict_first : tensor<128x!tile.ptr<f32>>
    ```
    `cache` is a load cache operator (`ca`, `cg`, `cv`); `evict` is
    `evict_normal`, `evict_first` or `evict_last`. A hinted load is one inline
    `ld.global` per vector access, its mask a predicate inside the asm (no
    branch; `other`, or zero, is moved into the destination first):
    ```
    createpolicy.fractional.L2::evict_first.b64 %policy, 1.0;
    setp.ne.b32 %p, %mask, 0;
    mov.b32 %r0, %other0; ...
    @%p ld.global.L1::evict_first.L2::cache_hint.v4.b32 {%r0, %r1, %r2, %r3}, [%a], %policy;
    ```
    `evict_first`/`evict_last` set the L2 priority through a fractional
    `createpolicy` policy and `.L2::cache_hint` (sm_80 and later), and the L1
    priority with `.L1::evict_*` when there is no `cache` operator (PTX does
    not combine the two; with one the L2 hint alone is kept).
    `evict_normal` is `.L1::evict_normal` (the default priority, no L2 policy).

    `poll_ns` (an ordered load only) makes each element a poll: it is read
    again, with a back-off of `nanosleep` doubling from 32 to 1024 ns, until it
    is non-zero or `poll_ns` nanoseconds of `%globaltimer` have passed since
    the first read; an element still zero at the deadline is returned as zero
    (the caller sees the timeout). Where the mask is false nothing is read and
    nothing waits. Polls of 32- and 64-bit elements are vectorized like plain
    loads (`ld.relaxed.<scope>.global.v4.b32`, read again until all four
    elements are non-zero); narrower elements are polled one at a time. This is the consumer side of a protocol whose producers
    never store zero (the Lamport empty markers of kiln's collectives):
    ```mlir
    %w = tile.load %ptrs, %mask ordered relaxed sys {poll_ns = 1000000000 : i64}
        : tensor<256x!tile.ptr<i32>>
    ```
  }];
  let arguments = (ins Tile_PtrLike:$ptr, Optional<Tile_BoolLike>:$mask,
                       Optional<Tile_Any>:$other, OptionalAttr<I32Attr>:$vec,
                       OptionalAttr<Tile_MemSemantic>:$sem, OptionalAttr<Tile_MemScope>:$scope,
                       OptionalAttr<Tile_CacheModifier>:$cache,
                       OptionalAttr<Tile_EvictionPolicy>:$evict,
                       OptionalAttr<I64Attr>:$poll_ns);
  let results = (outs Tile_Any:$result);
  let assemblyFormat = [{
    $ptr (`,` $mask^)? (`,` $other^)? (`ordered` $sem^ $scope)? (`cache` $cache^)?
    (`evict` $evict^)? attr-dict `:` type($ptr)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$ptr, CArg<"::mlir::Value", "{}">:$mask,
                   CArg<"::mlir::Value", "{}">:$other)>
  ];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tile_StoreOp : Tile_Op<"store", [
    MemoryEffects<[MemWrite]>,
    TypesMatchWith<"value is the pointee of ptr", "ptr", "value",
                   "::kiln::tile::getPointeeType($_self)">,
    TypesMatchWith<"mask is i1 of the shape of ptr", "ptr", "mask",
                   "::kiln::tile::getI1SameShape($_self)",
                   "($_op.getOperands().size() <= 2) || std::equal_to<>()">]> {
  let summary = "store a tile (or a scalar) to global memory, optionally masked";
  let description = [{
    ```mlir
    tile.store %ptrs, %v : tensor<128x!tile.ptr<f32>>
    tile.store %ptrs, %v, %mask : tensor<128x!tile.ptr<bf16>>
    ```
    Elements whose mask is false are not written. When several threads hold the
    same element (a tile smaller than the block) only one of them writes it.
    With `sem` (relaxed or release) and `scope` every element is one
    `st.<sem>.<scope>.global`: a release store orders this thread's earlier
    accesses before it.
    `vec` as for `tile.load`.

    Cache hints as for `tile.load`, with the store cache operators (`wb`,
    `cg`, `cs`, `wt`):
    ```mlir
    tile.store %ptrs, %v, %mask cache cs evict evict_first : tensor<128x!tile.ptr<f32>>
    ```
    A hinted store is one inline `st.global` per vector access, predicated
    inside the asm by the mask (and, for a replicated tile or a scalar, by
    "this thread owns the element"):
    ```
    setp.ne.b32 %p, %mask, 0;
    @%p st.global.cs.L2::cache_hint.v4.b32 [%a], {%r0, %r1, %r2, %r3}, %policy;
    ```
  }];
  let arguments = (ins Tile_PtrLike:$ptr, Tile_Any:$value, Optional<Tile_BoolLike>:$mask,
                       OptionalAttr<I32Attr>:$vec, OptionalAttr<Tile_MemSemantic>:$sem,
                       OptionalAttr<Tile_MemScope>:$scope,
                       OptionalAttr<Tile_CacheModifier>:$cache,
                       OptionalAttr<Tile_EvictionPolicy>:$evict);
  let assemblyFormat = [{
    $ptr `,` $value (`,` $mask^)? (`ordered` $sem^ $scope)? (`cache` $cache^)?
    (`evict` $evict^)? attr-dict `:` type($ptr)
  }];
  let hasCanonicalizer = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor descriptors (TMA)
//===----------------------------------------------------------------------===//

def Tile_DescLoadOp : Tile_Op<"desc_load", [MemoryEffects<[MemRead]>]> {
  let summary = "load a box of a tensor through its TMA descriptor";
  let description = [{
    ```mlir
    %t = tile.desc_load %desc[%row, %col]
        : !tile.tensordesc<tensor<64x128xbf16>> -> tensor<64x128xbf16>
    ```
    Reads the box whose first element sits at `indices` (elements, outermost
    dimension first; i32) into a tile of the descriptor's block type. Elements
    outside the tensor read as zero. On sm_90a and later the lowering issues
    one `cp.async.bulk.tensor` from an elected thread into shared memory,
    completes it on an mbarrier (`arrive.expect_tx`, `try_wait.parity` with the
    phase tracked per barrier), then reads the box into registers.
  }];
  let arguments = (ins Tile_TensorDesc:$desc, Variadic<I32>:$indices);
  let results = (outs RankedTensorOf<[Tile_Float, Tile_Int]>:$result);
  let assemblyFormat = [{
    $desc `[` $indices `]` attr-dict `:` qualified(type($desc)) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$desc, "::mlir::ValueRange":$indices), [{
      auto type = ::llvm::cast<::kiln::tile::TensorDescType>(desc.getType());
      build($_builder, $_state, type.getBlockType(), desc, indices);
    }]>
  ];
  let hasVerifier = 1;
}

def Tile_DescStoreOp : Tile_Op<"desc_store", [MemoryEffects<[MemWrite]>]> {
  let summary = "store a tile into a box of a tensor through its TMA descriptor";
  let description = [{
    ```mlir
    tile.desc_store %desc[%row, %col], %t
        : !tile.tensordesc<tensor<64x128xbf16>>, tensor<64x128xbf16>
    ```
    Writes `value` (of the descriptor's block type) to the box at `indices`;
    elements outside the tensor are not written. The lowering stages the tile
    in shared memory, fences it for the async proxy and issues one
    `cp.async.bulk.tensor` store from an elected thread.
  }];
  let arguments = (ins Tile_TensorDesc:$desc, Variadic<I32>:$indices,
                       RankedTensorOf<[Tile_Float, Tile_Int]>:$value);
  let assemblyFormat = [{
    $desc `[` $indices `]` `,` $value attr-dict `:` qualified(type($desc)) `,` type($value)
  }];
  let hasVerifier = 1;
}

def Tile_BulkLoadOp : Tile_Op<"bulk_load", [MemoryEffects<[MemRead]>]> {
  let summary = "load a contiguous global range into a 1-D tile with a bulk async copy";
  let description = [{
    ```mlir
    %t = tile.bulk_load %ptr : !tile.ptr<f32> -> tensor<1024xf32>
    %r = tile.bulk_load %ptr count %n : !tile.ptr<bf16> -> tensor<8192xbf16>
    ```
    Reads the N elements `ptr[0], ..., ptr[N - 1]` (N the result's size) into
    a 1-D tile, without a tensor descriptor. The byte count `N * sizeof(T)`
    must be a positive multiple of 16 below the 2^20 bytes that one mbarrier
    phase counts (checked here); `ptr` must be 16-byte aligned, which the
    conversion to NVVM proves from the kernel's `tile.divisibility` (or
    reports as an error). i1 tiles are not bulk-loaded (they are bytes in
    memory but not in registers). There is no mask: every element read must
    lie in the allocation.

    With `count` (i32, taken as unsigned and clamped to N) only the elements
    `ptr[0], ..., ptr[count - 1]` are copied and the lanes `>= count` read as
    zero: a row whose length is not a power of two (K3's H = 7168) in a
    power-of-two tile. `count * sizeof(T)` must be a multiple of 16 bytes
    (cp.async.bulk copies whole 16-byte units): a constant count is checked
    here, a runtime one must be proved by the axis analysis at the conversion
    to NVVM (a multiple of `16 / sizeof(T)` elements), like the pointer.

    Lowering (sm_90a, sm_100a, sm_103a; the whole target list has bulk
    copies), like `tile.desc_load`: a 128-byte aligned shared buffer and an
    mbarrier of the op's own (initialized once at kernel entry), `bar.sync`
    (the buffer's earlier readers are done), then one thread elected in warp 0
    issues `mbarrier.arrive.expect_tx` with the byte count and
    `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`, one
    copy per 64 KiB chunk (with `count`, the chunks below `count * sizeof(T)`
    bytes, the last one partial); every thread waits with
    `mbarrier.try_wait.parity` (the phase parity flips per execution, so a
    loop waits for the right phase) and reads its elements from shared memory
    in the tile's layout (up to 16 bytes per `ld.shared`; with `count`, a
    `selp` to zero per access at or past `count`). Runs in uniform control
    flow (it contains `bar.sync`). In a loop marked `tile.num_stages`,
    `kiln-tile-pipeline-loads` turns it into a ring (`tile.ring_issue` with a
    pointer source).
  }];
  let arguments = (ins Tile_Ptr:$ptr, Optional<I32>:$count);
  let results = (outs RankedTensorOf<[Tile_Float, Tile_Int]>:$result);
  let assemblyFormat = [{
    $ptr (`count` $count^)? attr-dict `:` qualified(type($ptr)) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes one mbarrier phase can count (its tx-count is below 2^20).
    static constexpr int64_t kMaxBytes = int64_t(1) << 20;
    /// Bytes of the tile: the result's elements times the element size (the
    /// most the op moves).
    int64_t getBytes() {
      return getType().getNumElements() * getType().getElementTypeBitWidth() / 8;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Atomics
//===----------------------------------------------------------------------===//

def Tile_FenceOp : Tile_Op<"fence", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "a memory fence at a scope";
  let description = [{
    ```mlir
    tile.fence acq_rel, gpu
    ```
    `fence.acq_rel.<scope>` (for acquire, release and acq_rel): orders the
    thread's accesses before it with those after it, as seen by the threads of
    the scope.
  }];
  let arguments = (ins Tile_MemSemantic:$sem, Tile_MemScope:$scope);
  let assemblyFormat = "$sem `,` $scope attr-dict";
  let hasVerifier = 1;
}

def Tile_FenceProxyAsyncOp : Tile_Op<"fence_proxy_async",
                                     [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "orders the generic proxy's accesses with the async proxy's";
  let description = [{
    ```mlir
    tile.fence_proxy_async global
    ```
    `fence.proxy.async.global` (`shared_cta`: `.shared::cta`; `all`: the bare
    `fence.proxy.async`, every state space): the thread's accesses through the
    generic proxy (plain and ordered loads and stores, a peer's stores it has
    acquired) before it are ordered with accesses through the async proxy
    (TMA copies, bulk copies) after it. Where a TMA load reads what plain
    stores wrote -- a collective's consumer reading its peers' pushes through a
    tensor descriptor -- the stores, the synchronization that makes them
    visible, this fence, then the TMA load.
  }];
  let arguments = (ins Tile_ProxySpace:$space);
  let assemblyFormat = "$space attr-dict";
}

def Tile_AtomicRMWOp : Tile_Op<"atomic_rmw", [
    MemoryEffects<[MemRead, MemWrite]>,
    TypesMatchWith<"value is the pointee of ptr", "ptr", "val",
                   "::kiln::tile::getPointeeType($_self)">,
    TypesMatchWith<"result is the pointee of ptr", "ptr", "result",
                   "::kiln::tile::getPointeeType($_self)">,
    TypesMatchWith<"mask is i1 of the shape of ptr", "ptr", "mask",
                   "::kiln::tile::getI1SameShape($_self)",
                   "($_op.getOperands().size() <= 2) || std::equal_to<>()">]> {
  let summary = "atomic read-modify-write of each element, returning the old values";
  let description = [{
    ```mlir
    %old = tile.atomic_rmw add, acq_rel, gpu %ptrs, %v, %mask : tensor<128x!tile.ptr<i32>>
    ```
    Becomes `atom.<sem>.<scope>.<op>` (LLVM `atomicrmw` with the ordering and a
    `syncscope` of "block", "device" or the system). Each element is applied once:
    in a tile smaller than the block only the owning thread acts, and a scalar
    atomic is performed by thread 0 and its result shared with the block. Where
    `mask` is false nothing happens and the result is 0. `fadd` is the float
    add; the other kinds take integers (`max`/`min` signed, `umax`/`umin`
    unsigned).
  }];
  let arguments = (ins Tile_AtomicRMWKind:$kind, Tile_MemSemantic:$sem, Tile_MemScope:$scope,
                       Tile_PtrLike:$ptr, Tile_Any:$val, Optional<Tile_BoolLike>:$mask);
  let results = (outs Tile_Any:$result);
  let assemblyFormat = [{
    $kind `,` $sem `,` $scope $ptr `,` $val (`,` $mask^)? attr-dict `:` type($ptr)
  }];
  let hasVerifier = 1;
}

def Tile_AtomicCASOp : Tile_Op<"atomic_cas", [
    MemoryEffects<[MemRead, MemWrite]>,
    TypesMatchWith<"cmp is the pointee of ptr", "ptr", "cmp",
                   "::kiln::tile::getPointeeType($_self)">,
    TypesMatchWith<"value is the pointee of ptr", "ptr", "val",
                   "::kiln::tile::getPointeeType($_self)">,
    TypesMatchWith<"result is the pointee of ptr", "ptr", "result",
                   "::kiln::tile::getPointeeType($_self)">]> {
  let summary = "atomic compare-and-swap of each element, returning the old values";
  let description = [{
    ```mlir
    %old = tile.atomic_cas acq_rel, sys %flag, %expected, %new : !tile.ptr<i32>
    ```
    Becomes `atom.<sem>.<scope>.cas` (LLVM `cmpxchg`); integers of 32 or 64 bits.
    One thread acts per element, as for `tile.atomic_rmw`.
  }];
  let arguments = (ins Tile_MemSemantic:$sem, Tile_MemScope:$scope, Tile_PtrLike:$ptr,
                       Tile_Any:$cmp, Tile_Any:$val);
  let results = (outs Tile_Any:$result);
  let assemblyFormat = "$sem `,` $scope $ptr `,` $cmp `,` $val attr-dict `:` type($ptr)";
  let hasVerifier = 1;
}

#endif // KILN_DIALECT_TILE_IR_TILEOPS_TD
