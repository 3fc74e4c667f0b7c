// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-convert-tile-to-nvvm | FileCheck %s

// Read-modify-write atomics are inline PTX that keeps the ordering and the
// scope (LLVM's NVPTX backend drops both from atomicrmw); masked elements are
// under scf.if.
// CHECK-LABEL: llvm.func ptx_kernelcc @rmw
// CHECK: scf.if
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "atom.relaxed.gpu.global.add.u32 $0, [$1], $2;", "=r,l,r,~{memory}"
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "atom.acq_rel.cta.global.max.s32 $0, [$1], $2;", "=r,l,r,~{memory}"
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "atom.release.sys.global.add.f32 $0, [$1], $2;", "=f,l,f,~{memory}"
func.func @rmw(%p: !tile.ptr<i32>, %f: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %s = tile.splat %p : !tile.ptr<i32> -> tensor<128x!tile.ptr<i32>>
  %ps = tile.addptr %s, %r : tensor<128x!tile.ptr<i32>>, tensor<128xi32>
  %c = arith.constant dense<100> : tensor<128xi32>
  %m = arith.cmpi slt, %r, %c : tensor<128xi32>
  %old = tile.atomic_rmw add, relaxed, gpu %ps, %r, %m : tensor<128x!tile.ptr<i32>>
  %x = tile.atomic_rmw max, acq_rel, cta %ps, %old : tensor<128x!tile.ptr<i32>>
  %fs = tile.splat %f : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %fp = tile.addptr %fs, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %one = arith.constant dense<1.0> : tensor<128xf32>
  %y = tile.atomic_rmw fadd, release, sys %fp, %one : tensor<128x!tile.ptr<f32>>
  return
}

// -----

// A scalar compare-and-swap runs on thread 0 (cmpxchg with its ordering and
// scope) and shares the old value through shared memory.
// CHECK: llvm.mlir.global internal @__kiln_atomic_smem_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<1 x i32>
// CHECK-LABEL: llvm.func ptx_kernelcc @cas
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: llvm.icmp "eq" %[[TID]]
// CHECK: scf.if
// CHECK: llvm.cmpxchg {{.*}} acq_rel acquire : !llvm.ptr<1>, i32
// CHECK: llvm.store
// CHECK: nvvm.barrier
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> i32
// CHECK: nvvm.barrier
func.func @cas(%flag: !tile.ptr<i32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %old = tile.atomic_cas acq_rel, sys %flag, %c0, %c1 : !tile.ptr<i32>
  tile.store %flag, %old : !tile.ptr<i32>
  return
}

// -----

// The last program to arrive: every thread's store, its gpu-scope fence, then
// `tile.barrier` (bar.sync 0 of the whole program) before thread 0's atomic,
// so the atomic's release covers every thread's store.
// CHECK-LABEL: llvm.func ptx_kernelcc @last_arriver
// CHECK-COUNT-4: llvm.store {{.*}} : i32, !llvm.ptr<1>
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "fence.acq_rel.gpu;"
// CHECK-NEXT: nvvm.barrier{{$}}
// CHECK: scf.if
// CHECK: atom.acq_rel.gpu.global.add.u32
func.func @last_arriver(%p: !tile.ptr<i32>, %count: !tile.ptr<i32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %s = tile.splat %p : !tile.ptr<i32> -> tensor<512x!tile.ptr<i32>>
  %ps = tile.addptr %s, %r : tensor<512x!tile.ptr<i32>>, tensor<512xi32>
  tile.store %ps, %r : tensor<512x!tile.ptr<i32>>
  tile.fence release, gpu
  tile.barrier
  %c1 = arith.constant 1 : i32
  %old = tile.atomic_rmw add, acq_rel, gpu %count, %c1 : !tile.ptr<i32>
  tile.store %p, %old : !tile.ptr<i32>
  return
}
