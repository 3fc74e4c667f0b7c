// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin

// Float ops marked `contract` (a kernel compiled with fp_fusion=True) fuse
// into fma, also across a reduction's combine; without the flag every mul and
// add keeps its own rounding (`.rn`, which ptxas may not fuse either).

// CHECK-LABEL: .entry contract_mul_add
// CHECK-COUNT-4: fma.rn.f32
// CHECK-NOT: mul.rn.f32
// CHECK-NOT: add.rn.f32
// CHECK: st.global.v4.b32
func.func @contract_mul_add(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                            %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %px = tile.addptr %xs, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %v = tile.load %px : tensor<128x!tile.ptr<f32>>
  %sq = arith.mulf %v, %v fastmath<contract> : tensor<128xf32>
  %z = arith.addf %sq, %v fastmath<contract> : tensor<128xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %py = tile.addptr %ys, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  tile.store %py, %z : tensor<128x!tile.ptr<f32>>
  return
}

// CHECK-LABEL: .entry plain_mul_add
// CHECK-COUNT-4: mul.rn.f32
// CHECK-COUNT-4: add.rn.f32
// CHECK-NOT: fma
// CHECK: st.global.v4.b32
func.func @plain_mul_add(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                         %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %px = tile.addptr %xs, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %v = tile.load %px : tensor<128x!tile.ptr<f32>>
  %sq = arith.mulf %v, %v : tensor<128xf32>
  %z = arith.addf %sq, %v : tensor<128xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %py = tile.addptr %ys, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  tile.store %py, %z : tensor<128x!tile.ptr<f32>>
  return
}

// The products summed by a reduction: each thread's four products and its
// running sum become an fma chain.
// CHECK-LABEL: .entry contract_sum_of_squares
// CHECK-COUNT-3: fma.rn.f32
// CHECK: shfl.sync.bfly
func.func @contract_sum_of_squares(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                                   %y: !tile.ptr<f32>)
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %px = tile.addptr %xs, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %v = tile.load %px : tensor<128x!tile.ptr<f32>>
  %sq = arith.mulf %v, %v fastmath<contract> : tensor<128xf32>
  %s = tile.reduce %sq {axis = 0 : i32} : tensor<128xf32> -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b fastmath<contract> : f32
    tile.reduce.return %c : f32
  }
  tile.store %y, %s : !tile.ptr<f32>
  return
}
