// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s

// Every folder and canonicalization pattern of the tile dialect.

// splat of a constant folds to a dense constant (through the dialect's
// constant materializer).
// CHECK-LABEL: func.func @splat_of_constant
// CHECK-DAG: %[[F:.*]] = arith.constant dense<1.500000e+00> : tensor<128xf32>
// CHECK-DAG: %[[I:.*]] = arith.constant dense<7> : tensor<4x32xi32>
// CHECK-NOT: tile.splat
// CHECK: return %[[F]], %[[I]]
func.func @splat_of_constant() -> (tensor<128xf32>, tensor<4x32xi32>) {
  %c = arith.constant 1.5 : f32
  %0 = tile.splat %c : f32 -> tensor<128xf32>
  %i = arith.constant 7 : i32
  %1 = tile.splat %i : i32 -> tensor<4x32xi32>
  return %0, %1 : tensor<128xf32>, tensor<4x32xi32>
}

// -----

// A splat of a non-constant stays.
// CHECK-LABEL: func.func @splat_of_argument
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK: %[[S:.*]] = tile.splat %[[X]] : f32 -> tensor<128xf32>
// CHECK: return %[[S]]
func.func @splat_of_argument(%x: f32) -> tensor<128xf32> {
  %0 = tile.splat %x : f32 -> tensor<128xf32>
  return %0 : tensor<128xf32>
}

// -----

// broadcast to the same type folds to its source.
// CHECK-LABEL: func.func @broadcast_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<64x128xf32>)
// CHECK-NOT: tile.broadcast
// CHECK: return %[[X]]
func.func @broadcast_same_type(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %0 = tile.broadcast %x : tensor<64x128xf32> -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}

// -----

// broadcast of a splat constant folds to a wider constant.
// CHECK-LABEL: func.func @broadcast_of_dense_splat
// CHECK: %[[C:.*]] = arith.constant dense<3> : tensor<64x128xi32>
// CHECK-NOT: tile.broadcast
// CHECK: return %[[C]]
func.func @broadcast_of_dense_splat() -> tensor<64x128xi32> {
  %c = arith.constant dense<3> : tensor<1x128xi32>
  %0 = tile.broadcast %c : tensor<1x128xi32> -> tensor<64x128xi32>
  return %0 : tensor<64x128xi32>
}

// -----

// broadcast(splat(x)) -> splat(x).
// CHECK-LABEL: func.func @broadcast_of_splat
// CHECK-SAME: (%[[X:.*]]: !tile.ptr<f32>)
// CHECK: %[[S:.*]] = tile.splat %[[X]] : !tile.ptr<f32> -> tensor<64x128x!tile.ptr<f32>>
// CHECK-NOT: tile.broadcast
// CHECK: return %[[S]]
func.func @broadcast_of_splat(%x: !tile.ptr<f32>) -> tensor<64x128x!tile.ptr<f32>> {
  %0 = tile.splat %x : !tile.ptr<f32> -> tensor<1x128x!tile.ptr<f32>>
  %1 = tile.broadcast %0 : tensor<1x128x!tile.ptr<f32>> -> tensor<64x128x!tile.ptr<f32>>
  return %1 : tensor<64x128x!tile.ptr<f32>>
}

// -----

// A transpose by the identity order is its source.
// CHECK-LABEL: func.func @trans_identity
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32>)
// CHECK-NOT: tile.trans
// CHECK: return %[[X]]
func.func @trans_identity(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = tile.trans %x {order = array<i64: 0, 1>} : tensor<16x64xf32> -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

// Two transposes that cancel fold to the source.
// CHECK-LABEL: func.func @trans_of_trans_cancels
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>)
// CHECK-NOT: tile.trans
// CHECK: return %[[X]]
func.func @trans_of_trans_cancels(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = tile.trans %x {order = array<i64: 2, 0, 1>} : tensor<2x4x8xf32> -> tensor<8x2x4xf32>
  %1 = tile.trans %0 {order = array<i64: 1, 2, 0>} : tensor<8x2x4xf32> -> tensor<2x4x8xf32>
  return %1 : tensor<2x4x8xf32>
}

// -----

// Two transposes compose into one: dimension k of the result is dimension
// inner[outer[k]] of the source.
// CHECK-LABEL: func.func @trans_of_trans_composes
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>)
// CHECK-NEXT: %[[T:.*]] = tile.trans %[[X]] {order = array<i64: 2, 1, 0>} : tensor<2x4x8xf32> -> tensor<8x4x2xf32>
// CHECK-NEXT: return %[[T]]
func.func @trans_of_trans_composes(%x: tensor<2x4x8xf32>) -> tensor<8x4x2xf32> {
  %0 = tile.trans %x {order = array<i64: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %1 = tile.trans %0 {order = array<i64: 2, 0, 1>} : tensor<4x2x8xf32> -> tensor<8x4x2xf32>
  return %1 : tensor<8x4x2xf32>
}

// -----

// The transpose of a splat constant is a constant.
// CHECK-LABEL: func.func @trans_of_dense_splat
// CHECK: %[[C:.*]] = arith.constant dense<1.500000e+00> : tensor<64x16xf32>
// CHECK-NOT: tile.trans
// CHECK: return %[[C]]
func.func @trans_of_dense_splat() -> tensor<64x16xf32> {
  %c = arith.constant dense<1.5> : tensor<16x64xf32>
  %0 = tile.trans %c {order = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
  return %0 : tensor<64x16xf32>
}

// -----

// trans(splat(x)) -> splat(x).
// CHECK-LABEL: func.func @trans_of_splat
// CHECK-SAME: (%[[X:.*]]: i32)
// CHECK: %[[S:.*]] = tile.splat %[[X]] : i32 -> tensor<64x16xi32>
// CHECK-NOT: tile.trans
// CHECK: return %[[S]]
func.func @trans_of_splat(%x: i32) -> tensor<64x16xi32> {
  %0 = tile.splat %x : i32 -> tensor<16x64xi32>
  %1 = tile.trans %0 {order = array<i64: 1, 0>} : tensor<16x64xi32> -> tensor<64x16xi32>
  return %1 : tensor<64x16xi32>
}

// -----

// broadcast(broadcast(x)) -> broadcast(x).
// CHECK-LABEL: func.func @broadcast_of_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<1x1xf32>)
// CHECK: %[[B:.*]] = tile.broadcast %[[X]] : tensor<1x1xf32> -> tensor<64x128xf32>
// CHECK-NOT: tile.broadcast
// CHECK: return %[[B]]
func.func @broadcast_of_broadcast(%x: tensor<1x1xf32>) -> tensor<64x128xf32> {
  %0 = tile.broadcast %x : tensor<1x1xf32> -> tensor<1x128xf32>
  %1 = tile.broadcast %0 : tensor<1x128xf32> -> tensor<64x128xf32>
  return %1 : tensor<64x128xf32>
}

// -----

// A real broadcast stays.
// CHECK-LABEL: func.func @broadcast_kept
// CHECK: tile.broadcast %{{.*}} : tensor<1x128xf32> -> tensor<64x128xf32>
func.func @broadcast_kept(%x: tensor<1x128xf32>) -> tensor<64x128xf32> {
  %0 = tile.broadcast %x : tensor<1x128xf32> -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}

// -----

// expand_dims(splat(x)) -> splat(x).
// CHECK-LABEL: func.func @expand_dims_of_splat
// CHECK-SAME: (%[[X:.*]]: i32)
// CHECK: %[[S:.*]] = tile.splat %[[X]] : i32 -> tensor<128x1xi32>
// CHECK-NOT: tile.expand_dims
// CHECK: return %[[S]]
func.func @expand_dims_of_splat(%x: i32) -> tensor<128x1xi32> {
  %0 = tile.splat %x : i32 -> tensor<128xi32>
  %1 = tile.expand_dims %0 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  return %1 : tensor<128x1xi32>
}

// -----

// A real expand_dims stays.
// CHECK-LABEL: func.func @expand_dims_kept
// CHECK: tile.expand_dims %{{.*}} {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
func.func @expand_dims_kept() -> tensor<1x128xi32> {
  %0 = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %1 = tile.expand_dims %0 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  return %1 : tensor<1x128xi32>
}

// -----

// addptr by a zero offset (scalar or splat tile) folds to the pointer.
// CHECK-LABEL: func.func @addptr_zero
// CHECK-SAME: (%[[P:.*]]: tensor<128x!tile.ptr<f32>>, %[[S:.*]]: !tile.ptr<bf16>)
// CHECK-NOT: tile.addptr
// CHECK: return %[[P]], %[[S]], %[[S]]
func.func @addptr_zero(%p: tensor<128x!tile.ptr<f32>>, %s: !tile.ptr<bf16>)
    -> (tensor<128x!tile.ptr<f32>>, !tile.ptr<bf16>, !tile.ptr<bf16>) {
  %z = arith.constant dense<0> : tensor<128xi32>
  %0 = tile.addptr %p, %z : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %z64 = arith.constant 0 : i64
  %1 = tile.addptr %s, %z64 : !tile.ptr<bf16>, i64
  %z32 = arith.constant 0 : i32
  %2 = tile.addptr %s, %z32 : !tile.ptr<bf16>, i32
  return %0, %1, %2 : tensor<128x!tile.ptr<f32>>, !tile.ptr<bf16>, !tile.ptr<bf16>
}

// -----

// A non-zero offset stays.
// CHECK-LABEL: func.func @addptr_nonzero
// CHECK: tile.addptr %{{.*}}, %{{.*}} : !tile.ptr<bf16>, i32
func.func @addptr_nonzero(%s: !tile.ptr<bf16>) -> !tile.ptr<bf16> {
  %c = arith.constant 1 : i32
  %0 = tile.addptr %s, %c : !tile.ptr<bf16>, i32
  return %0 : !tile.ptr<bf16>
}

// -----

// A load under an all-true mask drops the mask and `other` (keeping `vec`).
// CHECK-LABEL: func.func @load_all_true
// CHECK-SAME: (%[[P:.*]]: tensor<128x!tile.ptr<f32>>, %[[S:.*]]: !tile.ptr<f32>)
// CHECK: %[[A:.*]] = tile.load %[[P]] {vec = 4 : i32} : tensor<128x!tile.ptr<f32>>
// CHECK: %[[B:.*]] = tile.load %[[P]] : tensor<128x!tile.ptr<f32>>
// CHECK: %[[C:.*]] = tile.load %[[S]] : !tile.ptr<f32>
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @load_all_true(%p: tensor<128x!tile.ptr<f32>>, %s: !tile.ptr<f32>)
    -> (tensor<128xf32>, tensor<128xf32>, f32) {
  %t = arith.constant dense<true> : tensor<128xi1>
  %o = arith.constant dense<0.0> : tensor<128xf32>
  %0 = tile.load %p, %t, %o {vec = 4 : i32} : tensor<128x!tile.ptr<f32>>
  %1 = tile.load %p, %t : tensor<128x!tile.ptr<f32>>
  %true = arith.constant true
  %2 = tile.load %s, %true : !tile.ptr<f32>
  return %0, %1, %2 : tensor<128xf32>, tensor<128xf32>, f32
}

// -----

// The cache hints survive the folds of constant masks.
// CHECK-LABEL: func.func @hints_all_true
// CHECK: %[[L:.*]] = tile.load %{{.*}} cache cg evict evict_first {vec = 4 : i32} : tensor<128x!tile.ptr<f32>>
// CHECK: tile.store %{{.*}}, %[[L]] cache cs evict evict_last {vec = 4 : i32} : tensor<128x!tile.ptr<f32>>
func.func @hints_all_true(%p: tensor<128x!tile.ptr<f32>>) {
  %t = arith.constant dense<true> : tensor<128xi1>
  %o = arith.constant dense<0.0> : tensor<128xf32>
  %0 = tile.load %p, %t, %o cache cg evict evict_first {vec = 4 : i32} : tensor<128x!tile.ptr<f32>>
  tile.store %p, %0, %t cache cs evict evict_last {vec = 4 : i32} : tensor<128x!tile.ptr<f32>>
  return
}

// -----

// A load under an all-false mask is `other`; without `other` it stays.
// CHECK-LABEL: func.func @load_all_false
// CHECK-SAME: (%[[P:.*]]: tensor<128x!tile.ptr<f32>>, %[[O:.*]]: tensor<128xf32>)
// CHECK: %[[F:.*]] = arith.constant dense<false> : tensor<128xi1>
// CHECK: %[[L:.*]] = tile.load %[[P]], %[[F]] : tensor<128x!tile.ptr<f32>>
// CHECK-NOT: tile.load
// CHECK: return %[[O]], %[[L]]
func.func @load_all_false(%p: tensor<128x!tile.ptr<f32>>, %o: tensor<128xf32>)
    -> (tensor<128xf32>, tensor<128xf32>) {
  %f = arith.constant dense<false> : tensor<128xi1>
  %0 = tile.load %p, %f, %o : tensor<128x!tile.ptr<f32>>
  %1 = tile.load %p, %f : tensor<128x!tile.ptr<f32>>
  return %0, %1 : tensor<128xf32>, tensor<128xf32>
}

// -----

// A load under a non-constant mask stays.
// CHECK-LABEL: func.func @load_dynamic_mask
// CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x!tile.ptr<f32>>
func.func @load_dynamic_mask(%p: tensor<128x!tile.ptr<f32>>, %m: tensor<128xi1>,
                             %o: tensor<128xf32>) -> tensor<128xf32> {
  %0 = tile.load %p, %m, %o : tensor<128x!tile.ptr<f32>>
  return %0 : tensor<128xf32>
}

// -----

// A store under an all-true mask drops the mask (keeping `vec`).
// CHECK-LABEL: func.func @store_all_true
// CHECK-SAME: (%[[P:.*]]: tensor<128x!tile.ptr<f32>>, %[[V:.*]]: tensor<128xf32>, %[[S:.*]]: !tile.ptr<i32>, %[[X:.*]]: i32)
// CHECK: tile.store %[[P]], %[[V]] {vec = 4 : i32} : tensor<128x!tile.ptr<f32>>
// CHECK: tile.store %[[S]], %[[X]] : !tile.ptr<i32>
func.func @store_all_true(%p: tensor<128x!tile.ptr<f32>>, %v: tensor<128xf32>,
                          %s: !tile.ptr<i32>, %x: i32) {
  %t = arith.constant dense<true> : tensor<128xi1>
  tile.store %p, %v, %t {vec = 4 : i32} : tensor<128x!tile.ptr<f32>>
  %true = arith.constant true
  tile.store %s, %x, %true : !tile.ptr<i32>
  return
}

// -----

// A store under an all-false mask is erased.
// CHECK-LABEL: func.func @store_all_false
// CHECK-NOT: tile.store
// CHECK: return
func.func @store_all_false(%p: tensor<128x!tile.ptr<f32>>, %v: tensor<128xf32>) {
  %f = arith.constant dense<false> : tensor<128xi1>
  tile.store %p, %v, %f : tensor<128x!tile.ptr<f32>>
  return
}

// -----

// A store under a non-constant mask stays.
// CHECK-LABEL: func.func @store_dynamic_mask
// CHECK: tile.store %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x!tile.ptr<f32>>
func.func @store_dynamic_mask(%p: tensor<128x!tile.ptr<f32>>, %v: tensor<128xf32>,
                              %m: tensor<128xi1>) {
  tile.store %p, %v, %m : tensor<128x!tile.ptr<f32>>
  return
}

// -----

// An iota along a unit dimension is its start everywhere.
// CHECK-LABEL: func.func @iota_unit_dim
// CHECK-DAG: %[[C:.*]] = arith.constant dense<5> : tensor<1x64xi32>
// CHECK-DAG: %[[I:.*]] = tile.iota {dim = 1 : i32, start = 5 : i32} : tensor<1x64xi32>
// CHECK: return %[[C]], %[[I]]
func.func @iota_unit_dim() -> (tensor<1x64xi32>, tensor<1x64xi32>) {
  %0 = tile.iota {dim = 0 : i32, start = 5 : i32} : tensor<1x64xi32>
  %1 = tile.iota {dim = 1 : i32, start = 5 : i32} : tensor<1x64xi32>
  return %0, %1 : tensor<1x64xi32>, tensor<1x64xi32>
}

// -----

// CHECK-LABEL: func.func @convert_layout_folds
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: %[[ONE:.*]] = tile.convert_layout %arg0 : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> -> tensor<64x64xf32>
// CHECK: return %[[ZERO]], %arg0, %arg0, %[[ONE]]
func.func @convert_layout_folds(%x: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>)
    -> (tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>,
        tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, tensor<64x64xf32>) {
  // A splat converts at compile time; a conversion to the same type and a
  // round trip vanish; a chain converts once.
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %0 = tile.convert_layout %zero : tensor<64x64xf32> -> tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  %1 = tile.convert_layout %x : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> -> tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  %b = tile.convert_layout %x : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> -> tensor<64x64xf32>
  %2 = tile.convert_layout %b : tensor<64x64xf32> -> tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  %c = tile.convert_layout %x : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> -> tensor<64x64xf32, #tile.mma<version = 3, numWarps = 8>>
  %3 = tile.convert_layout %c : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 8>> -> tensor<64x64xf32>
  return %0, %1, %2, %3 : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, tensor<64x64xf32>
}

// -----

// A reshape to the source type is its source.
// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32>)
// CHECK-NOT: tile.reshape
// CHECK: return %[[X]]
func.func @reshape_same_type(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = tile.reshape %x : tensor<16x64xf32> -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

// Two reshapes compose; back to the source type they fold away.
// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32>)
// CHECK-NEXT: %[[R:.*]] = tile.reshape %[[X]] : tensor<16x64xf32> -> tensor<1024xf32>
// CHECK-NEXT: return %[[R]], %[[X]]
func.func @reshape_of_reshape(%x: tensor<16x64xf32>) -> (tensor<1024xf32>, tensor<16x64xf32>) {
  %0 = tile.reshape %x : tensor<16x64xf32> -> tensor<4x256xf32>
  %1 = tile.reshape %0 : tensor<4x256xf32> -> tensor<1024xf32>
  %2 = tile.reshape %0 : tensor<4x256xf32> -> tensor<16x64xf32>
  return %1, %2 : tensor<1024xf32>, tensor<16x64xf32>
}

// -----

// The reshape of a splat is a splat (constant or not).
// CHECK-LABEL: func.func @reshape_of_splats
// CHECK-SAME: (%[[X:.*]]: i32)
// CHECK-DAG: %[[C:.*]] = arith.constant dense<7> : tensor<1024xi32>
// CHECK-DAG: %[[S:.*]] = tile.splat %[[X]] : i32 -> tensor<4x256xi32>
// CHECK-NOT: tile.reshape
// CHECK: return %[[C]], %[[S]]
func.func @reshape_of_splats(%x: i32) -> (tensor<1024xi32>, tensor<4x256xi32>) {
  %c = arith.constant dense<7> : tensor<16x64xi32>
  %0 = tile.reshape %c : tensor<16x64xi32> -> tensor<1024xi32>
  %s = tile.splat %x : i32 -> tensor<16x64xi32>
  %1 = tile.reshape %s : tensor<16x64xi32> -> tensor<4x256xi32>
  return %0, %1 : tensor<1024xi32>, tensor<4x256xi32>
}

// -----

// split(join(a, b)) is (a, b); join(split(x)) is x.
// CHECK-LABEL: func.func @split_join_cancel
// CHECK-SAME: (%[[A:.*]]: tensor<16x64xf32>, %[[B:.*]]: tensor<16x64xf32>, %[[X:.*]]: tensor<8x2xi32>)
// CHECK-NOT: tile.join
// CHECK-NOT: tile.split
// CHECK: return %[[A]], %[[B]], %[[X]]
func.func @split_join_cancel(%a: tensor<16x64xf32>, %b: tensor<16x64xf32>, %x: tensor<8x2xi32>)
    -> (tensor<16x64xf32>, tensor<16x64xf32>, tensor<8x2xi32>) {
  %j = tile.join %a, %b : tensor<16x64xf32> -> tensor<16x64x2xf32>
  %lo, %hi = tile.split %j : tensor<16x64x2xf32> -> tensor<16x64xf32>
  %l, %h = tile.split %x : tensor<8x2xi32> -> tensor<8xi32>
  %y = tile.join %l, %h : tensor<8xi32> -> tensor<8x2xi32>
  return %lo, %hi, %y : tensor<16x64xf32>, tensor<16x64xf32>, tensor<8x2xi32>
}

// -----

// A join of the halves in the other order stays.
// CHECK-LABEL: func.func @join_swapped_halves_kept
// CHECK: tile.split
// CHECK: tile.join
func.func @join_swapped_halves_kept(%x: tensor<8x2xi32>) -> tensor<8x2xi32> {
  %l, %h = tile.split %x : tensor<8x2xi32> -> tensor<8xi32>
  %y = tile.join %h, %l : tensor<8xi32> -> tensor<8x2xi32>
  return %y : tensor<8x2xi32>
}

// -----

// In a function with tile.cluster_dims, the cluster size is a constant and the
// index inside the cluster along a unit axis is 0; the rest stays.
// CHECK-LABEL: func.func @cluster_constants
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-DAG: %[[X:.*]] = tile.cluster_cta_id x : i32
// CHECK-DAG: %[[R:.*]] = tile.cluster_cta_rank : i32
// CHECK-NOT: tile.cluster_size
// CHECK: return %[[C4]], %[[X]], %[[C0]], %[[C0]], %[[R]]
func.func @cluster_constants() -> (i32, i32, i32, i32, i32)
    attributes {tile.cluster_dims = array<i32: 4, 1, 1>} {
  %0 = tile.cluster_size : i32
  %1 = tile.cluster_cta_id x : i32
  %2 = tile.cluster_cta_id y : i32
  %3 = tile.cluster_cta_id z : i32
  %4 = tile.cluster_cta_rank : i32
  return %0, %1, %2, %3, %4 : i32, i32, i32, i32, i32
}

// -----

// Without tile.cluster_dims nothing folds; a 1x1x1 cluster has rank 0.
// CHECK-LABEL: func.func @cluster_unknown
// CHECK: tile.cluster_size : i32
// CHECK: tile.cluster_cta_id y : i32
// CHECK: tile.cluster_cta_rank : i32
func.func @cluster_unknown() -> (i32, i32, i32) {
  %0 = tile.cluster_size : i32
  %1 = tile.cluster_cta_id y : i32
  %2 = tile.cluster_cta_rank : i32
  return %0, %1, %2 : i32, i32, i32
}

// -----

// CHECK-LABEL: func.func @cluster_of_one
// CHECK: %[[C0:.*]] = arith.constant 0 : i32
// CHECK: return %[[C0]]
func.func @cluster_of_one() -> i32
    attributes {tile.cluster_dims = array<i32: 1, 1, 1>} {
  %0 = tile.cluster_cta_rank : i32
  return %0 : i32
}
