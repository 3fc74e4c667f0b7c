//===- Passes.td - kiln conversion passes ------------------*- tablegen -*-===//

#ifndef KILN_CONVERSION_PASSES_TD
#define KILN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTileToNVVM : Pass<"kiln-convert-tile-to-nvvm", "::mlir::ModuleOp"> {
  let summary = "Lower tile kernels to the LLVM and NVVM dialects";
  let description = [{
    Distributes every tile over the threads of the block in the layout chosen
    by `kiln-tile-assign-layout` (a tile becomes an `!llvm.struct` of the
    elements one thread holds) and lowers:
    - `tile.program_id` / `tile.num_programs` to `nvvm.read.ptx.sreg.ctaid.*` /
      `nctaid.*`; `tile.make_range` to per-thread indices from `tid.x`;
    - `tile.splat`, `tile.expand_dims` (free), `tile.broadcast` (through a
      shared-memory buffer and `nvvm.barrier0`);
    - `tile.addptr` to `llvm.getelementptr`; `tile.load` / `tile.store` to
      `llvm.load` / `llvm.store` of `vec`-wide vectors (16 bytes at most), under
      `scf.if` where masked (stores from replicated threads are masked off);
    - `tile.dot` to `ldmatrix` + `mma.sync.aligned.m16n8k16` through shared
      memory (operands and the accumulator staged there, `nvvm.barrier0`);
      a dot whose buffers exceed 48 KiB of static shared memory is an error;
    - elementwise `arith` / `math` on tiles to one scalar op per element, then
      `arith` to LLVM and transcendental `math` ops to libdevice calls
      (`__nv_*`, linked at PTX emission);
    - kernels (`func.func` with `tile.kernel`) to `llvm.func` with `nvvm.kernel`
      and `nvvm.reqntid`;
    - TMA descriptors and rings to `cp.async.bulk.tensor` and mbarriers;
      `tile.bulk_load` to 1-D `cp.async.bulk` copies completed on an mbarrier
      (its pointer must be proved 16-byte aligned by `tile.divisibility`, else
      the pass fails with an error naming the proved alignment);
      `tile.warpgroup_dot` (sm_90a) to `wgmma.mma_async`; the Tensor Memory
      ops and `tile.tcgen05_dot` (sm_100a, sm_103a) to `nvvm.tcgen05.*`.
    `scf.if` ops created for masks are left for `convert-scf-to-cf`.
    Each lowered kernel records what its ops use, for the compiler's metadata
    (see the tile dialect's attributes): `tile.features` (sorted names:
    `elect`, `mbarrier`, `pdl`, `setmaxnreg`, `sys_atomics`, `tcgen05`, `tma`,
    `wgmma`), `tile.pdl` where it uses griddepcontrol, and for a
    warp-specialized kernel `tile.register_split = array<i32: consumer
    threads, consumer registers, producer registers>` (its setmaxnreg counts).
    All kernels of one module must share one layout. With `arch` set, an op
    whose instructions the arch lacks (wgmma off sm_90a, tcgen05 off
    sm_100a/sm_103a) is an error here rather than in instruction selection.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"\"",
           "target arch (sm_90a, sm_100a, sm_103a) whose instructions the ops may use; "
           "empty: not checked">,
    Option<"waitBound", "wait-bound", "uint64_t", /*default=*/"0",
           "debug: an mbarrier wait that has not passed after this many tries prints the "
           "kernel, the op's location, the barrier and the parity, then traps (0: no bound)">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect", "::mlir::cf::ControlFlowDialect"];
}

def DeferClusterWaits : Pass<"kiln-defer-cluster-waits", "::mlir::ModuleOp"> {
  let summary = "Move the wait of each cluster exchange's closing barrier down to the next "
                "op that needs it";
  let description = [{
    Runs before `kiln-convert-tile-to-nvvm`. A `tile.cluster_load`,
    `tile.cluster_gather` or `tile.cluster_sum` ends with a cluster barrier
    after its remote reads (no block may leave, or overwrite its buffer, while
    another still reads it). This pass inserts that barrier's wait
    (`nvvm.cluster.wait`) just before the next op of the exchange's block that
    is or holds a cluster op, or before the block's terminator (the kernel's
    return), and marks the exchange `kiln.cluster_wait_deferred` so that its
    lowering emits the arrive alone. The barrier's latency then overlaps the
    arithmetic after the exchange; every buffer is still read by all blocks
    before any block leaves or runs the next cluster op, and each thread still
    waits once between two arrives. Without this pass each exchange waits where
    it arrives.
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

def AllocateSharedMemory : Pass<"kiln-allocate-shared-memory", "::mlir::ModuleOp"> {
  let summary = "Move shared buffers past 48 KiB into dynamic shared memory, reusing bytes "
                "between buffers not live at once";
  let description = [{
    The lowering gives every shared buffer its own `llvm.mlir.global` in
    address space 3 (static shared memory, at most 48 KiB per block). Where a
    module's buffers need more side by side, this pass lays them out in one
    `extern` array of dynamic shared memory (`__kiln_dynamic_smem`, 1024-byte
    aligned), rewrites every address of a buffer into an offset in it, and
    records the bytes on each kernel as `tile.shared_bytes` (the launch's
    dynamic shared memory). Buffers that fit 48 KiB side by side stay static
    globals, untouched.

    Buffers not live at the same time share bytes. The ops of the module are
    numbered in program order (pre-order); a buffer's live interval runs from
    the first to the last load, store or atomic through its address (the
    `llvm.mlir.addressof` and the values derived from it by GEPs, casts and
    integer arithmetic), where an access inside a region op that may repeat
    (`scf.for`, `scf.while`, any region op but `scf.if`,
    `scf.index_switch` and `scf.execute_region`) counts as the whole of that
    op, and on to the next `bar.sync` of all threads at the top of the
    kernel's body (else to its end), so that a buffer placed on the same bytes
    after it is written only once every thread is done. A buffer is live over
    the whole module when that cannot be bounded: its address reaches any
    other op (TMA and `cp.async.bulk`, `cp.async`, mbarriers, wgmma/tcgen05
    descriptors, DSMEM `mapa` of cluster buffers, inline asm, calls,
    `scf.yield`/branches, a store of the address itself), it is used in more
    than one function, in a device function or in a kernel with unstructured
    control flow, or never accessed. A scratch buffer (`tile.scratch`: the
    staging buffers of a dot and of a layout conversion, which the op that
    owns them writes, reads, waits for and is done with before a CTA
    barrier it emits) is live from its address to the first `bar.sync` of
    all threads after its last use (any use, descriptors included) in the
    block of its address, inside a loop too: the scratch of the ops of one
    loop body shares bytes. Offsets are then assigned first fit,
    largest buffer first (stable): each at the lowest offset of its alignment
    clear of every placed buffer whose interval overlaps its own. More than the 227 KiB a
    block may use, after reuse, is an error naming every buffer with its
    bytes and offset.

    Example: two 32 KiB reduction scratch buffers used one after the other,
    with the reductions' closing `bar.sync` between, both land at offset 0
    and the kernel records 32 KiB instead of 64 KiB.
  }];
  let statistics = [
    Statistic<"numSharedBytesReused", "num-shared-bytes-reused",
              "bytes of shared memory saved by sharing bytes between buffers">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // KILN_CONVERSION_PASSES_TD
