// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-convert-tile-to-nvvm | FileCheck %s

// The kernel's loops and branches (scf.for / scf.if from the DSL's runtime
// `for` and `if`) stay scf ops; their tiles become the thread's registers
// (!llvm.struct), scalars stay scalars. convert-scf-to-cf lowers them later.

// A loop carrying a 128 x f32 tile (4 registers per thread with one warp) and
// a scalar: the iter_args, the body's block arguments, the yield and the
// results all take the struct type.
// CHECK-LABEL: llvm.func ptx_kernelcc @for_carries_tile
// CHECK-SAME: (%[[X:.*]]: !llvm.ptr<1>, %[[N:.*]]: i32)
// CHECK: %[[Z:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK-NEXT: %[[P:.*]] = llvm.mlir.poison : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT: %[[Z0:.*]] = llvm.insertvalue %[[Z]], %[[P]][0]
// CHECK-NEXT: %[[Z1:.*]] = llvm.insertvalue %[[Z]], %[[Z0]][1]
// CHECK-NEXT: %[[Z2:.*]] = llvm.insertvalue %[[Z]], %[[Z1]][2]
// CHECK-NEXT: %[[ZERO:.*]] = llvm.insertvalue %[[Z]], %[[Z2]][3]
// CHECK-NEXT: %[[C0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[C1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[S0:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK-NEXT: %[[LOOP:.*]]:2 = scf.for %[[I:.*]] = %[[C0]] to %[[N]] step %[[C1]] iter_args(%[[ACC:.*]] = %[[ZERO]], %[[T:.*]] = %[[S0]]) -> (!llvm.struct<(f32, f32, f32, f32)>, f32) : i32 {
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK: llvm.extractvalue %[[ACC]][0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-COUNT-4: llvm.fadd
// CHECK: %[[NEXT:.*]] = llvm.insertvalue %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT: %[[T2:.*]] = llvm.fadd %[[T]], %[[S0]] : f32
// CHECK-NEXT: scf.yield %[[NEXT]], %[[T2]] : !llvm.struct<(f32, f32, f32, f32)>, f32
// CHECK-NEXT: }
// CHECK: llvm.extractvalue %[[LOOP]]#0[0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK-NOT: tensor<
func.func @for_carries_tile(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %zero = arith.constant dense<0.0> : tensor<128xf32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %z = arith.constant 0.0 : f32
  %acc, %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %zero, %t = %z) -> (tensor<128xf32>, f32) : i32 {
    %v = tile.load %p : tensor<128x!tile.ptr<f32>>
    %a2 = arith.addf %a, %v : tensor<128xf32>
    %t2 = arith.addf %t, %z : f32
    scf.yield %a2, %t2 : tensor<128xf32>, f32
  }
  tile.store %p, %acc : tensor<128x!tile.ptr<f32>>
  return
}

// -----

// An scf.if yielding a tile and a scalar: both regions yield the struct.
// CHECK-LABEL: llvm.func ptx_kernelcc @if_yields_tile
// CHECK-SAME: (%[[X:.*]]: !llvm.ptr<1>, %[[N:.*]]: i32)
// CHECK: %[[COND:.*]] = llvm.icmp "sgt" %[[N]], %[[C0:.*]] : i32
// CHECK-NEXT: %[[IF:.*]]:2 = scf.if %[[COND]] -> (!llvm.struct<(f32, f32, f32, f32)>, i32) {
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK: %[[L:.*]] = llvm.insertvalue %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT: scf.yield %[[L]], %[[N]] : !llvm.struct<(f32, f32, f32, f32)>, i32
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK: %[[O:.*]] = llvm.insertvalue %[[ONE]], %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT: scf.yield %[[O]], %[[C0]] : !llvm.struct<(f32, f32, f32, f32)>, i32
// CHECK-NEXT: }
// CHECK: llvm.extractvalue %[[IF]]#0[0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: tensor<
func.func @if_yields_tile(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %c0 = arith.constant 0 : i32
  %cond = arith.cmpi sgt, %n, %c0 : i32
  %v, %k = scf.if %cond -> (tensor<128xf32>, i32) {
    %l = tile.load %p : tensor<128x!tile.ptr<f32>>
    scf.yield %l, %n : tensor<128xf32>, i32
  } else {
    %o = arith.constant dense<1.0> : tensor<128xf32>
    scf.yield %o, %c0 : tensor<128xf32>, i32
  }
  tile.store %p, %v : tensor<128x!tile.ptr<f32>>
  return
}

// -----

// A reduction inside a loop, carried as a scalar: the buffer is a module
// global, the shuffles and both barriers are in the loop body (the second
// barrier keeps the next iteration from overwriting slots still being read).
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<4 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @for_reduces
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[T:.*]] = %{{.*}}) -> (f32) : i32 {
// CHECK-COUNT-5: nvvm.shfl.sync bfly
// CHECK: llvm.mlir.addressof @__kiln_reduce_smem_0 : !llvm.ptr<3>
// CHECK: nvvm.barrier
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: nvvm.barrier
// CHECK-NEXT: %[[T2:.*]] = llvm.fadd %[[T]], %{{.*}} : f32
// CHECK-NEXT: scf.yield %[[T2]] : f32
// CHECK-NEXT: }
func.func @for_reduces(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32>, %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %z = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%t = %z) -> (f32) : i32 {
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
