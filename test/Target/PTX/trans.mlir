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

// y[64x16] = x[16x64]^T over two warps, 4 f32 a run: each thread loads four
// 16-byte runs (rows 4 apart), stores each element at its padded result
// position (rows of 16 + 1: element (i, j) at 17j + i; a run's elements 68
// bytes apart, the runs 16 bytes apart), a barrier, loads its four result
// runs at their own padded index (consecutive words; runs 4 rows = 1088 bytes
// apart), a barrier, and stores them with 16-byte accesses.
// CHECK-LABEL: .visible .entry trans_16x64(
// CHECK: .reqntid 64, 1, 1
// CHECK: .shared .align 16 .b8 __kiln_trans_smem_0[4348];
// CHECK-COUNT-4: ld.global.v4.b32
// CHECK: st.shared.b32 [%rd[[W:[0-9]+]]], %r{{[0-9]+}};
// CHECK-NEXT: st.shared.b32 [%rd[[W]]+68], %r{{[0-9]+}};
// CHECK-NEXT: st.shared.b32 [%rd[[W]]+136], %r{{[0-9]+}};
// CHECK-NEXT: st.shared.b32 [%rd[[W]]+204], %r{{[0-9]+}};
// CHECK-NEXT: st.shared.b32 [%rd[[W]]+16], %r{{[0-9]+}};
// CHECK-COUNT-11: st.shared.b32 [%rd[[W]]+{{[0-9]+}}], %r{{[0-9]+}};
// CHECK-NEXT: bar.sync 0;
// CHECK: ld.shared.b32 %r{{[0-9]+}}, [%rd[[R:[0-9]+]]];
// CHECK-NEXT: ld.shared.b32 %r{{[0-9]+}}, [%rd[[R]]+4];
// CHECK-NEXT: ld.shared.b32 %r{{[0-9]+}}, [%rd[[R]]+8];
// CHECK-NEXT: ld.shared.b32 %r{{[0-9]+}}, [%rd[[R]]+12];
// CHECK-NEXT: ld.shared.b32 %r{{[0-9]+}}, [%rd[[R]]+1088];
// CHECK-COUNT-11: ld.shared.b32 %r{{[0-9]+}}, [%rd[[R]]+{{[0-9]+}}];
// CHECK-NEXT: bar.sync 0;
// CHECK-NOT: bar.sync
// CHECK-COUNT-4: st.global.v4.b32
// CHECK: ret;
func.func @trans_16x64(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                       %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 2 : i32} {
  %r = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<16x64xi32>
  %c = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<16x64xi32>
  %c64 = arith.constant dense<64> : tensor<16x64xi32>
  %ro = arith.muli %r, %c64 : tensor<16x64xi32>
  %off = arith.addi %ro, %c : tensor<16x64xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<16x64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  %v = tile.load %p : tensor<16x64x!tile.ptr<f32>>
  %t = tile.trans %v {order = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
  %r2 = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<64x16xi32>
  %c2 = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<64x16xi32>
  %c16 = arith.constant dense<16> : tensor<64x16xi32>
  %ro2 = arith.muli %r2, %c16 : tensor<64x16xi32>
  %off2 = arith.addi %ro2, %c2 : tensor<64x16xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<64x16x!tile.ptr<f32>>
  %q = tile.addptr %ys, %off2 : tensor<64x16x!tile.ptr<f32>>, tensor<64x16xi32>
  tile.store %q, %t : tensor<64x16x!tile.ptr<f32>>
  return
}
