// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_90a -canonicalize | FileCheck %s

// A recurrence over ring slots (the KDA prefill chain's form): the state h is
// carried by the loop from the last dot of the body, and the first dots take
// it (as bf16, and the low part of its two-part split) for A. In program
// order no dot's A is in the wgmma registers yet. The first whose A the loop
// computes from what it carries (v) gets that A converted into the registers;
// v then reads its slot in place, its result brings A of the last dot (hn)
// there, which reads its slot in place too; the state hn yields is carried in
// the wgmma registers, its split is computed there, the forced conversion
// folds away, and o and o2 (which share one transposed view of their slot:
// CSE merged their `q.T`) read their slot in place with A from the
// registers. No dot is staged; the loop converts only o2's result, for its
// store.
// CHECK-LABEL: func.func @recurrence_ring
// CHECK-NOT: tile.warpgroup_dot_staged
// CHECK: scf.for {{.*}} iter_args(%[[H:.*]] = %{{.*}}) -> (tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>)
// CHECK-NEXT: arith.remui
// CHECK-NOT: tile.convert_layout
// CHECK: %[[HB:.*]] = arith.truncf %[[H]] : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> to tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>
// CHECK: %[[HL:.*]] = arith.truncf %{{.*}} : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> to tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>
// CHECK-NOT: tile.convert_layout
// CHECK: %[[V:.*]] = tile.warpgroup_dot %[[HB]], %[[RW:.*]][%{{.*}}], %{{.*}} : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>, !tile.ring<2, tensor<64x64xbf16>>
// CHECK-NOT: tile.convert_layout
// CHECK: tile.warpgroup_dot %[[HB]], %[[RQ:.*]][%{{.*}}], %{{.*}} : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>, !tile.ring<2, tensor<64x64xbf16>>
// CHECK: tile.warpgroup_dot %[[HL]], %[[RQ]][%{{.*}}], %{{.*}} : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>, !tile.ring<2, tensor<64x64xbf16>>
// CHECK: tile.convert_layout
// CHECK: tile.store
// CHECK-NOT: tile.convert_layout
// CHECK: %[[HN:.*]] = tile.warpgroup_dot %{{.*}}, %{{.*}}[%{{.*}}], %[[H]] {bMnMajor} : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>, !tile.ring<2, tensor<64x64xbf16>>
// CHECK-NEXT: %[[HW:.*]] = tile.warpgroup_dot_wait %[[HN]] {pending = 0 : i32}
// CHECK-NEXT: scf.yield %[[HW]]
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
!R = !tile.ring<2, tensor<64x64xbf16>>
func.func @recurrence_ring(%wd: !D, %qd: !D, %kd: !D, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %rw = tile.ring_alloc : !R
  %rq = tile.ring_alloc : !R
  %rk = tile.ring_alloc : !R
  tile.ring_issue %wd[%c0, %c0] -> %rw[%c0] if %true : !D, !R
  tile.ring_issue %qd[%c0, %c0] -> %rq[%c0] if %true : !D, !R
  tile.ring_issue %kd[%c0, %c0] -> %rk[%c0] if %true : !D, !R
  %h = scf.for %i = %c0 to %n step %c1 iter_args(%h = %zero) -> (tensor<64x64xf32>) : i32 {
    %slot = arith.remui %i, %c2 : i32
    %half = arith.divui %i, %c2 : i32
    %phase = arith.remui %half, %c2 : i32
    %hb = arith.truncf %h : tensor<64x64xf32> to tensor<64x64xbf16>
    %hx = arith.extf %hb : tensor<64x64xbf16> to tensor<64x64xf32>
    %hr = arith.subf %h, %hx : tensor<64x64xf32>
    %hl = arith.truncf %hr : tensor<64x64xf32> to tensor<64x64xbf16>
    %wb = tile.ring_wait_load %rw[%slot], %phase : !R -> tensor<64x64xbf16>
    %wt = tile.trans %wb {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %v = tile.dot %hb, %wt, %zero : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %qb = tile.ring_wait_load %rq[%slot], %phase : !R -> tensor<64x64xbf16>
    %qt = tile.trans %qb {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %o = tile.dot %hb, %qt, %zero : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %o2 = tile.dot %hl, %qt, %o : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
    tile.store %op, %o2 : tensor<64x64x!tile.ptr<f32>>
    %vb = arith.truncf %v : tensor<64x64xf32> to tensor<64x64xbf16>
    %kb = tile.ring_wait_load %rk[%slot], %phase : !R -> tensor<64x64xbf16>
    %hn = tile.dot %vb, %kb, %h : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %hn : tensor<64x64xf32>
  }
  %hp = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %hp, %h : tensor<64x64x!tile.ptr<f32>>
  return
}
