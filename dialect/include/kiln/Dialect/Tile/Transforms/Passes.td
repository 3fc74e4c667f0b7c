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
