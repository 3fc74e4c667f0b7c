//===- TileAttrs.td - tile dialect attributes --------------*- tablegen -*-===//
//
// The enums of the ops' attributes and the tile encodings.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_TILE_IR_TILEATTRS_TD
#define KILN_DIALECT_TILE_IR_TILEATTRS_TD

include "kiln/Dialect/Tile/IR/TileDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/TensorEncoding.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Tile_ProgramAxis : I32EnumAttr<"ProgramAxis", "axis of the launch grid", [
  I32EnumAttrCase<"X", 0, "x">, I32EnumAttrCase<"Y", 1, "y">, I32EnumAttrCase<"Z", 2, "z">
]> {
  let cppNamespace = "::kiln::tile";
}

def Tile_MemSemantic : I32EnumAttr<"MemSemantic", "memory ordering of an access", [
  I32EnumAttrCase<"Relaxed", 0, "relaxed">, I32EnumAttrCase<"Acquire", 1, "acquire">,
  I32EnumAttrCase<"Release", 2, "release">, I32EnumAttrCase<"AcqRel", 3, "acq_rel">
]> {
  let cppNamespace = "::kiln::tile";
}

def Tile_MemScope : I32EnumAttr<"MemScope", "threads an access is ordered with", [
  I32EnumAttrCase<"Cta", 0, "cta">, I32EnumAttrCase<"Gpu", 1, "gpu">,
  I32EnumAttrCase<"Sys", 2, "sys">
]> {
  let cppNamespace = "::kiln::tile";
}

// The state space a proxy fence covers: `fence.proxy.async.global`,
// `.shared::cta`, or every space (the bare `fence.proxy.async`).
def Tile_ProxySpace : I32EnumAttr<"ProxySpace", "state space of a proxy fence", [
  I32EnumAttrCase<"Global", 0, "global">, I32EnumAttrCase<"SharedCta", 1, "shared_cta">,
  I32EnumAttrCase<"All", 2, "all">
]> {
  let cppNamespace = "::kiln::tile";
}

// The PTX cache operators of `ld.global` (ca, cg, cv) and `st.global` (wb, cg,
// cs, wt); which apply to which op is checked by the verifiers.
def Tile_CacheModifier : I32EnumAttr<"CacheModifier", "cache operator of a global access", [
  I32EnumAttrCase<"CA", 0, "ca">, I32EnumAttrCase<"CG", 1, "cg">,
  I32EnumAttrCase<"CS", 2, "cs">, I32EnumAttrCase<"CV", 3, "cv">,
  I32EnumAttrCase<"WB", 4, "wb">, I32EnumAttrCase<"WT", 5, "wt">
]> {
  let cppNamespace = "::kiln::tile";
}

def Tile_EvictionPolicy : I32EnumAttr<"EvictionPolicy", "cache eviction priority of an access", [
  I32EnumAttrCase<"EvictNormal", 0, "evict_normal">,
  I32EnumAttrCase<"EvictFirst", 1, "evict_first">,
  I32EnumAttrCase<"EvictLast", 2, "evict_last">
]> {
  let cppNamespace = "::kiln::tile";
}

def Tile_AtomicRMWKind : I32EnumAttr<"AtomicRMWKind", "read-modify-write operation", [
  I32EnumAttrCase<"Add", 0, "add">, I32EnumAttrCase<"FAdd", 1, "fadd">,
  I32EnumAttrCase<"Max", 2, "max">, I32EnumAttrCase<"Min", 3, "min">,
  I32EnumAttrCase<"UMax", 4, "umax">, I32EnumAttrCase<"UMin", 5, "umin">,
  I32EnumAttrCase<"And", 6, "and">, I32EnumAttrCase<"Or", 7, "or">,
  I32EnumAttrCase<"Xor", 8, "xor">, I32EnumAttrCase<"Xchg", 9, "xchg">
]> {
  let cppNamespace = "::kiln::tile";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Tile_AttrDef<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Tile_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Tile_MmaEncodingAttr : Tile_AttrDef<"MmaEncoding", "mma",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "the accumulator layouts of warp MMA (mma.sync, version 2), warpgroup MMA (wgmma, version 3) and tcgen05 (version 5)";
  let description = [{
    Version 2: the encoding of a 2-D f32 tile [M, N] held the way
    `mma.sync.aligned.m16n8k16` leaves its accumulator, the `numWarps` warps
    tiled `numWarps / warpsN` along M by `warpsN` along N. Warp w sits at
    (wM, wN) = (w mod WM, w / WM) with WM = numWarps / warpsN and holds the
    columns wN * N/warpsN .. (wN + 1) * N/warpsN - 1 (Nw = N / warpsN, a
    multiple of 8) of the 16-row blocks wM, wM + WM, wM + 2 WM, ...; lane l
    (g = l / 4, t = l mod 4) holds in register rM * Nw/2 + 4j + 2h + e the
    element of row 16 (WM rM + wM) + g + 8h and column wN * Nw + 8j + 2t + e
    (PTX ISA, "Matrix Fragments for mma.m16n8k16": the C fragment of n-tile
    j). Rows past M wrap (row mod M, M a power of two): where M < 16 WM warps
    and lanes hold copies of the same rows (an M below 16 wraps within the
    block: M <= 8 holds row g mod M in both halves h). With warpsN = 1 and M a
    multiple of 64 * numWarps / 4 the registers are version 3's. N = 1 is the
    column [M, 1] of `tile.expand_dims` of a `#tile.slice` of this encoding:
    two registers a 16-row block (h = 0, 1), the warps of a row group holding
    copies.

    Version 3: the encoding of a 2-D f32 tile [M, N] held the way
    `wgmma.mma_async` leaves its accumulator: the `numWarps / 4` warpgroups
    are tiled GM = warpgroups / warpsN along M by `warpsN` along N, warpgroup
    g at (g mod GM, g / GM) holding the columns (g / GM) * N/warpsN ..
    (g / GM + 1) * N/warpsN - 1 (Ng = N / warpsN of them: each warpgroup
    issues the wgmmas of its own columns, e.g. a [64, N] dot on 8 warps) of
    the 64-row slabs g mod GM, g mod GM + GM, ...; inside a slab, warp w of the
    warpgroup holds rows 16w .. 16w+15, and lane l holds rows 16w + l/4 and
    16w + l/4 + 8 at columns 8j + 2(l mod 4) + {0, 1} of its own for every
    j < Ng/8 (PTX ISA, "wgmma register fragments"). M must be a multiple of
    64 * GM; Ng a multiple of 8, at most 256 (checked by the ops that produce
    it), or N = 1: the column a row vector gets from
    `tile.expand_dims` of a `#tile.slice` of this encoding, held as the wider
    tiles' columns would be wrapped onto it (lane l holds rows 16w + l/4 and
    16w + l/4 + 8 of each of its slabs, one register each; the 4 lanes of a
    quad hold the same rows), so that `tile.broadcast` to [M, N] copies
    registers.

    Version 5: a tile [128, N] as `tcgen05.ld.sync.aligned.32x32b` leaves the
    accumulator it reads from Tensor Memory (`tile.tmem_load`): warp w may
    only read TMEM lanes 32 (w mod 4) .. 32 (w mod 4) + 31, so thread t holds
    row t mod 128; the warpgroups split the columns, warpgroup g = t / 128
    holding columns g * N/G .. (g + 1) * N/G - 1 (G = numWarps / 4) in its
    registers 0 .. N/G - 1, one column each. M must be 128 and N a multiple of
    G (checked with the type).

    ```mlir
    tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
    tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>>
    tensor<16x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
    tensor<64x512xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>
    ```
    Tiles without an encoding use the kernel's blocked layout. Elementwise
    ops, `tile.convert_layout` and `tile.desc_store` take tiles of any
    version. `warpsN` is 1 unless given (version 5 takes only 1).
  }];
  let parameters = (ins "unsigned":$version, "unsigned":$numWarps,
                        DefaultValuedParameter<"unsigned", "1">:$warpsN);
  let builders = [
    AttrBuilder<(ins "unsigned":$version, "unsigned":$numWarps), [{
      return $_get($_ctxt, version, numWarps, 1);
    }]>
  ];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tile_SliceEncodingAttr : Tile_AttrDef<"SliceEncoding", "slice",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "the layout of a tile reduced along one dimension of a parent layout";
  let description = [{
    The encoding of the (rank - 1)-D tile that reducing a tile of encoding
    `parent` along dimension `dim` leaves (`tile.reduce`): each thread holds,
    in its own registers, one element for each line along `dim` whose
    elements it holds in the parent; threads holding parts of the same line
    hold copies of its element. Elementwise ops run on it in place;
    `tile.expand_dims` along `dim` gives the parent encoding with that
    dimension of size 1, which `tile.broadcast` widens register by register
    (MLIR/Triton's slice layout).

    Defined for `parent` = `#tile.mma<version = 2 or 3, ...>` and `dim` = 1:
    the row vector [M] of an mma.sync or wgmma accumulator [M, N]. Version 2:
    thread t holds in register 2 rM + h the rows its lane holds of its 16-row
    blocks (the parent's column N = 1), copies in the warps of a row group.
    Version 3: thread t (warpgroup g = t / 128, warp w = t / 32 mod 4, lane
    l = t mod 32) holds in register 2 r + h (r < M / (64 G), h < 2, G
    warpgroups) the element of row 64 (r G + g) + 16 w + l / 4 + 8 h: the
    rows it holds of every 64-row slab in `#tile.mma`, for any N. M must be
    a multiple of 64 G. Reducing a version 3 tile (or a version 2 tile of
    warpsN = 1) along axis 1 combines the registers of a row within the
    thread, then the 4 lanes of its quad (shfl.sync.bfly 1, 2), with no
    shared memory; a conversion to or from the blocked layout goes through
    shared memory (`tile.convert_layout`).

    Along `dim` = 0 of a version 2 parent: the column vector [N] of an
    mma.sync accumulator [M, N], held as the tile [1, N] in that encoding
    (each thread the columns it holds, its rows wrapped onto row 0; N a
    multiple of 8 warpsN): `tile.expand_dims` along 0 and `tile.broadcast`
    to [M, N] copy registers. A 1-D ring slot read in it
    (`tile.ring_wait_load`) gives a per-column factor (`s * scale[None, :]`)
    without a shared buffer of its own.

    ```mlir
    tensor<128xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 8>>>
    tensor<16xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4>>>
    tensor<32xf32, #tile.slice<dim = 0, parent = #tile.mma<version = 2, numWarps = 4, warpsN = 4>>>
    ```
  }];
  let parameters = (ins "unsigned":$dim, "::mlir::Attribute":$parent);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // KILN_DIALECT_TILE_IR_TILEATTRS_TD
