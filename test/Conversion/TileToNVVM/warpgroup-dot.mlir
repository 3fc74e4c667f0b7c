// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_90a | FileCheck %s

!A = !tile.ring<2, tensor<64x128xf8E4M3FN>>
!B = !tile.ring<2, tensor<16x128xf8E5M2>>
!DC = !tile.tensordesc<tensor<64x16xbf16>>
#mma = #tile.mma<version = 3, numWarps = 4>

// FP8 accumulator promotion, maxNumImpreciseAcc = 64 of K = 128 (two k32
// wgmmas per chunk, one warpgroup, 8 registers per thread): per chunk a
// fence, a wgmma chain into fresh registers that starts from zero (scale-d
// <zero>, its input a struct of 0.0), a commit, wait_group 0 on the chain's
// registers and one f32 add per register into the accumulator; the second
// chunk's descriptors advance by 64 bytes (4 units of 16) and its adds take
// the first chunk's sums. The tensor cores never read the accumulator.
// CHECK-LABEL: llvm.func ptx_kernelcc @promoted(
// CHECK: %[[ACC0:.*]] = llvm.extractvalue %[[ACC:.*]][0] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: llvm.insertvalue %[[ZERO]], %{{.*}}[0]
// CHECK: %[[FROM:.*]] = llvm.insertvalue %[[ZERO]], %{{.*}}[7]
// CHECK: %[[C0:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[FROM]], <m = 64, n = 16, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK: llvm.mlir.constant(2 : i64) : i64
// CHECK: %[[C1:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[C0]], <m = 64, n = 16, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: %[[P0:.*]] = llvm.extractvalue %[[C1]][0]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: %[[W0:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;", "=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7" %[[P0]],
// CHECK: %[[Q0:.*]] = llvm.extractvalue %[[W0]][0]
// CHECK-NOT: nvvm.wgmma
// CHECK: %[[S0:.*]] = llvm.fadd %[[ACC0]], %[[Q0]] : f32
// CHECK-COUNT-7: llvm.fadd
// CHECK-NOT: llvm.fadd
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: %[[FROM2:.*]] = llvm.insertvalue %[[ZERO]], %{{.*}}[7]
// CHECK: llvm.mlir.constant(4 : i64) : i64
// CHECK: %[[C2:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[FROM2]], <m = 64, n = 16, k = 32>, D[<f32>, <zero>]
// CHECK: llvm.mlir.constant(6 : i64) : i64
// CHECK: %[[C3:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[C2]], <m = 64, n = 16, k = 32>, D[<f32>, <one>]
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: %[[W1:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK: %[[Q1:.*]] = llvm.extractvalue %[[W1]][0]
// CHECK: llvm.fadd %[[S0]], %[[Q1]] : f32
// CHECK-COUNT-7: llvm.fadd
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK-NOT: llvm.fadd
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK: llvm.return
func.func @promoted(%dc: !DC, %slot: i32, %x: f32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %acc = tile.splat %x : f32 -> tensor<64x16xf32, #mma>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %d = tile.warpgroup_dot %ra[%slot], %rb[%slot], %acc {maxNumImpreciseAcc = 64 : i32} : !A, !B, tensor<64x16xf32, #mma>
  %w = tile.warpgroup_dot_wait %d {pending = 0 : i32} : tensor<64x16xf32, #mma>
  %h = arith.truncf %w : tensor<64x16xf32, #mma> to tensor<64x16xbf16, #mma>
  tile.desc_store %dc[%slot, %slot], %h : !DC, tensor<64x16xbf16, #mma>
  return
}

// -----

!A = !tile.ring<2, tensor<64x128xf8E4M3FN>>
!B = !tile.ring<2, tensor<16x128xf8E5M2>>
!DC = !tile.tensordesc<tensor<64x16xbf16>>
#mma = #tile.mma<version = 3, numWarps = 4>

// Without the bound: one fence, the four k32 wgmmas chained on the
// accumulator itself (scale-d <one> throughout), one commit, no wait and no
// add inside the dot (the tile.warpgroup_dot_wait after it waits).
// CHECK-LABEL: llvm.func ptx_kernelcc @unbounded(
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NOT: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK-NOT: llvm.fadd
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: llvm.fadd
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT: nvvm.wgmma
// CHECK-NOT: llvm.fadd
// CHECK: llvm.return
func.func @unbounded(%dc: !DC, %slot: i32, %x: f32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %acc = tile.splat %x : f32 -> tensor<64x16xf32, #mma>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %d = tile.warpgroup_dot %ra[%slot], %rb[%slot], %acc : !A, !B, tensor<64x16xf32, #mma>
  %w = tile.warpgroup_dot_wait %d {pending = 0 : i32} : tensor<64x16xf32, #mma>
  %h = arith.truncf %w : tensor<64x16xf32, #mma> to tensor<64x16xbf16, #mma>
  tile.desc_store %dc[%slot, %slot], %h : !DC, tensor<64x16xbf16, #mma>
  return
}

// -----

#mma = #tile.mma<version = 3, numWarps = 4>

// A staged dot: a [64, 128] and b [128, 64] bf16 register tiles stored into
// two 1024-byte aligned scratch buffers with the 128-byte swizzle (the
// 16-byte unit xor the row mod 8); the stores fenced for the async proxy and
// a barrier; then one wgmma per k16 step, A K-major (the second
// 64-column chunk of A 64 x 128 bytes = 512 units of 16 further: k = 64 at
// 512, k = 80 at 514), B N-major with the transpose bit (k16 = 16 rows of
// 128 bytes = 128 units; leading byte offset K * 128 = 16384 = 1024 units,
// fixed bits 1024 << 16 | 64 << 32 | 1 << 62), the commit, wait_group 0 and
// the barrier after which the scratch is free.
// CHECK: llvm.mlir.global internal @__kiln_wgmma_b_smem_0() {addr_space = 3 : i32, alignment = 1024 : i64, tile.scratch} : !llvm.array<8192 x bf16>
// CHECK: llvm.mlir.global internal @__kiln_wgmma_a_smem_0() {addr_space = 3 : i32, alignment = 1024 : i64, tile.scratch} : !llvm.array<8192 x bf16>
// CHECK-LABEL: llvm.func ptx_kernelcc @staged(
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.xor
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier
// CHECK: llvm.mlir.constant(4611686293372403712 : i64) : i64
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: llvm.mlir.constant(4611686293305360384 : i64) : i64
// CHECK: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: llvm.mlir.constant(128 : i64) : i64
// CHECK: llvm.mlir.constant(2 : i64) : i64
// CHECK: nvvm.wgmma.mma_async
// CHECK: llvm.mlir.constant(512 : i64) : i64
// CHECK: llvm.mlir.constant(512 : i64) : i64
// CHECK: nvvm.wgmma.mma_async
// CHECK: llvm.mlir.constant(640 : i64) : i64
// CHECK: llvm.mlir.constant(514 : i64) : i64
// CHECK-COUNT-3: nvvm.wgmma.mma_async
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT: nvvm.wgmma
// CHECK: nvvm.barrier
func.func @staged(%x: !tile.ptr<bf16>, %y: f32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %ap = tile.splat %x : !tile.ptr<bf16> -> tensor<64x128x!tile.ptr<bf16>>
  %a = tile.load %ap : tensor<64x128x!tile.ptr<bf16>>
  %bp = tile.splat %x : !tile.ptr<bf16> -> tensor<128x64x!tile.ptr<bf16>>
  %b = tile.load %bp : tensor<128x64x!tile.ptr<bf16>>
  %acc = tile.splat %y : f32 -> tensor<64x64xf32, #mma>
  %d = tile.warpgroup_dot_staged %a, %b, %acc : tensor<64x128xbf16> * tensor<128x64xbf16> -> tensor<64x64xf32, #mma>
  %h = arith.truncf %d : tensor<64x64xf32, #mma> to tensor<64x64xbf16, #mma>
  %c = tile.convert_layout %h : tensor<64x64xbf16, #mma> -> tensor<64x64xbf16>
  %hp = tile.splat %x : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  tile.store %hp, %c : tensor<64x64x!tile.ptr<bf16>>
  return
}

// -----

// A staged once, B in ring slots (a [1, 1, 64, 128] box: the matrix
// [64, 128], K = 128 in two 128-byte chunks), then p·v with p from registers
// and an MN-major B ([1, 1, 64, 128]: K = 64 rows, N = 128 in two chunks).
// tile.stage: the tile's swizzled stores into a drained buffer of its own,
// fence.proxy.async, one CTA barrier; the dots then add no barrier and stage
// nothing. q kᵀ: both descriptors step 32 bytes (2 units) a k16 and into the
// second chunk of K by its bytes (64 rows x 128 = 8192: 512 units). p·v: four
// A words a k16 step, the B descriptor with the leading byte offset K * 128
// (8192 bytes: 512 in bits 16-29) and the transpose-B immediate.
// CHECK-LABEL: llvm.mlir.global internal @__kiln_staged_0() {addr_space = 3 : i32, alignment = 1024 : i64, tile.drained} : !llvm.array<8192 x bf16>
// CHECK-LABEL: llvm.func ptx_kernelcc @slot_b(
// CHECK: %[[STAGED:.*]] = llvm.mlir.addressof @__kiln_staged_0
// CHECK-COUNT-8: llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK-NOT: llvm.store
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: llvm.mlir.constant(2 : i64) : i64
// CHECK: nvvm.wgmma.mma_async
// CHECK: llvm.mlir.constant(512 : i64) : i64
// CHECK: nvvm.wgmma.mma_async
// CHECK: llvm.mlir.constant(514 : i64) : i64
// CHECK-COUNT-3: nvvm.wgmma.mma_async
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.mlir.constant(4611686293338849280 : i64) : i64
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
!R = !tile.ring<2, tensor<1x1x64x128xbf16>>
#mma = #tile.mma<version = 3, numWarps = 4>
func.func @slot_b(%q: !tile.ptr<bf16>, %slot: i32, %x: f32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %rk = tile.ring_alloc : !R
  %rv = tile.ring_alloc : !R
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x128x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<64x128x!tile.ptr<bf16>>
  %qs = tile.stage %qv : tensor<64x128xbf16> -> !tile.smem<tensor<64x128xbf16>>
  %acc = tile.splat %x : f32 -> tensor<64x64xf32, #mma>
  %s = tile.warpgroup_dot %qs, %rk[%slot], %acc : !tile.smem<tensor<64x128xbf16>>, !R, tensor<64x64xf32, #mma>
  %sw = tile.warpgroup_dot_wait %s {pending = 0 : i32} : tensor<64x64xf32, #mma>
  %p = arith.truncf %sw : tensor<64x64xf32, #mma> to tensor<64x64xbf16, #mma>
  %acc2 = tile.splat %x : f32 -> tensor<64x128xf32, #mma>
  %o = tile.warpgroup_dot %p, %rv[%slot], %acc2 {bMnMajor} : tensor<64x64xbf16, #mma>, !R, tensor<64x128xf32, #mma>
  %ow = tile.warpgroup_dot_wait %o {pending = 0 : i32} : tensor<64x128xf32, #mma>
  %h = arith.truncf %ow : tensor<64x128xf32, #mma> to tensor<64x128xbf16, #mma>
  %hp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x128x!tile.ptr<bf16>, #mma>
  tile.store %hp, %h : tensor<64x128x!tile.ptr<bf16>, #mma>
  return
}

// -----

// The turns of two consumer warpgroups (w = tid >> 7): "start" warpgroup 1
// arrives at barrier 2; "wait" syncs on barrier 2 + w; "pass" arrives at
// barrier 3 - w; "end" warpgroup 0 syncs on barrier 2. 256 threads each.
// CHECK-LABEL: llvm.func ptx_kernelcc @turns(
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x
// CHECK: %[[W:.*]] = llvm.lshr %[[TID]], %{{.*}} : i32
// CHECK: llvm.inline_asm has_side_effects {{.*}}"{\0A.reg .pred p;\0Asetp.eq.u32 p, $0, 1;\0A@p bar.arrive 2, 256;\0A}", "r" %[[W]]
// CHECK: "{\0A.reg .b32 b;\0Aadd.u32 b, $0, 2;\0Abar.sync b, 256;\0A}", "r"
// CHECK: "{\0A.reg .b32 b;\0Asub.u32 b, 3, $0;\0Abar.arrive b, 256;\0A}", "r"
// CHECK: "{\0A.reg .pred p;\0Asetp.eq.u32 p, $0, 0;\0A@p bar.sync 2, 256;\0A}", "r"
func.func @turns() attributes {tile.kernel, tile.num_warps = 8 : i32} {
  tile.warpgroup_turn "start"
  tile.warpgroup_turn "wait"
  tile.warpgroup_turn "pass"
  tile.warpgroup_turn "end"
  return
}
