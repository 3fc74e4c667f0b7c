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

// y[16x64] = x[16x64] + bias[64] with two warps: every broadcast is
// recomputed (kiln-tile-rematerialize-broadcasts): the row offsets from the
// thread index, the bias row by a load of the columns each thread holds, once
// per thread since its four runs share the columns. No shared memory, no
// barrier; global accesses stay 16 bytes.
// CHECK-LABEL: .visible .entry add_row_bias(
// CHECK: .reqntid 64, 1, 1
// CHECK-NOT: .shared
// CHECK-NOT: bar.sync
// CHECK-COUNT-4: ld.global.v4.b32
// CHECK-NEXT: mul.wide.u32
// CHECK-NEXT: add.s64 %rd[[BIAS:[0-9]+]],
// CHECK-NEXT: ld.global.v4.b32 {%r[[B0:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd[[BIAS]]];
// CHECK-NOT: ld.global
// CHECK-COUNT-4: add.rn.f32 %r{{[0-9]+}}, %r{{[0-9]+}}, %r[[B0]];
// CHECK-NOT: bar.sync
// CHECK-COUNT-4: st.global.v4.b32
// CHECK: ret;
func.func @add_row_bias(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                        %bias: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                        %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 2 : i32} {
  %rows = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %cols = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %c64 = arith.constant dense<64> : tensor<16x1xi32>
  %re = tile.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ro = arith.muli %re, %c64 : tensor<16x1xi32>
  %rb = tile.broadcast %ro : tensor<16x1xi32> -> tensor<16x64xi32>
  %ce = tile.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cb = tile.broadcast %ce : tensor<1x64xi32> -> tensor<16x64xi32>
  %off = arith.addi %rb, %cb : tensor<16x64xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<16x64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  %v = tile.load %p : tensor<16x64x!tile.ptr<f32>>
  %bs = tile.splat %bias : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %cols : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %b = tile.load %bp : tensor<64x!tile.ptr<f32>>
  %be = tile.expand_dims %b {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
  %bb = tile.broadcast %be : tensor<1x64xf32> -> tensor<16x64xf32>
  %sum = arith.addf %v, %bb : tensor<16x64xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<16x64x!tile.ptr<f32>>
  %q = tile.addptr %ys, %off : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  tile.store %q, %sum : tensor<16x64x!tile.ptr<f32>>
  return
}

// y[2x512] = x[2x512] + bias[512]: the bias tile is larger than one run per
// thread, so the broadcast is not recomputed; but the [2, 512] tile keeps the
// bias's columns in the same threads and registers (the row is a register bit
// above them), so its lowering copies registers: no shared memory, no barrier,
// each bias register added to both rows.
// CHECK-LABEL: .visible .entry add_wide_bias(
// CHECK-NOT: .shared
// CHECK-NOT: bar.sync
// CHECK-COUNT-6: ld.global.v4.b32
// CHECK-NOT: ld.global
// CHECK-COUNT-16: add.rn.f32
// CHECK-NOT: bar.sync
// CHECK-COUNT-4: st.global.v4.b32
// CHECK: ret;
func.func @add_wide_bias(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                         %bias: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                         %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 2 : i32} {
  %rows = tile.make_range {start = 0 : i32, end = 2 : i32} : tensor<2xi32>
  %cols = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %c512 = arith.constant dense<512> : tensor<2x1xi32>
  %re = tile.expand_dims %rows {axis = 1 : i32} : tensor<2xi32> -> tensor<2x1xi32>
  %ro = arith.muli %re, %c512 : tensor<2x1xi32>
  %rb = tile.broadcast %ro : tensor<2x1xi32> -> tensor<2x512xi32>
  %ce = tile.expand_dims %cols {axis = 0 : i32} : tensor<512xi32> -> tensor<1x512xi32>
  %cb = tile.broadcast %ce : tensor<1x512xi32> -> tensor<2x512xi32>
  %off = arith.addi %rb, %cb : tensor<2x512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<2x512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<2x512x!tile.ptr<f32>>, tensor<2x512xi32>
  %v = tile.load %p : tensor<2x512x!tile.ptr<f32>>
  %bs = tile.splat %bias : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %cols : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %b = tile.load %bp : tensor<512x!tile.ptr<f32>>
  %be = tile.expand_dims %b {axis = 0 : i32} : tensor<512xf32> -> tensor<1x512xf32>
  %bb = tile.broadcast %be : tensor<1x512xf32> -> tensor<2x512xf32>
  %sum = arith.addf %v, %bb : tensor<2x512xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<2x512x!tile.ptr<f32>>
  %q = tile.addptr %ys, %off : tensor<2x512x!tile.ptr<f32>>, tensor<2x512xi32>
  tile.store %q, %sum : tensor<2x512x!tile.ptr<f32>>
  return
}
