//===- TileDialect.td - tile dialect definition ------------*- tablegen -*-===//
//
// The tile dialect: block-level SPMD programs over ranked tensors ("tiles").
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_TILE_IR_TILEDIALECT_TD
#define KILN_DIALECT_TILE_IR_TILEDIALECT_TD

include "mlir/IR/OpBase.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::kiln::tile";
  let summary = "Block-level tile programs for GPU kernels";
  let description = [{
    A kernel in the tile dialect is a `func.func` carrying the unit attribute
    `tile.kernel`; it describes what ONE program instance (a thread block) does
    with whole tiles — ranked tensors whose shapes are powers of two. Elementwise
    math uses `arith` and `math` on those tensors; this dialect adds what they
    lack: program ids, index ranges, shape changes, pointers, pointer arithmetic
    and masked memory accesses.

    Discardable attributes understood by the dialect:
    - `tile.kernel` (unit, on `func.func`): the function is a GPU entry point.
    - `tile.num_warps` (i32, on kernels): warps per program instance (1..32,
      power of two).
    - `tile.cluster_dims` (`array<i32: x, y, z>`, on kernels): the kernel runs in
      thread-block clusters of this shape (`.explicitcluster` +
      `.reqnctapercluster x, y, z`; the launch passes the same shape). Each entry
      is positive and their product at most 16 (8 is the portable cluster size;
      16 is launched with the non-portable opt-in).
      Absent: no clusters (each block its own 1x1x1 cluster).
    - `tile.divisibility` (i32, on kernel arguments): the argument (an integer,
      or a pointer's byte address) is a multiple of this power of two.
    - `tile.threads_per_block`, `tile.elems_per_thread` (i32, on kernels): the
      distributed layout chosen by `kiln-tile-assign-layout`.
    - `tile.shared_bytes` (i32, on lowered kernels): the dynamic shared memory
      a launch needs (`kiln-allocate-shared-memory`).
    - `tile.pdl` (unit, on kernels): the kernel synchronizes with the grids
      before and after it in the stream (`tile.pdl_wait`,
      `tile.pdl_launch_dependents`; `griddepcontrol` once lowered) and is
      launched with programmatic stream serialization. Set on `func.func` by
      the frontend that builds those ops, on the lowered kernel by
      `kiln-convert-tile-to-nvvm` from the `griddepcontrol` it emits.
    - `tile.features` (array of strings, sorted, on lowered kernels): the
      hardware features the kernel's instructions use, recorded by
      `kiln-convert-tile-to-nvvm` from its ops: `elect` (elect.sync),
      `mbarrier`, `pdl` (griddepcontrol), `setmaxnreg`, `sys_atomics` (atomics
      at system scope), `tcgen05`, `tma` (cp.async.bulk.tensor), `wgmma`.
      Absent: none of them.
    - `tile.register_split` (`array<i32: consumer threads, consumer registers,
      producer registers>`, on lowered warp-specialized kernels): the
      registers a thread each side of the warp specialization takes
      (`setmaxnreg.inc` for the consumers, `.dec` for the producer warpgroup
      that runs the rest of the block's threads), recorded by
      `kiln-convert-tile-to-nvvm`.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  // Folders (splat / broadcast of constants) produce attributes; they become
  // arith.constant.
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::func::FuncDialect"];
  let extraClassDeclaration = [{
    void registerTypes();
    void registerAttributes();
    static constexpr ::llvm::StringLiteral getKernelAttrName() { return "tile.kernel"; }
    static constexpr ::llvm::StringLiteral getNumWarpsAttrName() { return "tile.num_warps"; }
    static constexpr ::llvm::StringLiteral getDivisibilityAttrName() { return "tile.divisibility"; }
    static constexpr ::llvm::StringLiteral getClusterDimsAttrName() { return "tile.cluster_dims"; }
    /// The most registers a thread of the kernel may use (PTX `.maxnreg`).
    static constexpr ::llvm::StringLiteral getMaxnregAttrName() { return "tile.maxnreg"; }
    static constexpr ::llvm::StringLiteral getThreadsPerBlockAttrName() {
      return "tile.threads_per_block";
    }
    static constexpr ::llvm::StringLiteral getElemsPerThreadAttrName() {
      return "tile.elems_per_thread";
    }
    /// On kernels (llvm.func): dynamic shared memory per block, bytes.
    static constexpr ::llvm::StringLiteral getSharedBytesAttrName() { return "tile.shared_bytes"; }
    /// On kernels (llvm.func): the shared-memory plan, one string a buffer
    /// (kiln-allocate-shared-memory).
    static constexpr ::llvm::StringLiteral getSharedPlanAttrName() { return "tile.shared_plan"; }
    /// On shared-memory buffers (llvm.mlir.global in address space 3): the
    /// buffer is scratch of one op's lowering, which writes it, reads it
    /// (waiting for any asynchronous reader) and is done with it before a
    /// CTA barrier in its block (kiln-allocate-shared-memory).
    static constexpr ::llvm::StringLiteral getScratchAttrName() { return "tile.scratch"; }
    /// On shared-memory buffers (llvm.mlir.global in address space 3): every
    /// asynchronous access to the buffer (TMA, bulk copies, MMAs reading it)
    /// is complete at the first CTA barrier after the last use of its address:
    /// a TMA box (its own waits), a released ring (tile.ring_release)
    /// (kiln-allocate-shared-memory).
    static constexpr ::llvm::StringLiteral getDrainedAttrName() { return "tile.drained"; }
    /// On the scf.if that runs a warp-specialized kernel's consumer warps
    /// (lowered tile.warp_specialize): their thread count, the named barrier
    /// 1 of which its block's CTA barriers became.
    static constexpr ::llvm::StringLiteral getConsumerThreadsAttrName() {
      return "tile.consumer_threads";
    }
    /// On kernels (func.func, llvm.func): launched with programmatic stream
    /// serialization (the kernel uses griddepcontrol).
    static constexpr ::llvm::StringLiteral getPdlAttrName() { return "tile.pdl"; }
    /// On kernels (func.func, llvm.func): each dot's line and the unit that
    /// runs it, with the reason where that is mma.sync (kiln-tile-accelerate-dot).
    static constexpr ::llvm::StringLiteral getDotsAttrName() { return "tile.dots"; }
    /// On kernels (llvm.func): the hardware features the code uses, sorted.
    static constexpr ::llvm::StringLiteral getFeaturesAttrName() { return "tile.features"; }
    /// The names `tile.features` may hold, sorted (the bundle manifest's
    /// feature names, docs/bundle-format.md, but vector16, which the PTX
    /// backend decides).
    static ::llvm::ArrayRef<::llvm::StringLiteral> getKernelFeatures();
    /// On warp-specialized kernels (llvm.func): array<i32: consumer threads,
    /// consumer registers, producer registers>.
    static constexpr ::llvm::StringLiteral getRegisterSplitAttrName() {
      return "tile.register_split";
    }
    /// On kernels (func.func): compile so that this many programs (thread
    /// blocks) fit on an SM at once (PTX `.minnctapersm`: ptxas keeps the
    /// registers a thread within 65536 / (programs x threads per block)).
    static constexpr ::llvm::StringLiteral getMinProgramsPerSMAttrName() {
      return "tile.min_programs_per_sm";
    }
    /// On scf.for: software-pipeline the loop's descriptor loads this deep.
    static constexpr ::llvm::StringLiteral getNumStagesAttrName() { return "tile.num_stages"; }
    /// On scf.for (with tile.num_stages): its ring filled by a producer
    /// warpgroup of its own (kiln-tile-warp-specialize).
    static constexpr ::llvm::StringLiteral getWarpSpecializeAttrName() {
      return "tile.warp_specialize";
    }
  }];
}

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

#endif // KILN_DIALECT_TILE_IR_TILEDIALECT_TD
