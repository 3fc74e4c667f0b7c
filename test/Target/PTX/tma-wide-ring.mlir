// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// Wide boxes: a 128-byte swizzled box whose rows span W > 128 bytes is W / 128
// TMA copies of one 128-byte column chunk each (the descriptor's encoded box),
// chunk c at inner coordinate + c * 64 (bf16) and at buffer + c * rows * 128;
// the load's one expect_tx counts the whole box.
// CHECK-SM90: .target sm_90a
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a

// A ring slot of the [64, 128] box: the issue copies both chunks into the
// slot (slot s at ring + s * 16384; the chunks at + 0 and + 8192 from it),
// one expect_tx of 16384 bytes.
// CHECK-LABEL: .entry wide_ring(
// CHECK-DAG: add.s32 %[[RJ1:r[0-9]+]], %[[RJ:r[0-9]+]], 64;
// CHECK-DAG: add.s64 %[[C1:rd[0-9]+]], %[[C0:rd[0-9]+]], 8192;
// CHECK: mov.b32 %[[RBYTES:r[0-9]+]], 16384;
// CHECK-NEXT: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [%[[BAR:rd[0-9]+]]], %[[RBYTES]];
// CHECK-NOT: expect_tx
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%[[C0]]], [%rd{{[0-9]+}}, {%[[RJ]], %[[RI:r[0-9]+]]}], [%[[BAR]]];
// CHECK-NEXT: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%[[C1]]], [%rd{{[0-9]+}}, {%[[RJ1]], %[[RI]]}], [%[[BAR]]];
// CHECK-NOT: cp.async.bulk.tensor.2d.shared::cta.global
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: ld.shared.v{{[24]}}.b{{32|64}}
!R = !tile.ring<2, tensor<64x128xbf16>>
!D = !tile.tensordesc<tensor<64x128xbf16>, swizzle = 128>
func.func @wide_ring(%src: !D, %dst: !D, %i: i32, %j: i32, %slot: i32, %phase: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.ring_alloc : !R
  tile.ring_issue %src[%i, %j] -> %r[%slot] if %p : !D, !R
  %t = tile.ring_wait_load %r[%slot], %phase : !R -> tensor<64x128xbf16>
  tile.desc_store %dst[%i, %j], %t : !D, tensor<64x128xbf16>
  return
}
