// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.ptx && %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// A warpgroup dot of two 128-byte swizzled ring slots (sm_90a only: wgmma does
// not exist on sm_100a/sm_103a), waited for, narrowed to bf16 in the mma layout
// and stored through a TMA box. 8 warps: each warpgroup one 64-row slab, K = 64
// in four k16 steps whose descriptors advance by 32 bytes (2 in the address
// field). The rings and the box need 160 KiB: dynamic shared memory.
// CHECK: .extern .shared .align 1024 .b8 __kiln_dynamic_smem[];
// CHECK-LABEL: .entry wg(
// CHECK: wgmma.fence.sync.aligned;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK: cvt.rn.bf16x2.f32
// CHECK: fence.proxy.async.shared::cta;
// CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
!A = !tile.ring<2, tensor<128x64xbf16>>
!B = !tile.ring<2, tensor<256x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<256x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<128x256xbf16>>
#mma = #tile.mma<version = 3, numWarps = 8>
func.func @wg(%da: !DA, %db: !DB, %dc: !DC, %i: i32, %slot: i32, %phase: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  tile.ring_issue %da[%i, %i] -> %ra[%slot] if %p : !DA, !A
  tile.ring_issue %db[%i, %i] -> %rb[%slot] if %p : !DB, !B
  %zero = arith.constant dense<0.0> : tensor<128x256xf32, #mma>
  tile.ring_wait %ra[%slot], %phase : !A
  tile.ring_wait %rb[%slot], %phase : !B
  %d = tile.warpgroup_dot %ra[%slot], %rb[%slot], %zero : !A, !B, tensor<128x256xf32, #mma>
  %w = tile.warpgroup_dot_wait %d {pending = 0 : i32} : tensor<128x256xf32, #mma>
  %h = arith.truncf %w : tensor<128x256xf32, #mma> to tensor<128x256xbf16, #mma>
  tile.desc_store %dc[%i, %i], %h : !DC, tensor<128x256xbf16, #mma>
  return
}
