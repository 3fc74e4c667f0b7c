// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_90a -canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_100a -canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_103a -canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot -canonicalize | FileCheck %s --check-prefix=NOARCH

// The dots that neither wgmma nor tcgen05 takes become tile.warp_dot
// (mma.sync), on every arch and on none: the accumulator in the registers of
// #tile.mma version 2, carried across its loop.

// A K loop of M = 16 rows (gemm_collectives' cells): `x @ w.T` with the
// transpose folded into the dot (bKMajor: the [32, 128] tile itself), the
// accumulator carried in #tile.mma<version = 2, numWarps = 4, warpsN = 4>
// (one 16-row block, each warp one 8-column n-tile), no conversion in the
// loop, one after it. The reason stays in the kernel's record.
// CHECK-LABEL: func.func @k_loop
// CHECK-SAME: tile.dots = ["{{[0-9]+}} mma.sync
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
// CHECK: %[[LOOP:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>)
// CHECK-NOT: tile.convert_layout
// CHECK-NOT: tile.trans
// CHECK: %[[D:.*]] = tile.warp_dot %{{.*}}, %{{.*}}, %[[ACC]] {bKMajor} : tensor<16x128xbf16> * tensor<32x128xbf16> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
// CHECK: scf.yield %[[D]]
// CHECK: tile.convert_layout %[[LOOP]] : tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>> -> tensor<16x32xf32>
// NOARCH-LABEL: func.func @k_loop
// NOARCH-SAME: tile.dots = ["{{[0-9]+}} mma.sync the target (none) has neither wgmma nor tcgen05"]
// NOARCH: tile.warp_dot %{{.*}}, %{{.*}}, %{{.*}} {bKMajor} : tensor<16x128xbf16> * tensor<32x128xbf16> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
func.func @k_loop(%x: !tile.ptr<bf16>, %w: !tile.ptr<bf16>, %y: !tile.ptr<f32>, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<16x32xf32>
  %xp = tile.splat %x : !tile.ptr<bf16> -> tensor<16x128x!tile.ptr<bf16>>
  %wp = tile.splat %w : !tile.ptr<bf16> -> tensor<32x128x!tile.ptr<bf16>>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<16x32xf32>) : i32 {
    %a = tile.load %xp : tensor<16x128x!tile.ptr<bf16>>
    %b = tile.load %wp : tensor<32x128x!tile.ptr<bf16>>
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<32x128xbf16> -> tensor<128x32xbf16>
    %d = tile.dot %a, %bt, %acc : tensor<16x128xbf16> * tensor<128x32xbf16> -> tensor<16x32xf32>
    scf.yield %d : tensor<16x32xf32>
  }
  %yp = tile.splat %y : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  tile.store %yp, %r : tensor<16x32x!tile.ptr<f32>>
  return
}

// -----

// The warp tiling balances the 16 x 8 tiles where the result is not chained:
// 32 x 32 on 4 warps is 2 x 2 (warpsN = 2), 1 x 64 (a GEMV row) 1 x 4 with
// every warp's rows wrapping onto row 0, and a 1-warp kernel's 16 x 16 is the
// warp's alone. FP8 operands are widened to bf16 first.
// CHECK-LABEL: func.func @tilings
// CHECK: tile.warp_dot {{.*}} -> tensor<32x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 2>>
// CHECK: tile.warp_dot {{.*}} -> tensor<1x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
// CHECK: arith.extf %{{.*}} : tensor<32x32xf8E4M3FN> to tensor<32x32xbf16>
// CHECK: tile.warp_dot {{.*}} : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 2>>
func.func @tilings(%x: !tile.ptr<bf16>, %f: !tile.ptr<f8E4M3FN>, %y: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %p = tile.splat %x : !tile.ptr<bf16> -> tensor<32x32x!tile.ptr<bf16>>
  %a = tile.load %p : tensor<32x32x!tile.ptr<bf16>>
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %d = tile.dot %a, %a, %zero : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
  %yp = tile.splat %y : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  tile.store %yp, %d : tensor<32x32x!tile.ptr<f32>>
  %rp = tile.splat %x : !tile.ptr<bf16> -> tensor<1x32x!tile.ptr<bf16>>
  %row = tile.load %rp : tensor<1x32x!tile.ptr<bf16>>
  %wp = tile.splat %x : !tile.ptr<bf16> -> tensor<32x64x!tile.ptr<bf16>>
  %wt = tile.load %wp : tensor<32x64x!tile.ptr<bf16>>
  %z1 = arith.constant dense<0.0> : tensor<1x64xf32>
  %g = tile.dot %row, %wt, %z1 : tensor<1x32xbf16> * tensor<32x64xbf16> -> tensor<1x64xf32>
  %gp = tile.splat %y : !tile.ptr<f32> -> tensor<1x64x!tile.ptr<f32>>
  tile.store %gp, %g : tensor<1x64x!tile.ptr<f32>>
  %fp = tile.splat %f : !tile.ptr<f8E4M3FN> -> tensor<32x32x!tile.ptr<f8E4M3FN>>
  %e = tile.load %fp : tensor<32x32x!tile.ptr<f8E4M3FN>>
  %h = tile.dot %e, %e, %zero : tensor<32x32xf8E4M3FN> * tensor<32x32xf8E4M3FN> -> tensor<32x32xf32>
  tile.store %yp, %h : tensor<32x32x!tile.ptr<f32>>
  return
}

// -----

// CHECK-LABEL: func.func @one_warp
// CHECK: tile.warp_dot {{.*}} -> tensor<16x16xf32, #tile.mma<version = 2, numWarps = 1>>
func.func @one_warp(%x: !tile.ptr<bf16>, %y: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %p = tile.splat %x : !tile.ptr<bf16> -> tensor<16x16x!tile.ptr<bf16>>
  %a = tile.load %p : tensor<16x16x!tile.ptr<bf16>>
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  %d = tile.dot %a, %a, %zero : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  %yp = tile.splat %y : !tile.ptr<f32> -> tensor<16x16x!tile.ptr<f32>>
  tile.store %yp, %d : tensor<16x16x!tile.ptr<f32>>
  return
}

// -----

// A result that feeds a row reduction puts the warps along M first: 32 rows
// on 4 warps is 2 x 2 (16 rows a warp, warpsN = 2), and 64 rows (K = 32 keeps
// it off wgmma) 4 x 1; either way the max runs on the accumulator's registers
// into its slice (across the warps of a row for warpsN = 2), no conversion.
// CHECK-LABEL: func.func @rows
// CHECK: %[[S:.*]] = tile.warp_dot {{.*}} -> tensor<32x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 2>>
// CHECK-NEXT: tile.reduce %[[S]] {axis = 1 : i32} : tensor<32x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 2>> -> tensor<32xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4, warpsN = 2>>>
// CHECK: %[[T:.*]] = tile.warp_dot {{.*}} -> tensor<64x64xf32, #tile.mma<version = 2, numWarps = 4>>
// CHECK-NEXT: tile.reduce %[[T]] {axis = 1 : i32} : tensor<64x64xf32, #tile.mma<version = 2, numWarps = 4>> -> tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4>>>
func.func @rows(%x: !tile.ptr<bf16>, %y: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %p = tile.splat %x : !tile.ptr<bf16> -> tensor<32x64x!tile.ptr<bf16>>
  %a = tile.load %p : tensor<32x64x!tile.ptr<bf16>>
  %q = tile.splat %x : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %b = tile.load %q : tensor<64x64x!tile.ptr<bf16>>
  %zero = arith.constant dense<0.0> : tensor<32x64xf32>
  %s = tile.dot %a, %b, %zero : tensor<32x64xbf16> * tensor<64x64xbf16> -> tensor<32x64xf32>
  %m = tile.reduce %s {axis = 1 : i32} : tensor<32x64xf32> -> tensor<32xf32> {
  ^bb0(%l: f32, %r: f32):
    %z = arith.maxnumf %l, %r : f32
    tile.reduce.return %z : f32
  }
  %mp = tile.splat %y : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
  tile.store %mp, %m : tensor<32x!tile.ptr<f32>>
  %cp = tile.splat %x : !tile.ptr<bf16> -> tensor<64x32x!tile.ptr<bf16>>
  %c = tile.load %cp : tensor<64x32x!tile.ptr<bf16>>
  %z64 = arith.constant dense<0.0> : tensor<64x64xf32>
  %t = tile.dot %c, %a, %z64 : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
  %n = tile.reduce %t {axis = 1 : i32} : tensor<64x64xf32> -> tensor<64xf32> {
  ^bb0(%l: f32, %r: f32):
    %z = arith.maxnumf %l, %r : f32
    tile.reduce.return %z : f32
  }
  %np = tile.splat %y : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  tile.store %np, %n : tensor<64x!tile.ptr<f32>>
  return
}

// -----

// An A the loop does not compute (attention's q, loaded before the key loop)
// is staged once after its load (`tile.stage`, the swizzled K-major layout
// wgmma reads too, M a multiple of 8), and every iteration's dot reads it
// there; the loop's own B is staged by the dot.
// CHECK-LABEL: func.func @staged_q
// CHECK: %[[Q:.*]] = tile.load
// CHECK-NEXT: %[[S:.*]] = tile.stage %[[Q]] : tensor<16x128xbf16> -> !tile.smem<tensor<16x128xbf16>>
// CHECK: scf.for
// CHECK: tile.warp_dot %[[S]], %{{.*}}, %{{.*}} {bKMajor} : !tile.smem<tensor<16x128xbf16>> * tensor<32x128xbf16> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
func.func @staged_q(%x: !tile.ptr<bf16>, %w: !tile.ptr<bf16>, %y: !tile.ptr<f32>, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<16x32xf32>
  %xp = tile.splat %x : !tile.ptr<bf16> -> tensor<16x128x!tile.ptr<bf16>>
  %q = tile.load %xp : tensor<16x128x!tile.ptr<bf16>>
  %wp = tile.splat %w : !tile.ptr<bf16> -> tensor<32x128x!tile.ptr<bf16>>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<16x32xf32>) : i32 {
    %b = tile.load %wp : tensor<32x128x!tile.ptr<bf16>>
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<32x128xbf16> -> tensor<128x32xbf16>
    %d = tile.dot %q, %bt, %acc : tensor<16x128xbf16> * tensor<128x32xbf16> -> tensor<16x32xf32>
    scf.yield %d : tensor<16x32xf32>
  }
  %yp = tile.splat %y : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  tile.store %yp, %r : tensor<16x32x!tile.ptr<f32>>
  return
}

// -----

// A chain shares one warp tiling: the value dot's A (p) comes from the scores'
// accumulator (32 x 32 on 4 warps: 2 x 2), so its [32, 128] accumulator takes
// that encoding (warpsN = 2) rather than its own balance (warpsN = 4); the
// rescale by the scores' row vector then needs no conversion in the loop.
// CHECK-LABEL: func.func @chain
// CHECK: scf.for {{.*}} -> (tensor<32x128xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 2>>)
// CHECK-NOT: tile.convert_layout
// CHECK: tile.warp_dot {{.*}} -> tensor<32x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 2>>
// CHECK-NOT: tile.convert_layout
// CHECK: tile.warp_dot {{.*}} : tensor<32x32xbf16, #tile.mma<version = 2, numWarps = 4, warpsN = 2>> * tensor<32x128xbf16> -> tensor<32x128xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 2>>
// CHECK-NEXT: scf.yield
func.func @chain(%x: !tile.ptr<bf16>, %y: !tile.ptr<f32>, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<32x128xf32>
  %z32 = arith.constant dense<0.0> : tensor<32x32xf32>
  %ap = tile.splat %x : !tile.ptr<bf16> -> tensor<32x32x!tile.ptr<bf16>>
  %vp = tile.splat %x : !tile.ptr<bf16> -> tensor<32x128x!tile.ptr<bf16>>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<32x128xf32>) : i32 {
    %a = tile.load %ap : tensor<32x32x!tile.ptr<bf16>>
    %b = tile.load %ap : tensor<32x32x!tile.ptr<bf16>>
    %s = tile.dot %a, %b, %z32 : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
    %m = tile.reduce %s {axis = 1 : i32} : tensor<32x32xf32> -> tensor<32xf32> {
    ^bb0(%l: f32, %rr: f32):
      %z = arith.maxnumf %l, %rr : f32
      tile.reduce.return %z : f32
    }
    %me = tile.expand_dims %m {axis = 1 : i32} : tensor<32xf32> -> tensor<32x1xf32>
    %mb = tile.broadcast %me : tensor<32x1xf32> -> tensor<32x32xf32>
    %d = arith.subf %s, %mb : tensor<32x32xf32>
    %p = math.exp2 %d : tensor<32x32xf32>
    %pb = arith.truncf %p : tensor<32x32xf32> to tensor<32x32xbf16>
    %alpha = math.exp2 %m : tensor<32xf32>
    %ae = tile.expand_dims %alpha {axis = 1 : i32} : tensor<32xf32> -> tensor<32x1xf32>
    %ab = tile.broadcast %ae : tensor<32x1xf32> -> tensor<32x128xf32>
    %scaled = arith.mulf %acc, %ab : tensor<32x128xf32>
    %v = tile.load %vp : tensor<32x128x!tile.ptr<bf16>>
    %o = tile.dot %pb, %v, %scaled : tensor<32x32xbf16> * tensor<32x128xbf16> -> tensor<32x128xf32>
    scf.yield %o : tensor<32x128xf32>
  }
  %yp = tile.splat %y : !tile.ptr<f32> -> tensor<32x128x!tile.ptr<f32>>
  tile.store %yp, %r : tensor<32x128x!tile.ptr<f32>>
  return
}

// -----

// An FP8 ring's K-major codes, widened to bf16 for a dot whose A is staged
// (MLA's FP8 keys: `kl.dot(q, k.to(kl.bfloat16).T)`): the slot is read in
// place, the codes widened in the B fragments' registers; the extf, the
// transpose and the load go away, the ring becomes `swizzled`.
// CHECK-LABEL: func.func @fp8_keys_in_place
// CHECK: %[[F8:.*]] = tile.ring_alloc {swizzled} : !tile.ring<2, tensor<32x128xf8E4M3FN>>
// CHECK: %[[Q:.*]] = tile.stage
// CHECK: scf.for
// CHECK: tile.ring_wait %[[F8]][%[[S:.*]]], %{{.*}} : !tile.ring<2, tensor<32x128xf8E4M3FN>>
// CHECK-NOT: arith.extf
// CHECK: tile.warp_dot %[[Q]], %[[F8]][%[[S]]], %{{.*}} {bKMajor} : !tile.smem<tensor<16x128xbf16>> * !tile.ring<2, tensor<32x128xf8E4M3FN>> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
// CHECK-NOT: tile.ring_wait_load
// CHECK: scf.yield
func.func @fp8_keys_in_place(%q: !tile.ptr<bf16>, %f: !tile.ptr<f8E4M3FN>, %y: !tile.ptr<f32>, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %true = arith.constant true
  %f8 = tile.ring_alloc : !tile.ring<2, tensor<32x128xf8E4M3FN>>
  %fp = tile.splat %f : !tile.ptr<f8E4M3FN> -> tensor<32x128x!tile.ptr<f8E4M3FN>>
  tile.ring_issue %fp -> %f8[%c0] if %true : tensor<32x128x!tile.ptr<f8E4M3FN>>, !tile.ring<2, tensor<32x128xf8E4M3FN>>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<16x128x!tile.ptr<bf16>>
  %qa = tile.load %qp : tensor<16x128x!tile.ptr<bf16>>
  %zero = arith.constant dense<0.0> : tensor<16x32xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero, %it = %c0) -> (tensor<16x32xf32>, i32) : i32 {
    %slot = arith.remui %it, %c2 : i32
    %next = arith.addi %it, %c1 : i32
    %ns = arith.remui %next, %c2 : i32
    tile.ring_issue %fp -> %f8[%ns] if %true : tensor<32x128x!tile.ptr<f8E4M3FN>>, !tile.ring<2, tensor<32x128xf8E4M3FN>>
    %half = arith.divui %it, %c2 : i32
    %phase = arith.andi %half, %c1 : i32
    %e = tile.ring_wait_load %f8[%slot], %phase : !tile.ring<2, tensor<32x128xf8E4M3FN>> -> tensor<32x128xf8E4M3FN>
    %eb = arith.extf %e : tensor<32x128xf8E4M3FN> to tensor<32x128xbf16>
    %et = tile.trans %eb {order = array<i64: 1, 0>} : tensor<32x128xbf16> -> tensor<128x32xbf16>
    %s = tile.dot %qa, %et, %acc : tensor<16x128xbf16> * tensor<128x32xbf16> -> tensor<16x32xf32>
    scf.yield %s, %next : tensor<16x32xf32>, i32
  }
  tile.ring_release %f8 : !tile.ring<2, tensor<32x128xf8E4M3FN>>
  %yp = tile.splat %y : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  tile.store %yp, %r#0 : tensor<16x32x!tile.ptr<f32>>
  return
}

// -----

// A per-column factor read from a 1-D ring slot (MLA's FP8 scales, one a key:
// `s + kl.dot(q, k.T) * scale[None, :]`): the slot is read in the slice of the
// accumulator's encoding along dim 0, so the broadcast over the rows copies
// registers instead of going through a shared buffer.
// CHECK-LABEL: func.func @slot_columns
// CHECK: scf.for
// CHECK: %[[SC:.*]] = tile.ring_wait_load %{{.*}}[%{{.*}}], %{{.*}} : !tile.ring<2, tensor<32xf32>> -> tensor<32xf32, #tile.slice<dim = 0, parent = #tile.mma<version = 2, numWarps = 4, warpsN = 4>>>
// CHECK: %[[D:.*]] = tile.warp_dot
// CHECK: %[[E:.*]] = tile.expand_dims %[[SC]] {axis = 0 : i32} : tensor<32xf32, #tile.slice<dim = 0, parent = #tile.mma<version = 2, numWarps = 4, warpsN = 4>>> -> tensor<1x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
// CHECK: %[[B:.*]] = tile.broadcast %[[E]] : tensor<1x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
// CHECK: arith.mulf %[[D]], %[[B]] : tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
// CHECK: scf.yield
// The same read used in the blocked layout as well keeps that layout.
// CHECK-LABEL: func.func @slot_columns_also_stored
// CHECK: tile.ring_wait_load %{{.*}}[%{{.*}}], %{{.*}} : !tile.ring<2, tensor<32xf32>> -> tensor<32xf32>{{$}}
func.func @slot_columns(%q: !tile.ptr<bf16>, %f: !tile.ptr<bf16>, %g: !tile.ptr<f32>, %y: !tile.ptr<f32>, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %true = arith.constant true
  %kr = tile.ring_alloc : !tile.ring<2, tensor<32x128xbf16>>
  %sr = tile.ring_alloc : !tile.ring<2, tensor<32xf32>>
  %fp = tile.splat %f : !tile.ptr<bf16> -> tensor<32x128x!tile.ptr<bf16>>
  %gp = tile.splat %g : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
  tile.ring_issue %fp -> %kr[%c0] if %true : tensor<32x128x!tile.ptr<bf16>>, !tile.ring<2, tensor<32x128xbf16>>
  tile.ring_issue %gp -> %sr[%c0] if %true : tensor<32x!tile.ptr<f32>>, !tile.ring<2, tensor<32xf32>>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<16x128x!tile.ptr<bf16>>
  %qa = tile.load %qp : tensor<16x128x!tile.ptr<bf16>>
  %zero = arith.constant dense<0.0> : tensor<16x32xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero, %it = %c0) -> (tensor<16x32xf32>, i32) : i32 {
    %slot = arith.remui %it, %c2 : i32
    %next = arith.addi %it, %c1 : i32
    %ns = arith.remui %next, %c2 : i32
    tile.ring_issue %fp -> %kr[%ns] if %true : tensor<32x128x!tile.ptr<bf16>>, !tile.ring<2, tensor<32x128xbf16>>
    tile.ring_issue %gp -> %sr[%ns] if %true : tensor<32x!tile.ptr<f32>>, !tile.ring<2, tensor<32xf32>>
    %half = arith.divui %it, %c2 : i32
    %phase = arith.andi %half, %c1 : i32
    %k = tile.ring_wait_load %kr[%slot], %phase : !tile.ring<2, tensor<32x128xbf16>> -> tensor<32x128xbf16>
    %sc = tile.ring_wait_load %sr[%slot], %phase : !tile.ring<2, tensor<32xf32>> -> tensor<32xf32>
    %kt = tile.trans %k {order = array<i64: 1, 0>} : tensor<32x128xbf16> -> tensor<128x32xbf16>
    %d = tile.dot %qa, %kt, %zero : tensor<16x128xbf16> * tensor<128x32xbf16> -> tensor<16x32xf32>
    %e = tile.expand_dims %sc {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %b = tile.broadcast %e : tensor<1x32xf32> -> tensor<16x32xf32>
    %m = arith.mulf %d, %b : tensor<16x32xf32>
    %s = arith.addf %acc, %m : tensor<16x32xf32>
    scf.yield %s, %next : tensor<16x32xf32>, i32
  }
  tile.ring_release %kr : !tile.ring<2, tensor<32x128xbf16>>
  tile.ring_release %sr : !tile.ring<2, tensor<32xf32>>
  %yp = tile.splat %y : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  tile.store %yp, %r#0 : tensor<16x32x!tile.ptr<f32>>
  return
}

func.func @slot_columns_also_stored(%q: !tile.ptr<bf16>, %f: !tile.ptr<bf16>, %g: !tile.ptr<f32>, %y: !tile.ptr<f32>, %z: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %kr = tile.ring_alloc : !tile.ring<2, tensor<32x128xbf16>>
  %sr = tile.ring_alloc : !tile.ring<2, tensor<32xf32>>
  %fp = tile.splat %f : !tile.ptr<bf16> -> tensor<32x128x!tile.ptr<bf16>>
  %gp = tile.splat %g : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
  tile.ring_issue %fp -> %kr[%c0] if %true : tensor<32x128x!tile.ptr<bf16>>, !tile.ring<2, tensor<32x128xbf16>>
  tile.ring_issue %gp -> %sr[%c0] if %true : tensor<32x!tile.ptr<f32>>, !tile.ring<2, tensor<32xf32>>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<16x128x!tile.ptr<bf16>>
  %qa = tile.load %qp : tensor<16x128x!tile.ptr<bf16>>
  %zero = arith.constant dense<0.0> : tensor<16x32xf32>
  %k = tile.ring_wait_load %kr[%c0], %c0 : !tile.ring<2, tensor<32x128xbf16>> -> tensor<32x128xbf16>
  %sc = tile.ring_wait_load %sr[%c0], %c0 : !tile.ring<2, tensor<32xf32>> -> tensor<32xf32>
  %kt = tile.trans %k {order = array<i64: 1, 0>} : tensor<32x128xbf16> -> tensor<128x32xbf16>
  %d = tile.dot %qa, %kt, %zero : tensor<16x128xbf16> * tensor<128x32xbf16> -> tensor<16x32xf32>
  %e = tile.expand_dims %sc {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
  %b = tile.broadcast %e : tensor<1x32xf32> -> tensor<16x32xf32>
  %m = arith.mulf %d, %b : tensor<16x32xf32>
  tile.ring_release %kr : !tile.ring<2, tensor<32x128xbf16>>
  tile.ring_release %sr : !tile.ring<2, tensor<32xf32>>
  %yp = tile.splat %y : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  tile.store %yp, %m : tensor<16x32x!tile.ptr<f32>>
  %zp = tile.splat %z : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
  tile.store %zp, %sc : tensor<32x!tile.ptr<f32>>
  return
}

// -----

// B read in place from its ring slot (attention's keys and values, gathered by
// kiln-tile-pipeline-loads): the ring of gathers becomes `swizzled` (its slots
// 128-byte swizzled boxes), the score dot reads the [32, 128] box K-major (the
// transpose folded), the value dot the same slot as [K, N]; a tile.ring_wait
// takes the first load's place, the second read ({again}) waits for nothing.
// An FP8 ring is widened in registers, so its load stays.
// CHECK-LABEL: func.func @in_place
// CHECK: %[[RING:.*]] = tile.ring_alloc {swizzled} : !tile.ring<2, tensor<32x128xbf16>>
// CHECK: %[[F8:.*]] = tile.ring_alloc : !tile.ring<2, tensor<32x128xf8E4M3FN>>
// CHECK: %[[Q:.*]] = tile.stage
// CHECK: scf.for
// CHECK: tile.ring_wait %[[RING]][%[[S:.*]]], %[[PH:.*]] : !tile.ring<2, tensor<32x128xbf16>>
// CHECK-NOT: tile.ring_wait_load %[[RING]]
// CHECK: %[[SC:.*]] = tile.warp_dot %[[Q]], %[[RING]][%[[S]]], %{{.*}} {bKMajor} : !tile.smem<tensor<16x128xbf16>> * !tile.ring<2, tensor<32x128xbf16>> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
// CHECK: %[[P:.*]] = arith.truncf %[[SC]]
// CHECK: tile.warp_dot %[[P]], %[[RING]][%[[S]]], %{{.*}} : tensor<16x32xbf16, #tile.mma<version = 2, numWarps = 4, warpsN = 4>> * !tile.ring<2, tensor<32x128xbf16>> -> tensor<16x128xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
// CHECK: %[[E:.*]] = tile.ring_wait_load %[[F8]]
// CHECK: arith.extf %[[E]]
// CHECK: tile.warp_dot {{.*}} : tensor<16x32xbf16, #tile.mma<version = 2, numWarps = 4, warpsN = 4>> * tensor<32x128xbf16> -> tensor<16x128xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>
func.func @in_place(%q: !tile.ptr<bf16>, %k: !tile.ptr<bf16>, %f: !tile.ptr<f8E4M3FN>, %y: !tile.ptr<f32>, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %true = arith.constant true
  %ring = tile.ring_alloc : !tile.ring<2, tensor<32x128xbf16>>
  %f8 = tile.ring_alloc : !tile.ring<2, tensor<32x128xf8E4M3FN>>
  %kp = tile.splat %k : !tile.ptr<bf16> -> tensor<32x128x!tile.ptr<bf16>>
  %fp = tile.splat %f : !tile.ptr<f8E4M3FN> -> tensor<32x128x!tile.ptr<f8E4M3FN>>
  tile.ring_issue %kp -> %ring[%c0] if %true : tensor<32x128x!tile.ptr<bf16>>, !tile.ring<2, tensor<32x128xbf16>>
  tile.ring_issue %fp -> %f8[%c0] if %true : tensor<32x128x!tile.ptr<f8E4M3FN>>, !tile.ring<2, tensor<32x128xf8E4M3FN>>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<16x128x!tile.ptr<bf16>>
  %qa = tile.load %qp : tensor<16x128x!tile.ptr<bf16>>
  %zero = arith.constant dense<0.0> : tensor<16x32xf32>
  %zo = arith.constant dense<0.0> : tensor<16x128xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zo, %it = %c0) -> (tensor<16x128xf32>, i32) : i32 {
    %slot = arith.remui %it, %c2 : i32
    %next = arith.addi %it, %c1 : i32
    %ns = arith.remui %next, %c2 : i32
    tile.ring_issue %kp -> %ring[%ns] if %true : tensor<32x128x!tile.ptr<bf16>>, !tile.ring<2, tensor<32x128xbf16>>
    tile.ring_issue %fp -> %f8[%ns] if %true : tensor<32x128x!tile.ptr<f8E4M3FN>>, !tile.ring<2, tensor<32x128xf8E4M3FN>>
    %half = arith.divui %it, %c2 : i32
    %phase = arith.andi %half, %c1 : i32
    %kb = tile.ring_wait_load %ring[%slot], %phase : !tile.ring<2, tensor<32x128xbf16>> -> tensor<32x128xbf16>
    %kt = tile.trans %kb {order = array<i64: 1, 0>} : tensor<32x128xbf16> -> tensor<128x32xbf16>
    %s = tile.dot %qa, %kt, %zero : tensor<16x128xbf16> * tensor<128x32xbf16> -> tensor<16x32xf32>
    %p = arith.truncf %s : tensor<16x32xf32> to tensor<16x32xbf16>
    %vb = tile.ring_wait_load %ring[%slot], %phase {again} : !tile.ring<2, tensor<32x128xbf16>> -> tensor<32x128xbf16>
    %o = tile.dot %p, %vb, %acc : tensor<16x32xbf16> * tensor<32x128xbf16> -> tensor<16x128xf32>
    %e = tile.ring_wait_load %f8[%slot], %phase : !tile.ring<2, tensor<32x128xf8E4M3FN>> -> tensor<32x128xf8E4M3FN>
    %eb = arith.extf %e : tensor<32x128xf8E4M3FN> to tensor<32x128xbf16>
    %o2 = tile.dot %p, %eb, %o : tensor<16x32xbf16> * tensor<32x128xbf16> -> tensor<16x128xf32>
    scf.yield %o2, %next : tensor<16x128xf32>, i32
  }
  tile.ring_release %ring : !tile.ring<2, tensor<32x128xbf16>>
  tile.ring_release %f8 : !tile.ring<2, tensor<32x128xf8E4M3FN>>
  %yp = tile.splat %y : !tile.ptr<f32> -> tensor<16x128x!tile.ptr<f32>>
  tile.store %yp, %r#0 : tensor<16x128x!tile.ptr<f32>>
  return
}

// -----

// A loop's carried result split into two bf16 parts (hi = bf16(x), lo =
// bf16(x - f32(hi))) and fed back as the next dots' B: the split runs in the
// accumulator's registers (the widening f32(hi) of a value narrowed there
// moves with it), and both warp_dots take hi and lo in #tile.mma, staged from
// their registers (the loop-invariant A staged once): no conversion in the
// loop, one after it.
// CHECK-LABEL: func.func @carried_split_b
// CHECK: scf.for {{.*}} -> (tensor<64x64xf32, #tile.mma<version = 2, numWarps = 8, warpsN = 2>>)
// CHECK-NOT: tile.convert_layout
// CHECK: %[[HI:.*]] = arith.truncf %{{.*}} : tensor<64x64xf32, #tile.mma<version = 2, numWarps = 8, warpsN = 2>> to tensor<64x64xbf16, #tile.mma<version = 2, numWarps = 8, warpsN = 2>>
// CHECK: arith.extf %[[HI]] : tensor<64x64xbf16, #tile.mma<version = 2, numWarps = 8, warpsN = 2>> to tensor<64x64xf32, #tile.mma<version = 2, numWarps = 8, warpsN = 2>>
// CHECK-NOT: tile.convert_layout
// CHECK: %[[LO:.*]] = arith.truncf %{{.*}} : tensor<64x64xf32, #tile.mma<version = 2, numWarps = 8, warpsN = 2>> to tensor<64x64xbf16, #tile.mma<version = 2, numWarps = 8, warpsN = 2>>
// CHECK-NOT: tile.convert_layout
// CHECK: tile.warp_dot %{{.*}}, %[[HI]], %{{.*}} : !tile.smem<tensor<64x64xbf16>> * tensor<64x64xbf16, #tile.mma<version = 2, numWarps = 8, warpsN = 2>>
// CHECK-NOT: tile.convert_layout
// CHECK: tile.warp_dot %{{.*}}, %[[LO]], %{{.*}} : !tile.smem<tensor<64x64xbf16>> * tensor<64x64xbf16, #tile.mma<version = 2, numWarps = 8, warpsN = 2>>
// CHECK: scf.yield
// CHECK: tile.convert_layout
// NOARCH-LABEL: func.func @carried_split_b
func.func @carried_split_b(%x: !tile.ptr<bf16>, %y: !tile.ptr<f32>, %n: i32) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %p = tile.splat %x : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %a = tile.load %p : tensor<64x64x!tile.ptr<bf16>>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x64xf32>) : i32 {
    %hi = arith.truncf %acc : tensor<64x64xf32> to tensor<64x64xbf16>
    %hi32 = arith.extf %hi : tensor<64x64xbf16> to tensor<64x64xf32>
    %rest = arith.subf %acc, %hi32 : tensor<64x64xf32>
    %lo = arith.truncf %rest : tensor<64x64xf32> to tensor<64x64xbf16>
    %d0 = tile.dot %a, %hi, %zero : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    %d1 = tile.dot %a, %lo, %d0 : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %d1 : tensor<64x64xf32>
  }
  %yp = tile.splat %y : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %yp, %r : tensor<64x64x!tile.ptr<f32>>
  return
}
