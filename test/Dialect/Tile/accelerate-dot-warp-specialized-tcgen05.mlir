// RUN: kiln-opt %s -split-input-file -kiln-tile-warp-specialize=arch=sm_100a -canonicalize -cse -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_100a | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-warp-specialize=arch=sm_103a -canonicalize -cse -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_103a | FileCheck %s

// The consumers' K loop of a warp-specialized GEMM on tcgen05: the MMAs of
// iteration it read slot s = it mod 3 in place and their commit releases it
// (the EMPTY barriers lose per_warp: one arrival, the commit; the per-warp
// release is gone). Only warp 0, whose elected lane issues, waits for the
// full slots. After the loop: the consumers' barrier (warp 0 is past its
// last wait), the wait for the last commit on EMPTY[(n + 2) mod 3] with
// parity (((n + 2) / 3) mod 2) xor 1, the accumulator read from Tensor
// Memory. The producer is unchanged.
// CHECK-LABEL: func.func @gemm
// CHECK: %[[EMPTY:.*]] = tile.mbarrier_alloc : !tile.mbarriers<3>
// CHECK-NEXT: tile.warp_specialize consumer {
// CHECK: %[[TMEM:.*]] = tile.tmem_alloc : !tile.tmem<tensor<128x256xf32>>
// CHECK: %[[LOOP:.*]]:2 = scf.for %{{.*}} iter_args(%[[N:.*]] = %{{.*}}, %[[IT:.*]] = %{{.*}}) -> (i32, i32)
// CHECK: %[[SLOT:.*]] = arith.remui %[[IT]], %{{.*}} : i32
// CHECK: tile.ring_wait %{{.*}}[%[[SLOT]]], %[[PHASE:.*]] {issuer} : !tile.ring<3, tensor<128x64xbf16>>
// CHECK-NEXT: tile.ring_wait %{{.*}}[%[[SLOT]]], %[[PHASE]] {issuer} : !tile.ring<3, tensor<256x64xbf16>>
// CHECK-NOT: tile.mbarrier_arrive
// CHECK: %[[ACCUMULATE:.*]] = arith.cmpi ne, %[[N]], %{{.*}} : i32
// CHECK-NEXT: tile.tcgen05_dot %{{.*}}[%[[SLOT]]], %{{.*}}[%[[SLOT]]], %[[TMEM]], %[[ACCUMULATE]] -> %[[EMPTY]][%[[SLOT]]]
// CHECK-NOT: tile.mbarrier_wait
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: tile.barrier
// CHECK: %[[LAST:.*]] = arith.addi %[[LOOP]]#0, %[[TWO:.*]] : i32
// CHECK: %[[LSLOT:.*]] = arith.remui %[[LAST]], %{{.*}} : i32
// CHECK: %[[LQ:.*]] = arith.divui %[[LAST]], %{{.*}} : i32
// CHECK: %[[LP:.*]] = arith.andi %[[LQ]], %{{.*}} : i32
// CHECK: %[[PARITY:.*]] = arith.xori %[[LP]], %{{.*}} : i32
// CHECK-NEXT: tile.mbarrier_wait %[[EMPTY]][%[[LSLOT]]], %[[PARITY]] : !tile.mbarriers<3>
// CHECK-NEXT: tile.tmem_load %[[TMEM]]
// CHECK: arith.select
// CHECK: tile.tmem_dealloc %[[TMEM]]
// CHECK: tile.desc_store
// CHECK: } producer {
// CHECK: tile.mbarrier_wait %[[EMPTY]]
// CHECK: tile.ring_issue {{.*}} {producer}
// CHECK: tile.ring_issue {{.*}} {producer}
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

// M = 64 has no tcgen05 form (M = 128 only): the dot goes to mma.sync (tile.warp_dot) and
// the consumer warps keep their per-warp releases. A is read from its slot into
// registers; B's slot (a 128-byte swizzled box) is read in place after its wait, in
// the iteration that waited for it (the release after the waits is the previous
// iteration's slot's).
// CHECK-LABEL: func.func @m64
// CHECK: tile.mbarrier_alloc {per_warp} : !tile.mbarriers<4>
// CHECK: %[[A:.*]] = tile.ring_wait_load
// CHECK: tile.ring_wait %[[RB:.*]][%[[S:.*]]], %{{.*}} : !tile.ring<4, tensor<128x64xbf16>>
// CHECK: tile.mbarrier_arrive
// CHECK: tile.warp_dot %[[A]], %[[RB]][%[[S]]], %{{.*}} {bKMajor} : tensor<64x64xbf16> * !tile.ring<4, tensor<128x64xbf16>>
// CHECK-NOT: tcgen05
// CHECK: } producer {
!DA = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<64x128xbf16>>
func.func @m64(%da: !DA, %db: !DB, %dc: !DC, %K: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %pid = tile.program_id x : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %row = arith.muli %pid, %c64 : i32
  %col = arith.muli %pid, %c128 : i32
  %cst = arith.constant 0.000000e+00 : f32
  %zero = tile.splat %cst : f32 -> tensor<64x128xf32>
  %c0 = arith.constant 0 : i32
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%a = %zero) -> (tensor<64x128xf32>) : i32 {
    %ta = tile.desc_load %da[%row, %k] : !DA -> tensor<64x64xbf16>
    %tb = tile.desc_load %db[%col, %k] : !DB -> tensor<128x64xbf16>
    %bt = tile.trans %tb {order = array<i64: 1, 0>} : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %ta, %bt, %a : tensor<64x64xbf16> * tensor<64x128xbf16> -> tensor<64x128xf32>
    scf.yield %d : tensor<64x128xf32>
  } {tile.num_stages = 4 : i32, tile.warp_specialize}
  %h = arith.truncf %acc : tensor<64x128xf32> to tensor<64x128xbf16>
  tile.desc_store %dc[%row, %col], %h : !DC, tensor<64x128xbf16>
  return
}

// -----

// A third ring read into registers by every consumer thread shares the EMPTY
// barriers: only the per-warp releases keep those readers in step with the
// producer, so the dot stays on mma.sync.
// CHECK-LABEL: func.func @third_load
// CHECK: tile.mbarrier_alloc {per_warp} : !tile.mbarriers<2>
// CHECK: tile.mbarrier_arrive
// CHECK: tile.warp_dot {{.*}} {bKMajor}
// CHECK-NOT: tcgen05
// CHECK: } producer {
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DS = !tile.tensordesc<tensor<128x64xf32>>
!DC = !tile.tensordesc<tensor<128x128xbf16>>
func.func @third_load(%da: !DA, %db: !DB, %ds: !DS, %dc: !DC, %K: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %pid = tile.program_id x : i32
  %c128 = arith.constant 128 : i32
  %row = arith.muli %pid, %c128 : i32
  %cst = arith.constant 0.000000e+00 : f32
  %zero = tile.splat %cst : f32 -> tensor<128x128xf32>
  %szero = tile.splat %cst : f32 -> tensor<128x64xf32>
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %acc:2 = scf.for %k = %c0 to %K step %c64 iter_args(%a = %zero, %s = %szero) -> (tensor<128x128xf32>, tensor<128x64xf32>) : i32 {
    %ta = tile.desc_load %da[%row, %k] : !DA -> tensor<128x64xbf16>
    %tb = tile.desc_load %db[%row, %k] : !DB -> tensor<128x64xbf16>
    %ts = tile.desc_load %ds[%row, %k] : !DS -> tensor<128x64xf32>
    %bt = tile.trans %tb {order = array<i64: 1, 0>} : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %ta, %bt, %a : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    %s2 = arith.addf %s, %ts : tensor<128x64xf32>
    scf.yield %d, %s2 : tensor<128x128xf32>, tensor<128x64xf32>
  } {tile.num_stages = 2 : i32, tile.warp_specialize}
  %h = arith.truncf %acc#0 : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.desc_store %dc[%row, %row], %h : !DC, tensor<128x128xbf16>
  tile.desc_store %ds[%row, %row], %acc#1 : !DS, tensor<128x64xf32>
  return
}
