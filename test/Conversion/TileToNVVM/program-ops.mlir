// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-convert-tile-to-nvvm | FileCheck %s

// tile.program_id / tile.num_programs read %ctaid / %nctaid; tile.make_range
// gives each thread the indices of the elements it holds.

// CHECK-LABEL: llvm.func ptx_kernelcc @program_ids
// CHECK-DAG: %[[PX:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK-DAG: %[[PY:.*]] = nvvm.read.ptx.sreg.ctaid.y : i32
// CHECK-DAG: %[[PZ:.*]] = nvvm.read.ptx.sreg.ctaid.z : i32
// CHECK-DAG: %[[NX:.*]] = nvvm.read.ptx.sreg.nctaid.x : i32
// CHECK-DAG: %[[NY:.*]] = nvvm.read.ptx.sreg.nctaid.y : i32
// CHECK-DAG: %[[NZ:.*]] = nvvm.read.ptx.sreg.nctaid.z : i32
// CHECK: %[[A:.*]] = llvm.add %[[PX]], %[[PY]] : i32
// CHECK: %[[B:.*]] = llvm.add %[[A]], %[[PZ]] : i32
// CHECK: %[[C:.*]] = llvm.add %[[B]], %[[NX]] : i32
// CHECK: %[[D:.*]] = llvm.add %[[C]], %[[NY]] : i32
// CHECK: %[[E:.*]] = llvm.add %[[D]], %[[NZ]] : i32
// A scalar store is done by thread 0 only.
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[IS0:.*]] = llvm.icmp "eq" %[[TID]], %[[ZERO]] : i32
// CHECK: scf.if %[[IS0]] {
// CHECK-NEXT: llvm.store %[[E]], %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK-NEXT: }
// CHECK-NOT: tile.
func.func @program_ids(%x: !tile.ptr<i32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %0 = tile.program_id x : i32
  %1 = tile.program_id y : i32
  %2 = tile.program_id z : i32
  %3 = tile.num_programs x : i32
  %4 = tile.num_programs y : i32
  %5 = tile.num_programs z : i32
  %a = arith.addi %0, %1 : i32
  %b = arith.addi %a, %2 : i32
  %c = arith.addi %b, %3 : i32
  %d = arith.addi %c, %4 : i32
  %e = arith.addi %d, %5 : i32
  tile.store %x, %e : !tile.ptr<i32>
  return
}

// -----

// 1024 elements over 128 threads x 4 (i32, 16 bytes): thread t holds
// 4t .. 4t+3 and 512+4t .. 512+4t+3.
// CHECK-LABEL: llvm.func ptx_kernelcc @make_range
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[FOUR:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK: %[[BASE:.*]] = llvm.mul %[[TID]], %[[FOUR]] : i32
// CHECK: %[[C0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C0]] : i32
// CHECK: %[[C1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C1]] : i32
// CHECK: %[[C2:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C2]] : i32
// CHECK: %[[C3:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C3]] : i32
// CHECK: %[[C512:.*]] = llvm.mlir.constant(512 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C512]] : i32
// CHECK: %[[C513:.*]] = llvm.mlir.constant(513 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C513]] : i32
// CHECK: %[[C514:.*]] = llvm.mlir.constant(514 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C514]] : i32
// CHECK: %[[C515:.*]] = llvm.mlir.constant(515 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C515]] : i32
// CHECK: llvm.mlir.poison : !llvm.struct<(i32, i32, i32, i32, i32, i32, i32, i32)>
// Two 16-byte stores per thread, neither predicated.
// CHECK-NOT: scf.if
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK-NOT: scf.if
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK-NOT: llvm.store
// CHECK: llvm.return
func.func @make_range(%x: !tile.ptr<i32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<i32> -> tensor<1024x!tile.ptr<i32>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<i32>>, tensor<1024xi32>
  tile.store %p, %r : tensor<1024x!tile.ptr<i32>>
  return
}

// -----

// 64 elements = 16 runs of 4 over 128 threads: replicated, thread t holds
// run t mod 16 (tid & 15), starting at `start` = 8.
// CHECK-LABEL: llvm.func ptx_kernelcc @make_range_replicated
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(15 : i32) : i32
// CHECK: %[[RUNIDX:.*]] = llvm.and %[[TID]], %[[MASK]] : i32
// CHECK: %[[FOUR:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK: %[[BASE:.*]] = llvm.mul %[[RUNIDX]], %[[FOUR]] : i32
// CHECK: %[[C8:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C8]] : i32
// CHECK: %[[C9:.*]] = llvm.mlir.constant(9 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C9]] : i32
// CHECK: %[[C10:.*]] = llvm.mlir.constant(10 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C10]] : i32
// CHECK: %[[C11:.*]] = llvm.mlir.constant(11 : i32) : i32
// CHECK: llvm.add %[[BASE]], %[[C11]] : i32
// CHECK: llvm.mlir.poison : !llvm.struct<(i32, i32, i32, i32)>
func.func @make_range_replicated(%x: !tile.ptr<i32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 8 : i32, end = 72 : i32} : tensor<64xi32>
  %xs = tile.splat %x : !tile.ptr<i32> -> tensor<64x!tile.ptr<i32>>
  %p = tile.addptr %xs, %r : tensor<64x!tile.ptr<i32>>, tensor<64xi32>
  tile.store %p, %r : tensor<64x!tile.ptr<i32>>
  return
}

// -----

// tile.iota on 8x32 over 32 threads (runs of 4; thread t holds elements 4t..
// 4t+3 and 128+4t..): the row is ((4t [+ 128]) >> 5) & 7, one value per run;
// the column (4t & 31) + start + 0..3, the same in both runs (128 is a
// multiple of 32), so the pointers of the second run are those of the first.
// CHECK-LABEL: llvm.func ptx_kernelcc @iota_rows_cols
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[BASE:.*]] = llvm.mul %[[TID]], %{{.*}} : i32
// CHECK: %[[C5:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK: %[[S0:.*]] = llvm.lshr %[[BASE]], %[[C5]] : i32
// CHECK: %[[R0:.*]] = llvm.and %[[S0]], %{{.*}} : i32
// CHECK: %[[C128:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK: %[[B1:.*]] = llvm.add %[[BASE]], %[[C128]] : i32
// CHECK: %[[S1:.*]] = llvm.lshr %[[B1]], %{{.*}} : i32
// CHECK: %[[R1:.*]] = llvm.and %[[S1]], %{{.*}} : i32
// CHECK-COUNT-4: llvm.insertvalue %[[R0]]
// CHECK-COUNT-4: llvm.insertvalue %[[R1]]
// CHECK: %[[C31:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK: %[[COL:.*]] = llvm.and %{{.*}}, %[[C31]] : i32
// CHECK: llvm.mlir.constant(2 : i32) : i32
// CHECK: llvm.add %[[COL]]
// CHECK: llvm.mlir.constant(5 : i32) : i32
// CHECK: llvm.add %[[COL]]
// CHECK-COUNT-4: llvm.getelementptr
// CHECK-NOT: llvm.getelementptr
// CHECK-COUNT-2: llvm.store
// CHECK-NOT: nvvm.barrier
func.func @iota_rows_cols(%x: !tile.ptr<i32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %rows = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<8x32xi32>
  %cols = tile.iota {dim = 1 : i32, start = 2 : i32} : tensor<8x32xi32>
  %v = arith.addi %rows, %cols : tensor<8x32xi32>
  %xs = tile.splat %x : !tile.ptr<i32> -> tensor<8x32x!tile.ptr<i32>>
  %p = tile.addptr %xs, %cols : tensor<8x32x!tile.ptr<i32>>, tensor<8x32xi32>
  tile.store %p, %v : tensor<8x32x!tile.ptr<i32>>
  return
}
