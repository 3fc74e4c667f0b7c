// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// The K loop of a pipelined 128x256x64 bf16 GEMM in the Tensor Memory form
// that kiln-tile-accelerate-dot makes on sm_100a/sm_103a (8 warps, 3 stages;
// tcgen05 does not exist on sm_90a). The loop carries the count n of dots
// issued: dot n commits to barrier n mod 2 and starts from zero when n = 0;
// then the dot n - 1 is waited for (barrier (n + 1) mod 2, parity
// ((n + 1) / 2 mod 2) xor 1: at n = 0 a fresh barrier's "previous" phase,
// complete at once) before its slots are refilled. After the loop the last
// dot is waited for the same way, the accumulator read into registers
// (four 32-column tcgen05.ld per thread: warpgroup g reads columns
// 128 g .. 128 g + 127), the zero-trip case selected away, TMEM freed,
// and the tile narrowed to bf16 and stored through TMA.
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry tc_gemm(
// CHECK: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [__kiln_dynamic_smem+{{[0-9]+}}], %r{{[0-9]+}};
// CHECK: tcgen05.fence::before_thread_sync;
// CHECK-NEXT: bar.sync 0;
// CHECK-NEXT: tcgen05.fence::after_thread_sync;
// CHECK: ld.shared.b32 %r[[TMEM:[0-9]+]], [__kiln_dynamic_smem+{{[0-9]+}}];
// CHECK: $L__BB0_[[LOOP:[0-9]+]]:
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: elect.sync
// CHECK: tcgen05.fence::after_thread_sync;
// CHECK: mov.b32 %r[[IDESC:[0-9]+]], 138413200;
// CHECK: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r[[TMEM]]], %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r[[IDESC]], %p{{[0-9]+}};
// CHECK-COUNT-3: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r[[TMEM]]], %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r[[IDESC]], %p{{[0-9]+}};
// CHECK-NEXT: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%rd{{[0-9]+}}+{{[0-9]+}}];
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK: bra.uni $L__BB0_[[LOOP]];
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: tcgen05.fence::after_thread_sync;
// CHECK-COUNT-4: tcgen05.ld.sync.aligned.32x32b.x32.b32
// CHECK-NOT: tcgen05.ld
// CHECK: tcgen05.wait::ld.sync.aligned;
// CHECK: tcgen05.fence::before_thread_sync;
// CHECK-NEXT: bar.sync 0;
// CHECK: tcgen05.fence::after_thread_sync;
// CHECK: tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r[[TMEM]], %r{{[0-9]+}};
// CHECK-NEXT: tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
// CHECK: cvt.rn.bf16
// CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
!A = !tile.ring<3, tensor<128x64xbf16>>
!B = !tile.ring<3, tensor<256x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<256x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<128x256xbf16>>
!T = !tile.tmem<tensor<128x256xf32>>
!M = !tile.mbarriers<2>
#mma = #tile.mma<version = 5, numWarps = 8>
func.func @tc_gemm(%da: !DA, %db: !DB, %dc: !DC, %m: i32, %n: i32, %k: i32) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %true = arith.constant true
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %k1 = arith.addi %c0, %c64 : i32
  %ok1 = arith.cmpi slt, %k1, %k : i32
  %ok0 = arith.cmpi slt, %c0, %k : i32
  tile.ring_issue %da[%m, %c0] -> %ra[%c0] if %ok0 : !DA, !A
  tile.ring_issue %db[%n, %c0] -> %rb[%c0] if %ok0 : !DB, !B
  tile.ring_issue %da[%m, %k1] -> %ra[%c1] if %ok1 : !DA, !A
  tile.ring_issue %db[%n, %k1] -> %rb[%c1] if %ok1 : !DB, !B
  %done = tile.mbarrier_alloc : !M
  %acc = tile.tmem_alloc : !T
  %dots, %its = scf.for %kk = %c0 to %k step %c64 iter_args(%count = %c0, %it = %c0) -> (i32, i32) : i32 {
    %slot = arith.remui %it, %c3 : i32
    %div = arith.divui %it, %c3 : i32
    %phase = arith.andi %div, %c1 : i32
    tile.ring_wait %ra[%slot], %phase : !A
    tile.ring_wait %rb[%slot], %phase : !B
    %accumulate = arith.cmpi ne, %count, %c0 : i32
    %bar = arith.andi %count, %c1 : i32
    tile.tcgen05_dot %ra[%slot], %rb[%slot], %acc, %accumulate -> %done[%bar] : !A, !B, !T, !M
    %next = arith.addi %count, %c1 : i32
    %prev = arith.andi %next, %c1 : i32
    %half = arith.shrui %next, %c1 : i32
    %hbit = arith.andi %half, %c1 : i32
    %parity = arith.xori %hbit, %c1 : i32
    tile.mbarrier_wait %done[%prev], %parity : !M
    %ahead = arith.addi %kk, %c128 : i32
    %ok = arith.cmpi slt, %ahead, %k : i32
    %it2 = arith.addi %it, %c2 : i32
    %nslot = arith.remui %it2, %c3 : i32
    tile.ring_issue %da[%m, %ahead] -> %ra[%nslot] if %ok : !DA, !A
    tile.ring_issue %db[%n, %ahead] -> %rb[%nslot] if %ok : !DB, !B
    %itn = arith.addi %it, %c1 : i32
    scf.yield %next, %itn : i32, i32
  }
  %after = arith.addi %dots, %c1 : i32
  %last = arith.andi %after, %c1 : i32
  %lhalf = arith.shrui %after, %c1 : i32
  %lbit = arith.andi %lhalf, %c1 : i32
  %lparity = arith.xori %lbit, %c1 : i32
  tile.mbarrier_wait %done[%last], %lparity : !M
  %r = tile.tmem_load %acc : !T -> tensor<128x256xf32, #mma>
  %ran = arith.cmpi ne, %dots, %c0 : i32
  %zero = arith.constant dense<0.0> : tensor<128x256xf32, #mma>
  %d = arith.select %ran, %r, %zero : tensor<128x256xf32, #mma>
  tile.tmem_dealloc %acc : !T
  %h = arith.truncf %d : tensor<128x256xf32, #mma> to tensor<128x256xbf16, #mma>
  tile.desc_store %dc[%m, %n], %h : !DC, tensor<128x256xbf16, #mma>
  return
}
