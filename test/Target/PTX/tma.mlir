// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// A TMA tile copy: descriptors are 128-byte by-value parameters read in place
// (cvta.param); the load completes on an mbarrier armed with the box's bytes
// by one elected lane; the phase parity is a register that flips in the loop.
// CHECK-SM90: .target sm_90a
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry tma_rows(
// CHECK-NEXT: .param .align 64 .b8 tma_rows_param_0[128],
// CHECK-NEXT: .param .align 64 .b8 tma_rows_param_1[128],
// CHECK: .shared .align 128 .b8 __kiln_tma_box_0[8192];
// CHECK: .shared .align 8 .b8 __kiln_tma_mbarrier_0[8];
// CHECK: cvta.param.u64
// CHECK: mbarrier.init.shared.b64 [%r{{[0-9]+}}], 1;
// CHECK: fence.mbarrier_init.release.cluster;
// CHECK: elect.sync
// CHECK: mov.b32 %r[[BYTES:[0-9]+]], 8192;
// CHECK: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [__kiln_tma_mbarrier_0], %r[[BYTES]];
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [__kiln_tma_box_0], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [__kiln_tma_mbarrier_0];
// CHECK: mbarrier.try_wait.parity.shared::cta.b64 p, [%r{{[0-9]+}}], %r{{[0-9]+}};
// CHECK: ld.shared.v4.b32
// CHECK: st.shared.v4.b32
// CHECK: fence.proxy.async.shared::cta;
// CHECK: elect.sync
// CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [__kiln_tma_box_1];
// CHECK: cp.async.bulk.commit_group;
// CHECK: cp.async.bulk.wait_group.read 0;
func.func @tma_rows(%src: !tile.tensordesc<tensor<32x128xf16>>, %dst: !tile.tensordesc<tensor<32x128xf16>>, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %pid = tile.program_id x : i32
  %start = arith.muli %pid, %c32 : i32
  scf.for %row = %start to %n step %c32 : i32 {
    %t = tile.desc_load %src[%row, %c0] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
    %u = arith.addf %t, %t : tensor<32x128xf16>
    tile.desc_store %dst[%row, %c0], %u : !tile.tensordesc<tensor<32x128xf16>>, tensor<32x128xf16>
  }
  return
}
