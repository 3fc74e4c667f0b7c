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

// max of 1024 f32 over 4 warps (NaN-propagating: arith.maximumf): 8 values
// per thread combined in registers (two-input max on sm_90a, three-input on
// Blackwell), 5 butterflies, one slot per warp, 4 slots read back as one
// 16-byte shared load between two bar.sync.
// CHECK-LABEL: .visible .entry row_max(
// CHECK: .reqntid 128, 1, 1
// CHECK: .shared .align 16 .b8 __kiln_reduce_smem_0[16];
// CHECK-COUNT-2: ld.global.v4.b32
// CHECK-SM90-COUNT-7: max.NaN.f32 %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-SM100: max.NaN.f32 %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-SM100-COUNT-3: max.NaN.f32 %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-SM103: max.NaN.f32 %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-SM103-COUNT-3: max.NaN.f32 %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-NEXT: shfl.sync.bfly.b32 %r[[S1:[0-9]+]], %r[[P0:[0-9]+]], 1, 31, -1;
// CHECK-NEXT: max.NaN.f32 %r[[P1:[0-9]+]], %r[[P0]], %r[[S1]];
// CHECK-NEXT: shfl.sync.bfly.b32 %r[[S2:[0-9]+]], %r[[P1]], 2, 31, -1;
// CHECK-NEXT: max.NaN.f32 %r[[P2:[0-9]+]], %r[[P1]], %r[[S2]];
// CHECK-NEXT: shfl.sync.bfly.b32 %r[[S3:[0-9]+]], %r[[P2]], 4, 31, -1;
// CHECK-NEXT: max.NaN.f32 %r[[P3:[0-9]+]], %r[[P2]], %r[[S3]];
// CHECK-NEXT: shfl.sync.bfly.b32 %r[[S4:[0-9]+]], %r[[P3]], 8, 31, -1;
// CHECK-NEXT: max.NaN.f32 %r[[P4:[0-9]+]], %r[[P3]], %r[[S4]];
// CHECK-NEXT: shfl.sync.bfly.b32 %r[[S5:[0-9]+]], %r[[P4]], 16, 31, -1;
// CHECK-NEXT: max.NaN.f32 %r[[P5:[0-9]+]], %r[[P4]], %r[[S5]];
// CHECK-NOT: shfl.sync
// CHECK: shr.u32 %r{{[0-9]+}}, %r{{[0-9]+}}, 5;
// CHECK: st.shared.b32 [%rd{{[0-9]+}}], %r[[P5]];
// CHECK-NEXT: bar.sync 0;
// CHECK-NEXT: ld.shared.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [__kiln_reduce_smem_0];
// CHECK-NEXT: bar.sync 0;
// CHECK: st.global.b32
// CHECK: ret;
func.func @row_max(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32>)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<f32>>
  %s = tile.reduce %v {axis = 0 : i32} : tensor<1024xf32> -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.maximumf %a, %b : f32
    tile.reduce.return %c : f32
  }
  tile.store %y, %s : !tile.ptr<f32>
  return
}

// A reduction in a runtime loop (scf.for -> cf -> a PTX loop): the loads,
// the 5 butterflies and both barriers are in the loop body, the carried sum
// is added after the second barrier, and the branch closes the loop.
// CHECK-LABEL: .visible .entry loop_sum(
// CHECK: .shared .align 16 .b8 __kiln_reduce_smem_1[16];
// CHECK: $L__BB1_[[LOOP:[0-9]+]]:
// CHECK-NEXT: mul.wide.s32
// CHECK-NEXT: add.s64
// CHECK-NEXT: ld.global.v4.b32
// CHECK-COUNT-5: shfl.sync.bfly.b32
// CHECK: st.shared.b32
// CHECK-NEXT: bar.sync 0;
// CHECK-NEXT: ld.shared.v4.b32
// CHECK: bar.sync 0;
// CHECK-NEXT: add.rn.f32
// CHECK: @%p{{[0-9]+}} bra $L__BB1_[[LOOP]];
// CHECK: st.global.b32
// CHECK: ret;
func.func @loop_sum(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32>, %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c512 = arith.constant 512 : i32
  %z = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%t = %z) -> (f32) : i32 {
    %off = arith.muli %i, %c512 : i32
    %offs = tile.splat %off : i32 -> tensor<512xi32>
    %idx = arith.addi %r, %offs : tensor<512xi32>
    %p = tile.addptr %xs, %idx : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
    %v = tile.load %p : tensor<512x!tile.ptr<f32>>
    %m = tile.reduce %v {axis = 0 : i32} : tensor<512xf32> -> f32 {
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      tile.reduce.return %c : f32
    }
    %t2 = arith.addf %t, %m : f32
    scf.yield %t2 : f32
  }
  tile.store %y, %s : !tile.ptr<f32>
  return
}

// Sum over the rows of a [4, 512] f32 tile with four warps: the rows are
// register bits above the columns, and the [512] result keeps the columns in
// the same threads and registers: three adds per result register, no shuffle,
// no shared memory, no barrier.
// CHECK-LABEL: .visible .entry sum_rows_in_registers(
// CHECK-NOT: .shared
// CHECK-COUNT-4: ld.global.v4.b32
// CHECK-NOT: shfl.sync
// CHECK-NOT: bar.sync
// CHECK-COUNT-12: add.rn.f32
// CHECK-NOT: add.rn.f32
// CHECK: st.global.v4.b32
// CHECK-NOT: st.global
// CHECK: ret;
func.func @sum_rows_in_registers(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                                 %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 2048 : i32} : tensor<2048xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<2048x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<2048x!tile.ptr<f32>>, tensor<2048xi32>
  %v = tile.load %p : tensor<2048x!tile.ptr<f32>>
  %v2 = tile.reshape %v : tensor<2048xf32> -> tensor<4x512xf32>
  %s = tile.reduce %v2 {axis = 0 : i32} : tensor<4x512xf32> -> tensor<512xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  %c = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %q = tile.addptr %ys, %c : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  tile.store %q, %s : tensor<512x!tile.ptr<f32>>
  return
}

// A 32-bit integer sum and an unsigned max over all 32 lanes of each of 4 warps
// (1024 i32, 8 a thread: combined in registers), one multi-source tile.reduce:
// one redux.sync a source instead of 5 butterfly rounds, then the warps' partials
// through shared memory as for any reduction. A sum whose combine region is
// not one integer op of its two arguments (a + b + 1) keeps the butterfly.
// CHECK-LABEL: .visible .entry redux_sum_umax(
// CHECK-NOT: shfl.sync
// CHECK-DAG: redux.sync.add.s32 %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-DAG: redux.sync.max.u32 %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-NOT: shfl.sync
// CHECK: bar.sync 0;
// CHECK-COUNT-5: shfl.sync.bfly.b32
// CHECK-NOT: shfl.sync
// CHECK-NOT: redux.sync
// CHECK: ret;
func.func @redux_sum_umax(%x: !tile.ptr<i32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<i32>)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<i32> -> tensor<1024x!tile.ptr<i32>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<i32>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<i32>>
  %s:2 = tile.reduce %v, %v {axis = 0 : i32} : tensor<1024xi32>, tensor<1024xi32> -> i32, i32 {
  ^bb0(%a0: i32, %b0: i32, %a1: i32, %b1: i32):
    %c0 = arith.addi %a0, %a1 : i32
    %c1 = arith.maxui %b1, %b0 : i32
    tile.reduce.return %c0, %c1 : i32, i32
  }
  %t = tile.reduce %v {axis = 0 : i32} : tensor<1024xi32> -> i32 {
  ^bb0(%a: i32, %b: i32):
    %c = arith.addi %a, %b : i32
    %one = arith.constant 1 : i32
    %d = arith.addi %c, %one : i32
    tile.reduce.return %d : i32
  }
  %u = arith.addi %s#0, %s#1 : i32
  %w = arith.addi %u, %t : i32
  tile.store %y, %w : !tile.ptr<i32>
  return
}
