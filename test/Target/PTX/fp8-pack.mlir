// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// f32 -> e4m3 on a tile converts two registers per cvt (the first in the low
// byte), and the 16 bytes of a thread's run are stored as the eight 16-bit
// pairs, two to a 32-bit word: no byte shuffling (prmt) and no zero partner.
// CHECK-LABEL: .entry truncf_f8_pairs
// CHECK-COUNT-8: cvt.rn.satfinite.e4m3x2.f32 {{%rs[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}};
// CHECK-NOT: cvt.rn.satfinite
// CHECK-NOT: prmt
// CHECK-COUNT-4: mov.b32 {{%r[0-9]+}}, {{{%rs[0-9]+}}, {{%rs[0-9]+}}};
// CHECK: st.global.v4.b32
// CHECK-NOT: st.global
func.func @truncf_f8_pairs(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                           %y: !tile.ptr<f8E4M3FN> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %px = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %px : tensor<512x!tile.ptr<f32>>
  %q = arith.truncf %v : tensor<512xf32> to tensor<512xf8E4M3FN>
  %ys = tile.splat %y : !tile.ptr<f8E4M3FN> -> tensor<512x!tile.ptr<f8E4M3FN>>
  %py = tile.addptr %ys, %r : tensor<512x!tile.ptr<f8E4M3FN>>, tensor<512xi32>
  tile.store %py, %q : tensor<512x!tile.ptr<f8E4M3FN>>
  return
}
