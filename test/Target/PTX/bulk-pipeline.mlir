// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// A bulk load of ragged rows (count elements of a 4096-wide bf16 tile) in a
// loop marked tile.num_stages = 4 through kiln-tile-to-llvm: one ring of four
// 8 KiB slots then their mbarriers, each barrier initialized by
// thread 0; the rows of the first three iterations issued before the loop
// (each under iv < ub: min(count, 4096) * 2 bytes, the copy skipped when
// that is 0); each iteration issues the row three iterations ahead into the
// slot read last iteration (bar.sync, elect.sync, expect_tx, copy), then
// waits on a register parity for its own slot and reads it (8 bytes each in
// this layout, a selp to zero at or past the count, the compare hoisted out
// of the loop; LLVM selects words on sm_90a, 64-bit pairs on sm_100a/sm_103a).
// The loop is rotated: the wait's block comes first in the text.
// CHECK-SM90: .target sm_90a
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry ragged_rows(
// CHECK: .shared .align 1024 .b8 __kiln_tma_ring_0[32800];
// CHECK-COUNT-4: mbarrier.init.shared.b64
// CHECK: fence.mbarrier_init.release.cluster;
// CHECK: min.u32
// CHECK: mbarrier.arrive.expect_tx.shared.b64
// CHECK: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK: mbarrier.try_wait.parity.shared::cta.b64 p, [%r{{[0-9]+}}], %r{{[0-9]+}};
// CHECK-SM90: ld.shared.v2.b32 {%r[[LO:[0-9]+]], %r[[HI:[0-9]+]]}
// CHECK-SM90-NEXT: selp.b32 %r{{[0-9]+}}, %r[[HI]], 0, %p{{[0-9]+}};
// CHECK-SM90-NEXT: selp.b32 %r{{[0-9]+}}, %r[[LO]], 0, %p{{[0-9]+}};
// CHECK-SM100: ld.shared.b64 %rd[[V:[0-9]+]]
// CHECK-SM100: selp.b64 %rd{{[0-9]+}}, %rd[[V]], %rd{{[0-9]+}}, %p{{[0-9]+}};
// CHECK-SM103: ld.shared.b64 %rd[[V:[0-9]+]]
// CHECK-SM103: selp.b64 %rd{{[0-9]+}}, %rd[[V]], %rd{{[0-9]+}}, %p{{[0-9]+}};
// CHECK: bar.sync 0;
// CHECK: elect.sync
// CHECK: mbarrier.arrive.expect_tx.shared.b64
// CHECK: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
func.func @ragged_rows(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                       %out: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                       %n: i32, %count: i32 {tile.divisibility = 8 : i32}, %stride: i32 {tile.divisibility = 8 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<4096xf32>
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a = %zero) -> (tensor<4096xf32>) : i32 {
    %off = arith.muli %i, %stride : i32
    %p = tile.addptr %x, %off : !tile.ptr<bf16>, i32
    %t = tile.bulk_load %p count %count : !tile.ptr<bf16> -> tensor<4096xbf16>
    %u = arith.extf %t : tensor<4096xbf16> to tensor<4096xf32>
    %s = arith.addf %a, %u : tensor<4096xf32>
    scf.yield %s : tensor<4096xf32>
  } {tile.num_stages = 4 : i32}
  %r = tile.make_range {start = 0 : i32, end = 4096 : i32} : tensor<4096xi32>
  %ys = tile.splat %out : !tile.ptr<f32> -> tensor<4096x!tile.ptr<f32>>
  %py = tile.addptr %ys, %r : tensor<4096x!tile.ptr<f32>>, tensor<4096xi32>
  tile.store %py, %acc : tensor<4096x!tile.ptr<f32>>
  return
}
