//===- TileTypes.td - tile dialect types -------------------*- tablegen -*-===//

#ifndef KILN_DIALECT_TILE_IR_TILETYPES_TD
#define KILN_DIALECT_TILE_IR_TILETYPES_TD

include "kiln/Dialect/Tile/IR/TileDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"

class Tile_TypeDef<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Tile_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Tile_PtrType : Tile_TypeDef<"Ptr", "ptr"> {
  let summary = "pointer to an element in global memory";
  let description = [{
    A 64-bit pointer into global memory whose pointee is a scalar integer or
    floating-point type. Tiles of pointers (`tensor<128x!tile.ptr<f32>>`) give
    every element of a tile its own address.

    ```mlir
    !tile.ptr<bf16>
    ```
    Lowers to `!llvm.ptr<1>` (address space 1, global).
  }];
  let parameters = (ins "::mlir::Type":$pointeeType);
  let assemblyFormat = "`<` $pointeeType `>`";
  let genVerifyDecl = 1;
}

def Tile_TensorDescType : Tile_TypeDef<"TensorDesc", "tensordesc"> {
  let summary = "a TMA tensor descriptor (CUtensorMap) of a global tensor";
  let description = [{
    A kernel parameter: the 128-byte `CUtensorMap` the host encodes from a
    tensor's address, shape, strides, box and swizzle, passed by value as a
    `__grid_constant__` parameter. The type fixes what the kernel was compiled
    for: the box (`blockType`, outermost dimension first, as the tile the copy
    moves) and the shared-memory swizzle in bytes (0 = none, 32, 64, 128). The
    tensor's shape and strides live in the descriptor, so one compiled kernel
    serves every tensor of that element type, box and swizzle.

    With the 128-byte swizzle the box's inner row spans at most 128 bytes or
    a multiple of 128 (a "wide" box, e.g. `tensor<64x128xbf16>`): TMA copies
    rows of at most the swizzle span, so a wide box is W / 128 boxes of
    128-byte rows ("chunks", the host encodes the chunk's box), chunk c the
    inner columns [c * 128, (c + 1) * 128) bytes of every row, stored one
    after the other in shared memory (chunk c at c * rows * 128 bytes, each
    with the 128-byte swizzle). The rows (the product of the outer
    dimensions) are a multiple of 8, so every chunk starts on the swizzle's
    1024-byte period.

    ```mlir
    !tile.tensordesc<tensor<64x128xbf16>>
    !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
    !tile.tensordesc<tensor<64x256xbf16>, swizzle = 128>
    ```
    Lowers to a generic `!llvm.ptr` (the parameter's address, `cvta.param`).
  }];
  let parameters = (ins "::mlir::RankedTensorType":$blockType,
                        DefaultValuedParameter<"unsigned", "0">:$swizzle);
  let assemblyFormat = "`<` $blockType (`,` `swizzle` `=` $swizzle^)? `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes one copy of the box moves.
    int64_t getBoxBytes() const;
    /// The 128-byte column chunks of the box in shared memory: W / 128 for a
    /// wide box (128-byte swizzle, inner row W > 128 bytes), else 1.
    int64_t getNumChunks() const;
  }];
}

def Tile_RingType : Tile_TypeDef<"Ring", "ring"> {
  let summary = "a ring of shared-memory slots filled by TMA, one mbarrier each";
  let description = [{
    `stages` slots of the box `blockType`, each with its own mbarrier, in
    shared memory: the buffers of a software-pipelined loop
    (`kiln-tile-pipeline-loads`). A slot is filled by `tile.ring_issue` and
    read by `tile.ring_wait_load` once its barrier completes the expected
    phase. The block is a TMA box (filled through a descriptor) or a 1-D row
    of whole 16-byte units (filled by `cp.async.bulk` from a pointer).

    ```mlir
    !tile.ring<3, tensor<64x128xbf16>>
    !tile.ring<4, tensor<8192xbf16>>
    ```
    Lowers to the `!llvm.ptr<3>` of the ring's shared memory.
  }];
  let parameters = (ins "unsigned":$stages, "::mlir::RankedTensorType":$blockType);
  let assemblyFormat = "`<` $stages `,` $blockType `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes of one slot's box.
    int64_t getSlotBytes() const;
    /// Shared memory of the whole ring: the slots from its base (1024-byte
    /// aligned: the period of the 128-byte swizzle, which the wgmma
    /// descriptors assume), then the barriers (8 bytes each).
    int64_t getTotalBytes() const;
    /// Offset of slot s's barrier from the ring's base: this plus 8 s.
    int64_t getBarriersOffset() const;
  }];
}

def Tile_SmemType : Tile_TypeDef<"Smem", "smem"> {
  let summary = "a 16-bit tile staged in shared memory for the tensor cores";
  let description = [{
    A [M, K] bf16 or f16 tile (M a multiple of 8, K of 64; wgmma and tcgen05
    take M multiples of 64, mma.sync's ldmatrix any) that `tile.stage`
    wrote to shared memory once in the layout a K-major wgmma operand reads
    with the 128-byte swizzle: per 64 columns of K one chunk of M rows of 128
    bytes (chunk j at j * M * 128 bytes), the 16-byte unit u of row r at unit
    u ^ (r mod 8). A loop-invariant dot operand (attention's q) is staged
    once before the loop instead of every iteration.

    ```mlir
    !tile.smem<tensor<128x128xbf16>>
    ```
    Lowers to the `!llvm.ptr<3>` of the buffer (1024-byte aligned).
  }];
  let parameters = (ins "::mlir::RankedTensorType":$tileType);
  let assemblyFormat = "`<` $tileType `>`";
  let genVerifyDecl = 1;
}

def Tile_TMemType : Tile_TypeDef<"TMem", "tmem"> {
  let summary = "an f32 accumulator in tensor memory (TMEM; sm_100a, sm_103a)";
  let description = [{
    An f32 matrix [M, N] with M = 128 held in the Tensor Memory of the block's
    SM, where `tcgen05.mma` accumulates: row i in TMEM lane i, column j in
    column j of the allocation (32-bit cells). `tile.tmem_alloc` allocates
    `getNumColumns()` columns: N rounded up to a power of two, at least 32
    (the allocation granule); N is at most 512 (all of TMEM).

    ```mlir
    !tile.tmem<tensor<128x256xf32>>
    ```
    Lowers to `!llvm.ptr<6>`, the 32-bit TMEM address of lane 0, column 0 of
    the allocation (lane in bits 31-16, column in bits 15-0).
  }];
  let parameters = (ins "::mlir::RankedTensorType":$accType);
  let assemblyFormat = "`<` $accType `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Columns of the allocation: max(32, N rounded up to a power of two).
    int64_t getNumColumns() const;
  }];
}

def Tile_MBarriersType : Tile_TypeDef<"MBarriers", "mbarriers"> {
  let summary = "an array of mbarriers in shared memory, one arrival per phase";
  let description = [{
    `count` mbarrier objects (8 bytes each) in shared memory, each initialized
    with an arrival count of 1: a phase completes with one arrival, e.g. the
    `tcgen05.commit` of a `tile.tcgen05_dot`. `tile.mbarrier_wait` waits for
    the phase of a given parity.

    ```mlir
    !tile.mbarriers<2>
    ```
    Lowers to the `!llvm.ptr<3>` of barrier 0.
  }];
  let parameters = (ins "unsigned":$count);
  let assemblyFormat = "`<` $count `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Tile_Float : AnyTypeOf<[F8E4M3FN, F8E5M2, F16, BF16, F32, F64], "floating-point">;
def Tile_Int : AnyTypeOf<[I1, I8, I16, I32, I64], "signless integer">;
def Tile_Ptr : Type<CPred<"::llvm::isa<::kiln::tile::PtrType>($_self)">, "tile pointer",
                    "::kiln::tile::PtrType">;
def Tile_TensorDesc : Type<CPred<"::llvm::isa<::kiln::tile::TensorDescType>($_self)">,
                           "tile tensor descriptor", "::kiln::tile::TensorDescType">;
def Tile_Ring : Type<CPred<"::llvm::isa<::kiln::tile::RingType>($_self)">, "tile ring",
                      "::kiln::tile::RingType">;
def Tile_Smem : Type<CPred<"::llvm::isa<::kiln::tile::SmemType>($_self)">,
                      "tile staged in shared memory", "::kiln::tile::SmemType">;
def Tile_TMem : Type<CPred<"::llvm::isa<::kiln::tile::TMemType>($_self)">,
                     "tile tensor-memory accumulator", "::kiln::tile::TMemType">;
def Tile_MBarriers : Type<CPred<"::llvm::isa<::kiln::tile::MBarriersType>($_self)">,
                          "tile mbarrier array", "::kiln::tile::MBarriersType">;
def Tile_Scalar : AnyTypeOf<[Tile_Float, Tile_Int, Tile_Ptr], "tile scalar">;

def Tile_FloatTensor : RankedTensorOf<[Tile_Float]>;
def Tile_IntTensor : RankedTensorOf<[Tile_Int]>;
def Tile_PtrTensor : RankedTensorOf<[Tile_Ptr]>;
def Tile_BoolTensor : RankedTensorOf<[I1]>;
def Tile_Tensor : RankedTensorOf<[Tile_Float, Tile_Int, Tile_Ptr]>;

def Tile_IntLike : AnyTypeOf<[Tile_Int, Tile_IntTensor]>;
def Tile_PtrLike : AnyTypeOf<[Tile_Ptr, Tile_PtrTensor]>;
def Tile_BoolLike : AnyTypeOf<[I1, Tile_BoolTensor]>;
def Tile_Any : AnyTypeOf<[Tile_Scalar, Tile_Tensor]>;

#endif // KILN_DIALECT_TILE_IR_TILETYPES_TD
