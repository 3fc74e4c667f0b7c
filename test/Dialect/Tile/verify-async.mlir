// RUN: kiln-opt %s -split-input-file -kiln-tile-verify-async | FileCheck %s

// kiln-tile-verify-async accepts the protocols kiln's passes produce and
// leaves the IR unchanged. Broken protocols: verify-async-invalid.mlir.

!R = !tile.ring<3, tensor<64x64xbf16>>
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
!ACC = tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>

// A warp-specialized wgmma K loop (kiln-tile-warp-specialize, then
// kiln-tile-accelerate-dot on sm_90a): the producer waits for slot it mod 3
// to be empty (parity ((it / 3) mod 2) xor 1: the first three pass on fresh
// barriers) and fills it; the consumers wait for the fill, issue the wgmma,
// wait until one is in flight and release the previous iteration's slot.
// CHECK-LABEL: func.func @ws_wgmma
// CHECK: tile.mbarrier_arrive
// CHECK: tile.mbarrier_wait
func.func @ws_wgmma(%da: !D, %K: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %ra = tile.ring_alloc : !R
  %empty = tile.mbarrier_alloc {per_warp} : !tile.mbarriers<3>
  tile.warp_specialize consumer {
    %cst = arith.constant dense<0.0> : tensor<64x64xf32>
    %init = tile.convert_layout %cst : tensor<64x64xf32> -> !ACC
    %r:2 = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %init, %it = %c0) -> (!ACC, i32) : i32 {
      %slot = arith.remui %it, %c3 : i32
      %n = arith.divui %it, %c3 : i32
      %phase = arith.andi %n, %c1 : i32
      tile.ring_wait %ra[%slot], %phase : !R
      %d = tile.warpgroup_dot %ra[%slot], %ra[%slot], %acc : !R, !R, !ACC
      %w = tile.warpgroup_dot_wait %d {pending = 1 : i32} : !ACC
      %ahead = arith.addi %it, %c2 : i32
      %prev = arith.remui %ahead, %c3 : i32
      %notfirst = arith.cmpi ne, %it, %c0 : i32
      tile.mbarrier_arrive %empty[%prev] if %notfirst : !tile.mbarriers<3>
      %next = arith.addi %it, %c1 : i32
      scf.yield %w, %next : !ACC, i32
    }
    %f = tile.warpgroup_dot_wait %r#0 {pending = 0 : i32} : !ACC
  } producer {
    %n = scf.for %k = %c0 to %K step %c64 iter_args(%it = %c0) -> (i32) : i32 {
      %slot = arith.remui %it, %c3 : i32
      %q = arith.divui %it, %c3 : i32
      %p = arith.andi %q, %c1 : i32
      %parity = arith.xori %p, %c1 : i32
      tile.mbarrier_wait %empty[%slot], %parity : !tile.mbarriers<3>
      tile.ring_issue %da[%c0, %k] -> %ra[%slot] if %true {producer} : !D, !R
      %next = arith.addi %it, %c1 : i32
      scf.yield %next : i32
    }
  }
  return
}

// -----

!R = !tile.ring<3, tensor<64x64xbf16>>
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
!ACC = tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>

// A pipelined wgmma K loop (kiln-tile-pipeline-loads, then
// kiln-tile-accelerate-dot on sm_90a): fills 0 and 1 before the loop (each
// under k < K: a predicated-off fill copies nothing and is never waited for);
// iteration it waits for slot it mod 3, keeps one wgmma in flight and refills
// the slot the previous iteration's wgmma read.
// CHECK-LABEL: func.func @pipelined_wgmma
func.func @pipelined_wgmma(%da: !D, %K: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %ra = tile.ring_alloc : !R
  %p0 = arith.cmpi slt, %c0, %K : i32
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %p0 : !D, !R
  %p1 = arith.cmpi slt, %c64, %K : i32
  tile.ring_issue %da[%c0, %c64] -> %ra[%c1] if %p1 : !D, !R
  %cst = arith.constant dense<0.0> : tensor<64x64xf32>
  %init = tile.convert_layout %cst : tensor<64x64xf32> -> !ACC
  %r:2 = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %init, %it = %c0) -> (!ACC, i32) : i32 {
    %slot = arith.remui %it, %c3 : i32
    %n = arith.divui %it, %c3 : i32
    %phase = arith.andi %n, %c1 : i32
    tile.ring_wait %ra[%slot], %phase : !R
    %d = tile.warpgroup_dot %ra[%slot], %ra[%slot], %acc : !R, !R, !ACC
    %w = tile.warpgroup_dot_wait %d {pending = 1 : i32} : !ACC
    %knext = arith.addi %k, %c128 : i32
    %pn = arith.cmpi slt, %knext, %K : i32
    %ahead = arith.addi %it, %c2 : i32
    %refill = arith.remui %ahead, %c3 : i32
    tile.ring_issue %da[%c0, %knext] -> %ra[%refill] if %pn : !D, !R
    %next = arith.addi %it, %c1 : i32
    scf.yield %w, %next : !ACC, i32
  }
  %f = tile.warpgroup_dot_wait %r#0 {pending = 0 : i32} : !ACC
  return
}

// -----

!R = !tile.ring<2, tensor<128x64xbf16>>
!D = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!T = !tile.tmem<tensor<128x128xf32>>

// A tcgen05 K loop (kiln-tile-accelerate-dot on sm_100a): dot n commits to
// barrier n mod 2; before refilling, iteration n waits for dot n - 1 (at n = 0
// the fresh barrier 1's previous phase, which passes at once); after the
// loop, the last dot.
// CHECK-LABEL: func.func @tcgen05
func.func @tcgen05(%da: !D, %K: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %ra = tile.ring_alloc : !R
  %p0 = arith.cmpi slt, %c0, %K : i32
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %p0 : !D, !R
  %done = tile.mbarrier_alloc : !tile.mbarriers<2>
  %acc = tile.tmem_alloc : !T
  %n = scf.for %k = %c0 to %K step %c64 iter_args(%it = %c0) -> (i32) : i32 {
    %slot = arith.remui %it, %c2 : i32
    %q = arith.divui %it, %c2 : i32
    %phase = arith.andi %q, %c1 : i32
    tile.ring_wait %ra[%slot], %phase : !R
    %accumulate = arith.cmpi ne, %it, %c0 : i32
    tile.tcgen05_dot %ra[%slot], %ra[%slot], %acc, %accumulate -> %done[%slot] : !R, !R, !T, !tile.mbarriers<2>
    // wait for dot it - 1: barrier (it + 1) mod 2, parity ((it - 1) / 2) mod 2
    // (it = 0: barrier 1's previous phase, parity 1)
    %it1 = arith.addi %it, %c1 : i32
    %pb = arith.remui %it1, %c2 : i32
    %pq = arith.divui %it1, %c2 : i32
    %pa = arith.andi %pq, %c1 : i32
    %pp = arith.xori %pa, %c1 : i32
    tile.mbarrier_wait %done[%pb], %pp : !tile.mbarriers<2>
    %knext = arith.addi %k, %c64 : i32
    %pn = arith.cmpi slt, %knext, %K : i32
    tile.ring_issue %da[%c0, %knext] -> %ra[%pb] if %pn : !D, !R
    scf.yield %it1 : i32
  }
  // the last dot, n - 1: barrier (n + 1) mod 2, parity ((n - 1) / 2) mod 2
  %n1 = arith.addi %n, %c1 : i32
  %lb = arith.remui %n1, %c2 : i32
  %lq = arith.divui %n1, %c2 : i32
  %la = arith.andi %lq, %c1 : i32
  %lp = arith.xori %la, %c1 : i32
  tile.mbarrier_wait %done[%lb], %lp : !tile.mbarriers<2>
  return
}

// -----

!R = !tile.ring<2, tensor<1024xf32>>

// A ring of bulk copies allocated, drained and released on every iteration
// of an outer loop (a pipelined loop inside another, as kda_fused_decode's
// token passes): the release invalidates the slots' barriers and the next
// tile.ring_alloc initializes fresh ones, so each pass's fills are fill 0
// of their slots again, waited for with parity 0.
// CHECK-LABEL: func.func @ring_per_pass
// CHECK: tile.ring_release
func.func @ring_per_pass(%x: !tile.ptr<f32>, %P: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %true = arith.constant true
  scf.for %p = %c0 to %P step %c1 : i32 {
    %ra = tile.ring_alloc : !R
    tile.ring_issue %x -> %ra[%c0] if %true : !tile.ptr<f32>, !R
    tile.ring_issue %x -> %ra[%c1] if %true : !tile.ptr<f32>, !R
    %a = tile.ring_wait_load %ra[%c0], %c0 : !R -> tensor<1024xf32>
    %b = tile.ring_wait_load %ra[%c1], %c0 : !R -> tensor<1024xf32>
    tile.ring_release %ra : !R
  }
  return
}
