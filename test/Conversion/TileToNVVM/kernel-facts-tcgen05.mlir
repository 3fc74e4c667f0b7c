// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_100a | FileCheck %s
// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_103a | FileCheck %s

// The facts of a Tensor Memory dot (kernel-facts.mlir for the others): the
// tcgen05 ops (alloc, mma, its commit to an mbarrier, ld, dealloc), the
// mbarriers, and the elected lane that issues the mma.
// CHECK-LABEL: llvm.func ptx_kernelcc @tcgen05(
// CHECK-SAME: tile.features = ["elect", "mbarrier", "tcgen05"]}
// CHECK-NOT: kiln.feature
// CHECK: nvvm.tcgen05.alloc
// CHECK: nvvm.tcgen05.mma
// CHECK: nvvm.tcgen05.commit
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.dealloc
// CHECK-NOT: kiln.feature
!A = !tile.ring<2, tensor<128x64xbf16>>
!B = !tile.ring<2, tensor<64x64xbf16>>
!T = !tile.tmem<tensor<128x64xf32>>
!M = !tile.mbarriers<2>
func.func @tcgen05(%out: !tile.ptr<f32>, %i: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %done = tile.mbarrier_alloc : !M
  %acc = tile.tmem_alloc : !T
  tile.tcgen05_dot %ra[%i], %rb[%i], %acc, %p -> %done[%i] : !A, !B, !T, !M
  tile.mbarrier_wait %done[%i], %i : !M
  %r = tile.tmem_load %acc : !T -> tensor<128x64xf32, #tile.mma<version = 5, numWarps = 4>>
  tile.tmem_dealloc %acc : !T
  %c = tile.convert_layout %r : tensor<128x64xf32, #tile.mma<version = 5, numWarps = 4>> -> tensor<128x64xf32>
  %s = tile.splat %out : !tile.ptr<f32> -> tensor<128x64x!tile.ptr<f32>>
  tile.store %s, %c : tensor<128x64x!tile.ptr<f32>>
  return
}
