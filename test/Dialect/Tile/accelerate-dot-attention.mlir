// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_90a -canonicalize | FileCheck %s
// RUN: kiln-opt %s -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_100a -canonicalize | FileCheck %s --check-prefix=SM100

// Attention's inner loop on sm_90a: s = q kᵀ on the staged wgmma, q (loaded
// before the loop) staged once after its load, k every iteration; the row max
// and sum reduce s and p in the mma layout into its slice; m, l, alpha live
// in the slice, m and alpha broadcast back to [64, 64] in the mma layout;
// p = exp2(s c - m) is narrowed to bf16 in place and is the register A of
// p v, whose accumulator (acc alpha) stays in the mma layout. The loop
// carries acc in the mma layout and l, m in the slice: no layout conversion
// in the loop; after it acc / l in the mma layout, converted once for the
// store.
// CHECK-LABEL: func.func @attention
// CHECK: %[[QV:.*]] = tile.load
// CHECK-NEXT: %[[Q:.*]] = tile.stage %[[QV]] : tensor<64x64xbf16> -> !tile.smem<tensor<64x64xbf16>>
// CHECK: %[[LOOP:.*]]:3 = scf.for {{.*}} -> (tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 4>>>, tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 4>>>)
// CHECK-NOT: tile.convert_layout
// CHECK: %[[S:.*]] = tile.warpgroup_dot_staged %[[Q]], %{{.*}}, %{{.*}} : !tile.smem<tensor<64x64xbf16>> * tensor<64x64xbf16> -> tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: tile.reduce %[[S]] {axis = 1 : i32} : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> -> tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 4>>>
// CHECK: arith.maxnumf {{.*}} : tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 4>>>
// CHECK: tile.expand_dims %{{.*}} {axis = 1 : i32} : tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 4>>> -> tensor<64x1xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: tile.broadcast %{{.*}} : tensor<64x1xf32, #tile.mma<version = 3, numWarps = 4>> -> tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: math.exp2 %{{.*}} : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: tile.reduce %{{.*}} {axis = 1 : i32} : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> -> tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 4>>>
// CHECK: %[[P:.*]] = arith.truncf %{{.*}} : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> to tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>
// CHECK: %[[O:.*]] = tile.warpgroup_dot_staged %[[P]], %{{.*}}, %{{.*}} : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>> * tensor<64x64xbf16> -> tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: scf.yield %[[O]], %{{.*}}, %{{.*}} : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 4>>>, tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 4>>>
// CHECK: %[[R:.*]] = arith.divf %[[LOOP]]#0, %{{.*}} : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: %[[B:.*]] = tile.convert_layout %[[R]] : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> -> tensor<64x64xf32>
// CHECK: tile.store %{{.*}}, %[[B]]
// Blackwell (tcgen05 here takes M = 128): both dots on mma.sync, the loop
// in the registers of #tile.mma version 2 as above (warpsN = 1: 16 whole rows
// a warp): q staged once before the loop, the row max and sum in the slice,
// p the next dot's A from registers, no conversion in the loop.
// SM100-LABEL: func.func @attention
// SM100: scf.for {{.*}} -> (tensor<64x64xf32, #tile.mma<version = 2, numWarps = 4>>, tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4>>>, tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4>>>)
// SM100-NOT: tile.convert_layout
// SM100: tile.warp_dot %{{.*}}, %{{.*}}, %{{.*}} : !tile.smem<tensor<64x64xbf16>> * tensor<64x64xbf16> -> tensor<64x64xf32, #tile.mma<version = 2, numWarps = 4>>
// SM100: tile.reduce %{{.*}} {axis = 1 : i32} : tensor<64x64xf32, #tile.mma<version = 2, numWarps = 4>> -> tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4>>>
// SM100: %[[P:.*]] = arith.truncf %{{.*}} : tensor<64x64xf32, #tile.mma<version = 2, numWarps = 4>> to tensor<64x64xbf16, #tile.mma<version = 2, numWarps = 4>>
// SM100: tile.warp_dot %[[P]], %{{.*}}, %{{.*}} : tensor<64x64xbf16, #tile.mma<version = 2, numWarps = 4>> * tensor<64x64xbf16> -> tensor<64x64xf32, #tile.mma<version = 2, numWarps = 4>>
// SM100-NOT: tile.convert_layout
// SM100: scf.yield
// SM100: tile.convert_layout
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

// A score summed over the cluster (MLA's two value parts, each scoring its own
// columns) stays in the mma layout: tile.cluster_sum adds the elements each
// thread holds, in any layout, so exp2 of the sum is narrowed in place and is
// the register A of p v; no layout conversion in the loop.
// CHECK-LABEL: func.func @cluster_scores
// CHECK: scf.for
// CHECK-NOT: tile.convert_layout
// CHECK: %[[S:.*]] = tile.warpgroup_dot_staged
// CHECK: %[[T:.*]] = tile.cluster_sum %[[S]] : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: %[[P:.*]] = math.exp2 %[[T]] : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: arith.truncf %[[P]] : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>> to tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 4>>
// CHECK-NOT: tile.convert_layout
// CHECK: scf.yield
// SM100-LABEL: func.func @cluster_scores
// SM100: scf.for
// SM100-NOT: tile.convert_layout
// SM100: %[[S:.*]] = tile.warp_dot
// SM100: tile.cluster_sum %[[S]] : tensor<64x64xf32, #tile.mma<version = 2, numWarps = 4>>
// SM100-NOT: tile.convert_layout
// SM100: scf.yield
func.func @cluster_scores(%q: !tile.ptr<bf16>, %k: !tile.ptr<bf16>, %v: !tile.ptr<bf16>, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32, tile.cluster_dims = array<i32: 1, 2, 1>} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<64x64x!tile.ptr<bf16>>
  %kp = tile.splat %k : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %vp = tile.splat %v : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x64xf32>) : i32 {
    %kv = tile.load %kp : tensor<64x64x!tile.ptr<bf16>>
    %vv = tile.load %vp : tensor<64x64x!tile.ptr<bf16>>
    %s = tile.dot %qv, %kv, %zero : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %t = tile.cluster_sum %s : tensor<64x64xf32>
    %p = math.exp2 %t : tensor<64x64xf32>
    %pb = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xbf16>
    %o = tile.dot %pb, %vv, %acc : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %o : tensor<64x64xf32>
  }
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op, %acc : tensor<64x64x!tile.ptr<f32>>
  return
}
