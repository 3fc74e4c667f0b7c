// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_90a | FileCheck %s

// Each lowered kernel records what its ops use (the compiler's pdl, features
// and register pool check read these, never IR or PTX text): tile.features,
// sorted; tile.pdl where it uses griddepcontrol; tile.register_split for warp
// specialization. The marks of inline PTX (kiln.feature) are gone.

// A PDL kernel: griddepcontrol.wait and .launch_dependents.
// CHECK-LABEL: llvm.func ptx_kernelcc @pdl(
// CHECK-SAME: tile.features = ["pdl"], tile.pdl
// CHECK-NOT: tile.register_split
// CHECK: nvvm.griddepcontrol wait
// CHECK: nvvm.griddepcontrol launch_dependents
func.func @pdl(%p: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  tile.pdl_wait
  %x = tile.load %p : !tile.ptr<f32>
  tile.pdl_launch_dependents
  tile.store %p, %x : !tile.ptr<f32>
  return
}

// -----

// Plain loads and stores, an atomic at GPU scope: no feature, no attribute.
// CHECK-LABEL: llvm.func ptx_kernelcc @plain(
// CHECK-SAME: attributes {nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>} {
// CHECK-NOT: kiln.feature
// CHECK: llvm.return
func.func @plain(%p: !tile.ptr<i32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %s = tile.splat %p : !tile.ptr<i32> -> tensor<128x!tile.ptr<i32>>
  %ps = tile.addptr %s, %r : tensor<128x!tile.ptr<i32>>, tensor<128xi32>
  %old = tile.atomic_rmw add, relaxed, gpu %ps, %r : tensor<128x!tile.ptr<i32>>
  tile.store %ps, %old : tensor<128x!tile.ptr<i32>>
  return
}

// -----

// Atomics at system scope: the inline PTX atom.<sem>.sys (marked by its
// pattern) and a cmpxchg without syncscope.
// CHECK-LABEL: llvm.func ptx_kernelcc @sys_rmw(
// CHECK-SAME: tile.features = ["sys_atomics"]}
// CHECK-NOT: kiln.feature
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "atom.release.sys.global.add.f32 $0, [$1], $2;", "=f,l,f,~{memory}"
// CHECK-NOT: kiln.feature
func.func @sys_rmw(%f: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %fs = tile.splat %f : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %fp = tile.addptr %fs, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %one = arith.constant dense<1.0> : tensor<128xf32>
  %y = tile.atomic_rmw fadd, release, sys %fp, %one : tensor<128x!tile.ptr<f32>>
  return
}

// -----

// CHECK-LABEL: llvm.func ptx_kernelcc @sys_cas(
// CHECK-SAME: tile.features = ["sys_atomics"]}
// CHECK: llvm.cmpxchg {{.*}} acq_rel acquire : !llvm.ptr<1>, i32
func.func @sys_cas(%flag: !tile.ptr<i32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %old = tile.atomic_cas acq_rel, sys %flag, %c0, %c1 : !tile.ptr<i32>
  tile.store %flag, %old : !tile.ptr<i32>
  return
}

// -----

// CHECK-LABEL: llvm.func ptx_kernelcc @gpu_cas(
// CHECK-NOT: tile.features
// CHECK: llvm.cmpxchg {{.*}} syncscope("device") acq_rel acquire : !llvm.ptr<1>, i32
func.func @gpu_cas(%flag: !tile.ptr<i32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %old = tile.atomic_cas acq_rel, gpu %flag, %c0, %c1 : !tile.ptr<i32>
  tile.store %flag, %old : !tile.ptr<i32>
  return
}

// -----

// TMA and wgmma: the ring's copies (cp.async.bulk.tensor) on mbarriers armed
// by an elected lane, the asynchronous dot and its wait (inline PTX, marked).
// CHECK-LABEL: llvm.func ptx_kernelcc @tma_wgmma(
// CHECK-SAME: tile.features = ["elect", "mbarrier", "tma", "wgmma"]}
// CHECK-NOT: kiln.feature
// CHECK: nvvm.wgmma.mma_async
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT: kiln.feature
!A = !tile.ring<2, tensor<64x64xbf16>>
!DA = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<64x64xbf16>>
#mma = #tile.mma<version = 3, numWarps = 4>
func.func @tma_wgmma(%da: !DA, %db: !DA, %dc: !DC, %i: i32, %slot: i32, %phase: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !A
  tile.ring_issue %da[%i, %i] -> %ra[%slot] if %p : !DA, !A
  tile.ring_issue %db[%i, %i] -> %rb[%slot] if %p : !DA, !A
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #mma>
  tile.ring_wait %ra[%slot], %phase : !A
  tile.ring_wait %rb[%slot], %phase : !A
  %d = tile.warpgroup_dot %ra[%slot], %rb[%slot], %zero : !A, !A, tensor<64x64xf32, #mma>
  %w = tile.warpgroup_dot_wait %d {pending = 0 : i32} : tensor<64x64xf32, #mma>
  %h = arith.truncf %w : tensor<64x64xf32, #mma> to tensor<64x64xbf16, #mma>
  tile.desc_store %dc[%i, %i], %h : !DC, tensor<64x64xbf16, #mma>
  return
}

// -----

// Warp specialization: 4 consumer warps (128 threads) take 240 registers a
// thread (setmaxnreg.inc), the producer warpgroup keeps 40 (.dec).
// CHECK-LABEL: llvm.func ptx_kernelcc @split(
// CHECK-SAME: tile.features = ["elect", "mbarrier", "setmaxnreg", "tma"]
// CHECK-SAME: tile.register_split = array<i32: 128, 240, 40>
// CHECK: nvvm.setmaxregister increase 240
// CHECK: nvvm.setmaxregister decrease 40
!D = !tile.tensordesc<tensor<32x128xf16>>
!R = !tile.ring<2, tensor<32x128xf16>>
func.func @split(%d: !D, %i: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.ring_alloc : !R
  tile.warp_specialize consumer {
    %t = tile.ring_wait_load %r[%i], %i : !R -> tensor<32x128xf16>
    tile.desc_store %d[%i, %i], %t : !D, tensor<32x128xf16>
  } producer {
    tile.ring_issue %d[%i, %i] -> %r[%i] if %p {producer} : !D, !R
  }
  return
}

// -----

// 8 consumer warps: 256 threads of 232 registers beside the producers' 40.
// CHECK-LABEL: llvm.func ptx_kernelcc @eight_warps(
// CHECK-SAME: tile.features = ["setmaxnreg"], tile.register_split = array<i32: 256, 232, 40>
func.func @eight_warps() attributes {tile.kernel, tile.num_warps = 8 : i32} {
  tile.warp_specialize consumer {
  } producer {
  }
  return
}
