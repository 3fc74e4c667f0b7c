// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm | FileCheck %s

// ring_release, after the loop that drained the ring: a CTA barrier, thread 0
// invalidates each slot's mbarrier (the two 8-byte barriers after its
// slots), a second CTA barrier; the ring's buffer is then `tile.drained`, live
// only up to that barrier for kiln-allocate-shared-memory.
// CHECK: llvm.mlir.global internal @__kiln_tma_ring_0() {addr_space = 3 : i32, alignment = 1024 : i64, tile.drained} : !llvm.array<16400 x i8>
// CHECK-LABEL: llvm.func ptx_kernelcc @release(
// CHECK: %[[BASE:.*]] = llvm.mlir.addressof @__kiln_tma_ring_0 : !llvm.ptr<3>
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK: nvvm.barrier
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[T0:.*]] = llvm.icmp "eq" %[[TID]], %{{.*}} : i32
// CHECK: scf.if %[[T0]] {
// CHECK-COUNT-2: nvvm.mbarrier.inval %{{.*}} : !llvm.ptr<3>
// CHECK: }
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: llvm.return
func.func @release(%d: !tile.tensordesc<tensor<32x128xf16>>, %i: i32, %slot: i32, %phase: i32, %p: i1, %out: !tile.ptr<f16>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.ring_alloc : !tile.ring<2, tensor<32x128xf16>>
  tile.ring_issue %d[%i, %i] -> %r[%slot] if %p : !tile.tensordesc<tensor<32x128xf16>>, !tile.ring<2, tensor<32x128xf16>>
  %t = tile.ring_wait_load %r[%slot], %phase : !tile.ring<2, tensor<32x128xf16>> -> tensor<32x128xf16>
  tile.ring_release %r : !tile.ring<2, tensor<32x128xf16>>
  return
}
