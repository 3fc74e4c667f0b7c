// RUN: kiln-opt %s -split-input-file -kiln-tile-verify-async -verify-diagnostics

// Broken protocols kiln-tile-verify-async rejects, each at the op that breaks
// it (the accepted forms: verify-async.mlir).

!R = !tile.ring<3, tensor<64x64xbf16>>
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
!ACC = tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>

// A missing arrive: the consumers never release a slot, so the producer's
// fourth wait for an empty slot never passes and the consumers' fourth wait
// for a full one neither: the kernel hangs.
func.func @missing_arrive(%da: !D, %K: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
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
      // expected-error @+1 {{async protocol: waits forever: no thread completes the phase it waits for}}
      tile.ring_wait %ra[%slot], %phase : !R
      %d = tile.warpgroup_dot %ra[%slot], %ra[%slot], %acc : !R, !R, !ACC
      %w = tile.warpgroup_dot_wait %d {pending = 0 : i32} : !ACC
      %next = arith.addi %it, %c1 : i32
      scf.yield %w, %next : !ACC, i32
    }
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

// An early release: the consumers arrive on the empty barrier of the slot
// their wgmma reads before waiting for it; the producer refills the slot
// under the wgmma.
func.func @release_before_the_wgmma_is_done(%da: !D, %K: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
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
      tile.mbarrier_arrive %empty[%slot] if %true : !tile.mbarriers<3>
      %w = tile.warpgroup_dot_wait %d {pending = 0 : i32} : !ACC
      %next = arith.addi %it, %c1 : i32
      scf.yield %w, %next : !ACC, i32
    }
  } producer {
    %n = scf.for %k = %c0 to %K step %c64 iter_args(%it = %c0) -> (i32) : i32 {
      %slot = arith.remui %it, %c3 : i32
      %q = arith.divui %it, %c3 : i32
      %p = arith.andi %q, %c1 : i32
      %parity = arith.xori %p, %c1 : i32
      tile.mbarrier_wait %empty[%slot], %parity : !tile.mbarriers<3>
      // expected-error @+1 {{async protocol: refills slot 0 before any wait of this thread observes its release (fill 0 consumed)}}
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

// A producer that does not wait for the empty barrier overwrites a slot the
// consumers have not read.
func.func @producer_without_the_empty_wait(%da: !D, %K: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
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
      %w = tile.warpgroup_dot_wait %d {pending = 0 : i32} : !ACC
      tile.mbarrier_arrive %empty[%slot] if %true : !tile.mbarriers<3>
      %next = arith.addi %it, %c1 : i32
      scf.yield %w, %next : !ACC, i32
    }
  } producer {
    %n = scf.for %k = %c0 to %K step %c64 iter_args(%it = %c0) -> (i32) : i32 {
      %slot = arith.remui %it, %c3 : i32
      // expected-error @+2 {{async protocol: refills slot 0 before fill 0 was waited for}}
      // expected-note @+1 {{the previous fill}}
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

// An early overwrite: with two wgmmas left in flight, the refill of the slot
// the previous iteration's wgmma reads comes before that wgmma is done.
func.func @refill_under_a_wgmma(%da: !D, %K: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
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
    // expected-note @+1 {{the MMA}}
    %d = tile.warpgroup_dot %ra[%slot], %ra[%slot], %acc : !R, !R, !ACC
    %w = tile.warpgroup_dot_wait %d {pending = 2 : i32} : !ACC
    %knext = arith.addi %k, %c128 : i32
    %pn = arith.cmpi slt, %knext, %K : i32
    %ahead = arith.addi %it, %c2 : i32
    %refill = arith.remui %ahead, %c3 : i32
    // expected-error @+1 {{async protocol: refills slot 0 while an MMA that reads it may still run}}
    tile.ring_issue %da[%c0, %knext] -> %ra[%refill] if %pn : !D, !R
    %next = arith.addi %it, %c1 : i32
    scf.yield %w, %next : !ACC, i32
  }
  return
}

// -----

!R = !tile.ring<3, tensor<64x64xbf16>>
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>

// A wait with the wrong parity: fill 1 of a slot completes the barrier's
// phase 1 (parity 1); parity 0 would pass on phase 0 or hang.
func.func @wrong_parity(%da: !D) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %ra = tile.ring_alloc : !R
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %true : !D, !R
  %a = tile.ring_wait_load %ra[%c0], %c0 : !R -> tensor<64x64xbf16>
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %true : !D, !R
  // expected-error @+1 {{async protocol: waits for fill 1 of slot 0 with parity 0; that fill's parity is 1}}
  %b = tile.ring_wait_load %ra[%c0], %c0 : !R -> tensor<64x64xbf16>
  return
}

// -----

// A wrong byte count: the reader of a bulk-copied slot reads 64 elements
// where the copy (and the expect_tx of the slot's barrier) moved n: it would
// read bytes nobody wrote for this fill. (The bytes of each copy are the
// op's own at this level: the box, or min(count, slot) elements, whose
// 16-byte units the lowering proves.)
func.func @reads_more_than_the_copy_wrote(%x: !tile.ptr<bf16>, %n: i32 {tile.divisibility = 8 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %ring = tile.ring_alloc : !tile.ring<2, tensor<64xbf16>>
  // expected-note @+1 {{the fill}}
  tile.ring_issue %x count %n -> %ring[%c0] if %true : !tile.ptr<bf16>, !tile.ring<2, tensor<64xbf16>>
  // expected-error @+1 {{async protocol: reads 128 bytes of slot 0, whose fill copied 16 (the bytes its barrier expected) (with the kernel's integer arguments = 1)}}
  %t = tile.ring_wait_load %ring[%c0], %c0 count %c64 : !tile.ring<2, tensor<64xbf16>> -> tensor<64xbf16>
  return
}

// -----

!R = !tile.ring<2, tensor<64x64xbf16>>
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>

// A copy still in flight when the kernel ends (the TMA unit would write into
// shared memory the next block may own).
func.func @copy_never_waited_for(%da: !D) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %true = arith.constant true
  %ra = tile.ring_alloc : !R
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %true : !D, !R
  // expected-error @+1 {{async protocol: the kernel can end before this copy into slot 1 is waited for}}
  tile.ring_issue %da[%c0, %c0] -> %ra[%c1] if %true : !D, !R
  %a = tile.ring_wait_load %ra[%c0], %c0 : !R -> tensor<64x64xbf16>
  return
}

// -----

!R = !tile.ring<2, tensor<64x64xbf16>>
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>

// A ring released while a copy into it is in flight (its bytes would go to
// other buffers under the TMA unit's write).
func.func @release_before_the_copy_lands(%da: !D) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %true = arith.constant true
  %ra = tile.ring_alloc : !R
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %true : !D, !R
  // expected-note @+1 {{the copy}}
  tile.ring_issue %da[%c0, %c0] -> %ra[%c1] if %true : !D, !R
  %a = tile.ring_wait_load %ra[%c0], %c0 : !R -> tensor<64x64xbf16>
  // expected-error @+1 {{async protocol: releases the ring before the copy into slot 1 is waited for}}
  tile.ring_release %ra : !R
  %b = tile.ring_wait_load %ra[%c1], %c0 : !R -> tensor<64x64xbf16>
  return
}

// -----

!R = !tile.ring<2, tensor<64x64xbf16>>
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
!ACC = tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>

// A ring released while a wgmma may still read it (no wait_group 0 first).
func.func @release_under_an_mma(%da: !D) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %cst = arith.constant dense<0.0> : tensor<64x64xf32>
  %init = tile.convert_layout %cst : tensor<64x64xf32> -> !ACC
  %ra = tile.ring_alloc : !R
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %true : !D, !R
  tile.ring_wait %ra[%c0], %c0 : !R
  // expected-note @+1 {{the MMA}}
  %d = tile.warpgroup_dot %ra[%c0], %ra[%c0], %init : !R, !R, !ACC
  // expected-error @+1 {{async protocol: releases the ring while an MMA that reads it may still run}}
  tile.ring_release %ra : !R
  %w = tile.warpgroup_dot_wait %d {pending = 0 : i32} : !ACC
  return
}

// -----

!R = !tile.ring<2, tensor<64x64xbf16>>
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>

// A slot index past the ring.
func.func @slot_outside_the_ring(%da: !D) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c2 = arith.constant 2 : i32
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %ra = tile.ring_alloc : !R
  // expected-error @+1 {{async protocol: issues into slot 2 of a ring of 2 slots}}
  tile.ring_issue %da[%c0, %c0] -> %ra[%c2] if %true : !D, !R
  return
}

// -----

!R = !tile.ring<2, tensor<128x64xbf16>>
!D = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!T = !tile.tmem<tensor<128x128xf32>>

// A tcgen05 MMA reading a slot before its fill is waited for.
func.func @mma_before_the_wait(%da: !D) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %false = arith.constant false
  %ra = tile.ring_alloc : !R
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %true : !D, !R
  %done = tile.mbarrier_alloc : !tile.mbarriers<2>
  %acc = tile.tmem_alloc : !T
  // expected-error @+1 {{async protocol: reads slot 0 of a ring before waiting for the fill it holds}}
  tile.tcgen05_dot %ra[%c0], %ra[%c0], %acc, %false -> %done[%c0] : !R, !R, !T, !tile.mbarriers<2>
  return
}

// -----

// A second read of a gather ring's slot (`again`) in an iteration that did
// not wait for the slot's fill.
func.func @again_before_wait(%p: !tile.ptr<bf16>, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %x = tile.splat %p : !tile.ptr<bf16> -> tensor<32x64x!tile.ptr<bf16>>
  %r = tile.ring_alloc : !tile.ring<2, tensor<32x64xbf16>>
  tile.ring_issue %x -> %r[%c0] if %true : tensor<32x64x!tile.ptr<bf16>>, !tile.ring<2, tensor<32x64xbf16>>
  // expected-error @+1 {{async protocol: reads slot 0 again with parity 0 but no wait of that fill came before}}
  %t = tile.ring_wait_load %r[%c0], %c0 {again} : !tile.ring<2, tensor<32x64xbf16>> -> tensor<32x64xbf16>
  %u = tile.ring_wait_load %r[%c0], %c0 : !tile.ring<2, tensor<32x64xbf16>> -> tensor<32x64xbf16>
  tile.ring_release %r : !tile.ring<2, tensor<32x64xbf16>>
  return
}

// -----

!R = !tile.ring<2, tensor<32x128xbf16>>
#w = #tile.mma<version = 2, numWarps = 4, warpsN = 4>

// An mma.sync dot reading its B slot in place before the slot's fill is waited
// for (the wait comes after it).
func.func @warp_dot_before_the_wait(%k: !tile.ptr<bf16>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %p = tile.splat %k : !tile.ptr<bf16> -> tensor<32x128x!tile.ptr<bf16>>
  %a = arith.constant dense<1.0> : tensor<16x128xbf16>
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %ring = tile.ring_alloc {swizzled} : !R
  tile.ring_issue %p -> %ring[%c0] if %true : tensor<32x128x!tile.ptr<bf16>>, !R
  %zero = arith.constant dense<0.0> : tensor<16x32xf32, #w>
  // expected-error @+1 {{async protocol: reads slot 0 of a ring before waiting for the fill it holds}}
  %d = tile.warp_dot %a, %ring[%c0], %zero {bKMajor} : tensor<16x128xbf16> * !R -> tensor<16x32xf32, #w>
  tile.ring_wait %ring[%c0], %c0 : !R
  tile.ring_release %ring : !R
  return
}
