// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm | FileCheck %s

// A descriptor is the address of a by-value 128-byte CUtensorMap
// (__grid_constant__). The load's mbarrier is initialized once at entry by
// thread 0; an elected lane of warp 0 arms it with the box's bytes and issues
// the copy (coordinates innermost first); every thread waits on the phase
// parity kept in an alloca, flips it, and reads its elements with 16-byte
// ld.shared.
// CHECK: llvm.mlir.global internal @__kiln_tma_box_1() {addr_space = 3 : i32, alignment = 128 : i64, tile.drained} : !llvm.array<8192 x bf16>
// CHECK: llvm.mlir.global internal @__kiln_tma_box_0() {addr_space = 3 : i32, alignment = 128 : i64, tile.drained} : !llvm.array<8192 x bf16>
// CHECK: llvm.mlir.global internal @__kiln_tma_mbarrier_0() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<1 x i64>
// CHECK-LABEL: llvm.func ptx_kernelcc @copy(
// CHECK-SAME: %[[SRC:[a-z0-9]+]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK-SAME: %[[DST:[a-z0-9]+]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK: %[[BAR:.*]] = llvm.mlir.addressof @__kiln_tma_mbarrier_0
// CHECK: %[[PHASE:.*]] = llvm.alloca
// CHECK: nvvm.mbarrier.init %[[BAR]], %{{.*}}, predicate = %{{.*}}
// CHECK-NEXT: nvvm.fence.mbarrier.init
// CHECK-NEXT: nvvm.barrier
// CHECK: nvvm.barrier
// CHECK: nvvm.elect.sync
// CHECK: scf.if
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[BAR]], %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[SRC]], %[[BAR]], box[%[[J:[a-z0-9]+]], %[[I:[a-z0-9]+]]] {isCTAOnly = true}
// CHECK: llvm.load %[[PHASE]]
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK: llvm.xor
// CHECK: llvm.store {{.*}}, %[[PHASE]]
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xi32>
// The store: st.shared, proxy fence, barrier, elected issue, commit, wait for the reads.
// CHECK: nvvm.barrier
// CHECK: llvm.store {{.*}} : vector<4xi32>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier
// CHECK: nvvm.elect.sync
// CHECK: scf.if
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %[[DST]], %{{.*}}, box[%[[J]], %[[I]]]
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
func.func @copy(%src: !tile.tensordesc<tensor<64x128xbf16>>, %dst: !tile.tensordesc<tensor<64x128xbf16>>, %i: i32, %j: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %t = tile.desc_load %src[%i, %j] : !tile.tensordesc<tensor<64x128xbf16>> -> tensor<64x128xbf16>
  tile.desc_store %dst[%i, %j], %t : !tile.tensordesc<tensor<64x128xbf16>>, tensor<64x128xbf16>
  return
}
