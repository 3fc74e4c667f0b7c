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
      shape;
    - `tile.reduce` along the axis the broadcast restores (`x.sum(1)[:, None]`
      broadcast back to the shape of `x`) becomes `tile.reduce {broadcast}` of
      the same source: an all-reduce in the source's layout, which needs no
      shared memory when the axis lies within the warps (the original reduce
      stays for its other uses).

    Anything else (reductions to other shapes, loads of larger tiles, values carried by loops,
    function arguments) keeps the broadcast, as does a broadcast in an encoding
    (`#tile.mma`: it copies registers already), as does an expression whose cost
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

def TileWarpSpecialize : Pass<"kiln-tile-warp-specialize", "::mlir::func::FuncOp"> {
  let summary = "Fill the ring of a loop marked tile.warp_specialize from a producer warpgroup";
  let description = [{
    For an `scf.for` with `tile.warp_specialize` and `tile.num_stages = N`
    (the DSL's `kl.range(..., num_stages=N, warp_specialize=True)`) at the
    top level of a kernel, every `tile.desc_load` at the top level of its
    body whose coordinates are pure functions of the induction variable and of
    values defined outside the loop (or read a block-table entry under the rule
    of kiln-tile-pipeline-loads, which the producer reads again for its own
    iteration) becomes an N-slot ring (`tile.ring_alloc`,
    the FULL barriers), and one array of N EMPTY barriers is allocated
    (`tile.mbarrier_alloc {per_warp}`, one arrival per consumer warp).
    Both come first in the kernel; everything else of the kernel moves into
    the consumer region of a `tile.warp_specialize`:

      producer: the loop again over the same bounds (and the scalar values
        they and the coordinates need, recomputed), iteration `it`:
        tile.mbarrier_wait %empty[it mod N], ((it / N) mod 2) xor 1
        tile.ring_issue %desc[f(iv)] -> %ring[it mod N] if true {producer}
      consumer: the loop, each load replaced by
        tile.ring_wait_load %ring[it mod N], (it / N) mod 2
        and after the last of them the slot of the previous iteration
        released: tile.mbarrier_arrive %empty[(it + N - 1) mod N] if it > 0

    The first N fills wait for parity 1 of fresh barriers and pass at once;
    fill `it` >= N waits until every consumer thread released fill `it - N`.
    A dot that kiln-tile-accelerate-dot moves onto wgmma reads the slots in
    place; that pass moves the release after its `wgmma.wait_group`. On
    sm_100a/sm_103a a dot it moves onto tcgen05 releases each slot with the
    `tcgen05.commit` of the MMAs that read it instead (the EMPTY barriers
    then expect that one arrival); a dot left on `mma.sync` keeps the
    per-warp releases on either arch.

    Errors (at the loop): an arch other than sm_90a, sm_100a or sm_103a
    (setmaxnreg), fewer than 2 stages, a loop not at the kernel's top level
    or in a kernel with another specialized loop, no descriptor load the
    ring takes, a producer value that is not a pure scalar computation,
    rings that do not fit the shared memory with 2 stages (a note at each
    rejected load says why). A descriptor load the producer does not take,
    beside others it does, gets a warning. The attributes are removed.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"\"",
           "target arch; warp specialization needs sm_90a, sm_100a or sm_103a">
  ];
  let statistics = [
    Statistic<"numSpecialized", "num-specialized", "loops split into producer and consumers">
  ];
  let dependentDialects = ["::kiln::tile::TileDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TilePipelineLoads : Pass<"kiln-tile-pipeline-loads", "::mlir::func::FuncOp"> {
  let summary = "Software-pipeline the descriptor, bulk and gather loads of loops marked tile.num_stages";
  let description = [{
    For an `scf.for` with `tile.num_stages = N` (the DSL's
    `kl.range(..., num_stages=N)`), every `tile.desc_load` at the top level of
    its body whose coordinates are pure functions of the induction variable and
    of values defined outside the loop, and every `tile.bulk_load` whose
    pointer and count are such functions, becomes an N-slot ring
    (`tile.ring_alloc`): before the loop the loads of the first N - 1
    iterations are issued (`tile.ring_issue`, each under `iv < ub`); in
    iteration `it` (a counter the loop now carries) the load waits for slot
    `it mod N` with phase parity `(it / N) mod 2` (`tile.ring_wait_load`) and
    right after it the load of iteration `it + N - 1` is issued into slot
    `(it + N - 1) mod N`, the slot read in the previous iteration (the issue
    starts with a CTA barrier, so every thread is done with it). Loads whose
    rings would not fit the 227 KiB of shared memory beside the kernel's
    other TMA boxes get fewer stages (at least 2, else they stay as they
    are). A bulk load's ring is filled by `tile.ring_issue` from its pointer
    (the count recomputed for the iteration issued) and read by
    `tile.ring_wait_load` with the count of the current iteration (the lanes
    past it read as zero). The attribute is removed.

    The coordinates (pointer, count) may also depend on scalar `tile.load`s
    in the body, a paged cache's block-table entry
    (`row = load(table + iv / 64) * 64 + iv mod 64`), when the value read is
    the same whichever iteration reads it: a plain load (no `sem`, no
    `poll_ns`) of one integer or float, its pointer derived from one kernel
    argument through which no `tile.store`, `tile.atomic_rmw`,
    `tile.atomic_cas` or `tile.desc_store` of the kernel writes, every such
    write through pointers derived from kernel arguments only (distinct
    pointer arguments are assumed not to overlap where the kernel writes),
    and no `tile.pdl_wait`, `tile.fence`, ordered load or store, or atomic in
    the loop body. Such a load is recomputed for the iteration issued, masked
    by its `iv < ub` (a masked-off read yields its `other`, or zero), so that
    no iteration past the end reads the table; the slice is recomputed once
    for all the loads that share it.

    A load of a marked loop that is not pipelined (a loop-carried
    coordinate, a read of memory the kernel writes, an op with regions, rings
    beyond the shared memory) gets a warning naming why, with a note at the
    op that stops it; the load stays synchronous.

    In a loop whose body holds a `tile.dot` (and that is not warp-specialized),
    a `tile.load` of a tensor of pointers is a gather: without `sem`,
    `poll_ns` or cache hints, its `other` absent or zero, its pointers and
    mask pure functions of the induction variable, where the slice may also
    hold loads of tiles of table entries (a key block's pages) under the rule
    above. Its ring is filled by `tile.ring_issue` of the recomputed pointers
    and mask, issued before the wait (every thread copies its elements), and
    read by `tile.ring_wait_load`. A later load of the same pointers and mask
    in the body (equal ops of equal operands: the pass runs before CSE) reads
    the slot again (`tile.ring_wait_load {again}`), one ring for both. A
    gather that another ring's slice reads (a table) stays a load, as does one
    whose pointers are not such functions (without a warning: gathers are not
    asked for by name).
  }];
  let statistics = [
    Statistic<"numPipelined", "num-pipelined", "descriptor and bulk loads turned into rings">
  ];
  let dependentDialects = ["::kiln::tile::TileDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TileVerifyAsync : Pass<"kiln-tile-verify-async", "::mlir::func::FuncOp"> {
  let summary = "Check a kernel's TMA ring and mbarrier protocol by running it on a model";
  let description = [{
    Proves, for the IR that kiln-tile-pipeline-loads,
    kiln-tile-warp-specialize and kiln-tile-accelerate-dot produce, that the
    kernel's asynchronous copies and MMAs follow their protocol. The pass runs
    the kernel's scalar control flow (`scf.for`, `scf.if`, integer `arith`)
    with its integer arguments set to each of 0, 1, 3, 17, 257 and 1100 (each
    rounded up to the `tile.divisibility` it promises; program ids 0, one
    program), at most 2^20 ops a sample, and feeds the async ops it meets to
    a model:

    - a ring slot counts its fills (`tile.ring_issue`, each completing one
      phase of the slot's barrier, predicated or not) and its waits; the n-th
      wait of a slot (`tile.ring_wait`, `tile.ring_wait_load`) waits for fill
      n with parity n mod 2 and blocks until that fill is issued;
    - an mbarrier (`tile.mbarrier_alloc`) counts completed phases:
      `tile.mbarrier_arrive` and the commit of a `tile.tcgen05_dot` complete
      one; `tile.mbarrier_wait` passes when the current phase's parity is not
      the waited one (the hardware's rule) and observes the phase before it;
    - an MMA reading slots in place (`tile.warpgroup_dot` until a
      `tile.warpgroup_dot_wait` leaves fewer in flight, `tile.tcgen05_dot`
      until a wait observes its commit's phase) keeps them in use;
    - a thread knows a slot's fills consumed through its own waits, or
      through a wait that observes a phase another thread's arrival (or
      commit) completed after consuming them. A `tile.ring_issue` refills a
      slot only when the issuing thread knows every earlier fill of the slot
      consumed.

    A `tile.warp_specialize` runs as two threads, the producer whenever it can
    go on (the schedule that refills earliest), the consumer when it blocks.
    Errors, each at the op: a wait with the wrong parity, a refill of a slot
    not known consumed (no wait for its empty barrier, an arrival before the
    MMA that reads the slot is done, an early overwrite), an MMA reading a
    slot before its fill is waited for, a bulk copy's byte count (the
    `expect_tx` of its barrier) that is not a multiple of 16 or overruns the
    slot, a slot index outside the ring, a kernel that can end with a copy in
    flight, and a wait that no thread can complete (a missing arrival or
    issue: the kernel would hang). A kernel whose slot indices, parities,
    predicates or loop bounds do not follow from its integer arguments (a
    `scf.while`, indices loaded from memory), or whose slot index, parity or
    predicate is itself a kernel argument (the caller's protocol), is left
    unchecked (`num-unchecked`; `report-unchecked` says why in a remark).
  }];
  let options = [
    Option<"reportUnchecked", "report-unchecked", "bool", /*default=*/"false",
           "emit a remark for each argument sample the model could not run, with the reason">
  ];
  let statistics = [
    Statistic<"numChecked", "num-checked", "kernels whose protocol was checked">,
    Statistic<"numUnchecked", "num-unchecked",
              "argument samples the model could not run (unknown control flow or indices)">
  ];
  let dependentDialects = ["::kiln::tile::TileDialect"];
}

def TileAccelerateDot : Pass<"kiln-tile-accelerate-dot", "::mlir::func::FuncOp"> {
  let summary = "Run dots on wgmma (sm_90a) or, pipelined dots of TMA ring slots, tcgen05 (sm_100a, sm_103a)";
  let description = [{
    Rewrites the K loop of a pipelined GEMM

      scf.for ... iter_args(%acc = %init) {
        %a = tile.ring_wait_load %ra[%s], %p     // [M, K] box
        %b = tile.ring_wait_load %rb[%s], %p     // [N, K] box
        %bt = tile.trans %b {order = [1, 0]}
        %d = tile.dot %a, %bt, %acc
        tile.ring_issue ... -> %ra / %rb          // the next fill of the slots
        scf.yield %d
      }

    so that the operands are read in place from the ring slots
    (`tile.ring_wait`, no register copy) by an asynchronous tensor-core MMA,
    and the loop's `tile.ring_issue` ops into those rings move after the
    wait that makes their slots free. Applies when both boxes are bf16/f16
    with K a multiple of 64 or FP8 (e4m3/e5m2) with K a multiple of 128
    (rows of whole 128-byte spans: one, or the chunks of a wide box; FP8 on
    sm_90a only) loaded through
    descriptors with the 128-byte swizzle, the accumulator is f32 in the blocked layout, read only by the
    dot and replaced by its result, the ring loads have no other users, and
    the kernel has whole warpgroups (4, 8 or 16 warps); other dots go to
    `mma.sync` (on every arch, or none; see the end).

    On sm_90a B may also be MN-major: `tile.dot %a, %b, %acc` with `%b` the
    [K, N] box itself (no `tile.trans`), bf16/f16 with N a multiple of 64
    (one 128-byte swizzled row per K, or a wide box's 64-column chunks); the
    `tile.warpgroup_dot` then carries `bMnMajor`. FP8, an N that is not a
    multiple of 64, and sm_100a/sm_103a keep `mma.sync` for this form.
    `mn-major-b=false` turns this match off (the form then keeps `mma.sync`).

    On sm_90a a dot whose M has fewer 64-row slabs than the kernel has
    warpgroups (a [64, N] dot on 8 warps) runs on wgmma too, the warpgroups
    past the slabs splitting N (`#tile.mma` version 3 with `warpsN`), an A
    they hold apart staged once (`tile.stage` of the mma tile).
    `split-n=false` turns this off (such dots then keep `mma.sync`).

    sm_90a (wgmma): the accumulator lives in registers in the wgmma layout
    (`#tile.mma` version 3) across the loop: `tile.warpgroup_dot`,
    `tile.warpgroup_dot_wait {pending = 1}` (the previous iteration's dot is
    done) in the loop and `{pending = 0}` after it. Needs M a multiple of 64
    per warpgroup, N a multiple of 8 up to 256; any initial value. A dot
    with `maxNumImpreciseAcc` (FP8) keeps it on its `tile.warpgroup_dot`,
    which then waits for its own wgmma chunks and adds them to the
    accumulator in f32; the wait after it is `{pending = 0}`. The dots left
    on `mma.sync` drop the attribute (f32 accumulation per k16 step).

    A dot that reads a slot (or a staged A) in place is waited for by
    `{pending = 0}`, moved down to its result's first reader past the
    side-effect-free ops and the other warpgroup dots, which then issue
    back to back (`pending` = the dots passed); where that reader is the
    accumulator of the next dot of the same wgmma shape (a sum of dots, MLA's
    score over its boxes), the wait goes, that dot's wait covering both.

    sm_100a, sm_103a (tcgen05): the accumulator lives in Tensor Memory
    (`tile.tmem_alloc` before the loop), and the loop carries, in its place,
    the number n of dots issued (from 0). Dot n is a `tile.tcgen05_dot`
    (one elected thread issues tcgen05.mma and commits it to barrier n mod 2
    of a `tile.mbarrier_alloc` pair) that starts from zero when n = 0; then
    `tile.mbarrier_wait` waits for dot n - 1 (at n = 0 a fresh barrier's
    previous phase, which passes at once) and the slots are refilled. After
    the loop the last dot is waited for the same way, `tile.tmem_load` reads
    the accumulator into the `#tile.mma` version 5 layout (thread t holds row
    t mod 128), an `arith.select` gives zero when the loop ran no iteration,
    and `tile.tmem_dealloc` frees Tensor Memory. Needs M = 128, N a multiple
    of 16 from 16 to 256, an initial value of zero (the first MMA does not
    read TMEM), the loop at the kernel's top level and refilling the rings
    (the CTA barrier of `tile.ring_issue` keeps the threads within one
    iteration of each other: no thread waits on a barrier two phases ahead
    of it); only the first such
    dot of a kernel is rewritten (the dealloc gives up the block's permit to
    allocate Tensor Memory).

    sm_100a, sm_103a, warp-specialized (the consumer loop of
    kiln-tile-warp-specialize, at the top level of the consumer region, with
    its one `tile.mbarrier_arrive` release on N per-warp EMPTY barriers, N
    the rings' stages): the same Tensor Memory accumulator and dot count, but
    dot n commits to EMPTY[n mod N], the slot it reads: the producer refills
    the slot once these MMAs are done. The release is erased and the EMPTY
    barriers expect that one arrival (no `per_warp`). Only warp 0, whose
    elected lane issues, waits for the full slots (`tile.ring_wait
    {issuer}`); the consumer loop waits for no dot. After the loop a
    `tile.barrier` (warp 0 is past its last wait) and every consumer thread
    waits for EMPTY[(n + N - 1) mod N] with parity (((n + N - 1) / N) mod 2)
    xor 1 (the last dot's commit; at n = 0 a fresh barrier's previous
    phase), then the accumulator is read as above. WarpSpecialize.cpp's
    header and AccelerateDot.cpp argue why no wait sees a barrier two phases
    away.

    sm_90a, any other dot of bf16/f16 register tiles (operands that are not
    ring slots: loaded once before a loop, computed, converted), with an f32
    accumulator in the blocked layout, M a multiple of 64 per warpgroup, K
    and N multiples of 64, N up to 256: `tile.warpgroup_dot_staged`, which
    stores the operands into shared memory in the layouts wgmma reads and
    waits for its wgmmas. An accumulator carried by the dot's loop (read only
    by the dot, replaced by its result) lives in the wgmma registers across
    the loop, as above; otherwise it is converted in and out around the dot.

    sm_90a, the same with `a` converted from a tile in the accumulator's
    encoding (`p.to(bf16)` of a softmax computed in the mma layout, see
    below), K a multiple of 16: `a` is read from registers (the accumulator
    fragment is wgmma's A fragment), only `b` is staged.

    Either way the result is converted back to the blocked layout
    (`tile.convert_layout`), and the conversion moves past what can run
    where the accumulator is: elementwise ops that do not widen it (their
    other operands conversions from the same layout, splat constants,
    `tile.splat`s, iteration arguments the loop computes from them, index
    arithmetic rebuilt in the layout, or the `tile.broadcast` of a blocked
    [1, N] or [M, 1] vector, made into the layout where a thread holds at
    most half as many of the vector's elements as of the tile's: a bias
    row in the wgmma layout, a per-row scale in either, but not a row in
    tcgen05's, whose thread holds a whole row),
    `tile.desc_store` (which stores any layout), the reduction of an mma
    tile's rows (axis 1, into its `#tile.slice`), `tile.expand_dims` of that
    slice and `tile.broadcast` of the [M, 1] result back to [M, N]; a value
    an scf.for yields is then carried in that layout (converted in before
    the loop and out after it). Attention's inner loop

      s = q kᵀ;  m' = max(m, rowmax(s));  p = exp2(s c - m'[:, None])
      l' = l α + rowsum(p);  acc' = acc α[:, None] + p v

    thus keeps s, p and acc in the wgmma registers and m, l in the slice,
    with no layout conversion in the loop.

    Every dot that none of the above takes (on any arch, or none; the
    reason is recorded in `tile.dots`) becomes a `tile.warp_dot` (mma.sync
    m16n8k16), its FP8 operands widened to bf16 (`arith.extf`: exact), a
    transposed B (`tile.trans` [1, 0] of a blocked tile) read K-major from
    the tile itself, an `a` that the dot's loop does not compute staged once
    after its definition (`tile.stage`, M a multiple of 8 and K of 64, while
    the kernel's tiles staged so for mma.sync stay within 32 KiB: they are
    live across the loop), an `a` converted from an mma encoding taken from
    those registers, a bf16/f16 `b` that is a ring slot (a 2-D box of rows of
    whole 128-byte spans, of a ring of gathers, which becomes `swizzled`, or
    of TMA boxes with the 128-byte swizzle; no refill of the ring between
    the load and the dot) read in place by `ldmatrix` (a `tile.ring_wait` in
    place of the slot's load once no other op reads the load; several dots
    may read one slot so: attention's keys and values), its accumulator in
    the `#tile.mma` encoding of version 2
    and kept there as above (carried across its loop, the conversion moved
    past what can run in the layout). The warp tiling: where the result
    feeds another dot's A or a row reduction, or M has 16 rows for every
    warp, the warps go along M first (warpsN = 1 once M >= 16 warps: whole
    rows per warp, so the row reductions stay in registers and an A
    converted from the accumulator's encoding is read from its registers);
    otherwise they split the 16 x 8 tiles so that each warp's share of rows
    and columns balances (Triton's warpsPerTileV2). Needs the kernel's
    `tile.threads_per_block`.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"\"",
           "target arch (sm_90a: wgmma; sm_100a, sm_103a: tcgen05)">,
    Option<"mnMajorB", "mn-major-b", "bool", /*default=*/"true",
           "on sm_90a, also run dots whose B is a [K, 64] ring slot (N-major) on wgmma">,
    Option<"splitN", "split-n", "bool", /*default=*/"true",
           "on sm_90a, run dots of fewer 64-row slabs than warpgroups on wgmma, the "
           "warpgroups past them splitting N">
  ];
  let statistics = [
    Statistic<"numAccelerated", "num-accelerated", "dots moved to wgmma or tcgen05">
  ];
  let dependentDialects = ["::kiln::tile::TileDialect", "::mlir::arith::ArithDialect"];
}

def TileSplitLoops : Pass<"kiln-tile-split-loops", "::mlir::func::FuncOp"> {
  let summary = "Split a loop at the iteration where a branch of its body starts to run";
  let description = [{
    A loop whose body branches on its induction variable against a bound the
    loop does not compute (`scf.if` on `arith.cmpi sge %iv, %bound`, or `slt`,
    or the same with the operands swapped) becomes two loops in sequence: the
    iterations before the first `%iv >= %bound`, where the condition folds to
    false, then the others, where it folds to true, the first's results the
    second's initial values:

    ```mlir
    scf.for %n = %lb to %ub step %s iter_args(...) {
      %masked = arith.cmpi sge, %n, %bound : i32
      %x = scf.if %masked -> ... { <mask> } else { ... }
    ```

    runs as `scf.for %n = %lb to %split` without the mask, then `scf.for %n =
    %split to %ub` with it, `%split = min(%lb + ceildiv(max(%bound - %lb, 0),
    %s) * %s, %ub)`. Every thread executes the same ops in the same order as
    before (the same iterations, each the same branch), so a protocol the loop
    follows (ring waits and releases, a producer warpgroup's phases, the
    consumer warpgroups' turns) holds as it did. What it buys: the loop that
    runs most iterations has no branch in its body, which the assembler
    otherwise schedules around (attention's diagonal mask in its key loop cost
    the H200 7 % of the causal forward's time until it was split off). One
    condition a loop, on the loops of the input (not the ones it creates);
    i32 or index induction variables. Runs after kiln-tile-accelerate-dot, so
    that both loops read the ring and keep the accumulator as the one loop did.
  }];
  let statistics = [
    Statistic<"numSplit", "num-split", "loops split in two">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"];
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
