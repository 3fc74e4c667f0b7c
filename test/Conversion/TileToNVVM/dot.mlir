// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-convert-tile-to-nvvm | FileCheck %s

// tile.dot through shared memory (DotOps.cpp): a and b go to row-major
// buffers with 16 padding bytes per row, the accumulator to an f32 buffer
// (32 padding bytes per row) one slab of rows at a time; each warp takes the
// slab's 16x8 tiles warp, warp + warps, ... with ldmatrix.x4 (A),
// ldmatrix.x2.trans (B) and mma.sync m16n8k16 per 16 columns of K.

// 16x16x16 bf16 with a zero accumulator on 4 warps (4 elements per run: the
// f32 store): a and b as 8-byte runs, 2 output tiles, so warps 2 and 3
// skip (scf.if on warp < 2); the accumulator starts at 0.0 and is not read;
// one slab: bar.sync after the operands, after the mma, after the read-back.
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_a_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<384 x bf16>
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_b_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<384 x bf16>
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_acc_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<384 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @dot_zero_acc
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xi32>, !llvm.ptr<3>
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[LANE:.*]] = llvm.and %[[TID]], %{{.*}} : i32
// CHECK: %[[WARP:.*]] = llvm.lshr %[[TID]], %{{.*}} : i32
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: %[[ACTIVE:.*]] = llvm.icmp "ult" %[[WARP]], %{{.*}} : i32
// CHECK: scf.if %[[ACTIVE]] {
// CHECK-NOT: llvm.load
// CHECK: %[[Z:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK: %[[A:.*]] = nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK: %[[B:.*]] = nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 2 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32)>
// CHECK: nvvm.mma.sync A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] B[%{{.*}}, %{{.*}}] C[%[[Z]], %[[Z]], %[[Z]], %[[Z]]] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: nvvm.mma.sync
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
// CHECK: }
// CHECK-NEXT: nvvm.barrier
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @dot_zero_acc(%x: !tile.ptr<bf16>, %y: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.load %x : !tile.ptr<bf16>
  %a = tile.splat %v : bf16 -> tensor<16x16xbf16>
  %b = tile.splat %v : bf16 -> tensor<16x16xbf16>
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  %d = tile.dot %a, %b, %zero : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<16x16x!tile.ptr<f32>>
  tile.store %ys, %d : tensor<16x16x!tile.ptr<f32>>
  return
}

// -----

// f16 with a loaded accumulator, 64x64x32 on 4 warps (8 elements per run):
// 32 tiles, 8 per warp, no branch; each tile reads its accumulator fragment
// (two f32x2 loads), runs 2 K steps with the f16 operands as vector<2xf16>,
// and writes it back. The accumulator fits whole: 64 x (64 + 8) f32.
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_a_smem_0() {{.*}} : !llvm.array<2560 x f16>
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_b_smem_0() {{.*}} : !llvm.array<2304 x f16>
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_acc_smem_0() {{.*}} : !llvm.array<4608 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @dot_f16_acc
// CHECK: nvvm.barrier
// CHECK-NOT: scf.if
// CHECK-COUNT-2: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<2xf32>
// CHECK: nvvm.ldmatrix
// CHECK-COUNT-4: llvm.bitcast %{{.*}} : i32 to vector<2xf16>
// CHECK: nvvm.ldmatrix
// CHECK-COUNT-2: llvm.bitcast %{{.*}} : i32 to vector<2xf16>
// CHECK: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: nvvm.mma.sync
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
// CHECK-COUNT-14: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.barrier
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @dot_f16_acc(%x: !tile.ptr<f16>, %c: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %xa = tile.splat %x : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %a = tile.load %xa : tensor<64x32x!tile.ptr<f16>>
  %xb = tile.splat %x : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>>
  %b = tile.load %xb : tensor<32x64x!tile.ptr<f16>>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %acc = tile.load %cs : tensor<64x64x!tile.ptr<f32>>
  %d = tile.dot %a, %b, %acc : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>
  tile.store %cs, %d : tensor<64x64x!tile.ptr<f32>>
  return
}

// -----

// 128x128x64 bf16 on 8 warps: a (128 x 72) and b (64 x 136) take 35840
// bytes, so the accumulator goes through in 16-row slabs (16 x 136 f32, 8704
// bytes): 8 slabs of 16 tiles, 2 per warp, each between barriers; a slab holds
// 2048 elements: one run of 8 per thread, read back as two 16-byte loads.
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_acc_smem_0() {{.*}} : !llvm.array<2176 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @dot_slabs
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.barrier
// CHECK-COUNT-2: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.barrier
// CHECK-COUNT-56: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: llvm.return
func.func @dot_slabs(%x: !tile.ptr<bf16>, %c: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %xa = tile.splat %x : !tile.ptr<bf16> -> tensor<128x64x!tile.ptr<bf16>>
  %a = tile.load %xa : tensor<128x64x!tile.ptr<bf16>>
  %xb = tile.splat %x : !tile.ptr<bf16> -> tensor<64x128x!tile.ptr<bf16>>
  %b = tile.load %xb : tensor<64x128x!tile.ptr<bf16>>
  %acc = arith.constant dense<0.0> : tensor<128x128xf32>
  %d = tile.dot %a, %b, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %cs, %d : tensor<128x128x!tile.ptr<f32>>
  return
}

// -----

// M = 8 (below the m16 tile): the buffers of a and of the accumulator have 16
// rows, the rows past M zeroed with 16-byte stores (a: rows 8-15 of 24
// bf16, 192 elements, 8 a store, threads 0-23; the loaded accumulator's:
// 8 x 24 f32, 4 a store, threads 0-47) before the first bar.sync; the 16-row
// tiles run as for M = 16 and only the 8 rows of the result are read back.
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_a_smem_0() {{.*}} : !llvm.array<384 x bf16>
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_acc_smem_0() {{.*}} : !llvm.array<384 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @dot_small_m
// CHECK: %[[ZA:.*]] = llvm.mlir.zero : vector<4xi32>
// CHECK: %[[INA:.*]] = llvm.icmp "ult" %{{.*}}, %{{.*}} : i32
// CHECK: scf.if %[[INA]] {
// CHECK: llvm.store %[[ZA]], %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK: %[[ZC:.*]] = llvm.mlir.zero : vector<4xi32>
// CHECK: %[[INC:.*]] = llvm.icmp "ult" %{{.*}}, %{{.*}} : i32
// CHECK: scf.if %[[INC]] {
// CHECK: llvm.store %[[ZC]], %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK: nvvm.barrier
// CHECK: nvvm.mma.sync {{.*}} {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.barrier
// CHECK: llvm.return
func.func @dot_small_m(%x: !tile.ptr<bf16>, %y: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.load %x : !tile.ptr<bf16>
  %a = tile.splat %v : bf16 -> tensor<8x16xbf16>
  %b = tile.splat %v : bf16 -> tensor<16x16xbf16>
  %w = tile.load %y : !tile.ptr<f32>
  %c = tile.splat %w : f32 -> tensor<8x16xf32>
  %d = tile.dot %a, %b, %c : tensor<8x16xbf16> * tensor<16x16xbf16> -> tensor<8x16xf32>
  %p = tile.splat %y : !tile.ptr<f32> -> tensor<8x16x!tile.ptr<f32>>
  tile.store %p, %d : tensor<8x16x!tile.ptr<f32>>
  return
}
