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

// Programmatic dependent launch through the whole pipeline: griddepcontrol.wait
// before the first global load (the address arithmetic may come before it),
// griddepcontrol.launch_dependents after the last load and before the store;
// nothing moves a global access across either.
// CHECK-LABEL: .visible .entry pdl_copy(
// CHECK-NOT: ld.global
// CHECK: griddepcontrol.wait;
// CHECK-NEXT: ld.global.v{{[24]}}.b{{32|64}}
// CHECK-NEXT: griddepcontrol.launch_dependents;
// CHECK-NOT: griddepcontrol
// CHECK: st.global.v{{[24]}}.b{{32|64}}
// CHECK-NOT: griddepcontrol
// CHECK: ret;
func.func @pdl_copy(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                    %y: !tile.ptr<f32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %px = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %ax = tile.addptr %px, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  tile.pdl_wait
  %v = tile.load %ax : tensor<512x!tile.ptr<f32>>
  tile.pdl_launch_dependents
  %py = tile.splat %y : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %ay = tile.addptr %py, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  tile.store %ay, %v : tensor<512x!tile.ptr<f32>>
  return
}

// A loop of dependent loads: the wait comes before all of them, the launch
// after the last one.
// CHECK-LABEL: .visible .entry pdl_loop(
// CHECK-NOT: ld.global
// CHECK: griddepcontrol.wait;
// CHECK-NOT: griddepcontrol
// CHECK: ld.global
// CHECK-NOT: griddepcontrol
// CHECK: griddepcontrol.launch_dependents;
// CHECK-NOT: ld.global
// CHECK-NOT: griddepcontrol
// CHECK: st.global
// CHECK-NOT: ld.global
// CHECK: ret;
func.func @pdl_loop(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                    %y: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<512xf32>
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  tile.pdl_wait
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<512xf32>) : i32 {
    %off = arith.muli %i, %c512 : i32
    %row = tile.addptr %x, %off : !tile.ptr<f32>, i32
    %prow = tile.splat %row : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
    %a = tile.addptr %prow, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
    %v = tile.load %a : tensor<512x!tile.ptr<f32>>
    %sum = arith.addf %acc, %v : tensor<512xf32>
    scf.yield %sum : tensor<512xf32>
  }
  tile.pdl_launch_dependents
  %py = tile.splat %y : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %ay = tile.addptr %py, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  tile.store %ay, %s : tensor<512x!tile.ptr<f32>>
  return
}

// A kernel without the ops has no griddepcontrol.
// CHECK-LABEL: .visible .entry no_pdl(
// CHECK-NOT: griddepcontrol
// CHECK: ret;
func.func @no_pdl(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %px = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %ax = tile.addptr %px, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %ax : tensor<512x!tile.ptr<f32>>
  tile.store %ax, %v : tensor<512x!tile.ptr<f32>>
  return
}
