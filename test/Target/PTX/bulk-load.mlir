// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// A 1-D bulk load in a loop: one elected lane arms the mbarrier with the
// tile's 2048 bytes and issues one cp.async.bulk global -> shared::cluster;
// every thread waits for the phase parity held in a register that flips each
// iteration, then reads the buffer with 16-byte ld.shared. The loop is
// rotated: the wait's block comes first in the text.
// CHECK-SM90: .target sm_90a
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry bulk_sum(
// CHECK: .shared .align 128 .b8 __kiln_bulk_buffer_0[2048];
// CHECK: .shared .align 8 .b8 __kiln_tma_mbarrier_0[8];
// CHECK: mbarrier.init.shared.b64 [%r{{[0-9]+}}], 1;
// CHECK: fence.mbarrier_init.release.cluster;
// CHECK: bar.sync 0;
// CHECK: mbarrier.try_wait.parity.shared::cta.b64 p, [%r{{[0-9]+}}], %r[[PARITY:[0-9]+]];
// CHECK-NEXT: @!p bra kiln_tma_wait;
// CHECK: xor.b32 %r[[PARITY]], %r[[PARITY]], 1;
// CHECK: ld.shared.v4.b32
// CHECK: bar.sync 0;
// CHECK: elect.sync
// CHECK: mov.b32 %r[[BYTES:[0-9]+]], 2048;
// CHECK: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [__kiln_tma_mbarrier_0], %r[[BYTES]];
// CHECK: cvta.to.shared::cluster.u64 %rd[[DST:[0-9]+]],
// CHECK: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%rd[[DST]]], [%rd{{[0-9]+}}], %r[[BYTES]], [__kiln_tma_mbarrier_0];
// CHECK-NOT: cp.async.bulk
// CHECK: st.global.v4.b32
func.func @bulk_sum(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                    %y: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<512xf32>
  %acc = scf.for %i = %c0 to %n step %c512 iter_args(%a = %zero) -> (tensor<512xf32>) : i32 {
    %p = tile.addptr %x, %i : !tile.ptr<f32>, i32
    %t = tile.bulk_load %p : !tile.ptr<f32> -> tensor<512xf32>
    %s = arith.addf %a, %t : tensor<512xf32>
    scf.yield %s : tensor<512xf32>
  }
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %py = tile.addptr %ys, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  tile.store %py, %acc : tensor<512x!tile.ptr<f32>>
  return
}
