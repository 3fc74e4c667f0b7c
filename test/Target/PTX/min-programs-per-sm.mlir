// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// tile.min_programs_per_sm = 2 on a 512-thread kernel: .minnctapersm 2 after
// .reqntid, which ptxas honours by keeping a thread within 64 registers.
// CHECK-SM90: .target sm_90a
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .visible .entry two_an_sm(
// CHECK: .reqntid 512, 1, 1
// CHECK-NEXT: .minnctapersm 2
func.func @two_an_sm(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 16 : i32, tile.min_programs_per_sm = 2 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 8192 : i32} : tensor<8192xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<8192x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<8192x!tile.ptr<f32>>, tensor<8192xi32>
  %v = tile.load %p : tensor<8192x!tile.ptr<f32>>
  %w = arith.mulf %v, %v : tensor<8192xf32>
  tile.store %p, %w : tensor<8192x!tile.ptr<f32>>
  return
}
