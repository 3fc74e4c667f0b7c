// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefix=CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefix=CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefix=CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// The K loop of a pipelined FP8 GEMM whose dot promotes its accumulator every
// 32 elements of K (maxNumImpreciseAcc = 32 of the 128 of each box; one
// warpgroup, a [64, 64] block: 32 accumulator registers per thread).
// sm_90a: in the loop, four chunks of one k32 wgmma each, started from zero
// (scale-d 0 through the predicate), each committed, waited for with
// wait_group 0 and added to the accumulator with 32 f32 adds (add.rn: never
// contracted); no wgmma group stays in flight across iterations
// (no wait_group 1).
// CHECK-SM90-LABEL: .entry fp8_promoted(
// CHECK-SM90-NOT: wgmma.wait_group.sync.aligned 1;
// CHECK-SM90: wgmma.fence.sync.aligned;
// CHECK-SM90: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3
// CHECK-SM90-NOT: wgmma.mma_async
// CHECK-SM90: wgmma.commit_group.sync.aligned;
// CHECK-SM90: wgmma.wait_group.sync.aligned 0;
// CHECK-SM90-COUNT-32: add.rn.f32
// CHECK-SM90: wgmma.fence.sync.aligned;
// CHECK-SM90: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3
// CHECK-SM90-NOT: wgmma.mma_async
// CHECK-SM90: wgmma.commit_group.sync.aligned;
// CHECK-SM90: wgmma.wait_group.sync.aligned 0;
// CHECK-SM90-COUNT-32: add.rn.f32
// CHECK-SM90: wgmma.fence.sync.aligned;
// CHECK-SM90: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3
// CHECK-SM90-NOT: wgmma.mma_async
// CHECK-SM90: wgmma.commit_group.sync.aligned;
// CHECK-SM90: wgmma.wait_group.sync.aligned 0;
// CHECK-SM90-COUNT-32: add.rn.f32
// CHECK-SM90: wgmma.fence.sync.aligned;
// CHECK-SM90: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3
// CHECK-SM90-NOT: wgmma.mma_async
// CHECK-SM90: wgmma.commit_group.sync.aligned;
// CHECK-SM90: wgmma.wait_group.sync.aligned 0;
// CHECK-SM90-COUNT-32: add.rn.f32
// CHECK-SM90-NOT: wgmma.mma_async
// CHECK-SM90-NOT: wgmma.wait_group.sync.aligned 1;
// CHECK-SM90: ret;
// sm_100a/sm_103a: FP8 stays on mma.sync with the operands widened to bf16
// (f32 accumulation per k16 step): the bound has nothing to do.
// CHECK-SM100-LABEL: .entry fp8_promoted(
// CHECK-SM100-NOT: wgmma
// CHECK-SM100-NOT: tcgen05
// CHECK-SM100: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-SM100-NOT: wgmma
// CHECK-SM100: ret;
!A = !tile.ring<3, tensor<64x128xf8E4M3FN>>
!B = !tile.ring<3, tensor<64x128xf8E4M3FN>>
!DA = !tile.tensordesc<tensor<64x128xf8E4M3FN>, swizzle = 128>
!DB = !tile.tensordesc<tensor<64x128xf8E4M3FN>, swizzle = 128>
func.func @fp8_promoted(%da: !DA, %db: !DB, %k: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %c128 = arith.constant 128 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %first = arith.cmpi slt, %c0, %k : i32
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %first : !DA, !A
  tile.ring_issue %db[%c0, %c0] -> %rb[%c0] if %first : !DB, !B
  %acc, %n = scf.for %kk = %c0 to %k step %c128 iter_args(%acc = %zero, %it = %c0) -> (tensor<64x64xf32>, i32) : i32 {
    %slot = arith.remui %it, %c3 : i32
    %fills = arith.divui %it, %c3 : i32
    %phase = arith.andi %fills, %c1 : i32
    %knext = arith.addi %kk, %c128 : i32
    %more = arith.cmpi slt, %knext, %k : i32
    %it1 = arith.addi %it, %c1 : i32
    %nslot = arith.remui %it1, %c3 : i32
    %a = tile.ring_wait_load %ra[%slot], %phase : !A -> tensor<64x128xf8E4M3FN>
    tile.ring_issue %da[%c0, %knext] -> %ra[%nslot] if %more : !DA, !A
    %b = tile.ring_wait_load %rb[%slot], %phase : !B -> tensor<64x128xf8E4M3FN>
    tile.ring_issue %db[%c0, %knext] -> %rb[%nslot] if %more : !DB, !B
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<64x128xf8E4M3FN> -> tensor<128x64xf8E4M3FN>
    %d = tile.dot %a, %bt, %acc {maxNumImpreciseAcc = 32 : i32} : tensor<64x128xf8E4M3FN> * tensor<128x64xf8E4M3FN> -> tensor<64x64xf32>
    %next = arith.addi %it, %c1 : i32
    scf.yield %d, %next : tensor<64x64xf32>, i32
  }
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %p, %acc : tensor<64x64x!tile.ptr<f32>>
  return
}
