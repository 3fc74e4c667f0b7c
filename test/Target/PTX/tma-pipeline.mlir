// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// A loop marked tile.num_stages = 3 through kiln-tile-to-llvm: one ring of
// three 8 KiB slots (at a 1024-byte boundary) then their mbarriers, each barrier initialized by
// thread 0; two loads issued before the loop; in the loop a wait on a
// register parity, then the issue of the load two iterations ahead.
// CHECK-SM90: .target sm_90a
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry rows(
// CHECK: .shared .align 1024 .b8 __kiln_tma_ring_0[24600];
// CHECK-COUNT-3: mbarrier.init.shared.b64
// CHECK: fence.mbarrier_init.release.cluster;
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [__kiln_tma_ring_0]
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [__kiln_tma_ring_0+8192]
// CHECK: mbarrier.try_wait.parity.shared::cta.b64 p, [%r{{[0-9]+}}], %r{{[0-9]+}};
// CHECK: elect.sync
// CHECK: mbarrier.arrive.expect_tx.shared.b64
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes
func.func @rows(%src: !tile.tensordesc<tensor<32x128xf16>>, %out: !tile.ptr<f32>, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %pid = tile.program_id x : i32
  %nprog = tile.num_programs x : i32
  %start = arith.muli %pid, %c32 : i32
  %step = arith.muli %nprog, %c32 : i32
  scf.for %row = %start to %n step %step : i32 {
    %t = tile.desc_load %src[%row, %c0] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
    %u = arith.extf %t : tensor<32x128xf16> to tensor<32x128xf32>
    %sum = tile.reduce %u {axis = 1 : i32} : tensor<32x128xf32> -> tensor<32xf32> {
    ^bb0(%a: f32, %b: f32):
      %x = arith.addf %a, %b : f32
      tile.reduce.return %x : f32
    }
    %r = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %rs = tile.splat %row : i32 -> tensor<32xi32>
    %ri = arith.addi %rs, %r : tensor<32xi32>
    %ps = tile.splat %out : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
    %pp = tile.addptr %ps, %ri : tensor<32x!tile.ptr<f32>>, tensor<32xi32>
    tile.store %pp, %sum : tensor<32x!tile.ptr<f32>>
  } {tile.num_stages = 3 : i32}
  return
}
