// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// CHECK: .version 8.8
// CHECK-SM90-NEXT: .target sm_90a
// CHECK-SM100-NEXT: .target sm_100a
// CHECK-SM103-NEXT: .target sm_103a
// CHECK-NEXT: .address_size 64

// sum(x * x) and sum(x * w) of 4096 f32 over 16 warps as ONE tile.reduce of two
// sources (an RMSNorm score): 8 registers of each summed in the thread, 5
// butterfly rounds of 2 shuffles (10 shfl.sync.bfly in all), then one 128-byte
// buffer (16 warp partials of each sum, the second array at byte 64) between
// exactly 2 bar.sync (two separate reductions would need 4), 8 16-byte shared
// loads, and the two results stored.
// CHECK-LABEL: .visible .entry rms_pair(
// CHECK: .reqntid 512, 1, 1
// CHECK: .shared .align 16 .b8 __kiln_reduce_smem_0[128];
// CHECK-NOT: __kiln_reduce_smem_1
// CHECK-NOT: bar.sync
// CHECK: shfl.sync.bfly.b32 %r[[S0:[0-9]+]], %r[[A0:[0-9]+]], 1, 31, -1;
// CHECK-NEXT: shfl.sync.bfly.b32 %r[[T0:[0-9]+]], %r[[B0:[0-9]+]], 1, 31, -1;
// CHECK-NEXT: add.rn.f32 %r[[A1:[0-9]+]], %r[[A0]], %r[[S0]];
// CHECK-NEXT: add.rn.f32 %r[[B1:[0-9]+]], %r[[B0]], %r[[T0]];
// CHECK-NEXT: shfl.sync.bfly.b32 %r{{[0-9]+}}, %r[[A1]], 2, 31, -1;
// CHECK-NEXT: shfl.sync.bfly.b32 %r{{[0-9]+}}, %r[[B1]], 2, 31, -1;
// CHECK-COUNT-6: shfl.sync.bfly.b32
// CHECK-NEXT: add.rn.f32 %r[[A5:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-NEXT: add.rn.f32 %r[[B5:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-NOT: shfl.sync
// CHECK-NOT: bar.sync
// CHECK: st.shared.b32 [%rd[[P:[0-9]+]]], %r[[A5]];
// CHECK-NEXT: st.shared.b32 [%rd[[P]]+64], %r[[B5]];
// CHECK-NEXT: bar.sync 0;
// CHECK-COUNT-8: ld.shared.v4.b32
// CHECK-NEXT: bar.sync 0;
// CHECK-NOT: bar.sync
// CHECK-NOT: shfl.sync
// CHECK: st.global.b32 [%rd[[Y:[0-9]+]]], %r{{[0-9]+}};
// CHECK-NEXT: st.global.b32 [%rd[[Y]]+4], %r{{[0-9]+}};
// CHECK-NOT: bar.sync
// CHECK: ret;
func.func @rms_pair(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %w: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                    %y: !tile.ptr<f32>)
    attributes {tile.kernel, tile.num_warps = 16 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 4096 : i32} : tensor<4096xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<4096x!tile.ptr<f32>>
  %xp = tile.addptr %xs, %r : tensor<4096x!tile.ptr<f32>>, tensor<4096xi32>
  %xv = tile.load %xp : tensor<4096x!tile.ptr<f32>>
  %ws = tile.splat %w : !tile.ptr<f32> -> tensor<4096x!tile.ptr<f32>>
  %wp = tile.addptr %ws, %r : tensor<4096x!tile.ptr<f32>>, tensor<4096xi32>
  %wv = tile.load %wp : tensor<4096x!tile.ptr<f32>>
  %xx = arith.mulf %xv, %xv : tensor<4096xf32>
  %xw = arith.mulf %xv, %wv : tensor<4096xf32>
  %s:2 = tile.reduce %xx, %xw {axis = 0 : i32} : tensor<4096xf32>, tensor<4096xf32> -> f32, f32 {
  ^bb0(%a0: f32, %a1: f32, %b0: f32, %b1: f32):
    %c0 = arith.addf %a0, %b0 : f32
    %c1 = arith.addf %a1, %b1 : f32
    tile.reduce.return %c0, %c1 : f32, f32
  }
  %c1 = arith.constant 1 : i32
  %y1 = tile.addptr %y, %c1 : !tile.ptr<f32>, i32
  tile.store %y, %s#0 : !tile.ptr<f32>
  tile.store %y1, %s#1 : !tile.ptr<f32>
  return
}
