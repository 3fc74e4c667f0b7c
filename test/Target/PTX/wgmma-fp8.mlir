// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.ptx && %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// The FP8 form: e4m3 x e5m2 boxes of 128 columns (128-byte rows), so each of
// the four wgmma steps is k32 and its descriptors advance by 32 bytes.
// CHECK: .extern .shared .align 1024 .b8 __kiln_dynamic_smem[];
// CHECK-LABEL: .entry wg(
// CHECK: wgmma.fence.sync.aligned;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e5m2
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK: cvt.rn.bf16x2.f32
// CHECK: fence.proxy.async.shared::cta;
// CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
!A = !tile.ring<2, tensor<128x128xf8E4M3FN>>
!B = !tile.ring<2, tensor<256x128xf8E5M2>>
!DA = !tile.tensordesc<tensor<128x128xf8E4M3FN>, swizzle = 128>
!DB = !tile.tensordesc<tensor<256x128xf8E5M2>, swizzle = 128>
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
