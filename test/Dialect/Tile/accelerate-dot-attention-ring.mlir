// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_90a -canonicalize | FileCheck %s

// Attention's key loop over a ring of 128-byte swizzled k and v boxes
// ([1, 64, 1, 64]: varlen's [1, T, Hkv, D] view), q loaded before the loop:
// q is staged once (tile.stage, after its load), both dots read their B in
// the ring slot (tile.ring_wait in place of the load; the reshape and the
// transpose of k go away), q kᵀ reads the staged q, p·v reads p from the
// registers of the mma tile; each dot is waited for at once. No layout
// conversion and no staged dot in the loop.
// CHECK-LABEL: func.func @attention_ring
// CHECK: %[[QV:.*]] = tile.load
// CHECK-NEXT: %[[Q:.*]] = tile.stage %[[QV]] : tensor<64x64xbf16> -> !tile.smem<tensor<64x64xbf16>>
// CHECK: scf.for
// CHECK-NOT: tile.convert_layout
// CHECK-NOT: tile.ring_wait_load
// CHECK: tile.ring_wait %[[RK:.*]][%{{.*}}], %{{.*}} : !tile.ring<2, tensor<1x64x1x64xbf16>>
// CHECK: %[[S:.*]] = tile.warpgroup_dot %[[Q]], %[[RK]][%{{.*}}], %{{.*}} : !tile.smem<tensor<64x64xbf16>>, !tile.ring<2, tensor<1x64x1x64xbf16>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK-NEXT: %[[SW:.*]] = tile.warpgroup_dot_wait %[[S]] {pending = 0 : i32}
// CHECK: math.exp2 %{{.*}} : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: %[[P:.*]] = arith.truncf %{{.*}} : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> to tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>
// CHECK: tile.ring_wait %[[RV:.*]][%{{.*}}], %{{.*}} : !tile.ring<2, tensor<1x64x1x64xbf16>>
// CHECK: %[[O:.*]] = tile.warpgroup_dot %[[P]], %[[RV]][%{{.*}}], %{{.*}} {bMnMajor} : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>, !tile.ring<2, tensor<1x64x1x64xbf16>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK-NEXT: %[[OW:.*]] = tile.warpgroup_dot_wait %[[O]] {pending = 0 : i32}
// CHECK-NOT: tile.convert_layout
// CHECK-NOT: tile.warpgroup_dot_staged
// CHECK: scf.yield %[[OW]]
!D = !tile.tensordesc<tensor<1x64x1x64xbf16>, swizzle = 128>
!R = !tile.ring<2, tensor<1x64x1x64xbf16>>
func.func @attention_ring(%q: !tile.ptr<bf16>, %kd: !D, %vd: !D, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<64x64x!tile.ptr<bf16>>
  %rk = tile.ring_alloc : !R
  %rv = tile.ring_alloc : !R
  tile.ring_issue %kd[%c0, %c0, %c0, %c0] -> %rk[%c0] if %true : !D, !R
  tile.ring_issue %vd[%c0, %c0, %c0, %c0] -> %rv[%c0] if %true : !D, !R
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x64xf32>) : i32 {
    %slot = arith.remui %i, %c2 : i32
    %half = arith.divui %i, %c2 : i32
    %phase = arith.remui %half, %c2 : i32
    %kb = tile.ring_wait_load %rk[%slot], %phase : !R -> tensor<1x64x1x64xbf16>
    %ks = tile.reshape %kb : tensor<1x64x1x64xbf16> -> tensor<64x64xbf16>
    %kt = tile.trans %ks {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qv, %kt, %zero : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %p = math.exp2 %s : tensor<64x64xf32>
    %pb = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xbf16>
    %vb = tile.ring_wait_load %rv[%slot], %phase : !R -> tensor<1x64x1x64xbf16>
    %vs = tile.reshape %vb : tensor<1x64x1x64xbf16> -> tensor<64x64xbf16>
    %o = tile.dot %pb, %vs, %acc : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %o : tensor<64x64xf32>
  }
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op, %acc : tensor<64x64x!tile.ptr<f32>>
  return
}

// -----

// Without the 128-byte swizzle the slots are not in a layout wgmma reads:
// the loads stay, and the dots stage their B (q is staged once all the same).
// CHECK-LABEL: func.func @unswizzled_ring
// CHECK: tile.stage
// CHECK: scf.for
// CHECK: tile.ring_wait_load
// CHECK: tile.warpgroup_dot_staged %{{.*}}, %{{.*}}, %{{.*}} : !tile.smem<tensor<64x64xbf16>> * tensor<64x64xbf16>
// CHECK-NOT: tile.warpgroup_dot {{.*}}!tile.ring
!D = !tile.tensordesc<tensor<64x64xbf16>>
!R = !tile.ring<2, tensor<64x64xbf16>>
func.func @unswizzled_ring(%q: !tile.ptr<bf16>, %kd: !D, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<64x64x!tile.ptr<bf16>>
  %rk = tile.ring_alloc : !R
  tile.ring_issue %kd[%c0, %c0] -> %rk[%c0] if %true : !D, !R
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x64xf32>) : i32 {
    %kb = tile.ring_wait_load %rk[%c0], %c0 : !R -> tensor<64x64xbf16>
    %kt = tile.trans %kb {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qv, %kt, %acc : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %s : tensor<64x64xf32>
  }
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op, %acc : tensor<64x64x!tile.ptr<f32>>
  return
}

// -----

// The key loop with its masked blocks (causal: the diagonal) under an scf.if
// on the induction variable, the mask built from ranges: the if yields the
// scores in the mma layout from both branches, the mask is rebuilt in that
// layout (tile.iota along each dimension, the compare and the select on mma
// tiles) inside the branch, so nothing in the loop converts a layout and
// p·v still reads p from registers.
// CHECK-LABEL: func.func @attention_ring_masked
// CHECK: scf.for
// CHECK-NOT: tile.convert_layout
// CHECK: %[[SW:.*]] = tile.warpgroup_dot_wait %{{.*}} {pending = 0 : i32}
// CHECK: %[[S:.*]] = scf.if %{{.*}} -> (tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>) {
// CHECK-DAG: %[[C:.*]] = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<64x64xi32, #tile.mma<version = 3, numWarps = 4>>
// CHECK-DAG: %[[R:.*]] = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<64x64xi32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: %[[D:.*]] = arith.subi %[[C]], %[[R]] : tensor<64x64xi32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: %[[V:.*]] = arith.cmpi sle, %[[D]], %{{.*}} : tensor<64x64xi32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: %[[M:.*]] = arith.select %[[V]], %[[SW]], %{{.*}} : tensor<64x64xi1, #tile.mma<version = 3, numWarps = 4>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: scf.yield %[[M]]
// CHECK: } else {
// CHECK: scf.yield %[[SW]]
// CHECK: math.exp2 %[[S]] : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: tile.warpgroup_dot %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}} {bMnMajor} : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>
// CHECK-NOT: tile.convert_layout
// CHECK-NOT: tile.warpgroup_dot_staged
// CHECK: scf.yield
!D = !tile.tensordesc<tensor<1x64x1x64xbf16>, swizzle = 128>
!R = !tile.ring<2, tensor<1x64x1x64xbf16>>
func.func @attention_ring_masked(%q: !tile.ptr<bf16>, %kd: !D, %vd: !D, %n: i32, %full: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %ninf = arith.constant dense<0xFF800000> : tensor<64x64xf32>
  %rows = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %r2 = tile.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %rb = tile.broadcast %r2 : tensor<64x1xi32> -> tensor<64x64xi32>
  %c2d = tile.expand_dims %rows {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cb = tile.broadcast %c2d : tensor<1x64xi32> -> tensor<64x64xi32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<64x64x!tile.ptr<bf16>>
  %rk = tile.ring_alloc : !R
  %rv = tile.ring_alloc : !R
  tile.ring_issue %kd[%c0, %c0, %c0, %c0] -> %rk[%c0] if %true : !D, !R
  tile.ring_issue %vd[%c0, %c0, %c0, %c0] -> %rv[%c0] if %true : !D, !R
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x64xf32>) : i32 {
    %slot = arith.remui %i, %c2 : i32
    %half = arith.divui %i, %c2 : i32
    %phase = arith.remui %half, %c2 : i32
    %kb = tile.ring_wait_load %rk[%slot], %phase : !R -> tensor<1x64x1x64xbf16>
    %ks = tile.reshape %kb : tensor<1x64x1x64xbf16> -> tensor<64x64xbf16>
    %kt = tile.trans %ks {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qv, %kt, %zero : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %diag = arith.cmpi sge, %i, %full : i32
    %sm = scf.if %diag -> (tensor<64x64xf32>) {
      %limit = arith.subi %full, %i : i32
      %lt = tile.splat %limit : i32 -> tensor<64x64xi32>
      %off = arith.subi %cb, %rb : tensor<64x64xi32>
      %vis = arith.cmpi sle, %off, %lt : tensor<64x64xi32>
      %m = arith.select %vis, %s, %ninf : tensor<64x64xi1>, tensor<64x64xf32>
      scf.yield %m : tensor<64x64xf32>
    } else {
      scf.yield %s : tensor<64x64xf32>
    }
    %p = math.exp2 %sm : tensor<64x64xf32>
    %pb = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xbf16>
    %vb = tile.ring_wait_load %rv[%slot], %phase : !R -> tensor<1x64x1x64xbf16>
    %vs = tile.reshape %vb : tensor<1x64x1x64xbf16> -> tensor<64x64xbf16>
    %o = tile.dot %pb, %vs, %acc : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %o : tensor<64x64xf32>
  }
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op, %acc : tensor<64x64x!tile.ptr<f32>>
  return
}

// -----

// One slot read by two dots (MLA's latent columns: the keys of q kᵀ and the
// values of p·k): both read it in place, after one wait; the load, its
// transpose and its reshape go away.
// CHECK-LABEL: func.func @slot_read_by_two_dots
// CHECK: scf.for
// CHECK-NOT: tile.ring_wait_load
// CHECK: tile.ring_wait %[[RK:.*]][%[[SLOT:.*]]], %{{.*}} : !tile.ring<2, tensor<1x64x1x64xbf16>>
// CHECK-NOT: tile.ring_wait
// CHECK: %[[S:.*]] = tile.warpgroup_dot %{{.*}}, %[[RK]][%[[SLOT]]], %{{.*}} : !tile.smem<tensor<64x64xbf16>>, !tile.ring<2, tensor<1x64x1x64xbf16>>
// CHECK-NEXT: tile.warpgroup_dot_wait %[[S]] {pending = 0 : i32}
// CHECK-NOT: tile.ring_wait
// CHECK: %[[O:.*]] = tile.warpgroup_dot %{{.*}}, %[[RK]][%[[SLOT]]], %{{.*}} {bMnMajor} : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>, !tile.ring<2, tensor<1x64x1x64xbf16>>
// CHECK-NEXT: %[[OW:.*]] = tile.warpgroup_dot_wait %[[O]] {pending = 0 : i32}
// CHECK-NOT: tile.ring_wait_load
// CHECK-NOT: tile.warpgroup_dot_staged
// CHECK: scf.yield %[[OW]]
!D = !tile.tensordesc<tensor<1x64x1x64xbf16>, swizzle = 128>
!R = !tile.ring<2, tensor<1x64x1x64xbf16>>
func.func @slot_read_by_two_dots(%q: !tile.ptr<bf16>, %kd: !D, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<64x64x!tile.ptr<bf16>>
  %rk = tile.ring_alloc : !R
  tile.ring_issue %kd[%c0, %c0, %c0, %c0] -> %rk[%c0] if %true : !D, !R
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x64xf32>) : i32 {
    %slot = arith.remui %i, %c2 : i32
    %half = arith.divui %i, %c2 : i32
    %phase = arith.remui %half, %c2 : i32
    %kb = tile.ring_wait_load %rk[%slot], %phase : !R -> tensor<1x64x1x64xbf16>
    %ks = tile.reshape %kb : tensor<1x64x1x64xbf16> -> tensor<64x64xbf16>
    %kt = tile.trans %ks {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qv, %kt, %zero : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %p = math.exp2 %s : tensor<64x64xf32>
    %pb = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xbf16>
    %vs = tile.reshape %kb : tensor<1x64x1x64xbf16> -> tensor<64x64xbf16>
    %o = tile.dot %pb, %vs, %acc : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %o : tensor<64x64xf32>
  }
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op, %acc : tensor<64x64x!tile.ptr<f32>>
  return
}

// -----

// A slot that a dot and something else read: the dot does not read it in
// place (the load stays; the dot stages its B).
// CHECK-LABEL: func.func @slot_read_by_a_dot_and_a_store
// CHECK: scf.for
// CHECK: %[[KB:.*]] = tile.ring_wait_load
// CHECK-NOT: tile.warpgroup_dot {{.*}}!tile.ring
// CHECK: tile.warpgroup_dot_staged
// CHECK: tile.store %{{.*}}, %[[KB]]
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
!R = !tile.ring<2, tensor<64x64xbf16>>
func.func @slot_read_by_a_dot_and_a_store(%q: !tile.ptr<bf16>, %kd: !D, %n: i32, %out: !tile.ptr<f32>, %copy: !tile.ptr<bf16>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<64x64x!tile.ptr<bf16>>
  %cp = tile.splat %copy : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %rk = tile.ring_alloc : !R
  tile.ring_issue %kd[%c0, %c0] -> %rk[%c0] if %true : !D, !R
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x64xf32>) : i32 {
    %kb = tile.ring_wait_load %rk[%c0], %c0 : !R -> tensor<64x64xbf16>
    %kt = tile.trans %kb {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qv, %kt, %acc : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    tile.store %cp, %kb : tensor<64x64x!tile.ptr<bf16>>
    scf.yield %s : tensor<64x64xf32>
  }
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op, %acc : tensor<64x64x!tile.ptr<f32>>
  return
}
