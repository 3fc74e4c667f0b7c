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

// A strided 2-D bf16 copy, y[r, :] = x[r, :] for the 16 rows r = pid * 16 +
// [0, 16) of 512 columns (x + rows[:, None] * stride + cols[None, :]) on 256
// threads: the broadcasts of the index arithmetic are recomputed per thread
// (kiln-tile-rematerialize-broadcasts): no shared memory, no barrier; each
// thread moves its four runs of 8 columns with 16-byte accesses.
// CHECK-LABEL: .visible .entry copy_2d(
// CHECK: .reqntid 256, 1, 1
// CHECK-NOT: .shared
// CHECK-NOT: bar.sync
// CHECK-SM90-COUNT-4: ld.global.v4.b32
// CHECK-SM100-COUNT-4: ld.global.v2.b64
// CHECK-SM103-COUNT-4: ld.global.v2.b64
// CHECK-NOT: bar.sync
// CHECK-SM90-COUNT-4: st.global.v4.b32
// CHECK-SM100-COUNT-4: st.global.v2.b64
// CHECK-SM103-COUNT-4: st.global.v2.b64
// CHECK-NOT: ld.global
// CHECK-NOT: st.global
// CHECK-NOT: bar.sync
// CHECK: ret;
func.func @copy_2d(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                   %y: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                   %stride: i32 {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %pid = tile.program_id x : i32
  %c16 = arith.constant 16 : i32
  %first = arith.muli %pid, %c16 : i32
  %fs = tile.splat %first : i32 -> tensor<16xi32>
  %r = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %rows = arith.addi %fs, %r : tensor<16xi32>
  %re = tile.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ss = tile.splat %stride : i32 -> tensor<16x1xi32>
  %ro = arith.muli %re, %ss : tensor<16x1xi32>
  %rb = tile.broadcast %ro : tensor<16x1xi32> -> tensor<16x512xi32>
  %cols = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ce = tile.expand_dims %cols {axis = 0 : i32} : tensor<512xi32> -> tensor<1x512xi32>
  %cb = tile.broadcast %ce : tensor<1x512xi32> -> tensor<16x512xi32>
  %off = arith.addi %rb, %cb : tensor<16x512xi32>
  %xs = tile.splat %x : !tile.ptr<bf16> -> tensor<16x512x!tile.ptr<bf16>>
  %p = tile.addptr %xs, %off : tensor<16x512x!tile.ptr<bf16>>, tensor<16x512xi32>
  %v = tile.load %p : tensor<16x512x!tile.ptr<bf16>>
  %ys = tile.splat %y : !tile.ptr<bf16> -> tensor<16x512x!tile.ptr<bf16>>
  %q = tile.addptr %ys, %off : tensor<16x512x!tile.ptr<bf16>>, tensor<16x512xi32>
  tile.store %q, %v : tensor<16x512x!tile.ptr<bf16>>
  return
}
