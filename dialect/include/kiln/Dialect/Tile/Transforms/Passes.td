//===- Passes.td - tile dialect passes ---------------------*- tablegen -*-===//

#ifndef KILN_DIALECT_TILE_TRANSFORMS_PASSES_TD
#define KILN_DIALECT_TILE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TileAssignLayout : Pass<"kiln-tile-assign-layout", "::mlir::func::FuncOp"> {
  let summary = "Choose the blocked layout that distributes every tile over the threads";
  let description = [{
    Every tile of a kernel is distributed in the same blocked layout: in the
    row-major order of its elements, each thread owns runs of
    `tile.elems_per_thread` consecutive elements, thread `t` the `t`-th run,
    wrapping around the block (`tile.threads_per_block` threads) as often as the
    tile needs. A tile smaller than one run per thread is replicated.

    `elems_per_thread` is chosen so that one run of the narrowest element type
    the kernel loads or stores fills a 16-byte access. `threads_per_block` is
    `32 * tile.num_warps` (option `num-warps` where the kernel has none).
    Tiles must have power-of-two sizes.
  }];
  let options = [
    Option<"numWarps", "num-warps", "int", /*default=*/"4",
           "warps per program where the kernel carries no tile.num_warps">
  ];
  let dependentDialects = ["::kiln::tile::TileDialect"];
}

def TileRematerializeBroadcasts
    : Pass<"kiln-tile-rematerialize-broadcasts", "::mlir::func::FuncOp"> {
  let summary = "Recompute cheap broadcast sources on the broadcast's shape";
  let description = [{
    A `tile.broadcast` moves its source through shared memory between two
    `bar.sync`. Most broadcasts of a kernel are of index arithmetic
    (`rows[:, None] * stride + cols[None, :]`), which every thread can compute
    for the elements it holds instead. This pass replaces such a broadcast by
    the same expression built on the result's shape, from the leaves up:

    - `tile.splat` and splat `arith.constant` become splats of the new shape;
    - `tile.make_range` (through `tile.expand_dims`) becomes `tile.iota` along
      the dimension it ends up in, or a constant where it has size 1;
    - `tile.expand_dims` and inner `tile.broadcast` only change which result
      dimension a source dimension maps to;
    - elementwise arith/math ops without memory effects, `tile.addptr` and
      `tile.load` (`rematerialize-loads`, of tiles of at most one run per
      thread, whose pointers, mask and `other` qualify) are cloned on the new
      shape.

    Anything else (reductions, loads of larger tiles, values carried by loops,
    function arguments) keeps the broadcast, as does an expression whose cost
    (1 per op, 8 per division, remainder, math function or load) exceeds
    `max-cost`. Each clone is placed right after the op it copies, so a load
    reads memory at the same point as the original. The lowering computes
    equal operands once per thread, so a rematerialized value costs one
    computation per distinct element a thread holds (e.g. one per row of
    index arithmetic whose rows have a run of elements each).

    Runs after `kiln-tile-assign-layout`, whose attributes bound the loads it
    may copy (without them loads are not copied); the layout does not depend
    on the shapes this pass changes.
  }];
  let options = [
    Option<"rematerializeLoads", "rematerialize-loads", "bool", /*default=*/"true",
           "copy loads of tiles of at most one run per thread (needs the layout)">,
    Option<"maxCost", "max-cost", "int", /*default=*/"64",
           "largest cost of an expression to recompute per element">
  ];
  let statistics = [
    Statistic<"numRematerialized", "num-rematerialized", "broadcasts replaced by recomputation">,
    Statistic<"numKept", "num-kept", "broadcasts left to shared memory">
  ];
  let dependentDialects = ["::kiln::tile::TileDialect", "::mlir::arith::ArithDialect"];
}

def TilePipelineLoads : Pass<"kiln-tile-pipeline-loads", "::mlir::func::FuncOp"> {
  let summary = "Software-pipeline the descriptor loads of loops marked tile.num_stages";
  let description = [{
    For an `scf.for` with `tile.num_stages = N` (the DSL's
    `kl.range(..., num_stages=N)`), every `tile.desc_load` at the top level of
    its body whose coordinates are pure functions of the induction variable and
    of values defined outside the loop becomes an N-slot TMA ring
    (`tile.ring_alloc`): before the loop the loads of the first N - 1
    iterations are issued (`tile.ring_issue`, each under `iv < ub`); in
    iteration `it` (a counter the loop now carries) the load waits for slot
    `it mod N` with phase parity `(it / N) mod 2` (`tile.ring_wait_load`) and
    right after it the load of iteration `it + N - 1` is issued into slot
    `(it + N - 1) mod N`, the slot read in the previous iteration (the issue
    starts with a CTA barrier, so every thread is done with it). Loads whose
    rings would not fit the 227 KiB of shared memory beside the kernel's
    other TMA boxes get fewer stages (at least 2, else they stay as they
    are). The attribute is removed.
  }];
  let statistics = [
    Statistic<"numPipelined", "num-pipelined", "descriptor loads turned into rings">
  ];
  let dependentDialects = ["::kiln::tile::TileDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TileAccelerateDot : Pass<"kiln-tile-accelerate-dot", "::mlir::func::FuncOp"> {
  let summary = "Run pipelined dots of TMA ring slots on wgmma (sm_90a)";
  let description = [{
    On sm_90a, rewrites the K loop of a pipelined GEMM

      scf.for ... iter_args(%acc = %init) {
        %a = tile.ring_wait_load %ra[%s], %p     // [M, K] box
        %b = tile.ring_wait_load %rb[%s], %p     // [N, K] box
        %bt = tile.trans %b {order = [1, 0]}
        %d = tile.dot %a, %bt, %acc
        tile.ring_issue ... -> %ra / %rb          // the next fill of the slots
        scf.yield %d
      }

    so that the accumulator lives in the wgmma layout (`#tile.mma`) across the
    loop and the operands are read in place from the ring slots:
    `tile.ring_wait` (no register copy), `tile.warpgroup_dot` (asynchronous),
    `tile.warpgroup_dot_wait {pending = 1}` (the previous iteration's dot is
    done, so its slots may be refilled: the loop's `tile.ring_issue` ops move
    after the wait), and `tile.warpgroup_dot_wait {pending = 0}` after the
    loop. The loop's result is converted back to the blocked layout
    (`tile.convert_layout`) after elementwise ops that narrow it and not at all
    for `tile.desc_store`, which stores any layout. Applies when both boxes are
    bf16/f16 with K = 64 or FP8 with K = 128 (128-byte rows) loaded through
    descriptors with the 128-byte swizzle, M is a multiple of 64 per
    warpgroup, N a multiple of 8 up to 256, and the ring loads have no other
    users; other dots keep `mma.sync`, and their FP8 operands are widened to
    bf16 (`arith.extf`, exact) on every arch.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"\"",
           "target arch (sm_90a, sm_100a, sm_103a); wgmma only on sm_90a">
  ];
  let statistics = [
    Statistic<"numAccelerated", "num-accelerated", "dots moved to wgmma">
  ];
  let dependentDialects = ["::kiln::tile::TileDialect"];
}

def TileVectorizeAccess : Pass<"kiln-tile-vectorize-access", "::mlir::func::FuncOp"> {
  let summary = "Set the vector width of every tile.load and tile.store";
  let description = [{
    Runs the axis analysis (contiguity, divisibility and constancy of integer
    and pointer tiles along their last dimension, seeded by `tile.divisibility`
    on kernel arguments) and sets `vec` on each memory access: the largest power
    of two of consecutive elements that one thread may move in a single access,
    bounded by the thread's run in the layout, the pointers' contiguity and
    alignment, the mask's constancy and 16 bytes. Needs
    `kiln-tile-assign-layout` first.
  }];
  let statistics = [
    Statistic<"numVectorized", "num-vectorized", "accesses wider than one element">,
    Statistic<"numAccesses", "num-accesses", "memory accesses seen">
  ];
  let dependentDialects = ["::kiln::tile::TileDialect"];
}

#endif // KILN_DIALECT_TILE_TRANSFORMS_PASSES_TD
