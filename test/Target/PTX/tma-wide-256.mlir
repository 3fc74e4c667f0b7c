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

// [128, 256] bf16: four chunks of 128 rows of 128 bytes (16384 bytes apart);
// 64 KiB a box, so the buffers are dynamic shared memory; the load's box is read
// before the store's first barrier, so the store's box takes its bytes (both at 0).
// CHECK-LABEL: .entry wide_copy_256(
// CHECK-DAG: add.s32 %[[K1:r[0-9]+]], %[[K:r[0-9]+]], 64;
// CHECK-DAG: add.s32 %[[K2:r[0-9]+]], %[[K]], 128;
// CHECK-DAG: add.s32 %[[K3:r[0-9]+]], %[[K]], 192;
// CHECK: mov.b32 %[[BYTES:r[0-9]+]], 65536;
// CHECK-NEXT: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [__kiln_dynamic_smem+65536], %[[BYTES]];
// CHECK-NOT: expect_tx
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [__kiln_dynamic_smem], [%rd{{[0-9]+}}, {%[[K]], %[[R:r[0-9]+]]}], [__kiln_dynamic_smem+65536];
// CHECK-NEXT: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [__kiln_dynamic_smem+16384], [%rd{{[0-9]+}}, {%[[K1]], %[[R]]}], [__kiln_dynamic_smem+65536];
// CHECK-NEXT: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [__kiln_dynamic_smem+32768], [%rd{{[0-9]+}}, {%[[K2]], %[[R]]}], [__kiln_dynamic_smem+65536];
// CHECK-NEXT: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [__kiln_dynamic_smem+49152], [%rd{{[0-9]+}}, {%[[K3]], %[[R]]}], [__kiln_dynamic_smem+65536];
// CHECK-NOT: cp.async.bulk.tensor
// CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%[[K]], %[[R]]}], [__kiln_dynamic_smem];
// CHECK-NEXT: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%[[K1]], %[[R]]}], [__kiln_dynamic_smem+16384];
// CHECK-NEXT: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%[[K2]], %[[R]]}], [__kiln_dynamic_smem+32768];
// CHECK-NEXT: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%[[K3]], %[[R]]}], [__kiln_dynamic_smem+49152];
// CHECK-NEXT: cp.async.bulk.commit_group;
!W = !tile.tensordesc<tensor<128x256xbf16>, swizzle = 128>
func.func @wide_copy_256(%src: !W, %dst: !W, %i: i32, %j: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %t = tile.desc_load %src[%i, %j] : !W -> tensor<128x256xbf16>
  tile.desc_store %dst[%i, %j], %t : !W, tensor<128x256xbf16>
  return
}
