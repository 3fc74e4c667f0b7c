// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_90a -canonicalize | FileCheck %s

// A recurrence over ring slots (the KDA prefill chain's form): the state h is
// carried by the loop from the last dot of the body, and the first dots take
// it (as bf16) for A. In program order no dot's A is in the wgmma registers
// yet: the first one (v) is staged; its result brings A of the last dot (hn)
// there, which then reads its slot in place; the state it yields is carried
// in the wgmma registers, which brings A of the dots before it (o, o2) there
// too: they read their slot in place as well, after the fact. o and o2 share
// one transposed view of their slot (CSE merged their `q.T`).
// CHECK-LABEL: func.func @recurrence_ring
// CHECK: scf.for {{.*}} -> (tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>)
// CHECK: %[[V:.*]] = tile.warpgroup_dot_staged
// CHECK: %[[O:.*]] = tile.warpgroup_dot %{{.*}}, %[[RQ:.*]][%{{.*}}], %{{.*}} : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>, !tile.ring<2, tensor<64x64xbf16>>
// CHECK: tile.warpgroup_dot %{{.*}}, %[[RQ]][%{{.*}}], %{{.*}} : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>, !tile.ring<2, tensor<64x64xbf16>>
// CHECK: %[[HN:.*]] = tile.warpgroup_dot %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}} {bMnMajor} : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>, !tile.ring<2, tensor<64x64xbf16>>
// CHECK-NEXT: %[[HW:.*]] = tile.warpgroup_dot_wait %[[HN]] {pending = 0 : i32}
// CHECK-NOT: tile.warpgroup_dot_staged
// CHECK: scf.yield %[[HW]]
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
