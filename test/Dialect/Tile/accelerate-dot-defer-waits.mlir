// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_90a -canonicalize | FileCheck %s

// MLA's key loop in small: the score of two boxes (s = q0 k0ᵀ + q1 k1ᵀ), one
// dot into the other's accumulator, then two value dots, one a box, p from
// registers. Each wgmma's wait goes to its first reader: the score chain
// issues back to back with no wait between (wgmmas of one shape on one
// accumulator are ordered), its one wait after the mask computed meanwhile
// and before the row max; the two value dots issue back to back, the first
// waited for with the second still in flight (pending = 1), both before the
// yield.
// CHECK-LABEL: func.func @score_chain_and_values
// CHECK: scf.for
// CHECK: %[[S0:.*]] = tile.warpgroup_dot %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}} : !tile.smem<tensor<64x64xbf16>>
// CHECK-NEXT: %[[S1:.*]] = tile.warpgroup_dot %{{.*}}, %{{.*}}[%{{.*}}], %[[S0]] : !tile.smem<tensor<64x64xbf16>>
// CHECK-NOT: tile.warpgroup_dot_wait
// CHECK: arith.cmpi
// CHECK: %[[SW:.*]] = tile.warpgroup_dot_wait %[[S1]] {pending = 0 : i32}
// CHECK-NEXT: arith.select %{{.*}}, %[[SW]]
// CHECK: tile.reduce
// CHECK: %[[O0:.*]] = tile.warpgroup_dot %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}} {bMnMajor}
// CHECK-NEXT: %[[O1:.*]] = tile.warpgroup_dot %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}} {bMnMajor}
// CHECK-NEXT: %[[W0:.*]] = tile.warpgroup_dot_wait %[[O0]] {pending = 1 : i32}
// CHECK-NEXT: %[[W1:.*]] = tile.warpgroup_dot_wait %[[O1]] {pending = 0 : i32}
// CHECK-NEXT: scf.yield %[[W0]], %[[W1]]
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
!R = !tile.ring<2, tensor<64x64xbf16>>
func.func @score_chain_and_values(%q: !tile.ptr<bf16>, %kd: !D, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %zs = arith.constant dense<0.0> : tensor<64x64xf32>
  %ninf = arith.constant dense<0xFF800000> : tensor<64x64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %q0 = tile.load %qp : tensor<64x64x!tile.ptr<bf16>>
  %q1p = tile.addptr %q, %c64 : !tile.ptr<bf16>, i32
  %qp1 = tile.splat %q1p : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %q1 = tile.load %qp1 : tensor<64x64x!tile.ptr<bf16>>
  %rk0 = tile.ring_alloc : !R
  %rk1 = tile.ring_alloc : !R
  tile.ring_issue %kd[%c0, %c0] -> %rk0[%c0] if %true : !D, !R
  tile.ring_issue %kd[%c0, %c64] -> %rk1[%c0] if %true : !D, !R
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a0 = %zs, %a1 = %zs) -> (tensor<64x64xf32>, tensor<64x64xf32>) : i32 {
    %slot = arith.remui %i, %c2 : i32
    %half = arith.divui %i, %c2 : i32
    %phase = arith.remui %half, %c2 : i32
    %k0 = tile.ring_wait_load %rk0[%slot], %phase : !R -> tensor<64x64xbf16>
    %k1 = tile.ring_wait_load %rk1[%slot], %phase : !R -> tensor<64x64xbf16>
    %k0t = tile.trans %k0 {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %k1t = tile.trans %k1 {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s0 = tile.dot %q0, %k0t, %zs : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %s = tile.dot %q1, %k1t, %s0 : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %cols = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<64x64xi32>
    %lim = tile.splat %i : i32 -> tensor<64x64xi32>
    %ok = arith.cmpi sle, %cols, %lim : tensor<64x64xi32>
    %sm = arith.select %ok, %s, %ninf : tensor<64x64xi1>, tensor<64x64xf32>
    %m = tile.reduce %sm {axis = 1 : i32} : tensor<64x64xf32> -> tensor<64xf32> {
    ^bb0(%x: f32, %y: f32):
      %z = arith.maxnumf %x, %y : f32
      tile.reduce.return %z : f32
    }
    %me = tile.expand_dims %m {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %mb = tile.broadcast %me : tensor<64x1xf32> -> tensor<64x64xf32>
    %d = arith.subf %sm, %mb : tensor<64x64xf32>
    %p = math.exp2 %d : tensor<64x64xf32>
    %pb = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xbf16>
    %o0 = tile.dot %pb, %k0, %a0 : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %o1 = tile.dot %pb, %k1, %a1 : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %o0, %o1 : tensor<64x64xf32>, tensor<64x64xf32>
  }
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op, %r#0 : tensor<64x64x!tile.ptr<f32>>
  %out1 = tile.addptr %out, %c64 : !tile.ptr<f32>, i32
  %op1 = tile.splat %out1 : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op1, %r#1 : tensor<64x64x!tile.ptr<f32>>
  return
}
