// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s -mlir-print-op-generic | kiln-opt | FileCheck %s

// Round trip of every tile op and type.

// CHECK-LABEL: func.func @ptr_types
// CHECK-SAME: !tile.ptr<f8E4M3FN>, %{{.*}}: !tile.ptr<f8E5M2>, %{{.*}}: !tile.ptr<f16>, %{{.*}}: !tile.ptr<bf16>, %{{.*}}: !tile.ptr<f32>, %{{.*}}: !tile.ptr<f64>
// CHECK-SAME: !tile.ptr<i1>, %{{.*}}: !tile.ptr<i8>, %{{.*}}: !tile.ptr<i16>, %{{.*}}: !tile.ptr<i32>, %{{.*}}: !tile.ptr<i64>
func.func @ptr_types(%a: !tile.ptr<f8E4M3FN>, %b: !tile.ptr<f8E5M2>, %c: !tile.ptr<f16>,
                     %d: !tile.ptr<bf16>, %e: !tile.ptr<f32>, %f: !tile.ptr<f64>,
                     %g: !tile.ptr<i1>, %h: !tile.ptr<i8>, %i: !tile.ptr<i16>,
                     %j: !tile.ptr<i32>, %k: !tile.ptr<i64>) {
  return
}

// CHECK-LABEL: func.func @ptr_tiles
// CHECK-SAME: tensor<128x!tile.ptr<f32>>
// CHECK-SAME: tensor<16x64x!tile.ptr<bf16>>
func.func @ptr_tiles(%a: tensor<128x!tile.ptr<f32>>, %b: tensor<16x64x!tile.ptr<bf16>>) {
  return
}

// CHECK-LABEL: func.func @program
// CHECK: %{{.*}} = tile.program_id x : i32
// CHECK: %{{.*}} = tile.program_id y : i32
// CHECK: %{{.*}} = tile.program_id z : i32
// CHECK: %{{.*}} = tile.num_programs x : i32
// CHECK: %{{.*}} = tile.num_programs y : i32
// CHECK: %{{.*}} = tile.num_programs z : i32
func.func @program() -> (i32, i32, i32, i32, i32, i32) {
  %0 = tile.program_id x : i32
  %1 = tile.program_id y : i32
  %2 = tile.program_id z : i32
  %3 = tile.num_programs x : i32
  %4 = tile.num_programs y : i32
  %5 = tile.num_programs z : i32
  return %0, %1, %2, %3, %4, %5 : i32, i32, i32, i32, i32, i32
}

// CHECK-LABEL: func.func @cluster
// CHECK-SAME: tile.cluster_dims = array<i32: 2, 2, 1>
// CHECK: %{{.*}} = tile.cluster_id x : i32
// CHECK: %{{.*}} = tile.num_clusters y : i32
// CHECK: %{{.*}} = tile.cluster_cta_id z : i32
// CHECK: %{{.*}} = tile.cluster_cta_rank : i32
// CHECK: %{{.*}} = tile.cluster_size : i32
// CHECK: tile.cluster_barrier
// CHECK: %{{.*}} = tile.cluster_load %{{.*}}, %{{.*}} : tensor<128xf32>
// CHECK: %{{.*}} = tile.cluster_load %{{.*}}, %{{.*}} : tensor<4x8xi1>
func.func @cluster(%x: tensor<128xf32>, %m: tensor<4x8xi1>, %r: i32)
    -> (i32, i32, i32, i32, i32, tensor<128xf32>, tensor<4x8xi1>)
    attributes {tile.cluster_dims = array<i32: 2, 2, 1>} {
  %0 = tile.cluster_id x : i32
  %1 = tile.num_clusters y : i32
  %2 = tile.cluster_cta_id z : i32
  %3 = tile.cluster_cta_rank : i32
  %4 = tile.cluster_size : i32
  tile.cluster_barrier
  %5 = tile.cluster_load %x, %r : tensor<128xf32>
  %6 = tile.cluster_load %m, %3 : tensor<4x8xi1>
  return %0, %1, %2, %3, %4, %5, %6 : i32, i32, i32, i32, i32, tensor<128xf32>, tensor<4x8xi1>
}

// tile.cluster_gather stacks the cluster's tiles along a new first dimension
// of the cluster size (4 here, 1 without tile.cluster_dims).
// CHECK-LABEL: func.func @cluster_gather
// CHECK: %{{.*}} = tile.cluster_gather %{{.*}} : tensor<128xf32> -> tensor<4x128xf32>
// CHECK: %{{.*}} = tile.cluster_gather %{{.*}} : tensor<2x8xi1> -> tensor<4x2x8xi1>
func.func @cluster_gather(%x: tensor<128xf32>, %m: tensor<2x8xi1>)
    -> (tensor<4x128xf32>, tensor<4x2x8xi1>)
    attributes {tile.cluster_dims = array<i32: 2, 2, 1>} {
  %0 = tile.cluster_gather %x : tensor<128xf32> -> tensor<4x128xf32>
  %1 = tile.cluster_gather %m : tensor<2x8xi1> -> tensor<4x2x8xi1>
  return %0, %1 : tensor<4x128xf32>, tensor<4x2x8xi1>
}

// tile.cluster_sum: one result per tile, of its type.
// CHECK-LABEL: func.func @cluster_sum
// CHECK: %{{.*}}:2 = tile.cluster_sum %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<4x32xi64>
func.func @cluster_sum(%x: tensor<8xf32>, %n: tensor<4x32xi64>)
    -> (tensor<8xf32>, tensor<4x32xi64>) attributes {tile.cluster_dims = array<i32: 4, 1, 1>} {
  %0:2 = tile.cluster_sum %x, %n : tensor<8xf32>, tensor<4x32xi64>
  return %0#0, %0#1 : tensor<8xf32>, tensor<4x32xi64>
}

// CHECK-LABEL: func.func @cluster_gather_of_one
// CHECK: %{{.*}} = tile.cluster_gather %{{.*}} : tensor<16xi32> -> tensor<1x16xi32>
func.func @cluster_gather_of_one(%x: tensor<16xi32>) -> tensor<1x16xi32> {
  %0 = tile.cluster_gather %x : tensor<16xi32> -> tensor<1x16xi32>
  return %0 : tensor<1x16xi32>
}

// CHECK-LABEL: func.func @make_range
// CHECK: tile.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
// CHECK: tile.make_range {end = 20 : i32, start = 4 : i32} : tensor<16xi32>
func.func @make_range() -> (tensor<128xi32>, tensor<16xi32>) {
  %0 = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %1 = tile.make_range {start = 4 : i32, end = 20 : i32} : tensor<16xi32>
  return %0, %1 : tensor<128xi32>, tensor<16xi32>
}

// CHECK-LABEL: func.func @iota
// CHECK: tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<16x512xi32>
// CHECK: tile.iota {dim = 1 : i32, start = -64 : i32} : tensor<16x512xi32>
// CHECK: tile.iota {dim = 2 : i32, start = 3 : i32} : tensor<2x1x8xi32>
func.func @iota() -> (tensor<16x512xi32>, tensor<16x512xi32>, tensor<2x1x8xi32>) {
  %0 = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<16x512xi32>
  %1 = tile.iota {dim = 1 : i32, start = -64 : i32} : tensor<16x512xi32>
  %2 = tile.iota {dim = 2 : i32, start = 3 : i32} : tensor<2x1x8xi32>
  return %0, %1, %2 : tensor<16x512xi32>, tensor<16x512xi32>, tensor<2x1x8xi32>
}

// CHECK-LABEL: func.func @splat
// CHECK-SAME: (%[[X:.*]]: f32, %[[I:.*]]: i64, %[[P:.*]]: !tile.ptr<bf16>, %[[B:.*]]: i1)
// CHECK: tile.splat %[[X]] : f32 -> tensor<64x128xf32>
// CHECK: tile.splat %[[I]] : i64 -> tensor<32xi64>
// CHECK: tile.splat %[[P]] : !tile.ptr<bf16> -> tensor<256x!tile.ptr<bf16>>
// CHECK: tile.splat %[[B]] : i1 -> tensor<8xi1>
func.func @splat(%x: f32, %i: i64, %p: !tile.ptr<bf16>, %b: i1)
    -> (tensor<64x128xf32>, tensor<32xi64>, tensor<256x!tile.ptr<bf16>>, tensor<8xi1>) {
  %0 = tile.splat %x : f32 -> tensor<64x128xf32>
  %1 = tile.splat %i : i64 -> tensor<32xi64>
  %2 = tile.splat %p : !tile.ptr<bf16> -> tensor<256x!tile.ptr<bf16>>
  %3 = tile.splat %b : i1 -> tensor<8xi1>
  return %0, %1, %2, %3 : tensor<64x128xf32>, tensor<32xi64>, tensor<256x!tile.ptr<bf16>>, tensor<8xi1>
}

// CHECK-LABEL: func.func @expand_dims
// CHECK-SAME: (%[[X:.*]]: tensor<128xf32>)
// CHECK: tile.expand_dims %[[X]] {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
// CHECK: tile.expand_dims %[[X]] {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
func.func @expand_dims(%x: tensor<128xf32>) -> (tensor<1x128xf32>, tensor<128x1xf32>) {
  %0 = tile.expand_dims %x {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
  %1 = tile.expand_dims %x {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
  return %0, %1 : tensor<1x128xf32>, tensor<128x1xf32>
}

// CHECK-LABEL: func.func @broadcast
// CHECK-SAME: (%[[R:.*]]: tensor<1x128xf32>, %[[C:.*]]: tensor<64x1x!tile.ptr<f32>>)
// CHECK: tile.broadcast %[[R]] : tensor<1x128xf32> -> tensor<64x128xf32>
// CHECK: tile.broadcast %[[C]] : tensor<64x1x!tile.ptr<f32>> -> tensor<64x32x!tile.ptr<f32>>
func.func @broadcast(%r: tensor<1x128xf32>, %c: tensor<64x1x!tile.ptr<f32>>)
    -> (tensor<64x128xf32>, tensor<64x32x!tile.ptr<f32>>) {
  %0 = tile.broadcast %r : tensor<1x128xf32> -> tensor<64x128xf32>
  %1 = tile.broadcast %c : tensor<64x1x!tile.ptr<f32>> -> tensor<64x32x!tile.ptr<f32>>
  return %0, %1 : tensor<64x128xf32>, tensor<64x32x!tile.ptr<f32>>
}

// CHECK-LABEL: func.func @trans
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32>, %[[Y:.*]]: tensor<2x4x8xbf16>, %[[P:.*]]: tensor<32x8x!tile.ptr<i32>>)
// CHECK: tile.trans %[[X]] {order = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
// CHECK: tile.trans %[[Y]] {order = array<i64: 2, 0, 1>} : tensor<2x4x8xbf16> -> tensor<8x2x4xbf16>
// CHECK: tile.trans %[[P]] {order = array<i64: 1, 0>} : tensor<32x8x!tile.ptr<i32>> -> tensor<8x32x!tile.ptr<i32>>
func.func @trans(%x: tensor<16x64xf32>, %y: tensor<2x4x8xbf16>, %p: tensor<32x8x!tile.ptr<i32>>)
    -> (tensor<64x16xf32>, tensor<8x2x4xbf16>, tensor<8x32x!tile.ptr<i32>>) {
  %0 = tile.trans %x {order = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
  %1 = tile.trans %y {order = array<i64: 2, 0, 1>} : tensor<2x4x8xbf16> -> tensor<8x2x4xbf16>
  %2 = tile.trans %p {order = array<i64: 1, 0>} : tensor<32x8x!tile.ptr<i32>> -> tensor<8x32x!tile.ptr<i32>>
  return %0, %1, %2 : tensor<64x16xf32>, tensor<8x2x4xbf16>, tensor<8x32x!tile.ptr<i32>>
}

// CHECK-LABEL: func.func @reshape_join_split
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32>, %[[P:.*]]: tensor<8x!tile.ptr<i8>>)
// CHECK: %[[R:.*]] = tile.reshape %[[X]] : tensor<16x64xf32> -> tensor<4x8x32xf32>
// CHECK: %[[J:.*]] = tile.join %[[R]], %[[R]] : tensor<4x8x32xf32> -> tensor<4x8x32x2xf32>
// CHECK: %[[LO:.*]], %[[HI:.*]] = tile.split %[[J]] : tensor<4x8x32x2xf32> -> tensor<4x8x32xf32>
// CHECK: %[[Q:.*]] = tile.join %[[P]], %[[P]] : tensor<8x!tile.ptr<i8>> -> tensor<8x2x!tile.ptr<i8>>
// CHECK: return %[[LO]], %[[HI]], %[[Q]]
func.func @reshape_join_split(%x: tensor<16x64xf32>, %p: tensor<8x!tile.ptr<i8>>)
    -> (tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<8x2x!tile.ptr<i8>>) {
  %r = tile.reshape %x : tensor<16x64xf32> -> tensor<4x8x32xf32>
  %j = tile.join %r, %r : tensor<4x8x32xf32> -> tensor<4x8x32x2xf32>
  %lo, %hi = tile.split %j : tensor<4x8x32x2xf32> -> tensor<4x8x32xf32>
  %q = tile.join %p, %p : tensor<8x!tile.ptr<i8>> -> tensor<8x2x!tile.ptr<i8>>
  return %lo, %hi, %q : tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<8x2x!tile.ptr<i8>>
}

// CHECK-LABEL: func.func @addptr
// CHECK-SAME: (%[[P:.*]]: tensor<128x!tile.ptr<f32>>, %[[O:.*]]: tensor<128xi32>, %[[S:.*]]: !tile.ptr<bf16>, %[[N:.*]]: i64, %[[M:.*]]: i32)
// CHECK: tile.addptr %[[P]], %[[O]] : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
// CHECK: tile.addptr %[[S]], %[[N]] : !tile.ptr<bf16>, i64
// CHECK: tile.addptr %[[S]], %[[M]] : !tile.ptr<bf16>, i32
func.func @addptr(%p: tensor<128x!tile.ptr<f32>>, %o: tensor<128xi32>, %s: !tile.ptr<bf16>,
                  %n: i64, %m: i32)
    -> (tensor<128x!tile.ptr<f32>>, !tile.ptr<bf16>, !tile.ptr<bf16>) {
  %0 = tile.addptr %p, %o : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %1 = tile.addptr %s, %n : !tile.ptr<bf16>, i64
  %2 = tile.addptr %s, %m : !tile.ptr<bf16>, i32
  return %0, %1, %2 : tensor<128x!tile.ptr<f32>>, !tile.ptr<bf16>, !tile.ptr<bf16>
}

// CHECK-LABEL: func.func @load
// CHECK-SAME: (%[[P:.*]]: tensor<128x!tile.ptr<bf16>>, %[[M:.*]]: tensor<128xi1>, %[[O:.*]]: tensor<128xbf16>, %[[S:.*]]: !tile.ptr<f32>, %[[B:.*]]: i1, %[[F:.*]]: f32)
// CHECK: tile.load %[[P]] : tensor<128x!tile.ptr<bf16>>
// CHECK: tile.load %[[P]], %[[M]] : tensor<128x!tile.ptr<bf16>>
// CHECK: tile.load %[[P]], %[[M]], %[[O]] : tensor<128x!tile.ptr<bf16>>
// CHECK: tile.load %[[P]], %[[M]], %[[O]] {vec = 8 : i32} : tensor<128x!tile.ptr<bf16>>
// CHECK: tile.load %[[S]] : !tile.ptr<f32>
// CHECK: tile.load %[[S]], %[[B]], %[[F]] : !tile.ptr<f32>
func.func @load(%p: tensor<128x!tile.ptr<bf16>>, %m: tensor<128xi1>, %o: tensor<128xbf16>,
                %s: !tile.ptr<f32>, %b: i1, %f: f32) {
  %0 = tile.load %p : tensor<128x!tile.ptr<bf16>>
  %1 = tile.load %p, %m : tensor<128x!tile.ptr<bf16>>
  %2 = tile.load %p, %m, %o : tensor<128x!tile.ptr<bf16>>
  %3 = tile.load %p, %m, %o {vec = 8 : i32} : tensor<128x!tile.ptr<bf16>>
  %4 = tile.load %s : !tile.ptr<f32>
  %5 = tile.load %s, %b, %f : !tile.ptr<f32>
  return
}

// CHECK-LABEL: func.func @store
// CHECK-SAME: (%[[P:.*]]: tensor<128x!tile.ptr<bf16>>, %[[V:.*]]: tensor<128xbf16>, %[[M:.*]]: tensor<128xi1>, %[[S:.*]]: !tile.ptr<i32>, %[[X:.*]]: i32, %[[B:.*]]: i1)
// CHECK: tile.store %[[P]], %[[V]] : tensor<128x!tile.ptr<bf16>>
// CHECK: tile.store %[[P]], %[[V]], %[[M]] : tensor<128x!tile.ptr<bf16>>
// CHECK: tile.store %[[P]], %[[V]], %[[M]] {vec = 8 : i32} : tensor<128x!tile.ptr<bf16>>
// CHECK: tile.store %[[S]], %[[X]] : !tile.ptr<i32>
// CHECK: tile.store %[[S]], %[[X]], %[[B]] : !tile.ptr<i32>
func.func @store(%p: tensor<128x!tile.ptr<bf16>>, %v: tensor<128xbf16>, %m: tensor<128xi1>,
                 %s: !tile.ptr<i32>, %x: i32, %b: i1) {
  tile.store %p, %v : tensor<128x!tile.ptr<bf16>>
  tile.store %p, %v, %m : tensor<128x!tile.ptr<bf16>>
  tile.store %p, %v, %m {vec = 8 : i32} : tensor<128x!tile.ptr<bf16>>
  tile.store %s, %x : !tile.ptr<i32>
  tile.store %s, %x, %b : !tile.ptr<i32>
  return
}

// The discardable attributes of the dialect.
// CHECK-LABEL: func.func @kernel_attrs
// CHECK-SAME: %{{.*}}: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %{{.*}}: i32 {tile.divisibility = 8 : i32}, %{{.*}}: f32)
// CHECK-SAME: attributes {tile.elems_per_thread = 4 : i32, tile.kernel, tile.num_warps = 8 : i32, tile.threads_per_block = 256 : i32}
func.func @kernel_attrs(%p: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                        %n: i32 {tile.divisibility = 8 : i32}, %f: f32)
    attributes {tile.kernel, tile.num_warps = 8 : i32, tile.threads_per_block = 256 : i32,
                tile.elems_per_thread = 4 : i32} {
  return
}

// What the lowering records on a kernel: PDL, the features, the register split.
// CHECK-LABEL: func.func @pdl_kernel
// CHECK-SAME: attributes {tile.kernel, tile.pdl}
func.func @pdl_kernel() attributes {tile.kernel, tile.pdl} {
  tile.pdl_wait
  return
}
// CHECK-LABEL: llvm.func @lowered_facts
// CHECK-SAME: attributes {tile.features = ["mbarrier", "pdl", "setmaxnreg"], tile.pdl, tile.register_split = array<i32: 256, 232, 40>}
llvm.func @lowered_facts() attributes {tile.features = ["mbarrier", "pdl", "setmaxnreg"], tile.pdl,
                                       tile.register_split = array<i32: 256, 232, 40>} {
  llvm.return
}

// tile.reduce: 2-D along either axis, 1-D to a scalar, a combine region of
// more than one op.
// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[X:.*]]: tensor<64x128xf32>, %[[H:.*]]: tensor<16x32xbf16>, %[[B:.*]]: tensor<256xi1>, %[[I:.*]]: tensor<8x4x2xi64>, %[[D:.*]]: tensor<32xf64>)
// CHECK: tile.reduce %[[X]] {axis = 1 : i32} : tensor<64x128xf32> -> tensor<64xf32> {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: f32, %[[B0:.*]]: f32):
// CHECK-NEXT: %[[S0:.*]] = arith.addf %[[A0]], %[[B0]] : f32
// CHECK-NEXT: tile.reduce.return %[[S0]] : f32
// CHECK-NEXT: }
// CHECK: tile.reduce %[[H]] {axis = 0 : i32} : tensor<16x32xbf16> -> tensor<32xbf16> {
// CHECK: arith.maxnumf %{{.*}}, %{{.*}} : bf16
// CHECK: tile.reduce.return %{{.*}} : bf16
// CHECK: tile.reduce %[[B]] {axis = 0 : i32} : tensor<256xi1> -> i1 {
// CHECK: arith.ori %{{.*}}, %{{.*}} : i1
// CHECK: tile.reduce %[[I]] {axis = 1 : i32} : tensor<8x4x2xi64> -> tensor<8x2xi64> {
// CHECK-NEXT: ^bb0(%[[A3:.*]]: i64, %[[B3:.*]]: i64):
// CHECK-NEXT: %[[LT:.*]] = arith.cmpi slt, %[[A3]], %[[B3]] : i64
// CHECK-NEXT: %[[SEL:.*]] = arith.select %[[LT]], %[[A3]], %[[B3]] : i64
// CHECK-NEXT: tile.reduce.return %[[SEL]] : i64
// CHECK: tile.reduce %[[D]] {axis = 0 : i32} : tensor<32xf64> -> f64 {
// CHECK: arith.minnumf %{{.*}}, %{{.*}} : f64
func.func @reduce(%x: tensor<64x128xf32>, %h: tensor<16x32xbf16>, %b: tensor<256xi1>,
                  %i: tensor<8x4x2xi64>, %d: tensor<32xf64>)
    -> (tensor<64xf32>, tensor<32xbf16>, i1, tensor<8x2xi64>, f64) {
  %0 = tile.reduce %x {axis = 1 : i32} : tensor<64x128xf32> -> tensor<64xf32> {
  ^bb0(%a: f32, %c: f32):
    %s = arith.addf %a, %c : f32
    tile.reduce.return %s : f32
  }
  %1 = tile.reduce %h {axis = 0 : i32} : tensor<16x32xbf16> -> tensor<32xbf16> {
  ^bb0(%a: bf16, %c: bf16):
    %m = arith.maxnumf %a, %c : bf16
    tile.reduce.return %m : bf16
  }
  %2 = tile.reduce %b {axis = 0 : i32} : tensor<256xi1> -> i1 {
  ^bb0(%a: i1, %c: i1):
    %o = arith.ori %a, %c : i1
    tile.reduce.return %o : i1
  }
  %3 = tile.reduce %i {axis = 1 : i32} : tensor<8x4x2xi64> -> tensor<8x2xi64> {
  ^bb0(%a: i64, %c: i64):
    %lt = arith.cmpi slt, %a, %c : i64
    %sel = arith.select %lt, %a, %c : i64
    tile.reduce.return %sel : i64
  }
  %4 = tile.reduce %d {axis = 0 : i32} : tensor<32xf64> -> f64 {
  ^bb0(%a: f64, %c: f64):
    %m = arith.minnumf %a, %c : f64
    tile.reduce.return %m : f64
  }
  return %0, %1, %2, %3, %4 : tensor<64xf32>, tensor<32xbf16>, i1, tensor<8x2xi64>, f64
}

// tile.reduce of several sources: a pair of sums of one shape, and a
// (value, index) argmax pair to a pair of scalars (2N region arguments: the
// accumulated values, then the new ones).
// CHECK-LABEL: func.func @reduce_multi
// CHECK-SAME: (%[[X:.*]]: tensor<64x128xf32>, %[[Y:.*]]: tensor<64x128xf32>, %[[V:.*]]: tensor<128xf16>, %[[I:.*]]: tensor<128xi32>)
// CHECK: %{{.*}}:2 = tile.reduce %[[X]], %[[Y]] {axis = 1 : i32} : tensor<64x128xf32>, tensor<64x128xf32> -> tensor<64xf32>, tensor<64xf32> {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: f32, %[[A1:.*]]: f32, %[[B0:.*]]: f32, %[[B1:.*]]: f32):
// CHECK-NEXT: %[[S0:.*]] = arith.addf %[[A0]], %[[B0]] : f32
// CHECK-NEXT: %[[S1:.*]] = arith.addf %[[A1]], %[[B1]] : f32
// CHECK-NEXT: tile.reduce.return %[[S0]], %[[S1]] : f32, f32
// CHECK-NEXT: }
// CHECK: %{{.*}}:2 = tile.reduce %[[V]], %[[I]] {axis = 0 : i32} : tensor<128xf16>, tensor<128xi32> -> f16, i32 {
// CHECK-NEXT: ^bb0(%{{.*}}: f16, %{{.*}}: i32, %{{.*}}: f16, %{{.*}}: i32):
// CHECK: tile.reduce.return %{{.*}}, %{{.*}} : f16, i32
func.func @reduce_multi(%x: tensor<64x128xf32>, %y: tensor<64x128xf32>, %v: tensor<128xf16>,
                        %i: tensor<128xi32>) -> (tensor<64xf32>, tensor<64xf32>, f16, i32) {
  %0:2 = tile.reduce %x, %y {axis = 1 : i32} : tensor<64x128xf32>, tensor<64x128xf32> -> tensor<64xf32>, tensor<64xf32> {
  ^bb0(%a0: f32, %a1: f32, %b0: f32, %b1: f32):
    %s0 = arith.addf %a0, %b0 : f32
    %s1 = arith.addf %a1, %b1 : f32
    tile.reduce.return %s0, %s1 : f32, f32
  }
  %1:2 = tile.reduce %v, %i {axis = 0 : i32} : tensor<128xf16>, tensor<128xi32> -> f16, i32 {
  ^bb0(%va: f16, %ia: i32, %vb: f16, %ib: i32):
    %gt = arith.cmpf ogt, %vb, %va : f16
    %eq = arith.cmpf oeq, %vb, %va : f16
    %lt = arith.cmpi slt, %ib, %ia : i32
    %tie = arith.andi %eq, %lt : i1
    %take = arith.ori %gt, %tie : i1
    %vm = arith.select %take, %vb, %va : f16
    %im = arith.select %take, %ib, %ia : i32
    tile.reduce.return %vm, %im : f16, i32
  }
  return %0#0, %0#1, %1#0, %1#1 : tensor<64xf32>, tensor<64xf32>, f16, i32
}

// tile.scan: 1-D, 2-D along either axis, a combine region of more than one op
// (not commutative: keeps the later value where it is larger).
// CHECK-LABEL: func.func @scan
// CHECK-SAME: (%[[X:.*]]: tensor<64x128xf32>, %[[I:.*]]: tensor<1024xi32>, %[[B:.*]]: tensor<16x32xbf16>)
// CHECK: tile.scan %[[X]] {axis = 1 : i32} : tensor<64x128xf32> {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: f32, %[[B0:.*]]: f32):
// CHECK-NEXT: %[[S0:.*]] = arith.addf %[[A0]], %[[B0]] : f32
// CHECK-NEXT: tile.scan.return %[[S0]] : f32
// CHECK-NEXT: }
// CHECK: tile.scan %[[X]] {axis = 0 : i32} : tensor<64x128xf32> {
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: tile.scan %[[I]] {axis = 0 : i32} : tensor<1024xi32> {
// CHECK-NEXT: ^bb0(%[[A2:.*]]: i32, %[[B2:.*]]: i32):
// CHECK-NEXT: %[[GT:.*]] = arith.cmpi sgt, %[[B2]], %[[A2]] : i32
// CHECK-NEXT: %[[SEL:.*]] = arith.select %[[GT]], %[[B2]], %[[A2]] : i32
// CHECK-NEXT: tile.scan.return %[[SEL]] : i32
// CHECK: tile.scan %[[B]] {axis = 0 : i32} : tensor<16x32xbf16> {
// CHECK: arith.maxnumf %{{.*}}, %{{.*}} : bf16
func.func @scan(%x: tensor<64x128xf32>, %i: tensor<1024xi32>, %b: tensor<16x32xbf16>)
    -> (tensor<64x128xf32>, tensor<64x128xf32>, tensor<1024xi32>, tensor<16x32xbf16>) {
  %0 = tile.scan %x {axis = 1 : i32} : tensor<64x128xf32> {
  ^bb0(%a: f32, %c: f32):
    %s = arith.addf %a, %c : f32
    tile.scan.return %s : f32
  }
  %1 = tile.scan %x {axis = 0 : i32} : tensor<64x128xf32> {
  ^bb0(%a: f32, %c: f32):
    %p = arith.mulf %a, %c : f32
    tile.scan.return %p : f32
  }
  %2 = tile.scan %i {axis = 0 : i32} : tensor<1024xi32> {
  ^bb0(%a: i32, %c: i32):
    %gt = arith.cmpi sgt, %c, %a : i32
    %sel = arith.select %gt, %c, %a : i32
    tile.scan.return %sel : i32
  }
  %3 = tile.scan %b {axis = 0 : i32} : tensor<16x32xbf16> {
  ^bb0(%a: bf16, %c: bf16):
    %m = arith.maxnumf %a, %c : bf16
    tile.scan.return %m : bf16
  }
  return %0, %1, %2, %3 : tensor<64x128xf32>, tensor<64x128xf32>, tensor<1024xi32>, tensor<16x32xbf16>
}

// CHECK-LABEL: func.func @tensor_descriptors
// CHECK-SAME: !tile.tensordesc<tensor<64x128xbf16>>
// CHECK-SAME: !tile.tensordesc<tensor<64x64xf16>, swizzle = 128>
// CHECK-SAME: !tile.tensordesc<tensor<64x256xbf16>, swizzle = 128>
// CHECK: tile.desc_load %{{.*}}[%{{.*}}, %{{.*}}] : !tile.tensordesc<tensor<64x128xbf16>> -> tensor<64x128xbf16>
// CHECK: tile.desc_store %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : !tile.tensordesc<tensor<64x128xbf16>>, tensor<64x128xbf16>
// A wide box (128-byte swizzle, 512-byte rows: four 128-byte chunks).
func.func @tensor_descriptors(%d: !tile.tensordesc<tensor<64x128xbf16>>,
                              %s: !tile.tensordesc<tensor<64x64xf16>, swizzle = 128>,
                              %w: !tile.tensordesc<tensor<64x256xbf16>, swizzle = 128>,
                              %i: i32, %j: i32) attributes {tile.kernel} {
  %t = tile.desc_load %d[%i, %j] : !tile.tensordesc<tensor<64x128xbf16>> -> tensor<64x128xbf16>
  tile.desc_store %d[%i, %j], %t : !tile.tensordesc<tensor<64x128xbf16>>, tensor<64x128xbf16>
  return
}

// tile.bulk_load: a 1-D tile of the pointee type, a multiple of 16 bytes
// (here 16 bytes of f32, 32 of f8, 1 KiB of i64).
// CHECK-LABEL: func.func @bulk_load
// CHECK: tile.bulk_load %{{.*}} : !tile.ptr<f32> -> tensor<4xf32>
// CHECK: tile.bulk_load %{{.*}} : !tile.ptr<f8E4M3FN> -> tensor<32xf8E4M3FN>
// CHECK: tile.bulk_load %{{.*}} : !tile.ptr<i64> -> tensor<128xi64>
func.func @bulk_load(%x: !tile.ptr<f32>, %q: !tile.ptr<f8E4M3FN>, %l: !tile.ptr<i64>)
    -> (tensor<4xf32>, tensor<32xf8E4M3FN>, tensor<128xi64>) {
  %0 = tile.bulk_load %x : !tile.ptr<f32> -> tensor<4xf32>
  %1 = tile.bulk_load %q : !tile.ptr<f8E4M3FN> -> tensor<32xf8E4M3FN>
  %2 = tile.bulk_load %l : !tile.ptr<i64> -> tensor<128xi64>
  return %0, %1, %2 : tensor<4xf32>, tensor<32xf8E4M3FN>, tensor<128xi64>
}

// tile.bulk_load with a runtime count; the ring ops with a pointer source.
// CHECK-LABEL: func.func @bulk_load_count
// CHECK: tile.bulk_load %{{.*}} count %{{.*}} : !tile.ptr<bf16> -> tensor<8192xbf16>
// CHECK: tile.ring_alloc : !tile.ring<4, tensor<8192xbf16>>
// CHECK: tile.ring_issue %{{.*}} count %{{.*}} -> %{{.*}}[%{{.*}}] if %{{.*}} : !tile.ptr<bf16>, !tile.ring<4, tensor<8192xbf16>>
// CHECK: tile.ring_issue %{{.*}} -> %{{.*}}[%{{.*}}] if %{{.*}} : !tile.ptr<bf16>, !tile.ring<4, tensor<8192xbf16>>
// CHECK: tile.ring_wait_load %{{.*}}[%{{.*}}], %{{.*}} count %{{.*}} : !tile.ring<4, tensor<8192xbf16>> -> tensor<8192xbf16>
func.func @bulk_load_count(%x: !tile.ptr<bf16>, %n: i32, %p: i1) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
  %0 = tile.bulk_load %x count %n : !tile.ptr<bf16> -> tensor<8192xbf16>
  %r = tile.ring_alloc : !tile.ring<4, tensor<8192xbf16>>
  tile.ring_issue %x count %n -> %r[%n] if %p : !tile.ptr<bf16>, !tile.ring<4, tensor<8192xbf16>>
  tile.ring_issue %x -> %r[%n] if %p : !tile.ptr<bf16>, !tile.ring<4, tensor<8192xbf16>>
  %1 = tile.ring_wait_load %r[%n], %n count %n : !tile.ring<4, tensor<8192xbf16>> -> tensor<8192xbf16>
  return %0, %1 : tensor<8192xbf16>, tensor<8192xbf16>
}

// CHECK-LABEL: func.func @dot
// CHECK: tile.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xbf16> * tensor<32x128xbf16> -> tensor<64x128xf32>
// CHECK: tile.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x16xf16> * tensor<16x8xf16> -> tensor<16x8xf32>
func.func @dot(%a: tensor<64x32xbf16>, %b: tensor<32x128xbf16>, %acc: tensor<64x128xf32>,
               %h: tensor<16x16xf16>, %g: tensor<16x8xf16>, %c: tensor<16x8xf32>)
    -> (tensor<64x128xf32>, tensor<16x8xf32>) {
  %0 = tile.dot %a, %b, %acc : tensor<64x32xbf16> * tensor<32x128xbf16> -> tensor<64x128xf32>
  %1 = tile.dot %h, %g, %c : tensor<16x16xf16> * tensor<16x8xf16> -> tensor<16x8xf32>
  return %0, %1 : tensor<64x128xf32>, tensor<16x8xf32>
}

// CHECK-LABEL: func.func @dot_max_num_imprecise_acc
// CHECK: tile.dot %{{.*}}, %{{.*}}, %{{.*}} {maxNumImpreciseAcc = 32 : i32} : tensor<64x128xf8E4M3FN> * tensor<128x64xf8E4M3FN> -> tensor<64x64xf32>
// CHECK: tile.dot %{{.*}}, %{{.*}}, %{{.*}} {maxNumImpreciseAcc = 128 : i32} : tensor<64x128xf8E5M2> * tensor<128x64xf8E5M2> -> tensor<64x64xf32>
func.func @dot_max_num_imprecise_acc(%a: tensor<64x128xf8E4M3FN>, %b: tensor<128x64xf8E4M3FN>,
                                     %x: tensor<64x128xf8E5M2>, %y: tensor<128x64xf8E5M2>,
                                     %acc: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %0 = tile.dot %a, %b, %acc {maxNumImpreciseAcc = 32 : i32} : tensor<64x128xf8E4M3FN> * tensor<128x64xf8E4M3FN> -> tensor<64x64xf32>
  %1 = tile.dot %x, %y, %acc {maxNumImpreciseAcc = 128 : i32} : tensor<64x128xf8E5M2> * tensor<128x64xf8E5M2> -> tensor<64x64xf32>
  return %0, %1 : tensor<64x64xf32>, tensor<64x64xf32>
}

// CHECK-LABEL: func.func @rings
// CHECK: %[[R:.*]] = tile.ring_alloc : !tile.ring<2, tensor<32x64xbf16>>
// CHECK: tile.ring_issue %{{.*}}[%{{.*}}, %{{.*}}] -> %[[R]][%{{.*}}] if %{{.*}} : !tile.tensordesc<tensor<32x64xbf16>>, !tile.ring<2, tensor<32x64xbf16>>
// CHECK: tile.ring_wait_load %[[R]][%{{.*}}], %{{.*}} : !tile.ring<2, tensor<32x64xbf16>> -> tensor<32x64xbf16>
func.func @rings(%d: !tile.tensordesc<tensor<32x64xbf16>>, %i: i32, %p: i1) -> tensor<32x64xbf16> {
  %r = tile.ring_alloc : !tile.ring<2, tensor<32x64xbf16>>
  tile.ring_issue %d[%i, %i] -> %r[%i] if %p : !tile.tensordesc<tensor<32x64xbf16>>, !tile.ring<2, tensor<32x64xbf16>>
  %t = tile.ring_wait_load %r[%i], %i : !tile.ring<2, tensor<32x64xbf16>> -> tensor<32x64xbf16>
  return %t : tensor<32x64xbf16>
}

// CHECK-LABEL: func.func @ordered
// CHECK: tile.load %{{.*}} ordered acquire gpu : !tile.ptr<i32>
// CHECK: tile.store %{{.*}}, %{{.*}} ordered release sys : !tile.ptr<i32>
// CHECK: tile.fence acq_rel, cta
// CHECK: tile.fence_proxy_async global
// CHECK: tile.fence_proxy_async shared_cta
// CHECK: tile.fence_proxy_async all
func.func @ordered(%p: !tile.ptr<i32>) -> i32 {
  %v = tile.load %p ordered acquire gpu : !tile.ptr<i32>
  tile.store %p, %v ordered release sys : !tile.ptr<i32>
  tile.fence acq_rel, cta
  tile.fence_proxy_async global
  tile.fence_proxy_async shared_cta
  tile.fence_proxy_async all
  return %v : i32
}

// CHECK-LABEL: func.func @peer_poll
// CHECK: %[[B:.*]] = tile.int_to_ptr %{{.*}} {divisibility = 16 : i64} : !tile.ptr<i32>
// CHECK: tile.load %[[B]] ordered relaxed sys {poll_ns = 1000 : i64} : !tile.ptr<i32>
func.func @peer_poll(%address: i64) -> i32 {
  %b = tile.int_to_ptr %address {divisibility = 16 : i64} : !tile.ptr<i32>
  %v = tile.load %b ordered relaxed sys {poll_ns = 1000 : i64} : !tile.ptr<i32>
  return %v : i32
}

// CHECK-LABEL: func.func @cache_hints
// CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} cache cg evict evict_first {vec = 4 : i32} : tensor<128x!tile.ptr<f32>>
// CHECK: tile.load %{{.*}} evict evict_last : !tile.ptr<f32>
// CHECK: tile.load %{{.*}} cache ca : !tile.ptr<f32>
// CHECK: tile.load %{{.*}} cache cv evict evict_normal : !tile.ptr<f32>
// CHECK: tile.store %{{.*}}, %{{.*}}, %{{.*}} cache cs evict evict_first : tensor<128x!tile.ptr<f32>>
// CHECK: tile.store %{{.*}}, %{{.*}} cache wb : !tile.ptr<f32>
// CHECK: tile.store %{{.*}}, %{{.*}} cache wt : !tile.ptr<f32>
// CHECK: tile.store %{{.*}}, %{{.*}} cache cg evict evict_last : !tile.ptr<f32>
// CHECK: tile.store %{{.*}}, %{{.*}} evict evict_normal : !tile.ptr<f32>
func.func @cache_hints(%p: tensor<128x!tile.ptr<f32>>, %m: tensor<128xi1>, %o: tensor<128xf32>,
                       %s: !tile.ptr<f32>) -> tensor<128xf32> {
  %v = tile.load %p, %m, %o cache cg evict evict_first {vec = 4 : i32} : tensor<128x!tile.ptr<f32>>
  %a = tile.load %s evict evict_last : !tile.ptr<f32>
  %b = tile.load %s cache ca : !tile.ptr<f32>
  %c = tile.load %s cache cv evict evict_normal : !tile.ptr<f32>
  tile.store %p, %v, %m cache cs evict evict_first : tensor<128x!tile.ptr<f32>>
  tile.store %s, %a cache wb : !tile.ptr<f32>
  tile.store %s, %b cache wt : !tile.ptr<f32>
  tile.store %s, %c cache cg evict evict_last : !tile.ptr<f32>
  tile.store %s, %c evict evict_normal : !tile.ptr<f32>
  return %v : tensor<128xf32>
}

// CHECK-LABEL: func.func @warpgroup_dot
// CHECK: tile.ring_wait %{{.*}}[%{{.*}}], %{{.*}} : !tile.ring<2, tensor<128x64xbf16>>
// CHECK: tile.warpgroup_dot %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], %{{.*}} : !tile.ring<2, tensor<128x64xbf16>>, !tile.ring<2, tensor<256x64xbf16>>, tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK: tile.warpgroup_dot_wait %{{.*}} {pending = 1 : i32} : tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK: tile.convert_layout %{{.*}} : tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>> -> tensor<128x256xf32>
func.func @warpgroup_dot(%ra: !tile.ring<2, tensor<128x64xbf16>>, %rb: !tile.ring<2, tensor<256x64xbf16>>,
                         %acc: tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>, %i: i32) -> tensor<128x256xf32> {
  tile.ring_wait %ra[%i], %i : !tile.ring<2, tensor<128x64xbf16>>
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc : !tile.ring<2, tensor<128x64xbf16>>, !tile.ring<2, tensor<256x64xbf16>>, tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
  %w = tile.warpgroup_dot_wait %d {pending = 1 : i32} : tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
  %c = tile.convert_layout %w : tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>> -> tensor<128x256xf32>
  return %c : tensor<128x256xf32>
}

// The rows of a wgmma accumulator reduce into its slice; expand_dims gives the
// [M, 1] mma tile, broadcast the [M, N] one; p (bf16, mma layout) is the
// register A of a staged dot.
// CHECK-LABEL: func.func @mma_rows
// CHECK: tile.reduce %{{.*}} {axis = 1 : i32} : tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>> -> tensor<128xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 8>>>
// CHECK: tile.expand_dims %{{.*}} {axis = 1 : i32} : tensor<128xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 8>>> -> tensor<128x1xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK: tile.broadcast %{{.*}} : tensor<128x1xf32, #tile.mma<version = 3, numWarps = 8>> -> tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK: tile.warpgroup_dot_staged %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x64xbf16, #tile.mma<version = 3, numWarps = 8>> * tensor<64x64xbf16> -> tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>
func.func @mma_rows(%s: tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>, %v: tensor<64x64xbf16>) -> tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>> {
  %m = tile.reduce %s {axis = 1 : i32} : tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>> -> tensor<128xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 8>>> {
  ^bb0(%a: f32, %b: f32):
    %z = arith.maxnumf %a, %b : f32
    tile.reduce.return %z : f32
  }
  %e = tile.expand_dims %m {axis = 1 : i32} : tensor<128xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 8>>> -> tensor<128x1xf32, #tile.mma<version = 3, numWarps = 8>>
  %b = tile.broadcast %e : tensor<128x1xf32, #tile.mma<version = 3, numWarps = 8>> -> tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>
  %d = arith.subf %s, %b : tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>
  %p = arith.truncf %d : tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>> to tensor<128x64xbf16, #tile.mma<version = 3, numWarps = 8>>
  %o = tile.warpgroup_dot_staged %p, %v, %s : tensor<128x64xbf16, #tile.mma<version = 3, numWarps = 8>> * tensor<64x64xbf16> -> tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>
  return %o : tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>
}

// mma.sync dots: staged operands, a transposed B read K-major, A from the
// registers of the accumulator's encoding, an A in another layout (staged).
// CHECK-LABEL: func.func @warp_dot
// CHECK: tile.warp_dot %{{.*}}, %{{.*}}, %{{.*}} {bKMajor} : tensor<16x128xbf16> * tensor<32x128xbf16> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
// CHECK: tile.warp_dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xf16, #tile.mma<version = 2, numWarps = 4>> * tensor<32x16xf16> -> tensor<64x16xf32, #tile.mma<version = 2, numWarps = 4>>
// CHECK: tile.warp_dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x32xbf16, #tile.mma<version = 2, numWarps = 4, warpsN = 4>> * tensor<32x16xbf16> -> tensor<16x16xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 2>>
func.func @warp_dot(%q: tensor<16x128xbf16>, %k: tensor<32x128xbf16>, %s: tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>, %p: tensor<64x32xf16, #tile.mma<version = 2, numWarps = 4>>, %v: tensor<32x16xf16>, %o: tensor<64x16xf32, #tile.mma<version = 2, numWarps = 4>>, %w: tensor<16x32xbf16, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>, %x: tensor<32x16xbf16>, %y: tensor<16x16xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 2>>) {
  %d = tile.warp_dot %q, %k, %s {bKMajor} : tensor<16x128xbf16> * tensor<32x128xbf16> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
  %e = tile.warp_dot %p, %v, %o : tensor<64x32xf16, #tile.mma<version = 2, numWarps = 4>> * tensor<32x16xf16> -> tensor<64x16xf32, #tile.mma<version = 2, numWarps = 4>>
  %f = tile.warp_dot %w, %x, %y : tensor<16x32xbf16, #tile.mma<version = 2, numWarps = 4, warpsN = 4>> * tensor<32x16xbf16> -> tensor<16x16xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 2>>
  return
}

// The mma.sync accumulator (version 2): warpsN printed only where not 1.
// CHECK-LABEL: func.func @mma_sync_rows
// CHECK-SAME: tensor<16x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
// CHECK: tile.reduce %{{.*}} {axis = 1 : i32} : tensor<64x32xf32, #tile.mma<version = 2, numWarps = 4>> -> tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4>>>
// CHECK: tile.expand_dims %{{.*}} {axis = 1 : i32} : tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4>>> -> tensor<64x1xf32, #tile.mma<version = 2, numWarps = 4>>
// CHECK: tile.broadcast %{{.*}} : tensor<64x1xf32, #tile.mma<version = 2, numWarps = 4>> -> tensor<64x32xf32, #tile.mma<version = 2, numWarps = 4>>
// CHECK: tile.convert_layout %{{.*}} : tensor<16x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>> -> tensor<16x64xf32>
func.func @mma_sync_rows(%s: tensor<64x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 1>>,
                         %t: tensor<16x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>) -> (tensor<64x32xf32, #tile.mma<version = 2, numWarps = 4>>, tensor<16x64xf32>) {
  %m = tile.reduce %s {axis = 1 : i32} : tensor<64x32xf32, #tile.mma<version = 2, numWarps = 4>> -> tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4>>> {
  ^bb0(%a: f32, %b: f32):
    %x = arith.maxnumf %a, %b : f32
    tile.reduce.return %x : f32
  }
  %e = tile.expand_dims %m {axis = 1 : i32} : tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4>>> -> tensor<64x1xf32, #tile.mma<version = 2, numWarps = 4>>
  %b = tile.broadcast %e : tensor<64x1xf32, #tile.mma<version = 2, numWarps = 4>> -> tensor<64x32xf32, #tile.mma<version = 2, numWarps = 4>>
  %d = arith.subf %s, %b : tensor<64x32xf32, #tile.mma<version = 2, numWarps = 4>>
  %c = tile.convert_layout %t : tensor<16x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>> -> tensor<16x64xf32>
  return %d, %c : tensor<64x32xf32, #tile.mma<version = 2, numWarps = 4>>, tensor<16x64xf32>
}

// CHECK-LABEL: func.func @warpgroup_dot_max_num_imprecise_acc
// CHECK: tile.warpgroup_dot %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], %{{.*}} {maxNumImpreciseAcc = 64 : i32} : !tile.ring<2, tensor<128x128xf8E4M3FN>>, !tile.ring<2, tensor<128x128xf8E5M2>>, tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>>
func.func @warpgroup_dot_max_num_imprecise_acc(%ra: !tile.ring<2, tensor<128x128xf8E4M3FN>>, %rb: !tile.ring<2, tensor<128x128xf8E5M2>>,
                                               %acc: tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>>, %i: i32) -> tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>> {
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc {maxNumImpreciseAcc = 64 : i32} : !tile.ring<2, tensor<128x128xf8E4M3FN>>, !tile.ring<2, tensor<128x128xf8E5M2>>, tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>>
  return %d : tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>>
}

// CHECK-LABEL: func.func @tcgen05_dot
// CHECK: %[[DONE:.*]] = tile.mbarrier_alloc : !tile.mbarriers<2>
// CHECK: %[[ACC:.*]] = tile.tmem_alloc : !tile.tmem<tensor<128x256xf32>>
// CHECK: tile.tcgen05_dot %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], %[[ACC]], %{{.*}} -> %[[DONE]][%{{.*}}] : !tile.ring<3, tensor<128x64xbf16>>, !tile.ring<3, tensor<256x64xbf16>>, !tile.tmem<tensor<128x256xf32>>, !tile.mbarriers<2>
// CHECK: tile.mbarrier_wait %[[DONE]][%{{.*}}], %{{.*}} : !tile.mbarriers<2>
// CHECK: %{{.*}} = tile.tmem_load %[[ACC]] : !tile.tmem<tensor<128x256xf32>> -> tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>>
// CHECK: tile.tmem_dealloc %[[ACC]] : !tile.tmem<tensor<128x256xf32>>
func.func @tcgen05_dot(%ra: !tile.ring<3, tensor<128x64xbf16>>, %rb: !tile.ring<3, tensor<256x64xbf16>>,
                       %i: i32, %p: i1) -> tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>> {
  %done = tile.mbarrier_alloc : !tile.mbarriers<2>
  %acc = tile.tmem_alloc : !tile.tmem<tensor<128x256xf32>>
  tile.tcgen05_dot %ra[%i], %rb[%i], %acc, %p -> %done[%i] : !tile.ring<3, tensor<128x64xbf16>>, !tile.ring<3, tensor<256x64xbf16>>, !tile.tmem<tensor<128x256xf32>>, !tile.mbarriers<2>
  tile.mbarrier_wait %done[%i], %i : !tile.mbarriers<2>
  %r = tile.tmem_load %acc : !tile.tmem<tensor<128x256xf32>> -> tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>>
  tile.tmem_dealloc %acc : !tile.tmem<tensor<128x256xf32>>
  return %r : tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>>
}

// CHECK-LABEL: func.func @warp_specialize
// CHECK: %[[R:.*]] = tile.ring_alloc : !tile.ring<3, tensor<128x64xbf16>>
// CHECK: %[[E:.*]] = tile.mbarrier_alloc {per_warp} : !tile.mbarriers<3>
// CHECK: tile.warp_specialize consumer {
// CHECK: tile.ring_wait %[[R]][%{{.*}}], %{{.*}} : !tile.ring<3, tensor<128x64xbf16>>
// CHECK: tile.mbarrier_arrive %[[E]][%{{.*}}] if %{{.*}} : !tile.mbarriers<3>
// CHECK: } producer {
// CHECK: tile.mbarrier_wait %[[E]][%{{.*}}], %{{.*}} : !tile.mbarriers<3>
// CHECK: tile.ring_issue %{{.*}}[%{{.*}}, %{{.*}}] -> %[[R]][%{{.*}}] if %{{.*}} {producer} : !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>, !tile.ring<3, tensor<128x64xbf16>>
// CHECK: }
func.func @warp_specialize(%d: !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>, %i: i32, %p: i1) {
  %r = tile.ring_alloc : !tile.ring<3, tensor<128x64xbf16>>
  %e = tile.mbarrier_alloc {per_warp} : !tile.mbarriers<3>
  tile.warp_specialize consumer {
    tile.ring_wait %r[%i], %i : !tile.ring<3, tensor<128x64xbf16>>
    tile.mbarrier_arrive %e[%i] if %p : !tile.mbarriers<3>
  } producer {
    tile.mbarrier_wait %e[%i], %i : !tile.mbarriers<3>
    tile.ring_issue %d[%i, %i] -> %r[%i] if %p {producer} : !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>, !tile.ring<3, tensor<128x64xbf16>>
  }
  return
}

// The Blackwell consumers' forms: warp 0 alone waits for a slot; a barrier of
// the consumers.
// CHECK-LABEL: func.func @warp_specialize_tcgen05
// CHECK: tile.ring_wait %{{.*}}[%{{.*}}], %{{.*}} {issuer} : !tile.ring<3, tensor<128x64xbf16>>
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.mbarrier_wait
func.func @warp_specialize_tcgen05(%i: i32) {
  %r = tile.ring_alloc : !tile.ring<3, tensor<128x64xbf16>>
  %e = tile.mbarrier_alloc : !tile.mbarriers<3>
  tile.warp_specialize consumer {
    tile.ring_wait %r[%i], %i {issuer} : !tile.ring<3, tensor<128x64xbf16>>
    tile.barrier
    tile.mbarrier_wait %e[%i], %i : !tile.mbarriers<3>
  } producer {
  }
  return
}
