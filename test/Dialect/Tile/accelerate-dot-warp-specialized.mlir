// RUN: kiln-opt %s -split-input-file -kiln-tile-warp-specialize=arch=sm_90a -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_90a | FileCheck %s

// The consumers' K loop of a warp-specialized GEMM on wgmma: the dot reads the
// slots in place, so the release of the previous iteration's slot (to the
// producer's empty barrier) moves after the wgmma wait that leaves one group
// in flight, the current one: the group that read that slot is done.
// CHECK-LABEL: func.func @gemm
// CHECK: %[[EMPTY:.*]] = tile.mbarrier_alloc {per_warp} : !tile.mbarriers<3>
// CHECK: tile.warp_specialize consumer {
// CHECK: scf.for
// CHECK:   tile.ring_wait
// CHECK:   tile.ring_wait
// CHECK-NOT: tile.mbarrier_arrive
// CHECK:   %[[D:.*]] = tile.warpgroup_dot
// CHECK-NEXT: %[[W:.*]] = tile.warpgroup_dot_wait %[[D]] {pending = 1 : i32}
// CHECK-NEXT: tile.mbarrier_arrive %[[EMPTY]][%{{.*}}] if %{{.*}} : !tile.mbarriers<3>
// CHECK:   scf.yield %[[W]], %{{.*}}
// CHECK: tile.warpgroup_dot_wait %{{.*}} {pending = 0 : i32}
// CHECK: tile.desc_store
// CHECK: } producer {
// CHECK: tile.ring_issue {{.*}} {producer}
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

// -----

// Attention's key loop, warp-specialized, on two consumer warpgroups: q is
// staged once, q kᵀ reads k in its slot and p·v reads v in its slot (A from
// the registers of p), each waited for before its reader. The warpgroups take turns
// on the tensor cores: a "wait" before and a "pass" after each of the two
// dots, warpgroup 0 first ("start" before the loop, "end" after it); p·v's
// wait sinks to the end of the body (kiln-tile-accelerate-dot defers a wait
// to its first reader). The
// slot of the previous iteration is released after the waits for this
// one's fills, both of its readers long done.
// CHECK-LABEL: func.func @attention
// CHECK: tile.warp_specialize consumer {
// CHECK: tile.stage
// CHECK: tile.warpgroup_turn "start"
// CHECK-NEXT: scf.for
// CHECK:   tile.ring_wait
// CHECK:   tile.ring_wait
// CHECK:   tile.mbarrier_arrive
// CHECK:   tile.warpgroup_turn "wait"
// CHECK-NEXT: %[[S:.*]] = tile.warpgroup_dot %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}} : !tile.smem<tensor<128x64xbf16>>
// CHECK-NEXT: tile.warpgroup_turn "pass"
// CHECK-NEXT: tile.warpgroup_dot_wait %[[S]] {pending = 0 : i32}
// CHECK:   tile.warpgroup_turn "wait"
// CHECK-NEXT: %[[O:.*]] = tile.warpgroup_dot %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}} {bMnMajor} : tensor<128x64xbf16, #tile.mma<version = 3, numWarps = 8>>
// CHECK-NEXT: tile.warpgroup_turn "pass"
// CHECK-NOT: tile.warpgroup_turn
// CHECK: tile.warpgroup_dot_wait %[[O]] {pending = 0 : i32}
// CHECK-NEXT: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: tile.warpgroup_turn "end"
// CHECK: } producer {
// CHECK-NOT: tile.warpgroup_turn
!D = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
func.func @attention(%q: !tile.ptr<bf16>, %dk: !D, %dv: !D, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<128x64x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<128x64x!tile.ptr<bf16>>
  %acc = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero) -> (tensor<128x64xf32>) : i32 {
    %kb = tile.desc_load %dk[%i, %c0] : !D -> tensor<64x64xbf16>
    %vb = tile.desc_load %dv[%i, %c0] : !D -> tensor<64x64xbf16>
    %kt = tile.trans %kb {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qv, %kt, %zero : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
    %p = math.exp2 %s : tensor<128x64xf32>
    %pb = arith.truncf %p : tensor<128x64xf32> to tensor<128x64xbf16>
    %o = tile.dot %pb, %vb, %acc : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
    scf.yield %o : tensor<128x64xf32>
  } {tile.num_stages = 2 : i32, tile.warp_specialize}
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<128x64x!tile.ptr<f32>>
  tile.store %op, %acc : tensor<128x64x!tile.ptr<f32>>
  return
}
