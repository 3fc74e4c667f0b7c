// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-convert-tile-to-nvvm | FileCheck %s

// tile.splat, tile.expand_dims and tile.reshape move no data; tile.broadcast,
// tile.trans, tile.join and tile.split go through shared memory between two
// barriers (the last three share one buffer, __kiln_shape_smem, grown to the
// largest need).

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

// A row (1x32) repeated over 8 rows by one warp: the source is replicated (8
// runs of 4, thread t holds run t & 7: columns 4(t & 7)..4(t & 7)+3), and each of
// the thread's 8 result elements (4t..4t+3, 128+4t..128+4t+3) is column
// (linear index & 31) = 4(t & 7) + k, which the thread holds: the registers are
// copied, nothing goes through shared memory. (The result is stored through one
// pointer: only the broadcast matters here.)
// CHECK-NOT: __kiln_broadcast_smem
// CHECK-LABEL: llvm.func ptx_kernelcc @broadcast_row
// CHECK: %[[V:.*]] = llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK-NOT: nvvm.barrier
// CHECK-NOT: llvm.mlir.addressof
// CHECK: %[[R:.*]] = llvm.insertvalue %{{.*}}, %{{.*}}[7] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
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
// CHECK-DAG: llvm.mlir.global internal @__kiln_broadcast_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<8 x i8>
// CHECK-DAG: llvm.mlir.global internal @__kiln_broadcast_smem_1() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<8 x i32>
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

// -----

// tile.trans of 8x16 f32 over one warp (4 elements a thread): thread t holds
// source elements 4t..4t+3 (row t >> 2, columns 4(t & 3)..+3) and stores
// element (i, j) at its index j * 8 + i in the 16x8 result, whose rows of 8
// are padded by one element: position 9j + i. The thread part of the
// position is the source index bits moved ((4t & 12) << 3 | (4t & 112) >> 4)
// plus its row padding; the register offsets are constants (9 * r). After a
// barrier each thread loads its result elements 4t..4t+3 at 4t + (4t >> 3) + r.
// CHECK: llvm.mlir.global internal @__kiln_shape_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<572 x i8>
// CHECK-LABEL: llvm.func ptx_kernelcc @trans_2d
// CHECK: %[[V:.*]] = llvm.insertvalue %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-DAG: %[[V0:.*]] = llvm.extractvalue %[[V]][0]
// CHECK-DAG: %[[V1:.*]] = llvm.extractvalue %[[V]][1]
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_shape_smem : !llvm.ptr<3>
// CHECK-NEXT: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[C4:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[BASE:.*]] = llvm.mul %[[TID]], %[[C4]] : i32
// CHECK-NEXT: %[[C12:.*]] = llvm.mlir.constant(12 : i32) : i32
// CHECK-NEXT: %[[COL:.*]] = llvm.and %[[BASE]], %[[C12]] : i32
// CHECK-NEXT: %[[C3:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[COLM:.*]] = llvm.shl %[[COL]], %[[C3]] : i32
// CHECK-NEXT: %[[C112:.*]] = llvm.mlir.constant(112 : i32) : i32
// CHECK-NEXT: %[[ROW:.*]] = llvm.and %[[BASE]], %[[C112]] : i32
// CHECK-NEXT: %[[C4B:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[ROWM:.*]] = llvm.lshr %[[ROW]], %[[C4B]] : i32
// CHECK-NEXT: %[[POS:.*]] = llvm.or %[[COLM]], %[[ROWM]] : i32
// CHECK-NEXT: %[[C3B:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[PAD:.*]] = llvm.lshr %[[POS]], %[[C3B]] : i32
// CHECK-NEXT: %[[WBASE:.*]] = llvm.add %[[POS]], %[[PAD]] : i32
// CHECK-NEXT: %[[TID2:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[C4C:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[RPOS:.*]] = llvm.mul %[[TID2]], %[[C4C]] : i32
// CHECK-NEXT: %[[C3C:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[RPAD:.*]] = llvm.lshr %[[RPOS]], %[[C3C]] : i32
// CHECK-NEXT: %[[RBASE:.*]] = llvm.add %[[RPOS]], %[[RPAD]] : i32
// CHECK-NEXT: %[[O0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[W0:.*]] = llvm.add %[[WBASE]], %[[O0]] : i32
// CHECK-NEXT: %[[P0:.*]] = llvm.getelementptr %[[BUF]][%[[W0]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK-NEXT: llvm.store %[[V0]], %[[P0]] : f32, !llvm.ptr<3>
// CHECK-NEXT: %[[O1:.*]] = llvm.mlir.constant(9 : i32) : i32
// CHECK-NEXT: %[[W1:.*]] = llvm.add %[[WBASE]], %[[O1]] : i32
// CHECK-NEXT: %[[P1:.*]] = llvm.getelementptr %[[BUF]][%[[W1]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK-NEXT: llvm.store %[[V1]], %[[P1]] : f32, !llvm.ptr<3>
// CHECK-NEXT: llvm.mlir.constant(18 : i32) : i32
// CHECK: llvm.mlir.constant(27 : i32) : i32
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: %[[R0C:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[R0:.*]] = llvm.add %[[RBASE]], %[[R0C]] : i32
// CHECK-NEXT: %[[Q0:.*]] = llvm.getelementptr %[[BUF]][%[[R0]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK-NEXT: %[[L0:.*]] = llvm.load %[[Q0]] : !llvm.ptr<3> -> f32
// CHECK-NEXT: %[[R1C:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[R1:.*]] = llvm.add %[[RBASE]], %[[R1C]] : i32
// CHECK-COUNT-3: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: %[[P:.*]] = llvm.mlir.poison : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT: llvm.insertvalue %[[L0]], %[[P]][0]
func.func @trans_2d(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                    %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %i = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<8x16xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<8x16x!tile.ptr<f32>>
  %p = tile.addptr %xs, %i : tensor<8x16x!tile.ptr<f32>>, tensor<8x16xi32>
  %v = tile.load %p : tensor<8x16x!tile.ptr<f32>>
  %t = tile.trans %v {order = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<16x8x!tile.ptr<f32>>
  tile.store %ys, %t : tensor<16x8x!tile.ptr<f32>>
  return
}

// -----

// A 3-D permutation of a replicated tile (64 f32 over 32 threads: 16 runs):
// only the first copy stores. Source dims [2, 4, 8] sit in index bits 5, 3-4,
// 0-2; in the [8, 2, 4] result dim 2 (bits 0-2) moves to bits 3-5, dims 0
// and 1 (bits 3-5) to bits 0-2: the thread part is (4t & 4) << 3 | (4t & 56) >> 3,
// the registers (bits 0-1) go 8 apart. Rows of 4: no padding.
// CHECK: llvm.mlir.global internal @__kiln_shape_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<256 x i8>
// CHECK-LABEL: llvm.func ptx_kernelcc @trans_3d_replicated
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_shape_smem : !llvm.ptr<3>
// CHECK: %[[C15:.*]] = llvm.mlir.constant(15 : i32) : i32
// CHECK-NEXT: %[[RUNNO:.*]] = llvm.and %{{.*}}, %[[C15]] : i32
// CHECK: %[[BASE:.*]] = llvm.mul %[[RUNNO]], %{{.*}} : i32
// CHECK-NEXT: %[[C4:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[LOW:.*]] = llvm.and %[[BASE]], %[[C4]] : i32
// CHECK-NEXT: %[[C3:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[LOWM:.*]] = llvm.shl %[[LOW]], %[[C3]] : i32
// CHECK-NEXT: %[[C56:.*]] = llvm.mlir.constant(56 : i32) : i32
// CHECK-NEXT: %[[HIGH:.*]] = llvm.and %[[BASE]], %[[C56]] : i32
// CHECK-NEXT: %[[C3B:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[HIGHM:.*]] = llvm.lshr %[[HIGH]], %[[C3B]] : i32
// CHECK-NEXT: %[[WBASE:.*]] = llvm.or %[[LOWM]], %[[HIGHM]] : i32
// CHECK-NEXT: %[[C16:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK-NEXT: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[OWNER:.*]] = llvm.icmp "ult" %[[TID]], %[[C16]] : i32
// CHECK: scf.if %[[OWNER]] {
// CHECK: llvm.add %[[WBASE]], %{{.*}} : i32
// CHECK: llvm.store
// CHECK: llvm.mlir.constant(8 : i32) : i32
// CHECK: llvm.store
// CHECK: llvm.mlir.constant(16 : i32) : i32
// CHECK: llvm.store
// CHECK: llvm.mlir.constant(24 : i32) : i32
// CHECK: llvm.store
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: nvvm.barrier
func.func @trans_3d_replicated(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                               %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %i = tile.iota {dim = 2 : i32, start = 0 : i32} : tensor<2x4x8xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<2x4x8x!tile.ptr<f32>>
  %p = tile.addptr %xs, %i : tensor<2x4x8x!tile.ptr<f32>>, tensor<2x4x8xi32>
  %v = tile.load %p : tensor<2x4x8x!tile.ptr<f32>>
  %t = tile.trans %v {order = array<i64: 2, 0, 1>} : tensor<2x4x8xf32> -> tensor<8x2x4xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<8x2x4x!tile.ptr<f32>>
  tile.store %ys, %t : tensor<8x2x4x!tile.ptr<f32>>
  return
}

// -----

// Booleans travel as i8.
// CHECK: llvm.mlir.global internal @__kiln_shape_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<32 x i8>
// CHECK-LABEL: llvm.func ptx_kernelcc @trans_i1
// CHECK: scf.if
// CHECK: %[[WIDE:.*]] = llvm.zext %{{.*}} : i1 to i8
// CHECK: llvm.store %[[WIDE]], %{{.*}} : i8, !llvm.ptr<3>
// CHECK: nvvm.barrier
// CHECK: %[[NARROW:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> i8
// CHECK-NEXT: llvm.trunc %[[NARROW]] : i8 to i1
// CHECK: nvvm.barrier
func.func @trans_i1(%y: !tile.ptr<i32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<4x8xi32>
  %ns = tile.splat %n : i32 -> tensor<4x8xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<4x8xi32>
  %mt = tile.trans %m {order = array<i64: 1, 0>} : tensor<4x8xi1> -> tensor<8x4xi1>
  %v = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<8x4xi32>
  %ys = tile.splat %y : !tile.ptr<i32> -> tensor<8x4x!tile.ptr<i32>>
  tile.store %ys, %v, %mt : tensor<8x4x!tile.ptr<i32>>
  return
}

// -----

// Moving a unit dimension keeps the row-major order: no buffer, no barrier.
// CHECK-NOT: llvm.mlir.global
// CHECK-LABEL: llvm.func ptx_kernelcc @trans_unit_dim
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @trans_unit_dim(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                          %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %i = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<1x64xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1x64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %i : tensor<1x64x!tile.ptr<f32>>, tensor<1x64xi32>
  %v = tile.load %p : tensor<1x64x!tile.ptr<f32>>
  %t = tile.trans %v {order = array<i64: 1, 0>} : tensor<1x64xf32> -> tensor<64x1xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<64x1x!tile.ptr<f32>>
  tile.store %ys, %t : tensor<64x1x!tile.ptr<f32>>
  return
}

// -----

// 128x128 f32 over 4 warps (64 KiB) moves in 4 slabs of 16 KiB. The slab is
// the result's column mod 4 (position bits 0-1): the warp decides it for the
// stores (source row bits 7-8 = tid bits 5-6: (4t & 384) >> 7; a branch per
// slab around all 128 stores, uniform over the warp) and the register for the
// loads (register r is in slab r mod 4: 32 loads a slab, unpredicated). The
// in-slab index drops those bits: 4096 positions in rows of 32, padded: 4223.
// CHECK: llvm.mlir.global internal @__kiln_shape_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<16892 x i8>
// CHECK-LABEL: llvm.func ptx_kernelcc @trans_slabs
// CHECK: %[[C384:.*]] = llvm.mlir.constant(384 : i32) : i32
// CHECK-NEXT: %[[WARP:.*]] = llvm.and %{{.*}}, %[[C384]] : i32
// CHECK-NEXT: %[[C7:.*]] = llvm.mlir.constant(7 : i32) : i32
// CHECK-NEXT: %[[SLAB:.*]] = llvm.lshr %[[WARP]], %[[C7]] : i32
// CHECK: %[[S0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[IN0:.*]] = llvm.icmp "eq" %[[SLAB]], %[[S0]] : i32
// CHECK-NEXT: scf.if %[[IN0]] {
// CHECK-COUNT-128: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-32: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: %[[S1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[IN1:.*]] = llvm.icmp "eq" %[[SLAB]], %[[S1]] : i32
// CHECK-NEXT: scf.if %[[IN1]] {
// CHECK-COUNT-4: nvvm.barrier
// CHECK-NEXT: %[[S3:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[IN3:.*]] = llvm.icmp "eq" %[[SLAB]], %[[S3]] : i32
// CHECK-NEXT: scf.if %[[IN3]] {
// CHECK-COUNT-128: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier
// CHECK-COUNT-32: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @trans_slabs(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                       %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %i = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<128x128xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  %p = tile.addptr %xs, %i : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xi32>
  %v = tile.load %p : tensor<128x128x!tile.ptr<f32>>
  %t = tile.trans %v {order = array<i64: 1, 0>} : tensor<128x128xf32> -> tensor<128x128xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %ys, %t : tensor<128x128x!tile.ptr<f32>>
  return
}

// -----

// tile.reshape keeps the row-major order, hence the registers: no buffer.
// CHECK-NOT: llvm.mlir.global
// CHECK-LABEL: llvm.func ptx_kernelcc @reshape
// CHECK: %[[V:.*]] = llvm.insertvalue %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.extractvalue %[[V]][0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @reshape(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                   %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %i = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<4x32xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<4x32x!tile.ptr<f32>>
  %p = tile.addptr %xs, %i : tensor<4x32x!tile.ptr<f32>>, tensor<4x32xi32>
  %v = tile.load %p : tensor<4x32x!tile.ptr<f32>>
  %r = tile.reshape %v : tensor<4x32xf32> -> tensor<2x8x8xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<2x8x8x!tile.ptr<f32>>
  tile.store %ys, %r : tensor<2x8x8x!tile.ptr<f32>>
  return
}

// -----

// tile.join of two 4x32 f32 tiles over one warp: element i of lhs goes to
// position 2i, of rhs to 2i + 1 (thread t's run 4t..4t+3: positions 8t + 2r,
// + 1), then each thread loads its 8 result elements at their own index.
// CHECK: llvm.mlir.global internal @__kiln_shape_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<1024 x i8>
// CHECK-LABEL: llvm.func ptx_kernelcc @join
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_shape_smem : !llvm.ptr<3>
// CHECK: %[[C1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[LBASE:.*]] = llvm.shl %{{.*}}, %[[C1]] : i32
// CHECK: %[[C1B:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[RBASE:.*]] = llvm.shl %{{.*}}, %[[C1B]] : i32
// CHECK: llvm.add %[[LBASE]], %{{.*}} : i32
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: llvm.mlir.constant(2 : i32) : i32
// CHECK: llvm.mlir.constant(6 : i32) : i32
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: %[[O1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: llvm.add %[[RBASE]], %[[O1]] : i32
// CHECK: llvm.mlir.constant(7 : i32) : i32
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-8: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: llvm.mlir.poison : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
func.func @join(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %i = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<4x32xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<4x32x!tile.ptr<f32>>
  %p = tile.addptr %xs, %i : tensor<4x32x!tile.ptr<f32>>, tensor<4x32xi32>
  %a = tile.load %p : tensor<4x32x!tile.ptr<f32>>
  %b = arith.negf %a : tensor<4x32xf32>
  %j = tile.join %a, %b : tensor<4x32xf32> -> tensor<4x32x2xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<4x32x2x!tile.ptr<f32>>
  tile.store %ys, %j : tensor<4x32x2x!tile.ptr<f32>>
  return
}

// -----

// tile.split: the 4x32x2 source stores at its own index (thread t: 4t + r and
// 128 + 4t + r), each half loads its element i at 2i (lhs) or 2i + 1 (rhs).
// CHECK: llvm.mlir.global internal @__kiln_shape_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<1024 x i8>
// CHECK-LABEL: llvm.func ptx_kernelcc @split
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_shape_smem : !llvm.ptr<3>
// CHECK: %[[WBASE:.*]] = llvm.mul %{{.*}}, %{{.*}} : i32
// CHECK: %[[LBASE:.*]] = llvm.shl %{{.*}}, %{{.*}} : i32
// CHECK: %[[RBASE:.*]] = llvm.shl %{{.*}}, %{{.*}} : i32
// CHECK: llvm.add %[[WBASE]], %{{.*}} : i32
// CHECK: llvm.mlir.constant(131 : i32) : i32
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: %[[L0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: llvm.add %[[LBASE]], %[[L0]] : i32
// CHECK: llvm.mlir.constant(6 : i32) : i32
// CHECK: %[[R0:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: llvm.add %[[RBASE]], %[[R0]] : i32
// CHECK: llvm.mlir.constant(7 : i32) : i32
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: nvvm.barrier
func.func @split(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                 %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %i = tile.iota {dim = 2 : i32, start = 0 : i32} : tensor<4x32x2xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<4x32x2x!tile.ptr<f32>>
  %p = tile.addptr %xs, %i : tensor<4x32x2x!tile.ptr<f32>>, tensor<4x32x2xi32>
  %v = tile.load %p : tensor<4x32x2x!tile.ptr<f32>>
  %lo, %hi = tile.split %v : tensor<4x32x2xf32> -> tensor<4x32xf32>
  %s = arith.addf %lo, %hi : tensor<4x32xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<4x32x!tile.ptr<f32>>
  tile.store %ys, %s : tensor<4x32x!tile.ptr<f32>>
  return
}

// -----

// Every exchange of a kernel uses the one buffer in turn (each ends with a
// barrier), grown to the largest need: 143 f32 for the 8x16 transpose, then
// 256 f32 for the join.
// CHECK: llvm.mlir.global internal @__kiln_shape_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<1024 x i8>
// CHECK-NOT: llvm.mlir.global
// CHECK-LABEL: llvm.func ptx_kernelcc @shared_exchange_buffer
// CHECK: llvm.mlir.addressof @__kiln_shape_smem : !llvm.ptr<3>
// CHECK-COUNT-2: nvvm.barrier
// CHECK: llvm.mlir.addressof @__kiln_shape_smem : !llvm.ptr<3>
// CHECK-COUNT-2: nvvm.barrier
// CHECK-NOT: nvvm.barrier
func.func @shared_exchange_buffer(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                                  %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %i = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<8x16xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<8x16x!tile.ptr<f32>>
  %p = tile.addptr %xs, %i : tensor<8x16x!tile.ptr<f32>>, tensor<8x16xi32>
  %v = tile.load %p : tensor<8x16x!tile.ptr<f32>>
  %t = tile.trans %v {order = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
  %j = tile.join %t, %t : tensor<16x8xf32> -> tensor<16x8x2xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<16x8x2x!tile.ptr<f32>>
  tile.store %ys, %j : tensor<16x8x2x!tile.ptr<f32>>
  return
}
