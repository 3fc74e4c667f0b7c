// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm | FileCheck %s

// The Tensor Memory form of a ring dot, as kiln-tile-accelerate-dot leaves it
// on sm_100a/sm_103a (4 warps, [128, 64] accumulator):
// - mbarrier_alloc: two 8-byte barriers initialized by thread 0;
// - tmem_alloc: warp 0 allocates 64 columns (N = 64, a power of two >= 32)
//   into a 4-byte shared word, fences around a CTA barrier, everyone reads it;
// - tcgen05_dot: the tcgen05 shared memory descriptors of both slots
//   (start >> 4 | LBO 1 << 16 | SBO 64 << 32 | 1 << 46 | swizzle 2 << 61 =
//   0x4000404000010000) and the instruction descriptor (f32 D, bf16 A/B,
//   K-major, N >> 3 = 8 at bit 17, M >> 4 = 8 at bit 24: 0x08100490); one
//   elected thread of warp 0 issues four K steps (descriptors + 2, 4, 6:
//   32 bytes each), the first with the accumulate flag, the rest with true,
//   then commits to the barrier;
// - mbarrier_wait: try_wait.parity on the barrier;
// - tmem_load: lane 32 (warp mod 4) << 16, two 32-column tcgen05.ld of
//   32x32b (64 registers, one column each), one wait::ld;
// - tmem_dealloc: fence, CTA barrier, warp 0 frees 64 columns and
//   relinquishes the allocation permit.
// CHECK-DAG: llvm.mlir.global internal @__kiln_tmem_address_0() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<1 x i32>
// CHECK-DAG: llvm.mlir.global internal @__kiln_mbarrier_0() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<2 x i64>
// CHECK-LABEL: llvm.func ptx_kernelcc @tcgen05(
// CHECK: %[[BARS:.*]] = llvm.mlir.addressof @__kiln_mbarrier_0 : !llvm.ptr<3>
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %{{.*}}, predicate = %{{.*}} : !llvm.ptr<3>, i32, i1
// CHECK: nvvm.fence.mbarrier.init
// CHECK-NEXT: nvvm.barrier
// CHECK: %[[SLOT:.*]] = llvm.mlir.addressof @__kiln_tmem_address_0 : !llvm.ptr<3>
// CHECK: %[[COLS:.*]] = llvm.mlir.constant(64 : i32) : i32
// CHECK: %[[WARP0:.*]] = llvm.icmp "ult" %{{.*}}, %{{.*}} : i32
// CHECK: scf.if %[[WARP0]] {
// CHECK-NEXT: nvvm.tcgen05.alloc %[[SLOT]], %[[COLS]] : !llvm.ptr<3>, i32
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.tcgen05.fence <before>
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK-NEXT: %[[WORD:.*]] = llvm.load %[[SLOT]] {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// CHECK-NEXT: %[[TMEM:.*]] = llvm.inttoptr %[[WORD]] : i32 to !llvm.ptr<6>
// CHECK: %[[FIELDS:.*]] = llvm.mlir.constant(4611756662049538048 : i64) : i64
// CHECK: %[[ADESC:.*]] = llvm.or %{{.*}}, %[[FIELDS]] : i64
// CHECK: %[[BDESC:.*]] = llvm.or %{{.*}}, %{{.*}} : i64
// CHECK: %[[IDESC:.*]] = llvm.mlir.constant(135267472 : i32) : i32
// CHECK: %[[BAR:.*]] = llvm.getelementptr %[[BARS]][%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK: %[[ELECTED:.*]] = nvvm.elect.sync -> i1
// CHECK: %[[ISSUER:.*]] = llvm.and %[[ELECTED]], %{{.*}} : i1
// CHECK: scf.if %[[ISSUER]] {
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK-NEXT: nvvm.tcgen05.mma %[[TMEM]], %[[ADESC]], %[[BDESC]], %[[IDESC]], %arg2 {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.tcgen05_mma_kind<f16>}
// CHECK: %[[STEP:.*]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: %[[A1:.*]] = llvm.add %[[ADESC]], %[[STEP]] : i64
// CHECK-NEXT: %[[B1:.*]] = llvm.add %[[BDESC]], %[[STEP]] : i64
// CHECK-NEXT: %[[TRUE:.*]] = llvm.mlir.constant(true) : i1
// CHECK-NEXT: nvvm.tcgen05.mma %[[TMEM]], %[[A1]], %[[B1]], %[[IDESC]], %[[TRUE]]
// CHECK: llvm.mlir.constant(4 : i64) : i64
// CHECK: nvvm.tcgen05.mma
// CHECK: llvm.mlir.constant(6 : i64) : i64
// CHECK: nvvm.tcgen05.mma
// CHECK-NEXT: nvvm.tcgen05.commit %[[BAR]] : !llvm.ptr<3>
// CHECK-NEXT: }
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK: %[[LANE:.*]] = llvm.shl %{{.*}}, %{{.*}} : i32
// CHECK: %[[COLUMN:.*]] = llvm.mul %{{.*}}, %{{.*}} : i32
// CHECK: %[[OFFSET:.*]] = llvm.or %[[LANE]], %[[COLUMN]] : i32
// CHECK: %[[BASE:.*]] = llvm.add %{{.*}}, %[[OFFSET]] : i32
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK: nvvm.tcgen05.ld %{{.*}} {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<32xi32>
// CHECK: nvvm.tcgen05.ld %{{.*}} {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<32xi32>
// CHECK-NOT: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.wait <load>
// CHECK: nvvm.tcgen05.fence <before>
// CHECK-NEXT: nvvm.barrier
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: nvvm.tcgen05.fence <after>
// CHECK-NEXT: nvvm.tcgen05.dealloc %[[TMEM]], %{{.*}} : !llvm.ptr<6>, i32
// CHECK-NEXT: nvvm.tcgen05.relinquish_alloc_permit
// CHECK-NEXT: }
!A = !tile.ring<2, tensor<128x64xbf16>>
!B = !tile.ring<2, tensor<64x64xbf16>>
!T = !tile.tmem<tensor<128x64xf32>>
!M = !tile.mbarriers<2>
func.func @tcgen05(%out: !tile.ptr<f32>, %i: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %done = tile.mbarrier_alloc : !M
  %acc = tile.tmem_alloc : !T
  tile.tcgen05_dot %ra[%i], %rb[%i], %acc, %p -> %done[%i] : !A, !B, !T, !M
  tile.mbarrier_wait %done[%i], %i : !M
  %r = tile.tmem_load %acc : !T -> tensor<128x64xf32, #tile.mma<version = 5, numWarps = 4>>
  tile.tmem_dealloc %acc : !T
  %c = tile.convert_layout %r : tensor<128x64xf32, #tile.mma<version = 5, numWarps = 4>> -> tensor<128x64xf32>
  %s = tile.splat %out : !tile.ptr<f32> -> tensor<128x64x!tile.ptr<f32>>
  tile.store %s, %c : tensor<128x64x!tile.ptr<f32>>
  return
}
