// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_90a -canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot="arch=sm_90a split-n=false" -canonicalize | FileCheck %s --check-prefix=OFF

// A 64-row attention block on 8 warps: the two warpgroups split N (wgmma's M
// is 64 rows a warpgroup). Both dots read their B in the ring slot, each
// warpgroup its own columns (#tile.mma warpsN = 2): q kᵀ from q staged once,
// the softmax in that encoding (the row max across both warpgroups), and p,
// whose columns the warpgroups hold apart, staged once right after its
// truncation for p·v to read from shared memory.
// CHECK-LABEL: func.func @attention_split_n
// With split-n=false: both dots on mma.sync.
// OFF-LABEL: func.func @attention_split_n
// OFF-NOT: version = 3
// OFF: tile.warp_dot
// CHECK: %[[QV:.*]] = tile.load
// CHECK-NEXT: %[[Q:.*]] = tile.stage %[[QV]] : tensor<64x128xbf16> -> !tile.smem<tensor<64x128xbf16>>
// CHECK: scf.for {{.*}} -> (tensor<64x128xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>)
// CHECK-NOT: tile.convert_layout
// CHECK: %[[S:.*]] = tile.warpgroup_dot %[[Q]], %{{.*}}[%{{.*}}], %{{.*}} : !tile.smem<tensor<64x128xbf16>>, !tile.ring<2, tensor<128x128xbf16>>, tensor<64x128xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>
// CHECK: tile.reduce %{{.*}} {axis = 1 : i32} : tensor<64x128xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>> -> tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 8, warpsN = 2>>>
// CHECK: %[[P:.*]] = arith.truncf %{{.*}} : tensor<64x128xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>> to tensor<64x128xbf16, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>
// CHECK-NEXT: %[[PS:.*]] = tile.stage %[[P]] : tensor<64x128xbf16, #tile.mma<version = 3, numWarps = 8, warpsN = 2>> -> !tile.smem<tensor<64x128xbf16>>
// CHECK: %[[O:.*]] = tile.warpgroup_dot %[[PS]], %{{.*}}[%{{.*}}], %{{.*}} {bMnMajor} : !tile.smem<tensor<64x128xbf16>>, !tile.ring<2, tensor<128x128xbf16>>, tensor<64x128xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>
// CHECK-NEXT: %[[OW:.*]] = tile.warpgroup_dot_wait %[[O]] {pending = 0 : i32}
// CHECK-NOT: tile.convert_layout
// CHECK: scf.yield %[[OW]]
!D = !tile.tensordesc<tensor<128x128xbf16>, swizzle = 128>
!R = !tile.ring<2, tensor<128x128xbf16>>
func.func @attention_split_n(%q: !tile.ptr<bf16>, %kd: !D, %vd: !D, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %true = arith.constant true
  %zs = arith.constant dense<0.0> : tensor<64x128xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x128x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<64x128x!tile.ptr<bf16>>
  %rk = tile.ring_alloc : !R
  %rv = tile.ring_alloc : !R
  tile.ring_issue %kd[%c0, %c0] -> %rk[%c0] if %true : !D, !R
  tile.ring_issue %vd[%c0, %c0] -> %rv[%c0] if %true : !D, !R
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zs) -> (tensor<64x128xf32>) : i32 {
    %slot = arith.remui %i, %c2 : i32
    %half = arith.divui %i, %c2 : i32
    %phase = arith.remui %half, %c2 : i32
    %kb = tile.ring_wait_load %rk[%slot], %phase : !R -> tensor<128x128xbf16>
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
    %vb = tile.ring_wait_load %rv[%slot], %phase : !R -> tensor<128x128xbf16>
    %o = tile.dot %pb, %vb, %acc : tensor<64x128xbf16> * tensor<128x128xbf16> -> tensor<64x128xf32>
    scf.yield %o : tensor<64x128xf32>
  }
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x128x!tile.ptr<f32>>
  tile.store %op, %acc : tensor<64x128x!tile.ptr<f32>>
  return
}

// -----

// Register tiles: a [64, 128] dot on 8 warps is staged on wgmma, each
// warpgroup 64 columns; [64, 64] would leave a warpgroup 32, below the 64
// columns of the staged form's MN-major B, and stays on mma.sync.
// CHECK-LABEL: func.func @staged_split_n
// OFF-LABEL: func.func @staged_split_n
// OFF-NOT: tile.warpgroup_dot
// CHECK-SAME: tile.dots = ["{{[0-9]+}} wgmma staged", "{{[0-9]+}} mma.sync K = 64, N = 64: wgmma here takes K and N multiples of 64, N <= 256 a warpgroup (2 warpgroups split N: 32 columns each)"]
// CHECK: tile.warpgroup_dot_staged %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x64xbf16> * tensor<64x128xbf16> -> tensor<64x128xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>
// CHECK: tile.warp_dot
// CHECK-SAME: -> tensor<64x64xf32, #tile.mma<version = 2, numWarps = 8
func.func @staged_split_n(%x: !tile.ptr<bf16>, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %z = arith.constant dense<0.0> : tensor<64x128xf32>
  %z2 = arith.constant dense<0.0> : tensor<64x64xf32>
  %ap = tile.splat %x : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %a = tile.load %ap : tensor<64x64x!tile.ptr<bf16>>
  %bp = tile.splat %x : !tile.ptr<bf16> -> tensor<64x128x!tile.ptr<bf16>>
  %b = tile.load %bp : tensor<64x128x!tile.ptr<bf16>>
  %d = tile.dot %a, %b, %z : tensor<64x64xbf16> * tensor<64x128xbf16> -> tensor<64x128xf32>
  %e = tile.dot %a, %a, %z2 : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<64x128x!tile.ptr<f32>>
  tile.store %p, %d : tensor<64x128x!tile.ptr<f32>>
  %q = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %q, %e : tensor<64x64x!tile.ptr<f32>>
  return
}
