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

// [64, 128] bf16: two chunks of 64 rows of 128 bytes (8192 bytes apart), in
// the load's and the store's own 1024-byte aligned buffers.
// CHECK-LABEL: .entry wide_copy(
// CHECK-DAG: .shared .align 1024 .b8 __kiln_tma_box_1[16384];
// CHECK-DAG: .shared .align 1024 .b8 __kiln_tma_box_0[16384];
// CHECK: add.s32 %[[J1:r[0-9]+]], %[[J:r[0-9]+]], 64;
// CHECK: mov.b32 %[[BYTES:r[0-9]+]], 16384;
// CHECK-NEXT: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [__kiln_tma_mbarrier_0], %[[BYTES]];
// CHECK-NOT: expect_tx
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [__kiln_tma_box_0], [%rd{{[0-9]+}}, {%[[J]], %[[I:r[0-9]+]]}], [__kiln_tma_mbarrier_0];
// CHECK-NEXT: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [__kiln_tma_box_0+8192], [%rd{{[0-9]+}}, {%[[J1]], %[[I]]}], [__kiln_tma_mbarrier_0];
// CHECK-NOT: cp.async.bulk.tensor
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: fence.proxy.async.shared::cta;
// CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%[[J]], %[[I]]}], [__kiln_tma_box_1];
// CHECK-NEXT: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%[[J1]], %[[I]]}], [__kiln_tma_box_1+8192];
// CHECK-NEXT: cp.async.bulk.commit_group;
!D = !tile.tensordesc<tensor<64x128xbf16>, swizzle = 128>
func.func @wide_copy(%src: !D, %dst: !D, %i: i32, %j: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %t = tile.desc_load %src[%i, %j] : !D -> tensor<64x128xbf16>
  tile.desc_store %dst[%i, %j], %t : !D, tensor<64x128xbf16>
  return
}
