// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm | FileCheck %s

// A 1-D bulk load: the op's mbarrier is initialized once at entry by thread 0;
// after a CTA barrier an elected lane of warp 0 arms it with the tile's bytes
// and copies the range into a 128-byte aligned buffer (its shared::cluster
// address); every thread waits on the phase parity kept in an alloca, flips
// it, and reads its elements with 16-byte ld.shared.
// CHECK: llvm.mlir.global internal @__kiln_bulk_buffer_0() {addr_space = 3 : i32, alignment = 128 : i64} : !llvm.array<1024 x f32>
// CHECK: llvm.mlir.global internal @__kiln_tma_mbarrier_0() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<1 x i64>
// CHECK-LABEL: llvm.func ptx_kernelcc @bulk(
// CHECK-SAME: %[[X:[a-z0-9]+]]: !llvm.ptr<1>
// CHECK: %[[BAR:.*]] = llvm.mlir.addressof @__kiln_tma_mbarrier_0
// CHECK: %[[PHASE:.*]] = llvm.alloca
// CHECK: nvvm.mbarrier.init %[[BAR]], %{{.*}}, predicate = %{{.*}}
// CHECK-NEXT: nvvm.fence.mbarrier.init
// CHECK-NEXT: nvvm.barrier
// CHECK: %[[SRC:.*]] = llvm.getelementptr %[[X]]
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_bulk_buffer_0 : !llvm.ptr<3>
// CHECK: nvvm.barrier
// CHECK: nvvm.elect.sync
// CHECK: scf.if
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(4096 : i32) : i32
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[BAR]], %[[BYTES]] : !llvm.ptr<3>, i32
// CHECK: %[[DST:.*]] = llvm.addrspacecast %[[BUF]] : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK: %[[SIZE:.*]] = llvm.mlir.constant(4096 : i32) : i32
// CHECK: nvvm.cp.async.bulk.shared.cluster.global %[[DST]], %[[SRC]], %[[BAR]], %[[SIZE]] : !llvm.ptr<7>, <1>
// CHECK-NOT: nvvm.cp.async.bulk
// CHECK: llvm.load %[[PHASE]]
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK: llvm.xor
// CHECK: llvm.store {{.*}}, %[[PHASE]]
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xi32>
func.func @bulk(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %pid = tile.program_id x : i32
  %c1024 = arith.constant 1024 : i32
  %off = arith.muli %pid, %c1024 : i32
  %p = tile.addptr %x, %off : !tile.ptr<f32>, i32
  %t = tile.bulk_load %p : !tile.ptr<f32> -> tensor<1024xf32>
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %py = tile.addptr %ys, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  tile.store %py, %t : tensor<1024x!tile.ptr<f32>>
  return
}

// -----

// More than 64 KiB (128 KiB of f64) is two copies into the one buffer, both
// counted on the one barrier armed with all the bytes.
// CHECK-LABEL: llvm.func ptx_kernelcc @bulk_two_copies(
// CHECK-SAME: %[[X:[a-z0-9]+]]: !llvm.ptr<1>
// CHECK: nvvm.elect.sync
// CHECK: scf.if
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(131072 : i32) : i32
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[BAR:.*]], %[[BYTES]]
// CHECK: %[[DST:.*]] = llvm.addrspacecast
// CHECK: %[[SIZE:.*]] = llvm.mlir.constant(65536 : i32) : i32
// CHECK: nvvm.cp.async.bulk.shared.cluster.global %[[DST]], %[[X]], %[[BAR]], %[[SIZE]]
// CHECK-NEXT: %[[DST1:.*]] = llvm.getelementptr %[[DST]][65536] : (!llvm.ptr<7>) -> !llvm.ptr<7>, i8
// CHECK-NEXT: %[[SRC1:.*]] = llvm.getelementptr %[[X]][65536] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i8
// CHECK-NEXT: %[[SIZE1:.*]] = llvm.mlir.constant(65536 : i32) : i32
// CHECK: nvvm.cp.async.bulk.shared.cluster.global %[[DST1]], %[[SRC1]], %[[BAR]], %[[SIZE1]]
// CHECK-NOT: nvvm.cp.async.bulk
// CHECK: mbarrier.try_wait.parity
func.func @bulk_two_copies(%x: !tile.ptr<f64> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %t = tile.bulk_load %x : !tile.ptr<f64> -> tensor<16384xf64>
  return
}

// -----

// In a loop the phase parity is a loop-carried value of the alloca: each
// iteration waits for the parity it loads, then flips it.
// CHECK-LABEL: llvm.func ptx_kernelcc @bulk_loop(
// CHECK: %[[PHASE:.*]] = llvm.alloca
// CHECK: llvm.store %{{.*}}, %[[PHASE]]
// CHECK: scf.for
// CHECK: nvvm.cp.async.bulk.shared.cluster.global
// CHECK: %[[PARITY:.*]] = llvm.load %[[PHASE]]
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64{{.*}}, %[[PARITY]]
// CHECK: %[[FLIPPED:.*]] = llvm.xor %[[PARITY]]
// CHECK: llvm.store %[[FLIPPED]], %[[PHASE]]
func.func @bulk_loop(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c256 = arith.constant 256 : i32
  scf.for %i = %c0 to %n step %c256 : i32 {
    %p = tile.addptr %x, %i : !tile.ptr<bf16>, i32
    %t = tile.bulk_load %p : !tile.ptr<bf16> -> tensor<256xbf16>
  }
  return
}

// -----

// A runtime count: the issuer arms the barrier with min(count, N) * 2 bytes
// and copies that many (a chunk of 0 bytes is skipped); each 16-byte read
// selects zero where its first element is at or past the count.
// CHECK-LABEL: llvm.func ptx_kernelcc @bulk_count(
// CHECK-SAME: %[[X:[a-z0-9]+]]: !llvm.ptr<1>, %[[N:[a-z0-9]+]]: i32
// CHECK: nvvm.elect.sync
// CHECK: scf.if
// CHECK: %[[MAX:.*]] = llvm.mlir.constant(8192 : i32) : i32
// CHECK: %[[CLAMPED:.*]] = llvm.intr.umin(%[[N]], %[[MAX]]) : (i32, i32) -> i32
// CHECK: %[[TWO:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: %[[BYTES:.*]] = llvm.mul %[[CLAMPED]], %[[TWO]] : i32
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[BAR:.*]], %[[BYTES]] : !llvm.ptr<3>, i32
// CHECK: %[[DST:.*]] = llvm.addrspacecast
// CHECK: %[[START:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[ANY:.*]] = llvm.icmp "ugt" %[[BYTES]], %[[START]] : i32
// CHECK: scf.if %[[ANY]] {
// CHECK: %[[CHUNK:.*]] = llvm.mlir.constant(16384 : i32) : i32
// CHECK: %[[LEFT:.*]] = llvm.sub %[[BYTES]], %[[START]] : i32
// CHECK: %[[SIZE:.*]] = llvm.intr.umin(%[[LEFT]], %[[CHUNK]]) : (i32, i32) -> i32
// CHECK: nvvm.cp.async.bulk.shared.cluster.global %[[DST]], %[[X]], %[[BAR]], %[[SIZE]]
// CHECK-NOT: nvvm.cp.async.bulk
// CHECK: mbarrier.try_wait.parity
// CHECK: %[[ZERO:.*]] = llvm.mlir.zero : bf16
// CHECK: %[[V:.*]] = llvm.load {{.*}} : !llvm.ptr<3> -> bf16
// CHECK: %[[IN:.*]] = llvm.icmp "ult" %{{.*}}, %[[N]] : i32
// CHECK: llvm.select %[[IN]], %[[V]], %[[ZERO]] : i1, bf16
func.func @bulk_count(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i32 {tile.divisibility = 8 : i32}) attributes {tile.kernel, tile.num_warps = 16 : i32} {
  %t = tile.bulk_load %x count %n : !tile.ptr<bf16> -> tensor<8192xbf16>
  return
}

// -----

// A pipelined row ring: ring_issue from a pointer is the bulk copy into the
// slot (after the CTA barrier, under the predicate), ring_wait_load with a
// count reads the slot with the zero select.
// CHECK-LABEL: llvm.func ptx_kernelcc @bulk_ring(
// CHECK-SAME: %[[X:[a-z0-9]+]]: !llvm.ptr<1>, %[[N:[a-z0-9]+]]: i32, %{{.*}}: i32, %[[P:[a-z0-9]+]]: i1
// CHECK: %[[RING:.*]] = llvm.mlir.addressof @__kiln_tma_ring_0 : !llvm.ptr<3>
// CHECK-COUNT-2: nvvm.mbarrier.init
// CHECK: nvvm.barrier
// CHECK: nvvm.elect.sync
// CHECK: %[[GO:.*]] = llvm.and %{{.*}}, %[[P]]
// CHECK: scf.if %[[GO]]
// CHECK: llvm.intr.umin(%[[N]],
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: scf.if
// CHECK: nvvm.cp.async.bulk.shared.cluster.global %{{.*}}, %[[X]],
// CHECK: mbarrier.try_wait.parity
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> bf16
// CHECK: llvm.icmp "ult" %{{.*}}, %[[N]] : i32
// CHECK: llvm.select
func.func @bulk_ring(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i32 {tile.divisibility = 8 : i32}, %s: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 16 : i32} {
  %r = tile.ring_alloc : !tile.ring<2, tensor<8192xbf16>>
  tile.ring_issue %x count %n -> %r[%s] if %p : !tile.ptr<bf16>, !tile.ring<2, tensor<8192xbf16>>
  %t = tile.ring_wait_load %r[%s], %s count %n : !tile.ring<2, tensor<8192xbf16>> -> tensor<8192xbf16>
  return
}
