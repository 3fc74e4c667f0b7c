// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_100a -canonicalize | FileCheck %s --enable-var-scope
// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_103a -canonicalize | FileCheck %s --enable-var-scope

// Attention's key loop on sm_100a/sm_103a (BM = 128 rows: tcgen05's M): both
// dots are tile.tcgen05_dot_staged into the one Tensor Memory allocation of
// the kernel (the widest dot's 64 columns). q is staged once (tile.stage,
// after its load); each dot reads its B in the 128-byte swizzled ring slot
// (tile.ring_wait in place of the load; the reshape and the transpose of k go
// away): k's [BN, D] box K-major, v's [BN, D] box MN-major (bMnMajor); p is
// stored by the dot. The dots are complete when they return, so the loop
// goes on with the slots free; the accumulators live in the registers of the
// version 5 layout.
// CHECK-LABEL: func.func @attention_ring
// CHECK-SAME: tile.dots = ["{{[0-9]+}} tcgen05 staged", "{{[0-9]+}} tcgen05 staged"]
// CHECK: %[[TMEM:.*]] = tile.tmem_alloc : !tile.tmem<tensor<128x64xf32>>
// CHECK: %[[QV:.*]] = tile.load
// CHECK-NEXT: %[[Q:.*]] = tile.stage %[[QV]] : tensor<128x64xbf16> -> !tile.smem<tensor<128x64xbf16>>
// CHECK: scf.for
// CHECK-NOT: tile.ring_wait_load
// CHECK: tile.ring_wait %[[RK:.*]][%[[SLOT:.*]]], %{{.*}} : !tile.ring<2, tensor<1x64x1x64xbf16>>
// CHECK-NEXT: %[[S:.*]] = tile.tcgen05_dot_staged %[[Q]], %[[RK]][%[[SLOT]]], %{{.*}}, %[[TMEM]] : !tile.smem<tensor<128x64xbf16>> * !tile.ring<2, tensor<1x64x1x64xbf16>> -> tensor<128x64xf32, #tile.mma<version = 5, numWarps = 4>>, !tile.tmem<tensor<128x64xf32>>
// CHECK: math.exp2
// CHECK: tile.ring_wait %[[RV:.*]][%[[SLOT]]], %{{.*}} : !tile.ring<2, tensor<1x64x1x64xbf16>>
// CHECK-NEXT: %[[O:.*]] = tile.tcgen05_dot_staged %{{.*}}, %[[RV]][%[[SLOT]]], %{{.*}}, %[[TMEM]] {bMnMajor} : tensor<128x64xbf16{{.*}}> * !tile.ring<2, tensor<1x64x1x64xbf16>> -> tensor<128x64xf32, #tile.mma<version = 5, numWarps = 4>>, !tile.tmem<tensor<128x64xf32>>
// CHECK: scf.yield %[[O]]
// CHECK: tile.tmem_dealloc %[[TMEM]]
// CHECK-NEXT: return
!D = !tile.tensordesc<tensor<1x64x1x64xbf16>, swizzle = 128>
!R = !tile.ring<2, tensor<1x64x1x64xbf16>>
func.func @attention_ring(%q: !tile.ptr<bf16>, %kd: !D, %vd: !D, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<128x64x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<128x64x!tile.ptr<bf16>>
  %rk = tile.ring_alloc : !R
  %rv = tile.ring_alloc : !R
  tile.ring_issue %kd[%c0, %c0, %c0, %c0] -> %rk[%c0] if %true : !D, !R
  tile.ring_issue %vd[%c0, %c0, %c0, %c0] -> %rv[%c0] if %true : !D, !R
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<128x64xf32>) : i32 {
    %slot = arith.remui %i, %c2 : i32
    %half = arith.divui %i, %c2 : i32
    %phase = arith.remui %half, %c2 : i32
    %kb = tile.ring_wait_load %rk[%slot], %phase : !R -> tensor<1x64x1x64xbf16>
    %ks = tile.reshape %kb : tensor<1x64x1x64xbf16> -> tensor<64x64xbf16>
    %kt = tile.trans %ks {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qv, %kt, %zero : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
    %p = math.exp2 %s : tensor<128x64xf32>
    %pb = arith.truncf %p : tensor<128x64xf32> to tensor<128x64xbf16>
    %vb = tile.ring_wait_load %rv[%slot], %phase : !R -> tensor<1x64x1x64xbf16>
    %vs = tile.reshape %vb : tensor<1x64x1x64xbf16> -> tensor<64x64xbf16>
    %o = tile.dot %pb, %vs, %acc : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
    scf.yield %o : tensor<128x64xf32>
  }
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<128x64x!tile.ptr<f32>>
  tile.store %op, %acc : tensor<128x64x!tile.ptr<f32>>
  return
}
