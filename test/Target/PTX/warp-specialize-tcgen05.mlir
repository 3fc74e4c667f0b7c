// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a -v %t.sm_100a.ptx -o %t.sm_100a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a -v %t.sm_103a.ptx -o %t.sm_103a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// The warp-specialized TMA GEMM of warp-specialize.mlir on sm_100a/sm_103a:
// 8 consumer warps and one producer warpgroup (384 threads), setmaxnreg as
// on sm_90a. Every barrier expects one arrival: the rings' FULL ones (the
// producer's arrive.expect_tx) and the EMPTY ones (the tcgen05.commit of
// the MMAs that read the slot; no per-warp arrival anywhere). The consumers
// allocate Tensor Memory under their named barrier 1 of 256 threads; in the
// K loop warp 0 alone (tid <= 31) waits for both FULL slots, then its
// elected lane issues the 4 k16 tcgen05.mma from the slots and commits them
// to the slot's EMPTY barrier. After the loop the named barrier (warp 0 is
// past its last wait), every consumer's wait for the last commit, the
// tcgen05.ld of the accumulator (4 x 32 columns), TMEM freed, the TMA store.
// The producer's warp waits for each EMPTY slot and issues both copies with
// no CTA barrier, as on sm_90a. ptxas starts the kernel with 168 registers
// a thread (the pool for 256 x 232 + 128 x 40) and spills nothing.
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry gemm(
// CHECK: .reqntid 384, 1, 1
// CHECK-NEXT: .minnctapersm 1
// CHECK-COUNT-9: mbarrier.init.shared.b64 [%r{{[0-9]+}}], 1;
// CHECK-NOT: mbarrier.init
// CHECK: fence.mbarrier_init.release.cluster;
// CHECK-NEXT: bar.sync 0;
// CHECK: setp.gt.u32 %p{{[0-9]+}}, %r{{[0-9]+}}, 255;
// CHECK: setmaxnreg.inc.sync.aligned.u32 232;
// CHECK-NEXT: setp.gt.u32 %p[[NOTWARP0:[0-9]+]], %r{{[0-9]+}}, 31;
// CHECK: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
// CHECK: tcgen05.fence::before_thread_sync;
// CHECK-NEXT: bar.sync 1, 256;
// CHECK-NEXT: tcgen05.fence::after_thread_sync;
// CHECK: $L__BB0_[[LOOP:[0-9]+]]:
// CHECK: @%p[[NOTWARP0]] bra $L__BB0_[[SKIP:[0-9]+]];
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: $L__BB0_[[SKIP]]:
// CHECK-NEXT: elect.sync
// CHECK-NOT: mbarrier.arrive
// CHECK: tcgen05.fence::after_thread_sync;
// CHECK-COUNT-4: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard
// CHECK-NEXT: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%rd{{[0-9]+}}+{{[0-9]+}}];
// CHECK: setmaxnreg.dec.sync.aligned.u32 40;
// CHECK: setp.gt.u32 %p{{[0-9]+}}, %r{{[0-9]+}}, 287;
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK-NOT: bar.sync
// CHECK: elect.sync
// CHECK: mbarrier.arrive.expect_tx.shared.b64
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK-NOT: bar.sync
// CHECK: elect.sync
// CHECK: mbarrier.arrive.expect_tx.shared.b64
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK: bar.sync 1, 256;
// CHECK-NOT: bar.sync
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: tcgen05.fence::after_thread_sync;
// CHECK-COUNT-4: tcgen05.ld.sync.aligned.32x32b.x32.b32
// CHECK-NOT: tcgen05.ld
// CHECK: tcgen05.wait::ld.sync.aligned;
// CHECK: tcgen05.fence::before_thread_sync;
// CHECK-NEXT: bar.sync 1, 256;
// CHECK: tcgen05.dealloc.cta_group::1.sync.aligned.b32
// CHECK-NEXT: tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
// CHECK: cvt.rn.bf16
// CHECK: bar.sync 1, 256;
// CHECK: fence.proxy.async.shared::cta;
// CHECK-NEXT: bar.sync 1, 256;
// CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
// CHECK-NOT: bar.sync 0;
// CHECK-NOT: mbarrier.arrive.shared
// CHECK: ret;
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Used 168 registers
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<256x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<128x256xbf16>>
func.func @gemm(%da: !DA, %db: !DB, %dc: !DC, %K: i32) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %pid = tile.program_id x : i32
  %c128 = arith.constant 128 : i32
  %c256 = arith.constant 256 : i32
  %row = arith.muli %pid, %c128 : i32
  %col = arith.muli %pid, %c256 : i32
  %cst = arith.constant 0.000000e+00 : f32
  %zero = tile.splat %cst : f32 -> tensor<128x256xf32>
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%a = %zero) -> (tensor<128x256xf32>) : i32 {
    %ta = tile.desc_load %da[%row, %k] : !DA -> tensor<128x64xbf16>
    %tb = tile.desc_load %db[%col, %k] : !DB -> tensor<256x64xbf16>
    %bt = tile.trans %tb {order = array<i64: 1, 0>} : tensor<256x64xbf16> -> tensor<64x256xbf16>
    %d = tile.dot %ta, %bt, %a : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  } {tile.num_stages = 3 : i32, tile.warp_specialize}
  %h = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.desc_store %dc[%row, %col], %h : !DC, tensor<128x256xbf16>
  return
}
