// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_100a | FileCheck %s
// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_103a | FileCheck %s

// The consumers of a warp-specialized tcgen05 loop (the form
// kiln-tile-accelerate-dot makes on sm_100a/sm_103a), 4 consumer warps: the
// EMPTY barriers expect one arrival (the commit). In the consumer region
// (tid < 128, 240 registers) TMEM is allocated under the named barrier 1 of
// 128 threads; `tile.ring_wait {issuer}` waits in warp 0 only (tid < 32);
// the elected lane of warp 0 issues the MMAs and commits them to the EMPTY
// barrier of the slot; there is no per-warp arrival. After the loop
// `tile.barrier` is the consumers' named barrier, then every consumer waits
// on the last commit's barrier and reads TMEM. The producer is Hopper's.
// CHECK-LABEL: llvm.func ptx_kernelcc @consumers(
// CHECK-SAME: nvvm.reqntid = array<i32: 256, 1, 1>
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.*}}, %{{.*}}, predicate = %{{.*}} : !llvm.ptr<3>, i32, i1
// CHECK: nvvm.fence.mbarrier.init
// CHECK-NEXT: nvvm.barrier{{$}}
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %[[ONE]], predicate = %{{.*}} : !llvm.ptr<3>, i32, i1
// CHECK: nvvm.fence.mbarrier.init
// CHECK-NEXT: nvvm.barrier{{$}}
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: nvvm.setmaxregister increase 240
// CHECK: nvvm.tcgen05.alloc
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}{{$}}
// CHECK: scf.for
// CHECK: %[[W0:.*]] = llvm.icmp "ult" %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: scf.if %[[W0]] {
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK: scf.if %{{.*}} {
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK-NOT: nvvm.mbarrier.arrive
// CHECK: nvvm.elect.sync
// CHECK: nvvm.tcgen05.mma
// CHECK: nvvm.tcgen05.commit
// CHECK-NOT: nvvm.mbarrier.arrive
// CHECK: scf.yield
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}{{$}}
// CHECK-NOT: scf.if
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.dealloc
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister decrease 40
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK: nvvm.elect.sync
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK-NOT: nvvm.barrier{{$}}
// CHECK: llvm.return
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!A = !tile.ring<2, tensor<128x64xbf16>>
!B = !tile.ring<2, tensor<128x64xbf16>>
!T = !tile.tmem<tensor<128x128xf32>>
!E = !tile.mbarriers<2>
#mma = #tile.mma<version = 5, numWarps = 4>
func.func @consumers(%da: !DA, %db: !DB, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %e = tile.mbarrier_alloc : !E
  tile.warp_specialize consumer {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %tmem = tile.tmem_alloc : !T
    %dots = scf.for %i = %c0 to %n step %c1 iter_args(%d = %c0) -> (i32) : i32 {
      %s = arith.remui %d, %c2 : i32
      %q = arith.divui %d, %c2 : i32
      %p = arith.andi %q, %c1 : i32
      tile.ring_wait %ra[%s], %p {issuer} : !A
      tile.ring_wait %rb[%s], %p {issuer} : !B
      %acc = arith.cmpi ne, %d, %c0 : i32
      tile.tcgen05_dot %ra[%s], %rb[%s], %tmem, %acc -> %e[%s] : !A, !B, !T, !E
      %d1 = arith.addi %d, %c1 : i32
      scf.yield %d1 : i32
    }
    tile.barrier
    %last = arith.addi %dots, %c1 : i32
    %ls = arith.remui %last, %c2 : i32
    %lq = arith.divui %last, %c2 : i32
    %lp = arith.andi %lq, %c1 : i32
    %parity = arith.xori %lp, %c1 : i32
    tile.mbarrier_wait %e[%ls], %parity : !E
    %r = tile.tmem_load %tmem : !T -> tensor<128x128xf32, #mma>
    tile.tmem_dealloc %tmem : !T
  } producer {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %true = arith.constant true
    scf.for %i = %c0 to %n step %c1 iter_args(%it = %c0) -> (i32) : i32 {
      %s = arith.remui %it, %c2 : i32
      %q = arith.divui %it, %c2 : i32
      %p = arith.andi %q, %c1 : i32
      %w = arith.xori %p, %c1 : i32
      tile.mbarrier_wait %e[%s], %w : !E
      tile.ring_issue %da[%i, %c0] -> %ra[%s] if %true {producer} : !DA, !A
      tile.ring_issue %db[%i, %c0] -> %rb[%s] if %true {producer} : !DB, !B
      %it1 = arith.addi %it, %c1 : i32
      scf.yield %it1 : i32
    }
  }
  return
}
