// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.ptx && %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// A warpgroup dot whose B is MN-major: the [K = 64, N = 64] bf16 box (64 rows
// of 128 bytes, N contiguous) written by TMA with the 128-byte swizzle. Its
// descriptor: start address >> 4, leading byte offset 64 * 128 = 8192 (512 in
// bits 16-29: the stride between 64-column chunks of N, unused with one),
// stride byte offset 1024 (64 in bits 32-45: 8 K rows), layout 1 (128-byte
// swizzle) in bits 62-63: the constant 0x4000004002000000 =
// 4611686293338849280. A k16 step moves 16 rows: +2048 bytes, 128 in the
// address field. A is K-major as in wgmma.mlir (0x4000004000010000 =
// 4611686293305360384, +2 per k16 step). Every wgmma sets imm-trans-b = 1
// (the last immediate) and leaves imm-trans-a = 0.
// LLVM folds the or of the constant fields into the k-step additions: the
// B descriptor's steps add 128, 256, 384 to the constant, A's 2, 4, 6.
// CHECK-LABEL: .entry wg_mn(
// CHECK-DAG: or.b64 %[[B0:rd[0-9]+]], %[[BS:rd[0-9]+]], 4611686293338849280;
// CHECK-DAG: wgmma.fence.sync.aligned;
// CHECK-DAG: or.b64 %[[A0:rd[0-9]+]], %[[AS:rd[0-9]+]], 4611686293305360384;
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, %[[A0]], %[[B0]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-DAG: add.s64 %[[B1:rd[0-9]+]], %[[BS]], 4611686293338849408;
// CHECK-DAG: add.s64 %[[A1:rd[0-9]+]], %[[AS]], 4611686293305360386;
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, %[[A1]], %[[B1]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-DAG: add.s64 %[[B2:rd[0-9]+]], %[[BS]], 4611686293338849536;
// CHECK-DAG: add.s64 %[[A2:rd[0-9]+]], %[[AS]], 4611686293305360388;
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, %[[A2]], %[[B2]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-DAG: add.s64 %[[B3:rd[0-9]+]], %[[BS]], 4611686293338849664;
// CHECK-DAG: add.s64 %[[A3:rd[0-9]+]], %[[AS]], 4611686293305360390;
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, %[[A3]], %[[B3]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-NOT: wgmma.mma_async
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK: wgmma.wait_group.sync.aligned 0;
!A = !tile.ring<2, tensor<128x64xbf16>>
!B = !tile.ring<2, tensor<64x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<128x64xbf16>>
#mma = #tile.mma<version = 3, numWarps = 8>
func.func @wg_mn(%da: !DA, %db: !DB, %dc: !DC, %i: i32, %slot: i32, %phase: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  tile.ring_issue %da[%i, %i] -> %ra[%slot] if %p : !DA, !A
  tile.ring_issue %db[%i, %i] -> %rb[%slot] if %p : !DB, !B
  %zero = arith.constant dense<0.0> : tensor<128x64xf32, #mma>
  tile.ring_wait %ra[%slot], %phase : !A
  tile.ring_wait %rb[%slot], %phase : !B
  %d = tile.warpgroup_dot %ra[%slot], %rb[%slot], %zero {bMnMajor} : !A, !B, tensor<128x64xf32, #mma>
  %w = tile.warpgroup_dot_wait %d {pending = 0 : i32} : tensor<128x64xf32, #mma>
  %h = arith.truncf %w : tensor<128x64xf32, #mma> to tensor<128x64xbf16, #mma>
  tile.desc_store %dc[%i, %i], %h : !DC, tensor<128x64xbf16, #mma>
  return
}
