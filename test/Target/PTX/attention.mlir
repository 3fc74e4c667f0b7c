// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.ptx && %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// Attention's inner loop (accelerate-dot-attention.mlir) to PTX on sm_90a:
// s = q kᵀ on four wgmmas with both operands staged, the row max and sum
// of s and p in registers (within the thread, then shfl.sync.bfly 1 and 2
// across the quad), and p v on four wgmmas with p, packed into bf16x2
// registers, as A: nothing is read back from shared memory between the two
// dots (no layout conversion in the loop).
// CHECK-LABEL: .entry attention(
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1, 0, 1;
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK-NOT: ld.shared
// CHECK: shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK-NOT: ld.shared
// CHECK: shfl.sync.bfly.b32 {{.*}}, 2, 31, -1;
// CHECK-NOT: ld.shared
// CHECK: cvt.rn.bf16x2.f32
// CHECK-NOT: ld.shared
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
// CHECK-COUNT-3: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
// CHECK: wgmma.wait_group.sync.aligned 0;
func.func @attention(%q: !tile.ptr<bf16>, %k: !tile.ptr<bf16>, %v: !tile.ptr<bf16>, %n: i32, %scale: f32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %zrow = arith.constant dense<0.0> : tensor<64xf32>
  %ninf = arith.constant dense<0xFF800000> : tensor<64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<64x64x!tile.ptr<bf16>>
  %kp = tile.splat %k : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %vp = tile.splat %v : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %acc, %l, %m = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero, %l = %zrow, %m = %ninf) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) : i32 {
    %kv = tile.load %kp : tensor<64x64x!tile.ptr<bf16>>
    %vv = tile.load %vp : tensor<64x64x!tile.ptr<bf16>>
    %s = tile.dot %qv, %kv, %zero : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %rmax = tile.reduce %s {axis = 1 : i32} : tensor<64x64xf32> -> tensor<64xf32> {
    ^bb0(%x: f32, %y: f32):
      %z = arith.maxnumf %x, %y : f32
      tile.reduce.return %z : f32
    }
    %sc = tile.splat %scale : f32 -> tensor<64xf32>
    %rs = arith.mulf %rmax, %sc : tensor<64xf32>
    %mn = arith.maxnumf %m, %rs : tensor<64xf32>
    %dm = arith.subf %m, %mn : tensor<64xf32>
    %alpha = math.exp2 %dm : tensor<64xf32>
    %sc2 = tile.splat %scale : f32 -> tensor<64x64xf32>
    %ss = arith.mulf %s, %sc2 : tensor<64x64xf32>
    %me = tile.expand_dims %mn {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %mb = tile.broadcast %me : tensor<64x1xf32> -> tensor<64x64xf32>
    %x = arith.subf %ss, %mb : tensor<64x64xf32>
    %p = math.exp2 %x : tensor<64x64xf32>
    %la = arith.mulf %l, %alpha : tensor<64xf32>
    %rsum = tile.reduce %p {axis = 1 : i32} : tensor<64x64xf32> -> tensor<64xf32> {
    ^bb0(%x2: f32, %y2: f32):
      %z2 = arith.addf %x2, %y2 : f32
      tile.reduce.return %z2 : f32
    }
    %ln = arith.addf %la, %rsum : tensor<64xf32>
    %ae = tile.expand_dims %alpha {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %ab = tile.broadcast %ae : tensor<64x1xf32> -> tensor<64x64xf32>
    %as = arith.mulf %acc, %ab : tensor<64x64xf32>
    %pb = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xbf16>
    %o = tile.dot %pb, %vv, %as : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %o, %ln, %mn : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
  }
  %le = tile.expand_dims %l {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
  %lb = tile.broadcast %le : tensor<64x1xf32> -> tensor<64x64xf32>
  %res = arith.divf %acc, %lb : tensor<64x64xf32>
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op, %res : tensor<64x64x!tile.ptr<f32>>
  return
}
