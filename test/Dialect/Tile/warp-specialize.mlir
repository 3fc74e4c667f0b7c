// RUN: kiln-opt %s -split-input-file -kiln-tile-warp-specialize=arch=sm_90a | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-warp-specialize=arch=sm_100a | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-warp-specialize=arch=sm_103a | FileCheck %s
// The split is the same on every arch (kiln-tile-accelerate-dot makes the
// Blackwell releases tcgen05 commits).

// The K loop of a TMA GEMM: two rings (the FULL barriers) and one array of 3
// EMPTY barriers of one arrival per consumer thread come first; the rest of the
// kernel is the consumers'. The producer recomputes the block row and column
// (the scalars the coordinates need) and runs the loop again: wait for slot
// it mod 3 to be empty (parity ((it / 3) mod 2) xor 1: the first 3 pass on
// fresh barriers), issue both boxes into it without a CTA barrier. The
// consumers wait for the full slot and release the previous iteration's slot
// after the last wait (not in iteration 0).
// CHECK-LABEL: func.func @gemm
// CHECK-NEXT: %[[RA:.*]] = tile.ring_alloc : !tile.ring<3, tensor<128x64xbf16>>
// CHECK-NEXT: %[[RB:.*]] = tile.ring_alloc : !tile.ring<3, tensor<256x64xbf16>>
// CHECK-NEXT: %[[EMPTY:.*]] = tile.mbarrier_alloc {per_warp} : !tile.mbarriers<3>
// CHECK-NEXT: tile.warp_specialize consumer {
// CHECK: %[[PID:.*]] = tile.program_id x : i32
// CHECK: %[[ROW:.*]] = arith.muli %[[PID]], %{{.*}} : i32
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %[[IT:.*]] = %{{.*}}) -> (tensor<128x256xf32>, i32)
// CHECK: %[[SLOT:.*]] = arith.remui %[[IT]], %{{.*}} : i32
// CHECK: %[[PHASE:.*]] = arith.andi %{{.*}}, %{{.*}} : i32
// CHECK: %[[A:.*]] = tile.ring_wait_load %[[RA]][%[[SLOT]]], %[[PHASE]] : !tile.ring<3, tensor<128x64xbf16>> -> tensor<128x64xbf16>
// CHECK: %[[B:.*]] = tile.ring_wait_load %[[RB]][%{{.*}}], %{{.*}} : !tile.ring<3, tensor<256x64xbf16>> -> tensor<256x64xbf16>
// CHECK: %[[AHEAD:.*]] = arith.addi %[[IT]], %{{.*}} : i32
// CHECK: %[[PREV:.*]] = arith.remui %[[AHEAD]], %{{.*}} : i32
// CHECK: %[[NOTFIRST:.*]] = arith.cmpi ne, %[[IT]], %{{.*}} : i32
// CHECK: tile.mbarrier_arrive %[[EMPTY]][%[[PREV]]] if %[[NOTFIRST]] : !tile.mbarriers<3>
// CHECK: tile.trans %[[B]]
// CHECK: tile.dot %[[A]]
// CHECK: scf.yield
// CHECK-NOT: tile.num_stages
// CHECK-NOT: tile.warp_specialize}
// CHECK: tile.desc_store
// CHECK: } producer {
// CHECK: %[[PPID:.*]] = tile.program_id x : i32
// CHECK: %[[PROW:.*]] = arith.muli %[[PPID]], %{{.*}} : i32
// CHECK: %[[N:.*]] = arith.constant 3 : i32
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: scf.for %[[PK:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[PIT:.*]] = %{{.*}}) -> (i32)
// CHECK-NEXT: %[[PSLOT:.*]] = arith.remui %[[PIT]], %[[N]] : i32
// CHECK-NEXT: %[[PDIV:.*]] = arith.divui %[[PIT]], %[[N]] : i32
// CHECK-NEXT: %[[PAND:.*]] = arith.andi %[[PDIV]], %[[ONE]] : i32
// CHECK-NEXT: %[[PPAR:.*]] = arith.xori %[[PAND]], %[[ONE]] : i32
// CHECK-NEXT: tile.mbarrier_wait %[[EMPTY]][%[[PSLOT]]], %[[PPAR]] : !tile.mbarriers<3>
// CHECK-NEXT: %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT: tile.ring_issue %{{.*}}[%[[PROW]], %[[PK]]] -> %[[RA]][%[[PSLOT]]] if %[[TRUE]] {producer}
// CHECK: tile.ring_issue %{{.*}}[%{{.*}}, %[[PK]]] -> %[[RB]][%[[PSLOT]]] if %[[TRUE]] {producer}
// CHECK: %[[PNEXT:.*]] = arith.addi %[[PIT]], %[[ONE]] : i32
// CHECK-NEXT: scf.yield %[[PNEXT]] : i32
// CHECK: }
// CHECK-NEXT: }
// CHECK-NEXT: return
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<256x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<128x256xbf16>>
func.func @gemm(%da: !DA, %db: !DB, %dc: !DC, %K: i32) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %pid = tile.program_id x : i32
  %c128 = arith.constant 128 : i32
  %c256 = arith.constant 256 : i32
  %row = arith.muli %pid, %c128 : i32
  %col = arith.muli %pid, %c256 : i32
  %cst = arith.constant 0.000000e+00 : f32
  %zero = tile.splat %cst : f32 -> tensor<128x256xf32>
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%a = %zero) -> (tensor<128x256xf32>) : i32 {
    %ta = tile.desc_load %da[%row, %k] : !DA -> tensor<128x64xbf16>
    %tb = tile.desc_load %db[%col, %k] : !DB -> tensor<256x64xbf16>
    %bt = tile.trans %tb {order = array<i64: 1, 0>} : tensor<256x64xbf16> -> tensor<64x256xbf16>
    %d = tile.dot %ta, %bt, %a : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  } {tile.num_stages = 3 : i32, tile.warp_specialize}
  %h = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.desc_store %dc[%row, %col], %h : !DC, tensor<128x256xbf16>
  return
}

// -----

// Coordinates computed in the body (a slice of the induction variable) are
// recomputed in the producer's loop; the stages shrink to what fits the
// shared memory beside the kernel's store box (2 of the 8 stages of 64 KiB).
// CHECK-LABEL: func.func @slice_and_fewer_stages
// CHECK: tile.ring_alloc : !tile.ring<2, tensor<256x128xbf16>>
// CHECK: tile.mbarrier_alloc {per_warp} : !tile.mbarriers<2>
// CHECK: } producer {
// CHECK: scf.for %[[IV:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: %[[ROW:.*]] = arith.muli %[[IV]], %{{.*}} : i32
// CHECK: tile.ring_issue %{{.*}}[%[[ROW]], %{{.*}}] -> %{{.*}}[%{{.*}}] if %{{.*}} {producer}
!D = !tile.tensordesc<tensor<256x128xbf16>>
func.func @slice_and_fewer_stages(%d: !D, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c256 = arith.constant 256 : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %row = arith.muli %i, %c256 : i32
    %t = tile.desc_load %d[%row, %c0] : !D -> tensor<256x128xbf16>
    tile.desc_store %d[%row, %c0], %t : !D, tensor<256x128xbf16>
  } {tile.num_stages = 8 : i32, tile.warp_specialize}
  return
}

// -----

// A paged coordinate: the block-table entry (a scalar load of an argument
// the kernel does not write) is read again by the producer for its own
// iteration, then the row is computed from it.
// CHECK-LABEL: func.func @paged
// CHECK: } producer {
// CHECK: scf.for %[[IV:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: tile.mbarrier_wait
// CHECK: %[[PAGE:.*]] = arith.divsi %[[IV]], %{{.*}} : i32
// CHECK: %[[P:.*]] = tile.addptr %{{.*}}, %[[PAGE]] : !tile.ptr<i32>, i32
// CHECK: %[[ID:.*]] = tile.load %[[P]] : !tile.ptr<i32>
// CHECK: %[[BASE:.*]] = arith.muli %[[ID]], %{{.*}} : i32
// CHECK: %[[OFF:.*]] = arith.remsi %[[IV]], %{{.*}} : i32
// CHECK: %[[ROW:.*]] = arith.addi %[[BASE]], %[[OFF]] : i32
// CHECK: tile.ring_issue %{{.*}}[%[[ROW]], %{{.*}}] -> %{{.*}}[%{{.*}}] if %{{.*}} {producer}
!D = !tile.tensordesc<tensor<64x64xbf16>>
func.func @paged(%d: !D, %table: !tile.ptr<i32>, %out: !tile.ptr<bf16>, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  scf.for %i = %c0 to %n step %c64 : i32 {
    %page = arith.divsi %i, %c64 : i32
    %p = tile.addptr %table, %page : !tile.ptr<i32>, i32
    %id = tile.load %p : !tile.ptr<i32>
    %base = arith.muli %id, %c64 : i32
    %off = arith.remsi %i, %c64 : i32
    %row = arith.addi %base, %off : i32
    %t = tile.desc_load %d[%row, %c0] : !D -> tensor<64x64xbf16>
    %q = tile.addptr %out, %i : !tile.ptr<bf16>, i32
    %z = arith.constant 0.0 : bf16
    tile.store %q, %z : !tile.ptr<bf16>
  } {tile.num_stages = 2 : i32, tile.warp_specialize}
  return
}

// -----

// Without tile.warp_specialize the pass leaves the loop to
// kiln-tile-pipeline-loads.
// CHECK-LABEL: func.func @not_marked
// CHECK-NOT: tile.warp_specialize
// CHECK: tile.desc_load
// CHECK: tile.num_stages = 3
!D = !tile.tensordesc<tensor<64x64xbf16>>
func.func @not_marked(%d: !D, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %t = tile.desc_load %d[%i, %c0] : !D -> tensor<64x64xbf16>
    tile.desc_store %d[%i, %c0], %t : !D, tensor<64x64xbf16>
  } {tile.num_stages = 3 : i32}
  return
}
