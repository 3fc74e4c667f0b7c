// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-convert-tile-to-nvvm | FileCheck %s

// tile.splat and tile.expand_dims move no data; tile.broadcast goes through a
// shared-memory buffer between two barriers.

// A splat is the scalar in every register of the thread (512 x f32 over 128
// threads: 4 registers).
// CHECK-LABEL: llvm.func ptx_kernelcc @splat
// CHECK-SAME: (%[[X:.*]]: !llvm.ptr<1>, %[[V:.*]]: f32)
// CHECK: %[[P:.*]] = llvm.mlir.poison : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[S0:.*]] = llvm.insertvalue %[[V]], %[[P]][0]
// CHECK: %[[S1:.*]] = llvm.insertvalue %[[V]], %[[S0]][1]
// CHECK: %[[S2:.*]] = llvm.insertvalue %[[V]], %[[S1]][2]
// CHECK: %[[S3:.*]] = llvm.insertvalue %[[V]], %[[S2]][3]
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @splat(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %v: f32) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %vs = tile.splat %v : f32 -> tensor<512xf32>
  tile.store %p, %vs : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// expand_dims keeps the row-major order: the same registers, no shared memory.
// CHECK-NOT: llvm.mlir.global
// CHECK-LABEL: llvm.func ptx_kernelcc @expand_dims
// CHECK: %[[V:.*]] = llvm.insertvalue %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: llvm.mlir.addressof
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.extractvalue %[[V]][0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
func.func @expand_dims(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %v: f32) attributes {tile.kernel} {
  %vs = tile.splat %v : f32 -> tensor<512xf32>
  %ve = tile.expand_dims %vs {axis = 0 : i32} : tensor<512xf32> -> tensor<1x512xf32>
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %re = tile.expand_dims %r {axis = 0 : i32} : tensor<512xi32> -> tensor<1x512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1x512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %re : tensor<1x512x!tile.ptr<f32>>, tensor<1x512xi32>
  tile.store %p, %ve : tensor<1x512x!tile.ptr<f32>>
  return
}

// -----

// A row (1x32) repeated over 8 rows by one warp: the source (replicated: 8
// runs of 4, thread t holds run t & 7) goes to a 32-element shared buffer;
// after a barrier each thread reads, for each of its 8 elements (4t..4t+3,
// 128+4t..128+4t+3), the source column = linear index & 31; a second barrier
// protects the buffer. (The result is stored through one pointer: only the
// broadcast matters here.)
// CHECK: llvm.mlir.global internal @__kiln_broadcast_smem_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<32 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @broadcast_row
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_broadcast_smem_0 : !llvm.ptr<3>
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[C7:.*]] = llvm.mlir.constant(7 : i32) : i32
// CHECK: %[[RUNIDX:.*]] = llvm.and %[[TID]], %[[C7]] : i32
// CHECK: %[[C4:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK: %[[SRC:.*]] = llvm.mul %[[RUNIDX]], %[[C4]] : i32
// CHECK: %[[SRC0:.*]] = llvm.add %[[SRC]], %{{.*}} : i32
// CHECK: %[[W0:.*]] = llvm.getelementptr %[[BUF]][%[[SRC0]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK: llvm.store %{{.*}}, %[[W0]] : f32, !llvm.ptr<3>
// CHECK-COUNT-3: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: %[[TID2:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[C4B:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[DST:.*]] = llvm.mul %[[TID2]], %[[C4B]] : i32
// CHECK-NEXT: %[[C0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[LIN:.*]] = llvm.add %[[DST]], %[[C0]] : i32
// CHECK-NEXT: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[SHIFT:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[COL:.*]] = llvm.lshr %[[LIN]], %[[SHIFT]] : i32
// CHECK-NEXT: %[[C31:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[COLM:.*]] = llvm.and %[[COL]], %[[C31]] : i32
// CHECK-NEXT: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[COLS:.*]] = llvm.mul %[[COLM]], %[[ONE]] : i32
// CHECK-NEXT: %[[IDX:.*]] = llvm.add %[[ZERO]], %[[COLS]] : i32
// CHECK-NEXT: %[[R0:.*]] = llvm.getelementptr %[[BUF]][%[[IDX]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK-NEXT: llvm.load %[[R0]] : !llvm.ptr<3> -> f32
// CHECK: llvm.mlir.constant(128 : i32) : i32
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: llvm.mlir.poison : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
func.func @broadcast_row(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                         %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %c = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
  %p = tile.addptr %xs, %c : tensor<32x!tile.ptr<f32>>, tensor<32xi32>
  %v = tile.load %p : tensor<32x!tile.ptr<f32>>
  %row = tile.expand_dims %v {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
  %b = tile.broadcast %row : tensor<1x32xf32> -> tensor<8x32xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<8x32x!tile.ptr<f32>>
  tile.store %ys, %b : tensor<8x32x!tile.ptr<f32>>
  return
}

// -----

// A column of booleans (8x1 -> 8x32): i1 is kept as i8 in shared memory; the
// source row = (linear index >> 5) & 7. Each broadcast gets its own buffer.
// CHECK-DAG: llvm.mlir.global internal @__kiln_broadcast_smem_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8 x i8>
// CHECK-DAG: llvm.mlir.global internal @__kiln_broadcast_smem_1() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8 x i32>
// CHECK-LABEL: llvm.func ptx_kernelcc @broadcast_column_i1
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_broadcast_smem_0 : !llvm.ptr<3>
// CHECK: %[[WIDE:.*]] = llvm.zext %{{.*}} : i1 to i8
// CHECK: llvm.store %[[WIDE]], %{{.*}} : i8, !llvm.ptr<3>
// CHECK: nvvm.barrier
// CHECK: %[[C5:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK-NEXT: %[[ROW:.*]] = llvm.lshr %{{.*}}, %[[C5]] : i32
// CHECK-NEXT: %[[C7:.*]] = llvm.mlir.constant(7 : i32) : i32
// CHECK-NEXT: llvm.and %[[ROW]], %[[C7]] : i32
// CHECK: %[[NARROW:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> i8
// CHECK-NEXT: llvm.trunc %[[NARROW]] : i8 to i1
// CHECK: nvvm.barrier
// CHECK: llvm.mlir.addressof @__kiln_broadcast_smem_1 : !llvm.ptr<3>
// CHECK: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<3>
// CHECK: nvvm.barrier
func.func @broadcast_column_i1(%y: !tile.ptr<i32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 8 : i32} : tensor<8xi32>
  %ns = tile.splat %n : i32 -> tensor<8xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<8xi32>
  %mc = tile.expand_dims %m {axis = 1 : i32} : tensor<8xi1> -> tensor<8x1xi1>
  %mb = tile.broadcast %mc : tensor<8x1xi1> -> tensor<8x32xi1>
  %rc = tile.expand_dims %r {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
  %rb = tile.broadcast %rc : tensor<8x1xi32> -> tensor<8x32xi32>
  %ys = tile.splat %y : !tile.ptr<i32> -> tensor<8x32x!tile.ptr<i32>>
  tile.store %ys, %rb, %mb : tensor<8x32x!tile.ptr<i32>>
  return
}
