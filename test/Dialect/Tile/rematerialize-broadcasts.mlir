// RUN: kiln-opt %s -split-input-file -kiln-tile-rematerialize-broadcasts | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-rematerialize-broadcasts=max-cost=1 | FileCheck %s --check-prefix=COST1

// A broadcast whose source is cheap to recompute becomes the source's
// expression built on the broadcast's shape: make_range through expand_dims
// becomes tile.iota along the dimension it lands in, splats and constants are
// splats of the new shape, elementwise ops and addptr are copied; the
// originals go away. The layout attributes are set directly here (they bound
// the loads that may be copied); functions returning tiles stand for kernels.

// The 2-D copy: rows[:, None] * stride + cols[None, :].
// CHECK-LABEL: func.func @copy_2d
// CHECK-SAME: (%[[X:[a-z0-9]+]]: !tile.ptr<f32> {{.*}}, %[[S:[a-z0-9]+]]: i32
// CHECK-NOT: tile.broadcast
// CHECK-NOT: tile.make_range
// CHECK-NOT: tile.expand_dims
// CHECK-DAG: %[[ROWS:.*]] = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<16x512xi32>
// CHECK-DAG: %[[STRIDE:.*]] = tile.splat %[[S]] : i32 -> tensor<16x512xi32>
// CHECK-DAG: %[[COLS:.*]] = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<16x512xi32>
// CHECK: %[[RO:.*]] = arith.muli %[[ROWS]], %[[STRIDE]] : tensor<16x512xi32>
// CHECK: %[[OFF:.*]] = arith.addi %[[RO]], %[[COLS]] : tensor<16x512xi32>
// CHECK: %[[XS:.*]] = tile.splat %[[X]] : !tile.ptr<f32> -> tensor<16x512x!tile.ptr<f32>>
// CHECK: %[[P:.*]] = tile.addptr %[[XS]], %[[OFF]] : tensor<16x512x!tile.ptr<f32>>, tensor<16x512xi32>
// CHECK: tile.load %[[P]] : tensor<16x512x!tile.ptr<f32>>
// With max-cost = 1 the column range (1) is recomputed, the row offsets (a
// range and a multiplication: 2) are not.
// COST1-LABEL: func.func @copy_2d
// COST1: tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<16x512xi32>
// COST1: tile.broadcast %{{.*}} : tensor<16x1xi32> -> tensor<16x512xi32>
// COST1-NOT: tile.broadcast
func.func @copy_2d(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %s: i32)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %rows = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %cols = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ss = tile.splat %s : i32 -> tensor<16x1xi32>
  %re = tile.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ro = arith.muli %re, %ss : tensor<16x1xi32>
  %rb = tile.broadcast %ro : tensor<16x1xi32> -> tensor<16x512xi32>
  %ce = tile.expand_dims %cols {axis = 0 : i32} : tensor<512xi32> -> tensor<1x512xi32>
  %cb = tile.broadcast %ce : tensor<1x512xi32> -> tensor<16x512xi32>
  %off = arith.addi %rb, %cb : tensor<16x512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<16x512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<16x512x!tile.ptr<f32>>, tensor<16x512xi32>
  %v = tile.load %p : tensor<16x512x!tile.ptr<f32>>
  return
}

// -----

// A row index of a 3-D tile, a unit range (a constant), a splat constant, a
// mask with a division (cost 8 + 4 <= 64).
// CHECK-LABEL: func.func @mixed
// CHECK-DAG: %[[R:.*]] = tile.iota {dim = 1 : i32, start = 8 : i32} : tensor<2x16x4xi32>
// CHECK-DAG: %[[C3:.*]] = arith.constant dense<3> : tensor<2x16x4xi32>
// CHECK: %[[A:.*]] = arith.addi %[[R]], %[[C3]] : tensor<2x16x4xi32>
// CHECK: %[[D:.*]] = arith.divsi %[[A]], %{{.*}} : tensor<2x16x4xi32>
// CHECK: %[[C1:.*]] = arith.constant dense<1> : tensor<2x16x4xi32>
// CHECK: %[[M:.*]] = arith.cmpi slt, %[[D]], %[[C1]] : tensor<2x16x4xi32>
// CHECK-NOT: tile.broadcast
// CHECK: return %[[M]]
// COST1-LABEL: func.func @mixed
// COST1: tile.broadcast %{{.*}} : tensor<1x16x1xi1> -> tensor<2x16x4xi1>
func.func @mixed(%n: i32) -> tensor<2x16x4xi1>
    attributes {tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 8 : i32, end = 24 : i32} : tensor<16xi32>
  %u = tile.make_range {start = 3 : i32, end = 4 : i32} : tensor<1xi32>
  %ue = tile.expand_dims %u {axis = 0 : i32} : tensor<1xi32> -> tensor<1x1xi32>
  %ub = tile.broadcast %ue : tensor<1x1xi32> -> tensor<16x1xi32>
  %re = tile.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %a = arith.addi %re, %ub : tensor<16x1xi32>
  %ns = tile.splat %n : i32 -> tensor<16x1xi32>
  %d = arith.divsi %a, %ns : tensor<16x1xi32>
  %one = arith.constant dense<1> : tensor<16x1xi32>
  %m = arith.cmpi slt, %d, %one : tensor<16x1xi32>
  %me = tile.expand_dims %m {axis = 0 : i32} : tensor<16x1xi1> -> tensor<1x16x1xi1>
  %mb = tile.broadcast %me : tensor<1x16x1xi1> -> tensor<2x16x4xi1>
  return %mb : tensor<2x16x4xi1>
}

// -----

// A load of a small tile (16 elements <= 128 threads x 4) whose pointers and
// mask are recomputable is copied on the broadcast's shape right after the
// original: it reads memory at the same point (before the store).
// CHECK-LABEL: func.func @per_row_index
// CHECK: %[[P:.*]] = tile.addptr %{{.*}}, %{{.*}} : tensor<16x64x!tile.ptr<i32>>, tensor<16x64xi32>
// CHECK: %[[L:.*]] = tile.load %[[P]], %{{.*}}, %{{.*}} : tensor<16x64x!tile.ptr<i32>>
// CHECK-NOT: tile.load
// CHECK: tile.store
// CHECK: %[[O:.*]] = arith.muli %[[L]], %{{.*}} : tensor<16x64xi32>
// CHECK-NOT: tile.broadcast
// CHECK: return %[[O]]
func.func @per_row_index(%idx: !tile.ptr<i32>, %n: i32, %s: i32) -> tensor<16x64xi32>
    attributes {tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %is = tile.splat %idx : !tile.ptr<i32> -> tensor<16x!tile.ptr<i32>>
  %p = tile.addptr %is, %r : tensor<16x!tile.ptr<i32>>, tensor<16xi32>
  %ns = tile.splat %n : i32 -> tensor<16xi32>
  %mask = arith.cmpi slt, %r, %ns : tensor<16xi32>
  %other = arith.constant dense<-1> : tensor<16xi32>
  %l = tile.load %p, %mask, %other : tensor<16x!tile.ptr<i32>>
  %ss = tile.splat %s : i32 -> tensor<16xi32>
  tile.store %p, %ss : tensor<16x!tile.ptr<i32>>
  %o = arith.muli %l, %ss : tensor<16xi32>
  %oe = tile.expand_dims %o {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ob = tile.broadcast %oe : tensor<16x1xi32> -> tensor<16x64xi32>
  return %ob : tensor<16x64xi32>
}

// -----

// Kept on shared memory: a load of a tile larger than one run per thread
// (1024 > 128 x 4), a loop-carried value, a load when the layout is unknown
// (no attributes).
// CHECK-LABEL: func.func @kept
// CHECK: tile.broadcast %{{.*}} : tensor<1x1024xf32> -> tensor<4x1024xf32>
func.func @kept(%x: !tile.ptr<f32>) -> tensor<4x1024xf32>
    attributes {tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %c = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %p = tile.addptr %xs, %c : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<f32>>
  %ve = tile.expand_dims %v {axis = 0 : i32} : tensor<1024xf32> -> tensor<1x1024xf32>
  %vb = tile.broadcast %ve : tensor<1x1024xf32> -> tensor<4x1024xf32>
  return %vb : tensor<4x1024xf32>
}

// -----

// A row reduction broadcast back along the reduced axis, through elementwise
// ops (x / max(|x|) per row), becomes the all-reduce of the same source
// (`broadcast`), shared by both broadcasts; the original reduction stays for
// its other use (the returned row values).
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<16x128xf32>)
// CHECK: %[[ROW:.*]] = tile.reduce %[[X]] {axis = 1 : i32} : tensor<16x128xf32> -> tensor<16xf32>
// CHECK: %[[ALL:.*]] = tile.reduce %[[X]] {axis = 1 : i32, broadcast} : tensor<16x128xf32> -> tensor<16x128xf32>
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT: %[[M:.*]] = arith.maxnumf %[[A]], %[[B]] : f32
// CHECK-NEXT: tile.reduce.return %[[M]] : f32
// CHECK: %[[S:.*]] = arith.mulf %[[ALL]], %{{.*}} : tensor<16x128xf32>
// CHECK: %[[Q:.*]] = arith.divf %[[X]], %[[S]] : tensor<16x128xf32>
// CHECK: %[[T:.*]] = arith.mulf %[[X]], %[[S]] : tensor<16x128xf32>
// CHECK-NOT: tile.broadcast
// CHECK: return %[[ROW]], %[[Q]], %[[T]]
func.func @all_reduce(%x: tensor<16x128xf32>) -> (tensor<16xf32>, tensor<16x128xf32>, tensor<16x128xf32>)
    attributes {tile.threads_per_block = 32 : i32, tile.elems_per_thread = 16 : i32} {
  %m = tile.reduce %x {axis = 1 : i32} : tensor<16x128xf32> -> tensor<16xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.maxnumf %a, %b : f32
    tile.reduce.return %c : f32
  }
  %k = arith.constant dense<0.5> : tensor<16xf32>
  %s = arith.mulf %m, %k : tensor<16xf32>
  %se = tile.expand_dims %s {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
  %sb = tile.broadcast %se : tensor<16x1xf32> -> tensor<16x128xf32>
  %q = arith.divf %x, %sb : tensor<16x128xf32>
  %sb2 = tile.broadcast %se : tensor<16x1xf32> -> tensor<16x128xf32>
  %t = arith.mulf %x, %sb2 : tensor<16x128xf32>
  return %m, %q, %t : tensor<16xf32>, tensor<16x128xf32>, tensor<16x128xf32>
}

// -----

// A reduction broadcast to another shape (the row sums of a 4x1024 tile as
// the columns of an 8x4 tile) stays on shared memory.
// CHECK-LABEL: func.func @kept_reduce
// CHECK: tile.reduce %{{.*}} {axis = 1 : i32} : tensor<4x1024xf32> -> tensor<4xf32>
// CHECK: tile.broadcast %{{.*}} : tensor<1x4xf32> -> tensor<8x4xf32>
// CHECK-NOT: broadcast}
func.func @kept_reduce(%x: tensor<4x1024xf32>) -> tensor<8x4xf32>
    attributes {tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %s = tile.reduce %x {axis = 1 : i32} : tensor<4x1024xf32> -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    %sum = arith.addf %a, %b : f32
    tile.reduce.return %sum : f32
  }
  %se = tile.expand_dims %s {axis = 0 : i32} : tensor<4xf32> -> tensor<1x4xf32>
  %sb = tile.broadcast %se : tensor<1x4xf32> -> tensor<8x4xf32>
  return %sb : tensor<8x4xf32>
}

// -----

// A reduction of two sources broadcast back along the reduced axis stays as
// it is (`broadcast` takes one source): the pair of sums and the broadcasts.
// CHECK-LABEL: func.func @kept_multi_reduce
// CHECK: %[[S:.*]]:2 = tile.reduce %{{.*}}, %{{.*}} {axis = 1 : i32} : tensor<16x128xf32>, tensor<16x128xf32> -> tensor<16xf32>, tensor<16xf32>
// CHECK-NOT: broadcast}
// CHECK: tile.expand_dims %[[S]]#1
// CHECK: tile.broadcast %{{.*}} : tensor<16x1xf32> -> tensor<16x128xf32>
func.func @kept_multi_reduce(%x: tensor<16x128xf32>, %y: tensor<16x128xf32>) -> tensor<16x128xf32>
    attributes {tile.threads_per_block = 32 : i32, tile.elems_per_thread = 16 : i32} {
  %s:2 = tile.reduce %x, %y {axis = 1 : i32} : tensor<16x128xf32>, tensor<16x128xf32> -> tensor<16xf32>, tensor<16xf32> {
  ^bb0(%a0: f32, %a1: f32, %b0: f32, %b1: f32):
    %s0 = arith.addf %a0, %b0 : f32
    %s1 = arith.addf %a1, %b1 : f32
    tile.reduce.return %s0, %s1 : f32, f32
  }
  %se = tile.expand_dims %s#1 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
  %sb = tile.broadcast %se : tensor<16x1xf32> -> tensor<16x128xf32>
  %q = arith.divf %x, %sb : tensor<16x128xf32>
  return %q : tensor<16x128xf32>
}

// -----

// CHECK-LABEL: func.func @kept_loop_carried
// CHECK: scf.for
// CHECK: tile.broadcast %{{.*}} : tensor<16x1xi32> -> tensor<16x64xi32>
func.func @kept_loop_carried(%n: index) -> tensor<16x64xi32>
    attributes {tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = arith.constant dense<0> : tensor<16x1xi32>
  %one = arith.constant dense<1> : tensor<16x1xi32>
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a = %init) -> (tensor<16x1xi32>) {
    %next = arith.addi %a, %one : tensor<16x1xi32>
    scf.yield %next : tensor<16x1xi32>
  }
  %b = tile.broadcast %acc : tensor<16x1xi32> -> tensor<16x64xi32>
  return %b : tensor<16x64xi32>
}

// -----

// CHECK-LABEL: func.func @kept_load_without_layout
// CHECK: tile.broadcast %{{.*}} : tensor<16x1xi32> -> tensor<16x64xi32>
func.func @kept_load_without_layout(%idx: !tile.ptr<i32>) -> tensor<16x64xi32> {
  %r = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %is = tile.splat %idx : !tile.ptr<i32> -> tensor<16x!tile.ptr<i32>>
  %p = tile.addptr %is, %r : tensor<16x!tile.ptr<i32>>, tensor<16xi32>
  %l = tile.load %p : tensor<16x!tile.ptr<i32>>
  %le = tile.expand_dims %l {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %lb = tile.broadcast %le : tensor<16x1xi32> -> tensor<16x64xi32>
  return %lb : tensor<16x64xi32>
}
