// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_90a | FileCheck %s

#mma = #tile.mma<version = 2, numWarps = 4>
#rows = #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4>>

// The rows of a [64, 32] mma.sync accumulator whose 4 warps hold whole rows
// (warpsN = 1; converted in from a loaded tile: stores, a barrier, loads, a
// barrier): one 16-row block a warp, 16 registers a thread, 8 of row h =
// register / 2 mod 2. Each row's 8 combine pairwise in the thread (7
// maxnums), then the quad's 4 lanes through shfl.sync.bfly 1 and 2: no shared
// memory, no barrier. The broadcast back to [64, 32] copies registers (16
// fsubs).
// CHECK-LABEL: llvm.func ptx_kernelcc @rows(
// CHECK: nvvm.barrier
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK-COUNT-7: llvm.call @__nv_fmaxf
// CHECK-NOT: llvm.call @__nv_fmaxf
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}} : i32 -> i32
// CHECK: llvm.call @__nv_fmaxf
// CHECK: %[[TWO:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %[[TWO]], %{{.*}} : i32 -> i32
// CHECK: llvm.call @__nv_fmaxf
// CHECK-COUNT-7: llvm.call @__nv_fmaxf
// CHECK-COUNT-2: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.barrier
// CHECK-COUNT-16: llvm.fsub {{.*}} : f32
// CHECK-NOT: llvm.fsub
// CHECK: llvm.store
// CHECK: nvvm.barrier
func.func @rows(%x: !tile.ptr<f32>, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %xp = tile.splat %x : !tile.ptr<f32> -> tensor<64x32x!tile.ptr<f32>>
  %l = tile.load %xp : tensor<64x32x!tile.ptr<f32>>
  %t = tile.convert_layout %l : tensor<64x32xf32> -> tensor<64x32xf32, #mma>
  %m = tile.reduce %t {axis = 1 : i32} : tensor<64x32xf32, #mma> -> tensor<64xf32, #rows> {
  ^bb0(%a: f32, %b: f32):
    %z = arith.maxnumf %a, %b : f32
    tile.reduce.return %z : f32
  }
  %e = tile.expand_dims %m {axis = 1 : i32} : tensor<64xf32, #rows> -> tensor<64x1xf32, #mma>
  %b = tile.broadcast %e : tensor<64x1xf32, #mma> -> tensor<64x32xf32, #mma>
  %d = arith.subf %t, %b : tensor<64x32xf32, #mma>
  %r = tile.convert_layout %d : tensor<64x32xf32, #mma> -> tensor<64x32xf32>
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<64x32x!tile.ptr<f32>>
  tile.store %p, %r : tensor<64x32x!tile.ptr<f32>>
  return
}

// -----

#mma = #tile.mma<version = 2, numWarps = 4, warpsN = 4>

// The column index of a [16, 64] tile on 4 warps along N (16 columns a warp:
// 8 registers a thread): the thread's base, column wN * 16 + 2 (lane mod 4)
// with wN = (tid / 32) mod 4, plus a constant a register (8j + e: 0, 1, 0, 1,
// 8, 9, 8, 9 for h = 0, 1 of n-tiles j = 0, 1).
// CHECK-LABEL: llvm.func ptx_kernelcc @columns(
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x
// CHECK: %[[C5:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK-NEXT: %[[WARP:.*]] = llvm.lshr %[[TID]], %[[C5]] : i32
// CHECK: %[[C3:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK: %[[WN:.*]] = llvm.and %{{.*}}, %[[C3]] : i32
// CHECK: %[[C16:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK-NEXT: llvm.mul %[[WN]], %[[C16]] : i32
// CHECK: %[[C63:.*]] = llvm.mlir.constant(63 : i32) : i32
// CHECK-NEXT: %[[COL:.*]] = llvm.and %{{.*}}, %[[C63]] : i32
// CHECK-NEXT: %[[K1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[R1:.*]] = llvm.add %[[COL]], %[[K1]] : i32
// CHECK-NEXT: %[[K3:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[R3:.*]] = llvm.add %[[COL]], %[[K3]] : i32
// CHECK-NEXT: %[[K4:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-NEXT: %[[R4:.*]] = llvm.add %[[COL]], %[[K4]] : i32
// CHECK-NEXT: %[[K5:.*]] = llvm.mlir.constant(9 : i32) : i32
// CHECK-NEXT: llvm.add %[[COL]], %[[K5]] : i32
// CHECK: llvm.insertvalue %[[COL]], %{{.*}}[0]
// CHECK-NEXT: llvm.insertvalue %[[R1]], %{{.*}}[1]
// CHECK-NEXT: llvm.insertvalue %[[COL]], %{{.*}}[2]
// CHECK-NEXT: llvm.insertvalue %[[R3]], %{{.*}}[3]
// CHECK-NEXT: llvm.insertvalue %[[R4]], %{{.*}}[4]
func.func @columns(%out: !tile.ptr<i32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<16x64xi32, #mma>
  %r = tile.convert_layout %c : tensor<16x64xi32, #mma> -> tensor<16x64xi32>
  %p = tile.splat %out : !tile.ptr<i32> -> tensor<16x64x!tile.ptr<i32>>
  tile.store %p, %r : tensor<16x64x!tile.ptr<i32>>
  return
}

// -----

#v3 = #tile.mma<version = 3, numWarps = 4>
#v2 = #tile.mma<version = 2, numWarps = 4>

// Version 3 and version 2 with all warps along M hold the same registers: the
// conversion between them copies registers. Only the conversion to the
// blocked layout goes through shared memory (one barrier pair).
// CHECK-LABEL: llvm.func ptx_kernelcc @same_registers(
// CHECK-NOT: nvvm.barrier
// CHECK-COUNT-32: llvm.add %{{.*}}, %{{.*}} : i32
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.store %{{.*}} : vector<2xi32>, !llvm.ptr<3>
// CHECK-COUNT-2: nvvm.barrier
// CHECK-NOT: nvvm.barrier
func.func @same_registers(%x: !tile.ptr<i32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %i = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<64x64xi32, #v3>
  %a = tile.convert_layout %i : tensor<64x64xi32, #v3> -> tensor<64x64xi32, #v2>
  %b = arith.addi %a, %a : tensor<64x64xi32, #v2>
  %r = tile.convert_layout %b : tensor<64x64xi32, #v2> -> tensor<64x64xi32>
  %xp = tile.splat %x : !tile.ptr<i32> -> tensor<64x64x!tile.ptr<i32>>
  tile.store %xp, %r : tensor<64x64x!tile.ptr<i32>>
  return
}

// -----

#split = #tile.mma<version = 2, numWarps = 4, warpsN = 2>
#srows = #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4, warpsN = 2>>

// The rows of a [32, 32] mma.sync accumulator whose warps split them (2 x 2
// warps, warpsN = 2: 16 columns a warp, 4 registers of each of a thread's 2
// rows): each row's 4 registers combine in the thread (3 maxnums), then the
// quad (shfl.sync.bfly 1 and 2); lane 0 of each quad stores its 2 rows'
// partials at [wN, row] of a 2 x 32 buffer; bar.sync; every thread loads the
// 2 partials of each of its rows (wN = 0 then 1) and combines them; bar.sync.
// The broadcast back to [32, 32] copies registers (8 fsubs).
// CHECK-DAG: llvm.mlir.global internal @__kiln_reduce_rows_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<64 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @split_rows(
// CHECK-COUNT-2: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK-COUNT-3: llvm.call @__nv_fmaxf
// CHECK: nvvm.shfl.sync bfly
// CHECK: nvvm.shfl.sync bfly
// CHECK: %[[LEADER:.*]] = llvm.icmp "eq" %{{.*}}, %{{.*}} : i32
// CHECK: scf.if %[[LEADER]] {
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NOT: llvm.store
// CHECK: }
// CHECK-NEXT: nvvm.barrier
// CHECK: %[[A0:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: %[[B0:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: llvm.call @__nv_fmaxf(%[[A0]], %[[B0]])
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: llvm.call @__nv_fmaxf
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-8: llvm.fsub {{.*}} : f32
// CHECK-NOT: llvm.fsub
func.func @split_rows(%x: !tile.ptr<f32>, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %xp = tile.splat %x : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %l = tile.load %xp : tensor<32x32x!tile.ptr<f32>>
  %t = tile.convert_layout %l : tensor<32x32xf32> -> tensor<32x32xf32, #split>
  %m = tile.reduce %t {axis = 1 : i32} : tensor<32x32xf32, #split> -> tensor<32xf32, #srows> {
  ^bb0(%a: f32, %b: f32):
    %z = arith.maxnumf %a, %b : f32
    tile.reduce.return %z : f32
  }
  %e = tile.expand_dims %m {axis = 1 : i32} : tensor<32xf32, #srows> -> tensor<32x1xf32, #split>
  %b = tile.broadcast %e : tensor<32x1xf32, #split> -> tensor<32x32xf32, #split>
  %d = arith.subf %t, %b : tensor<32x32xf32, #split>
  %r = tile.convert_layout %d : tensor<32x32xf32, #split> -> tensor<32x32xf32>
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  tile.store %p, %r : tensor<32x32x!tile.ptr<f32>>
  return
}
