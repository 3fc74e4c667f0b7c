// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a -v %t.sm_90a.ptx -o %t.sm_90a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// A TMA GEMM whose K loop is warp-specialized, through kiln-tile-to-llvm on
// sm_90a: 8 consumer warps and one producer warpgroup (384 threads). Every
// thread initializes the barriers (the rings' FULL barriers of one arrival,
// the EMPTY ones of 8, one a consumer warp) before the split. The consumers take 232 registers,
// wait for full slots, run the wgmmas from the slots and release the previous
// slot after wgmma.wait_group 1; their epilogue synchronizes on the named
// barrier 1 of 256 threads. The producer warpgroup drops to 40 registers; one
// warp waits for each empty slot and an elected lane arms the FULL barrier
// and issues both TMA copies. ptxas starts the kernel with the 168 registers
// a thread that 384 threads allow, the pool the setmaxnreg moves use.
// CHECK-LABEL: .entry gemm(
// CHECK: .reqntid 384, 1, 1
// CHECK-NEXT: .minnctapersm 1
// CHECK-COUNT-6: mbarrier.init.shared.b64 [%r{{[0-9]+}}], 1;
// CHECK-COUNT-3: mbarrier.init.shared.b64 [%r{{[0-9]+}}], 8;
// CHECK: fence.mbarrier_init.release.cluster;
// CHECK-NEXT: bar.sync 0;
// CHECK: setp.gt.u32 %p{{[0-9]+}}, %r{{[0-9]+}}, 255;
// CHECK: setmaxnreg.inc.sync.aligned.u32 232;
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: wgmma.fence.sync.aligned;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK: wgmma.wait_group.sync.aligned 1;
// CHECK: bar.warp.sync -1;
// CHECK: mbarrier.arrive.shared.b64
// CHECK: setmaxnreg.dec.sync.aligned.u32 40;
// CHECK: setp.gt.u32 %p{{[0-9]+}}, %r{{[0-9]+}}, 287;
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK-NOT: bar.sync
// CHECK: elect.sync
// CHECK: mbarrier.arrive.expect_tx.shared.b64 %rd{{[0-9]+}}, [%rd{{[0-9]+}}], %r{{[0-9]+}};
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK-NOT: bar.sync
// CHECK: elect.sync
// CHECK: mbarrier.arrive.expect_tx.shared.b64
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK: bar.sync 1, 256;
// CHECK: fence.proxy.async.shared::cta;
// CHECK-NEXT: bar.sync 1, 256;
// CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
// CHECK-NOT: bar.sync 0;
// CHECK: ret;
// PTXAS: Used 168 registers
// (The same kernel on sm_100a/sm_103a: warp-specialize-tcgen05.mlir.)
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
