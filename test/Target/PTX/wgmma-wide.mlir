// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.ptx && %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// A warpgroup dot of wide boxes: A the [M = 128, K = 128] bf16 box, K-major in
// two 128-byte chunks of K (128 rows each, 16384 bytes apart); B the MN-major
// [K = 128, N = 128] box in two 64-column chunks of N (128 K rows of 128
// bytes each, 16384 bytes apart). Each ring issue is two TMA copies.
// B's descriptor: leading byte offset K * 128 = 16384 (1024 in bits 16-29:
// the stride between its 64-column chunks), stride byte offset 1024 (64 in
// bits 32-45), layout 1 in bits 62-63: 0x4000004004000000 =
// 4611686293372403712; a k16 step moves 16 rows, +2048 bytes (+128). A's
// descriptor is as in wgmma.mlir (0x4000004000010000 = 4611686293305360384),
// +2 per k16 step within a chunk; K = 64 .. 127 is the second chunk, + 16384
// bytes (+1024): the fifth step adds 1024, not 8.
// CHECK-LABEL: .entry wg_wide(
// CHECK-COUNT-4: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK-NOT: cp.async.bulk.tensor.2d.shared::cta.global
// CHECK-DAG: or.b64 %[[B0:rd[0-9]+]], %[[BS:rd[0-9]+]], 4611686293372403712;
// CHECK-DAG: or.b64 %[[A0:rd[0-9]+]], %[[AS:rd[0-9]+]], 4611686293305360384;
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, %[[A0]], %[[B0]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-DAG: add.s64 %[[B1:rd[0-9]+]], %[[BS]], 4611686293372403840;
// CHECK-DAG: add.s64 %[[A1:rd[0-9]+]], %[[AS]], 4611686293305360386;
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, %[[A1]], %[[B1]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-DAG: add.s64 %[[B2:rd[0-9]+]], %[[BS]], 4611686293372403968;
// CHECK-DAG: add.s64 %[[A2:rd[0-9]+]], %[[AS]], 4611686293305360388;
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, %[[A2]], %[[B2]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-DAG: add.s64 %[[B3:rd[0-9]+]], %[[BS]], 4611686293372404096;
// CHECK-DAG: add.s64 %[[A3:rd[0-9]+]], %[[AS]], 4611686293305360390;
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, %[[A3]], %[[B3]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-DAG: add.s64 %[[B4:rd[0-9]+]], %[[BS]], 4611686293372404224;
// CHECK-DAG: add.s64 %[[A4:rd[0-9]+]], %[[AS]], 4611686293305361408;
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, %[[A4]], %[[B4]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-DAG: add.s64 %[[B5:rd[0-9]+]], %[[BS]], 4611686293372404352;
// CHECK-DAG: add.s64 %[[A5:rd[0-9]+]], %[[AS]], 4611686293305361410;
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, %[[A5]], %[[B5]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-DAG: add.s64 %[[B6:rd[0-9]+]], %[[BS]], 4611686293372404480;
// CHECK-DAG: add.s64 %[[A6:rd[0-9]+]], %[[AS]], 4611686293305361412;
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, %[[A6]], %[[B6]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-DAG: add.s64 %[[B7:rd[0-9]+]], %[[BS]], 4611686293372404608;
// CHECK-DAG: add.s64 %[[A7:rd[0-9]+]], %[[AS]], 4611686293305361414;
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, %[[A7]], %[[B7]], p, 1, {{ *}}1, 0, {{ *}}1;
// CHECK-NOT: wgmma.mma_async
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK: wgmma.wait_group.sync.aligned 0;
#mma = #tile.mma<version = 3, numWarps = 8>
!A = !tile.ring<2, tensor<128x128xbf16>>
!B = !tile.ring<2, tensor<128x128xbf16>>
!D = !tile.tensordesc<tensor<128x128xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<128x128xbf16>>
func.func @wg_wide(%da: !D, %db: !D, %dc: !DC, %i: i32, %slot: i32, %phase: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  tile.ring_issue %da[%i, %i] -> %ra[%slot] if %p : !D, !A
  tile.ring_issue %db[%i, %i] -> %rb[%slot] if %p : !D, !B
  %zero = arith.constant dense<0.0> : tensor<128x128xf32, #mma>
  tile.ring_wait %ra[%slot], %phase : !A
  tile.ring_wait %rb[%slot], %phase : !B
  %d = tile.warpgroup_dot %ra[%slot], %rb[%slot], %zero {bMnMajor} : !A, !B, tensor<128x128xf32, #mma>
  %w = tile.warpgroup_dot_wait %d {pending = 0 : i32} : tensor<128x128xf32, #mma>
  %h = arith.truncf %w : tensor<128x128xf32, #mma> to tensor<128x128xbf16, #mma>
  tile.desc_store %dc[%i, %i], %h : !DC, tensor<128x128xbf16, #mma>
  return
}
