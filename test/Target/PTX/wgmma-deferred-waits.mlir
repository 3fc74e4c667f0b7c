// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.ptx && %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// MLA's key loop in small, through the whole pipeline (rings by
// kiln-tile-pipeline-loads, kiln-tile-verify-async on the result): the score
// of two boxes, one dot into the other's accumulator, issues back to back
// (two groups of 4 m64n64k16, no wait between) and is waited for once; the
// two value dots (p from registers) issue back to back, the first waited for
// with the second in flight (wait_group 1), then the second (wait_group 0).
// CHECK-LABEL: .entry deferred_waits(
// CHECK: wgmma.fence.sync.aligned;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK-NOT: wgmma.wait_group
// CHECK: wgmma.fence.sync.aligned;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK-NOT: wgmma.mma_async
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK-NOT: wgmma.mma_async
// CHECK: ex2.approx
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK-NOT: wgmma.wait_group
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK-NOT: wgmma.mma_async
// CHECK: wgmma.wait_group.sync.aligned 1;
// CHECK-NOT: wgmma.mma_async
// CHECK: wgmma.wait_group.sync.aligned 0;
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
func.func @deferred_waits(%q: !tile.ptr<bf16>, %kd: !D, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %zs = arith.constant dense<0.0> : tensor<64x64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %q0 = tile.load %qp : tensor<64x64x!tile.ptr<bf16>>
  %q1p = tile.addptr %q, %c64 : !tile.ptr<bf16>, i32
  %qp1 = tile.splat %q1p : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %q1 = tile.load %qp1 : tensor<64x64x!tile.ptr<bf16>>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a0 = %zs, %a1 = %zs) -> (tensor<64x64xf32>, tensor<64x64xf32>) : i32 {
    %row = arith.muli %i, %c64 : i32
    %k0 = tile.desc_load %kd[%row, %c0] : !D -> tensor<64x64xbf16>
    %k1 = tile.desc_load %kd[%row, %c64] : !D -> tensor<64x64xbf16>
    %k0t = tile.trans %k0 {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %k1t = tile.trans %k1 {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s0 = tile.dot %q0, %k0t, %zs : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %s = tile.dot %q1, %k1t, %s0 : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %m = tile.reduce %s {axis = 1 : i32} : tensor<64x64xf32> -> tensor<64xf32> {
    ^bb0(%x: f32, %y: f32):
      %z = arith.maxnumf %x, %y : f32
      tile.reduce.return %z : f32
    }
    %me = tile.expand_dims %m {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %mb = tile.broadcast %me : tensor<64x1xf32> -> tensor<64x64xf32>
    %d = arith.subf %s, %mb : tensor<64x64xf32>
    %p = math.exp2 %d : tensor<64x64xf32>
    %pb = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xbf16>
    %o0 = tile.dot %pb, %k0, %a0 : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %o1 = tile.dot %pb, %k1, %a1 : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %o0, %o1 : tensor<64x64xf32>, tensor<64x64xf32>
  } {tile.num_stages = 2 : i32}
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op, %r#0 : tensor<64x64x!tile.ptr<f32>>
  %out1 = tile.addptr %out, %c64 : !tile.ptr<f32>, i32
  %op1 = tile.splat %out1 : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op1, %r#1 : tensor<64x64x!tile.ptr<f32>>
  return
}
