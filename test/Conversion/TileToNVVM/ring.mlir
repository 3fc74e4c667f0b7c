// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm | FileCheck %s

// A ring is one 1024-byte aligned shared array (the period of the TMA
// swizzle): the slots, then their mbarriers (8 bytes each). ring_alloc initializes every
// barrier from thread 0; ring_issue is a CTA barrier then the elected,
// predicated arm + copy into the slot; ring_wait_load waits on the slot's
// barrier with the given parity and reads the slot with 16-byte ld.shared.
// CHECK-DAG: llvm.mlir.global internal @__kiln_tma_ring_0() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<16400 x i8>
// CHECK-LABEL: llvm.func ptx_kernelcc @ring(
// CHECK: %[[BASE:.*]] = llvm.mlir.addressof @__kiln_tma_ring_0 : !llvm.ptr<3>
// CHECK: %[[BARRIERS:.*]] = llvm.getelementptr %[[BASE]][16384] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %{{.*}}, predicate = %{{.*}} : !llvm.ptr<3>, i32, i1
// CHECK: nvvm.fence.mbarrier.init
// CHECK-NEXT: nvvm.barrier
// CHECK: nvvm.barrier
// CHECK: %[[ELECTED:.*]] = nvvm.elect.sync -> i1
// CHECK: %[[ISSUER:.*]] = llvm.and %{{.*}}, %{{.*}} : i1
// CHECK: %[[GO:.*]] = llvm.and %[[ISSUER]], %{{.*}} : i1
// CHECK: scf.if %[[GO]]
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} {isCTAOnly = true}
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xi32>
func.func @ring(%d: !tile.tensordesc<tensor<32x128xf16>>, %i: i32, %slot: i32, %phase: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.ring_alloc : !tile.ring<2, tensor<32x128xf16>>
  tile.ring_issue %d[%i, %i] -> %r[%slot] if %p : !tile.tensordesc<tensor<32x128xf16>>, !tile.ring<2, tensor<32x128xf16>>
  %t = tile.ring_wait_load %r[%slot], %phase : !tile.ring<2, tensor<32x128xf16>> -> tensor<32x128xf16>
  tile.desc_store %d[%i, %i], %t : !tile.tensordesc<tensor<32x128xf16>>, tensor<32x128xf16>
  return
}
