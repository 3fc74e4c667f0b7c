// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// A tcgen05 dot of wide K-major boxes (K = 128 bf16: two 128-byte chunks of
// K a row): A [128, 128] with its chunks 128 * 128 = 16384 bytes apart, B
// [64, 128] with its chunks 64 * 128 = 8192 bytes apart, each box two TMA
// copies. Both descriptors start from the K-major 128-byte-swizzle constant
// (4611756662049538048) and step +2 (32 bytes) per k16 within a chunk; the
// fifth step (k = 64) moves into the second chunk: A +1024, B +512.
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry tc_wide(
// CHECK-COUNT-4: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK-DAG: or.b64 %[[B0:rd[0-9]+]], %[[BS:rd[0-9]+]], 4611756662049538048;
// CHECK-DAG: or.b64 %[[A0:rd[0-9]+]], %[[AS:rd[0-9]+]], 4611756662049538048;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r{{[0-9]+}}], %[[A0]], %[[B0]],
// CHECK-DAG: {{(add.s64|or.b64)}} %[[A1:rd[0-9]+]], %[[AS]], 4611756662049538050;
// CHECK-DAG: {{(add.s64|or.b64)}} %[[B1:rd[0-9]+]], %[[BS]], 4611756662049538050;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r{{[0-9]+}}], %[[A1]], %[[B1]],
// CHECK-DAG: {{(add.s64|or.b64)}} %[[A2:rd[0-9]+]], %[[AS]], 4611756662049538052;
// CHECK-DAG: {{(add.s64|or.b64)}} %[[B2:rd[0-9]+]], %[[BS]], 4611756662049538052;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r{{[0-9]+}}], %[[A2]], %[[B2]],
// CHECK-DAG: {{(add.s64|or.b64)}} %[[A3:rd[0-9]+]], %[[AS]], 4611756662049538054;
// CHECK-DAG: {{(add.s64|or.b64)}} %[[B3:rd[0-9]+]], %[[BS]], 4611756662049538054;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r{{[0-9]+}}], %[[A3]], %[[B3]],
// CHECK-DAG: add.s64 %[[A4:rd[0-9]+]], %[[AS]], 4611756662049539072;
// CHECK-DAG: add.s64 %[[B4:rd[0-9]+]], %[[BS]], 4611756662049538560;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r{{[0-9]+}}], %[[A4]], %[[B4]],
// CHECK-DAG: add.s64 %[[A5:rd[0-9]+]], %[[AS]], 4611756662049539074;
// CHECK-DAG: add.s64 %[[B5:rd[0-9]+]], %[[BS]], 4611756662049538562;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r{{[0-9]+}}], %[[A5]], %[[B5]],
// CHECK-DAG: add.s64 %[[A6:rd[0-9]+]], %[[AS]], 4611756662049539076;
// CHECK-DAG: add.s64 %[[B6:rd[0-9]+]], %[[BS]], 4611756662049538564;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r{{[0-9]+}}], %[[A6]], %[[B6]],
// CHECK-DAG: add.s64 %[[A7:rd[0-9]+]], %[[AS]], 4611756662049539078;
// CHECK-DAG: add.s64 %[[B7:rd[0-9]+]], %[[BS]], 4611756662049538566;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r{{[0-9]+}}], %[[A7]], %[[B7]],
// CHECK-NOT: tcgen05.mma
// CHECK: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
!A = !tile.ring<2, tensor<128x128xbf16>>
!B = !tile.ring<2, tensor<64x128xbf16>>
!D = !tile.tensordesc<tensor<128x128xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<64x128xbf16>, swizzle = 128>
!T = !tile.tmem<tensor<128x64xf32>>
!M = !tile.mbarriers<2>
func.func @tc_wide(%da: !D, %db: !DB, %i: i32, %slot: i32, %phase: i32, %p: i1, %acc: i1) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %bars = tile.mbarrier_alloc : !M
  %t = tile.tmem_alloc : !T
  tile.ring_issue %da[%i, %i] -> %ra[%slot] if %p : !D, !A
  tile.ring_issue %db[%i, %i] -> %rb[%slot] if %p : !DB, !B
  tile.ring_wait %ra[%slot], %phase : !A
  tile.ring_wait %rb[%slot], %phase : !B
  tile.tcgen05_dot %ra[%slot], %rb[%slot], %t, %acc -> %bars[%slot] : !A, !B, !T, !M
  tile.mbarrier_wait %bars[%slot], %phase : !M
  tile.tmem_dealloc %t : !T
  return
}
