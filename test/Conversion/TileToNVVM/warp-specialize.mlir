// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_90a | FileCheck %s

// tile.warp_specialize with 4 consumer warps (128 threads): the kernel runs
// 256 threads (the producer warpgroup last), one program an SM (.minnctapersm
// 1: ptxas starts it with the registers its threads may hold, the pool). The barriers are initialized by
// all of them before the split: the ring's with one arrival, the empty ones
// with one per consumer warp. The consumers (tid < 128) take 240
// registers a thread and wait for the slot; their release is a warp barrier
// and lane 0's mbarrier.arrive in each warp; the CTA barriers of their TMA store become the
// named barrier 1 of 128 threads. The producer warpgroup keeps 40 registers a
// thread; its first warp (tid < 160) waits for the empty slot and elects the
// lane that arms and copies, with no CTA barrier.
// CHECK-LABEL: llvm.func ptx_kernelcc @split(
// CHECK-SAME: nvvm.minctasm = 1 : i32, nvvm.reqntid = array<i32: 256, 1, 1>
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %{{.*}}, predicate = %{{.*}} : !llvm.ptr<3>, i32, i1
// CHECK: nvvm.fence.mbarrier.init
// CHECK-NEXT: nvvm.barrier{{$}}
// CHECK: %[[ARRIVALS:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %[[ARRIVALS]], predicate = %{{.*}} : !llvm.ptr<3>, i32, i1
// CHECK: nvvm.fence.mbarrier.init
// CHECK-NEXT: nvvm.barrier{{$}}
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[CONSUMER:.*]] = llvm.icmp "ult" %[[TID]], %{{.*}} : i32
// CHECK: scf.if %[[CONSUMER]] {
// CHECK-NEXT: nvvm.setmaxregister increase 240
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK: scf.if %{{.*}} {
// CHECK: nvvm.bar.warp.sync %{{.*}} : i32
// CHECK-NEXT: %[[LANE:.*]] = nvvm.read.ptx.sreg.laneid : i32
// CHECK: %[[LANE0:.*]] = llvm.icmp "eq" %[[LANE]], %{{.*}} : i32
// CHECK-NEXT: scf.if %[[LANE0]] {
// CHECK-NEXT: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK: nvvm.barrier id = %[[ID:.*]] number_of_threads = %[[N:.*]]{{$}}
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}{{$}}
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister decrease 40
// CHECK: %[[FIRST:.*]] = llvm.icmp "ult" %[[TID]], %{{.*}} : i32
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK-NOT: nvvm.barrier
// CHECK: %[[ELECTED:.*]] = nvvm.elect.sync -> i1
// CHECK-NEXT: %[[GO:.*]] = llvm.and %[[ELECTED]], %{{.*}} : i1
// CHECK-NEXT: scf.if %[[GO]] {
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
!D = !tile.tensordesc<tensor<32x128xf16>>
!R = !tile.ring<2, tensor<32x128xf16>>
func.func @split(%d: !D, %i: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.ring_alloc : !R
  %e = tile.mbarrier_alloc {per_warp} : !tile.mbarriers<2>
  tile.warp_specialize consumer {
    %t = tile.ring_wait_load %r[%i], %i : !R -> tensor<32x128xf16>
    tile.mbarrier_arrive %e[%i] if %p : !tile.mbarriers<2>
    tile.desc_store %d[%i, %i], %t : !D, tensor<32x128xf16>
  } producer {
    tile.mbarrier_wait %e[%i], %i : !tile.mbarriers<2>
    tile.ring_issue %d[%i, %i] -> %r[%i] if %p {producer} : !D, !R
  }
  return
}

// -----

// 8 consumer warps take 232 registers a thread: the 384 threads start with 168
// (65536 / 384 rounded down to 8), a pool of 64512 = 256 x 232 + 128 x 40.
// CHECK-LABEL: llvm.func ptx_kernelcc @eight_warps(
// CHECK-SAME: nvvm.reqntid = array<i32: 384, 1, 1>
// CHECK: nvvm.setmaxregister increase 232
// CHECK: nvvm.setmaxregister decrease 40
func.func @eight_warps() attributes {tile.kernel, tile.num_warps = 8 : i32} {
  tile.warp_specialize consumer {
  } producer {
  }
  return
}

// -----

// A kernel without warp specialization keeps its own thread count.
// CHECK-LABEL: llvm.func ptx_kernelcc @plain(
// CHECK-NOT: minctasm
// CHECK-SAME: nvvm.reqntid = array<i32: 128, 1, 1>
// CHECK-NOT: nvvm.setmaxregister
func.func @plain() attributes {tile.kernel, tile.num_warps = 4 : i32} {
  return
}

// -----

// 16 consumer warps: 640 threads start with 96 registers (65536 / 640 = 102),
// a pool of 61440, so the consumers take 104 (512 x 104 + 128 x 40 = 58368).
// CHECK-LABEL: llvm.func ptx_kernelcc @sixteen_warps(
// CHECK-SAME: nvvm.reqntid = array<i32: 640, 1, 1>
// CHECK: nvvm.setmaxregister increase 104
func.func @sixteen_warps() attributes {tile.kernel, tile.num_warps = 16 : i32} {
  tile.warp_specialize consumer {
  } producer {
  }
  return
}
