// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.ptx && %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_90a --split-n=false | FileCheck %s --check-prefix=OFF

// A 64-row attention block on 8 warps (test/Dialect/Tile/accelerate-dot-split-n.mlir):
// the two warpgroups split N, each issuing the wgmmas of its own 64 columns
// (m64n64k16, 8 k16 steps a dot): B from the warpgroup's columns on, the
// K-major [N = 128, K = 128] k box at + (tid / 128) * 64 rows * 128 bytes
// (shl 13), the MN-major [K = 128, N = 128] v box at + (tid / 128) * one
// 64-column chunk of K * 128 bytes (shl 14); A (q, p) the same rows for both.
// p is staged each iteration (st.shared, the async proxy fence, bar.sync)
// before p·v reads it.
// CHECK-LABEL: .entry split_n(
// CHECK: shr.u32 %[[WG:r[0-9]+]], %r{{[0-9]+}}, 7;
// CHECK-NEXT: shl.b32 %{{r[0-9]+}}, %[[WG]], 13;
// CHECK: shl.b32 %{{r[0-9]+}}, %[[WG]], 14;
// CHECK-COUNT-16: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK-NOT: wgmma.mma_async
// With kiln-tile-accelerate-dot's split-n off (KILN_SPLIT_N=0): mma.sync.
// OFF-NOT: wgmma.mma_async
// OFF: mma.sync.aligned.m16n8k16
!D = !tile.tensordesc<tensor<128x128xbf16>, swizzle = 128>
func.func @split_n(%q: !tile.ptr<bf16>, %kd: !D, %vd: !D, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c128 = arith.constant 128 : i32
  %zs = arith.constant dense<0.0> : tensor<64x128xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x128x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<64x128x!tile.ptr<bf16>>
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zs) -> (tensor<64x128xf32>) : i32 {
    %row = arith.muli %i, %c128 : i32
    %kb = tile.desc_load %kd[%row, %c0] : !D -> tensor<128x128xbf16>
    %kt = tile.trans %kb {order = array<i64: 1, 0>} : tensor<128x128xbf16> -> tensor<128x128xbf16>
    %s = tile.dot %qv, %kt, %zs : tensor<64x128xbf16> * tensor<128x128xbf16> -> tensor<64x128xf32>
    %m = tile.reduce %s {axis = 1 : i32} : tensor<64x128xf32> -> tensor<64xf32> {
    ^bb0(%x: f32, %y: f32):
      %z = arith.maxnumf %x, %y : f32
      tile.reduce.return %z : f32
    }
    %me = tile.expand_dims %m {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %mb = tile.broadcast %me : tensor<64x1xf32> -> tensor<64x128xf32>
    %d = arith.subf %s, %mb : tensor<64x128xf32>
    %p = math.exp2 %d : tensor<64x128xf32>
    %pb = arith.truncf %p : tensor<64x128xf32> to tensor<64x128xbf16>
    %vb = tile.desc_load %vd[%row, %c0] : !D -> tensor<128x128xbf16>
    %o = tile.dot %pb, %vb, %acc : tensor<64x128xbf16> * tensor<128x128xbf16> -> tensor<64x128xf32>
    scf.yield %o : tensor<64x128xf32>
  } {tile.num_stages = 2 : i32}
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x128x!tile.ptr<f32>>
  tile.store %op, %acc : tensor<64x128x!tile.ptr<f32>>
  return
}
