// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-convert-tile-to-nvvm | FileCheck %s

// tile.reduce in the blocked layout (ReduceOps.cpp): registers whose axis bits
// differ combine in the thread, lanes whose axis bits differ through
// shfl.sync.bfly (mask -1, clamp 31), and every thread writes its partials to a
// shared buffer [result][warp along the axis]; between two barriers each thread
// reads the results it holds in the result's layout and combines the warps.
// The element index e of a thread's register is base + offset: its low bits
// are the run (vec = 16 bytes / narrowest accessed element), then the thread id.

// 1-D to a scalar: 1024 x f32 over 4 warps, 4 per run: 8 registers, e = 4 * tid
// + (reg & 3) + 512 * (reg >> 2). The thread adds its 8 registers, 5 butterflies
// (1, 2, 4, 8, 16) cover the lane bits, the 2 warp bits (tid >> 5) pick a slot of
// a 4-element buffer, and every thread reads and adds the 4 slots.
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<4 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @sum_1d
// CHECK: %[[V:.*]] = llvm.insertvalue %{{.*}}[7] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
// CHECK: %[[R0:.*]] = llvm.extractvalue %[[V]][0]
// CHECK: %[[R1:.*]] = llvm.extractvalue %[[V]][1]
// CHECK: %[[R2:.*]] = llvm.extractvalue %[[V]][2]
// CHECK: %[[R3:.*]] = llvm.extractvalue %[[V]][3]
// CHECK: %[[R4:.*]] = llvm.extractvalue %[[V]][4]
// CHECK: %[[R5:.*]] = llvm.extractvalue %[[V]][5]
// CHECK: %[[R6:.*]] = llvm.extractvalue %[[V]][6]
// CHECK: %[[R7:.*]] = llvm.extractvalue %[[V]][7]
// CHECK-NEXT: %[[A1:.*]] = llvm.fadd %[[R0]], %[[R1]] : f32
// CHECK-NEXT: %[[A2:.*]] = llvm.fadd %[[A1]], %[[R2]] : f32
// CHECK-NEXT: %[[A3:.*]] = llvm.fadd %[[A2]], %[[R3]] : f32
// CHECK-NEXT: %[[A4:.*]] = llvm.fadd %[[A3]], %[[R4]] : f32
// CHECK-NEXT: %[[A5:.*]] = llvm.fadd %[[A4]], %[[R5]] : f32
// CHECK-NEXT: %[[A6:.*]] = llvm.fadd %[[A5]], %[[R6]] : f32
// CHECK-NEXT: %[[A7:.*]] = llvm.fadd %[[A6]], %[[R7]] : f32
// CHECK-NEXT: %[[M0:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[O0:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[C0:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W0:.*]] = llvm.bitcast %[[A7]] : f32 to i32
// CHECK-NEXT: %[[S0:.*]] = nvvm.shfl.sync bfly %[[M0]], %[[W0]], %[[O0]], %[[C0]] : i32 -> i32
// CHECK-NEXT: %[[F0:.*]] = llvm.bitcast %[[S0]] : i32 to f32
// CHECK-NEXT: %[[P0:.*]] = llvm.fadd %[[A7]], %[[F0]] : f32
// CHECK-NEXT: %[[M1:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[O1:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[C1:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W1:.*]] = llvm.bitcast %[[P0]] : f32 to i32
// CHECK-NEXT: %[[S1:.*]] = nvvm.shfl.sync bfly %[[M1]], %[[W1]], %[[O1]], %[[C1]] : i32 -> i32
// CHECK-NEXT: %[[F1:.*]] = llvm.bitcast %[[S1]] : i32 to f32
// CHECK-NEXT: %[[P1:.*]] = llvm.fadd %[[P0]], %[[F1]] : f32
// CHECK-NEXT: %[[M2:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[O2:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[C2:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W2:.*]] = llvm.bitcast %[[P1]] : f32 to i32
// CHECK-NEXT: %[[S2:.*]] = nvvm.shfl.sync bfly %[[M2]], %[[W2]], %[[O2]], %[[C2]] : i32 -> i32
// CHECK-NEXT: %[[F2:.*]] = llvm.bitcast %[[S2]] : i32 to f32
// CHECK-NEXT: %[[P2:.*]] = llvm.fadd %[[P1]], %[[F2]] : f32
// CHECK-NEXT: %[[M3:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[O3:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-NEXT: %[[C3:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W3:.*]] = llvm.bitcast %[[P2]] : f32 to i32
// CHECK-NEXT: %[[S3:.*]] = nvvm.shfl.sync bfly %[[M3]], %[[W3]], %[[O3]], %[[C3]] : i32 -> i32
// CHECK-NEXT: %[[F3:.*]] = llvm.bitcast %[[S3]] : i32 to f32
// CHECK-NEXT: %[[P3:.*]] = llvm.fadd %[[P2]], %[[F3]] : f32
// CHECK-NEXT: %[[M4:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[O4:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK-NEXT: %[[C4:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W4:.*]] = llvm.bitcast %[[P3]] : f32 to i32
// CHECK-NEXT: %[[S4:.*]] = nvvm.shfl.sync bfly %[[M4]], %[[W4]], %[[O4]], %[[C4]] : i32 -> i32
// CHECK-NEXT: %[[F4:.*]] = llvm.bitcast %[[S4]] : i32 to f32
// CHECK-NEXT: %[[P4:.*]] = llvm.fadd %[[P3]], %[[F4]] : f32
// CHECK-NEXT: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_reduce_smem_0 : !llvm.ptr<3>
// CHECK-NEXT: nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: llvm.mul
// CHECK-NEXT: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[WMASK:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[WSHIFT:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK-NEXT: %[[WT:.*]] = llvm.lshr %[[TID]], %[[WSHIFT]] : i32
// CHECK-NEXT: %[[WARP:.*]] = llvm.and %[[WT]], %[[WMASK]] : i32
// CHECK-NEXT: %[[NR:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[WOFF:.*]] = llvm.mul %[[WARP]], %[[NR]] : i32
// CHECK: %[[RES:.*]] = llvm.or %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[SLOT:.*]] = llvm.add %[[RES]], %[[WOFF]] : i32
// CHECK-NEXT: %[[PTR:.*]] = llvm.getelementptr %[[BUF]][%[[SLOT]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK-NEXT: llvm.store %[[P4]], %[[PTR]] : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: %[[BASE:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[K0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[I0:.*]] = llvm.add %[[BASE]], %[[K0]] : i32
// CHECK-NEXT: %[[G0:.*]] = llvm.getelementptr %[[BUF]][%[[I0]]]
// CHECK-NEXT: %[[L0:.*]] = llvm.load %[[G0]] : !llvm.ptr<3> -> f32
// CHECK-NEXT: %[[K1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[I1:.*]] = llvm.add %[[BASE]], %[[K1]] : i32
// CHECK-NEXT: %[[G1:.*]] = llvm.getelementptr %[[BUF]][%[[I1]]]
// CHECK-NEXT: %[[L1:.*]] = llvm.load %[[G1]] : !llvm.ptr<3> -> f32
// CHECK-NEXT: %[[T1:.*]] = llvm.fadd %[[L0]], %[[L1]] : f32
// CHECK-NEXT: %[[K2:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[I2:.*]] = llvm.add %[[BASE]], %[[K2]] : i32
// CHECK-NEXT: %[[G2:.*]] = llvm.getelementptr %[[BUF]][%[[I2]]]
// CHECK-NEXT: %[[L2:.*]] = llvm.load %[[G2]] : !llvm.ptr<3> -> f32
// CHECK-NEXT: %[[T2:.*]] = llvm.fadd %[[T1]], %[[L2]] : f32
// CHECK-NEXT: %[[K3:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[I3:.*]] = llvm.add %[[BASE]], %[[K3]] : i32
// CHECK-NEXT: %[[G3:.*]] = llvm.getelementptr %[[BUF]][%[[I3]]]
// CHECK-NEXT: %[[L3:.*]] = llvm.load %[[G3]] : !llvm.ptr<3> -> f32
// CHECK-NEXT: %[[T3:.*]] = llvm.fadd %[[T2]], %[[L3]] : f32
// CHECK-NEXT: nvvm.barrier
// CHECK: llvm.store %[[T3]], %{{.*}} : f32, !llvm.ptr<1>
func.func @sum_1d(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32>)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<f32>>
  %s = tile.reduce %v {axis = 0 : i32} : tensor<1024xf32> -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  tile.store %y, %s : !tile.ptr<f32>
  return
}

// -----

// 16x64 f32 along axis 1 (the 64 columns: e bits 0-5) over 4 warps: 8 registers,
// reg bits 0-1 are columns, reg bit 2 is row bit 3 (e bit 9): 2 partials of 4
// registers each. Lane bits 0-3 (e bits 2-5) are columns: butterflies 1, 2, 4, 8
// per partial; lane bit 4 and the warp bits are rows, so one warp along the axis
// (a 16 x 1 buffer). The 16-element result is replicated: 4 registers, 4 loads.
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<16 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @sum_rows_4warps
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-1: nvvm.shfl.sync bfly
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-1: nvvm.shfl.sync bfly
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-1: nvvm.shfl.sync bfly
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-1: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_reduce_smem_0 : !llvm.ptr<3>
// CHECK: %[[E:.*]] = llvm.add %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[LOWMASK:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[LOW:.*]] = llvm.and %[[E]], %[[LOWMASK]] : i32
// CHECK-NEXT: %[[LO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[HI:.*]] = llvm.mlir.constant(6 : i32) : i32
// CHECK-NEXT: %[[HIGH:.*]] = llvm.lshr %[[E]], %[[HI]] : i32
// CHECK-NEXT: %[[HIGHS:.*]] = llvm.shl %[[HIGH]], %[[LO]] : i32
// CHECK-NEXT: %[[RES:.*]] = llvm.or %[[HIGHS]], %[[LOW]] : i32
// CHECK-NEXT: %[[SLOT:.*]] = llvm.add %[[RES]], %{{.*}} : i32
// CHECK-NEXT: llvm.getelementptr %[[BUF]][%[[SLOT]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.load
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @sum_rows_4warps(%x: f32, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.splat %x : f32 -> tensor<16x64xf32>
  %s = tile.reduce %v {axis = 1 : i32} : tensor<16x64xf32> -> tensor<16xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  %r = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<16x!tile.ptr<f32>>
  %p = tile.addptr %ys, %r : tensor<16x!tile.ptr<f32>>, tensor<16xi32>
  tile.store %p, %s : tensor<16x!tile.ptr<f32>>
  return
}

// -----

// 16x64 f32 along axis 0 (the 16 rows: e bits 6-9) over 4 warps: reg bit 2
// (e bit 9) is a row: 4 partials of 2 registers. Lane bit 4 (e bit 6) is a row:
// butterfly 16; both warp bits (e bits 7-8) are rows: slot = 4 * column + warp
// (tid >> 5 & 3), a 64 x 4 buffer; each of the 4 result registers reads 4 slots.
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<256 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @max_cols_4warps
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-3: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_reduce_smem_0 : !llvm.ptr<3>
// CHECK-NEXT: nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: llvm.mul
// CHECK-NEXT: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[WMASK:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[WSHIFT:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK-NEXT: %[[WT:.*]] = llvm.lshr %[[TID]], %[[WSHIFT]] : i32
// CHECK-NEXT: %[[WARP:.*]] = llvm.and %[[WT]], %[[WMASK]] : i32
// CHECK-NEXT: %[[NR:.*]] = llvm.mlir.constant(64 : i32) : i32
// CHECK-NEXT: %[[WOFF:.*]] = llvm.mul %[[WARP]], %[[NR]] : i32
// CHECK: %[[E:.*]] = llvm.add %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[LOWMASK:.*]] = llvm.mlir.constant(63 : i32) : i32
// CHECK-NEXT: %[[LOW:.*]] = llvm.and %[[E]], %[[LOWMASK]] : i32
// CHECK-NEXT: %[[LO:.*]] = llvm.mlir.constant(6 : i32) : i32
// CHECK-NEXT: %[[HI:.*]] = llvm.mlir.constant(10 : i32) : i32
// CHECK-NEXT: %[[HIGH:.*]] = llvm.lshr %[[E]], %[[HI]] : i32
// CHECK-NEXT: %[[HIGHS:.*]] = llvm.shl %[[HIGH]], %[[LO]] : i32
// CHECK-NEXT: %[[RES:.*]] = llvm.or %[[HIGHS]], %[[LOW]] : i32
// CHECK-NEXT: %[[RUNBITS:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[LHI:.*]] = llvm.lshr %[[RES]], %[[RUNBITS]] : i32
// CHECK-NEXT: %[[RUNMASK:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[TAIL:.*]] = llvm.and %[[RES]], %[[RUNMASK]] : i32
// CHECK-NEXT: %[[TOP:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[RUNS:.*]] = llvm.shl %[[TAIL]], %[[TOP]] : i32
// CHECK-NEXT: %[[LINE:.*]] = llvm.or %[[LHI]], %[[RUNS]] : i32
// CHECK-NEXT: %[[SLOT:.*]] = llvm.add %[[LINE]], %[[WOFF]] : i32
// CHECK-NEXT: llvm.getelementptr %[[BUF]][%[[SLOT]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-16: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.load
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @max_cols_4warps(%x: f32, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.splat %x : f32 -> tensor<16x64xf32>
  %s = tile.reduce %v {axis = 0 : i32} : tensor<16x64xf32> -> tensor<64xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.maxnumf %a, %b : f32
    tile.reduce.return %c : f32
  }
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %p = tile.addptr %ys, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  tile.store %p, %s : tensor<64x!tile.ptr<f32>>
  return
}

// -----

// The same shape over 8 warps, 64x32 along axis 0 (e bits 5-10): lane bits 3-4
// (e bits 5-6) give butterflies 8 and 16; the 3 warp bits are rows: 8 slots
// per column (tid >> 5 & 7), 32 results x 8 loads.
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<256 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @sum_cols_8warps
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-3: nvvm.shfl.sync bfly
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-3: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_reduce_smem_0 : !llvm.ptr<3>
// CHECK-NEXT: nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: llvm.mul
// CHECK-NEXT: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[WMASK:.*]] = llvm.mlir.constant(7 : i32) : i32
// CHECK-NEXT: %[[WSHIFT:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK-NEXT: %[[WT:.*]] = llvm.lshr %[[TID]], %[[WSHIFT]] : i32
// CHECK-NEXT: %[[WARP:.*]] = llvm.and %[[WT]], %[[WMASK]] : i32
// CHECK-NEXT: %[[NR:.*]] = llvm.mlir.constant(32 : i32) : i32
// CHECK-NEXT: %[[WOFF:.*]] = llvm.mul %[[WARP]], %[[NR]] : i32
// CHECK: %[[E:.*]] = llvm.add %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[LOWMASK:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[LOW:.*]] = llvm.and %[[E]], %[[LOWMASK]] : i32
// CHECK-NEXT: %[[LO:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK-NEXT: %[[HI:.*]] = llvm.mlir.constant(11 : i32) : i32
// CHECK-NEXT: %[[HIGH:.*]] = llvm.lshr %[[E]], %[[HI]] : i32
// CHECK-NEXT: %[[HIGHS:.*]] = llvm.shl %[[HIGH]], %[[LO]] : i32
// CHECK-NEXT: %[[RES:.*]] = llvm.or %[[HIGHS]], %[[LOW]] : i32
// CHECK-NEXT: %[[RUNBITS:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[LHI:.*]] = llvm.lshr %[[RES]], %[[RUNBITS]] : i32
// CHECK-NEXT: %[[RUNMASK:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[TAIL:.*]] = llvm.and %[[RES]], %[[RUNMASK]] : i32
// CHECK-NEXT: %[[TOP:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[RUNS:.*]] = llvm.shl %[[TAIL]], %[[TOP]] : i32
// CHECK-NEXT: %[[LINE:.*]] = llvm.or %[[LHI]], %[[RUNS]] : i32
// CHECK-NEXT: %[[SLOT:.*]] = llvm.add %[[LINE]], %[[WOFF]] : i32
// CHECK-NEXT: llvm.getelementptr %[[BUF]][%[[SLOT]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-32: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.load
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @sum_cols_8warps(%x: f32, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %v = tile.splat %x : f32 -> tensor<64x32xf32>
  %s = tile.reduce %v {axis = 0 : i32} : tensor<64x32xf32> -> tensor<32xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  %r = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
  %p = tile.addptr %ys, %r : tensor<32x!tile.ptr<f32>>, tensor<32xi32>
  tile.store %p, %s : tensor<32x!tile.ptr<f32>>
  return
}

// -----

// One warp, f32 (4 per run): 32x32 along axis 1: 8 partials of 4 registers,
// butterflies 1, 2, 4 (lane bits 0-2 = e bits 2-4).
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<32 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @sum_rows_1warp_f32
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-7: nvvm.shfl.sync bfly
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-7: nvvm.shfl.sync bfly
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-7: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_reduce_smem_0 : !llvm.ptr<3>
// CHECK: %[[E:.*]] = llvm.add %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[LOWMASK:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[LOW:.*]] = llvm.and %[[E]], %[[LOWMASK]] : i32
// CHECK-NEXT: %[[LO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[HI:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK-NEXT: %[[HIGH:.*]] = llvm.lshr %[[E]], %[[HI]] : i32
// CHECK-NEXT: %[[HIGHS:.*]] = llvm.shl %[[HIGH]], %[[LO]] : i32
// CHECK-NEXT: %[[RES:.*]] = llvm.or %[[HIGHS]], %[[LOW]] : i32
// CHECK-NEXT: %[[SLOT:.*]] = llvm.add %[[RES]], %{{.*}} : i32
// CHECK-NEXT: llvm.getelementptr %[[BUF]][%[[SLOT]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK-COUNT-8: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.load
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @sum_rows_1warp_f32(%x: f32, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %v = tile.splat %x : f32 -> tensor<32x32xf32>
  %s = tile.reduce %v {axis = 1 : i32} : tensor<32x32xf32> -> tensor<32xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  %r = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
  %p = tile.addptr %ys, %r : tensor<32x!tile.ptr<f32>>, tensor<32xi32>
  tile.store %p, %s : tensor<32x!tile.ptr<f32>>
  return
}

// -----

// One warp, bf16 (8 per run): the same 32x32 along axis 1 has 4 partials of 8
// registers and only butterflies 1 and 2 (lane bits 0-1 = e bits 3-4); a bf16
// travels zero-extended in an i32; the result holds 8 registers.
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<32 x bf16>
// CHECK-LABEL: llvm.func ptx_kernelcc @max_rows_1warp_bf16
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[H:.*]] = llvm.bitcast %{{.*}} : bf16 to i16
// CHECK-NEXT: %[[W:.*]] = llvm.zext %[[H]] : i16 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-3: nvvm.shfl.sync bfly
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[H:.*]] = llvm.bitcast %{{.*}} : bf16 to i16
// CHECK-NEXT: %[[W:.*]] = llvm.zext %[[H]] : i16 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-3: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_reduce_smem_0 : !llvm.ptr<3>
// CHECK: %[[E:.*]] = llvm.add %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[LOWMASK:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[LOW:.*]] = llvm.and %[[E]], %[[LOWMASK]] : i32
// CHECK-NEXT: %[[LO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[HI:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK-NEXT: %[[HIGH:.*]] = llvm.lshr %[[E]], %[[HI]] : i32
// CHECK-NEXT: %[[HIGHS:.*]] = llvm.shl %[[HIGH]], %[[LO]] : i32
// CHECK-NEXT: %[[RES:.*]] = llvm.or %[[HIGHS]], %[[LOW]] : i32
// CHECK-NEXT: %[[SLOT:.*]] = llvm.add %[[RES]], %{{.*}} : i32
// CHECK-NEXT: llvm.getelementptr %[[BUF]][%[[SLOT]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, bf16
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} : bf16, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-8: llvm.load %{{.*}} : !llvm.ptr<3> -> bf16
// CHECK-NOT: llvm.load
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @max_rows_1warp_bf16(%x: bf16, %y: !tile.ptr<bf16> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %v = tile.splat %x : bf16 -> tensor<32x32xbf16>
  %s = tile.reduce %v {axis = 1 : i32} : tensor<32x32xbf16> -> tensor<32xbf16> {
  ^bb0(%a: bf16, %b: bf16):
    %c = arith.maxnumf %a, %b : bf16
    tile.reduce.return %c : bf16
  }
  %r = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %ys = tile.splat %y : !tile.ptr<bf16> -> tensor<32x!tile.ptr<bf16>>
  %p = tile.addptr %ys, %r : tensor<32x!tile.ptr<bf16>>, tensor<32xi32>
  tile.store %p, %s : tensor<32x!tile.ptr<bf16>>
  return
}

// -----

// A replicated tile (8x4 f32 = 8 runs over 128 threads; thread t holds run t & 7)
// along axis 0: only 3 lane bits carry elements: butterflies 1, 2, 4 for each of
// the 4 registers; no warp holds another row. After them every thread holds the 4
// column sums, which is what its registers of the replicated [4] result are: no
// shared memory, no barrier.
// CHECK-NOT: __kiln_reduce_smem
// CHECK-LABEL: llvm.func ptx_kernelcc @replicated_axis0
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-3: nvvm.shfl.sync bfly
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-3: nvvm.shfl.sync bfly
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-3: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK-NOT: llvm.mlir.addressof
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @replicated_axis0(%x: f32, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.splat %x : f32 -> tensor<8x4xf32>
  %s = tile.reduce %v {axis = 0 : i32} : tensor<8x4xf32> -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  %r = tile.make_range {start = 0 : i32, end = 4 : i32} : tensor<4xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<4x!tile.ptr<f32>>
  %p = tile.addptr %ys, %r : tensor<4x!tile.ptr<f32>>, tensor<4xi32>
  tile.store %p, %s : tensor<4x!tile.ptr<f32>>
  return
}

// -----

// The same tile along axis 1 (e bits 0-1, register bits only): 3 adds in the
// thread, no shuffle; an 8 x 1 buffer read back into the replicated 8-element
// result (4 registers).
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<8 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @replicated_axis1
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_reduce_smem_0 : !llvm.ptr<3>
// CHECK: %[[E:.*]] = llvm.add %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[LOWMASK:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[LOW:.*]] = llvm.and %[[E]], %[[LOWMASK]] : i32
// CHECK-NEXT: %[[LO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[HI:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[HIGH:.*]] = llvm.lshr %[[E]], %[[HI]] : i32
// CHECK-NEXT: %[[HIGHS:.*]] = llvm.shl %[[HIGH]], %[[LO]] : i32
// CHECK-NEXT: %[[RES:.*]] = llvm.or %[[HIGHS]], %[[LOW]] : i32
// CHECK-NEXT: %[[SLOT:.*]] = llvm.add %[[RES]], %{{.*}} : i32
// CHECK-NEXT: llvm.getelementptr %[[BUF]][%[[SLOT]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK-COUNT-1: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.load
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @replicated_axis1(%x: f32, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.splat %x : f32 -> tensor<8x4xf32>
  %s = tile.reduce %v {axis = 1 : i32} : tensor<8x4xf32> -> tensor<8xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  %r = tile.make_range {start = 0 : i32, end = 8 : i32} : tensor<8xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<8x!tile.ptr<f32>>
  %p = tile.addptr %ys, %r : tensor<8x!tile.ptr<f32>>, tensor<8xi32>
  tile.store %p, %s : tensor<8x!tile.ptr<f32>>
  return
}

// -----

// i64 (2 per run) over 2 warps, 8x32 along axis 1: 64-bit values are shuffled
// as two 32-bit halves (2 shfl per butterfly: 1, 2, 4, 8 for 2 partials).
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<8 x i64>
// CHECK-LABEL: llvm.func ptx_kernelcc @max_i64_2warps
// CHECK: %[[P:.*]] = llvm.intr.smax(%{{.*}}, %{{.*}}) : (i64, i64) -> i64
// CHECK-NEXT: llvm.intr.smax(%{{.*}}, %{{.*}}) : (i64, i64) -> i64
// CHECK-NEXT: %[[M:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[O:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[C:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[LO:.*]] = llvm.trunc %[[P]] : i64 to i32
// CHECK-NEXT: %[[K32:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK-NEXT: %[[SH:.*]] = llvm.lshr %[[P]], %[[K32]] : i64
// CHECK-NEXT: %[[HI:.*]] = llvm.trunc %[[SH]] : i64 to i32
// CHECK-NEXT: %[[SLO:.*]] = nvvm.shfl.sync bfly %[[M]], %[[LO]], %[[O]], %[[C]] : i32 -> i32
// CHECK-NEXT: %[[WLO:.*]] = llvm.zext %[[SLO]] : i32 to i64
// CHECK-NEXT: %[[SHI:.*]] = nvvm.shfl.sync bfly %[[M]], %[[HI]], %[[O]], %[[C]] : i32 -> i32
// CHECK-NEXT: %[[WHI:.*]] = llvm.zext %[[SHI]] : i32 to i64
// CHECK-NEXT: %[[K32B:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK-NEXT: %[[UP:.*]] = llvm.shl %[[WHI]], %[[K32B]] : i64
// CHECK-NEXT: %[[Q:.*]] = llvm.or %[[WLO]], %[[UP]] : i64
// CHECK-NEXT: llvm.intr.smax(%[[P]], %[[Q]]) : (i64, i64) -> i64
// CHECK-COUNT-14: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} : i64, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-2: llvm.load %{{.*}} : !llvm.ptr<3> -> i64
// CHECK-NOT: llvm.load
// CHECK: nvvm.barrier
func.func @max_i64_2warps(%x: i64, %y: !tile.ptr<i64> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 2 : i32} {
  %v = tile.splat %x : i64 -> tensor<8x32xi64>
  %s = tile.reduce %v {axis = 1 : i32} : tensor<8x32xi64> -> tensor<8xi64> {
  ^bb0(%a: i64, %b: i64):
    %c = arith.maxsi %a, %b : i64
    tile.reduce.return %c : i64
  }
  %r = tile.make_range {start = 0 : i32, end = 8 : i32} : tensor<8xi32>
  %ys = tile.splat %y : !tile.ptr<i64> -> tensor<8x!tile.ptr<i64>>
  %p = tile.addptr %ys, %r : tensor<8x!tile.ptr<i64>>, tensor<8xi32>
  tile.store %p, %s : tensor<8x!tile.ptr<i64>>
  return
}

// -----

// f64 to a scalar (2 per run, one warp): bitcast to i64, two shuffles per
// butterfly (10 in all); within one warp every thread then holds the total, so
// no shared memory and no barrier.
// CHECK-NOT: __kiln_reduce_smem
// CHECK-LABEL: llvm.func ptx_kernelcc @sum_f64
// CHECK: %[[P:.*]] = llvm.fadd %{{.*}}, %{{.*}} : f64
// CHECK: %[[I:.*]] = llvm.bitcast %[[P]] : f64 to i64
// CHECK: nvvm.shfl.sync bfly
// CHECK-NEXT: llvm.zext %{{.*}} : i32 to i64
// CHECK-NEXT: nvvm.shfl.sync bfly
// CHECK: %[[Q:.*]] = llvm.bitcast %{{.*}} : i64 to f64
// CHECK-NEXT: llvm.fadd %[[P]], %[[Q]] : f64
// CHECK-COUNT-8: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[T:.*]] = llvm.fadd %{{.*}}, %{{.*}} : f64
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.store %[[T]], %{{.*}} {alignment = 8 : i64} : f64, !llvm.ptr<1>
func.func @sum_f64(%x: !tile.ptr<f64> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f64>)
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %xs = tile.splat %x : !tile.ptr<f64> -> tensor<64x!tile.ptr<f64>>
  %p = tile.addptr %xs, %r : tensor<64x!tile.ptr<f64>>, tensor<64xi32>
  %v = tile.load %p : tensor<64x!tile.ptr<f64>>
  %s = tile.reduce %v {axis = 0 : i32} : tensor<64xf64> -> f64 {
  ^bb0(%a: f64, %b: f64):
    %c = arith.addf %a, %b : f64
    tile.reduce.return %c : f64
  }
  tile.store %y, %s : !tile.ptr<f64>
  return
}

// -----

// i1 (`any`, no tile access: 1 element per run, one warp, 4 registers): an i1 is
// zero-extended to i32 for the shuffle; one warp needs no shared memory.
// CHECK-NOT: __kiln_reduce_smem
// CHECK-LABEL: llvm.func ptx_kernelcc @any_i1
// CHECK: %[[O1:.*]] = llvm.or %{{.*}}, %{{.*}} : i1
// CHECK-NEXT: %[[O2:.*]] = llvm.or %[[O1]], %{{.*}} : i1
// CHECK-NEXT: %[[O3:.*]] = llvm.or %[[O2]], %{{.*}} : i1
// CHECK-NEXT: %[[M:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[C:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.zext %[[O3]] : i1 to i32
// CHECK-NEXT: %[[S:.*]] = nvvm.shfl.sync bfly %[[M]], %[[W]], %[[OFF]], %[[C]] : i32 -> i32
// CHECK-NEXT: %[[B:.*]] = llvm.trunc %[[S]] : i32 to i1
// CHECK-NEXT: llvm.or %[[O3]], %[[B]] : i1
// CHECK-COUNT-3: nvvm.shfl.sync bfly
// CHECK: %[[S:.*]] = nvvm.shfl.sync bfly
// CHECK-NEXT: %[[B:.*]] = llvm.trunc %[[S]] : i32 to i1
// CHECK-NEXT: %[[ANY:.*]] = llvm.or %{{.*}}, %[[B]] : i1
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.zext %[[ANY]] : i1 to i32
func.func @any_i1(%n: i32, %y: !tile.ptr<i32>) attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %ns = tile.splat %n : i32 -> tensor<128xi32>
  %lt = arith.cmpi slt, %r, %ns : tensor<128xi32>
  %any = tile.reduce %lt {axis = 0 : i32} : tensor<128xi1> -> i1 {
  ^bb0(%a: i1, %b: i1):
    %c = arith.ori %a, %b : i1
    tile.reduce.return %c : i1
  }
  %z = arith.extui %any : i1 to i32
  tile.store %y, %z : !tile.ptr<i32>
  return
}

// -----

// A middle axis (4x16x2 i32 along axis 1: e bits 1-4) then the last axis of the
// 4x2 result; each reduce gets its own buffer. Result index = (e >> 5) << 1 | (e & 1).
// CHECK-DAG: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<8 x i32>
// CHECK-DAG: llvm.mlir.global internal @__kiln_reduce_smem_1() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<4 x i32>
// CHECK-LABEL: llvm.func ptx_kernelcc @sum_middle_axis_i32
// CHECK-COUNT-6: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: llvm.mlir.addressof @__kiln_reduce_smem_0
// CHECK: %[[E:.*]] = llvm.add %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[LOW:.*]] = llvm.and %[[E]], %[[ONE]] : i32
// CHECK-NEXT: %[[LO:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[HI:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK-NEXT: %[[H:.*]] = llvm.lshr %[[E]], %[[HI]] : i32
// CHECK-NEXT: %[[HS:.*]] = llvm.shl %[[H]], %[[LO]] : i32
// CHECK-NEXT: llvm.or %[[HS]], %[[LOW]] : i32
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> i32
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.shfl.sync
// CHECK: llvm.mlir.addressof @__kiln_reduce_smem_1
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> i32
// CHECK: nvvm.barrier
func.func @sum_middle_axis_i32(%x: i32, %y: !tile.ptr<i32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %v = tile.splat %x : i32 -> tensor<4x16x2xi32>
  %s = tile.reduce %v {axis = 1 : i32} : tensor<4x16x2xi32> -> tensor<4x2xi32> {
  ^bb0(%a: i32, %b: i32):
    %c = arith.addi %a, %b : i32
    tile.reduce.return %c : i32
  }
  %t = tile.reduce %s {axis = 1 : i32} : tensor<4x2xi32> -> tensor<4xi32> {
  ^bb0(%a: i32, %b: i32):
    %c = arith.addi %a, %b : i32
    tile.reduce.return %c : i32
  }
  %r = tile.make_range {start = 0 : i32, end = 4 : i32} : tensor<4xi32>
  %ys = tile.splat %y : !tile.ptr<i32> -> tensor<4x!tile.ptr<i32>>
  %p = tile.addptr %ys, %r : tensor<4x!tile.ptr<i32>>, tensor<4xi32>
  tile.store %p, %t : tensor<4x!tile.ptr<i32>>
  return
}

// -----

// `broadcast` (all-reduce) on one warp: 32x32 f32, 4 per run, so a row is 8
// runs on 8 lanes. The thread combines its runs, butterflies 1, 2 and 4 give
// every lane of a row the row's value (8 rows a thread: 24 shuffles), and each
// of the 32 result registers is its row's value: no shared memory, no barrier.
// CHECK-LABEL: llvm.func ptx_kernelcc @max_rows_1warp_broadcast
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-7: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i32 -> i32
// CHECK: llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-7: nvvm.shfl.sync bfly
// CHECK: llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-COUNT-7: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK-NOT: llvm.mlir.addressof
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @max_rows_1warp_broadcast(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                                    %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<32x32xi32>
  %c = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<32x32xi32>
  %k = arith.constant dense<32> : tensor<32x32xi32>
  %rk = arith.muli %r, %k : tensor<32x32xi32>
  %off = arith.addi %rk, %c : tensor<32x32xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %px = tile.addptr %xs, %off : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  %v = tile.load %px : tensor<32x32x!tile.ptr<f32>>
  %m = tile.reduce %v {axis = 1 : i32, broadcast} : tensor<32x32xf32> -> tensor<32x32xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.maximumf %a, %b : f32
    tile.reduce.return %s : f32
  }
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %py = tile.addptr %ys, %off : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %py, %m : tensor<32x32x!tile.ptr<f32>>
  return
}

// -----

// `broadcast` with warps along the axis: 4x1024 f32 on 4 warps, a row spans
// the 4 warps (thread bits 5-6 = e bits 7-8). The partials go through a
// [4 rows][4 warps] buffer after 5 butterflies for each of the thread's 4 rows;
// after the barrier each thread reads the 4 warps' partials of each of its
// rows (16 loads) and every register takes its row's value.
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<16 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @sum_rows_4warps_broadcast
// CHECK-COUNT-20: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-16: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.load %{{.*}} : !llvm.ptr<3>
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @sum_rows_4warps_broadcast(%x: f32, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.splat %x : f32 -> tensor<4x1024xf32>
  %s = tile.reduce %v {axis = 1 : i32, broadcast} : tensor<4x1024xf32> -> tensor<4x1024xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  %r = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<4x1024xi32>
  %c = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<4x1024xi32>
  %k = arith.constant dense<1024> : tensor<4x1024xi32>
  %rk = arith.muli %r, %k : tensor<4x1024xi32>
  %off = arith.addi %rk, %c : tensor<4x1024xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<4x1024x!tile.ptr<f32>>
  %py = tile.addptr %ys, %off : tensor<4x1024x!tile.ptr<f32>>, tensor<4x1024xi32>
  tile.store %py, %s : tensor<4x1024x!tile.ptr<f32>>
  return
}

// -----

// Two sources of one shape (f32 sum, i32 sum) along axis 1 of 16x64 over 4 warps
// (as @sum_rows_4warps): every step runs on both in lockstep. The region takes
// (acc f32, acc i32, new f32, new i32): registers combine as fadd/add pairs, each
// butterfly round shuffles the f32 and the i32 partial, then ONE i8 buffer holds
// the two [16 results][1 warp] arrays (64 bytes each, the second at byte 64)
// between ONE pair of barriers; each result register loads one of each.
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<128 x i8>
// CHECK-NOT: __kiln_reduce_smem_1
// CHECK-LABEL: llvm.func ptx_kernelcc @sum_count_rows_4warps
// CHECK: %[[F1:.*]] = llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[I1:.*]] = llvm.add %{{.*}}, %{{.*}} : i32
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[CLAMP:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[W:.*]] = llvm.bitcast %[[FP:.*]] : f32 to i32
// CHECK-NEXT: %[[SF:.*]] = nvvm.shfl.sync bfly %[[MASK]], %[[W]], %[[OFF]], %[[CLAMP]] : i32 -> i32
// CHECK-NEXT: %[[F:.*]] = llvm.bitcast %[[SF]] : i32 to f32
// CHECK-NEXT: %[[MASK2:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %[[OFF2:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[CLAMP2:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT: %[[SI:.*]] = nvvm.shfl.sync bfly %[[MASK2]], %[[IP:.*]], %[[OFF2]], %[[CLAMP2]] : i32 -> i32
// CHECK-NEXT: llvm.fadd %[[FP]], %[[F]] : f32
// CHECK-NEXT: llvm.add %[[IP]], %[[SI]] : i32
// CHECK-COUNT-14: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_reduce_smem_0 : !llvm.ptr<3>
// CHECK-NEXT: %[[BUF1:.*]] = llvm.getelementptr %[[BUF]][64] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK-NOT: nvvm.barrier
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[BUF]][%[[SLOT:.*]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK-NEXT: llvm.store %{{.*}}, %[[P0]] : f32, !llvm.ptr<3>
// CHECK-NEXT: %[[P1:.*]] = llvm.getelementptr %[[BUF1]][%[[SLOT]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
// CHECK-NEXT: llvm.store %{{.*}}, %[[P1]] : i32, !llvm.ptr<3>
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: llvm.getelementptr %[[BUF1]]
// CHECK-NEXT: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> i32
// CHECK-NOT: llvm.load
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @sum_count_rows_4warps(%x: f32, %k: i32, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                                 %z: !tile.ptr<i32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.splat %x : f32 -> tensor<16x64xf32>
  %n = tile.splat %k : i32 -> tensor<16x64xi32>
  %s:2 = tile.reduce %v, %n {axis = 1 : i32} : tensor<16x64xf32>, tensor<16x64xi32> -> tensor<16xf32>, tensor<16xi32> {
  ^bb0(%a0: f32, %a1: i32, %b0: f32, %b1: i32):
    %c0 = arith.addf %a0, %b0 : f32
    %c1 = arith.addi %a1, %b1 : i32
    tile.reduce.return %c0, %c1 : f32, i32
  }
  %r = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<16x!tile.ptr<f32>>
  %p = tile.addptr %ys, %r : tensor<16x!tile.ptr<f32>>, tensor<16xi32>
  tile.store %p, %s#0 : tensor<16x!tile.ptr<f32>>
  %zs = tile.splat %z : !tile.ptr<i32> -> tensor<16x!tile.ptr<i32>>
  %q = tile.addptr %zs, %r : tensor<16x!tile.ptr<i32>>, tensor<16xi32>
  tile.store %q, %s#1 : tensor<16x!tile.ptr<i32>>
  return
}

// -----

// An f32 max and an i1 `any` to two scalars over 4 warps: the i1 shuffles as a
// zero-extended i32 and is stored as a byte; one 32-byte buffer (4 f32 slots,
// then 4 i8 slots at byte 16), one pair of barriers.
// CHECK: llvm.mlir.global internal @__kiln_reduce_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<32 x i8>
// CHECK-LABEL: llvm.func ptx_kernelcc @max_any_1d_4warps
// CHECK-COUNT-10: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_reduce_smem_0 : !llvm.ptr<3>
// CHECK-NEXT: %[[BUF1:.*]] = llvm.getelementptr %[[BUF]][16] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: %[[B:.*]] = llvm.zext %{{.*}} : i1 to i8
// CHECK-NEXT: %[[P:.*]] = llvm.getelementptr %[[BUF1]][%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT: llvm.store %[[B]], %[[P]] : i8, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> i8
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @max_any_1d_4warps(%x: f32, %n: i32, %y: !tile.ptr<f32>, %z: !tile.ptr<i32>)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.splat %x : f32 -> tensor<1024xf32>
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %ns = tile.splat %n : i32 -> tensor<1024xi32>
  %lt = arith.cmpi slt, %r, %ns : tensor<1024xi32>
  %s:2 = tile.reduce %v, %lt {axis = 0 : i32} : tensor<1024xf32>, tensor<1024xi1> -> f32, i1 {
  ^bb0(%a0: f32, %a1: i1, %b0: f32, %b1: i1):
    %c0 = arith.maximumf %a0, %b0 : f32
    %c1 = arith.ori %a1, %b1 : i1
    tile.reduce.return %c0, %c1 : f32, i1
  }
  %e = arith.extui %s#1 : i1 to i32
  tile.store %y, %s#0 : !tile.ptr<f32>
  tile.store %z, %e : !tile.ptr<i32>
  return
}

// -----

// Two scalars within one warp: no shared memory; the region's two different
// ops (a sum and a product) each act on their own source, round by round.
// CHECK-NOT: __kiln_reduce_smem
// CHECK-LABEL: llvm.func ptx_kernelcc @sum_pair_1d_1warp
// CHECK: %[[S:.*]] = nvvm.shfl.sync bfly
// CHECK-NEXT: %[[SF:.*]] = llvm.bitcast %[[S]] : i32 to f32
// CHECK: %[[P:.*]] = nvvm.shfl.sync bfly
// CHECK-NEXT: %[[PF:.*]] = llvm.bitcast %[[P]] : i32 to f32
// CHECK-NEXT: llvm.fadd %{{.*}}, %[[SF]] : f32
// CHECK-NEXT: llvm.fmul %{{.*}}, %[[PF]] : f32
// CHECK-COUNT-8: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @sum_pair_1d_1warp(%x: f32, %y: !tile.ptr<f32>)
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %v = tile.splat %x : f32 -> tensor<256xf32>
  %s:2 = tile.reduce %v, %v {axis = 0 : i32} : tensor<256xf32>, tensor<256xf32> -> f32, f32 {
  ^bb0(%a0: f32, %a1: f32, %b0: f32, %b1: f32):
    %c0 = arith.addf %a0, %b0 : f32
    %c1 = arith.mulf %a1, %b1 : f32
    tile.reduce.return %c0, %c1 : f32, f32
  }
  %t = arith.addf %s#0, %s#1 : f32
  tile.store %y, %t : !tile.ptr<f32>
  return
}

// -----

// An i32 sum over all 32 lanes of one warp (32 elements, one a thread): one
// nvvm.redux.sync add (every lane gets the sum), no butterfly; the same sum of
// f32 keeps the 5 shuffles (redux.sync's f32 forms are min / max on sm_100a).
// CHECK-LABEL: llvm.func ptx_kernelcc @sum_whole_warp_redux
// CHECK-NOT: nvvm.shfl.sync
// CHECK: nvvm.redux.sync add %{{.*}}, %{{.*}} : i32 -> i32
// CHECK-NOT: nvvm.redux.sync
// CHECK-COUNT-5: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: llvm.return
func.func @sum_whole_warp_redux(%x: i32, %f: f32, %y: !tile.ptr<i32>, %z: !tile.ptr<f32>)
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %v = tile.splat %x : i32 -> tensor<32xi32>
  %s = tile.reduce %v {axis = 0 : i32} : tensor<32xi32> -> i32 {
  ^bb0(%a: i32, %b: i32):
    %c = arith.addi %a, %b : i32
    tile.reduce.return %c : i32
  }
  tile.store %y, %s : !tile.ptr<i32>
  %w = tile.splat %f : f32 -> tensor<32xf32>
  %t = tile.reduce %w {axis = 0 : i32} : tensor<32xf32> -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  tile.store %z, %t : !tile.ptr<f32>
  return
}
