// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-convert-tile-to-nvvm | FileCheck %s

// tile.warp_dot on mma.sync (DotOps.cpp): the register operands go to
// row-major buffers with 16 padding bytes a row, one bar.sync, then per k16
// step the warp's B fragments (ldmatrix, .trans from [K, N] rows), its A
// fragments (ldmatrix.x4) and one mma.sync per 16 x 8 tile, in and out of the
// accumulator's registers; a closing bar.sync. No accumulator buffer.

// 16x16x32 bf16 from zero on 4 warps, warpsN = 2: each warp one 16-row block
// (warps 2 and 3 copy warps 0 and 1) and one n-tile (x2.trans); two k16
// steps, the second mma reading the first's results; the first reads 0.0.
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_a_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<640 x bf16>
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_b_smem_0() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<768 x bf16>
// CHECK-NOT: __kiln_dot_acc_smem
// CHECK-LABEL: llvm.func ptx_kernelcc @zero_acc
// CHECK: %[[Z:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK: %[[ZS:.*]] = llvm.insertvalue %[[Z]], %{{.*}}[3]
// CHECK: llvm.store
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK-NOT: llvm.load
// CHECK: %[[Z0:.*]] = llvm.extractvalue %[[ZS]][0]
// CHECK: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 2 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32)>
// CHECK: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK: %[[D0:.*]] = nvvm.mma.sync A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] B[%{{.*}}, %{{.*}}] C[%[[Z0]], %{{.*}}, %{{.*}}, %{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[C0:.*]] = llvm.extractvalue %[[D0]][0]
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>, num = 2
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>, num = 4
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[%[[C0]],
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.barrier
// CHECK: __kiln_convert_smem
// CHECK: llvm.return
#w2 = #tile.mma<version = 2, numWarps = 4, warpsN = 2>
func.func @zero_acc(%x: !tile.ptr<bf16>, %y: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.load %x : !tile.ptr<bf16>
  %a = tile.splat %v : bf16 -> tensor<16x32xbf16>
  %b = tile.splat %v : bf16 -> tensor<32x16xbf16>
  %zero = arith.constant dense<0.0> : tensor<16x16xf32, #w2>
  %d = tile.warp_dot %a, %b, %zero : tensor<16x32xbf16> * tensor<32x16xbf16> -> tensor<16x16xf32, #w2>
  %r = tile.convert_layout %d : tensor<16x16xf32, #w2> -> tensor<16x16xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<16x16x!tile.ptr<f32>>
  tile.store %ys, %r : tensor<16x16x!tile.ptr<f32>>
  return
}

// -----

// f16, B K-major (the [N, K] tile of `w.T`: ldmatrix without .trans), 64x64x32
// on 4 warps with warpsN = 1: a warp's 16 rows by all 8 n-tiles, four x4
// loads of B (two n-tiles each) and one of A a k16 step; 2 x 8 mma.sync.
// The b buffer holds [64, 32 + 8]. (The accumulator's conversion in: two
// barriers.)
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_b_smem_0() {{.*}} : !llvm.array<2560 x f16>
// CHECK-LABEL: llvm.func ptx_kernelcc @k_major_b
// CHECK-COUNT-3: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK-COUNT-4: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>, num = 4
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>, num = 4
// CHECK: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-COUNT-15: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.barrier
#v2 = #tile.mma<version = 2, numWarps = 4>
func.func @k_major_b(%x: !tile.ptr<f16>, %c: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %xa = tile.splat %x : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %a = tile.load %xa : tensor<64x32x!tile.ptr<f16>>
  %w = tile.load %xa : tensor<64x32x!tile.ptr<f16>>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %acc = tile.load %cs : tensor<64x64x!tile.ptr<f32>>
  %in = tile.convert_layout %acc : tensor<64x64xf32> -> tensor<64x64xf32, #v2>
  %d = tile.warp_dot %a, %w, %in {bKMajor} : tensor<64x32xf16> * tensor<64x32xf16> -> tensor<64x64xf32, #v2>
  %r = tile.convert_layout %d : tensor<64x64xf32, #v2> -> tensor<64x64xf32>
  tile.store %cs, %r : tensor<64x64x!tile.ptr<f32>>
  return
}

// -----

// A from registers: `a` in the accumulator's encoding (warpsN = 1) is packed
// into words, four a k16 step; only b is staged (no a buffer), and no
// ldmatrix of A: 2 k16 steps x (one x4.trans of B for two n-tiles, 2 mma).
// CHECK-NOT: __kiln_dot_a_smem
// CHECK-LABEL: llvm.func ptx_kernelcc @register_a
// CHECK: nvvm.barrier
// CHECK-COUNT-8: llvm.bitcast %{{.*}} : vector<2xbf16> to i32
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>, num = 4
// CHECK-NOT: nvvm.ldmatrix
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>, num = 4
// CHECK-NOT: nvvm.ldmatrix
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.barrier
#r2 = #tile.mma<version = 2, numWarps = 4>
func.func @register_a(%x: !tile.ptr<bf16>, %c: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.load %x : !tile.ptr<bf16>
  %p = tile.splat %v : bf16 -> tensor<64x32xbf16, #r2>
  %b = tile.splat %v : bf16 -> tensor<32x16xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x16xf32, #r2>
  %d = tile.warp_dot %p, %b, %zero : tensor<64x32xbf16, #r2> * tensor<32x16xbf16> -> tensor<64x16xf32, #r2>
  %r = tile.convert_layout %d : tensor<64x16xf32, #r2> -> tensor<64x16xf32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x16x!tile.ptr<f32>>
  tile.store %cs, %r : tensor<64x16x!tile.ptr<f32>>
  return
}

// -----

// M = 8 (below the m16 tile): the a buffer holds the 8 rows; each lane's A row
// wraps into them (row & 7), so the fragment's rows 8-15 repeat rows 0-7 and
// the accumulator's halves hold the same rows. One 16 x 8 tile a warp.
// CHECK-DAG: llvm.mlir.global internal @__kiln_dot_a_smem_0() {{.*}} : !llvm.array<192 x bf16>
// CHECK-LABEL: llvm.func ptx_kernelcc @small_m
// CHECK: %[[SEVEN:.*]] = llvm.mlir.constant(7 : i32) : i32
// CHECK: llvm.and %{{.*}}, %[[SEVEN]] : i32
// CHECK: nvvm.mma.sync {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-NOT: nvvm.mma.sync
// CHECK: llvm.return
#s2 = #tile.mma<version = 2, numWarps = 4, warpsN = 2>
func.func @small_m(%x: !tile.ptr<bf16>, %y: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.load %x : !tile.ptr<bf16>
  %a = tile.splat %v : bf16 -> tensor<8x16xbf16>
  %b = tile.splat %v : bf16 -> tensor<16x16xbf16>
  %w = tile.load %y : !tile.ptr<f32>
  %c = tile.splat %w : f32 -> tensor<8x16xf32, #s2>
  %d = tile.warp_dot %a, %b, %c : tensor<8x16xbf16> * tensor<16x16xbf16> -> tensor<8x16xf32, #s2>
  %r = tile.convert_layout %d : tensor<8x16xf32, #s2> -> tensor<8x16xf32>
  %p = tile.splat %y : !tile.ptr<f32> -> tensor<8x16x!tile.ptr<f32>>
  tile.store %p, %r : tensor<8x16x!tile.ptr<f32>>
  return
}

// -----

// A staged once (`!tile.smem`, K-major with the 128-byte swizzle: 16 rows of
// 128 bytes a 64-column chunk): no a buffer of the op's own; each lane's
// ldmatrix address is its row's 128 bytes plus the 16-byte unit
// (kk mod 64) / 8 + lane / 16 XOR lane mod 8, in chunk kk / 64. 8 k16 steps,
// one n-tile a warp (warpsN = 4). Barriers: the stage's, the dot's after b.
// CHECK-NOT: __kiln_dot_a_smem
// CHECK-LABEL: llvm.func ptx_kernelcc @staged_a
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: nvvm.barrier
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.xor
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>, num = 4
// CHECK: nvvm.mma.sync
// CHECK-COUNT-7: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.barrier
#t2 = #tile.mma<version = 2, numWarps = 4, warpsN = 4>
func.func @staged_a(%x: !tile.ptr<bf16>, %y: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %v = tile.load %x : !tile.ptr<bf16>
  %q = tile.splat %v : bf16 -> tensor<16x128xbf16>
  %s = tile.stage %q : tensor<16x128xbf16> -> !tile.smem<tensor<16x128xbf16>>
  %k = tile.splat %v : bf16 -> tensor<32x128xbf16>
  %zero = arith.constant dense<0.0> : tensor<16x32xf32, #t2>
  %d = tile.warp_dot %s, %k, %zero {bKMajor} : !tile.smem<tensor<16x128xbf16>> * tensor<32x128xbf16> -> tensor<16x32xf32, #t2>
  %r = tile.convert_layout %d : tensor<16x32xf32, #t2> -> tensor<16x32xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  tile.store %ys, %r : tensor<16x32x!tile.ptr<f32>>
  return
}

// -----

// B read in place from a `swizzled` ring of gathers ([K, N] = [64, 128] bf16,
// rows of two 128-byte chunks): each thread's cp.async lands at its element's
// offset in the swizzled box (the chunk, then the 16-byte unit xor the row
// mod 8), and the ldmatrix.trans addresses are computed the same way from the
// slot's base; A comes from its registers (warpsN = 1), so nothing is stored
// and no bar.sync comes between the slot's wait and the mma.sync, nor after.
// CHECK-LABEL: llvm.func ptx_kernelcc @ring_b
// CHECK-NOT: __kiln_dot_b_smem
// CHECK: nvvm.barrier
// CHECK: %[[OFF:.*]] = llvm.xor
// CHECK-NEXT: %[[TO:.*]] = llvm.getelementptr %{{.*}}[%[[OFF]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK: nvvm.cp.async.shared.global %[[TO]]
// CHECK: nvvm.cp.async.mbarrier.arrive
// CHECK: kiln_tma_wait
// CHECK-NOT: nvvm.barrier
// CHECK: %[[B:.*]] = llvm.xor
// CHECK-NEXT: %[[FROM:.*]] = llvm.getelementptr %{{.*}}[%[[B]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT: nvvm.ldmatrix %[[FROM]] {{.*}}layout = #nvvm.mma_layout<col>, num = 4
// CHECK-NOT: nvvm.barrier
// CHECK-COUNT-64: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.barrier
// CHECK: nvvm.mbarrier.inval
#w1 = #tile.mma<version = 2, numWarps = 4>
func.func @ring_b(%k: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %ring = tile.ring_alloc {swizzled} : !tile.ring<2, tensor<64x128xbf16>>
  %rows = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %cols = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %c128 = arith.constant dense<128> : tensor<64xi32>
  %ro = arith.muli %rows, %c128 : tensor<64xi32>
  %r2 = tile.expand_dims %ro {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %rb = tile.broadcast %r2 : tensor<64x1xi32> -> tensor<64x128xi32>
  %c2 = tile.expand_dims %cols {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  %cb = tile.broadcast %c2 : tensor<1x128xi32> -> tensor<64x128xi32>
  %off = arith.addi %rb, %cb : tensor<64x128xi32>
  %ks = tile.splat %k : !tile.ptr<bf16> -> tensor<64x128x!tile.ptr<bf16>>
  %kp = tile.addptr %ks, %off : tensor<64x128x!tile.ptr<bf16>>, tensor<64x128xi32>
  tile.ring_issue %kp -> %ring[%c0] if %true : tensor<64x128x!tile.ptr<bf16>>, !tile.ring<2, tensor<64x128xbf16>>
  tile.ring_wait %ring[%c0], %c0 : !tile.ring<2, tensor<64x128xbf16>>
  %a = arith.constant dense<1.0> : tensor<64x64xbf16, #w1>
  %zero = arith.constant dense<0.0> : tensor<64x128xf32, #w1>
  %d = tile.warp_dot %a, %ring[%c0], %zero : tensor<64x64xbf16, #w1> * !tile.ring<2, tensor<64x128xbf16>> -> tensor<64x128xf32, #w1>
  tile.ring_release %ring : !tile.ring<2, tensor<64x128xbf16>>
  %r = tile.convert_layout %d : tensor<64x128xf32, #w1> -> tensor<64x128xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<64x128x!tile.ptr<f32>>
  tile.store %ys, %r : tensor<64x128x!tile.ptr<f32>>
  return
}

// -----

// B's 8-bit float codes read in place from a `swizzled` ring slot ([N, K] =
// [32, 128] e4m3, K-major, MLA's FP8 keys) with A staged: per k16 step one
// ldmatrix (b16) of the warp's n-tile, each word's four codes widened pairwise
// (cvt to f16x2, then bf16) into the B fragment's two words, and A read as
// two 8-byte words (rows g and g + 8 at k 4 (lane mod 4)) in the codes' k
// order, in place of ldmatrix.x4. No buffer of the dot's own, no bar.sync
// between the slot's wait and the mma.sync.
// CHECK-LABEL: llvm.func ptx_kernelcc @fp8_ring_b
// CHECK-NOT: __kiln_dot_b_smem
// CHECK: kiln_tma_wait
// CHECK-NOT: nvvm.barrier
// CHECK: nvvm.ldmatrix {{.*}}eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 1
// CHECK: nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// CHECK-NEXT: llvm.fpext %{{.*}} : vector<2xf16> to vector<2xf32>
// CHECK-NEXT: llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: nvvm.convert.f8x2.to.f16x2
// CHECK: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<2xi32>
// CHECK: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<2xi32>
// CHECK-NOT: nvvm.barrier
// CHECK: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>
// CHECK-COUNT-7: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.barrier
// CHECK: nvvm.mbarrier.inval
#t3 = #tile.mma<version = 2, numWarps = 4, warpsN = 4>
func.func @fp8_ring_b(%x: !tile.ptr<bf16>, %k: !tile.ptr<f8E4M3FN> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %ring = tile.ring_alloc {swizzled} : !tile.ring<2, tensor<32x128xf8E4M3FN>>
  %kp = tile.splat %k : !tile.ptr<f8E4M3FN> -> tensor<32x128x!tile.ptr<f8E4M3FN>>
  tile.ring_issue %kp -> %ring[%c0] if %true : tensor<32x128x!tile.ptr<f8E4M3FN>>, !tile.ring<2, tensor<32x128xf8E4M3FN>>
  %v = tile.load %x : !tile.ptr<bf16>
  %q = tile.splat %v : bf16 -> tensor<16x128xbf16>
  %s = tile.stage %q : tensor<16x128xbf16> -> !tile.smem<tensor<16x128xbf16>>
  tile.ring_wait %ring[%c0], %c0 : !tile.ring<2, tensor<32x128xf8E4M3FN>>
  %zero = arith.constant dense<0.0> : tensor<16x32xf32, #t3>
  %d = tile.warp_dot %s, %ring[%c0], %zero {bKMajor} : !tile.smem<tensor<16x128xbf16>> * !tile.ring<2, tensor<32x128xf8E4M3FN>> -> tensor<16x32xf32, #t3>
  tile.ring_release %ring : !tile.ring<2, tensor<32x128xf8E4M3FN>>
  %r = tile.convert_layout %d : tensor<16x32xf32, #t3> -> tensor<16x32xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  tile.store %ys, %r : tensor<16x32x!tile.ptr<f32>>
  return
}
