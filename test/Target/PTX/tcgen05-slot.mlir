// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --enable-var-scope --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --enable-var-scope --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// The staged tcgen05 dot reading its B in a ring slot (attention's k and v in
// the key loop's ring: a wide [64, 128] bf16 box, 128-byte swizzled, its two
// 64-column chunks 64 * 128 = 8192 bytes apart).
// - q kᵀ: A staged once ([128, 128], K-major), B the box's [N = 64, K = 128]
//   matrix K-major: both descriptors the K-major constant
//   (4611756662049538048), +2 per k16 within a chunk, the fifth step (k = 64)
//   into the next chunk: A +1024 (16 KiB), B +512 (8 KiB). Nothing is stored,
//   so no proxy fence; the instruction descriptor K-major, N = 64:
//   0x08100490 = 135267472.
// - p·v: A (p, in tcgen05.ld's registers) stored K-major and fenced to the
//   async proxy, B the box's [K = 64, N = 128] matrix MN-major: leading byte
//   offset K * 128 = 8192 (512 at bit 16): 4611756662083026944, +128 (16 rows)
//   per k16; the instruction descriptor MN-major B, N = 128: 0x08210490 =
//   136381584.
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry tc_slot(
// CHECK: fence.proxy.async.shared::cta;
// CHECK-NOT: fence.proxy.async
// CHECK: or.b64 %[[B0:rd[0-9]+]], %[[BS:rd[0-9]+]], 4611756662049538048;
// CHECK: or.b64 %[[A0:rd[0-9]+]], %[[AS:rd[0-9]+]], 4611756662049538048;
// CHECK: mov.b32 %[[IDESC:r[0-9]+]], 135267472;
// CHECK-NEXT: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%[[TMEM:r[0-9]+]]], %[[A0]], %[[B0]], %[[IDESC]],
// CHECK-NEXT: or.b64 %[[A1:rd[0-9]+]], %[[AS]], 4611756662049538050;
// CHECK-NEXT: {{(add.s64|or.b64)}} %[[B1:rd[0-9]+]], %[[BS]], 4611756662049538050;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%[[TMEM]]], %[[A1]], %[[B1]], %[[IDESC]],
// CHECK: add.s64 %[[A4:rd[0-9]+]], %[[AS]], 4611756662049539072;
// CHECK-NEXT: add.s64 %[[B4:rd[0-9]+]], %[[BS]], 4611756662049538560;
// CHECK-NEXT: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%[[TMEM]]], %[[A4]], %[[B4]], %[[IDESC]],
// CHECK-COUNT-3: tcgen05.mma
// CHECK-NEXT: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// CHECK: fence.proxy.async.shared::cta;
// CHECK: or.b64 %[[V0:rd[0-9]+]], %[[BS]], 4611756662083026944;
// CHECK: mov.b32 %[[IDESC2:r[0-9]+]], 136381584;
// CHECK-NEXT: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%[[TMEM]]], %{{rd[0-9]+}}, %[[V0]], %[[IDESC2]],
// CHECK: add.s64 %[[V1:rd[0-9]+]], %[[BS]], 4611756662083027072;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%[[TMEM]]], %{{rd[0-9]+}}, %[[V1]], %[[IDESC2]],
// CHECK-COUNT-2: tcgen05.mma
// CHECK-NEXT: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
!T = !tile.tmem<tensor<128x128xf32>>
!D = !tile.tensordesc<tensor<64x128xbf16>, swizzle = 128>
!R = !tile.ring<2, tensor<64x128xbf16>>
#mma = #tile.mma<version = 5, numWarps = 4>
func.func @tc_slot(%q: !tile.ptr<bf16>, %kd: !D, %out: !tile.ptr<f32>, %out2: !tile.ptr<f32>, %slot: i32, %phase: i32, %pred: i1) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %t = tile.tmem_alloc : !T
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<128x128x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<128x128x!tile.ptr<bf16>>
  %qs = tile.stage %qv : tensor<128x128xbf16> -> !tile.smem<tensor<128x128xbf16>>
  %r = tile.ring_alloc : !R
  tile.ring_issue %kd[%c0, %c0] -> %r[%slot] if %pred : !D, !R
  tile.ring_wait %r[%slot], %phase : !R
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<128x64x!tile.ptr<f32>>
  %c = tile.load %op : tensor<128x64x!tile.ptr<f32>>
  %acc = tile.convert_layout %c : tensor<128x64xf32> -> tensor<128x64xf32, #mma>
  %s = tile.tcgen05_dot_staged %qs, %r[%slot], %acc, %t : !tile.smem<tensor<128x128xbf16>> * !R -> tensor<128x64xf32, #mma>, !T
  %p = arith.truncf %s : tensor<128x64xf32, #mma> to tensor<128x64xbf16, #mma>
  %op2 = tile.splat %out2 : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  %c2 = tile.load %op2 : tensor<128x128x!tile.ptr<f32>>
  %acc2 = tile.convert_layout %c2 : tensor<128x128xf32> -> tensor<128x128xf32, #mma>
  %o = tile.tcgen05_dot_staged %p, %r[%slot], %acc2, %t {bMnMajor} : tensor<128x64xbf16, #mma> * !R -> tensor<128x128xf32, #mma>, !T
  %ob = tile.convert_layout %o : tensor<128x128xf32, #mma> -> tensor<128x128xf32>
  tile.store %op2, %ob : tensor<128x128x!tile.ptr<f32>>
  tile.ring_release %r : !R
  tile.tmem_dealloc %t : !T
  return
}
