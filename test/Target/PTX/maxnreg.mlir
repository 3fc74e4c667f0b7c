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

// tile.maxnreg caps the registers of a thread: .maxnreg on the entry, after
// .reqntid (test/Target/PTX/cluster.mlir and the others: no cap without
// it).
// CHECK-LABEL: .visible .entry capped(
// CHECK: .reqntid 64, 1, 1
// CHECK-NEXT: .maxnreg 40
// CHECK-NEXT: {
// CHECK: ld.global
// CHECK: ret;
func.func @capped(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                  %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 2 : i32, tile.maxnreg = 40 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<256x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<256x!tile.ptr<f32>>, tensor<256xi32>
  %v = tile.load %p : tensor<256x!tile.ptr<f32>>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<256x!tile.ptr<f32>>
  %q = tile.addptr %ys, %r : tensor<256x!tile.ptr<f32>>, tensor<256xi32>
  tile.store %q, %v : tensor<256x!tile.ptr<f32>>
  return
}
