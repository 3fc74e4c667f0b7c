// RUN: kiln-opt %s -kiln-tile-warp-specialize=arch=sm_90a -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_90a | FileCheck %s

// The consumers' K loop of a warp-specialized GEMM on wgmma: the dot reads the
// slots in place, so the release of the previous iteration's slot (to the
// producer's empty barrier) moves after the wgmma wait that leaves one group
// in flight, the current one: the group that read that slot is done.
// CHECK-LABEL: func.func @gemm
// CHECK: %[[EMPTY:.*]] = tile.mbarrier_alloc {per_warp} : !tile.mbarriers<3>
// CHECK: tile.warp_specialize consumer {
// CHECK: scf.for
// CHECK:   tile.ring_wait
// CHECK:   tile.ring_wait
// CHECK-NOT: tile.mbarrier_arrive
// CHECK:   %[[D:.*]] = tile.warpgroup_dot
// CHECK-NEXT: %[[W:.*]] = tile.warpgroup_dot_wait %[[D]] {pending = 1 : i32}
// CHECK-NEXT: tile.mbarrier_arrive %[[EMPTY]][%{{.*}}] if %{{.*}} : !tile.mbarriers<3>
// CHECK:   scf.yield %[[W]], %{{.*}}
// CHECK: tile.warpgroup_dot_wait %{{.*}} {pending = 0 : i32}
// CHECK: tile.desc_store
// CHECK: } producer {
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
