// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --enable-var-scope --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --enable-var-scope --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// The staged tcgen05 dot (attention's q kᵀ on sm_100a/sm_103a): A staged once
// by tile.stage ([128, 128] bf16, K-major: two 64-column chunks of K 16 KiB
// apart), B [K = 128, N = 64] stored by the dot in the MN-major 128-byte
// swizzle layout, the accumulator added in registers.
// - A's descriptor: the K-major constant (4611756662049538048), +2 (32 bytes)
//   per k16 within a chunk, +1024 (16 KiB) into the second chunk.
// - B's descriptor: leading byte offset K * 128 = 16384 (1024 at bit 16),
//   stride 1024 bytes, 128-byte swizzle: 4611756662116581376; +128 (2048
//   bytes: 16 rows of 128 bytes) per k16.
// - The instruction descriptor: f32 D, bf16 A and B, B MN-major (bit 16),
//   N >> 3 = 8, M >> 4 = 8: 0x08110490 = 135333008.
// - Eight tcgen05.mma (K / 16) from one elected thread of warp 0, the first
//   not reading the accumulator (enable-input-d false), then the commit to
//   the op's mbarrier; every thread waits for the phase (try_wait.parity),
//   reads its row's 64 columns (two 32x32b.x32 loads), adds the incoming
//   accumulator, and fences its reads before a CTA barrier.
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry tc_staged(
// CHECK: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
// CHECK: fence.proxy.async.shared::cta;
// CHECK-NEXT: bar.sync 0;
// CHECK: fence.proxy.async.shared::cta;
// CHECK-NEXT: bar.sync 0;
// CHECK: elect.sync
// CHECK-DAG: or.b64 %[[B0:rd[0-9]+]], %[[BS:rd[0-9]+]], 4611756662116581376;
// CHECK-DAG: or.b64 %[[A0:rd[0-9]+]], %[[AS:rd[0-9]+]], 4611756662049538048;
// CHECK: tcgen05.fence::after_thread_sync;
// CHECK-DAG: mov.pred %[[FIRST:p[0-9]+]], 0;
// CHECK-DAG: mov.b32 %[[IDESC:r[0-9]+]], 135333008;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%[[TMEM:r[0-9]+]]], %[[A0]], %[[B0]], %[[IDESC]], %[[FIRST]];
// CHECK-NEXT: or.b64 %[[A1:rd[0-9]+]], %[[AS]], 4611756662049538050;
// CHECK-NEXT: add.s64 %[[B1:rd[0-9]+]], %[[BS]], 4611756662116581504;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%[[TMEM]]], %[[A1]], %[[B1]], %[[IDESC]], %[[REST:p[0-9]+]];
// CHECK: tcgen05.mma
// CHECK: tcgen05.mma
// CHECK: add.s64 %[[A4:rd[0-9]+]], %[[AS]], 4611756662049539072;
// CHECK-NEXT: add.s64 %[[B4:rd[0-9]+]], %[[BS]], 4611756662116581888;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%[[TMEM]]], %[[A4]], %[[B4]], %[[IDESC]], %[[REST]];
// CHECK-COUNT-3: tcgen05.mma
// CHECK-NOT: tcgen05.mma
// CHECK: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: tcgen05.fence::after_thread_sync;
// CHECK-COUNT-2: tcgen05.ld.sync.aligned.32x32b.x32.b32
// CHECK: tcgen05.wait::ld.sync.aligned;
// CHECK-COUNT-64: add.rn.f32
// CHECK: tcgen05.fence::before_thread_sync;
// CHECK-NEXT: bar.sync 0;
// CHECK: tcgen05.dealloc.cta_group::1.sync.aligned.b32
!T = !tile.tmem<tensor<128x64xf32>>
#mma = #tile.mma<version = 5, numWarps = 4>
func.func @tc_staged(%q: !tile.ptr<bf16>, %k: !tile.ptr<bf16>, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %t = tile.tmem_alloc : !T
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<128x128x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<128x128x!tile.ptr<bf16>>
  %qs = tile.stage %qv : tensor<128x128xbf16> -> !tile.smem<tensor<128x128xbf16>>
  %kp = tile.splat %k : !tile.ptr<bf16> -> tensor<128x64x!tile.ptr<bf16>>
  %kv = tile.load %kp : tensor<128x64x!tile.ptr<bf16>>
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<128x64x!tile.ptr<f32>>
  %c = tile.load %op : tensor<128x64x!tile.ptr<f32>>
  %acc = tile.convert_layout %c : tensor<128x64xf32> -> tensor<128x64xf32, #mma>
  %d = tile.tcgen05_dot_staged %qs, %kv, %acc, %t : !tile.smem<tensor<128x128xbf16>> * tensor<128x64xbf16> -> tensor<128x64xf32, #mma>, !T
  %r = tile.convert_layout %d : tensor<128x64xf32, #mma> -> tensor<128x64xf32>
  tile.store %op, %r : tensor<128x64x!tile.ptr<f32>>
  tile.tmem_dealloc %t : !T
  return
}
